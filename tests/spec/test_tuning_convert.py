"""Conversion of tuning job specs to and from the client library's HyperparameterTuningJob."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml
from google.cloud import aiplatform_v1
from hypothesis import HealthCheck, given, settings

from components import SpecInvalidError, TuningJobSpec
from components.vertex.convert import custom_job_spec_document
from components.vertex.tuning_convert import (
    from_tuning_job,
    parse_tuning_job_name,
    to_tuning_job,
    tuning_job_document,
    validate_tuning_job,
)
from tests.spec.tuning_helpers import config, convertible_tuning, tuning

Study = aiplatform_v1.StudySpec
Parameter = Study.ParameterSpec


def test_the_example_becomes_the_job_vertex_receives():
    job = to_tuning_job(tuning(project="vision-ml", region="us-central1"))
    assert isinstance(job, aiplatform_v1.HyperparameterTuningJob)
    assert (job.display_name, job.max_trial_count, job.parallel_trial_count) == (
        "cifar10-sweep",
        24,
        4,
    )
    assert job.max_failed_trial_count == 3
    assert dict(job.labels) == {"team": "vision"}
    metric = job.study_spec.metrics[0]
    assert (metric.metric_id, metric.goal) == ("val_accuracy", Study.MetricSpec.GoalType.MAXIMIZE)
    lr = job.study_spec.parameters[0]
    assert lr.scale_type == Parameter.ScaleType.UNIT_LOG_SCALE
    assert (lr.double_value_spec.min_value, lr.double_value_spec.max_value) == (0.0001, 0.1)
    assert "integer_value_spec" not in lr
    conditional = job.study_spec.parameters[2].conditional_parameter_specs[0]
    assert list(conditional.parent_categorical_values.values) == ["sgd"]
    assert conditional.parameter_spec.parameter_id == "momentum"
    assert job.study_spec.algorithm == Study.Algorithm.RANDOM_SEARCH
    assert "median_automated_stopping_spec" in job.study_spec
    pool = job.trial_job_spec.worker_pool_specs[0]
    assert pool.machine_spec.accelerator_type == aiplatform_v1.AcceleratorType.NVIDIA_TESLA_T4
    assert job.trial_job_spec.base_output_directory.output_uri_prefix == (
        "gs://vision-ml/sweeps/cifar10"
    )
    assert not job.name and "encryption_spec" not in job


def test_a_job_reads_back_with_the_project_and_region_of_its_name():
    spec = tuning()
    job = to_tuning_job(spec)
    job.name = "projects/vision-ml/locations/europe-west4/hyperparameterTuningJobs/4417"
    job.state = aiplatform_v1.JobState.JOB_STATE_RUNNING
    job.trials.append(aiplatform_v1.Trial(id="1", state=aiplatform_v1.Trial.State.ACTIVE))
    back = from_tuning_job(job)
    assert (back.project, back.region) == ("vision-ml", "europe-west4")
    assert back.model_copy(update={"project": None, "region": None}) == spec
    assert from_tuning_job(job, project="other-project", region="us-east1").region == "us-east1"
    assert parse_tuning_job_name(job.name) == ("vision-ml", "europe-west4", "4417")
    assert parse_tuning_job_name("projects/p/locations/r/customJobs/1") is None


def test_fields_with_presence_keep_a_zero_value_apart_from_unset():
    document = config()
    study = document["studySpec"]
    study["parameters"][0]["doubleValueSpec"] = {"minValue": -1, "maxValue": 1, "defaultValue": 0}
    study.pop("medianAutomatedStoppingSpec")
    study["convexAutomatedStoppingSpec"] = {"updateAllStoppedTrials": False}
    study["studyStoppingConfig"] = {
        "shouldStopAsap": False,
        "minNumTrials": 0,
        "maximumRuntimeConstraint": {"endTime": datetime(2031, 1, 2, 3, 4, 5, tzinfo=UTC)},
        "minimumRuntimeConstraint": {"maxDuration": timedelta(seconds=5400, microseconds=250)},
    }
    study["metrics"][0]["safetyConfig"] = {"safetyThreshold": 0}
    spec = TuningJobSpec.parse(document)
    back = from_tuning_job(to_tuning_job(spec))
    assert back == spec
    lr = back.study_spec.parameters[0].double_value_spec
    assert lr is not None and lr.default_value == 0.0
    stopping = back.study_spec.study_stopping_config
    assert stopping is not None
    assert (stopping.should_stop_asap, stopping.min_num_trials, stopping.max_num_trials) == (
        False,
        0,
        None,
    )
    convex = back.study_spec.convex_automated_stopping_spec
    assert convex is not None and convex.update_all_stopped_trials is False


def test_a_field_no_spec_holds_is_named_by_its_path():
    job = to_tuning_job(tuning())
    job.study_spec.parameters[2].conditional_parameter_specs[
        0
    ].parameter_spec.parameter_id = "mom\x00entum"
    with pytest.raises(SpecInvalidError) as info:
        from_tuning_job(job)
    assert [v.path for v in info.value.violations] == [
        "studySpec.parameters[2].conditionalParameterSpecs[0].parameterSpec.parameterId"
    ]
    job = to_tuning_job(tuning())
    job.trial_job_spec.worker_pool_specs[0].container_spec.image_uri = "gcr.io/x\x00"
    with pytest.raises(SpecInvalidError) as info:
        from_tuning_job(job)
    assert [v.path for v in info.value.violations] == [
        "trialJobSpec.workerPoolSpecs[0].containerSpec.imageUri"
    ]


def test_an_enum_name_the_api_does_not_know_raises():
    document = config()
    document["studySpec"]["metrics"][0]["goal"] = "MAXIMISE"
    with pytest.raises(AttributeError):
        to_tuning_job(TuningJobSpec.parse(document))
    with pytest.raises(AttributeError):
        tuning_job_document(TuningJobSpec.parse(document))


@pytest.mark.filterwarnings("ignore:Unrecognized Algorithm enum value")
def test_an_enum_number_the_library_does_not_know_is_kept_for_the_validator():
    job = to_tuning_job(tuning())
    job.study_spec.algorithm = 9
    spec = from_tuning_job(job)
    assert spec.study_spec.algorithm == "9"
    (violation,) = validate_tuning_job(job, project="vision-ml", region="us-central1")
    assert violation.path == "studySpec.algorithm"


def test_the_gcloud_document_is_the_job_without_project_and_region():
    spec = tuning(project="vision-ml", region="us-central1")
    document = tuning_job_document(spec)
    assert list(document) == [
        "displayName",
        "labels",
        "studySpec",
        "maxTrialCount",
        "parallelTrialCount",
        "maxFailedTrialCount",
        "trialJobSpec",
    ]
    assert document["trialJobSpec"] == custom_job_spec_document(spec.trial_job())
    assert document["trialJobSpec"]["workerPoolSpecs"][0]["replicaCount"] == 1
    assert document["studySpec"]["parameters"][3]["integerValueSpec"] == {
        "minValue": 2,
        "maxValue": 8,
    }
    text = yaml.safe_dump(document, sort_keys=False)
    assert TuningJobSpec.parse(yaml.safe_load(text)) == spec.model_copy(
        update={"project": None, "region": None}
    )


def test_the_gcloud_document_writes_times_and_durations_as_the_api_json_does():
    document = config()
    document["studySpec"]["studyStoppingConfig"] = {
        "maximumRuntimeConstraint": {"endTime": "2030-06-01T12:00:00Z"},
        "maxDurationNoProgress": "90m",
    }
    stopping = tuning_job_document(TuningJobSpec.parse(document))["studySpec"][
        "studyStoppingConfig"
    ]
    assert stopping == {
        "maximumRuntimeConstraint": {"endTime": "2030-06-01T12:00:00Z"},
        "maxDurationNoProgress": "5400s",
    }


def test_validate_tuning_job_checks_what_a_client_sent():
    job = to_tuning_job(tuning(parallelTrialCount=40))
    (violation,) = validate_tuning_job(job, project="vision-ml", region="us-central1")
    assert violation.path == "parallelTrialCount"
    job.study_spec.metrics[0].metric_id = "acc\x00"
    (violation,) = validate_tuning_job(job, project="vision-ml", region="us-central1")
    assert (violation.path, violation.rule) == ("studySpec.metrics[0].metricId", "schema")


ROUND_TRIPS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@ROUND_TRIPS
@given(convertible_tuning())
def test_tuning_job_round_trip_is_lossless(document: dict[str, Any]) -> None:
    spec = TuningJobSpec.parse(document)
    job = to_tuning_job(spec)
    back = from_tuning_job(job, project=spec.project, region=spec.region)
    assert back == spec
    # ...and the other way: HyperparameterTuningJob → spec → HyperparameterTuningJob.
    assert to_tuning_job(back) == job


@ROUND_TRIPS
@given(convertible_tuning())
def test_tuning_document_round_trip(document: dict[str, Any]) -> None:
    spec = TuningJobSpec.parse(document)
    assert TuningJobSpec.parse(spec.to_document()) == spec
    gcloud = tuning_job_document(spec)
    assert TuningJobSpec.parse(gcloud) == spec.model_copy(update={"project": None, "region": None})


def test_a_trial_env_value_of_zero_survives_the_gcloud_document():
    """(An env value "0" was once dropped from the CustomJobSpec document as if unset.)"""
    document = config()
    container = document["trialJobSpec"]["workerPoolSpecs"][0]["containerSpec"]
    container["env"] = {"CUDA_VISIBLE_DEVICES": "0", "EMPTY": ""}
    trial = tuning_job_document(TuningJobSpec.parse(document))["trialJobSpec"]
    assert trial["workerPoolSpecs"][0]["containerSpec"]["env"] == [
        {"name": "CUDA_VISIBLE_DEVICES", "value": "0"},
        {"name": "EMPTY"},
    ]
