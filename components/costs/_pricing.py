"""What a job costs: per hour, and at most (for its ``scheduling.timeout``).

Prices come from ``catalog/prices.csv``, over which a stack's organisation prices apply
(``components.costs._price_sheet``). An unknown price is reported as unknown, never guessed: the
estimate then has no total, and ``missing`` says which prices are lacking, and why when the
catalog knows. Every price says where it came from (``price_labels``: ``Vertex price``,
``derived``, ``derived, unverified``, ``org sheet x.csv``, a discount), and a pool's price is
the way Vertex bills it: the machine plus each of its GPUs.

A hyperparameter tuning job (``estimate_tuning``) is priced from the custom job each trial
runs: one trial per hour, every parallel trial at once per hour, and the ceiling of all its
trials (``maxTrialCount`` times one trial's ceiling for its own ``scheduling.timeout``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from .._errors import SpecError
from ..rules._catalog import Catalog, Price, capacity_of, combinations, load_catalog
from ..rules._spec import JobSpec, WorkerPoolSpec
from ..rules._tuning_spec import TuningJobSpec
from ..rules._validation import pool_role, validate
from ._figure import ZERO, Figure, cost_basis, figure_text

__all__ = [
    "DEFAULT_TIMEOUT",
    "Estimate",
    "Figure",
    "GpuOffer",
    "PoolCost",
    "TuningEstimate",
    "bounded",
    "capacity_word",
    "compare_regions",
    "concurrent_trials",
    "cost_fields",
    "cost_outputs",
    "duration_text",
    "estimate",
    "estimate_tuning",
    "figure_text",
    "gpu_offers",
    "job_capacity",
    "labels_text",
    "summary",
    "tuning_cost_outputs",
    "tuning_summary",
]

DEFAULT_TIMEOUT = timedelta(days=7)
"""Vertex AI's default ``scheduling.timeout``."""

_CAPACITY_WORDS = {"on_demand": "on-demand", "spot": "spot", "flex_start": "flex-start"}


def capacity_word(capacity: str) -> str:
    """``on-demand``, ``spot`` or ``flex-start``: how outputs name a capacity."""
    return _CAPACITY_WORDS[capacity]


def bounded(labels: tuple[str, ...]) -> bool:
    """Whether a figure rests on a bound (``on-demand bound``, ``lower bound``): rankings put
    the figures known as prices first, cheapest first, then the bounded ones, cheapest first,
    so a lower bound never outranks a price it may exceed."""
    return any("bound" in label for label in labels)


def job_capacity(spec: JobSpec) -> str:
    """The capacity Vertex bills a job for: ``spot`` (``SPOT``), ``flex_start`` (``FLEX_START``,
    Dynamic Workload Scheduler), else ``on_demand`` (``LOW_COST``, which may use Spot VMs
    alongside on-demand ones, is priced at its on-demand ceiling)."""
    strategy = spec.scheduling.strategy if spec.scheduling else None
    return {"SPOT": "spot", "FLEX_START": "flex_start"}.get(strategy or "", "on_demand")


@dataclass(frozen=True, slots=True)
class PoolCost:
    """The cost of one worker pool: each replica, and all of them together."""

    index: int
    role: str
    replicas: int
    machine_type: str
    accelerator: str | None
    accelerator_count: int
    replica_usd_per_hour: float | None
    missing: tuple[str, ...]
    price_labels: tuple[str, ...] = ()
    """Where its prices came from (``Price.label``), machine first."""
    replica_figure: Figure | None = None
    """What one replica's price is known as (a price, at most, at least, a range)."""

    @property
    def usd_per_hour(self) -> float | None:
        if self.replica_usd_per_hour is None:
            return None
        return self.replica_usd_per_hour * self.replicas

    @property
    def figure(self) -> Figure:
        """All replicas' price as a figure: a bound stays a bound (``_figure``)."""
        return _figure_or_price(self.replica_figure, self.replica_usd_per_hour).times(self.replicas)


@dataclass(frozen=True, slots=True)
class Estimate:
    """A job's price in one region; ``None`` totals when a price is unknown."""

    region: str
    spot: bool
    pools: tuple[PoolCost, ...]
    usd_per_hour: float | None
    timeout: timedelta
    missing: tuple[str, ...]
    scale_tier: str | None = None
    sources: tuple[str, ...] = ()
    price_labels: tuple[str, ...] = ()
    """Where its prices came from (``Price.label``), each once."""
    capacity: str = ""
    """``on_demand``, ``spot`` or ``flex_start`` (empty: as ``spot`` says)."""
    hourly: Figure | None = None
    """The price per hour as what it is known as; ``usd_per_hour`` adds the parts' figures
    whatever they are (kept for outputs that need one number: use ``figure``)."""

    @property
    def figure(self) -> Figure:
        """The price per hour: a price, at most, at least, a range, or unknown."""
        return _figure_or_price(self.hourly, self.usd_per_hour)

    @property
    def max_figure(self) -> Figure:
        """The ceiling (the whole timeout) as a figure."""
        return self.figure.times(self.timeout.total_seconds() / 3600)

    @property
    def billed_as(self) -> str:
        """The capacity it is priced as: ``on_demand``, ``spot`` or ``flex_start``."""
        return self.capacity or ("spot" if self.spot else "on_demand")

    @property
    def max_usd(self) -> float | None:
        """The ceiling: the hourly price for the whole timeout."""
        if self.usd_per_hour is None:
            return None
        return self.usd_per_hour * self.timeout.total_seconds() / 3600

    def cost_for(self, duration: timedelta) -> float | None:
        """The price of running for ``duration`` (per-minute arithmetic, as in seed 003)."""
        if self.usd_per_hour is None:
            return None
        return self.usd_per_hour / 60 * (duration.total_seconds() / 60)


def _figure_or_price(figure: Figure | None, value: float | None) -> Figure:
    if figure is not None:
        return figure
    return Figure(None, None) if value is None else Figure.price(value)


def part_figure(price: Price, capacity: str) -> Figure:
    """One catalog cell as a figure, with why where it is a bound."""
    basis = price.basis_for(capacity)
    word = capacity_word(capacity)
    why = ""
    if basis == "bound":
        why = f"{price.name}: {word} rate unknown, on-demand stands in as its upper bound"
    elif basis == "floor":
        why = f"{price.name}: Compute Engine's {word} rate without Vertex's fee"
    return Figure.of(price.value(capacity), basis, why)


def _price(catalog: Catalog, region: str, kind: str, name: str, spot: bool | str) -> Price | None:
    price = catalog.prices.get((region, kind, name))
    if price is None:
        return None
    return price if price.value(spot) is not None else None


def _value(price: Price, spot: bool | str) -> float:
    value = price.value(spot)
    assert value is not None
    return value


def _unknown(catalog: Catalog, region: str, kind: str, name: str) -> str:
    """``a4-highgpu-8g in us-central1 (the source lists it at 0.0, which is no price)``."""
    price = catalog.prices.get((region, kind, name))
    why = ""
    if price is not None and price.source.startswith("unknown: "):
        why = price.source.removeprefix("unknown: ").split(" (", 1)[0].split("; ", 1)[0]
    return f"{name} in {region}" + (f" ({why})" if why else "")


@dataclass(frozen=True, slots=True)
class _Replica:
    """One machine with its GPUs: its price, the prices lacking, where the prices came from."""

    usd_per_hour: float | None
    missing: tuple[str, ...]
    labels: tuple[str, ...]
    sources: tuple[str, ...]
    figure: Figure


def _replica(
    catalog: Catalog,
    where: str,
    spot: bool | str,
    machine_type: str,
    accelerator: str | None,
    count: int,
) -> _Replica:
    """What Vertex bills for one replica: the machine, plus ``count`` of its GPU.

    An accelerator-optimized machine (a2, a3, g2) is billed this way too: its machine price
    excludes its GPUs (``catalog/README.md``, "Prices").
    """
    parts = [("machine", machine_type, 1)]
    if accelerator and count > 0:
        parts.append(("accelerator", accelerator, count))
    total, missing, labels, sources = 0.0, [], [], []
    figure = ZERO
    for kind, name, times in parts:
        price = _price(catalog, where, kind, name, spot)
        if price is None:
            missing.append(_unknown(catalog, where, kind, name))
            continue
        total += _value(price, spot) * times
        figure = figure + part_figure(price, capacity_of(spot)).times(times)
        if label := price.label(spot):
            labels.append(label)
        sources.append(price.source)
    return _Replica(
        None if missing else total,
        tuple(missing),
        tuple(dict.fromkeys(labels)),
        tuple(sources),
        Figure(None, None) if missing else figure,
    )


def estimate(
    spec: JobSpec,
    catalog: Catalog,
    *,
    region: str | None = None,
    spot: bool | None = None,
    scale_tier: str | None = None,
    capacity: str | None = None,
) -> Estimate:
    """Price ``spec`` in ``region`` (default: the spec's).

    The capacity is the job's own (``job_capacity``: a FLEX_START job is priced at flex-start
    rates, never on-demand ones) unless ``capacity`` (``on_demand``, ``spot``, ``flex_start``)
    or ``spot`` (True: Spot) says otherwise. A job converted from a legacy scale tier
    (``scale_tier``) is priced by the tier's own rate when one is known.
    """
    where = region or spec.region
    if where is None:
        raise ValueError("a region is needed to look up prices (--region or region: in the spec)")
    if capacity is None:
        capacity = job_capacity(spec) if spot is None else capacity_of(spot)
    capacity = capacity_of(capacity)
    spot = capacity == "spot"
    timeout = (spec.scheduling.timeout if spec.scheduling else None) or DEFAULT_TIMEOUT
    if scale_tier is not None:
        tier = _tier_estimate(catalog, where, scale_tier, capacity, timeout)
        if tier is not None:
            return tier
    sources: set[str] = set()
    pools = [
        cost
        for index, pool in enumerate(spec.worker_pool_specs)
        if (cost := _pool_cost(catalog, where, capacity, index, pool, sources)) is not None
    ]
    all_missing = tuple(m for p in pools for m in p.missing)
    total = None if all_missing else sum(p.usd_per_hour or 0.0 for p in pools)
    hourly = Figure(None, None) if all_missing else sum((p.figure for p in pools), ZERO)
    kind = "" if capacity == "on_demand" else f" ({capacity_word(capacity)})"
    return Estimate(
        where,
        spot,
        tuple(pools),
        total,
        timeout,
        tuple(dict.fromkeys(m + kind for m in all_missing)),
        None,
        tuple(sorted(sources)),
        tuple(dict.fromkeys(label for p in pools for label in p.price_labels)),
        capacity,
        hourly,
    )


def _tier_estimate(
    catalog: Catalog, where: str, scale_tier: str, capacity: str, timeout: timedelta
) -> Estimate | None:
    """A legacy scale tier's job priced by the tier's own rate; None where none is known."""
    tier_price = _price(catalog, where, "scale_tier", scale_tier, capacity)
    if tier_price is None:
        return None
    return Estimate(
        where,
        capacity == "spot",
        (),
        _value(tier_price, capacity),
        timeout,
        (),
        scale_tier,
        (tier_price.source,),
        (tier_price.label(capacity),),
        capacity,
        part_figure(tier_price, capacity),
    )


def _pool_cost(
    catalog: Catalog,
    where: str,
    spot: bool | str,
    index: int,
    pool: WorkerPoolSpec,
    sources: set[str],
) -> PoolCost | None:
    """The price of one pool's replicas (None for a placeholder); adds the sources used."""
    machine = pool.machine_spec
    if pool.is_placeholder or machine is None or not machine.machine_type:
        return None
    replica = _replica(
        catalog,
        where,
        spot,
        machine.machine_type,
        machine.accelerator_type,
        machine.accelerator_count,
    )
    sources.update(replica.sources)
    return PoolCost(
        index=index,
        role=pool_role(index, pool),
        replicas=pool.replicas,
        machine_type=machine.machine_type,
        accelerator=machine.accelerator_type,
        accelerator_count=machine.accelerator_count,
        replica_usd_per_hour=replica.usd_per_hour,
        missing=replica.missing,
        price_labels=replica.labels,
        replica_figure=replica.figure,
    )


@dataclass(frozen=True, slots=True)
class GpuOffer:
    """A GPU count on a machine type that takes it, in one region, and its price per hour."""

    accelerator: str
    count: int
    machine_type: str
    region: str
    spot: bool
    usd_per_hour: float | None
    price_labels: tuple[str, ...]
    missing: tuple[str, ...]
    capacity: str = ""
    figure: Figure | None = None
    """Its price as what it is known as (``_figure``)."""


def gpu_offers(
    catalog: Catalog,
    *,
    accelerator: str | None = None,
    region: str | None = None,
    machine_type: str | None = None,
    spot: bool = False,
    capacity: str | None = None,
) -> list[GpuOffer]:
    """What a GPU costs on each machine that takes it, by region, cheapest first
    (``python -m components prices``, like ``sky show-gpus``); figures that rest on a bound
    come after the known prices (``bounded``), unknown prices last.

    ``capacity`` (``on_demand``, ``spot``, ``flex_start``; default: as ``spot`` says) picks
    the rates: each capacity is priced as Vertex bills it."""
    kind = capacity_of(capacity if capacity is not None else spot)
    spot = kind == "spot"
    offers = []
    for combo in combinations(
        catalog, accelerator=accelerator, region=region, machine_type=machine_type
    ):
        for where in combo.regions:
            if region and where != region:
                continue
            for count in combo.counts:
                replica = _replica(
                    catalog, where, kind, combo.machine_type, combo.accelerator, count
                )
                offers.append(
                    GpuOffer(
                        combo.accelerator,
                        count,
                        combo.machine_type,
                        where,
                        spot,
                        replica.usd_per_hour,
                        replica.labels,
                        replica.missing,
                        kind,
                        replica.figure,
                    )
                )
    return sorted(
        offers,
        key=lambda o: (
            o.usd_per_hour is None or (o.figure is not None and o.figure.kind == "unknown"),
            bounded(o.price_labels),
            o.usd_per_hour or 0.0,
            o.accelerator,
            o.count,
            o.machine_type,
            o.region,
        ),
    )


def compare_regions(
    spec: JobSpec,
    catalog: Catalog,
    *,
    spot: bool | None = None,
    scale_tier: str | None = None,
    capacity: str | None = None,
) -> list[Estimate]:
    """The job in every region that can run it (no region or zone violation), cheapest first.

    Regions whose figure rests on a bound come after those with known prices (``bounded``);
    regions whose price is unknown come last, in name order.
    """
    runnable = [
        region
        for region in sorted(catalog.regions)
        if not [
            v
            for v in validate(spec, catalog=catalog, region=region)
            if v.rule in ("region", "zone")
        ]
    ]
    estimates = [
        estimate(spec, catalog, region=r, spot=spot, scale_tier=scale_tier, capacity=capacity)
        for r in runnable
    ]
    return sorted(
        estimates,
        key=lambda e: (
            e.figure.kind == "unknown",
            bounded(e.price_labels),
            e.usd_per_hour or 0.0,
            e.region,
        ),
    )


def cost_fields(
    hourly: float | None, ceiling: float | None, figure: Figure, max_figure: Figure
) -> dict[str, Any]:
    """The ``COST_FIELDS`` (``components.lifecycle._wire``) of a price: ``hourly_cost_usd``/``max_cost_usd`` as they always
    were (the catalog's cells added, a bound among them or not: a state's figures stay as they
    were written), ``cost_basis`` what they are (``price``, ``at most``, ``at least``,
    ``range``, ``unknown``: ``_figure.COST_BASES``) and the ends known of each (None: not
    known; a price's ends are the price)."""
    return {
        "hourly_cost_usd": hourly,
        "max_cost_usd": ceiling,
        "cost_basis": cost_basis(figure),
        "hourly_cost_low_usd": figure.low,
        "hourly_cost_high_usd": figure.high,
        "max_cost_low_usd": max_figure.low,
        "max_cost_high_usd": max_figure.high,
    }


_NO_PRICE = cost_fields(None, None, Figure(None, None), Figure(None, None))


def cost_outputs(
    document: Mapping[str, Any], region: str, catalog: Catalog | None = None
) -> dict[str, Any]:
    """The ``COST_FIELDS`` of a job document priced in ``region`` from ``catalog`` (the
    snapshot where None; ``cost_basis`` ``unknown`` where the spec cannot be priced)."""
    try:
        result = estimate(JobSpec.parse(dict(document)), catalog or load_catalog(), region=region)
    except (SpecError, ValueError):
        return dict(_NO_PRICE)
    return cost_fields(result.usd_per_hour, result.max_usd, result.figure, result.max_figure)


# --- hyperparameter tuning jobs ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TuningEstimate:
    """A tuning job's price in one region: its trial's ``Estimate`` times the trial counts.

    ``usd_per_hour`` is the price with ``parallel_trials`` trials running at once (the most
    the job costs per hour); ``max_usd`` the ceiling of all ``max_trials`` trials, each
    running for its whole timeout. ``None`` wherever the trial's price is unknown.
    """

    trial: Estimate
    max_trials: int
    parallel_trials: int

    @property
    def region(self) -> str:
        return self.trial.region

    @property
    def spot(self) -> bool:
        return self.trial.spot

    @property
    def billed_as(self) -> str:
        return self.trial.billed_as

    @property
    def timeout(self) -> timedelta:
        """One trial's timeout (``trialJobSpec.scheduling.timeout``, default 7 days)."""
        return self.trial.timeout

    @property
    def missing(self) -> tuple[str, ...]:
        return self.trial.missing

    @property
    def trial_usd_per_hour(self) -> float | None:
        return self.trial.usd_per_hour

    @property
    def usd_per_hour(self) -> float | None:
        """Every parallel trial at once, per hour."""
        hourly = self.trial.usd_per_hour
        return None if hourly is None else hourly * self.parallel_trials

    @property
    def figure(self) -> Figure:
        """Every parallel trial at once, per hour, as a figure."""
        return self.trial.figure.times(self.parallel_trials)

    @property
    def max_figure(self) -> Figure:
        """The ceiling of every trial as a figure."""
        return self.trial.max_figure.times(self.max_trials)

    @property
    def trial_max_usd(self) -> float | None:
        return self.trial.max_usd

    @property
    def max_usd(self) -> float | None:
        """The ceiling: every trial, each for its whole timeout."""
        ceiling = self.trial.max_usd
        return None if ceiling is None else ceiling * self.max_trials


def concurrent_trials(spec: TuningJobSpec) -> tuple[int, int]:
    """(trials in all, trials at once) as the job runs them.

    No more trials run at once than in all; a count below 1 (which ``validate_tuning``
    refuses) is read as 1, so an estimate never understates what a running job costs.
    """
    total = max(spec.max_trial_count, 1)
    return total, min(max(spec.parallel_trial_count, 1), total)


def estimate_tuning(
    spec: TuningJobSpec,
    catalog: Catalog,
    *,
    region: str | None = None,
    spot: bool | None = None,
    capacity: str | None = None,
) -> TuningEstimate:
    """Price ``spec`` in ``region`` (default: the spec's) from the custom job of one trial.

    The capacity defaults to the trial spec's (``job_capacity``), as in ``estimate``.
    """
    total, parallel = concurrent_trials(spec)
    trial = estimate(spec.trial_job(), catalog, region=region, spot=spot, capacity=capacity)
    return TuningEstimate(trial, total, parallel)


def tuning_cost_outputs(
    document: Mapping[str, Any], region: str, catalog: Catalog | None = None
) -> dict[str, Any]:
    """The prices of a tuning job document, as ``cost_outputs``'s.

    ``hourly_cost_usd``: every parallel trial at once; ``max_cost_usd``: the ceiling of all
    trials; ``trial_hourly_cost_usd``: one trial (of the same ``cost_basis``).
    """
    try:
        spec = TuningJobSpec.parse(dict(document))
        result = estimate_tuning(spec, catalog or load_catalog(), region=region)
    except (SpecError, ValueError):
        return {**_NO_PRICE, "trial_hourly_cost_usd": None}
    return {
        **cost_fields(result.usd_per_hour, result.max_usd, result.figure, result.max_figure),
        "trial_hourly_cost_usd": result.trial_usd_per_hour,
    }


def duration_text(duration: timedelta) -> str:
    """``2 h``, ``1 h 30 min``, ``10 min``, ``45 s``: a timeout as people write it."""
    seconds = round(duration.total_seconds())
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{value} {unit}" for value, unit in ((hours, "h"), (minutes, "min"), (seconds, "s"))]
    shown = [part for part in parts if not part.startswith("0 ")]
    return " ".join(shown) or "0 s"


def summary(result: Estimate) -> str:
    """One line for logs and PR comments: ``$0.62/h on-demand in us-central1, at most $1.24 (2 h)``.

    A figure that rests on a bound says so (``at most $24.89/h flex-start in ...``, with why),
    never as one price (``_figure``)."""
    pricing = capacity_word(result.billed_as)
    hours = duration_text(result.timeout)
    figure = result.figure
    if figure.kind == "unknown":
        return f"$?/h {pricing} in {result.region}: unknown price for {_unknown_why(result)}"
    return (
        f"{figure_text(figure, why=False)} {pricing} in {result.region}, "
        f"{_ceiling_text(result.max_figure, f'{hours} timeout')}{_why(figure)}"
        f"{labels_text(result.price_labels)}"
    )


def _unknown_why(result: Estimate) -> str:
    """The prices lacking; else (a part bounded only above, another only below) the bounds."""
    if result.missing:
        return ", ".join(result.missing)
    return "the sum of bounds both ways: " + "; ".join(result.figure.why)


def _ceiling_text(ceiling: Figure, timeout: str) -> str:
    """``at most $1.24 (2 h timeout)``; where only a lower bound is known, the ceiling is not:
    ``the 2 h timeout at least $X, no ceiling known``."""
    text = figure_text(ceiling, unit="", why=False)
    if ceiling.kind == "at_least":
        return f"the {timeout} {text}, no ceiling known"
    return f"{text} ({timeout})" if ceiling.kind == "at_most" else f"at most {text} ({timeout})"


def _why(figure: Figure) -> str:
    return f"; {figure.kind.replace('_', ' ')}: {'; '.join(figure.why)}" if figure.bounded else ""


def labels_text(labels: tuple[str, ...]) -> str:
    """``; prices: derived, unverified + org sheet acme.csv``: where a line's prices came from."""
    return f"; prices: {' + '.join(labels)}" if labels else ""


def tuning_summary(result: TuningEstimate) -> str:
    """One line for logs: ``$3.07/h on-demand in us-central1 (3 trials at once, $1.02/h
    each), at most $171.95 (12 trials, 14 h timeout each)``; a bound stays a bound."""
    pricing = capacity_word(result.billed_as)
    trials = f"{result.parallel_trials} trials at once"
    figure = result.figure
    if figure.kind == "unknown":
        return (
            f"$?/h {pricing} in {result.region} ({trials}): "
            f"unknown price for {_unknown_why(result.trial)}"
        )
    timeout = f"{result.max_trials} trials, {duration_text(result.timeout)} timeout each"
    return (
        f"{figure_text(figure, why=False)} {pricing} in {result.region} "
        f"({trials}, {figure_text(result.trial.figure, why=False)} each), "
        f"{_ceiling_text(result.max_figure, timeout)}"
        f"{_why(figure)}{labels_text(result.trial.price_labels)}"
    )
