"""The policy pack's rules on hyperparameter tuning jobs: all parallel trials count at once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.lifecycle._wire import TRAINING_JOB_TYPE, TUNING_JOB_TYPE, UNKNOWN, encode_spec
from components.policies import PolicyJob, evaluate, hourly_cost_bound, job_from_props
from tests.spec.tuning_helpers import config as sweep_config

POLICY_DIR = Path(__file__).parents[2] / "policy"

# us-central1 on-demand prices of the catalog (components/catalog/prices.csv).
N1_STANDARD_4 = 0.21849885
T4 = 0.4025


def config(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((POLICY_DIR / f"{name}.json").read_text())
    return loaded


def pool(machine: str, gpu: str | None, count: int, replicas: int = 1) -> dict[str, Any]:
    machine_spec: dict[str, Any] = {"machineType": machine}
    if gpu:
        machine_spec.update(acceleratorType=gpu, acceleratorCount=count)
    return {
        "machineSpec": machine_spec,
        "replicaCount": replicas,
        "containerSpec": {"imageUri": "us-docker.pkg.dev/vision-ml/trainers/cifar10:1.4.0"},
    }


def tuning_document(
    *pools: dict[str, Any],
    parallel: int = 3,
    trials: int = 12,
    strategy: str | None = "SPOT",
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The CIFAR-10 sweep of ``tuning_helpers`` with its counts, trial pools and labels set."""
    document = sweep_config()
    document.update(
        maxTrialCount=trials,
        parallelTrialCount=parallel,
        labels={"team": "vision", "cost-center": "cc-7"} if labels is None else labels,
    )
    document["trialJobSpec"]["workerPoolSpecs"] = list(pools)
    if strategy:
        document["trialJobSpec"]["scheduling"] = {"strategy": strategy}
    return document


def tuning_job(name: str, region: str, *pools: dict[str, Any], **options: Any) -> PolicyJob:
    # As the engine hands it to a policy: the spec as the resource's JSON text.
    props = {"spec": encode_spec(tuning_document(*pools, **options)), "region": region}
    found = job_from_props(name, TUNING_JOB_TYPE, props)
    assert found is not None
    return found


T4_TRIAL = pool("n1-standard-4", "NVIDIA_TESLA_T4", 2)
_T4_HOST = (("machine", "n1-standard-4"), ("accelerator", "NVIDIA_TESLA_T4"))


def test_a_dev_sized_sweep_passes_the_dev_config() -> None:
    job = tuning_job(
        "sweep", "us-central1", pool("n1-standard-4", "NVIDIA_TESLA_T4", 1), parallel=2
    )
    assert (job.tuning, job.parallel_trials, job.trial_gpus, job.gpus) == (True, 2, 1, 2)
    # The catalog's Spot prices (derived, unverified), for both trials.
    prices = _catalog().prices
    spot = [prices[("us-central1", k, n)].spot_usd for k, n in _T4_HOST]
    assert None not in spot
    cost, how = hourly_cost_bound(job, _catalog())
    assert cost == pytest.approx(2 * sum(s or 0.0 for s in spot))
    assert how == "spot, 2 trials at once; prices: derived, unverified"
    results = evaluate([job], config("dev"))
    assert all(messages == [] for messages in results.values()), results


def test_gpus_are_parallel_trials_times_gpus_per_trial() -> None:
    job = tuning_job("sweep", "us-central1", T4_TRIAL, strategy=None)
    assert job.gpus == 6
    results = evaluate([job], config("dev"))
    assert results["max-gpus-per-job"] == [
        "tuning job 'sweep' holds 6 accelerators at once (3 trials at once x 2); the limit is 4"
    ]
    assert results["spot-required"] == [
        "tuning job 'sweep' runs STANDARD trials; "
        "this stack requires trialJobSpec.scheduling.strategy: SPOT"
    ]
    # 3 x (n1-standard-4 + 2 x T4) = $3.07/h: under the dev limit of $5/h.
    assert results["max-hourly-cost-per-job"] == []
    assert results["allowed-regions"] == results["allowed-accelerators"] == []


def test_every_pool_and_replica_of_a_trial_counts() -> None:
    job = tuning_job(
        "multi",
        "us-central1",
        pool("n1-standard-4", "NVIDIA_TESLA_T4", 2),
        pool("n1-standard-4", "NVIDIA_TESLA_T4", 2, replicas=2),
        pool("n1-standard-4", None, 0),
        parallel=2,
        trials=4,
    )
    assert (job.trial_gpus, job.gpus) == (6, 12)
    assert evaluate([job], {"max-gpus-per-job": {"maxGpus": 11}}) == {
        "max-gpus-per-job": [
            "tuning job 'multi' holds 12 accelerators at once (2 trials at once x 6); "
            "the limit is 11"
        ]
    }
    assert evaluate([job], {"max-gpus-per-job": {"maxGpus": 12}}) == {"max-gpus-per-job": []}


def test_hourly_cost_is_that_of_all_parallel_trials() -> None:
    job = tuning_job("wide", "us-central1", T4_TRIAL, parallel=5, strategy=None)
    cost, how = hourly_cost_bound(job, _catalog())
    assert cost == pytest.approx(5 * (N1_STANDARD_4 + 2 * T4)) == pytest.approx(5.11749425)
    assert how == "on-demand, 5 trials at once; prices: Vertex price"
    assert evaluate([job], config("dev"))["max-hourly-cost-per-job"] == [
        "tuning job 'wide' costs $5.12/h (on-demand, 5 trials at once; prices: Vertex price); "
        "the limit is $5/h per job"
    ]
    # Four at once cost $4.09/h: within the limit.
    four = tuning_job("wide", "us-central1", T4_TRIAL, parallel=4, strategy=None)
    assert evaluate([four], config("dev"))["max-hourly-cost-per-job"] == []


def test_unknown_trial_price_fails_the_cost_limits_naming_the_missing_price() -> None:
    # The source lists the A4 machine at 0.0, so the catalog has no price for it.
    trial = pool("a4-highgpu-8g", "NVIDIA_B200", 8)
    job = tuning_job("big", "us-central1", trial, strategy=None)
    results = evaluate([job], config("dev"))
    assert results["max-hourly-cost-per-job"] == [
        "tuning job 'big': cannot check the $5/h limit (unknown price: a4-highgpu-8g in "
        "us-central1 (the source lists it at 0.0, which is no price), NVIDIA_B200 in "
        "us-central1 (the source's figure 11.277 is a DWS flex-start rate, not an on-demand "
        "price: a4-highgpu-8g offer no on-demand capacity, per machine_types.csv))"
    ]
    assert results["max-hourly-cost-per-stack"] == [
        "cannot check the $10/h stack limit: no price for big"
    ]
    allowed = {"max-hourly-cost-per-job": {"maxUsdPerHour": 5, "allowUnknownPrices": True}}
    assert evaluate([job], allowed) == {"max-hourly-cost-per-job": []}


def test_region_accelerator_and_labels_name_the_tuning_job() -> None:
    job = tuning_job(
        "a100-sweep",
        "europe-west4",
        pool("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1),
        labels={"team": "vision"},
    )
    results = evaluate([job], config("dev"))
    assert results["allowed-regions"] == [
        "tuning job 'a100-sweep' runs in europe-west4; this stack allows us-central1"
    ]
    assert results["allowed-accelerators"] == [
        "tuning job 'a100-sweep' uses NVIDIA_TESLA_A100; "
        "this stack allows NVIDIA_L4, NVIDIA_TESLA_T4"
    ]
    assert results["required-labels"] == [
        "tuning job 'a100-sweep' lacks the label(s) cost-center, required in this stack"
    ]
    assert results["max-gpus-per-job"] == []  # 3 trials x 1 A100
    # prod allows the region and the A100; it requires the labels all the same.
    prod = {
        rule: messages for rule, messages in evaluate([job], config("prod")).items() if messages
    }
    # Its Spot A100 price there is a lower bound (Compute Engine's rate without Vertex's fee)
    # and its on-demand price unknown: no worst case, so the cost limit fails closed (issue 45).
    cost = prod.pop("max-hourly-cost-per-job")
    assert cost == [
        "tuning job 'a100-sweep': cannot check the $400/h limit (no worst case: at least "
        "$4.83/h (NVIDIA_TESLA_A100: Compute Engine's spot rate without Vertex's fee))"
    ]
    assert prod.pop("max-hourly-cost-per-stack") == [
        "cannot check the $1000/h stack limit: no price for a100-sweep"
    ]
    assert prod == {
        "required-labels": [
            "tuning job 'a100-sweep' lacks the label(s) cost-center, required in this stack"
        ]
    }


def test_stack_cost_adds_tuning_jobs_at_full_parallelism() -> None:
    training_doc = {
        "displayName": "t4",
        "labels": {"team": "ml", "cost-center": "cc-1"},
        "workerPoolSpecs": [pool("n1-standard-4", "NVIDIA_TESLA_T4", 1)],
    }
    training = job_from_props(
        "t4", TRAINING_JOB_TYPE, {"spec": encode_spec(training_doc), "region": "us-central1"}
    )
    assert training is not None and not training.tuning
    sweep = tuning_job("sweep", "us-central1", T4_TRIAL, strategy=None)
    # 0.62 + 3 x 1.02 = $3.69/h.
    results = evaluate([training, sweep], {"max-hourly-cost-per-stack": {"maxUsdPerHour": 3.5}})
    assert results == {
        "max-hourly-cost-per-stack": ["the stack's jobs cost $3.69/h together; the limit is $3.5/h"]
    }
    assert evaluate([training, sweep], {"max-hourly-cost-per-stack": {"maxUsdPerHour": 3.7}}) == {
        "max-hourly-cost-per-stack": []
    }


def test_trials_at_once_are_capped_by_trials_in_all() -> None:
    job = tuning_job("capped", "us-central1", T4_TRIAL, parallel=8, trials=2)
    assert (job.parallel_trials, job.gpus) == (2, 4)


def test_props_that_are_not_a_known_tuning_job_are_skipped() -> None:
    document = tuning_document(T4_TRIAL)
    assert job_from_props("x", TUNING_JOB_TYPE, {"spec": UNKNOWN}) is None
    assert job_from_props("x", TUNING_JOB_TYPE, {"spec": {"studySpec": "nope"}}) is None
    # A custom job's spec under the tuning type, and a tuning spec under the training type.
    custom = {"workerPoolSpecs": [T4_TRIAL]}
    assert job_from_props("x", TUNING_JOB_TYPE, {"spec": custom}) is None
    assert job_from_props("x", TRAINING_JOB_TYPE, {"spec": document}) is None
    # Any provider prefix: only the type's suffix counts; the region may be the spec's.
    found = job_from_props(
        "x", "pulumi-python:dynamic/other:HyperparameterTuningJob", {"spec": document}
    )
    assert found is not None and found.tuning and found.region is None
    document["region"] = "us-central1"
    found = job_from_props("x", TUNING_JOB_TYPE, {"spec": document})
    assert found is not None and found.region == "us-central1"


def _catalog() -> Any:
    from components import load_catalog

    return load_catalog()
