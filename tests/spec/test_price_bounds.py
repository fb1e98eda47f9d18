"""A bound is shown as a bound (issue 45): never added to a price and shown as one price."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from components import Catalog
from components.cli._cli import main
from components.costs._figure import Figure, figure_text
from components.costs._pricing import estimate, gpu_offers, summary
from components.policies import evaluate, hourly_cost_bound, job_from_props
from components.rules._catalog import Accelerator, MachineType, Price, Region, Zone
from tests.spec.helpers import pool, spec


def _catalog(machine_basis: str, gpu_basis: str) -> Catalog:
    """One machine and GPU whose flex-start cells have the given bases (Spot: the same)."""

    def price(kind: str, name: str, on_demand: float, other: float, basis: str) -> Price:
        return Price(
            "r",
            kind,
            name,
            on_demand,
            other,
            "2026-11",
            "t",
            "vertex",
            basis,
            flex_start_usd=other,
            flex_start_basis=basis,
        )

    return Catalog(
        machine_types={"m": MachineType("m", "a2", 12, 85)},
        accelerators={"G": Accelerator("G", flex_start=True)},
        attachable_counts={("m", "G"): (1, 2)},
        regions={"r": Region("r")},
        zones={"r-a": Zone("r-a", "r", frozenset({"G"}))},
        prices={
            ("r", "machine", "m"): price("machine", "m", 1.0, 0.5, machine_basis),
            ("r", "accelerator", "G"): price("accelerator", "G", 4.0, 2.0, gpu_basis),
        },
    )


def _job(strategy: str = "FLEX_START") -> object:
    return spec(pool("m", "G", 2), region="r", scheduling={"strategy": strategy, "timeout": "2h"})


def test_figures_add_end_by_end() -> None:
    price, at_most, at_least = Figure.price(1.0), Figure(None, 3.0, ("u",)), Figure(2.0, None)
    assert (price + at_most).kind == "at_most" and (price + at_most).high == 4.0
    assert (price + at_least).kind == "at_least" and (price + at_least).low == 3.0
    assert (at_most + at_least).kind == "unknown"
    assert (Figure(1.0, 2.0) + price).kind == "range"
    assert figure_text(price + at_most) == "at most $4.00/h (u)"
    assert figure_text(Figure(1.0, 2.0)) == "$1.00 to $2.00/h"
    assert figure_text(price.times(2)) == "$2.00/h"


@pytest.mark.parametrize(
    ("bases", "kind", "text"),
    [
        (("vertex", "vertex"), "price", "$4.50/h flex-start in r, at most $9.00 (2 h timeout)"),
        (("vertex", "bound"), "at_most", "at most $4.50/h flex-start in r, at most $9.00 (2 h"),
        (("floor", "vertex"), "at_least", "at least $4.50/h flex-start in r, the 2 h timeout"),
        (("bound", "floor"), "unknown", "$?/h flex-start in r: unknown price for the sum of"),
    ],
)
def test_a_bound_and_a_price_make_a_bound_never_a_price(
    bases: tuple[str, str], kind: str, text: str
) -> None:
    result = estimate(_job(), _catalog(*bases))  # type: ignore[arg-type]
    assert result.figure.kind == kind
    assert summary(result).startswith(text)
    if kind != "price":
        assert "bound" in summary(result) or "fee" in summary(result)


def test_estimate_prints_a_bound_in_words_with_why(tmp_path: Path) -> None:
    from components.cli import _cli

    catalog = _catalog("vertex", "bound")
    job = tmp_path / "job.yaml"
    job.write_text(
        "region: r\nscheduling: {strategy: FLEX_START, timeout: 2h}\nworkerPoolSpecs:\n"
        "  - machineSpec: {machineType: m, acceleratorType: G, acceleratorCount: 2}\n"
        "    replicaCount: 1\n    containerSpec: {imageUri: us-docker.pkg.dev/p/r/img:1}\n"
    )
    loaded = estimate(_job(), catalog)  # type: ignore[arg-type]
    lines = [
        _cli._figure_line("total $/h", loaded.figure, "/h"),
        _cli._ceiling_line("at most (timeout 2 h)", loaded.max_figure),
    ]
    assert lines[0] == (
        "total $/h: at most $4.5000/h (G: flex-start rate unknown, on-demand stands in as "
        "its upper bound)"
    )
    assert lines[1] == "at most (timeout 2 h): $9.00"
    floor = estimate(_job(), _catalog("floor", "vertex"))  # type: ignore[arg-type]
    assert _cli._ceiling_line("at most", floor.max_figure).startswith(
        "at most: unknown (at least $9.00: no ceiling known)"
    )


def test_estimate_of_the_shipped_a100_80gb_spot_job_is_a_lower_bound(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(
        "region: us-central1\nscheduling: {strategy: SPOT, timeout: 2h}\nworkerPoolSpecs:\n"
        "  - machineSpec: {machineType: a2-ultragpu-8g, acceleratorType: NVIDIA_A100_80GB,"
        " acceleratorCount: 8}\n"
        "    replicaCount: 1\n    containerSpec: {imageUri: us-docker.pkg.dev/p/r/img:1}\n"
    )
    out, err = io.StringIO(), io.StringIO()
    assert main(["estimate", str(job), "--no-live-prices"], out, err) == 0, err.getvalue()
    text = out.getvalue()
    assert "total $/h: at least $" in text and "without Vertex's fee" in text
    assert "at most (timeout 2 h): unknown (at least $" in text


def test_prices_rank_bounds_after_prices_and_say_why() -> None:
    offers = gpu_offers(_catalog("vertex", "bound"), capacity="flex_start")
    assert [o.figure.kind if o.figure else "" for o in offers] == ["at_most", "at_most"]
    out, err = io.StringIO(), io.StringIO()
    assert main(["prices", "--gpu", "a100-80gb", "--flex-start", "--no-live-prices"], out, err) == 0
    rows = out.getvalue().splitlines()[1:]
    kinds = ["unknown" if "unknown " in row.split("  ")[-1] else row for row in rows]
    assert any("at most " in row and "upper bound" in row for row in rows)
    first_unknown = next(i for i, row in enumerate(rows) if " unknown " in row)
    assert all(" unknown " in row for row in rows[first_unknown:]), kinds[:3]


TYPE = "pulumi-python:dynamic/vertex:TrainingJob"


def _policy_job(strategy: str) -> object:
    document = {
        "displayName": "j",
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "m", "acceleratorType": "G", "acceleratorCount": 2},
                "replicaCount": 1,
                "containerSpec": {"imageUri": "img"},
            }
        ],
        "scheduling": {"strategy": strategy},
    }
    return job_from_props("j", TYPE, {"spec": document, "region": "r"})


def test_the_cost_limit_judges_an_upper_bound_and_says_so() -> None:
    found = _policy_job("FLEX_START")
    cost, how = hourly_cost_bound(found, _catalog("vertex", "bound"))  # type: ignore[arg-type]
    assert cost == pytest.approx(4.5)
    assert "judged: at most $4.50/h" in how
    results = evaluate(
        [found],  # type: ignore[list-item]
        {"max-hourly-cost-per-job": {"maxUsdPerHour": 4.0}},
        _catalog("vertex", "bound"),
    )
    assert "judged: at most $4.50/h" in results["max-hourly-cost-per-job"][0]


def test_a_lower_bound_is_no_worst_case_and_on_demand_stands_in_or_it_fails_closed() -> None:
    found = _policy_job("FLEX_START")
    cost, how = hourly_cost_bound(found, _catalog("floor", "vertex"))  # type: ignore[arg-type]
    # flex-start never costs more than on-demand: the on-demand price is the worst case
    assert cost == pytest.approx(9.0)
    assert "on-demand price as the bound" in how and "at least $4.50/h" in how
    catalog = _catalog("floor", "vertex")
    machine = catalog.prices[("r", "machine", "m")]
    no_on_demand = {
        ("r", "machine", "m"): Price(
            "r",
            "machine",
            "m",
            None,
            0.5,
            basis="unknown",
            flex_start_usd=0.5,
            flex_start_basis="floor",
        )
    }
    import dataclasses

    assert machine.on_demand_usd == 1.0
    catalog = dataclasses.replace(catalog, prices={**catalog.prices, **no_on_demand})
    cost, how = hourly_cost_bound(found, catalog)  # type: ignore[arg-type]
    assert cost is None and how.startswith("no worst case: at least $4.50/h")


def test_the_pr_comment_shows_a_bound_as_a_bound() -> None:
    from components.review import _job_ceiling, _Side

    result = estimate(_job(), _catalog("vertex", "bound"))  # type: ignore[arg-type]
    side = _Side("m", "2 x G", result.usd_per_hour, "flex_start", (), figure=result.figure)
    assert side.cost.startswith("at most $4.50/h (G: flex-start rate unknown")
    assert _job_ceiling(result) == "at most $9.00 (2 h)"
    priced = estimate(_job(), _catalog("vertex", "vertex"))  # type: ignore[arg-type]
    assert _Side(
        "m", "2 x G", priced.usd_per_hour, "flex_start", (), figure=priced.figure
    ).cost == ("$4.50/h")


def test_the_dearest_of_several_figures_keeps_each_end_apart() -> None:
    from components.costs._figure import dearest

    price, at_most, at_least = Figure.price(9.0), Figure(None, 4.5, ("u",)), Figure(5.0, None)
    # flex-start at most $4.50 and on-demand $9.00: the dearest is on-demand, a price
    assert dearest([at_most, price]) == Figure(9.0, 9.0, ("u",))
    assert dearest([at_most, price]).kind == "price"
    # an attempt known only as at least leaves no upper end; the most known least stays
    assert dearest([price, at_least]).kind == "at_least" and dearest([price, at_least]).low == 9.0
    assert dearest([Figure.price(2.0), at_most]).kind == "range"
    assert dearest([]).kind == "unknown"


def test_the_spread_of_several_figures_runs_from_the_least_to_the_most() -> None:
    from components.costs._figure import spread

    price, at_most, at_least = Figure.price(9.0), Figure(None, 4.5, ("u",)), Figure(5.0, None)
    # one of two prices, not known which: a range, never either price
    assert spread([Figure.price(2.0), price]) == Figure(2.0, 9.0)
    assert spread([Figure.price(2.0), price]).kind == "range"
    assert spread([price, Figure.price(9.0)]).kind == "price"
    # an end one figure lacks is not known for the spread; the reasons stay
    assert spread([at_most, price]) == Figure(None, 9.0, ("u",))
    assert spread([price, at_least]) == Figure(5.0, None)
    assert spread([]).kind == "unknown"


def test_the_change_of_two_figures_is_a_bound_or_a_range_with_why() -> None:
    from components.costs._figure import delta_text

    old, new = Figure.price(4.0), Figure(None, 9.0, ("flex-start unknown",))
    assert delta_text(Figure.price(9.0) - old) == "+$5.00/h"
    assert delta_text(new - old) == "at most +$5.00/h (flex-start unknown)"
    assert delta_text(old - new) == "at least -$5.00/h (flex-start unknown)"
    assert delta_text(Figure(1.0, 3.0, ("r",)) - Figure.price(2.0)) == "-$1.00 to +$1.00/h (r)"
    assert delta_text(new - new).startswith("unknown (flex-start unknown")


def test_placed_attempts_are_priced_as_figures_and_the_worst_case_is_the_dearest() -> None:
    from components.core._placement import (
        attempts_of,
        declared_placement,
        parse_placement,
        preview_lines,
        priced_attempts,
        worst_case,
    )

    catalog = _catalog("vertex", "bound")
    job = _job("STANDARD")
    placement = declared_placement(["r"], ["flex-start", "on-demand"])
    attempts = attempts_of(parse_placement(placement)[0])
    priced = priced_attempts(job, attempts, catalog, under=None)
    figures = [price for _, _, price in priced]
    assert [f.kind for f in figures] == ["at_most", "price"]
    assert figures[0].high == pytest.approx(4.5) and figures[1].high == pytest.approx(9.0)
    assert worst_case(priced).kind == "price" and worst_case(priced).high == pytest.approx(9.0)
    assert worst_case(priced[:1]).kind == "at_most"
    from components.costs._quota import QuotaMetrics

    lines, _ = preview_lines("j", job, attempts, [], catalog, QuotaMetrics(), None, under=None)
    assert "expected at most $4.50/h, worst case $9.00/h" in lines[0]
    assert "try first r (flex-start): quota not read, at most $4.50/h" in lines[1]


def test_estimate_regions_shows_a_bound_as_a_bound(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(
        "scheduling: {timeout: 2h}\nworkerPoolSpecs:\n"
        "  - machineSpec: {machineType: a2-ultragpu-8g, acceleratorType: NVIDIA_A100_80GB,"
        " acceleratorCount: 8}\n"
        "    replicaCount: 1\n    containerSpec: {imageUri: us-docker.pkg.dev/p/r/img:1}\n"
    )
    out, err = io.StringIO(), io.StringIO()
    argv = ["estimate", str(job), "--no-live-prices", "--regions", "us-central1", "--capacity"]
    assert main([*argv, "spot"], out, err) == 0, err.getvalue()
    text = out.getvalue()
    [row] = [line for line in text.splitlines() if line.startswith("us-central1 (spot)")]
    assert "at least " in row  # Compute Engine's Spot rate: Vertex's fee is not in it
    assert "expected (first allowed, us-central1 (spot)): $/h at least " in text
    assert "worst case (most expensive candidate): $/h at least " in text
    assert "without Vertex's fee" in text


def test_prices_for_candidate_regions_keep_a_bound_a_bound() -> None:
    out, err = io.StringIO(), io.StringIO()
    argv = ["prices", "--gpu", "a100-80gb", "--spot", "--no-live-prices"]
    assert main([*argv, "--regions", "us-central1,europe-west4"], out, err) == 0, err.getvalue()
    summary = out.getvalue().split("placement across the candidates, in order:")[1]
    [row] = [line for line in summary.splitlines() if "a2-ultragpu-8g" in line]
    # Compute Engine's Spot rate without Vertex's fee: the expected and the worst case are
    # lower ends, never shown as prices
    assert row.count("at least ") == 2, row
