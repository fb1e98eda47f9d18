"""Hardware facts as data: the catalog loaded from ``components/catalog/*.csv``.

The CSV files are the source of truth (schema in ``catalog/README.md``); every row names
its source. ``load_catalog()`` reads them once and caches the result. Query functions
take the catalog as an argument, so tests can build tiny catalogs with ``Catalog(...)``.
"""

from __future__ import annotations

import csv
import functools
import io
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from pathlib import Path

from .._errors import CatalogError
from .._files import FileReadError, read_text_capped
from ._violations import terminal_safe

__all__ = [
    "CAPACITIES",
    "CAPACITY_OPTIONS",
    "CATALOG_DIR",
    "MAX_CATALOG_NUMBER",
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
    "TrainingOffer",
    "Zone",
    "accepted_accelerators",
    "allowed_counts",
    "capacity_of",
    "combinations",
    "load_catalog",
    "load_catalog_from",
    "overlay_catalog_dir",
    "price_cells",
    "price_problem",
    "regions_offering",
    "resolve_accelerator",
    "training_regions",
    "training_regions_for",
    "use_catalog_overlay",
    "zones_offering",
]

CATALOG_DIR = Path(__file__).resolve().parents[1] / "catalog"

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
    api_enum: bool = True
    """Whether ``MachineSpec.acceleratorType`` takes the name; not (TPU v6e, v5p): a job
    names it by its machine type alone (``ct6e-standard-4t`` with a ``tpuTopology``)."""

    @property
    def retired(self) -> bool:
        """Retired, or deprecated and past its end of support (``retired_on``)."""
        return self.retired_by(date.today())

    def retired_by(self, today: date) -> bool:
        """Whether Vertex AI no longer offers it on ``today``: ``RETIRED``, or ``DEPRECATED``
        with an end of support (``retired_on``) on or before ``today``."""
        if self.lifecycle == "RETIRED":
            return True
        return (
            self.lifecycle == "DEPRECATED"
            and bool(self.retired_on)
            and (self.retired_on or "") <= today.isoformat()
        )


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
class TrainingOffer:
    """Whether Vertex AI offers an accelerator for custom training in a region.

    From Vertex AI's locations page ("Using accelerators"): a type the page lists for a region
    is offered for training there unless a dagger marks it for prediction only (``training``
    False). Compute Engine's zones are another list (``zones.csv``), kept for the single-zone
    rule.
    """

    region: str
    accelerator: str
    training: bool = True
    as_of: str = ""
    source: str = ""


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


PRICE_BASES = ("vertex", "derived", "unverified", "bound", "floor", "unknown", "org")
"""How a price was found (``prices.csv`` columns ``basis``, ``spot_basis``, ``flex_start_basis``):

- ``vertex``: a Vertex AI custom-training price a public source states;
- ``derived``: a Compute Engine list price times Vertex's custom-training uplift (1.15), for a
  family whose uplift was checked against a Vertex price;
- ``unverified``: derived the same way for a family whose uplift could not be checked;
- ``bound`` (Spot and flex-start only): the on-demand price standing in as the upper bound of
  a Spot or flex-start price the source lacks (or gives at or above on-demand);
- ``floor`` (Spot and flex-start only): the Compute Engine rate of that capacity alone, a lower
  bound: Vertex's management fee on it is not known there;
- ``unknown``: no price (the row's source says why);
- ``org``: an organisation's price sheet (``training:prices``).
"""

_BASIS_LABELS = {
    "vertex": "Vertex price",
    "derived": "derived",
    "unverified": "derived, unverified",
    "bound": "on-demand bound",
    "floor": "lower bound",
    "unknown": "unknown",
    "org": "org sheet",
    "": "",
}


CAPACITIES = ("on_demand", "spot", "flex_start")
"""How a job's capacity is billed: on-demand (``STANDARD``), Spot, or flex-start (DWS)."""


def capacity_of(capacity: bool | str) -> str:
    """``True``/``False`` (the older Spot flag) or a ``CAPACITIES`` name, as that name."""
    if isinstance(capacity, bool):
        return "spot" if capacity else "on_demand"
    if capacity not in CAPACITIES:
        raise ValueError(f"capacity must be one of {', '.join(CAPACITIES)}, got {capacity!r}")
    return capacity


@dataclass(frozen=True, slots=True)
class Price:
    """A Vertex AI training price per hour: of a machine, one accelerator, or a legacy tier.

    ``None`` means the price is not known for that region (never zero). ``basis`` says how
    the on-demand price was found, ``spot_basis`` the Spot price's (empty: as ``basis``),
    ``flex_start_basis`` the flex-start price's; see ``PRICE_BASES``. ``discount_percent`` is
    an organisation's discount already applied.

    Vertex bills each capacity its own way: on-demand by Vertex's training SKUs; Spot and
    flex-start (DWS) as the Compute Engine SKU of that capacity plus a Vertex management fee
    (``catalog/README.md``, "How Vertex bills"). So a flex-start price is never the on-demand
    one, and an empty ``flex_start_usd`` is unknown, not "as on-demand".
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
    flex_start_usd: float | None = None
    flex_start_basis: str = ""

    def value(self, capacity: bool | str) -> float | None:
        """The price per hour of a capacity (``True``: Spot); None when unknown."""
        kind = capacity_of(capacity)
        if kind == "spot":
            return self.spot_usd
        return self.flex_start_usd if kind == "flex_start" else self.on_demand_usd

    def basis_for(self, capacity: bool | str) -> str:
        """How that capacity's price was found (a ``PRICE_BASES`` value, or empty)."""
        kind = capacity_of(capacity)
        if kind == "spot":
            return self.spot_basis or self.basis
        return self.flex_start_basis if kind == "flex_start" else self.basis

    def label(self, spot: bool | str) -> str:
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
    tpu_topologies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """TPU machine type → the ``tpuTopology`` values Vertex AI takes for it
    (``tpu_topologies.csv``); a machine type with none listed is not checked."""
    training_offers: Mapping[tuple[str, str], TrainingOffer] = field(default_factory=dict)
    """(region, accelerator) → what Vertex AI's locations page says (``training_regions.csv``);
    empty (a test's tiny catalog): the zones stand in for it."""

    @cached_property
    def training_accelerators(self) -> Mapping[str, frozenset[str]]:
        """Region → the accelerator types Vertex AI offers there for custom training.

        Vertex AI's locations page when the catalog has it, else the types some zone offers.
        """
        if not self.training_offers:
            return self.region_accelerators
        by_region: dict[str, set[str]] = {name: set() for name in self.regions}
        for (region, accelerator), offer in self.training_offers.items():
            if offer.training:
                by_region.setdefault(region, set()).add(accelerator)
        return {region: frozenset(accs) for region, accs in by_region.items()}

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


_WHERE = "\x00where"
"""A row's origin (``file:line``) under a key no CSV header can hold, for error messages."""

_KEYS: dict[str, tuple[str, ...]] = {
    "machine_types.csv": ("machine_type",),
    "accelerators.csv": ("accelerator_type",),
    "attachable_counts.csv": ("machine_type", "accelerator_type"),
    "n1_host_limits.csv": ("accelerator_type", "accelerator_count"),
    "legacy_machine_types.csv": ("legacy_type",),
    "scale_tiers.csv": ("scale_tier",),
    "regions.csv": ("region",),
    "zones.csv": ("zone", "accelerator_type"),
    "training_regions.csv": ("region", "accelerator_type"),
    "training_images.csv": ("image_path", "accelerator"),
    "prices.csv": ("region", "resource_kind", "name"),
    "tpu_topologies.csv": ("machine_type", "topology"),
}
"""The files a catalog is read from, each with the columns that key a row (an overlay row
with the key of a packaged row replaces it)."""

_OPTIONAL_FILES = frozenset({"training_regions.csv", "tpu_topologies.csv"})
"""Files a catalog directory may lack (one made before the file existed)."""

MAX_OVERLAY_FILE_BYTES = 1024 * 1024
"""An overlay file larger than this is refused unread (the packaged files are far smaller)."""

MAX_CATALOG_NUMBER = 1_000_000
"""The largest number a catalog cell may hold (vCPUs, GB of memory, counts): the largest
machine type has 32,768 GB and 1,920 vCPUs; a larger number is a typo, and ``1e400`` (read as
infinity) or ``nan`` would break every sum and comparison made with it."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]")
"""Control and invisible format characters (terminal escapes, bidirectional overrides): no
catalog cell needs one, and a name holding one would act on the terminal it is printed to."""


def _shown(path: Path | str) -> str:
    """A path as a message shows it: control characters escaped, bounded."""
    return terminal_safe(os.fspath(path), 300)


@dataclass(frozen=True)
class _Source:
    """Where a catalog's rows come from: a directory, and an overlay directory over it."""

    directory: Path
    overlay: Path | None = None

    def rows(self, name: str) -> list[dict[str, str]]:
        """The rows of ``name``: the directory's, with the overlay's added or replacing them."""
        if name in _OPTIONAL_FILES and not (self.directory / name).exists():
            rows: list[dict[str, str]] = []
            header: list[str] = []
        else:
            header, rows = _read_rows(self.directory / name, name)
        if self.overlay is None or not os.path.lexists(self.overlay / name):
            return rows
        return _merged(name, header, rows, self.overlay / name)


def _read_rows(
    path: Path, name: str, text: str | None = None
) -> tuple[list[str], list[dict[str, str]]]:
    """(header, rows) of one catalog CSV (``text``: its content, already read), each row with
    its origin; raises ``CatalogError``."""
    try:
        if text is None:
            with path.open(newline="", encoding="utf-8") as handle:
                text = handle.read()
        reader = csv.DictReader(io.StringIO(text, newline=""))
        rows = list(reader)
        header = list(reader.fieldnames or ())
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise CatalogError(f"cannot read catalog file {_shown(path)}: {reason}") from exc
    for column in header:
        if _CONTROL.search(column):
            raise CatalogError(f"{_shown(path)}:1: a column name holds a control character")
    for number, row in enumerate(rows, start=2):
        # Columns after `source` were added later and are optional: a row may leave them off.
        columns = list(row)
        for column in columns[columns.index("source") + 1 :] if "source" in columns else ():
            if row[column] is None:
                row[column] = ""
        if not (row.get("source") or "").strip() and name != "zones.csv":
            raise CatalogError(f"{_shown(path)}:{number}: every row needs a source")
        if None in row or any(v is None for v in row.values()):
            raise CatalogError(f"{_shown(path)}:{number}: wrong number of columns")
        control = next((c for c, v in row.items() if _CONTROL.search(v)), None)
        if control is not None:
            found = _CONTROL.search(row[control])
            code = f"U+{ord(found.group()):04X}" if found else "a control character"
            raise CatalogError(
                f"{_shown(path)}:{number}: column {control!r} holds {code}, a control "
                "character (a catalog cell is plain text)"
            )
        row[_WHERE] = f"{_shown(path)}:{number}"
    return header, rows


def _merged(
    name: str, header: list[str], rows: list[dict[str, str]], path: Path
) -> list[dict[str, str]]:
    """``rows`` with the overlay file's rows: a row with a packaged row's key replaces it, any
    other is added. The overlay's columns must be the packaged file's (those up to ``source``
    required), and every key cell filled."""
    # A stack's or a pull request's folder: a regular file, read to a cap, never a device,
    # a FIFO or a link to either (components._files), nor a link out of the folder (to a
    # file of the system or of the user: an overlay is what a pull request brings).
    try:
        linked_out = not path.resolve().is_relative_to(path.parent.resolve())
    except (OSError, RuntimeError):
        linked_out = True
    if linked_out:
        raise CatalogError(f"{_shown(path)}: links out of the overlay folder; not read")
    try:
        text = read_text_capped(path, MAX_OVERLAY_FILE_BYTES, what="catalog overlay file")
    except FileReadError as exc:
        raise CatalogError(str(exc)) from None
    overlay_header, overlay_rows = _read_rows(path, name, text)
    keys = _KEYS[name]
    known = header or list(overlay_header)
    required = known[: known.index("source") + 1] if "source" in known else known
    unknown = [i for i, c in enumerate(overlay_header, start=1) if c not in known]
    if unknown:
        # By position: a header's text is the file's content, never echoed (issue 42).
        raise CatalogError(
            f"{_shown(path)}:1: column {unknown[0]} of the header is not a column of {name} "
            f"(its columns: {', '.join(known)})"
        )
    missing = [c for c in (*keys, *required) if c not in overlay_header]
    if missing:
        raise CatalogError(f"{_shown(path)}:1: column {missing[0]!r} is missing")
    index = {tuple(r[k] for k in keys): i for i, r in enumerate(rows)}
    merged = list(rows)
    for row in overlay_rows:
        empty = next((k for k in keys if not (row.get(k) or "").strip()), None)
        if empty is not None:
            raise CatalogError(f"{row[_WHERE]}: {empty} is empty (it keys the row)")
        key = tuple(row[k] for k in keys)
        if key in index:
            merged[index[key]] = row
        else:
            index[key] = len(merged)
            merged.append(row)
    return merged


def overlay_catalog_dir(directory: Path) -> Path:
    """``directory`` checked as a catalog overlay: a folder whose CSV files are catalog files.

    Raises ``CatalogError`` naming the folder or the file that is not a catalog file.
    """
    if not directory.is_dir():
        raise CatalogError(f"catalog overlay {_shown(directory)}: not a directory")
    for path in sorted(directory.glob("*.csv")):
        if path.name not in _KEYS:
            raise CatalogError(
                f"catalog overlay {_shown(path)}: not a catalog file (the files an overlay may hold: "
                f"{', '.join(sorted(_KEYS))})"
            )
    return directory


def _where(row: dict[str, str], fallback: str) -> str:
    return row.get(_WHERE) or fallback


def _number(path: str, row: dict[str, str], column: str) -> float:
    """A number cell: finite, from 0 to ``MAX_CATALOG_NUMBER`` (``nan``, ``inf`` and ``1e400``
    are refused naming the file, row and column)."""
    text = row.get(column)
    try:
        number = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = None
    if number is None:
        raise CatalogError(f"{_where(row, path)}: column {column!r} must be a number")
    if not 0 <= number <= MAX_CATALOG_NUMBER:  # NaN fails both comparisons
        raise CatalogError(
            f"{_where(row, path)}: column {column!r} must be a number from 0 to "
            f"{MAX_CATALOG_NUMBER:,}, got {number:g}"
        )
    return number


def _int(path: str, row: dict[str, str], column: str) -> int:
    """A whole-number cell from 0 to ``MAX_CATALOG_NUMBER``; an empty one is 0."""
    text = (row.get(column) or "").strip()
    try:
        number = int(text or 0)
    except ValueError:
        number = None
    if number is None:
        raise CatalogError(f"{_where(row, path)}: column {column!r} must be a whole number")
    if not 0 <= number <= MAX_CATALOG_NUMBER:
        raise CatalogError(
            f"{_where(row, path)}: column {column!r} must be a whole number from 0 to "
            f"{MAX_CATALOG_NUMBER:,}"
        )
    return number


def _optional_number(path: str, row: dict[str, str], column: str) -> float | None:
    return _number(path, row, column) if (row.get(column) or "").strip() else None


def _words(row: dict[str, str], column: str) -> tuple[str, ...]:
    """A space-separated list cell; a column a file does not have reads as empty."""
    return tuple((row.get(column) or "").split())


def _fold(name: str) -> str:
    """An accelerator name as compared: lowercase, ``-`` between words."""
    return "-".join(name.strip().lower().replace("_", " ").replace("-", " ").split())


def load_catalog_from(directory: Path, overlay: Path | None = None) -> Catalog:
    """Read a catalog from a directory of CSV files (see ``catalog/README.md``).

    ``overlay`` names a folder of CSV files of the same schemas whose rows add to or replace
    (by key) the directory's; a problem in it is a ``CatalogError`` naming file, row and field.
    """
    source = _Source(directory, overlay_catalog_dir(overlay) if overlay is not None else None)
    catalog = Catalog(
        machine_types=_machine_types(source),
        accelerators=_accelerators(source),
        attachable_counts=_attachable_counts(source),
        host_limits=_host_limits(source),
        legacy_machine_types=_legacy_machine_types(source),
        scale_tiers=_scale_tiers(source),
        regions={
            r["region"]: Region(name=r["region"], geography=r["geography"], source=r["source"])
            for r in source.rows("regions.csv")
        },
        zones=_zones(source),
        training_images=_training_images(source),
        prices=_prices(source),
        training_offers=_training_offers(source),
        tpu_topologies=_tpu_topologies(source),
    )
    _check_references(catalog)
    return catalog


def _machine_types(source: _Source) -> dict[str, MachineType]:
    return {
        r["machine_type"]: MachineType(
            name=r["machine_type"],
            family=r["family"],
            vcpus=int(_number("machine_types.csv", r, "vcpus")),
            memory_gb=_number("machine_types.csv", r, "memory_gb"),
            fixed_accelerator=r["fixed_accelerator_type"] or None,
            fixed_accelerator_count=_int("machine_types.csv", r, "fixed_accelerator_count"),
            source=r["source"],
            training=(r.get("training") or "yes").strip().lower() != "no",
            capacity=_words(r, "capacity"),
            boot_disk_types=_words(r, "boot_disk_types"),
            cpu_arch=(r.get("cpu_arch") or "").strip() or "x86_64",
        )
        for r in source.rows("machine_types.csv")
    }


def _accelerators(source: _Source) -> dict[str, Accelerator]:
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
            api_enum=(r.get("api_enum") or "").strip().lower() != "no",
        )
        for r in source.rows("accelerators.csv")
    }


def _tpu_topologies(source: _Source) -> dict[str, tuple[str, ...]]:
    by_machine: dict[str, list[str]] = {}
    for r in source.rows("tpu_topologies.csv"):
        by_machine.setdefault(r["machine_type"], []).append(r["topology"].strip().lower())
    return {machine: tuple(topologies) for machine, topologies in by_machine.items()}


def _attachable_counts(source: _Source) -> dict[tuple[str, str], tuple[int, ...]]:
    attachable: dict[tuple[str, str], tuple[int, ...]] = {}
    for r in source.rows("attachable_counts.csv"):
        try:
            counts = tuple(sorted(int(c) for c in r["counts"].split()))
        except ValueError:
            counts = (-1,)
        if not all(0 < c <= MAX_CATALOG_NUMBER for c in counts):
            where = _where(r, "attachable_counts.csv")
            raise CatalogError(
                f"{where}: column 'counts' must be whole numbers from 1 to "
                f"{MAX_CATALOG_NUMBER:,}, separated by spaces"
            )
        attachable[(r["machine_type"], r["accelerator_type"])] = counts
    return attachable


def _host_limits(source: _Source) -> dict[tuple[str, int], HostLimit]:
    return {
        (r["accelerator_type"], _int("n1_host_limits.csv", r, "accelerator_count")): HostLimit(
            accelerator=r["accelerator_type"],
            count=_int("n1_host_limits.csv", r, "accelerator_count"),
            max_vcpus=_int("n1_host_limits.csv", r, "max_vcpus"),
            max_memory_gb=_number("n1_host_limits.csv", r, "max_memory_gb"),
            source=r["source"],
        )
        for r in source.rows("n1_host_limits.csv")
    }


def _legacy_machine_types(source: _Source) -> dict[str, LegacyMachineType]:
    return {
        r["legacy_type"]: LegacyMachineType(
            name=r["legacy_type"],
            machine_type=r["machine_type"],
            accelerator=r["accelerator_type"] or None,
            accelerator_count=_int("legacy_machine_types.csv", r, "accelerator_count"),
            source=r["source"],
            note=(r.get("note") or "").strip(),
        )
        for r in source.rows("legacy_machine_types.csv")
    }


def _scale_tiers(source: _Source) -> dict[str, ScaleTier]:
    return {
        r["scale_tier"]: ScaleTier(
            name=r["scale_tier"],
            master_type=r["master_type"],
            worker_type=r["worker_type"] or None,
            worker_count=_int("scale_tiers.csv", r, "worker_count"),
            parameter_server_type=r["parameter_server_type"] or None,
            parameter_server_count=_int("scale_tiers.csv", r, "parameter_server_count"),
            source=r["source"],
        )
        for r in source.rows("scale_tiers.csv")
    }


def _zones(source: _Source) -> dict[str, Zone]:
    zone_accs: dict[str, set[str]] = {}
    zone_region: dict[str, str] = {}
    for r in source.rows("zones.csv"):
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


def _training_offers(source: _Source) -> dict[tuple[str, str], TrainingOffer]:
    offers: dict[tuple[str, str], TrainingOffer] = {}
    for r in source.rows("training_regions.csv"):
        training = (r.get("training") or "").strip().lower()
        if training not in ("yes", "no"):
            where = _where(r, "training_regions.csv")
            raise CatalogError(f"{where}: column 'training' must be yes or no")
        offers[(r["region"], r["accelerator_type"])] = TrainingOffer(
            region=r["region"],
            accelerator=r["accelerator_type"],
            training=training == "yes",
            as_of=(r.get("as_of") or "").strip(),
            source=r["source"],
        )
    return offers


_IMAGE_ACCELERATORS = ("cpu", "gpu", "tpu")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _training_images(source: _Source) -> tuple[TrainingImage, ...]:
    images = []
    for r in source.rows("training_images.csv"):
        where = _where(r, "training_images.csv")
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


def _prices(source: _Source) -> dict[tuple[str, str, str], Price]:
    prices: dict[tuple[str, str, str], Price] = {}
    for r in source.rows("prices.csv"):
        where = _where(r, "prices.csv")
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
            flex_start_usd=_optional_number(where, r, "flex_start_usd_per_hour"),
            flex_start_basis=(r.get("flex_start_basis") or "").strip(),
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
        ("flex_start_usd_per_hour", price.flex_start_usd),
    ):
        if value is not None and not value > 0:  # also refuses NaN
            return f"{column} must be above 0, got {value:g} (leave it empty when unknown)"
        if value is not None and not value <= MAX_USD_PER_HOUR:  # inf too
            return (
                f"{column} must be at most {MAX_USD_PER_HOUR:,} USD an hour, got {value:g} (a "
                "price for one machine or accelerator; more is a typo, and sums would overflow)"
            )
    for column, basis in (
        ("basis", price.basis),
        ("spot_basis", price.spot_basis),
        ("flex_start_basis", price.flex_start_basis),
    ):
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
    problems.extend(
        f"tpu_topologies.csv: {machine} is not a TPU machine type of machine_types.csv"
        for machine in catalog.tpu_topologies
        if getattr(catalog.machine_types.get(machine), "family", None) != "tpu"
    )
    for zone in catalog.zones.values():
        if zone.region not in catalog.regions:
            problems.append(f"zones.csv: zone {zone.name} names unknown region {zone.region}")
        problems.extend(
            f"zones.csv: zone {zone.name} names unknown accelerator {acc}"
            for acc in zone.accelerators
            if acc not in catalog.accelerators
        )
    for region, acc in catalog.training_offers:
        if region not in catalog.regions:
            problems.append(f"training_regions.csv: unknown region {region}")
        if acc not in catalog.accelerators:
            problems.append(f"training_regions.csv: unknown accelerator {acc}")
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


_overlay: Path | None = None


def use_catalog_overlay(directory: Path | None) -> None:
    """Make ``load_catalog()`` return the packaged catalog with ``directory``'s rows over it
    (``training:catalogOverlay``, ``--catalog-overlay``); None: the packaged catalog alone.

    The overlaid catalog is read here, so a bad overlay raises ``CatalogError`` (naming the
    file, row and field) before anything uses it.
    """
    global _overlay
    resolved = directory.resolve() if directory is not None else None
    _cached_catalog(resolved)
    _overlay = resolved


@functools.cache
def _cached_catalog(overlay: Path | None) -> Catalog:
    return load_catalog_from(CATALOG_DIR, overlay)


def load_catalog() -> Catalog:
    """The project's catalog, read from ``components/catalog`` once per process, with the
    overlay ``use_catalog_overlay`` named over it."""
    return _cached_catalog(_overlay)


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


def training_regions(catalog: Catalog, accelerator: str) -> list[str]:
    """Regions where Vertex AI offers ``accelerator`` for custom training, sorted (never for a
    retired type)."""
    info = catalog.accelerators.get(accelerator)
    if info is not None and info.retired:
        return []
    return training_regions_for(catalog, [accelerator])


def training_regions_for(catalog: Catalog, accelerators: Iterable[str]) -> list[str]:
    """Regions where a job with all of ``accelerators`` may train, sorted: Vertex AI offers each
    there for training, and one zone holds those of them the zones list together."""
    wanted = frozenset(accelerators)
    found = []
    for region, offered in catalog.training_accelerators.items():
        zoned = wanted & catalog.region_accelerators.get(region, frozenset())
        if wanted <= offered and (len(zoned) < 2 or zones_offering(catalog, region, zoned)):
            found.append(region)
    return sorted(found)


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

    A GPU in each region where Vertex AI offers it for custom training (``training_regions``:
    Vertex's locations page, ``training_regions.csv``; the zones only for a catalog without
    it), never a retired one; a machine type Vertex AI training accepts that comes with its
    GPUs, where that GPU is offered; any other accepted machine type (n1, n2, e2, c2, ...) in
    every region. TPU machines and TPUs are left out (the region rule checks GPUs only).
    """
    cells: set[tuple[str, str, str]] = set()
    for name, info in catalog.accelerators.items():
        if info.kind != "gpu" or info.retired:
            continue
        for region in training_regions(catalog, name):
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
        # Where Vertex AI offers it for training; a retired type is offered nowhere.
        offered_in = tuple(training_regions(catalog, acc))
        if region and region not in offered_in:
            continue
        spec = catalog.machine_types[machine]
        result.append(Combination(machine, acc, counts, spec.vcpus, spec.memory_gb, offered_in))
    return result
