"""The caller's own billing-account prices (Cloud Billing API v1beta), cached per day.

List prices come from the Cloud Billing Catalog API (``components.vertex.billing``). A billing
account with a contract pays other prices, which the Cloud Billing *pricing* API gives to a
caller who may read them (``billing.accounts.getPricing``):

1. the project's billing account: ``GET /v1/projects/{project}/billingInfo``, read with
   ``billing_v1.CloudBillingClient.get_project_billing_info`` (``ProjectBillingInfo``,
   whose ``billingAccountName`` is ``billingAccounts/{id}``);
2. its prices: ``GET /v1beta/billingAccounts/{id}/skus/-/prices`` (``currencyCode``,
   ``pageSize`` up to 5,000, ``pageToken``), answered as ``{"billingAccountPrices": [...],
   "nextPageToken"}``; each ``BillingAccountPrice`` is named
   ``billingAccounts/{id}/skus/{sku}/price`` and has ``rate.tiers[]`` of ``startAmount``,
   ``listPrice``, ``contractPrice`` (``google.type.Money``) and ``effectiveDiscountPercent``,
   with ``rate.unitInfo.unitQuantity`` (the quantity a price is for). Shapes:
   https://cloud.google.com/billing/docs/reference/pricing-api/rest/v1beta/billingAccounts.skus.price
   and ``.../v2beta/billingAccounts.skus.prices/list`` (the same list form), read 2026-11-27.

The installed ``google-cloud-billing`` has ``billing_v1`` only (no v1beta client), so step 2 is
a REST call through google-auth's ``AuthorizedSession`` (plain ``requests`` for an ``http://``
endpoint: the local emulator, which serves both) with ``google.api_core``'s retry of transient
errors. The first tier's contract price of each SKU, per unit, replaces the list price
(``apply_account_prices``). Any failure (no credentials, no billing account, no permission) is
a ``BillingUnavailable`` saying why; the caller keeps the list prices and says so once.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..costs._billing import Sku
from ..lifecycle._settings import Endpoint, public_url
from .billing import (
    BILLING_API,
    CALL_TIMEOUT,
    MAX_PAGES,
    BillingUnavailable,
    billing_client_options,
    cache_dir,
)

__all__ = ["AccountPrices", "apply_account_prices", "read_account_prices"]

PAGE_SIZE = 5000
_CACHE_VERSION = 1
_memory: dict[tuple[str, str], AccountPrices] = {}
_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class AccountPrices:
    """A billing account's contract price per usage unit (USD, first tier), by SKU id."""

    account: str  # billingAccounts/{id}
    usd: dict[str, float]
    as_of: str


def _billing_info_client(endpoint: Endpoint) -> Any:
    from google.cloud import billing_v1

    return billing_v1.CloudBillingClient(**billing_client_options(endpoint))


def _session(endpoint: Endpoint) -> Any:
    """An HTTP session that authenticates as the caller (none for the local emulator)."""
    if endpoint.anonymous:
        import requests

        return requests.Session()
    import google.auth
    from google.auth.transport.requests import AuthorizedSession

    credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    return AuthorizedSession(credentials)  # type: ignore[no-untyped-call]


def _get(session: Any, url: str, params: dict[str, Any]) -> dict[str, Any]:
    """One GET, retried on transient errors (5xx, 429, connection); an HTTP error raises the
    ``google.api_core`` exception of its status."""
    from google.api_core import exceptions as gexc
    from google.api_core import retry

    def once() -> dict[str, Any]:
        answer = session.get(url, params=params, timeout=CALL_TIMEOUT)
        if answer.status_code >= 400:
            raise gexc.from_http_response(answer)  # type: ignore[no-untyped-call]
        found: dict[str, Any] = answer.json()
        return found

    policy = retry.Retry(predicate=retry.if_transient_error, timeout=CALL_TIMEOUT * 2)
    result: dict[str, Any] = policy(once)()
    return result


def _unit_usd(price: dict[str, Any]) -> float | None:
    """The first tier's contract price per unit, USD; None when it is not one."""
    if price.get("currencyCode", "USD") != "USD":
        return None
    rate = price.get("rate") or {}
    tiers = rate.get("tiers") or []
    if not tiers:
        return None
    money = tiers[0].get("contractPrice") or tiers[0].get("listPrice") or {}
    usd = int(money.get("units") or 0) + int(money.get("nanos") or 0) / 1e9
    quantity = float(((rate.get("unitInfo") or {}).get("unitQuantity") or {}).get("value") or 1)
    return usd / quantity if quantity > 0 else None


def _read(endpoint: Endpoint, project: str, day: datetime.date) -> AccountPrices:
    info = _billing_info_client(endpoint).get_project_billing_info(
        name=f"projects/{project}", timeout=CALL_TIMEOUT
    )
    account = info.billing_account_name
    if not account or not info.billing_enabled:
        raise BillingUnavailable(f"project {project} has no billing account enabled")
    base = endpoint.url.rstrip("/") if endpoint.url else f"https://{BILLING_API}"
    session = _session(endpoint)
    usd: dict[str, float] = {}
    token = ""
    for _ in range(MAX_PAGES):
        params = {"currencyCode": "USD", "pageSize": PAGE_SIZE, "pageToken": token}
        page = _get(session, f"{base}/v1beta/{account}/skus/-/prices", params)
        for price in page.get("billingAccountPrices") or []:
            parts = str(price.get("name", "")).split("/")
            value = _unit_usd(price)
            if len(parts) >= 4 and value is not None and value > 0:
                usd[parts[3]] = value
        token = page.get("nextPageToken") or ""
        if not token:
            break
    return AccountPrices(account, usd, day.isoformat())


def _cache_file(directory: Path, endpoint: Endpoint, project: str, day: datetime.date) -> Path:
    where = public_url(endpoint.url) if endpoint.url else BILLING_API
    key = hashlib.sha256(f"{where} {project}".encode()).hexdigest()[:16]
    return directory / f"account-{key}-{day.isoformat()}.json"


def _load(path: Path) -> AccountPrices | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != _CACHE_VERSION:
            return None
        return AccountPrices(data["account"], dict(data["usd"]), data["as_of"])
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _store(path: Path, prices: AccountPrices) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {"version": _CACHE_VERSION, **dataclasses.asdict(prices)}
        temporary = path.with_name(f".{path.name}.{threading.get_ident()}")
        temporary.write_text(json.dumps(payload), encoding="utf-8")
        temporary.replace(path)
        for old in path.parent.glob("account-*.json"):  # earlier days' are never read again
            if not old.name.endswith(f"-{prices.as_of}.json"):
                old.unlink(missing_ok=True)
    except OSError:
        pass


def read_account_prices(
    endpoint: Endpoint,
    project: str,
    *,
    today: datetime.date | None = None,
    directory: Path | None = None,
) -> AccountPrices:
    """``project``'s billing account prices, read once per UTC day, endpoint and project.

    Raises ``BillingUnavailable`` (never anything else) when they cannot be read.
    """
    from .billing import _reason

    day = today or datetime.datetime.now(datetime.UTC).date()
    path = _cache_file(directory or cache_dir(), endpoint, project, day)
    key = (str(path), day.isoformat())
    with _lock:
        if key in _memory:
            return _memory[key]
        found = _load(path)
        if found is None:
            try:
                found = _read(endpoint, project, day)
            except BillingUnavailable:
                raise
            except Exception as exc:
                raise BillingUnavailable(_reason(exc, endpoint, "the Cloud Billing API")) from None
            _store(path, found)
        _memory[key] = found
        return found


def apply_account_prices(skus: Iterable[Sku], account: AccountPrices) -> list[Sku]:
    """``skus`` with each price the account has replaced by it (and the source saying so)."""
    out = []
    for sku in skus:
        usd = account.usd.get(sku.sku_id)
        if usd is None:
            out.append(sku)
            continue
        source = f"{sku.source}; {account.account}'s own price (read {account.as_of})"
        out.append(dataclasses.replace(sku, usd=usd, source=source))
    return out
