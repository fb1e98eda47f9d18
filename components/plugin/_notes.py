"""What the dynamic door says at preview, said by the plugin on the resource.

A dynamic ``TrainingJob`` logs its notes from the program before it is registered
(``components.dynamic._job_resource``): each prebuilt image past its end of availability, the
validator's warnings, its cost per hour and at most (``cost_message``, the bounds as bounds,
``components.costs._figure``), the quota table and fit, and with candidate ``regions`` the
placement plan (``quota_shortfalls``). The plugin has no program: its ``check`` says the same
lines, made by the same functions and kept as data by the core (``components.core._preview.
job_notes``), as diagnostics on the resource's URN (the engine's ``Log``
service, ``EngineLog``), in ``pulumi preview`` and ``pulumi up`` alike; ``gpu-training:quota``
decides what a shortfall is (``error``: a check failure on the job's pools).

The preview of a create returns the outputs already known (``known_status``): the price per
hour and at most, what it is (``costBasis``), and with one candidate region the region it runs
in. One job has one price: the note, the preview's outputs and the create's (``catalog_for``,
``JobCore.use_pricing``) all price from the one billed catalog, chosen by the rule the CLI
and the dynamic door's preview use (``priced_from``: live billing prices where readable,
``gpu-training:livePrices: false`` the snapshot), and the note says where its prices came from.

Per process, once: the billed catalog (the live billing SKUs' prices over the snapshot) for
each endpoint and project, and each project's quota limits (or why they cannot be read: the
Cloud Quotas client caches only a read that worked, and 200 jobs must not each wait out the
retry deadline of an API that is down).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core._preview import (
    PreviewSettings,
    Say,
    job_notes,
    preview_catalog,
)
from ..core._results import Shortfall
from ..costs._figure import Figure
from ..costs._quota import QuotaLimits
from ..lifecycle._settings import PLUGIN_DOOR, Endpoint, ProviderSettings
from ..lifecycle._wire import (
    ENV_VALUES,
    PLACEMENT,
    PROJECT,
    REGION,
    SPEC,
    contains_unknown,
    decode_spec,
)
from ..rules._catalog import Catalog, load_catalog
from ._log import EngineLog
from ._shape import Shape

__all__ = ["PlannedJob", "PreviewNotes", "planned_job"]

Costs = Callable[[Mapping[str, Any], str, Catalog | None], Mapping[str, Any]]
"""``(document, region, catalog)`` → the ``status`` fields of a job's price, as its create
records it (``components.core._jobs.JobResourceKind.costs``)."""


@dataclass(frozen=True)
class PlannedJob:
    """One plugin resource's job, fully known, as its preview reads it."""

    name: str
    spec: Any
    """The parsed spec (``JobSpec``, ``TuningJobSpec``)."""
    project: str
    region: str
    placement: Any = None
    """The core's ``placement`` input (candidate regions), or None."""


def planned_job(shape: Shape, name: str, inputs: Mapping[str, Any]) -> PlannedJob | None:
    """The job of the core's ``inputs`` (its env values back in: the placement plan validates
    the job as submitted), or None while its spec, place or candidates are not known (a value
    from another resource at preview) or it does not parse (the check says why)."""
    project, region, spec = inputs.get(PROJECT), inputs.get(REGION), inputs.get(SPEC)
    placement = inputs.get(PLACEMENT)
    if not (isinstance(project, str) and project and isinstance(region, str) and region):
        return None
    if any(contains_unknown(v) for v in (project, region, spec, placement)):
        return None
    env_values = inputs.get(ENV_VALUES)
    try:
        document = shape.spec.merge_env(
            decode_spec(spec), env_values if isinstance(env_values, Mapping) else {}
        )
        parsed = shape.spec.model.parse(document)
    except Exception:  # the check names the problem
        return None
    return PlannedJob(name, parsed, project, region, placement or None)


class PreviewNotes:
    """The notes of each job the plugin checks, and the outputs its preview knows."""

    def __init__(self, log: EngineLog) -> None:
        self._log = log
        # One lock per read: a slow billing read does not hold up the quota read.
        self._catalog_lock = threading.Lock()
        self._limits_lock = threading.Lock()
        self._catalogs: dict[tuple[str | None, str | None, int], Catalog] = {}
        self._limits: dict[tuple[str | None, str], QuotaLimits | Exception] = {}

    def say_to(self, urn: str) -> Say:
        """``say(severity, text)`` on the resource ``urn``."""

        def say(severity: str, text: str) -> None:
            (self._log.warn if severity == "warning" else self._log.info)(text, urn)

        return say

    def settings(self, job: PlannedJob, settings: ProviderSettings) -> PreviewSettings:
        """The preview settings of ``job`` under the provider's ``settings``: no price sheet
        (the plugin has no ``prices`` key), live prices where readable, no quota snapshot."""
        return PreviewSettings(
            project=job.project,
            region=job.region,
            endpoint=settings.endpoint.url,
            quota=settings.quota,
            root=None,
            live_prices=settings.live_prices,
            retry_deadline=settings.retry_deadline,
            door=PLUGIN_DOOR,
        )

    def catalog(self, settings: PreviewSettings, say: Say) -> Catalog:
        """The billed catalog, read once per endpoint, project and catalog overlay (its notes,
        where the prices came from, go to the first job that asks)."""
        key = (settings.endpoint, settings.project, id(load_catalog()))
        with self._catalog_lock:  # one read, whoever asks first; the others wait for it
            found = self._catalogs.get(key)
            if found is None:
                found = self._catalogs[key] = preview_catalog(settings, say)
            return found

    def catalog_for(self, project: str, settings: ProviderSettings) -> Catalog:
        """The billed catalog a create of a job of ``project`` prices with: the one its
        preview's notes read (``catalog``; where the check read none, its notes go to the
        stack)."""
        preview = PreviewSettings(
            project=project,
            region=None,
            endpoint=settings.endpoint.url,
            root=None,
            live_prices=settings.live_prices,
            retry_deadline=settings.retry_deadline,
            door=PLUGIN_DOOR,
        )
        return self.catalog(preview, self.say_to(""))

    def read_limits(self, endpoint: Endpoint, project: str, retry_deadline: float) -> QuotaLimits:
        """The project's quota limits, or the ``QuotaUnavailable`` of the first read, again."""
        from ..vertex import quotas

        key = (endpoint.url, project)
        with self._limits_lock:
            found = self._limits.get(key)
            if found is None:
                try:
                    found = quotas.read_limits(endpoint, project, retry_deadline=retry_deadline)
                except quotas.QuotaUnavailable as exc:
                    found = exc
                self._limits[key] = found
        if isinstance(found, Exception):
            raise found
        return found

    def tell(self, job: PlannedJob, settings: ProviderSettings, urn: str) -> list[Shortfall]:
        """Say ``job``'s notes (the core's ``job_notes``) on ``urn``; returns its quota
        shortfalls (none under ``gpu-training:quota: off`` or where the quotas cannot be read)."""
        preview = self.settings(job, settings)
        notes, shortfalls = job_notes(
            job.name,
            job.spec,
            preview,
            job.placement,
            catalog=lambda say: self.catalog(preview, say),
            read_limits=self.read_limits,
        )
        say = self.say_to(urn)
        for note in notes:
            say(note.severity, note.text)
        return shortfalls

    @staticmethod
    def known_status(
        job: PlannedJob, costs: Costs, under: str | None, catalog: Catalog | None = None
    ) -> dict[str, Any]:
        """The ``status`` fields a create of ``job`` is known to give before it runs: its
        prices (``costs`` from ``catalog``, as the create prices it); with candidate regions,
        where one candidate is left its region (and with one capacity kind, its capacity), and
        the price wherever it lands: one attempt's, or the spread of every attempt's
        (``cost_basis`` ``range`` from the cheapest to the dearest, never shown as a price)."""
        from ..core._placement import attempts_of, parse_placement, with_capacity

        document = job.spec.to_document()
        if not job.placement:
            return dict(costs(document, job.region, catalog))
        candidates, _ = parse_placement(job.placement)
        attempts = attempts_of(candidates)
        status: dict[str, Any] = {}
        if len(candidates) == 1:
            status["placed_region"] = candidates[0].region
        if len(attempts) == 1:
            status["placed_capacity"] = attempts[0].capacity or "as in the spec"
        priced = [
            costs(with_capacity(document, attempt.capacity, under=under), attempt.region, catalog)
            for attempt in attempts
        ]
        status.update(priced[0] if len(priced) == 1 else _spread_costs(priced))
        return status


def _spread_costs(priced: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The cost fields of a job that runs at one of several attempts, each priced: the
    ``spread`` of their hourly and ceiling figures; ``hourly_cost_usd``/``max_cost_usd`` the
    dearest attempt's (the most it can cost), ``cost_basis`` what the spread is."""
    from ..costs._figure import spread
    from ..costs._pricing import cost_fields

    def number(value: Any) -> float | None:
        return float(value) if isinstance(value, int | float) else None

    def figures(prefix: str) -> list[Figure]:
        return [
            Figure(
                number(fields.get(f"{prefix}_low_usd")), number(fields.get(f"{prefix}_high_usd"))
            )
            for fields in priced
        ]

    def most(key: str) -> float | None:
        values = [number(fields.get(key)) for fields in priced]
        known = [v for v in values if v is not None]
        return max(known) if len(known) == len(values) else None

    hourly, ceiling = spread(figures("hourly_cost")), spread(figures("max_cost"))
    return cost_fields(most("hourly_cost_usd"), most("max_cost_usd"), hourly, ceiling)
