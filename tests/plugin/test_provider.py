"""The plugin's provider: check failures on property paths, detailed diffs, clean errors, cancel.

Calls go through ``GpuTrainingProvider``'s own (async) methods; the clean errors through the
real gRPC server (``CleanServicer``) and the SDK's client stub; create and cancel against the
simulate-mode emulator, through the real Vertex client.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
from google.protobuf import struct_pb2
from pulumi.provider.experimental.property_value import PropertyValue
from pulumi.provider.experimental.provider import (
    CheckRequest,
    ConfigureRequest,
    CreateRequest,
    DeleteRequest,
    DiffRequest,
    PropertyDiffKind,
)
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

from components.lifecycle import _interrupt
from components.plugin._provider import GpuTrainingProvider, PluginError
from components.plugin._server import CleanServicer
from components.plugin._stack_state import StateUnreadable
from components.plugin._values import plain_map, secret_texts, wrap, wrap_map
from emulator.testing import EmulatorProcess, running_emulator
from tests.e2e._plugin import SECRET, training_job
from tests.plugin.conftest import run_isolated

TOKEN = "gpu-training:vertex:TrainingJob"
URN = f"urn:pulumi:dev::proj::{TOKEN}::train"
TUNING_URN = "urn:pulumi:dev::proj::gpu-training:vertex:HyperparameterTuningJob::tune"


def _job(machine_type: str = "n1-standard-4", count: int = 1, **extra: Any) -> dict[str, Any]:
    """The e2e tests' job (one T4 pool, env value ``SECRET``), plus top-level ``extra``."""
    return {**training_job(machine_type, count), **extra}


def _with_secret(value: Any) -> PropertyValue:
    """``value`` as the engine sends a program's data: ``SECRET`` marked secret wherever it is."""
    if value == SECRET:
        return wrap(value, secret=True)
    if isinstance(value, dict):
        return PropertyValue({k: _with_secret(v) for k, v in value.items()})
    if isinstance(value, list):
        return PropertyValue([_with_secret(v) for v in value])
    return wrap(value)


def _provider(**config: Any) -> GpuTrainingProvider:
    provider = GpuTrainingProvider()
    settings = {"project": "local-training", "region": "us-central1", **config}
    run_isolated(provider.configure(ConfigureRequest({}, wrap_map(settings), True, True)))
    return provider


def _check(provider: GpuTrainingProvider, props: dict[str, Any], urn: str = URN) -> Any:
    return run_isolated(provider.check(CheckRequest(urn, {}, wrap_map(props), b"")))


def _diff(provider: GpuTrainingProvider, old: dict[str, Any], new: dict[str, Any]) -> Any:
    state = {
        "state": "JOB_STATE_RUNNING",
        "project": "local-training",
        "region": "us-central1",
        **old,
    }
    return run_isolated(
        provider.diff(
            DiffRequest(
                URN, "projects/p/locations/r/customJobs/1", wrap_map(state), wrap_map(new), []
            )
        )
    )


# -- check -------------------------------------------------------------------------------------


def test_check_fails_on_the_path_of_the_property_the_user_wrote() -> None:
    result = _check(_provider(), _job(count=3))
    assert [(f.property, f.reason) for f in result.failures] == [
        (
            "jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount",
            "3 x NVIDIA_TESLA_T4 is not allowed on n1-standard-4 (allowed counts of "
            "NVIDIA_TESLA_T4 on n1-standard-4: 1, 2, 4)",
        )
    ]


def test_the_engine_gets_each_failure_with_its_path_in_its_text_and_no_property_to_look_up() -> (
    None
):
    # The engine prints a failure's property as the resource's top-level input of that name
    # (`value {<nil>}` for a path): the server's answer names none and keeps the full path.
    from components.plugin._server import DeferredProvider

    served = DeferredProvider()
    settings = wrap_map({"project": "local-training", "region": "us-central1"})
    run_isolated(served.configure(ConfigureRequest({}, settings, True, True)))
    props = wrap_map(_job(count=3))
    result = run_isolated(served.check(CheckRequest(URN, {}, props, b"")))
    assert [(f.property, f.reason) for f in result.failures or []] == [
        (
            "",
            "jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount: 3 x NVIDIA_TESLA_T4 is not "
            "allowed on n1-standard-4 (allowed counts of NVIDIA_TESLA_T4 on n1-standard-4: 1, 2, "
            "4)",
        )
    ]
    assert result.inputs == props
    valid = run_isolated(served.check(CheckRequest(URN, {}, wrap_map(_job()), b"")))
    assert not valid.failures


def test_check_passes_a_valid_job_and_keeps_its_inputs_as_written() -> None:
    props = wrap_map(_job())
    result = run_isolated(_provider().check(CheckRequest(URN, {}, props, b"")))
    assert result.failures == []
    assert result.inputs == props  # no defaults, no bookkeeping added


def test_check_names_knobs_and_unknown_properties() -> None:
    result = _check(_provider(), _job(waitFor="done", jobSpc={}))
    failures = {f.property: f.reason for f in result.failures}
    assert failures["waitFor"].startswith("'done' is not one of submitted, running, succeeded")
    assert failures["jobSpc"] == "is not a property of TrainingJob"


def test_check_of_a_tuning_job_names_its_trial_spec_paths() -> None:
    trial = _job(count=3)["jobSpec"]
    tuning = {
        "studySpec": {
            "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
            "parameters": [
                {"parameterId": "lr", "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1}}
            ],
        },
        "maxTrialCount": 4,
        "parallelTrialCount": 2,
        "trialJobSpec": trial,
    }
    result = _check(_provider(), tuning, TUNING_URN)
    assert [f.property for f in result.failures] == [
        "trialJobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount"
    ]


def test_a_bad_setting_fails_check_config_naming_the_plugin_key() -> None:
    request = CheckRequest(
        "urn:pulumi:dev::proj::pulumi:providers:gpu-training::default",
        {},
        wrap_map({"endpoint": "ftp://nowhere", "maxConcurrentOperations": 3}),
        b"",
    )
    result = run_isolated(GpuTrainingProvider().check_config(request))
    failures = result.failures or []
    assert len(failures) == 1
    assert failures[0].property == "endpoint"
    assert "http" in failures[0].reason


# -- diff --------------------------------------------------------------------------------------


def test_a_changed_job_property_shows_on_its_path_marked_as_replacing() -> None:
    new = _job("n1-standard-8")
    new["labels"] = {"team": "ml", "stage": "two"}
    result = _diff(_provider(), _job(), new)
    assert result.changes is True
    assert {k: v.kind for k, v in result.detailed_diff.items()} == {
        "jobSpec.workerPoolSpecs[0].machineSpec.machineType": PropertyDiffKind.UPDATE_REPLACE,
        "labels.stage": PropertyDiffKind.ADD_REPLACE,
    }
    assert result.replaces == ["jobSpec", "labels"]
    assert result.delete_before_replace is False


def test_a_knob_updates_in_place_and_exclusive_gpus_deletes_first() -> None:
    provider = _provider()
    knob = _diff(provider, _job(), _job(waitFor="running"))
    assert {k: v.kind for k, v in knob.detailed_diff.items()} == {"waitFor": PropertyDiffKind.ADD}
    assert knob.replaces == []
    exclusive = _diff(provider, _job(exclusiveGpus=True), _job("n1-standard-8", exclusiveGpus=True))
    assert exclusive.replaces == ["jobSpec"]
    assert exclusive.delete_before_replace is True


def test_no_change_no_diff_and_outputs_never_show() -> None:
    # The old state repeats the inputs next to outputs (state, project...): none is a change.
    result = _diff(_provider(), _job(), _job())
    assert result.changes is False
    assert result.detailed_diff == {}


def test_a_moved_default_region_replaces_the_job() -> None:
    provider = _provider(region="europe-west4")
    result = _diff(provider, {**_job(), "region": "us-central1"}, _job())
    assert result.replaces == ["region"]
    assert result.detailed_diff["region"].kind == PropertyDiffKind.UPDATE_REPLACE


# -- errors and cancel, against the emulator -------------------------------------------------


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorProcess]:
    with running_emulator("--mode", "simulate", "--simulate-queued-seconds", "0.05") as server:
        yield server


@pytest.fixture(autouse=True)
def _no_interrupt_left() -> Iterator[None]:
    yield
    _interrupt.reset()


def _serve(provider: GpuTrainingProvider) -> tuple[Any, Any]:
    """The real gRPC server (``CleanServicer``) in its own loop, and a client stub."""
    import threading

    from pulumi.runtime._grpc_settings import _GRPC_CHANNEL_OPTIONS

    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, Any] = {}

    async def serve() -> None:
        server = grpc.aio.server(options=_GRPC_CHANNEL_OPTIONS)
        provider_pb2_grpc.add_ResourceProviderServicer_to_server(
            CleanServicer([], "0.0.0", provider, ""), server
        )
        holder["port"] = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        ready.set()
        await server.wait_for_termination()

    threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True).start()
    assert ready.wait(10)
    channel = grpc.insecure_channel(f"127.0.0.1:{holder['port']}")
    return provider_pb2_grpc.ResourceProviderStub(channel), channel


def _struct(props: dict[str, PropertyValue]) -> struct_pb2.Struct:
    return PropertyValue.marshal_map(props)


def test_a_failed_create_is_its_message_alone(
    emu: EmulatorProcess,
) -> None:
    # An unreachable API (a closed port): the error carries the core's message, no traceback,
    # and no env value even where a message would quote it.
    provider = _provider(endpoint="http://127.0.0.1:9", retryDeadline="1")
    stub, channel = _serve(provider)
    props = {k: _with_secret(v) for k, v in _job().items()}
    with pytest.raises(grpc.RpcError) as caught:
        stub.Create(provider_pb2.CreateRequest(urn=URN, properties=_struct(props)))
    channel.close()
    details = caught.value.details()
    assert (
        "could not submit the training job to projects/local-training/locations/us-central1"
        in details
    )
    assert "Traceback" not in details and 'File "' not in details
    assert SECRET not in details


def test_an_invalid_create_names_the_property_path_without_a_traceback() -> None:
    stub, channel = _serve(_provider())
    with pytest.raises(grpc.RpcError) as caught:
        stub.Create(
            provider_pb2.CreateRequest(urn=URN, properties=_struct(wrap_map(_job(count=3))))
        )
    channel.close()
    details = caught.value.details()
    assert details.startswith("jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount: 3 x")
    assert "Traceback" not in details


def test_cancel_stops_every_wait_at_once(emu: EmulatorProcess) -> None:
    provider = _provider(endpoint=emu.endpoint, retryDeadline="20", cancelTimeout="20")
    hang = {"emulator-outcome": "hang"}  # RUNNING until cancelled

    async def scenario() -> list[BaseException | None]:
        creates = [
            asyncio.create_task(
                provider.create(
                    CreateRequest(
                        URN.replace("::train", f"::train{i}"),
                        wrap_map(_job(labels=hang, waitFor="succeeded")),
                        0,
                        False,
                    )
                )
            )
            for i in range(3)
        ]
        client = emu.client()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            running = [
                j
                for j in client.list_custom_jobs(
                    parent="projects/local-training/locations/us-central1"
                )
                if j.state.name == "JOB_STATE_RUNNING"
            ]
            if len(running) >= 3:
                break
            await asyncio.sleep(0.1)
        started = time.monotonic()
        await provider.cancel()
        results = await asyncio.gather(*creates, return_exceptions=True)
        assert time.monotonic() - started < 5
        return [r if isinstance(r, BaseException) else None for r in results]

    results = run_isolated(scenario())
    for result in results:
        assert isinstance(result, PluginError)
        assert "stopped waiting for it: pulumi was cancelled" in str(result)
        assert "left running" in str(result)
    # Left running for the next `pulumi up` to adopt: nothing cancelled.
    jobs = emu.client().list_custom_jobs(parent="projects/local-training/locations/us-central1")
    assert sum(j.state.name == "JOB_STATE_RUNNING" for j in jobs) >= 3


def test_a_tuning_job_through_the_plugin_reports_its_best_trial(emu: EmulatorProcess) -> None:
    provider = _provider(endpoint=emu.endpoint, retryDeadline="20", cancelTimeout="20")
    trial = _job()["jobSpec"]
    trial["workerPoolSpecs"][0]["machineSpec"] = {"machineType": "n1-standard-4"}
    trial["baseOutputDirectory"] = {"outputUriPrefix": "gs://local-training/jobs/tune"}
    props = {
        "labels": {"emulator-run-ms": "50"},  # each simulated trial lasts 50 ms
        "studySpec": {
            "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
            "parameters": [{"parameterId": "lr", "discreteValueSpec": {"values": [0.01, 0.1]}}],
            "algorithm": "GRID_SEARCH",
        },
        "maxTrialCount": 2,
        "parallelTrialCount": 2,
        "trialJobSpec": trial,
        "waitFor": "succeeded",
        "waitTimeout": "60s",
    }
    request = CreateRequest(TUNING_URN, {k: _with_secret(v) for k, v in props.items()}, 0, False)
    created = run_isolated(provider.create(request))
    outputs = plain_map(created.properties)
    assert created.resource_id is not None
    assert "/hyperparameterTuningJobs/" in created.resource_id
    assert outputs["state"] == "JOB_STATE_SUCCEEDED"
    best = outputs["bestTrial"]
    assert set(best) == {"id", "parameters", "metricId", "value"}  # camelCase, as the schema says
    assert outputs["bestTrialModelDir"] == f"gs://local-training/jobs/tune/{best['id']}/model/"
    # The env value stays a secret in the outputs; no bookkeeping among them.
    assert secret_texts(created.properties["trialJobSpec"]) == [SECRET]
    assert not {"runHash", "identity", "heldJobs", "runKey", "status"} & set(outputs)
    run_isolated(
        provider.delete(DeleteRequest(TUNING_URN, created.resource_id, created.properties, 0))
    )
    jobs = emu.client().list_hyperparameter_tuning_jobs(
        parent="projects/local-training/locations/us-central1"
    )
    # A finished run's record outlives its resource (issue 35: deleting it is opt-in).
    assert [(j.name, j.state.name) for j in jobs] == [(created.resource_id, "JOB_STATE_SUCCEEDED")]


def _state_of(*held: tuple[str, str | None]) -> Any:
    """A ``read_state`` answering the resources ``(urn, job)`` (and counting its calls)."""
    calls: list[str] = []

    def read(urn: str) -> list[dict[str, Any]]:
        calls.append(urn)
        return [{"urn": u, "type": u.split("::")[2], "id": job} for u, job in held]

    read.calls = calls  # type: ignore[attr-defined]
    return read


def _unreadable(urn: str) -> list[dict[str, Any]]:
    raise StateUnreadable("`pulumi` is not on PATH")


def _configured(emu: EmulatorProcess, read_state: Any) -> GpuTrainingProvider:
    provider = GpuTrainingProvider(read_state=read_state)
    settings = {
        "project": "local-training",
        "region": "us-central1",
        "endpoint": emu.endpoint,
        "retryDeadline": "20",
        "cancelTimeout": "20",
    }
    run_isolated(provider.configure(ConfigureRequest({}, wrap_map(settings), True, True)))
    return provider


def _create(provider: GpuTrainingProvider, urn: str) -> Any:
    props = wrap_map(_job(labels={"emulator-outcome": "hang"}, waitFor="running"))
    return run_isolated(provider.create(CreateRequest(urn, props, 0, False)))


def test_a_forced_replace_starts_a_new_job_the_old_one_is_cancelled(emu: EmulatorProcess) -> None:
    # `pulumi up --replace`: the engine calls create with the new inputs only. The running
    # job is this resource's, with the same run: the stack holds it, so it is not adopted.
    urn = URN.replace("::train", "::forced")
    first = _create(_configured(emu, _state_of()), urn)
    state = _state_of((urn, first.resource_id))
    provider = _configured(emu, state)
    second = _create(provider, urn)
    assert second.resource_id != first.resource_id
    assert plain_map(second.properties)["adopted"] is False
    assert state.calls == [urn]  # read once: the create found an active job of its own
    run_isolated(provider.delete(DeleteRequest(urn, first.resource_id, first.properties, 0)))
    client = emu.client()
    assert client.get_custom_job(name=first.resource_id).state.name == "JOB_STATE_CANCELLED"
    assert client.get_custom_job(name=second.resource_id).state.name == "JOB_STATE_RUNNING"
    client.cancel_custom_job(name=second.resource_id)


def test_exclusive_gpus_stops_the_held_job_before_submitting(emu: EmulatorProcess) -> None:
    # A forced replace calls no diff, so deleteBeforeReplace never reaches the engine: the
    # create itself cancels the held job, and waits for it to stop, before it submits.
    urn = URN.replace("::train", "::exclusive")
    props = wrap_map(
        _job(labels={"emulator-outcome": "hang"}, waitFor="running", exclusiveGpus=True)
    )
    first = run_isolated(_configured(emu, _state_of()).create(CreateRequest(urn, props, 0, False)))
    provider = _configured(emu, _state_of((urn, first.resource_id)))
    second = run_isolated(provider.create(CreateRequest(urn, props, 0, False)))
    client = emu.client()
    stopped = client.get_custom_job(name=first.resource_id)
    new = client.get_custom_job(name=second.resource_id)
    assert stopped.state.name == "JOB_STATE_CANCELLED"
    assert new.state.name == "JOB_STATE_RUNNING"
    assert new.create_time >= stopped.end_time
    client.cancel_custom_job(name=second.resource_id)


def test_a_job_the_stack_does_not_hold_is_adopted_after_a_crash(emu: EmulatorProcess) -> None:
    # A create killed after submitting: the next create of the resource finds its job, which
    # the state does not hold (another resource's job there changes nothing), and adopts it.
    urn = URN.replace("::train", "::crashed")
    other = URN.replace("::train", "::other")
    lost = _create(_configured(emu, _state_of()), urn)
    state = _state_of((other, "projects/local-training/locations/us-central1/customJobs/9"))
    again = _create(_configured(emu, state), urn)
    assert again.resource_id == lost.resource_id
    assert plain_map(again.properties)["adopted"] is True
    assert state.calls == [urn]
    emu.client().cancel_custom_job(name=lost.resource_id)


def test_a_first_create_reads_no_state(emu: EmulatorProcess) -> None:
    state = _state_of()
    created = _create(_configured(emu, state), URN.replace("::train", "::first"))
    assert state.calls == []  # no job of the resource yet: nothing to tell apart
    emu.client().cancel_custom_job(name=created.resource_id)


def test_a_replace_when_the_state_cannot_be_read_keeps_one_running_job(
    emu: EmulatorProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    # The state unreadable: the replacement takes the running job over, the delete of the
    # replaced resource leaves it running (adopted_here): one job, never two, never none; a
    # warning says why.
    provider = _configured(emu, _unreadable)
    urn = URN.replace("::train", "::replaced")
    old = _create(provider, urn)
    new = _create(provider, urn)
    assert new.resource_id == old.resource_id
    assert plain_map(new.properties)["adopted"] is True
    assert "could not read the stack's state (`pulumi` is not on PATH)" in capsys.readouterr().err
    run_isolated(provider.delete(DeleteRequest(urn, old.resource_id, old.properties, 0)))
    job = emu.client().get_custom_job(name=old.resource_id)
    assert job.state.name == "JOB_STATE_RUNNING"
    emu.client().cancel_custom_job(name=old.resource_id)


def test_the_schema_is_served_without_the_core_which_the_first_operation_imports() -> None:
    """The process the engine starts for a language host to read the schema imports no core."""
    import json
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    code = """
        import asyncio, json, sys
        import components.plugin  # first, as the plugin's executable: google.rpc.Status once
        from pulumi.provider.experimental.provider import CheckRequest, GetSchemaRequest
        from components.plugin._schema import load_schema
        from components.plugin._server import DeferredProvider
        provider = DeferredProvider()
        loop = asyncio.new_event_loop()
        schema = loop.run_until_complete(provider.get_schema(GetSchemaRequest(0, None, None)))
        found = {"same_schema": schema.schema == load_schema()}
        found["core_after_schema"] = "components.core._jobs" in sys.modules
        checked = loop.run_until_complete(provider.check(CheckRequest(
            "urn:pulumi:dev::proj::gpu-training:vertex:TrainingJob::train", {}, {}, None
        )))
        found["core_after_check"] = "components.core._jobs" in sys.modules
        found["failures"] = sorted(f.property for f in checked.failures or [])
        print(json.dumps(found))
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["same_schema"] is True
    assert found["core_after_schema"] is False
    assert found["core_after_check"] is True
    assert found["failures"]  # an empty TrainingJob is refused by the core's check


def test_a_relative_package_path_is_resolved_against_the_program_directory(
    emu: EmulatorProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the dynamic door resolves an inline spec's local package paths against its program's
    directory, the plugin resolves them against its own working directory, the program's
    (where the engine starts it): the job names the user's folder, not one relative to
    wherever the emulator runs. The state keeps the path as written (no diff on a move)."""
    program = Path(__file__).resolve().parents[2] / "examples"  # its trainer/ folder
    monkeypatch.chdir(program)
    pool = {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": 1,
        "pythonPackageSpec": {
            "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest",
            "packageUris": ["trainer", "gs://local-training/extra.tar.gz"],
            "pythonModule": "trainer.task",
        },
    }
    props = {"jobSpec": {"workerPoolSpecs": [pool]}, "waitFor": "submitted"}
    provider = _configured(emu, _state_of())
    urn = URN.replace("::train", "::relative")
    assert _check(provider, props, urn).failures == []
    created = run_isolated(provider.create(CreateRequest(urn, wrap_map(props), 0, False)))
    assert created.resource_id is not None
    job = emu.client().get_custom_job(name=created.resource_id)
    uris = list(job.job_spec.worker_pool_specs[0].python_package_spec.package_uris)
    assert uris == [str(program / "trainer"), "gs://local-training/extra.tar.gz"]
    written = plain_map(created.properties)["jobSpec"]["workerPoolSpecs"][0]
    assert written["pythonPackageSpec"]["packageUris"][0] == "trainer"
    # The same relative path from the state and the program: no change.
    assert _diff(provider, props, props).changes is False
    run_isolated(provider.delete(DeleteRequest(urn, created.resource_id, created.properties, 0)))
