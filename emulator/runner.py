"""Drives jobs through their states, handing the work to a driver chosen from ``--mode``.

State machine: QUEUED (waiting for a running-job slot and GPUs) → PENDING (packages installed,
resources checked) → RUNNING (one process per replica) → SUCCEEDED / FAILED; a cancel goes
through CANCELLING to CANCELLED. How a job gets from one state to the next is the driver's
business: real processes in execute mode (:mod:`emulator.execute`), timers in simulate mode
(:mod:`emulator.simulate`). This module owns
what both share: the transitions themselves, cancelling and deleting jobs, and the service's
lifecycle. Hyperparameter tuning jobs go to :class:`~emulator.tuning.TuningScheduler` instead,
whose trials are CustomJobs like any other: the Runner tells it when a job ends.

When the service stops (gracefully or not), running jobs stay RUNNING in the database; the next
start (:meth:`Runner.recover`) kills the replicas and pip installs left behind by a crash and then
relaunches the job if ``scheduling.restart_job_on_worker_restart`` is set (and
``disable_retries`` is not), or marks it FAILED saying why.

A job the service has accepted is never dropped because the state could not be written (a full
disk): drivers' and the tuning scheduler's threads wait for the store and carry on
(:class:`~emulator.store.Store`), and what an API request's thread started but could not finish
(submitting a job, stopping a cancelled one) is handed to a thread of its own, which waits.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import capacity, errors, procs, protos
from .cluster import TrialContext, web_access_uris
from .config import Settings
from .driver import CANCELLED, Driver, JobControl
from .execute import ExecuteDriver, restarts_job_on_worker_restart
from .simulate import OUTCOME_LABEL, OUTCOMES, RUN_MS_LABEL, SimulateDriver
from .store import StateUnavailable, Store
from .tuning import TuningScheduler

# The simulate labels are re-exported: the server checks them at create, in either mode.
__all__ = ["OUTCOMES", "OUTCOME_LABEL", "RUN_MS_LABEL", "Runner"]

log = logging.getLogger("emulator.runner")

S = protos.JobState

# One driver per --mode (config.MODES).
_DRIVERS: dict[str, Callable[[JobControl], Driver]] = {
    "execute": ExecuteDriver,
    "simulate": SimulateDriver,
}

_LOST = (
    "The emulator service stopped while the job was running and its replicas were lost. The job "
    "was not relaunched because {why}."
)


class Runner:
    """Owns every job's progress; the HTTP layer only stores jobs and calls into this."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self._stopping = threading.Event()
        self._driver = _DRIVERS[settings.mode](self)
        self.tuning = TuningScheduler(self, simulated=settings.mode == "simulate")
        self.capacity = capacity.Capacity(settings.no_capacity)
        # Jobs failing for want of capacity (--no-capacity): never handed to a driver.
        self._short: set[str] = set()

    # -- called by the HTTP layer -------------------------------------------------------------

    def _is_tuning(self, job_id: str) -> bool:
        return self.store.job_kind(job_id) is protos.TUNING_JOB

    def submit(self, job_id: str, *, relaunch: bool = False) -> None:
        """Start driving a stored job (relaunch: it was RUNNING when the service stopped)."""
        if self._stopping.is_set():
            return
        try:
            tuning = self._is_tuning(job_id)
        except StateUnavailable:
            self._later(f"submit-{job_id}", lambda: self.submit(job_id, relaunch=relaunch))
            return
        if not relaunch and self._fails_for_capacity(job_id, tuning):
            return
        if tuning:
            self.tuning.submit(job_id)
        else:
            self._driver.submit(job_id, relaunch=relaunch)

    def _fails_for_capacity(self, job_id: str, tuning: bool) -> bool:
        """True when the job asks for a GPU its region has no capacity for (``--no-capacity``):
        it goes PENDING, then FAILED with RESOURCE_EXHAUSTED, as Vertex AI's does."""
        if not self.capacity.gaps:
            return False
        job = self.store.get_job(job_id)
        if job is None:
            return False
        region = str(job.name).split("/")[3] if str(job.name).count("/") >= 5 else ""
        kind = protos.TUNING_JOB if tuning else protos.CUSTOM_JOB
        message = self.capacity.lacking(job, kind, region)
        if message is None:
            return False
        self._short.add(job_id)
        delay = self.settings.no_capacity_seconds

        def pending_then_failed() -> None:
            self.transition(job_id, S.JOB_STATE_PENDING, only_from={S.JOB_STATE_QUEUED})
            time.sleep(delay)
            self.finish(job_id, S.JOB_STATE_FAILED, (errors.RPC_RESOURCE_EXHAUSTED, message))
            self._short.discard(job_id)

        log.info("job %s: no capacity in %s: it will fail", job_id, region)
        threading.Thread(target=pending_then_failed, name=f"capacity-{job_id}", daemon=True).start()
        return True

    def cancel(self, job_id: str) -> None:
        """The job was just marked CANCELLING: stop it."""
        if job_id in self._short:  # never reached a driver (--no-capacity)
            self.finish(job_id, S.JOB_STATE_CANCELLED, CANCELLED)
            return
        try:
            if self._is_tuning(job_id):
                self.tuning.cancel(job_id)
            else:
                self._driver.cancel(job_id)
        except StateUnavailable:
            self._later(f"cancel-{job_id}", lambda: self.cancel(job_id))

    def _later(self, name: str, work: Callable[[], None]) -> None:
        """Do ``work`` in a thread of its own, which waits for the store: this thread (an API
        request's) found that the state cannot be used now, and does not wait."""
        log.warning("%s: the state cannot be used now; done once it can", name)

        def patiently() -> None:
            try:
                work()
            except StateUnavailable as problem:  # the service stops: its next start goes on
                log.warning("%s: not done: %s", name, problem)

        threading.Thread(target=patiently, name=name, daemon=True).start()

    def request_cancel(self, job_id: str) -> int | None:
        """Mark the job CANCELLING and stop it; the terminal state it is already in, or None."""
        final_state: list[int] = []

        def change(job: Any) -> bool:
            if protos.is_terminal(job.state):
                final_state.append(job.state)
                return False
            if job.state == S.JOB_STATE_CANCELLING:
                return False
            protos.set_state(job, S.JOB_STATE_CANCELLING)
            return True

        self.store.update_job(job_id, change)
        if final_state:
            return final_state[0]
        self.cancel(job_id)
        return None

    def maintenance(self, job_id: str, replica: str) -> dict[str, Any]:
        """Simulate a host maintenance event on one replica: kill its process and restart it."""
        return self._driver.maintenance(job_id, replica)

    def delete_later(self, op_name: str, job_id: str, created: float) -> None:
        """Delete the job's files and rows in the background, then mark the operation done.

        A tuning job takes its trials' CustomJobs with it.
        """

        def work() -> None:
            # A short delay so clients really poll the operation, as they must with Vertex.
            time.sleep(0.05)
            for doomed in [*self.store.trial_job_ids(job_id), job_id]:
                shutil.rmtree(self.job_dir(doomed), ignore_errors=True)
                self.store.delete_job(doomed)
            done = protos.delete_operation_json(op_name, done=True, created=created)
            self.store.put_operation(op_name, job_id, True, done)

        threading.Thread(target=work, name=f"delete-{job_id}", daemon=True).start()

    # -- lifecycle ----------------------------------------------------------------------------

    def recover(self) -> None:
        """Reconcile jobs left unfinished by a previous run of the service (see module doc).

        CustomJobs first: a tuning job then carries on from what became of its trials' jobs.
        """
        self._reap_installs()
        tuning_jobs = []
        for job_id in self.store.unfinished_job_ids():
            if self._is_tuning(job_id):
                tuning_jobs.append(job_id)
                continue
            job = self.store.get_job(job_id)
            if job is None:
                continue
            self._reap_replicas(job_id)
            if not protos.is_terminal(job.state):  # ended meanwhile (a tuning job's trial)
                self._recover_job(job_id, job)
        for job_id in tuning_jobs:
            self.tuning.submit(job_id)
        for op_name, op_job_id in self.store.pending_operations():
            op_json = self.store.get_operation(op_name) or "{}"
            if op_job_id is not None:
                self.delete_later(op_name, op_job_id, _op_create_time(op_json))

    def _reap_replicas(self, job_id: str) -> None:
        # Whatever the mode now, the previous run may have started processes: kill those still
        # alive (identified by pid and start time) and record the others as lost.
        killed = []
        for r in self.store.replicas(job_id):
            if procs.kill_orphan_group(r.pid, r.start_ticks, self.settings.grace_seconds):
                killed.append(r.replica)
            if r.state in ("starting", "running"):
                r.state = "lost"
                self.store.put_replica(r)
        if killed:
            log.warning("job %s: killed replicas left by the previous run: %s", job_id, killed)

    def _reap_installs(self) -> None:
        # pip installs of the previous run (a job's packages, with their build subprocesses in
        # pip's process group) go too, before any job is relaunched and installs again.
        for job_id, pid, ticks in self.store.install_processes():
            if procs.kill_orphan_group(pid, ticks, self.settings.grace_seconds):
                log.warning("job %s: killed the pip install left by the previous run", job_id)
            self.store.clear_install_process(job_id)

    def _recover_job(self, job_id: str, job: Any) -> None:
        if job.state in (S.JOB_STATE_QUEUED, S.JOB_STATE_PENDING):
            self.store.update_job(job_id, _to_state(S.JOB_STATE_QUEUED))
            self.submit(job_id)
        elif job.state == S.JOB_STATE_CANCELLING:
            self.finish(job_id, S.JOB_STATE_CANCELLED, CANCELLED)
        elif restarts_job_on_worker_restart(job):
            # A service restart restarts every worker: the job restarts as a whole, as Vertex
            # restarts a job with this flag when one of its workers restarts.
            log.info("job %s: relaunching after a service restart", job_id)
            self.submit(job_id, relaunch=True)
        else:
            why = (
                "scheduling.disable_retries overrides scheduling.restart_job_on_worker_restart"
                if job.job_spec.scheduling.disable_retries
                else "scheduling.restart_job_on_worker_restart is false"
            )
            self.finish(job_id, S.JOB_STATE_FAILED, (errors.RPC_UNAVAILABLE, _LOST.format(why=why)))

    def shutdown(self) -> None:
        """Stop every replica (jobs stay RUNNING in the database for the next start)."""
        self._stopping.set()
        # Work waiting for the state gives up now: the next start carries it on.
        self.store.stop_waiting()
        self._driver.shutdown()
        self.tuning.shutdown()

    @property
    def stopping(self) -> bool:
        """True once :meth:`shutdown` was called."""
        return self._stopping.is_set()

    # -- job state, for the drivers (driver.JobControl) -----------------------------------------

    def job_dir(self, job_id: str) -> Path:
        """``<state-dir>/jobs/<id>``: logs, installed packages and working directories."""
        return self.settings.state_dir / "jobs" / job_id

    def transition(self, job_id: str, to: int, *, only_from: set[int] | None = None) -> bool:
        """Move a non-terminal job to ``to`` (only from ``only_from`` if given); True if done."""

        def change(job: Any) -> bool:
            if protos.is_terminal(job.state) or (
                only_from is not None and job.state not in only_from
            ):
                return False
            protos.set_state(job, to)
            if to == S.JOB_STATE_RUNNING and _has_web_access(job):
                # Vertex fills these in once the replicas run (one URI per replica).
                job.web_access_uris.clear()
                job.web_access_uris.update(web_access_uris(job))
            return True

        job = self.store.update_job(job_id, change)
        return job is not None and job.state == to

    def finish(self, job_id: str, to: int, error: tuple[int, str] | None = None) -> None:
        """Put a job in a terminal state (a job already terminal is left alone)."""

        def change(job: Any) -> bool:
            if protos.is_terminal(job.state):
                return False
            protos.set_state(job, to)
            if error is not None:
                protos.set_error(job, *error)
            return True

        self.store.update_job(job_id, change)
        self.tuning.job_finished(job_id)

    def trial_context(self, job_id: str) -> TrialContext | None:
        """What the replicas of a tuning trial's CustomJob are told about it (None: no trial)."""
        return self.tuning.trial_context(job_id)


def _has_web_access(job: Any) -> bool:
    """A CustomJob with ``job_spec.enable_web_access`` (a tuning job's trials are CustomJobs)."""
    return protos.kind_of(job) is protos.CUSTOM_JOB and bool(job.job_spec.enable_web_access)


def _to_state(state: int) -> Callable[[Any], bool]:
    def change(job: Any) -> bool:
        protos.set_state(job, state)
        return True

    return change


def _op_create_time(op_json: str) -> float:
    try:
        stamp = json.loads(op_json)["metadata"]["genericMetadata"]["createTime"]
        return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except (KeyError, ValueError, TypeError):
        return time.time()
