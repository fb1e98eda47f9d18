"""The program for each stack under ``pulumi.runtime.Mocks``: resources, wiring, secrets."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components import errors_only, validate
from components.config import ConfigError
from components.lifecycle._settings import target_for_endpoint
from components.lifecycle._wire import TUNING_JOB_TYPE, encode_spec, merge_env
from components.rules._spec import JobSpec
from components.training_job import TrainingJobInputError
from tests.program.harness import (
    JOB_TYPE,
    MOCK_RUN_KEY,
    REPO,
    RUN_KEY_TYPE,
    StackRun,
    run_stack,
    stack_config,
)

INFRA = "gpu-training:infra:TrainingInfra"
BUCKET = "gcp:storage/bucket:Bucket"
SERVICE = "gcp:projects/service:Service"
ACCOUNT = "gcp:serviceaccount/account:Account"
BUCKET_MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
OBJECT = "gcp:storage/bucketObject:BucketObject"


def _pools(spec: dict[str, Any]) -> list[dict[str, Any]]:
    pools: list[dict[str, Any]] = spec["workerPoolSpecs"]
    return pools


def _spec(job: Any) -> dict[str, Any]:
    """The job's spec document; on the wire it is canonical JSON text."""
    text = job.inputs["spec"]
    assert isinstance(text, str)
    document: dict[str, Any] = json.loads(text)
    assert text == encode_spec(document)
    return document


def test_local_stack_is_a_job_and_a_tuning_job_on_the_emulator_with_no_cloud_resources():
    run = run_stack("local")
    # Registration order between the two jobs is the engine's: compare as sets.
    expected = [RUN_KEY_TYPE, JOB_TYPE, TUNING_JOB_TYPE]
    assert sorted(r.type for r in run.registrations) == sorted(expected)
    tuning = run.one(TUNING_JOB_TYPE)
    assert tuning.name == "example-tuning" and tuning.inputs["wait_for"] == "succeeded"
    trial_package = _spec(tuning)["trialJobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]
    assert trial_package["packageUris"] == [str(REPO / "examples" / "trainer")]
    job = run.one(JOB_TYPE)
    assert job.name == "example-trainer"
    assert job.inputs["project"] == "local-training"
    assert job.inputs["region"] == "us-central1"
    assert job.inputs["wait_for"] == "succeeded"
    assert job.inputs["wait_timeout"] == 600
    package = _pools(_spec(job))[0]["pythonPackageSpec"]
    # The spec file's relative path is resolved against the file, to the example trainer.
    assert package["packageUris"] == [str(REPO / "examples" / "trainer")]
    assert package["pythonModule"] == "trainer.task"
    assert "--epochs" in package["args"]
    # A digest of the trainer source is a trigger: editing the trainer re-runs the job.
    assert len(job.inputs["triggers"]) == 1 and job.inputs["triggers"][0].startswith(
        "package:trainer:"
    )
    # The stack's run key is the job's only dependency, and it travels as a secret.
    key = run.one(RUN_KEY_TYPE)
    assert job.dependencies == [key.urn]
    assert key.additional_secret_outputs == ["key"]
    assert job.inputs["run_key"] == MOCK_RUN_KEY and "run_key" in job.secret_inputs


def test_env_values_are_a_secret_input_and_absent_from_the_spec():
    job = run_stack("local").one(JOB_TYPE)
    assert job.secret_inputs == {"env_values", "run_key"}
    assert job.additional_secret_outputs == ["env_values"]
    assert job.inputs["env_values"] == {
        "workerPoolSpecs[0].pythonPackageSpec.env[0].value": "local-demo"
    }
    env = _pools(_spec(job))[0]["pythonPackageSpec"]["env"]
    assert env == [{"name": "TRAINER_RUN_NOTE"}]
    assert "local-demo" not in job.inputs["spec"]


def test_identity_is_a_hash_of_project_stack_and_name():
    from components.lifecycle._adoption import identity_label

    local = run_stack("local").one(JOB_TYPE)
    assert local.inputs["identity"] == identity_label("gpu-training", "local", "example-trainer")
    assert local.inputs["identity"] != identity_label("gpu-training", "dev", "example-trainer")


def _infra_checks(run: StackRun, region: str) -> dict[str, Any]:
    component = run.one(INFRA)
    for typ in (SERVICE, BUCKET, ACCOUNT, BUCKET_MEMBER, OBJECT):
        assert run.one(typ).parent == component.urn, f"{typ} is not a child of the component"
    assert run.one(SERVICE).inputs["service"] == "aiplatform.googleapis.com"
    assert run.one(SERVICE).inputs["disableOnDestroy"] is False
    bucket = run.one(BUCKET).inputs
    assert bucket["location"] == region.upper()
    assert bucket["uniformBucketLevelAccess"] is True
    assert bucket["publicAccessPrevention"] == "enforced"
    actions = [rule["action"]["type"] for rule in bucket["lifecycleRules"]]
    assert "Delete" in actions and "AbortIncompleteMultipartUpload" in actions
    member = run.one(BUCKET_MEMBER).inputs
    assert member["role"] == "roles/storage.objectAdmin"
    assert member["bucket"] == bucket["name"]
    assert member["member"].startswith("serviceAccount:")
    package = run.one(OBJECT).inputs
    assert package["bucket"] == bucket["name"]
    assert package["name"].startswith("packages/") and package["name"].endswith(
        "/trainer-0.1.0.tar.gz"
    )
    job = run.one(JOB_TYPE)
    # The job waits for the whole component (API enabled, IAM granted, package uploaded):
    # the SDK expands a dependency on a component into its children.
    children = [r.urn for r in run.registrations if r.parent == component.urn]
    assert len(children) == 5
    assert set(children) <= set(job.dependencies)
    assert run.urn_of(OBJECT) in job.property_dependencies["spec"]
    spec = _spec(job)
    for pool in _pools(spec):
        uris = pool["pythonPackageSpec"]["packageUris"]
        assert uris == [f"gs://{bucket['name']}/{package['name']}"]
    assert (
        spec["serviceAccount"]
        == f"{run.one(ACCOUNT).inputs['accountId']}@{run.one(ACCOUNT).inputs['project']}.iam.gserviceaccount.com"
    )
    assert spec["baseOutputDirectory"] == f"gs://{bucket['name']}/jobs/{job.name}"
    return spec


def test_dev_stack_is_a_small_t4_spot_job_in_us_central1():
    run = run_stack("dev")
    spec = _infra_checks(run, "us-central1")
    job = run.one(JOB_TYPE)
    assert job.inputs["region"] == "us-central1"
    assert job.inputs["project"] == "gpu-training-dev"
    (pool,) = _pools(spec)
    assert pool["machineSpec"] == {
        "machineType": "n1-standard-4",
        "acceleratorType": "NVIDIA_TESLA_T4",
        "acceleratorCount": 1,
    }
    assert spec["scheduling"]["strategy"] == "SPOT"
    assert "exclusive_gpus" not in job.inputs  # false, the default: check puts it back
    assert "env_values" not in job.inputs  # no env vars in this job


def test_prod_stack_is_a_multi_worker_a100_job_in_us_central1():
    run = run_stack("prod")
    spec = _infra_checks(run, "us-central1")
    job = run.one(JOB_TYPE)
    assert job.inputs["region"] == "us-central1"
    chief, workers = _pools(spec)
    assert chief["machineSpec"]["machineType"].startswith("a2-highgpu-")
    assert chief["machineSpec"]["acceleratorType"] == "NVIDIA_TESLA_A100"
    assert workers["machineSpec"]["machineType"].startswith("a2-highgpu-")
    assert workers["machineSpec"]["acceleratorType"] == "NVIDIA_TESLA_A100"
    assert workers["replicaCount"] == 2
    assert job.inputs["exclusive_gpus"] is True
    assert job.inputs["wait_for"] == "running"
    assert job.inputs["wait_timeout"] == 7200


def test_same_source_same_package_object_name():
    first = run_stack("dev").one(OBJECT).inputs["name"]
    second = run_stack("dev").one(OBJECT).inputs["name"]
    assert first == second


def test_job_fields_and_the_jobs_output_come_from_the_one_status_output():
    run = run_stack("local")
    job = run.one(JOB_TYPE)
    assert not {"status", "job_name", "state", "model_dir"} & set(job.inputs)
    fields = run.job_fields["example-trainer"]
    assert fields["job_name"] == "projects/p/locations/r/customJobs/example-trainer"
    assert fields["state"] == "JOB_STATE_QUEUED"
    assert run.exports["jobs"]["example-trainer"]["state"] == "JOB_STATE_QUEUED"
    resource = run.program.jobs["example-trainer"]
    assert resource.state is resource.state  # made once, then kept


def test_every_status_field_and_every_default_input_is_an_attribute():
    from components.lifecycle._wire import INPUT_DEFAULTS, STATUS_FIELDS
    from components.training_job import TrainingJob, _DefaultInput, _StatusField

    # Some are the class's own, the others every job resource's (its base class).
    attributes = {n: v for klass in TrainingJob.__mro__ for n, v in vars(klass).items()}
    fields = {n for n, v in attributes.items() if isinstance(v, _StatusField)}
    assert fields == set(STATUS_FIELDS)
    assert all(getattr(TrainingJob, n).field == n for n in fields)
    defaults = {n for n, v in attributes.items() if isinstance(v, _DefaultInput)}
    assert defaults == set(INPUT_DEFAULTS)


def test_inputs_at_their_defaults_are_not_registered_and_read_as_the_default():
    local = run_stack("local").one(JOB_TYPE)
    assert "env_values" in local.inputs and "env_values" in local.secret_inputs  # TRAINER_RUN_NOTE
    assert local.inputs["wait_timeout"] == 600 and local.inputs["wait_for"] == "succeeded"
    run = run_stack("dev")  # waitFor: submitted, the default
    job = run.one(JOB_TYPE)
    absent = {"triggers", "wait_timeout", "wait_for", "exclusive_gpus", "keep_record_on_delete"}
    assert not absent & set(job.inputs)
    fields = run.job_fields["t4-spot"]
    assert fields["triggers"] is None and fields["wait_timeout"] is None
    assert fields["wait_for"] == "submitted"


@pytest.mark.parametrize("stack", ["local", "dev", "prod"])
def test_every_stack_validates_clean(stack):
    run = run_stack(stack)
    endpoint = stack_config(stack).get("training:endpoint")
    for job in run.by_type(JOB_TYPE):
        document = merge_env(_spec(job), job.inputs.get("env_values"))
        spec = JobSpec.parse(document)
        found = validate(spec, region=job.inputs["region"], target=target_for_endpoint(endpoint))
        assert errors_only(found) == [], found


def test_prod_in_a_region_without_a100_fails_with_the_validators_message():
    with pytest.raises(TrainingJobInputError) as info:
        run_stack("prod", {"gcp:region": "us-west2"})
    message = str(info.value)
    assert "workerPoolSpecs[0].machineSpec.acceleratorType" in message
    assert "NVIDIA_TESLA_A100 is not offered in us-west2" in message
    assert "Traceback" not in message


def test_dev_in_a_region_without_t4_fails():
    with pytest.raises(TrainingJobInputError, match="NVIDIA_TESLA_T4 is not offered in"):
        run_stack("dev", {"gcp:region": "me-central2"})


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"gcp:project": None}, "gcp:project"),
        (
            {"training:jobs": [{"name": "x", "spec": "stacks/jobs/nope.yaml"}]},
            "training:jobs[0].spec",
        ),
        (
            {"training:jobs": [{"spec": "stacks/jobs/local-trainer.yaml", "waitFor": "done"}]},
            "training:jobs[0].waitFor",
        ),
        (
            {"training:jobs": [{"spec": "stacks/jobs/local-trainer.yaml", "colour": "red"}]},
            "training:jobs[0].colour",
        ),
        (
            {"training:jobs": [{"spec": "stacks/jobs/local-trainer.yaml", "waitTimeout": "soon"}]},
            "training:jobs[0].waitTimeout",
        ),
        ({"training:endpoint": "127.0.0.1:8642"}, "training:endpoint"),
    ],
)
def test_bad_config_names_the_key(overrides, key, monkeypatch):
    from components.lifecycle._settings import PROJECT_ENV, REGION_ENV

    for variable in (*PROJECT_ENV, *REGION_ENV):  # a key left out is not read from here either
        monkeypatch.delenv(variable, raising=False)
    config = {k: v for k, v in overrides.items() if v is not None}
    if None in overrides.values():
        # Leave the key out entirely.
        from tests.program import harness

        base = harness.stack_config("local")
        for k, v in overrides.items():
            if v is None:
                base.pop(k)
        import pulumi

        pulumi.runtime.set_all_config(base)
        from components.config import load_stack_config

        with pytest.raises(ConfigError, match=key):
            load_stack_config()
        return
    with pytest.raises(ConfigError, match=key.replace("[", r"\[").replace("]", r"\]")):
        run_stack("local", config)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"training:endpoint": "http://[::1"},
            "training:endpoint: 'http://[::1' is not a valid URL",
        ),
        ({"training:endpoint": "http://"}, "training:endpoint: 'http://' names no host"),
        ({"training:endpoint": "http://127.0.0.1:99999"}, "training:endpoint: 'http://127.0.0.1"),
        ({"training:endpoint": "http://127.0.0.1:8642/v1"}, "has a path, query or fragment"),
        ({"training:cancelTimeout": "nan"}, "training:cancelTimeout: expected a finite number"),
        ({"training:retryDeadline": "inf"}, "training:retryDeadline: expected a finite number"),
        ({"training:retryDeadline": "-3"}, "training:retryDeadline: must be greater than zero"),
        ({"training:cancelTimeout": "1e12"}, "training:cancelTimeout: at most 604800 seconds"),
        (
            {"training:jobs": [{"spec": "stacks/jobs"}]},
            "training:jobs[0].spec: stacks/jobs is a directory",
        ),
        ({"training:jobs": [{"spec": "/dev/null"}]}, "is not a regular file, not a spec file"),
        ({"training:jobs": [{"spec": "stacks/jobs/a\u0000b.yaml"}]}, "holds a NUL byte"),
    ],
)
def test_bad_settings_are_refused_naming_the_key(overrides, message):
    with pytest.raises(ConfigError) as info:
        run_stack("local", overrides)
    assert message in str(info.value)
    assert "Traceback" not in str(info.value)


def test_endpoint_credentials_never_show_in_messages():
    with pytest.raises(ConfigError) as info:
        run_stack("local", {"training:endpoint": "http://user:s3cret@127.0.0.1:8642/path"})
    assert "s3cret" not in str(info.value) and "127.0.0.1:8642/path" in str(info.value)


def test_region_problems_name_gcp_region():
    with pytest.raises(TrainingJobInputError) as info:
        run_stack("local", {"gcp:region": "us-centrall"})
    message = str(info.value)
    assert "gcp:region: unknown region 'us-centrall' (did you mean us-central1" in message
    assert "\n  region:" not in message


def test_one_invalid_job_registers_nothing_and_names_every_problem():
    from tests.program.harness import StackRun

    jobs = [
        {"name": "good", "spec": "stacks/jobs/local-trainer.yaml", "waitFor": "submitted"},
        {"name": "bad", "spec": "tests/program/data/three-t4.yaml"},
        {"name": "also-bad", "spec": "tests/program/data/three-t4.yaml"},
    ]
    record = StackRun()
    with pytest.raises(TrainingJobInputError) as info:
        run_stack("local", {"training:jobs": jobs}, record=record)
    message = str(info.value)
    assert message.startswith("nothing was changed, because:")
    assert (
        "TrainingJob 'bad' is invalid" in message and "TrainingJob 'also-bad' is invalid" in message
    )
    assert "allowed counts of NVIDIA_TESLA_T4 on n1-highcpu-16: 1, 2, 4" in message
    assert record.by_type(JOB_TYPE) == []  # the valid job did not start either
