"""The emulator's Cloud Billing APIs (REST), served from a SKU snapshot file.

What the real clients call: the Catalog API (``google.cloud.billing_v1.CloudCatalogClient``,
REST transport) and the project's billing info (``CloudBillingClient``),

* ``GET /v1/services`` (``pageSize``, ``pageToken``)
* ``GET /v1/services/{serviceId}/skus`` (``pageSize``, ``pageToken``; ``currencyCode`` USD)
* ``GET /v1/projects/{projectId}/billingInfo``: ``ProjectBillingInfo``, every project on the
  emulator's one billing account (``ACCOUNT``);

and the billing account's own prices (Cloud Billing API v1beta, which the Python client
library does not have; ``components.vertex.billing`` calls it over REST):

* ``GET /v1beta/billingAccounts/{account}/skus/{sku}/price``: one ``BillingAccountPrice``
* ``GET /v1beta/billingAccounts/{account}/skus/{sku or -}/prices`` (``pageSize``,
  ``pageToken``, ``currencyCode`` USD): ``{"billingAccountPrices": [...], "nextPageToken"}``

(shapes: https://cloud.google.com/billing/docs/reference/pricing-api/rest/v1beta/billingAccounts.skus.price
and ``.../billingAccounts.skus.prices/list``, read 2026-11-27). The account's price is the
snapshot's list price less the discount of ``serve --billing-account-prices FILE`` (a JSON
``{"discountPercent": N}``, read again when it changes); without that file the caller may not
read the account's prices: 403 PERMISSION_DENIED, as for a caller without
``billing.accounts.getPricing``.

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

import json
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import errors, hardware, paths
from .quotas import _page

__all__ = ["ACCOUNT", "SNAPSHOT_FILE", "Billing"]

SNAPSHOT_FILE = "billing_skus.csv"
_SERVICES = re.compile(r"^/v1/services$")
_SKUS = re.compile(r"^/v1/services/(?P<id>[^/:]+)/skus$")
_BILLING_INFO = re.compile(r"^/v1/projects/(?P<p>[^/:]+)/billingInfo$")
_ACCOUNT_PRICE = re.compile(
    r"^/v1beta/billingAccounts/(?P<a>[^/:]+)/skus/(?P<sku>[^/:]+)/(?P<verb>price|prices)$"
)
ACCOUNT = "012345-6789AB-CDEF01"
MAX_ACCOUNT_PRICES_BYTES = 64 * 1024
"""The account prices file holds one small JSON object; a larger one is refused unread."""
"""The one billing account every project of the emulator is on."""
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

    def __init__(self, snapshot: Path | None = None, account_prices: Path | None = None) -> None:
        """``snapshot``: the CSV to serve (default: the catalog's ``billing_skus.csv``);
        ``account_prices``: the JSON file of the account's discount (None: not readable)."""
        self._path = snapshot
        self._account_prices = account_prices
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
        """The answer to a Cloud Billing API request, or None when ``path`` is not one."""
        if method != "GET":
            return None
        if (m := _BILLING_INFO.match(path)) is not None:
            return {
                "name": f"projects/{m['p']}/billingInfo",
                "projectId": m["p"],
                "billingAccountName": f"billingAccounts/{ACCOUNT}",
                "billingEnabled": True,
            }
        if (m := _ACCOUNT_PRICE.match(path)) is not None:
            return self._account_price(m["a"], m["sku"], m["verb"] == "prices", query)
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

    def _discount(self, account: str) -> float:
        """The account's discount in percent; 403 when the caller may not read its prices."""
        denied = errors.permission_denied(
            f"The caller does not have permission billing.accounts.getPricing on "
            f"billingAccounts/{account[:40]}"
        )
        if account != ACCOUNT or self._account_prices is None:
            raise denied
        file = self._account_prices
        if not os.path.lexists(file):
            raise denied
        try:
            # A regular file to a cap, opened without blocking: a FIFO would hang every price
            # request, /dev/zero would fill the memory (paths.read_regular).
            raw = paths.read_regular(
                file.resolve(), MAX_ACCOUNT_PRICES_BYTES, what="the account prices file"
            )
            data = json.loads(raw.decode("utf-8-sig"))
        except paths.PackageError as exc:
            raise errors.internal(f"the emulator's account prices: {exc}") from None
        except (OSError, RuntimeError, ValueError):
            raise errors.internal(
                "the emulator's account prices file: not a JSON object such as "
                '{"discountPercent": 10}'
            ) from None
        percent = data.get("discountPercent", 0) if isinstance(data, dict) else None
        if not isinstance(percent, int | float) or not 0 <= percent < 100:
            raise errors.internal("the emulator's account prices file: discountPercent 0-99")
        return float(percent)

    def _account_price(
        self, account: str, sku_id: str, listing: bool, query: Mapping[str, str]
    ) -> dict[str, Any]:
        """A ``BillingAccountPrice`` (``listing``: the list of them) of the snapshot's SKUs."""
        discount = self._discount(account)
        currency = query.get("currencyCode", "") or "USD"
        if currency != "USD":
            raise errors.invalid_argument("currencyCode: the emulator serves USD prices only")
        self._load()
        everything = [sku for skus in self._skus.values() for sku in skus]
        chosen = [s for s in everything if (sku_id == "-" and listing) or s["skuId"] == sku_id]
        if not chosen:
            raise errors.not_found(f"SKU {sku_id[:40]!r} not found.")
        prices = [_account_price(account, sku, discount) for sku in chosen]
        if not listing:
            return prices[0]
        start, end = _page(query, len(prices))
        return {
            "billingAccountPrices": prices[start:end],
            "nextPageToken": str(end) if end < len(prices) else "",
        }


def _account_price(account: str, sku: Mapping[str, Any], discount: float) -> dict[str, Any]:
    """The v1beta ``BillingAccountPrice`` of a served SKU at ``discount`` percent off."""
    expression = sku["pricingInfo"][0]["pricingExpression"]
    money = expression["tieredRates"][0]["unitPrice"]
    usd = int(money["units"]) + money["nanos"] / 1e9
    name = f"billingAccounts/{account}/skus/{sku['skuId']}"
    percent = {"value": f"{discount:g}"}
    return {
        "name": f"{name}/price",
        "currencyCode": "USD",
        "valueType": "rate",
        "rate": {
            "tiers": [
                {
                    "startAmount": {"value": "0"},
                    "listPrice": _money(usd),
                    "contractPrice": _money(usd * (1 - discount / 100)),
                    "effectiveDiscountPercent": percent,
                }
            ],
            "unitInfo": {
                "unit": expression["usageUnit"],
                "unitDescription": expression["usageUnitDescription"],
                "unitQuantity": {"value": "1"},
            },
            "aggregationInfo": {"level": "LEVEL_ACCOUNT", "interval": "INTERVAL_MONTHLY"},
        },
        "priceReason": (
            {"type": "floating-discount", "floatingDiscount": {"discountPercent": percent}}
            if discount
            else {"type": "default-price", "defaultPrice": {}}
        ),
    }
