"""Vertex AI's training prices from Cloud Billing SKUs: how a SKU is read, and what it prices.

A SKU record (``Sku``) comes from the Cloud Billing Catalog API (``components.vertex.billing``,
the live path) or from the dated snapshot ``catalog/billing_skus.csv`` (the same columns, each
row with its source). Either way the prices are made here, one way:

- **on-demand**: Vertex AI's own training SKUs (``Vertex AI: Training/Pipelines on NVIDIA H100
  80GB in Iowa``): a GPU's price per GPU, a machine's per vCPU and per GB of memory;
- **flex-start** (``scheduling.strategy: FLEX_START``): Compute Engine's DWS SKU of the
  capacity (``Nvidia H100 80GB GPU attached to DWS Defined Duration VMs``) **plus** Vertex's
  management-fee SKU (``Vertex AI: Training/Pipelines management fee on NVIDIA H100 80GB``);
- **Spot**: Compute Engine's Spot SKU plus the management fee, where both are listed.

What a SKU is for is read from its description first, and only then from its category: Compute
Engine files its DWS SKUs under the usage type ``OnDemand``, and a catalog that trusts the
category takes a flex-start rate (about half the on-demand one) for an on-demand price. So a DWS
SKU is never an on-demand price here (``sku_capacity``). Commitment, reservation, calendar-mode
and sole-tenancy SKUs price nothing a training job asks for and are left out.

Nothing here imports a Google library: ``components.vertex.billing`` turns the API's answers
into ``Sku`` records.
"""

from __future__ import annotations

import csv
import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .._errors import CatalogError
from ..rules._catalog import CATALOG_DIR, Catalog, MachineType, Price, capacity_of

__all__ = [
    "COMPUTE_SERVICE",
    "NO_SECOND_SOURCE",
    "OUTLIER_RATIO",
    "SNAPSHOT_FILE",
    "SPOT_FEE",
    "UPLIFT",
    "VERTEX_SERVICE",
    "Difference",
    "Sku",
    "apply_billing",
    "billed_items",
    "billing_prices",
    "differences",
    "machine_series",
    "read_snapshot",
    "regional_outliers",
    "sku_capacity",
    "sku_resource",
    "spot_rule_prices",
    "summed_parts",
    "suspect_prices",
]

VERTEX_SERVICE = "Vertex AI"
COMPUTE_SERVICE = "Compute Engine"
SNAPSHOT_FILE = CATALOG_DIR / "billing_skus.csv"
_SNAPSHOT_COLUMNS = (
    "service_id",
    "service_name",
    "sku_id",
    "description",
    "resource_family",
    "resource_group",
    "usage_type",
    "service_regions",
    "usage_unit",
    "usd_per_unit",
    "as_of",
    "source",
)


@dataclass(frozen=True, slots=True)
class Sku:
    """One Cloud Billing SKU, as much of it as a training price needs (USD, first tier)."""

    service: str  # the service's display name: "Vertex AI", "Compute Engine"
    sku_id: str
    description: str
    usage_type: str = "OnDemand"  # category.usageType: OnDemand, Preemptible, Commit1Yr, ...
    regions: tuple[str, ...] = ()
    unit: str = "h"  # pricingExpression.usageUnit: h, GiBy.h
    usd: float = 0.0
    as_of: str = ""
    source: str = ""
    resource_group: str = ""


_SKIPPED = ("commitment", "reserved", "reservation", "calendar mode", "sole tenancy", "custom")
_FLEX_START = re.compile(r"\bdws\b|\bflex[ -]start\b|\bdefined duration\b")


def sku_capacity(sku: Sku) -> str | None:
    """What ``sku`` bills: ``on_demand``, ``spot``, ``flex_start``, ``fee`` (Vertex's management
    fee on Spot and flex-start capacity), or None (a commitment, reservation and the like).

    The description decides before the category: a DWS SKU's usage type is ``OnDemand``.
    """
    text = sku.description.lower()
    if any(word in text for word in _SKIPPED):
        return None
    if "management fee" in text:
        return "fee"
    if _FLEX_START.search(text):
        return "flex_start"
    if sku.usage_type == "Preemptible" or "spot" in text or "preemptible" in text:
        return "spot"
    if sku.usage_type != "OnDemand":
        return None
    return "on_demand"


_GPU_NAMES = (
    # Longest first: "a100 80gb" before "a100", "h100 mega" before "h100", "gb200" before "b200".
    ("h100 mega", "NVIDIA_H100_MEGA_80GB"),
    ("h100", "NVIDIA_H100_80GB"),
    ("h200", "NVIDIA_H200_141GB"),
    ("gb200", "NVIDIA_GB200"),
    ("b200", "NVIDIA_B200"),
    ("a100 80gb", "NVIDIA_A100_80GB"),
    ("a100", "NVIDIA_TESLA_A100"),
    ("rtx pro 6000", "NVIDIA_RTX_PRO_6000"),
    ("l4", "NVIDIA_L4"),
    ("t4", "NVIDIA_TESLA_T4"),
    ("v100", "NVIDIA_TESLA_V100"),
    ("p100", "NVIDIA_TESLA_P100"),
    ("p4", "NVIDIA_TESLA_P4"),
)
_CORE_RAM = re.compile(
    r"\b(?P<series>[a-z]\d+[a-z]?(?: (?:mega|ultra|high))?)\b(?: predefined)?(?: instance)? "
    r"(?P<part>core|ram)\b"
)


def sku_resource(sku: Sku) -> tuple[str, str] | None:
    """(``gpu``, AcceleratorType) or (``core``/``ram``, machine series such as ``a3``, ``a3 mega``,
    ``n1``) for a SKU that prices one; None otherwise (disks, licences, networking...)."""
    text = " ".join(sku.description.lower().replace("tesla ", "").split())
    if "gpu" in text or sku.resource_group == "GPU" or "nvidia" in text:
        for words, name in _GPU_NAMES:
            if re.search(rf"\b{words}\b", text):
                return "gpu", name
        return None
    found = _CORE_RAM.search(text)
    if found is None:
        return None
    return found["part"], found["series"].removesuffix(" high")


def machine_series(machine: MachineType) -> str:
    """The series a machine's core and RAM SKUs name: ``a3`` (A3 High), ``a3 mega``, ``a3 ultra``,
    ``a2`` (A2 High), ``a2 ultra``, ``n1``... A series whose SKU name is not confirmed gets a
    name of its own, so another series' SKU never prices it (it keeps the snapshot's price)."""
    for marker, suffix in (("-megagpu", " mega"), ("-ultragpu", " ultra")):
        if marker in machine.name:
            return machine.family + suffix
    return machine.family


def read_snapshot(path: Path = SNAPSHOT_FILE) -> list[Sku]:
    """The SKUs of a snapshot file (``billing_skus.csv``); raises ``CatalogError`` naming the row."""
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in _SNAPSHOT_COLUMNS if c not in (reader.fieldnames or ())]
            if missing:
                raise CatalogError(f"{path.name}:1: missing column {missing[0]!r}")
            rows = list(reader)
    except OSError as exc:
        raise CatalogError(f"cannot read billing snapshot {path}: {exc.strerror}") from exc
    skus = []
    for number, row in enumerate(rows, start=2):
        where = f"{path.name}:{number}"
        if any(v is None for v in row.values()) or None in row:
            raise CatalogError(f"{where}: wrong number of columns")
        if not row["source"].strip():
            raise CatalogError(f"{where}: every row needs a source")
        try:
            usd = float(row["usd_per_unit"])
        except ValueError:
            raise CatalogError(f"{where}: usd_per_unit: not a number") from None
        if not usd > 0 or usd == float("inf"):
            raise CatalogError(f"{where}: usd_per_unit must be above 0")
        skus.append(
            Sku(
                service=row["service_name"].strip(),
                sku_id=row["sku_id"].strip(),
                description=row["description"].strip(),
                usage_type=row["usage_type"].strip(),
                regions=tuple(row["service_regions"].split()),
                unit=row["usage_unit"].strip(),
                usd=usd,
                as_of=row["as_of"].strip(),
                source=row["source"].strip(),
                resource_group=row["resource_group"].strip(),
            )
        )
    return skus


# (role, resource kind, accelerator or series, region) → the SKU; role: "vertex" (Vertex's
# on-demand training SKU), "fee", "flex_start" or "spot" (Compute Engine's SKU of that capacity).
_Parts = dict[tuple[str, str, str, str], Sku]


def _parts(skus: Iterable[Sku]) -> _Parts:
    parts: _Parts = {}
    for sku in skus:
        capacity = sku_capacity(sku)
        resource = sku_resource(sku)
        if capacity is None or resource is None or not sku.usd > 0:
            continue
        if sku.service == VERTEX_SERVICE:
            if "training" not in sku.description.lower():
                continue  # prediction, notebooks, ... bill other work
            role = "fee" if capacity == "fee" else "vertex" if capacity == "on_demand" else None
        elif sku.service == COMPUTE_SERVICE:
            role = capacity if capacity in ("flex_start", "spot") else None
        else:
            role = None
        if role is None:
            continue
        for region in sku.regions:
            parts.setdefault((role, resource[0], resource[1], region), sku)
    return parts


def summed_parts(
    parts: _Parts, roles: tuple[str, ...], region: str, items: tuple[tuple[str, str, float], ...]
) -> tuple[float, list[Sku]] | None:
    """Σ count x unit price over ``items`` (kind, name, count) and ``roles``; None if one lacks."""
    total, used = 0.0, []
    for role in roles:
        for kind, name, count in items:
            sku = parts.get((role, kind, name, region))
            if sku is None:
                return None
            total += sku.usd * count
            used.append(sku)
    return total, used


_ROLES = {"on_demand": ("vertex",), "flex_start": ("flex_start", "fee"), "spot": ("spot", "fee")}


def _source(used: Iterable[Sku]) -> str:
    skus = list(dict.fromkeys(used))
    dates = sorted({s.as_of for s in skus if s.as_of})
    ids = ", ".join(f"{s.sku_id} {s.description!r}" for s in skus)
    return f"Cloud Billing SKUs {ids}" + (f" ({', '.join(dates)})" if dates else "")


def billed_items(catalog: Catalog, kind: str, name: str) -> tuple[tuple[str, str, float], ...]:
    """What one catalog cell bills, per SKU: (``gpu``/``core``/``ram``, GPU or machine series,
    count): a GPU itself; a machine its series' cores and RAM."""
    if kind == "accelerator":
        return (("gpu", name, 1.0),)
    machine = catalog.machine_types[name]
    series = machine_series(machine)
    return (("core", series, float(machine.vcpus)), ("ram", series, machine.memory_gb))


def billing_prices(skus: Iterable[Sku], catalog: Catalog) -> dict[tuple[str, str, str], Price]:
    """The prices ``skus`` make for ``catalog``'s GPUs and training machine types, keyed like
    ``Catalog.prices``; a capacity the SKUs do not price in full is None (``basis`` ``vertex``)."""
    parts = _parts(skus)
    regions = sorted({key[3] for key in parts} & set(catalog.regions))
    wanted: list[tuple[str, str, tuple[tuple[str, str, float], ...]]] = [
        ("accelerator", name, billed_items(catalog, "accelerator", name))
        for name in sorted(catalog.accelerators)
    ]
    for machine in sorted(catalog.machine_types.values(), key=lambda m: m.name):
        if machine.training:
            wanted.append(("machine", machine.name, billed_items(catalog, "machine", machine.name)))
    prices: dict[tuple[str, str, str], Price] = {}
    for region in regions:
        for kind, name, items in wanted:
            found = {c: summed_parts(parts, roles, region, items) for c, roles in _ROLES.items()}
            if not any(found.values()):
                continue
            used = [sku for value in found.values() if value for sku in value[1]]
            value = {c: (None if v is None else v[0]) for c, v in found.items()}
            prices[(region, kind, name)] = Price(
                region,
                kind,
                name,
                value["on_demand"],
                value["spot"],
                as_of=max((s.as_of for s in used), default=""),
                source=_source(used),
                basis="vertex" if value["on_demand"] is not None else "",
                spot_basis="vertex" if value["spot"] is not None else "",
                flex_start_usd=value["flex_start"],
                flex_start_basis="vertex" if value["flex_start"] is not None else "",
            )
    return prices


def apply_billing(catalog: Catalog, prices: Mapping[tuple[str, str, str], Price]) -> Catalog:
    """``catalog`` with each capacity that ``prices`` knows replaced; the rest kept as shipped."""
    if not prices:
        return catalog
    merged = dict(catalog.prices)
    for key, billed in prices.items():
        shipped = merged.get(key)
        if shipped is None:
            merged[key] = billed
            continue
        changes: dict[str, object] = {}
        for capacity, (value_field, basis_field) in _FIELDS.items():
            value = billed.value(capacity)
            if value is not None:
                changes[value_field] = value
                changes[basis_field] = "vertex"
        merged[key] = dataclasses.replace(
            shipped,
            **changes,  # type: ignore[arg-type]
            as_of=billed.as_of or shipped.as_of,
            source=f"{billed.source}; otherwise: {shipped.source}",
        )
    return dataclasses.replace(catalog, prices=merged)


_FIELDS = {
    "on_demand": ("on_demand_usd", "basis"),
    "spot": ("spot_usd", "spot_basis"),
    "flex_start": ("flex_start_usd", "flex_start_basis"),
}


@dataclass(frozen=True, slots=True)
class Difference:
    """A catalog price that the billing SKUs price otherwise (``catalog`` None: not in it)."""

    region: str
    kind: str
    name: str
    capacity: str
    catalog: float | None
    billing: float
    source: str

    def line(self) -> str:
        shipped = "none" if self.catalog is None else f"{self.catalog:.6g}"
        return (
            f"{self.name} ({self.kind}) in {self.region}, {self.capacity.replace('_', '-')}: "
            f"catalog {shipped}, billing {self.billing:.6g} USD/h ({self.source})"
        )


def differences(
    catalog: Catalog, prices: Mapping[tuple[str, str, str], Price], tolerance: float = 1e-4
) -> list[Difference]:
    """Where ``catalog``'s prices differ from the billing ``prices`` by more than ``tolerance``
    (relative), per capacity; sorted by region, kind, name."""
    found = []
    for key in sorted(prices):
        billed, shipped = prices[key], catalog.prices.get(key)
        for capacity in _FIELDS:
            value = billed.value(capacity)
            if value is None:
                continue
            have = shipped.value(capacity_of(capacity)) if shipped else None
            if have is None or abs(have - value) > tolerance * max(abs(value), abs(have)):
                found.append(Difference(*key, capacity, have, value, billed.source))
    return found


OUTLIER_RATIO = 0.7
"""An on-demand GPU price under this share of the median of the same GPU's on-demand prices in
its other regions is suspect: Compute Engine's regional spread of a GPU's on-demand price is
about +-30 % (T4 0.35-0.48, A100 1.6-3.2 per GPU in the 2026-11 reference), while a DWS
(flex-start) rate filed as on-demand is about half of it (H100 4.20 against 9.80-12.74)."""
MIN_OTHER_REGIONS = 2
"""Regions besides its own a GPU needs priced before a price of it can be called an outlier."""


def regional_outliers(
    figures: Mapping[tuple[str, str], float],
    ratio: float = OUTLIER_RATIO,
    min_others: int = MIN_OTHER_REGIONS,
) -> dict[tuple[str, str], str]:
    """(GPU, region) → why its on-demand figure is suspect, for each of ``figures`` (keyed by
    (GPU, region), per GPU) under ``ratio`` x the median of the same GPU's figures in its
    other regions: the mark of a flex-start (DWS) rate mixed in as on-demand, whatever the GPU
    or region. A GPU priced in fewer than ``min_others`` other regions is not judged."""
    by_gpu: dict[str, dict[str, float]] = {}
    for (name, region), value in figures.items():
        by_gpu.setdefault(name, {})[region] = value
    found: dict[tuple[str, str], str] = {}
    for name, regions in by_gpu.items():
        for region, value in regions.items():
            others = sorted(v for r, v in regions.items() if r != region)
            if len(others) < min_others:
                continue
            middle = len(others) // 2
            median = (
                others[middle] if len(others) % 2 else (others[middle - 1] + others[middle]) / 2
            )
            if value < ratio * median:
                found[(name, region)] = (
                    f"{value:.6g} is {value / median:.2f}x the median {median:.6g} of its "
                    f"on-demand price in {len(others)} other regions, under {ratio:g}x: "
                    "likely a flex-start DWS rate, not an on-demand price"
                )
    return found


NO_SECOND_SOURCE = "no second public source: the billing snapshot (billing_skus.csv) has no "
"""How an unknown GPU cell's source in ``prices.csv`` says that a second public source (Compute
Engine's on-demand SKU of the GPU in the region, x ``UPLIFT``) was looked for and none found
(``scripts/derive_prices.py``; ``catalog check`` says so per cell)."""

UPLIFT = 1.15
"""Vertex custom-training on-demand price / Compute Engine list price, checked on n1-standard-4
and the T4 in us-central1 (0.21849885 / 0.19 and 0.4025 / 0.35) and on Iowa's A3 core and RAM
SKUs (``catalog/README.md``)."""
SPOT_FEE = 0.15
"""Vertex's management fee / Compute Engine's on-demand rate: the fee SKUs of a FLEX_START job
in Iowa (``billing_skus.csv``). Vertex bills Spot as the Spot SKU plus a management fee too;
no public source states the Spot fee, so a Spot price made with this one is ``unverified``."""


def suspect_prices(catalog: Catalog) -> dict[tuple[str, str], str]:
    """(GPU, region) → why ``catalog``'s on-demand price of it is suspect (``regional_outliers``
    over its GPUs' known on-demand prices)."""
    figures = {
        (p.name, p.region): p.on_demand_usd
        for p in catalog.prices.values()
        if p.kind == "accelerator" and p.on_demand_usd is not None
    }
    return regional_outliers(figures)


def spot_rule_prices(skus: Iterable[Sku], catalog: Catalog) -> dict[tuple[str, str, str], Price]:
    """The Spot prices Compute Engine's Spot SKUs make by the catalog's documented rule where
    Vertex's fee SKU is not listed: the Spot SKU + ``SPOT_FEE`` x the Compute Engine on-demand
    rate (the catalog's on-demand price / ``UPLIFT``); the SKU alone where the catalog's Spot
    price is a ``floor``. So a Spot input older than the SKUs shows as a difference."""
    parts = _parts(skus)
    found: dict[tuple[str, str, str], Price] = {}
    for key, price in catalog.prices.items():
        region, kind, name = key
        if price.spot_usd is None or price.basis_for(True) not in (
            "derived",
            "unverified",
            "floor",
        ):
            continue
        if kind == "accelerator":
            items: tuple[tuple[str, str, float], ...] = (("gpu", name, 1.0),)
        elif kind == "machine" and name in catalog.machine_types:
            machine = catalog.machine_types[name]
            series = machine_series(machine)
            items = (("core", series, float(machine.vcpus)), ("ram", series, machine.memory_gb))
        else:
            continue
        spot = summed_parts(parts, ("spot",), region, items)
        if spot is None or summed_parts(parts, ("spot", "fee"), region, items) is not None:
            continue  # no Spot SKU, or billing_prices prices it from Vertex's own fee SKU
        fee = 0.0
        if price.basis_for(True) != "floor":
            if price.on_demand_usd is None:
                continue
            fee = SPOT_FEE * price.on_demand_usd / UPLIFT
        found[key] = dataclasses.replace(
            price,
            spot_usd=spot[0] + fee,
            source=_source(spot[1]) + ("" if not fee else " + the management fee rule"),
        )
    return found
