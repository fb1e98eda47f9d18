"""Throughput and latency of the local Vertex AI emulator, through the real REST client.

Run: .venv/bin/python bench/emulator.py [--jobs 500]
Starts its own emulator in simulate mode (no processes), creates N jobs one after another, gets
each of them, lists them all in pages of 100, and prints calls/s and p50/p99 latency per call.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

# The client library warns about Python 3.11's end of life on import; not news for a bench.
warnings.filterwarnings("ignore", category=FutureWarning)
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from google.cloud.aiplatform_v1 import types as aip  # noqa: E402

from emulator.testing import running_emulator  # noqa: E402

PARENT = "projects/bench-project/locations/us-central1"


def job(i: int, run: str) -> aip.CustomJob:
    """A two-pool job with labels, like the ones the project submits."""
    pool = aip.WorkerPoolSpec(
        replica_count=1,
        machine_spec=aip.MachineSpec(
            machine_type="n1-standard-8",
            accelerator_type=aip.AcceleratorType.NVIDIA_TESLA_T4,
            accelerator_count=2,
        ),
        python_package_spec=aip.PythonPackageSpec(
            executor_image_uri="us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest",
            package_uris=["gs://bench-bucket/trainer-0.1.0.tar.gz"],
            python_module="trainer.task",
            args=["--epochs", "3"],
        ),
    )
    workers = aip.WorkerPoolSpec(
        replica_count=2,
        machine_spec=pool.machine_spec,
        python_package_spec=pool.python_package_spec,
    )
    return aip.CustomJob(
        display_name=f"bench-{i}",
        labels={"run": run, "index": str(i)},
        job_spec=aip.CustomJobSpec(worker_pool_specs=[pool, workers]),
    )


def report(name: str, samples: list[float], wall: float) -> None:
    ms = sorted(s * 1000 for s in samples)
    p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
    print(
        f"{name:<8} {len(ms):>5} calls  {len(ms) / wall:>8.1f}/s  "
        f"p50 {statistics.median(ms):6.2f} ms  p99 {p99:6.2f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=500)
    args = parser.parse_args()
    run = f"r{int(time.time())}"
    with running_emulator(
        "--mode",
        "simulate",
        "--simulate-run-seconds",
        "1",
        "--log-level",
        "warning",
    ) as emu:
        client = emu.client()
        client.list_custom_jobs(request={"parent": PARENT, "page_size": 1})  # warm the connection
        creates: list[float] = []
        names: list[str] = []
        started = time.perf_counter()
        for i in range(args.jobs):
            spec = job(i, run)
            t0 = time.perf_counter()
            names.append(client.create_custom_job(parent=PARENT, custom_job=spec).name)
            creates.append(time.perf_counter() - t0)
        create_wall = time.perf_counter() - started

        gets: list[float] = []
        started = time.perf_counter()
        for name in names:
            t0 = time.perf_counter()
            client.get_custom_job(name=name)
            gets.append(time.perf_counter() - t0)
        get_wall = time.perf_counter() - started

        lists: list[float] = []
        listed = 0
        started = time.perf_counter()
        pages = iter(
            client.list_custom_jobs(
                request={"parent": PARENT, "filter": f"labels.run={run}", "page_size": 100}
            ).pages
        )
        while True:
            t0 = time.perf_counter()
            page = next(pages, None)
            if page is None:
                break
            lists.append(time.perf_counter() - t0)
            listed += len(page.custom_jobs)
        list_wall = time.perf_counter() - started
    assert listed == args.jobs, f"listed {listed} of {args.jobs} jobs"
    print(f"emulator bench: {args.jobs} jobs, simulate mode, sequential calls, REST client")
    report("create", creates, create_wall)
    report("get", gets, get_wall)
    report("list/100", lists, list_wall)
    return 0


if __name__ == "__main__":
    sys.exit(main())
