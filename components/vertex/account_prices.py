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
import math
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..costs._billing import Sku
from ..lifecycle._settings import DEFAULT_RETRY_DEADLINE, Endpoint, public_url
from .billing import (
    BILLING_API,
    MAX_PAGES,
    BillingUnavailable,
    LiveReadLimits,
    billing_client_options,
    bounded_client,
    cache_dir,
)

__all__ = [
    "PLAUSIBLE_SHARE_OF_LIST",
    "AccountPrices",
    "apply_account_prices",
    "implausible_account_prices",
    "read_account_prices",
]

PLAUSIBLE_SHARE_OF_LIST = (0.05, 1.5)
"""An account's own price of a SKU is taken from 5 % to 150 % of its list price: a contract
discounts the list price (seldom by more than half); a price of $0, one far above the list price
($400 an hour for a T4 listed at $0.35) or a 300-digit one is a broken answer, and the list
price is kept (with a note naming the SKU and the range)."""

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


def _get(session: Any, url: str, params: dict[str, Any], limits: LiveReadLimits) -> dict[str, Any]:
    """One GET, retried on transient errors (5xx, 429, connection) within ``limits``' deadline;
    an HTTP error raises the ``google.api_core`` exception of its status."""
    from google.api_core import exceptions as gexc
    from google.api_core import retry

    def once() -> dict[str, Any]:
        answer = session.get(url, params=params, timeout=limits.timeout())
        if answer.status_code >= 400:
            raise gexc.from_http_response(answer)  # type: ignore[no-untyped-call]
        found = answer.json()
        if not isinstance(found, dict):
            raise BillingUnavailable("an answer of the Cloud Billing API is not a JSON object")
        return found

    policy = retry.Retry(predicate=retry.if_transient_error, timeout=limits.timeout())
    result: dict[str, Any] = policy(once)()
    return result


def _unit_usd(price: dict[str, Any]) -> float | None:
    """The first tier's contract price per unit, USD; None when it is not one (another
    currency, no tier, or a figure that is no number: ``"1e400"``, 5,000 digits, ``nan``)."""
    try:
        if price.get("currencyCode", "USD") != "USD":
            return None
        rate = price.get("rate") or {}
        tiers = rate.get("tiers") or []
        money = tiers[0].get("contractPrice") or tiers[0].get("listPrice") or {}
        usd = int(money.get("units") or 0) + int(money.get("nanos") or 0) / 1e9
        unit = (rate.get("unitInfo") or {}).get("unitQuantity") or {}
        quantity = float(unit.get("value") or 1)
        value = usd / quantity
    except (AttributeError, IndexError, TypeError, ValueError, OverflowError, ZeroDivisionError):
        return None
    return value if math.isfinite(value) and quantity > 0 else None


def _read(
    endpoint: Endpoint, project: str, day: datetime.date, limits: LiveReadLimits
) -> AccountPrices:
    info = bounded_client(_billing_info_client(endpoint), limits).get_project_billing_info(
        name=f"projects/{project}", timeout=limits.timeout()
    )
    account = info.billing_account_name
    if not account or not info.billing_enabled:
        raise BillingUnavailable(f"project {project} has no billing account enabled")
    base = endpoint.url.rstrip("/") if endpoint.url else f"https://{BILLING_API}"
    session = _session(endpoint)
    limits.bound(session)
    usd: dict[str, float] = {}
    token = ""
    for _ in range(MAX_PAGES):
        params = {"currencyCode": "USD", "pageSize": PAGE_SIZE, "pageToken": token}
        page = _get(session, f"{base}/v1beta/{account}/skus/-/prices", params, limits)
        for price in page.get("billingAccountPrices") or []:
            parts = str(price.get("name", "")).split("/")
            value = _unit_usd(price)
            if len(parts) >= 4 and value is not None:  # judged against the list price later
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
    deadline: float = DEFAULT_RETRY_DEADLINE,
) -> AccountPrices:
    """``project``'s billing account prices, read once per UTC day, endpoint and project,
    within ``deadline`` seconds in all and ``MAX_ANSWER_BYTES`` per answer.

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
                limits = LiveReadLimits(deadline)
                found = limits.run(lambda: _read(endpoint, project, day, limits))
            except BillingUnavailable:
                raise
            except Exception as exc:
                raise BillingUnavailable(_reason(exc, endpoint, "the Cloud Billing API")) from None
            _store(path, found)
        _memory[key] = found
        return found


def _plausible(usd: float, sku: Sku) -> bool:
    low, high = PLAUSIBLE_SHARE_OF_LIST
    return low * sku.usd <= usd <= high * sku.usd


def implausible_account_prices(skus: Iterable[Sku], account: AccountPrices) -> list[str]:
    """Why each of the account's prices that ``apply_account_prices`` refuses is refused: the
    SKU, the price and the range (``PLAUSIBLE_SHARE_OF_LIST`` of its list price)."""
    low, high = PLAUSIBLE_SHARE_OF_LIST
    return [
        f"SKU {sku.sku_id} ({sku.description[:60]}): the account's price {usd:.6g} USD per "
        f"{sku.unit} is outside {low:g}x-{high:g}x of the list price {sku.usd:.6g} "
        f"({low * sku.usd:.6g} to {high * sku.usd:.6g}); the list price is used"
        for sku in skus
        if (usd := account.usd.get(sku.sku_id)) is not None and not _plausible(usd, sku)
    ]


def apply_account_prices(skus: Iterable[Sku], account: AccountPrices) -> list[Sku]:
    """``skus`` with each price the account has replaced by it (and the source saying so);
    a price outside ``PLAUSIBLE_SHARE_OF_LIST`` of the list price is not taken
    (``implausible_account_prices`` says which)."""
    out = []
    for sku in skus:
        usd = account.usd.get(sku.sku_id)
        if usd is None or not _plausible(usd, sku):
            out.append(sku)
            continue
        source = f"{sku.source}; {account.account}'s own price (read {account.as_of})"
        out.append(dataclasses.replace(sku, usd=usd, source=source))
    return out
