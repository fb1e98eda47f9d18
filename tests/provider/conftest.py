"""Fixtures: a simulate-mode emulator per module and a provider configured for it."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
from google.protobuf import struct_pb2
from pulumi.dynamic import ConfigureRequest
from pulumi.dynamic.config import Config
from pulumi.runtime.proto import provider_pb2_grpc

from components._provider import JobProvider, TrainingJobProvider
from components.lifecycle._adoption import identity_label, instance_identity, instance_of
from components.lifecycle._wire import TRIAL_JOB_SPEC, env_path
from components.training_job import prepare_spec
from components.tuning_job import prepare_tuning_spec
from emulator.testing import EmulatorProcess, running_emulator

REPO = Path(__file__).resolve().parents[2]
LOCAL_SPEC = REPO / "stacks" / "jobs" / "local-trainer.yaml"
LOCAL_TUNING_SPEC = REPO / "stacks" / "jobs" / "local-tuning.yaml"
SECRET = "s3cr3t-token-value-42"

# Jobs finish within about a second in simulate mode: tests stay fast, no process runs.
SIMULATE_ARGS = (
    "--mode",
    "simulate",
    "--simulate-queued-seconds",
    "0.05",
    "--simulate-pending-seconds",
    "0.05",
    "--simulate-run-seconds",
    "0.6",
    "--simulate-cancel-seconds",
    "0.1",
)


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorProcess]:
    with running_emulator(*SIMULATE_ARGS) as server:
        yield server


@pytest.fixture
def sim(emu: EmulatorProcess) -> Iterator[EmulatorProcess]:
    emu.clear_faults()
    yield emu
    emu.clear_faults()


def configured(
    endpoint: str, *, provider_class: type[JobProvider] = TrainingJobProvider, **extra: Any
) -> Any:
    provider = provider_class()
    config = {"training:endpoint": endpoint, **{f"training:{k}": v for k, v in extra.items()}}
    provider.configure(ConfigureRequest(Config(config, "gpu-training")))
    return provider


@pytest.fixture
def provider(sim: EmulatorProcess) -> TrainingJobProvider:
    configured_provider: TrainingJobProvider = configured(
        sim.endpoint, cancelTimeout="20", retryDeadline="30"
    )
    return configured_provider


RUN_KEY = "0f" * 32
"""The stack's run key, as the program passes it (``components._run_key``)."""


def job_inputs(
    *,
    labels: dict[str, str] | None = None,
    wait_for: str = "submitted",
    wait_timeout: float | str | None = None,
    triggers: list[Any] | None = None,
    name: str | None = None,
    env: dict[str, str] | None = None,
    tuning: bool = False,
    **knobs: Any,
) -> dict[str, Any]:
    """Checked-looking inputs for the local trainer spec (``tuning``: the local tuning job's),
    with a fresh identity per call."""
    prepared = prepare_tuning_spec(LOCAL_TUNING_SPEC) if tuning else prepare_spec(LOCAL_SPEC)
    spec = prepared.spec
    env_values = dict(prepared.env_values)
    if labels:
        spec = {**spec, "labels": labels}
    if env is not None:
        under = TRIAL_JOB_SPEC if tuning else None
        package = (spec[under] if under else spec)["workerPoolSpecs"][0]["pythonPackageSpec"]
        package["env"] = [{"name": k} for k in env]
        env_values = {
            env_path(0, "pythonPackageSpec", i, under=under): v for i, v in enumerate(env.values())
        }
    inputs: dict[str, Any] = {
        "spec": spec,
        "env_values": env_values,
        "project": "local-training",
        "region": "us-central1",
        "triggers": triggers,
        "wait_for": wait_for,
        "wait_timeout": wait_timeout,
        "exclusive_gpus": False,
        "keep_record_on_delete": False,
        "identity": identity_label("gpu-training", "test", name or uuid.uuid4().hex),
        "run_key": RUN_KEY,
        "__provider": "opaque",
    }
    inputs.update(knobs)
    return inputs


def job_label(identity: str, key: str | None = RUN_KEY) -> str:
    """The ``pulumi_resource`` label of the jobs a create of ``identity`` submits with the run
    key ``key`` (None: a state without one, labelled with ``identity`` itself)."""
    return instance_identity(identity, instance_of(key) if key else None)


def jobs_with_identity(emu: EmulatorProcess, identity: str, key: str | None = RUN_KEY) -> list[Any]:
    """The jobs of the resource ``identity`` in the stack instance of the run key ``key``."""
    client = emu.client()
    request = {
        "parent": "projects/local-training/locations/us-central1",
        "filter": f'labels.pulumi_resource="{job_label(identity, key)}"',
    }
    return list(client.list_custom_jobs(request=request))


def counted_calls(monkeypatch: pytest.MonkeyPatch, client: Any, method: str) -> list[Any]:
    """The requests of ``client.method`` (a Vertex client's call) from now on."""
    calls: list[Any] = []
    real = getattr(client, method)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs.get("request") or kwargs.get("name") or kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(client, method, counted)
    return calls


@contextmanager
def provider_host() -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    """``python -m pulumi.dynamic``, the host the engine starts for dynamic providers, as it
    ships; a gRPC stub to it, and the process ended afterwards."""
    with provider_host_process() as (stub, _):
        yield stub


@contextmanager
def provider_host_process() -> Iterator[
    tuple[provider_pb2_grpc.ResourceProviderStub, subprocess.Popen[bytes]]
]:
    """``provider_host``, with the host's process (to signal it)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pulumi.dynamic"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # unread: a pipe could fill up and block the host
        stdin=subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().decode().strip())
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=30)
        yield provider_pb2_grpc.ResourceProviderStub(channel), proc
        channel.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def struct_of(props: dict[str, Any]) -> struct_pb2.Struct:
    """``props`` as the protobuf Struct the host's calls take."""
    struct = struct_pb2.Struct()
    struct.update(props)
    return struct
