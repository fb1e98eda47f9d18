"""Simulate mode: jobs move through their states on timers; no process is started.

QUEUED → PENDING → RUNNING → SUCCEEDED after ``--simulate-queued-seconds``,
``--simulate-pending-seconds`` and ``--simulate-run-seconds``. Labels steer one job:
``emulator-outcome`` = ``succeed`` (default) | ``fail`` | ``hang`` (stays RUNNING until cancelled
or timed out) and ``emulator-run-ms`` = how long it runs. One thread serves every job from a heap
of timed actions, so thousands of jobs cost no more threads than one.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from . import errors, protos
from .driver import CANCELLED, JobControl, timeout_seconds

__all__ = ["OUTCOMES", "OUTCOME_LABEL", "RUN_MS_LABEL", "SimulateDriver"]

# The runner's logger, as before this module was split from it: the service log reads the same.
log = logging.getLogger("emulator.runner")

S = protos.JobState
OUTCOME_LABEL = "emulator-outcome"
RUN_MS_LABEL = "emulator-run-ms"
OUTCOMES = ("succeed", "fail", "hang")


class SimulateDriver:
    """The simulate-mode :class:`~emulator.driver.Driver`: one thread moves every job on timers."""

    def __init__(self, control: JobControl) -> None:
        self.control = control
        self.settings = control.settings
        self._heap: list[tuple[float, int, str, str]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._halt = False
        self._actions: dict[str, Callable[[str], None]] = {
            "pending": self._pending,
            "run": self._run,
            "finish": self._finish,
            "timeout": self._timeout,
            "cancel": self._cancel,
        }
        self._thread = threading.Thread(target=self._loop, name="simulator", daemon=True)
        self._thread.start()

    # -- Driver -------------------------------------------------------------------------------

    def submit(self, job_id: str, *, relaunch: bool) -> None:
        """Queue the job (a relaunched one goes straight back to RUNNING)."""
        if relaunch:
            self._schedule(0.0, job_id, "run")
        else:
            self._schedule(self.settings.simulate_queued_seconds, job_id, "pending")

    def cancel(self, job_id: str) -> None:
        """Finish the job as CANCELLED after ``--simulate-cancel-seconds``."""
        self._schedule(self.settings.simulate_cancel_seconds, job_id, "cancel")

    def maintenance(self, job_id: str, replica: str) -> dict[str, Any]:
        """Refused: there is no process to kill."""
        raise errors.failed_precondition(
            "Maintenance events kill real processes; the emulator runs in --mode simulate."
        )

    def shutdown(self) -> None:
        """Stop the timer thread; pending actions are dropped (jobs stay as stored)."""
        with self._cond:
            self._halt = True
            self._cond.notify()
        self._thread.join(timeout=5)

    # -- the timer thread ---------------------------------------------------------------------

    def _schedule(self, delay: float, job_id: str, action: str) -> None:
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + delay, next(self._seq), job_id, action))
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._halt and (not self._heap or self._heap[0][0] > time.monotonic()):
                    wait = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._cond.wait(wait)
                if self._halt:
                    return
                _, _, job_id, action = heapq.heappop(self._heap)
            try:
                self._actions[action](job_id)
            except Exception:
                log.exception("simulator: %s of job %s failed", action, job_id)

    # -- actions ------------------------------------------------------------------------------

    def _pending(self, job_id: str) -> None:
        if self.control.transition(job_id, S.JOB_STATE_PENDING, only_from={S.JOB_STATE_QUEUED}):
            self._schedule(self.settings.simulate_pending_seconds, job_id, "run")

    def _run(self, job_id: str) -> None:
        if not self.control.transition(
            job_id, S.JOB_STATE_RUNNING, only_from={S.JOB_STATE_PENDING, S.JOB_STATE_RUNNING}
        ):
            return
        job = self.control.store.get_job(job_id)
        if job is None:
            return
        run_ms = job.labels.get(RUN_MS_LABEL)
        run_for = int(run_ms) / 1000.0 if run_ms else self.settings.simulate_run_seconds
        if job.labels.get(OUTCOME_LABEL, "succeed") != "hang":
            self._schedule(run_for, job_id, "finish")
        timeout = timeout_seconds(job)
        if timeout:
            elapsed = time.time() - protos.ts_seconds(job.start_time)
            self._schedule(max(timeout - elapsed, 0.0), job_id, "timeout")

    def _finish(self, job_id: str) -> None:
        job = self.control.store.get_job(job_id)
        if job is None or job.state != S.JOB_STATE_RUNNING:
            return
        if job.labels.get(OUTCOME_LABEL) == "fail":
            self.control.finish(
                job_id,
                S.JOB_STATE_FAILED,
                (errors.RPC_INVALID_ARGUMENT, f"Simulated failure (label {OUTCOME_LABEL}=fail)."),
            )
        else:
            self.control.finish(job_id, S.JOB_STATE_SUCCEEDED)

    def _timeout(self, job_id: str) -> None:
        job = self.control.store.get_job(job_id)
        if job is not None and job.state == S.JOB_STATE_RUNNING:
            self.control.finish(
                job_id,
                S.JOB_STATE_FAILED,
                (
                    errors.RPC_DEADLINE_EXCEEDED,
                    f"Job exceeded its scheduling.timeout of {timeout_seconds(job):g}s "
                    "and was stopped.",
                ),
            )

    def _cancel(self, job_id: str) -> None:
        job = self.control.store.get_job(job_id)
        if job is not None and job.state == S.JOB_STATE_CANCELLING:
            self.control.finish(job_id, S.JOB_STATE_CANCELLED, CANCELLED)
