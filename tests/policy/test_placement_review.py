"""The PR comment prices a job that names several regions (``placement``) where it is expected
to run, the first attempt in a region that offers its machines, and its ceiling at the dearest
attempt: what it can cost wherever it lands, as the policy pack bounds it."""

from __future__ import annotations

from typing import Any

from components import load_catalog
from components.core._placement import declared_placement
from components.costs._pricing import estimate
from components.lifecycle._wire import TRAINING_JOB_TYPE, TUNING_JOB_TYPE, encode_spec
from components.review import render_markdown
from components.rules._catalog import training_regions_for
from components.rules._spec import JobSpec
from tests.policy.test_tuning_review import preview, row, sweep, urn

REGIONS = ["us-central1", "us-east4", "europe-west4"]


def _job(timeout: str = "10h") -> dict[str, Any]:
    document: dict[str, Any] = sweep()["trialJobSpec"]  # n1-standard-4 with 2 x T4
    document["scheduling"] = {"timeout": timeout}
    return document


def _step(
    document: dict[str, Any], placement: list[dict[str, Any]] | None, type_: str
) -> dict[str, Any]:
    inputs: dict[str, Any] = {
        "spec": encode_spec(document),
        "project": "vision-ml",
        "region": REGIONS[0],
    }
    if placement is not None:
        inputs["placement"] = placement
    return {
        "op": "create",
        "urn": urn(type_, "placed"),
        "newState": {"type": type_, "inputs": inputs},
    }


def _hourly(document: dict[str, Any], region: str) -> tuple[float, float]:
    priced = estimate(JobSpec.parse(document), load_catalog(), region=region)
    assert priced.usd_per_hour is not None and priced.max_usd is not None
    return priced.usd_per_hour, priced.max_usd


def test_a_placed_job_shows_its_expected_price_and_its_dearest_attempt() -> None:
    document = _job()
    markdown = render_markdown(
        preview(_step(document, declared_placement(REGIONS), TRAINING_JOB_TYPE))
    )
    prices = {region: _hourly(document, region) for region in REGIONS}
    dearest = max(REGIONS, key=lambda region: prices[region][1])
    line = row(markdown, "placed")
    expected = f"${prices[REGIONS[0]][0]:,.2f}/h"
    assert f"| {expected}" in line
    if dearest != REGIONS[0]:
        assert f"(up to ${prices[dearest][0]:,.2f}/h in {dearest})" in line
    assert f"${prices[dearest][1]:,.2f} (10 h) in {dearest} |" in line


def test_one_region_is_priced_as_before() -> None:
    document = _job()
    markdown = render_markdown(preview(_step(document, None, TRAINING_JOB_TYPE)))
    hourly, ceiling = _hourly(document, REGIONS[0])
    assert row(markdown, "placed").endswith(f"| ${hourly:,.2f}/h | ${ceiling:,.2f} (10 h) |")
    assert "up to" not in row(markdown, "placed")


def test_a_candidate_that_does_not_offer_the_gpu_is_left_out() -> None:
    document = _job()
    catalog = load_catalog()
    offering = set(training_regions_for(catalog, ["NVIDIA_TESLA_T4"]))
    lacking = next(region for region in sorted(catalog.regions) if region not in offering)
    placement = declared_placement([lacking, REGIONS[0]])
    markdown = render_markdown(preview(_step(document, placement, TRAINING_JOB_TYPE)))
    hourly, ceiling = _hourly(document, REGIONS[0])
    assert f"| ${hourly:,.2f}/h | ${ceiling:,.2f} (10 h) in {REGIONS[0]} |" in row(
        markdown, "placed"
    )


def test_a_placed_tuning_job_is_bounded_at_its_dearest_attempt() -> None:
    document = sweep(trials=6, parallel=2, timeout="5h")
    markdown = render_markdown(
        preview(_step(document, declared_placement(REGIONS), TUNING_JOB_TYPE))
    )
    line = row(markdown, "placed")
    assert "(6 x 5 h) in " in line
