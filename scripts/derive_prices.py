"""Rebuild ``components/catalog/prices.csv`` from Compute Engine list prices and billing SKUs.

    .venv/bin/python scripts/derive_prices.py ../shared/reference/prices/compute-engine-list-prices.csv

Every cell the catalog accepts for Vertex training (``components.rules._catalog.price_cells``) gets
one row, with a price per capacity, each priced the way Vertex bills it (``catalog/README.md``,
"How Vertex bills"):

- **on-demand**: the Compute Engine list price of the same machine or GPU in that region times
  Vertex's custom-training uplift (1.15), ``derived`` for the families where the uplift was
  checked against a Vertex price (n1 machines, the T4) and ``unverified`` elsewhere;
- **Spot**: the Compute Engine Spot price plus Vertex's management fee (15 % of the Compute
  Engine on-demand rate: the fee Vertex bills on flex-start; no public source gives the Spot
  fee, so every Spot price is ``unverified``);
- **flex-start** (GPUs that FLEX_START serves, and the machines that carry them): the Compute
  Engine DWS rate plus the same fee where the DWS rate is known, else the on-demand price as its
  upper bound (``bound``);
- **from Compute Engine capacity SKUs** (``with_capacity_skus``): where the billing snapshot has
  Compute Engine's on-demand SKUs of a cell (its GPU, or a machine's core and RAM) and its DWS
  or Spot SKUs in that region, flex-start = DWS + the fee and Spot = Spot + the fee, the fee
  15% of those on-demand SKUs (``unverified``), the source naming the SKUs.

A figure of the reference is a **DWS (flex-start) rate, never an on-demand price**, when a
billing SKU says so (``catalog/billing_skus.csv``: a SKU whose description reads "DWS Defined
Duration", whatever its usage type, at the same rate for that GPU), when the GPU's machines
offer no on-demand capacity (``machine_types.csv`` ``capacity``: A4, A3 Ultra), or when its
Spot price is not below it (a GPU that FLEX_START serves). Such a cell's on-demand price is
``unknown``; its flex-start price is the DWS rate, a ``floor`` (the fee is not known there).

An on-demand GPU cell the reference leaves unknown takes a **second public source** where the
billing SKU snapshot has one: Compute Engine's on-demand SKU of that GPU in that region times
the uplift (``unverified``: the uplift is checked on n1 and the T4 only; its source names the SKU,
its date and where it was read), and its Spot and flex-start floors get the management fee
(15% of that rate). Where none exists the cell stays ``unknown`` and its source says so
(``NO_SECOND_SOURCE``). The counts per basis are printed after each rebuild.

Rows with a Vertex price a public source states (``basis`` ``vertex``) and legacy scale-tier
rows are kept from the current file, and what the billing SKU snapshot prices replaces the
derived figure of its capacity (an older SKU never replaces a newer stated Vertex price).
Sanity checks mark what they catch:

- a Spot price missing, or not below on-demand: the on-demand price stands in as its bound
  (``spot_basis`` ``bound``);
- a GPU cheaper per GPU than a smaller-memory GPU of its line in the region (A100 40 GB →
  A100 80 GB; H100 → H200 → B200): ``unverified``, and the source says which check failed;
- a zero price, or no row in the source: ``unknown``, with the reason.

The reference file is not read by the tests; the rows it yields are catalog data.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import sys
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from components.costs import _billing
from components.costs._billing import (
    COMPUTE_SERVICE,
    NO_SECOND_SOURCE,
    Sku,
    billed_items,
    billing_prices,
    read_snapshot,
    regional_outliers,
    sku_capacity,
    sku_resource,
)
from components.costs._price_sheet import PRICE_COLUMNS
from components.rules._catalog import CATALOG_DIR, Catalog, Price, load_catalog_from, price_cells

UPLIFT = _billing.UPLIFT
"""Vertex custom-training price / Compute Engine list price (``components.costs._billing``)."""
FEE = _billing.SPOT_FEE
"""Vertex's management fee / the Compute Engine on-demand rate (``components.costs._billing``)."""
MATCH = 1e-5
"""Two rates closer than this (USD/h) are the same rate (the reference rounds to 5 places)."""

VERIFIED_MACHINE_FAMILIES = frozenset({"n1"})
VERIFIED_ACCELERATORS = frozenset({"NVIDIA_TESLA_T4"})

CE_SOURCE = (
    "derived: Compute Engine list price x 1.15 Vertex uplift (verified on n1-standard-4 and "
    "T4 us-central1); Compute Engine prices from https://github.com/skypilot-org/"
    "skypilot-catalog/blob/006059e0f18acb1341e22a27751e9f80df6ba92f/catalogs/v8/gcp/vms.csv "
    "(read 2026-11-24)"
)
AS_OF = "2026-11-24"
SPOT_MARK = "; Spot "
"""Where a Vertex row's own source ends and its derived Spot price's begins."""

ACCELERATOR_NAMES = {
    "A100": "NVIDIA_TESLA_A100",
    "A100-80GB": "NVIDIA_A100_80GB",
    "B200": "NVIDIA_B200",
    "H100": "NVIDIA_H100_80GB",
    "H100-MEGA": "NVIDIA_H100_MEGA_80GB",
    "H200": "NVIDIA_H200_141GB",
    "L4": "NVIDIA_L4",
    "P100": "NVIDIA_TESLA_P100",
    "P4": "NVIDIA_TESLA_P4",
    "T4": "NVIDIA_TESLA_T4",
    "V100": "NVIDIA_TESLA_V100",
}

GPU_LINES = (
    ("NVIDIA_TESLA_A100", "NVIDIA_A100_80GB"),
    ("NVIDIA_H100_80GB", "NVIDIA_H200_141GB", "NVIDIA_B200"),
)
"""GPUs in order of memory within a line: the price per GPU may not fall along a line."""

COLUMNS = PRICE_COLUMNS

Key = tuple[str, str, str]  # (kind, name, region)


def _number(text: str) -> float | None:
    return float(text) if text.strip() else None


def read_compute_engine(path: Path) -> dict[Key, tuple[float | None, float | None]]:
    """(kind, enum name, region) → (on-demand, Spot) per machine or per single GPU."""
    per_gpu: dict[Key, tuple[float | None, float | None]] = {}
    counts: dict[Key, int] = {}
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            on_demand, spot = (
                _number(row["on_demand_usd_per_hour"]),
                _number(row["spot_usd_per_hour"]),
            )
            if row["kind"] == "machine":
                per_gpu[("machine", row["name"], row["region"])] = (on_demand, spot)
                continue
            name = ACCELERATOR_NAMES.get(row["name"])
            if name is None:
                continue
            count = int(row["accelerator_count"])
            key = ("accelerator", name, row["region"])
            # The smallest count is the price of the GPUs alone; others are multiples of it
            # (checked below), and H100 MEGA, H200 and B200 come only in eights.
            if key not in counts or count < counts[key]:
                counts[key] = count
                per_gpu[key] = (
                    None if on_demand is None else on_demand / count,
                    None if spot is None else spot / count,
                )
    return per_gpu


SPOT_INPUT_COLUMNS = (
    "region",
    "kind",
    "name",
    "accelerator_count",
    "spot_usd_per_hour",
    "as_of",
    "source",
)


class SpotInput(NamedTuple):
    """A Spot rate re-read from a newer source than the reference (per machine or per GPU)."""

    rate: float
    source: str
    as_of: str

    @property
    def shown(self) -> str:
        return f"{self.source} (as of {self.as_of})"


def read_spot_inputs(path: Path) -> dict[Key, SpotInput]:
    """(kind, enum name, region) → the Compute Engine Spot rate of a Spot input file: rows
    re-read from a newer source than the reference, each with its own ``as_of`` and
    ``source``; they replace the reference's Spot rates."""
    found: dict[Key, SpotInput] = {}
    counts: dict[Key, int] = {}
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in SPOT_INPUT_COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise SystemExit(f"{path.name}:1: missing column {missing[0]!r}")
        for number, row in enumerate(reader, start=2):
            if not row["source"].strip() or not row["as_of"].strip():
                raise SystemExit(f"{path.name}:{number}: every row needs a source and as_of")
            spot = _number(row["spot_usd_per_hour"])
            if spot is None or not spot > 0:
                raise SystemExit(f"{path.name}:{number}: spot_usd_per_hour must be above 0")
            name, count = row["name"], 1
            if row["kind"] == "accelerator":
                name, count = ACCELERATOR_NAMES.get(name, name), int(row["accelerator_count"])
            key = (row["kind"], name, row["region"])
            if key not in counts or count < counts[key]:
                counts[key] = count
                found[key] = SpotInput(spot / count, row["source"], row["as_of"].strip())
    return found


def with_spot_inputs(
    ce: dict[Key, tuple[float | None, float | None]], inputs: dict[Key, SpotInput]
) -> dict[Key, tuple[float | None, float | None]]:
    """The reference with each Spot rate the inputs give replaced (on-demand kept)."""
    out = dict(ce)
    for key, spot in inputs.items():
        if key in out:
            out[key] = (out[key][0], spot.rate)
    return out


def _round(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".")


CePart = tuple[str, str, str, str]  # (capacity, sku resource kind, GPU or series, region)


def compute_engine_parts(skus: list[Sku]) -> dict[CePart, Sku]:
    """(capacity, ``gpu``/``core``/``ram``, AcceleratorType or series, region) → Compute
    Engine's SKU of that capacity (``on_demand``, ``spot``, ``flex_start``: a DWS SKU)."""
    found: dict[CePart, Sku] = {}
    for sku in skus:
        capacity, resource = sku_capacity(sku), sku_resource(sku)
        if sku.service != COMPUTE_SERVICE or resource is None or capacity is None:
            continue
        for region in sku.regions:
            found.setdefault((capacity, resource[0], resource[1], region), sku)
    return found


def compute_engine_on_demand(parts: dict[CePart, Sku]) -> dict[tuple[str, str], Sku]:
    """(AcceleratorType, region) → Compute Engine's on-demand hourly SKU of that GPU there
    (``compute_engine_parts``): a second public source for a GPU cell the reference leaves
    unknown (never a DWS or Spot SKU, ``sku_capacity`` reads the description first)."""
    return {
        (name, region): sku
        for (capacity, resource, name, region), sku in parts.items()
        if capacity == "on_demand" and resource == "gpu" and sku.unit == "h"
    }


def with_second_source(row: dict[str, str], second: Sku | None) -> dict[str, str]:
    """An unknown on-demand GPU ``row`` priced from Compute Engine's on-demand SKU of the GPU in
    its region (``second``) x the Vertex uplift, ``unverified`` (the uplift is checked on n1 and
    the T4 only), its Spot and flex-start floors given the management fee (15% of that rate);
    without one, ``row`` saying that no second source exists. Other rows are as they are."""
    if row["resource_kind"] != "accelerator" or row["basis"] != "unknown":
        return row
    name, region = row["name"], row["region"]
    if second is None:
        return row | {
            "source": f"{row['source']}; {NO_SECOND_SOURCE}Compute Engine on-demand SKU for "
            f"{name} in {region}"
        }
    ce_on_demand = second.usd
    on_demand = ce_on_demand * UPLIFT
    out = row | {
        "on_demand_usd_per_hour": _round(on_demand),
        "as_of": second.as_of or row["as_of"],
        "basis": "unverified",
        "source": f"derived: Compute Engine billing SKU {second.sku_id} {second.description!r} "
        f"({second.as_of}; {second.source}) x {UPLIFT:g} Vertex uplift (verified on "
        f"n1-standard-4 and T4 us-central1; uplift not checked for {name}); the reference: "
        f"{row['source'].removeprefix('unknown: ')}",
    }
    fee = FEE * ce_on_demand
    for column, basis in (
        ("spot_usd_per_hour", "spot_basis"),
        ("flex_start_usd_per_hour", "flex_start_basis"),
    ):
        if row[basis] == "floor" and row[column]:
            value = float(row[column]) + fee  # the rate + the fee, now that the fee is known
            bound = value >= on_demand
            out[column] = _round(on_demand if bound else value)
            out[basis] = "bound" if bound else "unverified"
    return out


def _sku_names(used: list[Sku]) -> str:
    return ", ".join(f"{(s.sku_id + ' ') if s.sku_id else ''}{s.description!r}" for s in used)


def with_capacity_skus(
    row: dict[str, str],
    catalog: Catalog,
    parts: dict[CePart, Sku],
    spot_input: SpotInput | None = None,
) -> dict[str, str]:
    """``row`` with its flex-start price = Compute Engine's DWS SKUs + the management fee, and its
    Spot price = Compute Engine's Spot SKUs + the fee, where the snapshot has those SKUs and the
    Compute Engine on-demand SKUs the fee is 15% of (``unverified``: the fee rule is read off the
    H100's Vertex SKUs in Iowa, and no source gives the Spot fee). A capacity a Vertex SKU
    prices, or a cell without those SKUs, is left as it is; so is a Spot rate from a Spot input
    (``spot_input``) read later than the Spot SKUs: of two sources, the newer one (the SKUs on
    the same day: they are what is billed)."""
    kind, name, region = row["resource_kind"], row["name"], row["region"]
    items = billed_items(catalog, kind, name)
    on_demand = _billing.summed_parts(parts, ("on_demand",), region, items)
    if on_demand is None:
        return row
    fee = FEE * on_demand[0]
    out = dict(row)
    for capacity, column, basis in (
        ("flex_start", "flex_start_usd_per_hour", "flex_start_basis"),
        ("spot", "spot_usd_per_hour", "spot_basis"),
    ):
        rate = _billing.summed_parts(parts, (capacity,), region, items)
        if rate is None or row[basis] == "vertex" or (capacity == "flex_start" and not row[basis]):
            continue
        if capacity == "spot" and spot_input and spot_input.as_of > (rate[1][0].as_of or ""):
            continue
        out[column], out[basis] = _round(rate[0] + fee), "unverified"
        label = "flex-start" if capacity == "flex_start" else "Spot"
        out["source"] += (
            f"; {label} from billing SKUs: Compute Engine {_sku_names(rate[1])} + the management "
            f"fee, 15% of Compute Engine on-demand {_sku_names(on_demand[1])} "
            f"({rate[1][0].as_of}; {rate[1][0].source})"
        )
    return out


def dws_rates(skus: list[Sku]) -> dict[str, list[tuple[float, Sku]]]:
    """AcceleratorType → the per-GPU rates its DWS (flex-start) SKUs bill, with the SKU."""
    rates: dict[str, list[tuple[float, Sku]]] = defaultdict(list)
    for sku in skus:
        resource = sku_resource(sku)
        if sku_capacity(sku) == "flex_start" and resource and resource[0] == "gpu":
            rates[resource[1]].append((sku.usd, sku))
    return dict(rates)


def dws_reason(
    catalog: Catalog,
    ce: dict[Key, tuple[float | None, float | None]],
    rates: dict[str, list[tuple[float, Sku]]],
    name: str,
    region: str,
) -> str | None:
    """Why the reference's "on-demand" figure of GPU ``name`` in ``region`` is a DWS
    (flex-start) rate and no on-demand price, or None when nothing says so."""
    figure, spot = ce.get(("accelerator", name, region), (None, None))
    if not figure:
        return None
    for rate, sku in rates.get(name, ()):
        if abs(figure - rate) < MATCH:
            return (
                f"billing SKU {_sku_names([sku])}, usage type {sku.usage_type}, "
                f"bills {rate:g} per GPU"
            )
    info = catalog.accelerators.get(name)
    if info is None or not info.flex_start:
        return None
    machines = sorted(
        m.name for m in catalog.machine_types.values() if m.fixed_accelerator == name and m.training
    )
    capacities = [catalog.machine_types[m].capacity for m in machines]
    if machines and all(c and "ON_DEMAND" not in c for c in capacities):
        return f"{', '.join(machines)} offer no on-demand capacity, per machine_types.csv"
    if spot is not None and spot >= figure:
        return f"its Spot price {_round(spot)} is not below it"
    return None


REGIONAL = "regional check: "


def suspects(
    catalog: Catalog,
    ce: dict[Key, tuple[float | None, float | None]],
    known: dict[tuple[str, str], str],
) -> dict[tuple[str, str], str]:
    """(GPU, region) → why its reference figure is suspect as an on-demand price: under
    ``OUTLIER_RATIO`` x the median of the same GPU's figures in its other regions
    (``regional_outliers``), the known DWS rates (``known``) left out of the median."""
    figures = {}
    for kind, name, region in price_cells(catalog):
        found = ce.get((kind, name, region))
        if kind == "accelerator" and found and found[0] and (name, region) not in known:
            figures[(name, region)] = found[0]
    return {key: f"{REGIONAL}{why}" for key, why in regional_outliers(figures).items()}


def derive(
    reference: Path,
    catalog_dir: Path,
    snapshot: Path | None = None,
    spot_inputs: Path | None = None,
) -> tuple[list[dict[str, str]], dict[str, int]]:
    catalog = load_catalog_from(catalog_dir)
    inputs = read_spot_inputs(spot_inputs) if spot_inputs else {}
    ce = with_spot_inputs(read_compute_engine(reference), inputs)
    skus = read_snapshot(snapshot or catalog_dir / "billing_skus.csv")
    rates = dws_rates(skus)
    kept = {
        (p.kind, p.name, p.region): p
        for p in catalog.prices.values()
        if p.kind == "scale_tier"
        # A stated Vertex price; not a row the SKU snapshot made, which is made again below.
        or (
            p.basis == "vertex"
            and not p.source.startswith(("derived:", "unknown:", "Cloud Billing"))
        )
        or (not p.basis and p.on_demand_usd is not None)  # files before the basis column
    }
    dws = {
        (name, region): why
        for kind, name, region in price_cells(catalog)
        if kind == "accelerator" and (why := dws_reason(catalog, ce, rates, name, region))
    }
    dws.update(suspects(catalog, ce, dws))
    rows: list[dict[str, str]] = []
    derived_gpu: dict[tuple[str, str], float] = {}
    for kind, name, region in price_cells(catalog):
        found = ce.get((kind, name, region))
        if found is not None and found[0] and (name, region) not in dws:
            derived_gpu[(name, region)] = found[0] * UPLIFT
    billed = billing_prices(skus, catalog)
    parts = compute_engine_parts(skus)
    seconds = compute_engine_on_demand(parts)
    for kind, name, region in price_cells(catalog):
        spot_input = inputs.get((kind, name, region))
        spot_from = spot_input.shown if spot_input else None
        cell = _Cell(catalog, ce, kept, derived_gpu, dws.get((name, region)), spot_from)
        row = with_second_source(cell.row(kind, name, region), seconds.get((name, region)))
        row = with_capacity_skus(row, catalog, parts, spot_input)
        rows.append(_billed(row, billed.get((region, kind, name)), kept.get((kind, name, region))))
    rows.extend(_tier_row(p) for _key, p in sorted(kept.items()) if p.kind == "scale_tier")
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        if row["resource_kind"] != "scale_tier":
            counts[row["basis"]] += 1
            counts["spot " + (row["spot_basis"] or row["basis"])] += 1
            counts["flex-start " + (row["flex_start_basis"] or "none")] += 1
    return rows, dict(counts)


def _tier_row(price: Price) -> dict[str, str]:
    """A legacy scale tier's row, kept as it is."""
    return {
        "region": price.region,
        "resource_kind": price.kind,
        "name": price.name,
        "on_demand_usd_per_hour": _text(price.on_demand_usd),
        "spot_usd_per_hour": _text(price.spot_usd),
        "as_of": price.as_of,
        "source": price.source,
        "basis": "vertex",
        "spot_basis": "",
        "flex_start_usd_per_hour": "",
        "flex_start_basis": "",
    }


_BILLED_COLUMNS = {
    "on_demand": ("on_demand_usd_per_hour", "basis"),
    "spot": ("spot_usd_per_hour", "spot_basis"),
    "flex_start": ("flex_start_usd_per_hour", "flex_start_basis"),
}


def _billed(row: dict[str, str], billed: Price | None, kept: Price | None) -> dict[str, str]:
    """``row`` with each capacity the billing SKUs price replaced by the SKUs' figure, except a
    Vertex price a newer public source states."""
    if billed is None:
        return row
    out = dict(row)
    for capacity, (column, basis) in _BILLED_COLUMNS.items():
        value = billed.value(capacity)
        if value is None:
            continue
        if kept is not None and row[basis] == "vertex" and kept.as_of > billed.as_of:
            continue
        out[column], out[basis] = _round(value), "vertex"
        out["source"] += f"; {capacity.replace('_', '-')}: {billed.source}"
        if capacity == "on_demand":
            out["as_of"] = billed.as_of
    return out


def _text(value: float | None) -> str:
    return "" if value is None else repr(value)


SPOT_NOTE = (
    "Spot: Compute Engine Spot + the management fee (15% of Compute Engine on-demand, the fee "
    "Vertex bills on flex-start; no public source gives the Spot fee: Vertex's Spot VMs page "
    "says only that Spot jobs are billed by job duration and machine type, "
    "https://cloud.google.com/vertex-ai/docs/predictions/use-spot-vms#billing, read 2026-11-27)"
)


@dataclasses.dataclass
class _Cell:
    """What one price cell is made from: the reference, the kept Vertex rows, the checks."""

    catalog: Catalog
    ce: dict[Key, tuple[float | None, float | None]]
    kept: dict[Key, Price]
    derived_gpu: dict[tuple[str, str], float]
    dws: str | None
    """Why this GPU's reference figure is a DWS rate (None: it is an on-demand price)."""
    spot_from: str | None = None
    """Where this cell's Spot input came from, when a Spot input file gave it (None: the
    reference's own Spot rate)."""

    def flex_capable(self, kind: str, name: str) -> bool:
        """Whether FLEX_START can run on this GPU or machine (so it has a flex-start price)."""
        if kind == "accelerator":
            info = self.catalog.accelerators.get(name)
            return bool(info and info.flex_start)
        machine = self.catalog.machine_types[name]
        fixed = self.catalog.accelerators.get(machine.fixed_accelerator or "")
        return bool(
            fixed
            and fixed.flex_start
            and (not machine.capacity or "FLEX_START" in machine.capacity)
        )

    def row(self, kind: str, name: str, region: str) -> dict[str, str]:
        row = {"region": region, "resource_kind": kind, "name": name, "as_of": AS_OF}
        found = self.ce.get((kind, name, region))
        vertex = self.kept.get((kind, name, region))
        if self.dws is not None and found is not None and found[0]:
            return row | self._dws_row(found[0], found[1], vertex, self.flex_capable(kind, name))
        if found is None or not found[0]:
            why = (
                "the source lists it at 0.0, which is no price"
                if found is not None
                else f"the source lists no {name} in {region}"
            )
            if kind == "machine" and self.catalog.machine_types[name].family in ("a4x", "g4"):
                why = f"the source has no {self.catalog.machine_types[name].family} machines at all"
            return row | {
                "on_demand_usd_per_hour": "",
                "spot_usd_per_hour": "",
                "source": f"unknown: {why} ({CE_SOURCE.split('; ', 1)[1]})",
                "basis": "unknown",
                "spot_basis": "",
                "flex_start_usd_per_hour": "",
                "flex_start_basis": "",
            }
        ce_on_demand = found[0]
        on_demand = ce_on_demand * UPLIFT
        family = self.catalog.machine_types[name].family if kind == "machine" else name
        verified = family in VERIFIED_MACHINE_FAMILIES or family in VERIFIED_ACCELERATORS
        basis = "derived" if verified else "unverified"
        notes: list[str] = []
        if not verified:
            notes.append(f"uplift not checked for {family}")
        failed = _line_check(self.derived_gpu, name, region) if kind == "accelerator" else None
        if failed:
            basis = "unverified"
            notes.append(f"check failed: {failed}")
        spot, spot_basis = self._spot(found[1], ce_on_demand, notes)
        flex = self.flex_capable(kind, name)
        if flex:
            notes.append(
                "flex-start: no DWS rate known here; on-demand stands in as its upper bound"
            )
        source = CE_SOURCE + (f"; {'; '.join(notes)}" if notes else "")
        if vertex is not None and vertex.on_demand_usd is not None:
            ratio = vertex.on_demand_usd / ce_on_demand
            check = (
                "matches"
                if abs(ratio - UPLIFT) < 0.001
                else f"does not match: Vertex / Compute Engine = {ratio:.4f}"
            )
            bound = spot_basis == "bound"
            return row | {
                "on_demand_usd_per_hour": _text(vertex.on_demand_usd),
                "spot_usd_per_hour": _text(vertex.on_demand_usd) if bound else _round(spot),
                "as_of": vertex.as_of,
                "source": f"{vertex.source.split(SPOT_MARK)[0]}{SPOT_MARK}{source}; "
                f"uplift check {check}",
                "basis": "vertex",
                "spot_basis": spot_basis,
                "flex_start_usd_per_hour": _text(vertex.on_demand_usd) if flex else "",
                "flex_start_basis": "bound" if flex else "",
            }
        return row | {
            "on_demand_usd_per_hour": _round(on_demand),
            "spot_usd_per_hour": _round(spot),
            "source": source,
            "basis": basis,
            "spot_basis": spot_basis,
            "flex_start_usd_per_hour": _round(on_demand) if flex else "",
            "flex_start_basis": "bound" if flex else "",
        }

    def _spot(
        self, ce_spot: float | None, ce_on_demand: float, notes: list[str]
    ) -> tuple[float, str]:
        """Vertex's Spot price from Compute Engine's (plus the fee), or on-demand as its bound."""
        on_demand = ce_on_demand * UPLIFT
        if ce_spot is None or ce_spot >= ce_on_demand:
            notes.append(
                "Spot: the source has none; on-demand stands in as its bound"
                if ce_spot is None
                else f"Spot: the source's ({_round(ce_spot)}) is not below on-demand; "
                "on-demand stands in as its bound"
            )
            return on_demand, "bound"
        notes.append(SPOT_NOTE + self._spot_input())
        return ce_spot + FEE * ce_on_demand, "unverified"

    def _spot_input(self) -> str:
        """Where the Spot rate came from, when not from the reference itself."""
        return f"; Spot input: {self.spot_from}" if self.spot_from else ""

    def _dws_row(
        self, figure: float, ce_spot: float | None, vertex: Price | None, flex: bool
    ) -> dict[str, str]:
        """A GPU whose reference figure is a DWS rate (or suspect as one): flex-start from it
        where FLEX_START serves the GPU, no on-demand price unless a Vertex source states one."""
        assert self.dws is not None
        tail = CE_SOURCE.split("; ", 1)[1]
        said = (
            f"the source's figure {_round(figure)} is a DWS flex-start rate, not an on-demand "
            f"price: {self.dws}"
        )
        if self.dws.startswith(REGIONAL):
            said = (
                f"the source's figure {_round(figure)} is suspect, no on-demand price: {self.dws}"
            )
        if vertex is not None and vertex.on_demand_usd is not None:
            # The fee is 15% of the Compute Engine on-demand rate the Vertex price is 1.15 x of.
            fee = FEE * vertex.on_demand_usd / UPLIFT
            spot = None if ce_spot is None else ce_spot + fee
            return {
                "on_demand_usd_per_hour": _text(vertex.on_demand_usd),
                "spot_usd_per_hour": "" if spot is None else _round(spot),
                "as_of": vertex.as_of,
                "source": f"{vertex.source.split(SPOT_MARK)[0]}{SPOT_MARK}{said}; flex-start: "
                f"the DWS rate + the management fee (15% of on-demand / 1.15); {SPOT_NOTE}"
                f"{self._spot_input()} ({tail})",
                "basis": "vertex",
                "spot_basis": "unverified" if spot is not None else "",
                "flex_start_usd_per_hour": _round(figure + fee) if flex else "",
                "flex_start_basis": "unverified" if flex else "",
            }
        rates = (
            "Spot and flex-start: the Compute Engine Spot and DWS rates"
            if flex
            else ("Spot: the Compute Engine Spot rate")
        )
        return {
            "on_demand_usd_per_hour": "",
            "spot_usd_per_hour": "" if ce_spot is None else _round(ce_spot),
            "source": f"unknown: {said}; {rates} alone, lower bounds (the management fee, 15% "
            f"of the unknown on-demand rate, is not in them){self._spot_input()} ({tail})",
            "basis": "unknown",
            "spot_basis": "floor" if ce_spot is not None else "",
            "flex_start_usd_per_hour": _round(figure) if flex else "",
            "flex_start_basis": "floor" if flex else "",
        }


def _line_check(derived_gpu: dict[tuple[str, str], float], name: str, region: str) -> str | None:
    """Why ``name``'s per-GPU price breaks its line's memory order in ``region``, or None."""
    price = derived_gpu.get((name, region))
    if price is None:
        return None
    for line in GPU_LINES:
        if name not in line:
            continue
        at = line.index(name)
        for smaller in line[:at]:
            other = derived_gpu.get((smaller, region))
            if other is not None and price < other:
                return f"cheaper per GPU than {smaller} in {region}"
        for larger in line[at + 1 :]:
            other = derived_gpu.get((larger, region))
            if other is not None and price > other:
                return f"dearer per GPU than {larger} in {region}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("reference", type=Path, help="compute-engine-list-prices.csv")
    parser.add_argument("--catalog", type=Path, default=CATALOG_DIR)
    parser.add_argument(
        "--spot-inputs",
        type=Path,
        help="Compute Engine Spot rates re-read from a newer source than the reference "
        "(columns: " + ", ".join(SPOT_INPUT_COLUMNS) + "); each replaces the reference's",
    )
    args = parser.parse_args(argv)
    rows, counts = derive(args.reference, args.catalog, spot_inputs=args.spot_inputs)
    with (args.catalog / "prices.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
