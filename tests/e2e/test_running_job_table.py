"""docs/rules.md's running-job table ("What happens to a running job", "After a killed
``pulumi up``") through both front doors, on the real engine against the emulator.

Every test runs once per door (the ``door`` fixture, ``tests/e2e/_doors.py``): the dynamic
resources (``training:jobs`` of the project's Python program) and the provider plugin (a YAML
program of ``gpu-training:vertex:*``). Each counts the jobs the emulator holds. The rows only
one door has (``existingJob`` for the dynamic resources, ``pulumi import`` for the plugin) are
in ``test_running_jobs.py`` and ``test_plugin_lifecycle.py``, or here, for the dynamic door
only (a destroy after a killed first ``up``: no command calls the plugin then); placement's row in
``test_placement.py`` and ``test_plugin_knobs.py``.

No test's name holds "pulumi": its tmp dir (where the emulator's state is) would, and
``Workspace.kill_strays`` ends the processes whose command line names it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from google.api_core import exceptions as gexc
from google.cloud.aiplatform_v1 import JobState

from tests.e2e._doors import DOORS, Door, open_door
from tests.e2e._engine import (
    HANG_LABELS,
    PARENT,
    SIMULATE,
    SLOW_START,
    assert_refresh_names_the_job_left,
    emulator_for,
    fails_while_unreachable,
    kill_group,
    kill_replace_once_submitted,
    list_jobs,
    stack_resource,
    wait_until,
)
from tests.e2e._plugin import job_states

RUNNING = "JOB_STATE_RUNNING"
CANCELLED = "JOB_STATE_CANCELLED"
CANCELLING = "JOB_STATE_CANCELLING"

T = TypeVar("T")


@pytest.fixture(params=DOORS)
def door(request: pytest.FixtureRequest, pulumi_bin_dir: Path, tmp_path: Path) -> Iterator[Door]:
    """A fresh workspace behind one front door; fails the test if a process outlives it."""
    opened = open_door(request.param, pulumi_bin_dir, tmp_path)
    yield opened
    opened.end()


def _states(door: Door, client: Any) -> dict[str, str]:
    """Each job of the kind ``door`` declared that the emulator holds, by name: its state."""
    if door.tuning:
        listed = client.list_hyperparameter_tuning_jobs(parent=PARENT)
        return {j.name: j.state.name for j in listed}
    return job_states(client)


def _running_job(door: Door, emu: Any, **settings: Any) -> str:
    """``up`` of one job (``write``'s default unless already written) waited for until
    RUNNING: its name."""
    if not door.jobs:
        door.write(waitFor="running")
    door.init(emu.endpoint, **settings)
    door.ws.up()
    name = door.held()
    assert _states(door, emu.client()) == {name: RUNNING}
    return name


# -- replace ------------------------------------------------------------------------------------


def test_replaces_forced_and_after_a_spec_change_then_a_refresh_of_a_deleted_job(
    door: Door,
) -> None:
    # Each replace starts a new job and cancels the old one (create before delete: the
    # default), its record kept. A forced one (`--replace`, `--target-replace`, a resource
    # tainted with `pulumi state taint`): the engine
    # calls neither diff nor check with the old resource, so to the create the running job is
    # this resource's active job with the same inputs; the stack holds it, so it is not
    # adopted. Then a refresh of the job deleted out of band removes the resource.
    with emulator_for(door.ws, *SIMULATE) as emu:
        client = emu.client()
        jobs = [_running_job(door, emu)]
        for flag in ("--replace", "--target-replace", "taint"):
            if flag == "taint":  # `pulumi state taint`: the next up replaces it, no flag
                door.ws.pulumi("state", "taint", door.urn(), "--yes")
                out = door.ws.pulumi("up", "--yes", "--skip-preview").output
            else:
                out = door.ws.pulumi("up", "--yes", "--skip-preview", flag, door.urn()).output
            assert "replaced" in out, out
            jobs.append(door.held())
            assert door.adopted() is False
            # The next refresh keeps the new job: nothing pointed at a job that is gone.
            door.ws.pulumi("refresh", "--yes", "--skip-preview")
            assert door.held() == jobs[-1]

        door.write(waitFor="running", machine_type="n1-standard-8")
        [step] = [s for s in door.ws.preview_json()["steps"] if s["urn"] == door.urn()]
        assert step["op"] == "replace"
        assert step["replaceReasons"] == list(door.spec_replace_reasons)
        diff = door.ws.pulumi("preview", "--diff").output
        assert '~ machineType: "n1-standard-4" => "n1-standard-8"' in diff, diff
        out = door.ws.up().output
        assert "replaced" in out, out
        jobs.append(door.held())
        assert door.adopted() is False
        assert len(set(jobs)) == 5, jobs
        assert job_states(client) == {job: CANCELLED for job in jobs[:-1]} | {jobs[-1]: RUNNING}

        client.cancel_custom_job(name=jobs[-1])
        wait_until(
            lambda: client.get_custom_job(name=jobs[-1]).state == JobState.JOB_STATE_CANCELLED,
            timeout=60,
            what="the job to be cancelled",
        )
        client.delete_custom_job(name=jobs[-1]).result(timeout=60)
        door.ws.pulumi("refresh", "--yes", "--skip-preview")
        assert door.resources() == {}
        assert set(job_states(client)) == set(jobs[:-1])


def test_a_forced_replace_of_a_tuning_job_starts_a_new_one(door: Door) -> None:
    # The other kind: the held tuning job is told apart by the identity of its type, and
    # cancelled once its replacement runs.
    with emulator_for(door.ws, *SIMULATE) as emu:
        door.write(tuning=True, waitFor="running")
        old = _running_job(door, emu)

        door.ws.up("--replace", door.urn())

        new = door.held()
        assert new != old and door.adopted() is False
        assert _states(door, emu.client()) == {new: RUNNING, old: CANCELLED}


def test_a_refused_replace_fails_first_and_exclusive_gpus_or_continue_last_run_stop_first(
    door: Door,
) -> None:
    # A replace whose new job would be refused (labels over the limit, or one the provider
    # sets): nothing is cancelled or submitted, the preview (and up) fail first, the job runs
    # on (with exclusiveGpus, whose replace cancels the old job before submitting the new).
    # Then a forced replace with exclusiveGpus: no diff, so no deleteBeforeReplace from it;
    # the create cancels the held job, and waits for it to stop, before it submits the new one.
    # Then a replace after a spec change with continueLastRun: the old job is stopped first.
    with emulator_for(door.ws, *SIMULATE) as emu:
        client = emu.client()
        door.write(waitFor="running", exclusiveGpus=True)
        old = _running_job(door, emu)
        refused = [
            ({f"team{i}": "ml" for i in range(63)}, "at most 62 of your own"),
            ({"pulumi_run": "mine"}, "labels.pulumi_run: is a label the provider sets"),
        ]
        for labels, expected in refused:
            door.write(waitFor="running", exclusiveGpus=True, labels={**HANG_LABELS, **labels})
            out = door.ws.pulumi("preview", expect_failure=True).output
            assert expected in out, out
            assert "Traceback" not in out and 'File "' not in out, out
            door.ws.pulumi("up", "--yes", "--skip-preview", expect_failure=True)
            assert door.held() == old
            assert job_states(client) == {old: RUNNING}

        door.write(waitFor="running", exclusiveGpus=True)
        door.ws.up("--replace", door.urn())

        new = client.get_custom_job(name=door.held())
        stopped = client.get_custom_job(name=old)
        assert stopped.state == JobState.JOB_STATE_CANCELLED
        assert new.state == JobState.JOB_STATE_RUNNING
        assert new.create_time >= stopped.end_time, "the new job started before the old one ended"

        # A spec change with continueLastRun: the same order (the new run continues the old).
        door.write(waitFor="running", continueLastRun=True, machine_type="n1-standard-8")
        assert "replaced" in door.ws.up().output
        newest = client.get_custom_job(name=door.held())
        continued = client.get_custom_job(name=new.name)
        assert continued.state == JobState.JOB_STATE_CANCELLED
        assert newest.state == JobState.JOB_STATE_RUNNING
        assert newest.create_time >= continued.end_time, "it started before the old one ended"


def test_two_stacks_of_the_same_names_on_two_backends_never_share_a_job(
    door: Door, pulumi_bin_dir: Path, tmp_path: Path
) -> None:
    # Two teams, each on its own backend, the same project, stack and resource names and one
    # Google project: each stack instance's jobs carry its own identity, so the second `up`
    # starts its own job and names no other, and its destroy leaves the first's running.
    team_b = open_door(door.name, pulumi_bin_dir, tmp_path / "team-b")
    try:
        with emulator_for(door.ws, *SIMULATE, "--allow-root", str(team_b.ws.project)) as emu:
            first = _running_job(door, emu)
            team_b.write(waitFor="running")
            team_b.init(emu.endpoint)
            out = team_b.ws.up().output
            second = team_b.held()
            assert second != first and first not in out, out
            team_b.ws.pulumi("destroy", "--yes", "--skip-preview")
            assert job_states(emu.client()) == {first: RUNNING, second: CANCELLED}
    finally:
        team_b.end()


# -- during the wait ------------------------------------------------------------------------------


def test_waits_that_end_badly_leave_no_resource(door: Door) -> None:
    # `failed`: the job ends badly during the wait: nothing to cancel, its record kept for its
    # logs. `expired`: its waitTimeout expires, the one wait that cancels its job.
    with emulator_for(door.ws, *SIMULATE, "--simulate-run-seconds", "0.5") as emu:
        door.write("failed", labels={"emulator-outcome": "fail"}, waitFor="succeeded")
        door.add("expired", waitFor="succeeded", waitTimeout="3s")
        door.init(emu.endpoint)

        out = door.ws.pulumi("up", "--yes", "--skip-preview", expect_failure=True).output

        states = job_states(emu.client())
        assert sorted(states.values()) == ["JOB_STATE_CANCELLED", "JOB_STATE_FAILED"], states
        for name, state in states.items():
            said = "nothing to cancel" if state == "JOB_STATE_FAILED" else "was cancelled (now"
            assert re.search(rf"{re.escape(name)}\b[^\n]*{re.escape(said)}", out), (name, out)
        assert door.resources() == {}


def _spawn_until(
    door: Door, command: str, log: Path, reached: Callable[[], T | None], what: str
) -> tuple[subprocess.Popen[bytes], T]:
    """``pulumi <command> --yes`` in the background, once ``reached`` answers something
    (``what`` says what), well inside the wait that follows: (the CLI process, that answer)."""
    started = door.ws.spawn(command, "--yes", "--skip-preview", log=log)
    try:
        value = wait_until(reached, timeout=120, what=what)
        time.sleep(1.0)  # well inside the wait
        assert started.poll() is None, f"pulumi {command} ended before its wait"
    except BaseException:
        kill_group(started)
        raise
    return started, value


def _running_names(client: Any) -> list[str]:
    return [j.name for j in list_jobs(client) if j.state == JobState.JOB_STATE_RUNNING]


def _spawn_waiting_up(door: Door, emu: Any, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``pulumi up`` of one job that never ends, ``waitFor: succeeded``, once its job runs:
    (the CLI process, the job's name)."""
    client = emu.client()
    up, [job] = _spawn_until(door, "up", log, lambda: _running_names(client), "a RUNNING job")
    return up, job


def _next_up_adopts(door: Door, emu: Any, job: str) -> None:
    """``up`` with the same job (only a knob changed: the same run): it adopts ``job``."""
    door.write(waitFor="running")
    door.ws.up()
    assert door.held() == job and door.adopted() is True
    assert job_states(emu.client()) == {job: RUNNING}, "a second job was started"


def _interrupted(
    door: Door,
    command: subprocess.Popen[bytes],
    log: Path,
    interrupt: Callable[[subprocess.Popen[bytes]], object],
    what: str,
    within: float = 60,
) -> str:
    """``interrupt`` the running pulumi ``command`` (``what`` says how), check that it ends
    within ``within`` seconds, and the provider with it; its output (written to ``log``)."""
    try:
        sent = time.monotonic()
        interrupt(command)
        command.wait(timeout=120)
        ended = time.monotonic() - sent
    finally:
        kill_group(command)
    out = log.read_text(errors="replace")
    assert ended < within, f"pulumi took {ended:.1f}s to end after {what}:\n{out}"
    door.wait_for_providers_to_end()
    return out


def _spawn_adopting_up(door: Door, log: Path) -> subprocess.Popen[bytes]:
    """``pulumi up`` of the job again, once its create has adopted the job and waits for it."""
    up, _ = _spawn_until(
        door, "up", log, lambda: "train creating" in log.read_text(errors="replace"), "the create"
    )
    time.sleep(2.0)  # the create's one lookup (the job is found by its labels), then the wait
    return up


def test_a_wait_interrupted_or_cut_off_leaves_the_job_for_the_next_up(
    door: Door, tmp_path: Path
) -> None:
    # Three `up`s wait for the same job (the second and third adopt it: the same run), and
    # each ends within seconds, the job left running, nothing cancelled: `pulumi cancel` from
    # another shell (a file:// backend: it only removes the stack's lock, which the waits
    # notice); Ctrl-C once (the engine's Cancel to the provider); the API unreachable for
    # longer than the retry deadline. Then an `up` that does not wait adopts the job.
    with emulator_for(door.ws, *SIMULATE) as emu:
        door.write(waitFor="succeeded", waitTimeout="30m")
        door.init(emu.endpoint, retryDeadline="2")

        log = tmp_path / "cancel.log"
        up, job = _spawn_waiting_up(door, emu, log)
        locks = [p for p in door.ws.backend_files() if "/locks/" in str(p)]
        assert locks, door.ws.backend_files()
        out = _interrupted(
            door, up, log, lambda _: door.ws.pulumi("cancel", "--yes"), "pulumi cancel"
        )
        assert up.returncode != 0, out
        assert "the stack's lock was removed" in out and "left running" in out, out
        assert job_states(emu.client()) == {job: RUNNING}
        assert door.resources() == {}

        log = tmp_path / "ctrl-c.log"
        up = _spawn_adopting_up(door, log)
        out = _interrupted(door, up, log, lambda p: p.send_signal(signal.SIGINT), "SIGINT")
        assert up.returncode != 0, out
        assert f"job {job}: stopped waiting for it: pulumi was cancelled" in out, out
        assert "left running" in out, out
        assert job_states(emu.client()) == {job: RUNNING}

        log = tmp_path / "outage.log"
        up = _spawn_adopting_up(door, log)
        try:
            emu.set_faults(unavailable_rate=1.0)
            up.wait(timeout=120)  # the provider gives up after the 2 s retry deadline
        finally:
            emu.clear_faults()
            kill_group(up)
        door.wait_for_providers_to_end()
        out = log.read_text(errors="replace")
        assert up.returncode != 0, out
        assert "could not be reached" in out and "left running" in out, out
        assert "the next `pulumi up` with the same job adopts it" in out, out
        assert job_states(emu.client()) == {job: RUNNING}
        assert door.resources() == {}

        _next_up_adopts(door, emu, job)


def _settled(client: Any, least: int, seconds: float = 2.0) -> Callable[[], list[str] | None]:
    """A ``wait_until`` condition: at least ``least`` jobs RUNNING, and none submitted for
    ``seconds`` (every create under way is then in its wait, or queued behind the waits)."""
    seen: dict[str, Any] = {"names": None, "since": 0.0}

    def check() -> list[str] | None:
        names = sorted(j.name for j in list_jobs(client))
        if names != seen["names"]:
            seen.update(names=names, since=time.monotonic())
            return None
        running = _running_names(client)
        if len(running) >= least and time.monotonic() - seen["since"] >= seconds:
            return names
        return None

    return check


def test_ctrl_c_reaches_every_wait_when_the_workers_are_busy(door: Door, tmp_path: Path) -> None:
    # More waits than connections or workers: the engine's Cancel still stops them all at
    # once, nothing is submitted after it, and no job is cancelled (they are left for the
    # next up).
    with emulator_for(door.ws, *SIMULATE) as emu:
        client = emu.client()
        names = [f"train{i}" for i in range(8)]
        door.write(*names, waitFor="succeeded", waitTimeout="30m")
        door.init(emu.endpoint, maxConcurrentOperations=4)
        log = tmp_path / "up.log"
        up, before = _spawn_until(
            door, "up", log, _settled(client, least=4), "4 RUNNING jobs, no more submitted"
        )
        out = _interrupted(door, up, log, lambda p: p.send_signal(signal.SIGINT), "SIGINT", 30)
        jobs = list_jobs(client)
        assert sorted(j.name for j in jobs) == before, (
            f"a job was submitted after the cancel:\n{out}"
        )
        assert {j.state for j in jobs} == {JobState.JOB_STATE_RUNNING}, "a job was cancelled"
        # Each job's message (the engine shows an error several times: as the operation's
        # progress, its failure and in the summary).
        stopped = set(re.findall(r"job (\S+): stopped waiting for it: pulumi was cancelled", out))
        assert stopped == set(before), out
        assert "waitTimeout" not in out


# -- after a killed up --------------------------------------------------------------------------


def _killed_replace(door: Door, emu: Any, log: Path, old: str) -> str:
    """``up --replace`` of the RUNNING job ``old`` SIGKILLed once the new job was submitted,
    the provider ended, the refresh naming the job left outside the stack: the new job."""
    new = kill_replace_once_submitted(door.ws, emu.client(), old, door.urn(), log)
    door.wait_for_providers_to_end()
    # The refresh names the job the killed run left, and the command that takes it over.
    assert_refresh_names_the_job_left(door.ws, new)
    assert door.held() == old
    return new


def _kill_up_once_submitted(door: Door, client: Any, log: Path) -> str:
    """``pulumi up`` SIGKILLed (the CLI's whole group) once a job was submitted, while its
    create waits; the provider ended by itself: the job."""
    up = door.ws.spawn("up", "--yes", "--skip-preview", log=log)
    try:
        [submitted] = wait_until(lambda: list_jobs(client), timeout=120, what="a submitted job")
        assert up.poll() is None, "pulumi up ended before it could be killed"
    finally:
        kill_group(up)
    assert up.returncode == -9
    door.wait_for_providers_to_end()
    return str(submitted.name)


def _killed_first_up(door: Door, emu: Any, log: Path) -> str:
    """The stack's first ``up`` of one job (``waitFor: running``) killed once its job was
    submitted, the lock removed: the job, which no resource of the stack holds."""
    door.write(waitFor="running")
    door.init(emu.endpoint)
    job = _kill_up_once_submitted(door, emu.client(), log)
    door.ws.pulumi("cancel", "--yes")
    assert door.resources() == {}
    return job


def test_killed_ups_leave_one_job_after_the_documented_recovery(door: Door, tmp_path: Path) -> None:
    # docs/rules.md, "After a killed `pulumi up`": the engine killed (kill -9, the CLI's whole
    # group) once the job was submitted, while its create waits; the provider ends by itself;
    # the three commands end with the one job, adopted, never a second. Then `up --replace`
    # killed the same way: both jobs run, the state holds the old one; the killed command
    # again adopts the new job (not the held one, not a third) and cancels the old. Then once
    # more, and a destroy instead: it cancels the job the state holds and the one left outside.
    with emulator_for(door.ws, *SLOW_START) as emu:
        client = emu.client()
        door.write(waitFor="running")
        door.init(emu.endpoint)
        log = tmp_path / "killed-up.log"
        submitted = _kill_up_once_submitted(door, client, log)
        killed = log.read_text(errors="replace")
        assert "train creating" in killed and "train created" not in killed, killed

        # 1. The killed run's lock blocks the next command, which names the way out.
        locked = door.ws.pulumi("up", "--yes", "--skip-preview", expect_failure=True).output
        assert "the stack is currently locked" in locked and "pulumi cancel" in locked
        door.ws.pulumi("cancel", "--yes")
        # 2. The state knows a create was under way, and has no resource for it.
        pending = door.ws.export().get("pending_operations") or []
        assert [(p["type"], p["resource"]["urn"]) for p in pending] == [("creating", door.urn())]
        assert door.resources() == {}
        out = door.ws.pulumi("refresh", "--yes", "--skip-preview", "--clear-pending-creates").output
        assert "Traceback" not in out
        assert not door.ws.export().get("pending_operations")
        # 3. up adopts the job the killed run submitted.
        door.ws.up()
        first = submitted
        assert [j.name for j in list_jobs(client)] == [first], "a second job was started"
        assert door.held() == first and door.adopted() is True
        assert door.status(door.resources()["train"])["state"] == RUNNING
        assert not door.ws.export().get("pending_operations")

        second = _killed_replace(door, emu, tmp_path / "killed-replace.log", first)
        door.ws.up("--replace", door.urn())
        assert door.held() == second and door.adopted() is True
        assert job_states(client) == {second: RUNNING, first: CANCELLED}
        assert not door.ws.export().get("pending_operations")

        third = _killed_replace(door, emu, tmp_path / "killed-again.log", second)
        out = door.ws.pulumi("destroy", "--yes", "--skip-preview").output
        assert f"job {third} (JOB_STATE_" in out and "is cancelled too" in out, out
        assert job_states(client) == {first: CANCELLED, second: CANCELLED, third: CANCELLED}


def test_a_destroy_after_a_killed_exclusive_gpus_replace_cancels_the_job_it_left(
    door: Door, tmp_path: Path
) -> None:
    # With exclusiveGpus the killed create had cancelled the held job before it submitted the
    # new one: the refresh names the new one all the same, and the destroy cancels it.
    with emulator_for(door.ws, *SLOW_START) as emu:
        door.write(waitFor="running", exclusiveGpus=True)
        old = _running_job(door, emu)
        new = _killed_replace(door, emu, tmp_path / "killed-replace.log", old)

        out = door.ws.pulumi("destroy", "--yes", "--skip-preview").output

        assert f"job {new} (JOB_STATE_" in out and "is cancelled too" in out, out
        assert job_states(emu.client()) == {new: CANCELLED, old: CANCELLED}


@pytest.mark.parametrize("door", ["dynamic"], indirect=True)
@pytest.mark.parametrize("adopted_first", [False, True], ids=["destroy", "up-then-destroy"])
def test_a_destroy_after_a_killed_first_up_cancels_the_job_it_left(
    door: Door, tmp_path: Path, adopted_first: bool
) -> None:
    # The killed create never reached the state: only the run key is there, and the engine's
    # record of the pending create. A refresh names the job (and ends nothing); the destroy
    # cancels it, waits for it, and leaves nothing running. Or `up` adopts it (the record not
    # cleared): the destroy cancels it through its resource, and the run key finds nothing
    # more. Not through the plugin, which no command calls once the state holds none of its
    # resources (docs/rules.md).
    with emulator_for(door.ws, *SLOW_START) as emu:
        client = emu.client()
        job = _killed_first_up(door, emu, tmp_path / "killed-up.log")
        if adopted_first:
            door.ws.up()
            assert door.held() == job and door.adopted() is True
        else:
            refreshed = door.ws.pulumi("refresh", "--yes", "--skip-preview").output
            assert f"job {job} (JOB_STATE_" in refreshed, refreshed
            assert "killed before the stack recorded it" in refreshed, refreshed
            assert "`pulumi up` takes it over" in refreshed and "Traceback" not in refreshed
            assert job_states(client)[job] != CANCELLED

        out = door.ws.pulumi("destroy", "--yes", "--skip-preview").output
        assert ("killed before the stack recorded it" in out) is not adopted_first, out
        assert job_states(client) == {job: CANCELLED}
        assert door.resources() == {}


# -- refresh and destroy --------------------------------------------------------------------------


def test_refresh_and_destroy_with_the_api_unreachable_keep_the_resource(door: Door) -> None:
    # A create gives up submitting after the 2 s retry deadline: no job got through, so no
    # resource and no job. The read and the delete give up the same way: the stack keeps the
    # resource as it was, the job keeps running; once the API answers, each succeeds.
    with emulator_for(door.ws, *SIMULATE) as emu:
        door.write(waitFor="running")
        door.init(emu.endpoint, retryDeadline="2")
        emu.set_faults(unavailable_rate=1.0)
        try:
            out = door.ws.pulumi("up", "--yes", "--skip-preview", expect_failure=True).output
        finally:
            emu.clear_faults()
        assert "could not submit the training job to " in out, out
        assert "Traceback" not in out and 'File "' not in out, out
        assert door.resources() == {} and _states(door, emu.client()) == {}
        door.ws.up()
        job = door.held()
        assert _states(door, emu.client()) == {job: RUNNING}

        out = fails_while_unreachable(door.ws, emu, "refresh", door.job_type, "train")
        assert f"could not refresh job {job}: " in out, out
        assert "; the stack keeps what it last knew" in out, out
        assert job_states(emu.client()) == {job: RUNNING}
        door.ws.pulumi("refresh", "--yes", "--skip-preview")
        assert door.held() == job

        out = fails_while_unreachable(door.ws, emu, "destroy", door.job_type, "train")
        assert f"job {job} was not deleted: " in out and "; it stays in the stack" in out, out
        assert job_states(emu.client()) == {job: RUNNING}, "the cancel got through"
        # `pulumi destroy`: cancelled, waited for; its record kept.
        out = door.ws.pulumi("destroy", "--yes", "--skip-preview").output
        assert f"{door.job_type} train deleted" in out, out
        assert door.resources() == {}
        assert job_states(emu.client()) == {job: CANCELLED}


def test_an_interrupted_destroy_keeps_the_resource_for_the_next_destroy(
    door: Door, tmp_path: Path
) -> None:
    # The cancel never ends by itself (600 s), so the interrupt cannot lose a race with it:
    # SIGINT to destroy's process group (Ctrl-C) while the provider waits for the cancelled job.
    # The next destroy deletes the job's record too (`deleteRecords`), which the emulator, like
    # Vertex AI, allows only once the job has stopped.
    with emulator_for(door.ws, *SIMULATE, "--simulate-cancel-seconds", "600") as emu:
        client = emu.client()
        job = _running_job(door, emu, deleteRecords=True)
        held = stack_resource(door.ws, door.job_type, "train")
        log = tmp_path / "destroy.log"
        destroy, _ = _spawn_until(
            door, "destroy", log, lambda: job_states(client)[job] == CANCELLING, "the cancel"
        )
        out = _interrupted(
            door, destroy, log, lambda p: os.killpg(p.pid, signal.SIGINT), "SIGINT to its group"
        )
        assert destroy.returncode != 0, out
        assert f"job {job} was not deleted: pulumi was cancelled; it stays in the stack" in out, out
        assert "Traceback" not in out and 'File "' not in out, out
        assert stack_resource(door.ws, door.job_type, "train") == held
        assert job_states(client) == {job: CANCELLING}
        # A restarted emulator finishes a CANCELLING job at once (its replicas are gone).
        emu.stop()
        emu.restart()
        client = emu.client()  # a connection to the restarted server
        assert job_states(client) == {job: CANCELLED}

        out = door.ws.pulumi("destroy", "--yes", "--skip-preview").output

        assert f"{door.job_type} train deleted" in out, out
        assert door.resources() == {}
        with pytest.raises(gexc.NotFound):
            client.get_custom_job(name=job)
        assert list_jobs(client) == []
