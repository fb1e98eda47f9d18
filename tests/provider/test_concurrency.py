"""The provider at scale: the host's worker pool widened, one shared client, few calls per delete.

``components.dynamic._host.widen_host_pool`` is tested on plain thread pools and in the real dynamic
provider host (``python -m pulumi.dynamic``, driven over gRPC): jobs whose start the emulator
delays are created side by side, not four at a time. The shared client is tested for reuse,
for its connection pool (no "connection pool is full" under 32 concurrent calls, where a
client with the default pool has it) and for thread safety; a delete for its calls and waits.
"""

from __future__ import annotations

import logging
import pstats
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

import components.vertex.api as vertex_api
from components._provider import TrainingJobProvider
from components.dynamic._host import serving_pool, widen_host_pool
from components.lifecycle._profile import PROFILE_ENV, profiled
from components.lifecycle._settings import (
    DEFAULT_MAX_CONCURRENT_OPERATIONS,
    Endpoint,
    ProviderSettings,
    SettingError,
)
from components.vertex.api import (
    CUSTOM_JOB,
    TERMINAL_STATES,
    JobApi,
    RetryPolicy,
    job_service_client,
    shared_client,
)
from emulator.names import derived_number
from emulator.testing import EmulatorProcess, running_emulator, wait_for_state
from tests.provider.conftest import configured, job_inputs, provider_host, struct_of

URN = "urn:pulumi:test::gpu-training::pulumi-python:dynamic/vertex:TrainingJob::train"
START_SECONDS = 2.0
"""How long the module's emulator keeps a job PENDING."""
WAITING_JOBS = 10


@pytest.fixture(scope="module")
def slow_start() -> Iterator[EmulatorProcess]:
    """Jobs take START_SECONDS to start, then run until cancelled; a cancel is immediate."""
    with running_emulator(
        "--mode",
        "simulate",
        "--simulate-queued-seconds",
        "0.05",
        "--simulate-pending-seconds",
        str(START_SECONDS),
        "--simulate-run-seconds",
        "600",
        "--simulate-cancel-seconds",
        "0",
    ) as server:
        yield server


# -- the host's pool ---------------------------------------------------------------------------


def test_widening_from_a_worker_lets_that_many_calls_run_at_once() -> None:
    pool = ThreadPoolExecutor(max_workers=2)
    try:
        assert pool.submit(serving_pool).result(timeout=10) is pool
        assert pool.submit(widen_host_pool, 6).result(timeout=10) == 6
        together = threading.Barrier(6, timeout=10)
        # Six calls that each wait for the other five: they finish only if all six run at once.
        assert [f.result(timeout=20) for f in [pool.submit(together.wait) for _ in range(6)]]
    finally:
        pool.shutdown(wait=False)


def test_a_fresh_pools_first_call_finds_its_pool() -> None:
    """The executor records a new thread only after starting it: the first call of a fresh
    pool runs before that (a CI run failed on it)."""
    for _ in range(50):
        pool = ThreadPoolExecutor(max_workers=2)
        try:
            assert pool.submit(serving_pool).result(timeout=10) is pool
        finally:
            pool.shutdown(wait=False)


def _spin(seconds: float) -> str:
    """Uses ``seconds`` of this thread's CPU time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
    return "spun"


def _nap(seconds: float) -> str:
    time.sleep(seconds)
    return "napped"


def test_operations_profiled_at_once_all_run_into_one_profile(tmp_path, monkeypatch) -> None:
    """``GPU_TRAINING_PROVIDER_PROFILE``: concurrent operations are each profiled on their
    thread's CPU time (on Python 3.12+ a second cProfile fails "Another profiling tool is
    already active"); a wait costs nothing."""
    target = tmp_path / "create.prof"
    monkeypatch.setenv(PROFILE_ENV, str(target))
    together = threading.Barrier(6, timeout=10)

    def operation(index: int) -> str:
        together.wait()
        work = (lambda: _spin(0.2)) if index % 2 else (lambda: _nap(0.2))
        return profiled(work)

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = [f.result(timeout=60) for f in [pool.submit(operation, i) for i in range(6)]]
    assert results == ["napped", "spun"] * 3
    stats = pstats.Stats(str(target)).stats  # type: ignore[attr-defined]
    seconds = {func[2]: ct for func, (_, _, _, ct, _) in stats.items()}
    # Three spins of 0.2 s CPU each; sampling misses at most a few ms of each.
    assert 0.4 < seconds["_spin"] < 1.0
    assert seconds.get("_nap", 0.0) < 0.1


def test_calls_queued_before_the_widening_get_threads_at_once() -> None:
    pool = ThreadPoolExecutor(max_workers=2)
    busy = threading.Barrier(3, timeout=10)
    widen, release = threading.Event(), threading.Event()
    widened: list[int | None] = []

    def blocker(widens: bool) -> None:
        busy.wait()
        if widens:  # as configure does, in a worker of the host's pool
            assert widen.wait(10)
            widened.append(widen_host_pool(8))
        release.wait(30)

    queued_together = threading.Barrier(4, timeout=10)
    try:
        blockers = [pool.submit(blocker, True), pool.submit(blocker, False)]
        busy.wait()  # both threads are taken
        queued = [pool.submit(queued_together.wait) for _ in range(4)]
        assert pool._work_queue.qsize() == 4
        widen.set()
        # No call is submitted after the widening: the queued four still run, all at once.
        assert all(f.result(timeout=20) is not None for f in queued)
        release.set()
        for future in blockers:
            future.result(timeout=20)
        # Read once the widening call has returned: the queued four may finish before it does.
        assert widened == [8]
    finally:
        release.set()
        pool.shutdown(wait=False)


def test_widening_never_shrinks_and_outside_a_pool_changes_nothing(capsys) -> None:
    pool = ThreadPoolExecutor(max_workers=8)
    try:
        assert pool.submit(widen_host_pool, 4).result(timeout=10) == 8
    finally:
        pool.shutdown(wait=False)
    assert widen_host_pool(64) is None  # the test's main thread belongs to no pool
    assert capsys.readouterr().err == ""  # not the provider host: no warning


def test_a_host_whose_pool_cannot_be_found_gets_one_warning(monkeypatch: Any, capsys: Any) -> None:
    """What an SDK that serves calls some other way would get: the provider still works."""
    import components.dynamic._host
    import components.lifecycle._engine_watch

    monkeypatch.setattr(components.lifecycle._engine_watch, "in_provider_host", lambda: True)
    monkeypatch.setattr(components.dynamic._host, "_warned", set())
    assert widen_host_pool(32) is None
    assert widen_host_pool(32) is None
    err = capsys.readouterr().err
    assert err.count("could not find the dynamic provider host's worker pool") == 1
    assert "at most 4 operations run at once" in err


@pytest.fixture
def host() -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    """``python -m pulumi.dynamic``, the host the engine starts, as it ships."""
    with provider_host() as stub:
        yield stub


def _created_spread(emu: EmulatorProcess, names: list[str]) -> float:
    client = emu.client()
    created = sorted(client.get_custom_job(name=n).create_time for n in names)
    return float((created[-1] - created[0]).total_seconds())


def test_the_real_host_runs_waiting_creates_side_by_side(
    host: provider_pb2_grpc.ResourceProviderStub, slow_start: EmulatorProcess
) -> None:
    host.Configure(
        provider_pb2.ConfigureRequest(args=struct_of({"training:endpoint": slow_start.endpoint}))
    )
    blob = serialize_provider(TrainingJobProvider())

    def create(index: int) -> str:
        inputs = job_inputs(wait_for="running", wait_timeout=60, triggers=[f"job-{index}"])
        inputs = {k: v for k, v in inputs.items() if v is not None}
        inputs["__provider"] = blob
        return str(
            host.Create(provider_pb2.CreateRequest(urn=URN, properties=struct_of(inputs))).id
        )

    with ThreadPoolExecutor(max_workers=WAITING_JOBS) as engine:
        names = list(engine.map(create, range(WAITING_JOBS)))
    # Four at a time, the last two would be submitted two starts after the first.
    assert _created_spread(slow_start, names) < START_SECONDS


# -- settings ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, DEFAULT_MAX_CONCURRENT_OPERATIONS), ("", 32), ("64", 64), (" 8 ", 8), (16, 16)],
)
def test_max_concurrent_operations_setting(value: Any, expected: int) -> None:
    settings = ProviderSettings.read({"training:maxConcurrentOperations": value}.get)
    assert settings.max_concurrent_operations == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("3", "must be from 4 to 256, got 3"),
        ("257", "must be from 4 to 256, got 257"),
        ("many", "expected a whole number from 4 to 256, got 'many'"),
        ("1.5", "expected a whole number from 4 to 256, got '1.5'"),
        ("-8", "expected a whole number from 4 to 256, got '-8'"),
        (True, "expected a whole number from 4 to 256, got True"),
    ],
)
def test_bad_max_concurrent_operations_names_the_key(value: Any, message: str) -> None:
    with pytest.raises(SettingError) as info:
        ProviderSettings.read({"training:maxConcurrentOperations": value}.get)
    assert str(info.value) == f"training:maxConcurrentOperations: {message}"


# -- the shared client ---------------------------------------------------------------------------


def test_one_client_per_endpoint_and_region(sim: EmulatorProcess, monkeypatch) -> None:
    made: list[Any] = []

    def counting(endpoint: Endpoint, region: str) -> Any:
        made.append((endpoint.url, region))
        return job_service_client(endpoint, region)

    monkeypatch.setattr(vertex_api, "_shared_clients", {})
    monkeypatch.setattr(vertex_api, "job_service_client", counting)
    provider = configured(sim.endpoint)
    checked = provider.check({}, job_inputs()).inputs
    with ThreadPoolExecutor(max_workers=8) as pool:
        created = list(
            pool.map(lambda i: provider.create({**checked, "triggers": [f"t{i}"]}), range(8))
        )
        list(pool.map(lambda c: provider.read(c.id, c.outs), created))
        list(pool.map(lambda c: provider.delete(c.id, c.outs), created))
    assert made == [(sim.endpoint, "us-central1")]
    endpoint = Endpoint(sim.endpoint)
    assert shared_client(endpoint, "us-central1") is shared_client(endpoint, "us-central1")
    # An explicit endpoint serves every region (Vertex AI's endpoints are regional).
    assert shared_client(endpoint, "europe-west4") is shared_client(endpoint, "us-central1")
    other = Endpoint(sim.endpoint.replace("127.0.0.1", "localhost"))
    assert shared_client(other, "us-central1") is not shared_client(endpoint, "us-central1")
    assert len(made) == 2
    # Nothing of it reaches the provider's pickle.
    assert serialize_provider(provider) == serialize_provider(TrainingJobProvider())


def _sessions(client: Any) -> list[Any]:
    transport = client.transport
    return [transport._session, transport.operations_client._transport._session]


def test_connection_pools_are_sized_to_the_concurrency(sim: EmulatorProcess) -> None:
    client = shared_client(Endpoint(sim.endpoint), "pool-test", connections=48)
    for session in _sessions(client):
        for prefix in ("http://", "https://"):
            assert session.get_adapter(prefix + "host")._pool_maxsize == 48


@pytest.mark.parametrize(
    ("no_proxy", "expected"), [("", {"http": "http://proxy.invalid:3128"}), ("127.0.0.1", {})]
)
def test_the_environment_is_read_once_per_client_not_per_call(
    monkeypatch: Any, no_proxy: str, expected: dict[str, str]
) -> None:
    for name in ("http_proxy", "https_proxy", "no_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.setenv("http_proxy", "http://proxy.invalid:3128")
    monkeypatch.setenv("no_proxy", no_proxy)
    monkeypatch.setattr(vertex_api, "_shared_clients", {})
    client = shared_client(Endpoint("http://127.0.0.1:9"), "us-central1")
    for session in _sessions(client):
        # What requests would have read from the environment on each call, read once.
        assert session.trust_env is False
        assert {k: v for k, v in session.proxies.items() if k != "no"} == expected


def _pool_full_warnings(client: Any, name: str, caplog: Any, calls: int = 32) -> list[str]:
    caplog.clear()
    with (
        caplog.at_level(logging.WARNING, logger="urllib3.connectionpool"),
        ThreadPoolExecutor(max_workers=calls) as pool,
    ):
        jobs = list(pool.map(lambda _: client.get_custom_job(name=name), range(calls)))
    assert {j.name for j in jobs} == {name}
    return [r.getMessage() for r in caplog.records if "pool is full" in r.getMessage()]


def test_thirty_two_calls_at_once_share_the_client_without_throwaway_connections(
    sim: EmulatorProcess, provider: TrainingJobProvider, caplog: Any
) -> None:
    created = provider.create(provider.check({}, job_inputs()).inputs)
    sim.set_faults(latency_ms=200)  # every call is under way at the same time
    try:
        shared = shared_client(Endpoint(sim.endpoint), "us-central1", connections=32)
        assert _pool_full_warnings(shared, created.id, caplog) == []
        # The same load on a client with the library's default pool (10) throws connections
        # away: the check above can fail.
        plain = job_service_client(Endpoint(sim.endpoint), "us-central1")
        assert _pool_full_warnings(plain, created.id, caplog)
        plain.transport.close()
    finally:
        sim.clear_faults()
    assert created.outs is not None
    provider.delete(created.id, created.outs)


# -- calls and waits of a delete -------------------------------------------------------------


@dataclass
class _FakeJob:
    state_name: str
    name: str = "projects/p/locations/r/customJobs/1"

    @property
    def state(self) -> Any:
        return type("State", (), {"name": self.state_name})()


@dataclass
class _FakeOperation:
    """A deletion's long-running operation, done after ``polls_needed`` reads."""

    polls_needed: int
    polls: int = 0

    @property
    def operation(self) -> Any:
        return type("Op", (), {"done": self.polls >= self.polls_needed})()

    def done(self, retry: Any = None) -> bool:
        self.polls += 1
        return self.polls >= self.polls_needed

    def result(self, timeout: float | None = None) -> None:
        assert self.polls >= self.polls_needed, "result() before the operation was done"


@dataclass
class _FakeClient:
    """The JobServiceClient calls a delete makes, each recorded."""

    states: list[str]
    operation: _FakeOperation = field(default_factory=lambda: _FakeOperation(0))
    calls: list[str] = field(default_factory=list)

    def get_custom_job(self, name: str, **_: Any) -> _FakeJob:
        self.calls.append("get")
        return _FakeJob(self.states.pop(0) if len(self.states) > 1 else self.states[0])

    def cancel_custom_job(self, name: str, **_: Any) -> None:
        self.calls.append("cancel")
        if self.states[0] in TERMINAL_STATES:  # as the service answers for a finished job
            raise gexc.FailedPrecondition(f"it is already in state {self.states[0]}")  # type: ignore[no-untyped-call]

    def delete_custom_job(self, name: str, **_: Any) -> _FakeOperation:
        self.calls.append("delete")
        return self.operation


def _api(client: _FakeClient, sleeps: list[float]) -> JobApi:
    return JobApi(client, CUSTOM_JOB, RetryPolicy(), sleep=sleeps.append)


def test_a_cancel_is_polled_at_once_then_with_growing_pauses() -> None:
    client = _FakeClient([*["JOB_STATE_CANCELLING"] * 4, "JOB_STATE_CANCELLED"])
    sleeps: list[float] = []
    seen: list[str] = []
    job = _api(client, sleeps).cancel_and_wait(
        "job", timeout=60, observe=lambda j: seen.append(j.state.name)
    )
    assert job is not None and job.state.name == "JOB_STATE_CANCELLED"
    assert client.calls == ["cancel", "get", "get", "get", "get", "get"]
    assert sleeps == pytest.approx([0.05, 0.075, 0.1125, 0.16875])
    assert seen == [*["JOB_STATE_CANCELLING"] * 4, "JOB_STATE_CANCELLED"]


@pytest.mark.parametrize("state", sorted(TERMINAL_STATES))
def test_a_finished_job_is_read_once_and_never_waited_for(state: str) -> None:
    client = _FakeClient([state])
    sleeps: list[float] = []
    seen: list[str] = []
    job = _api(client, sleeps).cancel_and_wait(
        "job", timeout=60, observe=lambda j: seen.append(j.state.name)
    )
    assert job is not None and job.state.name == state
    assert client.calls == ["cancel", "get"] and sleeps == []  # the service refused the cancel
    assert seen == [state]


def test_a_job_being_cancelled_is_waited_for() -> None:
    client = _FakeClient(["JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED"])
    sleeps: list[float] = []
    job = _api(client, sleeps).cancel_and_wait("job", timeout=60)
    assert job is not None and job.state.name == "JOB_STATE_CANCELLED"
    assert client.calls == ["cancel", "get", "get"] and sleeps == pytest.approx([0.05])


def test_a_job_that_is_gone_is_not_read() -> None:
    class Gone(_FakeClient):
        def cancel_custom_job(self, name: str, **_: Any) -> None:
            self.calls.append("cancel")
            raise gexc.NotFound("no such job")  # type: ignore[no-untyped-call]

    client = Gone(["JOB_STATE_RUNNING"])
    assert _api(client, []).cancel_and_wait("job", timeout=60) is None
    assert client.calls == ["cancel"]


@pytest.mark.parametrize(("polls", "pauses"), [(0, []), (1, [0.05]), (3, [0.05, 0.075, 0.1125])])
def test_a_deletions_operation_is_read_only_while_it_is_not_done(
    polls: int, pauses: list[float]
) -> None:
    client = _FakeClient(["JOB_STATE_CANCELLED"], operation=_FakeOperation(polls))
    sleeps: list[float] = []
    _api(client, sleeps).delete_record("job", timeout=60)
    assert client.calls == ["delete"]
    assert client.operation.polls == polls  # done in the answer: never read
    assert sleeps == pytest.approx(pauses)


def _requests_since(log: Path, offset: int) -> list[str]:
    text = log.read_bytes()[offset:].decode(errors="replace")
    return [line.split(" INFO ", 1)[1] for line in text.splitlines() if " INFO " in line]


def test_delete_of_an_active_job_cancels_first_and_polls_briefly(
    slow_start: EmulatorProcess, capsys: Any
) -> None:
    provider = configured(slow_start.endpoint, cancelTimeout="20", retryDeadline="10")
    created = provider.create(provider.check({}, job_inputs()).inputs)
    job_id = created.id.rsplit("/", 1)[-1]
    wait_for_state(slow_start.client(), created.id, [2, 3], timeout=10)  # QUEUED → PENDING
    time.sleep(0.3)  # the emulator logs a call after answering it: let that line land
    offset = slow_start.log_path.stat().st_size

    started = time.monotonic()
    # The whole path: the record deleted too (opt-in since issue 35: by default it is kept).
    provider.delete(created.id, {**created.outs, "delete_record_on_delete": True})
    elapsed = time.monotonic() - started
    time.sleep(0.3)

    # (The client reads operations under /ui/, jobs under /v1/.)
    calls = [
        c for c in _requests_since(slow_start.log_path, offset) if " /v1/" in c or " /ui/" in c
    ]
    methods = [" ".join(c.split()[:2]).replace(created.id, "JOB") for c in calls]
    # One listing of the region's active jobs (who holds the job, and the jobs a killed `up`
    # left: issue 42), cancel, read at once (the emulator cancels at once: at most one more
    # read, 0.05 s later), delete, read the operation (from 0.05 s on). No read of the job
    # before the cancel.
    deleted = methods.index("DELETE /v1/JOB")
    parent = f"/v1/projects/{derived_number('local-training')}/locations/us-central1/customJobs"
    assert methods[:2] == [f"GET {parent}", "POST /v1/JOB:cancel"], methods
    assert methods[2:deleted] in (["GET /v1/JOB"], ["GET /v1/JOB"] * 2), methods
    polls = methods[deleted + 1 :]
    # the delete operation is named by project number, as Vertex names it
    number = derived_number("local-training")
    assert all(m.startswith(f"GET /ui/projects/{number}/") for m in polls), methods
    assert 1 <= len(polls) <= 2, methods
    assert job_id not in " ".join(polls)
    # Before: a fixed 0.2 s after the cancel and 1 s between operation polls.
    assert elapsed < 1.0, elapsed
    assert capsys.readouterr().err == ""  # a quick cancel prints no progress
