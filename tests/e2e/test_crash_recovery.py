"""`pulumi up` killed with SIGKILL right after the job was submitted: no second GPU job.

What the engine (v3.259, file:// backend) leaves behind after a kill -9, found here:

* the dynamic provider process keeps running (the engine starts plugins in their own process
  group), still inside ``create``; the test kills it as well, as a machine crash would;
* the stack's lock file stays: the next command fails with "the stack is currently locked"
  and names `pulumi cancel`, which removes it;
* the state keeps a pending operation ``creating`` for the TrainingJob and no resource;
* `pulumi refresh --clear-pending-creates` drops it (in non-interactive mode refresh does not
  offer to import it). Then `up` creates the resource again, and the provider adopts the job
  the killed run submitted (labels ``pulumi_resource`` + ``pulumi_run``) instead of starting
  another one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from google.cloud.aiplatform_v1 import JobState

from tests.e2e._engine import (
    HANG_LABELS,
    SLOW_START,
    TRAINING_JOB_TYPE,
    Workspace,
    assert_refresh_names_the_job_left,
    emulator_for,
    job_entry,
    kill_group,
    kill_replace_once_submitted,
    list_jobs,
    local_config,
    python_job,
    wait_until,
)

URN = f"urn:pulumi:e2e::gpu-training::{TRAINING_JOB_TYPE}::train"


def _one_job_waited_for(ws: Workspace, emu: Any) -> None:
    spec = ws.write_job("train", python_job("train", labels=HANG_LABELS))
    ws.init_stack(local_config(emu.endpoint, [job_entry("train", spec, waitFor="running")]))


def test_up_killed_after_submit_leaves_exactly_one_job(ws: Workspace, tmp_path: Path) -> None:
    with emulator_for(ws, *SLOW_START) as emu:
        client = emu.client()
        _one_job_waited_for(ws, emu)
        urn = URN

        up = ws.spawn("up", "--yes", "--skip-preview", log=tmp_path / "killed-up.log")
        try:
            [submitted] = wait_until(lambda: list_jobs(client), timeout=120, what="a submitted job")
            assert up.poll() is None, "pulumi up ended before it could be killed"
        finally:
            kill_group(up)
        assert up.returncode == -9
        # The engine runs each plugin in a process group of its own, so the dynamic provider
        # (still polling in create) and the language host outlive the CLI's group; they notice
        # the engine is gone (their stdin pipe closes) and end by themselves.
        wait_until(
            lambda: not ws.stray_processes(), timeout=10, what="the plugins to end by themselves"
        )
        killed_log = (tmp_path / "killed-up.log").read_text(errors="replace")
        assert "train creating" in killed_log and "train created" not in killed_log

        # The killed run's lock blocks the next command, which names the way out.
        locked = ws.pulumi("up", "--yes", "--skip-preview", expect_failure=True).output
        assert "the stack is currently locked" in locked
        assert "pulumi cancel" in locked
        ws.pulumi("cancel", "--yes")

        # The state knows a create was under way, and has no resource for it.
        deployment = ws.export()
        pending = deployment.get("pending_operations") or []
        assert [(p["type"], p["resource"]["urn"]) for p in pending] == [("creating", urn)]
        assert ws.training_jobs() == {}

        out = ws.pulumi("refresh", "--yes", "--skip-preview", "--clear-pending-creates").output
        assert "Traceback" not in out
        assert not ws.export().get("pending_operations")

        ws.up()

        jobs = list_jobs(client)
        assert [j.name for j in jobs] == [submitted.name], "a second job was started"
        resource = ws.training_jobs()["train"]
        assert resource["id"] == submitted.name
        assert resource["outputs"]["status"]["adopted"] is True
        assert resource["outputs"]["status"]["state"] == "JOB_STATE_RUNNING"
        assert client.get_custom_job(name=submitted.name).state == JobState.JOB_STATE_RUNNING
        assert not ws.export().get("pending_operations")

        # The adopted job is an ordinary resource: destroy cancels it (its record is kept).
        ws.pulumi("destroy", "--yes", "--skip-preview")
        assert [(j.name, j.state) for j in list_jobs(client)] == [
            (submitted.name, JobState.JOB_STATE_CANCELLED)
        ]


def test_a_killed_replace_leaves_one_job_after_the_documented_recovery(
    ws: Workspace, tmp_path: Path
) -> None:
    """``pulumi up --replace`` SIGKILLed right after the new job was submitted: the docs'
    recovery (the killed run's lock and pending create cleared as after any killed ``up``;
    the refresh names the job left behind; then the killed command again) ends with one job
    for the resource, the new one, found (adopted), and the old one cancelled."""
    with emulator_for(ws, *SLOW_START) as emu:
        client = emu.client()
        _one_job_waited_for(ws, emu)
        urn = URN
        ws.up()
        old = ws.training_jobs()["train"]["id"]

        new = kill_replace_once_submitted(ws, client, old, urn, tmp_path / "killed-replace.log")
        ws.kill_strays()  # the provider too, as a machine crash would

        # A refresh names the job the killed run left, and the command that takes it.
        assert_refresh_names_the_job_left(ws, new)

        ws.up("--replace", urn)

        jobs = {j.name: j.state for j in list_jobs(client)}
        # The old job cancelled, its record kept (issue 35); the new one runs.
        assert jobs == {new: JobState.JOB_STATE_RUNNING, old: JobState.JOB_STATE_CANCELLED}, jobs
        resource = ws.training_jobs()["train"]
        assert resource["id"] == new
        assert resource["outputs"]["status"]["adopted"] is True
        assert not ws.export().get("pending_operations")


def test_a_destroy_after_a_killed_replace_cancels_the_job_it_left(
    ws: Workspace, tmp_path: Path
) -> None:
    """``pulumi up --replace`` SIGKILLed once the new job was submitted, then ``destroy``
    instead of the documented recovery: the destroy cancels both jobs, the one the state holds
    and the one the killed run left outside it (issue 42)."""
    with emulator_for(ws, *SLOW_START) as emu:
        client = emu.client()
        _one_job_waited_for(ws, emu)
        ws.up()
        old = ws.training_jobs()["train"]["id"]

        new = kill_replace_once_submitted(ws, client, old, URN, tmp_path / "killed-replace.log")
        ws.kill_strays()
        ws.pulumi("cancel", "--yes")

        out = ws.pulumi("destroy", "--yes", "--skip-preview").output
        assert f"job {new} (JOB_STATE_" in out and "is cancelled too" in out, out
        jobs = {j.name: j.state for j in list_jobs(client)}
        assert jobs == {new: JobState.JOB_STATE_CANCELLED, old: JobState.JOB_STATE_CANCELLED}
