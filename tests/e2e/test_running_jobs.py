"""A running job is never lost, duplicated or killed by an ordinary operation: the real engine.

``pulumi up --replace`` and ``--target-replace`` of a RUNNING job (a new job runs, the old one
is cancelled, in the order ``exclusiveGpus`` asks for), an API outage longer than the retry
deadline while ``up`` waits (the job keeps running, the next ``up`` adopts it), SIGINT to
``pulumi up`` while it waits for ``succeeded`` (it ends within seconds, the job keeps running,
the next ``up`` adopts it), the labels the provider adds, and a job started elsewhere taken over
through ``python -m components import`` (both kinds).
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.cloud.aiplatform_v1 import JobState

from components.lifecycle._wire import TUNING_JOB_TYPE
from tests.e2e._engine import (
    HANG_LABELS,
    PARENT,
    REPO,
    SIMULATE,
    TRAINING_JOB_TYPE,
    Workspace,
    emulator_for,
    job_entry,
    kill_group,
    list_jobs,
    local_config,
    python_job,
    wait_until,
)

URN = f"urn:pulumi:e2e::gpu-training::{TRAINING_JOB_TYPE}::train"


def _running(client: Any) -> list[Any]:
    return [j for j in list_jobs(client) if j.state == JobState.JOB_STATE_RUNNING]


def _start(ws: Workspace, emu: Any, **entry: Any) -> str:
    spec = ws.write_job("train", python_job("train", labels=HANG_LABELS))
    config = local_config(emu.endpoint, [job_entry("train", spec, **entry)])
    ws.init_stack(config)
    ws.up()
    return str(ws.training_jobs()["train"]["id"])


@pytest.mark.parametrize("flag", ["--replace", "--target-replace"])
def test_a_forced_replace_starts_a_new_job_and_cancels_the_old(ws: Workspace, flag: str) -> None:
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        old = _start(ws, emu, waitFor="running")

        out = ws.pulumi("up", "--yes", "--skip-preview", flag, URN).output

        assert "replaced" in out
        new = ws.training_jobs()["train"]
        assert new["id"] != old
        assert new["outputs"]["status"]["adopted"] is False
        assert client.get_custom_job(name=new["id"]).state == JobState.JOB_STATE_RUNNING
        # Cancelled; its record is kept (issue 35: deleting it is opt-in).
        assert client.get_custom_job(name=old).state == JobState.JOB_STATE_CANCELLED
        assert sorted(j.name for j in list_jobs(client)) == sorted([new["id"], old])
        # The next refresh keeps the new job: nothing pointed at a job that is gone.
        ws.pulumi("refresh", "--yes", "--skip-preview")
        assert ws.training_jobs()["train"]["id"] == new["id"]


def test_a_forced_replace_with_exclusive_gpus_cancels_first(ws: Workspace) -> None:
    """``--replace`` does not ask the provider's diff: the program's deleteBeforeReplace does."""
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        old = _start(ws, emu, waitFor="running", exclusiveGpus=True, keepRecordOnDelete=True)

        ws.pulumi("up", "--yes", "--skip-preview", "--replace", URN)

        new = client.get_custom_job(name=ws.training_jobs()["train"]["id"])
        kept = client.get_custom_job(name=old)  # keepRecordOnDelete: the record stays
        assert kept.state == JobState.JOB_STATE_CANCELLED
        assert new.state == JobState.JOB_STATE_RUNNING
        assert new.create_time >= kept.end_time, "the new job started before the old one ended"


def _wait_for_running(client: Any) -> Any:
    [job] = wait_until(lambda: _running(client), timeout=60, what="a RUNNING job")
    return job


def test_an_outage_during_the_wait_leaves_the_job_for_the_next_up(
    ws: Workspace, tmp_path: Path
) -> None:
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        spec = ws.write_job("train", python_job("train", labels=HANG_LABELS))
        entry = job_entry("train", spec, waitFor="succeeded", waitTimeout="10m")
        ws.init_stack(local_config(emu.endpoint, [entry], **{"training:retryDeadline": 2}))
        log = tmp_path / "up.log"
        up = ws.spawn("up", "--yes", "--skip-preview", log=log)
        try:
            job = _wait_for_running(client)
            emu.set_faults(unavailable_rate=1.0)
            time.sleep(3.5)
            emu.clear_faults()
            up.wait(timeout=60)
        finally:
            kill_group(up)
        out = log.read_text(errors="replace")
        assert up.returncode != 0
        assert "could not be reached" in out and "left running" in out
        assert "the next `pulumi up` with the same job adopts it" in out
        assert client.get_custom_job(name=job.name).state == JobState.JOB_STATE_RUNNING

        ws.write_config(
            local_config(
                emu.endpoint,
                [job_entry("train", spec, waitFor="running")],  # a setting: the same run
                **{"training:retryDeadline": 2},
            )
        )
        ws.up()

        resource = ws.training_jobs()["train"]
        assert resource["id"] == job.name
        assert resource["outputs"]["status"]["adopted"] is True
        assert [j.name for j in list_jobs(client)] == [job.name]


def _up_waiting(ws: Workspace, emu: Any, log: Path) -> tuple[subprocess.Popen[bytes], Any, str]:
    """``pulumi up`` of one job that runs until cancelled, ``waitFor: succeeded``, well inside
    its wait: (the CLI process, the job, the job file)."""
    spec = ws.write_job("train", python_job("train", labels=HANG_LABELS))
    entry = job_entry("train", spec, waitFor="succeeded", waitTimeout="30m")
    ws.init_stack(local_config(emu.endpoint, [entry]))
    up = ws.spawn("up", "--yes", "--skip-preview", log=log)
    try:
        job = _wait_for_running(emu.client())
        time.sleep(1.0)  # well inside the wait
    except BaseException:
        kill_group(up)
        raise
    return up, job, spec


def _seconds_to_end(up: subprocess.Popen[bytes], stop: Callable[[], Any]) -> float:
    """Call ``stop`` (a signal, ``pulumi cancel``), then wait for ``up`` to end: the seconds it
    took. ``up``'s process group is killed in any case."""
    try:
        sent = time.monotonic()
        stop()
        up.wait(timeout=120)
        return time.monotonic() - sent
    finally:
        kill_group(up)


def test_sigint_during_a_wait_ends_up_and_leaves_the_job(ws: Workspace, tmp_path: Path) -> None:
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        log = tmp_path / "up.log"
        up, job, spec = _up_waiting(ws, emu, log)
        ended = _seconds_to_end(up, lambda: up.send_signal(signal.SIGINT))  # Ctrl-C's signal
        out = log.read_text(errors="replace")
        assert ended < 15, f"pulumi up took {ended:.1f}s to end after SIGINT:\n{out}"
        assert "stopped waiting for it: pulumi was cancelled" in out
        assert "left running" in out
        assert client.get_custom_job(name=job.name).state == JobState.JOB_STATE_RUNNING
        wait_until(lambda: not ws.stray_processes(), timeout=15, what="the plugins to end")

        ws.write_config(local_config(emu.endpoint, [job_entry("train", spec, waitFor="running")]))
        ws.up()

        resource = ws.training_jobs()["train"]
        assert resource["id"] == job.name and resource["outputs"]["status"]["adopted"] is True
        assert [j.name for j in list_jobs(client)] == [job.name]


def test_sigint_reaches_every_wait_when_the_workers_are_busy(ws: Workspace, tmp_path: Path) -> None:
    """More waits than workers: the engine's Cancel still stops them all at once, nothing is
    submitted after it, and no job is cancelled (they are left for the next ``up``)."""
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        entries = [
            job_entry(
                f"train{i}",
                ws.write_job(f"train{i}", python_job(f"train{i}", labels=HANG_LABELS)),
                waitFor="succeeded",
                waitTimeout="30m",
            )
            for i in range(8)
        ]
        config = local_config(emu.endpoint, entries, **{"training:maxConcurrentOperations": 4})
        ws.init_stack(config)
        log = tmp_path / "up.log"
        up = ws.spawn("up", "--yes", "--skip-preview", "--parallel", "8", log=log)
        try:
            # Four workers, each in a wait; the other four creates queue behind them.
            wait_until(lambda: len(_running(client)) >= 4, timeout=120, what="4 RUNNING jobs")
            time.sleep(1.0)
        except BaseException:
            kill_group(up)
            raise
        ended = _seconds_to_end(up, lambda: up.send_signal(signal.SIGINT))
        out = log.read_text(errors="replace")
        assert ended < 30, f"pulumi up took {ended:.1f}s to end after SIGINT:\n{out}"
        jobs = list_jobs(client)
        assert len(jobs) == 4, f"{len(jobs)} jobs: one was submitted after the cancel:\n{out}"
        assert {j.state for j in jobs} == {JobState.JOB_STATE_RUNNING}, "a job was cancelled"
        # Each job's message, once per job (the engine shows an error several times: as the
        # operation's progress, its failure and in the summary).
        stopped = set(re.findall(r"job (\S+): stopped waiting for it: pulumi was cancelled", out))
        assert stopped == {j.name for j in jobs}, out
        assert "waitTimeout" not in out


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({f"team{i}": "ml" for i in range(63)}, "at most 62 of your own"),
        ({"pulumi_run": "mine"}, "labels.pulumi_run: is a label the provider sets"),
    ],
)
def test_labels_the_provider_owns_fail_the_preview(
    ws: Workspace, labels: dict[str, str], expected: str
) -> None:
    with emulator_for(ws, *SIMULATE) as emu:
        spec = ws.write_job("train", python_job("train", labels=labels))
        ws.init_stack(local_config(emu.endpoint, [job_entry("train", spec)]))
        out = ws.pulumi("preview", expect_failure=True).output
        assert expected in out and "Traceback" not in out
        ws.pulumi("up", "--yes", "--skip-preview", expect_failure=True)
        assert list_jobs(emu.client()) == []


# -- a job started elsewhere, taken over ----------------------------------------------------------


def _start_elsewhere(ws: Workspace, client: Any, path: Path, *, tuning: bool) -> str:
    """Start the job in ``path`` as gcloud would: no labels of the provider."""
    from components.formats import load_spec_file
    from components.training_job import resolve_local_paths
    from components.tuning_job import resolve_trial_local_paths

    loaded = load_spec_file(path, tuning=tuning)
    if tuning:
        from components.vertex.tuning_convert import to_tuning_job

        assert loaded.tuning is not None
        spec = resolve_trial_local_paths(loaded.tuning, path.parent)
        return str(
            client.create_hyperparameter_tuning_job(
                parent=PARENT, hyperparameter_tuning_job=to_tuning_job(spec)
            ).name
        )
    from components.vertex.convert import to_custom_job

    job = to_custom_job(resolve_local_paths(loaded.spec, path.parent))
    return str(client.create_custom_job(parent=PARENT, custom_job=job).name)


def _import(ws: Workspace, emu: Any, name: str, *args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "components", "import", name, "--endpoint", emu.endpoint, *args],
        cwd=ws.project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "existingJob: " + name in proc.stdout
    # The entry the command prints is what goes into training:jobs.
    printed = proc.stdout.split("training:jobs in the stack's configuration", 1)[1]
    block = "\n".join(line for line in printed.splitlines() if line.startswith("    "))
    [entry] = yaml.safe_load(block)
    return dict(entry)


@pytest.mark.parametrize("tuning", [False, True], ids=["custom-job", "tuning-job"])
def test_a_job_started_elsewhere_is_taken_over(ws: Workspace, tuning: bool) -> None:
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        if tuning:
            document = yaml.safe_load((REPO / "stacks/jobs/local-tuning.yaml").read_text())
            document["labels"] = HANG_LABELS
            document["displayName"] = "tuned elsewhere"
        else:
            document = python_job("trained elsewhere", labels=HANG_LABELS)
        source = ws.project / ws.write_job("started-elsewhere", document)
        name = _start_elsewhere(ws, client, source, tuning=tuning)
        listing = client.list_hyperparameter_tuning_jobs if tuning else client.list_custom_jobs
        before = len(list(listing(parent=PARENT)))

        entry = _import(ws, emu, name)
        ws.init_stack(local_config(emu.endpoint, [{**entry, "waitFor": "running"}]))
        ws.up()

        job_type = TUNING_JOB_TYPE if tuning else TRAINING_JOB_TYPE
        [resource] = ws.resources(job_type)
        assert resource["id"] == name
        assert resource["outputs"]["status"]["adopted"] is True
        assert len(list(listing(parent=PARENT))) == before, "a second job was started"
        # As after `pulumi import`: the next preview shows no change.
        preview = ws.preview_json()
        assert preview["changeSummary"].get("same") == 3, preview["changeSummary"]
        assert set(preview["changeSummary"]) == {"same"}

        # A change of the file is a replace like any change: a new job, the old one cancelled.
        spec_file = ws.project / entry["spec"]
        changed = yaml.safe_load(spec_file.read_text())
        changed["labels"] = {**changed["labels"], "edited": "yes"}
        spec_file.write_text(yaml.safe_dump(changed, sort_keys=False))
        [step] = [s for s in ws.preview_json()["steps"] if job_type in s["urn"]]
        assert step["op"] == "replace" and step["replaceReasons"] == ["spec"]
        ws.up()
        [replaced] = ws.resources(job_type)
        assert replaced["id"] != name and replaced["outputs"]["status"]["adopted"] is False
        # Cancelled, its record kept (issue 35).
        old_job = (client.get_hyperparameter_tuning_job if tuning else client.get_custom_job)(
            name=name
        )
        assert old_job.state == JobState.JOB_STATE_CANCELLED
        ws.pulumi("destroy", "--yes", "--skip-preview")


def test_a_job_another_stack_holds_is_not_taken_over(ws: Workspace) -> None:
    """One job, one owner: stack B importing stack A's running job is refused (naming A's
    stack and resource) unless B's entry says takeOverHeldJob; B's destroy then touches
    nothing of A's."""
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        held = _start(ws, emu, waitFor="running")
        other = Workspace(ws.base, ws.bin_dir, stack="other")
        entry = _import(other, emu, held, "--out", "stacks/jobs/theirs.yaml")
        other.init_stack(local_config(emu.endpoint, [{**entry, "waitFor": "running"}]))

        out = other.pulumi("up", "--yes", "--skip-preview", expect_failure=True).output

        assert "is held by another resource" in out
        assert "gpu-training--e2e--train (pulumi_owner label)" in out
        assert "takeOverHeldJob: true" in out
        assert other.resources(TRAINING_JOB_TYPE) == []
        other.pulumi("destroy", "--yes", "--skip-preview")
        assert [(j.name, j.state) for j in list_jobs(client)] == [
            (held, JobState.JOB_STATE_RUNNING)
        ]
        ws.pulumi("stack", "select", ws.stack)
        ws.pulumi("refresh", "--yes", "--skip-preview")
        assert ws.training_jobs()["train"]["id"] == held

        # Said explicitly, the takeover is done, and recorded: that stack may now cancel it.
        other.pulumi("stack", "select", other.stack)
        taken = {**entry, "waitFor": "running", "takeOverHeldJob": True}
        other.write_config(local_config(emu.endpoint, [taken]))
        other.up()
        [resource] = other.resources(TRAINING_JOB_TYPE)
        assert resource["id"] == held and resource["outputs"]["status"]["adopted"] is True
        assert resource["outputs"]["status"]["taken_over_from"]
        assert len(list_jobs(client)) == 1


def test_pulumi_cancel_from_another_shell_stops_the_waits(ws: Workspace, tmp_path: Path) -> None:
    """A file:// backend: ``pulumi cancel`` only removes the stack's lock; the waits notice
    that within seconds and end as after Ctrl-C (the job keeps running, nothing is cancelled)."""
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        log = tmp_path / "up.log"
        up, job, _ = _up_waiting(ws, emu, log)
        locks = [p for p in ws.backend_files() if "/locks/" in str(p)]
        ended = _seconds_to_end(up, lambda: ws.pulumi("cancel", "--yes"))
        assert locks, ws.backend_files()
        out = log.read_text(errors="replace")
        assert ended < 30, f"pulumi up took {ended:.1f}s to end after pulumi cancel:\n{out}"
        assert "the stack's lock was removed" in out and "left running" in out, out
        assert client.get_custom_job(name=job.name).state == JobState.JOB_STATE_RUNNING


def test_a_job_taken_over_whose_labels_leave_no_room_fails_the_preview(ws: Workspace) -> None:
    """A replacement of it could not be submitted: the preview says so before anything is
    cancelled (before, an edit with exclusiveGpus cancelled it, then got a 400)."""
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        labels = {**HANG_LABELS, **{f"team{i}": "ml" for i in range(63)}}  # 64: Vertex's most
        source = ws.project / ws.write_job("full", python_job("full", labels=labels))
        name = _start_elsewhere(ws, client, source, tuning=False)
        entry = _import(ws, emu, name, "--out", "stacks/jobs/imported.yaml")
        ws.init_stack(local_config(emu.endpoint, [{**entry, "exclusiveGpus": True}]))

        out = ws.pulumi("preview", expect_failure=True).output

        assert "has 64 labels" in out and "taken over with existingJob" in out
        ws.pulumi("up", "--yes", "--skip-preview", expect_failure=True)
        assert [(j.name, j.state) for j in list_jobs(client)] == [
            (name, JobState.JOB_STATE_RUNNING)
        ]
