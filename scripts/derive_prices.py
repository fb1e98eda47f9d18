"""Rebuild ``components/catalog/prices.csv`` from Compute Engine list prices.

    .venv/bin/python scripts/derive_prices.py ../shared/reference/prices/compute-engine-list-prices.csv

Every cell the catalog accepts for Vertex training (``components._catalog.price_cells``) gets
one row. Rows with a Vertex price a public source states (``basis`` ``vertex``) and legacy
scale-tier rows are kept from the current file; every other price is the Compute Engine list
price of the same machine or GPU in that region times Vertex's custom-training uplift (1.15),
``derived`` for the families where the uplift was checked against a Vertex price (n1
machines, the T4) and ``unverified`` elsewhere. A Spot price is always ``unverified``: no
Vertex Spot price is known to check the uplift on. Sanity checks mark what they catch:

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
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from components._catalog import CATALOG_DIR, Catalog, Price, load_catalog_from, price_cells

UPLIFT = 1.15
"""Vertex custom-training price / Compute Engine list price, checked on n1-standard-4 and the
T4 in us-central1 (0.21849885 / 0.19 and 0.4025 / 0.35)."""

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

COLUMNS = (
    "region",
    "resource_kind",
    "name",
    "on_demand_usd_per_hour",
    "spot_usd_per_hour",
    "as_of",
    "source",
    "basis",
    "spot_basis",
)

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


def _round(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".")


def derive(reference: Path, catalog_dir: Path) -> tuple[list[dict[str, str]], dict[str, int]]:
    catalog = load_catalog_from(catalog_dir)
    ce = read_compute_engine(reference)
    kept = {
        (p.kind, p.name, p.region): p
        for p in catalog.prices.values()
        if p.kind == "scale_tier"
        or p.basis == "vertex"
        or (not p.basis and p.on_demand_usd is not None)  # files before the basis column
    }
    rows: list[dict[str, str]] = []
    derived_gpu: dict[tuple[str, str], float] = {}
    for kind, name, region in price_cells(catalog):
        found = ce.get((kind, name, region))
        if found is not None and found[0]:
            derived_gpu[(name, region)] = found[0] * UPLIFT
    for kind, name, region in price_cells(catalog):
        rows.append(_row(catalog, ce, kept, derived_gpu, kind, name, region))
    for _key, price in sorted(kept.items()):
        if price.kind == "scale_tier":
            rows.append(
                {
                    "region": price.region,
                    "resource_kind": price.kind,
                    "name": price.name,
                    "on_demand_usd_per_hour": _text(price.on_demand_usd),
                    "spot_usd_per_hour": _text(price.spot_usd),
                    "as_of": price.as_of,
                    "source": price.source,
                    "basis": "vertex",
                    "spot_basis": "",
                }
            )
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        if row["resource_kind"] != "scale_tier":
            counts[row["basis"]] += 1
            counts["spot " + (row["spot_basis"] or row["basis"])] += 1
    return rows, dict(counts)


def _text(value: float | None) -> str:
    return "" if value is None else repr(value)


def _row(
    catalog: Catalog,
    ce: dict[Key, tuple[float | None, float | None]],
    kept: dict[Key, Price],
    derived_gpu: dict[tuple[str, str], float],
    kind: str,
    name: str,
    region: str,
) -> dict[str, str]:
    row = {"region": region, "resource_kind": kind, "name": name, "as_of": AS_OF}
    found = ce.get((kind, name, region))
    if found is None or not found[0]:
        why = (
            "the source lists it at 0.0, which is no price"
            if found is not None
            else f"the source lists no {name} in {region}"
        )
        if kind == "machine" and catalog.machine_types[name].family in ("a4x", "g4"):
            why = f"the source has no {catalog.machine_types[name].family} machines at all"
        return row | {
            "on_demand_usd_per_hour": "",
            "spot_usd_per_hour": "",
            "source": f"unknown: {why} ({CE_SOURCE.split('; ', 1)[1]})",
            "basis": "unknown",
            "spot_basis": "",
        }
    on_demand = found[0] * UPLIFT
    spot = None if found[1] is None else found[1] * UPLIFT
    family = catalog.machine_types[name].family if kind == "machine" else name
    verified = family in VERIFIED_MACHINE_FAMILIES or family in VERIFIED_ACCELERATORS
    basis = "derived" if verified else "unverified"
    notes: list[str] = []
    if not verified:
        notes.append(f"uplift not checked for {family}")
    failed = _line_check(derived_gpu, name, region) if kind == "accelerator" else None
    if failed:
        basis = "unverified"
        notes.append(f"check failed: {failed}")
    spot_basis = "unverified"
    if spot is None or spot >= on_demand:
        notes.append(
            "Spot: the source has none; on-demand stands in as its bound"
            if spot is None
            else f"Spot: the source's ({_round(spot / UPLIFT)}) is not below on-demand; "
            "on-demand stands in as its bound"
        )
        spot, spot_basis = on_demand, "bound"
    source = CE_SOURCE + (f"; {'; '.join(notes)}" if notes else "")
    vertex = kept.get((kind, name, region))
    if vertex is not None and vertex.on_demand_usd is not None:
        ratio = vertex.on_demand_usd / found[0]
        check = (
            "matches"
            if abs(ratio - UPLIFT) < 0.001
            else f"does not match: Vertex / Compute Engine = {ratio:.4f}"
        )
        return row | {
            "on_demand_usd_per_hour": _text(vertex.on_demand_usd),
            "spot_usd_per_hour": _round(spot)
            if spot_basis != "bound"
            else _text(vertex.on_demand_usd),
            "as_of": vertex.as_of,
            "source": f"{vertex.source.split(SPOT_MARK)[0]}{SPOT_MARK}{source}; uplift check {check}",
            "basis": "vertex",
            "spot_basis": spot_basis,
        }
    return row | {
        "on_demand_usd_per_hour": _round(on_demand),
        "spot_usd_per_hour": _round(spot),
        "source": source,
        "basis": basis,
        "spot_basis": spot_basis,
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
    args = parser.parse_args(argv)
    rows, counts = derive(args.reference, args.catalog)
    with (args.catalog / "prices.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
