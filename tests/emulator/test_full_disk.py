"""A full disk (or a failing one) under the service's state: clean errors, and no job left stuck.

Issue 27: when a state write hit ENOSPC, creates answered 500 and the thread driving a job died,
leaving the job PENDING until a restart. Now an API request that cannot write answers 503
UNAVAILABLE saying that the emulator's disk is full, and work already accepted (a job's progress, a
cancel, a tuning job's trials) waits for the store and carries on once it can write again.

The disk is not filled for real: the service runs in this process, and every write transaction of
its store fails with SQLite's own error while the test says the disk is full.
"""

from __future__ import annotations

import errno
import json
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from google.api_core import exceptions as gexc
from google.cloud.aiplatform_v1 import JobServiceClient
from google.cloud.aiplatform_v1 import types as aip

from emulator.client import job_service_client
from emulator.config import Faults, Settings
from emulator.server import Service
from emulator.store import Store
from emulator.testing import wait_for_state

from .conftest import PARENT, REPO, TERMINAL, S, make_job, trainer_pool
from .test_tuning import tuning_job

FULL = sqlite3.OperationalError("database or disk is full")


class Disk:
    """Whether the state's disk is full, and what a write then raises."""

    def __init__(self) -> None:
        self.full = threading.Event()
        self.error: BaseException = FULL
        self.refused = 0

    def wait_refused(self, timeout: float = 30.0) -> None:
        """Wait until a write was refused, then a little more (the service keeps trying)."""
        deadline = time.monotonic() + timeout
        while self.refused == 0:
            assert time.monotonic() < deadline, "nothing tried to write"
            time.sleep(0.02)
        time.sleep(0.5)

    @contextmanager
    def filled(self, error: BaseException = FULL) -> Iterator[None]:
        self.error = error
        self.full.set()
        try:
            yield
        finally:
            self.full.clear()


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> Disk:
    """Write transactions fail at their end (their writes rolled back) while the disk is full."""
    state = Disk()
    real_tx = Store._tx

    @contextmanager
    def tx(store: Store) -> Iterator[sqlite3.Connection]:
        with real_tx(store) as db:
            yield db
            if state.full.is_set():
                state.refused += 1
                raise state.error

    monkeypatch.setattr(Store, "_tx", tx)
    return state


@contextmanager
def in_process(tmp_path: Path, mode: str = "simulate", **settings: float) -> Iterator[Service]:
    values = {
        "simulate_queued_seconds": 0.05,
        "simulate_pending_seconds": 0.05,
        "simulate_run_seconds": 0.2,
        "simulate_cancel_seconds": 0.05,
        **settings,
    }
    service = Service(
        Settings(
            state_dir=tmp_path / "state",
            mode=mode,
            gpus="ignore",
            grace_seconds=1.0,
            allow_roots=[tmp_path, REPO],
            **values,  # type: ignore[arg-type]
        ),
        Faults(),
        host="127.0.0.1",
        port=0,
    )
    service.runner.recover()
    serving = threading.Thread(
        target=service.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    serving.start()
    try:
        yield service
    finally:
        service.httpd.shutdown()
        service.httpd.server_close()
        service.runner.shutdown()
        service.store.close()


@pytest.fixture
def service(tmp_path: Path, disk: Disk) -> Iterator[Service]:
    with in_process(tmp_path) as running:
        yield running
    disk.full.clear()


def _client(service: Service) -> JobServiceClient:
    return job_service_client(service.endpoint)


def _raw_create(service: Service) -> tuple[int, object]:
    body = aip.CustomJob.to_json(make_job("raw")).encode()
    request = urllib.request.Request(
        f"{service.endpoint}/v1/{PARENT}/customJobs", data=body, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (FULL, "disk is full"),
        (sqlite3.OperationalError("disk I/O error"), "disk I/O error"),
        (OSError(errno.ENOSPC, "No space left on device"), "disk is full"),
    ],
    ids=["sqlite-full", "sqlite-ioerr", "enospc"],
)
def test_requests_that_cannot_write_are_503_saying_why(
    service: Service, disk: Disk, error: BaseException, said: str
) -> None:
    client = _client(service)
    running = client.create_custom_job(
        parent=PARENT, custom_job=make_job("running", labels={"emulator-outcome": "hang"})
    )
    wait_for_state(client, running.name, [S.JOB_STATE_RUNNING], timeout=10)
    with disk.filled(error):
        with pytest.raises(gexc.ServiceUnavailable) as created:
            client.create_custom_job(parent=PARENT, custom_job=make_job("refused"))
        assert said in created.value.message
        assert str(service.settings.state_dir) in created.value.message
        with pytest.raises(gexc.ServiceUnavailable):
            client.create_hyperparameter_tuning_job(
                parent=PARENT, hyperparameter_tuning_job=tuning_job()
            )
        with pytest.raises(gexc.ServiceUnavailable):
            client.cancel_custom_job(name=running.name)
        status, answer = _raw_create(service)
        assert status == 503
        assert isinstance(answer, dict) and answer["error"]["status"] == "UNAVAILABLE"
        # Reads still answer.
        assert client.get_custom_job(name=running.name).state == S.JOB_STATE_RUNNING
    assert [j.display_name for j in client.list_custom_jobs(parent=PARENT)] == ["running"]
    client.cancel_custom_job(name=running.name)
    assert wait_for_state(client, running.name, TERMINAL).state == S.JOB_STATE_CANCELLED


def test_a_job_waits_while_the_disk_is_full_and_runs_on_when_space_is_back(
    service: Service, disk: Disk
) -> None:
    client = _client(service)
    created = client.create_custom_job(parent=PARENT, custom_job=make_job("patient"))
    with disk.filled():
        disk.wait_refused()  # its QUEUED → PENDING → RUNNING → SUCCEEDED writes fail meanwhile
        assert client.get_custom_job(name=created.name).state == S.JOB_STATE_QUEUED
    done = wait_for_state(client, created.name, TERMINAL, timeout=10)
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error


def test_a_cancel_accepted_before_the_disk_filled_completes(tmp_path: Path, disk: Disk) -> None:
    with in_process(tmp_path, simulate_cancel_seconds=0.3) as service:
        client = _client(service)
        job = client.create_custom_job(
            parent=PARENT, custom_job=make_job("hang", labels={"emulator-outcome": "hang"})
        )
        wait_for_state(client, job.name, [S.JOB_STATE_RUNNING], timeout=10)
        client.cancel_custom_job(name=job.name)
        with disk.filled():
            disk.wait_refused()
        done = wait_for_state(client, job.name, TERMINAL, timeout=10)
        assert done.state == S.JOB_STATE_CANCELLED


def test_a_tuning_job_records_every_trial_after_the_disk_was_full(
    service: Service, disk: Disk
) -> None:
    client = _client(service)
    job = tuning_job(max_trials=6, parallel=3, labels={"emulator-run-ms": "100"})
    created = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=job)
    wait_for_state(client, created.name, [S.JOB_STATE_RUNNING], timeout=10)
    with disk.filled():
        disk.wait_refused()
    done = wait_for_state(client, created.name, TERMINAL, timeout=20)
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error
    assert len(done.trials) == 6
    for trial in done.trials:
        cj = client.get_custom_job(name=trial.custom_job)
        assert cj.state == S.JOB_STATE_SUCCEEDED


def test_an_execute_worker_survives_a_full_disk(tmp_path: Path, disk: Disk) -> None:
    """The replica exits while its exit and the job's end cannot be written: the worker thread
    waits for the store instead of dying, and the job succeeds once space is back."""
    with in_process(tmp_path, mode="execute") as service:
        client = _client(service)
        args = ["--epochs", "1", "--steps-per-epoch", "4", "--step-sleep", "0.1"]
        created = client.create_custom_job(
            parent=PARENT, custom_job=make_job("worker", pools=[trainer_pool(args=args)])
        )
        wait_for_state(client, created.name, [S.JOB_STATE_RUNNING], timeout=60)
        with disk.filled():
            disk.wait_refused()  # the trainer ended: its exit, the job's end cannot be written
            assert client.get_custom_job(name=created.name).state == S.JOB_STATE_RUNNING
        done = wait_for_state(client, created.name, TERMINAL, timeout=30)
        assert done.state == S.JOB_STATE_SUCCEEDED, done.error
