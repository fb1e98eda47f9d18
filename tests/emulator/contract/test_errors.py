"""Errors as Vertex AI answers them, seen through the real ``aiplatform_v1`` REST client.

Each test names the source of the behaviour it checks; none depends on the project's validator.
"""

from __future__ import annotations

import json

import pytest
from google.api_core import exceptions as gexc
from google.cloud.aiplatform_v1 import types as aip

from components.vertex.api import is_failed_precondition, is_transient
from emulator.testing import EmulatorProcess, wait_for_state
from tests.emulator.conftest import PARENT, TERMINAL, make_job, raw_http, trainer_pool

BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"


def _violations(exc: gexc.GoogleAPICallError) -> list[dict[str, str]]:
    return [v for d in exc.details if d.get("@type") == BAD_REQUEST for v in d["fieldViolations"]]


def test_a_refused_create_lists_every_violation(sim: EmulatorProcess) -> None:
    """400 INVALID_ARGUMENT, ``List of found errors:\\t1.Field: <path>; Message: <text>\\t...``
    with a ``google.rpc.BadRequest`` detail, one ``fieldViolations`` entry per violation.

    Source: answers quoted in https://github.com/PrefectHQ/prefect/issues/5940 and
    https://github.com/prefect-archive/prefect-gcp/issues/175 (fields relative to the job,
    tab-separated), the detail's JSON shape in
    https://github.com/GoogleCloudPlatform/magic-modules/pull/15513.
    """
    pool = trainer_pool()
    pool.machine_spec.accelerator_count = 2  # no accelerator_type
    job = make_job("two-errors", pools=[pool])
    job.job_spec.worker_pool_specs[0].python_package_spec.python_module = ""
    with pytest.raises(gexc.BadRequest) as info:
        sim.client().create_custom_job(parent=PARENT, custom_job=job)
    error = info.value.response.json()["error"]
    assert error["code"] == 400 and error["status"] == "INVALID_ARGUMENT"
    fields = [
        "job_spec.worker_pool_specs[0].machine_spec.accelerator_type",
        "job_spec.worker_pool_specs[0].python_package_spec.python_module",
    ]
    assert error["message"] == (
        "List of found errors:\t"
        f"1.Field: {fields[0]}; Message: Both `accelerator_type` and `accelerator_count` should "
        "be specified or none.\t"
        f"2.Field: {fields[1]}; Message: Required field is not set.\t"
    )
    assert [v["field"] for v in _violations(info.value)] == fields


def test_a_missing_job_is_not_found(sim: EmulatorProcess) -> None:
    """404 NOT_FOUND for a job name that names no job (JobService.GetCustomJob, google.rpc.Code
    NOT_FOUND: "Some requested entity ... was not found"; HTTP 404 by
    https://github.com/googleapis/googleapis/blob/master/google/rpc/code.proto)."""
    client = sim.client()
    with pytest.raises(gexc.NotFound) as info:
        client.get_custom_job(name=f"{PARENT}/customJobs/123456789")
    assert info.value.response.json()["error"]["status"] == "NOT_FOUND"
    with pytest.raises(gexc.NotFound):
        client.cancel_custom_job(name=f"{PARENT}/customJobs/123456789")
    with pytest.raises(gexc.NotFound):
        client.get_hyperparameter_tuning_job(name=f"{PARENT}/hyperparameterTuningJobs/1")


def test_cancelling_a_finished_job_is_failed_precondition(sim: EmulatorProcess) -> None:
    """FAILED_PRECONDITION (HTTP 400) for a cancel of a job already finished: "the system is not
    in a state required for the operation's execution" (google/rpc/code.proto); the v1
    ``CancelCustomJob`` doc: the job is cancelled only "if the job is still running"."""
    client = sim.client()
    job = client.create_custom_job(
        parent=PARENT, custom_job=make_job("done", labels={"emulator-run-ms": "0"})
    )
    wait_for_state(client, job.name, TERMINAL, timeout=30)
    with pytest.raises(gexc.BadRequest) as info:
        client.cancel_custom_job(name=job.name)
    error = info.value.response.json()["error"]
    assert error["status"] == "FAILED_PRECONDITION" and error["code"] == 400
    assert is_failed_precondition(info.value)  # how the provider tells it from other 400s


def test_rate_limits_are_resource_exhausted(sim: EmulatorProcess) -> None:
    """429 RESOURCE_EXHAUSTED for a quota or rate limit (google/rpc/code.proto: HTTP 429), which
    the client raises as ``TooManyRequests`` and the provider retries."""
    sim.set_faults(rate_limit_rate=1.0)
    try:
        with pytest.raises(gexc.TooManyRequests) as info:
            sim.client().list_custom_jobs(parent=PARENT)
    finally:
        sim.clear_faults()
    assert info.value.response.json()["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert is_transient(info.value)


def test_json_that_is_not_a_job_is_invalid_argument(sim: EmulatorProcess) -> None:
    """A body the v1 JSON mapping cannot read (an enum name the API does not know) is 400
    INVALID_ARGUMENT ("Invalid JSON payload received", the protobuf JSON mapping:
    https://protobuf.dev/programming-guides/proto3/#json)."""
    job = json.loads(aip.CustomJob.to_json(make_job("enum")))
    machine = job["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]
    machine.update(acceleratorType="NVIDIA_A100", acceleratorCount=1)
    status, answer = raw_http(sim, "POST", f"/v1/{PARENT}/customJobs", json.dumps(job).encode())
    assert status == 400, answer
    assert answer["error"]["status"] == "INVALID_ARGUMENT"
    assert "NVIDIA_A100" in answer["error"]["message"]
