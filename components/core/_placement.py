"""Quota- and capacity-aware placement: a job that names candidate regions runs in the first
that takes it.

A job may name an ordered list of candidates (the ``placement`` input; ``regions:`` in a
``training:jobs`` entry, ``regions=`` of ``TrainingJob``), each a region and the capacity kinds
it accepts there, in order: ``on-demand``, ``spot``, ``flex-start``, ``reservation`` (any
reservation) or ``reservation:NAME`` (that one); none named: the spec's own. One attempt per
(region, capacity kind), in that order.

The rules (docs/rules.md, "Placement: candidate regions"):

1. **Preview.** ``check`` validates the spec for every attempt (the spec with the capacity kind
   applied, in the attempt's region): an attempt the validator refuses (the GPU not offered for
   training there, a capacity kind the GPU does not have) is skipped; the job is refused only
   when no attempt is left, naming each. The program adds the quota that fits now and the
   price of each, and says where it will try first and why the others are skipped.
2. **Create.** Every candidate region is searched first for this run's job (the identity label,
   ``components.lifecycle._adoption``): one found is adopted, wherever it was submitted. Otherwise the
   attempts go in order; a quota refusal (429 naming quota metrics) or a capacity refusal
   (``RESOURCE_EXHAUSTED`` at create), or the job failing with "Resources are insufficient in
   region" while ``pulumi up`` waits for it to run, moves the job to the next attempt. A job
   that failed so is cancelled (a no-op for a job that has ended) and its end waited for before
   the next is submitted: two attempts are never active at once, so a kill between two leaves
   at most one job, which the next ``pulumi up`` adopts. No attempt left: the error names each
   and what stopped it.
3. **One run.** The run hash of a placed job covers the candidate list instead of one region
   (``run_region``): every attempt of one run carries the same ``pulumi_run`` label.
4. **Diff.** Changing the candidate list (or the ``region`` it starts with) is an update while
   the job the stack holds runs in a region the new list still names; otherwise a replace.
5. **Outputs.** ``status`` gains ``placed_region``, ``placed_capacity`` and
   ``placement_attempts`` (each attempt: region, capacity, job, what stopped it).

Only ``create`` imports the Vertex client (through ``components.core._jobs``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .._errors import TrainingJobError
from ..costs._figure import Figure, dearest, figure_text
from ..lifecycle._wire import (
    EXISTING_JOB,
    PLACEMENT,
    REGION,
    SPEC,
    STATUS,
    canonical_json,
    contains_unknown,
    decode_spec,
    encode_spec,
    is_unknown,
)
from ..rules._violations import problem_text
from ..vertex.api import capacity_refusal

JobProvider = Any
"""``components.core._jobs.JobCore`` (which imports this module: importing it back, even for
types, would make a cycle)."""
_Run = Any
"""``components.core._jobs._Run`` (as ``JobProvider``)."""

if TYPE_CHECKING:
    from ..costs._quota import QuotaLimits, QuotaMetrics
    from ..lifecycle._check import CheckOutcome, SpecKind
    from ..lifecycle._settings import PlaceSources
    from ..rules._catalog import Catalog
    from ..rules._validation import Target

__all__ = [
    "CAPACITY_KINDS",
    "MAX_ATTEMPTS",
    "PLACEMENT_STATUS_FIELDS",
    "Attempt",
    "Candidate",
    "PlacementFailed",
    "PlacementInputError",
    "attempts_of",
    "check_placed",
    "declared_placement",
    "parse_placement",
    "placed_specs",
    "placement_replaces",
    "preview_lines",
    "priced_attempts",
    "run_region",
    "with_capacity",
    "worst_case",
]

CAPACITY_KINDS = ("on-demand", "spot", "flex-start", "reservation")
"""What a candidate may accept; ``reservation:NAME`` names one reservation."""
_STRATEGY = {"on-demand": None, "spot": "SPOT", "flex-start": "FLEX_START", "reservation": None}
_PRICED_AS = {"on-demand": "on_demand", "spot": "spot", "flex-start": "flex_start"}
MAX_ATTEMPTS = 32
"""Attempts one job may name (regions x capacity kinds): bounded work at preview and create."""
PLACEMENT_STATUS_FIELDS = ("placed_region", "placed_capacity", "placement_attempts")
"""What a placed job's ``status`` adds (rule 5)."""
_RESERVATION_KEY = "compute.googleapis.com/reservation-name"


@dataclass(frozen=True)
class Candidate:
    """One region of the list and the capacity kinds it accepts (empty: the spec's own)."""

    region: str
    capacity: tuple[str, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        return {"region": self.region, "capacity": list(self.capacity)}


@dataclass(frozen=True)
class Attempt:
    """One try: a region and a capacity kind (None: the spec's own)."""

    region: str
    capacity: str | None

    @property
    def shown(self) -> str:
        return f"{self.region} ({self.capacity})" if self.capacity else self.region


def _capacity_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"expected one of {', '.join(CAPACITY_KINDS)} or reservation:NAME, got {value!r}"
    if value in CAPACITY_KINDS:
        return None
    if value.startswith("reservation:") and 0 < len(value) - 12 <= 200:
        return None
    return f"{value[:80]!r} is not one of {', '.join(CAPACITY_KINDS)} or reservation:NAME"


def parse_placement(value: Any) -> tuple[list[Candidate], list[tuple[str, str]]]:
    """The candidates of a ``placement`` input, and the failures (path, reason) found."""
    failures: list[tuple[str, str]] = []
    if not isinstance(value, list | tuple) or not value:
        return [], [(PLACEMENT, "expected a non-empty list of candidate regions")]
    candidates: list[Candidate] = []
    seen: set[str] = set()
    for index, item in enumerate(value):
        where = f"{PLACEMENT}[{index}]"
        if isinstance(item, str):
            item = {"region": item}
        if not isinstance(item, Mapping):
            failures.append((where, "expected a region or {region, capacity}"))
            continue
        unknown = sorted(set(item) - {"region", "capacity"})
        if unknown:
            failures.append((f"{where}.{unknown[0]}", "unknown key (known: capacity, region)"))
        region = item.get("region")
        if not isinstance(region, str) or not region or len(region) > 63:
            failures.append((f"{where}.region", "expected a region name"))
            continue
        if region in seen:
            failures.append((f"{where}.region", f"{region} is named twice"))
        seen.add(region)
        capacity = item.get("capacity") or []
        if isinstance(capacity, str):
            capacity = [capacity]
        if not isinstance(capacity, list | tuple):
            failures.append((f"{where}.capacity", "expected a list of capacity kinds"))
            continue
        for j, kind in enumerate(capacity):
            problem = _capacity_problem(kind)
            if problem:
                failures.append((f"{where}.capacity[{j}]", problem))
        if len(set(capacity)) != len(capacity):
            failures.append((f"{where}.capacity", "names a capacity kind twice"))
        candidates.append(Candidate(region, tuple(str(k) for k in capacity)))
    if sum(max(len(c.capacity), 1) for c in candidates) > MAX_ATTEMPTS:
        failures.append((PLACEMENT, f"names more than {MAX_ATTEMPTS} attempts"))
    return candidates, failures


class PlacementInputError(TrainingJobError, ValueError):
    """Candidate ``regions`` or ``capacity`` that cannot be read: the first bad field's
    ``path`` (``regions[1].capacity[0]``) and what is wrong with it (``reason``); the message
    is ``path: reason``."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def declared_placement(regions: Any, capacity: Any = None) -> list[dict[str, Any]]:
    """The ``placement`` input of a job that names ``regions`` (each a region, or ``{region,
    capacity}``) and ``capacity`` (the kinds every region without its own accepts).

    Raises ``PlacementInputError`` naming the first bad field (``regions[1].capacity[0]``).
    """
    if capacity is not None and not isinstance(capacity, list | tuple | str):
        raise PlacementInputError("capacity", "expected a list of capacity kinds")
    overall = [capacity] if isinstance(capacity, str) else list(capacity or [])
    for index, kind in enumerate(overall):
        problem = _capacity_problem(kind)
        if problem:
            raise PlacementInputError(f"capacity[{index}]", problem)
    if not isinstance(regions, list | tuple):
        raise PlacementInputError("regions", "expected a list of regions")
    items = [
        {"region": item, "capacity": overall}
        if isinstance(item, str)
        else (
            {**item, "capacity": item.get("capacity") or overall}
            if isinstance(item, Mapping)
            else item
        )
        for item in regions
    ]
    candidates, failures = parse_placement(items)
    if failures:
        path, reason = failures[0]
        raise PlacementInputError(path.replace(PLACEMENT, "regions", 1), reason)
    return [c.to_wire() for c in candidates]


def attempts_of(candidates: Sequence[Candidate]) -> list[Attempt]:
    """Every attempt, in order: each region's capacity kinds in turn."""
    return [Attempt(c.region, capacity) for c in candidates for capacity in (c.capacity or (None,))]


def run_region(region: str, placement: Any) -> str:
    """What the run hash covers in place of the region: the region, or for a placed job its
    whole candidate list (so every attempt of one run carries the same run label)."""
    if not placement:
        return region
    candidates, _ = parse_placement(placement)
    return "placement:" + canonical_json([c.to_wire() for c in candidates])


def with_capacity(
    document: Mapping[str, Any], capacity: str | None, *, under: str | None = None
) -> dict[str, Any]:
    """``document`` (a job spec) as submitted for ``capacity``: its scheduling strategy and,
    for a reservation, every pool's reservation affinity set. ``under``: the field holding the
    worker pools (a tuning job's ``trialJobSpec``)."""
    result = decode_spec(encode_spec(document))  # a deep copy of JSON-shaped data
    if capacity is None:
        return dict(result)
    job = result.setdefault(under, {}) if under else result
    scheduling = dict(job.get("scheduling") or {})
    strategy = _STRATEGY.get(capacity.split(":", 1)[0])
    if strategy:
        scheduling["strategy"] = strategy
    else:
        scheduling.pop("strategy", None)
        scheduling.pop("maxWaitDuration", None)
    if scheduling:
        job["scheduling"] = scheduling
    else:
        job.pop("scheduling", None)
    if capacity.startswith("reservation"):
        name = capacity.split(":", 1)[1] if ":" in capacity else None
        affinity = (
            {
                "reservationAffinityType": "SPECIFIC_RESERVATION",
                "key": _RESERVATION_KEY,
                "values": [name],
            }
            if name
            else {"reservationAffinityType": "ANY_RESERVATION"}
        )
        for pool in job.get("workerPoolSpecs") or []:
            if isinstance(pool, dict) and isinstance(pool.get("machineSpec"), dict):
                pool["machineSpec"]["reservationAffinity"] = dict(affinity)
    return dict(result)


def priced_as(capacity: str | None) -> str | None:
    """``components.costs._pricing``'s capacity for a capacity kind (None: the spec's own; a
    reservation is priced as on-demand, the most it can cost)."""
    if capacity is None:
        return None
    return _PRICED_AS.get(capacity.split(":", 1)[0], "on_demand")


# -- errors Vertex answers ---------------------------------------------------------------------


# -- check and diff ----------------------------------------------------------------------------


def check_placed(
    news: Mapping[str, Any],
    *,
    target: Target,
    kind: SpecKind[Any],
    place: PlaceSources | None = None,
) -> tuple[CheckOutcome, list[Attempt]]:
    """``check_inputs`` for a job with a ``placement``: the spec validated for each attempt.

    An attempt the validator refuses is skipped (and said at preview); the job fails only when
    none is left (``placement`` names each attempt and its first problem). Returns the outcome
    and the attempts that pass.
    """
    from ..lifecycle._check import Failure, check_inputs
    from ..lifecycle._settings import DYNAMIC_DOOR

    where = place or DYNAMIC_DOOR.place

    candidates, failures = parse_placement(news.get(PLACEMENT))
    if isinstance(news.get(EXISTING_JOB), str):
        failures.append(
            (EXISTING_JOB, "a job taken over runs where it is: remove the candidate regions")
        )
    if failures or contains_unknown(news.get(PLACEMENT)):
        outcome = check_inputs(news, target=target, kind=kind, place=where)
        outcome.failures += [Failure(path, reason) for path, reason in failures]
        return outcome, []
    declared = news.get(REGION)
    spec = decode_spec(news.get(SPEC))
    fine: list[Attempt] = []
    refused: list[str] = []
    for attempt in attempts_of(candidates):
        trial = dict(news, **{REGION: attempt.region})
        if isinstance(spec, Mapping) and not contains_unknown(spec):
            trial[SPEC] = with_capacity(spec, attempt.capacity, under=kind.pools_under)
        found = check_inputs(trial, target=target, kind=kind, place=where).failures
        if found:
            problem = found[0]
            said = problem_text(problem.reason, problem.suggestion, path=problem.path)
            refused.append(f"{attempt.shown}: {said}")
        else:
            fine.append(attempt)
    first = fine[0].region if fine else candidates[0].region
    outcome = check_inputs(dict(news, **{REGION: first}), target=target, kind=kind, place=where)
    outcome.inputs[REGION] = declared
    outcome.inputs[PLACEMENT] = [c.to_wire() for c in candidates]
    if not fine:
        outcome.failures.append(
            Failure(PLACEMENT, "no candidate can run this job: " + "; ".join(refused))
        )
    return outcome, fine


def _held_region(olds: Mapping[str, Any]) -> str | None:
    status = olds.get(STATUS)
    name = status.get("job_name") if isinstance(status, Mapping) else None
    if not isinstance(name, str):
        return None
    parts = name.split("/")
    return parts[3] if len(parts) >= 6 and parts[2] == "locations" else None


def _regions(value: Any) -> list[str]:
    candidates, _ = parse_placement(value)
    return [c.region for c in candidates]


def placement_replaces(
    olds: Mapping[str, Any], news: Mapping[str, Any], replaces: list[str]
) -> list[str]:
    """``diff``'s replaces with the placement rule: a new candidate list (and the region it
    starts with) is no replace while the job the stack holds runs in a region it names."""
    new = news.get(PLACEMENT)
    old = olds.get(PLACEMENT)
    if not new and not old:
        return replaces
    if not new or is_unknown(new) or contains_unknown(new):
        # Back to one region: the rules of one region (the region must be the job's).
        held = _held_region(olds)
        if REGION not in replaces and held and news.get(REGION) != held:
            return [*replaces, REGION]
        return [*replaces, PLACEMENT] if old and new else replaces
    held = _held_region(olds)
    kept = [k for k in replaces if k != REGION]
    if held is None or held not in _regions(new):
        return [*kept, PLACEMENT] if _regions(new) != _regions(old) or REGION in replaces else kept
    return kept


# -- preview -----------------------------------------------------------------------------------


def preview_lines(
    job: str,
    spec: Any,
    attempts: Sequence[Attempt],
    skipped: Sequence[str],
    catalog: Catalog,
    metrics: QuotaMetrics,
    limits: QuotaLimits | None,
    *,
    under: str | None,
) -> tuple[list[str], bool]:
    """The preview's account of a placed job: each attempt's quota that fits now and price,
    where it will try first and why others are skipped. (lines, whether any attempt fits)."""
    from ..costs._quota import job_needs, shortfalls_in

    first: Attempt | None = None
    lines: list[str] = []
    expected = Figure(None, None)
    priced = priced_attempts(spec, attempts, catalog, under=under)
    for attempt, placed, price in priced:
        shown = "price unknown" if price.kind == "unknown" else figure_text(price, why=False)
        needs, _ = job_needs(job, placed, catalog, metrics)
        short = shortfalls_in(needs, limits, attempt.region) if limits is not None else []
        if short:
            lines.append(f"  skip {attempt.shown}: quota {'; '.join(short)} ({shown})")
            continue
        fits = "quota fits now" if limits is not None else "quota not read"
        if first is None:
            first = attempt
            expected = price
            lines.append(f"  try first {attempt.shown}: {fits}, {shown}")
        else:
            lines.append(f"  then {attempt.shown}: {fits}, {shown}")
    lines += [f"  skip {reason}" for reason in skipped]
    worst = worst_case(priced)
    head = f"placement of {job}: " + (
        f"tries {first.shown} first" if first else "no candidate fits the quota now"
    )
    head += f"; expected {_usd(expected)}, worst case {_usd(worst)}"
    return [head, *lines], first is not None


def placed_specs(
    spec: Any, attempts: Sequence[Attempt], *, under: str | None
) -> list[tuple[Attempt, Any]]:
    """Each attempt with its spec as submitted there (the capacity kind applied)."""
    model = type(spec)
    return [
        (attempt, model.parse(with_capacity(spec.to_document(), attempt.capacity, under=under)))
        for attempt in attempts
    ]


def priced_attempts(
    spec: Any, attempts: Sequence[Attempt], catalog: Catalog, *, under: str | None
) -> list[tuple[Attempt, Any, Figure]]:
    """Each attempt with its spec (the capacity kind applied) and its price per hour as what it
    is known as (a tuning job: every parallel trial at once; a bound stays a bound, ``_figure``)."""
    return [
        (attempt, placed, _hourly(placed, attempt, catalog))
        for attempt, placed in placed_specs(spec, attempts, under=under)
    ]


def worst_case(priced: Sequence[tuple[Attempt, Any, Figure]]) -> Figure:
    """The most expensive attempt's price: what the job costs wherever it lands (``dearest``:
    an attempt known only as at least, or unknown, leaves no upper end)."""
    return dearest([price for _, _, price in priced])


def _usd(value: Figure) -> str:
    return "unknown" if value.kind == "unknown" else figure_text(value, why=False)


def _hourly(spec: Any, attempt: Attempt, catalog: Catalog) -> Figure:
    from ..costs._pricing import estimate, estimate_tuning
    from ..rules._tuning_spec import TuningJobSpec

    capacity = priced_as(attempt.capacity)
    try:
        if isinstance(spec, TuningJobSpec):
            return estimate_tuning(spec, catalog, region=attempt.region, capacity=capacity).figure
        return estimate(spec, catalog, region=attempt.region, capacity=capacity).figure
    except ValueError:
        return Figure(None, None)


# -- create ------------------------------------------------------------------------------------


class PlacementFailed(TrainingJobError, RuntimeError):
    """No attempt took the job; the message names each and what stopped it."""


@dataclass
class _Record:
    attempt: Attempt
    job_name: str | None
    stopped_by: str | None

    def to_output(self) -> dict[str, Any]:
        return {
            "region": self.attempt.region,
            "capacity": self.attempt.capacity or "as in the spec",
            "job_name": self.job_name,
            "stopped_by": self.stopped_by,
        }


def place(provider: JobProvider, run: _Run, inputs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Create a placed job: adopt this run's job wherever it was submitted, else try each
    attempt in turn (module docstring). Returns (the job, the ``status`` fields of the
    placement and of the job's price)."""
    from ..lifecycle._adoption import record_adopted

    attempts = attempts_of(parse_placement(run.placement)[0])
    records: list[_Record] = []
    found = _adoptable(provider, run, attempts)
    start = 0
    if found is not None:
        attempt, job = found
        record_adopted(str(job.name), run.resource)
        start = attempts.index(attempt)
    for index in range(start, len(attempts)):
        attempt = attempts[index]
        here = replace(
            run,
            region=attempt.region,
            document=with_capacity(
                run.document, attempt.capacity, under=provider.kind.spec.pools_under
            ),
        )
        adopted = found is not None and index == start
        job, stopped_by = _try(provider, here, inputs, found[1] if adopted and found else None)
        if stopped_by is not None:  # kept in the state: without credentials or env values
            stopped_by = provider._scrubber(run.secrets)(stopped_by)
        records.append(_Record(attempt, str(job.name) if job is not None else None, stopped_by))
        if stopped_by is None and job is not None:
            provider.write_placement(run, f"placed in {attempt.shown}: job {job.name}")
            return job, {
                "adopted": adopted,
                "placed_region": attempt.region,
                "placed_capacity": attempt.capacity or "as in the spec",
                "placement_attempts": [r.to_output() for r in records],
                **provider.costs(here.document, attempt.region, run.project),
            }
        provider.write_placement(run, f"{attempt.shown}: {stopped_by}; trying the next candidate")
    raise PlacementFailed(
        "no candidate region took the job: "
        + "; ".join(f"{r.attempt.shown}: {r.stopped_by}" for r in records)
    )


def _adoptable(
    provider: JobProvider, run: _Run, attempts: Sequence[Attempt]
) -> tuple[Attempt, Any] | None:
    """This run's job in any candidate region (the newest), and the attempt it was."""
    best: tuple[Attempt, Any] | None = None
    for region in dict.fromkeys(a.region for a in attempts):
        parent = f"projects/{run.project}/locations/{region}"
        with provider._job_api(region) as api:
            found = api.retried(
                f"looking for this run's job in {parent}",
                lambda api=api, parent=parent: api.look_up(parent, run.labels),
            )
        job = found.adoptable
        if job is None:
            continue
        attempt = _attempt_of(job, region, attempts)
        if best is None or _created(job) > _created(best[1]):
            best = (attempt, job)
    return best


def _attempt_of(job: Any, region: str, attempts: Sequence[Attempt]) -> Attempt:
    """The attempt a job was submitted as: its region, and the capacity its spec shows."""
    mine = [a for a in attempts if a.region == region]
    strategy = _job_strategy(job)
    reserved = _job_reserved(job)
    for attempt in mine:
        kind = (attempt.capacity or "").split(":", 1)[0]
        if attempt.capacity is None or (
            _STRATEGY.get(kind) == strategy and (kind == "reservation") == reserved
        ):
            return attempt
    return mine[0]


def _job_spec(job: Any) -> Any:
    return getattr(job, "job_spec", None) or getattr(job, "trial_job_spec", None)


def _job_strategy(job: Any) -> str | None:
    spec = _job_spec(job)
    try:
        name = str(spec.scheduling.strategy.name)
    except AttributeError:
        return None
    return name if name in ("SPOT", "FLEX_START") else None


def _job_reserved(job: Any) -> bool:
    spec = _job_spec(job)
    try:
        pools = list(spec.worker_pool_specs)
    except AttributeError:
        return False
    return any(
        p.machine_spec.reservation_affinity.reservation_affinity_type not in (0, None)
        for p in pools
    )


def _created(job: Any) -> float:
    stamp = getattr(job, "create_time", None)
    try:
        return float(stamp.timestamp()) if stamp is not None else 0.0
    except (AttributeError, ValueError, OverflowError):
        return 0.0


def _try(
    provider: JobProvider, run: _Run, inputs: dict[str, Any], adopted: Any | None
) -> tuple[Any | None, str | None]:
    """One attempt: (the job, None) when it took the job, else (the job or None, what
    stopped it). A job that failed for capacity is cancelled and its end waited for."""
    from ..vertex.api import CapacityLost, quota_refusal

    with provider._job_api(run.region) as api:
        if adopted is None:
            try:
                submission = provider._submit(api, run, provider._output_directory(api, run))
            except Exception as exc:
                metrics = quota_refusal(exc)
                if metrics:
                    short = ", ".join(m.rsplit("/", 1)[-1] for m in metrics)
                    return None, f"quota refused ({short}; 429 RESOURCE_EXHAUSTED)"
                if capacity_refusal(exc):
                    return None, f"no capacity at create ({str(exc).splitlines()[0][:200]})"
                raise
            job = submission.job
            provider._report_strays(run, submission.strays)
        else:
            job = adopted
        try:
            return provider._wait(api, run, job, inputs, capacity_failover=True), None
        except CapacityLost as lost:
            why = f"no capacity: job {job.name} ended: {lost.message[:300]}"
            provider._stop_attempt(api, run, str(job.name))
            return lost.job, why
