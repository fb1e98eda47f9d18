"""``python -m emulator`` subcommands: serve flags, --daemon/stop, jobs, logs."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from google.api_core import exceptions as gexc

from emulator.client import job_service_client
from emulator.testing import EmulatorProcess, running_emulator, wait_for_state

from .conftest import (
    PARENT,
    REPO,
    SIMULATE_ARGS,
    TERMINAL,
    S,
    job_id,
    make_job,
    trainer_pool,
    unique,
)


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "emulator", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_jobs_and_logs(execute: EmulatorProcess) -> None:
    client = execute.client()
    created = client.create_custom_job(parent=PARENT, custom_job=make_job("cli-job"))
    wait_for_state(client, created.name, TERMINAL, timeout=60)
    state = str(execute.state_dir)

    table = cli("jobs", "--state-dir", state)
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split()[:3] == ["ID", "STATE", "DISPLAY"]
    (row,) = [r for r in rows if r.startswith(job_id(created))]
    assert row.split()[1:3] == ["SUCCEEDED", "cli-job"]

    one = cli("logs", job_id(created), "--replica", "workerpool0-0", "--state-dir", state)
    assert one.returncode == 0, one.stderr
    assert "role chief-0" in one.stdout and "wrote model" in one.stdout
    every = cli("logs", created.name, "--state-dir", state)
    assert every.returncode == 0
    assert every.stdout.startswith("==> workerpool0-0 (")

    missing = cli("logs", "123", "--state-dir", state)
    assert missing.returncode == 1
    assert "no logs for job 123" in missing.stderr


def test_jobs_without_state(tmp_path: Path) -> None:
    result = cli("jobs", "--state-dir", str(tmp_path))
    assert result.returncode == 1
    assert f"no emulator state in {tmp_path}" in result.stderr


def test_daemon_start_and_stop(tmp_path: Path) -> None:
    state = tmp_path / "state"
    started = cli("serve", "--daemon", "--port", "0", "--state-dir", str(state), *SIMULATE_ARGS)
    pid = None
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        info = json.loads((state / "server.json").read_text())
        pid = int(info["pid"])
        assert info["endpoint"] in started.stdout
        assert int((state / "emulator.pid").read_text()) == pid
        client = job_service_client(str(info["endpoint"]))
        job = client.create_custom_job(parent=PARENT, custom_job=make_job("daemon"))
        assert wait_for_state(client, job.name, TERMINAL, timeout=20).state == S.JOB_STATE_SUCCEEDED

        stopped = cli("stop", "--state-dir", str(state))
        assert stopped.returncode == 0, stopped.stderr
        assert f"emulator pid {pid} stopped" in stopped.stdout
        assert not (state / "server.json").exists()
        assert "emulator listening on" in (state / "server.log").read_text()
    finally:
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)


def test_stop_without_server(tmp_path: Path) -> None:
    result = cli("stop", "--state-dir", str(tmp_path))
    assert result.returncode == 1
    assert "no running emulator found" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mode", "bogus"], "--mode: invalid choice"),
        (["--fault-unavailable-rate", "2"], "expected a fraction between 0 and 1"),
        (["--fault-drop-create", "-1"], "must not be negative"),
        (["--allow-root", "/does/not/exist"], "--allow-root: /does/not/exist is not a directory"),
        (["--max-running-jobs", "0"], "--max-running-jobs: must be at least 1"),
        (["--gpus", "0,2,0"], "argument --gpus: device 0 is listed twice"),
        (["--gpus", "all"], "argument --gpus: expected auto, ignore, or GPU device ids"),
    ],
)
def test_serve_rejects_bad_flags(tmp_path: Path, args: list[str], message: str) -> None:
    result = cli("serve", "--port", "0", "--state-dir", str(tmp_path), *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with running_emulator(*SIMULATE_ARGS) as emu:
        result = cli("serve", "--port", str(emu.port), "--state-dir", str(tmp_path))
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{emu.port}" in result.stderr


def test_fault_flags_apply_from_startup_and_flip_at_runtime() -> None:
    with running_emulator(*SIMULATE_ARGS, "--fault-unavailable-rate", "1") as emu:
        client = emu.client()
        with pytest.raises(gexc.ServiceUnavailable):
            client.create_custom_job(parent=PARENT, custom_job=make_job("nope"))
        assert emu.set_faults(unavailable_rate=0)["unavailable_rate"] == 0
        started = time.monotonic()
        job = client.create_custom_job(parent=PARENT, custom_job=make_job("yes"))
        assert job.state == S.JOB_STATE_QUEUED
        assert time.monotonic() - started < 5


def test_jobs_table_escapes_control_characters() -> None:
    from emulator.cli import _terminal_safe

    assert _terminal_safe("red\x1b[31m\nname") == "red\\x1b[31m\\nname"
    assert _terminal_safe("plain ünïcode") == "plain ünïcode"


def test_maintenance_drill(execute: EmulatorProcess, tmp_path: Path) -> None:
    client = execute.client()
    out = f"gs://bucket/{unique()}"
    # 20 s of training: the drill (two CLI processes) must come before the job ends, on a loaded
    # two-core machine too (with 0.1 s steps it had 3 s left, and sometimes missed them).
    args = ["--epochs", "4", "--steps-per-epoch", "10", "--step-sleep", "0.5"]
    created = client.create_custom_job(
        parent=PARENT,
        custom_job=make_job("drill", output=out, pools=[trainer_pool(args=args)]),
    )
    state = str(execute.state_dir)
    ckpts = execute.state_dir / "gcs" / out.removeprefix("gs://") / "checkpoints"
    deadline = time.monotonic() + 180
    while not list(ckpts.glob("ckpt-*.npz")):
        assert time.monotonic() < deadline, "no checkpoint was written"
        time.sleep(0.05)
    before = execute.replicas(job_id(created))[0]

    unknown = cli(
        "maintenance", job_id(created), "--replica", "workerpool9-0", "--state-dir", state
    )
    assert unknown.returncode == 1
    assert "unknown replica 'workerpool9-0' (known: workerpool0-0)" in unknown.stderr

    drill = cli("maintenance", created.name, "--state-dir", state)  # the full resource name
    assert drill.returncode == 0, drill.stderr
    assert f"job {job_id(created)}: host maintenance event on workerpool0-0" in drill.stdout
    assert f"stopped its process {before['pid']} (exit status -15)" in drill.stdout
    assert "restarted workerpool0-0: pid " in drill.stdout and "restarts 1" in drill.stdout
    assert "whole job" not in drill.stdout
    after = execute.replicas(job_id(created))[0]
    assert after["restarts"] == 1 and after["pid"] != before["pid"]

    done = wait_for_state(client, created.name, TERMINAL, timeout=180)
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message
    log = cli("logs", job_id(created), "--state-dir", state).stdout
    assert "host maintenance event" in log and "resumed from checkpoint at step" in log

    over = cli("maintenance", job_id(created), "--endpoint", execute.endpoint)
    assert over.returncode == 1
    assert f"Job {job_id(created)} has no running replicas." in over.stderr
    ghost = cli("maintenance", "12345", "--state-dir", state)
    assert ghost.returncode == 1
    assert "No job with id 12345." in ghost.stderr
    nobody = cli("maintenance", job_id(created), "--state-dir", str(tmp_path))
    assert nobody.returncode == 1
    assert f"no running emulator found for {tmp_path}" in nobody.stderr
    for result in (unknown, over, ghost, nobody):
        assert "Traceback" not in result.stderr
