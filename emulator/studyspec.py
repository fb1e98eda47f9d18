"""The search space of a hyperparameter tuning job, and the rules its ``study_spec`` must follow.

:func:`search_space` reads a ``StudySpec``'s parameters into a tree of :class:`Param`: each
parameter with its feasible values, and the conditional parameters that are active only when it
takes one of the values their ``parent_*_values`` name. :func:`study_violations` lists what a
``HyperparameterTuningJob`` asks for that Vertex would refuse, or that the emulator cannot run:

* metrics: at least one, ids without whitespace and unique, goal MAXIMIZE or MINIMIZE;
* parameters: at least one, ids without whitespace and unique (conditional siblings may share
  an id when their parent values are disjoint), exactly one value spec with a non-empty feasible
  space (``min <= max``, finite doubles, discrete values increasing, categories unique), log
  scales only over positive values; GRID_SEARCH takes INTEGER, CATEGORICAL and DISCRETE only;
* conditional parameters: an INTEGER, CATEGORICAL or DISCRETE parent, the condition of the
  parent's type, naming only values the parent can take;
* counts: ``max_trial_count`` of 1 to :data:`MAX_TRIALS`, ``parallel_trial_count`` of at least 1,
  ``max_failed_trial_count`` not negative; enums only of known values.

Bounds keep a hostile spec cheap: at most :data:`MAX_PARAMETERS` parameters nested at most
:data:`MAX_DEPTH` levels, at most :data:`MAX_VALUES` values per parameter. Field paths are relative to
the tuning job (``study_spec.parameters[0]``), as Vertex AI names fields in its messages.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from google.cloud.aiplatform_v1 import types as aip

__all__ = [
    "MAX_TRIALS",
    "Param",
    "ParamValue",
    "active_children",
    "search_space",
    "study_violations",
    "walk",
]

ParamValue: TypeAlias = float | int | str
_Found: TypeAlias = list[tuple[str, str]]

MAX_TRIALS = 1000
MAX_PARAMETERS = 100
MAX_DEPTH = 8
MAX_VALUES = 1000
MAX_METRICS = 16
MAX_ID = 256

_Spec = aip.StudySpec
_ParamSpec = _Spec.ParameterSpec
LOG_SCALES = frozenset(
    {_ParamSpec.ScaleType.UNIT_LOG_SCALE, _ParamSpec.ScaleType.UNIT_REVERSE_LOG_SCALE}
)
_SCALES = frozenset(int(v) for v in _ParamSpec.ScaleType.__members__.values())
_ALGORITHMS = frozenset(int(v) for v in _Spec.Algorithm.__members__.values())
_SELECTIONS = frozenset(int(v) for v in _Spec.MeasurementSelectionType.__members__.values())
_NOISES = frozenset(int(v) for v in _Spec.ObservationNoise.__members__.values())
_GOALS = frozenset({_Spec.MetricSpec.GoalType.MAXIMIZE, _Spec.MetricSpec.GoalType.MINIMIZE})
# The value spec of each parameter type, and the condition its conditional children use.
_TYPES = {
    "double_value_spec": ("DOUBLE", None),
    "integer_value_spec": ("INTEGER", "parent_int_values"),
    "categorical_value_spec": ("CATEGORICAL", "parent_categorical_values"),
    "discrete_value_spec": ("DISCRETE", "parent_discrete_values"),
}


@dataclass(frozen=True)
class Param:
    """One parameter of the search space (trusted: built from a spec that passed the rules)."""

    key: str  # unique in the study: its position in the tree ("0", "0.1.0")
    id: str  # parameter_id, the flag name trials get
    type: str  # DOUBLE, INTEGER, CATEGORICAL or DISCRETE
    low: float  # DOUBLE and INTEGER: the feasible range
    high: float
    values: tuple[ParamValue, ...]  # CATEGORICAL (str) and DISCRETE (float), in spec order
    scale: int  # ScaleType
    children: tuple[tuple[frozenset[ParamValue], Param], ...]  # (parent values, child)


def search_space(study_spec: Any) -> list[Param]:
    """The parameters of a (valid) StudySpec, in spec order."""
    return [_param(p, str(i)) for i, p in enumerate(study_spec.parameters)]


def _param(spec: Any, key: str) -> Param:
    which = spec.WhichOneof("parameter_value_spec")
    value_spec = getattr(spec, which)
    low = high = 0.0
    values: tuple[ParamValue, ...] = ()
    if which in ("double_value_spec", "integer_value_spec"):
        low, high = value_spec.min_value, value_spec.max_value
    else:
        values = tuple(value_spec.values)
    children = tuple(
        (
            frozenset(getattr(c, c.WhichOneof("parent_value_condition")).values),
            _param(c.parameter_spec, f"{key}.{j}"),
        )
        for j, c in enumerate(spec.conditional_parameter_specs)
    )
    return Param(
        key, spec.parameter_id, _TYPES[which][0], low, high, values, spec.scale_type, children
    )


def active_children(param: Param, value: ParamValue) -> list[Param]:
    """The conditional parameters of ``param`` that are active when it takes ``value``."""
    return [child for when, child in param.children if value in when]


def walk(params: Sequence[Param], choose: Callable[[Param], ParamValue]) -> dict[str, ParamValue]:
    """Assign every active parameter: ``choose(param)`` picks a value, parents before children.

    The result maps parameter ids to values in the order they were chosen (the order of the
    ``--<id>=<value>`` arguments a trial gets).
    """
    chosen: dict[str, ParamValue] = {}
    for param in params:
        value = choose(param)
        chosen[param.id] = value
        chosen.update(walk(active_children(param, value), choose))
    return chosen


# -- rules ---------------------------------------------------------------------------------------


def study_violations(job: Any) -> _Found:
    """(field path, message) for each rule (see module doc) that a tuning job breaks."""
    found = _count_violations(job)
    spec = job.study_spec
    base = "study_spec"
    for name, known in (
        ("algorithm", _ALGORITHMS),
        ("measurement_selection_type", _SELECTIONS),
        ("observation_noise", _NOISES),
    ):
        if getattr(spec, name) not in known:
            found.append((f"{base}.{name}", f"unknown value {getattr(spec, name)}"))
    found += _metric_violations(spec)
    if not spec.parameters:
        found.append((f"{base}.parameters", "At least one parameter is required"))
    nodes = _nodes(spec.parameters, f"{base}.parameters")
    if len(nodes) > MAX_PARAMETERS:
        found.append((f"{base}.parameters", f"At most {MAX_PARAMETERS} parameters are supported"))
        return found
    grid = spec.algorithm == _Spec.Algorithm.GRID_SEARCH
    for node in nodes:
        found += _param_violations(node, grid)
    return found + _duplicate_id_violations(nodes)


def _count_violations(job: Any) -> _Found:
    found: _Found = []
    if not 1 <= job.max_trial_count <= MAX_TRIALS:
        found.append(("max_trial_count", f"must be between 1 and {MAX_TRIALS}"))
    if job.parallel_trial_count < 1:
        found.append(("parallel_trial_count", "must be at least 1"))
    if job.max_failed_trial_count < 0:
        found.append(("max_failed_trial_count", "must not be negative"))
    return found


def _id_problem(value: str) -> str | None:
    if not value:
        return "Required field is not set"
    if len(value) > MAX_ID:
        return f"must have at most {MAX_ID} characters"
    if any(ch.isspace() or not ch.isprintable() for ch in value):
        return "must not contain whitespace or control characters"
    return None


def _metric_violations(spec: Any) -> _Found:
    base = "study_spec.metrics"
    if not spec.metrics:
        return [(base, "At least one metric is required")]
    if len(spec.metrics) > MAX_METRICS:
        return [(base, f"At most {MAX_METRICS} metrics are supported")]
    found: _Found = []
    seen: set[str] = set()
    for i, metric in enumerate(spec.metrics):
        problem = _id_problem(metric.metric_id)
        if problem is None and metric.metric_id in seen:
            problem = f"duplicate metric id {metric.metric_id!r}"
        if problem is not None:
            found.append((f"{base}[{i}].metric_id", problem))
        seen.add(metric.metric_id)
        if metric.goal not in _GOALS:
            found.append((f"{base}[{i}].goal", "must be MAXIMIZE or MINIMIZE"))
    return found


@dataclass(frozen=True)
class _Node:
    spec: Any
    path: str
    parent: str | None  # path of the parent parameter (None at the top level)
    when: frozenset[ParamValue]  # the parent values it is active for
    depth: int


def _nodes(specs: Sequence[Any], path: str) -> list[_Node]:
    """Every parameter spec of the tree, parents first, down to MAX_DEPTH levels."""
    found: list[_Node] = []
    todo = [_Node(spec, f"{path}[{i}]", None, frozenset(), 1) for i, spec in enumerate(specs)]
    while todo and len(found) <= MAX_PARAMETERS:
        node = todo.pop(0)
        found.append(node)
        if node.depth >= MAX_DEPTH:
            continue
        for j, cond in enumerate(node.spec.conditional_parameter_specs):
            which = cond.WhichOneof("parent_value_condition")
            when = frozenset(getattr(cond, which).values) if which else frozenset()
            child = f"{node.path}.conditional_parameter_specs[{j}].parameter_spec"
            todo.append(_Node(cond.parameter_spec, child, node.path, when, node.depth + 1))
    return found


def _param_violations(node: _Node, grid: bool) -> _Found:
    spec, path = node.spec, node.path
    found: _Found = []
    problem = _id_problem(spec.parameter_id)
    if problem is not None:
        found.append((f"{path}.parameter_id", problem))
    which = spec.WhichOneof("parameter_value_spec")
    if which is None:
        return [
            *found,
            (
                path,
                "Exactly one of double_value_spec, integer_value_spec, categorical_value_spec "
                "or discrete_value_spec must be set",
            ),
        ]
    if spec.scale_type not in _SCALES:
        found.append((f"{path}.scale_type", f"unknown value {spec.scale_type}"))
    log = spec.scale_type in LOG_SCALES
    found += _VALUE_RULES[which](getattr(spec, which), f"{path}.{which}", log)
    if grid and which == "double_value_spec":
        found.append((path, "GRID_SEARCH takes only INTEGER, CATEGORICAL and DISCRETE parameters"))
    if node.depth >= MAX_DEPTH and spec.conditional_parameter_specs:
        found.append(
            (
                f"{path}.conditional_parameter_specs",
                f"conditional parameters may be nested at most {MAX_DEPTH} levels deep",
            )
        )
    return found + _condition_violations(node, which)


def _range_violations(vs: Any, path: str, log: bool) -> _Found:
    low, high = vs.min_value, vs.max_value
    if not (math.isfinite(low) and math.isfinite(high)):
        return [(path, "min_value and max_value must be finite numbers")]
    if low > high:
        return [(path, f"min_value ({low}) must not be greater than max_value ({high})")]
    if log and low <= 0:
        return [(f"{path}.min_value", "a log scale needs a strictly positive feasible space")]
    return []


def _categorical_violations(vs: Any, path: str, log: bool) -> _Found:
    values = list(vs.values)
    if not 1 <= len(values) <= MAX_VALUES:
        return [(f"{path}.values", f"must hold 1 to {MAX_VALUES} values")]
    if len(set(values)) != len(values):
        return [(f"{path}.values", "must not repeat a value")]
    for k, value in enumerate(values):
        if len(value) > MAX_ID or not value.isprintable():
            return [
                (
                    f"{path}.values[{k}]",
                    f"must be printable, at most {MAX_ID} characters (it becomes an argument)",
                )
            ]
    return []


def _discrete_violations(vs: Any, path: str, log: bool) -> _Found:
    values = list(vs.values)
    if not 1 <= len(values) <= MAX_VALUES:
        return [(f"{path}.values", f"must hold 1 to {MAX_VALUES} values")]
    if not all(math.isfinite(v) for v in values):
        return [(f"{path}.values", "must be finite numbers")]
    if any(a >= b for a, b in itertools.pairwise(values)):
        return [(f"{path}.values", "must be in increasing order, without repeats")]
    if log and values[0] <= 0:
        return [(f"{path}.values", "a log scale needs a strictly positive feasible space")]
    return []


_VALUE_RULES = {
    "double_value_spec": _range_violations,
    "integer_value_spec": _range_violations,
    "categorical_value_spec": _categorical_violations,
    "discrete_value_spec": _discrete_violations,
}


def _feasible(spec: Any, which: str, value: ParamValue) -> bool:
    vs = getattr(spec, which)
    if which == "integer_value_spec":
        return bool(vs.min_value <= value <= vs.max_value)
    return value in set(vs.values)


def _condition_violations(node: _Node, which: str) -> _Found:
    type_name, expected = _TYPES[which]
    found: _Found = []
    for j, cond in enumerate(node.spec.conditional_parameter_specs):
        path = f"{node.path}.conditional_parameter_specs[{j}]"
        got = cond.WhichOneof("parent_value_condition")
        if expected is None:
            return [(path, "a DOUBLE parameter cannot have conditional parameters")]
        if got != expected:
            found.append((path, f"must set {expected}: the parent is a {type_name} parameter"))
            continue
        values = list(getattr(cond, got).values)
        if not 1 <= len(values) <= MAX_VALUES:
            found.append((f"{path}.{got}.values", f"must hold 1 to {MAX_VALUES} values"))
            continue
        bad = [v for v in values if not _feasible(node.spec, which, v)]
        if bad:
            found.append(
                (f"{path}.{got}.values", f"{bad[0]!r} is not a value the parent parameter takes")
            )
    return found


def _duplicate_id_violations(nodes: list[_Node]) -> _Found:
    found: _Found = []
    seen: dict[str, list[_Node]] = {}
    for node in nodes:
        pid = node.spec.parameter_id
        for other in seen.get(pid, []):
            if other.parent is None or other.parent != node.parent or other.when & node.when:
                found.append(
                    (
                        f"{node.path}.parameter_id",
                        f"duplicate parameter id {pid!r} (also {other.path}); only conditional "
                        "parameters of one parent, for disjoint parent values, may share an id",
                    )
                )
                break
        seen.setdefault(pid, []).append(node)
    return found
