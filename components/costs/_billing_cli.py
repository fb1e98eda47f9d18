"""Live billing prices for the CLI and the program, and ``python -m components catalog check``.

``live_catalog`` puts the prices that Vertex AI's and Compute Engine's billing SKUs make
(``components.costs._billing``, read by ``components.vertex.billing``, cached per day) over the
catalog's dated snapshot; when the SKUs cannot be read (no credentials, no access, no network)
it keeps the snapshot and says why, so pricing never fails for want of the live API.

``catalog check`` compares the catalog's prices with the live SKUs the caller can read and
prints each difference: a price the SKUs make otherwise, and a Spot price that Compute
Engine's Spot SKU makes otherwise by the catalog's rule (the Spot SKU + the management fee),
which shows a stale Spot input. It also names each suspect on-demand GPU price, one under
``OUTLIER_RATIO`` x the median of the same GPU's prices in its other regions (the mark of a
flex-start rate mixed in as on-demand). Exit status: 0 none, 1 some, 2 the SKUs could not be
read.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from ..lifecycle._settings import Endpoint, parse_endpoint
from ..rules._catalog import Catalog, Price, load_catalog
from ._billing import (
    apply_billing,
    billing_prices,
    differences,
    spot_rule_prices,
    suspect_prices,
)

__all__ = [
    "cmd_catalog_check",
    "has_google_credentials",
    "live_catalog",
    "priced_from",
    "snapshot_date",
    "with_spot_rule",
]


def has_google_credentials() -> bool:
    """Whether Application Default Credentials are set up here (``GOOGLE_APPLICATION_CREDENTIALS``
    or gcloud's ADC file), told without a network call (no metadata-server probe)."""
    if os.environ.get("GOOGLE_APPLICATION_CREDENTIALS"):
        return True
    config = os.environ.get("CLOUDSDK_CONFIG") or str(Path.home() / ".config" / "gcloud")
    return (Path(config) / "application_default_credentials.json").is_file()


def priced_from(
    catalog: Catalog,
    endpoint: Endpoint,
    live: bool | None,
    note: Callable[[str], None],
    project: str | None = None,
    *,
    say_snapshot: bool = True,
) -> Catalog:
    """The one rule by which the CLI (``estimate``, ``prices``) and both doors' previews choose
    their prices: the live SKUs (cached per day; with ``project``, its account's prices) when
    ``live`` is True, or None and Google credentials are present or ``endpoint`` is explicit
    (the local emulator); the snapshot when ``live`` is False (``--no-live-prices``,
    ``training:livePrices: false``) or no credentials are present, with a note naming it and
    its date (``say_snapshot``: the CLI's tables name each price's basis instead, and its
    errors come first)."""
    if live is False:
        return catalog
    if live is None and not endpoint.url and not has_google_credentials():
        if say_snapshot:
            note(
                f"prices from the catalog's snapshot (as of {snapshot_date(catalog)}): no Google "
                "credentials (gcloud auth application-default login for Vertex's live SKUs)"
            )
        return catalog
    return live_catalog(catalog, endpoint, note, project)


def snapshot_date(catalog: Catalog) -> str:
    """The newest ``as_of`` of the catalog's prices: how old the shipped snapshot is."""
    return max((p.as_of for p in catalog.prices.values() if p.as_of[:4].isdigit()), default="")


def live_catalog(
    catalog: Catalog,
    endpoint: Endpoint,
    note: Callable[[str], None],
    project: str | None = None,
) -> Catalog:
    """``catalog`` with the live billing SKUs' prices over its own; itself (and a note saying
    why) when they cannot be read. With ``project``, the SKUs at its billing account's own
    prices where the caller may read them; else the list prices, and a note saying so once."""
    from ..vertex.billing import BillingUnavailable, read_skus

    try:
        skus = read_skus(endpoint)
    except BillingUnavailable as exc:
        note(f"{exc}; prices from the catalog's snapshot (as of {snapshot_date(catalog)})")
        return catalog
    which = "list prices"
    if project:
        from ..vertex.account_prices import apply_account_prices, read_account_prices

        try:
            account = read_account_prices(endpoint, project)
        except BillingUnavailable as exc:
            note(f"account prices of project {project} not read ({exc}): list prices used")
        else:
            skus = apply_account_prices(skus, account)
            which = f"{account.account}'s own prices where it has them"
    prices = billing_prices(skus, catalog)
    day = max((s.as_of for s in skus), default="")
    note(
        f"prices: {len(prices)} from the Cloud Billing Catalog API ({len(skus)} SKUs, read "
        f"{day}; {which}), the rest from the catalog's snapshot"
    )
    return with_spot_rule(apply_billing(catalog, prices), spot_rule_prices(skus, catalog))


def with_spot_rule(catalog: Catalog, rule: Mapping[tuple[str, str, str], Price]) -> Catalog:
    """``catalog`` with the Spot prices Compute Engine's live Spot SKUs make by the Spot rule
    (``spot_rule_prices``), each keeping its basis (``unverified``, or ``floor``): the fee is
    still the unpublished one."""
    if not rule:
        return catalog
    merged = dict(catalog.prices)
    for key, price in rule.items():
        if key in merged and price.spot_usd is not None:
            merged[key] = dataclasses.replace(
                merged[key],
                spot_usd=price.spot_usd,
                source=f"Spot: {price.source}; otherwise: {merged[key].source}",
            )
    return dataclasses.replace(catalog, prices=merged)


def cmd_catalog_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print where the catalog's prices differ from the live billing SKUs; see the exit codes."""
    from ..vertex.billing import BillingUnavailable, read_skus

    try:
        endpoint = Endpoint(parse_endpoint(args.endpoint))
    except ValueError as exc:  # SettingError, naming the stack key the flag stands for
        print(f"error: {str(exc).replace('training:endpoint', '--endpoint')}", file=err)
        return 2
    catalog = load_catalog()
    try:
        skus = read_skus(endpoint)
    except BillingUnavailable as exc:
        print(f"error: {exc}", file=err)
        return 2
    prices = billing_prices(skus, catalog)
    found = differences(catalog, prices) + differences(catalog, spot_rule_prices(skus, catalog))
    for difference in found:
        print(difference.line(), file=out)
    suspects = suspect_prices(catalog)
    for (name, region), why in sorted(suspects.items(), key=lambda item: item[0][::-1]):
        print(f"{name} (accelerator) in {region}, on-demand: suspect: {why}", file=out)
    checked = sum(
        1 for p in prices.values() for c in ("on_demand", "spot", "flex_start") if p.value(c)
    )
    print(
        f"{len(found)} difference(s) in {checked} price(s) the billing SKUs make "
        f"({len(skus)} SKUs), {len(suspects)} suspect on-demand price(s); catalog snapshot as "
        f"of {snapshot_date(catalog)}",
        file=out,
    )
    return 1 if found or suspects else 0
