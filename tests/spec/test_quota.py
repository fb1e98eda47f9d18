"""The quota table (``components.costs._quota``): needs per job and metric, limits as the Cloud Quotas API
lists them, shortfalls with how to request more and where the job fits, and the catalog data."""

from __future__ import annotations

import csv
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from components.costs._quota import (
    QuotaLimits,
    compare,
    job_needs,
    load_quota_metrics,
    refusal_message,
    refused_metrics,
)
from components.rules._catalog import CATALOG_DIR, load_catalog
from components.rules._spec import JobSpec
from components.rules._tuning_spec import TuningJobSpec

T4 = "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"
T4_SPOT = "aiplatform.googleapis.com/custom_model_training_preemptible_nvidia_t4_gpus"
CPUS = "aiplatform.googleapis.com/custom_model_training_cpus"
SPOT_CPUS = "aiplatform.googleapis.com/custom_model_training_preemptible_cpus"
A100 = "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus"


def _pool(replicas: int, gpus: int, accelerator: str = "NVIDIA_TESLA_T4") -> dict[str, Any]:
    machine: dict[str, Any] = {"machineType": "n1-standard-8"}
    if gpus:
        machine.update(acceleratorType=accelerator, acceleratorCount=gpus)
    return {
        "machineSpec": machine,
        "replicaCount": replicas,
        "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/trainer:1"},
    }


def _job(*pools: dict[str, Any], strategy: str | None = None) -> JobSpec:
    document: dict[str, Any] = {"workerPoolSpecs": list(pools)}
    if strategy:
        document["scheduling"] = {"strategy": strategy}
    return JobSpec.model_validate(document)


def _tuning(parallel: int, trial: JobSpec) -> TuningJobSpec:
    return TuningJobSpec.model_validate(
        {
            "displayName": "tune",
            "maxTrialCount": 10,
            "parallelTrialCount": parallel,
            "studySpec": {
                "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
                "parameters": [
                    {"parameterId": "lr", "doubleValueSpec": {"minValue": 0.01, "maxValue": 0.1}}
                ],
            },
            "trialJobSpec": trial.to_document(),
        }
    )


def _info(metric: str, quota_id: str, regions: dict[str, int], default: int | None) -> Any:
    """A QuotaInfo as the client returns it (attributes only)."""
    entries = [
        SimpleNamespace(
            dimensions={"region": r}, details=SimpleNamespace(value=v), applicable_locations=[r]
        )
        for r, v in regions.items()
    ]
    if default is not None:
        entries.append(
            SimpleNamespace(
                dimensions={}, details=SimpleNamespace(value=default), applicable_locations=[]
            )
        )
    return SimpleNamespace(
        metric=metric, quota_id=quota_id, dimensions=["region"], dimensions_infos=entries
    )


LIMITS = QuotaLimits.from_quota_infos(
    [
        _info(T4, "CustomModelTrainingT4GPUsPerProjectPerRegion", {"us-central1": 4}, 16),
        _info(T4_SPOT, "CustomModelTrainingPreemptibleT4GPUsPerProjectPerRegion", {}, 0),
        _info(CPUS, "CustomModelTrainingCPUsPerProjectPerRegion", {"us-east1": 8}, -1),
        _info(A100, "CustomModelTrainingA100GPUsPerProjectPerRegion", {"us-central1": 8}, 0),
    ]
)


def _needs(name: str, spec: JobSpec | TuningJobSpec) -> list[Any]:
    needs, unchecked = job_needs(name, spec, load_catalog(), load_quota_metrics())
    assert unchecked == []
    return needs


def _by_metric(needs: list[Any]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for need in needs:
        totals[need.metric.metric] = totals.get(need.metric.metric, 0) + need.amount
    return totals


def test_a_single_job_needs_its_gpus_and_its_vcpus():
    assert _by_metric(_needs("one", _job(_pool(1, 2)))) == {T4: 2, CPUS: 8}


def test_a_multi_pool_job_adds_every_pool_s_replicas():
    spec = _job(_pool(1, 1), _pool(3, 2), {}, _pool(2, 0))
    assert _by_metric(_needs("multi", spec)) == {T4: 1 + 3 * 2, CPUS: (1 + 3 + 2) * 8}


@pytest.mark.parametrize("strategy", ["SPOT", "FLEX_START"])
def test_spot_and_flex_start_jobs_need_the_preemptible_metrics(strategy):
    assert _by_metric(_needs("spot", _job(_pool(1, 4), strategy=strategy))) == {
        T4_SPOT: 4,
        SPOT_CPUS: 8,
    }


def test_a_tuning_job_needs_its_parallel_trials():
    needs = _needs("tune", _tuning(3, _job(_pool(1, 2))))
    assert _by_metric(needs) == {T4: 6, CPUS: 24}
    assert all(n.how.startswith("3 parallel trials x ") for n in needs)


def test_an_accelerator_without_a_known_metric_is_reported_not_guessed():
    spec = JobSpec.model_validate(
        {
            "workerPoolSpecs": [
                {
                    "machineSpec": {
                        "machineType": "cloud-tpu",
                        "acceleratorType": "TPU_V3",
                        "acceleratorCount": 8,
                    },
                    "replicaCount": 1,
                    "containerSpec": {"imageUri": "i"},
                }
            ]
        }
    )
    needs, unchecked = job_needs("tpu", spec, load_catalog(), load_quota_metrics())
    assert needs == []
    assert unchecked == ["tpu: pool 0: no Vertex training quota metric known for TPU_V3"]


def test_limits_come_from_the_region_s_entry_else_the_default():
    assert LIMITS.limit(T4, "us-central1") == 4
    assert LIMITS.limit(T4, "europe-west4") == 16
    assert LIMITS.limit(CPUS, "us-central1") == -1
    assert LIMITS.limit("aiplatform.googleapis.com/unknown", "us-central1") is None
    assert QuotaLimits.from_json(LIMITS.to_json()) == LIMITS


def test_several_jobs_of_a_stack_add_up_and_a_shortfall_says_how_to_get_more():
    needs = _needs("a", _job(_pool(1, 2))) + _needs("b", _tuning(2, _job(_pool(1, 1))))
    report = compare("my-project", "us-central1", needs, LIMITS, load_catalog())
    rows = {row.metric.metric: row for row in report.rows}
    assert rows[T4].need == 4 and rows[T4].limit == 4 and rows[T4].fits is True
    assert rows[CPUS].fits is True  # unlimited
    assert report.problems(LIMITS) == []
    more = needs + _needs("c", _job(_pool(1, 1)))
    report = compare("my-project", "us-central1", more, LIMITS, load_catalog())
    [problem] = report.problems(LIMITS)
    assert f"quota {T4} in us-central1: the stack's jobs need 5 at once" in problem
    assert "the project's limit is 4" in problem
    assert "--quota-id=CustomModelTrainingT4GPUsPerProjectPerRegion" in problem
    assert "--preferred-value=5 --dimensions=region=us-central1 --project=my-project" in problem
    # each job alone fits where the default (16) holds and a zone offers T4s
    assert "c fits now in: " in problem and "europe-west4" in report.alternatives["c"]
    assert "us-central1" not in report.alternatives["c"]
    # Where Vertex AI trains on T4s, not where Compute Engine's zones hold them (issue 34):
    # me-west1 offers T4 for prediction only.
    assert "me-west1" not in report.alternatives["c"]
    assert any("SHORT" in line for line in report.table())


def test_a_quota_of_zero_fits_nowhere_and_says_so():
    report = compare(
        "p", "us-central1", _needs("s", _job(_pool(1, 1), strategy="SPOT")), LIMITS, load_catalog()
    )
    [problem] = report.problems(LIMITS)
    assert "the project's limit is 0" in problem
    assert "s fits now in: no catalog region" in problem


def test_vertex_s_refusal_names_its_metrics_and_the_message_gives_need_and_limit():
    text = (
        "429 The following quota metrics exceed quota limits: "
        f"{CPUS},{T4},aiplatform.googleapis.com/custom_model_training_pd_ssd"
    )
    assert refused_metrics(text) == [
        CPUS,
        T4,
        "aiplatform.googleapis.com/custom_model_training_pd_ssd",
    ]
    assert refused_metrics("429 Quota exceeded for quota metric 'Resource management'") == []
    message = refusal_message(
        "big", _job(_pool(1, 8)), "p", "us-central1", [T4], LIMITS, load_catalog()
    )
    assert (
        f"{T4} in us-central1: the job needs 8, in use: not known (the active jobs could not "
        "be listed), the project's limit is 4"
    ) in message
    assert "gcloud alpha quotas preferences create" in message and "not retried" in message
    unknown = refusal_message(
        "big", _job(_pool(1, 8)), "p", "us-central1", [T4], None, load_catalog()
    )
    assert "the project's limit is unknown" in unknown


def test_every_catalog_row_has_a_source_and_says_when_it_is_unconfirmed():
    with (CATALOG_DIR / "training_quotas.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    accelerators = load_catalog().accelerators
    for row in rows:
        assert row["source"] and row["read_on"], row
        assert row["resource"] in accelerators or row["resource"].startswith("cpu:"), row
        if row["metric_confirmed"] != "yes" or row["quota_id_confirmed"] != "yes":
            assert "NOT CONFIRMED" in row["source"], row
    metrics = load_quota_metrics()
    gpus = [r for r in metrics.rows if not r.resource.startswith("cpu:")]
    # every GPU with an on-demand metric has its preemptible one (K80 retired before Spot)
    for metric in gpus:
        if not metric.preemptible and metric.resource != "NVIDIA_TESLA_K80":
            assert metrics.gpu(metric.resource, True) is not None, metric.resource


def test_a_bad_catalog_row_is_named(tmp_path: Path):
    (tmp_path / "training_quotas.csv").write_text(
        "resource,capacity,metric,quota_id,unit,metric_confirmed,quota_id_confirmed,source,"
        "read_on\nNVIDIA_L4,sometimes,aiplatform.googleapis.com/x,Q,u,yes,yes,s,2026-11-25\n"
    )
    with pytest.raises(ValueError, match=r"training_quotas\.csv:2: capacity 'sometimes'"):
        load_quota_metrics(tmp_path)
