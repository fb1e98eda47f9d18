"""A create of a stack instance whose key this process drew does not look for its job first
(``components.lifecycle._adoption`` rule 4), and still never starts a second job.

Both doors draw the key in the process that then creates the jobs: the dynamic resources'
``RunKey`` create (here), the plugin's ``check_config`` of a provider with no state
(``tests/plugin/test_fresh_stack.py``). No job can carry an identity keyed with that instance
but the ones the process itself submits; a retried submission, and a second create of the
resource, look for those.
"""

from __future__ import annotations

from typing import Any

import pytest

from components import _run_key
from components.lifecycle._adoption import (
    RunLabels,
    identity_filter,
    instance_of,
    record_submission,
    unseen_identity,
)
from components.vertex import api as api_module
from components.vertex.api import CUSTOM_JOB, JobApi, RetryPolicy
from tests.provider.conftest import counted_calls, job_inputs, job_label, jobs_with_identity

HANG = {"emulator-outcome": "hang"}


def _new_key() -> str:
    """A run key drawn as the dynamic resources draw one (``RunKey``'s create)."""
    outs = _run_key.RunKeyProvider().create({}).outs
    key = outs[_run_key.KEY] if outs else None
    assert isinstance(key, str)
    return key


def _listed(monkeypatch: pytest.MonkeyPatch, provider: Any) -> list[Any]:
    client = api_module.shared_client(provider.endpoint, "us-central1")
    return counted_calls(monkeypatch, client, "list_custom_jobs")


def test_a_new_instance_lists_only_the_identity_of_names_alone(provider, sim, monkeypatch):
    key = _new_key()
    inputs = job_inputs(labels=HANG, run_key=key)
    assert unseen_identity(instance_of(key), inputs["identity"])
    listed = _listed(monkeypatch, provider)
    created = provider.create(inputs)
    # The dynamic resources' stacks are older than instances: their jobs of names alone may
    # be this run's, so that identity is listed; the keyed one is not (no job carries it).
    assert [request["filter"] for request in listed] == [
        f'labels.pulumi_resource="{inputs["identity"]}"'
    ]
    assert created.outs["status"]["adopted"] is False
    assert [j.name for j in jobs_with_identity(sim, inputs["identity"], key)] == [created.id]
    # A second create of the resource in this process looks for the job the first submitted.
    listed.clear()
    again = provider.create(inputs)
    assert again.id == created.id and again.outs["status"]["adopted"] is True
    assert f'labels.pulumi_resource="{job_label(inputs["identity"], key)}"' in [
        request["filter"] for request in listed
    ]
    sim.client().cancel_custom_job(name=created.id)


def test_a_key_read_from_the_state_is_looked_for(provider, monkeypatch):
    inputs = job_inputs(labels=HANG)  # the conftest's key: this process never drew it
    assert not unseen_identity(instance_of(inputs["run_key"]), inputs["identity"])
    listed = _listed(monkeypatch, provider)
    created = provider.create(inputs)
    assert len(listed) == 2  # the keyed identity and the identity of names alone
    provider.delete(created.id, created.outs)


@pytest.mark.parametrize("mode", ["close", "503"])
def test_a_lost_answer_of_a_new_instance_is_adopted_not_resubmitted(provider, sim, mode):
    key = _new_key()
    inputs = job_inputs(labels=HANG, run_key=key)
    sim.set_faults(drop_create=1, drop_mode=mode)
    created = provider.create(inputs)
    assert sim.set_faults()["drop_create"] == 0  # the fault was spent: a job was stored
    assert created.outs["status"]["adopted"] is True
    assert [j.name for j in jobs_with_identity(sim, inputs["identity"], key)] == [created.id]
    sim.client().cancel_custom_job(name=created.id)


def test_a_key_read_back_by_the_run_key_is_looked_for_again(provider, monkeypatch):
    # The run key's diff (an `up`) or read (a refresh) of a process that drew it: the key is
    # in the state now, where another process may have read it.
    for came_back in ("diff", "read"):
        key = _new_key()
        run_key = _run_key.RunKeyProvider()
        if came_back == "diff":
            run_key.diff(_run_key.RUN_KEY_RESOURCE_NAME, {_run_key.KEY: key}, {})
        else:
            run_key.read(_run_key.RUN_KEY_RESOURCE_NAME, {_run_key.KEY: key})
        inputs = job_inputs(labels=HANG, run_key=key)
        assert not unseen_identity(instance_of(key), job_label(inputs["identity"], key))
        listed = _listed(monkeypatch, provider)
        created = provider.create(inputs)
        assert len(listed) == 2, came_back
        provider.delete(created.id, created.outs)


def test_a_look_up_after_a_submission_of_the_identity_lists_it(provider, monkeypatch):
    # Asked at each look-up, not when the run was read: a second attempt of a placed job in
    # the region of the first (spot, then on-demand) looks for what the first submitted.
    key = _new_key()
    identity = job_label(job_inputs(run_key=key)["identity"], key)
    labels = RunLabels(identity=identity, run="r", instance=instance_of(key))
    api = JobApi(
        api_module.shared_client(provider.endpoint, "us-central1"), CUSTOM_JOB, RetryPolicy()
    )
    listed = _listed(monkeypatch, provider)
    parent = "projects/local-training/locations/us-central1"
    assert api.look_up(parent, labels).adoptable is None and listed == []
    record_submission(identity)
    api.look_up(parent, labels)
    assert [request["filter"] for request in listed] == [identity_filter(identity)]
