"""Numbers no float holds, and trial counts past Vertex AI's limit, get a violation naming the
field: never a traceback (issue 27, items 6 and 7)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from components._errors import SpecInvalidError
from components.cli._cli import main
from components.formats import load_spec_file
from components.rules._spec import JobSpec
from components.rules._tuning_validation import MAX_TRIALS

HUGE = int("9" * 400)
"""An integer YAML reads as it is, and no float can hold (float(HUGE) overflows)."""

LEGACY_TUNING = {
    "trainingInput": {
        "scaleTier": "BASIC",
        "region": "us-central1",
        "runtimeVersion": "2.11",
        "pythonVersion": "3.7",
        "pythonModule": "trainer.task",
        "packageUris": ["gs://bucket/trainer.tar.gz"],
        "hyperparameters": {
            "goal": "MINIMIZE",
            "hyperparameterMetricTag": "loss",
            "maxTrials": 4,
            "maxParallelTrials": 2,
            "params": [
                {"parameterName": "lr", "type": "DOUBLE", "minValue": 0.001, "maxValue": HUGE}
            ],
        },
    }
}


def _tuning(max_trials: int) -> dict[str, object]:
    return {
        "displayName": "tune",
        "maxTrialCount": max_trials,
        "parallelTrialCount": 2,
        "studySpec": {
            "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
            "parameters": [
                {"parameterId": "lr", "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1}}
            ],
        },
        "trialJobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": 1,
                    "pythonPackageSpec": {
                        "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest",
                        "packageUris": ["gs://bucket/trainer.tar.gz"],
                        "pythonModule": "trainer.task",
                    },
                }
            ]
        },
    }


def _run(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue() + err.getvalue()


@pytest.mark.parametrize("command", ["validate", "convert", "estimate"])
def test_a_huge_legacy_parameter_bound_is_a_violation(tmp_path: Path, command: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(LEGACY_TUNING))
    code, output = _run(command, str(path))
    assert "Traceback" not in output and "OverflowError" not in output
    assert "trainingInput.hyperparameters.params[0].maxValue: must be a number" in output
    if command != "estimate":  # estimate prices a job as written, with its problems shown
        assert code == 1


def test_a_huge_timeout_is_a_violation_of_the_field() -> None:
    document = {
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "n1-standard-4"},
                "replicaCount": 1,
                "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/i:1"},
            }
        ],
        "scheduling": {"timeout": HUGE},
    }
    with pytest.raises(SpecInvalidError) as raised:
        JobSpec.parse(document)
    assert [v.path for v in raised.value.violations] == ["scheduling.timeout"]


@pytest.mark.parametrize(("count", "valid"), [(MAX_TRIALS, True), (MAX_TRIALS + 1, False)])
def test_max_trial_count_is_at_most_a_thousand(tmp_path: Path, count: int, valid: bool) -> None:
    path = tmp_path / "tuning.yaml"
    path.write_text(yaml.safe_dump(_tuning(count)))
    assert load_spec_file(path, tuning=True).tuning is not None
    code, output = _run("validate", str(path), "--region", "us-central1")
    assert code == (0 if valid else 1), output
    if not valid:
        assert "maxTrialCount: 1001 trials; a study runs at most 1,000" in output
