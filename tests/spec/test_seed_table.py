"""Every cell of the seed 001 'valid GPU counts per machine type' table is a test case.

The table is restated here (not read from the catalog) so a wrong catalog row fails.
Read correctly, A100 is only attachable to the a2 machine types.
"""

from __future__ import annotations

import pytest

from components import validate
from tests.spec.helpers import pool, spec

GPUS = (
    "NVIDIA_TESLA_A100",
    "NVIDIA_TESLA_K80",
    "NVIDIA_TESLA_P4",
    "NVIDIA_TESLA_P100",
    "NVIDIA_TESLA_T4",
    "NVIDIA_TESLA_V100",
)
_ = ()
SEED_TABLE: dict[str, tuple[tuple[int, ...], ...]] = {
    # machine:          A100   K80           P4         P100       T4         V100
    "n1-standard-4": (_, (1, 2, 4, 8), (1, 2, 4), (1, 2, 4), (1, 2, 4), (1, 2, 4, 8)),
    "n1-standard-8": (_, (1, 2, 4, 8), (1, 2, 4), (1, 2, 4), (1, 2, 4), (1, 2, 4, 8)),
    "n1-standard-16": (_, (2, 4, 8), (1, 2, 4), (1, 2, 4), (1, 2, 4), (2, 4, 8)),
    "n1-standard-32": (_, (4, 8), (2, 4), (2, 4), (2, 4), (4, 8)),
    "n1-standard-64": (_, _, (4,), _, (4,), (8,)),
    "n1-standard-96": (_, _, (4,), _, (4,), (8,)),
    "n1-highmem-2": (_, (1, 2, 4, 8), (1, 2, 4), (1, 2, 4), (1, 2, 4), (1, 2, 4, 8)),
    "n1-highmem-4": (_, (1, 2, 4, 8), (1, 2, 4), (1, 2, 4), (1, 2, 4), (1, 2, 4, 8)),
    "n1-highmem-8": (_, (1, 2, 4, 8), (1, 2, 4), (1, 2, 4), (1, 2, 4), (1, 2, 4, 8)),
    "n1-highmem-16": (_, (2, 4, 8), (1, 2, 4), (1, 2, 4), (1, 2, 4), (2, 4, 8)),
    "n1-highmem-32": (_, (4, 8), (2, 4), (2, 4), (2, 4), (4, 8)),
    "n1-highmem-64": (_, _, (4,), _, (4,), (8,)),
    "n1-highmem-96": (_, _, (4,), _, (4,), (8,)),
    "n1-highcpu-16": (_, (2, 4, 8), (1, 2, 4), (1, 2, 4), (1, 2, 4), (2, 4, 8)),
    "n1-highcpu-32": (_, (4, 8), (2, 4), (2, 4), (2, 4), (4, 8)),
    "n1-highcpu-64": (_, (8,), (4,), (4,), (4,), (8,)),
    "n1-highcpu-96": (_, _, (4,), _, (4,), (8,)),
    "a2-highgpu-1g": ((1,), _, _, _, _, _),
    "a2-highgpu-2g": ((2,), _, _, _, _, _),
    "a2-highgpu-4g": ((4,), _, _, _, _, _),
    "a2-highgpu-8g": ((8,), _, _, _, _, _),
    "a2-megagpu-16g": ((16,), _, _, _, _, _),
}
COUNTS_TRIED = (1, 2, 3, 4, 6, 8, 16)
CASES = [
    (machine, gpu, count, count in SEED_TABLE[machine][column])
    for machine in SEED_TABLE
    for column, gpu in enumerate(GPUS)
    for count in COUNTS_TRIED
]


def _hardware_problems(machine: str, gpu: str, count: int) -> list[str]:
    violations = validate(spec(pool(machine, gpu, count)))
    return [
        str(v)
        for v in violations
        if v.rule in ("compatibility", "host-limits", "accelerator", "machine")
    ]


@pytest.mark.parametrize(("machine", "gpu", "count", "allowed"), CASES, ids=lambda v: str(v))
def test_seed_table_cell(machine: str, gpu: str, count: int, allowed: bool) -> None:
    problems = _hardware_problems(machine, gpu, count)
    if allowed:
        assert problems == []
    else:
        assert problems, f"{count} x {gpu} on {machine} must be rejected"
        assert any("acceleratorCount" in p or "acceleratorType" in p for p in problems)


def test_table_has_every_cell() -> None:
    assert len(CASES) == len(SEED_TABLE) * len(GPUS) * len(COUNTS_TRIED)
    assert sum(1 for c in CASES if c[3]) == 185


def test_three_t4_rejected_with_allowed_counts() -> None:
    violations = validate(spec(pool("n1-highcpu-16", "NVIDIA_TESLA_T4", 3)))
    [violation] = [v for v in violations if v.rule == "compatibility"]
    assert violation.path == "workerPoolSpecs[0].machineSpec.acceleratorCount"
    assert violation.suggestion == "allowed counts of NVIDIA_TESLA_T4 on n1-highcpu-16: 1, 2, 4"


def test_n1_standard_32_needs_at_least_four_v100() -> None:
    violations = validate(spec(pool("n1-standard-32", "NVIDIA_TESLA_V100", 2)))
    [violation] = [v for v in violations if v.rule == "compatibility"]
    assert "needs at least 4" in violation.reason
    assert "24 vCPUs" in violation.reason  # 2 V100 give 24 vCPUs, the machine has 32
    assert violation.suggestion is not None and violation.suggestion.endswith(": 4, 8")
    three = validate(spec(pool("n1-standard-32", "NVIDIA_TESLA_V100", 3)))
    assert any(v.rule == "compatibility" and "3 x NVIDIA_TESLA_V100" in v.reason for v in three)
    assert [v for v in validate(spec(pool("n1-standard-32", "NVIDIA_TESLA_V100", 4)))] == []


def test_mixed_gpus_need_one_zone_us_central1() -> None:
    job = spec(
        pool("n1-standard-8", "NVIDIA_TESLA_T4", 1),
        pool("n1-standard-8", "NVIDIA_TESLA_P100", 1),
        pool("n1-highmem-8", "NVIDIA_TESLA_K80", 1),
    )
    violations = validate(job, region="us-central1")
    zone = [v for v in violations if v.rule == "zone"]
    assert len(zone) == 1
    assert zone[0].path == "workerPoolSpecs"
    assert "no zone of us-central1" in zone[0].reason
    for gpu in ("NVIDIA_TESLA_T4", "NVIDIA_TESLA_P100", "NVIDIA_TESLA_K80"):
        assert gpu in zone[0].reason
    # Each GPU on its own is offered in us-central1: only the zone rule fires for placement.
    assert not [v for v in violations if v.rule == "region"]
    # Two of the three share a zone (us-central1-c has T4 and P100).
    pair = spec(
        pool("n1-standard-8", "NVIDIA_TESLA_T4", 1), pool("n1-standard-8", "NVIDIA_TESLA_P100", 1)
    )
    assert not [v for v in validate(pair, region="us-central1") if v.rule == "zone"]
