"""The interface between the :class:`~emulator.runner.Runner` and the two ways of running jobs.

The Runner owns job state transitions and the service's lifecycle; a driver makes jobs progress:
:class:`~emulator.execute.ExecuteDriver` with real processes,
:class:`~emulator.simulate.SimulateDriver` on timers. The Runner picks one from ``--mode`` when it
starts and hands it every job; a driver reports back through :class:`JobControl`, the part of the
Runner it may use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from emulator import errors
from emulator.cluster import TrialContext
from emulator.config import Settings
from emulator.store import Store

__all__ = ["CANCELLED", "Driver", "JobControl", "timeout_seconds"]

# job.error of a cancelled job, whichever driver cancelled it.
CANCELLED = (errors.RPC_CANCELLED, "Job was cancelled.")


class JobControl(Protocol):
    """What a driver may ask of the Runner: settings, the store and job state transitions."""

    settings: Settings
    store: Store

    @property
    def stopping(self) -> bool:
        """True once the service is shutting down: start nothing new, stop what runs."""
        ...

    def job_dir(self, job_id: str) -> Path:
        """``<state-dir>/jobs/<id>``: logs, installed packages and working directories."""
        ...

    def transition(self, job_id: str, to: int, *, only_from: set[int] | None = None) -> bool:
        """Move a non-terminal job to ``to`` (only from ``only_from`` if given); True if done."""
        ...

    def finish(self, job_id: str, to: int, error: tuple[int, str] | None = None) -> None:
        """Put a job in a terminal state (a job already terminal is left alone)."""
        ...

    def trial_context(self, job_id: str) -> TrialContext | None:
        """What the replicas of a tuning trial's CustomJob are told about it (None: no trial)."""
        ...


class Driver(Protocol):
    """Makes stored jobs progress; called by the Runner only."""

    def submit(self, job_id: str, *, relaunch: bool) -> None:
        """Start driving a QUEUED job (relaunch: it was RUNNING when the service stopped)."""
        ...

    def cancel(self, job_id: str) -> None:
        """The job was just marked CANCELLING: stop it and finish it as CANCELLED."""
        ...

    def maintenance(self, job_id: str, replica: str) -> dict[str, Any]:
        """Kill one replica of a running job and restart it; the replica's record afterwards."""
        ...

    def shutdown(self) -> None:
        """The service is stopping: stop every replica and thread (jobs stay as stored)."""
        ...


def timeout_seconds(job: Any) -> float:
    """``scheduling.timeout`` in seconds (0: none)."""
    t = job.job_spec.scheduling.timeout
    return float(t.seconds) + float(t.nanos) / 1e9
