"""Runs CLI cases in a process of its own, under a memory limit, one JSON line per case.

    python -m tests.spec.hostile_driver CASES.json LIMIT_BYTES

Each case is ``{"id": ..., "argv": [...], "env": {...}}``; the driver calls
``components.cli._cli.main`` in-process (so a case costs milliseconds, not a Python start-up) and
prints ``{"start": id}`` before and a result line after it. A crash of the interpreter (a
segfault in a C parser) leaves a ``start`` line without its result, which names the case.
"""

from __future__ import annotations

import faulthandler
import io
import json
import os
import resource
import sys
import time
import traceback
from typing import Any


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    from components.cli._cli import main as cli

    saved = dict(os.environ)
    os.environ.update(case.get("env", {}))
    out, err = io.StringIO(), io.StringIO()
    started, cpu_started = time.perf_counter(), time.process_time()
    code: int | None = None
    failure = None
    try:
        code = cli(case["argv"], out, err)
    except BaseException:
        failure = traceback.format_exc(limit=8)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return {
        "id": case["id"],
        "code": code,
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time() - cpu_started,
        "exception": failure,
        "stdout": out.getvalue()[-2000:],
        "stderr": err.getvalue()[-2000:],
    }


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as handle:
        cases = json.load(handle)
    limit = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    faulthandler.enable()
    for case in cases:
        print(json.dumps({"start": case["id"]}), flush=True)
        print(json.dumps(run_case(case)), flush=True)
    print(json.dumps({"peak_rss_bytes": peak_rss_bytes()}), flush=True)
    return 0


def peak_rss_bytes() -> int:
    """This process's own peak resident set: ``VmHWM`` of its memory map. Linux's ``ru_maxrss``
    also counts the map it was started from (exec keeps the fork's high-water mark), so a driver
    spawned by a large pytest process would report pytest's size, not its own."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


if __name__ == "__main__":
    sys.exit(main())
