"""The catalog data: loads, is consistent, and says where every row comes from."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from components import CatalogError, load_catalog, load_catalog_from
from components.rules._catalog import CATALOG_DIR, combinations, regions_offering, zones_offering


def test_every_row_of_every_file_has_a_source() -> None:
    files = sorted(CATALOG_DIR.glob("*.csv"))
    assert len(files) >= 10
    for path in files:
        with path.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        assert rows, path.name
        for number, row in enumerate(rows, start=2):
            assert (row.get("source") or "").strip(), f"{path.name}:{number} has no source"
            assert None not in row, f"{path.name}:{number} has too many columns"


def test_real_catalog_facts() -> None:
    catalog = load_catalog()
    k80 = catalog.accelerators["NVIDIA_TESLA_K80"]
    assert k80.retired and k80.replacement == "NVIDIA_TESLA_T4"
    assert catalog.machine_types["n1-standard-32"].vcpus == 32
    assert catalog.machine_types["n1-standard-32"].memory_gb == 120
    assert catalog.attachable_counts[("a2-megagpu-16g", "NVIDIA_TESLA_A100")] == (16,)
    assert catalog.attachable_counts[("g2-standard-24", "NVIDIA_L4")] == (2,)
    assert catalog.legacy_machine_types["complex_model_m_gpu"].accelerator_count == 4
    # The 16 GPU regions of seed 001 all offer some GPU.
    for region in (
        "us-west1",
        "us-west2",
        "us-central1",
        "us-east1",
        "us-east4",
        "northamerica-northeast1",
        "southamerica-east1",
        "europe-west1",
        "europe-west2",
        "europe-west4",
        "asia-south1",
        "asia-southeast1",
        "asia-east1",
        "asia-northeast1",
        "asia-northeast3",
        "australia-southeast1",
    ):
        assert catalog.region_accelerators[region], region
    assert not catalog.region_accelerators["asia-northeast2"]


def test_queries() -> None:
    catalog = load_catalog()
    assert (
        zones_offering(
            catalog, "us-central1", ["NVIDIA_TESLA_T4", "NVIDIA_TESLA_K80", "NVIDIA_TESLA_P100"]
        )
        == []
    )
    assert "us-central1" in regions_offering(catalog, ["NVIDIA_TESLA_T4"])
    rows = combinations(catalog, accelerator="NVIDIA_TESLA_V100", machine_type="n1-standard-32")
    assert [(r.counts, r.vcpus) for r in rows] == [((4, 8), 32)]


def _copy_catalog(tmp_path: Path) -> Path:
    for path in CATALOG_DIR.glob("*.csv"):
        (tmp_path / path.name).write_text(path.read_text())
    return tmp_path


def test_unknown_reference_fails_loudly(tmp_path: Path) -> None:
    directory = _copy_catalog(tmp_path)
    with (directory / "attachable_counts.csv").open("a") as handle:
        handle.write("n1-standard-5,NVIDIA_TESLA_T4,1,test\n")
    with pytest.raises(CatalogError, match="unknown machine type n1-standard-5"):
        load_catalog_from(directory)


@pytest.mark.parametrize(
    ("name", "line", "message"),
    [
        ("machine_types.csv", "m,n1,four,1,,,src\n", "must be a number"),
        ("regions.csv", "r,Europe,\n", "needs a source"),
        ("zones.csv", "z,nowhere,NVIDIA_TESLA_T4,src\n", "unknown region nowhere"),
    ],
)
def test_bad_rows_name_the_file(tmp_path: Path, name: str, line: str, message: str) -> None:
    directory = _copy_catalog(tmp_path)
    with (directory / name).open("a") as handle:
        handle.write(line)
    with pytest.raises(CatalogError, match=message):
        load_catalog_from(directory)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="cannot read catalog file"):
        load_catalog_from(tmp_path)
