"""The tuning scheduler against a real store and a stand-in Runner (no server, no driver)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from google.cloud.aiplatform_v1 import types as aip

from emulator import protos, tuning
from emulator.store import DB_NAME, Store

from .conftest import PARENT
from .test_tuning import categorical, tuning_job

S = protos.JobState
T = aip.Trial.State


@dataclass
class FakeRunner:
    """What the scheduler asks of the Runner, recorded."""

    store: Store
    root: Path
    submitted: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    stopping: bool = False

    def job_dir(self, job_id: str) -> Path:
        return self.root / job_id

    def submit(self, job_id: str, *, relaunch: bool = False) -> None:
        self.submitted.append(job_id)

    def request_cancel(self, job_id: str) -> int | None:
        self.cancelled.append(job_id)
        return None


def _stored(store: Store, job: aip.HyperparameterTuningJob) -> str:
    pb = aip.HyperparameterTuningJob.pb(job)
    job_id = store.new_job_id()
    pb.name = f"{PARENT}/hyperparameterTuningJobs/{job_id}"
    protos.set_state(pb, S.JOB_STATE_QUEUED)
    store.insert_job(job_id, PARENT, pb)
    return job_id


@pytest.fixture
def runner(tmp_path: Path) -> Any:
    store = Store(tmp_path / "state")
    yield FakeRunner(store, tmp_path / "jobs")
    store.close()


def _get(store: Store, job_id: str) -> Any:
    job = store.get_job(job_id)
    assert job is not None
    return job


def _eventually(test: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait until ``test`` holds (trials' ends are recorded in the job's advancer thread)."""
    deadline = time.monotonic() + timeout
    while not test():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.01)


def _finish(store: Store, job_id: str, state: int) -> None:
    def change(job: Any) -> bool:
        protos.set_state(job, state)
        return True

    store.update_job(job_id, change)


def test_trials_are_started_linked_and_recorded(runner: FakeRunner) -> None:
    scheduler = tuning.TuningScheduler(runner, simulated=True)
    job_id = _stored(runner.store, tuning_job(max_trials=3, parallel=2))
    scheduler.submit(job_id)
    job = _get(runner.store, job_id)
    assert job.state == S.JOB_STATE_RUNNING
    assert [t.state for t in job.trials] == [T.ACTIVE, T.ACTIVE]
    assert runner.submitted == [t.custom_job.rsplit("/", 1)[1] for t in job.trials]
    first = runner.submitted[0]
    assert runner.store.trial_of(first) == (job_id, "1")
    context = scheduler.trial_context(first)
    assert context is not None and context.trial_id == "1" and context.metric_tag == "loss"
    assert context.metric_file("workerpool0-0") == runner.job_dir(first) / (
        "hypertune/workerpool0-0/output.metrics"
    )
    _finish(runner.store, first, S.JOB_STATE_SUCCEEDED)
    scheduler.job_finished(first)  # recorded by the job's advancer thread
    _eventually(lambda: len(runner.submitted) == 3)
    job = _get(runner.store, job_id)
    assert [t.state for t in job.trials] == [T.SUCCEEDED, T.ACTIVE, T.ACTIVE]
    scheduler.job_finished(first)  # told twice: nothing changes
    scheduler.advance(job_id)
    scheduler.shutdown()  # waits for an advance under way
    assert len(_get(runner.store, job_id).trials) == 3
    assert len(runner.submitted) == 3
    assert scheduler.trial_context(job_id) is None


def test_stopping_service_starts_no_trial(runner: FakeRunner) -> None:
    runner.stopping = True
    scheduler = tuning.TuningScheduler(runner, simulated=True)
    job_id = _stored(runner.store, tuning_job())
    scheduler.submit(job_id)
    assert runner.submitted == []
    assert _get(runner.store, job_id).state == S.JOB_STATE_PENDING


def test_an_internal_error_fails_the_job_with_code_13(
    runner: FakeRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    scheduler = tuning.TuningScheduler(runner, simulated=True)
    job_id = _stored(
        runner.store,
        tuning_job(parameters=[categorical("x", ["a", "b"])], max_trials=2, parallel=1),
    )
    scheduler.submit(job_id)
    started = list(runner.submitted)

    def broken(*args: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(tuning, "make_suggester", broken)
    scheduler._suggesters.clear()  # as after a restart: the suggester is made again
    scheduler.advance(job_id)
    job = _get(runner.store, job_id)
    assert job.state == S.JOB_STATE_FAILED
    assert job.error.code == 13 and "RuntimeError" in job.error.message
    assert runner.cancelled == started


def test_a_database_from_before_tuning_jobs_is_read_and_upgraded(tmp_path: Path) -> None:
    job = protos.new_job_pb()
    job.name = f"{PARENT}/customJobs/1"
    job.display_name = "old"
    db = sqlite3.connect(tmp_path / DB_NAME)
    db.executescript(
        "CREATE TABLE jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, "
        "parent TEXT NOT NULL, state INTEGER NOT NULL, job_json TEXT NOT NULL);"
    )
    db.execute(
        "INSERT INTO jobs(id, parent, state, job_json) VALUES ('1', ?, 4, ?)",
        (PARENT, protos.dump_job(job)),
    )
    db.commit()
    db.close()
    readonly = Store(tmp_path, readonly=True)
    assert [j.display_name for _, j in readonly.all_jobs()] == ["old"]
    readonly.close()
    store = Store(tmp_path)
    assert store.job_kind("1") is protos.CUSTOM_JOB
    assert [j.display_name for _, j in store.list_jobs(PARENT)] == ["old"]
    assert list(store.list_jobs(PARENT, kind=protos.TUNING_JOB)) == []
    store.close()
