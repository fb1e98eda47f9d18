"""Validation speed on one core, and what the validation path imports.

Run: .venv/bin/python bench/validate.py
Prints validations/s for a 4-pool job (goal >= 20,000/s), parse+validate/s, and the
import time of the validation path in a fresh interpreter (goal: no
google.cloud.aiplatform import on that path).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from components import JobSpec, load_catalog, validate  # noqa: E402

FOUR_POOLS = {
    "displayName": "bench-job",
    "labels": {"team": "ml", "cost-center": "1234"},
    "workerPoolSpecs": [
        {
            "machineSpec": {
                "machineType": machine,
                "acceleratorType": gpu,
                "acceleratorCount": count,
            }
            if gpu
            else {"machineType": machine},
            "replicaCount": replicas,
            "pythonPackageSpec": {
                "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-15.py310:latest",
                "packageUris": ["gs://bucket/trainer-0.1.tar.gz"],
                "pythonModule": "trainer.task",
                "env": [{"name": "EPOCHS", "value": "10"}],
            },
        }
        for machine, gpu, count, replicas in (
            ("n1-highcpu-16", "NVIDIA_TESLA_T4", 4, 1),
            ("n1-highcpu-16", "NVIDIA_TESLA_T4", 4, 9),
            ("n1-highmem-8", None, 0, 3),
            ("n1-standard-8", "NVIDIA_TESLA_T4", 1, 1),
        )
    ],
    "scheduling": {"timeout": "86400s", "strategy": "SPOT"},
}


def rate(fn: object, seconds: float = 2.0) -> float:
    assert callable(fn)
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(500):
            fn()
        count += 500
    return count / elapsed


def import_probe() -> dict[str, object]:
    code = (
        "import time, sys, json; t = time.perf_counter()\n"
        "from components import validate, load_catalog, JobSpec\n"
        "load_catalog(); t2 = time.perf_counter()\n"
        "print(json.dumps({'import_s': t2 - t, 'aiplatform': any(m.startswith('google.cloud.aiplatform') for m in sys.modules),"
        " 'pulumi': any(m.startswith('pulumi') for m in sys.modules)}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    catalog = load_catalog()
    spec = JobSpec.parse(FOUR_POOLS)
    assert validate(spec, catalog=catalog, region="us-central1") == []
    with_region = rate(lambda: validate(spec, catalog=catalog, region="us-central1"))
    without_region = rate(lambda: validate(spec, catalog=catalog))
    parse_and_validate = rate(
        lambda: validate(JobSpec.parse(FOUR_POOLS), catalog=catalog, region="us-central1")
    )
    probe = import_probe()
    print(f"validate, 4-pool job, with region checks : {with_region:>10,.0f} /s (goal >= 20,000/s)")
    print(f"validate, 4-pool job, no region          : {without_region:>10,.0f} /s")
    print(f"parse + validate, 4-pool job             : {parse_and_validate:>10,.0f} /s")
    print(f"validation path import + catalog load    : {probe['import_s']:.3f} s")
    print(f"google.cloud.aiplatform imported on path : {probe['aiplatform']}")
    print(f"pulumi imported on path                  : {probe['pulumi']}")


if __name__ == "__main__":
    main()
