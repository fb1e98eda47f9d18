"""Validation of a hyperparameter tuning job spec, before any API call.

``validate_tuning`` returns every violation it finds and never raises. The study's rules come
from ``study.proto`` and ``hyperparameter_tuning_job.proto`` (v1); the trial's job is checked
by ``components.rules._validation.validate``, with every CustomJob rule, its paths under
``trialJobSpec.`` (the tuning job's labels, display name, project, region and encryption key
keep their own paths). Each rule is listed in ``catalog/README.md``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import SpecError
from ._catalog import Catalog, load_catalog
from ._tuning_spec import (
    ALGORITHMS,
    GOALS,
    MEASUREMENT_SELECTION_TYPES,
    OBSERVATION_NOISES,
    SCALE_TYPES,
    CategoricalValueSpec,
    ConditionalParameterSpec,
    DiscreteValueSpec,
    DoubleValueSpec,
    IntegerValueSpec,
    MetricSpec,
    ParameterSpec,
    StudySpec,
    StudyTimeConstraint,
    TuningJobSpec,
)
from ._validation import Target, guarded, validate
from ._violations import (
    Rule,
    Severity,
    Violation,
    clipped,
    did_you_mean,
    did_you_mean_one_of,
)

__all__ = [
    "DISCRETE_EPSILON",
    "MAX_DISCRETE_VALUES",
    "MAX_TRIALS",
    "validate_tuning",
    "validate_tuning_document",
]

DISCRETE_EPSILON = 1e-10
"""How far apart discrete values must be, and how close a condition's value matches one."""
MAX_DISCRETE_VALUES = 1000
MAX_TRIALS = 1000
"""Trials in one study (components/catalog/README.md, rule ``trials``: Vizier's quota page)."""

_LOG_SCALES = ("UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE")
_FLAG_CHARS = re.compile(r"[^A-Za-z0-9_-]+")
# (attribute, camelCase name, the parameter type it makes)
_VALUE_SPECS = (
    ("double_value_spec", "doubleValueSpec", "DOUBLE"),
    ("integer_value_spec", "integerValueSpec", "INTEGER"),
    ("categorical_value_spec", "categoricalValueSpec", "CATEGORICAL"),
    ("discrete_value_spec", "discreteValueSpec", "DISCRETE"),
)
# The condition that matches a parent of each type (a DOUBLE parameter is never a parent).
_CONDITIONS = {
    "DISCRETE": ("parent_discrete_values", "parentDiscreteValues"),
    "INTEGER": ("parent_int_values", "parentIntValues"),
    "CATEGORICAL": ("parent_categorical_values", "parentCategoricalValues"),
}
_STOPPING_SPECS = (
    ("decay_curve_stopping_spec", "decayCurveStoppingSpec"),
    ("median_automated_stopping_spec", "medianAutomatedStoppingSpec"),
    ("convex_automated_stopping_spec", "convexAutomatedStoppingSpec"),
)
# Fields the trial's job takes from the tuning job: their violations keep their own paths.
_JOB_LEVEL = frozenset({"project", "region", "displayName", "labels", "encryptionSpec", "(spec)"})
_SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh", "ksh", "mksh", "busybox"})
_READS_ARGS = re.compile(r"\$@|\$\*|\$\{[@*1-9]|\$[1-9]")


@dataclass(frozen=True, slots=True)
class _Study:
    grid: bool
    top_ids: frozenset[str]


def validate_tuning(
    spec: TuningJobSpec,
    *,
    region: str | None = None,
    target: Target = "vertex",
    catalog: Catalog | None = None,
    base: Path | None = None,
) -> list[Violation]:
    """Every violation in ``spec``; an empty list means Vertex AI should accept it.

    ``region`` overrides ``spec.region``; with neither, region rules are skipped.
    ``target="local"`` also accepts local paths where Vertex needs ``gs://`` URIs; relative
    ones are looked for under ``base`` (the spec file's directory; default the current one).
    """
    return guarded(
        lambda: _tuning_violations(
            spec, catalog or load_catalog(), region or spec.region, target, base
        )
    )


def validate_tuning_document(
    data: Any,
    *,
    region: str | None = None,
    target: Target = "vertex",
    catalog: Catalog | None = None,
) -> list[Violation]:
    """Parse raw data (a tuning job document) and validate it; never raises."""
    try:
        spec = TuningJobSpec.parse(data)
    except SpecError as exc:
        return list(getattr(exc, "violations", ())) or [
            Violation("(document)", str(exc), rule="schema")
        ]
    except Exception as exc:
        return [
            Violation("(document)", f"cannot be read as a tuning job spec: {exc}", rule="schema")
        ]
    return validate_tuning(spec, region=region, target=target, catalog=catalog)


def _tuning_violations(
    spec: TuningJobSpec, catalog: Catalog, region: str | None, target: Target, base: Path | None
) -> Iterator[Violation]:
    yield from _metrics(spec.study_spec.metrics)
    yield from _parameters(spec.study_spec)
    yield from _study(spec.study_spec)
    yield from _trial_counts(spec)
    trial = spec.trial_job()
    for violation in validate(trial, catalog=catalog, region=region, target=target, base=base):
        top = re.split(r"[.\[]", violation.path, maxsplit=1)[0]
        yield (
            violation
            if top in _JOB_LEVEL
            else dataclasses.replace(violation, path=f"trialJobSpec.{violation.path}")
        )
    yield from _trial_args(spec)


def _error(path: str, reason: str, suggestion: str | None, rule: Rule) -> Violation:
    return Violation(path, reason, suggestion, rule=rule)


def _warning(path: str, reason: str, suggestion: str | None, rule: Rule) -> Violation:
    severity: Severity = "warning"
    return Violation(path, reason, suggestion, rule=rule, severity=severity)


def _unknown(path: str, what: str, value: str, allowed: Sequence[str], rule: Rule) -> Violation:
    """An unknown enum name: the nearest names, else those that contain it (``LOG``)."""
    key = value.upper().replace("-", "_")
    if "BAYES" in key and "ALGORITHM_UNSPECIFIED" in allowed:
        bayesian = "leave it out: the default (ALGORITHM_UNSPECIFIED) is Bayesian optimisation"
        return _error(path, f"unknown {what} {clipped(value)!r}", bayesian, rule)
    containing = [name for name in allowed if key and key in name]
    suggestion = did_you_mean(
        value,
        allowed,
        otherwise=did_you_mean_one_of(containing, otherwise=f"one of {', '.join(allowed)}"),
    )
    return _error(path, f"unknown {what} {clipped(value)!r}", suggestion, rule)


def _num(value: float) -> str:
    return str(value)


def _listing(values: Sequence[Any], limit: int = 6) -> str:
    shown = ", ".join(str(v) for v in values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


# --- metrics ----------------------------------------------------------------------------


def _metrics(metrics: list[MetricSpec]) -> Iterator[Violation]:
    if not metrics:
        yield _error(
            "studySpec.metrics",
            "is required: the metric each trial reports and the study optimises",
            "e.g. metrics: [{metricId: accuracy, goal: MAXIMIZE}]",
            "metrics",
        )
        return
    seen: dict[str, int] = {}
    for index, metric in enumerate(metrics):
        path = f"studySpec.metrics[{index}]"
        metric_id = metric.metric_id
        if not metric_id:
            yield _error(
                f"{path}.metricId",
                "is required",
                "the tag the trainer reports its value under, e.g. accuracy",
                "metrics",
            )
        elif any(c.isspace() for c in metric_id):
            yield _error(
                f"{path}.metricId",
                f"{metric_id!r} contains whitespace, which Vertex AI refuses in a metric id",
                f"e.g. {'_'.join(metric_id.split())!r}",
                "metrics",
            )
        elif metric_id in seen:
            yield _error(
                f"{path}.metricId",
                f"{metric_id!r} is already studySpec.metrics[{seen[metric_id]}]",
                "give each metric its own metricId",
                "metrics",
            )
        else:
            seen[metric_id] = index
        yield from _metric_goal(path, metric)
    if all(metric.safety_config is not None for metric in metrics):
        yield _error(
            "studySpec.metrics",
            "every metric is a safety metric (safetyConfig): there is no objective to optimise",
            "add a metric without safetyConfig for the study to optimise",
            "metrics",
        )


def _metric_goal(path: str, metric: MetricSpec) -> Iterator[Violation]:
    if metric.goal is None:
        yield _error(f"{path}.goal", "is required", "MAXIMIZE or MINIMIZE", "metrics")
    elif metric.goal not in GOALS:
        yield _unknown(f"{path}.goal", "goal", metric.goal, GOALS, "metrics")
    safety = metric.safety_config
    fraction = safety.desired_min_safe_trials_fraction if safety else None
    if fraction is not None and not 0 <= fraction <= 1:
        yield _error(
            f"{path}.safetyConfig.desiredMinSafeTrialsFraction",
            f"is a fraction of the trials, between 0 and 1, not {_num(fraction)}",
            "e.g. 0.8: at least 80% of the trials should be safe",
            "metrics",
        )


# --- parameters -------------------------------------------------------------------------


def _parameters(study: StudySpec) -> Iterator[Violation]:
    parameters = study.parameters
    if not parameters:
        yield _error(
            "studySpec.parameters",
            "is required: the hyperparameters to tune",
            "e.g. parameters: [{parameterId: learning_rate, doubleValueSpec: "
            "{minValue: 0.0001, maxValue: 0.1}, scaleType: UNIT_LOG_SCALE}]",
            "parameters",
        )
        return
    ctx = _Study(
        grid=study.algorithm == "GRID_SEARCH",
        top_ids=frozenset(p.parameter_id for p in parameters if p.parameter_id),
    )
    seen: dict[str, int] = {}
    for index, parameter in enumerate(parameters):
        path = f"studySpec.parameters[{index}]"
        pid = parameter.parameter_id
        if pid and pid in seen:
            yield _error(
                f"{path}.parameterId",
                f"{pid!r} is already studySpec.parameters[{seen[pid]}]",
                "give each parameter its own parameterId",
                "parameters",
            )
        elif pid:
            seen[pid] = index
        yield from _parameter(path, parameter, ctx)


def _parameter(path: str, parameter: ParameterSpec, ctx: _Study) -> Iterator[Violation]:
    yield from _parameter_id(path, parameter.parameter_id)
    specs = [(a, name, kind) for a, name, kind in _VALUE_SPECS if getattr(parameter, a) is not None]
    kind = specs[0][2] if len(specs) == 1 else None
    if not specs:
        yield _error(
            path,
            "has no value spec: the values to try",
            "one of doubleValueSpec, integerValueSpec, categoricalValueSpec or discreteValueSpec",
            "parameters",
        )
    elif len(specs) > 1:
        names = [name for _, name, _ in specs]
        yield _error(
            path,
            f"has {len(specs)} value specs ({', '.join(names)}); a parameter has exactly one",
            f"keep one of {' or '.join(names)}",
            "parameters",
        )
    else:
        attribute, name, _ = specs[0]
        value_spec = getattr(parameter, attribute)
        yield from _value_spec(f"{path}.{name}", value_spec, parameter.scale_type)
        if kind == "DOUBLE" and ctx.grid:
            yield _grid_double(f"{path}.{name}", value_spec, parameter.scale_type)
    yield from _scale_type(path, parameter.scale_type, kind)
    yield from _conditionals(path, parameter, kind, ctx)


def _parameter_id(path: str, pid: str | None) -> Iterator[Violation]:
    path = f"{path}.parameterId"
    safe = _FLAG_CHARS.sub("_", pid or "").strip("_-") or "learning_rate"
    if not pid:
        yield _error(
            path, "is required", "the name the trainer reads as --<id>=<value>", "parameters"
        )
    elif any(c.isspace() for c in pid):
        yield _error(
            path,
            f"{pid!r} contains whitespace, which Vertex AI refuses in a parameter id",
            f"e.g. {safe!r}",
            "parameters",
        )
    elif "=" in pid or pid.startswith("-"):
        yield _error(
            path,
            f"each trial passes it to the trainer as --{pid}=VALUE, which a flag parser "
            f"cannot read back as {pid!r}",
            f"letters, digits, '_' and '-', e.g. {safe!r}",
            "parameters",
        )
    elif _FLAG_CHARS.search(pid):
        yield _warning(
            path,
            f"each trial passes it to the trainer as --{pid}=VALUE; flag names are usually "
            "letters, digits, '_' and '-'",
            f"e.g. {safe!r}, if the trainer's flag parser does not take {pid!r}",
            "parameters",
        )


def _value_spec(path: str, spec: Any, scale: str | None) -> Iterator[Violation]:
    log = scale in _LOG_SCALES
    if isinstance(spec, DoubleValueSpec | IntegerValueSpec):
        yield from _bounds(path, spec, scale if log else None)
    elif isinstance(spec, DiscreteValueSpec):
        yield from _discrete(path, spec, scale if log else None)
    elif isinstance(spec, CategoricalValueSpec):
        yield from _categorical(path, spec)
    if spec.default_value is not None:
        yield _warning(
            f"{path}.defaultValue",
            "is supported by Vertex AI Vizier only, not by hyperparameter tuning jobs",
            "remove defaultValue",
            "parameters",
        )


def _bounds(
    path: str, spec: DoubleValueSpec | IntegerValueSpec, log: str | None
) -> Iterator[Violation]:
    low, high = spec.min_value, spec.max_value
    for value, name, what in ((low, "minValue", "smallest"), (high, "maxValue", "largest")):
        if value is None:
            yield _error(
                f"{path}.{name}",
                "is required",
                f"the {what} value to try (inclusive)",
                "parameters",
            )
    if low is not None and high is not None and low > high:
        yield _error(
            f"{path}.minValue",
            f"{_num(low)} is above maxValue {_num(high)}",
            "swap minValue and maxValue",
            "parameters",
        )
    elif low is not None and low == high:
        yield _warning(
            path,
            f"minValue and maxValue are both {_num(low)}: every trial gets that value",
            "widen the range, or pass the value as a fixed trainer argument",
            "parameters",
        )
    if log and low is not None and low <= 0:
        instead = "1" if isinstance(spec, IntegerValueSpec) else _num((high or 1) / 1000)
        yield _error(
            f"{path}.minValue",
            f"{log} needs values above 0; minValue is {_num(low)}",
            f"set minValue above 0 (e.g. {instead}) or use scaleType UNIT_LINEAR_SCALE",
            "parameters",
        )
    default = spec.default_value
    if default is not None and low is not None and high is not None and not low <= default <= high:
        yield _error(
            f"{path}.defaultValue",
            f"{_num(default)} is outside minValue {_num(low)} to maxValue {_num(high)}",
            "a default inside the range, or none",
            "parameters",
        )


def _discrete(path: str, spec: DiscreteValueSpec, log: str | None) -> Iterator[Violation]:
    values = spec.values
    fixed = sorted({round(v, 12) for v in values})
    if not values:
        yield _error(
            f"{path}.values", "needs at least one value", "e.g. values: [16, 32, 64]", "parameters"
        )
    elif len(values) > MAX_DISCRETE_VALUES:
        yield _error(
            f"{path}.values",
            f"has {len(values)} values; at most {MAX_DISCRETE_VALUES}",
            "use integerValueSpec or doubleValueSpec for a range this fine",
            "parameters",
        )
    for index in range(1, len(values)):
        if values[index] - values[index - 1] < DISCRETE_EPSILON:
            repeat = abs(values[index] - values[index - 1]) < DISCRETE_EPSILON
            yield _error(
                f"{path}.values[{index}]",
                f"{_num(values[index])} repeats values[{index - 1}]"
                if repeat
                else f"{_num(values[index])} comes after the larger {_num(values[index - 1])}: "
                "the values must be increasing",
                f"values: [{_listing([_num(v) for v in fixed], 12)}]",
                "parameters",
            )
            break
    bad = next((i for i, v in enumerate(values) if v <= 0), None)
    if log and bad is not None:
        yield _error(
            f"{path}.values[{bad}]",
            f"{log} needs values above 0, not {_num(values[bad])}",
            "remove the values at or below 0, or use scaleType UNIT_LINEAR_SCALE",
            "parameters",
        )
    default = spec.default_value
    if values and default is not None and not min(values) <= default <= max(values):
        yield _error(
            f"{path}.defaultValue",
            f"{_num(default)} is outside the values ({_num(min(values))} to {_num(max(values))})",
            "one of the values, or none",
            "parameters",
        )


def _categorical(path: str, spec: CategoricalValueSpec) -> Iterator[Violation]:
    values = spec.values
    if not values:
        yield _error(
            f"{path}.values", "needs at least one value", "e.g. values: [adam, sgd]", "parameters"
        )
    seen: dict[str, int] = {}
    for index, value in enumerate(values):
        if value in seen:
            yield _error(
                f"{path}.values[{index}]",
                f"{value!r} is already values[{seen[value]}]",
                "list each value once",
                "parameters",
            )
        seen.setdefault(value, index)
    if spec.default_value is not None and values and spec.default_value not in seen:
        yield _error(
            f"{path}.defaultValue",
            f"{spec.default_value!r} is not one of the values",
            did_you_mean(spec.default_value, values, otherwise=f"one of {_listing(values)}"),
            "parameters",
        )


def _scale_type(path: str, scale: str | None, kind: str | None) -> Iterator[Violation]:
    if scale is None:
        return
    if scale not in SCALE_TYPES:
        yield _unknown(f"{path}.scaleType", "scale type", scale, SCALE_TYPES, "parameters")
    elif kind == "CATEGORICAL":
        yield _error(
            f"{path}.scaleType",
            "a CATEGORICAL parameter has no scale",
            "remove scaleType",
            "parameters",
        )


def _grid_double(path: str, spec: DoubleValueSpec, scale: str | None) -> Violation:
    """GRID_SEARCH takes INTEGER, CATEGORICAL and DISCRETE parameters (``StudySpec.Algorithm``)."""
    low, high = spec.min_value, spec.max_value
    points: list[str] = []
    if low is not None and high is not None and low < high:
        geometric = scale in _LOG_SCALES and low > 0
        grid = [
            low * (high / low) ** (k / 4) if geometric else low + (high - low) * k / 4
            for k in range(5)
        ]
        points = list(dict.fromkeys(f"{v:.3g}" for v in grid))
    values = f" {{values: [{', '.join(points)}]}}" if len(points) > 1 else ""
    return _error(
        path,
        "GRID_SEARCH searches INTEGER, CATEGORICAL and DISCRETE parameters only; this one is DOUBLE",
        f"replace doubleValueSpec with discreteValueSpec{values}, or use algorithm RANDOM_SEARCH "
        "or the default (ALGORITHM_UNSPECIFIED)",
        "parameters",
    )


# --- conditional parameters -------------------------------------------------------------


def _conditionals(
    path: str, parent: ParameterSpec, kind: str | None, ctx: _Study
) -> Iterator[Violation]:
    children = parent.conditional_parameter_specs
    if not children or kind is None:
        return  # a parent without one value spec is reported on its own
    if kind == "DOUBLE":
        yield _error(
            f"{path}.conditionalParameterSpecs",
            "a DOUBLE parameter cannot be a parent: conditions match discrete, integer or "
            "categorical values",
            "make the parent a discreteValueSpec, integerValueSpec or categoricalValueSpec",
            "parameters",
        )
        return
    taken: dict[str, list[tuple[int, set[Any]]]] = {}
    for index, child in enumerate(children):
        child_path = f"{path}.conditionalParameterSpecs[{index}]"
        yield from _condition(child_path, parent, kind, child)
        spec = child.parameter_spec
        if spec is None:
            yield _error(
                f"{child_path}.parameterSpec",
                "is required",
                "the parameter tuned when the condition holds",
                "parameters",
            )
            continue
        yield from _child_id(child_path, index, child, kind, taken, ctx)
        yield from _parameter(f"{child_path}.parameterSpec", spec, ctx)


def _condition(
    path: str, parent: ParameterSpec, kind: str, child: ConditionalParameterSpec
) -> Iterator[Violation]:
    attribute, name = _CONDITIONS[kind]
    given = [(a, n) for a, n in _CONDITIONS.values() if getattr(child, a) is not None]
    if not given:
        yield _error(
            path,
            f"needs {name}: the values of the {kind} parent that turn it on",
            f"{name}: {{values: [...]}}",
            "parameters",
        )
    elif len(given) > 1:
        yield _error(
            path,
            f"has {len(given)} parent conditions; it takes one",
            f"keep {name} (the parent is {kind})",
            "parameters",
        )
    elif given[0][0] != attribute:
        yield _error(
            f"{path}.{given[0][1]}",
            f"matches another type of parent: {parent.parameter_id or 'the parent'} is {kind}",
            f"write the condition as {name}",
            "parameters",
        )
    else:
        values = getattr(child, attribute).values
        yield from _condition_values(f"{path}.{name}", parent, kind, values)


def _condition_values(
    path: str, parent: ParameterSpec, kind: str, values: Sequence[Any]
) -> Iterator[Violation]:
    name = parent.parameter_id or "the parent"
    if not values:
        yield _error(
            f"{path}.values",
            f"needs at least one value of {name}",
            "the parent values that turn this parameter on",
            "parameters",
        )
        return
    for index, value in enumerate(values):
        takes = _parent_takes(parent, kind, value)
        if takes is not None:
            yield _error(
                f"{path}.values[{index}]",
                f"{value!r} is not a value of {name}",
                f"{name} takes {takes}",
                "parameters",
            )


def _parent_takes(parent: ParameterSpec, kind: str, value: Any) -> str | None:
    """None when the parent can take ``value``; else the values it takes, in words."""
    if kind == "INTEGER" and parent.integer_value_spec is not None:
        low, high = parent.integer_value_spec.min_value, parent.integer_value_spec.max_value
        inside = (low is None or value >= low) and (high is None or value <= high)
        return None if inside else f"{low} to {high}"
    if kind == "DISCRETE" and parent.discrete_value_spec is not None:
        allowed = parent.discrete_value_spec.values
        if any(abs(value - a) <= DISCRETE_EPSILON for a in allowed):
            return None
        return _listing([_num(v) for v in allowed])
    if parent.categorical_value_spec is not None:
        choices = parent.categorical_value_spec.values
        return None if value in choices else _listing(list(dict.fromkeys(choices)))
    return None


def _child_id(
    path: str,
    index: int,
    child: ConditionalParameterSpec,
    kind: str,
    taken: dict[str, list[tuple[int, set[Any]]]],
    ctx: _Study,
) -> Iterator[Violation]:
    """A child's id: not a top-level parameter's, and shared only under disjoint conditions."""
    pid = child.parameter_spec.parameter_id if child.parameter_spec else None
    if not pid:
        return
    if pid in ctx.top_ids:
        yield _error(
            f"{path}.parameterSpec.parameterId",
            f"{pid!r} is also a top-level parameter",
            "give the conditional parameter its own parameterId",
            "parameters",
        )
    condition = getattr(child, _CONDITIONS[kind][0])
    values: set[Any] = (
        set()
        if condition is None
        else {round(v, 9) if isinstance(v, float) else v for v in condition.values}
    )
    for other, other_values in taken.get(pid, []):
        if values & other_values:
            yield _error(
                f"{path}.{_CONDITIONS[kind][1]}",
                f"{pid!r} is also conditionalParameterSpecs[{other}] for "
                f"{_listing(sorted(values & other_values, key=str))}: two conditional "
                "parameters of one id need disjoint conditions",
                "move the shared values to one of them",
                "parameters",
            )
    taken.setdefault(pid, []).append((index, values))


def _parameter_ids(parameters: Iterable[ParameterSpec]) -> Iterator[str]:
    for parameter in parameters:
        if parameter.parameter_id:
            yield parameter.parameter_id
        yield from _parameter_ids(
            c.parameter_spec for c in parameter.conditional_parameter_specs if c.parameter_spec
        )


# --- the study --------------------------------------------------------------------------


def _study(study: StudySpec) -> Iterator[Violation]:
    for attribute, name, allowed in (
        ("algorithm", "algorithm", ALGORITHMS),
        ("measurement_selection_type", "measurementSelectionType", MEASUREMENT_SELECTION_TYPES),
        ("observation_noise", "observationNoise", OBSERVATION_NOISES),
    ):
        value = getattr(study, attribute)
        if value is not None and value not in allowed:
            yield _unknown(f"studySpec.{name}", name, value, allowed, "study")
    if study.observation_noise in OBSERVATION_NOISES:
        yield _warning(
            "studySpec.observationNoise",
            "is supported by Vertex AI Vizier only, not by hyperparameter tuning jobs",
            "remove observationNoise",
            "study",
        )
    stopping = [name for attribute, name in _STOPPING_SPECS if getattr(study, attribute)]
    if len(stopping) > 1:
        yield _error(
            "studySpec",
            f"has {len(stopping)} automated stopping specs ({', '.join(stopping)}); "
            "a study takes at most one",
            f"keep one of {' or '.join(stopping)}",
            "study",
        )
    yield from _convex(study)
    yield from _stopping_config(study)


def _convex(study: StudySpec) -> Iterator[Violation]:
    convex = study.convex_automated_stopping_spec
    if convex is None:
        return
    path = "studySpec.convexAutomatedStoppingSpec"
    yield from _non_negative(
        path,
        maxStepCount=convex.max_step_count,
        minStepCount=convex.min_step_count,
        minMeasurementCount=convex.min_measurement_count,
    )
    if 0 < convex.max_step_count < convex.min_step_count:
        yield _error(
            f"{path}.minStepCount",
            f"{convex.min_step_count} is above maxStepCount {convex.max_step_count}",
            "a trial must be able to reach minStepCount before maxStepCount",
            "study",
        )
    rate = convex.learning_rate_parameter_name
    ids = list(dict.fromkeys(_parameter_ids(study.parameters)))
    if rate and rate not in ids:
        yield _error(
            f"{path}.learningRateParameterName",
            f"{rate!r} is not a parameter of the study",
            did_you_mean(rate, ids, otherwise="leave it out if no parameter is the learning rate"),
            "study",
        )


def _non_negative(path: str, **counts: int | None) -> Iterator[Violation]:
    """One violation per count (by its camelCase field name) below zero; unset ones pass."""
    for name, value in counts.items():
        if value is not None and value < 0:
            yield _error(f"{path}.{name}", f"must not be negative ({value})", None, "study")


def _stopping_config(study: StudySpec) -> Iterator[Violation]:
    config = study.study_stopping_config
    if config is None:
        return
    path = "studySpec.studyStoppingConfig"
    yield from _non_negative(
        path,
        minNumTrials=config.min_num_trials,
        maxNumTrials=config.max_num_trials,
        maxNumTrialsNoProgress=config.max_num_trials_no_progress,
    )
    low, high = config.min_num_trials, config.max_num_trials
    if low is not None and high is not None and low > high:
        yield _error(
            f"{path}.minNumTrials",
            f"{low} is above maxNumTrials {high}",
            "the study would stop before it may",
            "study",
        )
    for name, constraint in (
        ("minimumRuntimeConstraint", config.minimum_runtime_constraint),
        ("maximumRuntimeConstraint", config.maximum_runtime_constraint),
    ):
        if constraint is not None:
            yield from _time_constraint(f"{path}.{name}", constraint)
    no_progress = config.max_duration_no_progress
    if no_progress is not None and no_progress.total_seconds() <= 0:
        yield _error(
            f"{path}.maxDurationNoProgress", "must be longer than zero", "e.g. '3600s'", "study"
        )


def _time_constraint(path: str, constraint: StudyTimeConstraint) -> Iterator[Violation]:
    if constraint.max_duration is not None and constraint.end_time is not None:
        yield _error(path, "takes one of maxDuration and endTime", "keep one", "study")
    elif constraint.max_duration is None and constraint.end_time is None:
        yield _error(path, "needs maxDuration or endTime", "e.g. maxDuration: 86400s", "study")
    if constraint.max_duration is not None and constraint.max_duration.total_seconds() <= 0:
        yield _error(f"{path}.maxDuration", "must be longer than zero", "e.g. '86400s'", "study")


# --- trials -----------------------------------------------------------------------------


def _trial_counts(spec: TuningJobSpec) -> Iterator[Violation]:
    total, parallel, failed = (
        spec.max_trial_count,
        spec.parallel_trial_count,
        spec.max_failed_trial_count,
    )
    if total < 1:
        yield _error(
            "maxTrialCount",
            "is required: the total number of trials"
            if total == 0
            else f"must be at least 1, not {total}",
            "e.g. maxTrialCount: 20",
            "trials",
        )
    elif total > MAX_TRIALS:
        yield _error(
            "maxTrialCount",
            f"{total} trials; a study runs at most {MAX_TRIALS:,}",
            f"set maxTrialCount to at most {MAX_TRIALS}, or split the search into studies",
            "trials",
        )
    if parallel < 1:
        yield _error(
            "parallelTrialCount",
            "is required: how many trials run at once"
            if parallel == 0
            else f"must be at least 1, not {parallel}",
            "e.g. parallelTrialCount: 4",
            "trials",
        )
    elif total >= 1 and parallel > total:
        yield _error(
            "parallelTrialCount",
            f"{parallel} trials at once, but the job runs {total} in all (maxTrialCount)",
            f"set parallelTrialCount to at most {total}",
            "trials",
        )
    if failed < 0:
        yield _error(
            "maxFailedTrialCount",
            f"must not be negative ({failed})",
            "0 lets Vertex AI decide how many failed trials fail the job",
            "trials",
        )
    elif total >= 1 and failed > total:
        yield _error(
            "maxFailedTrialCount",
            f"{failed} is more than the {total} trials the job runs (maxTrialCount)",
            f"at most {total}; 0 lets Vertex AI decide",
            "trials",
        )


def _trial_args(spec: TuningJobSpec) -> Iterator[Violation]:
    """Each trial appends its parameters to the trainer's args: a shell script may drop them."""
    ids = list(_parameter_ids(spec.study_spec.parameters))
    example = f"--{ids[0]}=VALUE" if ids else "--<id>=<value>"
    for index, pool in enumerate(spec.trial_job_spec.worker_pool_specs):
        container = pool.container_spec
        found = _shell_script([*container.command, *container.args]) if container else None
        if found is None:
            continue
        shell, script, after = found
        path = f"trialJobSpec.workerPoolSpecs[{index}].containerSpec.command"
        if not _READS_ARGS.search(script):
            yield _warning(
                path,
                f"`{shell} -c` runs a script that never reads its arguments: the parameters "
                f"each trial appends as arguments ({example} ...) never reach the trainer",
                'pass them on with "$@" (e.g. python -m trainer.task "$@") and add one '
                "argument after the script for $0 (args: [trainer])",
                "trial-args",
            )
        elif not after:
            yield _warning(
                path,
                f"`{shell} -c` takes the first argument after its script as $0: the first "
                f'parameter a trial appends ({example}) is not in "$@"',
                "add one argument after the script for $0, e.g. args: [trainer]",
                "trial-args",
            )


def _shell_script(words: list[str]) -> tuple[str, str, list[str]] | None:
    """``(shell, script, arguments after the script)`` of ``sh -c SCRIPT ...``, else None."""
    if not words:
        return None
    shell = words[0].rsplit("/", 1)[-1]
    if shell not in _SHELLS:
        return None
    index = 1
    if shell == "busybox" and len(words) > 1 and words[1] in ("sh", "ash"):
        index = 2
    while index < len(words):
        word = words[index]
        if word in ("-o", "+o"):
            index += 2
            continue
        if not word.startswith(("-", "+")) or word.startswith("--"):
            return None  # a script file (or a long option): its arguments are its own business
        if word.startswith("-") and "c" in word[1:]:
            if index + 1 >= len(words):
                return None
            return shell, words[index + 1], words[index + 2 :]
        index += 1
    return None
