"""The program reads the project's Vertex training quotas once and refuses a stack that does not
fit before any job is registered (``training:quota``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from components.costs._quota import QuotaLimits
from components.training_job import TrainingJobInputError
from components.vertex import quotas
from tests.program.harness import JOB_TYPE, TUNING_TYPE, StackRun, run_stack

T4_SPOT = "aiplatform.googleapis.com/custom_model_training_preemptible_nvidia_t4_gpus"
SPOT_CPUS = "aiplatform.googleapis.com/custom_model_training_preemptible_cpus"
CPUS = "aiplatform.googleapis.com/custom_model_training_cpus"


def _limits(values: dict[str, int]) -> QuotaLimits:
    """Limits for us-central1 (every other region: 0)."""
    infos = [
        SimpleNamespace(
            metric=metric,
            quota_id=f"Q{i}",
            dimensions=["region"],
            dimensions_infos=[
                SimpleNamespace(
                    dimensions={"region": "us-central1"},
                    details=SimpleNamespace(value=value),
                    applicable_locations=["us-central1"],
                ),
                SimpleNamespace(
                    dimensions={}, details=SimpleNamespace(value=0), applicable_locations=[]
                ),
            ],
        )
        for i, (metric, value) in enumerate(values.items())
    ]
    return QuotaLimits.from_quota_infos(infos)


def _serve(monkeypatch: pytest.MonkeyPatch, limits: QuotaLimits) -> list[tuple[Any, str, float]]:
    calls: list[tuple[Any, str, float]] = []

    def read(endpoint: Any, project: str, *, retry_deadline: float) -> QuotaLimits:
        calls.append((endpoint, project, retry_deadline))
        return limits

    monkeypatch.setattr(quotas, "read_limits", read)
    return calls


def test_a_stack_that_does_not_fit_fails_before_any_job_is_registered(monkeypatch, logs):
    calls = _serve(monkeypatch, _limits({T4_SPOT: 0, SPOT_CPUS: 100}))
    record = StackRun()
    with pytest.raises(TrainingJobInputError) as info:
        run_stack("dev", record=record)
    message = str(info.value)
    assert "the project's Vertex training quota is short" in message
    assert f"quota {T4_SPOT} in us-central1: the stack's jobs need 1 at once" in message
    assert "the project's limit is 0" in message and "--quota-id=Q0" in message
    assert "training:quota: warn" in message
    assert record.by_type(JOB_TYPE) == []
    assert [project for _, project, _ in calls] == ["gpu-training-dev"]
    assert calls[0][2] == 120.0  # training:retryDeadline's default


def test_the_quota_read_retries_within_training_retry_deadline(monkeypatch, logs):
    calls = _serve(monkeypatch, _limits({T4_SPOT: 4, SPOT_CPUS: 100}))
    run_stack("dev", {"training:retryDeadline": "7"})
    assert [deadline for _, _, deadline in calls] == [7.0]


def test_warn_makes_a_shortfall_a_warning_and_the_jobs_go_ahead(monkeypatch, logs):
    _serve(monkeypatch, _limits({T4_SPOT: 0, SPOT_CPUS: 100}))
    run = run_stack("dev", {"training:quota": "warn"})
    assert len(run.by_type(JOB_TYPE)) == 1
    assert any(T4_SPOT in w and "limit is 0" in w for w in logs["warn"])


def test_a_stack_that_fits_logs_its_quota_table(monkeypatch, logs):
    _serve(monkeypatch, _limits({T4_SPOT: 4, SPOT_CPUS: 100}))
    run_stack("dev")
    [table] = [line for line in logs["info"] if line.startswith("quota (")]
    assert (
        "t4-spot: custom_model_training_preemptible_nvidia_t4_gpus: need 1, limit 4: fits" in table
    )
    assert "t4-spot: custom_model_training_preemptible_cpus: need 4, limit 100: fits" in table


def test_the_local_stack_counts_its_tuning_job_s_parallel_trials(monkeypatch, logs):
    calls = _serve(monkeypatch, _limits({CPUS: 11}))
    record = StackRun()
    with pytest.raises(TrainingJobInputError, match="need 12 at once"):
        run_stack("local", record=record)  # 4 vCPUs + 2 parallel trials x 4
    assert record.by_type(JOB_TYPE) == [] and record.by_type(TUNING_TYPE) == []
    assert calls[0][0].url == "http://127.0.0.1:8642"  # the emulator's Cloud Quotas API


def test_quotas_that_cannot_be_read_are_one_warning_never_a_failed_preview(logs):
    run = run_stack("dev")  # tests/program/conftest.py: read_limits is unavailable
    assert len(run.by_type(JOB_TYPE)) == 1
    [warning] = [w for w in logs["warn"] if "quota" in w]
    assert "not read in tests" in warning and "were not checked" in warning


def test_off_reads_no_quota(monkeypatch, logs):
    calls = _serve(monkeypatch, _limits({}))
    run_stack("dev", {"training:quota": "off"})
    assert calls == []
    assert not [line for line in logs["info"] + logs["warn"] if "quota" in line]


def test_a_bad_quota_mode_names_the_key():
    from components.config import ConfigError

    with pytest.raises(ConfigError, match="training:quota: 'maybe' is not one of error, warn, off"):
        run_stack("dev", {"training:quota": "maybe"})
