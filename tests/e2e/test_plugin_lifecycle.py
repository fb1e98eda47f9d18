"""docs/provider.md's "What happens to a running job" through the provider plugin.

The rows the dynamic resources prove in ``test_running_jobs.py``, ``test_crash_recovery.py``
and ``test_lifecycle.py``, here for a YAML program of ``gpu-training:vertex:TrainingJob`` on the
real engine against the emulator (simulate mode), counting the jobs the emulator holds: a
forced replace (``--replace``, ``--target-replace``) starts a new job and cancels the old one
(with ``exclusiveGpus``, first); ``up --replace`` killed after the new job was submitted, then
run again, adopts that job; an API outage, Ctrl-C and ``pulumi cancel`` from another shell
during a wait leave the job running for the next ``up`` to adopt; a job that fails during the
wait, or whose ``waitTimeout`` expires (then cancelled), leaves no resource; a refresh of a job
deleted out of band removes the resource; a refresh or ``destroy`` with the API unreachable, and
a ``destroy`` interrupted while it waits for the cancelled job, keep the resource for the next
command. (A diff-driven replace, ``destroy`` and ``up`` killed during a create are in
``test_plugin_yaml.py``.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from google.cloud.aiplatform_v1 import JobState

from tests.e2e._engine import (
    GCP_PROJECT,
    GCP_REGION,
    HANG_LABELS,
    PARENT,
    SIMULATE,
    SLOW_START,
    Workspace,
    assert_refresh_names_the_job_left,
    emulator_for,
    fails_while_unreachable,
    kill_group,
    kill_replace_once_submitted,
    list_jobs,
    stack_resource,
    wait_until,
)
from tests.e2e._plugin import (
    IMAGE,
    SECRET,
    TOKEN,
    end_plugin_workspace,
    job_states,
    plugin_jobs,
    plugin_processes,
    plugin_workspace,
    training_job,
)
from tests.e2e.test_plugin_yaml import _write_program

URN = f"urn:pulumi:e2e::plugin-yaml::{TOKEN}::train"
TUNING_TOKEN = "gpu-training:vertex:HyperparameterTuningJob"

RUNNING = "JOB_STATE_RUNNING"
CANCELLED = "JOB_STATE_CANCELLED"
CANCELLING = "JOB_STATE_CANCELLING"

T = TypeVar("T")


@pytest.fixture
def yaml_ws(pulumi_bin_dir: Path, tmp_path: Path) -> Iterator[Workspace]:
    ws = plugin_workspace(pulumi_bin_dir, tmp_path)
    yield ws
    end_plugin_workspace(ws)


def _program(ws: Workspace, **knobs: Any) -> None:
    """One TrainingJob ``train`` that runs until cancelled, with ``knobs`` (``waitFor``...)."""
    job = training_job(secret={"fn::secret": SECRET})
    job["labels"].update(HANG_LABELS)
    _write_program(ws, {"train": {"type": TOKEN, "properties": {**job, **knobs}}})


def _init(ws: Workspace, endpoint: str, retry_deadline: str = "20") -> None:
    ws.write_config(
        {
            "gpu-training:endpoint": endpoint,
            "gpu-training:project": GCP_PROJECT,
            "gpu-training:region": GCP_REGION,
            "gpu-training:retryDeadline": retry_deadline,
            "gpu-training:cancelTimeout": "60",
        }
    )
    ws.pulumi("stack", "init", ws.stack)


def _running_job(ws: Workspace, emu: Any, retry_deadline: str = "20") -> str:
    """``up`` of the one job, waited for until RUNNING: its name."""
    _program(ws, waitFor="running")
    _init(ws, emu.endpoint, retry_deadline)
    ws.up()
    name = str(plugin_jobs(ws)["train"]["id"])
    assert job_states(emu.client()) == {name: RUNNING}
    return name


@pytest.mark.parametrize("flag", ["--replace", "--target-replace"])
def test_a_forced_replace_starts_a_new_job_and_cancels_the_old(
    yaml_ws: Workspace, flag: str
) -> None:
    # The engine calls neither diff nor check with the old resource: to the plugin's create
    # the running job is this resource's active job with the same inputs. It is the one the
    # stack holds, so it is not adopted: a new job runs, the old one is cancelled.
    ws = yaml_ws
    with emulator_for(ws, *SIMULATE) as emu:
        old = _running_job(ws, emu)

        out = ws.pulumi("up", "--yes", "--skip-preview", flag, URN).output

        assert "replaced" in out
        new = plugin_jobs(ws)["train"]
        assert new["id"] != old
        assert new["outputs"]["adopted"] is False
        assert job_states(emu.client()) == {new["id"]: RUNNING, old: CANCELLED}
        ws.pulumi("refresh", "--yes", "--skip-preview")
        assert plugin_jobs(ws)["train"]["id"] == new["id"]


def test_a_forced_replace_of_a_tuning_job_starts_a_new_one(yaml_ws: Workspace) -> None:
    # The other front door's kind: the held tuning job is told apart by the identity of its
    # type, and cancelled once its replacement runs.
    ws = yaml_ws
    trial = training_job(secret={"fn::secret": SECRET})["jobSpec"]
    trial["workerPoolSpecs"][0]["machineSpec"] = {"machineType": "n1-standard-4"}
    trial["workerPoolSpecs"][0]["containerSpec"]["imageUri"] = IMAGE
    tuning = {
        "labels": dict(HANG_LABELS),
        "studySpec": {
            "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
            "parameters": [{"parameterId": "lr", "discreteValueSpec": {"values": [0.01, 0.1]}}],
            "algorithm": "GRID_SEARCH",
        },
        "maxTrialCount": 2,
        "parallelTrialCount": 1,
        "trialJobSpec": trial,
        "waitFor": "running",
    }
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        _write_program(ws, {"tune": {"type": TUNING_TOKEN, "properties": tuning}})
        _init(ws, emu.endpoint)
        ws.up()

        def tuning_jobs() -> dict[str, str]:
            listed = client.list_hyperparameter_tuning_jobs(parent=PARENT)
            return {j.name: j.state.name for j in listed}

        def held() -> str:
            [resource] = [r for r in ws.export()["resources"] if r["type"] == TUNING_TOKEN]
            return str(resource["id"])

        old = held()
        assert tuning_jobs() == {old: RUNNING}

        ws.up("--replace", f"urn:pulumi:e2e::plugin-yaml::{TUNING_TOKEN}::tune")

        new = held()
        assert new != old
        assert tuning_jobs() == {new: RUNNING, old: CANCELLED}


def test_a_forced_replace_with_exclusive_gpus_cancels_the_old_job_first(
    yaml_ws: Workspace,
) -> None:
    # No diff for a forced replace, so no deleteBeforeReplace from the plugin: the engine
    # creates first. The plugin's create cancels the held job, and waits for it to stop,
    # before it submits the new one.
    ws = yaml_ws
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        _program(ws, waitFor="running", exclusiveGpus=True)
        _init(ws, emu.endpoint)
        ws.up()
        old = str(plugin_jobs(ws)["train"]["id"])

        ws.up("--replace", URN)

        new = client.get_custom_job(name=plugin_jobs(ws)["train"]["id"])
        stopped = client.get_custom_job(name=old)
        assert stopped.state == JobState.JOB_STATE_CANCELLED
        assert new.state == JobState.JOB_STATE_RUNNING
        assert new.create_time >= stopped.end_time, "the new job started before the old one ended"


@pytest.mark.parametrize("exclusive", [False, True])
def test_a_destroy_after_a_killed_forced_replace_cancels_the_job_it_left(
    yaml_ws: Workspace, tmp_path: Path, exclusive: bool
) -> None:
    # `up --replace` SIGKILLed once the new job was submitted, then the refresh and `destroy`:
    # the refresh names the job left outside the stack (with exclusiveGpus too, whose held job
    # the killed create had cancelled) and the destroy cancels it with the held one (issue 42).
    ws = yaml_ws
    with emulator_for(ws, *SLOW_START) as emu:
        client = emu.client()
        _program(ws, waitFor="running", **({"exclusiveGpus": True} if exclusive else {}))
        _init(ws, emu.endpoint)
        ws.up()
        old = str(plugin_jobs(ws)["train"]["id"])

        new = kill_replace_once_submitted(ws, client, old, URN, tmp_path / "k.log")
        wait_until(lambda: not plugin_processes(ws), timeout=10, what="the plugin to end by itself")
        ws.kill_strays()
        assert_refresh_names_the_job_left(ws, new)

        out = ws.pulumi("destroy", "--yes", "--skip-preview").output
        assert f"job {new} (JOB_STATE_" in out and "is cancelled too" in out, out
        assert job_states(client) == {new: CANCELLED, old: CANCELLED}


def test_import_of_a_job_another_resource_holds_is_refused(yaml_ws: Workspace) -> None:
    # One job, one owner: `pulumi import` of the job resource `train` holds fails naming its
    # holder; nothing is imported, and the job keeps running for `train` alone.
    ws = yaml_ws
    with emulator_for(ws, *SIMULATE) as emu:
        held = _running_job(ws, emu)
        out = ws.pulumi(
            "import", TOKEN, "byhand", held, "--yes", "--protect=false", expect_failure=True
        ).output
        assert "is held by another resource" in out, out
        assert "plugin-yaml--e2e--train (pulumi_owner label)" in out, out
        assert "Traceback" not in out
        assert set(plugin_jobs(ws)) == {"train"}
        assert job_states(emu.client()) == {held: RUNNING}


def test_a_killed_forced_replace_run_again_adopts_the_new_job(
    yaml_ws: Workspace, tmp_path: Path
) -> None:
    # `up --replace` SIGKILLed once the new job was submitted: both jobs run, the state holds
    # the old one. The same command again adopts the new job (not the held one, not a third)
    # and cancels the old.
    ws = yaml_ws
    with emulator_for(ws, *SLOW_START) as emu:
        client = emu.client()
        old = _running_job(ws, emu)

        new = kill_replace_once_submitted(ws, client, old, URN, tmp_path / "k.log")
        wait_until(lambda: not plugin_processes(ws), timeout=10, what="the plugin to end by itself")
        ws.kill_strays()
        # The refresh names the job the killed run left, and the command that takes it over.
        assert_refresh_names_the_job_left(ws, new)
        assert plugin_jobs(ws)["train"]["id"] == old

        ws.up("--replace", URN)

        resource = plugin_jobs(ws)["train"]
        assert resource["id"] == new and resource["outputs"]["adopted"] is True
        assert job_states(client) == {new: RUNNING, old: CANCELLED}


def _waiting(ws: Workspace) -> None:
    """The program: the job with ``waitFor: succeeded`` (it never ends)."""
    _program(ws, waitFor="succeeded", waitTimeout="30m")


def _spawn_until(
    ws: Workspace, command: str, log: Path, reached: Callable[[], T | None], what: str
) -> tuple[subprocess.Popen[bytes], T]:
    """``pulumi <command> --yes`` in the background, once ``reached`` answers something
    (``what`` says what): (the CLI process, that answer)."""
    started = ws.spawn(command, "--yes", "--skip-preview", log=log)
    try:
        value = wait_until(reached, timeout=120, what=what)
        # Well inside the wait: the plugin polls the job.
        wait_until(
            lambda: started.poll() is None and plugin_processes(ws), timeout=10, what="the wait"
        )
    except BaseException:
        kill_group(started)
        raise
    return started, value


def _spawn_waiting_up(ws: Workspace, emu: Any, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``pulumi up`` of the program (``_waiting``), once its job runs: (the CLI process, the
    job's name)."""
    up, [job] = _spawn_until(
        ws,
        "up",
        log,
        lambda: [j.name for j in list_jobs(emu.client()) if j.state == JobState.JOB_STATE_RUNNING],
        "a RUNNING job",
    )
    return up, job


def _next_up_adopts(ws: Workspace, emu: Any, job: str) -> None:
    """``up`` with the same job (only the ``waitFor`` knob changed): it adopts ``job``."""
    _program(ws, waitFor="running")
    ws.up()
    resource = plugin_jobs(ws)["train"]
    assert resource["id"] == job and resource["outputs"]["adopted"] is True
    assert job_states(emu.client()) == {job: RUNNING}, "a second job was started"


def test_an_outage_during_the_wait_leaves_the_job_for_the_next_up(
    yaml_ws: Workspace, tmp_path: Path
) -> None:
    ws = yaml_ws
    with emulator_for(ws, *SIMULATE) as emu:
        _waiting(ws)
        _init(ws, emu.endpoint, retry_deadline="2")
        log = tmp_path / "up.log"
        up, job = _spawn_waiting_up(ws, emu, log)
        try:
            emu.set_faults(unavailable_rate=1.0)
            up.wait(timeout=120)  # the plugin gives up after the 2 s retry deadline
        finally:
            emu.clear_faults()
            kill_group(up)
        out = log.read_text(errors="replace")
        assert up.returncode != 0, out
        assert "could not be reached" in out and "left running" in out, out
        assert job_states(emu.client()) == {job: RUNNING}
        assert "train" not in plugin_jobs(ws)

        _next_up_adopts(ws, emu, job)


def _interrupted(
    ws: Workspace,
    command: subprocess.Popen[bytes],
    log: Path,
    interrupt: Callable[[subprocess.Popen[bytes]], object],
    what: str,
) -> str:
    """``interrupt`` the running pulumi ``command`` (``what`` says how) and check that it ends
    within a minute, and the plugin with it; its output (written to ``log``)."""
    try:
        sent = time.monotonic()
        interrupt(command)
        command.wait(timeout=120)
        ended = time.monotonic() - sent
    finally:
        kill_group(command)
    out = log.read_text(errors="replace")
    assert ended < 60, f"pulumi took {ended:.1f}s to end after {what}:\n{out}"
    wait_until(lambda: not plugin_processes(ws), timeout=30, what="the plugin to end")
    ws.kill_strays()
    return out


def _interrupt_the_wait(
    ws: Workspace, log: Path, interrupt: Callable[[subprocess.Popen[bytes]], object], what: str
) -> tuple[int, str]:
    """Start an `up` that waits for its job, ``interrupt`` it (``what`` says how), and check
    that it ends within a minute leaving the job running, the plugin gone, and that the next
    `up` adopts the job. Returns `up`'s exit status and output."""
    with emulator_for(ws, *SIMULATE) as emu:
        _waiting(ws)
        _init(ws, emu.endpoint)
        up, job = _spawn_waiting_up(ws, emu, log)
        out = _interrupted(ws, up, log, interrupt, what)
        assert "left running" in out, out
        assert job_states(emu.client()) == {job: RUNNING}

        _next_up_adopts(ws, emu, job)
    return int(up.returncode), out


def test_ctrl_c_during_the_wait_leaves_the_job_for_the_next_up(
    yaml_ws: Workspace, tmp_path: Path
) -> None:
    # Ctrl-C once: the engine's Cancel to the plugin.
    code, out = _interrupt_the_wait(
        yaml_ws, tmp_path / "up.log", lambda up: up.send_signal(signal.SIGINT), "SIGINT"
    )
    assert code != 0, out
    assert "pulumi was cancelled" in out, out


def test_cancel_from_another_shell_leaves_the_job_for_the_next_up(
    yaml_ws: Workspace, tmp_path: Path
) -> None:
    # A file:// backend: `pulumi cancel` only removes the stack's lock; the plugin's waits
    # notice within seconds and end as after Ctrl-C. (No "pulumi" in the test's name: the
    # emulator's state dir is under it, and kill_strays ends what names "pulumi".)
    ws = yaml_ws
    _, out = _interrupt_the_wait(
        ws, tmp_path / "up.log", lambda _: ws.pulumi("cancel", "--yes"), "pulumi cancel"
    )
    assert "the stack's lock was removed" in out, out


def test_refresh_of_a_job_deleted_out_of_band_removes_the_resource(yaml_ws: Workspace) -> None:
    ws = yaml_ws
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        job = _running_job(ws, emu)
        client.cancel_custom_job(name=job)
        wait_until(
            lambda: client.get_custom_job(name=job).state == JobState.JOB_STATE_CANCELLED,
            timeout=60,
            what="the job to be cancelled",
        )
        client.delete_custom_job(name=job).result(timeout=60)
        assert list_jobs(client) == []

        ws.pulumi("refresh", "--yes", "--skip-preview")

        assert plugin_jobs(ws) == {}
        assert list_jobs(client) == []


def test_refresh_and_destroy_with_the_api_unreachable_keep_the_resource(
    yaml_ws: Workspace,
) -> None:
    # The read and the delete give up after the 2 s retry deadline: the stack keeps the
    # resource as it was, the job keeps running; once the API answers, both succeed.
    ws = yaml_ws
    with emulator_for(ws, *SIMULATE) as emu:
        job = _running_job(ws, emu, retry_deadline="2")

        out = fails_while_unreachable(ws, emu, "refresh", TOKEN, "train")
        assert f"could not refresh job {job}: " in out, out
        assert "; the stack keeps what it last knew" in out, out
        assert job_states(emu.client()) == {job: RUNNING}
        ws.pulumi("refresh", "--yes", "--skip-preview")
        assert plugin_jobs(ws)["train"]["id"] == job

        out = fails_while_unreachable(ws, emu, "destroy", TOKEN, "train")
        assert f"job {job} was not deleted: " in out and "; it stays in the stack" in out, out
        assert job_states(emu.client()) == {job: RUNNING}, "the cancel got through"
        ws.pulumi("destroy", "--yes", "--skip-preview")
        assert plugin_jobs(ws) == {}
        assert job_states(emu.client()) == {job: CANCELLED}


def test_an_interrupted_destroy_keeps_the_resource_for_the_next_destroy(
    yaml_ws: Workspace, tmp_path: Path
) -> None:
    # The cancel never ends by itself (600 s), so the interrupt cannot lose a race with it:
    # SIGINT to destroy's process group (Ctrl-C) while the plugin waits for the cancelled job.
    ws = yaml_ws
    with emulator_for(ws, *SIMULATE, "--simulate-cancel-seconds", "600") as emu:
        client = emu.client()
        job = _running_job(ws, emu)
        held = stack_resource(ws, TOKEN, "train")
        log = tmp_path / "destroy.log"
        destroy, _ = _spawn_until(
            ws, "destroy", log, lambda: job_states(client)[job] == CANCELLING, "the cancel"
        )
        out = _interrupted(
            ws, destroy, log, lambda p: os.killpg(p.pid, signal.SIGINT), "SIGINT to its group"
        )
        assert destroy.returncode != 0, out
        assert f"job {job} was not deleted: pulumi was cancelled; it stays in the stack" in out, out
        assert "Traceback" not in out and 'File "' not in out, out
        assert stack_resource(ws, TOKEN, "train") == held
        assert job_states(client) == {job: CANCELLING}
        # A restarted emulator finishes a CANCELLING job at once (its replicas are gone).
        emu.stop()
        emu.restart()
        client = emu.client()  # a connection to the restarted server
        assert job_states(client) == {job: CANCELLED}

        ws.pulumi("destroy", "--yes", "--skip-preview")

        assert plugin_jobs(ws) == {}
        assert job_states(client) == {job: CANCELLED}


@pytest.mark.parametrize(
    ("outcome", "knobs", "state", "said"),
    [
        # The job ends badly during the wait: nothing to cancel, its record kept for its logs.
        ("fail", {"waitFor": "succeeded"}, "JOB_STATE_FAILED", "nothing to cancel"),
        # waitTimeout expires: the one wait that cancels its job.
        ("hang", {"waitFor": "succeeded", "waitTimeout": "3s"}, CANCELLED, "was cancelled (now"),
    ],
)
def test_a_wait_that_ends_badly_leaves_no_resource(
    yaml_ws: Workspace, outcome: str, knobs: dict[str, str], state: str, said: str
) -> None:
    ws = yaml_ws
    with emulator_for(ws, *SIMULATE, "--simulate-run-seconds", "0.5") as emu:
        job = training_job(secret={"fn::secret": SECRET})
        job["labels"]["emulator-outcome"] = outcome
        _write_program(ws, {"train": {"type": TOKEN, "properties": {**job, **knobs}}})
        _init(ws, emu.endpoint)

        out = ws.pulumi("up", "--yes", "--skip-preview", expect_failure=True).output

        assert said in out, out
        [(name, ended)] = job_states(emu.client()).items()
        assert ended == state and name in out
        assert "train" not in plugin_jobs(ws)


def test_two_stacks_of_the_same_names_on_two_backends_never_share_a_job(
    yaml_ws: Workspace, pulumi_bin_dir: Path, tmp_path: Path
) -> None:
    # Issue 42 item 3: two teams, each on its own backend, the same project, stack and
    # resource names, one Google project, no runKey. The second's `up` starts its own job
    # (before: it adopted the first's) and names no other; its destroy leaves the first's.
    team_a = yaml_ws
    team_b = plugin_workspace(pulumi_bin_dir, tmp_path / "team-b")
    try:
        with emulator_for(team_a, *SIMULATE) as emu:
            first = _running_job(team_a, emu)
            _program(team_b, waitFor="running")
            _init(team_b, emu.endpoint)
            out = team_b.up().output
            second = str(plugin_jobs(team_b)["train"]["id"])
            assert second != first and plugin_jobs(team_b)["train"]["outputs"]["adopted"] is False
            assert first not in out, out  # not "an earlier run of this resource"
            team_b.pulumi("destroy", "--yes", "--skip-preview")
            assert job_states(emu.client()) == {first: RUNNING, second: CANCELLED}
    finally:
        end_plugin_workspace(team_b)


def test_an_identical_up_after_a_destroy_starts_a_new_run(yaml_ws: Workspace) -> None:
    # Issue 42 item 9 through the plugin: the destroy removes the provider, with its stack
    # key; the identical `up` after it is a new stack instance, so the succeeded job whose
    # record the destroy kept is not adopted (as docs/provider.md says for both doors).
    ws = yaml_ws
    with emulator_for(ws, *SIMULATE) as emu:
        job = training_job(secret={"fn::secret": SECRET})
        _write_program(
            ws, {"train": {"type": TOKEN, "properties": {**job, "waitFor": "succeeded"}}}
        )
        _init(ws, emu.endpoint)
        ws.up()
        first = str(plugin_jobs(ws)["train"]["id"])
        ws.pulumi("destroy", "--yes", "--skip-preview")
        ws.up()
        second = plugin_jobs(ws)["train"]
        assert second["id"] != first and second["outputs"]["adopted"] is False
        assert job_states(emu.client()) == {
            first: "JOB_STATE_SUCCEEDED",
            second["id"]: ("JOB_STATE_SUCCEEDED"),
        }
