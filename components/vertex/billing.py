"""Vertex AI's SKUs read with Google's Cloud Billing Catalog client (``billing_v1``), cached per day.

``read_skus(endpoint)`` lists the services (``CloudCatalogClient.list_services``), then the SKUs
(``list_skus``, every page) of Vertex AI and Compute Engine, and keeps those that price training
capacity (``components.costs._billing``: Vertex's training and management-fee SKUs, Compute Engine's
GPU, core and RAM SKUs). The client is made as the quota client is
(``components.vertex.quotas``): REST transport; an explicit endpoint (the local emulator, which
serves the same API from its snapshot) is the API's address, and an ``http://`` one gets
anonymous credentials. The library is imported on the first call only.

The list prices are the public ones (the Catalog API's). An account's own contract prices come
from the Cloud Billing pricing API (``billingAccounts.skus.prices``, v1beta), read by
``components.vertex.account_prices`` where the caller may read them; an organisation's rates
can also be given as a price sheet (``training:prices``).

The SKUs are cached per endpoint and per UTC day, on disk (``$XDG_CACHE_HOME/gpu-training/
billing``, else ``~/.cache/...``) and in the process: the first caller of a day reads them, every
later one that day reads the file. Any failure (no Application Default Credentials, no
permission, the network) is a ``BillingUnavailable`` whose message says why: the callers then
price from the catalog's dated snapshot and say so.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from .._errors import TrainingJobError
from ..costs._billing import COMPUTE_SERVICE, VERTEX_SERVICE, Sku, sku_capacity, sku_resource
from ..lifecycle._settings import Endpoint, public_url

__all__ = [
    "BILLING_API",
    "BillingUnavailable",
    "billing_client",
    "billing_client_options",
    "cache_dir",
    "read_skus",
]

BILLING_API = "cloudbilling.googleapis.com"
CALL_TIMEOUT = 30.0
"""Seconds one list call may take."""
MAX_PAGES = 100
"""Pages read at most per service (5,000 SKUs each): a misbehaving server cannot hold a caller."""
PAGE_SIZE = 5000
_SERVICES = (VERTEX_SERVICE, COMPUTE_SERVICE)
_CACHE_VERSION = 1

_memory: dict[tuple[str, str], list[Sku]] = {}
_lock = threading.Lock()


class BillingUnavailable(TrainingJobError, RuntimeError):
    """The billing SKUs could not be read; the message says why."""


def billing_client_options(endpoint: Endpoint) -> dict[str, Any]:
    """The keyword arguments of a REST Cloud Billing client (``billing_v1``'s catalog or billing
    client) for Google's API, or for ``endpoint`` if it has a URL (anonymous over ``http://``)."""
    kwargs: dict[str, Any] = {
        "transport": "rest",
        "client_options": {
            "api_endpoint": endpoint.url.rstrip("/") if endpoint.url else BILLING_API
        },
    }
    if endpoint.anonymous:
        from google.auth.credentials import AnonymousCredentials

        kwargs["credentials"] = AnonymousCredentials()  # type: ignore[no-untyped-call]
    return kwargs


def billing_client(endpoint: Endpoint) -> Any:
    """A REST ``CloudCatalogClient`` for Google's API, or for ``endpoint`` if it has a URL."""
    from google.cloud import billing_v1

    return billing_v1.CloudCatalogClient(**billing_client_options(endpoint))


def cache_dir() -> Path:
    """Where the day's SKUs are kept: ``$XDG_CACHE_HOME/gpu-training/billing`` (or ``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpu-training" / "billing"


def _cache_file(directory: Path, endpoint: Endpoint, day: datetime.date) -> Path:
    where = public_url(endpoint.url) if endpoint.url else BILLING_API
    key = hashlib.sha256(where.encode()).hexdigest()[:16]
    return directory / f"skus-{key}-{day.isoformat()}.json"


def _reason(
    exc: BaseException, endpoint: Endpoint, api: str = "the Cloud Billing Catalog API"
) -> str:
    from google.api_core import exceptions as gexc
    from google.auth import exceptions as auth_exc

    text = endpoint.scrub(str(exc).strip().splitlines()[0] if str(exc).strip() else "")[:300]
    if isinstance(exc, auth_exc.DefaultCredentialsError):
        return "no Google credentials (gcloud auth application-default login)"
    if isinstance(exc, gexc.PermissionDenied | gexc.Forbidden | gexc.Unauthorized):
        return f"no access to {api} ({text})"
    import requests

    if isinstance(exc, requests.exceptions.ConnectionError | requests.exceptions.Timeout):
        where = public_url(endpoint.url) if endpoint.url else BILLING_API
        return f"could not reach {where} ({type(exc).__name__})"
    return f"{type(exc).__name__}: {text}"


def _sku(service: str, raw: Any, as_of: str) -> Sku | None:
    """The ``Sku`` of a ``billing_v1.Sku`` message, or None when it prices nothing we use."""
    infos = list(raw.pricing_info)
    if not infos or not infos[0].pricing_expression.tiered_rates:
        return None
    expression = infos[0].pricing_expression
    rate = expression.tiered_rates[0].unit_price
    if rate.currency_code and rate.currency_code != "USD":
        return None
    conversion = float(expression.display_quantity or 1)
    usd = (int(rate.units) + rate.nanos / 1e9) / conversion
    sku = Sku(
        service=service,
        sku_id=raw.sku_id,
        description=raw.description,
        usage_type=raw.category.usage_type,
        regions=tuple(raw.service_regions),
        unit=expression.usage_unit,
        usd=usd,
        as_of=as_of,
        source=f"Cloud Billing Catalog API, SKU {raw.sku_id} (read {as_of})",
        resource_group=raw.category.resource_group,
    )
    if usd <= 0 or sku_capacity(sku) is None or sku_resource(sku) is None:
        return None
    return sku


def _list(endpoint: Endpoint, day: datetime.date) -> list[Sku]:
    client = billing_client(endpoint)
    wanted: dict[str, str] = {}
    for number, page in enumerate(client.list_services(timeout=CALL_TIMEOUT).pages):
        if number >= MAX_PAGES:
            break
        for service in page.services:
            if service.display_name in _SERVICES:
                wanted[service.name] = service.display_name
    if VERTEX_SERVICE not in wanted.values():  # Compute Engine's only add Spot and DWS rates
        raise BillingUnavailable(f"the Catalog API lists no {VERTEX_SERVICE!r} service")
    skus: list[Sku] = []
    for parent, display in sorted(wanted.items()):
        pager = client.list_skus(
            request={"parent": parent, "page_size": PAGE_SIZE, "currency_code": "USD"},
            timeout=CALL_TIMEOUT,
        )
        for number, page in enumerate(pager.pages):
            if number >= MAX_PAGES:
                break
            skus.extend(s for raw in page.skus if (s := _sku(display, raw, day.isoformat())))
    return skus


def _load(path: Path) -> list[Sku] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != _CACHE_VERSION:
            return None
        return [Sku(**{**row, "regions": tuple(row["regions"])}) for row in data["skus"]]
    except (OSError, ValueError, TypeError, KeyError):
        return None  # no cache, or a broken one: read again


def _store(path: Path, skus: list[Sku]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        payload = {"version": _CACHE_VERSION, "skus": [dataclasses.asdict(s) for s in skus]}
        temporary.write_text(json.dumps(payload), encoding="utf-8")
        temporary.replace(path)
        day = path.name.rsplit("-", 3)[-3:]
        for old in path.parent.glob("skus-*.json"):  # earlier days' SKUs are never read again
            if old.name.rsplit("-", 3)[-3:] != day:
                old.unlink(missing_ok=True)
    except OSError:
        pass  # a cache that cannot be written only costs the next caller a read


def read_skus(
    endpoint: Endpoint, *, today: datetime.date | None = None, directory: Path | None = None
) -> list[Sku]:
    """The training SKUs of Vertex AI and Compute Engine, read once per UTC day and endpoint.

    Raises ``BillingUnavailable`` (never anything else) when they cannot be read.
    """
    day = today or datetime.datetime.now(datetime.UTC).date()
    path = _cache_file(directory or cache_dir(), endpoint, day)
    key = (str(path), day.isoformat())
    with _lock:
        if key in _memory:
            return _memory[key]
        cached = _load(path)
        if cached is None:
            try:
                cached = _list(endpoint, day)
            except BillingUnavailable as exc:
                raise BillingUnavailable(f"the billing SKUs could not be read: {exc}") from None
            except Exception as exc:
                raise BillingUnavailable(
                    f"the billing SKUs could not be read: {_reason(exc, endpoint)}"
                ) from None
            _store(path, cached)
        _memory[key] = cached
        return cached
