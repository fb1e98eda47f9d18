"""The tuning job spec model: what it reads, how it refuses what it cannot hold."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from components import JobSpec, SpecInvalidError, TrialJobSpec, TuningJobSpec
from components.rules._tuning_spec import TUNING_JOB_OUTPUT_ONLY, output_only_fields
from tests.spec.tuning_helpers import config, tuning


def _violations(document: object) -> list[str]:
    with pytest.raises(SpecInvalidError) as info:
        TuningJobSpec.parse(document)
    return [str(v) for v in info.value.violations]


def test_the_gcloud_config_is_read_field_by_field():
    spec = tuning()
    study = spec.study_spec
    assert (spec.display_name, spec.max_trial_count, spec.parallel_trial_count) == (
        "cifar10-sweep",
        24,
        4,
    )
    assert spec.max_failed_trial_count == 3
    assert [(m.metric_id, m.goal) for m in study.metrics] == [("val_accuracy", "MAXIMIZE")]
    lr, batch, optimizer, layers = study.parameters
    assert lr.double_value_spec is not None
    assert (lr.double_value_spec.min_value, lr.double_value_spec.max_value) == (0.0001, 0.1)
    assert lr.scale_type == "UNIT_LOG_SCALE"
    assert batch.discrete_value_spec is not None
    assert batch.discrete_value_spec.values == [32.0, 64.0, 128.0]
    child = optimizer.conditional_parameter_specs[0]
    assert child.parent_categorical_values is not None
    assert child.parent_categorical_values.values == ["sgd"]
    assert child.parameter_spec is not None and child.parameter_spec.parameter_id == "momentum"
    assert layers.integer_value_spec is not None and layers.integer_value_spec.max_value == 8
    assert study.algorithm == "RANDOM_SEARCH"
    assert study.median_automated_stopping_spec is not None
    trial = spec.trial_job_spec
    assert trial.base_output_directory == "gs://vision-ml/sweeps/cifar10"
    assert trial.worker_pool_specs[0].container_spec is not None
    assert trial.worker_pool_specs[0].container_spec.args == ["--epochs=20"]


def test_single_values_stand_for_lists_as_gcloud_reads_them():
    document = config()
    document["studySpec"]["metrics"] = {"metricId": "loss", "goal": "MINIMIZE"}
    document["studySpec"]["parameters"][1]["discreteValueSpec"]["values"] = 64
    document["studySpec"]["parameters"][2]["conditionalParameterSpecs"][0][
        "parentCategoricalValues"
    ]["values"] = "sgd"
    document["trialJobSpec"]["workerPoolSpecs"] = document["trialJobSpec"]["workerPoolSpecs"][0]
    spec = TuningJobSpec.parse(document)
    assert [m.metric_id for m in spec.study_spec.metrics] == ["loss"]
    discrete = spec.study_spec.parameters[1].discrete_value_spec
    assert discrete is not None and discrete.values == [64.0]
    condition = spec.study_spec.parameters[2].conditional_parameter_specs[0]
    assert condition.parent_categorical_values is not None
    assert condition.parent_categorical_values.values == ["sgd"]
    assert len(spec.trial_job_spec.worker_pool_specs) == 1


def test_a_described_job_is_read_without_its_output_only_fields():
    document = config()
    described = {
        "name": "projects/123/locations/us-central1/hyperparameterTuningJobs/987",
        **document,
        "state": "JOB_STATE_SUCCEEDED",
        "trials": [{"id": "1", "state": "SUCCEEDED", "parameters": []}],
        "createTime": "2025-03-01T10:00:00Z",
        "error": {"code": 1},
        "satisfiesPzs": False,
    }
    assert TuningJobSpec.parse(described) == TuningJobSpec.parse(document)
    assert output_only_fields(described) == [
        "name",
        "state",
        "trials",
        "createTime",
        "error",
        "satisfiesPzs",
    ]
    assert output_only_fields(document) == []
    assert output_only_fields(["name"]) == []
    assert "trials" in TUNING_JOB_OUTPUT_ONLY and "trial_job_spec" not in TUNING_JOB_OUTPUT_ONLY


def test_the_api_json_forms_are_read():
    """What `describe --format=json` prints: int64 as strings, enums' unspecified names."""
    document = config()
    document["studySpec"]["parameters"][3]["integerValueSpec"] = {"minValue": "2", "maxValue": "8"}
    document["studySpec"]["algorithm"] = "ALGORITHM_UNSPECIFIED"
    document["studySpec"]["metrics"][0]["goal"] = "GOAL_TYPE_UNSPECIFIED"
    document["studySpec"]["parameters"][0]["scaleType"] = "SCALE_TYPE_UNSPECIFIED"
    document["studySpec"]["observationNoise"] = "OBSERVATION_NOISE_UNSPECIFIED"
    spec = TuningJobSpec.parse(document)
    integer = spec.study_spec.parameters[3].integer_value_spec
    assert integer is not None and (integer.min_value, integer.max_value) == (2, 8)
    assert spec.study_spec.algorithm is None
    assert spec.study_spec.metrics[0].goal is None
    assert spec.study_spec.parameters[0].scale_type is None
    assert spec.study_spec.observation_noise is None
    assert "algorithm" not in spec.to_document()["studySpec"]


def test_snake_case_names_are_read_too():
    spec = TuningJobSpec.parse(
        {
            "max_trial_count": 2,
            "study_spec": {"metrics": [{"metric_id": "auc", "goal": "MAXIMIZE"}]},
            "trial_job_spec": {"worker_pool_specs": []},
        }
    )
    assert spec.max_trial_count == 2 and spec.study_spec.metrics[0].metric_id == "auc"


def test_a_stopping_time_without_a_zone_is_utc():
    document = config()
    document["studySpec"]["studyStoppingConfig"] = {
        "maximumRuntimeConstraint": {"endTime": "2030-06-01T12:00:00"},
        "minimumRuntimeConstraint": {"endTime": "2030-06-01T14:00:00+02:00"},
        "maxDurationNoProgress": "2h",
    }
    stopping = TuningJobSpec.parse(document).study_spec.study_stopping_config
    assert stopping is not None
    assert stopping.maximum_runtime_constraint is not None
    assert stopping.maximum_runtime_constraint.end_time == datetime(2030, 6, 1, 12, tzinfo=UTC)
    assert stopping.minimum_runtime_constraint is not None
    end = stopping.minimum_runtime_constraint.end_time
    assert end is not None and end.tzinfo == UTC and end.hour == 12
    assert stopping.max_duration_no_progress is not None
    assert stopping.max_duration_no_progress.total_seconds() == 7200


def test_an_unknown_field_is_named_by_its_whole_path_with_the_nearest_name():
    document = config()
    document["studySpec"]["parameters"][0]["doubleValueSpec"]["maxValu"] = 1
    assert _violations(document) == [
        "studySpec.parameters[0].doubleValueSpec.maxValu: is not a field of this object "
        "(did you mean maxValue?)"
    ]


def test_job_level_fields_inside_the_trial_spec_are_refused():
    """Labels, display name and key belong to the tuning job; the trial has no place for them."""
    document = config()
    document["trialJobSpec"]["labels"] = {"team": "vision"}
    (found,) = _violations(document)
    assert found.startswith("trialJobSpec.labels: is not a field of this object")
    assert "workerPoolSpecs" in found and "displayName" not in found


@pytest.mark.parametrize(
    ("where", "value", "expected"),
    [
        (("parameters", 3, "integerValueSpec", "minValue"), 1.5, "must be a whole number"),
        (("parameters", 0, "doubleValueSpec", "minValue"), "tiny", "must be a number"),
        (("parameters", 0, "doubleValueSpec", "maxValue"), float("inf"), "must be a finite number"),
        (("metrics", 0, "metricId"), "val\x00acc", "must not contain NUL bytes"),
        (("parameters", 1, "discreteValueSpec", "values"), {"a": 1}, "must be a list"),
    ],
)
def test_values_the_model_cannot_hold(where, value, expected):
    document = config()
    target = document["studySpec"]
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    path = "studySpec." + ".".join(
        f"[{k}]" if isinstance(k, int) else str(k) for k in where
    ).replace(".[", "[")
    assert _violations(document) == [f"{path}: {expected}"]


def test_a_too_large_trial_count_is_refused():
    assert _violations({"maxTrialCount": 2**31}) == ["maxTrialCount: must be at most 2147483647"]


def test_the_trial_job_carries_the_tuning_jobs_own_fields():
    spec = tuning(
        project="vision-ml",
        region="us-central1",
        encryptionSpec={"kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"},
    )
    job = spec.trial_job()
    assert isinstance(job, JobSpec)
    assert (job.project, job.region, job.display_name) == (
        "vision-ml",
        "us-central1",
        "cifar10-sweep",
    )
    assert job.labels == {"team": "vision"}
    assert job.kms_key_name == "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"
    assert job.worker_pool_specs == spec.trial_job_spec.worker_pool_specs
    assert job.base_output_directory == "gs://vision-ml/sweeps/cifar10"


def test_the_trial_spec_has_every_field_of_a_custom_job_spec():
    """TrialJobSpec lists JobSpec's fields less the tuning job's: a field added to one is added
    to the other."""
    job_level = {"project", "region", "display_name", "labels", "encryption_spec"}
    assert set(TrialJobSpec.model_fields) == set(JobSpec.model_fields) - job_level
    for name in TrialJobSpec.model_fields:
        assert TrialJobSpec.model_fields[name].annotation == JobSpec.model_fields[name].annotation


def test_the_document_leaves_out_what_is_unset_and_reads_back_the_same():
    spec = tuning(project="vision-ml")
    document = spec.to_document()
    assert document["project"] == "vision-ml"
    assert "maxFailedTrialCount" in document and "region" not in document
    assert "observationNoise" not in document["studySpec"]
    assert document["studySpec"]["parameters"][0]["doubleValueSpec"] == {
        "minValue": 0.0001,
        "maxValue": 0.1,
    }
    assert TuningJobSpec.parse(document) == spec


def test_an_empty_document_is_an_empty_spec():
    spec = TuningJobSpec.parse({})
    assert spec.max_trial_count == 0 and spec.study_spec.parameters == []
    assert spec.to_document() == {}
    assert _violations(["not", "a", "job"])[0].startswith("(document):")
