"""Tuning job examples and hypothesis strategies shared by the tuning tests."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import yaml
from hypothesis import strategies as st

from components import TuningJobSpec
from components.rules._tuning_spec import GOALS, MEASUREMENT_SELECTION_TYPES, SCALE_TYPES
from tests.spec.strategies import anything, convertible_spec, names, text

# A config as `gcloud ai hp-tuning-jobs create --config` takes it: a CIFAR-10 sweep on one T4.
CONFIG_YAML = """
displayName: cifar10-sweep
maxTrialCount: 24
parallelTrialCount: 4
maxFailedTrialCount: 3
labels:
  team: vision
studySpec:
  metrics:
  - metricId: val_accuracy
    goal: MAXIMIZE
  parameters:
  - parameterId: learning_rate
    doubleValueSpec:
      minValue: 0.0001
      maxValue: 0.1
    scaleType: UNIT_LOG_SCALE
  - parameterId: batch_size
    discreteValueSpec:
      values: [32, 64, 128]
    scaleType: UNIT_LINEAR_SCALE
  - parameterId: optimizer
    categoricalValueSpec:
      values: [adam, sgd]
    conditionalParameterSpecs:
    - parentCategoricalValues:
        values: [sgd]
      parameterSpec:
        parameterId: momentum
        doubleValueSpec:
          minValue: 0.5
          maxValue: 0.99
  - parameterId: num_layers
    integerValueSpec:
      minValue: 2
      maxValue: 8
  algorithm: RANDOM_SEARCH
  measurementSelectionType: BEST_MEASUREMENT
  medianAutomatedStoppingSpec:
    useElapsedDuration: false
trialJobSpec:
  baseOutputDirectory:
    outputUriPrefix: gs://vision-ml/sweeps/cifar10
  serviceAccount: trainer@vision-ml.iam.gserviceaccount.com
  workerPoolSpecs:
  - machineSpec:
      machineType: n1-standard-8
      acceleratorType: NVIDIA_TESLA_T4
      acceleratorCount: 1
    replicaCount: 1
    containerSpec:
      imageUri: us-central1-docker.pkg.dev/vision-ml/trainers/cifar10:1.4.0
      args: [--epochs=20]
"""


def config() -> dict[str, Any]:
    """A fresh copy of the example config, to change in a test."""
    return copy.deepcopy(_CONFIG)


_CONFIG: dict[str, Any] = yaml.safe_load(CONFIG_YAML)


def tuning(**changes: Any) -> TuningJobSpec:
    """The example with top-level fields replaced."""
    document = config()
    document.update(changes)
    return TuningJobSpec.parse(document)


def with_parameters(*parameters: dict[str, Any], **study: Any) -> TuningJobSpec:
    """The example with its study's parameters (and other study fields) replaced."""
    document = config()
    document["studySpec"]["parameters"] = list(parameters)
    document["studySpec"].update(study)
    return TuningJobSpec.parse(document)


# --- strategies --------------------------------------------------------------------------

doubles = st.floats(allow_nan=False, allow_infinity=False, width=64)
int64s = st.integers(-(2**63), 2**63 - 1)
int32s = st.integers(-(2**31), 2**31 - 1)
durations = st.integers(0, 10**9).map(lambda us: timedelta(microseconds=us * 1000))
times = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1)).map(
    lambda t: t.replace(tzinfo=UTC)
)


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


def _drop_none(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if v is not None}


_value_spec = st.one_of(
    st.fixed_dictionaries(
        {
            "doubleValueSpec": st.fixed_dictionaries(
                {"minValue": doubles, "maxValue": doubles}, optional={"defaultValue": doubles}
            )
        }
    ),
    st.fixed_dictionaries(
        {
            "integerValueSpec": st.fixed_dictionaries(
                {"minValue": int64s, "maxValue": int64s}, optional={"defaultValue": int64s}
            )
        }
    ),
    st.fixed_dictionaries(
        {
            "categoricalValueSpec": st.fixed_dictionaries(
                {"values": st.lists(text, max_size=4)}, optional={"defaultValue": text}
            )
        }
    ),
    st.fixed_dictionaries(
        {
            "discreteValueSpec": st.fixed_dictionaries(
                {"values": st.lists(doubles, max_size=4)}, optional={"defaultValue": doubles}
            )
        }
    ),
)
_condition: st.SearchStrategy[dict[str, Any]] = st.one_of(
    st.fixed_dictionaries(
        {"parentDiscreteValues": st.fixed_dictionaries({"values": st.lists(doubles, max_size=3)})}
    ),
    st.fixed_dictionaries(
        {"parentIntValues": st.fixed_dictionaries({"values": st.lists(int64s, max_size=3)})}
    ),
    st.fixed_dictionaries(
        {"parentCategoricalValues": st.fixed_dictionaries({"values": st.lists(text, max_size=3)})}
    ),
    st.just({}),
)


@st.composite
def parameter(draw: st.DrawFn, depth: int = 2) -> dict[str, Any]:
    """A parameter with one value spec (any values) and, above depth 0, conditional ones."""
    result: dict[str, Any] = {"parameterId": draw(names), **draw(_value_spec)}
    scale = draw(_maybe(st.sampled_from(SCALE_TYPES)))
    if scale:
        result["scaleType"] = scale
    if depth > 0:
        children = []
        for _ in range(draw(st.integers(0, 2))):
            child = dict(draw(_condition))  # (st.just gives one shared mapping)
            if draw(st.booleans()):
                child["parameterSpec"] = draw(parameter(depth - 1))
            children.append(child)
        result["conditionalParameterSpecs"] = children
    return result


_metric = st.builds(
    lambda metric_id, goal, safety: _drop_none(
        {"metricId": metric_id, "goal": goal, "safetyConfig": safety}
    ),
    names,
    st.sampled_from(GOALS),
    _maybe(
        st.fixed_dictionaries(
            {"safetyThreshold": doubles}, optional={"desiredMinSafeTrialsFraction": doubles}
        )
    ),
)
_stopping = st.one_of(
    st.just({}),
    st.builds(lambda b: {"decayCurveStoppingSpec": {"useElapsedDuration": b}}, st.booleans()),
    st.builds(lambda b: {"medianAutomatedStoppingSpec": {"useElapsedDuration": b}}, st.booleans()),
    st.fixed_dictionaries(
        {
            "convexAutomatedStoppingSpec": st.fixed_dictionaries(
                {},
                optional={
                    "maxStepCount": int64s,
                    "minStepCount": int64s,
                    "minMeasurementCount": int64s,
                    "learningRateParameterName": names,
                    "useElapsedDuration": st.booleans(),
                    "updateAllStoppedTrials": st.booleans(),
                },
            )
        }
    ),
)
_time_constraint = st.one_of(
    st.builds(lambda d: {"maxDuration": d}, durations),
    st.builds(lambda t: {"endTime": t}, times),
)
_stopping_config = st.fixed_dictionaries(
    {},
    optional={
        "shouldStopAsap": st.booleans(),
        "minimumRuntimeConstraint": _time_constraint,
        "maximumRuntimeConstraint": _time_constraint,
        "minNumTrials": int32s,
        "maxNumTrials": int32s,
        "maxNumTrialsNoProgress": int32s,
        "maxDurationNoProgress": durations,
    },
)


@st.composite
def convertible_tuning(draw: st.DrawFn) -> dict[str, Any]:
    """A tuning job document every field of which survives conversion to the API types."""
    trial = draw(convertible_spec())
    for key in ("displayName", "labels", "encryptionSpec"):
        trial.pop(key, None)
    study: dict[str, Any] = {
        "metrics": draw(st.lists(_metric, min_size=1, max_size=3)),
        "parameters": draw(st.lists(parameter(), min_size=1, max_size=3)),
        **draw(_stopping),
    }
    for key, values in (
        ("algorithm", ("GRID_SEARCH", "RANDOM_SEARCH")),
        ("measurementSelectionType", MEASUREMENT_SELECTION_TYPES),
        ("observationNoise", ("LOW", "HIGH")),
    ):
        value = draw(_maybe(st.sampled_from(values)))
        if value:
            study[key] = value
    if draw(st.booleans()):
        study["studyStoppingConfig"] = draw(_stopping_config)
    document: dict[str, Any] = {
        "studySpec": study,
        "trialJobSpec": trial,
        "maxTrialCount": draw(int32s),
        "parallelTrialCount": draw(int32s),
        "maxFailedTrialCount": draw(int32s),
        "labels": draw(st.dictionaries(names, names, max_size=3)),
    }
    optional = {
        "displayName": names,
        "project": st.just("vision-ml"),
        "region": st.just("us-central1"),
        "encryptionSpec": st.just(
            {"kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"}
        ),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            document[key] = draw(strategy)
    return document


_bad = st.one_of(anything, st.sampled_from(["", "MAXIMISE", "GRID", "UNIT_LOG", -1, 0, 1e308]))


@st.composite
def loose_tuning(draw: st.DrawFn) -> dict[str, Any]:
    """A tuning job document with some fields swapped for wrong or random values."""
    document = draw(convertible_tuning())
    study = document["studySpec"]
    for container, keys in (
        (document, ("maxTrialCount", "parallelTrialCount", "trialJobSpec", "studySpec")),
        (study, ("metrics", "parameters", "algorithm", "observationNoise")),
        (study["parameters"][0], ("parameterId", "scaleType", "conditionalParameterSpecs")),
        (study["metrics"][0], ("metricId", "goal", "safetyConfig")),
    ):
        for key in keys:
            if draw(st.integers(0, 5)) == 0:
                container[key] = draw(_bad)
    return document
