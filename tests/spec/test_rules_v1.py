"""Rules for the newer v1 fields and machine families: reservations, MIG partitions,
capacity (reservation-only families), FLEX_START, boot disks, NFS/Lustre mounts."""

from __future__ import annotations

from typing import Any

import pytest

from components import Catalog, Violation, load_catalog, validate
from components.rules._catalog import Accelerator, MachineType
from tests.spec.helpers import pool, spec

MS = "workerPoolSpecs[0].machineSpec"
RA = f"{MS}.reservationAffinity"


def rule(violations: list[Violation], name: str) -> list[Violation]:
    return [v for v in violations if v.rule == name]


def with_machine(pool_doc: dict[str, Any], **machine: Any) -> dict[str, Any]:
    pool_doc["machineSpec"].update(machine)
    return pool_doc


# --- reservation affinity ---------------------------------------------------------------

NAME_KEY = "compute.googleapis.com/reservation-name"


def reserved(affinity: dict[str, Any], machine: str = "a3-highgpu-8g") -> list[Violation]:
    doc = with_machine(pool(machine, "NVIDIA_H100_80GB", 8), reservationAffinity=affinity)
    return rule(validate(spec(doc)), "reservation")


@pytest.mark.parametrize(
    "value",
    [
        "h100-pool",
        "projects/my-project/reservations/h100-pool",
        "projects/my-project/zones/us-central1-b/reservations/h100-pool",
    ],
)
def test_specific_reservation_by_name(value: str) -> None:
    affinity = {"reservationAffinityType": "SPECIFIC_RESERVATION", "key": NAME_KEY}
    assert reserved({**affinity, "values": [value]}) == []


def test_specific_reservation_needs_key_and_values() -> None:
    [both] = reserved({"reservationAffinityType": "SPECIFIC_RESERVATION"})
    assert both.path == RA
    assert both.suggestion == (
        f"key: {NAME_KEY}, values: [projects/PROJECT/zones/ZONE/reservations/NAME]"
    )
    [no_values] = reserved({"reservationAffinityType": "SPECIFIC_RESERVATION", "key": NAME_KEY})
    assert no_values.path == f"{RA}.values"
    [wrong_key] = reserved(
        {"reservationAffinityType": "SPECIFIC_RESERVATION", "key": "name", "values": ["r1"]}
    )
    assert wrong_key.path == f"{RA}.key"
    assert wrong_key.reason == "'name' is not the key that names a reservation"
    assert wrong_key.suggestion == f"key: {NAME_KEY}"


@pytest.mark.parametrize("value", ["My_Reservation", "projects/p/regions/r/reservations/x", "a/b"])
def test_reservation_value_that_is_not_a_name(value: str) -> None:
    [bad] = reserved(
        {"reservationAffinityType": "SPECIFIC_RESERVATION", "key": NAME_KEY, "values": [value]}
    )
    assert bad.path == f"{RA}.values[0]"
    assert bad.reason == f"{value!r} is not a reservation name"


@pytest.mark.parametrize("kind", ["NO_RESERVATION", "ANY_RESERVATION"])
def test_no_and_any_reservation_take_neither_key_nor_values(kind: str) -> None:
    assert reserved({"reservationAffinityType": kind}) == []
    [bad] = reserved({"reservationAffinityType": kind, "key": NAME_KEY, "values": ["r1"]})
    assert bad.path == RA
    assert bad.suggestion == (
        "remove key and values, or set reservationAffinityType: SPECIFIC_RESERVATION"
    )


# --- MIG partitions ------------------------------------------------------------------------


def partitioned(machine: str, acc: str, count: int, size: str) -> list[Violation]:
    doc = with_machine(pool(machine, acc, count), gpuPartitionSize=size)
    return rule(validate(spec(doc)), "mig")


@pytest.mark.parametrize(
    ("machine", "acc", "size"),
    [
        ("a2-highgpu-1g", "NVIDIA_TESLA_A100", "1g.5gb"),
        ("a2-ultragpu-1g", "NVIDIA_A100_80GB", "1g.10gb"),
        ("a3-highgpu-1g", "NVIDIA_H100_80GB", "1g.10gb"),
        ("a3-highgpu-1g", "NVIDIA_H100_80GB", "3g.40gb"),
        ("g4-standard-48", "NVIDIA_RTX_PRO_6000", "2g.48gb"),
    ],
)
def test_partition_sizes_each_gpu_offers(machine: str, acc: str, size: str) -> None:
    assert partitioned(machine, acc, 1, size) == []


def test_partition_size_the_gpu_does_not_offer() -> None:
    [v] = partitioned("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1, "1g.10gb")
    assert v.path == f"{MS}.gpuPartitionSize"
    assert v.reason == "NVIDIA_TESLA_A100 has no '1g.10gb' partition"
    assert v.suggestion == "NVIDIA_TESLA_A100 partitions into 1g.5gb, 2g.10gb, 3g.20gb or 7g.40gb"


def test_partition_needs_exactly_one_gpu() -> None:
    [v] = partitioned("a3-highgpu-2g", "NVIDIA_H100_80GB", 2, "1g.10gb")
    assert v.path == f"{MS}.acceleratorCount"
    assert v.reason == "gpuPartitionSize partitions exactly one GPU; acceleratorCount is 2"
    assert v.suggestion == (
        "set acceleratorCount: 1 on a machine type that has one NVIDIA_H100_80GB: a3-highgpu-1g"
    )


def test_gpu_without_mig_and_pool_without_gpu() -> None:
    [t4] = partitioned("n1-standard-8", "NVIDIA_TESLA_T4", 1, "1g.5gb")
    assert t4.reason == "NVIDIA_TESLA_T4 has no MIG partitions"
    assert t4.suggestion is not None and t4.suggestion.startswith("GPUs that partition: ")
    assert "NVIDIA_H100_80GB" in t4.suggestion and "NVIDIA_TESLA_T4" not in t4.suggestion
    cpu = rule(validate(spec(with_machine(pool(), gpuPartitionSize="1g.5gb"))), "mig")
    assert [v.reason for v in cpu] == ["partitions a GPU, but the pool has none"]


def test_partition_sizes_are_catalog_data() -> None:
    catalog = Catalog(
        machine_types={"m": MachineType("m", "x1", 8, 30, "G", 1)},
        accelerators={"G": Accelerator("G", mig_partition_sizes=("1g.1gb", "2g.2gb"))},
        attachable_counts={("m", "G"): (1,)},
    )
    doc = with_machine(pool("m", "G", 1), gpuPartitionSize="2g.2gb")
    assert validate(spec(doc), catalog=catalog) == []
    doc = with_machine(pool("m", "G", 1), gpuPartitionSize="3g.3gb")
    [v] = validate(spec(doc), catalog=catalog)
    assert v.suggestion == "G partitions into 1g.1gb or 2g.2gb"


# --- capacity: reservation-only families --------------------------------------------------

ON_DEMAND_A4 = (
    "a4-highgpu-8g capacity comes only from reservations, FLEX_START (Dynamic Workload "
    "Scheduler) or Spot VMs; this job asks for on-demand capacity (scheduling.strategy "
    "STANDARD, the default)"
)
A4_WAYS = (
    "set scheduling.strategy: FLEX_START or SPOT, or consume a reservation "
    "(machineSpec.reservationAffinity: SPECIFIC_RESERVATION)"
)


def capacity(doc: dict[str, Any], **fields: Any) -> list[Violation]:
    return rule(validate(spec(doc, **fields)), "capacity")


def test_reservation_only_family_asked_for_on_demand() -> None:
    [v] = capacity(pool("a4-highgpu-8g", "NVIDIA_B200", 8))
    assert v.path == f"{MS}.machineType"
    assert (v.reason, v.suggestion) == (ON_DEMAND_A4, A4_WAYS)
    [standard] = capacity(
        pool("a4-highgpu-8g", "NVIDIA_B200", 8), scheduling={"strategy": "STANDARD"}
    )
    assert standard.reason.endswith("(scheduling.strategy STANDARD)")


@pytest.mark.parametrize(
    ("machine", "acc", "count", "fields"),
    [
        ("a4-highgpu-8g", "NVIDIA_B200", 8, {"scheduling": {"strategy": "SPOT"}}),
        ("a4-highgpu-8g", "NVIDIA_B200", 8, {"scheduling": {"strategy": "FLEX_START"}}),
        ("a3-ultragpu-8g", "NVIDIA_H200_141GB", 8, {"scheduling": {"strategy": "SPOT"}}),
        ("a3-highgpu-1g", "NVIDIA_H100_80GB", 1, {"scheduling": {"strategy": "FLEX_START"}}),
        ("a4-highgpu-8g", "NVIDIA_B200", 8, {"persistentResourceId": "b200-pool"}),
        ("g4-standard-48", "NVIDIA_RTX_PRO_6000", 1, {}),
        ("a3-highgpu-8g", "NVIDIA_H100_80GB", 8, {}),
    ],
)
def test_capacity_the_family_offers(
    machine: str, acc: str, count: int, fields: dict[str, Any]
) -> None:
    assert capacity(pool(machine, acc, count), **fields) == []


def test_a_reservation_is_capacity_too() -> None:
    for affinity in (
        {"reservationAffinityType": "ANY_RESERVATION"},
        {
            "reservationAffinityType": "SPECIFIC_RESERVATION",
            "key": NAME_KEY,
            "values": ["projects/p/zones/us-central1-b/reservations/b200"],
        },
    ):
        doc = with_machine(pool("a4-highgpu-8g", "NVIDIA_B200", 8), reservationAffinity=affinity)
        assert capacity(doc) == []
    no = with_machine(
        pool("a4-highgpu-8g", "NVIDIA_B200", 8),
        reservationAffinity={"reservationAffinityType": "NO_RESERVATION"},
    )
    assert len(capacity(no)) == 1


def test_a4x_capacity_comes_from_reservations_only() -> None:
    # Issue 34: A4X (GB200) is reservation-only for Vertex training, not a flex-start machine.
    [on_demand] = capacity(pool("a4x-highgpu-4g", "NVIDIA_GB200", 4))
    assert "a4x-highgpu-4g capacity comes only from reservations" in on_demand.reason
    for strategy in ("SPOT", "FLEX_START"):
        doc = pool("a4x-highgpu-4g", "NVIDIA_GB200", 4)
        [refused] = capacity(doc, scheduling={"strategy": strategy})
        assert "only from reservations" in refused.reason
    reserved = pool("a4x-highgpu-4g", "NVIDIA_GB200", 4)
    reserved["machineSpec"]["reservationAffinity"] = {
        "reservationAffinityType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["r1"],
    }
    assert capacity(reserved) == []


def test_capacity_is_catalog_data() -> None:
    catalog = Catalog(machine_types={"m": MachineType("m", "z1", 4, 16, capacity=("SPOT",))})
    [v] = validate(spec(pool("m")), catalog=catalog)
    assert v.suggestion == "set scheduling.strategy: SPOT"
    assert validate(spec(pool("m"), scheduling={"strategy": "SPOT"}), catalog=catalog) == []


# --- scheduling: strategies and FLEX_START -------------------------------------------------


def scheduling(doc: dict[str, Any], **sched: Any) -> list[Violation]:
    return rule(validate(spec(doc, scheduling=sched)), "scheduling")


def test_deprecated_strategies_are_warnings_naming_their_successor() -> None:
    [low] = scheduling(pool(), strategy="LOW_COST")
    assert low.severity == "warning"
    assert low.reason == (
        "LOW_COST (on-demand capacity with potential use of Spot VMs) is deprecated in the v1 API"
    )
    assert low.suggestion == "use SPOT"
    [on_demand] = scheduling(pool(), strategy="ON_DEMAND")
    assert (on_demand.severity, on_demand.suggestion) == ("warning", "use STANDARD")
    [typo] = scheduling(pool(), strategy="FLEX_STRAT")
    assert typo.suggestion == "did you mean FLEX_START?"


def test_flex_start_serves_only_some_gpus() -> None:
    [t4] = scheduling(pool("n1-standard-8", "NVIDIA_TESLA_T4", 1), strategy="FLEX_START")
    assert t4.path == f"{MS}.acceleratorType"
    assert t4.reason.endswith("GPUs; this pool has NVIDIA_TESLA_T4")
    assert scheduling(pool("g2-standard-8", "NVIDIA_L4", 1), strategy="FLEX_START") == []


def test_flex_start_needs_one_machine_configuration_and_seven_days() -> None:
    job = [
        pool("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1),
        pool("a2-highgpu-2g", "NVIDIA_TESLA_A100", 2),
    ]
    [mixed] = rule(validate(spec(*job, scheduling={"strategy": "FLEX_START"})), "scheduling")
    assert mixed.path == "workerPoolSpecs"
    [long] = scheduling(
        pool("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1), strategy="FLEX_START", timeout="8d"
    )
    assert long.path == "scheduling.timeout"
    assert long.suggestion == "set timeout to at most 604800s"


def test_max_wait_zero_waits_without_limit() -> None:
    a100 = pool("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1)
    assert scheduling(a100, strategy="FLEX_START", maxWaitDuration="0s") == []


# --- boot disks -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("machine", "acc", "count"),
    [
        ("a3-ultragpu-8g", "NVIDIA_H200_141GB", 8),
        ("a4-highgpu-8g", "NVIDIA_B200", 8),
        ("a4x-highgpu-4g", "NVIDIA_GB200", 4),
        ("g4-standard-96", "NVIDIA_RTX_PRO_6000", 2),
    ],
)
def test_hyperdisk_only_series(machine: str, acc: str, count: int) -> None:
    ssd = pool(machine, acc, count, diskSpec={"bootDiskType": "pd-ssd"})
    [v] = rule(validate(spec(ssd)), "disk")
    assert v.path == "workerPoolSpecs[0].diskSpec.bootDiskType"
    assert v.reason == f"{machine} boots only from hyperdisk-balanced, not pd-ssd"
    assert v.suggestion == "set bootDiskType: hyperdisk-balanced"
    hyper = pool(machine, acc, count, diskSpec={"bootDiskType": "hyperdisk-balanced"})
    assert rule(validate(spec(hyper)), "disk") == []


def test_older_series_take_every_vertex_disk_type() -> None:
    for kind in ("pd-ssd", "pd-standard", "hyperdisk-balanced"):
        doc = pool("n1-standard-8", diskSpec={"bootDiskType": kind})
        assert rule(validate(spec(doc)), "disk") == []


# --- NFS and Lustre mounts --------------------------------------------------------------------


def mounts(**extra: Any) -> list[Violation]:
    return rule(validate(spec(pool(**extra))), "mounts")


def test_good_mounts() -> None:
    assert (
        mounts(
            nfsMounts=[{"server": "10.0.0.2", "path": "/vol1", "mountPoint": "data"}],
            lustreMounts=[
                {
                    "instanceIp": "10.0.0.9",
                    "volumeHandle": "proj/us-central1-a/lustre1",
                    "filesystem": "lfs",
                    "mountPoint": "scratch",
                }
            ],
        )
        == []
    )


def test_nfs_mount_fields() -> None:
    found = mounts(
        nfsMounts=[
            {"server": "filer.example", "path": "vol1", "mountPoint": "data"},
            {"server": "10.0.0.2", "path": "/vol2", "mountPoint": "data"},
            {"server": "10.0.0.3", "path": "/vol3", "mountPoint": "../etc"},
        ]
    )
    assert [(v.path, v.reason) for v in found] == [
        ("workerPoolSpecs[0].nfsMounts[0].server", "'filer.example' is not an IP address"),
        ("workerPoolSpecs[0].nfsMounts[0].path", "must start with '/'"),
        ("workerPoolSpecs[0].nfsMounts[1].mountPoint", "'data' is mounted twice"),
        ("workerPoolSpecs[0].nfsMounts[2].mountPoint", "must stay inside its mount directory"),
    ]
    assert found[1].suggestion == "/vol1"


def test_lustre_instance_ip() -> None:
    [v] = mounts(
        lustreMounts=[
            {"instanceIp": "lustre", "volumeHandle": "h", "filesystem": "f", "mountPoint": "m"}
        ]
    )
    assert v.path == "workerPoolSpecs[0].lustreMounts[0].instanceIp"


# --- the catalog itself -------------------------------------------------------------------


def test_new_families_in_the_catalog() -> None:
    catalog = load_catalog()
    a4x = catalog.machine_types["a4x-highgpu-4g"]
    assert (a4x.fixed_accelerator, a4x.fixed_accelerator_count, a4x.cpu_arch) == (
        "NVIDIA_GB200",
        4,
        "arm64",
    )
    assert a4x.capacity == ("RESERVATION",)
    g4 = {
        m: catalog.machine_types[m].fixed_accelerator_count
        for m in catalog.machine_types
        if m.startswith("g4-")
    }
    assert g4 == {
        "g4-standard-48": 1,
        "g4-standard-96": 2,
        "g4-standard-192": 4,
        "g4-standard-384": 8,
    }
    for machine in ("a3-ultragpu-8g", "a4-highgpu-8g"):
        assert catalog.machine_types[machine].capacity == ("RESERVATION", "FLEX_START", "SPOT")
    assert not catalog.machine_types["n1-highcpu-8"].training


def test_n1_types_vertex_training_accepts() -> None:
    catalog = load_catalog()
    n1 = sorted(
        (m.name for m in catalog.machine_types.values() if m.family == "n1" and m.training),
        key=lambda n: (n.split("-")[1], int(n.split("-")[2])),
    )
    sizes = {
        kind: [int(n.split("-")[2]) for n in n1 if n.split("-")[1] == kind]
        for kind in ("standard", "highmem", "highcpu")
    }
    assert sizes == {
        "standard": [4, 8, 16, 32, 64, 96],
        "highmem": [2, 4, 8, 16, 32, 64, 96],
        "highcpu": [16, 32, 64, 96],
    }


def test_every_legacy_row_maps_to_a_job_vertex_accepts_but_for_retired_gpus() -> None:
    """Each legacy machine type, converted, passes validation; K80 rows fail only as retired."""
    catalog = load_catalog()
    for legacy in catalog.legacy_machine_types.values():
        doc = pool(legacy.machine_type, legacy.accelerator, legacy.accelerator_count)
        problems = validate(spec(doc), region="us-central1")
        retired = legacy.accelerator and catalog.accelerators[legacy.accelerator].retired
        assert {v.rule for v in problems} <= (
            {"retired", "region", "zone"} if retired else set()
        ), (
            legacy.name,
            [str(v) for v in problems],
        )
    assert catalog.legacy_machine_types["complex_model_s"].machine_type == "n1-standard-8"
    assert "n1-highcpu-8" in catalog.legacy_machine_types["complex_model_s"].note
    for tier in catalog.scale_tiers.values():
        for name in (tier.master_type, tier.worker_type, tier.parameter_server_type):
            assert name is None or name in catalog.legacy_machine_types, (tier.name, name)


# --- TPU VMs ------------------------------------------------------------------------------


def test_tpu_pool_beside_other_pools_is_refused() -> None:
    chief = pool("n1-standard-8")
    tpu = pool("cloud-tpu", "TPU_V3", 8)
    [v] = [x for x in validate(spec(chief, tpu)) if x.rule == "pools"]
    assert v.path == "workerPoolSpecs[1].machineSpec.acceleratorType"
    assert "Vertex AI takes a single worker pool, not 2" in v.reason
    assert validate(spec(tpu)) == []


# --- project ---------------------------------------------------------------------------------


@pytest.mark.parametrize("project", ["my-project", "123456789012", "example.com:my-project"])
def test_project_ids_numbers_and_domain_scoped_ids_are_accepted(project: str) -> None:
    assert [
        v for v in validate(spec(pool("n1-standard-4"), project=project)) if v.rule == "project"
    ] == []


@pytest.mark.parametrize("project", ["p", "My-Project", "0123", "my_project", "-abcdef"])
def test_malformed_project_is_refused(project: str) -> None:
    [v] = [v for v in validate(spec(pool("n1-standard-4"), project=project)) if v.rule == "project"]
    assert v.path == "project" and "is not a project ID or number" in v.reason
