"""Jobs that wait do not queue behind each other: the provider serves the engine's parallelism.

Pulumi's Python dynamic provider host serves at most 4 operations at once unless the provider
lifts that limit (``components.lifecycle._host``). Here each job takes ``START_SECONDS`` to start (the
emulator keeps it PENDING that long) and every create waits for it to run: with the limit, the
jobs would be submitted four at a time, one start apart; without it, all at once. The emulator's
``create_time`` of each job shows which, whatever the machine's load (the wall time of
`pulumi up` is not: the engine's overhead grows with the load). If an SDK upgrade brings the limit back (the provider then warns
and works four at a time), these tests fail.
"""

from __future__ import annotations

import time
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
START_SECONDS = 5.0
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


def _submission_spread(jobs: list[Any]) -> float:
    """Seconds between the first and the last job's submission."""
    created = sorted(j.create_time for j in jobs)
    return float((created[-1] - created[0]).total_seconds())


def test_jobs_waiting_for_running_start_side_by_side(ws: Workspace) -> None:
    with _delayed_start_emulator(ws) as emu:
        ws.init_stack(local_config(emu.endpoint, _waiting_jobs(ws, JOBS)))

        started = time.monotonic()
        out = ws.up("--parallel", str(JOBS)).output
        elapsed = time.monotonic() - started

        jobs = list_jobs(emu.client())
        assert len(jobs) == JOBS
        assert all(j.state == JobState.JOB_STATE_RUNNING for j in jobs)
        spread = _submission_spread(jobs)
        # Four at a time, the last jobs would be submitted (JOBS / 4 - 1) starts after the first.
        queued = (JOBS / HOST_LIMIT - 1) * START_SECONDS
        assert spread < START_SECONDS, f"jobs submitted over {spread:.1f}s (queued: {queued:g}s)"
        # The up waited for the starts. No upper bound on its wall time: the engine's own
        # overhead grows with the machine's load (32 s for this up beside pytest's other
        # workers), and the spread above tells queued from side by side whatever the load.
        assert elapsed >= START_SECONDS, f"pulumi up took {elapsed:.1f}s: it did not wait"
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
        # Six at a time: the second six were submitted once the first had started.
        assert _submission_spread(submitted) >= START_SECONDS * 0.9
        created = sorted(j.create_time for j in submitted)
        first_wave = [c for c in created if (c - created[0]).total_seconds() < START_SECONDS / 2]
        assert len(first_wave) == limit
