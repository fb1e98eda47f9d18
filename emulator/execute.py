"""Execute mode: every replica of a job is a real process on this machine.

:class:`ExecuteDriver` gives each job its own thread (:class:`_JobWorker`). Before a job leaves
QUEUED its worker is admitted by the driver's :class:`~emulator.gpus.Admission`: one of the
``--max-running-jobs`` slots and, for a GPU job, GPU devices no other running job holds (jobs
wait in QUEUED, first come first served; a job wanting more GPUs than exist fails at once with
code 8). A worker then prepares the job (:mod:`emulator.launch`), starts one process per replica,
watches them, and serves host maintenance events; what it holds is given back when it ends,
however it ends.

Replica exits follow Vertex AI ("Understand the Vertex AI serverless training service",
https://cloud.google.com/vertex-ai/docs/training/understanding-training-service, sections
"Restart workers during the training job", "Successfully completing a job" and "Handle common
errors"):

* the job succeeds when the chief (``workerpool0-0``, the primary replica) exits 0; the other
  replicas still running are then stopped. Another replica exiting 0 has just finished its part;
* a replica of any pool (chief, workers, parameter servers, evaluators alike) exiting non-zero is a
  user code exception, one of Vertex's "common errors": a permanent error that fails the whole
  job, with or without ``scheduling.restart_job_on_worker_restart`` (code 3, "The replica
  workerpool1-0 exited with a non-zero status of 1. Termination reason: Error. ...", as Vertex
  reports it);
* except for exit codes that may be transient (SIGABRT: 6, 134; SIGSEGV: 11, 139; or the process
  killed by that signal): then the whole job is restarted, every replica, up to three times
  (none with ``scheduling.disable_retries``);
* a host maintenance event restarts the replica it hits; with
  ``scheduling.restart_job_on_worker_restart`` ("Restarts the entire CustomJob if a worker gets
  restarted", the v1 API reference of ``Scheduling``) it restarts every replica of the job.
  ``scheduling.disable_retries`` overrides that flag to false, as the API reference says.

Stopping a replica means SIGTERM to its process group, then SIGKILL after ``grace_seconds``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any

from . import cluster, errors, procs, protos, pyenv
from .driver import CANCELLED, JobControl, max_wait_seconds, timeout_seconds
from .errors import ApiError
from .gpus import Admission
from .launch import JobFailure, Launch, prepare_launch
from .store import Replica

__all__ = ["ExecuteDriver", "restarts_job_on_worker_restart"]

# The runner's logger, as before this module was split from it: the service log reads the same.
log = logging.getLogger("emulator.runner")

S = protos.JobState
CHIEF = "workerpool0-0"

# Exit codes Vertex AI treats as possibly transient, restarting the whole job (module doc): a
# process's own exit status, the shell's 128 + signal of a container, or (negative) the signal
# that killed a Python replica.
TRANSIENT_EXIT_CODES = frozenset({6, 134, -6, 11, 139, -11})
MAX_JOB_RETRIES = 3


def restarts_job_on_worker_restart(job: Any) -> bool:
    """``scheduling.restart_job_on_worker_restart``, unless ``disable_retries`` overrides it."""
    scheduling = job.job_spec.scheduling
    return bool(scheduling.restart_job_on_worker_restart and not scheduling.disable_retries)


class ExecuteDriver:
    """The execute-mode :class:`~emulator.driver.Driver`: one worker thread per job."""

    def __init__(self, control: JobControl) -> None:
        self.control = control
        self.settings = control.settings
        self._workers: dict[str, _JobWorker] = {}
        self._lock = threading.Lock()
        detected = cluster.detect_gpus() if self.settings.gpu_devices is None else 0
        if self.settings.gpus == "ignore":
            devices: tuple[int, ...] = ()
        elif self.settings.gpu_devices is not None:
            devices = self.settings.gpu_devices
        else:
            devices = tuple(range(detected))
        # How many GPUs this machine has, for what a GPU job is told it runs on.
        self.machine_gpus = len(self.settings.gpu_devices or ()) or detected
        self.admission = Admission(self.settings.max_running_jobs, devices)

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
            self.admission.wake()  # a job waiting for GPUs gives up now
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

    def gpus_wanted(self, job: Any) -> int:
        """GPUs the job takes from the shared ones (none when GPU requests are ignored)."""
        return 0 if self.settings.gpus == "ignore" else cluster.gpus_wanted(job)

    def too_many_gpus(self, job: Any) -> str | None:
        """Why the job can never have its GPUs here, or None."""
        if self.settings.gpus == "ignore":
            return None
        listed = self.settings.gpu_devices is not None
        return cluster.too_many_gpus(job, self.admission.devices, listed)

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
    """One thread per job: wait for a slot and GPUs, prepare, start and watch the replicas."""

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
        self.job_retries = 0  # whole-job restarts after exit codes that may be transient
        self.may_retry = True  # False with scheduling.disable_retries
        self.restart_job_on_worker_restart = False

    def run(self) -> None:
        try:
            try:
                devices = self._admit()
            except Exception as exc:
                self._internal_error(exc)
                return
            if devices is None:
                return
            try:
                self._run_guarded(devices)
            finally:
                # Only now: every replica has been stopped, whichever way the job ended.
                self.driver.admission.release(self.job_id)
        finally:
            self.accepting.clear()
            self._answer_pending_requests()
            for r in self.running.values():
                r.log.close()
            self.driver.forget(self.job_id)

    # -- phases -------------------------------------------------------------------------------

    def _admit(self) -> list[int] | None:
        """Wait in QUEUED for a running-job slot and the job's GPUs; None if it never gets them
        (cancelled, the service stopping, or more GPUs wanted than exist: the job failed)."""
        job = self.store.get_job(self.job_id)
        if job is None:
            return None
        problem = self.driver.too_many_gpus(job)
        if problem is not None:
            self._failed(JobFailure(errors.RPC_RESOURCE_EXHAUSTED, problem))
            return None
        wanted = self.driver.gpus_wanted(job)
        if wanted:
            log.info("job %s: waiting for %d GPU(s) and a slot", self.job_id, wanted)
        # A FLEX_START job waits at most max_wait_duration, counted from its create (a job
        # queued again after a service restart has waited since then too).
        max_wait = max_wait_seconds(job)
        deadline = None if max_wait is None else protos.ts_seconds(job.create_time) + max_wait
        expired = threading.Event()

        def give_up() -> bool:
            if deadline is not None and time.time() >= deadline:
                expired.set()
            return self.cancel_event.is_set() or self.control.stopping or expired.is_set()

        devices = self.driver.admission.acquire(self.job_id, wanted, give_up=give_up)
        if devices is None and self.cancel_event.is_set():
            self._cancelled()
        elif devices is None and expired.is_set():
            self._failed(
                JobFailure(
                    errors.RPC_RESOURCE_EXHAUSTED,
                    f"The job waited {max_wait:g}s (scheduling.max_wait_duration, strategy "
                    "FLEX_START) for the resources it requested, and they did not become "
                    "available.",
                )
            )
        elif devices:
            log.info("job %s: GPU device(s) %s", self.job_id, ",".join(map(str, devices)))
        return devices

    def _run_guarded(self, devices: list[int]) -> None:
        """Run the job; a failure on the way stops its replicas and fails it."""
        try:
            self._run(devices)
        except JobFailure as failure:  # e.g. a replica restarted by maintenance cannot start
            self._stop_all_replicas("failed")
            self._failed(failure)
        except Exception as exc:
            self._internal_error(exc)

    def _run(self, devices: list[int]) -> None:
        if not self._advance(S.JOB_STATE_PENDING, S.JOB_STATE_QUEUED):
            return
        job = self.store.get_job(self.job_id)
        if job is None:
            return
        self.may_retry = not job.job_spec.scheduling.disable_retries
        self.restart_job_on_worker_restart = restarts_job_on_worker_restart(job)
        try:
            self.launch = prepare_launch(
                job,
                job_id=self.job_id,
                job_dir=self.job_dir,
                settings=self.settings,
                gpu_devices=devices,
                trial=self.control.trial_context(self.job_id),
                stop=lambda: self.cancel_event.is_set() or self.control.stopping,
                track=self._record_install,
            )
        except JobFailure as failure:
            self._failed(failure)
            return
        except pyenv.Interrupted:
            # Cancelled while its packages installed; a stopping service leaves the job to
            # the next start's recovery, like the jobs it was running.
            if self.cancel_event.is_set():
                self._cancelled()
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

    def _record_install(self, pid: int | None) -> None:
        """Keep the running pip's process in the store: a crash of the service leaves it running,
        and the next start kills it (Runner.recover), as it kills replicas."""
        if pid is None:
            self.store.clear_install_process(self.job_id)
        else:
            self.store.put_install_process(self.job_id, pid, procs.start_ticks(pid))

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

    def _internal_error(self, exc: Exception) -> None:
        """A bug of the emulator's: stop what runs and fail the job with code 13."""
        log.error("job %s: internal error", self.job_id, exc_info=exc)
        self._stop_all_replicas("failed")
        self._failed(
            JobFailure(errors.RPC_INTERNAL, f"Emulator internal error ({type(exc).__name__}).")
        )

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
        hardware = self._hardware(plan)
        if hardware is not None:
            logf.write(f"[emulator] {hardware}\n".encode())
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

    def _hardware(self, plan: cluster.ReplicaPlan) -> str | None:
        """Say what a GPU replica runs on, in its log and in the job's ``hardware.json`` (the
        admin API's ``replicas`` give it, and the provider's progress lines show the chief's):
        a GPU job run on the CPU must never pass for a GPU run."""
        job = self.store.get_job(self.job_id)
        found = (
            cluster.hardware_of(
                job, plan, mode=self.settings.gpus, machine_gpus=self.driver.machine_gpus
            )
            if job is not None
            else None
        )
        if found is None:
            return None
        short, whole = found
        said = cluster.hardware_said(self.job_dir)
        said[plan.name] = {"short": short, "note": whole}
        (self.job_dir / cluster.HARDWARE_FILE).write_text(json.dumps(said))
        log.info("job %s: %s", self.job_id, whole)
        return whole

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

    def _restart_job(self, reason: str) -> list[str]:
        """Stop every replica and start them all again (Vertex restarts the entire job)."""
        names = list(self.running)
        for r in self.running.values():
            r.log.write(f"[emulator] {reason}: restarting every replica of the job\n".encode())
            r.log.flush()
        self._stop_replicas(names, "restarting")
        for name in names:
            old = self.running[name]
            old.log.close()
            self._start(old.plan, old.record.restarts + 1, "restarting with the job:")
        return names

    # -- watching -----------------------------------------------------------------------------

    def _monitor(self, job: Any) -> None:
        timeout = timeout_seconds(job)
        started = protos.ts_seconds(job.start_time)
        while not self._interrupted(timeout, started):
            self._serve_requests()
            if self._check_exits():
                return
            self.cancel_event.wait(0.1)

    def _check_exits(self) -> bool:
        """Record replicas that exited since the last look; True once the job is over."""
        for name, r in list(self.running.items()):
            if r.record.state != "running":
                continue
            rc = r.proc.poll()
            if rc is None:
                continue
            self._record_exit(r, rc)
            log.info("job %s: %s exited with %d", self.job_id, name, rc)
            if rc in TRANSIENT_EXIT_CODES and self._retry_allowed():
                self.job_retries += 1
                self._restart_job(
                    f"{name} {_how_it_exited(rc)}, which may be transient (job retry "
                    f"{self.job_retries} of {MAX_JOB_RETRIES})"
                )
                return False
            if name == CHIEF or rc != 0:
                self._end_job(r, rc)
                return True
        return False

    def _retry_allowed(self) -> bool:
        return (
            self.may_retry
            and self.job_retries < MAX_JOB_RETRIES
            and not self.cancel_event.is_set()
            and not self.control.stopping
        )

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

    def _end_job(self, ended: _Running, rc: int) -> None:
        """The chief exited, or another replica failed: stop the rest and finish the job."""
        self._stop_replicas([n for n in self.running if n != ended.plan.name], "stopped")
        if self.cancel_event.is_set():
            self._cancelled()
        elif rc == 0:
            self.control.finish(self.job_id, S.JOB_STATE_SUCCEEDED)
        else:
            retried = (
                f" The job was restarted {self.job_retries} time(s) after exit codes that may "
                "be transient."
                if self.job_retries
                else ""
            )
            self._failed(
                JobFailure(
                    errors.RPC_INVALID_ARGUMENT,
                    f"The replica {ended.plan.name} {_how_it_exited(rc)}. To find out more about "
                    f"why your job exited please check the logs: {ended.record.log_path}" + retried,
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
        """Kill replica ``name`` and start it again (every replica, when the job asks so)."""
        r = self.running.get(name)
        if r is None:
            known = ", ".join(self.running) or "none"
            raise errors.invalid_argument(f"replica: unknown replica {name!r} (known: {known})")
        if r.proc.poll() is not None:
            raise errors.failed_precondition(f"Replica {name} is not running.")
        r.log.write(b"[emulator] host maintenance event: stopping the replica\n")
        r.log.flush()
        if self.restart_job_on_worker_restart:
            restarted = self._restart_job(
                f"host maintenance event on {name} and scheduling.restart_job_on_worker_restart"
            )
        else:
            self._stop_replicas([name], "maintenance")
            r.log.close()
            self._start(r.plan, r.record.restarts + 1, "restarting after host maintenance:")
            restarted = [name]
        result = self.running[name].record.to_dict()
        result["previousPid"] = r.record.pid
        result["previousExitCode"] = r.record.exit_code
        result["jobRestarted"] = self.restart_job_on_worker_restart
        result["restartedReplicas"] = [self.running[n].record.to_dict() for n in restarted]
        return result

    def _answer_pending_requests(self) -> None:
        while True:
            try:
                request = self.requests.get_nowait()
            except queue.Empty:
                return
            request.error = errors.failed_precondition(f"Job {self.job_id} is no longer running.")
            request.done.set()


def _how_it_exited(rc: int) -> str:
    """Vertex's wording for a replica's exit status (a Python replica killed by a signal: < 0)."""
    if rc < 0:
        try:
            return f"was terminated by signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"was terminated by signal {-rc}"
    return f"exited with a non-zero status of {rc}. Termination reason: Error"
