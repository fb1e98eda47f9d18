"""Guardrails per stack: the rules of the policy pack in ``policy/``, as plain functions.

Each rule takes a ``PolicyJob`` (one TrainingJob or HyperparameterTuningJob as the engine
shows it to a policy) and its configuration, and returns messages that name the job and the
limit. A tuning job is judged by the custom job its trials run, as many at once as its
``parallelTrialCount``: its GPUs are parallel trials x GPUs per trial (every pool, every
replica), its price per hour that of all its parallel trials, and its SPOT strategy is the
trial spec's. The CrossGuard
glue in ``policy/__main__.py`` only adapts these to ``pulumi_policy``; tests call them
directly. A rule whose setting the configuration leaves out is off (CrossGuard runs every
policy of the pack, handing one the config file does not name an empty configuration):
``spot-required`` and ``quota-fits`` run with ``enabled: true``, the others with their limit
or list. Costs use the catalog's prices; a spot or flex-start price that is not known is
bounded by the on-demand price (neither ever costs more), and a price that is not known at all
fails a cost limit unless the configuration allows unknown prices.

The cost limits need the worst case, so they judge a figure's upper end (``Figure.worst``): a
price, or an "at most" bound (on-demand standing in), passes or fails as that figure, and the
message says which figure it judged (``judged: at most $X/h``). A figure known only from below
("at least", Compute Engine's rate without Vertex's fee) has no worst case: it fails closed,
as an unknown price does. Where a resource's outputs carry its price with their basis (the
plugin's ``costBasis`` and ends, which a stack policy sees: ``PolicyJob.priced``), that figure
is judged by the same rule, and the message names it (``prices: the resource's outputs``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ._errors import SpecError
from .core._placement import Attempt, attempts_of, parse_placement, with_capacity
from .costs._figure import Figure, cost_basis, figure_of_output, figure_text, with_reason
from .costs._pricing import capacity_word, concurrent_trials, estimate, labels_text
from .costs._quota import (
    Need,
    compare,
    job_needs,
    load_quota_metrics,
    read_snapshot,
    trials_needs,
)
from .lifecycle._wire import (
    PLACEMENT,
    TRAINING_JOB_TYPE_SUFFIX,
    TUNING_JOB_TYPE_SUFFIX,
    decode_spec,
)
from .rules._catalog import Catalog, load_catalog, regions_offering
from .rules._spec import JobSpec
from .rules._tuning_spec import TuningJobSpec

__all__ = [
    "AI_CUSTOM_JOB_TYPE",
    "JOB_RULES",
    "PROJECT_DIR",
    "QUOTA_RULE",
    "STACK_COST_RULE",
    "JobRule",
    "PolicyJob",
    "RuleSpec",
    "allowed_accelerators",
    "allowed_regions",
    "evaluate",
    "hourly_cost_bound",
    "job_from_props",
    "max_cost_per_job",
    "max_cost_per_stack",
    "max_gpus_per_job",
    "plugin_defaults",
    "quota_fits",
    "required_labels",
    "spot_required",
]


PROJECT_DIR = Path(__file__).resolve().parents[1]
"""The project directory: where the program records the quotas it read (``quota_fits``)."""


@dataclass(frozen=True)
class PolicyJob:
    """One training job, or one tuning job, as a policy sees it.

    For a tuning job ``spec`` is the custom job one trial runs and ``parallel_trials`` how
    many trials run at once (``components.costs._pricing.concurrent_trials``).
    """

    name: str
    spec: JobSpec
    region: str | None
    parallel_trials: int = 1
    tuning: bool = False
    project: str | None = None
    """The job's project (its ``project`` input), for rules that read the project's quotas."""
    placement: tuple[Attempt, ...] = ()
    """A placed job's attempts (``components.core._placement``): it may run in any of them."""
    priced: Figure | None = None
    """The price per hour the resource's own outputs carry with their basis (the plugin's
    ``hourlyCostUsd``/``costBasis``...: its preview prices a create, live prices where
    readable), or None: the catalog's estimate is judged."""

    @property
    def regions(self) -> list[str | None]:
        """Every region the job may run in (a placed job's candidates)."""
        if self.placement:
            return list(dict.fromkeys(a.region for a in self.placement))
        return [self.region]

    @property
    def title(self) -> str:
        """``job 'x'`` or ``tuning job 'x'``: how messages name it."""
        return f"{'tuning job' if self.tuning else 'job'} {self.name!r}"

    @property
    def trial_gpus(self) -> int:
        """The accelerators of one run of the spec: pools x replicas x count."""
        return sum(
            pool.replicas * pool.machine_spec.accelerator_count
            for pool in self.spec.worker_pool_specs
            if pool.machine_spec and not pool.is_placeholder
        )

    @property
    def gpus(self) -> int:
        """Every accelerator the job holds at once (all parallel trials of a tuning job)."""
        return self.trial_gpus * self.parallel_trials

    @property
    def accelerators(self) -> set[str]:
        return self.spec.accelerator_types


def _plain(value: Any) -> Any:
    """Plain dicts and lists from the read-only proxies ``pulumi_policy`` hands to policies.

    The engine gives a policy ``props`` as ``Mapping``/``Sequence`` proxies, not ``dict`` and
    ``list``. Reading a value unknown at preview through them raises ``UnknownValueError``;
    such a value becomes the engine's unknown sentinel string it carries, as in plain props.
    """
    if isinstance(value, Mapping):
        return {str(key): _plain(_item(value, key)) for key in value}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_plain(_item(value, index)) for index in range(len(value))]
    return value


def _item(container: Any, key: Any) -> Any:
    try:
        return container[key]
    except (KeyError, IndexError):
        return None
    except Exception as exc:
        sentinel = getattr(exc, "unknown_type_sentinel", None)  # pulumi_policy.UnknownValueError
        if isinstance(sentinel, str):
            return sentinel
        raise


AI_CUSTOM_JOB_TYPE = "gcp:vertex/aiCustomJob:AiCustomJob"
"""pulumi-gcp's CustomJob resource: its inputs follow the v1 REST shape, as the provider
plugin's ``TrainingJob``'s do (``displayName``, ``labels``, ``jobSpec.workerPoolSpecs``...,
``project``, ``region``), so the same rules apply to a team on the official resource."""


def _document(props: Mapping[str, Any], tuning: bool) -> Any:
    """The job spec in a resource's inputs: the dynamic resources' ``spec`` (JSON text), else
    the v1 REST shape (the provider plugin's resources, pulumi-gcp's ``AiCustomJob``)."""
    spec = _item(props, "spec")
    if spec is not None:
        return decode_spec(_plain(spec))
    from .plugin._shape import TRAINING, TUNING

    plain = _plain(props)
    if not isinstance(plain, dict):
        return None
    shape = TUNING if tuning else TRAINING
    # A stack policy sees the resource's outputs (``state``, ``hourlyCostUsd``...) beside its
    # inputs: they are not the job's spec.
    return shape.document({k: v for k, v in plain.items() if k not in shape.output_names})


def job_from_props(
    name: str,
    resource_type: str,
    props: Mapping[str, Any],
    defaults: Mapping[str, str] | None = None,
) -> PolicyJob | None:
    """The job behind a resource's inputs, or None when it is neither a TrainingJob nor a
    HyperparameterTuningJob (dynamic, the plugin's, or pulumi-gcp's ``AiCustomJob``), or not
    known yet. ``defaults``: the ``project`` and ``region`` of a job whose inputs set none
    (a plugin resource's provider's, ``plugin_defaults``)."""
    tuning = resource_type.endswith(TUNING_JOB_TYPE_SUFFIX)
    training = resource_type.endswith(TRAINING_JOB_TYPE_SUFFIX) or (
        resource_type == AI_CUSTOM_JOB_TYPE
    )
    if not tuning and not training:
        return None
    document = _document(props, tuning)
    region = _item(props, "region")
    if not isinstance(document, dict):
        return None
    parallel = 1
    try:
        if tuning:
            tuning_spec = TuningJobSpec.parse(document)
            spec = tuning_spec.trial_job()
            parallel = concurrent_trials(tuning_spec)[1]
        else:
            spec = JobSpec.parse(document)
    except (SpecError, ValueError):
        return None  # check() reports malformed specs; policies judge valid ones
    region = region or spec.region or (defaults or {}).get("region")
    project = _item(props, "project") or (defaults or {}).get("project")
    candidates, problems = parse_placement(_declared_placement(props))
    return PolicyJob(
        name,
        spec,
        region if isinstance(region, str) else None,
        parallel,
        tuning,
        project if isinstance(project, str) else None,
        tuple(attempts_of(candidates)) if candidates and not problems else (),
        figure_of_output(*(_item(props, key) for key in _HOURLY_OUTPUTS)),
    )


def _declared_placement(props: Any) -> Any:
    """A job's candidate regions (``candidates_of``), read through the pack's proxies."""
    from .plugin._shape import candidates_of

    plain = {key: _plain(_item(props, key)) for key in (PLACEMENT, "regions", "capacity")}
    return candidates_of({key: value for key, value in plain.items() if value is not None})


_HOURLY_OUTPUTS = ("costBasis", "hourlyCostLowUsd", "hourlyCostHighUsd")
"""The plugin's outputs of a job's price per hour and what it is (``cost_fields``): a stack
policy sees a resource's outputs, a create's as its preview knows them. The dynamic door's
``status`` is priced from the snapshot alone, without the stack's price sheet the pack
applies, so the pack's estimate stands for it."""


def plugin_defaults(
    resource_type: str,
    provider: Any,
    stack_config: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The ``project`` and ``region`` a plugin job takes when its inputs set none, from its
    ``provider`` as ``pulumi_policy`` hands it (``resource_type``, ``name``, ``props``: the
    provider's inputs) or, for a default provider, the stack's configuration (``stack_config``:
    ``gpu-training:region``...), then the environment pulumi-gcp reads (``environ``: the
    pack's, which the engine starts where it runs the plugin; None: none). Nothing for a job
    of another door."""
    from .plugin._shape import NO_ENVIRONMENT, PACKAGE, PROVIDER_TYPE, provider_defaults

    if not resource_type.startswith(f"{PACKAGE}:"):
        return {}
    if provider is not None and getattr(provider, "resource_type", None) != PROVIDER_TYPE:
        return {}
    inputs = _plain(provider.props) if provider is not None else None
    name = getattr(provider, "name", None) if provider is not None else None
    own = inputs if isinstance(inputs, dict) else None
    return provider_defaults(
        name, own, stack_config, NO_ENVIRONMENT if environ is None else environ
    )


def hourly_cost_bound(job: PolicyJob, catalog: Catalog) -> tuple[float | None, str]:
    """The most the job costs per hour, and how that figure was found (spot or on-demand,
    and where its prices came from: ``; prices: derived, unverified``).

    A tuning job's figure is that of all its parallel trials at once; a placed job's that of
    its most expensive attempt (the worst case: it may land there), and how says the expected
    one too (its first attempt the catalog allows: where it lands when that has quota and
    capacity).
    """
    if job.placement:
        bounds: list[tuple[float, Attempt, str]] = []
        offering = set(regions_offering(catalog, job.accelerators))
        for attempt in job.placement:
            if attempt.region not in offering:
                continue  # never tried: check() skips a candidate without the job's GPUs
            spec = JobSpec.parse(with_capacity(job.spec.to_document(), attempt.capacity))
            one = replace(job, spec=spec, region=attempt.region, placement=(), priced=None)
            cost, how = hourly_cost_bound(one, catalog)
            if cost is None:
                return None, f"{attempt.shown}: {how}"
            bounds.append((cost, attempt, how))
        if not bounds:
            return None, "no candidate region offers the job's accelerators"
        worst, where, how = max(bounds, key=lambda bound: bound[0])
        # The expected figure: the first attempt the catalog allows (the pack reads no quota).
        expected, first, _ = bounds[0]
        return worst, (
            f"worst case of {len(job.placement)} attempts, {where.shown}: {how}; expected "
            f"${expected:,.2f}/h, {first.shown}, the first it tries"
        )
    if job.region is None:
        return None, "no region"
    trials = f", {job.parallel_trials} trials at once" if job.tuning else ""
    result = estimate(job.spec, catalog, region=job.region)
    figure = result.figure.times(job.parallel_trials)
    labels, door = labels_text(result.price_labels), ""
    if job.priced is not None and job.priced.kind != "unknown":
        # What the resource says it costs, a bound as a bound: the door's own prices.
        figure = with_reason(job.priced, figure)
        labels = door = f"; prices: the resource's outputs (costBasis {cost_basis(figure)})"
    if figure.worst is not None:
        how = capacity_word(result.billed_as) + trials
        if not figure.is_price:
            how += f"; judged: {figure_text(figure)}"
        return figure.worst, how + labels
    if result.billed_as != "on_demand":
        # Spot and flex-start never cost more than on-demand: its price bounds an unknown one.
        bound = estimate(job.spec, catalog, region=job.region, capacity="on_demand")
        if bound.figure.is_price and bound.usd_per_hour is not None:
            word = capacity_word(result.billed_as)
            how = f"on-demand price as the bound of an unknown {word} price"
            if figure.kind == "at_least":
                how += f" ({figure_text(figure)})"
            return bound.usd_per_hour * job.parallel_trials, how + trials + labels_text(
                bound.price_labels
            )
    if figure.kind == "at_least":
        return None, f"no worst case: {figure_text(figure)}{door}"
    why = ", ".join(result.missing) or "; ".join(figure.why)
    return None, "unknown price: " + why


def _strings(config: Mapping[str, Any], key: str) -> list[str]:
    value = config.get(key) or []
    return [str(v) for v in value]


def allowed_regions(job: PolicyJob, config: Mapping[str, Any], catalog: Catalog) -> list[str]:
    allowed = _strings(config, "allowedRegions")
    if not allowed:
        return []
    outside = [region for region in job.regions if region not in allowed]
    return [f"{job.title} runs in {r}; this stack allows {', '.join(allowed)}" for r in outside]


def allowed_accelerators(job: PolicyJob, config: Mapping[str, Any], catalog: Catalog) -> list[str]:
    if config.get("allowedAccelerators") is None:
        return []  # not set: off (an empty list is a CPU-only stack)
    allowed = set(_strings(config, "allowedAccelerators"))
    return [
        f"{job.title} uses {acc}; this stack allows {', '.join(sorted(allowed)) or 'no accelerators'}"
        for acc in sorted(job.accelerators - allowed)
    ]


def max_gpus_per_job(job: PolicyJob, config: Mapping[str, Any], catalog: Catalog) -> list[str]:
    if config.get("maxGpus") is None:
        return []
    limit = int(config["maxGpus"])
    if job.gpus <= limit:
        return []
    how = f" ({job.parallel_trials} trials at once x {job.trial_gpus})" if job.tuning else ""
    return [f"{job.title} holds {job.gpus} accelerators at once{how}; the limit is {limit}"]


def max_cost_per_job(job: PolicyJob, config: Mapping[str, Any], catalog: Catalog) -> list[str]:
    if config.get("maxUsdPerHour") is None:
        return []
    limit = float(config["maxUsdPerHour"])
    cost, how = hourly_cost_bound(job, catalog)
    if cost is None:
        if config.get("allowUnknownPrices"):
            return []
        return [f"{job.title}: cannot check the ${limit:g}/h limit ({how})"]
    if cost <= limit:
        return []
    return [f"{job.title} costs ${cost:,.2f}/h ({how}); the limit is ${limit:g}/h per job"]


def required_labels(job: PolicyJob, config: Mapping[str, Any], catalog: Catalog) -> list[str]:
    missing = [label for label in _strings(config, "labels") if not job.spec.labels.get(label)]
    if not missing:
        return []
    return [f"{job.title} lacks the label(s) {', '.join(missing)}, required in this stack"]


def spot_required(job: PolicyJob, config: Mapping[str, Any], catalog: Catalog) -> list[str]:
    strategy = job.spec.scheduling.strategy if job.spec.scheduling else None
    if not config.get("enabled") or strategy == "SPOT":
        return []
    if job.tuning:
        return [
            f"{job.title} runs {strategy or 'STANDARD'} trials; "
            "this stack requires trialJobSpec.scheduling.strategy: SPOT"
        ]
    return [
        f"{job.title} runs {strategy or 'STANDARD'}; this stack requires scheduling.strategy: SPOT"
    ]


def max_cost_per_stack(
    jobs: Sequence[PolicyJob], config: Mapping[str, Any], catalog: Catalog
) -> list[str]:
    """A stack-wide limit on the summed hourly cost of every job (tuning jobs: all their
    parallel trials)."""
    if config.get("maxUsdPerHour") is None:
        return []
    limit = float(config["maxUsdPerHour"])
    total = 0.0
    unknown: list[str] = []
    for job in jobs:
        cost, _ = hourly_cost_bound(job, catalog)
        if cost is None:
            unknown.append(job.name)
        else:
            total += cost
    problems = []
    if unknown and not config.get("allowUnknownPrices"):
        problems.append(
            f"cannot check the ${limit:g}/h stack limit: no price for {', '.join(unknown)}"
        )
    if total > limit:
        problems.append(
            f"the stack's jobs cost ${total:,.2f}/h together; the limit is ${limit:g}/h"
        )
    return problems


def quota_fits(
    jobs: Sequence[PolicyJob],
    config: Mapping[str, Any],
    catalog: Catalog,
    *,
    root: Path = PROJECT_DIR,
    now: float | None = None,
) -> list[str]:
    """With ``enabled``: the stack's jobs together fit the Vertex training quotas of their
    project and region, as the last preview read them (``components.costs._quota.SNAPSHOT_DIR``; the
    pack has no Cloud Quotas client). Limits older than ``maxSnapshotAgeMinutes`` (default 60),
    or none recorded, are a violation too: the fit cannot be known."""
    if not config.get("enabled"):
        return []
    max_age = float(config.get("maxSnapshotAgeMinutes", 60)) * 60
    now = time.time() if now is None else now
    metrics = load_quota_metrics()
    groups: dict[tuple[str, str], list[Need]] = {}
    for job in jobs:
        if job.project is None or job.region is None:
            continue
        needs, _ = job_needs(job.name, job.spec, catalog, metrics)
        if job.tuning:  # one trial's needs, times the trials that run at once
            needs = trials_needs(needs, job.parallel_trials)
        groups.setdefault((job.project, job.region), []).extend(needs)
    problems = []
    for (project, region), needs in sorted(groups.items(), key=lambda item: item[0]):
        try:
            limits, age = read_snapshot(root, project, max_age, now)
        except ValueError as exc:
            problems.append(f"cannot check the Vertex training quotas of project {project}: {exc}")
            continue
        report = compare(project, region, needs, limits, catalog)
        problems += [
            f"{message} (limits read {age / 60:.0f} min ago)" for message in report.problems(limits)
        ]
    return problems


JobRule = Callable[[PolicyJob, Mapping[str, Any], Catalog], list[str]]


@dataclass(frozen=True)
class RuleSpec:
    """A job-level rule with the name, description and config schema the pack publishes."""

    name: str
    description: str
    check: JobRule
    config: Mapping[str, Mapping[str, Any]]


JOB_RULES: tuple[RuleSpec, ...] = (
    RuleSpec(
        "allowed-regions",
        "Training and tuning jobs run only in the regions this stack allows.",
        allowed_regions,
        {"allowedRegions": {"type": "array", "items": {"type": "string"}}},
    ),
    RuleSpec(
        "allowed-accelerators",
        "Training and tuning jobs use only the accelerator types this stack allows.",
        allowed_accelerators,
        {"allowedAccelerators": {"type": "array", "items": {"type": "string"}}},
    ),
    RuleSpec(
        "max-gpus-per-job",
        "A training job, or a tuning job's parallel trials together, holds at most this many "
        "accelerators at once.",
        max_gpus_per_job,
        {"maxGpus": {"type": "integer", "minimum": 0}},
    ),
    RuleSpec(
        "max-hourly-cost-per-job",
        "A training job, or a tuning job's parallel trials together, costs at most this many "
        "dollars per hour.",
        max_cost_per_job,
        {
            "maxUsdPerHour": {"type": "number", "minimum": 0},
            "allowUnknownPrices": {"type": "boolean"},
        },
    ),
    RuleSpec(
        "required-labels",
        "Training and tuning jobs carry the labels this stack requires (e.g. team, cost-center).",
        required_labels,
        {"labels": {"type": "array", "items": {"type": "string"}}},
    ),
    RuleSpec(
        "spot-required",
        "With enabled: training jobs, and tuning jobs' trials, in this stack run on SPOT capacity.",
        spot_required,
        {"enabled": {"type": "boolean"}},
    ),
)

QUOTA_RULE = RuleSpec(
    "quota-fits",
    "With enabled: all training and tuning jobs of the stack together fit the project's current "
    "Vertex training quotas (read by the program at preview).",
    lambda job, config, catalog: [],
    {"enabled": {"type": "boolean"}, "maxSnapshotAgeMinutes": {"type": "number", "minimum": 1}},
)

STACK_COST_RULE = RuleSpec(
    "max-hourly-cost-per-stack",
    "All training and tuning jobs of the stack together cost at most this many dollars per hour.",
    lambda job, config, catalog: [],
    {"maxUsdPerHour": {"type": "number", "minimum": 0}, "allowUnknownPrices": {"type": "boolean"}},
)


def evaluate(
    jobs: Iterable[PolicyJob],
    config: Mapping[str, Mapping[str, Any]],
    catalog: Catalog | None = None,
) -> dict[str, list[str]]:
    """Every rule that has a config entry, run over ``jobs``: rule name → messages.

    ``config`` has the shape of a policy config file (rule name → settings); a rule without
    an entry, or with ``enforcementLevel: disabled``, is skipped.
    """
    catalog = catalog or load_catalog()
    jobs = list(jobs)
    results: dict[str, list[str]] = {}
    for rule in JOB_RULES:
        settings = config.get(rule.name)
        if settings is None or settings.get("enforcementLevel") == "disabled":
            continue
        results[rule.name] = [m for job in jobs for m in rule.check(job, settings, catalog)]
    stack = config.get(STACK_COST_RULE.name)
    if stack is not None and stack.get("enforcementLevel") != "disabled":
        results[STACK_COST_RULE.name] = max_cost_per_stack(jobs, stack, catalog)
    quota = config.get(QUOTA_RULE.name)
    if quota is not None and quota.get("enforcementLevel") != "disabled":
        results[QUOTA_RULE.name] = quota_fits(jobs, quota, catalog)
    return results
