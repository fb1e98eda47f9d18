"""create/read/update/delete against the emulator through the real REST client."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from google.cloud.aiplatform_v1 import JobState

from components._provider import TrainingJobProvider
from components.core._jobs import JobCore
from components.lifecycle._adoption import instance_of, run_hash
from components.lifecycle._wire import STATUS_FIELDS, encode_spec, merge_env
from components.vertex.api import JobOperationError, RetryPolicy
from emulator.names import derived_number
from emulator.testing import wait_for_state
from tests.provider.conftest import (
    RUN_KEY,
    SECRET,
    configured,
    job_inputs,
    job_label,
    jobs_with_identity,
)

TERMINAL = [
    JobState.JOB_STATE_SUCCEEDED,
    JobState.JOB_STATE_FAILED,
    JobState.JOB_STATE_CANCELLED,
]


def _checked(provider: TrainingJobProvider, inputs: dict[str, Any]) -> dict[str, Any]:
    result = provider.check({}, inputs)
    assert result.failures == []
    return result.inputs


def test_create_read_delete_round_trip(provider, sim):
    inputs = _checked(provider, job_inputs(wait_for="succeeded", wait_timeout=60))
    created = provider.create(inputs)
    outs = created.outs
    assert outs is not None
    assert created.id == outs["status"]["job_name"]
    # The name has the project number (as Vertex AI returns it), the request had its ID.
    number = derived_number("local-training")
    assert created.id.startswith(f"projects/{number}/locations/us-central1/customJobs/")
    assert outs["status"]["job_id"] == created.id.rsplit("/", 1)[-1]
    assert outs["status"]["state"] == "JOB_STATE_SUCCEEDED"
    assert outs["status"]["adopted"] is False
    assert outs["status"]["model_dir"] == "gs://local-training/jobs/example-trainer/model/"
    assert outs["status"]["console_url"] == f"{sim.endpoint}/v1/{created.id}"
    assert (
        outs["status"]["create_time"]
        and outs["status"]["start_time"]
        and outs["status"]["end_time"]
    )
    assert outs["status"]["error_message"] == ""
    # n1-standard-4 in us-central1 has a catalog price; the spec's timeout is 600 s.
    assert outs["status"]["hourly_cost_usd"] == pytest.approx(0.21849885)
    assert outs["status"]["max_cost_usd"] == pytest.approx(0.21849885 / 6)
    # Inputs are repeated in the outputs (diff compares against them); no provider blob.
    assert outs["spec"] == inputs["spec"] and "__provider" not in outs
    job = sim.client().get_custom_job(name=created.id)
    # The identity keyed with the stack instance (a hash of its run key), not names alone.
    assert job.labels["pulumi_resource"] == job_label(inputs["identity"]) != inputs["identity"]
    assert outs["status"]["instance"] == instance_of(RUN_KEY)
    assert job.labels["pulumi_run"] == outs["status"]["run_hash"]
    assert job.job_spec.worker_pool_specs[0].python_package_spec.env[0].value == "local-demo"

    read = provider.read(created.id, outs)
    assert read.id == created.id
    assert read.outs["status"]["state"] == "JOB_STATE_SUCCEEDED"
    assert read.outs["status"]["end_time"] == outs["status"]["end_time"]

    provider.delete(created.id, outs)  # cancelled if need be; its record kept (issue 35)
    assert [j.name for j in jobs_with_identity(sim, inputs["identity"])] == [created.id]
    provider.delete(created.id, {**outs, "delete_record_on_delete": True})
    assert jobs_with_identity(sim, inputs["identity"]) == []


def test_wait_for_submitted_returns_while_the_job_is_still_active(provider):
    created = provider.create(_checked(provider, job_inputs()))
    assert created.outs["status"]["state"] in (
        "JOB_STATE_QUEUED",
        "JOB_STATE_PENDING",
        "JOB_STATE_RUNNING",
    )
    provider.delete(created.id, created.outs)


def test_wait_for_running(provider):
    created = provider.create(_checked(provider, job_inputs(wait_for="running", wait_timeout=30)))
    assert created.outs["status"]["state"] in ("JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED")
    assert created.outs["status"]["start_time"]
    provider.delete(created.id, created.outs)


def test_lost_create_response_is_adopted_not_resubmitted(provider, sim):
    inputs = _checked(provider, job_inputs(labels={"emulator-outcome": "hang"}))
    for mode in ("close", "503"):
        sim.set_faults(drop_create=1, drop_mode=mode)
        inputs = {**inputs, "triggers": [mode]}  # a new run for each mode
        created = provider.create(inputs)
        assert created.outs["status"]["adopted"] is True, mode
        matching = [
            j
            for j in jobs_with_identity(sim, inputs["identity"])
            if j.labels["pulumi_run"] == created.outs["status"]["run_hash"]
        ]
        assert [j.name for j in matching] == [created.id], mode
        assert sim.set_faults()["drop_create"] == 0
        provider.delete(created.id, created.outs)


def test_crash_before_state_was_written_adopts_on_the_next_up(provider, sim):
    inputs = _checked(provider, job_inputs(labels={"emulator-outcome": "hang"}))
    first = provider.create(inputs)  # Pulumi "crashes" here: the result is never recorded
    again = provider.create(inputs)  # the next `pulumi up` creates with the same inputs
    assert again.id == first.id
    assert again.outs["status"]["adopted"] is True
    assert len(jobs_with_identity(sim, inputs["identity"])) == 1
    # A different run of the same resource is a new job, not an adoption.
    other = provider.create({**inputs, "triggers": ["v2"]})
    assert other.id != first.id and other.outs["status"]["adopted"] is False
    assert len(jobs_with_identity(sim, inputs["identity"])) == 2
    provider.delete(first.id, first.outs)
    provider.delete(other.id, other.outs)


def test_failed_and_cancelled_jobs_are_not_adopted(provider, sim):
    inputs = _checked(provider, job_inputs(labels={"emulator-outcome": "fail"}))
    first = provider.create(inputs)
    wait_for_state(sim.client(), first.id, TERMINAL, timeout=30)
    second = provider.create(inputs)
    assert second.id != first.id and second.outs["status"]["adopted"] is False
    provider.delete(first.id, first.outs)
    provider.delete(second.id, second.outs)


def test_transient_errors_are_retried(provider, sim, monkeypatch):
    # Short waits between attempts and a deadline with room: half the calls fail, and with
    # the default backoff (up to 8 s a wait) the create took 27 s of its 30 s on an idle
    # machine, and ran out of them on a loaded one.
    fast = RetryPolicy(initial=0.05, maximum=0.2, deadline=120.0)
    monkeypatch.setattr(JobCore, "policy", property(lambda self: fast))
    inputs = _checked(provider, job_inputs(labels={"emulator-outcome": "hang"}))
    sim.set_faults(unavailable_rate=0.3, rate_limit_rate=0.2, seed=7)
    created = provider.create(inputs)
    sim.clear_faults()
    assert len(jobs_with_identity(sim, inputs["identity"])) == 1
    provider.delete(created.id, created.outs)


def test_wait_timeout_cancels_the_job_and_says_so(provider, sim):
    inputs = _checked(
        provider,
        job_inputs(
            labels={"emulator-outcome": "hang"},
            wait_for="succeeded",
            wait_timeout=1.5,
            env={"API_TOKEN": SECRET},
        ),
    )
    with pytest.raises(JobOperationError) as info:
        provider.create(inputs)
    message = str(info.value)
    assert "still" in message and "was cancelled" in message
    assert SECRET not in message
    (job,) = jobs_with_identity(sim, inputs["identity"])
    assert job.state == JobState.JOB_STATE_CANCELLED
    assert job.name in message
    # The next `up` does not adopt the cancelled job: it starts a new one.
    sim_inputs = {**inputs, "wait_for": "submitted"}
    fresh = provider.create(sim_inputs)
    assert fresh.id != job.name and fresh.outs["status"]["adopted"] is False
    provider.delete(fresh.id, fresh.outs)


def test_job_failing_while_waiting_is_reported_without_cancel(provider, sim):
    inputs = _checked(
        provider,
        job_inputs(labels={"emulator-outcome": "fail"}, wait_for="succeeded", wait_timeout=30),
    )
    with pytest.raises(JobOperationError, match="JOB_STATE_FAILED") as info:
        provider.create(inputs)
    assert "nothing to cancel" in str(info.value)


def test_delete_of_a_job_already_gone_succeeds(provider, sim):
    created = provider.create(_checked(provider, job_inputs()))
    provider.delete(created.id, created.outs)
    provider.delete(created.id, created.outs)  # second time: already gone
    bogus = "projects/local-training/locations/us-central1/customJobs/1234567890123456789"
    provider.delete(bogus, created.outs)


def test_delete_cancels_an_active_job_and_can_keep_its_record(provider, sim):
    inputs = _checked(
        provider, job_inputs(labels={"emulator-outcome": "hang"}, keep_record_on_delete=True)
    )
    created = provider.create(inputs)
    provider.delete(created.id, created.outs)
    job = sim.client().get_custom_job(name=created.id)
    assert job.state == JobState.JOB_STATE_CANCELLED
    # Only delete_record_on_delete makes the record go as well.
    asked = {**inputs, "keep_record_on_delete": False, "delete_record_on_delete": True}
    other = provider.create({**asked, "triggers": ["x"]})
    provider.delete(other.id, other.outs)
    assert [j.name for j in jobs_with_identity(sim, inputs["identity"])] == [created.id]


def test_refresh_after_out_of_band_cancel_and_delete(provider, sim):
    created = provider.create(_checked(provider, job_inputs(labels={"emulator-outcome": "hang"})))
    client = sim.client()
    client.cancel_custom_job(name=created.id)
    wait_for_state(client, created.id, [JobState.JOB_STATE_CANCELLED], timeout=30)
    read = provider.read(created.id, created.outs)
    assert read.id == created.id
    assert read.outs["status"]["state"] == "JOB_STATE_CANCELLED"
    assert read.outs["status"]["end_time"]
    assert read.outs["spec"] == created.outs["spec"]
    client.delete_custom_job(name=created.id).result(timeout=30)
    gone = provider.read(created.id, created.outs)
    assert gone.id == "" and gone.outs == {}


def test_update_changes_only_knobs_and_makes_no_api_call(provider):
    created = provider.create(_checked(provider, job_inputs()))
    assert created.outs is not None
    dead = configured("http://127.0.0.1:9")  # nothing listens: any API call would fail
    news = {**created.outs, "wait_for": "succeeded", "keep_record_on_delete": True}
    start = time.monotonic()
    updated = dead.update(created.id, created.outs, news)
    assert time.monotonic() - start < 1
    assert updated.outs is not None
    assert updated.outs["status"]["job_name"] == created.id
    assert updated.outs["keep_record_on_delete"] is True
    assert updated.outs["status"]["state"] == created.outs["status"]["state"]
    provider.delete(created.id, created.outs)


def test_state_written_before_status_existed_moves_into_status(provider):
    created = provider.create(_checked(provider, job_inputs()))
    assert created.outs is not None
    # Earlier releases kept every status field at the top level of the outputs (and wrote no
    # stack instance, which came later).
    earlier = {k: v for k, v in created.outs["status"].items() if k != "instance"}
    old_form = {k: v for k, v in created.outs.items() if k != "status"} | earlier
    read = provider.read(created.id, old_form)
    assert not set(read.outs) & set(STATUS_FIELDS)
    assert read.outs["status"]["run_hash"] == created.outs["status"]["run_hash"]  # keyed: kept
    assert read.outs["status"]["hourly_cost_usd"] == created.outs["status"]["hourly_cost_usd"]
    assert read.outs["status"]["job_name"] == created.id
    inputs = {k: v for k, v in old_form.items() if k not in STATUS_FIELDS}
    updated = provider.update(created.id, old_form, {**inputs, "wait_for": "running"})
    assert updated.outs is not None and not set(updated.outs) & set(STATUS_FIELDS)
    assert updated.outs["status"] == earlier
    provider.delete(created.id, read.outs)


def test_rejected_job_leaves_nothing_and_no_secret_in_the_error(sim):
    provider = configured(sim.endpoint, retryDeadline="5")
    inputs = _checked(provider, job_inputs(env={"API_TOKEN": SECRET}))
    document = json.loads(inputs["spec"])
    document["workerPoolSpecs"][0]["pythonPackageSpec"]["packageUris"] = ["/etc/" + SECRET]
    inputs["spec"] = encode_spec(document)
    with pytest.raises(JobOperationError) as info:
        provider.create(inputs)
    assert "no job was started" in str(info.value)
    assert SECRET not in str(info.value)
    assert jobs_with_identity(sim, inputs["identity"]) == []


def test_unavailable_service_gives_up_with_a_clear_error():
    provider = configured("http://127.0.0.1:9", retryDeadline="2")
    inputs = _checked(provider, job_inputs())
    with pytest.raises(JobOperationError, match="could not submit the training job"):
        provider.create(inputs)


def _plain_run_hash(outs: dict[str, Any]) -> str:
    """The unkeyed run hash earlier releases wrote to the state."""
    document = merge_env(json.loads(outs["spec"]), outs["env_values"])
    return run_hash(
        document, project=outs["project"], region=outs["region"], triggers=outs["triggers"]
    )


def test_run_hash_is_keyed_and_the_key_never_reaches_the_outputs(provider, sim):
    created = provider.create(_checked(provider, job_inputs(env={"TOKEN": "hunter2"})))
    outs = created.outs
    assert outs is not None and "run_key" not in outs and RUN_KEY not in json.dumps(outs)
    label = sim.client().get_custom_job(name=created.id).labels["pulumi_run"]
    assert outs["status"]["run_hash"] == label
    # Without the key, a guess of the env value cannot be tested against the state or label.
    assert label != _plain_run_hash(outs)
    other_key = provider.create(
        _checked(provider, job_inputs(env={"TOKEN": "hunter2"}, run_key="aa" * 32))
    )
    assert other_key.outs["status"]["run_hash"] != label
    updated = provider.update(created.id, outs, {**outs, "run_key": RUN_KEY, "wait_for": "running"})
    assert "run_key" not in updated.outs
    for job in (created, other_key):
        provider.delete(job.id, job.outs)


def test_plain_run_hash_of_an_older_state_is_dropped_on_refresh_and_update(provider):
    created = provider.create(_checked(provider, job_inputs(env={"TOKEN": "hunter2"})))
    older = {**created.outs, "status": {**created.outs["status"]}}
    older["status"]["run_hash"] = _plain_run_hash(older)
    read = provider.read(created.id, older)
    assert "run_hash" not in read.outs["status"]
    assert read.outs["status"]["job_name"] == created.id
    updated = provider.update(created.id, older, {**older, "wait_for": "running"})
    assert "run_hash" not in updated.outs["status"]
    provider.delete(created.id, created.outs)


def test_job_submitted_by_a_release_without_the_key_is_adopted(provider, sim):
    """A crash before the upgrade, the next `up` after it: still one job, not two."""
    inputs = _checked(provider, job_inputs())
    unkeyed = provider.create({k: v for k, v in inputs.items() if k != "run_key"})
    again = provider.create(inputs)
    assert again.id == unkeyed.id and again.outs["status"]["adopted"] is True
    # Labelled by names alone, as that release did: the resource stays on that identity.
    assert len(jobs_with_identity(sim, inputs["identity"], key=None)) == 1
    assert "instance" not in again.outs["status"]
    provider.delete(again.id, again.outs)


def test_endpoint_credentials_never_reach_outputs_or_errors(sim):
    """`training:endpoint` set (as a secret) with credentials in its URL."""
    with_credentials = sim.endpoint.replace("http://", "http://deployer:s3cret-token@")
    provider = configured(with_credentials, cancelTimeout="20", retryDeadline="5")
    created = provider.create(_checked(provider, job_inputs()))
    assert created.outs is not None
    assert "s3cret-token" not in json.dumps(created.outs)
    assert created.outs["status"]["console_url"] == f"{sim.endpoint}/v1/{created.id}"
    sim.set_faults(unavailable_rate=1.0)
    with pytest.raises(Exception) as info:
        provider.read(created.id, created.outs)
    assert "s3cret-token" not in str(info.value)
    sim.clear_faults()
    provider.delete(created.id, created.outs)
