"""Run the emulator as a subprocess for tests: ``with running_emulator() as emu: ...``.

The context manager starts ``python -m emulator serve --port 0`` with a temporary state dir (or the
one given), waits until it answers, yields an :class:`EmulatorProcess` and always stops it, and
also kills any replica (or pip) processes a crashed server may have left behind. Startup failures
raise :class:`EmulatorStartError` carrying the server's own output.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from google.cloud.aiplatform_v1 import JobServiceClient

from . import procs, protos
from .cli import wait_ready
from .client import job_service_client
from .store import DB_NAME, Store

__all__ = ["EmulatorProcess", "running_emulator", "wait_for_state"]

_REPO_ROOT = Path(__file__).resolve().parent.parent


class EmulatorStartError(RuntimeError):
    """The server did not become ready; the message includes its output."""


class EmulatorProcess:
    """A running ``python -m emulator serve`` subprocess and helpers to drive it."""

    def __init__(
        self,
        state_dir: Path,
        args: Sequence[str],
        *,
        cwd: Path,
        startup_timeout: float,
    ) -> None:
        self.state_dir = state_dir
        self.args = list(args)
        self.cwd = cwd
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.endpoint = ""
        self._starts = 0

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self, port: int = 0) -> None:
        """Start the server (on ``port``; 0 picks a free one) and wait until it answers."""
        self._starts += 1
        log_path = self.log_path
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(_REPO_ROOT), env.get("PYTHONPATH", "")) if p
        )
        cmd = [
            sys.executable,
            "-m",
            __package__ or "emulator",  # gpu_training_emulator once installed
            "serve",
            "--port",
            str(port),
            "--state-dir",
            str(self.state_dir),
            *self.args,
        ]
        with open(log_path, "ab") as out:
            self.process = subprocess.Popen(
                cmd, cwd=self.cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out
            )
        proc = self.process
        info = wait_ready(
            self.state_dir,
            proc.pid,
            timeout=self.startup_timeout,
            alive=lambda: proc.poll() is None,
        )
        if info is None:
            self._kill()
            output = log_path.read_text(errors="replace")[-4000:]
            raise EmulatorStartError(
                f"emulator did not become ready within {self.startup_timeout:g}s "
                f"(exit status {proc.poll()}); its output:\n{output}"
            )
        self.port = int(str(info["port"]))
        self.endpoint = str(info["endpoint"])

    @property
    def log_path(self) -> Path:
        """Where the current server process writes its output."""
        return self.state_dir / f"server-{self._starts}.log"

    def stop(self, timeout: float = 30.0) -> int | None:
        """Graceful stop (SIGTERM); SIGKILL after ``timeout``. Returns the exit status."""
        proc = self.process
        if proc is None or proc.poll() is not None:
            return None if proc is None else proc.returncode
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._kill()
            return proc.returncode

    def crash(self) -> None:
        """SIGKILL the server, as a crash would: replicas it started keep running."""
        self._kill()

    def restart(self) -> None:
        """Start again on the same state dir and port (after :meth:`stop` or :meth:`crash`)."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("restart: the emulator is still running; stop or crash it first")
        self.start(self.port)

    def _kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    # -- API helpers --------------------------------------------------------------------------

    def client(self) -> JobServiceClient:
        """A REST JobServiceClient pointed at this server."""
        return job_service_client(self.endpoint)

    def _admin(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"{self.endpoint}/emulator/v1/{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            raise RuntimeError(f"{method} /emulator/v1/{path}: HTTP {exc.code}: {detail}") from None

    def set_faults(self, **faults: Any) -> dict[str, Any]:
        """Change fault injection, e.g. ``set_faults(unavailable_rate=0.5, seed=1)``."""
        result: dict[str, Any] = self._admin("POST", "faults", faults)
        return result

    def clear_faults(self) -> dict[str, Any]:
        """Turn every fault off."""
        return self.set_faults(
            unavailable_rate=0.0,
            rate_limit_rate=0.0,
            conflict_rate=0.0,
            latency_ms=0.0,
            drop_create=0,
        )

    def maintenance(self, job_id: str, replica: str = "workerpool0-0") -> dict[str, Any]:
        """Trigger a host maintenance event: the replica is killed and restarted."""
        result: dict[str, Any] = self._admin(
            "POST", f"jobs/{job_id}:maintenance", {"replica": replica}
        )
        return result

    def replicas(self, job_id: str) -> list[dict[str, Any]]:
        """The job's replica records (pid, state, exit code, restarts, log path)."""
        result: list[dict[str, Any]] = self._admin("GET", f"jobs/{job_id}/replicas")["replicas"]
        return result


def kill_leftover_replicas(state_dir: Path) -> int:
    """Kill replica and pip process groups recorded in ``state_dir`` that are still alive."""
    if not (state_dir / DB_NAME).exists():
        return 0
    store = Store(state_dir, readonly=True)
    try:
        groups = [(r.pid, r.start_ticks) for r in store.all_replicas()]
        groups += [(pid, ticks) for _, pid, ticks in store.install_processes()]
    finally:
        store.close()
    return sum(procs.kill_orphan_group(pid, ticks, grace=2.0) for pid, ticks in groups)


@contextmanager
def running_emulator(
    *args: str,
    state_dir: Path | None = None,
    cwd: Path | None = None,
    startup_timeout: float = 120.0,
) -> Iterator[EmulatorProcess]:
    """Start the emulator with extra ``serve`` ``args``; stop it and its replicas on exit.

    ``state_dir`` defaults to a fresh temporary directory that is removed afterwards; ``cwd``
    (default: the repository root) is also an allowed package root. ``startup_timeout`` only
    bounds a start that hangs (a server that exits is seen at once): a start imports Google's
    client library, several CPU seconds that a loaded two-core machine running tests in
    parallel (``make test``) can stretch past half a minute.
    """
    own_dir = state_dir is None
    root = Path(tempfile.mkdtemp(prefix="vertex-emulator-")) if state_dir is None else state_dir
    root.mkdir(parents=True, exist_ok=True)
    emu = EmulatorProcess(root, args, cwd=cwd or _REPO_ROOT, startup_timeout=startup_timeout)
    try:
        emu.start()
        yield emu
    finally:
        try:
            emu.stop()
        finally:
            emu._kill()
            kill_leftover_replicas(root)
            if own_dir:
                shutil.rmtree(root, ignore_errors=True)


def wait_for_state(
    client: JobServiceClient,
    name: str,
    states: Sequence[int],
    *,
    timeout: float = 60.0,
    interval: float = 0.1,
) -> Any:
    """Poll the job until it reaches one of ``states``; returns the job.

    ``get_custom_job``, or ``get_hyperparameter_tuning_job`` for a tuning job's name. Raises
    TimeoutError naming the last state seen.
    """
    tuning = f"/{protos.TUNING_JOB.collection}/" in name
    get = client.get_hyperparameter_tuning_job if tuning else client.get_custom_job
    deadline = time.monotonic() + timeout
    job = get(name=name)
    while job.state not in states:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name} stayed in {job.state.name} for {timeout:g}s")
        time.sleep(interval)
        job = get(name=name)
    return job
