"""scripts/derive_prices.py on a small Compute Engine price file written here."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from components.rules._catalog import CATALOG_DIR
from scripts.derive_prices import COLUMNS, FEE, UPLIFT, derive

HEADER = "region,kind,name,accelerator_count,vcpus,memory_gib,on_demand_usd_per_hour,spot_usd_per_hour,zones\n"
REFERENCE = HEADER + (
    "us-central1,machine,n1-standard-4,,4,15,0.19,0.05,us-central1-a\n"
    "us-central1,machine,n2-standard-4,,4,16,0.2,0.06,us-central1-a\n"
    "us-central1,machine,a4-highgpu-8g,,224,3968,0.0,0.0,us-central1-b\n"
    "us-central1,accelerator,T4,1,,,0.35,0.1,us-central1-a\n"
    "us-central1,accelerator,T4,4,,,1.4,0.4,us-central1-a\n"
    "us-central1,accelerator,A100,1,,,2.0,1.0,us-central1-a\n"
    "us-central1,accelerator,A100-80GB,1,,,1.5,1.0,us-central1-a\n"
    # The rate of billing SKU 341A-49A5-0C07, "Nvidia H100 80GB GPU attached to DWS Defined
    # Duration VMs" (usage type OnDemand): a flex-start rate filed as on-demand.
    "us-east4,accelerator,H100,1,,,4.200761,2.0,us-east4-a\n"
    "us-east4,machine,a3-highgpu-8g,,208,1872,9.46006,3.0,us-east4-a\n"
    "us-central1,machine,a3-highgpu-8g,,208,1872,9.46006,3.0,us-central1-a\n"
    # Spot not below "on-demand" on a GPU that FLEX_START serves: the mark of a DWS rate.
    "us-central1,accelerator,L4,1,,,0.5,0.6,us-central1-a\n"
    # B200's machine (a4-highgpu-8g) has no on-demand capacity: its figure is no on-demand price.
    "us-central1,accelerator,B200,8,,,90.216,32.6064,us-central1-b\n"
)


Rows = dict[tuple[str, str, str], dict[str, str]]


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    """(the reference, a copy of the catalog directory)."""
    catalog = tmp_path / "catalog"
    shutil.copytree(CATALOG_DIR, catalog)
    # The shipped A100 and A2 SKUs would price those cells' Spot and flex-start from the SKUs;
    # the tests of the reference's own rates run without them (the SKU path has its own tests).
    snapshot = catalog / "billing_skus.csv"
    lines = snapshot.read_text(encoding="utf-8").splitlines(keepends=True)
    snapshot.write_text(
        "".join(line for line in lines if "A100" not in line and " A2 " not in line),
        encoding="utf-8",
    )
    reference = tmp_path / "ce.csv"
    reference.write_text(REFERENCE)
    return reference, catalog


@pytest.fixture
def rows(inputs: tuple[Path, Path]) -> Rows:
    found, _ = derive(*inputs)
    return {(r["region"], r["resource_kind"], r["name"]): r for r in found}


def test_prices_are_compute_engine_times_the_uplift_marked_by_family(rows: Rows) -> None:
    n2 = rows[("us-central1", "machine", "n2-standard-4")]
    assert float(n2["on_demand_usd_per_hour"]) == pytest.approx(0.2 * UPLIFT)
    assert (n2["basis"], n2["spot_basis"]) == ("unverified", "unverified")
    assert "uplift not checked for n2" in n2["source"]
    a100 = rows[("us-central1", "accelerator", "NVIDIA_TESLA_A100")]
    assert float(a100["on_demand_usd_per_hour"]) == pytest.approx(2.0 * UPLIFT)


def test_the_vertex_rows_are_kept_and_checked_against_the_uplift(rows: Rows) -> None:
    n1 = rows[("us-central1", "machine", "n1-standard-4")]
    assert (n1["on_demand_usd_per_hour"], n1["basis"]) == ("0.21849885", "vertex")
    assert n1["source"].endswith("uplift check matches")
    t4 = rows[("us-central1", "accelerator", "NVIDIA_TESLA_T4")]
    assert t4["basis"] == "vertex" and float(t4["spot_usd_per_hour"]) == pytest.approx(
        0.1 + FEE * 0.35
    )


def test_sanity_checks_mark_what_they_catch(rows: Rows) -> None:
    # 80 GB below 40 GB per GPU: both flagged; Spot above on-demand: on-demand is its bound.
    a100_80 = rows[("us-central1", "accelerator", "NVIDIA_A100_80GB")]
    assert a100_80["basis"] == "unverified"
    assert "check failed: cheaper per GPU than NVIDIA_TESLA_A100" in a100_80["source"]
    assert "check failed" in rows[("us-central1", "accelerator", "NVIDIA_TESLA_A100")]["source"]
    n1 = rows[("us-central1", "machine", "n1-standard-8")]  # no row in the reference
    assert n1["basis"] == "unknown"
    # A zero is no price, and a cell the source lacks is unknown, each saying why.
    a4 = rows[("us-central1", "machine", "a4-highgpu-8g")]
    assert (a4["on_demand_usd_per_hour"], a4["basis"]) == ("", "unknown")
    assert a4["source"].startswith("unknown: the source lists it at 0.0")
    n2 = rows[("europe-west4", "machine", "n2-standard-4")]
    assert n2["source"].startswith("unknown: the source lists no n2-standard-4 in europe-west4")


def test_spot_is_the_compute_engine_spot_rate_plus_the_management_fee(rows: Rows) -> None:
    # Vertex bills Spot as Compute Engine's Spot SKU plus its management fee, not Spot x 1.15.
    n2 = rows[("us-central1", "machine", "n2-standard-4")]
    assert float(n2["spot_usd_per_hour"]) == pytest.approx(0.06 + FEE * 0.2)
    assert n2["spot_basis"] == "unverified"
    assert "no public source gives the Spot fee" in n2["source"]
    a100 = rows[("us-central1", "accelerator", "NVIDIA_TESLA_A100")]
    assert float(a100["spot_usd_per_hour"]) == pytest.approx(1.0 + FEE * 2.0)


@pytest.mark.parametrize(
    ("region", "name", "figure", "why"),
    [
        ("us-east4", "NVIDIA_H100_80GB", 4.200761, "billing SKU 341A-49A5-0C07"),
        ("us-central1", "NVIDIA_L4", 0.5, "its Spot price 0.6 is not below it"),
        ("us-central1", "NVIDIA_B200", 90.216 / 8, "a4-highgpu-8g offer no on-demand capacity"),
    ],
)
def test_a_dws_rate_never_becomes_an_on_demand_price(
    rows: Rows, region: str, name: str, figure: float, why: str
) -> None:
    row = rows[(region, "accelerator", name)]
    assert (row["on_demand_usd_per_hour"], row["basis"]) == ("", "unknown")
    assert "is a DWS flex-start rate, not an on-demand price" in row["source"]
    assert why in row["source"]
    # It is the flex-start rate, without the fee (unknown there): a lower bound.
    assert float(row["flex_start_usd_per_hour"]) == pytest.approx(figure)
    assert row["flex_start_basis"] == "floor"


def test_flex_start_is_the_dws_rate_plus_the_fee_where_billing_skus_price_it(rows: Rows) -> None:
    # catalog/billing_skus.csv: Iowa's DWS SKUs and Vertex's management-fee SKUs for A3 / H100.
    h100 = rows[("us-central1", "accelerator", "NVIDIA_H100_80GB")]
    assert float(h100["flex_start_usd_per_hour"]) == pytest.approx(4.200761 + 1.4694826)
    assert h100["flex_start_basis"] == "vertex"
    assert "5853-505F-A5C4" in h100["source"]
    a3 = rows[("us-central1", "machine", "a3-highgpu-8g")]
    assert float(a3["on_demand_usd_per_hour"]) == pytest.approx(208 * 0.0293227 + 1872 * 0.0025534)
    assert float(a3["flex_start_usd_per_hour"]) == pytest.approx(
        208 * (0.010934 + 0.0038247) + 1872 * (0.000952 + 0.0003331)
    )
    # Elsewhere no DWS rate is known: on-demand stands in as the flex-start price's upper bound.
    a3_east = rows[("us-east4", "machine", "a3-highgpu-8g")]
    assert a3_east["flex_start_usd_per_hour"] == a3_east["on_demand_usd_per_hour"]
    assert a3_east["flex_start_basis"] == "bound"
    # A machine FLEX_START cannot run on has no flex-start price at all.
    assert rows[("us-central1", "machine", "n2-standard-4")]["flex_start_usd_per_hour"] == ""


def test_a_rebuild_of_its_own_output_changes_nothing(inputs: tuple[Path, Path]) -> None:
    # Rows the SKU snapshot priced (us-central1 a3-highgpu-8g) are made again, not kept.
    reference, catalog = inputs
    first, _ = derive(reference, catalog)
    with (catalog / "prices.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(first)
    again, _ = derive(reference, catalog)
    assert again == first
    # The shipped file's SKU-priced rows are not taken for Vertex prices a public page states.
    a3 = next(r for r in first if (r["region"], r["name"]) == ("us-central1", "a3-highgpu-8g"))
    assert "uplift check" not in a3["source"] and a3["source"].startswith("derived: ")


# T4 per GPU in four regions at Compute Engine's normal spread, and one at half the price: the
# mark of a flex-start (DWS) rate filed as on-demand, whatever the GPU or region.
SPREAD = HEADER + (
    "us-central1,accelerator,T4,1,,,0.35,0.1,us-central1-a\n"
    "us-east1,accelerator,T4,1,,,0.35,0.1,us-east1-c\n"
    "europe-west4,accelerator,T4,1,,,0.41,0.12,europe-west4-b\n"
    "asia-east2,accelerator,T4,1,,,0.45,0.13,asia-east2-a\n"
    "asia-southeast1,accelerator,T4,1,,,0.185,0.09,asia-southeast1-b\n"
)


def test_a_gpu_far_below_its_other_regions_is_no_on_demand_price(
    inputs: tuple[Path, Path],
) -> None:
    reference, catalog = inputs
    reference.write_text(SPREAD)
    found, _ = derive(reference, catalog)
    rows = {(r["region"], r["name"]): r for r in found if r["resource_kind"] == "accelerator"}
    odd = rows[("asia-southeast1", "NVIDIA_TESLA_T4")]
    assert (odd["on_demand_usd_per_hour"], odd["basis"]) == ("", "unknown")
    assert "regional check: 0.185 is 0.49x the median 0.38 of" in odd["source"]
    assert "likely a flex-start DWS rate" in odd["source"]
    # FLEX_START does not serve the T4: no flex-start price; its Spot rate is a lower bound.
    assert (odd["flex_start_usd_per_hour"], odd["flex_start_basis"]) == ("", "")
    assert (odd["spot_usd_per_hour"], odd["spot_basis"]) == ("0.09", "floor")
    # Normal regional spread (0.35 to 0.45) is no suspect.
    for region in ("us-east1", "europe-west4", "asia-east2"):
        row = rows[(region, "NVIDIA_TESLA_T4")]
        assert row["basis"] == "derived" and "regional check" not in row["source"], region


def test_spot_inputs_replace_the_references_spot_rates_with_their_source(
    inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    reference, catalog = inputs
    spot = tmp_path / "spot.csv"
    spot.write_text(
        "region,kind,name,accelerator_count,spot_usd_per_hour,as_of,source\n"
        "us-central1,machine,n2-standard-4,,0.08,2026-11-20,https://example.org/spot-n2\n"
        "us-central1,accelerator,A100,2,,2026-11-20,x\n".replace(",,2026", ",3.0,2026")
    )
    found, _ = derive(reference, catalog, spot_inputs=spot)
    rows = {(r["region"], r["name"]): r for r in found}
    n2 = rows[("us-central1", "n2-standard-4")]
    # The documented rule: the Compute Engine Spot rate + the fee (15% of Compute Engine's
    # on-demand rate), from the newer input, which the row names with its date.
    assert float(n2["spot_usd_per_hour"]) == pytest.approx(0.08 + FEE * 0.2)
    assert n2["spot_basis"] == "unverified"
    assert "Spot input: https://example.org/spot-n2 (as of 2026-11-20)" in n2["source"]
    a100 = rows[("us-central1", "NVIDIA_TESLA_A100")]  # two GPUs at 3.0: 1.5 per GPU
    assert float(a100["spot_usd_per_hour"]) == pytest.approx(1.5 + FEE * 2.0)
    # A cell without an input keeps the reference's Spot rate and says nothing of inputs.
    t4 = rows[("us-central1", "NVIDIA_TESLA_T4")]
    assert "Spot input:" not in t4["source"]


# A Compute Engine on-demand GPU SKU as the Catalog API lists it: a test input, not a real price.
SECOND_SOURCE = (
    "6001-C0DE-0001,Compute Engine,TEST-L4-0001,Nvidia L4 GPU running in Americas,Compute,GPU,"
    "OnDemand,us-central1,h,0.7,2026-11-30,test fixture (not a real price)\n"
)


def test_an_unknown_gpu_cell_takes_a_second_public_source_where_the_snapshot_has_one(
    inputs: tuple[Path, Path],
) -> None:
    reference, catalog = inputs
    with (catalog / "billing_skus.csv").open("a", encoding="utf-8") as handle:
        handle.write(SECOND_SOURCE)
    found, _ = derive(reference, catalog)
    rows = {(r["region"], r["resource_kind"], r["name"]): r for r in found}
    l4 = rows[("us-central1", "accelerator", "NVIDIA_L4")]
    # Compute Engine's on-demand rate x the uplift, unverified; the reference's reason kept.
    assert float(l4["on_demand_usd_per_hour"]) == pytest.approx(0.7 * UPLIFT)
    assert (l4["basis"], l4["as_of"]) == ("unverified", "2026-11-30")
    assert l4["source"].startswith(
        "derived: Compute Engine billing SKU TEST-L4-0001 'Nvidia L4 GPU running in Americas' "
        "(2026-11-30; test fixture (not a real price)) x 1.15 Vertex uplift"
    )
    assert "the reference: the source's figure 0.5 is a DWS flex-start rate" in l4["source"]
    # The floors (the rates without the fee) get the fee, 15% of that on-demand rate.
    assert float(l4["spot_usd_per_hour"]) == pytest.approx(0.6 + FEE * 0.7)
    assert float(l4["flex_start_usd_per_hour"]) == pytest.approx(0.5 + FEE * 0.7)
    assert (l4["spot_basis"], l4["flex_start_basis"]) == ("unverified", "unverified")
    # Where the snapshot has none the cell stays unknown, saying a second source was looked for.
    b200 = rows[("us-central1", "accelerator", "NVIDIA_B200")]
    assert b200["basis"] == "unknown"
    assert b200["source"].endswith(
        "; no second public source: the billing snapshot (billing_skus.csv) has no Compute "
        "Engine on-demand SKU for NVIDIA_B200 in us-central1"
    )


def test_the_counts_per_basis_move_one_cell_from_unknown_to_unverified(
    inputs: tuple[Path, Path],
) -> None:
    reference, catalog = inputs
    _, before = derive(reference, catalog)
    with (catalog / "billing_skus.csv").open("a", encoding="utf-8") as handle:
        handle.write(SECOND_SOURCE)
    _, after = derive(reference, catalog)
    assert after["unknown"] == before["unknown"] - 1
    assert after["unverified"] == before["unverified"] + 1


# Compute Engine A100 SKUs of each capacity as the Catalog API lists them: test inputs only.
CAPACITY_SKUS = "".join(
    f"6001-C0DE-0001,Compute Engine,TEST-A100-{n},{description},Compute,GPU,{usage},"
    f"us-central1,h,{usd},2026-12-01,test fixture (not a real price)\n"
    for n, description, usage, usd in (
        (1, "Nvidia Tesla A100 GPU running in Americas", "OnDemand", 3.0),
        (2, "Nvidia Tesla A100 GPU attached to Spot Preemptible VMs", "Preemptible", 1.2),
        (3, "Nvidia Tesla A100 GPU attached to DWS Defined Duration VMs", "OnDemand", 1.4),
    )
)


def _with_snapshot(inputs: tuple[Path, Path], extra: str) -> Rows:
    """The rows derived with a billing snapshot of the shipped header and ``extra`` alone."""
    reference, catalog = inputs
    snapshot = catalog / "billing_skus.csv"
    header = snapshot.read_text(encoding="utf-8").splitlines(keepends=True)[0]
    snapshot.write_text(header + extra, encoding="utf-8")
    found, _ = derive(reference, catalog)
    return {(r["region"], r["resource_kind"], r["name"]): r for r in found}


def test_dws_and_spot_skus_price_flex_start_and_spot_with_the_fee(
    inputs: tuple[Path, Path],
) -> None:
    a100 = _with_snapshot(inputs, CAPACITY_SKUS)[
        ("us-central1", "accelerator", "NVIDIA_TESLA_A100")
    ]
    fee = FEE * 3.0  # 15% of the Compute Engine on-demand SKU, not of the reference's 2.0
    assert float(a100["flex_start_usd_per_hour"]) == pytest.approx(1.4 + fee)
    assert float(a100["spot_usd_per_hour"]) == pytest.approx(1.2 + fee)
    assert (a100["spot_basis"], a100["flex_start_basis"]) == ("unverified", "unverified")
    assert "flex-start from billing SKUs: Compute Engine TEST-A100-3" in a100["source"]
    assert "Spot from billing SKUs: Compute Engine TEST-A100-2" in a100["source"]
    # The on-demand price stays the reference's x the uplift.
    assert float(a100["on_demand_usd_per_hour"]) == pytest.approx(2.0 * UPLIFT)


def test_without_capacity_skus_a_cell_keeps_its_derived_row(inputs: tuple[Path, Path]) -> None:
    key = ("us-central1", "accelerator", "NVIDIA_TESLA_A100")
    # Only the on-demand SKU: no DWS or Spot SKU to price those capacities from.
    a100 = _with_snapshot(inputs, CAPACITY_SKUS.splitlines(keepends=True)[0])[key]
    assert a100["flex_start_usd_per_hour"] == a100["on_demand_usd_per_hour"]
    assert a100["flex_start_basis"] == "bound"
    assert float(a100["spot_usd_per_hour"]) == pytest.approx(1.0 + FEE * 2.0)
    assert "from billing SKUs" not in a100["source"]


@pytest.mark.parametrize(("as_of", "from_input"), [("2026-11-20", True), ("2026-08-02", False)])
def test_of_a_spot_input_and_a_spot_sku_the_newer_one_prices_spot(
    inputs: tuple[Path, Path], tmp_path: Path, as_of: str, from_input: bool
) -> None:
    # The shipped A100 Spot SKU (as of 2026-08-02) and a Spot input for the same cell: the
    # input wins when read later, the SKU (what is billed) on the same day or when newer.
    reference, catalog = inputs
    shutil.copy(CATALOG_DIR / "billing_skus.csv", catalog / "billing_skus.csv")
    spot = tmp_path / "spot.csv"
    spot.write_text(
        "region,kind,name,accelerator_count,spot_usd_per_hour,as_of,source\n"
        f"us-central1,accelerator,A100,1,1.0,{as_of},https://example.org/spot-a100\n"
    )
    found, _ = derive(reference, catalog, spot_inputs=spot)
    a100 = {(r["region"], r["name"]): r for r in found}[("us-central1", "NVIDIA_TESLA_A100")]
    from_sku = "Spot from billing SKUs: Compute Engine" in a100["source"]
    assert from_sku is not from_input, a100["source"]
    assert a100["spot_basis"] == "unverified"
    if from_input:
        assert f"Spot input: https://example.org/spot-a100 (as of {as_of})" in a100["source"]
        assert float(a100["spot_usd_per_hour"]) < 1.5399  # the input's 1.0 + the fee
    else:
        assert float(a100["spot_usd_per_hour"]) > 1.5399  # the SKU's 1.5399 + the fee
