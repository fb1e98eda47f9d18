"""A running job is never lost, duplicated or killed by an ordinary operation (the provider
against the emulator through the real REST client; ``tests/e2e/test_running_job_table.py`` does
the same on the real engine).

Replace with the same run hash, API outages during a wait, the engine's Cancel, the labels the
provider adds, redaction in read and delete errors, and taking over an existing job.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from google.cloud.aiplatform_v1 import CustomJob, JobState

import components.lifecycle._interrupt as interrupt_module
import components.vertex.api as api_module
from components._provider import TrainingJobProvider
from components._tuning_provider import TuningJobProvider
from components.core._importing import fetch_job, imported_job
from components.lifecycle import _adoption
from components.lifecycle._adoption import identity_label
from components.lifecycle._settings import Endpoint, ProviderSettings
from components.lifecycle._wire import TRAINING_JOB_TYPE, TUNING_JOB_TYPE, split_env
from components.vertex.api import JobOperationError
from emulator.testing import EmulatorProcess
from tests.provider.conftest import (
    SECRET,
    configured,
    counted_calls,
    job_inputs,
    job_label,
    jobs_with_identity,
)

HANG = {"emulator-outcome": "hang"}
PARENT = "projects/local-training/locations/us-central1"


@pytest.fixture(autouse=True)
def no_interrupt() -> Iterator[None]:
    interrupt_module.reset()
    yield
    interrupt_module.reset()


def _checked(provider: Any, inputs: dict[str, Any]) -> dict[str, Any]:
    result = provider.check({}, inputs)
    assert [(f.property, f.reason) for f in result.failures] == []
    checked: dict[str, Any] = result.inputs
    return checked


def _state(sim: EmulatorProcess, name: str) -> JobState:
    return sim.client().get_custom_job(name=name).state


ACTIVE = (JobState.JOB_STATE_QUEUED, JobState.JOB_STATE_PENDING, JobState.JOB_STATE_RUNNING)


def _cancel(sim: EmulatorProcess, name: str) -> None:
    sim.client().cancel_custom_job(name=name)


# -- a replace never takes the job the stack holds ----------------------------------------------


def test_a_replace_with_the_same_inputs_starts_a_new_job(provider, sim):
    """``pulumi up --replace``: the create gets the same inputs and, from the program, the job
    the state holds; it must submit a new job, which the engine's delete of the old one then
    leaves running."""
    inputs = _checked(provider, job_inputs(labels=HANG))
    first = provider.create(inputs)
    replacement = provider.create({**inputs, "held_jobs": [first.id]})
    assert replacement.id != first.id
    assert replacement.outs["status"]["adopted"] is False
    provider.delete(first.id, first.outs)  # the engine deletes the replaced resource
    assert _state(sim, replacement.id) in ACTIVE
    assert _state(sim, first.id) == JobState.JOB_STATE_CANCELLED  # its record kept (issue 35)
    active = [j.name for j in jobs_with_identity(sim, inputs["identity"]) if j.name != first.id]
    assert active == [replacement.id]
    provider.delete(replacement.id, replacement.outs)


def test_held_jobs_are_compared_by_id_whatever_names_the_project(provider, sim):
    """Vertex AI names jobs by project number; the state may hold the name by project id."""
    inputs = _checked(provider, job_inputs(labels=HANG))
    first = provider.create(inputs)
    by_number = "projects/123456789/locations/us-central1/customJobs/" + first.id.rsplit("/")[-1]
    again = provider.create({**inputs, "held_jobs": [by_number]})
    assert again.id != first.id
    for created in (first, again):
        provider.delete(created.id, created.outs)


def test_a_job_of_an_interrupted_replace_is_adopted_by_the_next(provider, sim):
    """The replace's create submitted a job but died: the stack still holds the old one; the
    next ``up --replace`` adopts the new job instead of starting a third."""
    inputs = _checked(provider, job_inputs(labels=HANG))
    held = provider.create(inputs)
    orphan = provider.create({**inputs, "held_jobs": [held.id]})  # never recorded
    again = provider.create({**inputs, "held_jobs": [held.id]})
    assert again.id == orphan.id and again.outs["status"]["adopted"] is True
    assert len(jobs_with_identity(sim, inputs["identity"])) == 2
    for created in (held, again):
        provider.delete(created.id, created.outs)


def test_without_held_jobs_a_delete_keeps_the_job_its_replacement_adopted(provider, sim):
    """The last guard, for a program that could not read the state: the replacement adopted
    the old job; the engine's delete of the old resource must not cancel it."""
    inputs = _checked(provider, job_inputs(labels=HANG))
    first = provider.create(inputs)
    replacement = provider.create(inputs)  # adopts: it cannot know the stack holds the job
    assert replacement.id == first.id and replacement.outs["status"]["adopted"] is True
    provider.delete(first.id, first.outs)
    assert _state(sim, first.id) in ACTIVE
    # A later delete of the job (another provider process) cancels it, and deletes its record
    # when asked; another resource's never does (one job, one owner).
    # (Another resource: one that took the job over with existing_job; a job of this
    # resource's own with an identity an earlier release wrote is its own.)
    other = {**replacement.outs, "identity": "another-resource", "existing_job": replacement.id}
    provider.delete(replacement.id, other)
    assert _state(sim, first.id) in ACTIVE
    _adoption._adopted.clear()
    provider.delete(replacement.id, {**replacement.outs, "delete_record_on_delete": True})
    assert jobs_with_identity(sim, inputs["identity"]) == []


def test_other_runs_left_outside_the_stack_are_reported_not_cancelled(provider, sim, capfd):
    inputs = _checked(provider, job_inputs(labels=HANG))
    stray = provider.create(inputs)  # never recorded; then the spec changes
    created = provider.create({**inputs, "triggers": ["v2"]})
    assert created.id != stray.id
    err = capfd.readouterr().err
    assert f"job {stray.id} (JOB_STATE_" in err and "still active" in err
    assert f"cancel {sim.endpoint}" not in err and f"{stray.id}:cancel" in err
    assert _state(sim, stray.id) in ACTIVE
    for job in (stray, created):
        provider.delete(job.id, job.outs)


def test_a_destroy_cancels_the_jobs_a_killed_replace_left_outside_the_stack(provider, sim, capfd):
    """A killed ``up --replace`` leaves the replacement's job running, unknown to the state:
    a refresh names it, whatever the held job's state, and the destroy (another provider
    process, no create of the resource in it) cancels it with the held one."""
    inputs = _checked(provider, job_inputs(labels=HANG))
    held = provider.create(inputs)
    left = provider.create({**inputs, "held_jobs": [held.id]})  # never recorded: killed
    stray = provider.create({**inputs, "triggers": ["v2"], "held_jobs": [held.id, left.id]})
    _adoption._adopted.clear()
    _adoption._created.clear()  # `pulumi refresh`, then `pulumi destroy`: new processes
    api_module._LISTINGS.clear()
    _cancel(sim, held.id)  # exclusiveGpus: the killed replace had cancelled the held job
    capfd.readouterr()
    provider.read(held.id, held.outs)
    err = capfd.readouterr().err
    api_module._LISTINGS.clear()
    assert f"job {left.id} (JOB_STATE_" in err and "not in the stack" in err, err
    assert f"job {stray.id} (JOB_STATE_" in err and "`pulumi destroy` cancels it" in err, err
    provider.delete(held.id, held.outs)
    err = capfd.readouterr().err
    for job in (left, stray):
        assert _state(sim, job.id) == JobState.JOB_STATE_CANCELLED
        assert f"job {job.id} (JOB_STATE_" in err and "is cancelled too" in err, err


def test_the_delete_ending_a_replace_leaves_the_other_jobs(provider, sim):
    """In a replace, the delete of the old resource follows the new one's create in the same
    process: the stack holds the new job, and the create named any other run's job."""
    inputs = _checked(provider, job_inputs(labels=HANG))
    held = provider.create(inputs)
    stray = provider.create({**inputs, "triggers": ["v2"], "held_jobs": [held.id]})
    _adoption._created.clear()
    replacement = provider.create({**inputs, "held_jobs": [held.id]})
    provider.delete(held.id, held.outs)
    assert _state(sim, held.id) == JobState.JOB_STATE_CANCELLED
    assert _state(sim, replacement.id) in ACTIVE and _state(sim, stray.id) in ACTIVE
    for job in (replacement, stray):
        provider.delete(job.id, job.outs)


# -- outages and the engine's Cancel leave the job running --------------------------------------


def _create_in_thread(
    provider: Any, inputs: dict[str, Any]
) -> tuple[threading.Thread, dict[str, Any]]:
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = provider.create(inputs)
        except Exception as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def _submitted(sim: EmulatorProcess, identity: str) -> Any:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        jobs = jobs_with_identity(sim, identity)
        if jobs and jobs[0].state == JobState.JOB_STATE_RUNNING:
            return jobs[0]
        time.sleep(0.05)
    raise AssertionError("the job was not submitted")


def test_an_outage_longer_than_the_retry_deadline_leaves_the_job_running(sim):
    provider = configured(sim.endpoint, retryDeadline="2s", cancelTimeout="20")
    inputs = _checked(provider, job_inputs(labels=HANG, wait_for="succeeded", wait_timeout=120))
    thread, outcome = _create_in_thread(provider, inputs)
    job = _submitted(sim, inputs["identity"])
    sim.set_faults(unavailable_rate=1.0)
    thread.join(timeout=30)
    sim.clear_faults()
    assert not thread.is_alive()
    message = str(outcome["error"])
    assert isinstance(outcome["error"], JobOperationError)
    assert "could not be reached" in message and "left running" in message
    assert "the next `pulumi up` with the same job adopts it" in message
    assert "cancelled" not in message
    assert _state(sim, job.name) == JobState.JOB_STATE_RUNNING
    # The next `pulumi up` (waiting for nothing now) adopts the job.
    again = provider.create({**inputs, "wait_for": "submitted"})
    assert again.id == job.name and again.outs["status"]["adopted"] is True
    assert len(jobs_with_identity(sim, inputs["identity"])) == 1
    provider.delete(again.id, again.outs)


def test_the_wait_timeout_still_cancels(provider, sim):
    inputs = _checked(provider, job_inputs(labels=HANG, wait_for="succeeded", wait_timeout=1))
    with pytest.raises(JobOperationError, match="was cancelled") as raised:
        provider.create(inputs)
    [job] = jobs_with_identity(sim, inputs["identity"])
    assert job.state in (JobState.JOB_STATE_CANCELLED, JobState.JOB_STATE_CANCELLING)
    assert "after 1s of waiting" in str(raised.value)


def test_the_engines_cancel_ends_a_wait_and_leaves_the_job_running(provider, sim):
    inputs = _checked(provider, job_inputs(labels=HANG, wait_for="succeeded", wait_timeout=600))
    thread, outcome = _create_in_thread(provider, inputs)
    job = _submitted(sim, inputs["identity"])
    started = time.monotonic()
    interrupt_module.interrupt("pulumi was cancelled")
    thread.join(timeout=10)
    assert not thread.is_alive() and time.monotonic() - started < 5
    message = str(outcome["error"])
    assert "stopped waiting for it: pulumi was cancelled" in message
    assert "left running" in message and "adopts it" in message
    assert _state(sim, job.name) == JobState.JOB_STATE_RUNNING
    interrupt_module.reset()  # the next `pulumi up` runs in a new provider process
    again = provider.create({**inputs, "wait_for": "submitted"})
    assert again.id == job.name and again.outs["status"]["adopted"] is True
    provider.delete(again.id, again.outs)


def test_a_create_after_the_cancel_submits_nothing(provider, sim):
    inputs = _checked(provider, job_inputs())
    interrupt_module.interrupt("pulumi was cancelled")
    with pytest.raises(JobOperationError, match="nothing was submitted"):
        provider.create(inputs)
    assert jobs_with_identity(sim, inputs["identity"]) == []


def test_an_outage_during_refresh_or_destroy_keeps_the_job(sim):
    provider = configured(sim.endpoint, retryDeadline="1s", cancelTimeout="20")
    inputs = _checked(provider, job_inputs(labels=HANG, env={"TOKEN": SECRET}))
    created = provider.create(inputs)
    sim.set_faults(unavailable_rate=1.0)
    try:
        with pytest.raises(JobOperationError, match="the stack keeps what it last knew"):
            provider.read(created.id, created.outs)
        with pytest.raises(JobOperationError, match="it stays in the stack"):
            provider.delete(created.id, created.outs)
    finally:
        sim.clear_faults()
    assert _state(sim, created.id) in ACTIVE
    provider.delete(created.id, created.outs)


def test_read_and_delete_errors_never_show_env_values(sim):
    """An error that quotes what it was asked (here: a job name that holds the value) is
    redacted, as create's errors are."""
    provider = configured(sim.endpoint, retryDeadline="0.5", cancelTimeout="20")
    inputs = _checked(provider, job_inputs(env={"TOKEN": SECRET}))
    created = provider.create(inputs)
    quoting = f"{PARENT}/customJobs/{SECRET}"
    sim.set_faults(unavailable_rate=1.0)
    try:
        for call in (provider.read, provider.delete):
            with pytest.raises(JobOperationError) as raised:
                call(quoting, created.outs)
            assert "<redacted>" in str(raised.value) and SECRET not in str(raised.value)
    finally:
        sim.clear_faults()
    provider.delete(created.id, created.outs)


# -- labels and identities ----------------------------------------------------------------------


def test_the_labels_the_provider_adds_count_towards_the_limit(provider):
    labels = {f"k{i}": "v" for i in range(63)}
    failures = provider.check({}, job_inputs(labels=labels)).failures
    assert [(f.property, "at most 62 of your own" in f.reason) for f in failures] == [
        ("labels", True)
    ]
    assert provider.check({}, job_inputs(labels=dict(list(labels.items())[:62]))).failures == []


def test_the_labels_the_provider_adds_count_for_a_job_taken_over_too(provider):
    """Every check runs for every kind of entry: a job taken over whose labels leave no room
    for the provider's could never be replaced (with exclusiveGpus: only after it was
    cancelled)."""
    labels = {f"k{i}": "v" for i in range(64)}
    name = f"{PARENT}/customJobs/1"
    failures = provider.check({}, job_inputs(labels=labels, existing_job=name)).failures
    assert [(f.property, "at most 62 of your own" in f.reason) for f in failures] == [
        ("labels", True)
    ]
    assert "taken over with existingJob" in failures[0].reason


@pytest.mark.parametrize("key", ["pulumi_run", "pulumi_resource"])
def test_a_label_key_of_the_provider_is_refused(provider, key):
    failures = provider.check({}, job_inputs(labels={key: "mine"})).failures
    assert [f.property for f in failures] == [f"labels.{key}"]
    assert "sets on every job it submits" in failures[0].reason


def test_a_tuning_job_and_a_training_job_of_one_name_have_different_identities():
    training = identity_label("gpu-training", "dev", "train", TRAINING_JOB_TYPE)
    tuning = identity_label("gpu-training", "dev", "train", TUNING_JOB_TYPE)
    assert training != tuning
    # A TrainingJob's identity is the one stacks written before types were counted carry.
    assert training == identity_label("gpu-training", "dev", "train")


@pytest.mark.parametrize(
    ("value", "seconds"), [("2s", 2.0), ("2", 2.0), (2, 2.0), ("5m", 300.0), ("1.5h", 5400.0)]
)
def test_every_duration_setting_takes_the_same_forms(value, seconds):
    from components.lifecycle._check import wait_timeout_seconds

    settings = ProviderSettings.read(
        {"training:retryDeadline": value, "training:cancelTimeout": value}.get
    )
    assert settings.retry_deadline == settings.cancel_timeout == seconds
    assert wait_timeout_seconds(value) == seconds


# -- taking over an existing job ----------------------------------------------------------------


def _started_elsewhere(sim: EmulatorProcess, inputs: dict[str, Any]) -> Any:
    """A job as gcloud would start it: the same spec, none of the provider's labels."""
    from components.lifecycle._wire import merge_env
    from components.rules._spec import JobSpec
    from components.vertex.convert import to_custom_job

    document = merge_env(inputs["spec"], inputs["env_values"])
    job: CustomJob = to_custom_job(JobSpec.parse(document))
    return sim.client().create_custom_job(parent=PARENT, custom_job=job)


def _import_inputs(sim: EmulatorProcess, name: str, **extra: Any) -> dict[str, Any]:
    """The inputs a stack entry made by ``python -m components import`` gives the resource."""
    job, kind = fetch_job(name, endpoint=Endpoint(sim.endpoint))
    spec, env_values = split_env(imported_job(job, kind).document)
    return job_inputs(existing_job=name, **extra) | {"spec": spec, "env_values": env_values}


def test_an_existing_job_is_taken_over_not_resubmitted(provider, sim):
    running = _started_elsewhere(sim, job_inputs(labels=HANG))
    inputs = _checked(provider, _import_inputs(sim, running.name))
    created = provider.create(inputs)
    assert created.id == running.name and created.outs["status"]["adopted"] is True
    assert created.outs["existing_job"] == running.name
    assert len(list(sim.client().list_custom_jobs(parent=PARENT))) >= 1
    assert _state(sim, running.name) in ACTIVE
    # Once held, a changed spec is a new job: existing_job is not taken over again.
    changed = provider.create({**inputs, "triggers": ["v2"], "held_jobs": [running.name]})
    assert changed.id != running.name and changed.outs["status"]["adopted"] is False
    for job in (created, changed):
        provider.delete(job.id, job.outs)


def test_an_existing_job_that_differs_from_the_spec_is_refused(provider, sim):
    running = _started_elsewhere(sim, job_inputs(labels=HANG))
    inputs = _import_inputs(sim, running.name)
    inputs["spec"] = {**inputs["spec"], "displayName": "another-name"}
    before = len(list(sim.client().list_custom_jobs(parent=PARENT)))
    with pytest.raises(JobOperationError, match=r"differ at displayName\)") as raised:
        provider.create(_checked(provider, inputs))
    assert "nothing was changed" in str(raised.value)
    assert len(list(sim.client().list_custom_jobs(parent=PARENT))) == before
    _cancel(sim, running.name)


def test_an_existing_job_of_another_kind_or_region_is_refused_at_check(provider):
    tuning_name = f"{PARENT}/hyperparameterTuningJobs/1"
    failures = provider.check({}, job_inputs(existing_job=tuning_name)).failures
    assert [f.property for f in failures] == ["existing_job"]
    elsewhere = "projects/local-training/locations/europe-west4/customJobs/1"
    [failure] = provider.check({}, job_inputs(existing_job=elsewhere)).failures
    assert "europe-west4" in failure.reason and "us-central1" in failure.reason
    tuning = configured("http://127.0.0.1:1", provider_class=TuningJobProvider)
    custom_name = f"{PARENT}/customJobs/1"
    [failure] = tuning.check({}, job_inputs(tuning=True, existing_job=custom_name)).failures
    assert failure.property == "existing_job" and "hyperparameterTuningJobs" in failure.reason


def test_a_missing_existing_job_says_so(provider, sim):
    inputs = _checked(provider, job_inputs(existing_job=f"{PARENT}/customJobs/424242"))
    with pytest.raises(JobOperationError, match="there is no such CustomJob"):
        provider.create(inputs)


def test_a_job_another_resource_holds_is_never_taken_over_nor_cancelled(provider, sim):
    """One job, one owner: its identity label names its holder, whose name the owner label
    gives; only the user's explicit leave (take_over_held_job) lets another resource take it
    over, and only then may that resource's delete cancel it."""
    theirs = _checked(provider, job_inputs(labels=HANG, owner="gpu-training/Team.A/train"))
    held = provider.create(theirs)
    job = sim.client().get_custom_job(name=held.id)
    assert job.labels["pulumi_owner"] == "gpu-training--team_a--train"
    mine = _checked(provider, _import_inputs(sim, held.id))
    with pytest.raises(JobOperationError, match="is held by another resource") as raised:
        provider.create(mine)
    assert "gpu-training--team_a--train (pulumi_owner label)" in str(raised.value)
    assert "takeOverHeldJob: true" in str(raised.value)

    # A stack that took it over before this rule (no leave recorded): its delete drops it
    # from that stack only; the job keeps running for its holder.
    outs = {**mine, "status": {"job_name": held.id, "adopted": True}}
    provider.delete(held.id, outs)
    assert _state(sim, held.id) in ACTIVE

    # With leave, the takeover is recorded, and that resource's delete cancels it.
    taken = provider.create({**mine, "take_over_held_job": True})
    assert taken.id == held.id
    # Its holder's label: the holder's identity keyed with its stack instance.
    assert taken.outs["status"]["taken_over_from"] == job_label(theirs["identity"])
    _adoption._adopted.clear()  # a later `pulumi destroy`: another provider process
    provider.delete(taken.id, taken.outs)
    assert _state(sim, held.id) == JobState.JOB_STATE_CANCELLED  # cancelled; its record kept


def test_the_owner_label_never_costs_a_label_of_the_users(provider, sim):
    labels = {**HANG, **{f"team{i}": "ml" for i in range(61)}}  # 62 of the user's: full
    inputs = _checked(provider, job_inputs(labels=labels, owner="gpu-training/e2e/train"))
    created = provider.create(inputs)
    job = sim.client().get_custom_job(name=created.id)
    assert len(job.labels) == 64 and "pulumi_owner" not in job.labels
    provider.delete(created.id, created.outs)


def test_training_job_provider_is_still_the_pickled_class():
    assert TrainingJobProvider.__module__ == "components._provider"


def test_transient_errors_are_retried_for_the_whole_retry_deadline():
    """``training:retryDeadline`` is how long the API may be unreachable: not a few attempts."""
    from google.api_core import exceptions as gexc

    from components.vertex.api import ApiUnreachable, RetryPolicy, with_retries

    calls: list[float] = []

    def unavailable() -> None:
        calls.append(time.monotonic())
        raise gexc.ServiceUnavailable("blip")  # type: ignore[no-untyped-call]

    policy = RetryPolicy(initial=0.01, maximum=0.02, deadline=0.5)
    with pytest.raises(ApiUnreachable, match=r"reading x: the API could not be reached") as raised:
        with_retries(unavailable, policy, what="reading x", sleep=time.sleep)
    assert len(calls) > 10 and calls[-1] - calls[0] >= 0.45
    assert "training:retryDeadline is 0.5s" in str(raised.value)


def test_two_stack_instances_of_the_same_names_never_share_a_job(provider, sim, capfd, monkeypatch):
    """Issue 42 item 3: two teams, each on its own backend, with the same project, stack and
    resource names (one identity of names) and the same spec: each stack's run key makes
    its own instance. The second's create neither adopts nor names the first's job, and its
    destroy (a delete that ends no replace) cancels only its own."""
    team_a = _checked(provider, job_inputs(labels=HANG))
    team_b = {**team_a, "run_key": "1e" * 32}
    first = provider.create(team_a)
    capfd.readouterr()
    second = provider.create(team_b)
    assert second.id != first.id and second.outs["status"]["adopted"] is False
    assert first.id not in capfd.readouterr().err  # not "an earlier run of this resource"
    assert second.outs["status"]["instance"] != first.outs["status"]["instance"]
    _adoption._created.clear()  # a later `pulumi destroy`: another provider process
    monkeypatch.setattr(api_module, "_LISTINGS", {})  # whose listing is its own
    provider.delete(second.id, second.outs)
    assert _state(sim, first.id) in ACTIVE
    assert _state(sim, second.id) == JobState.JOB_STATE_CANCELLED
    # Each instance's jobs are its own label's: the first team's destroy ends its own.
    assert [str(j.name) for j in jobs_with_identity(sim, team_a["identity"])] == [first.id]
    assert job_label(team_a["identity"], "1e" * 32) != job_label(team_a["identity"])
    provider.delete(first.id, first.outs)
    assert _state(sim, first.id) == JobState.JOB_STATE_CANCELLED


def test_a_state_written_before_instances_keeps_its_identity_of_names(provider, sim, monkeypatch):
    """Issue 42 item 3, upgrades: a resource whose state has no status.instance holds a job
    labelled with names alone; its replace labels the new job the same way (no diff, no new
    identity), and its destroy still finds a job a killed replace of it left."""
    inputs = _checked(provider, job_inputs(labels=HANG))
    legacy = provider.create({k: v for k, v in inputs.items() if k != "run_key"})
    assert (
        sim.client().get_custom_job(name=legacy.id).labels["pulumi_resource"]
        == (inputs["identity"])
    )
    replaced = provider.create({**inputs, "held_jobs": [legacy.id], "triggers": ["new"]})
    job = sim.client().get_custom_job(name=replaced.id)
    assert job.labels["pulumi_resource"] == inputs["identity"]
    assert "instance" not in replaced.outs["status"]
    _adoption._created.clear()  # the destroy's provider process: no create ran in it
    monkeypatch.setattr(api_module, "_LISTINGS", {})  # and no listing of an earlier test
    provider.delete(legacy.id, legacy.outs)  # the killed replace's job is cancelled too
    assert _state(sim, replaced.id) == JobState.JOB_STATE_CANCELLED


def test_a_replace_whose_state_records_its_instance_lists_only_the_keyed_identity(
    provider, sim, monkeypatch
):
    """The state records ``status.instance`` for the held job (``held_instance``, from the
    program's read of it): the resource's jobs carry the keyed identity, so the replace reads
    no held job's labels and lists the identity once, not its identity of names alone too."""
    inputs = _checked(provider, job_inputs(labels=HANG))
    first = provider.create(inputs)
    instance = first.outs["status"]["instance"]
    client = api_module.shared_client(provider.endpoint, "us-central1")
    listed = counted_calls(monkeypatch, client, "list_custom_jobs")
    read = counted_calls(monkeypatch, client, "get_custom_job")
    replace = {**inputs, "held_jobs": [first.id], "triggers": ["new"]}
    replaced = provider.create({**replace, "held_instance": instance})
    assert [request["filter"] for request in listed] == [
        f'labels.pulumi_resource="{job_label(inputs["identity"])}"'
    ]
    assert first.id not in read  # its labels were not read: the state answered
    assert replaced.outs["status"]["instance"] == instance
    # Without the state's word, the held job's labels are read and both identities listed.
    listed.clear()
    again = provider.create({**replace, "triggers": ["newer"]})
    assert len(listed) == 2 and first.id in read
    for job in (first, replaced, again):
        sim.client().cancel_custom_job(name=job.id)
