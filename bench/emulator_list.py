"""Filtered list latency against the number of stored jobs, and concurrent throughput.

Run: .venv/bin/python bench/emulator_list.py [--sizes 10,100,1000,10000] [--threads 1,8,32]

Part 1, list latency: a simulate-mode emulator serves one state dir while this process stores
jobs into the same database directly through :class:`emulator.store.Store` (10,000 creates
through the REST API would take minutes; the emulator reads what is in the database, however it
got there). At each size it times, over raw keep-alive HTTP (server time plus loopback, no client
library), the provider's adoption look-up (``labels.<identity>="..." AND (labels.<run>="..." OR
labels.<run>="...")``, the filter every create sends first), ``state=JOB_STATE_RUNNING`` (a fixed
five RUNNING jobs whatever the size), and the first page of ``state=JOB_STATE_SUCCEEDED``
(pageSize 5, which every size fills; nearly every job matches), and prints p50/p99 and the
ratio of the largest size to the smallest. Before the list index (a scan of every stored job
per list), the adoption look-up took 2.9 ms at 10 jobs and 1.9 s at 10,000.

Part 2, concurrency: a fresh simulate-mode emulator per thread count; each client thread loops
create, get, list (its adoption filter) and cancel over its own keep-alive connection for
``--seconds``; it prints calls/s and every unexpected answer (a 5xx such as "database is locked"
would show here).
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import threading
import time
import uuid
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

# The client library warns about Python 3.11's end of life on import; not news for a bench.
warnings.filterwarnings("ignore", category=FutureWarning)
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from google.cloud.aiplatform_v1 import types as aip  # noqa: E402

from bench.emulator import job as bench_job  # noqa: E402
from components.lifecycle._wire import IDENTITY_LABEL, RUN_LABEL  # noqa: E402
from emulator import protos  # noqa: E402
from emulator.store import Store  # noqa: E402
from emulator.testing import EmulatorProcess, running_emulator  # noqa: E402

PROJECT = "bench-project"
LOCATION = "us-central1"
PARENT = f"projects/{PROJECT}/locations/{LOCATION}"
JOBS_PATH = f"/v1/{PARENT}/customJobs"
RUNNING_JOBS = 5
SIMULATE = ("--mode", "simulate", "--log-level", "warning")


def adoption_filter(identity: str, runs: list[str]) -> str:
    """The shape of the provider's look-up before every create (components/vertex/api.py)."""
    any_run = " OR ".join(f'labels.{RUN_LABEL}="{run}"' for run in runs)
    return f'labels.{IDENTITY_LABEL}="{identity}" AND ({any_run})'


def hexid() -> str:
    return uuid.uuid4().hex[:16]


class Http:
    """One keep-alive connection to the emulator; returns (status, decoded JSON)."""

    def __init__(self, emu: EmulatorProcess) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", emu.port, timeout=60)

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        self.conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        resp = self.conn.getresponse()
        payload = resp.read()
        return resp.status, json.loads(payload) if payload else None

    def close(self) -> None:
        self.conn.close()


def percentiles(samples: list[float]) -> tuple[float, float]:
    """(p50, p99) in milliseconds."""
    ms = sorted(s * 1000 for s in samples)
    return statistics.median(ms), ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]


# -- part 1: list latency against the number of stored jobs --------------------------------------


def stored_job(i: int, identity: str, run: str, state: int) -> Any:
    """A raw CustomJob as the emulator stores it after a create, in ``state``."""
    job = aip.CustomJob.pb(bench_job(i, run))
    job.labels[IDENTITY_LABEL] = identity
    job.labels[RUN_LABEL] = run
    now = time.time()
    protos.now_ts(job.create_time, now)
    protos.set_state(job, state, at=now)
    return job


def fill(store: Store, count: int, keys: list[tuple[str, str]]) -> None:
    """Store jobs until ``keys`` (identity, run) has ``count`` entries; the first few RUNNING."""
    while len(keys) < count:
        i = len(keys)
        identity, run = hexid(), hexid()
        running = i < RUNNING_JOBS
        state = (
            protos.JobState.JOB_STATE_RUNNING if running else protos.JobState.JOB_STATE_SUCCEEDED
        )
        job_id = store.new_job_id()
        job = stored_job(i, identity, run, state)
        job.name = f"{PARENT}/customJobs/{job_id}"
        store.insert_job(job_id, PARENT, job)
        keys.append((identity, run))


def time_lists(http_: Http, paths: Callable[[int], str], calls: int, budget: float) -> list[float]:
    """Latency of up to ``calls`` GETs of ``paths(i)``, stopping after ``budget`` seconds."""
    samples: list[float] = []
    started = time.perf_counter()
    for i in range(calls):
        path = paths(i)
        t0 = time.perf_counter()
        status, payload = http_.call("GET", path)
        samples.append(time.perf_counter() - t0)
        if status != 200:
            raise RuntimeError(f"GET {path}: HTTP {status}: {payload}")
        if time.perf_counter() - started > budget:
            break
    return samples


def list_latency(sizes: list[int], calls: int, budget: float) -> None:
    print(
        f"list latency vs stored jobs (jobs stored directly through Store; raw HTTP GET; "
        f"up to {calls} calls per row)"
    )
    print(f"{'jobs':>6}  {'filter':<28} {'calls':>5}  {'p50 ms':>8}  {'p99 ms':>8}")
    p50s: dict[str, dict[int, float]] = {}
    with running_emulator(*SIMULATE) as emu:
        store = Store(emu.state_dir)
        http_ = Http(emu)
        keys: list[tuple[str, str]] = []
        try:
            for size in sizes:
                fill(store, size, keys)

                def adoption(i: int, size: int = size) -> str:
                    identity, run = keys[(i * 7919) % size]
                    text = adoption_filter(identity, [hexid(), run])
                    return f"{JOBS_PATH}?filter={quote(text)}&pageSize=100"

                cases: dict[str, Callable[[int], str]] = {
                    "adoption look-up": adoption,
                    "state=RUNNING": lambda i: (
                        f"{JOBS_PATH}?filter={quote('state=JOB_STATE_RUNNING')}&pageSize=100"
                    ),
                    "state=SUCCEEDED, page of 5": lambda i: (
                        f"{JOBS_PATH}?filter={quote('state=JOB_STATE_SUCCEEDED')}&pageSize=5"
                    ),
                }
                for name, paths in cases.items():
                    time_lists(http_, paths, 3, budget)  # warm up
                    samples = time_lists(http_, paths, calls, budget)
                    p50, p99 = percentiles(samples)
                    p50s.setdefault(name, {})[size] = p50
                    print(f"{size:>6}  {name:<28} {len(samples):>5}  {p50:8.2f}  {p99:8.2f}")
        finally:
            http_.close()
            store.close()
    low, high = min(sizes), max(sizes)
    for name, by_size in p50s.items():
        print(f"ratio p50 {high} / {low} jobs, {name}: {by_size[high] / by_size[low]:.2f}")


# -- part 2: concurrent clients ---------------------------------------------------------------------


def client_loop(
    emu: EmulatorProcess, stop: threading.Event, counts: Counter[str], lock: threading.Lock
) -> None:
    """create, get, list (adoption look-up), cancel, until ``stop``; counts calls and surprises."""
    http_ = Http(emu)
    mine: Counter[str] = Counter()
    body = json.loads(aip.CustomJob.to_json(bench_job(0, "x")))
    try:
        while not stop.is_set():
            identity, run = hexid(), hexid()
            body["labels"] = {IDENTITY_LABEL: identity, RUN_LABEL: run}
            text = adoption_filter(identity, [run])
            status, _ = http_.call("GET", f"{JOBS_PATH}?filter={quote(text)}&pageSize=100")
            mine["list" if status == 200 else f"list {status}"] += 1
            status, created = http_.call("POST", JOBS_PATH, body)
            mine["create" if status == 200 else f"create {status}"] += 1
            if status != 200:
                continue
            name = created["name"]
            status, _ = http_.call("GET", f"/v1/{name}")
            mine["get" if status == 200 else f"get {status}"] += 1
            status, _ = http_.call("POST", f"/v1/{name}:cancel", {})
            mine["cancel" if status == 200 else f"cancel {status}"] += 1
    finally:
        http_.close()
        with lock:
            counts.update(mine)


def throughput(thread_counts: list[int], seconds: float) -> None:
    print(
        f"\nconcurrent clients: create + get + list + cancel per loop, raw HTTP, "
        f"{seconds:g} s per row, a fresh simulate-mode emulator per row"
    )
    print(f"{'threads':>7}  {'calls':>6}  {'calls/s':>8}  {'jobs stored':>11}  unexpected")
    for threads in thread_counts:
        with running_emulator(*SIMULATE, "--simulate-run-seconds", "30") as emu:
            stop = threading.Event()
            counts: Counter[str] = Counter()
            lock = threading.Lock()
            workers = [
                threading.Thread(target=client_loop, args=(emu, stop, counts, lock), daemon=True)
                for _ in range(threads)
            ]
            started = time.perf_counter()
            for w in workers:
                w.start()
            time.sleep(seconds)
            stop.set()
            for w in workers:
                w.join(timeout=120)
            wall = time.perf_counter() - started
        ok = {"list", "create", "get", "cancel"}
        calls = sum(counts.values())
        surprises = {k: v for k, v in counts.items() if k not in ok}
        print(
            f"{threads:>7}  {calls:>6}  {calls / wall:>8.1f}  {counts['create']:>11}  "
            f"{surprises or 'none'}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10,100,1000,10000", help="stored jobs, ascending")
    parser.add_argument("--calls", type=int, default=50, help="list calls per size and filter")
    parser.add_argument(
        "--budget", type=float, default=10.0, help="seconds at most per size and filter"
    )
    parser.add_argument("--threads", default="1,8,32", help="client thread counts")
    parser.add_argument("--seconds", type=float, default=5.0, help="per thread count")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(",") if s)
    threads = [int(t) for t in args.threads.split(",") if t]
    if sizes:
        list_latency(sizes, args.calls, args.budget)
    if threads:
        throughput(threads, args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
