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

from google.cloud.aiplatform_v1 import types as aip

from . import errors
from .cluster import TrialContext
from .config import Settings
from .store import Store

__all__ = [
    "CANCELLED",
    "DEFAULT_MAX_WAIT_SECONDS",
    "DEFAULT_TIMEOUT_SECONDS",
    "Driver",
    "JobControl",
    "max_wait_seconds",
    "timeout_seconds",
]

# job.error of a cancelled job, whichever driver cancelled it.
CANCELLED = (errors.RPC_CANCELLED, "Job was cancelled.")
# scheduling.timeout when the job does not set it (timeout_seconds).
DEFAULT_TIMEOUT_SECONDS = 7 * 24 * 3600.0
# scheduling.max_wait_duration of a FLEX_START job that does not set it (max_wait_seconds).
DEFAULT_MAX_WAIT_SECONDS = 24 * 3600.0


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
    """``scheduling.timeout`` in seconds; unset (or zero), Vertex AI's default of 7 days.

    "The maximum job running time. The default is 7 days." (v1 API reference of ``Scheduling``,
    https://cloud.google.com/vertex-ai/docs/reference/rest/v1/CustomJobSpec#Scheduling). The
    default is applied, not written into the job: the API reference gives no sign that Vertex
    fills the field in, and a job read back keeps the spec it was created with.
    """
    t = job.job_spec.scheduling.timeout
    seconds = float(t.seconds) + float(t.nanos) / 1e9
    return seconds if seconds > 0 else DEFAULT_TIMEOUT_SECONDS


def max_wait_seconds(job: Any) -> float | None:
    """How long the job may wait in QUEUED for its resources; None: as long as it takes.

    Only a ``scheduling.strategy`` of FLEX_START has a limit: ``max_wait_duration``, 24 hours
    when unset, none when set to 0 ("the maximum duration that a job will wait for the requested
    resources to be provisioned if the scheduling strategy is set to [Strategy.DWS_FLEX_START].
    If set to 0, the job will wait indefinitely. The default is 24 hours.", v1 API reference of
    ``Scheduling``; "Schedule training jobs based on resource availability",
    https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws).
    """
    scheduling = job.job_spec.scheduling
    if scheduling.strategy != aip.Scheduling.Strategy.FLEX_START:
        return None
    if not scheduling.HasField("max_wait_duration"):
        return DEFAULT_MAX_WAIT_SECONDS
    d = scheduling.max_wait_duration
    seconds = float(d.seconds) + float(d.nanos) / 1e9
    return seconds if seconds > 0 else None
