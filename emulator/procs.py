"""Process-group helpers for replicas.

Each replica runs as the leader of its own process group, so signalling the group reaches
everything the trainer started. A replica is identified by (pid, start time in clock ticks) so that
after a service crash the cleanup never signals an unrelated process that reused the pid.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

__all__ = ["kill_orphan_group", "signal_group", "start_ticks"]


def start_ticks(pid: int) -> int | None:
    """The process's start time (field 22 of /proc/<pid>/stat), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[19])


def is_same_process(pid: int | None, ticks: int | None) -> bool:
    """True when ``pid`` is alive and is the process that was started at ``ticks``."""
    if not pid or ticks is None:
        return False
    current = start_ticks(pid)
    if current != ticks:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def group_alive(pgid: int) -> bool:
    """True while any process of the group exists."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to the group, ignoring a group that is already gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def kill_orphan_group(pid: int | None, ticks: int | None, grace: float) -> bool:
    """Terminate the group led by a replica of a previous service run; True if it was alive.

    The leader is not our child, so it cannot be waited for: poll until the group is gone.
    """
    if not is_same_process(pid, ticks):
        return False
    assert pid is not None
    signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and is_same_process(pid, ticks):
        time.sleep(0.05)
    signal_group(pid, signal.SIGKILL)
    return True
