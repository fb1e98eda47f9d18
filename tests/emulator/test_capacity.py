"""``serve --no-capacity GPU@REGION``: a job that asks for that GPU there fails as Vertex AI's
does when a region has no machines (PENDING, then FAILED with code 8 RESOURCE_EXHAUSTED and
"Resources are insufficient in region: R. Please try a different region."); other GPUs and
regions run; a cancel before the failure ends it CANCELLED (``emulator.capacity``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from google.cloud.aiplatform_v1 import types as aip

from emulator.testing import EmulatorProcess, running_emulator, wait_for_state
from tests.emulator.conftest import PARENT, REGION, SIMULATE_ARGS, make_job, trainer_pool
from tests.emulator.test_cli import cli

T4 = aip.AcceleratorType.NVIDIA_TESLA_T4
V100 = aip.AcceleratorType.NVIDIA_TESLA_V100
S = aip.JobState


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorProcess]:
    with running_emulator(*SIMULATE_ARGS, "--no-capacity", f"NVIDIA_TESLA_T4@{REGION}") as server:
        yield server


def _create(emu: EmulatorProcess, accelerator: int, parent: str = PARENT) -> str:
    job = make_job("capacity", pools=[trainer_pool(accelerator=(accelerator, 1))])
    return str(emu.client().create_custom_job(parent=parent, custom_job=job).name)


def test_a_gpu_without_capacity_goes_pending_then_fails_with_vertex_message(emu):
    name = _create(emu, T4)
    seen = wait_for_state(emu.client(), name, [S.JOB_STATE_PENDING, S.JOB_STATE_FAILED])
    assert seen.state in (S.JOB_STATE_PENDING, S.JOB_STATE_FAILED)
    job = wait_for_state(emu.client(), name, [S.JOB_STATE_FAILED, S.JOB_STATE_SUCCEEDED])
    assert job.state == S.JOB_STATE_FAILED
    assert job.error.code == 8
    assert job.error.message == (
        f"Resources are insufficient in region: {REGION}. Please try a different region."
    )


def test_other_gpus_and_other_regions_run(emu):
    for name in (_create(emu, V100), _create(emu, T4, PARENT.replace(REGION, "europe-west4"))):
        job = wait_for_state(emu.client(), name, [S.JOB_STATE_FAILED, S.JOB_STATE_SUCCEEDED])
        assert job.state == S.JOB_STATE_SUCCEEDED


def test_a_cancel_before_the_failure_ends_it_cancelled(emu):
    name = _create(emu, T4)
    emu.client().cancel_custom_job(name=name)
    job = wait_for_state(emu.client(), name, [S.JOB_STATE_FAILED, S.JOB_STATE_CANCELLED])
    assert job.state == S.JOB_STATE_CANCELLED


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("T4", "expected GPU@REGION"),
        ("NVIDIA_TESLA_T5@us-central1", "unknown accelerator 'NVIDIA_TESLA_T5'"),
        ("NVIDIA_TESLA_T4@mars-central1", "unknown region 'mars-central1'"),
    ],
)
def test_a_bad_flag_is_named(tmp_path: Path, flag: str, message: str) -> None:
    result = cli("serve", "--port", "0", "--state-dir", str(tmp_path), "--no-capacity", flag)
    assert result.returncode == 2
    assert message in result.stderr and "--no-capacity" in result.stderr
    assert "Traceback" not in result.stderr


def test_with_at_create_the_job_is_refused_and_not_stored() -> None:
    from google.api_core import exceptions as gexc

    with running_emulator(
        *SIMULATE_ARGS, "--no-capacity", f"NVIDIA_TESLA_T4@{REGION}", "--no-capacity-at-create"
    ) as server:
        with pytest.raises(gexc.TooManyRequests) as info:
            _create(server, T4)
        assert "Resources are insufficient in region: us-central1." in str(info.value)
        assert list(server.client().list_custom_jobs(parent=PARENT)) == []
        assert _create(server, V100)  # other GPUs are stored as before
