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
``components.lifecycle._lock_watch`` notices), and which the host as it ships answers without
doing anything) stop every wait of the process (``components.lifecycle._interrupt``), and so does the
interpreter's shutdown (SIGINT to the host ends its ``main()``; its worker threads are then
joined, which would otherwise wait out every job being waited for). It swaps the handler of
that one method in the gRPC server's table, found the same way as the pool. Without it a
``waitFor: succeeded`` create held the stack until its ``waitTimeout``. If the server is not
found, nothing changes but a warning on stderr; ``tests/e2e/test_running_job_table.py`` fails then.
The new handler runs in a thread pool of its own (gRPC's ``experimental_thread_pool`` attribute
of a handler's behaviour, read by ``grpc._server._select_thread_pool_for_behavior``): the host's
pool may be full of waits (more operations under way than ``training:maxConcurrentOperations``),
and a Cancel queued behind them was served only once a wait ended by itself, after its
``waitTimeout``, which cancelled the job, while the creates queued behind it submitted theirs.

``install_error_handlers`` changes what the host's Check, Diff, Create, Read, Update and
Delete answer when they fail: the host as it ships gives ``traceback.format_exc()``, which the
engine printed before every failed operation's message; the message alone reaches the engine
now (``error_message``: env values and endpoint credentials out, bounded, control characters
escaped). Hosts before SDK 3.260 have no such wrapper: a failed call's exception reached gRPC,
which answered "Exception calling application: MESSAGE" (the env values in it) and logged the
traceback to stderr, where the engine shows it. There the provider's own operations
(``message_on_failure``) abort the call with the same message from inside it.

The profiler of provider operations (``PROFILE_ENV``) is no patch: it lives in
``components.lifecycle._profile``, which both doors use. docs/patches.md lists each patch here.
"""

from __future__ import annotations

import functools
import gc
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from types import FrameType
from typing import Any, ParamSpec, TypeVar

__all__ = [
    "CANCEL_METHOD",
    "error_message",
    "install_cancel_handler",
    "install_error_handlers",
    "message_on_failure",
    "request_urn",
    "serving_pool",
    "widen_host_pool",
]

T = TypeVar("T")
P = ParamSpec("P")

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


def _has_worker(pool: ThreadPoolExecutor, thread: threading.Thread) -> bool:
    """Whether ``thread`` is one of ``pool``'s workers, read under the lock it is recorded under.

    The executor starts a new worker and only then adds it to ``_threads``, both while holding
    ``_shutdown_lock`` (in ``submit``): a fresh pool's first call can run before its thread is
    recorded. Taking that lock waits for the ``submit`` that started this thread to finish.
    """
    lock = getattr(pool, "_shutdown_lock", None)
    if lock is None or not lock.acquire(timeout=10):
        return thread in getattr(pool, "_threads", ())
    try:
        return thread in getattr(pool, "_threads", ())
    finally:
        lock.release()


def serving_pool(thread: threading.Thread | None = None) -> ThreadPoolExecutor | None:
    """The ``ThreadPoolExecutor`` one of whose worker threads is ``thread`` (default: this one)."""
    thread = thread or threading.current_thread()
    for search in (_main_thread_pools, _tracked_pools):
        for pool in search():
            if _has_worker(pool, thread):
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
    from ..lifecycle._engine_watch import in_provider_host

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
    behaviour = handler.unary_unary

    def cancel(request: Any, context: Any) -> Any:
        # The light module the core's cancel lives in: a Cancel may come before the core loads.
        from ..lifecycle._interrupt import cancel_operations

        cancel_operations()
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
    from ..lifecycle._engine_watch import in_provider_host

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


MAX_ERROR_CHARS = 16_000
"""The most of an error's text the engine is given: an input quoted in it may be huge."""

_ENV_VALUES = "env_values"
_SECRET_SIG = "4dabf18193072939515e22adb298388d"
"""The key that marks a secret in the host's wire form (``pulumi.runtime.rpc``)."""

_error_scrubs: list[Callable[[str], str]] = []


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON-like value (a secret's marker left out)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key != _SECRET_SIG:
                yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _request_secrets(request: Any) -> list[str]:
    """The env values a request carries (in its inputs, old or new properties)."""
    from google.protobuf.json_format import MessageToDict

    found: list[str] = []
    for name in ("properties", "olds", "news", "inputs"):
        struct = getattr(request, name, None)
        if struct is None or not hasattr(struct, "fields"):
            continue
        try:
            props = MessageToDict(struct)
        except Exception:  # a request that cannot be read has nothing to add
            continue
        found.extend(_strings(props.get(_ENV_VALUES)))
    return found


def request_urn() -> str | None:
    """The URN of the resource whose call the host is serving in this thread, or None.

    The host passes a provider's ``read`` and ``delete`` the id and properties only; the
    engine's request (a local ``request`` of the host's handler, up the stack) names the
    resource, and so its stack, which the run key reads its checkpoint for."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        request = frame.f_locals.get("request")
        urn = getattr(request, "urn", None)
        if isinstance(urn, str) and urn.startswith("urn:pulumi:"):
            return urn
        frame = frame.f_back
    return None


def _handled_request(exc: BaseException) -> Any:
    """The gRPC request whose handler let ``exc`` out: a local of a frame it passed through
    (the host's handler and its wrapper take it as ``request``)."""
    tb = exc.__traceback__
    while tb is not None:
        request = tb.tb_frame.f_locals.get("request")
        if request is not None and hasattr(request, "ListFields"):
            return request
        tb = tb.tb_next
    return None


def error_message(exc: BaseException, secrets: Iterable[str] = ()) -> str:
    """What the user is told of a failed operation: the error's message (its type too where it
    is no error of this package's: those are written for the user), without env values or
    endpoint credentials, bounded, with control characters escaped; never a traceback."""
    from .._redaction import redact
    from ..rules._violations import terminal_safe

    text = str(exc)
    ours = type(exc).__module__.split(".")[0] == __name__.split(".")[0]
    if not ours or not text:
        text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    for scrub in list(_error_scrubs):
        text = scrub(text)
    return terminal_safe(redact(text, secrets), MAX_ERROR_CHARS)


class _MessageOnly:
    """Stands in for the ``traceback`` module in the host's module, whose one use of it is
    ``context.abort(UNKNOWN, traceback.format_exc())`` for a failed call: the error's message
    (``error_message``, the request's env values taken out) instead of the traceback."""

    def __init__(self, module: Any) -> None:
        self._module = module

    def format_exc(self, *args: Any, **kwargs: Any) -> str:
        exc = sys.exc_info()[1]
        if exc is None:
            return str(self._module.format_exc(*args, **kwargs))
        request = _handled_request(exc)
        return error_message(exc, _request_secrets(request) if request is not None else ())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


def install_error_handlers(scrub: Callable[[str], str] | None = None) -> bool:
    """Let the host answer a failed operation with its message, not a Python traceback.

    The host as it ships wraps its Check, Diff, Create, Read, Update and Delete in
    ``_abort_with_traceback``, which aborts a failed call with ``traceback.format_exc()``;
    the engine prints that before the message. Here the host module's ``traceback`` becomes
    ``_MessageOnly``: read when a call fails, so it holds for a call already under way (the
    first Read of a refresh configures the provider inside itself). ``scrub`` (the
    endpoint's, taking its credentials out) applies to every message. A host before SDK 3.260
    has no such wrapper: there the operations abort their own calls (``message_on_failure``).
    Idempotent; True when in place. Outside the host nothing is changed.
    """
    from ..lifecycle._engine_watch import in_provider_host

    if scrub is not None and scrub not in _error_scrubs:
        _error_scrubs.append(scrub)
    if not in_provider_host():
        return False
    global _abort_from_operations
    host = sys.modules.get("__main__")
    module = getattr(host, "traceback", None)
    if _is_unwrapped_host(host):
        _abort_from_operations = True
        return True
    if not callable(getattr(host, "_abort_with_traceback", None)) or module is None:
        _warn(
            "could not find the dynamic provider host's error handling (has pulumi.dynamic "
            "changed?); a failed operation shows a Python traceback"
        )
        return False
    with _lock:
        if not isinstance(module, _MessageOnly):
            host.traceback = _MessageOnly(module)  # type: ignore[union-attr]
    return True


_abort_from_operations = False
"""Whether this process's host lets a failed call's exception out to gRPC (SDK before 3.260):
``message_on_failure`` then aborts the call itself."""

_ABORTED = "_gpu_training_aborted"
"""Set on the exception ``context.abort`` raises, so that an outer operation lets it through."""


def _is_unwrapped_host(host: Any) -> bool:
    """The dynamic provider host of SDK 3.180 to 3.259: its servicer's handlers are its methods,
    with no ``_abort_with_traceback`` around them."""
    servicer = getattr(host, "DynamicResourceProviderServicer", None)
    return isinstance(servicer, type) and not hasattr(host, "_abort_with_traceback")


def _calling_rpc() -> tuple[Any, Any] | None:
    """The ``(request, context)`` of the host's gRPC handler this thread is inside: the locals
    of the nearest calling frame that has both (the host's methods take them by these names)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        request, context = frame.f_locals.get("request"), frame.f_locals.get("context")
        if hasattr(request, "ListFields") and callable(getattr(context, "abort", None)):
            return request, context
        frame = frame.f_back
    return None


def message_on_failure(operation: Callable[P, T]) -> Callable[P, T]:
    """``operation`` (a provider operation the host calls), answering a failure with its message.

    Only in a host without an error wrapper of its own (``install_error_handlers`` found one
    before SDK 3.260): the call is aborted with ``error_message`` (the request's env values and
    the endpoint's credentials out), which gRPC sends as it is and does not log. Anywhere else
    the exception goes on unchanged (a newer host, the provider plugin, tests)."""

    @functools.wraps(operation)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return operation(*args, **kwargs)
        except Exception as exc:
            if not _abort_from_operations or getattr(exc, _ABORTED, False):
                raise
            rpc = _calling_rpc()
            if rpc is None:
                raise
            import grpc  # type: ignore[import-untyped]

            request, context = rpc
            try:
                context.abort(
                    grpc.StatusCode.UNKNOWN, error_message(exc, _request_secrets(request))
                )
            except Exception as aborted:  # what abort raises: it ends the call
                setattr(aborted, _ABORTED, True)
                raise aborted from None
            raise  # pragma: no cover - abort always raises

    return run


def _on_shutdown() -> None:
    """Stop the waits when the interpreter shuts down (before it joins the worker threads)."""
    from ..lifecycle._interrupt import stop_waits_at_exit

    stop_waits_at_exit()
