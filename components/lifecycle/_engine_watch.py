"""The dynamic provider process ends when the Pulumi engine that started it is gone.

The engine starts ``python -m pulumi.dynamic`` (through a shell script), and the provider
plugin (``components.plugin``), with a pipe on its standard input and stops it when the
deployment ends. When the engine is killed instead
(``kill -9``, a CI runner cancelled), nothing stops the provider: its gRPC server waits for
calls that never come, and a create that waits for a job keeps polling for a result nobody
can record. The write end of that pipe belongs to the engine, so the pipe reaches end of
file exactly when the engine is gone; a daemon thread waits for that and ends the process.

Whatever was under way is safe to drop: a job that was submitted is adopted by the next
``pulumi up`` (its identity and run labels), as after any crash of the engine.
"""

from __future__ import annotations

import os
import stat
import sys
import threading

__all__ = ["in_provider_host", "watch_engine"]

_started = False
_lock = threading.Lock()


def in_provider_host() -> bool:
    """True inside the process the engine runs dynamic providers in."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return getattr(spec, "name", None) == "pulumi.dynamic.__main__"


def _stdin_is_pipe() -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(0).st_mode)
    except OSError:
        return False


def _wait_then_exit() -> None:
    try:
        while os.read(0, 1 << 12):
            pass  # the engine never writes; anything read is ignored
    except OSError:
        pass
    os._exit(0)


def watch_engine(*, anywhere: bool = False) -> bool:
    """Start the watch once, inside the provider host (or, ``anywhere``, in any process the
    engine started: the provider plugin) and only on a pipe; True if started."""
    global _started
    with _lock:
        if _started or not (anywhere or in_provider_host()) or not _stdin_is_pipe():
            return False
        _started = True
    threading.Thread(target=_wait_then_exit, name="engine-watch", daemon=True).start()
    return True
