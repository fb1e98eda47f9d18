"""The pack's opt-in ``quota-fits`` rule: the stack's jobs against the quotas the last preview
read (``components.costs._quota`` snapshot), without the engine and without the quota client."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from components import load_catalog
from components.costs._quota import QuotaLimits, write_snapshot
from components.policies import PolicyJob, job_from_props, quota_fits

TYPE = "pulumi-python:dynamic/vertex:TrainingJob"
TUNING = "pulumi-python:dynamic/vertex:HyperparameterTuningJob"
T4 = "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"
NOW = 1_800_000_000.0


def _pool(gpus: int) -> dict[str, Any]:
    return {
        "machineSpec": {
            "machineType": "n1-standard-4",
            "acceleratorType": "NVIDIA_TESLA_T4",
            "acceleratorCount": gpus,
        },
        "replicaCount": 1,
        "containerSpec": {"imageUri": "img"},
    }


def _job(name: str, gpus: int, project: str = "proj") -> PolicyJob:
    props = {
        "spec": {"workerPoolSpecs": [_pool(gpus)]},
        "region": "us-central1",
        "project": project,
    }
    found = job_from_props(name, TYPE, props)
    assert found is not None and found.project == project
    return found


def _tuning(name: str, parallel: int, gpus: int) -> PolicyJob:
    spec = {
        "maxTrialCount": 8,
        "parallelTrialCount": parallel,
        "studySpec": {
            "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
            "parameters": [
                {"parameterId": "lr", "doubleValueSpec": {"minValue": 0.1, "maxValue": 1}}
            ],
        },
        "trialJobSpec": {"workerPoolSpecs": [_pool(gpus)]},
    }
    found = job_from_props(name, TUNING, {"spec": spec, "region": "us-central1", "project": "proj"})
    assert found is not None
    return found


def _recorded(root: Path, t4_limit: int, *, at: float = NOW) -> None:
    info = SimpleNamespace(
        metric=T4,
        quota_id="CustomModelTrainingT4GPUsPerProjectPerRegion",
        dimensions=["region"],
        dimensions_infos=[
            SimpleNamespace(
                dimensions={"region": "us-central1"},
                details=SimpleNamespace(value=t4_limit),
                applicable_locations=["us-central1"],
            )
        ],
    )
    write_snapshot(root, "proj", QuotaLimits.from_quota_infos([info]), at)


def test_disabled_unless_the_stack_enables_it(tmp_path):
    assert quota_fits([_job("a", 4)], {}, load_catalog(), root=tmp_path, now=NOW) == []


def test_jobs_that_fit_together_pass_and_one_more_is_a_violation(tmp_path):
    _recorded(tmp_path, 6)
    on = {"enabled": True}
    jobs = [_job("a", 2), _tuning("sweep", 2, 2)]  # 2 + 2 trials x 2
    assert quota_fits(jobs, on, load_catalog(), root=tmp_path, now=NOW + 60) == []
    [message] = quota_fits([*jobs, _job("b", 1)], on, load_catalog(), root=tmp_path, now=NOW + 60)
    assert f"quota {T4} in us-central1: the stack's jobs need 7 at once" in message
    assert "the project's limit is 6" in message and "limits read 1 min ago" in message
    assert "sweep (2 parallel trials x 1 x 2 NVIDIA_TESLA_T4: 4)" in message


def test_no_recorded_or_stale_quotas_cannot_be_checked(tmp_path):
    on = {"enabled": True, "maxSnapshotAgeMinutes": 30}
    [missing] = quota_fits([_job("a", 1)], on, load_catalog(), root=tmp_path, now=NOW)
    assert (
        missing
        == "cannot check the Vertex training quotas of project proj: no preview recorded its quotas"
    )
    _recorded(tmp_path, 8, at=NOW - 3600)
    [stale] = quota_fits([_job("a", 1)], on, load_catalog(), root=tmp_path, now=NOW)
    assert "read 60 min ago, more than 30" in stale
    [odd] = quota_fits([_job("a", 1, project="../etc")], on, load_catalog(), root=tmp_path, now=NOW)
    assert "'../etc' is not a project ID" in odd


def test_previews_of_one_project_at_once_each_leave_a_whole_snapshot(tmp_path):
    """Threads standing for two previews write the same project's snapshot 200 times each:
    none fails, the rule reads a whole snapshot, and no temporary file is left."""
    errors: list[BaseException] = []

    def write(limit: int) -> None:
        try:
            for _ in range(200):
                _recorded(tmp_path, limit)
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    [found] = quota_fits([_job("a", 3)], {"enabled": True}, load_catalog(), root=tmp_path, now=NOW)
    assert "the stack's jobs need 3 at once" in found  # a limit of 1 or 2, read whole
    assert "the project's limit is 1" in found or "the project's limit is 2" in found
    assert [p.name for p in tmp_path.rglob("*.tmp")] == []


def test_the_pack_reads_the_snapshot_where_the_program_writes_it() -> None:
    """The program writes under the project directory (the folder holding components/, as
    ``write_snapshot``'s root); the pack's default root must be that folder, wherever the
    policies module sits in the package."""
    from components.policies import PROJECT_DIR

    assert Path(__file__).resolve().parents[2] == PROJECT_DIR
    assert (PROJECT_DIR / "components" / "policies.py").is_file()
