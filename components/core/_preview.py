"""What a preview says about a job, for every door: its cost, quota fit, placement plan, images.

The notes go to a ``Say`` (``say(severity, text)``): the dynamic door's is the program's log
(``components.dynamic._job_preview``), the plugin's the engine's ``Log`` service with the
resource's URN (``components.plugin._notes``); ``components.core._results.Notes`` keeps them as
data. ``PreviewSettings`` are the stack settings they read, whichever door read them.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import SpecError
from ..costs._price_sheet import PriceSetting
from ..costs._pricing import (
    Estimate,
    TuningEstimate,
    estimate,
    estimate_tuning,
    summary,
    tuning_summary,
)
from ..costs._quota import QUOTA_KEY, Shortfall
from ..lifecycle._settings import DEFAULT_RETRY_DEADLINE, DYNAMIC_DOOR, Door, Endpoint
from ..rules._catalog import Catalog
from ..rules._spec import JobSpec
from ..rules._tuning_spec import TuningJobSpec
from ..rules._violations import errors_only
from ._results import JobCost, Note, Notes

if TYPE_CHECKING:
    from ..costs._quota import QuotaLimits

__all__ = [
    "Placed",
    "PreviewSettings",
    "ReadLimits",
    "Say",
    "cost_message",
    "image_notes",
    "job_notes",
    "preview_catalog",
    "quota_shortfalls",
]

Spec = JobSpec | TuningJobSpec

Say = Callable[[str, str], None]
"""Where a preview's notes go: ``say(severity, text)``, severity ``info`` or ``warning``. The
dynamic door's is the program's log (``pulumi.log``); the plugin's, the engine's ``Log`` service
with the resource's URN (``components.plugin._notes``)."""

ReadLimits = Callable[[Endpoint, str, float], "QuotaLimits"]
"""``(endpoint, project, retry deadline)`` → the project's quota limits; raises
``QuotaUnavailable`` (``components.vertex.quotas.read_limits``)."""


def _read_limits(endpoint: Endpoint, project: str, retry_deadline: float) -> QuotaLimits:
    from ..vertex import quotas

    return quotas.read_limits(endpoint, project, retry_deadline=retry_deadline)


@dataclass(frozen=True)
class PreviewSettings:
    """The stack settings a job's preview reads: where its quota is read and how it is priced.

    The dynamic door's resource reads them from the stack configuration
    (``components.dynamic._job_preview.stack_preview_settings``), the project's program passes the
    ones it has read and checked already, the plugin its provider's configuration.
    """

    project: str | None
    region: str | None
    endpoint: str | None
    prices: PriceSetting | None = None
    quota: str = "error"
    live_prices: bool = True
    """``training:livePrices``: price from the live billing SKUs where readable (the local
    stack reads the emulator's Catalog API) over the catalog's snapshot."""
    root: Path | None = Path()
    """Where the quota snapshot for the policy pack goes (``components.costs._quota.SNAPSHOT_DIR``);
    None: nowhere (the plugin, which has no program directory of its own to write in)."""
    retry_deadline: float = DEFAULT_RETRY_DEADLINE
    """``training:retryDeadline``: how long the quota read retries an unavailable API, and the
    most a live billing read takes in all."""
    door: Door = DYNAMIC_DOOR
    """Which front door's keys the notes name (``training:quota``, ``gpu-training:quota``)."""


def _estimated(
    spec: Spec | None, region: str | None, catalog: Catalog
) -> Estimate | TuningEstimate | None:
    """``spec``'s ``Estimate`` (``TuningEstimate``) in ``region``; None for a spec that is
    invalid (or not read)."""
    if spec is None:
        return None
    try:
        if isinstance(spec, TuningJobSpec):
            return estimate_tuning(spec, catalog, region=region)
        return estimate(spec, catalog, region=region)
    except (SpecError, ValueError):
        return None


def _cost_line(name: str, found: Estimate | TuningEstimate | None) -> str:
    if found is None:
        return f"  {name}: no estimate (the spec is invalid)"
    line = tuning_summary(found) if isinstance(found, TuningEstimate) else summary(found)
    return f"  {name}: {line}"


def _billed_catalog(settings: PreviewSettings, say: Say) -> Catalog | None:
    """The catalog with the live billing SKUs' prices over its snapshot; None: the snapshot."""
    if not settings.live_prices:
        return None
    from ..rules._catalog import load_catalog
    from ._billing_cli import priced_from

    endpoint = Endpoint(settings.endpoint)
    # The local stack (an http:// emulator endpoint) prices at list prices: it has no billing
    # account to ask, and asking would print a 403 line in the first `make up`.
    project = None if endpoint.anonymous else settings.project
    return priced_from(
        load_catalog(),
        endpoint,
        None,
        lambda text: say("info", text),
        project,
        deadline=settings.retry_deadline,
    )


def preview_catalog(settings: PreviewSettings, say: Say) -> Catalog:
    """The catalog a preview prices with: the live billing SKUs' prices over the snapshot
    (``training:livePrices``), the stack's price sheet over both; its notes (where the prices
    came from) go to ``say``. A caller pricing many jobs reads it once
    (``components.plugin._notes``). Raises ``PriceSheetError`` for a sheet that does not apply."""
    from ..costs._price_sheet import apply_prices
    from ..rules._catalog import load_catalog

    return apply_prices(_billed_catalog(settings, say) or load_catalog(), settings.prices)


def cost_message(
    jobs: Sequence[tuple[str, Spec | None]],
    settings: PreviewSettings,
    catalog: Catalog,
    regions: Mapping[str, str] | None = None,
) -> str:
    """One message for every job's estimated cost: ``pulumi preview`` shows it to reviewers.
    ``catalog``: the ``preview_catalog``; ``regions``: a job's own region where it is not the
    settings' (a job with candidate regions: its first, as the resource alone prices it)."""
    own = regions or {}
    lines = [
        _cost_line(name, _estimated(spec, own.get(name, settings.region), catalog))
        for name, spec in jobs
    ]
    return _COST_HEADING + "\n".join(lines)


_COST_HEADING = "estimated cost per job:\n"


Placed = tuple[str, "Spec", Any]
"""A job with candidate regions: its name, spec and ``placement`` input (``_placement``)."""


def quota_shortfalls(
    jobs: Sequence[tuple[str, Spec]],
    settings: PreviewSettings,
    placed: Sequence[Placed] = (),
    *,
    say: Say,
    catalog: Catalog | None = None,
    read_limits: ReadLimits = _read_limits,
    alone: bool = False,
) -> list[Shortfall]:
    """What a preview says of the jobs' quotas, to ``say``, and the shortfalls it finds (none
    under ``off``, or where the quotas cannot be read: a warning then).

    The quota table of ``jobs`` (every job at once) and, for each placed job, its attempts'
    fit and price (``catalog``: the ``preview_catalog``, read where None). ``alone``: the
    jobs are one resource's, checked by itself (the plugin), and the messages say so.
    """
    if settings.quota == "off" or not (jobs or placed):
        _placement_lines(placed, settings, None, say, catalog)
        return []
    whose = "the job's" if alone else "the jobs'"
    if settings.project is None or settings.region is None:
        their = "its" if alone else "their"
        unknown = f"{their} project or region is not known at preview"
        say("warning", f"{whose} quotas were not checked: {unknown}")
        return []
    from ..costs._quota import compare, job_needs, load_quota_metrics, write_snapshot
    from ..rules._catalog import load_catalog
    from ..vertex.quotas import QuotaUnavailable

    catalog_of_needs, metrics = load_catalog(), load_quota_metrics()
    needs, unchecked = [], []
    for name, spec in jobs:
        found, skipped = job_needs(name, spec, catalog_of_needs, metrics)
        needs += found
        unchecked += skipped
    key = settings.door.key(QUOTA_KEY)
    try:
        limits = read_limits(Endpoint(settings.endpoint), settings.project, settings.retry_deadline)
    except QuotaUnavailable as exc:
        say("warning", f"{exc}; {whose} quotas were not checked ({key}: off skips this)")
        _placement_lines(placed, settings, None, say, catalog)
        return []
    shortfalls = _placement_lines(placed, settings, limits, say, catalog)
    try:  # for the policy pack, which has no client (components.costs._quota.SNAPSHOT_DIR)
        if settings.root is not None:
            write_snapshot(settings.root, settings.project, limits, time.time())
    except (OSError, ValueError) as exc:
        say("warning", f"the quota snapshot for the policy pack was not written: {exc}")
    if jobs:
        report = compare(
            settings.project, settings.region, needs, limits, catalog_of_needs, unchecked
        )
        say("info", "\n".join(report.table()))
        needed_by = "the job needs" if alone else "the stack's jobs need"
        shortfalls = report.found(limits, needed_by) + shortfalls
    return shortfalls


def _placement_lines(
    placed: Sequence[Placed],
    settings: PreviewSettings,
    limits: Any | None,
    say: Say,
    catalog: Catalog | None,
) -> list[Shortfall]:
    """Say, for each job with candidate regions, each attempt's quota fit and price, where it
    will try first and why others are skipped (``components.core._placement``); returns
    the problems of jobs that fit no candidate now."""
    if not placed:
        return []
    from ..costs._quota import load_quota_metrics
    from ..lifecycle._check import CUSTOM_JOB_SPEC, TUNING_JOB_SPEC
    from ..lifecycle._settings import target_for_endpoint
    from ._placement import attempts_of, parse_placement, preview_lines

    problems: list[Shortfall] = []
    metrics = load_quota_metrics()

    billed = catalog if catalog is not None else preview_catalog(settings, say)
    target = target_for_endpoint(settings.endpoint)
    for name, spec, placement in placed:
        kind = TUNING_JOB_SPEC if isinstance(spec, TuningJobSpec) else CUSTOM_JOB_SPEC
        candidates, _ = parse_placement(placement)
        attempts, skipped = [], []
        everywhere = _errors_everywhere(spec, kind, target)
        for attempt in attempts_of(candidates):
            reasons = _refused_in(spec, attempt, kind, target, everywhere)
            if reasons:
                skipped.append(f"{attempt.shown}: {reasons}")
            else:
                attempts.append(attempt)
        lines, fits = preview_lines(
            name, spec, attempts, skipped, billed, metrics, limits, under=kind.pools_under
        )
        say("info", "\n".join(lines))
        if not fits and limits is not None:
            text = f"{name}: no candidate region fits the quota now: " + lines[0]
            problems.append(Shortfall("placement", (name,), text))
    return problems


def _errors_everywhere(spec: Spec, kind: Any, target: Any) -> set[tuple[str, str]]:
    """The (path, reason) of the errors ``spec`` has in any region and capacity: the job's own
    check's, never an attempt's (a program's plan has no package yet where its infra stages
    one at create)."""
    unplaced = spec.model_copy(update={"region": None})
    return {(v.path, v.reason) for v in errors_only(kind.validate(unplaced, None, target))}


def _refused_in(
    spec: Spec, attempt: Any, kind: Any, target: Any, everywhere: set[tuple[str, str]]
) -> str:
    """Why the validator refuses ``spec`` for ``attempt`` (its first error that is not one of
    ``everywhere``: the (path, reason) of the errors the spec has in any region), or ""."""
    from ._placement import with_capacity

    try:
        placed = type(spec).parse(
            with_capacity(spec.to_document(), attempt.capacity, under=kind.pools_under)
        )
    except Exception as exc:  # a capacity kind the model refuses: that attempt is skipped
        return str(exc).splitlines()[0]
    errors = [
        v
        for v in errors_only(kind.validate(placed, attempt.region, target))
        if (v.path, v.reason) not in everywhere
    ]
    return str(errors[0]) if errors else ""  # the path, reason and suggestion as a check shows them


def image_notes(spec: Spec, region: str | None) -> list[str]:
    """A note for each prebuilt executor image of the spec past its end of availability (a
    spec file's reader says so for its own; this is for a spec given inline)."""
    job = spec.trial_job_spec if isinstance(spec, TuningJobSpec) else spec
    notes: dict[str, None] = {}
    for pool in job.worker_pool_specs:
        package = pool.python_package_spec
        if package is not None and package.executor_image_uri:
            late = _late_image(package.executor_image_uri, region)
            if late is not None:
                notes[late] = None
    return list(notes)


@functools.cache
def _late_image(uri: str, region: str | None) -> str | None:
    """The note for a prebuilt image past its end of availability (once per image and run:
    a stack's jobs mostly share one)."""
    from ..rules._catalog import load_catalog
    from ..rules._images import executor_image

    found = executor_image(load_catalog(), uri, region)
    return found.lifecycle() if found.kind == "prebuilt" else None


def job_notes(
    name: str,
    spec: Spec,
    settings: PreviewSettings,
    placement: Any,
    *,
    catalog: Callable[[Say], Catalog],
    read_limits: ReadLimits = _read_limits,
) -> tuple[list[Note], list[Shortfall]]:
    """What a preview says of one job checked by itself, as data: its notes in the order said,
    each under its topic (images past their end of availability, where its prices come from,
    its cost per hour and at most, with the figures, its quota table, its placement plan) and
    its quota shortfalls (none under
    ``quota: off`` or where the quotas cannot be read). ``catalog(say)``: the
    ``preview_catalog`` (a caller pricing many jobs reads it once), its notes to ``say``."""
    notes = Notes()
    for note in image_notes(spec, settings.region):
        notes.about("image")("info", f"{name}: {note}")
    priced = catalog(notes.about("prices"))
    found = _estimated(spec, settings.region, priced)
    cost = (
        None
        if found is None
        else JobCost(found.region, found.billed_as, found.figure, found.max_figure)
    )
    notes.add(Note("info", _COST_HEADING + _cost_line(name, found), "cost", cost))
    single = [] if placement else [(name, spec)]
    placed = [(name, spec, placement)] if placement else []
    shortfalls = quota_shortfalls(
        single,
        settings,
        placed,
        say=notes.about("placement" if placement else "quota"),
        catalog=priced,
        read_limits=read_limits,
        alone=True,
    )
    return notes.said, shortfalls
