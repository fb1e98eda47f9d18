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
read. Without Google credentials (and no ``--endpoint``) it says what it would read and checks
offline instead (``_print_offline_report``): the shipped billing snapshot against the catalog,
the catalog's own rules (``internal_problems``), the known conflicts between public figures
(``conflicting_sources``, not counted) and the unknown on-demand cells per GPU and region
(``unknown_cells``, not counted); exit 0 or 1 by differences and problems.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from ..costs._billing import (
    COMPUTE_SERVICE,
    NO_SECOND_SOURCE,
    UPLIFT,
    Difference,
    apply_billing,
    billing_prices,
    differences,
    read_snapshot,
    sku_capacity,
    sku_resource,
    spot_rule_prices,
    suspect_prices,
)
from ..lifecycle._settings import DEFAULT_RETRY_DEADLINE, Endpoint, parse_endpoint
from ..rules._catalog import Catalog, Price, load_catalog

__all__ = [
    "cmd_catalog_check",
    "conflicting_sources",
    "has_google_credentials",
    "internal_problems",
    "live_catalog",
    "priced_from",
    "snapshot_date",
    "unknown_cells",
    "with_spot_rule",
]

LIVE_SOURCE = (
    "the Cloud Billing Catalog API (cloudbilling.googleapis.com: services.list, then "
    "services/SERVICE/skus.list of Vertex AI and Compute Engine)"
)
"""What the live check reads: said when it cannot (no credentials)."""


def conflicting_sources(catalog: Catalog) -> dict[tuple[str, str, str], str]:
    """GPU cell → where two public figures disagree on its on-demand price: the figure the
    catalog uses, its date and source, and the shipped billing snapshot's other one
    (``billing_skus.csv``: its SKU, figure and date). The catalog keeps its figure; ``catalog
    check`` with the live SKUs settles it."""
    skus = [
        sku
        for sku in read_snapshot()
        if sku_capacity(sku) == "on_demand" and (sku_resource(sku) or ("", ""))[0] == "gpu"
    ]
    found = {}
    for sku in skus:
        name = (sku_resource(sku) or ("", ""))[1]
        # A Compute Engine SKU is the rate before Vertex's uplift, compared as the catalog made it.
        uplift = UPLIFT if sku.service == COMPUTE_SERVICE else 1.0
        figure = sku.usd * uplift
        for region in sku.regions:
            key = (region, "accelerator", name)
            shipped = catalog.prices.get(key)
            used = shipped.on_demand_usd if shipped else None
            if shipped is None or used is None or abs(used - figure) <= 1e-4 * figure:
                continue
            times = f" x {UPLIFT:g} uplift = {figure:.6g}" if uplift != 1.0 else ""
            found[key] = (
                f"uses {used:.6g} ({shipped.as_of}, {shipped.source.split(' (', 1)[0]}); the "
                f"other public figure: billing SKU {sku.sku_id} {sku.description!r} bills "
                f"{sku.usd:.6g}{times} ({sku.as_of})"
            )
    return found


def internal_problems(catalog: Catalog) -> list[str]:
    """The catalog's own rules, checked offline: a Spot or flex-start price above on-demand
    (neither ever costs more), a figure equal to on-demand labelled as that capacity's price
    (a bound labelled as a price), and a ``bound`` that is not the on-demand price."""
    problems = []
    for key in sorted(catalog.prices):
        price = catalog.prices[key]
        on_demand = price.on_demand_usd
        for capacity in ("spot", "flex_start"):
            value, basis = price.value(capacity), price.basis_for(capacity)
            word = capacity.replace("_", "-")
            where = f"{price.name} ({price.kind}) in {price.region}, {word}"
            if value is None or on_demand is None:
                continue
            same = abs(value - on_demand) <= 1e-6 * on_demand
            if value > on_demand and not same:
                problems.append(f"{where}: {value:.6g} is above on-demand {on_demand:.6g}")
            elif same and basis not in ("bound", "org"):
                problems.append(
                    f"{where}: {value:.6g} is the on-demand price labelled {basis or 'a price'}: "
                    "a bound labelled as a price (basis bound)"
                )
            elif basis == "bound" and not same:
                problems.append(
                    f"{where}: a bound {value:.6g} that is not on-demand {on_demand:.6g}"
                )
    return problems


def unknown_cells(catalog: Catalog) -> dict[str, list[tuple[str, str]]]:
    """GPU → (region, why) of each unknown on-demand price where Vertex offers it for training
    (why: the first source's reason, and whether a second was looked for and not found)."""
    cells: dict[str, list[tuple[str, str]]] = {}
    offered = sorted(
        (accelerator, region)
        for region, accelerators in catalog.training_accelerators.items()
        for accelerator in accelerators
        if (known := catalog.accelerators.get(accelerator)) is None
        or (known.kind == "gpu" and not known.retired)
    )
    for accelerator, region in offered:
        price = catalog.prices.get((region, "accelerator", accelerator))
        if price is not None and price.on_demand_usd is not None:
            continue
        why = "no row"
        if price is not None and price.source.startswith("unknown: "):
            why = price.source.removeprefix("unknown: ").split("; ", 1)[0].split(" (", 1)[0]
            if NO_SECOND_SOURCE in price.source:
                why += "; no second source in billing_skus.csv"
        cells.setdefault(accelerator, []).append((region, why))
    return cells


def _print_offline_report(catalog: Catalog, out: TextIO) -> int:
    """The checks that need no credentials; the number of differences and problems found."""
    found: list[Difference] = differences(catalog, billing_prices(read_snapshot(), catalog))
    documented = conflicting_sources(catalog)
    undocumented = [
        d
        for d in found
        if d.capacity != "on_demand" or (d.region, d.kind, d.name) not in documented
    ]
    for difference in undocumented:
        print(f"snapshot: {difference.line()}", file=out)
    for (region, kind, name), text in sorted(documented.items()):
        print(f"sources differ: {name} ({kind}) in {region}, on-demand: {text}", file=out)
    problems = internal_problems(catalog)
    for problem in problems:
        print(f"rule: {problem}", file=out)
    _print_unknown_cells(catalog, out)
    print(
        f"offline: {len(undocumented)} difference(s) from the shipped billing snapshot, "
        f"{len(documented)} known conflict(s) between public figures, {len(problems)} "
        f"catalog rule problem(s); catalog snapshot as of {snapshot_date(catalog)}",
        file=out,
    )
    return len(undocumented) + len(problems)


def _print_unknown_cells(catalog: Catalog, out: TextIO) -> None:
    cells = unknown_cells(catalog)
    for accelerator, where in sorted(cells.items()):
        regions = ", ".join(f"{region} ({why})" for region, why in where)
        print(f"unknown on-demand: {accelerator} in {len(where)} region(s): {regions}", file=out)


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
    deadline: float = DEFAULT_RETRY_DEADLINE,
) -> Catalog:
    """The one rule by which the CLI (``estimate``, ``prices``) and both doors' previews choose
    their prices: the live SKUs (cached per day; with ``project``, its account's prices) when
    ``live`` is True, or None and Google credentials are present or ``endpoint`` is explicit
    (the local emulator); the snapshot when ``live`` is False (``--no-live-prices``,
    ``training:livePrices: false``) or no credentials are present, with a note naming it and
    its date (``say_snapshot``: the CLI's tables name each price's basis instead, and its
    errors come first). A live read takes at most ``deadline`` seconds (``live_catalog``)."""
    if live is False:
        return catalog
    if live is None and not endpoint.url and not has_google_credentials():
        if say_snapshot:
            note(
                f"prices from the catalog's snapshot (as of {snapshot_date(catalog)}): no Google "
                "credentials (gcloud auth application-default login for Vertex's live SKUs)"
            )
        return catalog
    return live_catalog(catalog, endpoint, note, project, deadline)


def snapshot_date(catalog: Catalog) -> str:
    """The newest ``as_of`` of the catalog's prices: how old the shipped snapshot is."""
    return max((p.as_of for p in catalog.prices.values() if p.as_of[:4].isdigit()), default="")


def live_catalog(
    catalog: Catalog,
    endpoint: Endpoint,
    note: Callable[[str], None],
    project: str | None = None,
    deadline: float = DEFAULT_RETRY_DEADLINE,
) -> Catalog:
    """``catalog`` with the live billing SKUs' prices over its own; itself (and a note saying
    why) when they cannot be read. With ``project``, the SKUs at its billing account's own
    prices where the caller may read them; else the list prices, and a note saying so once.
    Each read takes at most ``deadline`` seconds in all (``training:retryDeadline``); an
    account price far from the list price is not taken (a note names the SKU and the range)."""
    from ..vertex.billing import BillingUnavailable, read_skus

    try:
        skus = read_skus(endpoint, deadline=deadline)
    except BillingUnavailable as exc:
        note(f"{exc}; prices from the catalog's snapshot (as of {snapshot_date(catalog)})")
        return catalog
    which = "list prices"
    if project:
        from ..vertex.account_prices import (
            apply_account_prices,
            implausible_account_prices,
            read_account_prices,
        )

        try:
            account = read_account_prices(endpoint, project, deadline=deadline)
        except BillingUnavailable as exc:
            note(f"account prices of project {project} not read ({exc}): list prices used")
        else:
            refused = implausible_account_prices(skus, account)
            if refused:
                more = f" (and {len(refused) - 3} more)" if len(refused) > 3 else ""
                note(f"account prices refused: {'; '.join(refused[:3])}{more}")
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
    if not endpoint.url and not has_google_credentials():
        print(
            f"note: no Google credentials: the live check reads {LIVE_SOURCE}; checked offline: "
            "the shipped billing snapshot (billing_skus.csv) against prices.csv, and the "
            "catalog's own rules",
            file=err,
        )
        return 1 if _print_offline_report(catalog, out) else 0
    try:
        skus = read_skus(endpoint)
    except BillingUnavailable as exc:
        where = endpoint.url or "cloudbilling.googleapis.com"
        print(f"error: {exc} (read from {where})", file=err)
        return 2
    prices = billing_prices(skus, catalog)
    found = differences(catalog, prices) + differences(catalog, spot_rule_prices(skus, catalog))
    for difference in found:
        print(difference.line(), file=out)
    suspects = suspect_prices(catalog)
    for (name, region), why in sorted(suspects.items(), key=lambda item: item[0][::-1]):
        print(f"{name} (accelerator) in {region}, on-demand: suspect: {why}", file=out)
    _print_unknown_cells(catalog, out)
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
