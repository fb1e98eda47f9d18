"""AI Platform Training ``trainingInput.hyperparameters`` (HyperTune) → a Vertex AI study.

``legacy_config.convert_training_input(..., tuning=True)`` converts the rest of
``trainingInput`` into the job every trial runs and this module the tuning block, one field of
``HyperparameterTuningJob`` for each legacy field (``hyperparameters.`` below):

===============================  =====================================================
legacy                           Vertex AI ``HyperparameterTuningJob``
===============================  =====================================================
``goal``                         ``studySpec.metrics[0].goal`` (MAXIMIZE when unset, as
                                 AI Platform did)
``hyperparameterMetricTag``      ``studySpec.metrics[0].metricId`` (unset:
                                 ``training/hptuning/metric``, AI Platform's default)
``maxTrials``                    ``maxTrialCount`` (unset: 1, AI Platform's default)
``maxParallelTrials``            ``parallelTrialCount`` (unset: 1)
``maxFailedTrials``              ``maxFailedTrialCount`` (0: the service decides, on both)
``algorithm``                    ``studySpec.algorithm`` (the same names)
``enableTrialEarlyStopping``     ``studySpec.decayCurveStoppingSpec`` (with a note)
``params[i].parameterName``      ``studySpec.parameters[i].parameterId``
``params[i].type`` DOUBLE,       ``doubleValueSpec``/``integerValueSpec`` {minValue,
INTEGER + ``minValue/maxValue``  maxValue}
``params[i].categoricalValues``  ``categoricalValueSpec.values`` (type CATEGORICAL)
``params[i].discreteValues``     ``discreteValueSpec.values`` (type DISCRETE)
``params[i].scaleType``          ``scaleType`` (NONE: unset)
``resumePreviousJobId``          refused: Vertex AI cannot resume an AI Platform study
===============================  =====================================================

Every field is checked for its shape first: a wrong type is a violation naming the field,
never a crash, and a value that has no place in the study (``discreteValues`` on a DOUBLE
parameter) is a violation, never dropped. ``LEGACY_TUNING_RENAMES`` says the study's
violations in these terms (``trainingInput.hyperparameters.params[0].minValue``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..rules._violations import Violation, did_you_mean
from .bounded_yaml import SourceFloat
from .result import PathRenames
from .text import clipped

__all__ = [
    "DEFAULT_METRIC_TAG",
    "LEGACY_TUNING_RENAMES",
    "LegacyStudy",
    "convert_hyperparameters",
    "is_legacy_tuning",
    "tuning_document",
    "tuning_summary",
]

DEFAULT_METRIC_TAG = "training/hptuning/metric"
"""The metric AI Platform optimised when ``hyperparameterMetricTag`` was unset."""

_HP = "trainingInput.hyperparameters"
_P = r"^studySpec\.parameters\[(\d+)\]"
LEGACY_TUNING_RENAMES: PathRenames = (
    (rf"{_P}\.parameterId", rf"{_HP}.params[\1].parameterName"),
    (rf"{_P}\.(?:double|integer)ValueSpec\.(minValue|maxValue)", rf"{_HP}.params[\1].\2"),
    (rf"{_P}\.categoricalValueSpec\.values", rf"{_HP}.params[\1].categoricalValues"),
    (rf"{_P}\.discreteValueSpec\.values", rf"{_HP}.params[\1].discreteValues"),
    (rf"{_P}\.scaleType", rf"{_HP}.params[\1].scaleType"),
    (rf"{_P}(?:\.\w+ValueSpec)?", rf"{_HP}.params[\1]"),
    (r"^studySpec\.parameters", f"{_HP}.params"),
    (r"^studySpec\.metrics\[0\]\.metricId", f"{_HP}.hyperparameterMetricTag"),
    (r"^studySpec\.metrics\[0\]\.goal", f"{_HP}.goal"),
    (r"^studySpec\.algorithm", f"{_HP}.algorithm"),
    (r"^studySpec\.decayCurveStoppingSpec", f"{_HP}.enableTrialEarlyStopping"),
    (r"^studySpec", _HP),
    (r"^maxTrialCount", f"{_HP}.maxTrials"),
    (r"^parallelTrialCount", f"{_HP}.maxParallelTrials"),
    (r"^maxFailedTrialCount", f"{_HP}.maxFailedTrials"),
)
"""Paths of the converted tuning job → paths of the legacy block they came from."""

# The shape of each field, checked before anything is converted.
_TEXT, _COUNT, _FLAG, _LIST, _ANY = "text", "a whole number", "true or false", "a list", "any"
_REAL, _REALS, _SCALARS = "a number", "a list of numbers", "a list of text or numbers"
_FIELD_KINDS = {
    "goal": _TEXT,
    "hyperparameterMetricTag": _TEXT,
    "maxTrials": _COUNT,
    "maxParallelTrials": _COUNT,
    "maxFailedTrials": _COUNT,
    "enableTrialEarlyStopping": _FLAG,
    "algorithm": _TEXT,
    "resumePreviousJobId": _ANY,
    "params": _LIST,
}
_PARAM_KINDS = {
    "parameterName": _TEXT,
    "type": _TEXT,
    "minValue": _REAL,
    "maxValue": _REAL,
    "categoricalValues": _SCALARS,
    "discreteValues": _REALS,
    "scaleType": _TEXT,
}
# type → (value spec, the legacy fields it reads)
_TYPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "DOUBLE": ("doubleValueSpec", ("minValue", "maxValue")),
    "INTEGER": ("integerValueSpec", ("minValue", "maxValue")),
    "CATEGORICAL": ("categoricalValueSpec", ("categoricalValues",)),
    "DISCRETE": ("discreteValueSpec", ("discreteValues",)),
}
_TYPE_NAMES = "DOUBLE, INTEGER, CATEGORICAL or DISCRETE"
_VALUE_FIELDS = {
    "minValue": "DOUBLE and INTEGER",
    "maxValue": "DOUBLE and INTEGER",
    "categoricalValues": "CATEGORICAL",
    "discreteValues": "DISCRETE",
}
_INT32, _INT64 = 2**31 - 1, 2**63 - 1
# Fields of the tuning job itself; the rest of the converted CustomJob is the trial's job.
_JOB_LEVEL = ("project", "region", "displayName", "labels", "encryptionSpec")


def _number(value: Any) -> float | None:
    """A finite number, or text holding one (YAML reads ``1e-4`` as text); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # an integer of hundreds of digits: no float holds it
            return None
    elif isinstance(value, str) and len(value) < 40:
        try:
            number = float(value)
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _fits(value: Any, kind: str) -> bool:
    if kind == _ANY:
        return True
    if kind == _TEXT:
        return isinstance(value, str)
    if kind == _COUNT:
        whole = isinstance(value, int) and not isinstance(value, bool)
        digits = isinstance(value, str) and value.strip().isdigit() and len(value) < 20
        return (whole or digits) and abs(int(value)) <= _INT32
    if kind == _FLAG:
        return isinstance(value, bool)
    if kind == _LIST:
        return isinstance(value, list)
    if kind == _REAL:
        return _number(value) is not None
    if kind == _REALS:
        return isinstance(value, list) and all(_number(v) is not None for v in value)
    return isinstance(value, list) and all(
        isinstance(v, str | int | float) and not isinstance(v, bool) for v in value
    )


def _checked(
    mapping: dict[Any, Any], kinds: dict[str, str], path: str, problems: list[Violation]
) -> dict[str, Any]:
    """The fields of ``mapping`` of a known name and the right shape; a violation for each
    other one."""
    good: dict[str, Any] = {}
    for key, value in mapping.items():
        kind = kinds.get(key) if isinstance(key, str) else None
        if kind is None:
            what = path.rsplit(".", 1)[-1].split("[")[0]
            problems.append(
                Violation(
                    f"{path}.{clipped(str(key))}",
                    f"is not a {what} field this converter knows",
                    did_you_mean(str(key), kinds),
                    rule="legacy",
                )
            )
        elif value is None:
            continue  # absent and null mean the same here
        elif not _fits(value, kind):
            problems.append(Violation(f"{path}.{key}", f"must be {kind}", rule="legacy"))
        else:
            good[key] = value
    return good


def is_legacy_tuning(training_input: Any) -> bool:
    """Whether a ``trainingInput`` holds a (non-empty) hyperparameter tuning block."""
    block = training_input.get("hyperparameters") if isinstance(training_input, dict) else None
    return isinstance(block, dict) and bool(block)


@dataclass
class LegacyStudy:
    """The converted tuning block: the ``HyperparameterTuningJob`` fields it gives (studySpec,
    maxTrialCount, parallelTrialCount, maxFailedTrialCount), notes, and its problems in the
    legacy terms (each field with one is left out)."""

    fields: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    problems: list[Violation] = field(default_factory=list)


def convert_hyperparameters(block: dict[Any, Any]) -> LegacyStudy:
    """The study of a legacy ``hyperparameters`` mapping (see the module's table)."""
    result = LegacyStudy({})
    good = _checked(block, _FIELD_KINDS, _HP, result.problems)
    study: dict[str, Any] = {"metrics": [_metric(block, good, result.notes)]}
    params = good.get("params", [])
    study["parameters"] = [_parameter(i, p, result.problems) for i, p in enumerate(params)]
    if good.get("algorithm") is not None:
        study["algorithm"] = good["algorithm"]
    if good.get("enableTrialEarlyStopping"):
        study["decayCurveStoppingSpec"] = {}
        result.notes.append(
            "enableTrialEarlyStopping: true becomes studySpec.decayCurveStoppingSpec (AI "
            "Platform did not name its rule: the decay curve rule stops a trial whose "
            "measurements so far predict it will not beat the best trial; "
            "medianAutomatedStoppingSpec, which stops a trial below the median of the "
            "completed ones, is the other choice)"
        )
    if "resumePreviousJobId" in good:
        result.problems.append(
            Violation(
                f"{_HP}.resumePreviousJobId",
                "Vertex AI cannot resume an AI Platform tuning job: a HyperparameterTuningJob "
                "always starts a new study",
                "remove it; to build on the earlier job, narrow the parameter ranges around "
                "its best trial",
                rule="legacy",
            )
        )
    result.fields = {"studySpec": study, **_counts(block, good, result.notes)}
    return result


def _metric(block: dict[Any, Any], good: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    tag = good.get("hyperparameterMetricTag")
    if tag is None and block.get("hyperparameterMetricTag") is None:
        tag = DEFAULT_METRIC_TAG
        notes.append(
            f"hyperparameterMetricTag not set: the metric is {DEFAULT_METRIC_TAG}, AI "
            "Platform's default"
        )
    goal = good.get("goal")
    if goal in (None, "GOAL_TYPE_UNSPECIFIED") and block.get("goal") in (
        None,
        "GOAL_TYPE_UNSPECIFIED",
    ):
        goal = "MAXIMIZE"
        notes.append("goal not set: MAXIMIZE, AI Platform's default")
    if isinstance(tag, str):
        notes.append(
            f"each trial must report {clipped(tag)!r} with cloudml-hypertune "
            "(report_hyperparameter_tuning_metric(hyperparameter_metric_tag=...)): Vertex AI "
            "reads the metric from those reports; a trainer that only wrote it as a "
            "TensorFlow summary must report it so"
        )
    return {"metricId": tag, "goal": goal}


def _counts(block: dict[Any, Any], good: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    counts: dict[str, Any] = {}
    for legacy, vertex, default, unset in (
        ("maxTrials", "maxTrialCount", 1, "1 trial, AI Platform's default"),
        (
            "maxParallelTrials",
            "parallelTrialCount",
            1,
            "trials run one at a time, as on AI Platform",
        ),
        ("maxFailedTrials", "maxFailedTrialCount", 0, ""),
    ):
        value = good.get(legacy)
        if value is None:
            value = default
            if unset and block.get(legacy) is None:
                notes.append(f"{legacy} not set: {unset}")
        counts[vertex] = int(value)
    return counts


def _parameter(index: int, param: Any, problems: list[Violation]) -> dict[str, Any]:
    """One ``params`` entry as a Vertex ``ParameterSpec`` (what could be read of it)."""
    where = f"{_HP}.params[{index}]"
    if not isinstance(param, dict):
        problems.append(
            Violation(where, "must be a mapping (parameterName, type, ...)", rule="legacy")
        )
        return {}
    good = _checked(param, _PARAM_KINDS, where, problems)
    parameter: dict[str, Any] = {}
    if "parameterName" in good:
        parameter["parameterId"] = good["parameterName"]
    scale = good.get("scaleType")
    if scale is not None and scale != "NONE":
        parameter["scaleType"] = scale
    kind = good.get("type")
    if kind is None and param.get("type") is not None:
        return parameter  # not text: said by _checked
    if kind in (None, "PARAMETER_TYPE_UNSPECIFIED"):
        problems.append(Violation(f"{where}.type", "is required", _TYPE_NAMES, rule="legacy"))
        return parameter
    if kind not in _TYPES:
        problems.append(
            Violation(
                f"{where}.type",
                f"unknown parameter type {clipped(kind)!r}",
                did_you_mean(kind, _TYPES, otherwise=_TYPE_NAMES),
                rule="legacy",
            )
        )
        return parameter
    spec_name, reads = _TYPES[kind]
    for name, owner in _VALUE_FIELDS.items():
        if name in good and name not in reads:
            problems.append(
                Violation(
                    f"{where}.{name}",
                    f"is for {owner} parameters; this one is {kind}",
                    f"remove it, or set the type to {owner.split(' and ')[0]}",
                    rule="legacy",
                )
            )
    parameter[spec_name] = _value_spec(kind, good, where, problems)
    return parameter


def _value_spec(
    kind: str, good: dict[str, Any], where: str, problems: list[Violation]
) -> dict[str, Any]:
    if kind == "CATEGORICAL":
        values = good.get("categoricalValues")
        return {} if values is None else {"values": [_source_text(v) for v in values]}
    if kind == "DISCRETE":
        values = good.get("discreteValues")
        return {} if values is None else {"values": [_number(v) for v in values]}
    spec: dict[str, Any] = {}
    for name in ("minValue", "maxValue"):
        number = _number(good.get(name))
        if number is None:
            continue
        if kind == "DOUBLE":
            spec[name] = number
        elif number.is_integer() and abs(number) <= _INT64:
            spec[name] = int(number)
        else:
            problems.append(
                Violation(
                    f"{where}.{name}",
                    f"must be a whole number for an INTEGER parameter, not "
                    f"{clipped(str(good[name]))}",
                    "use type DOUBLE for a range of real numbers",
                    rule="legacy",
                )
            )
    return spec


def _source_text(value: str | int | float) -> str:
    """A categorical value as written (YAML reads ``0.10`` as a number)."""
    if isinstance(value, SourceFloat):
        return value.text
    return value if isinstance(value, str) else str(value)


def tuning_document(job: dict[str, Any], study: dict[str, Any]) -> dict[str, Any]:
    """A ``HyperparameterTuningJob`` document from a converted CustomJob document (its
    project, region, display name, labels and key stay the tuning job's; the rest is the trial's
    job) and the study's fields."""
    present = {k: v for k, v in job.items() if v is not None}
    top = {k: present[k] for k in _JOB_LEVEL if k in present}
    trial = {k: v for k, v in present.items() if k not in _JOB_LEVEL}
    return {**top, **study, "trialJobSpec": trial}


def tuning_summary(tuning: dict[Any, Any]) -> str:
    """``3 parameters (learning_rate, ...), goal MAXIMIZE of 'accuracy', maxTrials 30``."""
    params = tuning.get("params")
    names = [
        clipped(p["parameterName"])
        for p in (params if isinstance(params, list) else [])
        if isinstance(p, dict) and isinstance(p.get("parameterName"), str)
    ]
    count = len(params) if isinstance(params, list) else 0
    parts = [f"{count} parameter{'' if count == 1 else 's'}"]
    if names:
        parts[0] += f" ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})"
    goal, metric = tuning.get("goal"), tuning.get("hyperparameterMetricTag")
    if isinstance(goal, str):
        parts.append(
            f"goal {clipped(goal)}"
            + (f" of {clipped(metric)!r}" if isinstance(metric, str) else "")
        )
    for key in ("maxTrials", "maxParallelTrials"):
        if isinstance(tuning.get(key), int) and not isinstance(tuning[key], bool):
            parts.append(f"{key} {tuning[key]}")
    return ", ".join(parts)
