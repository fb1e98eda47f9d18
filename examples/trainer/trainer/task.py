"""Entry point (``python -m trainer.task``): linear regression trained with mini-batch SGD.

The run is deterministic for a given ``--seed``: the data set is generated from the seed and the
mini-batch of step ``s`` is drawn from a generator seeded with ``(seed, s)``, so a run that is
killed and resumed from a checkpoint ends with bit-identical weights to one that never stopped.
That is what lets the emulator's host-maintenance test compare final weights exactly.

As a trial of a hyperparameter tuning job (``CLOUD_ML_TRIAL_ID`` is set), the chief reports the
loss after every epoch with ``cloudml-hypertune``, under the tag ``CLOUD_ML_HP_METRIC_TAG`` names
(default ``loss``). Tuned values arrive as ``--<parameter_id>=<value>``: the flags below accept
both ``--learning-rate`` and ``--learning_rate`` spellings.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

log = logging.getLogger("trainer")

FloatArray = npt.NDArray[np.float64]

_CHECKPOINT_PREFIX = "ckpt-"
_CHECKPOINTS_KEPT = 3


@dataclass(frozen=True)
class Role:
    """This replica's place in the cluster, as TF_CONFIG describes it."""

    task_type: str
    index: int

    @property
    def is_chief(self) -> bool:
        """True for the replica that owns the model (Vertex's worker pool 0)."""
        return self.task_type in ("chief", "master")

    @property
    def name(self) -> str:
        """``<type>-<index>``, used for per-replica file names."""
        return f"{self.task_type}-{self.index}"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse the trainer's command line."""
    p = argparse.ArgumentParser(prog="trainer.task", description=__doc__)
    p.add_argument("--job-dir", default=None, help="output root when AIP_* dirs are not set")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps-per-epoch", "--steps_per_epoch", type=int, default=20)
    p.add_argument(
        "--step-sleep", "--step_sleep", type=float, default=0.0, help="seconds to sleep per step"
    )
    p.add_argument("--batch-size", "--batch_size", type=int, default=32)
    p.add_argument("--learning-rate", "--learning_rate", "--lr", type=float, default=0.05)
    p.add_argument("--samples", type=int, default=512)
    p.add_argument("--features", type=int, default=8)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--checkpoint-every", type=int, default=5, help="steps between checkpoints")
    p.add_argument(
        "--wait-for-replicas",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="chief: wait up to this long for every replica in TF_CONFIG to report in",
    )
    p.add_argument("--fail", action="store_true", help="exit 3 right away (to test failures)")
    args = p.parse_args(argv)
    for field in ("epochs", "steps_per_epoch", "batch_size", "samples", "features"):
        if getattr(args, field) <= 0:
            p.error(f"--{field.replace('_', '-')} must be positive")
    if args.checkpoint_every <= 0:
        p.error("--checkpoint-every must be positive")
    return args


def read_role() -> Role:
    """Read the task type and index from TF_CONFIG; a single replica without it is the chief."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return Role("chief", 0)
    task = json.loads(raw).get("task", {})
    return Role(str(task.get("type", "chief")), int(task.get("index", 0)))


def output_dirs(job_dir: str | None) -> tuple[Path, Path]:
    """Return (model dir, checkpoint dir). AIP_MODEL_DIR / AIP_CHECKPOINT_DIR win over --job-dir."""
    base = Path(job_dir) if job_dir else Path.cwd() / "output"
    model = os.environ.get("AIP_MODEL_DIR")
    ckpt = os.environ.get("AIP_CHECKPOINT_DIR")
    return (Path(model) if model else base / "model", Path(ckpt) if ckpt else base / "checkpoints")


def make_data(seed: int, samples: int, features: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Synthetic regression problem: returns (X, y, true weights)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(samples, features))
    true_w = rng.normal(size=features)
    y = x @ true_w + 0.01 * rng.normal(size=samples)
    return x, y, true_w


def _atomic_write(path: Path, write: Any) -> None:
    """Write through a temporary file in the same directory, then rename over ``path``.

    A replica killed mid-write (host maintenance) must never leave a truncated checkpoint that the
    next start would try to resume from.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_checkpoint(ckpt_dir: Path, step: int, weights: FloatArray) -> Path:
    """Save ``weights`` after ``step`` completed steps and prune old checkpoints."""
    path = ckpt_dir / f"{_CHECKPOINT_PREFIX}{step:08d}.npz"
    _atomic_write(path, lambda fh: np.savez(fh, weights=weights, step=np.int64(step)))
    for old in sorted(ckpt_dir.glob(f"{_CHECKPOINT_PREFIX}*.npz"))[:-_CHECKPOINTS_KEPT]:
        old.unlink(missing_ok=True)
    return path


def latest_checkpoint(ckpt_dir: Path) -> tuple[int, FloatArray] | None:
    """Return (step, weights) of the newest readable checkpoint, or None."""
    for path in sorted(ckpt_dir.glob(f"{_CHECKPOINT_PREFIX}*.npz"), reverse=True):
        try:
            with np.load(path) as data:
                return int(data["step"]), np.array(data["weights"], dtype=np.float64)
        except (OSError, ValueError, KeyError) as exc:
            log.warning("skipping unreadable checkpoint %s: %s", path.name, exc)
    return None


class MetricReporter:
    """Reports the loss to the tuning service when this run is a hyperparameter tuning trial."""

    def __init__(self) -> None:
        self.tag = os.environ.get("CLOUD_ML_HP_METRIC_TAG") or "loss"
        self._hypertune: Any = None
        if os.environ.get("CLOUD_ML_TRIAL_ID") is None:
            return
        try:
            import hypertune  # type: ignore[import-untyped]
        except ImportError:
            log.warning("cloudml-hypertune is not installed: the tuning metric is not reported")
            return
        self._hypertune = hypertune.HyperTune()

    def report(self, value: float, step: int) -> None:
        """Report ``value`` at ``step`` (nothing outside a tuning trial)."""
        if self._hypertune is not None:
            self._hypertune.report_hyperparameter_tuning_metric(
                hyperparameter_metric_tag=self.tag, metric_value=value, global_step=step
            )


def train(args: argparse.Namespace, model_dir: Path, ckpt_dir: Path) -> dict[str, Any]:
    """Run (or resume) the training loop; returns the final metrics."""
    x, y, true_w = make_data(args.seed, args.samples, args.features)
    total = args.epochs * args.steps_per_epoch
    resumed = latest_checkpoint(ckpt_dir)
    if resumed is None:
        step, w = 0, np.zeros(args.features)
        log.info("starting from scratch: %d steps", total)
    else:
        step, w = resumed
        log.info("resumed from checkpoint at step %d of %d", step, total)
    reporter = MetricReporter()
    reported = False
    while step < total:
        batch = np.random.default_rng([args.seed, step]).integers(0, args.samples, args.batch_size)
        xb, yb = x[batch], y[batch]
        grad = 2.0 * xb.T @ (xb @ w - yb) / args.batch_size
        w = w - args.learning_rate * grad
        step += 1
        if step % args.steps_per_epoch == 0:
            loss = float(np.mean((x @ w - y) ** 2))
            log.info("epoch %d step %d loss %.6f", step // args.steps_per_epoch, step, loss)
            reporter.report(loss, step)
            reported = True
        if step % args.checkpoint_every == 0 or step == total:
            save_checkpoint(ckpt_dir, step, w)
        if args.step_sleep:
            time.sleep(args.step_sleep)
    metrics = {
        "steps": total,
        "loss": float(np.mean((x @ w - y) ** 2)),
        "weight_error": float(np.linalg.norm(w - true_w)),
    }
    if not reported:
        # Resumed from a finished checkpoint (a trial re-run over the same output directory):
        # no epoch ran here, yet the tuning service still needs this trial's measurement.
        reporter.report(metrics["loss"], total)
    _atomic_write(model_dir / "model.npz", lambda fh: np.savez(fh, weights=w))
    _atomic_write(model_dir / "metrics.json", lambda fh: fh.write(json.dumps(metrics).encode()))
    log.info("wrote model to %s: %s", model_dir, metrics)
    return metrics


def record_role(role: Role, model_dir: Path) -> None:
    """Write what this replica was told about the cluster next to the model directory.

    Tests (and curious users) read ``<output>/replicas/<type>-<index>.json`` to check that every
    replica got the right TF_CONFIG and CLUSTER_SPEC.
    """
    info = {
        "role": role.name,
        "tf_config": json.loads(os.environ.get("TF_CONFIG") or "{}"),
        "cluster_spec": json.loads(os.environ.get("CLUSTER_SPEC") or "{}"),
        "job_id": os.environ.get("CLOUD_ML_JOB_ID"),
        "project": os.environ.get("CLOUD_ML_PROJECT_ID"),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "trial_id": os.environ.get("CLOUD_ML_TRIAL_ID"),
    }
    path = model_dir.parent / "replicas" / f"{role.name}.json"
    _atomic_write(path, lambda fh: fh.write(json.dumps(info, indent=2).encode()))


def wait_for_replicas(model_dir: Path, timeout: float) -> bool:
    """Chief only: wait until every replica of TF_CONFIG's cluster wrote its role file.

    A stand-in for the barrier a real distributed framework has at start-up.
    """
    cluster = json.loads(os.environ.get("TF_CONFIG") or "{}").get("cluster", {})
    expected = [f"{t}-{i}" for t, addrs in cluster.items() for i in range(len(addrs))]
    deadline = time.monotonic() + timeout
    while True:
        missing = [
            n for n in expected if not (model_dir.parent / "replicas" / f"{n}.json").exists()
        ]
        if not missing:
            log.info("all %d replicas reported", len(expected))
            return True
        if time.monotonic() > deadline:
            log.error("replicas that never reported: %s", ", ".join(missing))
            return False
        time.sleep(0.05)


def main(argv: list[str] | None = None) -> int:
    """Train as the chief, or log the role and exit as any other replica."""
    logging.basicConfig(
        level=logging.INFO, stream=sys.stdout, format="%(asctime)s %(levelname)s %(message)s"
    )
    args = parse_args(argv)
    role = read_role()
    model_dir, ckpt_dir = output_dirs(args.job_dir)
    log.info("role %s (task type %s, index %d)", role.name, role.task_type, role.index)
    if args.fail:
        log.error("--fail given: exiting with status 3")
        return 3
    record_role(role, model_dir)
    if not role.is_chief:
        # This trainer is not really distributed: the chief does all the work and the other
        # replicas only prove they were started with the right cluster description.
        log.info("%s has no share of the work; exiting", role.name)
        return 0
    if args.wait_for_replicas > 0 and not wait_for_replicas(model_dir, args.wait_for_replicas):
        log.error("not every replica reported within %gs", args.wait_for_replicas)
        return 4
    train(args, model_dir, ckpt_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
