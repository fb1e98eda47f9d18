"""The emulator's Cloud Billing Catalog API (v1, REST), served from a SKU snapshot file.

What the real client (``google.cloud.billing_v1.CloudCatalogClient``, REST transport) calls:

* ``GET /v1/services`` (``pageSize``, ``pageToken``)
* ``GET /v1/services/{serviceId}/skus`` (``pageSize``, ``pageToken``; ``currencyCode`` USD)

The SKUs are rows of a CSV snapshot with the columns of the catalog's
``components/catalog/billing_skus.csv`` (service, SKU id, description, category, regions, unit
and price in USD, source): that file by default (``EMULATOR_CATALOG_DIR`` names another
directory), or the file ``serve --billing-snapshot`` names. The file is read again when it
changes, so the local stack prices from the same snapshot the catalog ships, and a test can
serve a snapshot that differs from it. Answers have the JSON shape of Google's API (``skuId``,
``category.usageType``, ``serviceRegions``, ``pricingInfo[].pricingExpression.tieredRates[]
.unitPrice`` as ``units`` and ``nanos``).

Nothing here imports the project's ``components`` package.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import errors, hardware
from .quotas import _page

__all__ = ["SNAPSHOT_FILE", "Billing"]

SNAPSHOT_FILE = "billing_skus.csv"
_SERVICES = re.compile(r"^/v1/services$")
_SKUS = re.compile(r"^/v1/services/(?P<id>[^/:]+)/skus$")
_UNIT_DESCRIPTIONS = {"h": "hour", "GiBy.h": "gibibyte hour", "GiBy.mo": "gibibyte month"}


def _money(usd: float) -> dict[str, Any]:
    units = int(usd)
    return {"currencyCode": "USD", "units": str(units), "nanos": round((usd - units) * 1e9)}


def _sku(row: Mapping[str, str]) -> dict[str, Any] | None:
    try:
        usd = float(row.get("usd_per_unit", ""))
    except ValueError:
        return None
    service, sku_id = row.get("service_id", ""), row.get("sku_id", "")
    if not service or not sku_id:
        return None
    unit = row.get("usage_unit") or "h"
    regions = row.get("service_regions", "").split()
    return {
        "name": f"services/{service}/skus/{sku_id}",
        "skuId": sku_id,
        "description": row.get("description", ""),
        "category": {
            "serviceDisplayName": row.get("service_name", ""),
            "resourceFamily": row.get("resource_family", ""),
            "resourceGroup": row.get("resource_group", ""),
            "usageType": row.get("usage_type", ""),
        },
        "serviceRegions": regions,
        "pricingInfo": [
            {
                "effectiveTime": f"{row.get('as_of') or '1970-01-01'}T00:00:00Z",
                "summary": "",
                "pricingExpression": {
                    "usageUnit": unit,
                    "usageUnitDescription": _UNIT_DESCRIPTIONS.get(unit, unit),
                    "baseUnit": "s" if unit == "h" else unit,
                    "baseUnitDescription": "second" if unit == "h" else unit,
                    "baseUnitConversionFactor": 3600 if unit == "h" else 1,
                    "displayQuantity": 1,
                    "tieredRates": [{"startUsageAmount": 0, "unitPrice": _money(usd)}],
                },
                "currencyConversionRate": 1,
            }
        ],
        "serviceProviderName": "Google",
        "geoTaxonomy": {"type": "REGIONAL" if regions else "GLOBAL", "regions": regions},
    }


class Billing:
    """The snapshot's services and SKUs, read again whenever the file changes."""

    def __init__(self, snapshot: Path | None = None) -> None:
        """``snapshot``: the CSV to serve (default: the catalog's ``billing_skus.csv``)."""
        self._path = snapshot
        self._lock = threading.Lock()
        self._seen: tuple[str, float, int] | None = None
        self._services: list[dict[str, Any]] = []
        self._skus: dict[str, list[dict[str, Any]]] = {}

    @property
    def path(self) -> Path:
        return self._path or hardware.catalog_dir() / SNAPSHOT_FILE

    def _load(self) -> None:
        path = self.path
        try:
            info = path.stat()
            seen = (str(path), info.st_mtime, info.st_size)
        except OSError:
            seen = (str(path), 0.0, -1)
        with self._lock:
            if seen == self._seen:
                return
            rows = hardware.catalog_rows(path.parent, path.name) if seen[2] >= 0 else []
            services: dict[str, str] = {}
            skus: dict[str, list[dict[str, Any]]] = {}
            for row in rows:
                sku = _sku(row)
                if sku is None:
                    continue
                services.setdefault(row["service_id"], row.get("service_name", ""))
                skus.setdefault(row["service_id"], []).append(sku)
            self._services = [
                {
                    "name": f"services/{sid}",
                    "serviceId": sid,
                    "displayName": name,
                    "businessEntityName": "businessEntities/GCP",
                }
                for sid, name in sorted(services.items())
            ]
            self._skus = skus
            self._seen = seen

    def route(self, method: str, path: str, query: Mapping[str, str]) -> dict[str, Any] | None:
        """The answer to a Catalog API request, or None when ``path`` is not one."""
        if method != "GET":
            return None
        if _SERVICES.match(path):
            self._load()
            return self._paged("services", self._services, query)
        if (m := _SKUS.match(path)) is not None:
            self._load()
            currency = query.get("currencyCode", "") or "USD"
            if currency != "USD":
                raise errors.invalid_argument(
                    f"currencyCode: the emulator serves USD prices only, got {currency[:10]!r}"
                )
            if m["id"] not in self._skus:
                raise errors.not_found(f"Service services/{m['id'][:80]!r} not found.")
            return self._paged("skus", self._skus[m["id"]], query)
        return None

    @staticmethod
    def _paged(key: str, items: list[dict[str, Any]], query: Mapping[str, str]) -> dict[str, Any]:
        start, end = _page(query, len(items))
        return {key: items[start:end], "nextPageToken": str(end) if end < len(items) else ""}
