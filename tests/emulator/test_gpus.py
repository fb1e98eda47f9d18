"""GPUs shared among execute-mode jobs: the allocator itself, then jobs on a fake device list.

The emulator under test is started with ``--gpus 0,1``: two device ids that need no GPU, since
the trainer only records the ``CUDA_VISIBLE_DEVICES`` it was given.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from google.cloud.aiplatform_v1 import types as aip

from emulator.gpus import Admission, parse_gpus_flag
from emulator.testing import EmulatorProcess, running_emulator, wait_for_state

from .conftest import PARENT, TERMINAL, S, job_id, make_job, raw_http, trainer_pool, unique

T4 = aip.AcceleratorType.NVIDIA_TESLA_T4
LONG_RUN = ["--epochs", "1", "--steps-per-epoch", "2000", "--step-sleep", "0.05"]
SHORT_RUN = ["--epochs", "1", "--steps-per-epoch", "5"]


def wait_until(predicate: Callable[[], bool], timeout: float = 30.0, what: str = "it") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.02)


# -- the --gpus flag ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("auto", ("auto", None)),
        ("ignore", ("ignore", None)),
        ("0,1,3", ("auto", (0, 1, 3))),
        (" 2 , 5 ", ("auto", (2, 5))),
        ("7", ("auto", (7,))),
    ],
)
def test_gpus_flag_forms(text: str, parsed: tuple[str, tuple[int, ...] | None]) -> None:
    assert parse_gpus_flag(text) == parsed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "expected auto, ignore, or GPU device ids"),
        ("all", "(got 'all')"),
        ("0,,1", "expected auto, ignore, or GPU device ids"),
        ("-1", "expected auto, ignore, or GPU device ids"),
        ("0.5", "expected auto, ignore, or GPU device ids"),
        ("\uff11", "expected auto, ignore, or GPU device ids"),  # a full-width digit
        ("1,0,1", "device 1 is listed twice"),
        (",".join(map(str, range(1025))), "at most 1024 device ids"),
    ],
)
def test_gpus_flag_refuses_bad_values(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_gpus_flag(text)
    assert message in str(caught.value)


# -- the allocator ------------------------------------------------------------------------------


class Asker:
    """One job asking an Admission for a slot and GPUs from its own thread."""

    def __init__(self, admission: Admission, job: str, gpus: int) -> None:
        self.give_up = threading.Event()
        self.result: list[int] | None = None
        self.done = threading.Event()

        def ask() -> None:
            self.result = admission.acquire(job, gpus, give_up=self.give_up.is_set)
            self.done.set()

        self.thread = threading.Thread(target=ask, daemon=True)
        self.thread.start()

    def granted(self, timeout: float = 5.0) -> list[int] | None:
        assert self.done.wait(timeout), "the job was not admitted in time"
        return self.result


def still_waiting(asker: Asker) -> bool:
    return not asker.done.wait(0.3)


def test_jobs_get_devices_of_their_own_and_give_them_back() -> None:
    admission = Admission(slots=4, devices=(0, 1, 2))
    a = Asker(admission, "a", 2)
    assert a.granted() == [0, 1]
    b = Asker(admission, "b", 1)
    assert b.granted() == [2]
    assert admission.holdings() == {"a": (0, 1), "b": (2,)}
    admission.release("a")
    admission.release("a")  # twice is harmless
    c = Asker(admission, "c", 2)
    assert c.granted() == [0, 1]
    assert admission.holdings() == {"b": (2,), "c": (0, 1)}


def test_gpu_jobs_are_served_in_order_without_backfilling() -> None:
    admission = Admission(slots=4, devices=(0, 1))
    first = Asker(admission, "first", 1)
    assert first.granted() == [0]
    big = Asker(admission, "big", 2)
    assert still_waiting(big)
    small = Asker(admission, "small", 1)
    # Device 1 is free, but the older big job comes first: small jobs never starve it.
    assert still_waiting(small)
    admission.release("first")
    assert big.granted() == [0, 1]
    assert still_waiting(small)
    admission.release("big")
    assert small.granted() == [0]


def test_a_job_without_gpus_never_waits_behind_gpu_jobs() -> None:
    admission = Admission(slots=3, devices=(0,))
    holder = Asker(admission, "holder", 1)
    assert holder.granted() == [0]
    waiting = Asker(admission, "waiting", 1)
    assert still_waiting(waiting)
    cpu = Asker(admission, "cpu", 0)
    assert cpu.granted() == []  # a free slot, and no GPU needed


def test_slots_go_to_the_oldest_job_that_can_start() -> None:
    admission = Admission(slots=1, devices=(0,))
    running = Asker(admission, "running", 0)
    assert running.granted() == []
    gpu = Asker(admission, "gpu", 1)
    cpu = Asker(admission, "cpu", 0)
    assert still_waiting(gpu) and still_waiting(cpu)
    admission.release("running")
    assert gpu.granted() == [0]  # it asked first, and its device is free
    assert still_waiting(cpu)
    admission.release("gpu")
    assert cpu.granted() == []


def test_a_job_that_gives_up_frees_nothing_it_did_not_hold() -> None:
    admission = Admission(slots=4, devices=(0, 1))
    holder = Asker(admission, "holder", 1)
    assert holder.granted() == [0]
    big = Asker(admission, "big", 2)
    later = Asker(admission, "later", 1)
    assert still_waiting(big) and still_waiting(later)
    big.give_up.set()
    admission.wake()
    assert big.granted() is None
    # The job behind it is first now and fits; the holder keeps its device.
    assert later.granted() == [1]
    assert admission.holdings() == {"holder": (0,), "later": (1,)}


def test_asking_for_more_than_exists_is_refused() -> None:
    admission = Admission(slots=1, devices=(0, 1))
    with pytest.raises(ValueError, match="3 GPU"):
        admission.acquire("x", 3, give_up=lambda: False)


# -- jobs on --gpus 0,1 -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpus2() -> Iterator[EmulatorProcess]:
    with running_emulator("--gpus", "0,1", "--grace-seconds", "1", "--log-level", "info") as emu:
        yield emu


def gpu_job(name: str, out: str, gpus: int, args: list[str]) -> aip.CustomJob:
    pool = trainer_pool(args=args, accelerator=(T4, gpus))
    return make_job(name, output=out, pools=[pool])


def devices_seen(emu: EmulatorProcess, out: str, role: str = "chief-0") -> str | None:
    """The CUDA_VISIBLE_DEVICES the replica recorded, or None before it did."""
    path = emu.state_dir / "gcs" / out.removeprefix("gs://") / "replicas" / f"{role}.json"
    if not path.exists():
        return None
    value: str | None = json.loads(path.read_text())["cuda_visible_devices"]
    return value


def state_of(emu: EmulatorProcess, job: aip.CustomJob) -> int:
    return int(emu.client().get_custom_job(name=job.name).state)


def cancel_all(emu: EmulatorProcess, *jobs: aip.CustomJob) -> None:
    client = emu.client()
    for job in jobs:
        if state_of(emu, job) not in TERMINAL:
            client.cancel_custom_job(name=job.name)
    for job in jobs:
        wait_for_state(client, job.name, TERMINAL, timeout=30)


def test_concurrent_jobs_never_share_a_gpu(gpus2: EmulatorProcess) -> None:
    client = gpus2.client()
    outs = [f"gs://bucket/{unique()}" for _ in range(2)]
    jobs = [
        client.create_custom_job(parent=PARENT, custom_job=gpu_job("one", out, 1, LONG_RUN))
        for out in outs
    ]
    try:
        wait_until(lambda: all(devices_seen(gpus2, o) is not None for o in outs), what="both")
        assert {state_of(gpus2, j) for j in jobs} == {S.JOB_STATE_RUNNING}
        assert sorted(devices_seen(gpus2, o) or "" for o in outs) == ["0", "1"]
    finally:
        cancel_all(gpus2, *jobs)


def test_replicas_of_one_job_get_devices_of_their_own(gpus2: EmulatorProcess) -> None:
    client = gpus2.client()
    out = f"gs://bucket/{unique()}"
    # Both replicas run until cancelled: a job ends when its chief does, and a short chief could
    # end it before a slow-starting worker (a loaded machine) recorded its devices.
    pools = [
        trainer_pool(args=LONG_RUN, accelerator=(T4, 1)),
        trainer_pool(args=LONG_RUN, accelerator=(T4, 1)),
    ]
    created = client.create_custom_job(
        parent=PARENT, custom_job=make_job("pair", output=out, pools=pools)
    )
    try:
        wait_until(
            lambda: all(devices_seen(gpus2, out, r) is not None for r in ("chief-0", "worker-0")),
            timeout=60,
            what="both replicas",
        )
        assert devices_seen(gpus2, out, "chief-0") == "0"
        assert devices_seen(gpus2, out, "worker-0") == "1"
    finally:
        cancel_all(gpus2, created)


def test_a_job_wanting_more_than_is_free_waits_queued(gpus2: EmulatorProcess) -> None:
    client = gpus2.client()
    small_out, big_out = f"gs://bucket/{unique()}", f"gs://bucket/{unique()}"
    small = client.create_custom_job(
        parent=PARENT, custom_job=gpu_job("small", small_out, 1, LONG_RUN)
    )
    big = None
    try:
        wait_until(lambda: devices_seen(gpus2, small_out) == "0", what="the small job")
        big = client.create_custom_job(
            parent=PARENT, custom_job=gpu_job("big", big_out, 2, SHORT_RUN)
        )
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            assert state_of(gpus2, big) == S.JOB_STATE_QUEUED
            time.sleep(0.1)
        assert gpus2.replicas(job_id(big)) == []  # nothing started, no GPU oversubscribed
        client.cancel_custom_job(name=small.name)
        done = wait_for_state(client, big.name, TERMINAL, timeout=60)
        assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message
        assert devices_seen(gpus2, big_out) == "0,1"
        small_done = client.get_custom_job(name=small.name)
        assert small_done.state == S.JOB_STATE_CANCELLED
        assert done.start_time >= small_done.end_time  # it ran only once the GPU was free
    finally:
        cancel_all(gpus2, small, *([big] if big is not None else []))


def test_a_job_wanting_more_gpus_than_exist_fails_at_once(gpus2: EmulatorProcess) -> None:
    client = gpus2.client()
    pools = [
        trainer_pool(args=SHORT_RUN, accelerator=(T4, 1)),
        trainer_pool(replicas=2, accelerator=(T4, 1)),
    ]
    started = time.monotonic()
    created = client.create_custom_job(parent=PARENT, custom_job=make_job("huge", pools=pools))
    done = wait_for_state(client, created.name, TERMINAL, timeout=30)
    assert time.monotonic() - started < 10
    assert done.state == S.JOB_STATE_FAILED
    assert done.error.code == 8  # RESOURCE_EXHAUSTED
    message = done.error.message
    assert "needs 3 GPU(s) in total but the emulator was given 2 (--gpus 0,1)" in message
    assert "workerpool1: 2 replica(s) x 1" in message
    assert gpus2.replicas(job_id(created)) == []


def test_cancelling_a_waiting_job_frees_nothing_it_did_not_hold(gpus2: EmulatorProcess) -> None:
    client = gpus2.client()
    outs = {key: f"gs://bucket/{unique()}" for key in ("holder", "later")}
    holder = client.create_custom_job(
        parent=PARENT, custom_job=gpu_job("holder", outs["holder"], 1, LONG_RUN)
    )
    jobs = [holder]
    try:
        wait_until(lambda: devices_seen(gpus2, outs["holder"]) == "0", what="the holder")
        waiting = client.create_custom_job(
            parent=PARENT, custom_job=gpu_job("waiting", f"gs://bucket/{unique()}", 2, LONG_RUN)
        )
        jobs.append(waiting)
        time.sleep(0.5)
        assert state_of(gpus2, waiting) == S.JOB_STATE_QUEUED
        started = time.monotonic()
        client.cancel_custom_job(name=waiting.name)
        cancelled = wait_for_state(client, waiting.name, TERMINAL, timeout=10)
        assert cancelled.state == S.JOB_STATE_CANCELLED
        assert time.monotonic() - started < 5
        assert gpus2.replicas(job_id(waiting)) == []
        later = client.create_custom_job(
            parent=PARENT, custom_job=gpu_job("later", outs["later"], 1, LONG_RUN)
        )
        jobs.append(later)
        wait_until(lambda: devices_seen(gpus2, outs["later"]) is not None, what="the later job")
        assert devices_seen(gpus2, outs["later"]) == "1"  # device 0 is still the holder's
        assert state_of(gpus2, holder) == S.JOB_STATE_RUNNING
    finally:
        cancel_all(gpus2, *jobs)


def test_a_failed_prepare_gives_its_gpus_back(gpus2: EmulatorProcess) -> None:
    client = gpus2.client()
    pool = trainer_pool(
        package_uris=["gs://staging/nothing-here/trainer-0.1.0.tar.gz"], accelerator=(T4, 2)
    )
    broken = client.create_custom_job(parent=PARENT, custom_job=make_job("ghost", pools=[pool]))
    done = wait_for_state(client, broken.name, TERMINAL, timeout=30)
    assert done.state == S.JOB_STATE_FAILED and done.error.code == 3
    out = f"gs://bucket/{unique()}"
    after = client.create_custom_job(parent=PARENT, custom_job=gpu_job("after", out, 2, SHORT_RUN))
    done = wait_for_state(client, after.name, TERMINAL, timeout=60)
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message
    assert devices_seen(gpus2, out) == "0,1"


# -- what a GPU job runs on, said (issue 35) ------------------------------------------------------


def _fake_nvidia_smi(folder: Path, gpus: int) -> None:
    """An ``nvidia-smi`` that lists ``gpus`` GPUs (none: prints nothing), first on PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    listed = "".join(f'echo "GPU {i}: Tesla T4 (UUID: GPU-{i:08d})"\n' for i in range(gpus))
    tool = folder / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\n{listed}exit 0\n")
    tool.chmod(0o755)


def _said(emu: EmulatorProcess, job: aip.CustomJob) -> tuple[str, dict[str, Any]]:
    """The chief's log and its replica record from the admin API, once the job is over."""
    done = wait_for_state(emu.client(), job.name, TERMINAL, timeout=60)
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message
    status, body = raw_http(emu, "GET", f"/emulator/v1/jobs/{job_id(job)}/replicas")
    assert status == 200
    chief = next(r for r in body["replicas"] if r["replica"] == "workerpool0-0")
    return Path(chief["logPath"]).read_text(), chief


@pytest.mark.parametrize(
    ("flag", "machine_gpus", "short", "note"),
    [
        # No GPU here: the job runs on the CPU, and says so.
        (
            "ignore",
            0,
            "on the CPU: no GPU on this machine, 1 x NVIDIA_TESLA_T4 asked",
            "workerpool0-0 runs on the CPU, not on a GPU (1 x NVIDIA_TESLA_T4 asked): this "
            "machine has no GPU (nvidia-smi lists none)",
        ),
        # GPUs here, ignored by the flag: said, with how to use them.
        (
            "ignore",
            2,
            "on the CPU: GPUs ignored (--gpus ignore), 1 x NVIDIA_TESLA_T4 asked",
            "though this machine has 2 GPU(s): start it with --gpus auto to use them",
        ),
        # GPUs here and used: which ones.
        (
            "auto",
            2,
            "on GPU 0",
            "workerpool0-0 runs on GPU device(s) 0 of this machine (1 x NVIDIA_TESLA_T4 asked)",
        ),
    ],
)
def test_a_gpu_job_says_what_it_runs_on_in_its_log_and_its_replicas_record(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    flag: str,
    machine_gpus: int,
    short: str,
    note: str,
) -> None:
    _fake_nvidia_smi(tmp_path / "bin", machine_gpus)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    with running_emulator("--gpus", flag, "--grace-seconds", "1") as emu:
        out = f"gs://bucket/{unique()}"
        job = emu.client().create_custom_job(
            parent=PARENT, custom_job=gpu_job("gpu", out, 1, SHORT_RUN)
        )
        log, chief = _said(emu, job)
        assert "[emulator] workerpool0-0 runs on " in log and note in log
        assert chief["hardware"]["short"] == short
        assert note in chief["hardware"]["note"]
        # A job that asks for no GPU is told nothing about GPUs.
        plain = emu.client().create_custom_job(
            parent=PARENT, custom_job=make_job("cpu", pools=[trainer_pool(args=SHORT_RUN)])
        )
        log, chief = _said(emu, plain)
        assert "hardware" not in chief and "GPU" not in log
