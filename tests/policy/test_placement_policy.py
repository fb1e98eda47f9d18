"""A placed job (candidate regions, ``components.core._placement``) as the policy pack sees it: its
cost is the worst case of its attempts, and every candidate must be an allowed region."""

from __future__ import annotations

from typing import Any

from components import load_catalog
from components.policies import allowed_regions, hourly_cost_bound, job_from_props

TYPE = "pulumi-python:dynamic/vertex:TrainingJob"
DOCUMENT: dict[str, Any] = {
    "displayName": "t4",
    "workerPoolSpecs": [
        {
            "machineSpec": {
                "machineType": "n1-standard-4",
                "acceleratorType": "NVIDIA_TESLA_T4",
                "acceleratorCount": 1,
            },
            "replicaCount": 1,
            "containerSpec": {"imageUri": "img"},
        }
    ],
}
PLACEMENT = [
    {"region": "us-central1", "capacity": ["spot"]},
    {"region": "europe-west4", "capacity": ["spot", "on-demand"]},
]


def _props(**more: Any) -> dict[str, Any]:
    return {"spec": DOCUMENT, "region": "us-central1", **more}


def test_a_placed_job_is_priced_at_its_most_expensive_attempt():
    catalog = load_catalog()
    placed = job_from_props("t4", TYPE, _props(placement=PLACEMENT))
    single = job_from_props("t4", TYPE, _props())
    on_demand_eu = job_from_props("t4", TYPE, {"spec": DOCUMENT, "region": "europe-west4"})
    assert placed is not None and single is not None and on_demand_eu is not None
    cost, how = hourly_cost_bound(placed, catalog)
    worst, _ = hourly_cost_bound(on_demand_eu, catalog)
    assert cost is not None and cost == worst
    assert "worst case of 3 attempts, europe-west4 (on-demand)" in how
    # ...and the expected figure: the first attempt, Spot in us-central1.
    spot_us, _ = hourly_cost_bound(single_spot(), catalog)
    assert spot_us is not None and spot_us < cost
    assert f"expected ${spot_us:,.2f}/h, us-central1 (spot), the first it tries" in how


def single_spot() -> Any:
    spot = {**DOCUMENT, "scheduling": {"strategy": "SPOT"}}
    job = job_from_props("t4", TYPE, {"spec": spot, "region": "us-central1"})
    assert job is not None
    return job


def test_every_candidate_must_be_an_allowed_region():
    placed = job_from_props("t4", TYPE, _props(placement=PLACEMENT))
    assert placed is not None
    found = allowed_regions(placed, {"allowedRegions": ["us-central1"]}, load_catalog())
    assert found == ["job 't4' runs in europe-west4; this stack allows us-central1"]
    assert allowed_regions(placed, {"allowedRegions": ["us-central1", "europe-west4"]}, None) == []  # type: ignore[arg-type]


def test_a_candidate_without_the_gpu_is_left_out_of_the_worst_case():
    catalog = load_catalog()
    placement = [{"region": "us-south1", "capacity": []}, {"region": "us-central1"}]
    placed = job_from_props("t4", TYPE, _props(placement=placement))
    single = job_from_props("t4", TYPE, _props())
    assert placed is not None and single is not None
    assert hourly_cost_bound(placed, catalog)[0] == hourly_cost_bound(single, catalog)[0]
