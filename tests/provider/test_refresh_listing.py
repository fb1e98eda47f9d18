"""A refresh names an active job of a resource that the stack does not hold, from one listing of
a region's active jobs shared by every read of the refresh (``JobApi.active_look_up``), not one
list call per job."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from components._provider import TrainingJobProvider
from components.vertex import api
from emulator.testing import EmulatorProcess, running_emulator
from tests.provider.conftest import SIMULATE_ARGS, configured, job_inputs

REGION = "us-central1"


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
    listed: list[dict[str, Any]] = []
    real_list = client.list_custom_jobs

    def counted(*args: Any, **kwargs: Any) -> Any:
        listed.append(kwargs.get("request") or {})
        return real_list(*args, **kwargs)

    monkeypatch.setattr(client, "list_custom_jobs", counted)
    monkeypatch.setattr(api, "_LISTINGS", {})
    capfd.readouterr()
    with ThreadPoolExecutor(max_workers=5) as pool:
        reads = list(pool.map(lambda job: provider.read(job[0], job[1]), jobs))

    assert [read.id for read in reads] == [job_id for job_id, _ in jobs]
    active = {"JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING"}
    assert all(read.outs["status"]["state"] in active for read in reads)
    assert len(listed) == 1, listed  # one listing for the five reads
    assert listed[0]["filter"] == api.ACTIVE_FILTER
    said = capfd.readouterr().err
    assert stray_id in said and "is active and not in the stack" in said
    assert said.count("not in the stack") == 1  # only the first resource has a stray

    for job_id, outs in [*jobs, (stray_id, first)]:
        provider.delete(job_id, outs)


def test_the_listing_is_read_again_once_it_is_old(long_jobs, monkeypatch):
    provider = configured(long_jobs.endpoint, cancelTimeout="20", retryDeadline="30")
    job_id, outs = _created(provider, job_inputs(wait_for="submitted"))
    client = api.shared_client(provider.endpoint, REGION)
    listed: list[Any] = []
    real_list = client.list_custom_jobs

    def counted(*args: Any, **kwargs: Any) -> Any:
        listed.append(kwargs)
        return real_list(*args, **kwargs)

    monkeypatch.setattr(client, "list_custom_jobs", counted)
    monkeypatch.setattr(api, "_LISTINGS", {})
    provider.read(job_id, outs)
    provider.read(job_id, outs)
    assert len(listed) == 1
    monkeypatch.setattr(api, "ACTIVE_LISTING_SECONDS", 0.0)
    provider.read(job_id, outs)
    assert len(listed) == 2
    provider.delete(job_id, outs)
