"""Jobs that wait do not queue behind each other: the provider serves the engine's parallelism.

Pulumi's Python dynamic provider host serves at most 4 operations at once unless the provider
lifts that limit (``components.dynamic._host``). Here each job takes ``START_SECONDS`` to start (the
emulator keeps it PENDING that long) and every create waits for it to run: with the limit, the
jobs would be submitted four at a time, one start apart; without it, all at once. The emulator's
times show which whatever the machine's load: a create returns only once its job runs, so with a
limit of N no more than N jobs can be submitted before the first job's ``start_time``. (Wall
times are not asserted: on a loaded machine they race.) If an SDK upgrade brings the limit back
(the provider then warns and works four at a time), these tests fail.
"""

from __future__ import annotations

from typing import Any

from google.cloud.aiplatform_v1 import JobState

from tests.e2e._engine import (
    Workspace,
    emulator_for,
    job_entry,
    list_jobs,
    local_config,
    python_job,
)

JOBS = 16
START_SECONDS = 8.0
HOST_LIMIT = 4
"""Operations the stock dynamic provider host runs at once."""


def _delayed_start_emulator(ws: Workspace) -> Any:
    return emulator_for(
        ws,
        "--mode",
        "simulate",
        "--simulate-queued-seconds",
        "0.1",
        "--simulate-pending-seconds",
        str(START_SECONDS),
        "--simulate-run-seconds",
        "600",
    )


def _waiting_jobs(ws: Workspace, count: int) -> list[dict[str, Any]]:
    spec = ws.write_job("shared", python_job(None))
    return [
        job_entry(f"wait-{i:02d}", spec, waitFor="running", triggers=[f"shard-{i}"])
        for i in range(count)
    ]


def _submitted_before_first_start(jobs: list[Any]) -> int:
    """How many jobs were submitted before any job started: at most the operations served at once,
    since each create returns only once its job runs."""
    first_start = min(j.start_time for j in jobs)
    return sum(1 for j in jobs if j.create_time < first_start)


def test_jobs_waiting_for_running_start_side_by_side(ws: Workspace) -> None:
    with _delayed_start_emulator(ws) as emu:
        ws.init_stack(local_config(emu.endpoint, _waiting_jobs(ws, JOBS)))

        out = ws.up("--parallel", str(JOBS)).output

        jobs = list_jobs(emu.client())
        assert len(jobs) == JOBS
        assert all(j.state == JobState.JOB_STATE_RUNNING for j in jobs)
        # Four at a time, only four could be submitted before the first of them started.
        side_by_side = _submitted_before_first_start(jobs)
        assert side_by_side > HOST_LIMIT, f"{side_by_side} jobs submitted before any started"
        assert "could not find the dynamic provider host's worker pool" not in out


def test_max_concurrent_operations_bounds_the_provider(ws: Workspace) -> None:
    """``training:maxConcurrentOperations`` reaches the provider process and is what it serves."""
    jobs, limit = 12, 6
    with _delayed_start_emulator(ws) as emu:
        config = local_config(emu.endpoint, _waiting_jobs(ws, jobs))
        config["training:maxConcurrentOperations"] = limit
        ws.init_stack(config)

        ws.up("--parallel", str(jobs))

        submitted = list_jobs(emu.client())
        assert len(submitted) == jobs
        # Six at a time: the seventh was submitted once one of the first six had started.
        assert _submitted_before_first_start(submitted) == limit
