"""Job configurations in the shapes real repositories keep them, and the verdict each gets.

Every file under ``data/real/`` was written for this test in the form users hand over:
legacy ``config.yaml`` files, the shell scripts that submit them, Vertex ``--config`` files,
API responses and request bodies, and ``gcloud ai custom-jobs create`` and ``gcloud ai
hp-tuning-jobs create`` command lines. A verdict is the exit code of ``validate`` and where
the report points: a config the API accepts must be valid (no wrong rejects), a broken one
must name the field (no wrong accepts), and a hyperparameter tuning job must never pass as a
single job: it is read as the tuning job it is (``kind``), its broken fields named in the
input's own terms (a flag's value at the flag).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from components.cli._cli import main

REAL = Path(__file__).parent / "data" / "real"


@dataclass(frozen=True)
class Verdict:
    code: int
    paths: tuple[str, ...] = ()
    """Each must be the path of a violation, or appear in the error text."""
    says: tuple[str, ...] = ()
    """Each must appear somewhere in the report (reasons, suggestions, notes, error)."""
    never_says: tuple[str, ...] = ()
    kind: str | None = None
    """The report's ``kind`` when the file was read (exit 0 or 1 after validation)."""


TUNING = "hyperparameter-tuning-job"

VERDICTS: dict[str, Verdict] = {
    # legacy config.yaml
    "legacy_basic_gpu.yaml": Verdict(1, ("trainingInput.scaleTier",), ("NVIDIA_TESLA_T4",)),
    "legacy_custom_t4.yaml": Verdict(0),
    "legacy_complex_model.yaml": Verdict(0),
    "legacy_standard_1.yaml": Verdict(0),
    # Google publishes no TensorFlow 2.10 training image (catalog/RESEARCH-NOTES.md): the
    # unquoted 2.10 must be read as 2.10 (not the 2.1 image) and refused with its neighbours.
    "legacy_runtime_2_10_float.yaml": Verdict(
        1, ("trainingInput.runtimeVersion",), ("image for 2.10", "2.9, 2.11")
    ),
    "legacy_hypertune.yaml": Verdict(0, says=("decayCurveStoppingSpec",), kind=TUNING),
    "legacy_hypertune_defaults.yaml": Verdict(
        0, says=("training/hptuning/metric", "maxTrials not set", "--job-dir"), kind=TUNING
    ),
    "legacy_hypertune_broken.yaml": Verdict(
        1,
        (
            "trainingInput.hyperparameters.goal",
            "trainingInput.hyperparameters.resumePreviousJobId",
            "trainingInput.hyperparameters.params[0].maxValue",
            "trainingInput.hyperparameters.params[1].discreteValues",
        ),
        ("MAXIMIZE",),
    ),
    "legacy_custom_container_v100.yaml": Verdict(0),
    "legacy_image_with_package.yaml": Verdict(0),
    # P100 reached its end of support on Vertex AI on 2026-09-15 (issue 34).
    "legacy_p100_three.yaml": Verdict(1, says=("retired on 2026-09-15", "NVIDIA_TESLA_T4")),
    "legacy_disk_and_scheduling.yaml": Verdict(0),
    "legacy_a100_machine.yaml": Verdict(0),
    # Vertex documents
    "vertex_single_mapping_pool.yaml": Verdict(0),
    "vertex_scalar_lists.yaml": Verdict(0),
    "vertex_described_job.json": Verdict(0, says=("output-only",)),
    "vertex_create_request.json": Verdict(0),
    "vertex_specific_reservation.yaml": Verdict(0),
    "vertex_reservation_without_values.yaml": Verdict(
        1, ("workerPoolSpecs[0].machineSpec.reservationAffinity",)
    ),
    "vertex_a4_on_demand.yaml": Verdict(1, says=("FLEX_START", "SPOT")),
    # A4X (GB200) is reservation-only, not a flex-start machine (issue 34).
    "vertex_a4x_flex_start.yaml": Verdict(
        1, ("workerPoolSpecs[0].machineSpec.machineType",), ("only from reservations",)
    ),
    "vertex_rtx_pro.yaml": Verdict(0),
    "vertex_mig_two_gpus.yaml": Verdict(1, says=("gpuPartitionSize",)),
    "vertex_a100_shorthand.yaml": Verdict(
        1,
        ("workerPoolSpecs[0].machineSpec.acceleratorType",),
        ("NVIDIA_TESLA_A100",),
        ("NVIDIA_B200", "NVIDIA_A100_80GB"),
    ),
    "vertex_gcloud_accelerator_name.yaml": Verdict(
        1, ("workerPoolSpecs[0].machineSpec.acceleratorType",), ("NVIDIA_TESLA_T4",)
    ),
    "vertex_newer_fields.yaml": Verdict(0),
    "vertex_n1_highcpu_8.yaml": Verdict(
        1, ("workerPoolSpecs[0].machineSpec.machineType",), ("n1-highcpu-16",)
    ),
    "vertex_hp_tuning_job.yaml": Verdict(0, kind=TUNING, never_says=("not set",)),
    "vertex_hp_tuning_config.yaml": Verdict(
        0, says=("maxTrialCount not set", "--max-trial-count"), kind=TUNING
    ),
    "vertex_hp_tuning_described.json": Verdict(
        0, says=("output-only fields ignored: name, trials, state",), kind=TUNING
    ),
    "vertex_hp_tuning_request.json": Verdict(0, says=("europe-west4",), kind=TUNING),
    "vertex_hp_tuning_grid_double.yaml": Verdict(
        1,
        ("studySpec.parameters[0].doubleValueSpec", "parallelTrialCount"),
        ("GRID_SEARCH", "discreteValueSpec"),
        kind=TUNING,
    ),
    # command lines and scripts
    "legacy_submit_script.sh": Verdict(0, says=("line 13",)),
    "legacy_image_and_package.sh": Verdict(
        1, says=("NVIDIA_TESLA_P100 was retired on 2026-09-15",)
    ),
    "legacy_word_split.sh": Verdict(0),
    "legacy_basic_gpu_flag.sh": Verdict(1, ("--scale-tier",), ("NVIDIA_TESLA_T4",)),
    "legacy_typo_flag.sh": Verdict(2, says=("--runtime-version",)),
    "legacy_two_jobs.sh": Verdict(2, says=("1", "2")),
    # Tuning jobs submitted by command lines: read as the tuning jobs they are.
    "legacy_hypertune_submit.sh": Verdict(
        0, says=("'rmse'", "hypertune_config.yaml", "$(date -u"), kind=TUNING
    ),
    "legacy_hypertune_heredoc_broken.sh": Verdict(
        1,
        ("trainingInput.hyperparameters.goal",),
        ("MAXIMIZE", "the heredoc at line 6"),
        kind=TUNING,
    ),
    "vertex_create_flags.sh": Verdict(0),
    "vertex_create_multi_pool.sh": Verdict(0),
    "vertex_create_with_config.sh": Verdict(0),
    "vertex_hp_tuning_create.sh": Verdict(0, kind=TUNING, never_says=("not set",)),
    "vertex_hp_tuning_heredoc_grid.sh": Verdict(
        1,
        ("studySpec.parameters[0].doubleValueSpec", "--parallel-trial-count"),
        ("GRID_SEARCH", "the heredoc at line 9"),
        kind=TUNING,
    ),
    "vertex_create_local_package.sh": Verdict(0),
}

# Files that only exist to be read by a command above.
CONFIG_ONLY = {"hypertune_config.yaml", "vertex_create_config.yaml"}


def report_of(path: Path) -> tuple[int, dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["validate", str(path), "--json"], out, err)
    return code, json.loads(out.getvalue())


def test_every_file_has_a_verdict() -> None:
    files = {p.name for p in REAL.iterdir()}
    assert files - CONFIG_ONLY == set(VERDICTS)


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_verdict(name: str) -> None:
    verdict = VERDICTS[name]
    code, report = report_of(REAL / name)
    text = json.dumps(report)
    assert code == verdict.code, text
    paths = {v["path"] for v in report.get("violations", [])}
    for path in verdict.paths:
        assert path in paths or path in report.get("error", ""), text
    for words in verdict.says:
        assert words in text, text
    for words in verdict.never_says:
        assert words not in text, text
    if code == 0:
        assert report["valid"] is True
    if verdict.kind is not None:
        assert report["kind"] == verdict.kind, text


@pytest.mark.parametrize(
    "name", sorted(n for n in VERDICTS if "hypertune" in n or "hp_tuning" in n)
)
def test_no_tuning_job_is_read_as_a_single_job(name: str) -> None:
    code, report = report_of(REAL / name)
    assert report.get("kind") in (None, TUNING), report
    assert code != 0 or report["kind"] == TUNING
