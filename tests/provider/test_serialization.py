"""The provider through Pulumi's real serialization path and its real gRPC provider host."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import dill
import grpc  # type: ignore[import-untyped]
import pytest
from google.protobuf import struct_pb2
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

from components._provider import TrainingJobProvider
from components.lifecycle._wire import encode_spec
from emulator.testing import EmulatorProcess
from tests.provider.conftest import (
    REPO,
    SECRET,
    configured,
    job_inputs,
    jobs_with_identity,
    provider_host,
    struct_of,
)

URN = "urn:pulumi:test::gpu-training::pulumi-python:dynamic/vertex:TrainingJob::train"
MAX_PROVIDER_BYTES = 200


def test_serialized_provider_is_tiny_deterministic_and_by_reference():
    blob = serialize_provider(TrainingJobProvider())
    assert len(blob) <= MAX_PROVIDER_BYTES, len(blob)
    raw = base64.b64decode(blob)
    assert b"components._provider" in raw and b"TrainingJobProvider" in raw
    assert b"def " not in raw and b"co_code" not in raw  # no code, only a reference
    # A configured provider (endpoint, policies) pickles to the same bytes: nothing on self.
    assert serialize_provider(configured("http://127.0.0.1:8642")) == blob
    assert serialize_provider(TrainingJobProvider()) == blob
    assert TrainingJobProvider.serialize_as_secret_always is False


def test_dill_loads_in_a_fresh_process():
    blob = serialize_provider(TrainingJobProvider())
    script = textwrap.dedent(
        """
        import base64, sys, dill
        provider = dill.loads(base64.b64decode(sys.argv[1]))
        print(type(provider).__module__, type(provider).__qualname__)
        result = provider.check({}, {"spec": {"workerPoolSpecs": []}, "project": "p-123456",
                                     "region": "us-central1"})
        print([f.property for f in result.failures])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, blob], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "components._provider TrainingJobProvider"
    assert lines[1] == "['workerPoolSpecs']"
    assert isinstance(dill.loads(base64.b64decode(blob)), TrainingJobProvider)


@pytest.fixture(scope="module")
def dynamic_host() -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    """``python -m pulumi.dynamic``, the host the engine starts for dynamic providers."""
    with provider_host() as stub:
        yield stub


def _props(struct: struct_pb2.Struct) -> dict[str, Any]:
    return dict(rpc.deserialize_properties(struct))


def test_grpc_check_diff_create_read_delete(
    dynamic_host: provider_pb2_grpc.ResourceProviderStub, sim: EmulatorProcess
) -> None:
    stub = dynamic_host
    blob = serialize_provider(TrainingJobProvider())
    stub.Configure(
        provider_pb2.ConfigureRequest(
            args=struct_of({"training:endpoint": sim.endpoint, "training:cancelTimeout": "20"})
        )
    )
    inputs = job_inputs(env={"API_TOKEN": SECRET}, wait_for="succeeded", wait_timeout=60)
    inputs["__provider"] = blob
    inputs = {k: v for k, v in inputs.items() if v is not None}

    # Check at preview: an unknown package URI is tolerated, a bad region is not.
    preview = {**inputs, "region": "me-central2"}
    preview["spec"] = {
        **inputs["spec"],
        "workerPoolSpecs": [
            {
                **inputs["spec"]["workerPoolSpecs"][0],
                "machineSpec": {
                    "machineType": "n1-standard-4",
                    "acceleratorType": "NVIDIA_TESLA_T4",
                    "acceleratorCount": 1,
                },
                "pythonPackageSpec": {
                    **inputs["spec"]["workerPoolSpecs"][0]["pythonPackageSpec"],
                    "packageUris": [rpc.UNKNOWN],
                    # The GPU build, for the T4 (a CPU build on it is a failure of its own).
                    "executorImageUri": (
                        "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-15.py310:latest"
                    ),
                },
            }
        ],
    }
    checked = stub.Check(
        provider_pb2.CheckRequest(urn=URN, olds=struct_of({}), news=struct_of(preview))
    )
    assert [
        (f.property, "NVIDIA_TESLA_T4 is not offered in me-central2" in f.reason)
        for f in checked.failures
    ] == [("workerPoolSpecs[0].machineSpec.acceleratorType", True)]

    inputs["spec"] = encode_spec(inputs["spec"])  # the wire form a program sends
    checked = stub.Check(
        provider_pb2.CheckRequest(urn=URN, olds=struct_of({}), news=struct_of(inputs))
    )
    assert list(checked.failures) == []
    news = _props(checked.inputs)
    assert news["__provider"] == blob
    assert json.loads(news["spec"])["workerPoolSpecs"][0]["replicaCount"] == 1

    created = stub.Create(provider_pb2.CreateRequest(urn=URN, properties=checked.inputs))
    outs = _props(created.properties)
    assert created.id == outs["status"]["job_name"]
    assert outs["status"]["state"] == "JOB_STATE_SUCCEEDED"
    assert outs["__provider"] == blob
    assert [j.name for j in jobs_with_identity(sim, inputs["identity"])] == [created.id]

    same = stub.Diff(
        provider_pb2.DiffRequest(
            id=created.id, urn=URN, olds=created.properties, news=checked.inputs
        )
    )
    assert same.changes == provider_pb2.DiffResponse.DIFF_NONE
    changed_inputs = {**news, "triggers": ["v2"], "exclusive_gpus": True}
    changed = stub.Diff(
        provider_pb2.DiffRequest(
            id=created.id, urn=URN, olds=created.properties, news=struct_of(changed_inputs)
        )
    )
    assert changed.changes == provider_pb2.DiffResponse.DIFF_SOME
    assert list(changed.replaces) == ["triggers"]
    assert changed.deleteBeforeReplace is True

    read = stub.Read(
        provider_pb2.ReadRequest(id=created.id, urn=URN, properties=created.properties)
    )
    assert read.id == created.id
    assert _props(read.properties)["status"]["state"] == "JOB_STATE_SUCCEEDED"

    # Asked to delete the record too (kept by default: issue 35).
    deleting = struct_of({**_props(created.properties), "delete_record_on_delete": True})
    stub.Delete(provider_pb2.DeleteRequest(id=created.id, urn=URN, properties=deleting))
    assert jobs_with_identity(sim, inputs["identity"]) == []
    gone = stub.Read(
        provider_pb2.ReadRequest(id=created.id, urn=URN, properties=created.properties)
    )
    assert gone.id == ""
    # Deleting again (a job already gone) succeeds.
    stub.Delete(provider_pb2.DeleteRequest(id=created.id, urn=URN, properties=created.properties))


def test_grpc_create_failure_names_the_job_and_hides_env_values(
    dynamic_host: provider_pb2_grpc.ResourceProviderStub, sim: EmulatorProcess
) -> None:
    stub = dynamic_host
    stub.Configure(
        provider_pb2.ConfigureRequest(
            args=struct_of({"training:endpoint": sim.endpoint, "training:cancelTimeout": "20"})
        )
    )
    inputs = job_inputs(
        env={"API_TOKEN": SECRET},
        labels={"emulator-outcome": "hang"},
        wait_for="succeeded",
        wait_timeout=1,
    )
    inputs["__provider"] = serialize_provider(TrainingJobProvider())
    inputs = {k: v for k, v in inputs.items() if v is not None}
    with pytest.raises(grpc.RpcError) as info:
        stub.Create(provider_pb2.CreateRequest(urn=URN, properties=struct_of(inputs)))
    details = info.value.details() or ""
    assert "was cancelled" in details
    assert SECRET not in details
    (job,) = jobs_with_identity(sim, inputs["identity"])
    assert job.state.name == "JOB_STATE_CANCELLED"


def _check_once(port: int) -> None:
    """One Check call, which makes the host load (unpickle) the provider's module."""
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    grpc.channel_ready_future(channel).result(timeout=30)
    inputs = {k: v for k, v in job_inputs().items() if v is not None}
    inputs["__provider"] = serialize_provider(TrainingJobProvider())
    provider_pb2_grpc.ResourceProviderStub(channel).Check(
        provider_pb2.CheckRequest(urn=URN, olds=struct_of({}), news=struct_of(inputs))
    )
    channel.close()


@pytest.mark.parametrize("engine_gone", [True, False])
def test_provider_host_ends_when_the_engine_that_started_it_is_gone(engine_gone):
    """The engine gives the host a pipe as stdin; its end of file means the engine is gone."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pulumi.dynamic", "127.0.0.1:1"],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        _check_once(int(proc.stdout.readline().decode().strip()))
        if engine_gone:
            proc.stdin.close()  # what the kernel does when the engine dies
            assert proc.wait(timeout=10) == 0
        else:
            with pytest.raises(subprocess.TimeoutExpired):
                proc.wait(timeout=2)  # an engine that is alive keeps its provider
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
