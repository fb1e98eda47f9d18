"""A refresh reads its active jobs, and names an active job of a resource that the stack does
not hold, from one listing of a region's active jobs shared by every read of the refresh
(``JobApi.current``, ``JobApi.active_look_up``): a list call per 100 jobs, not a read per job. A
job the listing does not hold is read alone."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from components._provider import TrainingJobProvider
from components.vertex import api
from emulator.testing import EmulatorProcess, running_emulator
from tests.provider.conftest import SIMULATE_ARGS, configured, counted_calls, job_inputs

REGION = "us-central1"
ACTIVE = {"JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING"}


@pytest.fixture(scope="module")
def long_jobs() -> Iterator[EmulatorProcess]:
    # The simulated jobs run until cancelled: a refresh reads them active.
    with running_emulator(*SIMULATE_ARGS, "--simulate-run-seconds", "600") as server:
        yield server


def _created(provider: TrainingJobProvider, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    checked = provider.check({}, inputs)
    assert checked.failures == []
    result = provider.create(checked.inputs)
    assert result.outs is not None
    return str(result.id), result.outs


def test_a_refresh_lists_a_regions_active_jobs_once_and_names_a_stray(
    long_jobs, monkeypatch, capfd
):
    provider = configured(long_jobs.endpoint, cancelTimeout="20", retryDeadline="30")
    jobs = [_created(provider, job_inputs(wait_for="submitted")) for _ in range(5)]
    # A second run of the first resource (other triggers: another run hash), not in the stack.
    first = jobs[0][1]
    stray_id, _ = _created(
        provider,
        {**job_inputs(wait_for="submitted"), "identity": first["identity"], "triggers": ["2"]},
    )

    client = api.shared_client(provider.endpoint, REGION)
    listed = counted_calls(monkeypatch, client, "list_custom_jobs")
    got = counted_calls(monkeypatch, client, "get_custom_job")
    monkeypatch.setattr(api, "_LISTINGS", {})
    capfd.readouterr()
    with ThreadPoolExecutor(max_workers=5) as pool:
        reads = list(pool.map(lambda job: provider.read(job[0], job[1]), jobs))

    assert [read.id for read in reads] == [job_id for job_id, _ in jobs]
    assert all(read.outs["status"]["state"] in ACTIVE for read in reads)
    assert len(listed) == 1, listed  # one listing for the five reads
    assert listed[0]["filter"] == api.ACTIVE_FILTER
    assert got == []  # each job read from the listing
    said = capfd.readouterr().err
    assert stray_id in said and "is active and not in the stack" in said
    assert said.count("not in the stack") == 1  # only the first resource has a stray

    for job_id, outs in [*jobs, (stray_id, first)]:
        provider.delete(job_id, outs)


def test_the_listing_is_read_again_once_it_is_old(long_jobs, monkeypatch):
    provider = configured(long_jobs.endpoint, cancelTimeout="20", retryDeadline="30")
    job_id, outs = _created(provider, job_inputs(wait_for="submitted"))
    client = api.shared_client(provider.endpoint, REGION)
    listed = counted_calls(monkeypatch, client, "list_custom_jobs")
    monkeypatch.setattr(api, "_LISTINGS", {})
    provider.read(job_id, outs)
    provider.read(job_id, outs)
    assert len(listed) == 1
    monkeypatch.setattr(api, "READ_LISTING_SECONDS", 0.0)
    provider.read(job_id, outs)
    assert len(listed) == 2
    provider.delete(job_id, outs)


def test_a_job_the_listing_does_not_hold_is_read_alone(long_jobs, monkeypatch):
    """A job cancelled after the listing was taken is still listed as active there; one that
    ended before it is not listed, and its read shows it as it is now."""
    provider = configured(long_jobs.endpoint, cancelTimeout="20", retryDeadline="30")
    running_id, running_outs = _created(provider, job_inputs(wait_for="submitted"))
    ended_id, ended_outs = _created(provider, job_inputs(wait_for="submitted"))
    provider.delete(ended_id, ended_outs)  # cancelled: not an active job any more
    client = api.shared_client(provider.endpoint, REGION)
    got = counted_calls(monkeypatch, client, "get_custom_job")
    monkeypatch.setattr(api, "_LISTINGS", {})

    assert provider.read(running_id, running_outs).outs["status"]["state"] in ACTIVE
    assert got == []
    ended = provider.read(ended_id, ended_outs)
    assert ended.id == ended_id
    assert ended.outs["status"]["state"] == "JOB_STATE_CANCELLED"
    assert got == [ended_id]
    provider.delete(running_id, running_outs)


def test_a_refused_listing_leaves_each_read_to_a_get(long_jobs, monkeypatch):
    """A role that may read jobs but not list them: the refresh reads each job alone."""
    from google.api_core import exceptions as gexc

    provider = configured(long_jobs.endpoint, cancelTimeout="20", retryDeadline="30")
    job_id, outs = _created(provider, job_inputs(wait_for="submitted"))
    client = api.shared_client(provider.endpoint, REGION)

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise gexc.PermissionDenied("customJobs.list denied")  # type: ignore[no-untyped-call]

    monkeypatch.setattr(client, "list_custom_jobs", refused)
    got = counted_calls(monkeypatch, client, "get_custom_job")
    monkeypatch.setattr(api, "_LISTINGS", {})
    read = provider.read(job_id, outs)
    assert read.id == job_id and read.outs["status"]["state"] in ACTIVE
    assert got == [job_id]
    monkeypatch.undo()
    provider.delete(job_id, outs)
