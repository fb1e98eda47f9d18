"""Tuning jobs in the stack configuration, under ``pulumi.runtime.Mocks``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components import TuningJobSpec, errors_only, validate_tuning
from components.lifecycle._wire import TUNING_STATUS_FIELDS, encode_spec, merge_env
from components.training_job import TrainingJobInputError
from tests.program.harness import (
    JOB_TYPE,
    MOCK_RUN_KEY,
    REPO,
    RUN_KEY_TYPE,
    TUNING_TYPE,
    StackRun,
    run_stack,
)

ENV_PATH = "trialJobSpec.workerPoolSpecs[0].pythonPackageSpec.env[0].value"
LOCAL_JOBS = [
    {"name": "example-trainer", "spec": "stacks/jobs/local-trainer.yaml"},
    {"name": "example-tuning", "spec": "stacks/jobs/local-tuning.yaml", "waitFor": "succeeded"},
]


def _spec(job: Any) -> dict[str, Any]:
    text = job.inputs["spec"]
    document: dict[str, Any] = json.loads(text)
    assert text == encode_spec(document)
    return document


def test_a_tuning_job_in_the_local_stack_is_a_hyperparameter_tuning_job():
    run = run_stack("local", {"training:jobs": LOCAL_JOBS})
    # Registration order between the two jobs is the engine's: compare as sets.
    assert sorted(r.type for r in run.registrations) == sorted(
        [RUN_KEY_TYPE, JOB_TYPE, TUNING_TYPE]
    )
    tuning = run.one(TUNING_TYPE)
    assert tuning.name == "example-tuning" and TUNING_TYPE in tuning.urn
    assert tuning.inputs["project"] == "local-training"
    assert tuning.inputs["region"] == "us-central1"
    assert tuning.inputs["wait_for"] == "succeeded"
    spec = _spec(tuning)
    assert spec["maxTrialCount"] == 3 and spec["parallelTrialCount"] == 2
    assert spec["studySpec"]["metrics"] == [{"metricId": "loss", "goal": "MINIMIZE"}]
    package = spec["trialJobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]
    # The spec file's relative package path is resolved against the file.
    assert package["packageUris"] == [str(REPO / "examples" / "trainer")]
    # Editing the trainer re-runs the tuning job too (a digest of its source is a trigger).
    assert [t.split(":")[:2] for t in tuning.inputs["triggers"]] == [["package", "trainer"]]
    # The env value is a secret input, under the trial's spec; only its name stays in spec.
    assert package["env"] == [{"name": "TRAINER_RUN_NOTE"}]
    assert tuning.inputs["env_values"] == {ENV_PATH: "local-tuning-demo"}
    assert tuning.secret_inputs == {"env_values", "run_key"}
    assert tuning.additional_secret_outputs == ["env_values"]
    assert "local-tuning-demo" not in tuning.inputs["spec"]
    # One run key for the stack, shared by both kinds of job.
    key = run.one(RUN_KEY_TYPE)
    assert tuning.dependencies == [key.urn] == run.one(JOB_TYPE).dependencies
    assert tuning.inputs["run_key"] == MOCK_RUN_KEY
    full = merge_env(spec, tuning.inputs["env_values"], under="trialJobSpec")
    found = validate_tuning(TuningJobSpec.parse(full), region="us-central1", target="local")
    assert errors_only(found) == []


def test_its_fields_and_the_jobs_output_come_from_its_status():
    run = run_stack("local", {"training:jobs": LOCAL_JOBS})
    fields = run.job_fields["example-tuning"]
    assert fields["job_name"] == "projects/p/locations/r/hyperparameterTuningJobs/example-tuning"
    assert fields["state"] == "JOB_STATE_QUEUED" and fields["wait_for"] == "succeeded"
    exported = run.exports["jobs"]["example-tuning"]
    # (The engine leaves None values out of a stack output: best_trial is not there yet.)
    assert exported["trial_counts"] == {"SUCCEEDED": 0} and exported.get("best_trial") is None
    assert run.exports["jobs"]["example-trainer"]["state"] == "JOB_STATE_QUEUED"


def test_every_status_field_is_an_attribute():
    from components.dynamic._job_resource import DefaultInput, StatusField
    from components.lifecycle._wire import INPUT_DEFAULTS
    from components.tuning_job import HyperparameterTuningJob

    attributes = {n: v for k in HyperparameterTuningJob.__mro__ for n, v in vars(k).items()}
    fields = {n for n, v in attributes.items() if isinstance(v, StatusField)}
    assert fields == set(TUNING_STATUS_FIELDS)
    assert all(getattr(HyperparameterTuningJob, n).field == n for n in fields)
    assert {n for n, v in attributes.items() if isinstance(v, DefaultInput)} == set(INPUT_DEFAULTS)


def test_a_cloud_stack_wires_the_trials_to_the_infrastructure():
    jobs = [{"name": "tune", "spec": "tests/program/data/tuning-t4.yaml", "exclusiveGpus": True}]
    run = run_stack("dev", {"training:jobs": jobs})
    tuning = run.one(TUNING_TYPE)
    assert run.by_type(JOB_TYPE) == []
    assert tuning.inputs["exclusive_gpus"] is True
    trial = _spec(tuning)["trialJobSpec"]
    bucket = run.one("gcp:storage/bucket:Bucket").inputs["name"]
    package = run.one("gcp:storage/bucketObject:BucketObject").inputs["name"]
    [pool] = trial["workerPoolSpecs"]
    assert pool["pythonPackageSpec"]["packageUris"] == [f"gs://{bucket}/{package}"]
    assert trial["baseOutputDirectory"] == f"gs://{bucket}/jobs/tune"
    assert trial["serviceAccount"].endswith(".iam.gserviceaccount.com")
    assert run.urn_of("gcp:storage/bucketObject:BucketObject") in tuning.dependencies
    assert tuning.inputs["env_values"] == {ENV_PATH: "tuning-secret-value"}
    assert "env_values" in tuning.secret_inputs
    assert "tuning-secret-value" not in tuning.inputs["spec"]


def test_an_invalid_tuning_job_registers_nothing_and_names_its_problems():
    jobs = [
        {"name": "good", "spec": "stacks/jobs/local-trainer.yaml"},
        {"name": "bad-tuning", "spec": "tests/program/data/tuning-bad.yaml"},
    ]
    record = StackRun()
    with pytest.raises(TrainingJobInputError, match=r"^nothing was changed, because:") as info:
        run_stack("local", {"training:jobs": jobs}, record=record)
    message = str(info.value)
    assert "HyperparameterTuningJob 'bad-tuning' is invalid" in message
    assert "studySpec.metrics[0].goal" in message
    assert "trialJobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount" in message
    assert record.by_type(JOB_TYPE) == [] and record.by_type(TUNING_TYPE) == []


def test_a_tuning_job_region_without_its_gpu_fails_naming_gcp_region():
    jobs = [{"name": "tune", "spec": "tests/program/data/tuning-t4.yaml"}]
    with pytest.raises(TrainingJobInputError) as info:
        run_stack("dev", {"training:jobs": jobs, "gcp:region": "me-central2"})
    assert "NVIDIA_TESLA_T4 is not offered in" in str(info.value)
