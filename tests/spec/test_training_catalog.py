"""Issue 34: where a GPU may run for Vertex training, lifecycle and machine series.

Vertex AI's locations page (``training_regions.csv``) says where a GPU may run for custom
training; Compute Engine's zones (``zones.csv``) only decide the single-zone rule. P100 ended
on Vertex on 2026-09-15; A4X (GB200) is reservation-only; N4 and M1 are training machines and
``n2-standard-2`` is not.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from components import Violation, load_catalog, validate
from components.rules._catalog import (
    Accelerator,
    Catalog,
    MachineType,
    Region,
    TrainingOffer,
    Zone,
    training_regions,
)
from tests.spec.helpers import pool, spec

CPU_IMAGE = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest"
GB200_RESERVATION = {
    "reservationAffinityType": "SPECIFIC_RESERVATION",
    "key": "compute.googleapis.com/reservation-name",
    "values": ["r1"],
}


def _gpu_pool(accelerator: str) -> dict[str, Any]:
    """A pool with one machine that takes ``accelerator``, at a count it takes."""
    catalog = load_catalog()
    machine, counts = next(
        (m, c) for (m, a), c in sorted(catalog.attachable_counts.items()) if a == accelerator
    )
    doc = pool(machine, accelerator, counts[0])
    if catalog.machine_types[machine].capacity == ("RESERVATION",):
        doc["machineSpec"]["reservationAffinity"] = GB200_RESERVATION
    return doc


def _cpu_pool(machine: str) -> dict[str, Any]:
    doc = pool(machine)
    doc["pythonPackageSpec"]["executorImageUri"] = CPU_IMAGE
    return doc


def _region_rule(violations: list[Violation]) -> list[Violation]:
    return [v for v in violations if v.rule == "region"]


# --- where a GPU may run for training ------------------------------------------------------


def _not_for_training() -> list[tuple[str, str]]:
    catalog = load_catalog()
    return sorted(
        (region, acc)
        for (region, acc), offer in catalog.training_offers.items()
        if not offer.training and catalog.accelerators[acc].kind == "gpu"
    )


def test_the_locations_page_marks_gpus_not_for_training() -> None:
    pairs = _not_for_training()
    # The page's daggers on GPUs (2026-04-10), L4 in asia-east1 among them.
    assert ("asia-east1", "NVIDIA_L4") in pairs
    assert ("me-west1", "NVIDIA_TESLA_T4") in pairs
    assert len(pairs) >= 8


@pytest.mark.parametrize(("region", "accelerator"), _not_for_training())
def test_a_gpu_marked_not_for_training_is_refused_with_the_nearest_regions(
    region: str, accelerator: str
) -> None:
    catalog = load_catalog()
    # Compute Engine's zones may well hold it: that is not where Vertex trains.
    [v] = _region_rule(validate(spec(_gpu_pool(accelerator)), region=region))
    assert v.severity == "error"
    assert v.path == "workerPoolSpecs[0].machineSpec.acceleratorType"
    assert v.reason == (
        f"Vertex AI offers {accelerator} in {region} for prediction only, not for training"
    )
    offered = training_regions(catalog, accelerator)
    assert region not in offered
    assert v.suggestion is not None
    named = v.suggestion.removeprefix(f"{accelerator} is offered in ").split(", ")
    assert named[0] in offered
    # Nearest first: a region of the same geography leads when there is one.
    home = catalog.regions[region].geography
    if any(catalog.regions[r].geography == home for r in offered):
        assert catalog.regions[named[0]].geography == home


def test_l4_in_asia_east1_is_refused_though_its_zones_hold_it() -> None:
    catalog = load_catalog()
    assert "NVIDIA_L4" in catalog.region_accelerators["asia-east1"]  # Compute Engine zones
    [v] = _region_rule(validate(spec(pool("g2-standard-8", "NVIDIA_L4", 1)), region="asia-east1"))
    assert "prediction only" in v.reason
    assert v.suggestion is not None and v.suggestion.startswith("NVIDIA_L4 is offered in asia-")


@pytest.mark.parametrize(
    ("region", "accelerator"),
    [("europe-west2", "NVIDIA_H100_80GB"), ("us-east4", "NVIDIA_GB200")],
)
def test_vertex_offers_gpus_compute_engine_zones_lack(region: str, accelerator: str) -> None:
    catalog = load_catalog()
    assert accelerator not in catalog.region_accelerators.get(region, frozenset())
    assert _region_rule(validate(spec(_gpu_pool(accelerator)), region=region)) == []


def test_a_pair_the_page_does_not_list_is_refused() -> None:
    [v] = _region_rule(validate(spec(_gpu_pool("NVIDIA_H200_141GB")), region="asia-east1"))
    assert v.reason == "NVIDIA_H200_141GB is not offered in asia-east1"
    assert v.suggestion is not None and "asia-south1" in v.suggestion


def test_the_single_zone_rule_still_reads_the_zones() -> None:
    # Offered for training: both; in one zone together: per zones.csv.
    catalog = Catalog(
        machine_types={"m": MachineType("m", "n1", 8, 30)},
        accelerators={"A": Accelerator("A"), "B": Accelerator("B")},
        attachable_counts={("m", "A"): (1,), ("m", "B"): (1,)},
        regions={"r": Region("r")},
        zones={
            "r-a": Zone("r-a", "r", frozenset({"A"})),
            "r-b": Zone("r-b", "r", frozenset({"B"})),
        },
        training_offers={("r", a): TrainingOffer("r", a) for a in ("A", "B")},
    )
    found = validate(spec(pool("m", "A", 1), pool("m", "B", 1)), catalog=catalog, region="r")
    assert [v.rule for v in found] == ["zone"]


def test_training_offers_decide_over_zones_in_a_tiny_catalog() -> None:
    catalog = Catalog(
        machine_types={"m": MachineType("m", "n1", 8, 30)},
        accelerators={"A": Accelerator("A")},
        attachable_counts={("m", "A"): (1,)},
        regions={"r1": Region("r1"), "r2": Region("r2")},
        zones={"r1-a": Zone("r1-a", "r1", frozenset({"A"}))},
        training_offers={
            ("r1", "A"): TrainingOffer("r1", "A", training=False),
            ("r2", "A"): TrainingOffer("r2", "A"),
        },
    )
    [v] = validate(spec(pool("m", "A", 1)), catalog=catalog, region="r1")
    assert (v.rule, v.suggestion) == ("region", "A is offered in r2")
    assert validate(spec(pool("m", "A", 1)), catalog=catalog, region="r2") == []


# --- lifecycle ------------------------------------------------------------------------------


def test_p100_is_refused_past_its_end_of_support() -> None:
    p100 = load_catalog().accelerators["NVIDIA_TESLA_P100"]
    assert (p100.lifecycle, p100.retired_on) == ("DEPRECATED", "2026-09-15")
    assert not p100.retired_by(date(2026, 9, 14))
    assert p100.retired_by(date(2026, 9, 15))
    [v] = [
        v
        for v in validate(spec(pool("n1-standard-8", "NVIDIA_TESLA_P100", 1)), region="us-central1")
        if v.rule == "retired"
    ]
    assert v.severity == "error"
    assert v.reason == (
        "NVIDIA_TESLA_P100 was retired on 2026-09-15; Vertex AI no longer offers it"
    )
    assert v.suggestion is not None and "NVIDIA_TESLA_T4" in v.suggestion


def test_a_deprecated_gpu_before_its_date_is_not_refused() -> None:
    soon = Accelerator("A", lifecycle="DEPRECATED", retired_on="2999-01-01")
    catalog = Catalog(
        machine_types={"m": MachineType("m", "n1", 8, 30)},
        accelerators={"A": soon},
        attachable_counts={("m", "A"): (1,)},
    )
    assert validate(spec(pool("m", "A", 1)), catalog=catalog) == []


def test_gb200_is_not_a_flex_start_gpu_and_only_reserved() -> None:
    assert not load_catalog().accelerators["NVIDIA_GB200"].flex_start
    flex = validate(spec(_gpu_pool("NVIDIA_GB200"), scheduling={"strategy": "FLEX_START"}))
    assert {v.rule for v in flex if v.severity == "error"} == {"scheduling"}
    [sched] = [v for v in flex if v.rule == "scheduling"]
    assert "this pool has NVIDIA_GB200" in sched.reason
    on_demand = pool("a4x-highgpu-4g", "NVIDIA_GB200", 4)
    [cap] = [v for v in validate(spec(on_demand)) if v.rule == "capacity"]
    assert "comes only from reservations" in cap.reason
    assert validate(spec(_gpu_pool("NVIDIA_GB200")), region="us-east4") == []


# --- machine series ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "machine",
    ["n4-standard-2", "n4-highmem-80", "n4-highcpu-16", "m1-ultramem-40", "m1-megamem-96"],
)
def test_n4_and_m1_machines_train(machine: str) -> None:
    info = load_catalog().machine_types[machine]
    assert info.training and info.family in ("n4", "m1")
    assert validate(spec(_cpu_pool(machine)), region="us-central1") == []


def test_machine_sizes_follow_their_series() -> None:
    machines = load_catalog().machine_types
    per_vcpu = {"standard": 4, "highmem": 8, "highcpu": 2}
    n4 = [m for m in machines.values() if m.family == "n4"]
    assert len(n4) == 24
    for machine in n4:
        kind = machine.name.split("-")[1]
        assert machine.memory_gb == machine.vcpus * per_vcpu[kind], machine.name
        assert machine.boot_disk_types == ("hyperdisk-balanced",)
    assert (machines["m1-ultramem-160"].vcpus, machines["m1-ultramem-160"].memory_gb) == (160, 3844)


def test_n4_boots_only_from_hyperdisk() -> None:
    doc = _cpu_pool("n4-standard-8")
    doc["diskSpec"] = {"bootDiskType": "pd-ssd"}
    [v] = validate(spec(doc))
    assert (v.rule, v.suggestion) == ("disk", "set bootDiskType: hyperdisk-balanced")


def test_n2_standard_2_is_refused_with_the_nearest_training_type() -> None:
    [v] = validate(spec(_cpu_pool("n2-standard-2")))
    assert v.rule == "machine" and v.path == "workerPoolSpecs[0].machineSpec.machineType"
    assert v.suggestion is not None and "n2-standard-4" in v.suggestion
