"""The example trainer on its own (in-process, no emulator)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from .conftest import TRAINER_DIR

# The trainer is an example package, not installed into the venv: import it from its directory.
if str(TRAINER_DIR) not in sys.path:
    sys.path.insert(0, str(TRAINER_DIR))

from trainer import task


@pytest.fixture(autouse=True)
def _no_vertex_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AIP_MODEL_DIR", "AIP_CHECKPOINT_DIR", "TF_CONFIG", "CLUSTER_SPEC"):
        monkeypatch.delenv(name, raising=False)


def run(job_dir: Path, *extra: str) -> int:
    return task.main(["--job-dir", str(job_dir), "--steps-per-epoch", "10", *extra])


def weights(job_dir: Path) -> np.ndarray:
    with np.load(job_dir / "model" / "model.npz") as data:
        return np.asarray(data["weights"])


def test_training_reduces_the_loss(tmp_path: Path) -> None:
    assert run(tmp_path, "--epochs", "5") == 0
    metrics = json.loads((tmp_path / "model" / "metrics.json").read_text())
    assert metrics["steps"] == 50
    _, y, true_w = task.make_data(42, 512, 8)
    assert metrics["loss"] < float(np.mean(y**2)) / 10
    assert metrics["weight_error"] < 0.5 * float(np.linalg.norm(true_w))


def test_resuming_from_a_checkpoint_gives_identical_weights(tmp_path: Path) -> None:
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert run(straight, "--epochs", "3") == 0
    # Stop after 1 epoch, then continue to 3: the second run starts from the step-10 checkpoint.
    assert run(resumed, "--epochs", "1") == 0
    assert run(resumed, "--epochs", "3") == 0
    assert np.array_equal(weights(straight), weights(resumed))
    assert not np.array_equal(weights(straight), np.zeros(8))


def test_unreadable_checkpoint_is_skipped(tmp_path: Path) -> None:
    assert run(tmp_path, "--epochs", "1") == 0
    ckpts = tmp_path / "checkpoints"
    (ckpts / "ckpt-99999999.npz").write_bytes(b"truncated")
    step, w = task.latest_checkpoint(ckpts) or (0, None)
    assert step == 10 and w is not None and np.array_equal(w, weights(tmp_path))


def test_checkpoints_are_pruned_and_atomic(tmp_path: Path) -> None:
    assert run(tmp_path, "--epochs", "3", "--checkpoint-every", "2") == 0
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert names == ["ckpt-00000026.npz", "ckpt-00000028.npz", "ckpt-00000030.npz"]


def test_aip_model_dir_wins_over_job_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIP_MODEL_DIR", str(tmp_path / "aip-model") + "/")
    monkeypatch.setenv("AIP_CHECKPOINT_DIR", str(tmp_path / "aip-ckpt") + "/")
    assert run(tmp_path / "jobdir", "--epochs", "1") == 0
    assert (tmp_path / "aip-model" / "model.npz").exists()
    assert (tmp_path / "aip-ckpt" / "ckpt-00000010.npz").exists()
    assert not (tmp_path / "jobdir" / "model").exists()


def test_worker_reports_and_does_not_train(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tf_config = {
        "cluster": {"chief": ["h:1"], "worker": ["h:2"]},
        "task": {"type": "worker", "index": 0},
    }
    monkeypatch.setenv("TF_CONFIG", json.dumps(tf_config))
    assert run(tmp_path) == 0
    report = json.loads((tmp_path / "replicas" / "worker-0.json").read_text())
    assert report["tf_config"]["task"] == {"type": "worker", "index": 0}
    assert not (tmp_path / "model").exists()


def test_chief_gives_up_when_replicas_never_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tf_config = {
        "cluster": {"chief": ["h:1"], "worker": ["h:2"]},
        "task": {"type": "chief", "index": 0},
    }
    monkeypatch.setenv("TF_CONFIG", json.dumps(tf_config))
    assert run(tmp_path, "--wait-for-replicas", "0.2") == 4
    assert not (tmp_path / "model" / "model.npz").exists()


def test_bad_arguments_name_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        task.parse_args(["--epochs", "0"])
    assert info.value.code == 2
    assert "--epochs must be positive" in capsys.readouterr().err


def test_a_trial_resumed_from_a_finished_checkpoint_still_reports_its_metric(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_dir, metric_file = tmp_path / "job", tmp_path / "hypertune" / "output.metrics"
    assert run(job_dir, "--epochs", "2") == 0  # an earlier run finished: its checkpoint is last
    monkeypatch.setenv("CLOUD_ML_TRIAL_ID", "3")
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_TAG", "loss")
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(metric_file))
    assert run(job_dir, "--epochs", "2") == 0  # no step left to run
    reports = [json.loads(line) for line in metric_file.read_text().splitlines() if line]
    final_loss = json.loads((job_dir / "model" / "metrics.json").read_text())["loss"]
    assert len(reports) == 1
    assert float(reports[0]["loss"]) == pytest.approx(final_loss)
    assert int(reports[0]["global_step"]) == 20
