"""Job names by project number (as Vertex AI returns them) and by project ID (as stacks written
before the emulator numbered projects hold them): the provider works with both.

The provider against the emulator through the real REST client.
"""

from __future__ import annotations

from typing import Any

from google.cloud.aiplatform_v1 import JobState

from emulator.names import derived_number, with_project
from emulator.testing import EmulatorProcess
from tests.provider.conftest import job_inputs, jobs_with_identity

HANG = {"emulator-outcome": "hang"}
PROJECT = "local-training"


def _checked(provider: Any, inputs: dict[str, Any]) -> dict[str, Any]:
    result = provider.check({}, inputs)
    assert [(f.property, f.reason) for f in result.failures] == []
    checked: dict[str, Any] = result.inputs
    return checked


def test_a_stack_holding_the_project_id_name_refreshes_and_deletes_its_job(provider, sim):
    """The state of an existing stack holds ``projects/<id>/...``: refresh reads the job, and
    delete cancels it and removes its record."""
    inputs = _checked(provider, job_inputs(labels=HANG))
    created = provider.create(inputs)
    assert created.id.split("/")[1] == derived_number(PROJECT)
    old_id = with_project(created.id, PROJECT)
    read = provider.read(old_id, created.outs)
    assert read.id == old_id
    assert read.outs["status"]["job_name"] == created.id
    assert read.outs["status"]["state"] in (
        "JOB_STATE_QUEUED",
        "JOB_STATE_PENDING",
        "JOB_STATE_RUNNING",
    )
    provider.delete(old_id, {**created.outs, "delete_record_on_delete": True})
    assert jobs_with_identity(sim, inputs["identity"]) == []


def test_held_jobs_by_project_id_are_not_adopted(provider, sim: EmulatorProcess):
    """``held_jobs`` from a state that names the job by project ID: still the stack's job, so a
    replace starts a new one instead of adopting it."""
    inputs = _checked(provider, job_inputs(labels=HANG))
    first = provider.create(inputs)
    again = provider.create({**inputs, "held_jobs": [with_project(first.id, PROJECT)]})
    assert again.id != first.id and again.outs["status"]["adopted"] is False
    assert sim.client().get_custom_job(name=first.id).state != JobState.JOB_STATE_CANCELLED
    for job in (first, again):
        provider.delete(job.id, job.outs)
