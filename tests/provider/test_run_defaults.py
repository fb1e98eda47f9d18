"""Issue 35, items 1 and 2: each run writes a directory of its own, and its record outlives it.

Against a simulate-mode emulator through Google's REST client (``tests/provider/conftest.py``).
``output_root`` is what the cloud wiring registers when the user wrote no output directory
(``components.lifecycle._wire.OUTPUT_ROOT``); a spec that names its own directory has none.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.cloud.aiplatform_v1 import JobState

from components._tuning_provider import TuningJobProvider
from components.lifecycle._wire import decode_spec
from components.vertex.api import JobOperationError
from emulator.testing import EmulatorProcess
from tests.provider.conftest import configured, job_inputs, jobs_with_identity

HANG = {"emulator-outcome": "hang"}


def _checked(provider: Any, inputs: dict[str, Any]) -> dict[str, Any]:
    result = provider.check({}, inputs)
    assert result.failures == []
    return dict(result.inputs)


def _root(inputs: dict[str, Any], under: str | None = None) -> str:
    spec = decode_spec(inputs["spec"])
    return str((spec[under] if under else spec)["baseOutputDirectory"]).rstrip("/")


def _written(sim: EmulatorProcess, name: str) -> str:
    job = sim.client().get_custom_job(name=name)
    return str(job.job_spec.base_output_directory.output_uri_prefix).rstrip("/")


def _wired(provider: Any, **options: Any) -> dict[str, Any]:
    """Inputs whose output directory the wiring chose: ``output_root`` is the spec's own."""
    inputs = _checked(provider, job_inputs(labels=HANG, **options))
    return {**inputs, "output_root": _root(inputs)}


def test_a_replacement_writes_a_directory_of_its_own(provider, sim):
    """The replaced job's checkpoints are not where the new run looks (a forced replace of the
    same inputs included), and each directory is found under the resource's."""
    inputs = _wired(provider)
    root = inputs["output_root"]
    first = provider.create(inputs)
    first_dir = first.outs["status"]["output_dir"]
    assert first_dir.startswith(f"{root}/runs/") and first_dir != root
    assert _written(sim, first.id) == first_dir
    assert first.outs["status"]["model_dir"] == f"{first_dir}/model/"
    # The engine's replace: the state holds the first job; same inputs (`--replace`).
    second = provider.create({**inputs, "held_jobs": [first.id]})
    assert second.id != first.id and second.outs["status"]["adopted"] is False
    second_dir = second.outs["status"]["output_dir"]
    assert second_dir.startswith(f"{root}/runs/") and second_dir != first_dir
    assert _written(sim, second.id) == second_dir
    # The spec (and so the run hash) is the one registered: nothing for diff to see.
    assert second.outs["spec"] == inputs["spec"]
    assert second.outs["status"]["run_hash"] == first.outs["status"]["run_hash"]
    for created in (first, second):
        provider.delete(created.id, {**created.outs, "delete_record_on_delete": True})


def test_the_same_run_adopted_after_a_crash_keeps_its_directory(provider, sim):
    inputs = _wired(provider)
    first = provider.create(inputs)
    # A create that never reached the state: the next `up` adopts the same run's job.
    again = provider.create(inputs)
    assert again.id == first.id and again.outs["status"]["adopted"] is True
    assert again.outs["status"]["output_dir"] == first.outs["status"]["output_dir"]
    provider.delete(first.id, {**first.outs, "delete_record_on_delete": True})


def _stopped(provider: Any, created: Any) -> None:
    """The old job of a replace that stops it first (delete before replace), record kept."""
    provider.delete(created.id, created.outs)


def test_continue_last_run_writes_into_the_replaced_runs_directory(provider, sim):
    inputs = _wired(provider)
    first = provider.create(inputs)
    first_dir = first.outs["status"]["output_dir"]
    _stopped(provider, first)
    asked = provider.create({**inputs, "held_jobs": [first.id], "continue_last_run": True})
    assert asked.outs["status"]["output_dir"] == first_dir
    # The stack setting does the same for every job.
    stack = configured(sim.endpoint, cancelTimeout="20", continueLastRun="true")
    _stopped(provider, asked)
    by_stack = stack.create({**inputs, "held_jobs": [asked.id], "triggers": ["t"]})
    assert by_stack.outs["status"]["output_dir"] == first_dir
    # With nothing held (a first run), the directory the wiring chose.
    fresh = _wired(provider, continue_last_run=True)
    alone = provider.create(fresh)
    assert alone.outs["status"]["output_dir"] == fresh["output_root"]
    for created in (first, asked, by_stack, alone):
        provider.delete(created.id, {**created.outs, "delete_record_on_delete": True})


def test_continue_last_run_stops_the_held_job_before_it_submits(provider, sim):
    """A forced replace (no diff, created first): the create cancels the held job and waits
    for it to stop before it submits the run that continues in its directory."""
    inputs = _wired(provider)
    first = provider.create(inputs)
    later = provider.create({**inputs, "held_jobs": [first.id], "continue_last_run": True})
    old, new = (sim.client().get_custom_job(name=name) for name in (first.id, later.id))
    assert old.state == JobState.JOB_STATE_CANCELLED
    assert new.create_time >= old.end_time, "the new job started before the old one ended"
    assert later.outs["status"]["output_dir"] == first.outs["status"]["output_dir"]
    provider.delete(later.id, {**later.outs, "delete_record_on_delete": True})


def test_continue_last_run_never_writes_beside_a_running_job(provider, sim, monkeypatch):
    """Issue 42 item 9: the old job still runs (a replace that did not stop it first): the
    create submits nothing and says why and what to do; once it has stopped, it continues."""
    monkeypatch.setattr(type(provider), "_stop_held", lambda *_: None)
    inputs = _wired(provider)
    first = provider.create(inputs)
    with pytest.raises(JobOperationError) as refused:
        provider.create({**inputs, "held_jobs": [first.id], "continue_last_run": True})
    text = str(refused.value)
    assert f"job {first.id}, the run this one continues, is still JOB_STATE_" in text
    assert first.outs["status"]["output_dir"] in text and "exclusiveGpus: true" in text
    assert f"{first.id}:cancel" in text  # the command that stops it
    listed = jobs_with_identity(sim, inputs["identity"])
    assert [str(j.name) for j in listed] == [first.id]  # nothing submitted
    _stopped(provider, first)
    later = provider.create({**inputs, "held_jobs": [first.id], "continue_last_run": True})
    assert later.outs["status"]["output_dir"] == first.outs["status"]["output_dir"]
    provider.delete(later.id, {**later.outs, "delete_record_on_delete": True})


def test_continue_last_run_replaces_delete_first(provider, sim):
    """The diff of a replace with continue_last_run (input or stack setting) stops the old
    job before the new one starts, as exclusive_gpus does; other replaces create first."""
    old = _wired(provider)
    new = {**old, "triggers": ["again"]}
    assert provider.diff("id", old, new).delete_before_replace is False
    continued = {**new, "continue_last_run": True}
    assert provider.diff("id", old, continued).delete_before_replace is True
    stack = configured(sim.endpoint, continueLastRun="true")
    assert stack.diff("id", old, new).delete_before_replace is True


def test_a_directory_the_user_wrote_is_kept_as_written(provider, sim):
    inputs = _checked(provider, job_inputs(labels=HANG))  # no output_root: the user's own
    first = provider.create(inputs)
    second = provider.create({**inputs, "held_jobs": [first.id]})
    assert {_written(sim, first.id), _written(sim, second.id)} == {_root(inputs)}
    # An output_root the spec no longer names (the user wrote another one since): kept too.
    other = provider.create({**inputs, "output_root": "gs://elsewhere/jobs/x", "triggers": ["o"]})
    assert _written(sim, other.id) == _root(inputs)
    for created in (first, second, other):
        provider.delete(created.id, {**created.outs, "delete_record_on_delete": True})


def test_a_tuning_jobs_trials_write_under_a_directory_of_their_own(sim):
    tuner = configured(sim.endpoint, provider_class=TuningJobProvider, cancelTimeout="20")
    inputs = _checked(tuner, job_inputs(tuning=True, labels=HANG))
    root = _root(inputs, "trialJobSpec")
    created = tuner.create({**inputs, "output_root": root})
    job = sim.client().get_hyperparameter_tuning_job(name=created.id)
    written = str(job.trial_job_spec.base_output_directory.output_uri_prefix).rstrip("/")
    assert written.startswith(f"{root}/runs/")
    assert created.outs["status"]["output_dir"] == written
    tuner.delete(created.id, created.outs)


def test_delete_keeps_the_record_by_default_and_deletes_it_when_asked(provider, sim):
    """Cancel what runs, keep what ran; deleting records is opt-in, per job and per stack."""
    inputs = _checked(provider, job_inputs(labels=HANG))
    identity = inputs["identity"]
    kept = provider.create(inputs)
    provider.delete(kept.id, kept.outs)
    job = sim.client().get_custom_job(name=kept.id)
    assert job.state == JobState.JOB_STATE_CANCELLED  # cancelled, and its record is there

    asked = provider.create({**inputs, "triggers": ["job"], "delete_record_on_delete": True})
    provider.delete(asked.id, asked.outs)
    stack = configured(sim.endpoint, cancelTimeout="20", deleteRecords="true")
    by_stack = stack.create({**inputs, "triggers": ["stack"]})
    stack.delete(by_stack.id, by_stack.outs)
    # keep_record_on_delete (what earlier states hold) keeps it whatever the stack says.
    held = stack.create({**inputs, "triggers": ["keep"], "keep_record_on_delete": True})
    stack.delete(held.id, held.outs)
    names = {j.name for j in jobs_with_identity(sim, identity)}
    assert names == {kept.id, held.id}
