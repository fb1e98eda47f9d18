"""The PR comment's cost change carries figures (issue 45): a bound stays "at most"/"at least",
the change of two figures is a bound or a range with why, never a bound added into a price."""

from __future__ import annotations

from typing import Any

from components.lifecycle._wire import TRAINING_JOB_TYPE, encode_spec
from components.review import render_markdown
from tests.policy.test_tuning_review import preview, row, urn
from tests.spec.test_price_bounds import _catalog

# _catalog("vertex", "bound"): machine m $1.00/h on demand, $0.50/h flex-start (a price);
# GPU G $4.00/h on demand, its flex-start rate unknown: at most $2.00/h (a bound).
CATALOG = _catalog("vertex", "bound")
WHY = "G: flex-start rate unknown, on-demand stands in as its upper bound"


def _job(strategy: str, image: str = "img:1") -> dict[str, Any]:
    return {
        "displayName": "j",
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "m", "acceleratorType": "G", "acceleratorCount": 2},
                "replicaCount": 1,
                "containerSpec": {"imageUri": f"us-docker.pkg.dev/p/r/{image}"},
            }
        ],
        "scheduling": {"strategy": strategy, "timeout": "2h"},
    }


def _state(document: dict[str, Any]) -> dict[str, Any]:
    inputs = {"spec": encode_spec(document), "project": "p", "region": "r"}
    return {"type": TRAINING_JOB_TYPE, "inputs": inputs}


def _step(op: str, name: str, old: Any = None, new: Any = None) -> dict[str, Any]:
    found: dict[str, Any] = {"op": op, "urn": urn(TRAINING_JOB_TYPE, name)}
    if old is not None:
        found["oldState"] = _state(old)
    if new is not None:
        found["newState"] = _state(new)
    return found


def _total(markdown: str) -> str:
    [line] = [x for x in markdown.splitlines() if x.startswith("**Hourly cost change:")]
    return line


def test_a_new_bounded_job_adds_at_most_its_bound() -> None:
    markdown = render_markdown(preview(_step("create", "flex", new=_job("FLEX_START"))), CATALOG)
    assert f"| at most $4.50/h ({WHY}) (flex-start) |" in row(markdown, "flex")
    assert _total(markdown) == f"**Hourly cost change: at most +$4.50/h** ({WHY})"
    assert (
        "Ceiling change (timeouts x $/h; tuning jobs: trials x trial ceiling): at most +$9.00 ("
        in (markdown)
    )


def test_a_bound_and_a_price_are_summed_end_by_end_never_into_one_price() -> None:
    steps = [
        _step("create", "flex", new=_job("FLEX_START")),
        _step("create", "steady", new=_job("STANDARD")),
    ]
    markdown = render_markdown(preview(*steps), CATALOG)
    assert "| $9.00/h |" in row(markdown, "steady")
    # $9.00 + at most $4.50 is at most $13.50, not a price of $13.50
    assert _total(markdown).startswith("**Hourly cost change: at most +$13.50/h** (")


def test_a_deleted_bounded_job_saves_at_least_nothing_known_but_its_bound() -> None:
    markdown = render_markdown(preview(_step("delete", "flex", old=_job("FLEX_START"))), CATALOG)
    assert _total(markdown) == f"**Hourly cost change: at least -$4.50/h** ({WHY})"


def test_moving_from_a_price_to_a_bound_changes_by_a_bound() -> None:
    step = _step("replace", "moved", old=_job("STANDARD"), new=_job("FLEX_START"))
    markdown = render_markdown(preview(step), CATALOG)
    assert f"$9.00/h → at most $4.50/h ({WHY}) (at most -$4.50/h)" in row(markdown, "moved")
    assert _total(markdown) == f"**Hourly cost change: at most -$4.50/h** ({WHY})"


def test_the_same_hardware_at_the_same_bound_is_no_change() -> None:
    old, new = _job("FLEX_START"), _job("FLEX_START", image="img:2")
    markdown = render_markdown(preview(_step("replace", "same", old=old, new=new)), CATALOG)
    assert _total(markdown) == "**Hourly cost change: +$0.00/h**"


def test_two_bounds_of_different_jobs_leave_the_change_unknown_and_name_it() -> None:
    smaller = _job("FLEX_START")
    smaller["workerPoolSpecs"][0]["machineSpec"]["acceleratorCount"] = 1
    steps = [
        _step("replace", "resized", old=smaller, new=_job("FLEX_START")),
        _step("create", "steady", new=_job("STANDARD")),
    ]
    markdown = render_markdown(preview(*steps), CATALOG)
    # at most $4.50 - at most $2.50: neither end known, so not added to the $9.00
    assert _total(markdown) == (
        "**Hourly cost change: +$9.00/h** (jobs with known prices; unknown for `resized`)"
    )


def test_a_door_output_stands_only_where_the_catalog_knows_a_price() -> None:
    step = _step("create", "flex", new=_job("FLEX_START"))
    step["newState"]["outputs"] = {"hourlyCostUsd": 4.5, "maxCostUsd": 9.0}  # the summed number
    markdown = render_markdown(preview(step), CATALOG)
    assert _total(markdown).startswith("**Hourly cost change: at most +$4.50/h**")
    steady = _step("create", "steady", new=_job("STANDARD"))
    steady["newState"]["outputs"] = {"hourlyCostUsd": 8.0, "maxCostUsd": 16.0}  # live prices
    markdown = render_markdown(preview(steady), CATALOG)
    assert _total(markdown) == "**Hourly cost change: +$8.00/h**"


def test_a_placed_job_is_priced_where_expected_its_ceiling_at_the_dearest_figure() -> None:
    from components.core._placement import declared_placement

    step = _step("create", "placed", new=_job("STANDARD"))
    step["newState"]["inputs"]["placement"] = declared_placement(["r"], ["flex-start", "on-demand"])
    markdown = render_markdown(preview(step), CATALOG)
    line = row(markdown, "placed")
    # flex-start first (at most $4.50/h); on-demand ($9.00/h) is above that bound, so the
    # dearest attempt is a price, and the ceiling its 2 h
    assert f"| at most $4.50/h ({WHY}) (up to $9.00/h in r (on-demand))" in line
    assert line.endswith("| $18.00 (2 h) in r (on-demand) |")
    assert "Ceiling change (timeouts x $/h; tuning jobs: trials x trial ceiling): +$18.00\n" in (
        markdown
    )
