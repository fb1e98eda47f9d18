"""Lift the dynamic provider host's limit of 4 operations at once, from inside the provider.

Pulumi's Python dynamic provider host (``python -m pulumi.dynamic``, ``pulumi/dynamic/__main__.py``
in SDK 3.259) serves gRPC with ``futures.ThreadPoolExecutor(max_workers=4)``: at most four
Create/Read/Delete calls run at once, whatever ``pulumi up --parallel`` says. A create that
waits for its job (``waitFor: running|succeeded``) holds one of those four threads for as long
as the job takes to start or finish, so the fifth job is not even submitted until one of the
first four is done; a destroy of running jobs waits for four cancellations at a time.

``widen_host_pool`` raises that pool's ``max_workers`` from the provider's ``configure``, which
the host calls in one of its worker threads: the pool is the ``ThreadPoolExecutor`` whose
threads include the calling thread, found in the host's ``main()`` frame (it holds the gRPC
server, whose state holds the pool) or, failing that, among the executors the garbage
collector tracks. A ``ThreadPoolExecutor`` starts threads on demand up to ``_max_workers``,
read on every submit, so a larger value takes effect for the next call; calls already queued
get threads at once. Nothing is replaced or restarted: the engine keeps talking to the same
server. If the SDK changes and no such pool is found, nothing is changed and the provider
works as before, four operations at a time, with a warning on stderr (which the engine shows
in the ``pulumi up`` output); ``tests/e2e/test_concurrency.py`` fails in that case.

``install_cancel_handler`` makes the host's ``Cancel`` call (which the engine sends when
``pulumi up`` gets Ctrl-C; a file:// backend's ``pulumi cancel`` only removes the lock, which
``components._lock_watch`` notices), and which the host as it ships answers without
doing anything) stop every wait of the process (``components._interrupt``), and so does the
interpreter's shutdown (SIGINT to the host ends its ``main()``; its worker threads are then
joined, which would otherwise wait out every job being waited for). It swaps the handler of
that one method in the gRPC server's table, found the same way as the pool. Without it a
``waitFor: succeeded`` create held the stack until its ``waitTimeout``. If the server is not
found, nothing changes but a warning on stderr; ``tests/e2e/test_running_jobs.py`` fails then.
The new handler runs in a thread pool of its own (gRPC's ``experimental_thread_pool`` attribute
of a handler's behaviour, read by ``grpc._server._select_thread_pool_for_behavior``): the host's
pool may be full of waits (more operations under way than ``training:maxConcurrentOperations``),
and a Cancel queued behind them was served only once a wait ended by itself, after its
``waitTimeout``, which cancelled the job, while the creates queued behind it submitted theirs.

``PROFILE_ENV`` (``GPU_TRAINING_PROVIDER_PROFILE=<file>``) profiles every provider operation
with ``cProfile`` on the CPU time of its thread (``time.thread_time``: waiting for the API
or for a lock counts for nothing) and keeps the sum of all of them in ``<file>`` (pstats
format), rewritten after each operation: the provider process is ended by the engine, never
shut down.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import pstats

__all__ = [
    "CANCEL_METHOD",
    "PROFILE_ENV",
    "install_cancel_handler",
    "profiled",
    "serving_pool",
    "widen_host_pool",
]

T = TypeVar("T")

PROFILE_ENV = "GPU_TRAINING_PROVIDER_PROFILE"

_lock = threading.Lock()
_warned: set[str] = set()


def _pools_in(value: Any) -> Iterator[ThreadPoolExecutor]:
    """The executor ``value`` is, or the one a gRPC server holds (``server._state.thread_pool``)."""
    if isinstance(value, ThreadPoolExecutor):
        yield value
        return
    pool = getattr(getattr(value, "_state", None), "thread_pool", None)
    if isinstance(pool, ThreadPoolExecutor):
        yield pool


def _main_thread_locals() -> Iterator[Any]:
    """Values of the locals of the main thread's frames (the host's ``main()`` is there)."""
    main = threading.main_thread()
    if main.ident is None:
        return
    frame = sys._current_frames().get(main.ident)
    while frame is not None:
        yield from list(frame.f_locals.values())
        frame = frame.f_back


def _main_thread_pools() -> Iterator[ThreadPoolExecutor]:
    """Executors held by locals of the main thread's frames."""
    for value in _main_thread_locals():
        yield from _pools_in(value)


def _tracked_pools() -> Iterator[ThreadPoolExecutor]:
    for obj in gc.get_objects():
        if isinstance(obj, ThreadPoolExecutor):
            yield obj


def serving_pool(thread: threading.Thread | None = None) -> ThreadPoolExecutor | None:
    """The ``ThreadPoolExecutor`` one of whose worker threads is ``thread`` (default: this one)."""
    thread = thread or threading.current_thread()
    for search in (_main_thread_pools, _tracked_pools):
        for pool in search():
            if thread in getattr(pool, "_threads", ()):
                return pool
    return None


def _warn(message: str) -> None:
    """Say ``message`` on stderr (the engine shows it), once per process."""
    with _lock:
        if message in _warned:
            return
        _warned.add(message)
    print(f"gpu-training provider: {message}", file=sys.stderr, flush=True)


def widen_host_pool(workers: int) -> int | None:
    """Let the pool serving this thread run ``workers`` calls at once; its new size, or None.

    Never shrinks the pool. Returns None (and warns once on stderr, when this is the dynamic
    provider host) when no pool serves this thread or the executor's internals are not the
    ones this relies on.
    """
    from components._engine_watch import in_provider_host

    pool = serving_pool()
    if pool is None:
        if in_provider_host():
            _warn(
                "could not find the dynamic provider host's worker pool (has pulumi.dynamic "
                "changed?); at most 4 operations run at once"
            )
        return None
    try:
        with pool._shutdown_lock:
            if pool._max_workers < workers:
                pool._max_workers = workers
            # Calls queued while every thread was busy get a thread now, not at the next call.
            for _ in range(min(pool._work_queue.qsize(), pool._max_workers)):
                pool._adjust_thread_count()
            return int(pool._max_workers)
    except AttributeError as exc:
        _warn(f"could not widen the dynamic provider host's worker pool ({exc}); at most 4 run")
        return None


CANCEL_METHOD = "/pulumirpc.ResourceProvider/Cancel"
"""The engine's call to stop a provider (``ResourceProvider.Cancel``)."""

_cancel_installed = False


def _method_tables(server: Any) -> Iterator[dict[str, Any]]:
    """The gRPC server's tables of method handlers (by full method name)."""
    state = getattr(server, "_state", None)
    for handler in getattr(state, "generic_handlers", None) or ():
        table = getattr(handler, "_method_handlers", None)
        if isinstance(table, dict):
            yield table
    registered = getattr(state, "registered_method_handlers", None)
    if isinstance(registered, dict):
        yield registered


_cancel_pool: ThreadPoolExecutor | None = None


def _interrupting(handler: Any) -> Any:
    """``handler`` (a unary RPC handler) that first stops this process's waits, served by a
    thread of its own so that it never queues behind busy workers."""
    global _cancel_pool
    from components._interrupt import interrupt

    behaviour = handler.unary_unary

    def cancel(request: Any, context: Any) -> Any:
        interrupt("pulumi was cancelled")
        return behaviour(request, context)

    if _cancel_pool is None:
        _cancel_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pulumi-cancel")
    # The attribute gRPC looks for on a behaviour (grpc 1.85 ``_server.py``); an older gRPC
    # ignores it and serves Cancel from the host's pool, as before.
    cancel.experimental_thread_pool = _cancel_pool  # type: ignore[attr-defined]
    return handler._replace(unary_unary=cancel)


def install_cancel_handler() -> bool:
    """Let the engine's ``Cancel`` (and the host's shutdown) stop this process's waits.

    Done once per process; True when the host's ``Cancel`` now does so. Outside the dynamic
    provider host (tests calling the provider directly) nothing is changed.
    """
    global _cancel_installed
    from components._engine_watch import in_provider_host

    if not in_provider_host():
        return False
    with _lock:
        if _cancel_installed:
            return True
        found = False
        for value in _main_thread_locals():
            for table in _method_tables(value):
                handler = table.get(CANCEL_METHOD)
                if handler is not None and hasattr(handler, "_replace"):
                    table[CANCEL_METHOD] = _interrupting(handler)
                    found = True
        if found:
            _cancel_installed = True
            _on_shutdown()
    if not found:
        _warn(
            "could not find the dynamic provider host's Cancel handler (has pulumi.dynamic "
            "changed?); Ctrl-C does not stop a create that waits for its job"
        )
    return found


def _on_shutdown() -> None:
    """Stop the waits when the interpreter shuts down (before it joins the worker threads)."""
    from components._interrupt import interrupt

    register = getattr(threading, "_register_atexit", None)
    if register is None:
        return
    try:
        # Called in reverse order of registration, so before concurrent.futures joins the pool.
        register(lambda: interrupt("the provider process is stopping"))
    except RuntimeError:  # already shutting down
        interrupt("the provider process is stopping")


_profile_lock = threading.Lock()
_profile_total: pstats.Stats | None = None


def profiled(call: Callable[[], T]) -> T:
    """``call()``, profiled into ``$GPU_TRAINING_PROVIDER_PROFILE`` when that is set."""
    target = os.environ.get(PROFILE_ENV)
    if not target:
        return call()
    import cProfile
    import pstats

    # CPU time of this thread: waits (sleeps, the network, locks) cost nothing here.
    profile = cProfile.Profile(time.thread_time)
    try:
        return profile.runcall(call)
    finally:
        global _profile_total
        with _profile_lock:
            if _profile_total is None:
                _profile_total = pstats.Stats(profile)
            else:
                _profile_total.add(profile)
            _profile_total.dump_stats(target)
