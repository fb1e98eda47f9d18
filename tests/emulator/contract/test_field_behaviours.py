"""REQUIRED and OUTPUT_ONLY fields at create, as the v1 protos annotate them.

Source: ``google/api/field_behavior.proto``
(https://github.com/googleapis/googleapis/blob/master/google/api/field_behavior.proto): a REQUIRED
field not set is an error "(usually INVALID_ARGUMENT)"; for an OUTPUT_ONLY field "including the
field in a request does nothing (the server must ignore it and must not throw an error as a
result of the field's presence)". Which fields are which: the v1 ``custom_job.proto``,
``hyperparameter_tuning_job.proto``, ``study.proto``, ``env_var.proto`` annotations, as the
``aiplatform_v1`` client documents them.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud.aiplatform_v1 import types as aip
from google.protobuf import timestamp_pb2

from emulator.testing import EmulatorProcess
from tests.emulator.conftest import PARENT, S, make_job, trainer_pool
from tests.emulator.test_tuning import tuning_job

BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"


def _fields(exc: gexc.GoogleAPICallError) -> list[str]:
    return [
        v["field"]
        for d in exc.details
        if d.get("@type") == BAD_REQUEST
        for v in d["fieldViolations"]
    ]


def test_output_only_fields_sent_by_a_client_are_ignored(sim: EmulatorProcess) -> None:
    """CustomJob.name, state, create_time, error, web_access_uris, satisfies_pzs are
    OUTPUT_ONLY: the create succeeds and none of what the client sent comes back."""
    job = make_job("output-only")
    job.name = "projects/other/locations/elsewhere/customJobs/1"
    job.state = aip.JobState(S.JOB_STATE_SUCCEEDED)
    job.create_time = timestamp_pb2.Timestamp(seconds=86400)
    job.error = {"code": 13, "message": "sent by the client"}
    job.web_access_uris = {"workerpool0-0": "https://example.invalid"}
    job.satisfies_pzs = True
    created = sim.client().create_custom_job(parent=PARENT, custom_job=job)
    assert "/other/" not in created.name and "/elsewhere/" not in created.name
    assert created.state == S.JOB_STATE_QUEUED
    assert created.create_time.timestamp() > 86400
    assert not created.error.message and not created.satisfies_pzs
    assert "workerpool0-0" not in created.web_access_uris


def test_output_only_trials_of_a_tuning_job_are_ignored(sim: EmulatorProcess) -> None:
    """HyperparameterTuningJob.trials is OUTPUT_ONLY: trials a client sends are dropped."""
    job = tuning_job()
    job.trials = [aip.Trial(id="99", state=aip.Trial.State.SUCCEEDED)]
    created = sim.client().create_hyperparameter_tuning_job(
        parent=PARENT, hyperparameter_tuning_job=job
    )
    assert all(trial.id != "99" for trial in created.trials)


def _without_image(job: aip.CustomJob) -> None:
    job.job_spec.worker_pool_specs[0].python_package_spec.executor_image_uri = ""


def _env_without_name(job: aip.CustomJob) -> None:
    job.job_spec.worker_pool_specs[0].python_package_spec.env.append(aip.EnvVar(value="v"))


def _container_without_image(job: aip.CustomJob) -> None:
    pool = job.job_spec.worker_pool_specs[0]
    pool.container_spec = aip.ContainerSpec(command=["true"])


def _gcs_without_prefix(job: aip.CustomJob) -> None:
    job.job_spec.base_output_directory = aip.GcsDestination()
    job.job_spec.base_output_directory._pb.SetInParent()


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda j: setattr(j, "display_name", ""), "display_name"),
        (_without_image, "job_spec.worker_pool_specs[0].python_package_spec.executor_image_uri"),
        (_env_without_name, "job_spec.worker_pool_specs[0].python_package_spec.env[0].name"),
        (_container_without_image, "job_spec.worker_pool_specs[0].container_spec.image_uri"),
        (_gcs_without_prefix, "job_spec.base_output_directory.output_uri_prefix"),
    ],
)
def test_a_required_field_not_set_is_invalid_argument(
    sim: EmulatorProcess, mutate: Any, field: str
) -> None:
    """Each of these fields is REQUIRED in the v1 protos; its absence is named as a field
    violation of a 400 INVALID_ARGUMENT."""
    job = make_job("required", pools=[trainer_pool()])
    mutate(job)
    with pytest.raises(gexc.BadRequest) as info:
        sim.client().create_custom_job(parent=PARENT, custom_job=job)
    assert info.value.response.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert field in _fields(info.value)
    assert f"Field: {field}; Message: Required field is not set." in info.value.message


def test_required_fields_of_a_tuning_job(sim: EmulatorProcess) -> None:
    """HyperparameterTuningJob.study_spec.metrics and each ParameterSpec.parameter_id are
    REQUIRED; fields of its trial job are named under trial_job_spec."""
    job = tuning_job()
    job.study_spec.parameters[0].parameter_id = ""
    job.trial_job_spec.worker_pool_specs[0].python_package_spec.python_module = ""
    with pytest.raises(gexc.BadRequest) as info:
        sim.client().create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=job)
    fields = _fields(info.value)
    assert "study_spec.parameters[0].parameter_id" in fields
    assert "trial_job_spec.worker_pool_specs[0].python_package_spec.python_module" in fields
