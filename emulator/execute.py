"""Execute mode: every replica of a job is a real process on this machine.

:class:`ExecuteDriver` gives each job its own thread (:class:`_JobWorker`) and caps how many run
at once (``--max-running-jobs``; more wait in QUEUED). A worker prepares the job
(:mod:`emulator.launch`), starts one process per replica, watches them, and serves host
maintenance events. The chief (``workerpool0-0``) decides the outcome; when it exits the other
replicas are stopped.

Stopping a replica means SIGTERM to its process group, then SIGKILL after ``grace_seconds``.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any

from emulator import cluster, errors, procs, protos
from emulator.driver import CANCELLED, JobControl, timeout_seconds
from emulator.errors import ApiError
from emulator.launch import JobFailure, Launch, prepare_launch
from emulator.store import Replica

__all__ = ["ExecuteDriver"]

# The runner's logger, as before this module was split from it: the service log reads the same.
log = logging.getLogger("emulator.runner")

S = protos.JobState
CHIEF = "workerpool0-0"


class ExecuteDriver:
    """The execute-mode :class:`~emulator.driver.Driver`: one worker thread per job."""

    def __init__(self, control: JobControl) -> None:
        self.control = control
        self.settings = control.settings
        self._workers: dict[str, _JobWorker] = {}
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max(self.settings.max_running_jobs, 1))
        self.gpu_count = cluster.detect_gpus() if self.settings.gpus == "auto" else 0

    # -- Driver -------------------------------------------------------------------------------

    def submit(self, job_id: str, *, relaunch: bool) -> None:
        """Start the job's worker thread."""
        worker = _JobWorker(self, job_id, relaunch=relaunch)
        with self._lock:
            self._workers[job_id] = worker
        worker.start()

    def cancel(self, job_id: str) -> None:
        """Tell the job's worker to stop its replicas, or finish the job if no worker runs it."""
        with self._lock:
            worker = self._workers.get(job_id)
        if worker is not None and worker.is_alive():
            worker.cancel_event.set()
        else:
            self.control.finish(job_id, S.JOB_STATE_CANCELLED, CANCELLED)

    def maintenance(self, job_id: str, replica: str) -> dict[str, Any]:
        """Have the job's worker kill one replica and start it again; wait until it has."""
        with self._lock:
            worker = self._workers.get(job_id)
        if worker is None or not worker.accepting.is_set():
            raise errors.failed_precondition(f"Job {job_id} has no running replicas.")
        request = _MaintenanceRequest(replica)
        worker.requests.put(request)
        deadline = time.monotonic() + self.settings.grace_seconds + 30
        while not request.done.wait(0.1):
            if not worker.is_alive():
                # The job ended after it accepted the request but before serving it.
                raise errors.failed_precondition(f"Job {job_id} is no longer running.")
            if time.monotonic() > deadline:
                raise errors.unavailable("The maintenance event did not complete in time.")
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

    def shutdown(self) -> None:
        """Wait for every worker (they stop their replicas once the Runner is stopping)."""
        with self._lock:
            workers = list(self._workers.values())
        for w in workers:
            w.join(timeout=self.settings.grace_seconds + 10)

    # -- for the workers ----------------------------------------------------------------------

    def slot(self, cancelled: threading.Event) -> bool:
        """Wait for a free running-job slot; False if cancelled or stopping first."""
        while not self._slots.acquire(timeout=0.1):
            if cancelled.is_set() or self.control.stopping:
                return False
        return True

    def release_slot(self) -> None:
        """Give a running-job slot back."""
        self._slots.release()

    def forget(self, job_id: str) -> None:
        """A worker has finished."""
        with self._lock:
            self._workers.pop(job_id, None)


@dataclass
class _MaintenanceRequest:
    replica: str
    done: threading.Event = field(default_factory=threading.Event)
    result: dict[str, Any] | None = None
    error: ApiError | None = None


@dataclass
class _Running:
    plan: cluster.ReplicaPlan
    proc: subprocess.Popen[bytes]
    log: IO[bytes]
    record: Replica
    container: str | None


class _JobWorker(threading.Thread):
    """One thread per job: prepare, start the replicas, watch them, finish the job."""

    def __init__(self, driver: ExecuteDriver, job_id: str, *, relaunch: bool) -> None:
        super().__init__(name=f"job-{job_id}", daemon=True)
        self.driver = driver
        self.control = driver.control
        self.store = driver.control.store
        self.settings = driver.settings
        self.job_id = job_id
        self.relaunch = relaunch
        self.cancel_event = threading.Event()
        self.accepting = threading.Event()
        self.requests: queue.Queue[_MaintenanceRequest] = queue.Queue()
        self.running: dict[str, _Running] = {}
        self.job_dir = driver.control.job_dir(job_id)
        self.launch = Launch(plans=[])

    def run(self) -> None:
        try:
            if not self.driver.slot(self.cancel_event):
                if self.cancel_event.is_set():
                    self._cancelled()
                return
            try:
                self._run()
            finally:
                self.driver.release_slot()
        except JobFailure as failure:  # e.g. a replica restarted by maintenance cannot start
            self._stop_all_replicas("failed")
            self._failed(failure)
        except Exception as exc:
            log.exception("job %s: internal error", self.job_id)
            self._stop_all_replicas("failed")
            self._failed(
                JobFailure(errors.RPC_INTERNAL, f"Emulator internal error ({type(exc).__name__}).")
            )
        finally:
            self.accepting.clear()
            self._answer_pending_requests()
            for r in self.running.values():
                r.log.close()
            self.driver.forget(self.job_id)

    # -- phases -------------------------------------------------------------------------------

    def _run(self) -> None:
        if not self._advance(S.JOB_STATE_PENDING, S.JOB_STATE_QUEUED):
            return
        job = self.store.get_job(self.job_id)
        if job is None:
            return
        try:
            self.launch = prepare_launch(
                job,
                job_id=self.job_id,
                job_dir=self.job_dir,
                settings=self.settings,
                gpu_count=self.driver.gpu_count,
                trial=self.control.trial_context(self.job_id),
            )
        except JobFailure as failure:
            self._failed(failure)
            return
        if self.cancel_event.is_set():
            self._cancelled()
            return
        if not self._advance(S.JOB_STATE_RUNNING, S.JOB_STATE_PENDING):
            return
        job = self.store.get_job(self.job_id)
        if job is None:
            return
        if self._start_all():
            self.accepting.set()
            self._monitor(job)

    def _advance(self, to: int, only_from: int) -> bool:
        """Move a new job on (a relaunched one already is RUNNING); False if it cannot be."""
        if self.relaunch or self.control.transition(self.job_id, to, only_from={only_from}):
            return True
        job = self.store.get_job(self.job_id)
        if job is not None and job.state == S.JOB_STATE_CANCELLING:
            self._cancelled()
        return False

    def _start_all(self) -> bool:
        """Start every replica; False (the job failed) if one cannot be started."""
        previous = {r.replica: r.restarts for r in self.store.replicas(self.job_id)}
        for plan in self.launch.plans:
            restarts = previous[plan.name] + 1 if self.relaunch and plan.name in previous else 0
            note = "relaunched after an emulator restart" if self.relaunch else "starting"
            try:
                self._start(plan, restarts, note)
            except JobFailure as failure:
                self._stop_all_replicas("failed")
                self._failed(failure)
                return False
        return True

    def _cancelled(self) -> None:
        self.control.finish(self.job_id, S.JOB_STATE_CANCELLED, CANCELLED)

    def _failed(self, failure: JobFailure) -> None:
        self.control.finish(self.job_id, S.JOB_STATE_FAILED, (failure.code, failure.message))

    # -- replicas -----------------------------------------------------------------------------

    def _start(self, plan: cluster.ReplicaPlan, restarts: int, note: str) -> None:
        log_path = self.job_dir / "logs" / f"{plan.name}.log"
        workdir = self.job_dir / "work" / plan.name
        workdir.mkdir(parents=True, exist_ok=True)
        logf = open(log_path, "ab")  # noqa: SIM115 - stays open while the replica runs
        cmd = self.launch.commands[plan.name]
        shown = " ".join(cmd[:3] if cmd[0] != "docker" else cmd[:2])
        logf.write(f"[emulator] {note} {plan.name} (restart {restarts}): {shown} ...\n".encode())
        logf.flush()
        container = cmd[cmd.index("--name") + 1] if cmd[0] == "docker" else None
        try:
            proc = subprocess.Popen(
                cmd,
                cwd=workdir,
                env=self.launch.envs[plan.name],
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except (OSError, ValueError) as exc:
            # E2BIG: arguments plus environment (CLUSTER_SPEC holds the whole job spec) are over
            # the OS limits; ENOENT: no such interpreter or docker. The job's doing, not ours.
            logf.write(f"[emulator] could not start {plan.name}: {exc}\n".encode())
            logf.close()
            raise JobFailure(
                errors.RPC_INVALID_ARGUMENT,
                f"The replica {plan.name} could not be started: {exc}. Arguments and "
                "environment of a replica (its job spec included, in CLUSTER_SPEC and "
                "TF_CONFIG) must fit the operating system's limits.",
            ) from None
        record = Replica(
            job_id=self.job_id,
            replica=plan.name,
            pool=plan.pool,
            idx=plan.index,
            pid=proc.pid,
            start_ticks=procs.start_ticks(proc.pid),
            state="running",
            exit_code=None,
            restarts=restarts,
            port=plan.port,
            log_path=str(log_path),
        )
        self.store.put_replica(record)
        self.running[plan.name] = _Running(plan, proc, logf, record, container)
        log.info("job %s: started %s (pid %d)", self.job_id, plan.name, proc.pid)

    def _record_exit(self, r: _Running, rc: int, state: str | None = None) -> None:
        r.record.exit_code = rc
        r.record.state = state or ("succeeded" if rc == 0 else "failed")
        self.store.put_replica(r.record)

    def _stop_replicas(self, names: list[str], final_state: str) -> None:
        """SIGTERM the replicas' groups, SIGKILL whatever is left after the grace period."""
        chosen = [self.running[n] for n in names]
        targets = [r for r in chosen if r.proc.poll() is None]
        for r in chosen:
            if r not in targets and r.record.state == "running":
                # It exited on its own since the last poll: record that, not our stop.
                self._record_exit(r, r.proc.wait())
        for r in targets:
            if r.container:
                self._docker_stop(r.container)
            procs.signal_group(r.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.settings.grace_seconds
        while time.monotonic() < deadline and any(r.proc.poll() is None for r in targets):
            time.sleep(0.05)
        for r in targets:
            procs.signal_group(r.proc.pid, signal.SIGKILL)
            rc = r.proc.wait()
            self._record_exit(r, rc, final_state)

    def _docker_stop(self, container: str) -> None:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(
                ["docker", "stop", "-t", str(int(self.settings.grace_seconds)), container],
                capture_output=True,
                check=False,
                timeout=60,
            )

    def _stop_all_replicas(self, final_state: str) -> None:
        self._stop_replicas(list(self.running), final_state)

    # -- watching -----------------------------------------------------------------------------

    def _monitor(self, job: Any) -> None:
        timeout = timeout_seconds(job)
        started = protos.ts_seconds(job.start_time)
        while not self._interrupted(timeout, started):
            self._serve_requests()
            for name, r in self.running.items():
                if r.record.state != "running":
                    continue
                rc = r.proc.poll()
                if rc is None:
                    continue
                self._record_exit(r, rc)
                log.info("job %s: %s exited with %d", self.job_id, name, rc)
                if name == CHIEF:
                    self._chief_exited(r, rc)
                    return
            self.cancel_event.wait(0.1)

    def _interrupted(self, timeout: float, started: float) -> bool:
        """Stop the replicas and return True if the service stops, or the job is cancelled or
        past its timeout."""
        if self.control.stopping:
            self._stop_all_replicas("interrupted")
            return True
        if self.cancel_event.is_set():
            self._stop_all_replicas("cancelled")
            self._cancelled()
            return True
        if timeout and time.time() - started >= timeout:
            self._stop_all_replicas("timed-out")
            self._failed(
                JobFailure(
                    errors.RPC_DEADLINE_EXCEEDED,
                    f"Job exceeded its scheduling.timeout of {timeout:g}s and was stopped.",
                )
            )
            return True
        return False

    def _chief_exited(self, chief: _Running, rc: int) -> None:
        self._stop_replicas([n for n in self.running if n != chief.plan.name], "stopped")
        if self.cancel_event.is_set():
            self._cancelled()
        elif rc == 0:
            self.control.finish(self.job_id, S.JOB_STATE_SUCCEEDED)
        else:
            how = (
                f"was terminated by signal {signal.Signals(-rc).name}"
                if rc < 0
                else f"exited with a non-zero status of {rc}"
            )
            self._failed(
                JobFailure(
                    errors.RPC_INVALID_ARGUMENT,
                    f"The replica {chief.plan.name} {how}. To find out more about why your job "
                    f"exited please check the logs: {chief.record.log_path}",
                )
            )

    # -- host maintenance ---------------------------------------------------------------------

    def _serve_requests(self) -> None:
        while True:
            try:
                request = self.requests.get_nowait()
            except queue.Empty:
                return
            try:
                request.result = self._maintain(request.replica)
            except ApiError as exc:
                request.error = exc
            request.done.set()

    def _maintain(self, name: str) -> dict[str, Any]:
        r = self.running.get(name)
        if r is None:
            known = ", ".join(self.running) or "none"
            raise errors.invalid_argument(f"replica: unknown replica {name!r} (known: {known})")
        if r.proc.poll() is not None:
            raise errors.failed_precondition(f"Replica {name} is not running.")
        r.log.write(b"[emulator] host maintenance event: stopping the replica\n")
        r.log.flush()
        self._stop_replicas([name], "maintenance")
        r.log.close()
        self._start(r.plan, r.record.restarts + 1, "restarting after host maintenance:")
        return self.running[name].record.to_dict()

    def _answer_pending_requests(self) -> None:
        while True:
            try:
                request = self.requests.get_nowait()
            except queue.Empty:
                return
            request.error = errors.failed_precondition(f"Job {self.job_id} is no longer running.")
            request.done.set()
