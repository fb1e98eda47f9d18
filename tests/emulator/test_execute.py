"""Real execution: replicas as processes running the example trainer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from google.cloud.aiplatform_v1 import types as aip

from components.lifecycle._packaging import build_sdist
from emulator.names import derived_number
from emulator.testing import EmulatorProcess, running_emulator, wait_for_state

from .conftest import (
    EXECUTE_ARGS,
    PARENT,
    PROJECT,
    TERMINAL,
    TRAINER_DIR,
    S,
    job_id,
    make_job,
    trainer_pool,
    unique,
)

LONG_RUN = ["--epochs", "1", "--steps-per-epoch", "2000", "--step-sleep", "0.05"]


def gcs(emu: EmulatorProcess, uri: str) -> Path:
    """The local directory a gs:// URI maps to."""
    return emu.state_dir / "gcs" / uri.removeprefix("gs://")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_for(predicate, timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.05)


def log_of(emu: EmulatorProcess, job: aip.CustomJob, replica: str = "workerpool0-0") -> str:
    path = emu.state_dir / "jobs" / job_id(job) / "logs" / f"{replica}.log"
    return path.read_text() if path.exists() else ""


def latest_checkpoint_step(ckpt_dir: Path) -> int:
    steps = [int(p.stem.split("-")[1]) for p in ckpt_dir.glob("ckpt-*.npz")]
    return max(steps, default=0)


def test_chief_and_two_workers_get_their_cluster(execute: EmulatorProcess) -> None:
    client = execute.client()
    out = f"gs://bucket/{unique()}"
    secret = "hunter2-is-not-a-good-password"
    job = make_job(
        "distributed",
        output=out,
        pools=[
            trainer_pool(
                args=["--epochs", "2", "--steps-per-epoch", "5", "--wait-for-replicas", "30"],
                env={"TOKEN": secret},
            ),
            trainer_pool(replicas=2, env={"TOKEN": secret}),
        ],
    )
    created = client.create_custom_job(parent=PARENT, custom_job=job)
    done = wait_for_state(client, created.name, TERMINAL, timeout=60)
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message
    assert done.create_time <= done.start_time <= done.end_time

    base = gcs(execute, out)
    roles = {
        n: json.loads((base / "replicas" / f"{n}.json").read_text())
        for n in ("chief-0", "worker-0", "worker-1")
    }
    chief_cluster = roles["chief-0"]["tf_config"]["cluster"]
    assert set(chief_cluster) == {"chief", "worker"}
    assert len(chief_cluster["chief"]) == 1 and len(chief_cluster["worker"]) == 2
    addresses = chief_cluster["chief"] + chief_cluster["worker"]
    assert len(set(addresses)) == 3 and all(a.startswith("127.0.0.1:") for a in addresses)
    for name, (task_type, index, pool) in {
        "chief-0": ("chief", 0, 0),
        "worker-0": ("worker", 0, 1),
        "worker-1": ("worker", 1, 1),
    }.items():
        info = roles[name]
        assert info["tf_config"]["task"] == {"type": task_type, "index": index}
        assert info["tf_config"]["cluster"] == chief_cluster  # same cluster everywhere
        assert info["tf_config"]["environment"] == "cloud"
        assert "evaluator" not in info["tf_config"]["cluster"]
        assert info["cluster_spec"]["task"] == {"type": f"workerpool{pool}", "index": index}
        assert info["cluster_spec"]["cluster"] == {
            "workerpool0": chief_cluster["chief"],
            "workerpool1": chief_cluster["worker"],
        }
        assert info["job_id"] == job_id(created)
        # The project number, as Vertex AI sets CLOUD_ML_PROJECT_ID (emulator/names.py).
        assert info["project"] == derived_number(PROJECT)
        assert info["cuda_visible_devices"] == ""  # --gpus ignore
        assert secret not in json.dumps(info)  # env values are redacted from the job spec copy
        log = log_of(execute, created, f"workerpool{pool}-{index}")
        assert f"role {name} (task type {task_type}, index {index})" in log

    model = np.load(base / "model" / "model.npz")["weights"]
    metrics = json.loads((base / "model" / "metrics.json").read_text())
    assert model.shape == (8,) and metrics["steps"] == 10
    assert sorted(p.name for p in (base / "checkpoints").glob("ckpt-*.npz")) == [
        "ckpt-00000005.npz",
        "ckpt-00000010.npz",
    ]
    replicas = {r["replica"]: r for r in execute.replicas(job_id(created))}
    assert set(replicas) == {"workerpool0-0", "workerpool1-0", "workerpool1-1"}
    assert replicas["workerpool0-0"]["exitCode"] == 0
    # Workers exit by themselves right after reporting; one still running when the chief is done
    # is stopped by the service, as Vertex does.
    for name in ("workerpool1-0", "workerpool1-1"):
        assert replicas[name]["exitCode"] == 0 or replicas[name]["state"] == "stopped"
    for path in (execute.state_dir / "jobs" / job_id(created) / "logs").glob("*.log"):
        assert secret not in path.read_text()
    assert secret not in execute.log_path.read_text()


def test_chief_failure_fails_the_job(execute: EmulatorProcess) -> None:
    client = execute.client()
    created = client.create_custom_job(
        parent=PARENT, custom_job=make_job("fails", pools=[trainer_pool(args=["--fail"])])
    )
    done = wait_for_state(client, created.name, TERMINAL, timeout=60)
    assert done.state == S.JOB_STATE_FAILED
    assert done.error.code == 3
    assert "workerpool0-0 exited with a non-zero status of 3" in done.error.message
    log_path = execute.state_dir / "jobs" / job_id(created) / "logs" / "workerpool0-0.log"
    assert str(log_path) in done.error.message
    assert "--fail given" in log_path.read_text()
    assert execute.replicas(job_id(created))[0]["exitCode"] == 3


def test_cancel_stops_the_processes(execute: EmulatorProcess) -> None:
    client = execute.client()
    out = f"gs://bucket/{unique()}"
    created = client.create_custom_job(
        parent=PARENT,
        custom_job=make_job("cancel-me", output=out, pools=[trainer_pool(args=LONG_RUN)]),
    )
    wait_for(lambda: "starting from scratch" in log_of(execute, created), what="training start")
    pid = execute.replicas(job_id(created))[0]["pid"]
    assert pid_alive(pid)
    client.cancel_custom_job(name=created.name)
    done = wait_for_state(client, created.name, TERMINAL, timeout=30)
    assert done.state == S.JOB_STATE_CANCELLED
    assert done.error.code == 1
    assert not pid_alive(pid)
    replica = execute.replicas(job_id(created))[0]
    assert replica["state"] == "cancelled"
    assert replica["exitCode"] == -15  # SIGTERM was enough
    assert not (gcs(execute, out) / "model" / "model.npz").exists()


def test_timeout_fails_with_deadline_exceeded(execute: EmulatorProcess) -> None:
    client = execute.client()
    created = client.create_custom_job(
        parent=PARENT,
        custom_job=make_job("too-slow", pools=[trainer_pool(args=LONG_RUN)], timeout_seconds=1.5),
    )
    done = wait_for_state(client, created.name, TERMINAL, timeout=30)
    assert done.state == S.JOB_STATE_FAILED
    assert done.error.code == 4
    assert "scheduling.timeout of 1.5s" in done.error.message
    assert (done.end_time - done.start_time).total_seconds() >= 1.5
    replica = execute.replicas(job_id(created))[0]
    assert replica["state"] == "timed-out"
    assert not pid_alive(replica["pid"])


def test_gpu_job_runs_on_cpu_with_gpus_ignore(execute: EmulatorProcess) -> None:
    client = execute.client()
    pool = trainer_pool(accelerator=(aip.AcceleratorType.NVIDIA_TESLA_T4, 1))
    created = client.create_custom_job(parent=PARENT, custom_job=make_job("t4", pools=[pool]))
    done = wait_for_state(client, created.name, TERMINAL, timeout=60)
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message


def test_gpu_job_fails_clearly_without_gpus() -> None:
    with running_emulator("--gpus", "auto", "--grace-seconds", "1") as emu:
        client = emu.client()
        pool = trainer_pool(accelerator=(aip.AcceleratorType.NVIDIA_TESLA_T4, 2))
        created = client.create_custom_job(parent=PARENT, custom_job=make_job("t4", pools=[pool]))
        done = wait_for_state(client, created.name, TERMINAL, timeout=30)
        assert done.state == S.JOB_STATE_FAILED
        assert done.error.code == 8  # RESOURCE_EXHAUSTED
        assert "needs 2 GPU(s) in total but this machine has 0" in done.error.message
        assert "--gpus=ignore" in done.error.message
        assert emu.replicas(job_id(created)) == []  # nothing was started


@pytest.mark.skipif(
    subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0
    if shutil.which("docker")
    else False,
    reason="a Docker daemon answers here; this test covers machines without one",
)
def test_container_job_without_docker_daemon_fails(execute: EmulatorProcess) -> None:
    client = execute.client()
    pool = aip.WorkerPoolSpec(
        replica_count=1,
        machine_spec=aip.MachineSpec(machine_type="n1-standard-4"),
        container_spec=aip.ContainerSpec(image_uri="busybox:latest", command=["true"]),
    )
    created = client.create_custom_job(parent=PARENT, custom_job=make_job("box", pools=[pool]))
    done = wait_for_state(client, created.name, TERMINAL, timeout=60)
    assert done.state == S.JOB_STATE_FAILED
    assert done.error.code == 9
    assert "Container jobs need a running Docker daemon" in done.error.message
    assert "docker" in done.error.message.lower()


def test_sdist_from_gcs(execute: EmulatorProcess, tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(TRAINER_DIR, src, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    dist = execute.state_dir / "gcs" / "staging" / unique()
    dist.mkdir(parents=True)
    # An sdist as a build of the package makes it (the virtualenv has no setuptools since
    # Python 3.12: the project's own builder, which reads setup.py and never runs it).
    built = build_sdist(src)
    (dist / built.filename).write_bytes(built.data)
    (sdist,) = dist.glob("trainer-*.tar.gz")
    uri = f"gs://staging/{dist.name}/{sdist.name}"
    out = f"gs://bucket/{unique()}"
    client = execute.client()
    created = client.create_custom_job(
        parent=PARENT,
        custom_job=make_job("sdist", output=out, pools=[trainer_pool(package_uris=[uri])]),
    )
    done = wait_for_state(client, created.name, TERMINAL, timeout=60)
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message
    assert (gcs(execute, out) / "model" / "model.npz").exists()
    site = execute.state_dir / "jobs" / job_id(created) / "site-0"
    assert (site / "trainer" / "task.py").exists()
    assert not (site / "setup.py").exists()


def test_missing_package_fails_the_job(execute: EmulatorProcess) -> None:
    client = execute.client()
    pool = trainer_pool(package_uris=["gs://staging/nothing-here/trainer-0.1.0.tar.gz"])
    created = client.create_custom_job(parent=PARENT, custom_job=make_job("ghost", pools=[pool]))
    done = wait_for_state(client, created.name, TERMINAL, timeout=30)
    assert done.state == S.JOB_STATE_FAILED
    assert done.error.code == 3
    assert "does not exist" in done.error.message


def test_host_maintenance_event_gives_the_same_result(execute: EmulatorProcess) -> None:
    client = execute.client()
    args = ["--epochs", "4", "--steps-per-epoch", "10", "--step-sleep", "0.05"]
    outs = {"plain": f"gs://bucket/{unique()}", "maintained": f"gs://bucket/{unique()}"}
    jobs = {
        key: client.create_custom_job(
            parent=PARENT,
            custom_job=make_job(key, output=out, pools=[trainer_pool(args=args)]),
        )
        for key, out in outs.items()
    }
    ckpts = gcs(execute, outs["maintained"]) / "checkpoints"
    wait_for(lambda: latest_checkpoint_step(ckpts) >= 10, what="a checkpoint at step 10")
    before = execute.replicas(job_id(jobs["maintained"]))[0]
    after = execute.maintenance(job_id(jobs["maintained"]))
    assert after["restarts"] == 1
    assert after["pid"] != before["pid"]
    assert not pid_alive(before["pid"])
    for job in jobs.values():
        done = wait_for_state(client, job.name, TERMINAL, timeout=60)
        assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message
    log = log_of(execute, jobs["maintained"])
    assert "host maintenance event" in log
    resumed = [ln for ln in log.splitlines() if "resumed from checkpoint at step" in ln]
    assert len(resumed) == 1 and int(resumed[0].split("step ")[1].split()[0]) >= 10
    weights = {
        key: np.load(gcs(execute, out) / "model" / "model.npz")["weights"]
        for key, out in outs.items()
    }
    assert np.array_equal(weights["plain"], weights["maintained"])


def test_maintenance_needs_a_running_job(execute: EmulatorProcess) -> None:
    client = execute.client()
    created = client.create_custom_job(parent=PARENT, custom_job=make_job("short"))
    wait_for_state(client, created.name, TERMINAL, timeout=60)
    with pytest.raises(RuntimeError, match="no running replicas"):
        execute.maintenance(job_id(created))


def test_service_crash_is_reported_truthfully(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with running_emulator(*EXECUTE_ARGS, state_dir=state) as emu:
        client = emu.client()
        outs = {"lost": f"gs://bucket/{unique()}", "relaunched": f"gs://bucket/{unique()}"}
        slow = ["--epochs", "2", "--steps-per-epoch", "15", "--step-sleep", "0.1"]
        jobs = {
            key: client.create_custom_job(
                parent=PARENT,
                custom_job=make_job(
                    key,
                    output=out,
                    pools=[trainer_pool(args=slow)],
                    restart_on_worker_restart=(key == "relaunched"),
                ),
            )
            for key, out in outs.items()
        }
        ckpts = gcs(emu, outs["relaunched"]) / "checkpoints"
        wait_for(lambda: latest_checkpoint_step(ckpts) >= 5, what="a first checkpoint")
        pids = {key: emu.replicas(job_id(job))[0]["pid"] for key, job in jobs.items()}

        emu.crash()  # kill -9: replicas survive as orphans
        assert all(pid_alive(pid) for pid in pids.values())
        emu.restart()
        client = emu.client()

        assert not any(pid_alive(pid) for pid in pids.values())  # orphans were cleaned up
        lost = client.get_custom_job(name=jobs["lost"].name)
        assert lost.state == S.JOB_STATE_FAILED
        assert lost.error.code == 14
        assert "restart_job_on_worker_restart is false" in lost.error.message

        done = wait_for_state(client, jobs["relaunched"].name, TERMINAL, timeout=60)
        assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message
        assert done.start_time == jobs["relaunched"].start_time or done.start_time.timestamp() > 0
        log = log_of(emu, jobs["relaunched"])
        assert "relaunched after an emulator restart" in log
        assert "resumed from checkpoint at step" in log
        assert emu.replicas(job_id(jobs["relaunched"]))[0]["restarts"] == 1
        assert np.load(gcs(emu, outs["relaunched"]) / "model" / "model.npz")["weights"].shape == (
            8,
        )


def test_graceful_stop_stops_replicas_and_restart_reports_them(tmp_path: Path) -> None:
    with running_emulator(*EXECUTE_ARGS, state_dir=tmp_path / "state") as emu:
        client = emu.client()
        created = client.create_custom_job(
            parent=PARENT, custom_job=make_job("interrupted", pools=[trainer_pool(args=LONG_RUN)])
        )
        wait_for(lambda: "starting from scratch" in log_of(emu, created), what="training start")
        pid = emu.replicas(job_id(created))[0]["pid"]
        assert emu.stop() == 0
        assert not pid_alive(pid)  # a graceful stop leaves no orphans
        emu.restart()
        job = emu.client().get_custom_job(name=created.name)
        assert job.state == S.JOB_STATE_FAILED
        assert "emulator service stopped while the job was running" in job.error.message
