"""The policy pack's rules, without the engine, with the dev and prod config files."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from components import Catalog, JobSpec, load_catalog
from components.policies import PolicyJob, evaluate, hourly_cost_bound, job_from_props
from components.rules._catalog import Accelerator, MachineType, Price, Region, Zone

POLICY_DIR = Path(__file__).parents[2] / "policy"
TYPE = "pulumi-python:dynamic/vertex:TrainingJob"


def config(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((POLICY_DIR / f"{name}.json").read_text())
    return loaded


def job(
    name: str,
    region: str,
    *pools: tuple[str, str | None, int, int],
    strategy: str | None = "SPOT",
    labels: dict[str, str] | None = None,
) -> PolicyJob:
    document: dict[str, Any] = {
        "displayName": name,
        "labels": {"team": "ml", "cost-center": "cc-1"} if labels is None else labels,
        "workerPoolSpecs": [
            {
                "machineSpec": {
                    "machineType": m,
                    **({"acceleratorType": a, "acceleratorCount": c} if a else {}),
                },
                "replicaCount": r,
                "containerSpec": {"imageUri": "img"},
            }
            for m, a, c, r in pools
        ],
    }
    if strategy:
        document["scheduling"] = {"strategy": strategy}
    found = job_from_props(name, TYPE, {"spec": document, "region": region})
    assert found is not None
    return found


DEV_JOB = ("t4-spot", "us-central1", ("n1-standard-4", "NVIDIA_TESLA_T4", 1, 1))
PROD_JOB = (
    "a100-multiworker",
    "europe-west4",
    ("a2-highgpu-8g", "NVIDIA_TESLA_A100", 8, 1),
    ("a2-highgpu-8g", "NVIDIA_TESLA_A100", 8, 3),
)


def test_dev_config_accepts_the_dev_job() -> None:
    results = evaluate([job(*DEV_JOB)], config("dev"))
    assert set(results) == {
        "allowed-regions",
        "allowed-accelerators",
        "max-gpus-per-job",
        "max-hourly-cost-per-job",
        "max-hourly-cost-per-stack",
        "required-labels",
        "spot-required",
    }
    assert all(messages == [] for messages in results.values()), results


def test_dev_config_rejects_a_prod_sized_job_naming_job_and_limits() -> None:
    results = evaluate([job(*PROD_JOB, strategy=None)], config("dev"))
    assert results["allowed-regions"] == [
        "job 'a100-multiworker' runs in europe-west4; this stack allows us-central1"
    ]
    assert results["allowed-accelerators"] == [
        "job 'a100-multiworker' uses NVIDIA_TESLA_A100; this stack allows NVIDIA_L4, NVIDIA_TESLA_T4"
    ]
    assert results["max-gpus-per-job"] == [
        "job 'a100-multiworker' holds 32 accelerators at once; the limit is 4"
    ]
    assert results["spot-required"] == [
        "job 'a100-multiworker' runs STANDARD; this stack requires scheduling.strategy: SPOT"
    ]
    # The A100's figure in europe-west4 is the DWS rate a billing SKU bills (issue 45's
    # snapshot): no on-demand price, so the cost limits say they cannot be checked.
    assert results["max-hourly-cost-per-job"] == [
        "job 'a100-multiworker': cannot check the $5/h limit (unknown price: NVIDIA_TESLA_A100 "
        "in europe-west4 (the source's figure 1.61365 is a DWS flex-start rate, not an "
        "on-demand price: billing SKU 'Nvidia Tesla A100 GPU attached to DWS Defined Duration "
        "VMs running in Americas', usage type OnDemand, bills 1.61365 per GPU))"
    ]
    assert results["max-hourly-cost-per-stack"] == [
        "cannot check the $10/h stack limit: no price for a100-multiworker"
    ]


def test_a_prod_sized_job_is_priced_as_machine_plus_gpus_against_the_limits() -> None:
    # Vertex bills each pool as its machine plus its GPUs; the two pools are summed.
    results = evaluate(
        [job(PROD_JOB[0], "us-central1", *PROD_JOB[2:], strategy=None)], config("dev")
    )
    prices = load_catalog().prices
    machine = prices[("us-central1", "machine", "a2-highgpu-8g")].on_demand_usd
    gpu = prices[("us-central1", "accelerator", "NVIDIA_TESLA_A100")].on_demand_usd
    assert machine is not None and gpu is not None
    hourly = (1 + 3) * (machine + 8 * gpu)
    assert results["max-hourly-cost-per-job"] == [
        f"job 'a100-multiworker' costs ${hourly:,.2f}/h (on-demand; prices: derived, unverified); "
        "the limit is $5/h per job"
    ]
    assert results["max-hourly-cost-per-stack"] == [
        f"the stack's jobs cost ${hourly:,.2f}/h together; the limit is $10/h"
    ]


def test_prod_config_accepts_the_prod_job_and_does_not_require_spot() -> None:
    results = evaluate(
        [job(PROD_JOB[0], "us-central1", *PROD_JOB[2:], strategy=None)], config("prod")
    )
    assert "spot-required" not in results
    assert all(messages == [] for messages in results.values()), results


def test_required_labels_name_the_missing_ones() -> None:
    results = evaluate([job(*DEV_JOB, labels={"team": "ml"})], config("dev"))
    assert results["required-labels"] == [
        "job 't4-spot' lacks the label(s) cost-center, required in this stack"
    ]


def priced_catalog() -> Catalog:
    return Catalog(
        machine_types={"m": MachineType("m", "n1", 8, 30)},
        accelerators={"G": Accelerator("G")},
        attachable_counts={("m", "G"): (1, 2)},
        regions={"r": Region("r")},
        zones={"r-a": Zone("r-a", "r", frozenset({"G"}))},
        prices={
            ("r", "machine", "m"): Price("r", "machine", "m", 1.0, None),
            ("r", "accelerator", "G"): Price("r", "accelerator", "G", 2.0, 0.5),
        },
    )


def test_unknown_spot_price_is_bounded_by_on_demand() -> None:
    spot_job = job("j", "r", ("m", "G", 2, 1))
    cost, how = hourly_cost_bound(spot_job, priced_catalog())
    assert cost == 5.0 and "bound" in how


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (5.0, []),
        (
            4.99,
            [
                "job 'j' costs $5.00/h (on-demand price as the bound of an unknown spot price); the limit is $4.99/h per job"
            ],
        ),
    ],
)
def test_cost_limit_per_job(limit: float, expected: list[str]) -> None:
    results = evaluate(
        [job("j", "r", ("m", "G", 2, 1))],
        {"max-hourly-cost-per-job": {"maxUsdPerHour": limit}},
        priced_catalog(),
    )
    assert results == {"max-hourly-cost-per-job": expected}


def test_stack_cost_sums_jobs() -> None:
    jobs = [
        job("a", "r", ("m", "G", 1, 1), strategy=None),
        job("b", "r", ("m", "G", 2, 2), strategy=None),
    ]
    results = evaluate(jobs, {"max-hourly-cost-per-stack": {"maxUsdPerHour": 12}}, priced_catalog())
    assert results == {
        "max-hourly-cost-per-stack": ["the stack's jobs cost $13.00/h together; the limit is $12/h"]
    }


def test_props_that_are_not_training_jobs_or_not_known_are_skipped() -> None:
    assert job_from_props("x", "gcp:storage/bucket:Bucket", {"spec": {}}) is None
    assert job_from_props("x", TYPE, {"spec": "04da6b54-80e4-46f7-96ec-b56ff0331ba9"}) is None
    assert job_from_props("x", TYPE, {"spec": {"workerPoolSpecs": "nope"}}) is None
    spec = JobSpec.parse({"workerPoolSpecs": [{"machineSpec": {"machineType": "m"}}]})
    as_json = job_from_props("x", TYPE, {"spec": json.dumps(spec.to_document()), "region": "r"})
    assert as_json is not None and as_json.region == "r"


STACK_JOBS = Path(__file__).parents[2] / "stacks" / "jobs"


def stack_job(name: str, file: str) -> PolicyJob:
    from components import load_spec_file

    spec = load_spec_file(STACK_JOBS / file).spec
    region = spec.region or {"dev": "us-central1"}.get(name.split("-")[0])
    found = job_from_props(name, TYPE, {"spec": spec.to_document(), "region": region})
    assert found is not None
    return found


def test_real_stack_jobs_dev_accepted_prod_rejected_by_dev_config() -> None:
    dev = stack_job("dev-t4-spot", "dev-t4-spot.yaml")
    prod = stack_job("prod-a100", "prod-a100.gcloud.sh")
    assert all(m == [] for m in evaluate([dev], config("dev")).values())
    rejected = evaluate([prod], config("dev"))
    assert rejected["max-gpus-per-job"] == [
        "job 'prod-a100' holds 9 accelerators at once; the limit is 4"
    ]
    assert rejected["allowed-accelerators"] == [
        "job 'prod-a100' uses NVIDIA_TESLA_A100; this stack allows NVIDIA_L4, NVIDIA_TESLA_T4"
    ]
    assert all(m == [] for m in evaluate([prod], config("prod")).values())


def test_a_job_whose_price_is_suspect_cannot_pass_a_mandatory_cost_limit() -> None:
    # The A100's figure in europe-west4 is half its price elsewhere (a flex-start rate, issue
    # 34's regional check): no on-demand price, so prod's cost limits say they cannot check it.
    prod = stack_job("prod-a100", "prod-a100.gcloud.sh")
    judged = evaluate([replace(prod, region="europe-west4")], config("prod"))
    assert [k for k, m in judged.items() if m] == [
        "max-hourly-cost-per-job",
        "max-hourly-cost-per-stack",
    ]
    assert (
        "unknown price: NVIDIA_TESLA_A100 in europe-west4" in judged["max-hourly-cost-per-job"][0]
    )


def test_props_behind_read_only_mapping_proxies_are_judged() -> None:
    # The engine hands policies Mapping/Sequence proxies, not dict and list.
    from types import MappingProxyType

    document = {
        "displayName": "proxied",
        "labels": MappingProxyType({"team": "ml"}),
        "workerPoolSpecs": (
            MappingProxyType(
                {
                    "machineSpec": MappingProxyType(
                        {
                            "machineType": "n1-standard-4",
                            "acceleratorType": "NVIDIA_TESLA_T4",
                            "acceleratorCount": 8,
                        }
                    ),
                    "replicaCount": 1,
                    "containerSpec": MappingProxyType({"imageUri": "img"}),
                }
            ),
        ),
    }
    found = job_from_props(
        "proxied",
        TYPE,
        MappingProxyType({"spec": MappingProxyType(document), "region": "us-central1"}),
    )
    assert found is not None and found.gpus == 8
    assert evaluate([found], config("dev"))["max-gpus-per-job"] == [
        "job 'proxied' holds 8 accelerators at once; the limit is 4"
    ]
