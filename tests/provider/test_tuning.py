"""The HyperparameterTuningJob provider: the TrainingJob's guarantees, for a tuning job.

check and diff, then create/read/update/delete against a simulate-mode emulator through the
real REST client (trials really run there: each is a CustomJob that moves through its states on
timers and gets a made-up measurement), and the provider's pickle.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import textwrap
from typing import Any

import dill
import pytest
from google.api_core import exceptions as gexc
from google.cloud.aiplatform_v1 import JobState
from pulumi.dynamic.dynamic import serialize_provider

from components._tuning_provider import TuningJobProvider
from components.lifecycle._check import TUNING_JOB_SPEC, check_inputs
from components.lifecycle._wire import TUNING_STATUS_FIELDS, decode_spec, encode_spec
from components.vertex.api import JobOperationError, best_trial
from emulator.names import derived_number
from emulator.testing import EmulatorProcess, wait_for_state
from tests.provider.conftest import (
    REPO,
    RUN_KEY,
    SECRET,
    configured,
    job_inputs,
    job_label,
    jobs_with_identity,
)

PARENT = "projects/local-training/locations/us-central1"
OUTPUT = "gs://local-training/jobs/example-tuning"
HANG = {"emulator-outcome": "hang"}
FAST = {"emulator-run-ms": "50"}
"""Each simulated trial lasts 50 ms (trials carry their tuning job's labels)."""
TERMINAL = [JobState.JOB_STATE_SUCCEEDED, JobState.JOB_STATE_FAILED, JobState.JOB_STATE_CANCELLED]


@pytest.fixture
def tuner(sim: EmulatorProcess) -> TuningJobProvider:
    provider: TuningJobProvider = configured(
        sim.endpoint, provider_class=TuningJobProvider, cancelTimeout="20", retryDeadline="30"
    )
    return provider


def tuning_inputs(**options: Any) -> dict[str, Any]:
    return job_inputs(tuning=True, **options)


def _checked(provider: TuningJobProvider, inputs: dict[str, Any]) -> dict[str, Any]:
    result = provider.check({}, inputs)
    assert result.failures == []
    return result.inputs


def tuning_jobs(emu: EmulatorProcess, identity: str) -> list[Any]:
    request = {"parent": PARENT, "filter": f'labels.pulumi_resource="{job_label(identity)}"'}
    return list(emu.client().list_hyperparameter_tuning_jobs(request=request))


# -- check and diff ------------------------------------------------------------------------------


def test_check_validates_the_tuning_spec_at_its_paths() -> None:
    inputs = tuning_inputs()
    spec = decode_spec(inputs["spec"])
    spec["studySpec"]["metrics"][0]["goal"] = "MAXIMISE"
    spec["trialJobSpec"]["workerPoolSpecs"][0]["machineSpec"].update(
        acceleratorType="NVIDIA_TESLA_T4", acceleratorCount=3
    )
    spec["maxTrialCount"] = 0
    result = TuningJobProvider().check({}, {**inputs, "spec": spec})
    paths = {failure.property for failure in result.failures}
    assert "studySpec.metrics[0].goal" in paths
    assert "trialJobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount" in paths
    reasons = " ".join(failure.reason for failure in result.failures)
    assert "MAXIMIZE" in reasons  # the suggestion is part of the reason
    # A custom job spec is not a tuning job spec.
    custom = job_inputs(env={})
    wrong = TuningJobProvider().check({}, custom)
    assert {failure.property for failure in wrong.failures} >= {"workerPoolSpecs", "scheduling"}
    assert all("not a field" in f.reason for f in wrong.failures), wrong.failures


def test_check_puts_the_spec_in_canonical_form_and_env_values_under_the_trial() -> None:
    inputs = tuning_inputs(env={"API_TOKEN": SECRET})
    checked = TuningJobProvider().check({}, inputs)
    assert checked.failures == []
    assert isinstance(checked.inputs["spec"], str)
    assert checked.inputs["spec"] == encode_spec(decode_spec(checked.inputs["spec"]))
    assert SECRET not in checked.inputs["spec"]
    assert checked.inputs["env_values"] == {
        "trialJobSpec.workerPoolSpecs[0].pythonPackageSpec.env[0].value": SECRET
    }
    # A path that leads nowhere in the tuning spec (a custom job's env path) is refused.
    bad = {**inputs, "env_values": {"workerPoolSpecs[0].pythonPackageSpec.env[0].value": "x"}}
    failures = TuningJobProvider().check({}, bad).failures
    assert [(f.property, "is not an env var" in f.reason) for f in failures] == [
        ("env_values", True)
    ]


def test_check_tolerates_unknown_values_at_preview() -> None:
    from pulumi.output import Unknown

    inputs = tuning_inputs()
    spec = decode_spec(inputs["spec"])
    pool = spec["trialJobSpec"]["workerPoolSpecs"][0]
    pool["pythonPackageSpec"]["packageUris"] = [Unknown()]  # type: ignore[no-untyped-call]
    spec["trialJobSpec"]["baseOutputDirectory"] = Unknown()  # type: ignore[no-untyped-call]
    outcome = check_inputs({**inputs, "spec": spec}, target="vertex", kind=TUNING_JOB_SPEC)
    assert outcome.failures == []


def test_diff_replaces_on_a_job_change_and_updates_knobs() -> None:
    provider = TuningJobProvider()
    olds = provider.check({}, tuning_inputs()).inputs
    same = provider.diff("id", olds, dict(olds))
    assert same.changes is False
    spec = decode_spec(olds["spec"])
    spec["maxTrialCount"] = 6
    replaced = provider.diff("id", olds, {**olds, "spec": encode_spec(spec)})
    assert replaced.changes is True and replaced.replaces == ["spec"]
    assert replaced.delete_before_replace is False
    exclusive = provider.diff(
        "id", olds, {**olds, "triggers": ["v2"], "exclusive_gpus": True, "wait_for": "running"}
    )
    assert exclusive.replaces == ["triggers"] and exclusive.delete_before_replace is True
    knob = provider.diff("id", olds, {**olds, "wait_for": "succeeded"})
    assert knob.changes is True and knob.replaces == []


def test_provider_pickles_by_reference() -> None:
    blob = serialize_provider(TuningJobProvider())
    raw = base64.b64decode(blob)
    assert len(blob) <= 200, len(blob)
    assert b"components._tuning_provider" in raw and b"TuningJobProvider" in raw
    assert b"def " not in raw and b"co_code" not in raw
    assert (
        serialize_provider(configured("http://127.0.0.1:8642", provider_class=TuningJobProvider))
        == blob
    )
    assert type(dill.loads(raw)) is TuningJobProvider


def test_check_and_diff_never_import_the_vertex_client() -> None:
    script = textwrap.dedent(
        """
        import sys
        from components._tuning_provider import TuningJobProvider
        from components.tuning_job import prepare_tuning_spec
        prepared = prepare_tuning_spec("stacks/jobs/local-tuning.yaml")
        news = {"spec": prepared.spec, "env_values": prepared.env_values, "project": "p-123456",
                "region": "us-central1", "identity": "x", "__provider": "blob"}
        p = TuningJobProvider()
        inputs = p.check({}, news).inputs
        p.diff("id", inputs, inputs)
        print(sorted(m for m in sys.modules if m.startswith("google.cloud.aiplatform")))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


# -- create, read, update, delete ----------------------------------------------------------------


def test_wait_for_succeeded_gives_the_best_trial(tuner, sim):
    inputs = _checked(
        tuner,
        tuning_inputs(labels=FAST, wait_for="succeeded", wait_timeout=60, env={"TOKEN": SECRET}),
    )
    created = tuner.create(inputs)
    status = created.outs["status"]
    assert set(status) == {*TUNING_STATUS_FIELDS, "instance"}  # and its stack instance
    assert created.id == status["job_name"]
    numbered = f"projects/{derived_number('local-training')}/locations/us-central1"
    assert created.id.startswith(f"{numbered}/hyperparameterTuningJobs/")
    assert status["state"] == "JOB_STATE_SUCCEEDED" and status["adopted"] is False
    assert status["trial_counts"] == {
        "REQUESTED": 0,
        "ACTIVE": 0,
        "STOPPING": 0,
        "SUCCEEDED": 3,
        "INFEASIBLE": 0,
    }
    job = sim.client().get_hyperparameter_tuning_job(name=created.id)
    # The best trial is the one with the lowest loss (the study's goal: MINIMIZE).
    losses = {t.id: t.final_measurement.metrics[0].value for t in job.trials}
    best = min(losses, key=lambda trial_id: losses[trial_id])
    values = {t.id: t.parameters[0].value for t in job.trials}
    assert status["best_trial"] == {
        "id": best,
        "parameters": {"learning_rate": values[best]},
        "metric_id": "loss",
        "value": losses[best],
    }
    assert sorted(values.values()) == [0.01, 0.05, 0.1]  # grid search: every value once
    assert status["best_trial_model_dir"] == f"{OUTPUT}/{best}/model/"
    assert status["console_url"] == f"{sim.endpoint}/v1/{created.id}"
    assert status["create_time"] and status["start_time"] and status["end_time"]
    # Two trials at once, each on an n1-standard-4 (a catalog price in us-central1).
    assert status["trial_hourly_cost_usd"] == pytest.approx(0.21849885)
    assert status["hourly_cost_usd"] == pytest.approx(2 * 0.21849885)
    # The labels that let a retry adopt the job, on the tuning job and each trial's job.
    assert job.labels["pulumi_resource"] == job_label(inputs["identity"]) != inputs["identity"]
    assert job.labels["pulumi_run"] == status["run_hash"]
    [env] = job.trial_job_spec.worker_pool_specs[0].python_package_spec.env
    assert (env.name, env.value) == ("TOKEN", SECRET)
    # The secret reached the job, but neither the outputs' spec nor status.
    assert SECRET not in created.outs["spec"] and SECRET not in json.dumps(status)
    assert "run_key" not in created.outs and RUN_KEY not in json.dumps(created.outs)

    read = tuner.read(created.id, created.outs)
    assert read.id == created.id and read.outs["status"] == status
    tuner.delete(created.id, {**created.outs, "delete_record_on_delete": True})
    with pytest.raises(gexc.NotFound):
        sim.client().get_hyperparameter_tuning_job(name=created.id)


def test_wait_for_running_returns_while_trials_run(tuner, sim):
    created = tuner.create(
        _checked(tuner, tuning_inputs(labels=HANG, wait_for="running", wait_timeout=30))
    )
    status = created.outs["status"]
    assert status["state"] == "JOB_STATE_RUNNING"
    assert status["best_trial"] is None and status["best_trial_model_dir"] == ""
    tuner.delete(created.id, created.outs)


def test_lost_create_response_is_adopted_not_resubmitted(tuner, sim):
    inputs = _checked(tuner, tuning_inputs(labels=HANG))
    for mode in ("close", "503"):
        sim.set_faults(drop_create=1, drop_mode=mode)
        inputs = {**inputs, "triggers": [mode]}  # a new run for each mode
        created = tuner.create(inputs)
        assert created.outs["status"]["adopted"] is True, mode
        assert sim.set_faults()["drop_create"] == 0
        matching = [
            j.name
            for j in tuning_jobs(sim, inputs["identity"])
            if j.labels["pulumi_run"] == created.outs["status"]["run_hash"]
        ]
        assert matching == [created.id], mode
        tuner.delete(created.id, created.outs)


def test_crash_before_the_state_was_written_adopts_on_the_next_up(tuner, sim):
    inputs = _checked(tuner, tuning_inputs(labels=HANG))
    first = tuner.create(inputs)  # Pulumi "crashes": the result is never recorded
    again = tuner.create(inputs)
    assert again.id == first.id and again.outs["status"]["adopted"] is True
    assert [j.name for j in tuning_jobs(sim, inputs["identity"])] == [first.id]
    other = tuner.create({**inputs, "triggers": ["v2"]})
    assert other.id != first.id and other.outs["status"]["adopted"] is False
    for created in (first, other):
        tuner.delete(created.id, created.outs)


def test_a_failed_wait_cancels_the_job_and_its_trials(tuner, sim):
    inputs = _checked(
        tuner,
        tuning_inputs(
            labels=HANG, wait_for="succeeded", wait_timeout=1.5, env={"API_TOKEN": SECRET}
        ),
    )
    with pytest.raises(JobOperationError) as info:
        tuner.create(inputs)
    message = str(info.value)
    assert "was cancelled (now JOB_STATE_CANCELLED)" in message and SECRET not in message
    [job] = tuning_jobs(sim, inputs["identity"])
    assert job.name in message
    assert job.state == JobState.JOB_STATE_CANCELLED
    trials = jobs_with_identity(sim, inputs["identity"])  # their CustomJobs carry its labels
    assert len(trials) == 2 and {t.state for t in trials} == {JobState.JOB_STATE_CANCELLED}
    # The next `up` does not adopt the cancelled job.
    fresh = tuner.create({**inputs, "wait_for": "submitted"})
    assert fresh.id != job.name and fresh.outs["status"]["adopted"] is False
    tuner.delete(fresh.id, fresh.outs)


def test_a_job_whose_trials_all_fail_is_reported_without_cancel(tuner, sim):
    inputs = _checked(
        tuner,
        tuning_inputs(
            labels={"emulator-outcome": "fail", **FAST}, wait_for="succeeded", wait_timeout=30
        ),
    )
    with pytest.raises(JobOperationError, match="JOB_STATE_FAILED") as info:
        tuner.create(inputs)
    assert "nothing to cancel" in str(info.value)
    # A failed job is never adopted: the next create submits a new one.
    again = tuner.create({**inputs, "wait_for": "submitted"})
    assert again.outs["status"]["adopted"] is False
    tuner.delete(again.id, again.outs)


def test_delete_cancels_the_running_trials_and_can_keep_the_record(tuner, sim):
    inputs = _checked(
        tuner, tuning_inputs(labels=HANG, wait_for="running", keep_record_on_delete=True)
    )
    created = tuner.create(inputs)
    trials = jobs_with_identity(sim, inputs["identity"])
    assert trials and {t.state for t in trials} <= {
        JobState.JOB_STATE_QUEUED,
        JobState.JOB_STATE_PENDING,
        JobState.JOB_STATE_RUNNING,
    }
    tuner.delete(created.id, created.outs)
    job = sim.client().get_hyperparameter_tuning_job(name=created.id)
    assert job.state == JobState.JOB_STATE_CANCELLED
    trials = jobs_with_identity(sim, inputs["identity"])
    assert trials and {t.state for t in trials} == {JobState.JOB_STATE_CANCELLED}
    # With delete_record_on_delete the record goes, and its trials' jobs with it.
    asked = {**inputs, "keep_record_on_delete": False, "delete_record_on_delete": True}
    other = tuner.create({**asked, "triggers": ["x"]})
    tuner.delete(other.id, other.outs)
    assert [j.name for j in tuning_jobs(sim, inputs["identity"])] == [created.id]
    tuner.delete(created.id, {**created.outs, **asked})
    assert tuning_jobs(sim, inputs["identity"]) == []
    tuner.delete(created.id, created.outs)  # already gone: still fine


def test_refresh_after_out_of_band_cancel_and_delete(tuner, sim):
    created = tuner.create(_checked(tuner, tuning_inputs(labels=HANG)))
    client = sim.client()
    client.cancel_hyperparameter_tuning_job(name=created.id)
    wait_for_state(client, created.id, TERMINAL, timeout=30)
    read = tuner.read(created.id, created.outs)
    assert read.id == created.id
    assert read.outs["status"]["state"] == "JOB_STATE_CANCELLED"
    assert read.outs["status"]["end_time"]
    assert read.outs["status"]["run_hash"] == created.outs["status"]["run_hash"]
    assert read.outs["spec"] == created.outs["spec"]
    client.delete_hyperparameter_tuning_job(name=created.id).result(timeout=30)
    gone = tuner.read(created.id, created.outs)
    assert gone.id == "" and gone.outs == {}


def test_update_changes_only_knobs_and_makes_no_api_call(tuner):
    created = tuner.create(_checked(tuner, tuning_inputs(labels=HANG)))
    dead = configured("http://127.0.0.1:9", provider_class=TuningJobProvider)
    news = {**created.outs, "wait_for": "succeeded", "run_key": RUN_KEY}
    updated = dead.update(created.id, created.outs, news)
    assert updated.outs["wait_for"] == "succeeded" and "run_key" not in updated.outs
    assert updated.outs["status"] == created.outs["status"]
    tuner.delete(created.id, created.outs)


def test_run_hash_is_keyed(tuner, sim):
    inputs = _checked(tuner, tuning_inputs(labels=HANG, env={"TOKEN": "hunter2"}))
    created = tuner.create(inputs)
    other = tuner.create({**inputs, "run_key": "aa" * 32})
    assert other.id != created.id
    assert other.outs["status"]["run_hash"] != created.outs["status"]["run_hash"]
    for job in (created, other):
        tuner.delete(job.id, job.outs)


def test_rejected_job_leaves_nothing_and_no_secret_in_the_error(sim):
    tuner = configured(sim.endpoint, provider_class=TuningJobProvider, retryDeadline="5")
    inputs = _checked(tuner, tuning_inputs(env={"API_TOKEN": SECRET}))
    document = decode_spec(inputs["spec"])
    pool = document["trialJobSpec"]["workerPoolSpecs"][0]
    pool["pythonPackageSpec"]["packageUris"] = ["/etc/" + SECRET]
    inputs["spec"] = encode_spec(document)
    with pytest.raises(JobOperationError) as info:
        tuner.create(inputs)
    message = str(info.value)
    assert "could not submit the hyperparameter tuning job" in message
    assert "no job was started" in message and SECRET not in message
    assert tuning_jobs(sim, inputs["identity"]) == []


def test_best_trial_follows_the_goal_and_reads_integer_parameters():
    from google.cloud.aiplatform_v1 import types as aip

    def trial(trial_id: str, value: float, layers: float, state: Any = aip.Trial.State.SUCCEEDED):
        return aip.Trial(
            id=trial_id,
            state=state,
            parameters=[aip.Trial.Parameter(parameter_id="layers", value=layers)],
            final_measurement=aip.Measurement(
                metrics=[aip.Measurement.Metric(metric_id="acc", value=value)]
            ),
        )

    spec = aip.StudySpec.ParameterSpec
    job = aip.HyperparameterTuningJob(
        study_spec=aip.StudySpec(
            metrics=[aip.StudySpec.MetricSpec(metric_id="acc", goal="MAXIMIZE")],
            parameters=[
                spec(
                    parameter_id="layers",
                    integer_value_spec=spec.IntegerValueSpec(min_value=1, max_value=4),
                )
            ],
        ),
        trials=[
            trial("1", 0.5, 1),
            trial("2", 0.9, 3),
            trial("3", 0.9, 4),
            trial("4", 0.99, 2, aip.Trial.State.INFEASIBLE),
        ],
    )
    assert best_trial(job) == {
        "id": "2",
        "parameters": {"layers": 3},
        "metric_id": "acc",
        "value": pytest.approx(0.9),
    }
    assert best_trial(aip.HyperparameterTuningJob()) is None
