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

Every live read is bounded (``LiveReadLimits``): a total deadline (``training:retryDeadline``) over
all its calls, retries and pages, however slowly a server answers (a request's own timeout
bounds each socket read, not the call), and ``MAX_ANSWER_BYTES`` per answer, read in chunks and
refused past the cap before it is all in memory. Past either, the read is a
``BillingUnavailable`` saying which, and the callers price from the snapshot.

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
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .._errors import TrainingJobError
from ..costs._billing import COMPUTE_SERVICE, VERTEX_SERVICE, Sku, sku_capacity, sku_resource
from ..lifecycle._settings import DEFAULT_RETRY_DEADLINE, RETRY_DEADLINE_KEY, Endpoint, public_url

__all__ = [
    "BILLING_API",
    "MAX_ANSWER_BYTES",
    "BillingUnavailable",
    "LiveReadLimits",
    "billing_client",
    "billing_client_options",
    "bounded_client",
    "cache_dir",
    "read_skus",
]

BILLING_API = "cloudbilling.googleapis.com"
CALL_TIMEOUT = 30.0
"""Seconds one list call may take."""
MAX_PAGES = 100
"""Pages read at most per service (5,000 SKUs each): a misbehaving server cannot hold a caller."""
PAGE_SIZE = 5000
MAX_ANSWER_BYTES = 32 * 1024 * 1024
"""The most one billing answer may hold, decompressed: a full page of 5,000 Compute Engine SKUs
is a few MB of JSON; a larger answer is refused as it streams in (a 600 MB one took the process
to 1.3 GB of memory when it was read whole)."""
_SERVICES = (VERTEX_SERVICE, COMPUTE_SERVICE)
_CACHE_VERSION = 1

_memory: dict[tuple[str, str], list[Sku]] = {}
_lock = threading.Lock()
_T = TypeVar("_T")


class BillingUnavailable(TrainingJobError, RuntimeError):
    """The billing SKUs could not be read; the message says why."""


class LiveReadLimits:
    """One live read's bounds: ``seconds`` in all (every call, retry and page together) and
    ``max_bytes`` per answer.

    ``bound(session)`` makes a ``requests`` session read each answer's body in chunks through
    ``_read_body`` (a response hook runs before ``requests`` reads the body), refusing it past
    the cap or the deadline; ``run(work)`` runs the read in a daemon thread and stops waiting
    at the deadline, so even an answer whose headers trickle in a byte a second cannot hold the
    caller (the thread, abandoned, ends with its connection).
    """

    def __init__(self, seconds: float, max_bytes: int | None = None) -> None:
        self.seconds = seconds
        self.max_bytes = MAX_ANSWER_BYTES if max_bytes is None else max_bytes
        self.deadline = time.monotonic() + seconds

    def _late(self) -> BillingUnavailable:
        return BillingUnavailable(
            f"no complete answer within {self.seconds:g} s ({RETRY_DEADLINE_KEY})"
        )

    def timeout(self) -> float:
        """Seconds one call may take now: ``CALL_TIMEOUT``, or what is left of the deadline."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self._late()
        return min(CALL_TIMEOUT, left)

    def bound(self, session: Any) -> None:
        """Read ``session``'s answers within the limits (a session without hooks: no change)."""
        hooks = getattr(session, "hooks", None)
        if isinstance(hooks, dict):
            hooks.setdefault("response", []).append(self._read_body)

    def _read_body(self, response: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("stream"):
            return response
        chunks: list[bytes] = []
        size = 0
        for chunk in response.raw.stream(1 << 16, decode_content=True):
            size += len(chunk)
            if size > self.max_bytes:
                response.close()
                raise BillingUnavailable(
                    f"an answer larger than {self.max_bytes:,} bytes was refused"
                )
            if time.monotonic() > self.deadline:
                response.close()
                raise self._late()
            chunks.append(chunk)
        # What requests' own body read sets: the answer's ``.content`` and ``.json()`` read it.
        response._content = b"".join(chunks)
        response._content_consumed = True
        return response

    def run(self, work: Callable[[], _T]) -> _T:
        """``work()``'s result, or its exception; ``BillingUnavailable`` at the deadline."""
        outcome: list[tuple[bool, Any]] = []
        done = threading.Event()

        def target() -> None:
            try:
                outcome.append((True, work()))
            except BaseException as exc:  # handed to the caller, which raises it
                outcome.append((False, exc))
            finally:
                done.set()

        threading.Thread(target=target, name="live-billing-read", daemon=True).start()
        if not done.wait(max(0.0, self.deadline - time.monotonic())):
            raise self._late()
        ok, value = outcome[0]
        if not ok:
            raise value
        result: _T = value
        return result


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


def bounded_client(client: Any, limits: LiveReadLimits) -> Any:
    """``client`` (a REST ``billing_v1`` client) with its session's answers read within
    ``limits``."""
    limits.bound(getattr(getattr(client, "_transport", None), "_session", None))
    return client


def _list(endpoint: Endpoint, day: datetime.date, limits: LiveReadLimits) -> list[Sku]:
    client = bounded_client(billing_client(endpoint), limits)
    wanted: dict[str, str] = {}
    for number, page in enumerate(client.list_services(timeout=limits.timeout()).pages):
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
            timeout=limits.timeout(),
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
    endpoint: Endpoint,
    *,
    today: datetime.date | None = None,
    directory: Path | None = None,
    deadline: float = DEFAULT_RETRY_DEADLINE,
) -> list[Sku]:
    """The training SKUs of Vertex AI and Compute Engine, read once per UTC day and endpoint,
    within ``deadline`` seconds in all (``training:retryDeadline``) and ``MAX_ANSWER_BYTES``
    per answer.

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
                limits = LiveReadLimits(deadline)
                cached = limits.run(lambda: _list(endpoint, day, limits))
            except BillingUnavailable as exc:
                raise BillingUnavailable(f"the billing SKUs could not be read: {exc}") from None
            except Exception as exc:
                raise BillingUnavailable(
                    f"the billing SKUs could not be read: {_reason(exc, endpoint)}"
                ) from None
            _store(path, cached)
        _memory[key] = cached
        return cached
