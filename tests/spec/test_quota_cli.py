"""``python -m components quota FILE --project P``: the job file's quota table."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.cli._cli import main
from emulator.testing import EmulatorProcess, running_emulator

REPO = Path(__file__).resolve().parents[2]
DEV = REPO / "stacks" / "jobs" / "dev-t4-spot.yaml"
PROD_GCLOUD = REPO / "stacks" / "jobs" / "prod-a100.gcloud.sh"


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorProcess]:
    with running_emulator(
        "--mode",
        "simulate",
        "--quota",
        "custom_model_training_preemptible_nvidia_t4_gpus@us-central1=0",
    ) as server:
        yield server


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["quota", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def test_a_shortfall_prints_the_table_and_how_to_get_more(emu):
    code, out, _ = _run(
        str(DEV), "--project", "my-project", "--region", "us-central1", "--endpoint", emu.endpoint
    )
    assert code == 1
    assert "custom_model_training_preemptible_nvidia_t4_gpus: need 1, limit 0: SHORT" in out
    assert "--quota-id=CustomModelTrainingPreemptibleT4GPUsPerProjectPerRegion" in out
    assert "fits now in: " in out and "europe-west4" in out


def test_a_job_in_another_form_that_fits_exits_0(emu):
    code, out, _ = _run(str(PROD_GCLOUD), "--project", "my-project", "--endpoint", emu.endpoint)
    assert code == 0, out
    assert "custom_model_training_nvidia_a100_gpus: need " in out and ": fits" in out


def test_quotas_that_cannot_be_read_are_a_clear_error(monkeypatch):
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    code, out, err = _run(str(DEV), "--project", "my-project", "--endpoint", "http://127.0.0.1:9")
    assert code == 2
    assert (
        "error: the Vertex training quotas of project my-project could not be read: could not reach "
        "http://127.0.0.1:9 (ConnectionError)" in err
    )
    assert "needs 1 of custom_model_training_preemptible_nvidia_t4_gpus" in out


def test_an_unreadable_file_is_exit_2(tmp_path):
    bad = tmp_path / "job.yaml"
    bad.write_text("workerPoolSpecs: 7\n")
    code, _, err = _run(str(bad), "--project", "my-project")
    assert code == 2 and err.startswith("error: ") and "workerPoolSpecs" in err


def test_a_project_that_is_no_project_id_is_refused_before_any_call():
    code, out, err = _run(str(DEV), "--project", "Bad Project!", "--endpoint", "http://127.0.0.1:9")
    assert code == 2 and out == ""
    assert err == (
        "error: --project: 'Bad Project!' is not a project ID or number (an ID is 6-30 "
        "lowercase letters, digits or hyphens, starting with a letter)\n"
    )
