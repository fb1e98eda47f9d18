"""Shared fixtures: emulator servers (simulate and execute mode) and job builders."""

from __future__ import annotations

import http.client
import json
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from google.cloud.aiplatform_v1 import types as aip

from emulator.names import derived_number
from emulator.testing import EmulatorProcess, running_emulator

REPO = Path(__file__).resolve().parents[2]
TRAINER_DIR = REPO / "examples" / "trainer"
PROJECT = "test-project"
REGION = "us-central1"
PARENT = f"projects/{PROJECT}/locations/{REGION}"
# The parent of the jobs' names: the emulator names jobs by project number, as Vertex AI does.
NUMBERED_PARENT = f"projects/{derived_number(PROJECT)}/locations/{REGION}"
S = aip.JobState
TERMINAL = (S.JOB_STATE_SUCCEEDED, S.JOB_STATE_FAILED, S.JOB_STATE_CANCELLED)

SIMULATE_ARGS = (
    "--mode",
    "simulate",
    "--simulate-queued-seconds",
    "0.05",
    "--simulate-pending-seconds",
    "0.05",
    "--simulate-run-seconds",
    "0.3",
    "--simulate-cancel-seconds",
    "0.05",
    "--log-level",
    "warning",
)
EXECUTE_ARGS = ("--gpus", "ignore", "--grace-seconds", "1")


@pytest.fixture(scope="module")
def sim() -> Iterator[EmulatorProcess]:
    """A simulate-mode server shared by a test module (faults are reset after each use)."""
    with running_emulator(*SIMULATE_ARGS) as emu:
        yield emu


@pytest.fixture(scope="module")
def execute() -> Iterator[EmulatorProcess]:
    """An execute-mode server (GPU requests ignored) shared by a test module."""
    with running_emulator(*EXECUTE_ARGS) as emu:
        yield emu


def unique() -> str:
    """A label value that isolates one test's jobs on a shared server."""
    return "t" + uuid.uuid4().hex[:12]


def job_id(job: aip.CustomJob) -> str:
    """The numeric id at the end of a job's resource name."""
    return str(job.name.rsplit("/", 1)[1])


def trainer_pool(
    *,
    args: Sequence[str] = (),
    replicas: int = 1,
    package_uris: Sequence[str] = (str(TRAINER_DIR),),
    env: dict[str, str] | None = None,
    machine_type: str = "n1-standard-4",
    accelerator: tuple[int, int] | None = None,
) -> aip.WorkerPoolSpec:
    """A worker pool running the example trainer."""
    machine = aip.MachineSpec(machine_type=machine_type)
    if accelerator is not None:
        machine.accelerator_type = aip.AcceleratorType(accelerator[0])
        machine.accelerator_count = accelerator[1]
    return aip.WorkerPoolSpec(
        replica_count=replicas,
        machine_spec=machine,
        python_package_spec=aip.PythonPackageSpec(
            executor_image_uri="us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest",
            package_uris=list(package_uris),
            python_module="trainer.task",
            args=list(args),
            env=[aip.EnvVar(name=k, value=v) for k, v in (env or {}).items()],
        ),
    )


def make_job(
    display_name: str = "job",
    *,
    pools: Sequence[aip.WorkerPoolSpec] | None = None,
    labels: dict[str, str] | None = None,
    output: str | None = None,
    timeout_seconds: float | None = None,
    restart_on_worker_restart: bool = False,
) -> aip.CustomJob:
    """A CustomJob; by default one chief pool running a short trainer configuration."""
    spec = aip.CustomJobSpec(
        worker_pool_specs=list(pools or [trainer_pool(args=["--epochs", "1"])]),
    )
    if output is not None:
        spec.base_output_directory = aip.GcsDestination(output_uri_prefix=output)
    if timeout_seconds is not None or restart_on_worker_restart:
        spec.scheduling = aip.Scheduling(restart_job_on_worker_restart=restart_on_worker_restart)
        if timeout_seconds is not None:
            spec.scheduling.timeout = {
                "seconds": int(timeout_seconds),
                "nanos": int((timeout_seconds % 1) * 1e9),
            }
    return aip.CustomJob(display_name=display_name, labels=labels or {}, job_spec=spec)


def raw_http(
    emu: EmulatorProcess,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    *,
    timeout: float = 30.0,
) -> tuple[int, Any]:
    """One raw HTTP request; returns (status, decoded JSON body, or the raw bytes if not JSON).

    http.client sends whatever method, path and body it is given, which the REST client never
    would: how hostile requests reach the server.
    """
    conn = http.client.HTTPConnection("127.0.0.1", emu.port, timeout=timeout)
    try:
        sent = {"Content-Type": "application/json", **(headers or {})}
        conn.request(method, path, body=body, headers=sent)
        resp = conn.getresponse()
        data = resp.read()
    finally:
        conn.close()
    try:
        return resp.status, json.loads(data)
    except ValueError:
        return resp.status, data
