"""Issue 35: what the program registers and says about a run's output directory and record.

A job whose output directory the cloud wiring chose gets it as ``output_root`` (the provider
then gives each run a directory of its own under it); a spec that names its own has none, and
the preview of its replace warns that the new run finds the old run's checkpoints.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.config import ConfigError
from components.lifecycle._adoption import identity_label
from components.lifecycle._wire import TRAINING_JOB_TYPE, decode_spec, encode_spec
from tests.program.harness import JOB_TYPE, TUNING_TYPE, run_stack

HELD = "projects/local-training/locations/us-central1/customJobs/777"


def test_a_wired_output_directory_is_registered_as_the_runs_root(logs):
    run = run_stack("dev")
    job = run.one(JOB_TYPE)
    spec = decode_spec(job.inputs["spec"])
    assert job.inputs["output_root"] == spec["baseOutputDirectory"]
    assert spec["baseOutputDirectory"].endswith("/jobs/t4-spot")  # the spec is as before
    [said] = [m for m in logs["info"] if m.startswith("t4-spot: a new run writes")]
    assert (
        f"{spec['baseOutputDirectory']}/runs/" in said or "gs://<bucket>/jobs/t4-spot/runs/" in said
    )


def test_a_directory_the_spec_names_is_no_root_and_says_nothing_without_a_replace(logs):
    run = run_stack("local")
    for job in run.by_type(JOB_TYPE) + run.by_type(TUNING_TYPE):
        assert "output_root" not in job.inputs
    assert not [m for m in logs["warn"] if "baseOutputDirectory" in m]


def _held_state(registered: dict[str, Any], state: str) -> dict[str, Any]:
    """A checkpoint holding the job ``registered`` (a job's inputs) with another spec."""
    spec = decode_spec(registered["spec"])
    pool = spec["workerPoolSpecs"][0]["pythonPackageSpec"]
    pool["args"] = [*pool["args"], "--old"]
    identity = identity_label("gpu-training", "local", "example-trainer")
    return {
        f"urn:pulumi:local::gpu-training::{TRAINING_JOB_TYPE}::example-trainer": {
            "type": TRAINING_JOB_TYPE,
            "outputs": {
                "identity": identity,
                "spec": encode_spec(spec),
                "project": registered["project"],
                "region": registered["region"],
                "triggers": registered.get("triggers"),
                "status": {"job_name": HELD, "state": state},
            },
        }
    }


@pytest.mark.parametrize("state", ["JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED"])
def test_the_replace_of_a_job_whose_spec_names_its_directory_warns(logs, state):
    registered = run_stack("local").one(JOB_TYPE).inputs
    logs["warn"].clear()
    run_stack("local", stack_state=_held_state(registered, state))
    written = decode_spec(registered["spec"])["baseOutputDirectory"]
    [warning] = [m for m in logs["warn"] if "baseOutputDirectory" in m]
    assert warning.startswith(f"example-trainer: the new run writes {written}")
    assert "resumes that run" in warning


def test_record_and_run_settings_are_registered_only_when_asked():
    plain = run_stack("local").one(JOB_TYPE).inputs
    assert not {"delete_record_on_delete", "continue_last_run"} & set(plain)
    entry = {
        "name": "example-trainer",
        "spec": "stacks/jobs/local-trainer.yaml",
        "deleteRecordOnDelete": True,
        "continueLastRun": True,
    }
    asked = run_stack("local", {"training:jobs": [entry]}).one(JOB_TYPE).inputs
    assert asked["delete_record_on_delete"] is True and asked["continue_last_run"] is True


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (
            {"training:jobs": [{"spec": "stacks/jobs/local-trainer.yaml", "continueLastRun": "y"}]},
            "training:jobs[0].continueLastRun",
        ),
        ({"training:deleteRecords": "sometimes"}, "training:deleteRecords"),
        ({"training:continueLastRun": "3"}, "training:continueLastRun"),
    ],
)
def test_bad_record_and_run_settings_name_their_key(overrides, key):
    config = {k: json.dumps(v) if not isinstance(v, str) else v for k, v in overrides.items()}
    with pytest.raises(ConfigError, match=key.replace("[", r"\[").replace("]", r"\]")):
        run_stack("local", config)
