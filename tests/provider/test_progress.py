"""Progress lines of a wait: when they are written, what they say, what they never show."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from components._redaction import redact
from components.lifecycle._progress import LOG_LINE_CHARS, WaitProgress, local_chief_log
from components.lifecycle._settings import Endpoint
from emulator.testing import EmulatorProcess, running_emulator
from tests.provider.conftest import SECRET, configured, job_inputs

JOB = "projects/p/locations/us-central1/customJobs/123"


@dataclass
class _State:
    name: str


@dataclass
class _Job:
    state_name: str
    name: str = JOB
    display_name: str = "train"
    state: _State = field(init=False)

    def __post_init__(self) -> None:
        self.state = _State(self.state_name)


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _progress(
    clock: _Clock, lines: list[str], *, chief: str | None = None, **kwargs: Any
) -> WaitProgress:
    return WaitProgress(
        "waitFor: running",
        scrub=lambda text: redact(text, [SECRET]),
        chief_log=(lambda _job: chief) if chief is not None else None,
        clock=clock,
        write=lines.append,
        **kwargs,
    )


def test_a_line_per_state_change_and_one_per_interval_otherwise() -> None:
    clock, lines = _Clock(), list[str]()
    progress = _progress(clock, lines, every=20.0)
    progress.observe(_Job("JOB_STATE_QUEUED"))
    clock.now += 3
    progress.observe(_Job("JOB_STATE_QUEUED"))  # same state, 3 s later: nothing
    clock.now += 2
    progress.observe(_Job("JOB_STATE_PENDING"))
    clock.now += 19
    progress.observe(_Job("JOB_STATE_PENDING"))  # 19 s since the last line: nothing
    clock.now += 1
    progress.observe(_Job("JOB_STATE_PENDING"))
    clock.now += 5
    progress.observe(_Job("JOB_STATE_RUNNING"))
    assert lines == [
        "train (job 123): JOB_STATE_QUEUED after 0s (waitFor: running)",
        "train (job 123): JOB_STATE_QUEUED -> JOB_STATE_PENDING after 5s (waitFor: running)",
        "train (job 123): still JOB_STATE_PENDING after 25s (waitFor: running)",
        "train (job 123): JOB_STATE_PENDING -> JOB_STATE_RUNNING after 30s (waitFor: running)",
    ]


def test_a_short_wait_stays_quiet() -> None:
    clock, lines = _Clock(), list[str]()
    progress = _progress(clock, lines, quiet_for=2.0)
    progress.observe(_Job("JOB_STATE_CANCELLING"))
    clock.now += 1.5
    progress.observe(_Job("JOB_STATE_CANCELLED"))
    assert lines == []
    clock.now += 1
    progress.observe(_Job("JOB_STATE_CANCELLED"))
    assert lines == ["train (job 123): JOB_STATE_CANCELLED after 2s (waitFor: running)"]


def test_env_values_and_control_characters_never_reach_a_line() -> None:
    clock, lines = _Clock(), list[str]()
    # The env value sits right where the log line is cut: redacted first, so no part shows.
    chief = "\x1b[31mstep 9 " + "x" * (LOG_LINE_CHARS - 10) + f" token={SECRET}\x07"
    _progress(clock, lines, chief=chief).observe(
        _Job("JOB_STATE_RUNNING", display_name=f"name-{SECRET}")
    )
    [line] = lines
    assert SECRET not in line and SECRET[:6] not in line
    assert "name-<redacted>" in line
    assert "\x1b" not in line and "\x07" not in line
    shown = line.split(" | chief: ", 1)[1]
    assert len(shown) == LOG_LINE_CHARS and shown.endswith("...")


def test_a_line_that_cannot_be_made_or_written_never_fails_the_wait() -> None:
    def broken_log(_job: Any) -> str:
        raise RuntimeError("the emulator answered nonsense")

    def closed_stderr(_line: str) -> None:
        raise OSError("stderr is closed")

    lines: list[str] = []
    WaitProgress("w", scrub=str, chief_log=broken_log, write=lines.append).observe(
        _Job("JOB_STATE_RUNNING")
    )
    WaitProgress("w", scrub=str, write=closed_stderr).observe(_Job("JOB_STATE_RUNNING"))
    assert lines == []


# -- the chief's log through the emulator's admin API ----------------------------------------------


@pytest.fixture
def fake_emulator(tmp_path: Path) -> Iterator[tuple[str, Path, dict[str, Any]]]:
    """An HTTP server answering the two admin routes; ``routes`` says what they return."""
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    routes: dict[str, Any] = {"/emulator/v1/health": {"stateDir": str(state_dir)}}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(routes.get(self.path, {})).encode()
            self.send_response(200 if self.path in routes else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://user:pw@127.0.0.1:{server.server_address[1]}", state_dir, routes
    finally:
        server.shutdown()
        server.server_close()


def _replicas(log: Path) -> dict[str, Any]:
    return {"replicas": [{"replica": "workerpool0-0", "logPath": str(log)}]}


def test_the_chiefs_last_log_line_is_read_where_the_emulator_says(fake_emulator) -> None:
    url, state_dir, routes = fake_emulator
    log = state_dir / "jobs" / "123" / "logs" / "workerpool0-0.log"
    log.parent.mkdir(parents=True)
    log.write_text("starting\n" + "epoch 1\n" * 5000 + "epoch 2 loss 0.1\n\n")
    routes["/emulator/v1/jobs/123/replicas"] = _replicas(log)
    last_line = local_chief_log(Endpoint(url))
    assert last_line is not None
    assert last_line(_Job("JOB_STATE_RUNNING")) == "epoch 2 loss 0.1"
    # A tuning job has no replicas of its own; an unknown job has none yet.
    assert last_line(_Job("JOB_STATE_RUNNING", name=JOB.replace("customJobs", "x"))) == ""
    assert last_line(_Job("JOB_STATE_RUNNING", name=JOB.replace("123", "9"))) == ""


def test_a_gpu_chief_says_what_it_runs_on_before_its_last_log_line(fake_emulator) -> None:
    url, state_dir, routes = fake_emulator
    log = state_dir / "chief.log"
    log.write_text("epoch 2 loss 0.1\n")
    replicas = _replicas(log)
    short = "on the CPU: no GPU on this machine, 4 x NVIDIA_TESLA_T4 asked"
    replicas["replicas"][0]["hardware"] = {"short": short, "note": "..."}
    routes["/emulator/v1/jobs/123/replicas"] = replicas
    last_line = local_chief_log(Endpoint(url))
    assert last_line is not None
    assert last_line(_Job("JOB_STATE_RUNNING")) == f"[{short}] epoch 2 loss 0.1"


def test_a_log_path_outside_the_emulators_state_dir_is_not_read(
    fake_emulator, tmp_path: Path
) -> None:
    url, _state_dir, routes = fake_emulator
    elsewhere = tmp_path / "private.txt"
    elsewhere.write_text("not the emulator's\n")
    routes["/emulator/v1/jobs/123/replicas"] = _replicas(elsewhere)
    last_line = local_chief_log(Endpoint(url))
    assert last_line is not None and last_line(_Job("JOB_STATE_RUNNING")) == ""


def test_a_log_that_is_a_fifo_is_not_read(fake_emulator) -> None:
    """A FIFO in the emulator's state (a trainer may make one) would hold the wait forever."""
    url, state_dir, routes = fake_emulator
    log = state_dir / "fifo.log"
    os.mkfifo(log)
    routes["/emulator/v1/jobs/123/replicas"] = _replicas(log)
    last_line = local_chief_log(Endpoint(url))
    assert last_line is not None and last_line(_Job("JOB_STATE_RUNNING")) == ""


def test_a_line_longer_than_the_tail_read_is_not_shown_in_part(fake_emulator) -> None:
    url, state_dir, routes = fake_emulator
    log = state_dir / "chief.log"
    log.write_text("first\n" + "y" * 20000 + "\n")
    routes["/emulator/v1/jobs/123/replicas"] = _replicas(log)
    last_line = local_chief_log(Endpoint(url))
    assert last_line is not None and last_line(_Job("JOB_STATE_RUNNING")) == ""


def test_only_the_local_emulator_is_asked() -> None:
    assert local_chief_log(Endpoint(None)) is None
    assert local_chief_log(Endpoint("https://europe-west4-aiplatform.googleapis.com")) is None
    assert local_chief_log(Endpoint("http://10.1.2.3:8642")) is None


# -- through the provider ------------------------------------------------------------------------


def test_a_waiting_create_prints_its_states(sim: EmulatorProcess, capsys: Any) -> None:
    provider = configured(sim.endpoint, cancelTimeout="20", retryDeadline="30")
    inputs = provider.check({}, job_inputs(wait_for="succeeded", wait_timeout=60)).inputs
    created = provider.create(inputs)
    err = capsys.readouterr().err
    job_id = created.id.rsplit("/", 1)[-1]
    lines = [line for line in err.splitlines() if f"(job {job_id})" in line]
    assert lines[0].startswith(f"example-trainer (job {job_id}): JOB_STATE_")
    assert "-> JOB_STATE_SUCCEEDED after " in lines[-1]
    assert lines[-1].endswith("(waitFor: succeeded)")  # simulate mode: no chief log
    provider.delete(created.id, created.outs)
    # A create that does not wait prints nothing.
    quick = provider.create(provider.check({}, job_inputs()).inputs)
    provider.delete(quick.id, quick.outs)
    assert capsys.readouterr().err == ""


def test_a_gpu_job_on_a_machine_without_gpus_says_so_in_the_progress_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    # An nvidia-smi that lists no GPU, first on PATH: this machine has none, whatever it has.
    tool = tmp_path / "bin" / "nvidia-smi"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    with running_emulator("--gpus", "ignore", "--grace-seconds", "1") as emu:
        provider = configured(emu.endpoint, cancelTimeout="20", retryDeadline="30")
        inputs = job_inputs(wait_for="succeeded", wait_timeout=120)
        pool = inputs["spec"]["workerPoolSpecs"][0]
        pool["machineSpec"] = {
            "machineType": "n1-standard-4",
            "acceleratorType": "NVIDIA_TESLA_T4",
            "acceleratorCount": 1,
        }
        pool["pythonPackageSpec"]["executorImageUri"] = (
            "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-15.py310:latest"
        )
        created = provider.create(provider.check({}, inputs).inputs)
        err = capsys.readouterr().err
        provider.delete(created.id, created.outs)
    job_id = created.id.rsplit("/", 1)[-1]
    lines = [line for line in err.splitlines() if f"(job {job_id})" in line]
    assert "-> JOB_STATE_SUCCEEDED after " in lines[-1]
    assert "| chief: [on the CPU: no GPU on this machine, 1 x NVIDIA_TESLA_T4 asked]" in lines[-1]
