"""What a replica's exit does to its job, as Vertex AI documents it (see emulator/execute.py).

The replicas run ``flaky.task``, a package written by the tests: each start of a replica records
itself and exits with the next code of ``--exit-codes`` (the last one repeats) after ``--sleep``.
"""

from __future__ import annotations

import os
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from google.cloud.aiplatform_v1 import types as aip

from emulator.testing import EmulatorProcess, wait_for_state

from .conftest import PARENT, TERMINAL, S, job_id, make_job, unique

FLAKY_TASK = '''
"""A replica that exits as told; every start leaves a file in --starts-dir/<replica>/."""
import argparse
import json
import os
import sys
import time
from pathlib import Path

p = argparse.ArgumentParser()
p.add_argument("--exit-codes", default="0")
p.add_argument("--sleep", type=float, default=0.0)
p.add_argument("--starts-dir", required=True)
a = p.parse_args()
task = json.loads(os.environ["CLUSTER_SPEC"])["task"]
starts = Path(a.starts_dir) / f"{task['type']}-{task['index']}"
starts.mkdir(parents=True, exist_ok=True)
n = len(list(starts.iterdir()))
(starts / f"start-{n}").write_text(str(os.getpid()))
codes = [int(c) for c in a.exit_codes.split(",")]
code = codes[min(n, len(codes) - 1)]
print(f"start {n}: exiting with {code} in {a.sleep}s", flush=True)
time.sleep(a.sleep)
sys.exit(code)
'''


@pytest.fixture(scope="module")
def flaky_package(execute: EmulatorProcess) -> str:
    """A package directory under the emulator's state dir (an allowed root)."""
    root = execute.state_dir / "packages" / unique()
    (root / "flaky").mkdir(parents=True)
    (root / "flaky" / "__init__.py").write_text("")
    (root / "flaky" / "task.py").write_text(textwrap.dedent(FLAKY_TASK))
    return str(root)


def flaky_pool(
    package: str, starts: Path, *, codes: str = "0", sleep: float = 0.0
) -> aip.WorkerPoolSpec:
    return aip.WorkerPoolSpec(
        replica_count=1,
        machine_spec=aip.MachineSpec(machine_type="n1-standard-4"),
        python_package_spec=aip.PythonPackageSpec(
            executor_image_uri="us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest",
            package_uris=[package],
            python_module="flaky.task",
            args=["--exit-codes", codes, "--sleep", str(sleep), "--starts-dir", str(starts)],
        ),
    )


def starts_of(starts: Path, replica: str) -> int:
    where = starts / replica
    return len(list(where.iterdir())) if where.exists() else 0


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"


def wait_until(predicate: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def pools_with_failing(
    package: str, starts: Path, pool_index: int, codes: str
) -> list[aip.WorkerPoolSpec]:
    """A long-running chief, and one replica in pool ``pool_index`` exiting with ``codes``."""
    pools = [flaky_pool(package, starts, sleep=60)]
    pools += [aip.WorkerPoolSpec() for _ in range(1, pool_index)]  # Vertex's empty placeholders
    pools.append(flaky_pool(package, starts, codes=codes, sleep=0.2))
    return pools


@pytest.mark.parametrize(
    ("pool_index", "role", "restart_job_on_worker_restart"),
    [
        (1, "workerpool1-0", False),
        (1, "workerpool1-0", True),
        (2, "workerpool2-0", False),  # a parameter server
        (3, "workerpool3-0", True),  # an evaluator
    ],
)
def test_a_failing_replica_of_any_pool_fails_the_job(
    execute: EmulatorProcess,
    flaky_package: str,
    tmp_path: Path,
    pool_index: int,
    role: str,
    restart_job_on_worker_restart: bool,
) -> None:
    client = execute.client()
    pools = pools_with_failing(flaky_package, tmp_path, pool_index, "3")
    job = make_job(
        "worker-fails", pools=pools, restart_on_worker_restart=restart_job_on_worker_restart
    )
    created = client.create_custom_job(parent=PARENT, custom_job=job)
    done = wait_for_state(client, created.name, TERMINAL, timeout=30)
    assert done.state == S.JOB_STATE_FAILED
    assert done.error.code == 3  # what Vertex reports for a replica's non-zero exit
    log_path = execute.state_dir / "jobs" / job_id(created) / "logs" / f"{role}.log"
    assert done.error.message == (
        f"The replica {role} exited with a non-zero status of 3. Termination reason: Error. To "
        f"find out more about why your job exited please check the logs: {log_path}"
    )
    replicas = {r["replica"]: r for r in execute.replicas(job_id(created))}
    assert replicas[role]["exitCode"] == 3 and replicas[role]["state"] == "failed"
    assert replicas["workerpool0-0"]["state"] == "stopped"  # the chief did not run on
    assert not pid_alive(replicas["workerpool0-0"]["pid"])
    # A user code exception is a permanent error: nothing was restarted, whatever the flag says.
    assert starts_of(tmp_path, role) == 1 and starts_of(tmp_path, "workerpool0-0") == 1
    assert all(r["restarts"] == 0 for r in replicas.values())
    assert (done.end_time - done.start_time).total_seconds() < 20


def test_an_evaluator_exiting_zero_does_not_end_the_job(
    execute: EmulatorProcess, flaky_package: str, tmp_path: Path
) -> None:
    client = execute.client()
    pools = [flaky_pool(flaky_package, tmp_path, sleep=2)]
    pools += [aip.WorkerPoolSpec(), aip.WorkerPoolSpec()]
    pools.append(flaky_pool(flaky_package, tmp_path, codes="0"))
    created = client.create_custom_job(parent=PARENT, custom_job=make_job("eval", pools=pools))
    done = wait_for_state(client, created.name, TERMINAL, timeout=30)
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message
    replicas = {r["replica"]: r for r in execute.replicas(job_id(created))}
    assert replicas["workerpool3-0"]["exitCode"] == 0
    assert replicas["workerpool0-0"]["exitCode"] == 0  # the chief ran to its end
    assert (done.end_time - done.start_time).total_seconds() >= 2


def test_a_possibly_transient_exit_restarts_the_whole_job(
    execute: EmulatorProcess, flaky_package: str, tmp_path: Path
) -> None:
    client = execute.client()
    pools = [
        flaky_pool(flaky_package, tmp_path, sleep=3),
        flaky_pool(flaky_package, tmp_path, codes="139,0", sleep=0.2),  # SIGSEGV, then fine
    ]
    created = client.create_custom_job(parent=PARENT, custom_job=make_job("segv", pools=pools))
    done = wait_for_state(client, created.name, TERMINAL, timeout=60)
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message
    # Every replica was started again, the chief included.
    assert starts_of(tmp_path, "workerpool0-0") == 2
    assert starts_of(tmp_path, "workerpool1-0") == 2
    replicas = {r["replica"]: r for r in execute.replicas(job_id(created))}
    assert {name: r["restarts"] for name, r in replicas.items()} == {
        "workerpool0-0": 1,
        "workerpool1-0": 1,
    }
    log = Path(replicas["workerpool0-0"]["logPath"]).read_text()
    assert "workerpool1-0 exited with a non-zero status of 139" in log
    assert "may be transient (job retry 1 of 3): restarting every replica" in log


def test_transient_exits_fail_the_job_after_three_job_retries(
    execute: EmulatorProcess, flaky_package: str, tmp_path: Path
) -> None:
    client = execute.client()
    pools = pools_with_failing(flaky_package, tmp_path, 1, "134")  # SIGABRT every time
    created = client.create_custom_job(parent=PARENT, custom_job=make_job("abrt", pools=pools))
    done = wait_for_state(client, created.name, TERMINAL, timeout=90)
    assert done.state == S.JOB_STATE_FAILED
    assert done.error.code == 3
    assert "The replica workerpool1-0 exited with a non-zero status of 134" in done.error.message
    assert "restarted 3 time(s) after exit codes that may be transient" in done.error.message
    assert starts_of(tmp_path, "workerpool1-0") == 4  # the first run and three retries


def test_disable_retries_turns_job_retries_off(
    execute: EmulatorProcess, flaky_package: str, tmp_path: Path
) -> None:
    client = execute.client()
    job = make_job("no-retries", pools=pools_with_failing(flaky_package, tmp_path, 1, "139"))
    job.job_spec.scheduling = aip.Scheduling(disable_retries=True)
    created = client.create_custom_job(parent=PARENT, custom_job=job)
    done = wait_for_state(client, created.name, TERMINAL, timeout=30)
    assert done.state == S.JOB_STATE_FAILED
    assert "exited with a non-zero status of 139" in done.error.message
    assert "restarted" not in done.error.message
    assert starts_of(tmp_path, "workerpool1-0") == 1


@pytest.mark.parametrize("restart_job_on_worker_restart", [False, True])
def test_maintenance_restarts_the_replica_or_with_the_flag_the_whole_job(
    execute: EmulatorProcess,
    flaky_package: str,
    tmp_path: Path,
    restart_job_on_worker_restart: bool,
) -> None:
    client = execute.client()
    pools = [
        flaky_pool(flaky_package, tmp_path, sleep=4),
        flaky_pool(flaky_package, tmp_path, sleep=60),
    ]
    job = make_job(
        "maintained", pools=pools, restart_on_worker_restart=restart_job_on_worker_restart
    )
    created = client.create_custom_job(parent=PARENT, custom_job=job)
    wait_until(
        lambda: starts_of(tmp_path, "workerpool0-0") and starts_of(tmp_path, "workerpool1-0")
    )
    before = {r["replica"]: r for r in execute.replicas(job_id(created))}
    result = execute.maintenance(job_id(created), "workerpool0-0")
    assert result["replica"] == "workerpool0-0" and result["restarts"] == 1
    assert result["previousPid"] == before["workerpool0-0"]["pid"]
    assert result["previousExitCode"] == -15  # SIGTERM
    assert result["jobRestarted"] is restart_job_on_worker_restart
    restarted = {r["replica"]: r for r in result["restartedReplicas"]}
    after = {r["replica"]: r for r in execute.replicas(job_id(created))}
    if restart_job_on_worker_restart:
        assert set(restarted) == {"workerpool0-0", "workerpool1-0"}
        assert after["workerpool1-0"]["pid"] != before["workerpool1-0"]["pid"]
        assert after["workerpool1-0"]["restarts"] == 1
        assert not pid_alive(before["workerpool1-0"]["pid"])
    else:
        assert set(restarted) == {"workerpool0-0"}
        assert after["workerpool1-0"]["pid"] == before["workerpool1-0"]["pid"]
        assert after["workerpool1-0"]["restarts"] == 0
    done = wait_for_state(client, created.name, TERMINAL, timeout=60)
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message
    assert starts_of(tmp_path, "workerpool0-0") == 2
    assert starts_of(tmp_path, "workerpool1-0") == (2 if restart_job_on_worker_restart else 1)
