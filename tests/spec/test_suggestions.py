"""Suggestions that use their context: what the machine takes, gcloud's names, shorthands.

Each test asserts the exact suggestion a user reads, with the real catalog or a tiny one.
"""

from __future__ import annotations

import pytest

from components import Catalog, Violation, load_catalog, validate
from components.rules._catalog import (
    Accelerator,
    MachineType,
    Region,
    Zone,
    accepted_accelerators,
    combinations,
    resolve_accelerator,
)
from tests.spec.helpers import pool, spec

ACC = "workerPoolSpecs[0].machineSpec.acceleratorType"
MACHINE = "workerPoolSpecs[0].machineSpec.machineType"


def at(violations: list[Violation], path: str) -> list[Violation]:
    return [v for v in violations if v.path == path]


def one(violations: list[Violation], path: str) -> Violation:
    found = at(violations, path)
    assert len(found) == 1, [str(v) for v in violations]
    return found[0]


# --- accelerator names ----------------------------------------------------------------


def test_nvidia_a100_on_a2_highgpu_suggests_the_one_type_that_machine_takes() -> None:
    """The issue's case: never B200, A100 80GB or V100 for the A100 machine."""
    v = one(validate(spec(pool("a2-highgpu-1g", "NVIDIA_A100", 1))), ACC)
    assert v.rule == "accelerator"
    assert v.suggestion == "the API spells it NVIDIA_TESLA_A100"


@pytest.mark.parametrize(
    ("written", "machine", "count", "enum"),
    [
        ("nvidia-tesla-t4", "n1-standard-8", 1, "NVIDIA_TESLA_T4"),
        ("T4", "n1-standard-8", 1, "NVIDIA_TESLA_T4"),
        ("V100", "n1-standard-8", 1, "NVIDIA_TESLA_V100"),
        ("tesla t4", "n1-standard-8", 1, "NVIDIA_TESLA_T4"),
        ("A100", "a2-highgpu-1g", 1, "NVIDIA_TESLA_A100"),
        ("nvidia_tesla_a100", "a2-highgpu-1g", 1, "NVIDIA_TESLA_A100"),
        ("a100-80gb", "a2-ultragpu-1g", 1, "NVIDIA_A100_80GB"),
        ("L4", "g2-standard-8", 1, "NVIDIA_L4"),
        ("H100", "a3-highgpu-8g", 8, "NVIDIA_H100_80GB"),
        ("h100-mega", "a3-megagpu-8g", 8, "NVIDIA_H100_MEGA_80GB"),
        ("H200", "a3-ultragpu-8g", 8, "NVIDIA_H200_141GB"),
        ("b200", "a4-highgpu-8g", 8, "NVIDIA_B200"),
        ("gb200", "a4x-highgpu-4g", 4, "NVIDIA_GB200"),
        ("rtx-pro-6000", "g4-standard-48", 1, "NVIDIA_RTX_PRO_6000"),
        ("nvidia-rtx-pro-6000", "g4-standard-96", 2, "NVIDIA_RTX_PRO_6000"),
    ],
)
def test_name_forms_that_are_not_the_enum_get_the_exact_enum(
    written: str, machine: str, count: int, enum: str
) -> None:
    v = one(validate(spec(pool(machine, written, count))), ACC)
    assert v.reason == f"unknown accelerator type {written!r}"
    assert v.suggestion == f"the API spells it {enum}"


def test_shorthand_for_a_gpu_the_machine_cannot_take_names_what_it_takes() -> None:
    v = one(validate(spec(pool("a2-highgpu-1g", "A100_80GB", 1))), ACC)
    assert v.suggestion == (
        "the API spells it NVIDIA_A100_80GB, which a2-highgpu-1g cannot take; "
        "a2-highgpu-1g takes NVIDIA_TESLA_A100"
    )
    g2 = one(validate(spec(pool("g2-standard-8", "A100", 1))), ACC)
    assert g2.suggestion == (
        "the API spells it NVIDIA_TESLA_A100, which g2-standard-8 cannot take; "
        "g2-standard-8 takes NVIDIA_L4"
    )


def test_a_misspelt_type_gets_the_nearest_types_the_machine_takes_never_retired() -> None:
    v = one(validate(spec(pool("n1-standard-8", "NVIDIA_TESLA_T5", 1))), ACC)
    assert v.suggestion == "did you mean NVIDIA_TESLA_T4 or NVIDIA_TESLA_P4?"
    typo = one(validate(spec(pool("a2-highgpu-1g", "NVIDIA_TESLA_A10", 1))), ACC)
    assert typo.suggestion == "did you mean NVIDIA_TESLA_A100?"
    k80ish = one(validate(spec(pool("n1-standard-8", "NVIDIA_TESLA_K81", 1))), ACC)
    assert "K80" not in (k80ish.suggestion or "")


def test_nonsense_on_a_one_gpu_machine_names_that_gpu() -> None:
    v = one(validate(spec(pool("a2-highgpu-1g", "FOO", 1))), ACC)
    assert v.suggestion == "a2-highgpu-1g takes NVIDIA_TESLA_A100"


def test_shorthand_table_is_catalog_data() -> None:
    """A tiny catalog's aliases column is the whole table: nothing is hard-wired."""
    catalog = Catalog(
        machine_types={"m": MachineType("m", "n1", 4, 15), "x": MachineType("x", "x9", 8, 30)},
        accelerators={
            "ACME_ZX9": Accelerator("ACME_ZX9", gcloud_name="acme-zx9", aliases=("zx9", "zed")),
            "ACME_Q1": Accelerator("ACME_Q1", aliases=("q1",)),
        },
        attachable_counts={("m", "ACME_ZX9"): (1,), ("x", "ACME_Q1"): (1,)},
    )
    assert resolve_accelerator(catalog, "ZED") == "ACME_ZX9"
    assert resolve_accelerator(catalog, "nvidia zx9") == "ACME_ZX9"
    assert resolve_accelerator(catalog, "T4") is None  # not in this catalog
    v = one(validate(spec(pool("m", "zed", 1)), catalog=catalog), ACC)
    assert v.suggestion == "the API spells it ACME_ZX9"
    other = one(validate(spec(pool("m", "q1", 1)), catalog=catalog), ACC)
    assert other.suggestion == "the API spells it ACME_Q1, which m cannot take; m takes ACME_ZX9"


def test_accepted_accelerators_fixed_first() -> None:
    catalog = load_catalog()
    assert accepted_accelerators(catalog, "a2-highgpu-1g") == ("NVIDIA_TESLA_A100",)
    assert accepted_accelerators(catalog, "g4-standard-192") == ("NVIDIA_RTX_PRO_6000",)
    assert accepted_accelerators(catalog, "n1-standard-8") == (
        "NVIDIA_TESLA_K80",
        "NVIDIA_TESLA_P100",
        "NVIDIA_TESLA_P4",
        "NVIDIA_TESLA_T4",
        "NVIDIA_TESLA_V100",
    )
    assert accepted_accelerators(catalog, "e2-standard-4") == ()


# --- machine types ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "suggestion"),
    [
        ("n1-highmem-9", "did you mean n1-highmem-8 or n1-highmem-4?"),
        ("a2-highgpu-3g", "did you mean a2-highgpu-2g or a2-highgpu-4g?"),
        ("g4-standard-50", "did you mean g4-standard-48 or g4-standard-96?"),
        ("n1-standrad-8", "did you mean n1-standard-8 or n1-standard-4?"),
        # n1-highcpu-8 exists but Vertex AI training refuses it: never suggested.
        ("n1-highcpu-7", "did you mean n1-highcpu-16 or n1-highcpu-32?"),
    ],
)
def test_misspelt_machine_gets_the_nearest_accepted_type_same_family_first(
    written: str, suggestion: str
) -> None:
    v = one(validate(spec(pool(written))), MACHINE)
    assert v.reason == f"unknown machine type {written!r}"
    assert v.suggestion == suggestion


def test_machine_vertex_training_refuses_suggests_the_nearest_accepted() -> None:
    v = one(validate(spec(pool("n1-highcpu-8"))), MACHINE)
    assert v.rule == "machine"
    assert v.reason == "Vertex AI training does not accept n1-highcpu-8"
    assert v.suggestion == (
        "the nearest machine types it accepts: n1-standard-8, n1-highmem-8 or n1-highcpu-16"
    )


# --- retired GPUs and regions ---------------------------------------------------------


def test_retired_gpu_is_never_offered_anywhere_its_replacement_is() -> None:
    job = spec(pool("n1-standard-8", "NVIDIA_TESLA_K80", 1))
    retired, region = at(validate(job, region="europe-west4"), ACC)
    assert retired.rule == "retired"
    assert region.rule == "region"
    assert region.suggestion == (
        "NVIDIA_TESLA_K80 is retired: use NVIDIA_TESLA_T4, which europe-west4 offers"
    )
    nowhere = [v for v in validate(job, region="asia-northeast2") if v.rule == "region"]
    assert nowhere[0].suggestion is not None
    assert nowhere[0].suggestion.startswith(
        "NVIDIA_TESLA_K80 is retired: use NVIDIA_TESLA_T4 (offered in asia-northeast1, "
    )
    assert all(
        c.regions == () for c in combinations(load_catalog(), accelerator="NVIDIA_TESLA_K80")
    )


def test_zone_rule_with_a_retired_gpu_suggests_its_replacement() -> None:
    job = spec(
        pool("n1-standard-8", "NVIDIA_TESLA_T4", 1),
        pool("n1-standard-8", "NVIDIA_TESLA_P100", 1),
        pool("n1-highmem-8", "NVIDIA_TESLA_K80", 1),
    )
    [zone] = [v for v in validate(job, region="us-central1") if v.rule == "zone"]
    # P100 is past its end of support on Vertex AI (2026-09-15) as K80 is: both get T4.
    assert zone.suggestion == (
        "replace the retired NVIDIA_TESLA_P100 with NVIDIA_TESLA_T4; replace the retired "
        "NVIDIA_TESLA_K80 with NVIDIA_TESLA_T4: us-central1-a then offers NVIDIA_TESLA_T4 together"
    )


def test_gpu_without_zone_data_is_a_warning_not_a_wrong_reject() -> None:
    catalog = Catalog(
        machine_types={"m": MachineType("m", "g9", 8, 30, "NEW", 1)},
        accelerators={"NEW": Accelerator("NEW"), "OLD": Accelerator("OLD")},
        attachable_counts={("m", "NEW"): (1,)},
        regions={"r": Region("r")},
        zones={"r-a": Zone("r-a", "r", frozenset({"OLD"}))},
    )
    [v] = validate(spec(pool("m", "NEW", 1)), catalog=catalog, region="r")
    assert v.severity == "warning" and v.rule == "region"
    assert (
        v.reason == "the catalog has no training-region data for NEW, "
        "so its availability in r is not checked"
    )
