"""The resources' cost outputs say what their figures are (issue 45): ``costBasis`` and the
ends beside ``hourlyCostUsd``/``maxCostUsd``, which keep the number states always held; the PR
comment and the policy pack read the basis, so a bound is shown and judged as a bound."""

from __future__ import annotations

from typing import Any

import pytest

from components.costs._figure import COST_BASES, Figure, figure_of_output
from components.costs._policies import PolicyJob, hourly_cost_bound, job_from_props
from components.costs._pricing import cost_outputs, tuning_cost_outputs
from components.lifecycle._wire import COST_FIELDS, STATUS_FIELDS, TUNING_STATUS_FIELDS
from components.plugin._schema import build_schema
from components.plugin._shape import TRAINING, TUNING, camel, outputs_of_status
from components.review import render_markdown
from tests.policy.test_review_bounds import CATALOG, WHY, _job, _step, _total
from tests.policy.test_tuning_review import preview, row
from tests.spec.test_price_bounds import _catalog

PLUGIN_TRAINING = "gpu-training:vertex:TrainingJob"


@pytest.mark.parametrize(
    ("bases", "strategy", "basis", "low", "high"),
    [
        (("vertex", "vertex"), "FLEX_START", "price", 9.0, 9.0),  # (0.5 + 2 x 2.0) x 2 h
        (("vertex", "bound"), "FLEX_START", "at most", None, 9.0),
        (("floor", "vertex"), "FLEX_START", "at least", 9.0, None),
        (("bound", "floor"), "FLEX_START", "unknown", None, None),
        (("vertex", "bound"), "STANDARD", "price", 18.0, 18.0),
    ],
)
def test_cost_outputs_carry_the_basis_and_the_number_they_always_held(
    bases: tuple[str, str], strategy: str, basis: str, low: float | None, high: float | None
) -> None:
    outputs = cost_outputs(_job(strategy), "r", _catalog(*bases))
    assert set(outputs) == set(COST_FIELDS)
    assert outputs["cost_basis"] == basis
    # The number a state written before the basis holds: the cells added, a bound as it is.
    assert outputs["max_cost_usd"] == pytest.approx(outputs["hourly_cost_usd"] * 2)
    assert outputs["max_cost_low_usd"] == (None if low is None else pytest.approx(low))
    assert outputs["max_cost_high_usd"] == (None if high is None else pytest.approx(high))
    hourly_ends = (outputs["hourly_cost_low_usd"], outputs["hourly_cost_high_usd"])
    assert hourly_ends == tuple(
        None if end is None else pytest.approx(end / 2) for end in (low, high)
    )
    if basis != "unknown":
        known = high if high is not None else low
        assert outputs["max_cost_usd"] == pytest.approx(known)


def test_an_unpriceable_spec_is_of_basis_unknown_with_no_figures() -> None:
    outputs = cost_outputs({"workerPoolSpecs": "not a list"}, "r", CATALOG)
    assert outputs["cost_basis"] == "unknown"
    assert {k: v for k, v in outputs.items() if k != "cost_basis"} == dict.fromkeys(
        set(COST_FIELDS) - {"cost_basis"}
    )
    tuning = tuning_cost_outputs({"trialJobSpec": "not a mapping"}, "r", CATALOG)
    assert tuning["cost_basis"] == "unknown" and tuning["trial_hourly_cost_usd"] is None


def test_a_tuning_jobs_outputs_are_every_parallel_trial_of_the_trials_basis() -> None:
    document = {
        "displayName": "t",
        "studySpec": {
            "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
            "parameters": [
                {"parameterId": "lr", "doubleValueSpec": {"minValue": 0.1, "maxValue": 1}}
            ],
        },
        "maxTrialCount": 4,
        "parallelTrialCount": 2,
        "trialJobSpec": {k: v for k, v in _job("FLEX_START").items() if k != "displayName"},
    }
    outputs = tuning_cost_outputs(document, "r", CATALOG)
    assert outputs["cost_basis"] == "at most"
    assert outputs["trial_hourly_cost_usd"] == pytest.approx(4.5)
    assert outputs["hourly_cost_high_usd"] == pytest.approx(9.0)  # two trials at once
    assert outputs["max_cost_high_usd"] == pytest.approx(36.0)  # four trials x 2 h
    assert outputs["hourly_cost_low_usd"] is None


def test_both_doors_offer_the_basis_and_ends_as_outputs() -> None:
    assert set(COST_FIELDS) <= set(STATUS_FIELDS) and set(COST_FIELDS) <= set(TUNING_STATUS_FIELDS)
    resources = build_schema()["resources"]
    for token in (PLUGIN_TRAINING, "gpu-training:vertex:HyperparameterTuningJob"):
        properties = resources[token]["properties"]
        for field in COST_FIELDS:
            assert camel(field) in properties, (token, field)
        assert "at most" in properties["costBasis"]["description"]
    status = cost_outputs(_job("FLEX_START"), "r", CATALOG)
    for shape in (TRAINING, TUNING):
        assert outputs_of_status(shape, status)["costBasis"] == "at most"


@pytest.mark.parametrize(
    ("basis", "low", "high", "kind"),
    [
        ("price", 2.0, 2.0, "price"),
        ("at most", None, 3.0, "at_most"),
        ("at least", 1, None, "at_least"),
        ("range", 1.0, 3.0, "range"),
        ("unknown", None, None, "unknown"),
    ],
)
def test_the_outputs_figure_is_read_back_by_its_basis(
    basis: str, low: Any, high: Any, kind: str
) -> None:
    assert basis in COST_BASES
    figure = figure_of_output(basis, low, high, "why")
    assert figure is not None and figure.kind == kind
    assert figure.why == (() if kind == "price" else ("why",))


@pytest.mark.parametrize(
    ("basis", "low", "high"),
    [
        (None, 2.0, 2.0),  # a state written before the basis
        ("04da6b54-80e4-46f7-96ec-b56ff0331ba9", None, None),  # unknown at preview
        ("price", None, 3.0),  # ends that do not make the basis claimed
        ("at most", 1.0, 3.0),
        ("price", True, True),
        ("cheap", 1.0, 1.0),
    ],
)
def test_outputs_without_a_basis_they_make_are_not_read_as_a_figure(
    basis: Any, low: Any, high: Any
) -> None:
    assert figure_of_output(basis, low, high) is None


def _plugin_outputs(basis: str, low: float | None, high: float | None) -> dict[str, Any]:
    return {
        "hourlyCostUsd": high if high is not None else low,
        "maxCostUsd": None if high is None else 2 * high,
        "costBasis": basis,
        "hourlyCostLowUsd": low,
        "hourlyCostHighUsd": high,
        "maxCostLowUsd": None if low is None else 2 * low,
        "maxCostHighUsd": None if high is None else 2 * high,
    }


def test_the_pr_comment_shows_a_door_bound_as_a_bound_with_the_catalogs_why() -> None:
    # The catalog prices this STANDARD job at $9.00/h; the door (its live prices) says the job
    # costs at most $7.00/h: the door's figure stands, as a bound.
    step = _step("create", "live", new=_job("STANDARD"))
    step["newState"]["outputs"] = _plugin_outputs("at most", None, 7.0)
    markdown = render_markdown(preview(step), CATALOG)
    assert "| at most $7.00/h (the resource's outputs) | at most $14.00 |" in row(markdown, "live")
    assert _total(markdown) == "**Hourly cost change: at most +$7.00/h** (the resource's outputs)"


def test_a_door_bound_of_the_catalogs_kind_gives_the_catalogs_reason() -> None:
    step = _step("create", "flex", new=_job("FLEX_START"))
    step["newState"]["outputs"] = _plugin_outputs("at most", None, 4.0)
    markdown = render_markdown(preview(step), CATALOG)
    assert f"| at most $4.00/h ({WHY}) (flex-start) | at most $8.00 |" in row(markdown, "flex")


def test_a_door_price_stands_over_the_catalogs_bound_once_it_says_it_is_a_price() -> None:
    # Without the basis, the summed number of a bound is not taken as a price (the catalog's
    # bound stands: tests/policy/test_review_bounds.py); with it, a live price is a price.
    step = _step("create", "flex", new=_job("FLEX_START"))
    step["newState"]["outputs"] = _plugin_outputs("price", 3.25, 3.25)
    markdown = render_markdown(preview(step), CATALOG)
    assert "| $3.25/h (flex-start) | $6.50 |" in row(markdown, "flex")
    assert _total(markdown) == "**Hourly cost change: +$3.25/h**"


def _policy_job(outputs: dict[str, Any], strategy: str = "STANDARD") -> PolicyJob:
    props = {**TRAINING.rest_document(_job(strategy)), "project": "p", "region": "r", **outputs}
    job = job_from_props("live", PLUGIN_TRAINING, props)
    assert job is not None
    return job


def test_the_policy_pack_judges_the_doors_figure_a_bound_as_a_bound() -> None:
    cost, how = hourly_cost_bound(_policy_job(_plugin_outputs("at most", None, 7.0)), CATALOG)
    assert cost == pytest.approx(7.0)
    assert "judged: at most $7.00/h (the resource's outputs)" in how
    assert how.endswith("; prices: the resource's outputs (costBasis at most)")
    cost, how = hourly_cost_bound(_policy_job(_plugin_outputs("price", 3.0, 3.0)), CATALOG)
    assert cost == pytest.approx(3.0) and "judged" not in how


def test_the_policy_pack_finds_no_worst_case_in_a_door_lower_bound() -> None:
    job = _policy_job(_plugin_outputs("at least", 5.0, None))
    cost, how = hourly_cost_bound(job, CATALOG)
    assert cost is None
    assert how == (
        "no worst case: at least $5.00/h (the resource's outputs); prices: the resource's "
        "outputs (costBasis at least)"
    )


def test_the_policy_pack_keeps_the_catalogs_figure_without_a_basis() -> None:
    # A state written before the basis: its one number may be a bound added in; not judged.
    job = _policy_job({"hourlyCostUsd": 1.0}, "FLEX_START")
    assert job.priced is None
    cost, how = hourly_cost_bound(job, CATALOG)
    assert cost == pytest.approx(4.5) and f"judged: at most $4.50/h ({WHY})" in how


def test_figure_of_output_keeps_both_ends_apart() -> None:
    assert figure_of_output("range", 1.0, 3.0) == Figure(1.0, 3.0)
