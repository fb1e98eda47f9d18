"""Parameter values for the trials of a hyperparameter tuning job, by the study's algorithm.

* ``GRID_SEARCH``: every combination of the feasible values, one per trial, in order: parameters
  in spec order with the first one changing slowest, values in spec order (integers ascending),
  a conditional parameter's values combined only with the parent values that make it active.
  When every combination has been tried, no more trials start.
* ``RANDOM_SEARCH``: each trial drawn on its own, uniformly in the parameter's scale (linear,
  log, reverse log) for DOUBLE and INTEGER, uniformly among categories and discrete values;
  seeded by the job and the trial's number, so a job's trials are the same after a restart.
* ``ALGORITHM_UNSPECIFIED`` (Vertex's Bayesian optimisation): Optuna's TPE sampler, seeded from
  the job, through Optuna's ask/tell interface; each parameter is an Optuna distribution named by
  its place in the tree (conditional parameters are asked for only when their parent takes a
  matching value). Discrete values are categorical choices for it, and a reverse log scale is a
  log scale mirrored over the range. A suggester rebuilt after a restart replays the trials so
  far (each enqueued, asked and told again).

Every suggester answers :meth:`Suggester.suggest` (the next trial's values, or None when there
is none) and :meth:`Suggester.tell` (a trial's metric values, or None when it failed).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from google.cloud.aiplatform_v1 import types as aip
from google.protobuf import struct_pb2

from .studyspec import Param, ParamValue, active_children, search_space, walk

__all__ = ["Past", "Suggester", "format_arg", "from_value", "make_suggester", "to_value"]

_Algorithm = aip.StudySpec.Algorithm
_Scale = aip.StudySpec.ParameterSpec.ScaleType
_MAXIMIZE = aip.StudySpec.MetricSpec.GoalType.MAXIMIZE


@dataclass(frozen=True)
class Past:
    """A trial so far: its values, and its metric values once it finished (None: it failed)."""

    params: dict[str, ParamValue]
    finished: bool
    values: Sequence[float] | None = None


class Suggester(Protocol):
    """Where the values of a job's next trial come from."""

    def suggest(self) -> dict[str, ParamValue] | None:
        """The next trial's values by parameter id, in argument order; None: no more trials."""
        ...

    def tell(self, number: int, values: Sequence[float] | None) -> None:
        """Trial ``number`` (0 for the first) finished with ``values`` (None: it failed)."""
        ...


def make_suggester(study_spec: Any, seed: int, history: Sequence[Past]) -> Suggester:
    """The suggester of the study's algorithm, caught up with the trials in ``history``."""
    params = search_space(study_spec)
    if study_spec.algorithm == _Algorithm.GRID_SEARCH:
        return _Grid(params, len(history))
    if study_spec.algorithm == _Algorithm.RANDOM_SEARCH:
        return _Random(params, seed, len(history))
    goals = [m.goal == _MAXIMIZE for m in study_spec.metrics]
    return _Bayesian(params, goals, seed, history)


# -- values on the wire --------------------------------------------------------------------------


def format_arg(value: ParamValue) -> str:
    """A value as a trial's ``--<id>=<value>`` argument: whole numbers without a fraction."""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and not (value.is_integer() and abs(value) < 2**53):
        return repr(value)
    return str(int(value))


def to_value(value: ParamValue) -> struct_pb2.Value:
    """A value as ``Trial.Parameter.value``: a string for categories, else a number."""
    if isinstance(value, str):
        return struct_pb2.Value(string_value=value)
    return struct_pb2.Value(number_value=float(value))


def from_value(param: Param, value: struct_pb2.Value) -> ParamValue:
    """The value of ``param`` that :func:`to_value` stored."""
    if param.type == "CATEGORICAL":
        return str(value.string_value)
    if param.type == "INTEGER":
        return int(value.number_value)
    return float(value.number_value)


# -- grid search ---------------------------------------------------------------------------------


def _grid_values(param: Param) -> Iterator[ParamValue]:
    if param.type == "INTEGER":
        return iter(range(int(param.low), int(param.high) + 1))
    return iter(param.values)


def _grid(params: Sequence[Param]) -> Iterator[dict[str, ParamValue]]:
    """Every combination, lazily (an INTEGER range may be far larger than any job's trials)."""
    if not params:
        yield {}
        return
    first, rest = params[0], params[1:]
    for value in _grid_values(first):
        for below in _grid(active_children(first, value)):
            for after in _grid(rest):
                yield {first.id: value, **below, **after}


class _Grid:
    def __init__(self, params: list[Param], done: int) -> None:
        self._points = itertools.islice(_grid(params), done, None)

    def suggest(self) -> dict[str, ParamValue] | None:
        return next(self._points, None)

    def tell(self, number: int, values: Sequence[float] | None) -> None:
        """Grid search learns nothing from results."""


# -- random search -------------------------------------------------------------------------------


def _log_point(low: float, top: float, u: float) -> float:
    return math.exp(math.log(low) + u * (math.log(top) - math.log(low)))


def _from_unit(param: Param, u: float, top: float) -> float:
    """The point ``u`` in [0, 1) of [low, top) in the parameter's scale."""
    if param.scale == _Scale.UNIT_LOG_SCALE:
        return _log_point(param.low, top, u)
    if param.scale == _Scale.UNIT_REVERSE_LOG_SCALE:
        # The log scale mirrored: points crowd towards the top of the range instead.
        return param.low + top - _log_point(param.low, top, 1.0 - u)
    return param.low + u * (top - param.low)


def _random_value(param: Param, rng: random.Random) -> ParamValue:
    if param.values:
        return rng.choice(param.values)
    if param.type == "INTEGER":
        low, high = int(param.low), int(param.high)
        return min(max(math.floor(_from_unit(param, rng.random(), high + 1)), low), high)
    return min(max(_from_unit(param, rng.random(), param.high), param.low), param.high)


class _Random:
    def __init__(self, params: list[Param], seed: int, done: int) -> None:
        self._params = params
        self._seed = seed
        self._number = done

    def suggest(self) -> dict[str, ParamValue]:
        rng = random.Random(f"{self._seed}:{self._number}")
        self._number += 1
        return walk(self._params, lambda p: _random_value(p, rng))

    def tell(self, number: int, values: Sequence[float] | None) -> None:
        """Random search learns nothing from results."""


# -- Bayesian optimisation (Optuna) --------------------------------------------------------------


def _mirrored(param: Param) -> bool:
    """True for the reverse log scale: Optuna samples a log scale, the trial gets its mirror."""
    return param.scale == _Scale.UNIT_REVERSE_LOG_SCALE and param.type in ("DOUBLE", "INTEGER")


def _mirror(param: Param, value: ParamValue) -> ParamValue:
    if not _mirrored(param) or isinstance(value, str):
        return value
    if param.type == "INTEGER":
        return int(param.low) + int(param.high) - int(value)
    return min(max(param.low + param.high - value, param.low), param.high)


def _ask(trial: Any, param: Param) -> ParamValue:
    """One parameter's value from an Optuna trial (define-by-run)."""
    log = param.scale in (_Scale.UNIT_LOG_SCALE, _Scale.UNIT_REVERSE_LOG_SCALE)
    if param.type == "DOUBLE":
        value: ParamValue = trial.suggest_float(param.key, param.low, param.high, log=log)
    elif param.type == "INTEGER":
        value = trial.suggest_int(param.key, int(param.low), int(param.high), log=log)
    else:
        value = trial.suggest_categorical(param.key, list(param.values))
    return _mirror(param, value)


class _Bayesian:
    def __init__(
        self, params: list[Param], maximize: list[bool], seed: int, history: Sequence[Past]
    ) -> None:
        import optuna  # only jobs with the default algorithm pay for importing it

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._params = params
        self._study = optuna.create_study(
            sampler=optuna.samplers.TPESampler(seed=seed),
            directions=["maximize" if up else "minimize" for up in maximize],
        )
        self._fail = optuna.trial.TrialState.FAIL
        for number, past in enumerate(history):
            self._replay(number, past)

    def _replay(self, number: int, past: Past) -> None:
        keyed: dict[str, ParamValue] = {}

        def recorded(param: Param) -> ParamValue:
            value = past.params[param.id]
            keyed[param.key] = _mirror(param, value)
            return value

        walk(self._params, recorded)
        self._study.enqueue_trial(keyed)
        self.suggest()
        if past.finished:
            self.tell(number, past.values)

    def suggest(self) -> dict[str, ParamValue]:
        trial = self._study.ask()
        return walk(self._params, lambda p: _ask(trial, p))

    def tell(self, number: int, values: Sequence[float] | None) -> None:
        if values is None:
            self._study.tell(number, state=self._fail, skip_if_finished=True)
        else:
            self._study.tell(number, list(values), skip_if_finished=True)
