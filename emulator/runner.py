"""Drives jobs through their states: real processes (``execute``) or timers (``simulate``).

State machine: QUEUED → PENDING (packages installed, resources checked) → RUNNING (one process
per replica) → SUCCEEDED / FAILED; a cancel goes through CANCELLING to CANCELLED. The chief
(``workerpool0-0``) decides the outcome; when it exits the other replicas are stopped.

Stopping a replica means SIGTERM to its process group, then SIGKILL after ``grace_seconds``.

When the service stops (gracefully or not), running jobs stay RUNNING in the database; the next
start (:meth:`Runner.recover`) kills replicas left behind by a crash and then relaunches the job if
``scheduling.restart_job_on_worker_restart`` is set, or marks it FAILED saying why.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import heapq
import itertools
import json
import logging
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from emulator import cluster, errors, packages, procs, protos
from emulator.config import Settings
from emulator.errors import ApiError
from emulator.store import Replica, Store

log = logging.getLogger("emulator.runner")

S = protos.JobState
OUTCOME_LABEL = "emulator-outcome"
RUN_MS_LABEL = "emulator-run-ms"
OUTCOMES = ("succeed", "fail", "hang")

# Variables passed through from the service's environment; everything else a replica sees is set
# by Vertex rules or by the job. OPENBLAS_* are kept because some hosts need them for numpy.
_PASSTHROUGH_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def split_name(name: str) -> tuple[str, str, str]:
    """(project, location, id) of ``projects/P/locations/L/customJobs/ID``."""
    parts = name.split("/")
    return parts[1], parts[3], parts[5]


def docker_problem() -> str | None:
    """Why container jobs cannot run here, or None when a Docker daemon answers."""
    exe = shutil.which("docker")
    if exe is None:
        return "the docker command is not installed"
    try:
        out = subprocess.run([exe, "info"], capture_output=True, text=True, timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`docker info` did not answer ({type(exc).__name__})"
    if out.returncode != 0:
        lines = [ln for ln in (out.stderr or out.stdout).splitlines() if ln.strip()]
        reason = lines[-1].strip() if lines else f"exit status {out.returncode}"
        return f"`docker info` failed: {reason}"
    return None


def timeout_seconds(job: Any) -> float:
    """``scheduling.timeout`` in seconds (0: none)."""
    t = job.job_spec.scheduling.timeout
    return float(t.seconds) + float(t.nanos) / 1e9


class Runner:
    """Owns every job's progress; the HTTP layer only stores jobs and calls into this."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self._workers: dict[str, _JobWorker] = {}
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max(settings.max_running_jobs, 1))
        self._stopping = threading.Event()
        self.gpu_count = (
            cluster.detect_gpus() if settings.mode == "execute" and settings.gpus == "auto" else 0
        )
        self._sim = _Simulator(self) if settings.mode == "simulate" else None
        if self._sim is not None:
            self._sim.start()

    # -- called by the HTTP layer -------------------------------------------------------------

    def submit(self, job_id: str, *, relaunch: bool = False) -> None:
        """Start driving a stored job (relaunch: it was RUNNING when the service stopped)."""
        if self._stopping.is_set():
            return
        if self._sim is not None:
            self._sim.schedule(
                0.0 if relaunch else self.settings.simulate_queued_seconds,
                job_id,
                "run" if relaunch else "pending",
            )
            return
        worker = _JobWorker(self, job_id, relaunch=relaunch)
        with self._lock:
            self._workers[job_id] = worker
        worker.start()

    def cancel(self, job_id: str) -> None:
        """The job was just marked CANCELLING: stop it."""
        if self._sim is not None:
            self._sim.schedule(self.settings.simulate_cancel_seconds, job_id, "cancel")
            return
        with self._lock:
            worker = self._workers.get(job_id)
        if worker is not None and worker.is_alive():
            worker.cancel_event.set()
        else:
            self.finish(job_id, S.JOB_STATE_CANCELLED, (errors.RPC_CANCELLED, "Job was cancelled."))

    def maintenance(self, job_id: str, replica: str) -> dict[str, Any]:
        """Simulate a host maintenance event on one replica: kill its process and restart it."""
        if self._sim is not None:
            raise errors.failed_precondition(
                "Maintenance events kill real processes; the emulator runs in --mode simulate."
            )
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

    def delete_later(self, op_name: str, job_id: str, created: float) -> None:
        """Delete the job's files and rows in the background, then mark the operation done."""

        def work() -> None:
            # A short delay so clients really poll the operation, as they must with Vertex.
            time.sleep(0.05)
            shutil.rmtree(self.job_dir(job_id), ignore_errors=True)
            self.store.delete_job(job_id)
            done = protos.delete_operation_json(op_name, done=True, created=created)
            self.store.put_operation(op_name, job_id, True, done)

        threading.Thread(target=work, name=f"delete-{job_id}", daemon=True).start()

    # -- lifecycle ----------------------------------------------------------------------------

    def recover(self) -> None:
        """Reconcile jobs left unfinished by a previous run of the service (see module doc)."""
        for job_id in self.store.unfinished_job_ids():
            job = self.store.get_job(job_id)
            if job is None:
                continue
            killed = []
            for r in self.store.replicas(job_id):
                if procs.kill_orphan_group(r.pid, r.start_ticks, self.settings.grace_seconds):
                    killed.append(r.replica)
                if r.state in ("starting", "running"):
                    r.state = "lost"
                    self.store.put_replica(r)
            if killed:
                log.warning("job %s: killed replicas left by the previous run: %s", job_id, killed)
            if job.state in (S.JOB_STATE_QUEUED, S.JOB_STATE_PENDING):
                self.store.update_job(job_id, _to_state(S.JOB_STATE_QUEUED))
                self.submit(job_id)
            elif job.state == S.JOB_STATE_CANCELLING:
                self.finish(
                    job_id, S.JOB_STATE_CANCELLED, (errors.RPC_CANCELLED, "Job was cancelled.")
                )
            elif job.job_spec.scheduling.restart_job_on_worker_restart:
                log.info("job %s: relaunching after a service restart", job_id)
                self.submit(job_id, relaunch=True)
            else:
                self.finish(
                    job_id,
                    S.JOB_STATE_FAILED,
                    (
                        errors.RPC_UNAVAILABLE,
                        "The emulator service stopped while the job was running and its replicas "
                        "were lost. The job was not relaunched because "
                        "scheduling.restart_job_on_worker_restart is false.",
                    ),
                )
        for op_name, op_job_id in self.store.pending_operations():
            op_json = self.store.get_operation(op_name) or "{}"
            if op_job_id is not None:
                self.delete_later(op_name, op_job_id, _op_create_time(op_json))

    def shutdown(self) -> None:
        """Stop every replica (jobs stay RUNNING in the database for the next start)."""
        self._stopping.set()
        if self._sim is not None:
            self._sim.stop()
        with self._lock:
            workers = list(self._workers.values())
        for w in workers:
            w.join(timeout=self.settings.grace_seconds + 10)

    @property
    def stopping(self) -> bool:
        """True once :meth:`shutdown` was called."""
        return self._stopping.is_set()

    # -- helpers shared by workers and the simulator ------------------------------------------

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

    def forget(self, job_id: str) -> None:
        """A worker has finished."""
        with self._lock:
            self._workers.pop(job_id, None)

    def slot(self, cancelled: threading.Event) -> bool:
        """Wait for a free running-job slot; False if cancelled or stopping first."""
        while not self._slots.acquire(timeout=0.1):
            if cancelled.is_set() or self._stopping.is_set():
                return False
        return True

    def release_slot(self) -> None:
        """Give a running-job slot back."""
        self._slots.release()


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
    """One thread per job in execute mode."""

    def __init__(self, runner: Runner, job_id: str, *, relaunch: bool) -> None:
        super().__init__(name=f"job-{job_id}", daemon=True)
        self.runner = runner
        self.store = runner.store
        self.settings = runner.settings
        self.job_id = job_id
        self.relaunch = relaunch
        self.cancel_event = threading.Event()
        self.accepting = threading.Event()
        self.requests: queue.Queue[_MaintenanceRequest] = queue.Queue()
        self.running: dict[str, _Running] = {}
        self.job_dir = runner.job_dir(job_id)
        self.envs: dict[str, dict[str, str]] = {}
        self.commands: dict[str, list[str]] = {}

    def run(self) -> None:
        try:
            if not self.runner.slot(self.cancel_event):
                if self.cancel_event.is_set():
                    self._cancelled()
                return
            try:
                self._run()
            finally:
                self.runner.release_slot()
        except _JobFailure as failure:  # e.g. a replica restarted by maintenance cannot start
            self._stop_all_replicas("failed")
            self.runner.finish(self.job_id, S.JOB_STATE_FAILED, (failure.code, failure.message))
        except Exception as exc:
            log.exception("job %s: internal error", self.job_id)
            self._stop_all_replicas("failed")
            self.runner.finish(
                self.job_id,
                S.JOB_STATE_FAILED,
                (errors.RPC_INTERNAL, f"Emulator internal error ({type(exc).__name__})."),
            )
        finally:
            self.accepting.clear()
            self._answer_pending_requests()
            for r in self.running.values():
                r.log.close()
            self.runner.forget(self.job_id)

    # -- phases -------------------------------------------------------------------------------

    def _run(self) -> None:
        if not self.relaunch and not self.runner.transition(
            self.job_id, S.JOB_STATE_PENDING, only_from={S.JOB_STATE_QUEUED}
        ):
            self._settle_not_started()
            return
        job = self.store.get_job(self.job_id)
        if job is None:
            return
        try:
            plans = self._prepare(job)
        except _JobFailure as failure:
            self.runner.finish(self.job_id, S.JOB_STATE_FAILED, (failure.code, failure.message))
            return
        if self.cancel_event.is_set():
            self._cancelled()
            return
        if not self.relaunch and not self.runner.transition(
            self.job_id, S.JOB_STATE_RUNNING, only_from={S.JOB_STATE_PENDING}
        ):
            self._settle_not_started()
            return
        job = self.store.get_job(self.job_id)
        if job is None:
            return
        previous = {r.replica: r.restarts for r in self.store.replicas(self.job_id)}
        for plan in plans:
            restarts = previous[plan.name] + 1 if self.relaunch and plan.name in previous else 0
            note = "relaunched after an emulator restart" if self.relaunch else "starting"
            try:
                self._start(plan, restarts, note)
            except _JobFailure as failure:
                self._stop_all_replicas("failed")
                self.runner.finish(self.job_id, S.JOB_STATE_FAILED, (failure.code, failure.message))
                return
        self.accepting.set()
        self._monitor(job)

    def _settle_not_started(self) -> None:
        job = self.store.get_job(self.job_id)
        if job is not None and job.state == S.JOB_STATE_CANCELLING:
            self._cancelled()

    def _cancelled(self) -> None:
        self.runner.finish(
            self.job_id, S.JOB_STATE_CANCELLED, (errors.RPC_CANCELLED, "Job was cancelled.")
        )

    def _prepare(self, job: Any) -> list[cluster.ReplicaPlan]:
        project, region, _ = split_name(job.name)
        pools = list(job.job_spec.worker_pool_specs)
        (self.job_dir / "logs").mkdir(parents=True, exist_ok=True)
        if any(p.WhichOneof("task") == "container_spec" for p in pools):
            problem = docker_problem()
            if problem is not None:
                raise _JobFailure(
                    errors.RPC_FAILED_PRECONDITION,
                    "Container jobs need a running Docker daemon and none answered here "
                    f"({problem}). Start Docker, or use python_package_spec.",
                )
        plans = cluster.plan_replicas(job)
        if self.settings.gpus == "auto":
            problem = cluster.assign_gpus(job, plans, self.runner.gpu_count)
            if problem is not None:
                raise _JobFailure(errors.RPC_RESOURCE_EXHAUSTED, problem)
        sites: dict[tuple[str, ...], Path] = {}
        limits = packages.Limits(max_bytes=self.settings.max_unpacked_mb * 1024 * 1024)
        for i, pool in enumerate(pools):
            if pool.WhichOneof("task") != "python_package_spec":
                continue
            uris = tuple(pool.python_package_spec.package_uris)
            if uris in sites:
                continue
            site = self.job_dir / f"site-{len(sites)}"
            shutil.rmtree(site, ignore_errors=True)
            try:
                # Checked again here, right before reading: the file system may have changed
                # since the create (a symlink planted after it).
                paths = [
                    packages.resolve_package(u, self.settings.state_dir, self.settings.allow_roots)
                    for u in uris
                ]
                packages.install(paths, site, roots=self.settings.allow_roots, limits=limits)
            except (packages.PackageError, OSError) as exc:
                shutil.rmtree(site, ignore_errors=True)
                raise _JobFailure(
                    errors.RPC_INVALID_ARGUMENT,
                    f"Installing the packages of worker pool {i} failed: {exc}",
                ) from None
            sites[uris] = site
        output_dir: str | None = None
        prefix = job.job_spec.base_output_directory.output_uri_prefix
        if prefix:
            try:
                output_dir = str(packages.prepare_output_dir(prefix, self.settings.state_dir))
            except (packages.PackageError, OSError) as exc:
                raise _JobFailure(
                    errors.RPC_INVALID_ARGUMENT,
                    f"base_output_directory.output_uri_prefix {prefix}: {exc}",
                ) from None
        for plan in plans:
            pool = pools[plan.pool]
            env = {k: os.environ[k] for k in _PASSTHROUGH_ENV if k in os.environ}
            env.update(
                cluster.replica_env(
                    job,
                    job_id=self.job_id,
                    project=project,
                    region=region,
                    plans=plans,
                    me=plan,
                    output_dir=output_dir,
                    gpu_mode=self.settings.gpus,
                )
            )
            if pool.WhichOneof("task") == "python_package_spec":
                pps = pool.python_package_spec
                env.update({v.name: v.value for v in pps.env})
                # Only the job's own site dir is added; the interpreter's site-packages (numpy)
                # comes with the interpreter. PYTHONSAFEPATH keeps the working dir off sys.path.
                env["PYTHONPATH"] = str(sites[tuple(pps.package_uris)])
                env["PYTHONSAFEPATH"] = "1"
                env["PYTHONUNBUFFERED"] = "1"
                cmd = [self.settings.python, "-m", pps.python_module, *pps.args]
            else:
                cs = pool.container_spec
                env.update({v.name: v.value for v in cs.env})
                cmd = self._docker_command(plan, cs, env, output_dir)
            self.envs[plan.name] = env
            self.commands[plan.name] = cmd
        return plans

    def _docker_command(
        self, plan: cluster.ReplicaPlan, cs: Any, env: dict[str, str], output_dir: str | None
    ) -> list[str]:
        name = f"vertex-emulator-{self.job_id}-{plan.name}"
        cmd = ["docker", "run", "--rm", "--name", name, "--network", "host"]
        # `-e NAME` without a value makes docker read the value from its own environment, so no
        # secret appears on a command line (visible to every user in `ps`).
        for key in env:
            if key not in _PASSTHROUGH_ENV:
                cmd += ["-e", key]
        if output_dir is not None:
            if ":" in output_dir or "," in output_dir:
                # `-v SRC:DST` splits at ':'; the create check sees only the URI, not where an
                # in-root symlink made it point.
                raise _JobFailure(
                    errors.RPC_INVALID_ARGUMENT,
                    f"The output directory {output_dir} holds ':' or ',', which docker -v "
                    "cannot mount.",
                )
            cmd += ["-v", f"{output_dir}:{output_dir}"]
        if plan.gpus:
            cmd += ["--gpus", "device=" + ",".join(map(str, plan.gpus))]
        if cs.command:
            # One argument, so that a command starting with '-' cannot read as a docker flag.
            cmd += [f"--entrypoint={cs.command[0]}", cs.image_uri, *cs.command[1:], *cs.args]
        else:
            cmd += [cs.image_uri, *cs.args]
        return cmd

    # -- replicas -----------------------------------------------------------------------------

    def _start(self, plan: cluster.ReplicaPlan, restarts: int, note: str) -> None:
        log_path = self.job_dir / "logs" / f"{plan.name}.log"
        workdir = self.job_dir / "work" / plan.name
        workdir.mkdir(parents=True, exist_ok=True)
        logf = open(log_path, "ab")  # noqa: SIM115 - stays open while the replica runs
        cmd = self.commands[plan.name]
        shown = " ".join(cmd[:3] if cmd[0] != "docker" else cmd[:2])
        logf.write(f"[emulator] {note} {plan.name} (restart {restarts}): {shown} ...\n".encode())
        logf.flush()
        container = cmd[cmd.index("--name") + 1] if cmd[0] == "docker" else None
        try:
            proc = subprocess.Popen(
                cmd,
                cwd=workdir,
                env=self.envs[plan.name],
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
            raise _JobFailure(
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
                with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                    subprocess.run(
                        [
                            "docker",
                            "stop",
                            "-t",
                            str(int(self.settings.grace_seconds)),
                            r.container,
                        ],
                        capture_output=True,
                        check=False,
                        timeout=60,
                    )
            procs.signal_group(r.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.settings.grace_seconds
        while time.monotonic() < deadline and any(r.proc.poll() is None for r in targets):
            time.sleep(0.05)
        for r in targets:
            procs.signal_group(r.proc.pid, signal.SIGKILL)
            rc = r.proc.wait()
            self._record_exit(r, rc, final_state)

    def _stop_all_replicas(self, final_state: str) -> None:
        self._stop_replicas(list(self.running), final_state)

    def _monitor(self, job: Any) -> None:
        timeout = timeout_seconds(job)
        started = protos.ts_seconds(job.start_time)
        chief = "workerpool0-0"
        while True:
            if self.runner.stopping:
                self._stop_all_replicas("interrupted")
                return
            if self.cancel_event.is_set():
                self._stop_all_replicas("cancelled")
                self._cancelled()
                return
            if timeout and time.time() - started >= timeout:
                self._stop_all_replicas("timed-out")
                self.runner.finish(
                    self.job_id,
                    S.JOB_STATE_FAILED,
                    (
                        errors.RPC_DEADLINE_EXCEEDED,
                        f"Job exceeded its scheduling.timeout of {timeout:g}s and was stopped.",
                    ),
                )
                return
            self._serve_requests()
            for name, r in self.running.items():
                if r.record.state != "running":
                    continue
                rc = r.proc.poll()
                if rc is None:
                    continue
                self._record_exit(r, rc)
                log.info("job %s: %s exited with %d", self.job_id, name, rc)
                if name == chief:
                    self._chief_exited(r, rc)
                    return
            self.cancel_event.wait(0.1)

    def _chief_exited(self, chief: _Running, rc: int) -> None:
        self._stop_replicas([n for n in self.running if n != chief.plan.name], "stopped")
        if self.cancel_event.is_set():
            self._cancelled()
        elif rc == 0:
            self.runner.finish(self.job_id, S.JOB_STATE_SUCCEEDED)
        else:
            how = (
                f"was terminated by signal {signal.Signals(-rc).name}"
                if rc < 0
                else f"exited with a non-zero status of {rc}"
            )
            self.runner.finish(
                self.job_id,
                S.JOB_STATE_FAILED,
                (
                    errors.RPC_INVALID_ARGUMENT,
                    f"The replica {chief.plan.name} {how}. To find out more about why your job "
                    f"exited please check the logs: {chief.record.log_path}",
                ),
            )

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


class _JobFailure(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Simulator(threading.Thread):
    """Simulate mode: one thread moves every job along on timers; no process is started.

    Labels steer a job: ``emulator-outcome`` = ``succeed`` (default) | ``fail`` | ``hang``
    (stays RUNNING until cancelled or timed out) and ``emulator-run-ms`` = how long it runs.
    """

    def __init__(self, runner: Runner) -> None:
        super().__init__(name="simulator", daemon=True)
        self.runner = runner
        self._heap: list[tuple[float, int, str, str]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._halt = False

    def schedule(self, delay: float, job_id: str, action: str) -> None:
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + delay, next(self._seq), job_id, action))
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._halt = True
            self._cond.notify()
        self.join(timeout=5)

    def run(self) -> None:
        while True:
            with self._cond:
                while not self._halt and (not self._heap or self._heap[0][0] > time.monotonic()):
                    wait = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._cond.wait(wait)
                if self._halt:
                    return
                _, _, job_id, action = heapq.heappop(self._heap)
            try:
                self._act(job_id, action)
            except Exception:
                log.exception("simulator: %s of job %s failed", action, job_id)

    def _act(self, job_id: str, action: str) -> None:
        r = self.runner
        st = r.settings
        if action == "pending":
            if r.transition(job_id, S.JOB_STATE_PENDING, only_from={S.JOB_STATE_QUEUED}):
                self.schedule(st.simulate_pending_seconds, job_id, "run")
        elif action == "run":
            if not r.transition(
                job_id, S.JOB_STATE_RUNNING, only_from={S.JOB_STATE_PENDING, S.JOB_STATE_RUNNING}
            ):
                return
            job = r.store.get_job(job_id)
            if job is None:
                return
            run_ms = job.labels.get(RUN_MS_LABEL)
            run_for = int(run_ms) / 1000.0 if run_ms else st.simulate_run_seconds
            if job.labels.get(OUTCOME_LABEL, "succeed") != "hang":
                self.schedule(run_for, job_id, "finish")
            timeout = timeout_seconds(job)
            if timeout:
                elapsed = time.time() - protos.ts_seconds(job.start_time)
                self.schedule(max(timeout - elapsed, 0.0), job_id, "timeout")
        elif action == "finish":
            job = r.store.get_job(job_id)
            if job is None or job.state != S.JOB_STATE_RUNNING:
                return
            if job.labels.get(OUTCOME_LABEL) == "fail":
                r.finish(
                    job_id,
                    S.JOB_STATE_FAILED,
                    (
                        errors.RPC_INVALID_ARGUMENT,
                        f"Simulated failure (label {OUTCOME_LABEL}=fail).",
                    ),
                )
            else:
                r.finish(job_id, S.JOB_STATE_SUCCEEDED)
        elif action == "timeout":
            job = r.store.get_job(job_id)
            if job is not None and job.state == S.JOB_STATE_RUNNING:
                r.finish(
                    job_id,
                    S.JOB_STATE_FAILED,
                    (
                        errors.RPC_DEADLINE_EXCEEDED,
                        f"Job exceeded its scheduling.timeout of {timeout_seconds(job):g}s "
                        "and was stopped.",
                    ),
                )
        elif action == "cancel":
            job = r.store.get_job(job_id)
            if job is not None and job.state == S.JOB_STATE_CANCELLING:
                r.finish(
                    job_id, S.JOB_STATE_CANCELLED, (errors.RPC_CANCELLED, "Job was cancelled.")
                )
