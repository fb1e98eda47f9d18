"""A whole-process CPU sampler for a provider plugin under a benchmark.

``python bench/sampling.py PREFIX (-m MODULE | SCRIPT) [ARGS...]`` runs the module or script as
``__main__`` with a daemon thread that, every 2 ms, reads the stack of every other thread and
charges the functions on it the CPU time that thread used since the last look (its own
``pthread_getcpuclockid`` clock): the leaf function's "self" time, and each distinct function
on the stack its "cumulative" time. Threads that wait (gRPC, an HTTP answer, a lock) cost
nothing. Every 0.2 s (a plugin is killed by the engine, never asked to exit) the figures go to
``PREFIX.<pid>.json`` as JSON: ``self`` and ``cum`` (``[["file:line:function", seconds],
...]``, largest first), ``threads`` (CPU seconds by thread name, worker numbers dropped),
``stacks`` (the 2000 costliest whole stacks, outermost first, ``;``-separated: a flame graph's
input), ``cpu`` (the process's CPU seconds) and ``wall``.

A thread's CPU since the last look is charged to where it is at the look: a thread that
computed, then blocked (in ``select``, a socket read) shows its work on the blocking call; the
cumulative figures of the callers above it are right.

``cProfile`` cannot do this: since Python 3.12 it profiles only the thread that enabled it
(``sys.monitoring``), and a plugin's work is spread over its event loop and worker threads.
Samples are 2 ms apart, so a function that runs less often than that is seen in proportion.
``report(paths)`` prints the figures of one or more runs, added up.
"""

from __future__ import annotations

import collections
import json
import os
import runpy
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from types import FrameType
from typing import Any

INTERVAL = 0.002
"""Seconds between two looks at the threads."""
DUMP_EVERY = 0.2
"""Seconds between two writes of the figures (the engine kills a plugin, which may live 1 s)."""


class _Sampler:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.self_time: collections.defaultdict[str, float] = collections.defaultdict(float)
        self.cumulative: collections.defaultdict[str, float] = collections.defaultdict(float)
        self.threads: collections.defaultdict[str, float] = collections.defaultdict(float)
        self.stacks: collections.defaultdict[str, float] = collections.defaultdict(float)
        self.clocks: dict[int, int] = {}
        self.last: dict[int, float] = {}
        self.started = time.monotonic()

    def run(self) -> None:
        me = threading.get_ident()
        next_dump = time.monotonic() + DUMP_EVERY
        while True:
            time.sleep(INTERVAL)
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident != me:
                    self._charge(ident, frame, names.get(ident, "?"))
            if time.monotonic() >= next_dump:
                next_dump = time.monotonic() + DUMP_EVERY
                self.dump()

    def _used(self, ident: int) -> float:
        """CPU seconds thread ``ident`` used since the last look (0 at the first)."""
        try:
            clock = self.clocks.get(ident)
            if clock is None:
                clock = self.clocks[ident] = time.pthread_getcpuclockid(ident)
            now = time.clock_gettime(clock)
        except OSError:  # the thread ended meanwhile
            return 0.0
        used = now - self.last.get(ident, now)
        self.last[ident] = now
        return used

    def _charge(self, ident: int, frame: FrameType, thread: str) -> None:
        used = self._used(ident)
        if used <= 0:
            return
        self.threads[thread.rstrip("0123456789").rstrip("_")] += used
        seen: set[str] = set()
        stack: list[str] = []
        current: FrameType | None = frame
        while current is not None:
            code = current.f_code
            key = f"{code.co_filename}:{code.co_firstlineno}:{code.co_name}"
            if not seen:
                self.self_time[key] += used
            if key not in seen:
                self.cumulative[key] += used
                seen.add(key)
            stack.append(f"{_short(code.co_filename)}:{code.co_name}")
            current = current.f_back
        self.stacks[";".join(reversed(stack))] += used

    def dump(self) -> None:
        figures = {
            "self": _largest(self.self_time, 400),
            "cum": _largest(self.cumulative, 400),
            "threads": _largest(self.threads, None),
            "stacks": _largest(self.stacks, 2000),
            "cpu": time.process_time(),
            "wall": time.monotonic() - self.started,
        }
        partial = self.out.with_name(self.out.name + ".part")
        partial.write_text(json.dumps(figures))
        partial.replace(self.out)


def _largest(figures: dict[str, float], count: int | None) -> list[tuple[str, float]]:
    return sorted(figures.items(), key=lambda item: -item[1])[:count]


def report(paths: Iterable[Path], top: int = 20) -> None:
    """Print the figures of the runs in ``paths`` added up: CPU by thread, the top functions."""
    totals: dict[str, collections.defaultdict[str, float]] = {
        "self": collections.defaultdict(float),
        "cum": collections.defaultdict(float),
        "threads": collections.defaultdict(float),
    }
    cpu = 0.0
    for path in paths:
        figures: dict[str, Any] = json.loads(path.read_text())
        cpu += figures["cpu"]
        for part, total in totals.items():
            for key, seconds in figures[part]:
                total[key] += seconds
    threads = ", ".join(f"{name} {sec:.2f}" for name, sec in _largest(totals["threads"], None))
    print(f"  process CPU {cpu:.2f} s; by thread: {threads}")
    for part, title in (("self", "self"), ("cum", "cumulative")):
        print(f"  top {top} functions, {title} CPU seconds:")
        for key, seconds in _largest(totals[part], top):
            print(f"    {seconds:8.3f}  {_short(key)}")


def _short(key: str) -> str:
    for marker in ("site-packages/", "/work/"):
        index = key.find(marker)
        if index >= 0:
            return key[index + len(marker) :]
    return key


def main(argv: list[str]) -> None:
    out, target, *rest = argv
    # The engine may start a plugin more than once in a command (its schema for the language
    # host, then the deployment's): one file each.
    sampler = _Sampler(Path(f"{out}.{os.getpid()}.json"))
    threading.Thread(target=sampler.run, name="sampler", daemon=True).start()
    if target == "-m":
        module, *args = rest
        sys.argv = [module, *args]
        sys.path[0] = os.getcwd()  # as ``python -m``: not this file's folder (bench/emulator.py)
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = [target, *rest]
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
