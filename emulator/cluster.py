"""The environment Vertex gives each replica, rebuilt for processes on one machine.

Vertex names pools ``workerpool0``..``workerpool3`` in ``CLUSTER_SPEC`` and maps them to
TensorFlow's ``chief``, ``worker``, ``ps`` and ``evaluator`` in ``TF_CONFIG`` (the evaluator is
never part of TF_CONFIG's ``cluster``). Replica addresses are ``127.0.0.1:<port>`` with one free
port per replica, instead of Vertex's per-VM host names. The replicas of a hyperparameter tuning
trial also learn their trial (``task.trial`` in both, and ``CLOUD_ML_TRIAL_ID``) and where to report
its metric (``CLOUD_ML_HP_METRIC_TAG``, ``CLOUD_ML_HP_METRIC_FILE``, read by ``cloudml-hypertune``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.cloud.aiplatform_v1 import types as aip

from . import protos

__all__ = [
    "HARDWARE_FILE",
    "ReplicaPlan",
    "TrialContext",
    "assign_gpus",
    "detect_gpus",
    "gpus_wanted",
    "hardware_of",
    "hardware_said",
    "plan_replicas",
    "replica_env",
    "too_many_gpus",
    "web_access_uris",
]

TF_TASK_TYPES = ("chief", "worker", "ps", "evaluator")


@dataclass
class ReplicaPlan:
    """Where one replica sits in the cluster."""

    pool: int
    index: int
    port: int
    gpus: list[int] = field(default_factory=list)

    @property
    def name(self) -> str:
        """``workerpool<pool>-<index>``: the replica's name in logs and admin calls."""
        return f"workerpool{self.pool}-{self.index}"

    @property
    def address(self) -> str:
        """``127.0.0.1:<port>``."""
        return f"127.0.0.1:{self.port}"


@dataclass(frozen=True)
class TrialContext:
    """What the replicas of a hyperparameter tuning trial's CustomJob are told about the trial."""

    trial_id: str
    metric_tag: str  # the study's (first) metric id
    metric_dir: Path  # each replica reports into <metric_dir>/<replica>/output.metrics

    def metric_file(self, replica: str) -> Path:
        """Where replica ``replica`` writes its reports (``CLOUD_ML_HP_METRIC_FILE``)."""
        return self.metric_dir / replica / "output.metrics"


def web_access_uris(job: Any) -> dict[str, str]:
    """``CustomJob.web_access_uris`` of a running job with ``job_spec.enable_web_access``.

    One entry per replica, keyed by its name (``workerpool0-0`` for the primary replica,
    ``workerpool1-0``, ``workerpool1-1``... as the v1 reference of ``CustomJob.web_access_uris``
    names them), valued with a URI of the form Vertex AI serves training nodes' web endpoints
    under (``https://<16 hex digits>-dot-<region>.aiplatform-training.googleusercontent.com``,
    the form of the Ray-on-Vertex dashboard addresses in the aiplatform SDK's tests). Nothing
    answers there: the emulator runs no interactive shell. The URIs are the same for a job every
    time (derived from its name), so a client comparing two reads sees no change.
    """
    parts = job.name.split("/")
    region = parts[3] if len(parts) > 3 else "local"
    uris: dict[str, str] = {}
    for pool_index, pool in enumerate(job.job_spec.worker_pool_specs):
        if pool.ByteSize() == 0:
            continue
        for i in range(pool.replica_count):
            replica = f"workerpool{pool_index}-{i}"
            digest = hashlib.sha256(f"{job.name}/{replica}".encode()).hexdigest()[:16]
            uris[replica] = (
                f"https://{digest}-dot-{region}.aiplatform-training.googleusercontent.com"
            )
    return uris


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def plan_replicas(job: Any) -> list[ReplicaPlan]:
    """One plan per replica of every non-empty pool, chief first."""
    plans: list[ReplicaPlan] = []
    for pool_index, pool in enumerate(job.job_spec.worker_pool_specs):
        if pool.ByteSize() == 0:
            continue
        for i in range(pool.replica_count):
            plans.append(ReplicaPlan(pool_index, i, free_port()))
    return plans


def gpus_per_replica(pool: Any) -> int:
    """GPUs one replica of ``pool`` asks for (TPUs are not GPUs and are not emulated)."""
    try:
        name = aip.AcceleratorType(pool.machine_spec.accelerator_type).name
    except ValueError:  # a number no AcceleratorType has (refused at create since)
        return 0
    return int(pool.machine_spec.accelerator_count) if name.startswith("NVIDIA") else 0


def detect_gpus() -> int:
    """Number of GPUs ``nvidia-smi -L`` lists (0 when the tool is missing or fails)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return 0
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    if out.returncode != 0:
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def gpus_wanted(job: Any) -> int:
    """GPUs the whole job asks for: every replica of every pool."""
    return sum(
        gpus_per_replica(pool) * int(pool.replica_count)
        for pool in job.job_spec.worker_pool_specs
        if pool.ByteSize() != 0
    )


def too_many_gpus(job: Any, devices: Sequence[int], listed: bool) -> str | None:
    """Why the job can never run on ``devices`` (it wants more GPUs than exist), or None.

    ``listed``: the devices were given with ``--gpus 0,1,...`` rather than detected.
    """
    wanted = gpus_wanted(job)
    if wanted <= len(devices):
        return None
    per_pool = ", ".join(
        f"workerpool{i}: {pool.replica_count} replica(s) x {gpus_per_replica(pool)}"
        for i, pool in enumerate(job.job_spec.worker_pool_specs)
        if pool.ByteSize() != 0 and gpus_per_replica(pool)
    )
    where = (
        f"the emulator was given {len(devices)} (--gpus {','.join(map(str, devices))})"
        if listed
        else f"this machine has {len(devices)}"
    )
    return (
        f"The job needs {wanted} GPU(s) in total but {where} ({per_pool}). "
        "Start the emulator with --gpus=ignore to run GPU jobs on the CPU."
    )


HARDWARE_FILE = "hardware.json"
"""In a job's directory: what each GPU replica runs on (``hardware_of``), by replica name."""
_HARDWARE_FILE_BYTES = 1 << 16


def hardware_said(job_dir: Path) -> dict[str, dict[str, str]]:
    """What the job's ``HARDWARE_FILE`` says, by replica; empty when it says nothing."""
    path = job_dir / HARDWARE_FILE
    try:
        with path.open("rb") as handle:
            said = json.loads(handle.read(_HARDWARE_FILE_BYTES))
    except (OSError, ValueError):
        return {}
    if not isinstance(said, dict):
        return {}
    return {
        str(k): {str(a): str(b) for a, b in v.items()}
        for k, v in said.items()
        if isinstance(v, dict)
    }


def hardware_of(
    job: Any, plan: ReplicaPlan, *, mode: str, machine_gpus: int
) -> tuple[str, str] | None:
    """What a replica whose pool asks for GPUs computes on, said short (for progress lines)
    and whole (for its log); None for a replica that asks for none.

    ``mode`` is ``--gpus`` (``auto``/``ignore``), ``machine_gpus`` how many GPUs ``nvidia-smi``
    lists. A GPU job runs on the CPU here only with ``--gpus ignore``: where the machine has no
    GPU that is the only way it runs at all, and it must never pass for a GPU run.
    """
    pool = job.job_spec.worker_pool_specs[plan.pool]
    asked = gpus_per_replica(pool)
    if not asked:
        return None
    name = aip.AcceleratorType(pool.machine_spec.accelerator_type).name
    wanted = f"{asked} x {name} asked"
    if plan.gpus and mode != "ignore":
        devices = ",".join(map(str, plan.gpus))
        return (
            f"on GPU {devices}",
            f"{plan.name} runs on GPU device(s) {devices} of this machine ({wanted})",
        )
    if machine_gpus:
        why = (
            f"the emulator ignores GPU requests (--gpus ignore), though this machine has "
            f"{machine_gpus} GPU(s): start it with --gpus auto to use them"
        )
        short = "on the CPU: GPUs ignored (--gpus ignore)"
    else:
        why = "this machine has no GPU (nvidia-smi lists none)"
        short = "on the CPU: no GPU on this machine"
    return (
        f"{short}, {wanted}",
        f"{plan.name} runs on the CPU, not on a GPU ({wanted}): {why}",
    )


def assign_gpus(job: Any, plans: list[ReplicaPlan], devices: Sequence[int]) -> str | None:
    """Give each replica its own devices, in order, out of the job's ``devices``.

    Returns an error message if there are too few (the driver grants a job as many devices as
    it wants, so only a bug gets there).
    """
    pools = list(job.job_spec.worker_pool_specs)
    wanted = sum(gpus_per_replica(pools[p.pool]) for p in plans)
    if wanted > len(devices):
        return f"The job needs {wanted} GPU(s) in total but was given {len(devices)}."
    next_gpu = 0
    for p in plans:
        n = gpus_per_replica(pools[p.pool])
        p.gpus = list(devices[next_gpu : next_gpu + n])
        next_gpu += n
    return None


def _redacted_spec(job: Any) -> dict[str, Any]:
    # The job spec is handed to every replica (as Vertex does), minus env values: they reach the
    # replica through its environment, and trainers commonly print CLUSTER_SPEC to their logs.
    spec = protos.to_dict(job.job_spec, int_enums=False)
    for pool in spec.get("workerPoolSpecs", []):
        for task in ("pythonPackageSpec", "containerSpec"):
            for var in pool.get(task, {}).get("env", []):
                var["value"] = "<redacted>"
    return spec


def replica_env(
    job: Any,
    *,
    job_id: str,
    project: str,
    region: str,
    plans: list[ReplicaPlan],
    me: ReplicaPlan,
    output_dir: str | None,
    gpu_mode: str,
    trial: TrialContext | None = None,
) -> dict[str, str]:
    """The Vertex variables for replica ``me`` (the pool's own ``env`` is added by the caller)."""
    spec = _redacted_spec(job)
    task: dict[str, Any] = {"type": f"workerpool{me.pool}", "index": me.index}
    tf_task: dict[str, Any] = {"type": TF_TASK_TYPES[me.pool], "index": me.index}
    if trial is not None:
        task["trial"] = tf_task["trial"] = trial.trial_id
    by_pool: dict[int, list[str]] = {}
    for p in plans:
        by_pool.setdefault(p.pool, []).append(p.address)
    cluster_spec = {
        "cluster": {f"workerpool{pool}": addrs for pool, addrs in sorted(by_pool.items())},
        "environment": "cloud",
        "task": task,
        "job": spec,
    }
    tf_cluster = {TF_TASK_TYPES[pool]: addrs for pool, addrs in sorted(by_pool.items()) if pool < 3}
    tf_config = {
        "cluster": tf_cluster,
        "task": tf_task,
        "environment": "cloud",
        "job": spec,
    }
    env = {
        "CLUSTER_SPEC": json.dumps(cluster_spec),
        "TF_CONFIG": json.dumps(tf_config),
        "CLOUD_ML_JOB_ID": job_id,
        "CLOUD_ML_PROJECT_ID": project,
        "CLOUD_ML_REGION": region,
        "CUDA_VISIBLE_DEVICES": "" if gpu_mode == "ignore" else ",".join(map(str, me.gpus)),
    }
    if me.gpus and gpu_mode != "ignore":
        # Number devices as nvidia-smi and `docker --gpus device=` do (by PCI bus), so that
        # `--gpus 2,3` means the same two GPUs to a Python replica and to a container.
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    if output_dir is not None:
        base = output_dir.rstrip("/")
        env["AIP_MODEL_DIR"] = f"{base}/model/"
        env["AIP_CHECKPOINT_DIR"] = f"{base}/checkpoints/"
        env["AIP_TENSORBOARD_LOG_DIR"] = f"{base}/logs/"
    if trial is not None:
        env["CLOUD_ML_TRIAL_ID"] = trial.trial_id
        env["CLOUD_ML_HP_METRIC_TAG"] = trial.metric_tag
        env["CLOUD_ML_HP_METRIC_FILE"] = str(trial.metric_file(me.name))
    return env
