"""The engine's Cancel, and SIGINT to the host, stop a create that waits for its job: in
``python -m pulumi.dynamic`` as it ships, driven over gRPC as the engine drives it."""

from __future__ import annotations

import signal
import time
from typing import Any

import grpc  # type: ignore[import-untyped]
from google.cloud.aiplatform_v1 import JobState
from google.protobuf import empty_pb2
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2

from components._provider import TrainingJobProvider
from emulator.testing import EmulatorProcess
from tests.provider.conftest import (
    job_inputs,
    jobs_with_identity,
    provider_host_process,
    struct_of,
)

URN = "urn:pulumi:test::gpu-training::pulumi-python:dynamic/vertex:TrainingJob::waiting"


def _serialized_provider() -> str:
    from pulumi.dynamic.dynamic import serialize_provider

    return str(serialize_provider(TrainingJobProvider()))


def _waiting_create(stub: Any, sim: EmulatorProcess) -> tuple[Any, str]:
    """Configure the host, and start a create that waits for a job that never ends."""
    stub.Configure(
        provider_pb2.ConfigureRequest(
            args=struct_of({"training:endpoint": sim.endpoint, "training:cancelTimeout": "20"})
        )
    )
    inputs = job_inputs(labels={"emulator-outcome": "hang"}, wait_for="succeeded", wait_timeout=600)
    inputs = {k: v for k, v in inputs.items() if v is not None}
    inputs["__provider"] = _serialized_provider()
    checked = stub.Check(
        provider_pb2.CheckRequest(urn=URN, olds=struct_of({}), news=struct_of(inputs))
    )
    assert list(checked.failures) == []
    news = dict(rpc.deserialize_properties(checked.inputs))
    future = stub.Create.future(provider_pb2.CreateRequest(urn=URN, properties=struct_of(news)))
    deadline = time.monotonic() + 30
    while not jobs_with_identity(sim, inputs["identity"]):
        assert time.monotonic() < deadline, "the job was not submitted"
        time.sleep(0.05)
    return future, inputs["identity"]


def _running(sim: EmulatorProcess, identity: str) -> Any:
    [job] = jobs_with_identity(sim, identity)
    return job


def test_the_engines_cancel_ends_the_wait_and_the_job_runs_on(sim: EmulatorProcess) -> None:
    with provider_host_process() as (stub, _):
        future, identity = _waiting_create(stub, sim)
        time.sleep(0.5)  # inside the wait
        started = time.monotonic()
        stub.Cancel(empty_pb2.Empty())
        try:
            future.result(timeout=10)
            raise AssertionError("the create returned although the wait was cancelled")
        except grpc.RpcError as exc:
            details = exc.details()
        assert time.monotonic() - started < 5
        assert "stopped waiting for it: pulumi was cancelled" in details
        assert "left running" in details
        job = _running(sim, identity)
        assert job.state in (JobState.JOB_STATE_RUNNING, JobState.JOB_STATE_PENDING)
        sim.client().cancel_custom_job(name=job.name)


def test_sigint_to_the_host_ends_it_within_seconds_and_the_job_runs_on(
    sim: EmulatorProcess,
) -> None:
    with provider_host_process() as (stub, proc):
        future, identity = _waiting_create(stub, sim)
        time.sleep(0.5)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=15)
        assert time.monotonic() - started < 5, "the host waited for the job"
        future.cancel()
        job = _running(sim, identity)
        assert job.state in (JobState.JOB_STATE_RUNNING, JobState.JOB_STATE_PENDING)
        sim.client().cancel_custom_job(name=job.name)
