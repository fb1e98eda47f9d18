"""Profile provider operations on the CPU time of their threads, any number at once.

``PROFILE_ENV`` (``GPU_TRAINING_PROVIDER_PROFILE=<file>``) profiles every provider operation
on the CPU time of its thread (waiting for the API or for a lock counts for nothing), any
number at once, by sampling their stacks from one thread (``_Sampler``: ``cProfile`` allows
one profiler per process on Python 3.12 and later), and keeps the sum of all of them in
``<file>`` (pstats format), rewritten after each operation: the provider process is ended by
the engine, never shut down.

Both doors' operations are profiled (the dynamic provider's and the plugin's: both call the
core's create, read and delete through ``profiled``). Nothing is patched: the sampler reads
``sys._current_frames()`` from a thread of its own.
"""

from __future__ import annotations

import marshal
import os
import sys
import threading
import time
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any, TypeVar

__all__ = ["PROFILE_ENV", "profiled"]

T = TypeVar("T")

PROFILE_ENV = "GPU_TRAINING_PROVIDER_PROFILE"


_SAMPLE_SECONDS = 0.002
"""How often the profiler looks at the threads inside a profiled call."""

_Key = tuple[str, int, str]
"""A function as pstats names it: file, first line, name."""


def _key(code: CodeType) -> _Key:
    return (code.co_filename, code.co_firstlineno, code.co_name)


def _thread_clock(ident: int) -> Callable[[], float]:
    """The CPU time of thread ``ident``, readable from any thread (wall time where the platform
    has no per-thread clock for another thread)."""
    try:
        clock = time.pthread_getcpuclockid(ident)
        time.clock_gettime(clock)
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return time.monotonic
    return lambda: time.clock_gettime(clock)


class _Sampler:
    """One profiler for the process: a thread that, every ``_SAMPLE_SECONDS``, reads the stack
    of each thread inside a profiled call and charges its functions the CPU time that thread
    used since the last look.

    ``cProfile`` cannot serve concurrent operations on Python 3.12 and later: it is built on
    ``sys.monitoring``, one profiler per process, and a second ``enable`` raises "Another
    profiling tool is already active". Sampling needs no hook in the profiled threads, so any
    number of operations are profiled at once, each on its own thread's CPU time (waits for
    the API or for a lock cost nothing, as with ``cProfile`` on ``time.thread_time``). Counts
    are samples, not calls; times are the sum of the CPU time seen, in pstats' format.
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        # thread id -> (the frame the profiled call was made from, its clock, CPU time so far)
        self._active: dict[int, tuple[FrameType, Callable[[], float], float]] = {}
        self._stats: dict[_Key, list[Any]] = {}
        self._thread: threading.Thread | None = None

    def enter(self, ident: int, boundary: FrameType) -> None:
        clock = _thread_clock(ident)
        with self._lock:
            self._active[ident] = (boundary, clock, clock())
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="gpu-training-profiler", daemon=True
                )
                self._thread.start()
            self._lock.notify()

    def leave(self, ident: int, target: str) -> None:
        with self._lock:
            self._active.pop(ident, None)
            self._dump(target)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._active:
                    self._lock.wait()
            time.sleep(_SAMPLE_SECONDS)
            self._sample()

    def _sample(self) -> None:
        frames = sys._current_frames()
        with self._lock:
            for ident, (boundary, clock, before) in list(self._active.items()):
                now = clock()
                self._active[ident] = (boundary, clock, now)
                frame = frames.get(ident)
                if frame is not None and now > before:
                    self._charge(frame, boundary, now - before)

    def _charge(self, frame: FrameType, boundary: FrameType, seconds: float) -> None:
        stack: list[_Key] = []
        current: FrameType | None = frame
        while current is not None and current is not boundary:
            stack.append(_key(current.f_code))
            current = current.f_back
        if current is None or not stack:
            return  # not inside the profiled call (yet, or any more)
        stack.reverse()  # outermost first
        seen: set[_Key] = set()
        for depth, func in enumerate(stack):
            entry = self._stats.setdefault(func, [0, 0, 0.0, 0.0, {}])
            leaf = depth == len(stack) - 1
            if func not in seen:  # a recursive function counts its time once
                seen.add(func)
                entry[0] += 1
                entry[1] += 1
                entry[3] += seconds
            if leaf:
                entry[2] += seconds
            if depth:
                caller = stack[depth - 1]
                old = entry[4].get(caller, (0, 0, 0.0, 0.0))
                entry[4][caller] = (
                    old[0] + 1,
                    old[1] + 1,
                    old[2] + (seconds if leaf else 0.0),
                    old[3] + seconds,
                )

    def _dump(self, target: str) -> None:
        """Write the profile so far to ``target`` (pstats' format: ``marshal`` of its table)."""
        table = {
            func: (cc, nc, tt, ct, dict(callers))
            for func, (cc, nc, tt, ct, callers) in self._stats.items()
        }
        temporary = f"{target}.{os.getpid()}.tmp"
        with open(temporary, "wb") as out:
            marshal.dump(table, out)
        os.replace(temporary, target)


_sampler = _Sampler()


def profiled(call: Callable[[], T]) -> T:
    """``call()``, profiled into ``$GPU_TRAINING_PROVIDER_PROFILE`` when that is set.

    Every operation of the process adds to one profile (``_Sampler``), written after each.
    """
    target = os.environ.get(PROFILE_ENV)
    if not target:
        return call()
    ident = threading.get_ident()
    _sampler.enter(ident, sys._getframe())
    try:
        return call()
    finally:
        _sampler.leave(ident, target)
