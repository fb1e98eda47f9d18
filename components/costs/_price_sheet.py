"""Organisation prices: a stack's negotiated rates over the catalog's shipped prices.

A stack names them in ``training:prices`` (``Pulumi.<stack>.yaml``)::

    training:prices: stacks/prices/acme.csv          # a price sheet
    training:prices: 12.5                            # a discount in percent
    training:prices: {sheet: stacks/prices/acme.csv, discountPercent: 12.5}   # both

The sheet has the schema of ``components/catalog/prices.csv`` (``catalog/README.md``): the
columns ``region, resource_kind, name, on_demand_usd_per_hour``, and optionally
``spot_usd_per_hour, flex_start_usd_per_hour, as_of, source``; ``region`` may be ``*`` for every
region (a row for a region wins over a ``*`` row). A sheet row replaces the shipped price of
its machine or accelerator; an empty Spot or flex-start cell keeps the shipped price of that
capacity. The discount applies to every
shipped price the sheet does not replace (a sheet's rates are already what the team pays).
Every price keeps saying where it came from (``Price.label``).

This module does not import ``pulumi``: ``components.config`` reads the setting for the
program and the policy pack, ``components.review`` from the preview's config.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import TrainingJobError
from .._files import FileReadError, outside_read_roots, read_text_capped
from ..rules._catalog import Catalog, Price, price_problem
from ..rules._violations import clipped, terminal_safe

__all__ = [
    "MAX_SHEET_BYTES",
    "PRICE_COLUMNS",
    "PriceSetting",
    "PriceSheetError",
    "apply_prices",
    "parse_price_setting",
    "read_price_sheet",
]

KEY = "training:prices"
MAX_SHEET_BYTES = 1 << 20
"""A price sheet is a small table; a larger file is refused before it is parsed."""

_REQUIRED = ("region", "resource_kind", "name", "on_demand_usd_per_hour")
_OPTIONAL = (
    "spot_usd_per_hour",
    "as_of",
    "source",
    "basis",
    "spot_basis",
    "flex_start_usd_per_hour",
    "flex_start_basis",
)
PRICE_COLUMNS = _REQUIRED + _OPTIONAL
"""The columns of ``catalog/prices.csv``, in its order (a sheet may leave the optional ones off)."""
_SETTING_KEYS = ("sheet", "discountPercent")
_DECIMAL = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_CELL_CHARS = 40
"""The most of a cell (or a setting) an error quotes: a file's content is never echoed whole."""


def _cell(value: Any) -> str:
    """``value`` quoted for a message: at most ``_CELL_CHARS`` characters, control characters
    escaped (``repr``)."""
    if isinstance(value, str):
        return repr(clipped(value, _CELL_CHARS))
    return clipped(repr(value), _CELL_CHARS)


class PriceSheetError(TrainingJobError, ValueError):
    """``training:prices`` or its sheet is invalid; the message names the key, file, row, field."""


@dataclass(frozen=True)
class PriceSetting:
    """A stack's ``training:prices``: a price sheet, a discount in percent, or both."""

    sheet: Path | None = None
    discount_percent: float = 0.0


def parse_price_setting(
    value: Any, root: Path, key: str = KEY, *, anywhere: bool = False
) -> PriceSetting | None:
    """The setting from its config value (None when unset); raises ``PriceSheetError``.

    ``value`` is what the stack configuration holds: a path, a number, a mapping, or the
    JSON text of one (as ``pulumi.Config.get`` and the preview's config give it). A sheet must
    lie in the project folder ``root`` (or a folder of ``GPU_TRAINING_READ_ROOTS``,
    ``components._files``) unless ``anywhere`` (a path the user typed: ``--prices``).
    """
    if value is None or value == "":
        return None
    if isinstance(value, str):
        with contextlib.suppress(ValueError):  # not JSON: a plain path
            value = json.loads(value)
    if isinstance(value, str):
        return PriceSetting(sheet=_sheet_path(value, root, key, anywhere))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return PriceSetting(discount_percent=_discount(value, key))
    if not isinstance(value, Mapping):
        raise PriceSheetError(
            f"{key}: expected a price sheet path, a discount in percent, or a mapping with "
            f"sheet and discountPercent, got {type(value).__name__}"
        )
    unknown = sorted(str(k) for k in value if k not in _SETTING_KEYS)
    if unknown:
        raise PriceSheetError(f"{key}.{unknown[0]}: unknown key (known: sheet, discountPercent)")
    sheet = value.get("sheet")
    if sheet is not None and not isinstance(sheet, str):
        raise PriceSheetError(f"{key}.sheet: expected a path, got {_cell(sheet)}")
    discount = value.get("discountPercent", 0)
    return PriceSetting(
        sheet=_sheet_path(sheet, root, f"{key}.sheet", anywhere) if sheet else None,
        discount_percent=_discount(discount, f"{key}.discountPercent"),
    )


def _discount(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PriceSheetError(f"{key}: expected a discount in percent, got {_cell(value)}")
    number = float(value)
    if not (math.isfinite(number) and 0 <= number < 100):
        raise PriceSheetError(
            f"{key}: a discount is from 0 to below 100 percent, got {_cell(value)}"
        )
    return number


def _sheet_path(value: str, root: Path, key: str, anywhere: bool) -> Path:
    if "\0" in value:
        raise PriceSheetError(f"{key}: {_cell(value)} is not a valid path (it holds a NUL byte)")
    path = Path(value)
    path = path if path.is_absolute() else root / path
    outside = None if anywhere else outside_read_roots(path, root)
    if outside:
        raise PriceSheetError(f"{key}: {_cell(value)} {outside}")
    return path


def read_price_sheet(path: Path, catalog: Catalog) -> dict[tuple[str, str, str], Price]:
    """The rows of a price sheet, checked against ``catalog``; raises ``PriceSheetError``.

    Rows are keyed like ``Catalog.prices``; a ``*`` region is kept as ``*``.
    """
    try:
        # As every file a stack names: a regular file on disk (symlinks followed), not a FIFO,
        # a device or a /proc file, at most MAX_SHEET_BYTES (``components._files``).
        text = read_text_capped(path, MAX_SHEET_BYTES, what="price sheet")
    except FileReadError as exc:
        raise PriceSheetError(f"{KEY}: price sheet {exc}") from None
    return _sheet_rows(text, terminal_safe(path.name, 100), catalog)


def _sheet_rows(text: str, name: str, catalog: Catalog) -> dict[tuple[str, str, str], Price]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [column.strip() for column in next(reader, [])]
    except csv.Error as exc:
        raise PriceSheetError(f"{name}:1: not CSV ({exc})") from None
    # A header's and a cell's text are the file's content: errors name the row and column only.
    unknown = [i for i, c in enumerate(header) if c not in _REQUIRED + _OPTIONAL]
    if unknown:
        raise PriceSheetError(
            f"{name}:1: column {unknown[0] + 1} of the header is not a price sheet column "
            f"(columns: {', '.join(_REQUIRED + _OPTIONAL)})"
        )
    missing = [c for c in _REQUIRED if c not in header]
    if missing:
        raise PriceSheetError(f"{name}:1: missing column {missing[0]!r}")
    if len(set(header)) != len(header):
        raise PriceSheetError(f"{name}:1: a column is named twice")
    rows: dict[tuple[str, str, str], Price] = {}
    try:
        for cells in reader:
            number = reader.line_num
            if not any(cell.strip() for cell in cells):
                continue
            if len(cells) != len(header):
                raise PriceSheetError(
                    f"{name}:{number}: {len(cells)} fields, the header has {len(header)}"
                )
            price = _sheet_price(dict(zip(header, cells, strict=True)), f"{name}:{number}", catalog)
            key = (price.region, price.kind, price.name)
            if key in rows:
                raise PriceSheetError(f"{name}:{number}: a second row for {' '.join(key)}")
            rows[key] = dataclasses.replace(price, sheet=name)
    except csv.Error as exc:
        raise PriceSheetError(f"{name}:{reader.line_num}: not CSV ({exc})") from None
    return rows


def _sheet_price(row: dict[str, str], where: str, catalog: Catalog) -> Price:
    region, kind, name = (row[c].strip() for c in ("region", "resource_kind", "name"))
    if region != "*" and region not in catalog.regions:
        raise PriceSheetError(
            f"{where}: region: not a region of the catalog (or * for every region)"
        )
    known = {"machine": catalog.machine_types, "accelerator": catalog.accelerators}.get(kind)
    if known is None:
        raise PriceSheetError(f"{where}: resource_kind: must be machine or accelerator")
    if name not in known:
        raise PriceSheetError(f"{where}: name: not a {kind} of the catalog")
    values = []
    for column in ("on_demand_usd_per_hour", "spot_usd_per_hour", "flex_start_usd_per_hour"):
        text = (row.get(column) or "").strip()
        # Python's float() also reads "1_000", "inf", "nan" and digits of other scripts ("٣"):
        # a price is written in plain decimal digits.
        if text and not _DECIMAL.fullmatch(text):
            raise PriceSheetError(f"{where}: {column}: not a number in plain decimal digits")
        values.append(float(text) if text else None)
    if values[0] is None:
        raise PriceSheetError(f"{where}: on_demand_usd_per_hour: a sheet row needs a price")
    price = Price(
        region,
        kind,
        name,
        values[0],
        values[1],
        as_of=(row.get("as_of") or "").strip(),
        source=(row.get("source") or "").strip() or "organisation price sheet",
        basis="org",
        spot_basis="org" if values[1] is not None else "",
        flex_start_usd=values[2],
        flex_start_basis="org" if values[2] is not None else "",
    )
    problem = price_problem(price)
    if problem:
        raise PriceSheetError(f"{where}: {problem}")
    for column, value in (("spot_usd_per_hour", values[1]), ("flex_start_usd_per_hour", values[2])):
        if value is not None and value > values[0]:
            raise PriceSheetError(f"{where}: {column}: above the on-demand price")
    return price


def apply_prices(catalog: Catalog, setting: PriceSetting | None) -> Catalog:
    """``catalog`` with the setting's sheet and discount over its prices (itself if None)."""
    if setting is None or (setting.sheet is None and not setting.discount_percent):
        return catalog
    stat = _stat(setting.sheet) if setting.sheet is not None else None
    key = (setting, stat, id(catalog))
    found = _PRICED.get(key)
    if found is not None and found[0] is catalog:
        return found[1]
    sheet: dict[tuple[str, str, str], Price] = {}
    if setting.sheet is not None and stat is not None:
        sheet = _cached_sheet(setting.sheet, stat, catalog)
    priced = dataclasses.replace(catalog, prices=_merged(catalog, sheet, setting.discount_percent))
    if len(_PRICED) >= 8:
        _PRICED.clear()
    _PRICED[key] = (catalog, priced)
    return priced


def _stat(path: Path) -> tuple[int, int]:
    try:
        info = path.stat()
    except FileNotFoundError:
        raise PriceSheetError(f"{KEY}: price sheet {path} does not exist") from None
    except OSError as exc:
        raise PriceSheetError(f"{KEY}: cannot read price sheet {path}: {exc.strerror}") from None
    return info.st_mtime_ns, info.st_size


_SHEETS: dict[tuple[Path, tuple[int, int], int], dict[tuple[str, str, str], Price]] = {}
_PRICED: dict[tuple[PriceSetting, tuple[int, int] | None, int], tuple[Catalog, Catalog]] = {}
"""Priced catalogs per setting, sheet version and catalog: the merge is done once, not once
per caller (the config check, the program, the policy pack's every resource and rule)."""


def _cached_sheet(
    path: Path, stat: tuple[int, int], catalog: Catalog
) -> dict[tuple[str, str, str], Price]:
    """A sheet read once per version of the file (the policy pack prices every resource)."""
    key = (path, stat, id(catalog))
    if key not in _SHEETS:
        if len(_SHEETS) >= 8:
            _SHEETS.clear()
        _SHEETS[key] = read_price_sheet(path, catalog)
    return _SHEETS[key]


def _merged(
    catalog: Catalog, sheet: Mapping[tuple[str, str, str], Price], discount: float
) -> dict[tuple[str, str, str], Price]:
    factor = 1 - discount / 100
    prices: dict[tuple[str, str, str], Price] = {}
    for key, price in catalog.prices.items():
        prices[key] = (
            dataclasses.replace(
                price,
                on_demand_usd=None if price.on_demand_usd is None else price.on_demand_usd * factor,
                spot_usd=None if price.spot_usd is None else price.spot_usd * factor,
                flex_start_usd=None
                if price.flex_start_usd is None
                else price.flex_start_usd * factor,
                discount_percent=discount,
            )
            if discount
            else price
        )
    everywhere = {k: p for k, p in sheet.items() if k[0] == "*"}
    for (_, kind, name), row in everywhere.items():
        for region in catalog.regions:
            prices[(region, kind, name)] = _over(prices.get((region, kind, name)), row, region)
    for key, row in sheet.items():
        if key[0] != "*":
            prices[key] = _over(prices.get(key), row, key[0])
    return prices


def _over(shipped: Price | None, row: Price, region: str) -> Price:
    """A sheet row over the shipped price: its Spot or flex-start cell left empty keeps the
    shipped one (never above the sheet's on-demand rate)."""
    merged = dataclasses.replace(row, region=region)
    if shipped is None:
        return merged
    cap = row.on_demand_usd
    if row.spot_usd is None and shipped.spot_usd is not None:
        merged = dataclasses.replace(
            merged,
            spot_usd=min(shipped.spot_usd, cap or shipped.spot_usd),
            spot_basis=shipped.basis_for(True),
            discount_percent=shipped.discount_percent,
        )
    if row.flex_start_usd is None and shipped.flex_start_usd is not None:
        merged = dataclasses.replace(
            merged,
            flex_start_usd=min(shipped.flex_start_usd, cap or shipped.flex_start_usd),
            flex_start_basis=shipped.flex_start_basis,
            discount_percent=shipped.discount_percent,
        )
    return merged
