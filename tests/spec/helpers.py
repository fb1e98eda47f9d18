"""Small builders for job specs used across the spec tests."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any, TypeVar

from components import JobSpec

_IMAGES = {
    "cpu": "tf-cpu.2-15.py310:latest",
    "gpu": "tf-gpu.2-15.py310:latest",
    "tpu": "tf-tpu.2-15.cp310:latest",
}


def _kind(accelerator: str | None) -> str:
    if not accelerator:
        return "cpu"
    return "tpu" if accelerator.upper().startswith(("TPU", "CT")) else "gpu"


def pool(
    machine: str = "n1-standard-8",
    accelerator: str | None = None,
    count: int = 0,
    replicas: int | None = 1,
    **extra: Any,
) -> dict[str, Any]:
    machine_spec: dict[str, Any] = {"machineType": machine}
    if accelerator is not None:
        machine_spec["acceleratorType"] = accelerator
    if count:
        machine_spec["acceleratorCount"] = count
    result: dict[str, Any] = {
        "machineSpec": machine_spec,
        "pythonPackageSpec": {
            # The image's build matches the pool's hardware (a GPU image on a CPU-only pool is
            # a warning of its own).
            "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/"
            + _IMAGES[_kind(accelerator)],
            "packageUris": ["gs://bucket/trainer-0.1.tar.gz"],
            "pythonModule": "trainer.task",
        },
    }
    if replicas is not None:
        result["replicaCount"] = replicas
    result.update(extra)
    return result


def spec(*pools: dict[str, Any], **fields: Any) -> JobSpec:
    document: dict[str, Any] = {
        "displayName": "test-job",
        "workerPoolSpecs": list(pools) or [pool()],
    }
    document.update(fields)
    return JobSpec.parse(document)


T = TypeVar("T")


def present(value: T | None) -> T:
    """``value``, which the test expects to be there (a pool's machine spec...)."""
    assert value is not None
    return value


def run_cli(*argv: str) -> tuple[int, str, str]:
    """The CLI's exit code, stdout and stderr for ``argv``."""
    from components.cli._cli import main

    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def loop_verdicts(path: Path) -> tuple[int, list[str], str, str, dict[str, bool]]:
    """``validate`` of a file whose loops make several jobs: its exit code, the name in each
    job's header, stdout and stderr, and ``--json``'s verdict by job name."""
    code, out, err = run_cli("validate", str(path))
    headers = re.findall(rf"^== {re.escape(str(path))}: (.*) ==$", err, re.MULTILINE)
    _, report, _ = run_cli("validate", "--json", str(path))
    jobs = json.loads(report)["jobs"]
    return code, headers, out, err, {job["name"]: job["valid"] for job in jobs}
