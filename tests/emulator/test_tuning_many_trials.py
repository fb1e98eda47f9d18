"""A tuning job with many active trials costs, to cancel or to finish, about what one job costs.

Issue 27: cancelling a job of 99 active trials took 87 s, each trial's end reading every other
trial's CustomJob and rewriting the whole tuning job several times. The figures this guards are
counts, not times: the CustomJobs read, the tuning job's writes per advance, and that a trial's end
does not wait behind an advance of its job already under way (ends arriving meanwhile are recorded
by one more advance, not one each).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from emulator import protos, tuning
from emulator.store import Store

from .test_tuning import tuning_job
from .test_tuning_scheduler import FakeRunner, _finish, _get, _stored

S = protos.JobState
TRIALS = 40


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeRunner]:
    store = Store(tmp_path / "state")
    yield FakeRunner(store, tmp_path / "jobs")
    store.close()


def _cancelling(job: Any) -> bool:
    protos.set_state(job, S.JOB_STATE_CANCELLING)
    return True


class _Counted:
    """Store.get_job and Store.update_job calls by job id, and TuningScheduler.advance calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reads: Counter[str] = Counter()
        self.writes: Counter[str] = Counter()
        self.advances = 0
        get_job, update_job, advance = (
            Store.get_job,
            Store.update_job,
            tuning.TuningScheduler.advance,
        )

        def counted_get(store: Store, job_id: str) -> Any:
            self.reads[job_id] += 1
            return get_job(store, job_id)

        def counted_update(store: Store, job_id: str, change: Callable[[Any], bool]) -> Any:
            self.writes[job_id] += 1
            return update_job(store, job_id, change)

        def counted_advance(scheduler: tuning.TuningScheduler, job_id: str) -> None:
            self.advances += 1
            advance(scheduler, job_id)

        monkeypatch.setattr(Store, "get_job", counted_get)
        monkeypatch.setattr(Store, "update_job", counted_update)
        monkeypatch.setattr(tuning.TuningScheduler, "advance", counted_advance)

    def reset(self) -> None:
        self.reads.clear()
        self.writes.clear()
        self.advances = 0


def _wait_for_state(store: Store, job_id: str, state: int, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while (job := _get(store, job_id)).state != state:
        assert time.monotonic() < deadline, f"still {protos.state_name(job.state)}"
        time.sleep(0.02)
    return job


def _many_trials(fake: FakeRunner, scheduler: tuning.TuningScheduler) -> tuple[str, list[str]]:
    job = tuning_job(algorithm="RANDOM_SEARCH", max_trials=TRIALS, parallel=TRIALS)
    job_id = _stored(fake.store, job)
    scheduler.submit(job_id)
    assert len(fake.submitted) == TRIALS
    return job_id, list(fake.submitted)


def test_cancel_reads_each_trials_custom_job_once(
    fake: FakeRunner,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scheduler = tuning.TuningScheduler(fake, simulated=True)
    job_id, trial_jobs = _many_trials(fake, scheduler)
    fake.store.update_job(job_id, _cancelling)
    counted = _Counted(monkeypatch)
    scheduler.cancel(job_id)
    assert sorted(fake.cancelled) == sorted(trial_jobs)
    for cj_id in trial_jobs:
        _finish(fake.store, cj_id, S.JOB_STATE_CANCELLED)
        scheduler.job_finished(cj_id)
    job = _wait_for_state(fake.store, job_id, S.JOB_STATE_CANCELLED)
    assert all(t.state == tuning.T.INFEASIBLE for t in job.trials)
    # Each ended trial's CustomJob is read once, to record its outcome (it was once per trial
    # still active, at every advance: TRIALS**2 / 2 reads).
    assert sum(counted.reads[cj_id] for cj_id in trial_jobs) <= TRIALS
    # One write of the tuning job per advance (it was up to four).
    assert counted.writes[job_id] <= counted.advances


def test_trial_ends_during_an_advance_wait_for_one_more_advance_only(
    fake: FakeRunner,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scheduler = tuning.TuningScheduler(fake, simulated=True)
    job_id, trial_jobs = _many_trials(fake, scheduler)
    fake.store.update_job(job_id, _cancelling)
    scheduler.cancel(job_id)
    counted = _Counted(monkeypatch)

    def every_trial_ends() -> None:
        for cj_id in trial_jobs:
            _finish(fake.store, cj_id, S.JOB_STATE_CANCELLED)
            scheduler.job_finished(cj_id)

    ending = threading.Thread(target=every_trial_ends)
    with scheduler._lock(job_id):  # an advance of the job under way
        ending.start()
        ending.join(timeout=10)
        waited = ending.is_alive()
    ending.join()
    # The trials' ends did not wait for it (a driver's thread reports them).
    assert not waited
    _wait_for_state(fake.store, job_id, S.JOB_STATE_CANCELLED)
    assert counted.advances <= 2
