"""Progress lines while the provider waits for a job: what ``pulumi up`` shows meanwhile.

A Python dynamic provider has no connection to the engine to log through, but the engine shows
what the provider process writes, line by line: for ``pulumi-resource-pulumi-python`` (and
only for dynamic providers: other plugins' output is a debug message), stdout as info and
stderr as info-on-stderr messages of the stack, both in the live display (next to
``pulumi:pulumi:Stack ... creating``) and under "Diagnostics" at the end (checked on engine
v3.259: ``pkg/resource/plugin/plugin.go``, ``isDynamicPluginBinary``, and
``tests/e2e/test_progress.py``). The lines go to stderr: stdout is where the host hands the
engine its port, so nothing else of ours ever goes there.

``WaitProgress`` turns the job forms a wait reads into lines: one on each state change, and
at most one every ``EVERY`` seconds while the state stays the same, each with the time waited.
The engine names no resource in them (it does not know which call printed), so each line names
the job: its display name (the resource's name unless the spec sets one) and its id. For the
local emulator (``training:endpoint`` on this machine) a line also carries the last line of the
chief replica's log, which the emulator's admin API locates (``GET
/emulator/v1/jobs/{id}/replicas``: each replica's ``logPath``; the file is read only if it
lies in the emulator's state directory, from ``GET /emulator/v1/health``), after what the
chief of a GPU job runs on, as the emulator says it (``[on the CPU: no GPU on this machine, 4 x
NVIDIA_TESLA_T4 asked]``, ``[on GPU 0,1]``). Every line goes
through the caller's ``scrub`` (env values and the endpoint's credentials taken out) before it
is written.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._settings import Endpoint, public_url

__all__ = [
    "EVERY",
    "WaitProgress",
    "local_chief_log",
    "set_line_sink",
    "stderr_line",
    "write_line",
]

EVERY = 20.0
"""Seconds between two lines while a job's state stays the same."""
LOG_LINE_CHARS = 200
"""A chief's log line is cut to this many characters."""
_ADMIN_TIMEOUT = 2.0
_TAIL_BYTES = 8192

_write_lock = threading.Lock()
_sink: Callable[[str], None] | None = None


def set_line_sink(sink: Callable[[str], None] | None) -> None:
    """Send every ``write_line`` to ``sink`` instead of stderr (None: stderr again). The
    provider plugin's process sends them to the engine's log: a plugin's stderr is only a
    debug message to the engine, unlike the dynamic provider host's."""
    global _sink
    _sink = sink


def write_line(line: str) -> None:
    """Write one line whole (operations in other threads write theirs too): to stderr, or to
    the sink ``set_line_sink`` named (stderr when the sink fails)."""
    sink = _sink
    if sink is not None:
        try:
            sink(line)
            return
        except Exception:  # the engine is gone: the line is worth more on stderr than lost
            pass
    stderr_line(line)


def stderr_line(line: str) -> None:
    """Write one line to stderr whole."""
    with _write_lock:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _printable(text: str, limit: int | None = None) -> str:
    """``text`` on one line, without control characters, cut to ``limit`` characters."""
    # A log line may hold escape sequences: they must not reach the user's terminal.
    shown = "".join(ch if ch.isprintable() else " " for ch in text).strip()
    if limit is None or len(shown) <= limit:
        return shown
    return shown[: limit - 3] + "..."


class WaitProgress:
    """The lines of one wait for one job; ``observe`` is given each form of the job read."""

    def __init__(
        self,
        what: str,
        *,
        scrub: Callable[[str], str],
        chief_log: Callable[[Any], str] | None = None,
        quiet_for: float = 0.0,
        every: float = EVERY,
        clock: Callable[[], float] = time.monotonic,
        write: Callable[[str], None] = write_line,
    ) -> None:
        """``what`` ends each line (``waitFor: running``); nothing is written before
        ``quiet_for`` seconds have passed (a wait that ends sooner stays silent)."""
        self.what = what
        self.scrub = scrub
        self.chief_log = chief_log
        self.quiet_for = quiet_for
        self.every = every
        self.clock = clock
        self.write = write
        self.started = clock()
        self.shown_state: str | None = None
        self.shown_at = float("-inf")

    def observe(self, job: Any) -> None:
        """Write a line for this form of the job if it is due. Never raises: a line that
        cannot be made or written is skipped, the wait goes on."""
        try:
            self._observe(job)
        except Exception:  # progress is best effort; the operation is not
            return

    def _observe(self, job: Any) -> None:
        now = self.clock()
        elapsed = now - self.started
        if elapsed < self.quiet_for:
            return
        state = str(job.state.name)
        if state == self.shown_state:
            if now - self.shown_at < self.every:
                return
            change = f"still {state}"
        elif self.shown_state is None:
            change = state
        else:
            change = f"{self.shown_state} -> {state}"
        self.shown_state, self.shown_at = state, now
        name = str(job.name)
        label = f"{job.display_name or '(no display name)'} (job {name.rsplit('/', 1)[-1]})"
        line = f"{label}: {change} after {elapsed:.0f}s ({self.what})"
        if self.chief_log is not None:
            # Scrubbed before it is cut: a cut through an env value would leave part of it.
            last = _printable(self.scrub(self.chief_log(job)), LOG_LINE_CHARS)
            if last:
                line += f" | chief: {last}"
        self.write(_printable(self.scrub(line)))


def _last_line(path: Path) -> str:
    try:
        # The trainer's log, in the emulator's state: read only as the regular file the
        # emulator made, never through a symlink (to a file of the machine's, whose last
        # line this would show) nor as a FIFO (a plain open waits for a writer).
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(fd, "rb") as log:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return ""
            log.seek(0, 2)
            size = log.tell()
            log.seek(max(size - _TAIL_BYTES, 0))
            tail = log.read().decode(errors="replace")
    except OSError:
        return ""
    lines = tail.splitlines()
    if size > _TAIL_BYTES:
        lines = lines[1:]  # it starts in the middle of a line: never show a part of one
    lines = [line for line in lines if line.strip()]
    return lines[-1] if lines else ""


def local_chief_log(endpoint: Endpoint) -> Callable[[Any], str] | None:
    """For the local emulator, ``job → the last line of its chief's log`` ("" when none yet)."""
    if endpoint.target != "local" or not endpoint.url:
        return None
    # The emulator wants no credentials; its admin routes are read without them.
    base = public_url(endpoint.url).rstrip("/")
    state_dirs: list[Path] = []

    def admin(path: str) -> Any:
        import urllib.request  # here: the preview path (check, diff) never needs it

        # No proxy: the emulator is on this machine, and a proxy from the environment is not.
        # (Made per call: this runs only when a line is written, and most waits write none.)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{base}{path}", timeout=_ADMIN_TIMEOUT) as response:
            return json.load(response)

    def last_line(job: Any) -> str:
        name = str(job.name)
        if "/customJobs/" not in name:
            return ""  # a tuning job's replicas are its trials' jobs
        try:
            if not state_dirs:
                state_dirs.append(Path(str(admin("/emulator/v1/health")["stateDir"])).resolve())
            replicas = admin(f"/emulator/v1/jobs/{name.rsplit('/', 1)[-1]}/replicas")["replicas"]
        except (OSError, ValueError, KeyError, TypeError):
            return ""
        chief = next(
            (r for r in replicas if isinstance(r, dict) and r.get("replica") == "workerpool0-0"),
            None,
        )
        log_path = chief.get("logPath") if chief else None
        if not isinstance(log_path, str):
            return ""
        # What a GPU chief runs on: a GPU job run on the CPU never passes for a GPU run.
        hardware = chief.get("hardware") if chief else None
        short = hardware.get("short") if isinstance(hardware, dict) else None
        said = f"[{short}] " if isinstance(short, str) and short else ""
        path = Path(log_path).resolve()
        if not path.is_relative_to(state_dirs[0]):
            return said.strip()  # only the emulator's own files are read
        return said + _last_line(path)

    return last_line
