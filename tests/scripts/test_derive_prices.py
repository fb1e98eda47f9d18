"""scripts/derive_prices.py on a small Compute Engine price file written here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from components._catalog import CATALOG_DIR
from scripts.derive_prices import UPLIFT, derive

HEADER = "region,kind,name,accelerator_count,vcpus,memory_gib,on_demand_usd_per_hour,spot_usd_per_hour,zones\n"
REFERENCE = HEADER + (
    "us-central1,machine,n1-standard-4,,4,15,0.19,0.05,us-central1-a\n"
    "us-central1,machine,n2-standard-4,,4,16,0.2,0.06,us-central1-a\n"
    "us-central1,machine,a4-highgpu-8g,,224,3968,0.0,0.0,us-central1-b\n"
    "us-central1,accelerator,T4,1,,,0.35,0.1,us-central1-a\n"
    "us-central1,accelerator,T4,4,,,1.4,0.4,us-central1-a\n"
    "us-central1,accelerator,A100,1,,,2.0,1.0,us-central1-a\n"
    "us-central1,accelerator,A100-80GB,1,,,1.5,1.6,us-central1-a\n"
)


Rows = dict[tuple[str, str, str], dict[str, str]]


@pytest.fixture
def rows(tmp_path: Path) -> Rows:
    catalog = tmp_path / "catalog"
    shutil.copytree(CATALOG_DIR, catalog)
    reference = tmp_path / "ce.csv"
    reference.write_text(REFERENCE)
    found, _ = derive(reference, catalog)
    return {(r["region"], r["resource_kind"], r["name"]): r for r in found}


def test_prices_are_compute_engine_times_the_uplift_marked_by_family(rows: Rows) -> None:
    n2 = rows[("us-central1", "machine", "n2-standard-4")]
    assert float(n2["on_demand_usd_per_hour"]) == pytest.approx(0.2 * UPLIFT)
    assert float(n2["spot_usd_per_hour"]) == pytest.approx(0.06 * UPLIFT)
    assert (n2["basis"], n2["spot_basis"]) == ("unverified", "unverified")
    assert "uplift not checked for n2" in n2["source"]
    a100 = rows[("us-central1", "accelerator", "NVIDIA_TESLA_A100")]
    assert float(a100["on_demand_usd_per_hour"]) == pytest.approx(2.0 * UPLIFT)


def test_the_vertex_rows_are_kept_and_checked_against_the_uplift(rows: Rows) -> None:
    n1 = rows[("us-central1", "machine", "n1-standard-4")]
    assert (n1["on_demand_usd_per_hour"], n1["basis"]) == ("0.21849885", "vertex")
    assert n1["source"].endswith("uplift check matches")
    t4 = rows[("us-central1", "accelerator", "NVIDIA_TESLA_T4")]
    assert t4["basis"] == "vertex" and float(t4["spot_usd_per_hour"]) == pytest.approx(0.115)


def test_sanity_checks_mark_what_they_catch(rows: Rows) -> None:
    # 80 GB below 40 GB per GPU: both flagged; Spot above on-demand: on-demand is its bound.
    a100_80 = rows[("us-central1", "accelerator", "NVIDIA_A100_80GB")]
    assert a100_80["basis"] == "unverified"
    assert "check failed: cheaper per GPU than NVIDIA_TESLA_A100" in a100_80["source"]
    assert a100_80["spot_basis"] == "bound"
    assert a100_80["spot_usd_per_hour"] == a100_80["on_demand_usd_per_hour"]
    assert "check failed" in rows[("us-central1", "accelerator", "NVIDIA_TESLA_A100")]["source"]
    # A zero is no price, and a cell the source lacks is unknown, each saying why.
    a4 = rows[("us-central1", "machine", "a4-highgpu-8g")]
    assert (a4["on_demand_usd_per_hour"], a4["basis"]) == ("", "unknown")
    assert a4["source"].startswith("unknown: the source lists it at 0.0")
    n2 = rows[("europe-west4", "machine", "n2-standard-4")]
    assert n2["source"].startswith("unknown: the source lists no n2-standard-4 in europe-west4")
