"""A trial's final measurement: read from what its trainer reported, or simulated.

Trainers report with the ``cloudml-hypertune`` package:
``hypertune.HyperTune().report_hyperparameter_tuning_metric(hyperparameter_metric_tag=...,
metric_value=..., global_step=...)`` rewrites the file ``CLOUD_ML_HP_METRIC_FILE`` names with its
last 100 reports, one JSON object a line: ``{"<tag>": "<value>", "global_step": "<step>", ...}``.
The emulator reads the chief's file (``workerpool0-0``, as Vertex reads the primary replica's)
when the trial's CustomJob has succeeded, and picks for each of the study's metrics the report
``measurement_selection_type`` asks for: the last one (the default) or the best one for the
metric's goal. The step count is that of the first metric's report.

The file is the trainer's: at most its last :data:`MAX_READ` bytes are read, and lines that are
not such objects, or values that are not finite numbers, are skipped.

In simulate mode nothing runs, so :func:`simulated` makes up a metric from the trial's parameter
values: a smooth function with its optimum at a point drawn from the job's id, so that every
algorithm has something to find.
"""

from __future__ import annotations

import json
import math
import os
import random
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.cloud.aiplatform_v1 import types as aip

from .studyspec import Param, ParamValue, walk

__all__ = ["MAX_READ", "Measured", "from_reports", "read_reports", "simulated"]

MAX_READ = 1024 * 1024
_MAXIMIZE = aip.StudySpec.MetricSpec.GoalType.MAXIMIZE
_BEST = aip.StudySpec.MeasurementSelectionType.BEST_MEASUREMENT


@dataclass(frozen=True)
class Measured:
    """A trial's final measurement: its step and one value per metric, in the study's order."""

    step: int
    values: list[float]


def read_reports(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a hypertune metric file, oldest first ([] when there is none)."""
    try:
        # The trainer's file may be made a FIFO (a plain open waits for a writer forever) or a
        # symlink out of the job's directory: only a regular file is read, never through a link.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                return []
            fh.seek(max(info.st_size - MAX_READ, 0))
            text = fh.read(MAX_READ).decode(errors="replace")
    except OSError:
        return []
    reports = []
    for line in text.splitlines():
        try:
            report = json.loads(line)
        except ValueError:  # a line cut by the size limit, or not JSON at all
            continue
        if isinstance(report, dict):
            reports.append(report)
    return reports


def _number(text: Any) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError, OverflowError):
        return None
    return value if math.isfinite(value) else None


def _step(report: dict[str, Any]) -> int:
    step = _number(report.get("global_step"))
    return int(step) if step is not None and 0 <= step < 2**63 else 0


def from_reports(reports: list[dict[str, Any]], study_spec: Any) -> Measured | str:
    """The final measurement the reports make, or why they make none (a message)."""
    step = 0
    values: list[float] = []
    for i, metric in enumerate(study_spec.metrics):
        found = [
            (v, _step(r)) for r in reports if (v := _number(r.get(metric.metric_id))) is not None
        ]
        if not found:
            tags = sorted(
                {k for r in reports for k in r}
                - {"timestamp", "trial", "global_step", "checkpoint_path"}
            )
            return (
                f"The trial reported no value for the metric {metric.metric_id!r} "
                f"(reported: {', '.join(map(repr, tags[:10])) or 'nothing'}). Report it with "
                "hypertune.HyperTune().report_hyperparameter_tuning_metric("
                f"hyperparameter_metric_tag={metric.metric_id!r}, metric_value=...)."
            )
        chosen = found[-1]
        if study_spec.measurement_selection_type == _BEST:
            pick = max if metric.goal == _MAXIMIZE else min
            chosen = pick(found, key=lambda vs: vs[0])
        values.append(chosen[0])
        if i == 0:
            step = chosen[1]
    return Measured(step, values)


def _position(param: Param, value: ParamValue) -> float:
    """Where ``value`` lies in the parameter's feasible space, from 0 to 1."""
    if param.values:
        return param.values.index(value) / max(len(param.values) - 1, 1)
    if param.high == param.low:
        return 0.5
    assert not isinstance(value, str)
    return (value - param.low) / (param.high - param.low)


def simulated(
    job_id: str, params: Sequence[Param], chosen: dict[str, ParamValue], study_spec: Any
) -> Measured:
    """A made-up measurement for simulate mode: 1 at the job's hidden optimum, less away from it.

    Each parameter has a hidden best position drawn from the job's id; the value is one minus
    the mean squared distance from it over the trial's parameters (MINIMIZE metrics get one minus
    that, so that the optimum is the same point whatever the goal).
    """
    distances: list[float] = []

    def visit(param: Param) -> ParamValue:
        # The walk meets the active parameters only, each as the spec that made it active.
        value = chosen[param.id]
        target = random.Random(f"{job_id}:{param.key}").random()
        distances.append((_position(param, value) - target) ** 2)
        return value

    walk(params, visit)
    score = 1.0 - sum(distances) / max(len(distances), 1)
    values = [score if m.goal == _MAXIMIZE else 1.0 - score for m in study_spec.metrics]
    return Measured(1, values)
