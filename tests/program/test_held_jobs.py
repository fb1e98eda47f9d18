"""The program tells each job resource which job the stack's state holds for it (``held_jobs``),
takes over a job named by ``existingJob``, and cancels first on any replace with
``exclusiveGpus`` (the engine's own replaces included)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components.dynamic._stack_state import jobs_by_identity
from components.lifecycle._adoption import identity_label
from components.lifecycle._wire import TRAINING_JOB_TYPE, TUNING_JOB_TYPE
from tests.program.harness import JOB_TYPE, REPO, TUNING_TYPE, run_stack

HELD = "projects/local-training/locations/us-central1/customJobs/777"


def _state_of(identity: str, job_name: str, type_token: str = TRAINING_JOB_TYPE) -> dict[str, Any]:
    """A checkpoint's resources as ``readStackResourceOutputs`` returns them."""
    return {
        f"urn:pulumi:local::gpu-training::{type_token}::whatever": {
            "type": type_token,
            "outputs": {"identity": identity, "status": {"job_name": job_name}},
        }
    }


def test_a_job_the_state_holds_is_passed_to_its_resource():
    identity = identity_label("gpu-training", "local", "example-trainer")
    run = run_stack("local", stack_state=_state_of(identity, HELD))
    [job] = run.by_type(JOB_TYPE)
    assert job.inputs["held_jobs"] == [HELD]
    # The tuning job has another identity (its type is part of it): it holds nothing.
    [tuning] = run.by_type(TUNING_TYPE)
    assert "held_jobs" not in tuning.inputs


def test_with_nothing_held_nothing_is_registered():
    run = run_stack("local")
    for job in run.by_type(JOB_TYPE) + run.by_type(TUNING_TYPE):
        assert "held_jobs" not in job.inputs


def test_the_identity_of_a_tuning_job_counts_its_type():
    run = run_stack("local")
    [tuning] = run.by_type(TUNING_TYPE)
    assert tuning.inputs["identity"] == identity_label(
        "gpu-training", "local", "example-tuning", TUNING_JOB_TYPE
    )
    assert tuning.inputs["identity"] != identity_label("gpu-training", "local", "example-tuning")


def test_jobs_by_identity_reads_every_job_kind_and_old_top_level_outputs():
    resources: dict[str, Any] = {
        **_state_of("a", "projects/p/locations/r/customJobs/1"),
        **_state_of("b", "projects/p/locations/r/hyperparameterTuningJobs/2", TUNING_JOB_TYPE),
        "urn:pulumi:s::p::pulumi-python:dynamic/vertex:TrainingJob::old": {
            "type": TRAINING_JOB_TYPE,
            "outputs": {"identity": "c", "job_name": "projects/p/locations/r/customJobs/3"},
        },
        "urn:pulumi:s::p::gcp:storage/bucket:Bucket::b": {
            "type": "gcp:storage/bucket:Bucket",
            "outputs": {"identity": "a", "job_name": "not a job"},
        },
        "urn:pulumi:s::p::pulumi-python:dynamic/vertex:TrainingJob::broken": "not a mapping",
    }
    assert jobs_by_identity(resources) == {
        "a": ["projects/p/locations/r/customJobs/1"],
        "b": ["projects/p/locations/r/hyperparameterTuningJobs/2"],
        "c": ["projects/p/locations/r/customJobs/3"],
    }


def test_no_job_asks_delete_before_replace_its_create_stops_the_held_jobs():
    """``pulumi up --replace`` asks no provider's diff, and a resource deleted first stays in
    the state only as pending replacement, which a refresh never reads (issue 42: a killed
    ``exclusiveGpus`` replace left the new job unnamed). So no job resource asks
    ``delete_before_replace`` (with ``exclusiveGpus``, or ``continueLastRun`` on the entry or
    the stack): its create stops the held jobs first (``held_jobs``; the e2e table's
    ``test_a_refused_replace_fails_first_and_exclusive_gpus_or_continue_last_run_stop_first``)."""
    for stack, config in (
        ("prod", None),
        ("dev", None),
        ("dev", {"training:continueLastRun": "true"}),
    ):
        jobs = run_stack(stack, config).by_type(JOB_TYPE)
        assert jobs and [job.delete_before_replace for job in jobs] == [False] * len(jobs)


def test_an_existing_job_entry_is_taken_over_as_written(tmp_path):
    """A cloud stack fills in package, account and output dir, but not for a job taken over."""
    spec_file = tmp_path / "imported.yaml"
    document = yaml.safe_load((REPO / "stacks/jobs/dev-t4-spot.yaml").read_text())
    # What `python -m components import` writes has the job's own package.
    package = document["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]
    package["packageUris"] = ["gs://bkt/t.tar.gz"]
    spec_file.write_text(yaml.safe_dump(document))
    existing = "projects/gpu-training-dev/locations/us-central1/customJobs/42"
    jobs = [{"name": "t4-spot", "spec": str(spec_file), "existingJob": existing}]
    run = run_stack("dev", {"training:jobs": jobs})
    [job] = run.by_type(JOB_TYPE)
    assert job.inputs["existing_job"] == existing
    spec = job.inputs["spec"]
    assert "gs://planned" not in spec and "baseOutputDirectory" not in spec
    assert "gs://bkt/t.tar.gz" in spec


@pytest.mark.parametrize(
    ("existing", "message"),
    [
        ("customJobs/42", "training:jobs[0].existingJob: expected a job's resource name"),
        (42, "training:jobs[0].existingJob: expected a job's resource name"),
        (
            "projects/gpu-training-dev/locations/europe-west4/customJobs/42",
            "existing_job: names a job in europe-west4, but the resource runs in us-central1",
        ),
        (
            "projects/another-project/locations/us-central1/customJobs/42",
            "existing_job: names a job of project another-project, but the resource's is",
        ),
    ],
)
def test_a_bad_existing_job_is_refused_naming_it(existing: Any, message: str):
    jobs = [{"name": "t4-spot", "spec": "stacks/jobs/dev-t4-spot.yaml", "existingJob": existing}]
    with pytest.raises(Exception, match=message.replace("[", r"\[").replace("]", r"\]")):
        run_stack("dev", {"training:jobs": jobs})
