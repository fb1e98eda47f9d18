"""Placement across candidate regions on the real engine and the emulator: three candidates,
the first with no quota for the GPU, the second without capacity; `pulumi up` ends with the job
running in the third, one job active in all, the failed attempt cancelled and named in the
output; a kill between two attempts, then `pulumi up`, adopts (no second job); a tuning job is
placed the same way (``components.core._placement``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests._pools import on_one_t4
from tests.e2e._engine import (
    GCP_PROJECT,
    HANG_LABELS,
    SIMULATE,
    Workspace,
    emulator_for,
    job_entry,
    kill_group,
    local_config,
    python_job,
    wait_until,
)

REPO = Path(__file__).resolve().parents[2]
T4 = "NVIDIA_TESLA_T4"
REGIONS = ["us-central1", "us-east4", "europe-west4"]
FLAGS = (
    "--quota",
    "custom_model_training_nvidia_t4_gpus@us-central1=0",
    "--no-capacity",
    f"{T4}@us-east4",
)
ENDED = ("JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_SUCCEEDED")


def _jobs(client: Any, *, tuning: bool = False) -> list[Any]:
    """Every job the emulator holds in the three candidate regions."""
    found: list[Any] = []
    for region in REGIONS:
        parent = f"projects/{GCP_PROJECT}/locations/{region}"
        listed = (
            client.list_hyperparameter_tuning_jobs(parent=parent)
            if tuning
            else client.list_custom_jobs(parent=parent)
        )
        found += list(listed)
    return found


def _jobs_output(ws: Workspace) -> dict[str, Any]:
    """The stack output ``jobs``: each job's ``status`` as the last program run saw it."""
    output: dict[str, Any] = ws.pulumi("stack", "output", "jobs", "--json").json()
    return output


def _active(jobs: list[Any]) -> list[Any]:
    return [j for j in jobs if j.state.name not in ENDED]


def _t4_job(name: str) -> dict[str, Any]:
    return python_job(name, accelerator=T4, accelerator_count=1, labels=HANG_LABELS)


def test_up_places_the_job_in_the_third_candidate(ws: Workspace) -> None:
    with emulator_for(ws, *SIMULATE, *FLAGS) as emu:
        client = emu.client()
        spec = ws.write_job("train", _t4_job("train"))
        entry = job_entry("train", spec, waitFor="running", regions=REGIONS)
        ws.init_stack(local_config(emu.endpoint, [entry]))

        preview = ws.pulumi("preview").output
        assert "placement of train: tries us-east4 first" in preview
        assert "skip us-central1: quota custom_model_training_nvidia_t4_gpus: need 1, limit 0" in (
            preview
        )
        assert _jobs(client) == []

        up = ws.pulumi("up", "--yes", "--skip-preview").output
        assert "placement: us-central1: quota refused" in up
        assert "placement: us-east4: no capacity" in up
        assert "Resources are insufficient in region: us-east4" in up

        jobs = _jobs(client)
        [running] = _active(jobs)
        assert "/locations/europe-west4/" in running.name
        assert running.state.name == "JOB_STATE_RUNNING"
        [failed] = [j for j in jobs if j.name != running.name]
        assert "/locations/us-east4/" in failed.name and failed.state.name == "JOB_STATE_FAILED"

        status = _jobs_output(ws)["train"]
        assert status["job_name"] == running.name
        assert status["placed_region"] == "europe-west4"
        assert status["placed_capacity"] == "as in the spec"
        attempts = status["placement_attempts"]
        assert [a["region"] for a in attempts] == REGIONS
        assert attempts[1]["job_name"] == failed.name
        assert "no capacity" in attempts[1]["stopped_by"]

        # A new candidate list that still names the job's region: no replace, no API call.
        entry["regions"] = ["europe-west4", "us-east4"]
        ws.write_config(local_config(emu.endpoint, [entry]))
        diff = ws.pulumi("preview", "--diff").output
        assert "replace" not in diff.split("Resources:")[-1]
        ws.up()
        assert [j.name for j in _active(_jobs(client))] == [running.name]

        ws.pulumi("destroy", "--yes", "--skip-preview")
        assert _active(_jobs(client)) == []


def test_a_kill_between_two_attempts_then_up_adopts(ws: Workspace, tmp_path: Path) -> None:
    # The third candidate's job stays QUEUED for a few seconds: `up` is still waiting for it
    # when it is killed, after the two failed attempts.
    with emulator_for(ws, *SIMULATE, "--simulate-queued-seconds", "4", *FLAGS) as emu:
        client = emu.client()
        spec = ws.write_job("train", _t4_job("train"))
        entry = job_entry("train", spec, waitFor="running", regions=REGIONS)
        ws.init_stack(local_config(emu.endpoint, [entry]))

        up = ws.spawn("up", "--yes", "--skip-preview", log=tmp_path / "killed-up.log")
        try:
            placed = wait_until(
                lambda: [j for j in _jobs(client) if "/locations/europe-west4/" in j.name],
                timeout=120,
                what="the third candidate's job",
            )
            assert up.poll() is None, "pulumi up ended before it could be killed"
        finally:
            kill_group(up)
        wait_until(lambda: not ws.stray_processes(), timeout=10, what="the plugins to end")
        ws.pulumi("cancel", "--yes")
        ws.pulumi("refresh", "--yes", "--skip-preview", "--clear-pending-creates")

        ws.up()
        jobs = _jobs(client)
        assert [j.name for j in _active(jobs)] == [placed[0].name], "a second job was started"
        assert len(jobs) == 2  # the us-east4 attempt (failed) and the adopted one
        status = _jobs_output(ws)["train"]
        assert status["adopted"] is True
        assert status["placed_region"] == "europe-west4"
        ws.pulumi("destroy", "--yes", "--skip-preview")


def test_a_tuning_job_is_placed_the_same_way(ws: Workspace) -> None:
    with emulator_for(ws, *SIMULATE, *FLAGS) as emu:
        client = emu.client()
        document: dict[str, Any] = yaml.safe_load(
            (REPO / "stacks/jobs/local-tuning.yaml").read_text()
        )
        on_one_t4(document["trialJobSpec"]["workerPoolSpecs"][0])
        document["parallelTrialCount"] = 1
        spec = ws.write_job("tune", document)
        entry = job_entry("tune", spec, waitFor="running", regions=REGIONS)
        ws.init_stack(local_config(emu.endpoint, [entry]))

        up = ws.pulumi("up", "--yes", "--skip-preview").output
        assert "placement: us-east4: no capacity" in up
        jobs = _jobs(client, tuning=True)
        [placed] = [j for j in jobs if "/locations/europe-west4/" in j.name]
        assert [j.name for j in _active(jobs)] in ([placed.name], [])
        assert {j.state.name for j in jobs if j.name != placed.name} == {"JOB_STATE_FAILED"}
        status = _jobs_output(ws)["tune"]
        assert status["placed_region"] == "europe-west4"
        assert json.dumps(status).count("us-east4") >= 1
        ws.pulumi("destroy", "--yes", "--skip-preview")
