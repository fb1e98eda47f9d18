"""The provider process is asked to stop: every wait in it ends within a moment.

The engine asks a provider to stop with its ``Cancel`` call (``pulumi up`` got Ctrl-C); the
dynamic provider host as it ships ignores that call, so
``components.dynamic._host.install_cancel_handler`` routes it here, as it does the interpreter's
shutdown (SIGINT to the provider process) and ``components.lifecycle._lock_watch`` the removal of the
stack's lock (``pulumi cancel`` on a file:// backend, which sends no ``Cancel``). Once asked, the process stays stopped: the engine
starts a new provider process for its next command.

A wait that ends here leaves its job as it is: a create that was waiting for its job raises
(the job keeps running, the next ``pulumi up`` adopts it), a delete that was waiting for a
cancelled job to stop raises (the job stays in the stack). Waits sleep through ``pause``,
which wakes at once when the stop comes.

Nothing here imports ``pulumi`` or the Vertex client.
"""

from __future__ import annotations

import threading
from typing import Any

from .._errors import TrainingJobError

__all__ = [
    "Interrupted",
    "cancel_operations",
    "interrupt",
    "interrupted",
    "pause",
    "reset",
    "stop_waits_at_exit",
]

_stop = threading.Event()
_lock = threading.Lock()
_reason = ""


class Interrupted(TrainingJobError):
    """The provider process was asked to stop while an operation waited; ``reason`` says by whom."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def interrupt(reason: str) -> None:
    """Ask every wait of this process to end (the first reason given is kept)."""
    global _reason
    with _lock:
        if not _stop.is_set():
            _reason = reason
            _stop.set()


def cancel_operations(reason: str = "pulumi was cancelled") -> None:
    """The core's cancel (``components.core._jobs`` names it): every operation of this
    process that waits ends now, for the engine's Cancel (Ctrl-C, ``pulumi cancel``) or the
    process's shutdown (``reason`` says which). Each job is left as it is: a waiting create's
    job is adopted by the next ``pulumi up``, a waiting delete's job stays in the stack."""
    interrupt(reason)


def interrupted() -> str | None:
    """Why the process was asked to stop, or None while it was not."""
    return _reason if _stop.is_set() else None


def pause(seconds: float) -> None:
    """Sleep ``seconds``; raises ``Interrupted`` at once when the process is (or gets) stopped."""
    if _stop.wait(max(seconds, 0.0)):
        raise Interrupted(_reason)


def reset() -> None:
    """Undo ``interrupt`` (tests, which run many operations in one process)."""
    global _reason
    with _lock:
        _stop.clear()
        _reason = ""


STOPPING = "the provider process is stopping"


def stop_waits_at_exit(threading_module: Any = threading) -> None:
    """End every wait of this process when the interpreter shuts down (SIGINT ended its main
    loop), before ``concurrent.futures`` joins the worker threads, which a wait would
    otherwise hold for as long as it lasts. ``threading._register_atexit`` (private, but
    what ``concurrent.futures`` itself uses) calls its functions in reverse order of
    registration, so this one runs before that join; without it, nothing is registered."""
    # concurrent.futures registers its join when its thread module is first imported, which
    # the package defers: import it now, so that the join is registered before this.
    import concurrent.futures.thread  # noqa: F401

    register = getattr(threading_module, "_register_atexit", None)
    if register is None:
        return
    try:
        register(lambda: interrupt(STOPPING))
    except RuntimeError:  # already shutting down
        interrupt(STOPPING)
