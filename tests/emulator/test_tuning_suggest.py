"""Suggestions, measurements and study-spec rules of tuning jobs, without a server."""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import hypertune  # type: ignore[import-untyped]
import pytest
from google.cloud.aiplatform_v1 import types as aip

from emulator import measurements, studyspec, suggest

from .test_tuning import double, integer

PS = aip.StudySpec.ParameterSpec
Cond = PS.ConditionalParameterSpec


def study(*parameters: PS, algorithm: str = "ALGORITHM_UNSPECIFIED", **fields: Any) -> Any:
    spec = aip.StudySpec(
        metrics=[aip.StudySpec.MetricSpec(metric_id="loss", goal="MINIMIZE")],
        parameters=list(parameters),
        algorithm=algorithm,
        **fields,
    )
    return aip.StudySpec.pb(spec)


def draw(spec: Any, n: int, seed: int = 1) -> list[dict[str, Any]]:
    suggester = suggest.make_suggester(spec, seed, [])
    return [point for _ in range(n) if (point := suggester.suggest()) is not None]


# -- grid ----------------------------------------------------------------------------------------


def test_grid_is_lazy_over_huge_integer_ranges() -> None:
    spec = study(integer("a", 0, 10**18), integer("b", 5, 6), algorithm="GRID_SEARCH")
    started = time.monotonic()
    assert draw(spec, 3) == [{"a": 0, "b": 5}, {"a": 0, "b": 6}, {"a": 1, "b": 5}]
    assert time.monotonic() - started < 1


def test_grid_ends_after_the_last_combination_and_resumes_where_it_was() -> None:
    spec = study(integer("a", 1, 2), integer("b", 1, 2), algorithm="GRID_SEARCH")
    points = draw(spec, 10)
    assert points == [{"a": 1, "b": 1}, {"a": 1, "b": 2}, {"a": 2, "b": 1}, {"a": 2, "b": 2}]
    history = [suggest.Past(p, True, [0.0]) for p in points[:3]]
    assert suggest.make_suggester(spec, 1, history).suggest() == points[3]


# -- random --------------------------------------------------------------------------------------


def test_random_scales() -> None:
    """Log puts most points low in the range, reverse log most points high, linear in between."""
    medians = {}
    for scale in ("UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE"):
        points = draw(study(double("x", 1.0, 1000.0, scale), algorithm="RANDOM_SEARCH"), 400)
        assert all(1.0 <= p["x"] <= 1000.0 for p in points)
        medians[scale] = statistics.median(p["x"] for p in points)
    assert medians["UNIT_LOG_SCALE"] < 100 < medians["UNIT_LINEAR_SCALE"]
    assert medians["UNIT_REVERSE_LOG_SCALE"] > 900


def test_random_integers_cover_their_whole_range() -> None:
    points = draw(study(integer("n", 1, 4, "UNIT_LOG_SCALE"), algorithm="RANDOM_SEARCH"), 200)
    assert {p["n"] for p in points} == {1, 2, 3, 4}
    assert all(isinstance(p["n"], int) for p in points)


def test_random_search_is_reproducible_per_job_and_trial() -> None:
    spec = study(double("x", 0.0, 1.0), algorithm="RANDOM_SEARCH")
    first = draw(spec, 5, seed=3)
    assert draw(spec, 5, seed=3) == first
    assert draw(spec, 5, seed=4) != first
    history = [suggest.Past(p, True, [1.0]) for p in first[:2]]
    assert suggest.make_suggester(spec, 3, history).suggest() == first[2]


# -- Bayesian optimisation -----------------------------------------------------------------------


def test_default_algorithm_is_optuna_tpe_and_learns() -> None:
    """Minimising (x - 0.3)^2: after its random start-up trials TPE closes in on 0.3."""
    spec = study(double("x", 0.0, 1.0))
    suggester = suggest.make_suggester(spec, 7, [])
    errors = []
    for number in range(40):
        point = suggester.suggest()
        assert point is not None
        error = abs(float(point["x"]) - 0.3)
        errors.append(error)
        suggester.tell(number, [error**2])
    assert statistics.median(errors[-10:]) < statistics.median(errors[:10]) / 2
    assert type(suggester._study).__module__.startswith("optuna")  # type: ignore[attr-defined]


def test_bayesian_suggester_replays_history_after_a_restart() -> None:
    spec = study(double("x", 0.0, 1.0), integer("n", 1, 8, "UNIT_REVERSE_LOG_SCALE"))
    suggester = suggest.make_suggester(spec, 11, [])
    history = []
    for number in range(12):
        point = suggester.suggest()
        assert point is not None and point["n"] in range(1, 9)
        values = None if number == 3 else [float(point["x"])]
        suggester.tell(number, values)
        history.append(suggest.Past(point, True, values))
    running = suggester.suggest()
    assert running is not None
    history.append(suggest.Past(running, False))
    again = suggest.make_suggester(spec, 11, history)
    again.tell(12, [0.5])  # the trial that was running when the service stopped
    assert again.suggest() is not None


def test_conditional_parameters_are_asked_only_under_their_parent() -> None:
    child = Cond(
        parent_int_values=Cond.IntValueCondition(values=[2]),
        parameter_spec=double("dropout", 0.0, 0.5),
    )
    parent = integer("layers", 1, 3)
    parent.conditional_parameter_specs = [child]
    for algorithm in ("ALGORITHM_UNSPECIFIED", "RANDOM_SEARCH"):
        for point in draw(study(parent, algorithm=algorithm), 30):
            assert ("dropout" in point) == (point["layers"] == 2), point


def test_args_and_proto_values() -> None:
    assert [suggest.format_arg(v) for v in (0.01, 64.0, 3, "adam", 1e-20)] == [
        "0.01",
        "64",
        "3",
        "adam",
        "1e-20",
    ]
    param = studyspec.search_space(study(integer("n", 1, 4)))[0]
    assert suggest.from_value(param, suggest.to_value(3)) == 3


# -- measurements --------------------------------------------------------------------------------


def _report(monkeypatch: pytest.MonkeyPatch, path: Path, *reports: tuple[str, float, int]) -> None:
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(path))
    reporter = hypertune.HyperTune()
    for tag, value, step in reports:
        reporter.report_hyperparameter_tuning_metric(
            hyperparameter_metric_tag=tag, metric_value=value, global_step=step
        )


def test_last_and_best_measurements_from_hypertune(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m" / "output.metrics"
    _report(
        monkeypatch, path, ("loss", 3.0, 1), ("acc", 0.5, 1), ("loss", 1.0, 2), ("loss", 2.0, 3)
    )
    reports = measurements.read_reports(path)
    assert measurements.from_reports(reports, study()) == measurements.Measured(3, [2.0])
    best = study(measurement_selection_type="BEST_MEASUREMENT")
    assert measurements.from_reports(reports, best) == measurements.Measured(2, [1.0])
    best.metrics[0].goal = aip.StudySpec.MetricSpec.GoalType.MAXIMIZE
    assert measurements.from_reports(reports, best) == measurements.Measured(1, [3.0])


def test_missing_metric_says_what_was_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "output.metrics"
    _report(monkeypatch, path, ("accuracy", 0.9, 1))
    reason = measurements.from_reports(measurements.read_reports(path), study())
    assert isinstance(reason, str)
    assert "'loss'" in reason and "'accuracy'" in reason
    assert measurements.read_reports(tmp_path / "none") == []
    assert "reported: nothing" in str(measurements.from_reports([], study()))


def test_a_metric_file_that_is_a_fifo_or_a_symlink_is_not_read(tmp_path: Path) -> None:
    """The trainer owns the file: a FIFO must not hold the service, a link must not lead
    it to read elsewhere."""
    fifo = tmp_path / "fifo.metrics"
    os.mkfifo(fifo)
    assert measurements.read_reports(fifo) == []  # at once: a plain open waits for a writer
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"loss": "1.0", "global_step": "1"}\n')
    link = tmp_path / "link.metrics"
    link.symlink_to(elsewhere)
    assert measurements.read_reports(link) == []
    assert measurements.read_reports(elsewhere) != []


def test_garbage_in_the_metric_file_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "output.metrics"
    lines = [
        "not json",
        json.dumps([1, 2]),
        json.dumps({"loss": "nan", "global_step": "1"}),
        json.dumps({"loss": "Infinity"}),
        json.dumps({"loss": "0.25", "global_step": "-5"}),
        json.dumps({"loss": {"x": 1}}),
    ]
    path.write_text("\n".join(lines) + "\n" + "x" * (2 * measurements.MAX_READ) + "\n")
    path.write_text(path.read_text() + json.dumps({"loss": "0.5", "global_step": "9"}) + "\n")
    assert measurements.from_reports(measurements.read_reports(path), study()) == (
        measurements.Measured(9, [0.5])
    )
    path.write_text("\n".join(lines) + "\n")
    assert measurements.from_reports(measurements.read_reports(path), study()) == (
        measurements.Measured(0, [0.25])
    )


def test_simulated_measurement_peaks_at_the_jobs_hidden_optimum() -> None:
    spec = study(double("x", 0.0, 1.0))
    space = studyspec.search_space(spec)
    values = [
        measurements.simulated("123", space, {"x": x / 20}, spec).values[0] for x in range(21)
    ]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert min(values) < max(values)
    assert measurements.simulated("123", space, {"x": 0.5}, spec).values[0] == values[10]


# -- rules ---------------------------------------------------------------------------------------


def _job(spec: Any, **fields: Any) -> Any:
    job = aip.HyperparameterTuningJob.pb(
        aip.HyperparameterTuningJob(max_trial_count=1, parallel_trial_count=1)
    )
    job.study_spec.CopyFrom(spec)
    for name, value in fields.items():
        setattr(job, name, value)
    return job


def test_a_valid_study_has_no_violations() -> None:
    assert studyspec.study_violations(_job(study(double("x", 0.0, 1.0)))) == []


def test_nesting_and_size_are_bounded() -> None:
    spec = double("x", 0, 1)
    deep = integer("p", 1, 2)
    node = deep
    for depth in range(studyspec.MAX_DEPTH + 2):
        child = integer(f"c{depth}", 1, 2)
        node.conditional_parameter_specs = [
            Cond(parent_int_values=Cond.IntValueCondition(values=[1]), parameter_spec=child)
        ]
        node = node.conditional_parameter_specs[0].parameter_spec
    found = studyspec.study_violations(_job(study(spec, deep)))
    assert any("nested at most" in message for _, message in found)
    many = [double(f"x{i}", 0, 1) for i in range(studyspec.MAX_PARAMETERS + 1)]
    found = studyspec.study_violations(_job(study(*many)))
    assert [m for _, m in found] == [f"At most {studyspec.MAX_PARAMETERS} parameters are supported"]


def test_conditional_siblings_may_share_an_id_for_disjoint_values() -> None:
    def branch(values: list[int], high: int) -> Cond:
        return Cond(
            parent_int_values=Cond.IntValueCondition(values=values),
            parameter_spec=integer("units", 1, high),
        )

    parent = integer("layers", 1, 3)
    parent.conditional_parameter_specs = [branch([1], 8), branch([2, 3], 16)]
    assert studyspec.study_violations(_job(study(parent))) == []
    parent.conditional_parameter_specs = [branch([1, 2], 8), branch([2, 3], 16)]
    found = studyspec.study_violations(_job(study(parent)))
    assert any("duplicate parameter id 'units'" in m for _, m in found)
