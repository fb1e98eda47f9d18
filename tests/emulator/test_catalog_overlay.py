"""``serve --catalog-overlay DIR``: the emulator puts a folder of catalog rows over its catalog,
as a stack's ``training:catalogOverlay`` puts them over the project's, so a machine type, an
accelerator count or an image the overlay adds is accepted by the local Vertex AI as it is by
the validator (``emulator.hardware``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from google.api_core import exceptions
from google.cloud.aiplatform_v1 import types as aip

from emulator import hardware, quotas
from emulator.testing import EmulatorProcess, running_emulator, wait_for_state
from tests.emulator.conftest import PARENT, SIMULATE_ARGS, make_job, trainer_pool

NEW_MACHINE = "n1-standard-6"  # not a predefined N1 size: no catalog lists it
SOURCE = "overlay test row (2026-11-27)"


def _write_overlay(folder: Path, *, counts: str = "1 2") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "machine_types.csv").write_text(
        "machine_type,family,vcpus,memory_gb,fixed_accelerator_type,fixed_accelerator_count,"
        "source,training\n"
        f"{NEW_MACHINE},n1,6,22.5,,,{SOURCE},yes\n"
    )
    (folder / "attachable_counts.csv").write_text(
        f"machine_type,accelerator_type,counts,source\n{NEW_MACHINE},NVIDIA_TESLA_T4,{counts},"
        f"{SOURCE}\n"
    )
    return folder


def test_overlay_rows_add_to_and_replace_the_catalogs(tmp_path, monkeypatch):
    overlay = _write_overlay(tmp_path / "overlay")
    monkeypatch.delenv(hardware.OVERLAY_ENV, raising=False)
    assert NEW_MACHINE not in hardware.hardware().training_machine_types

    monkeypatch.setenv(hardware.OVERLAY_ENV, str(overlay))
    facts = hardware.hardware()
    assert NEW_MACHINE in facts.training_machine_types
    assert "n1-standard-8" in facts.training_machine_types  # the catalog's rows stay
    assert facts.attachable[(NEW_MACHINE, "NVIDIA_TESLA_T4")] == frozenset({1, 2})
    # The quota service meters the added machine by its own vCPUs.
    assert quotas.load_table().machines[NEW_MACHINE][1] == 6

    # A changed overlay file is read again; a row with a catalog row's key replaces it.
    (overlay / "attachable_counts.csv").write_text(
        "machine_type,accelerator_type,counts,source\n"
        f"{NEW_MACHINE},NVIDIA_TESLA_T4,1 2 4,{SOURCE}\n"
        f"n1-standard-8,NVIDIA_TESLA_T4,1,{SOURCE}\n"
    )
    facts = hardware.hardware()
    assert facts.attachable[(NEW_MACHINE, "NVIDIA_TESLA_T4")] == frozenset({1, 2, 4})
    assert facts.attachable[("n1-standard-8", "NVIDIA_TESLA_T4")] == frozenset({1})


def _job(machine: str, count: int) -> aip.CustomJob:
    pool = trainer_pool(
        machine_type=machine, accelerator=(aip.AcceleratorType.NVIDIA_TESLA_T4, count)
    )
    return make_job("overlay", pools=[pool])


def test_without_the_overlay_the_machine_is_refused():
    refused = pytest.raises(exceptions.BadRequest, match=f'"{NEW_MACHINE}" is not supported')
    with running_emulator(*SIMULATE_ARGS) as emu, refused:
        emu.client().create_custom_job(parent=PARENT, custom_job=_job(NEW_MACHINE, 1))


@pytest.fixture(scope="module")
def overlaid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatorProcess]:
    overlay = _write_overlay(tmp_path_factory.mktemp("catalog") / "overlay")
    with running_emulator(*SIMULATE_ARGS, "--catalog-overlay", str(overlay)) as emu:
        yield emu


def test_a_machine_the_overlay_adds_runs(overlaid):
    client = overlaid.client()
    name = client.create_custom_job(parent=PARENT, custom_job=_job(NEW_MACHINE, 2)).name
    job = wait_for_state(
        client, name, [aip.JobState.JOB_STATE_SUCCEEDED, aip.JobState.JOB_STATE_FAILED]
    )
    assert job.state == aip.JobState.JOB_STATE_SUCCEEDED


def test_the_overlay_counts_are_the_rule(overlaid):
    with pytest.raises(exceptions.BadRequest, match="valid counts: 1, 2"):
        overlaid.client().create_custom_job(parent=PARENT, custom_job=_job(NEW_MACHINE, 4))


def test_the_health_answer_names_the_overlay(overlaid):
    import json
    import urllib.request

    with urllib.request.urlopen(f"{overlaid.endpoint}/emulator/v1/health", timeout=30) as answer:
        health = json.load(answer)
    assert health["catalogOverlay"].endswith("overlay")


def test_an_overlay_that_is_no_folder_is_a_flag_error(tmp_path):
    from tests.emulator.test_cli import cli

    result = cli(
        "serve", "--state-dir", str(tmp_path / "s"), "--catalog-overlay", str(tmp_path / "none")
    )
    assert result.returncode == 2
    assert "--catalog-overlay" in result.stderr and "not a directory" in result.stderr
