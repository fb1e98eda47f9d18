"""Hardware facts as data: the catalog loaded from ``components/catalog/*.csv``.

The CSV files are the source of truth (schema in ``catalog/README.md``); every row names
its source. ``load_catalog()`` reads them once and caches the result. Query functions
take the catalog as an argument, so tests can build tiny catalogs with ``Catalog(...)``.
"""

from __future__ import annotations

import csv
import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from components._errors import CatalogError

__all__ = [
    "CAPACITY_OPTIONS",
    "CATALOG_DIR",
    "MAX_USD_PER_HOUR",
    "PRICE_BASES",
    "Accelerator",
    "Catalog",
    "Combination",
    "HostLimit",
    "LegacyMachineType",
    "MachineType",
    "Price",
    "Region",
    "ScaleTier",
    "TrainingImage",
    "Zone",
    "accepted_accelerators",
    "allowed_counts",
    "combinations",
    "load_catalog",
    "load_catalog_from",
    "price_cells",
    "price_problem",
    "regions_offering",
    "resolve_accelerator",
    "zones_offering",
]

CATALOG_DIR = Path(__file__).parent / "catalog"

CAPACITY_OPTIONS = ("ON_DEMAND", "RESERVATION", "FLEX_START", "SPOT")
"""How capacity for a machine can be obtained (``machine_types.csv`` column ``capacity``)."""


@dataclass(frozen=True, slots=True)
class MachineType:
    """A Compute Engine machine type usable for training."""

    name: str
    family: str
    vcpus: int
    memory_gb: float
    fixed_accelerator: str | None = None
    fixed_accelerator_count: int = 0
    source: str = ""
    training: bool = True
    """Whether Vertex AI custom training accepts the machine type."""
    capacity: tuple[str, ...] = ()
    """The ways its capacity can be obtained (``CAPACITY_OPTIONS``); empty: not restricted."""
    boot_disk_types: tuple[str, ...] = ()
    """The boot disk types it takes; empty: every type Vertex AI offers."""
    cpu_arch: str = "x86_64"


@dataclass(frozen=True, slots=True)
class Accelerator:
    """A GPU or TPU type, named as the Vertex ``AcceleratorType`` enum names it."""

    name: str
    kind: str = "gpu"
    gcloud_name: str = ""
    memory_gb: float = 0.0
    lifecycle: str = "GA"
    retired_on: str | None = None
    replacement: str | None = None
    source: str = ""
    aliases: tuple[str, ...] = ()
    """Shorthand names people write (``t4``, ``a100-80gb``), lowercase with ``-``."""
    mig_partition_sizes: tuple[str, ...] = ()
    """The MIG partition sizes (``MachineSpec.gpu_partition_size``) it offers; empty: none."""
    flex_start: bool = False
    """Whether FLEX_START (Dynamic Workload Scheduler) serves jobs that request it."""

    @property
    def retired(self) -> bool:
        return self.lifecycle == "RETIRED"


@dataclass(frozen=True, slots=True)
class HostLimit:
    """The most vCPUs and memory a machine may have with N of one N1-attached GPU."""

    accelerator: str
    count: int
    max_vcpus: int
    max_memory_gb: float
    source: str = ""


@dataclass(frozen=True, slots=True)
class LegacyMachineType:
    """An AI Platform Training machine type and its Compute Engine equivalent."""

    name: str
    machine_type: str
    accelerator: str | None = None
    accelerator_count: int = 0
    source: str = ""
    note: str = ""
    """Why the mapping differs from the historical one (printed by the legacy converter)."""


@dataclass(frozen=True, slots=True)
class ScaleTier:
    """An AI Platform Training scale tier expressed in legacy machine types."""

    name: str
    master_type: str
    worker_type: str | None = None
    worker_count: int = 0
    parameter_server_type: str | None = None
    parameter_server_count: int = 0
    source: str = ""


@dataclass(frozen=True, slots=True)
class Region:
    name: str
    geography: str = ""
    source: str = ""


@dataclass(frozen=True, slots=True)
class Zone:
    """A zone and the accelerator types it offers for training."""

    name: str
    region: str
    accelerators: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class TrainingImage:
    """A prebuilt Vertex AI training image: framework, version, Python, CPU/GPU/TPU.

    ``image_path`` has no registry host: the image is published under each host in
    ``registries`` (``us-docker.pkg.dev``, ...). The dates are Google's end of patch and
    support (deprecated after it) and end of availability; None when not published.
    """

    framework: str  # "tensorflow", "pytorch", "scikit-learn" or "xgboost"
    framework_version: str
    python_version: str
    accelerator: str  # "cpu", "gpu" or "tpu"
    image_path: str
    registries: tuple[str, ...] = ("us-docker.pkg.dev",)
    end_of_support: str | None = None
    end_of_availability: str | None = None
    source: str = ""


PRICE_BASES = ("vertex", "derived", "unverified", "bound", "unknown", "org")
"""How a price was found (``prices.csv`` columns ``basis`` and ``spot_basis``):

- ``vertex``: a Vertex AI custom-training price a public source states;
- ``derived``: a Compute Engine list price times Vertex's custom-training uplift (1.15), for a
  family whose uplift was checked against a Vertex price;
- ``unverified``: derived the same way for a family whose uplift could not be checked;
- ``bound`` (Spot only): the on-demand price standing in as the upper bound of a Spot price the
  source lacks or gives at or above on-demand;
- ``unknown``: no price (the row's source says why);
- ``org``: an organisation's price sheet (``training:prices``).
"""

_BASIS_LABELS = {
    "vertex": "Vertex price",
    "derived": "derived",
    "unverified": "derived, unverified",
    "bound": "on-demand bound",
    "unknown": "unknown",
    "org": "org sheet",
    "": "",
}


@dataclass(frozen=True, slots=True)
class Price:
    """A Vertex AI training price per hour: of a machine, one accelerator, or a legacy tier.

    ``None`` means the price is not known for that region (never zero). ``basis`` says how
    the on-demand price was found, ``spot_basis`` the Spot price's (empty: as ``basis``);
    see ``PRICE_BASES``. ``discount_percent`` is an organisation's discount already applied.
    """

    region: str
    kind: str  # "machine", "accelerator" or "scale_tier"
    name: str
    on_demand_usd: float | None
    spot_usd: float | None
    as_of: str = ""
    source: str = ""
    basis: str = ""
    spot_basis: str = ""
    discount_percent: float = 0.0
    sheet: str = ""
    """The organisation price sheet's file name, for ``org`` rows."""

    def value(self, spot: bool) -> float | None:
        """The Spot or on-demand price per hour; None when unknown."""
        return self.spot_usd if spot else self.on_demand_usd

    def basis_for(self, spot: bool) -> str:
        """How the Spot or on-demand price was found (a ``PRICE_BASES`` value, or empty)."""
        return (self.spot_basis or self.basis) if spot else self.basis

    def label(self, spot: bool) -> str:
        """How outputs name the price's source: ``derived, unverified``, ``org sheet x.csv``;
        empty for a row without a basis (a test's tiny catalog)."""
        basis = self.basis_for(spot)
        text = _BASIS_LABELS.get(basis, basis)
        if basis == "org" and self.sheet:
            text = f"org sheet {self.sheet}"
        if self.discount_percent and basis != "org":  # a sheet's rate is already negotiated
            text += f" -{self.discount_percent:g}% org discount"
        return text


@dataclass(frozen=True)
class Catalog:
    """Every hardware fact the validator uses, keyed for fast lookup."""

    machine_types: Mapping[str, MachineType] = field(default_factory=dict)
    accelerators: Mapping[str, Accelerator] = field(default_factory=dict)
    attachable_counts: Mapping[tuple[str, str], tuple[int, ...]] = field(default_factory=dict)
    host_limits: Mapping[tuple[str, int], HostLimit] = field(default_factory=dict)
    legacy_machine_types: Mapping[str, LegacyMachineType] = field(default_factory=dict)
    scale_tiers: Mapping[str, ScaleTier] = field(default_factory=dict)
    regions: Mapping[str, Region] = field(default_factory=dict)
    zones: Mapping[str, Zone] = field(default_factory=dict)
    training_images: tuple[TrainingImage, ...] = ()
    prices: Mapping[tuple[str, str, str], Price] = field(default_factory=dict)

    @cached_property
    def zones_by_region(self) -> Mapping[str, tuple[Zone, ...]]:
        by_region: dict[str, list[Zone]] = {name: [] for name in self.regions}
        for zone in sorted(self.zones.values(), key=lambda z: z.name):
            by_region.setdefault(zone.region, []).append(zone)
        return {region: tuple(zones) for region, zones in by_region.items()}

    @cached_property
    def region_accelerators(self) -> Mapping[str, frozenset[str]]:
        """Region → every accelerator type some zone of it offers."""
        return {
            region: frozenset().union(*(z.accelerators for z in zones))
            for region, zones in self.zones_by_region.items()
        }

    @cached_property
    def machines_by_accelerator(self) -> Mapping[str, tuple[str, ...]]:
        by_acc: dict[str, list[str]] = {}
        for machine, accelerator in self.attachable_counts:
            by_acc.setdefault(accelerator, []).append(machine)
        return {acc: tuple(machines) for acc, machines in by_acc.items()}

    @cached_property
    def accelerators_by_gcloud_name(self) -> Mapping[str, str]:
        return {a.gcloud_name: a.name for a in self.accelerators.values() if a.gcloud_name}

    @cached_property
    def accelerator_names(self) -> Mapping[str, str]:
        """Every way of writing an accelerator (enum, gcloud name, alias; folded) → enum name."""
        names: dict[str, str] = {}
        for accelerator in self.accelerators.values():
            for form in (accelerator.name, accelerator.gcloud_name, *accelerator.aliases):
                if form:
                    names.setdefault(_fold(form), accelerator.name)
        return names


# --- loading -------------------------------------------------------------------------


def _rows(directory: Path, name: str) -> list[dict[str, str]]:
    path = directory / name
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as exc:
        raise CatalogError(f"cannot read catalog file {path}: {exc.strerror}") from exc
    for number, row in enumerate(rows, start=2):
        # Columns after `source` were added later and are optional: a row may leave them off.
        columns = list(row)
        for column in columns[columns.index("source") + 1 :] if "source" in columns else ():
            if row[column] is None:
                row[column] = ""
        if not (row.get("source") or "").strip() and name != "zones.csv":
            raise CatalogError(f"{path}:{number}: every row needs a source")
        if None in row or any(v is None for v in row.values()):
            raise CatalogError(f"{path}:{number}: wrong number of columns")
    return rows


def _number(path: str, row: dict[str, str], column: str) -> float:
    try:
        return float(row[column])
    except (KeyError, ValueError) as exc:
        raise CatalogError(
            f"{path}: column {column!r} must be a number, got {row.get(column)!r}"
        ) from exc


def _optional_number(path: str, row: dict[str, str], column: str) -> float | None:
    return _number(path, row, column) if (row.get(column) or "").strip() else None


def _words(row: dict[str, str], column: str) -> tuple[str, ...]:
    """A space-separated list cell; a column a file does not have reads as empty."""
    return tuple((row.get(column) or "").split())


def _fold(name: str) -> str:
    """An accelerator name as compared: lowercase, ``-`` between words."""
    return "-".join(name.strip().lower().replace("_", " ").replace("-", " ").split())


def load_catalog_from(directory: Path) -> Catalog:
    """Read a catalog from a directory of CSV files (see ``catalog/README.md``)."""
    catalog = Catalog(
        machine_types=_machine_types(directory),
        accelerators=_accelerators(directory),
        attachable_counts=_attachable_counts(directory),
        host_limits=_host_limits(directory),
        legacy_machine_types=_legacy_machine_types(directory),
        scale_tiers=_scale_tiers(directory),
        regions={
            r["region"]: Region(name=r["region"], geography=r["geography"], source=r["source"])
            for r in _rows(directory, "regions.csv")
        },
        zones=_zones(directory),
        training_images=_training_images(directory),
        prices=_prices(directory),
    )
    _check_references(catalog)
    return catalog


def _machine_types(directory: Path) -> dict[str, MachineType]:
    return {
        r["machine_type"]: MachineType(
            name=r["machine_type"],
            family=r["family"],
            vcpus=int(_number("machine_types.csv", r, "vcpus")),
            memory_gb=_number("machine_types.csv", r, "memory_gb"),
            fixed_accelerator=r["fixed_accelerator_type"] or None,
            fixed_accelerator_count=int(r["fixed_accelerator_count"] or 0),
            source=r["source"],
            training=(r.get("training") or "yes").strip().lower() != "no",
            capacity=_words(r, "capacity"),
            boot_disk_types=_words(r, "boot_disk_types"),
            cpu_arch=(r.get("cpu_arch") or "").strip() or "x86_64",
        )
        for r in _rows(directory, "machine_types.csv")
    }


def _accelerators(directory: Path) -> dict[str, Accelerator]:
    return {
        r["accelerator_type"]: Accelerator(
            name=r["accelerator_type"],
            kind=r["kind"],
            gcloud_name=r["gcloud_name"],
            memory_gb=_number("accelerators.csv", r, "memory_gb"),
            lifecycle=r["lifecycle"],
            retired_on=r["retired_on"] or None,
            replacement=r["replacement"] or None,
            source=r["source"],
            aliases=tuple(_fold(a) for a in _words(r, "aliases")),
            mig_partition_sizes=_words(r, "mig_partition_sizes"),
            flex_start=(r.get("flex_start") or "").strip().lower() == "yes",
        )
        for r in _rows(directory, "accelerators.csv")
    }


def _attachable_counts(directory: Path) -> dict[tuple[str, str], tuple[int, ...]]:
    attachable: dict[tuple[str, str], tuple[int, ...]] = {}
    for r in _rows(directory, "attachable_counts.csv"):
        try:
            counts = tuple(sorted(int(c) for c in r["counts"].split()))
        except ValueError as exc:
            raise CatalogError(f"attachable_counts.csv: bad counts {r['counts']!r}") from exc
        attachable[(r["machine_type"], r["accelerator_type"])] = counts
    return attachable


def _host_limits(directory: Path) -> dict[tuple[str, int], HostLimit]:
    return {
        (r["accelerator_type"], int(r["accelerator_count"])): HostLimit(
            accelerator=r["accelerator_type"],
            count=int(r["accelerator_count"]),
            max_vcpus=int(r["max_vcpus"]),
            max_memory_gb=_number("n1_host_limits.csv", r, "max_memory_gb"),
            source=r["source"],
        )
        for r in _rows(directory, "n1_host_limits.csv")
    }


def _legacy_machine_types(directory: Path) -> dict[str, LegacyMachineType]:
    return {
        r["legacy_type"]: LegacyMachineType(
            name=r["legacy_type"],
            machine_type=r["machine_type"],
            accelerator=r["accelerator_type"] or None,
            accelerator_count=int(r["accelerator_count"] or 0),
            source=r["source"],
            note=(r.get("note") or "").strip(),
        )
        for r in _rows(directory, "legacy_machine_types.csv")
    }


def _scale_tiers(directory: Path) -> dict[str, ScaleTier]:
    return {
        r["scale_tier"]: ScaleTier(
            name=r["scale_tier"],
            master_type=r["master_type"],
            worker_type=r["worker_type"] or None,
            worker_count=int(r["worker_count"] or 0),
            parameter_server_type=r["parameter_server_type"] or None,
            parameter_server_count=int(r["parameter_server_count"] or 0),
            source=r["source"],
        )
        for r in _rows(directory, "scale_tiers.csv")
    }


def _zones(directory: Path) -> dict[str, Zone]:
    zone_accs: dict[str, set[str]] = {}
    zone_region: dict[str, str] = {}
    for r in _rows(directory, "zones.csv"):
        if not r["source"].strip():
            raise CatalogError(f"zones.csv: row for {r['zone']} needs a source")
        zone_region[r["zone"]] = r["region"]
        zone_accs.setdefault(r["zone"], set())
        if r["accelerator_type"]:
            zone_accs[r["zone"]].add(r["accelerator_type"])
    return {
        name: Zone(name=name, region=zone_region[name], accelerators=frozenset(accs))
        for name, accs in zone_accs.items()
    }


_IMAGE_ACCELERATORS = ("cpu", "gpu", "tpu")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _training_images(directory: Path) -> tuple[TrainingImage, ...]:
    images = []
    for number, r in enumerate(_rows(directory, "training_images.csv"), start=2):
        where = f"training_images.csv:{number}"
        if r["accelerator"] not in _IMAGE_ACCELERATORS:
            raise CatalogError(f"{where}: accelerator must be cpu, gpu or tpu")
        registries = tuple(r["registries"].split())
        dates = (r["end_of_support"].strip() or None, r["end_of_availability"].strip() or None)
        if not registries or any(d and not _ISO_DATE.fullmatch(d) for d in dates):
            raise CatalogError(f"{where}: needs registries and YYYY-MM-DD dates (or none)")
        images.append(
            TrainingImage(
                framework=r["framework"],
                framework_version=r["framework_version"],
                python_version=r["python_version"],
                accelerator=r["accelerator"],
                image_path=r["image_path"],
                registries=registries,
                end_of_support=dates[0],
                end_of_availability=dates[1],
                source=r["source"],
            )
        )
    return tuple(images)


def _prices(directory: Path) -> dict[tuple[str, str, str], Price]:
    prices: dict[tuple[str, str, str], Price] = {}
    for number, r in enumerate(_rows(directory, "prices.csv"), start=2):
        where = f"prices.csv:{number}"
        price = Price(
            region=r["region"],
            kind=r["resource_kind"],
            name=r["name"],
            on_demand_usd=_optional_number(where, r, "on_demand_usd_per_hour"),
            spot_usd=_optional_number(where, r, "spot_usd_per_hour"),
            as_of=r["as_of"],
            source=r["source"],
            basis=(r.get("basis") or "").strip(),
            spot_basis=(r.get("spot_basis") or "").strip(),
        )
        problem = price_problem(price)
        if problem:
            raise CatalogError(f"{where}: {problem}")
        key = (price.region, price.kind, price.name)
        if key in prices:
            raise CatalogError(f"{where}: a second row for {' '.join(key)}")
        prices[key] = price
    return prices


MAX_USD_PER_HOUR = 10_000
"""No machine type or accelerator costs more an hour (the dearest shipped price is under $20):
a larger price is a typo, and one near the float limit (1e308) sums to infinity."""


def price_problem(price: Price) -> str | None:
    """What is wrong with a price row (a negative or zero price, an unknown basis), or None.

    A zero is never a price: an unknown price is an empty cell.
    """
    for column, value in (
        ("on_demand_usd_per_hour", price.on_demand_usd),
        ("spot_usd_per_hour", price.spot_usd),
    ):
        if value is not None and not value > 0:  # also refuses NaN
            return f"{column} must be above 0, got {value:g} (leave it empty when unknown)"
        if value is not None and not value <= MAX_USD_PER_HOUR:  # inf too
            return (
                f"{column} must be at most {MAX_USD_PER_HOUR:,} USD an hour, got {value:g} (a "
                "price for one machine or accelerator; more is a typo, and sums would overflow)"
            )
    for column, basis in (("basis", price.basis), ("spot_basis", price.spot_basis)):
        if basis and basis not in PRICE_BASES:
            return f"{column} {basis!r} is not one of {', '.join(PRICE_BASES)}"
    if price.basis == "unknown" and price.on_demand_usd is not None:
        return "basis is unknown but on_demand_usd_per_hour has a price"
    return None


def _check_references(catalog: Catalog) -> None:
    """Every name a row refers to must exist, so a typo in the data fails loudly."""
    problems: list[str] = []
    for machine, acc in catalog.attachable_counts:
        if machine not in catalog.machine_types:
            problems.append(f"attachable_counts.csv: unknown machine type {machine}")
        if acc not in catalog.accelerators:
            problems.append(f"attachable_counts.csv: unknown accelerator {acc}")
    for legacy in catalog.legacy_machine_types.values():
        target = catalog.machine_types.get(legacy.machine_type)
        if target is None:
            problems.append(f"legacy_machine_types.csv: unknown machine type {legacy.machine_type}")
        elif not target.training:
            problems.append(
                f"legacy_machine_types.csv: {legacy.name} maps to {target.name}, "
                "which Vertex AI training does not accept"
            )
    problems.extend(_machine_problems(catalog))
    problems.extend(_accelerator_problems(catalog))
    for zone in catalog.zones.values():
        if zone.region not in catalog.regions:
            problems.append(f"zones.csv: zone {zone.name} names unknown region {zone.region}")
        problems.extend(
            f"zones.csv: zone {zone.name} names unknown accelerator {acc}"
            for acc in zone.accelerators
            if acc not in catalog.accelerators
        )
    for region, kind, name in catalog.prices:
        if region not in catalog.regions:
            problems.append(f"prices.csv: unknown region {region}")
        known = {"machine": catalog.machine_types, "accelerator": catalog.accelerators}.get(kind)
        if kind not in ("machine", "accelerator", "scale_tier"):
            problems.append(f"prices.csv: unknown resource_kind {kind}")
        elif known is not None and name not in known:
            problems.append(f"prices.csv: unknown {kind} {name}")
    if problems:
        raise CatalogError("catalog data is inconsistent:\n  " + "\n  ".join(problems))


def _machine_problems(catalog: Catalog) -> list[str]:
    problems = []
    for machine in catalog.machine_types.values():
        if machine.fixed_accelerator and machine.fixed_accelerator not in catalog.accelerators:
            problems.append(
                f"machine_types.csv: {machine.name} names unknown accelerator "
                f"{machine.fixed_accelerator}"
            )
        problems.extend(
            f"machine_types.csv: {machine.name} has unknown capacity option {option} "
            f"(known: {', '.join(CAPACITY_OPTIONS)})"
            for option in machine.capacity
            if option not in CAPACITY_OPTIONS
        )
    return problems


def _accelerator_problems(catalog: Catalog) -> list[str]:
    """Replacements must exist; no name form (enum, gcloud name, alias) may mean two types."""
    problems = []
    owner: dict[str, str] = {}
    for accelerator in catalog.accelerators.values():
        if accelerator.replacement and accelerator.replacement not in catalog.accelerators:
            problems.append(
                f"accelerators.csv: {accelerator.name} has unknown replacement "
                f"{accelerator.replacement}"
            )
        forms = {_fold(f) for f in (accelerator.name, accelerator.gcloud_name) if f}
        for form in sorted(forms | set(accelerator.aliases)):
            other = owner.setdefault(form, accelerator.name)
            if other != accelerator.name:
                problems.append(
                    f"accelerators.csv: {form!r} names both {other} and {accelerator.name}"
                )
    return problems


@functools.cache
def load_catalog() -> Catalog:
    """The project's catalog, read from ``components/catalog`` once per process."""
    return load_catalog_from(CATALOG_DIR)


# --- queries -------------------------------------------------------------------------


def allowed_counts(catalog: Catalog, machine_type: str, accelerator: str) -> tuple[int, ...]:
    """The counts of ``accelerator`` attachable to ``machine_type`` (empty: none)."""
    return catalog.attachable_counts.get((machine_type, accelerator), ())


def accepted_accelerators(catalog: Catalog, machine_type: str) -> tuple[str, ...]:
    """The accelerator types ``machine_type`` takes: its own GPUs first, then attachable ones."""
    machine = catalog.machine_types.get(machine_type)
    fixed = (machine.fixed_accelerator,) if machine and machine.fixed_accelerator else ()
    attachable = sorted(a for m, a in catalog.attachable_counts if m == machine_type)
    return (*fixed, *(a for a in attachable if a not in fixed))


def resolve_accelerator(catalog: Catalog, name: str) -> str | None:
    """The ``AcceleratorType`` enum name that ``name`` stands for, or None.

    Understands the enum name in any case, gcloud's names (``nvidia-tesla-t4``) and the
    catalog's aliases (``T4``, ``a100-80gb``), with or without a ``nvidia``/``tesla`` prefix.
    """
    folded = _fold(name)
    candidates = [folded]
    for prefix in ("nvidia-", "tesla-"):
        if candidates[-1].startswith(prefix):
            candidates.append(candidates[-1][len(prefix) :])
    return next(
        (catalog.accelerator_names[c] for c in candidates if c in catalog.accelerator_names), None
    )


def regions_offering(catalog: Catalog, accelerators: Iterable[str]) -> list[str]:
    """Regions where a single zone offers every one of ``accelerators``, sorted."""
    wanted = frozenset(accelerators)
    return sorted(
        region
        for region, zones in catalog.zones_by_region.items()
        if any(wanted <= zone.accelerators for zone in zones)
    )


def zones_offering(catalog: Catalog, region: str, accelerators: Iterable[str]) -> list[str]:
    """Zones of ``region`` that offer every one of ``accelerators``."""
    wanted = frozenset(accelerators)
    return [z.name for z in catalog.zones_by_region.get(region, ()) if wanted <= z.accelerators]


def price_cells(catalog: Catalog) -> list[tuple[str, str, str]]:
    """Every (kind, name, region) whose price a Vertex training job can need, sorted.

    A GPU in each region where a zone offers it (never a retired one); a machine type Vertex
    AI training accepts that comes with its GPUs, where that GPU is offered; any other
    accepted machine type (n1, n2, e2, c2) in every region. TPU machines and TPUs are left
    out: ``zones.csv`` lists no TPU zones, so the catalog offers them nowhere.
    """
    cells: set[tuple[str, str, str]] = set()
    for region, accelerators in catalog.region_accelerators.items():
        for name in accelerators:
            info = catalog.accelerators.get(name)
            if info is not None and info.kind == "gpu" and not info.retired:
                cells.add(("accelerator", name, region))
    for machine in catalog.machine_types.values():
        if not machine.training or machine.family == "tpu":
            continue
        for region in catalog.regions:
            fixed = machine.fixed_accelerator
            if fixed is None or ("accelerator", fixed, region) in cells:
                cells.add(("machine", machine.name, region))
    return sorted(cells)


@dataclass(frozen=True, slots=True)
class Combination:
    """One row of ``catalog`` output: a machine type with N of a GPU type."""

    machine_type: str
    accelerator: str
    counts: tuple[int, ...]
    vcpus: int
    memory_gb: float
    regions: tuple[str, ...]


def combinations(
    catalog: Catalog,
    *,
    accelerator: str | None = None,
    region: str | None = None,
    machine_type: str | None = None,
) -> list[Combination]:
    """Machine type and accelerator combinations matching the filters (like ``sky show-gpus``)."""
    result = []
    for (machine, acc), counts in sorted(catalog.attachable_counts.items()):
        if accelerator and acc != accelerator:
            continue
        if machine_type and machine != machine_type:
            continue
        info = catalog.accelerators.get(acc)
        # A retired type is offered nowhere, whatever history zones.csv keeps.
        offered_in = () if info and info.retired else tuple(regions_offering(catalog, [acc]))
        if region and region not in offered_in:
            continue
        spec = catalog.machine_types[machine]
        result.append(Combination(machine, acc, counts, spec.vcpus, spec.memory_gb, offered_in))
    return result
