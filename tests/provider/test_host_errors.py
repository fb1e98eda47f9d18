"""A failed operation reaches the engine as its message, never a Python traceback: in
``python -m pulumi.dynamic`` as it ships, driven over gRPC as the engine drives it."""

from __future__ import annotations

import json
import sys
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2

from components._provider import TrainingJobProvider
from components.dynamic._host import MAX_ERROR_CHARS, error_message
from components.lifecycle._settings import SettingError
from components.lifecycle._wire import encode_spec
from components.vertex.api import JobOperationError
from emulator.testing import EmulatorProcess
from tests.provider.conftest import (
    SECRET,
    job_inputs,
    jobs_with_identity,
    provider_host,
    struct_of,
)

URN = "urn:pulumi:test::gpu-training::pulumi-python:dynamic/vertex:TrainingJob::train"


def _checked(stub: Any, endpoint: str, inputs: dict[str, Any]) -> dict[str, Any]:
    stub.Configure(
        provider_pb2.ConfigureRequest(
            args=struct_of({"training:endpoint": endpoint, "training:retryDeadline": "1"})
        )
    )
    inputs = {k: v for k, v in inputs.items() if v is not None}
    inputs["__provider"] = str(serialize_provider(TrainingJobProvider()))
    checked = stub.Check(
        provider_pb2.CheckRequest(urn=URN, olds=struct_of({}), news=struct_of(inputs))
    )
    assert list(checked.failures) == []
    return dict(rpc.deserialize_properties(checked.inputs))


def _details(call: Any, request: Any) -> str:
    with pytest.raises(grpc.RpcError) as raised:
        call(request, timeout=60)
    details = raised.value.details()
    assert isinstance(details, str)
    return details


def test_a_failed_create_gives_its_message_only(sim: EmulatorProcess) -> None:
    with provider_host() as stub:
        inputs = _checked(stub, sim.endpoint, job_inputs(env={"API_TOKEN": SECRET}))
        document = json.loads(inputs["spec"])
        document["workerPoolSpecs"][0]["pythonPackageSpec"]["packageUris"] = ["/etc/" + SECRET]
        inputs["spec"] = encode_spec(document)
        details = _details(
            stub.Create, provider_pb2.CreateRequest(urn=URN, properties=struct_of(inputs))
        )
    assert "Traceback" not in details and 'File "' not in details
    assert "no job was started" in details
    assert SECRET not in details
    assert jobs_with_identity(sim, inputs["identity"]) == []


@pytest.mark.parametrize("method", ["Read", "Delete"])
def test_a_failed_read_or_delete_gives_its_message_only(method: str) -> None:
    """As the first call of the process (a refresh, a destroy): the provider is configured
    inside it, after the host's handler was entered."""
    with provider_host() as stub:
        stub.Configure(
            provider_pb2.ConfigureRequest(
                args=struct_of(
                    {"training:endpoint": "http://127.0.0.1:9", "training:retryDeadline": "1"}
                )
            )
        )
        inputs = {k: v for k, v in job_inputs(env={"API_TOKEN": SECRET}).items() if v is not None}
        inputs["__provider"] = str(serialize_provider(TrainingJobProvider()))
        name = "projects/local-training/locations/us-central1/customJobs/1"
        request = getattr(provider_pb2, f"{method}Request")(
            id=name, urn=URN, properties=struct_of(inputs)
        )
        details = _details(getattr(stub, method), request)
    assert "Traceback" not in details and 'File "' not in details
    assert name in details


def test_a_bad_setting_fails_the_first_call_with_its_message_only() -> None:
    with provider_host() as stub:
        stub.Configure(
            provider_pb2.ConfigureRequest(
                args=struct_of(
                    {"training:endpoint": "http://127.0.0.1:9", "training:retryDeadline": "soon"}
                )
            )
        )
        inputs = {k: v for k, v in job_inputs().items() if v is not None}
        inputs["__provider"] = str(serialize_provider(TrainingJobProvider()))
        details = _details(
            stub.Check,
            provider_pb2.CheckRequest(urn=URN, olds=struct_of({}), news=struct_of(inputs)),
        )
    assert details.startswith("training:retryDeadline"), details
    assert "Traceback" not in details


def test_the_message_is_redacted_bounded_and_never_acts_on_a_terminal() -> None:
    huge = "x" * (5 * MAX_ERROR_CHARS)
    text = error_message(
        JobOperationError(f"job \x1b[2J{SECRET} failed: {huge}"), [SECRET, "unused"]
    )
    assert SECRET not in text and "<redacted>" in text
    assert "\x1b" not in text and "\\x1b[2J" in text
    assert len(text) < MAX_ERROR_CHARS + 100
    # An error that is no error of ours says what it is; one without text, at least that.
    assert error_message(SettingError("training:cancelTimeout", "bad")) == (
        "training:cancelTimeout: bad"  # the package's own errors are written for the user
    )
    assert error_message(KeyError("spec")) == "KeyError: 'spec'"
    assert error_message(RuntimeError()) == "RuntimeError"


class _Context:
    """A gRPC servicer context that records the abort the call ends with."""

    def __init__(self) -> None:
        self.aborted: list[tuple[Any, str]] = []

    def abort(self, code: Any, details: str) -> None:
        self.aborted.append((code, details))
        raise Exception()  # what grpc's abort raises


def test_a_host_before_its_own_error_wrapper_gets_the_message_from_the_operation(monkeypatch):
    """The host of SDK 3.220 to 3.259 lets a failed call's exception out to gRPC (which sent
    "Exception calling application: …" with the env values, and logged the traceback): there
    the provider's operation aborts the call itself, with the message alone."""
    import types

    from components.dynamic import _host

    old_host = types.ModuleType("__main__")
    old_host.__spec__ = types.SimpleNamespace(name="pulumi.dynamic.__main__")  # type: ignore[assignment]
    old_host.DynamicResourceProviderServicer = type("DynamicResourceProviderServicer", (), {})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "__main__", old_host)
    monkeypatch.setattr(_host, "_abort_from_operations", False)
    assert _host.install_error_handlers() is True

    @_host.message_on_failure
    def create() -> None:
        raise JobOperationError(f"job {SECRET} failed")

    @_host.message_on_failure
    def outer() -> None:
        create()  # an operation inside another: aborted once

    def servicer_method(request: Any, context: Any) -> None:  # the host's names for them
        outer()

    context = _Context()
    request = provider_pb2.CreateRequest(
        urn=URN, properties=struct_of({"env_values": {"K": SECRET}})
    )
    with pytest.raises(Exception) as raised:
        servicer_method(request, context)
    assert getattr(raised.value, "_gpu_training_aborted", False)
    [(code, details)] = context.aborted
    assert code == grpc.StatusCode.UNKNOWN
    assert details.startswith("job <redacted> failed"), details
    assert SECRET not in details and "Traceback" not in details


def test_outside_an_old_host_the_operation_raises_as_it_is(monkeypatch):
    from components.dynamic import _host

    monkeypatch.setattr(_host, "_abort_from_operations", False)

    @_host.message_on_failure
    def create() -> None:
        raise JobOperationError("job failed")

    context = _Context()
    request = provider_pb2.CreateRequest(urn=URN)  # noqa: F841 - a handler's locals, as in the host
    with pytest.raises(JobOperationError):
        create()
    assert context.aborted == []
