"""Hyperparameter tuning jobs: trials run as CustomJobs, at most ``parallel_trial_count`` at once.

A tuning job goes QUEUED → PENDING → RUNNING as its first trials start, and ends once no trial is
active and no more may start: SUCCEEDED when a trial succeeded, FAILED when none did or as soon
as ``max_failed_trial_count`` trials have failed (0: no limit; the job fails only if every trial
fails), CANCELLED after a cancel. Ending early stops the active trials first: the job stays
RUNNING (or CANCELLING) and its trials STOPPING until their CustomJobs have ended.

Each trial is a CustomJob, listed and fetched like any other and named in ``trial.custom_job``:
the ``trial_job_spec`` with ``--<parameter_id>=<value>`` appended to every pool's ``args``,
``<base_output_directory>/<trial id>`` as its output directory and the tuning job's labels. The
runner hands it to the driver of ``--mode`` like any CustomJob (processes, or timers), and the
replicas learn their trial (:class:`~emulator.cluster.TrialContext`). When it ends the trial is
SUCCEEDED with its final measurement (:mod:`emulator.measurements`) or INFEASIBLE with the reason
(the CustomJob failed, was cancelled, or reported no metric). Values come from
:mod:`emulator.suggest`; the suggester learns each result.

Everything lives in the store (the trials inside the tuning job, ``trial_jobs`` linking their
CustomJobs), so :meth:`TuningScheduler.advance` works out what to do from it whatever woke it (a
create, a cancel, a trial's CustomJob ending, a restart): it is idempotent and survives restarts.
One advance per job at a time; what it sets in motion (submitting or cancelling CustomJobs) runs
after its lock is released, since ending a CustomJob calls back into it.

An advance costs what one job costs, however many trials are active: it reads the states of the
trials' CustomJobs in one query and loads only those that ended, and writes the tuning job (whose
JSON holds every trial) at most once, new trials' CustomJobs in the same transaction. A trial's end
does not advance the job in the thread that reports it: it asks the job's advancer thread, which
waits until ends have stopped coming for a moment (:data:`QUIET_SECONDS`), so that ends reported
together (a cancel's) are recorded by one advance, and those reported while it runs by one more.
(Cancelling a job of 99 active trials of 100 parameters took 87 s, each end reading every other
trial's CustomJob and rewriting the whole job several times.) When the store cannot be written,
an advance asked for by an API request is left to the advancer, which waits for it
(:class:`~emulator.store.Store`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from google.cloud.aiplatform_v1 import types as aip

from . import errors, measurements, protos
from .cluster import TrialContext
from .driver import CANCELLED
from .store import StateUnavailable, Store
from .studyspec import Param, ParamValue, search_space, walk
from .suggest import Past, Suggester, format_arg, from_value, make_suggester, to_value

__all__ = ["TuningControl", "TuningScheduler", "custom_job_view"]

log = logging.getLogger("emulator.tuning")

S = protos.JobState
T = aip.Trial.State
# A job's advancer waits until no trial of the job has ended for QUIET seconds (at most GATHER)
# before it advances: ends reported together (a cancel stops every trial at once) are recorded
# by one advance, which rewrites the tuning job once.
QUIET_SECONDS = 0.05
GATHER_SECONDS = 1.0
_LIVE = (T.ACTIVE, T.STOPPING)
_TRIAL_PB: Any = type(aip.Trial.pb(aip.Trial()))
CHIEF = "workerpool0-0"


class TuningControl(Protocol):
    """What the scheduler may ask of the Runner."""

    store: Store

    @property
    def stopping(self) -> bool:
        """True once the service is shutting down: start nothing new."""
        ...

    def job_dir(self, job_id: str) -> Path:
        """``<state-dir>/jobs/<id>``."""
        ...

    def submit(self, job_id: str, *, relaunch: bool = False) -> None:
        """Start driving a stored job."""
        ...

    def request_cancel(self, job_id: str) -> int | None:
        """Mark a job CANCELLING and stop it (None), or the terminal state it already has."""
        ...


def custom_job_view(job: Any) -> Any:
    """The CustomJob a tuning job's trials are made from, without a trial's arguments.

    The create-time checks of CustomJobs (display name, labels, pools, paths) run on it.
    """
    view = protos.new_job_pb()
    view.display_name = job.display_name
    view.labels.update(job.labels)
    view.job_spec.CopyFrom(job.trial_job_spec)
    if job.HasField("encryption_spec"):
        view.encryption_spec.CopyFrom(job.encryption_spec)
    return view


def _trial_job(job: Any, trial_id: str, chosen: dict[str, ParamValue]) -> Any:
    """The CustomJob of trial ``trial_id`` (not yet named)."""
    cj = custom_job_view(job)
    suffix = f"-trial-{trial_id}"
    cj.display_name = job.display_name[: 128 - len(suffix)] + suffix
    args = [f"--{pid}={format_arg(value)}" for pid, value in chosen.items()]
    for pool in cj.job_spec.worker_pool_specs:
        task = pool.WhichOneof("task")
        if task is not None:
            getattr(pool, task).args.extend(args)
    output = cj.job_spec.base_output_directory
    if output.output_uri_prefix:
        output.output_uri_prefix = f"{output.output_uri_prefix.rstrip('/')}/{trial_id}"
    protos.set_state(cj, S.JOB_STATE_QUEUED)
    protos.now_ts(cj.create_time, protos.ts_seconds(cj.update_time))
    return cj


def _job_id(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _chosen(space: list[Param], trial: Any) -> dict[str, ParamValue]:
    """A stored trial's values, by parameter id."""
    recorded = {p.parameter_id: p.value for p in trial.parameters}
    return walk(space, lambda param: from_value(param, recorded[param.id]))


def _values(trial: Any) -> list[float] | None:
    if trial.state != T.SUCCEEDED:
        return None
    return [m.value for m in trial.final_measurement.metrics]


def _failed(job: Any) -> int:
    return sum(1 for t in job.trials if t.state == T.INFEASIBLE)


def _failing(job: Any) -> bool:
    limit = job.max_failed_trial_count
    return bool(limit > 0 and _failed(job) >= limit)


@dataclass
class _Moves:
    """What an advance sets in motion once its lock is released: CustomJob ids."""

    submit: list[str] = field(default_factory=list)
    cancel: list[str] = field(default_factory=list)


@dataclass
class _Step:
    """What one advance changes in the stored tuning job: the trials that ended (as recorded now),
    the new trials with their CustomJobs (id, CustomJob, trial), whether no more trials exist.

    Applied to the job as stored, in one transaction; a write retried after a failure applies it
    again to the job as stored then, so ``started`` says what the last application did.
    """

    ended: dict[str, Any]
    new: list[tuple[str, Any, Any]] = field(default_factory=list)
    exhausted: bool = False
    started: bool = False


class TuningScheduler:
    """Runs tuning jobs' trials; called by the Runner (see module doc)."""

    def __init__(self, control: TuningControl, *, simulated: bool) -> None:
        self.control = control
        self.store = control.store
        self.simulated = simulated
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._suggesters: dict[str, Suggester] = {}
        # Under _guard: jobs whose advancer must advance them (again), when that was last asked
        # (time.monotonic), and each job's advancer.
        self._wanted: set[str] = set()
        self._asked_at: dict[str, float] = {}
        self._advancers: dict[str, threading.Thread] = {}
        self._halted = threading.Event()

    # -- called by the Runner -----------------------------------------------------------------

    def submit(self, job_id: str) -> None:
        """A tuning job was created (or found unfinished at start): start its trials."""
        self._advance_now_or_soon(job_id)

    def cancel(self, job_id: str) -> None:
        """The tuning job was just marked CANCELLING: stop its trials."""
        self._advance_now_or_soon(job_id)

    def job_finished(self, job_id: str) -> None:
        """A job reached a terminal state: if it is a trial's CustomJob, record the trial (soon,
        in the job's advancer thread)."""
        link = self.store.trial_of(job_id)
        if link is not None:
            self.advance_soon(link[0])

    def shutdown(self, timeout: float = 10.0) -> None:
        """The service stops: no more advances; wait for those under way."""
        with self._guard:
            self._halted.set()
            advancers = list(self._advancers.values())
        for advancer in advancers:
            advancer.join(timeout)

    def advance_soon(self, job_id: str) -> None:
        """Have the job's advancer thread advance it once more (started if none runs): asked
        while an advance runs, it makes one more, whoever else asks meanwhile."""
        with self._guard:
            self._wanted.add(job_id)
            self._asked_at[job_id] = time.monotonic()
            if self._halted.is_set() or job_id in self._advancers:
                return
            advancer = threading.Thread(
                target=self._advance_while_wanted, args=(job_id,), name=f"tuning-{job_id}"
            )
            advancer.daemon = True
            self._advancers[job_id] = advancer
        advancer.start()

    def _advance_while_wanted(self, job_id: str) -> None:
        while True:
            self._gather(job_id)
            with self._guard:
                if self._halted.is_set() or job_id not in self._wanted:
                    self._advancers.pop(job_id, None)
                    self._asked_at.pop(job_id, None)
                    return
                self._wanted.discard(job_id)
            try:
                self.advance(job_id)
            except StateUnavailable as problem:
                # This thread waits for the store: it gives up only when the service stops, and
                # the next start carries the job on.
                log.warning("tuning job %s: not advanced: %s", job_id, problem)
            except Exception:
                log.exception("tuning job %s: advancing it failed", job_id)

    def _gather(self, job_id: str) -> None:
        """Wait until the job's trials have stopped ending for a moment (see QUIET_SECONDS)."""
        deadline = time.monotonic() + GATHER_SECONDS
        while not self._halted.is_set():
            with self._guard:
                quiet_at = self._asked_at.get(job_id, 0.0) + QUIET_SECONDS
            now = time.monotonic()
            if now >= quiet_at or now >= deadline:
                return
            self._halted.wait(min(quiet_at, deadline) - now)

    def _advance_now_or_soon(self, job_id: str) -> None:
        """Advance in this thread; when the store cannot be used now (an API request's thread
        does not wait for it), the job's advancer does it once it can."""
        try:
            self.advance(job_id)
        except StateUnavailable as problem:
            log.warning("tuning job %s: %s; it goes on once the state can be used", job_id, problem)
            self.advance_soon(job_id)

    def trial_context(self, job_id: str) -> TrialContext | None:
        """What the replicas of a trial's CustomJob are told (None: not a trial's)."""
        link = self.store.trial_of(job_id)
        if link is None:
            return None
        tuning = self.store.get_job(link[0])
        tag = tuning.study_spec.metrics[0].metric_id if tuning is not None else ""
        return TrialContext(link[1], tag, self.control.job_dir(job_id) / "hypertune")

    def advance(self, job_id: str) -> None:
        """Record ended trials, start or stop trials, settle the job's state (see module doc)."""
        moves = _Moves()
        with self._lock(job_id):
            job = self.store.get_job(job_id)
            if job is not None and not protos.is_terminal(job.state):
                try:
                    self._advance_or_fail(job_id, job, moves)
                except StateUnavailable:
                    # It may have been told of trials, or asked for some, that were not stored:
                    # made again from the stored trials next time.
                    self._suggesters.pop(job_id, None)
                    raise
        for cj_id in moves.cancel:
            self.control.request_cancel(cj_id)
        for cj_id in moves.submit:
            self.control.submit(cj_id)

    # -- one advance, under the job's lock ------------------------------------------------------

    def _advance_or_fail(self, job_id: str, job: Any, moves: _Moves) -> None:
        try:
            self._advance(job_id, job, moves)
        except StateUnavailable:
            raise  # not a bug: the caller waits for the store, or leaves it to the advancer
        except Exception as exc:
            # A bug of the emulator's (or of a library it calls): the job fails with code 13,
            # its trials are stopped, and the service goes on.
            log.exception("tuning job %s: internal error", job_id)
            moves.cancel += [_job_id(t.custom_job) for t in job.trials if t.state in _LIVE]
            moves.cancel += moves.submit  # trial jobs made before the error never start
            moves.submit.clear()
            what = type(exc).__name__
            self._update(job_id, lambda j: _crashed(j, what))
            self._suggesters.pop(job_id, None)

    def _lock(self, job_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(job_id, threading.Lock())

    def _update(self, job_id: str, change: Callable[[Any], bool]) -> Any:
        return self.store.update_job(job_id, change)

    def _advance(self, job_id: str, job: Any, moves: _Moves) -> None:
        if job.state == S.JOB_STATE_QUEUED:
            job = self._update(job_id, _to_pending)
            if job is None:
                return
        space = search_space(job.study_spec)
        suggester = self._suggester(job_id, job, space)
        states = self.store.trial_job_states(job_id)
        step = _Step(self._ended_trials(job_id, job, space, states))
        for trial in step.ended.values():
            suggester.tell(int(trial.id) - 1, _values(trial))
        # `job` is this advance's own copy: the step is worked out on it, then applied to the job
        # as stored (only when it changes something).
        recorded = _record(job, step.ended)
        if not _ending(job) and not self.control.stopping:
            step.new, step.exhausted = self._new_trials(job_id, job, suggester)
        if _apply(job, step, insert=None) or recorded:
            job = self._update(
                job_id,
                lambda stored: _apply(
                    stored, step, insert=lambda new: self._insert_trial_jobs(job_id, new)
                ),
            )
            if job is None:
                return
        if step.started:
            moves.submit = [cj_id for cj_id, _, _ in step.new]
        elif step.new:
            self._suggesters.pop(job_id, None)  # the job began ending: its suggestions went unused
        if _ending(job):
            moves.cancel = _to_stop(job, states)
        if protos.is_terminal(job.state):
            self._suggesters.pop(job_id, None)

    def _suggester(self, job_id: str, job: Any, space: list[Param]) -> Suggester:
        suggester = self._suggesters.get(job_id)
        if suggester is None:
            history = [
                Past(_chosen(space, t), t.state not in _LIVE, _values(t)) for t in job.trials
            ]
            suggester = make_suggester(job.study_spec, int(job_id) % 2**32, history)
            self._suggesters[job_id] = suggester
        return suggester

    def _ended_trials(
        self, job_id: str, job: Any, space: list[Param], states: dict[str, int]
    ) -> dict[str, Any]:
        """Active or stopping trials whose CustomJob has ended, by trial id, as recorded now.

        ``states`` (the trials' CustomJobs' states, a deleted one absent) says which ended: only
        those are read.
        """
        ended = {}
        for trial in job.trials:
            if trial.state not in _LIVE:
                continue
            cj_id = _job_id(trial.custom_job)
            state = states.get(cj_id)
            if state is not None and not protos.is_terminal(state):
                continue
            cj = None if state is None else self.store.get_job(cj_id)
            ended[trial.id] = self._ended(job_id, job, space, trial, cj)
        return ended

    def _ended(self, job_id: str, job: Any, space: list[Param], trial: Any, cj: Any | None) -> Any:
        """The trial as recorded now that its CustomJob ``cj`` has ended (None: was deleted)."""
        ended = _TRIAL_PB()
        ended.CopyFrom(trial)
        if cj is not None and cj.HasField("end_time"):
            ended.end_time.CopyFrom(cj.end_time)
        else:
            protos.now_ts(ended.end_time)
        outcome = self._outcome(job_id, job, space, trial, cj)
        if isinstance(outcome, str):
            ended.state = T.INFEASIBLE
            ended.infeasible_reason = outcome
            return ended
        ended.state = T.SUCCEEDED
        ended.final_measurement.step_count = outcome.step
        for metric, value in zip(job.study_spec.metrics, outcome.values, strict=True):
            ended.final_measurement.metrics.add(metric_id=metric.metric_id, value=value)
        return ended

    def _outcome(
        self, job_id: str, job: Any, space: list[Param], trial: Any, cj: Any | None
    ) -> measurements.Measured | str:
        if cj is None:
            return f"The trial's CustomJob {trial.custom_job} was deleted."
        if cj.state == S.JOB_STATE_CANCELLED:
            if trial.state == T.STOPPING:
                return "The trial was stopped: its hyperparameter tuning job is ending."
            return "The trial's CustomJob was cancelled."
        if cj.state != S.JOB_STATE_SUCCEEDED:
            return cj.error.message or f"The trial's CustomJob ended {protos.state_name(cj.state)}."
        if self.simulated:
            return measurements.simulated(job_id, space, _chosen(space, trial), job.study_spec)
        context = self.trial_context(_job_id(trial.custom_job))
        assert context is not None
        reports = measurements.read_reports(context.metric_file(CHIEF))
        return measurements.from_reports(reports, job.study_spec)

    def _new_trials(
        self, job_id: str, job: Any, suggester: Suggester
    ) -> tuple[list[tuple[str, Any, Any]], bool]:
        """New trials up to the parallel and total limits, each with its CustomJob (not stored
        yet) and that job's id; True too when no more exist."""
        live = sum(1 for t in job.trials if t.state in _LIVE)
        new: list[tuple[str, Any, Any]] = []
        parent = job.name.rsplit("/", 2)[0]
        while (
            live + len(new) < job.parallel_trial_count
            and len(job.trials) + len(new) < job.max_trial_count
        ):
            chosen = suggester.suggest()
            if chosen is None:
                return new, True
            trial_id = str(len(job.trials) + len(new) + 1)
            cj = _trial_job(job, trial_id, chosen)
            cj_id = self.store.new_job_id()
            cj.name = f"{parent}/{protos.CUSTOM_JOB.collection}/{cj_id}"
            new.append((cj_id, cj, _new_trial(trial_id, chosen, cj.name)))
        return new, False

    def _insert_trial_jobs(self, job_id: str, new: list[tuple[str, Any, Any]]) -> None:
        """Store new trials' CustomJobs, linked to the tuning job (within its update)."""
        for cj_id, cj, trial in new:
            parent = cj.name.rsplit("/", 2)[0]
            self.store.insert_job(cj_id, parent, cj, trial_of=(job_id, trial.id))


def _new_trial(trial_id: str, chosen: dict[str, ParamValue], custom_job: str) -> Any:
    trial = _TRIAL_PB(id=trial_id, state=T.ACTIVE, custom_job=custom_job)
    for pid, value in chosen.items():
        trial.parameters.add(parameter_id=pid).value.CopyFrom(to_value(value))
    protos.now_ts(trial.start_time)
    return trial


# -- changes to a stored tuning job (store.update_job: True when something changed) ---------------


def _to_pending(job: Any) -> bool:
    if job.state != S.JOB_STATE_QUEUED:
        return False
    protos.set_state(job, S.JOB_STATE_PENDING)
    return True


def _record(job: Any, done: dict[str, Any]) -> bool:
    changed = False
    for trial in job.trials:
        if trial.id in done and trial.state in _LIVE:
            trial.CopyFrom(done[trial.id])
            changed = True
    if changed:
        protos.now_ts(job.update_time)
    return changed


def _stop_active(job: Any) -> bool:
    changed = False
    for trial in job.trials:
        if trial.state == T.ACTIVE:
            trial.state = T.STOPPING
            changed = True
    return changed


def _append(job: Any, new: list[Any]) -> bool:
    job.trials.extend(new)
    if new:
        protos.now_ts(job.update_time)
    return bool(new)


def _ending(job: Any) -> bool:
    """The job stops its trials: cancelled, or as many trials failed as it allows."""
    return bool(job.state == S.JOB_STATE_CANCELLING or _failing(job))


def _apply(
    job: Any, step: _Step, *, insert: Callable[[list[tuple[str, Any, Any]]], None] | None
) -> bool:
    """Apply one advance's step to ``job``: record the ended trials, then stop the active ones
    if the job is ending, else add the new ones (``insert`` storing their CustomJobs; None: this
    is the advance's own copy), then settle the job's state. True when the job changed."""
    step.started = False
    changed = _record(job, step.ended)
    if _ending(job):
        changed = _stop_active(job) or changed
    elif step.new:
        if insert is not None:
            insert(step.new)
            step.started = True
        changed = _append(job, [trial for _, _, trial in step.new]) or changed
    return _settle(job, step.exhausted) or changed


def _to_stop(job: Any, states: dict[str, int]) -> list[str]:
    """The CustomJobs of an ending job's live trials still to cancel: not ended, not cancelling
    yet (a cancel that could not be made is made by the next advance)."""
    stop = []
    for trial in (t for t in job.trials if t.state in _LIVE):
        cj_id = _job_id(trial.custom_job)
        state = states.get(cj_id, S.JOB_STATE_CANCELLED)  # deleted: nothing to stop
        if not protos.is_terminal(state) and state != S.JOB_STATE_CANCELLING:
            stop.append(cj_id)
    return stop


def _crashed(job: Any, what: str) -> bool:
    if protos.is_terminal(job.state):
        return False
    protos.set_state(job, S.JOB_STATE_FAILED)
    protos.set_error(job, errors.RPC_INTERNAL, f"Emulator internal error ({what}); see its log.")
    return True


def _last_reason(job: Any) -> str:
    reasons = [t.infeasible_reason for t in job.trials if t.state == T.INFEASIBLE]
    return reasons[-1] if reasons else "none recorded"


def _settle(job: Any, exhausted: bool) -> bool:
    """Move the job on from what its trials say; True when its state changed."""
    if any(t.state in _LIVE for t in job.trials):
        if job.state == S.JOB_STATE_PENDING:
            protos.set_state(job, S.JOB_STATE_RUNNING)
            return True
        return False
    if job.state == S.JOB_STATE_CANCELLING:
        protos.set_state(job, S.JOB_STATE_CANCELLED)
        protos.set_error(job, *CANCELLED)
    elif _failing(job):
        protos.set_state(job, S.JOB_STATE_FAILED)
        protos.set_error(
            job,
            errors.RPC_INVALID_ARGUMENT,
            f"{_failed(job)} trials failed, as many as max_failed_trial_count "
            f"({job.max_failed_trial_count}) allows. The last one: {_last_reason(job)}",
        )
    elif exhausted or len(job.trials) >= job.max_trial_count:
        if any(t.state == T.SUCCEEDED for t in job.trials):
            protos.set_state(job, S.JOB_STATE_SUCCEEDED)
        else:
            protos.set_state(job, S.JOB_STATE_FAILED)
            protos.set_error(
                job,
                errors.RPC_INVALID_ARGUMENT,
                f"All {len(job.trials)} trials failed. The last one: {_last_reason(job)}",
            )
    else:
        return False
    return True
