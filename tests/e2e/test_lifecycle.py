"""A TrainingJob through the real engine: preview, up, refresh (replace and destroy: the
running-job table's rows, ``test_running_job_table.py``).

Every test copies the project into a tmp dir (``Workspace``), starts its own emulator on a free
port and points ``training:endpoint`` at it. Only ``test_up_runs_the_example_trainer`` runs the
trainer for real (execute mode); the others use simulate mode, where a job labelled
``emulator-outcome: hang`` stays RUNNING until it is cancelled.
"""

from __future__ import annotations

import re
from typing import Any

from google.cloud.aiplatform_v1 import JobState

from emulator.testing import wait_for_state
from tests.e2e._engine import (
    HANG_LABELS,
    SIMULATE,
    TRAINING_JOB_TYPE,
    Workspace,
    emulator_for,
    job_entry,
    job_spec,
    list_jobs,
    local_config,
    python_job,
)

# Named by project number, as Vertex AI names jobs (the stack names the project by ID).
JOB_NAME_RE = re.compile(r"^projects/\d{12}/locations/us-central1/customJobs/\d+$")


def _job_steps(preview: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        s["urn"].rsplit("::", 1)[-1]: s
        for s in preview["steps"]
        if TRAINING_JOB_TYPE in s["urn"].split("::")[2]
    }


def _up_with_a_running_job(ws: Workspace, endpoint: str, **extra: Any) -> None:
    """A new stack of one job, ``train``, that runs until cancelled: ``pulumi up`` returns once
    it runs (``extra``: more stack settings)."""
    spec = ws.write_job("train", python_job("train", labels=HANG_LABELS))
    ws.init_stack(local_config(endpoint, [job_entry("train", spec, waitFor="running")], **extra))
    ws.up()


def test_preview_of_a_new_stack_shows_the_creates(ws: Workspace) -> None:
    with emulator_for(ws, *SIMULATE) as emu:
        spec = ws.write_job("train", python_job("train"))
        ws.init_stack(local_config(emu.endpoint, [job_entry("train", spec)]))

        preview = ws.preview_json()

        ops = {s["urn"].rsplit("::", 1)[-1]: s["op"] for s in preview["steps"]}
        # The stack's run key (a secret that keys run hashes) is made once, with the stack.
        assert ops == {
            "gpu-training-e2e": "create",
            "training-run-key": "create",
            "train": "create",
        }
        step = _job_steps(preview)["train"]
        assert step["urn"] == f"urn:pulumi:e2e::gpu-training::{TRAINING_JOB_TYPE}::train"
        inputs = step["newState"]["inputs"]
        assert inputs["region"] == "us-central1"
        assert job_spec(inputs)["workerPoolSpecs"][0]["machineSpec"] == {
            "machineType": "n1-standard-4"
        }
        # Outputs are not known at preview.
        assert "job_name" not in step["newState"].get("outputs", {})
        assert preview["changeSummary"] == {"create": 3}
        # A preview never calls the API: nothing was submitted, and the stack is still empty.
        assert list_jobs(emu.client()) == []
        assert ws.training_jobs() == {}


def test_up_runs_the_example_trainer(ws: Workspace) -> None:
    """The local stack's job (stacks/jobs/local-trainer.yaml) really trains, waitFor: succeeded."""
    with emulator_for(ws, "--gpus", "ignore") as emu:
        ws.init_stack(
            local_config(
                emu.endpoint,
                [
                    job_entry(
                        "example-trainer",
                        "stacks/jobs/local-trainer.yaml",
                        waitFor="succeeded",
                        waitTimeout="5m",
                    )
                ],
            )
        )
        ws.up()

        outputs = ws.pulumi("stack", "output", "--json").json()["jobs"]["example-trainer"]
        assert outputs["state"] == "JOB_STATE_SUCCEEDED"
        assert JOB_NAME_RE.match(outputs["job_name"]), outputs["job_name"]
        assert outputs["model_dir"] == "gs://local-training/jobs/example-trainer/model/"
        [resource] = ws.training_jobs().values()
        assert resource["id"] == outputs["job_name"]
        assert resource["outputs"]["status"]["state"] == "JOB_STATE_SUCCEEDED"
        assert resource["outputs"]["status"]["adopted"] is False

        job = emu.client().get_custom_job(name=outputs["job_name"])
        assert job.state == JobState.JOB_STATE_SUCCEEDED
        # The env value reached the job although the state holds it only as a secret.
        [env] = job.job_spec.worker_pool_specs[0].python_package_spec.env
        assert (env.name, env.value) == ("TRAINER_RUN_NOTE", "local-demo")
        # gs://local-training/... is <state-dir>/gcs/local-training/... in the emulator.
        model_dir = emu.state_dir / "gcs" / "local-training" / "jobs" / "example-trainer" / "model"
        assert (model_dir / "model.npz").stat().st_size > 0
        assert (model_dir / "metrics.json").is_file()


def test_refresh_after_an_out_of_band_cancel(ws: Workspace) -> None:
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        _up_with_a_running_job(ws, emu.endpoint)
        job_name = ws.training_jobs()["train"]["id"]
        assert ws.training_jobs()["train"]["outputs"]["status"]["state"] == "JOB_STATE_RUNNING"

        client.cancel_custom_job(name=job_name)
        wait_for_state(client, job_name, [JobState.JOB_STATE_CANCELLED], timeout=30)
        ws.pulumi("refresh", "--yes", "--skip-preview")

        refreshed = ws.training_jobs()["train"]
        assert refreshed["id"] == job_name
        assert refreshed["outputs"]["status"]["state"] == "JOB_STATE_CANCELLED"
        assert refreshed["outputs"]["status"]["end_time"]
        # (Stack outputs are the program's: refresh does not run it, the next `up` updates them.)


def test_refresh_with_the_program_updates_the_jobs_stack_output(ws: Workspace) -> None:
    """``pulumi refresh`` updates each job's ``status`` but not the ``jobs`` stack output (the
    engine does not run the program); ``pulumi refresh --run-program`` updates both."""
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        _up_with_a_running_job(ws, emu.endpoint)
        job_name = ws.training_jobs()["train"]["id"]
        client.cancel_custom_job(name=job_name)
        wait_for_state(client, job_name, [JobState.JOB_STATE_CANCELLED], timeout=30)

        def exported() -> Any:
            return ws.pulumi("stack", "output", "jobs", "--json").json()["train"]["state"]

        ws.pulumi("refresh", "--yes", "--skip-preview")
        assert ws.training_jobs()["train"]["outputs"]["status"]["state"] == "JOB_STATE_CANCELLED"
        assert exported() == "JOB_STATE_RUNNING"  # what the docs say a plain refresh leaves

        ws.pulumi("refresh", "--yes", "--skip-preview", "--run-program")
        assert exported() == "JOB_STATE_CANCELLED"


def test_an_identical_up_after_a_destroy_starts_a_new_run(ws: Workspace) -> None:
    """Issue 42 item 9: the destroy deletes the stack's run key, so the next identical `up`
    hashes its run anew: the succeeded job whose record the destroy kept is not adopted (as
    docs/provider.md says for the Python door)."""
    with emulator_for(ws, *SIMULATE) as emu:
        spec = ws.write_job("train", python_job("train"))
        ws.init_stack(local_config(emu.endpoint, [job_entry("train", spec, waitFor="succeeded")]))
        ws.up()
        first = ws.training_jobs()["train"]["outputs"]["status"]
        assert first["state"] == "JOB_STATE_SUCCEEDED"
        ws.pulumi("destroy", "--yes", "--skip-preview")
        ws.up()
        second = ws.training_jobs()["train"]["outputs"]["status"]
        assert second["job_name"] != first["job_name"] and second["adopted"] is False
        assert second["run_hash"] != first["run_hash"]
        states = {str(j.name): j.state.name for j in list_jobs(emu.client())}
        assert states == {
            first["job_name"]: "JOB_STATE_SUCCEEDED",
            second["job_name"]: "JOB_STATE_SUCCEEDED",
        }
