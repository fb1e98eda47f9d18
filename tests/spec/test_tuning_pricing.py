"""What a hyperparameter tuning job costs: one trial, all parallel trials, all trials at most."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from components import Catalog, TuningJobSpec, load_catalog
from components.costs._pricing import (
    DEFAULT_TIMEOUT,
    concurrent_trials,
    estimate,
    estimate_tuning,
    tuning_cost_outputs,
    tuning_summary,
)
from components.rules._catalog import Accelerator, MachineType, Price, Region, Zone
from tests.spec.tuning_helpers import config

# us-central1 on-demand prices of the catalog (components/catalog/prices.csv).
N1_STANDARD_4 = 0.21849885
T4 = 0.4025


def sweep(
    machine: str = "n1-standard-4",
    gpus: int = 2,
    *,
    parallel: int = 3,
    trials: int = 12,
    scheduling: dict[str, Any] | None = None,
    region: str | None = "us-central1",
    pools: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The CIFAR-10 sweep of ``tuning_helpers`` with its trial hardware and counts changed."""
    document = config()
    document.update(maxTrialCount=trials, parallelTrialCount=parallel)
    if region:
        document["region"] = region
    trial = document["trialJobSpec"]
    trial["workerPoolSpecs"][0]["machineSpec"] = {
        "machineType": machine,
        "acceleratorType": "NVIDIA_TESLA_T4",
        "acceleratorCount": gpus,
    }
    if pools is not None:
        trial["workerPoolSpecs"] = pools
    if scheduling is not None:
        trial["scheduling"] = scheduling
    return document


def test_the_catalog_still_has_the_prices_these_tests_use() -> None:
    prices = load_catalog().prices
    assert prices[("us-central1", "machine", "n1-standard-4")].on_demand_usd == N1_STANDARD_4
    assert prices[("us-central1", "accelerator", "NVIDIA_TESLA_T4")].on_demand_usd == T4
    # n1 is not offered in us-south1: its price row is there, unknown, with the reason.
    unknown = prices[("us-south1", "machine", "n1-standard-8")]
    assert unknown.on_demand_usd is None and unknown.basis == "unknown"
    assert unknown.source.startswith("unknown: the source lists no n1-standard-8 in us-south1")


def test_three_parallel_trials_of_two_t4_on_n1_standard_4() -> None:
    spec = TuningJobSpec.parse(sweep(scheduling={"timeout": "14h"}))
    result = estimate_tuning(spec, load_catalog())
    trial = N1_STANDARD_4 + 2 * T4
    assert result.trial_usd_per_hour == pytest.approx(trial) == pytest.approx(1.02349885)
    assert result.usd_per_hour == pytest.approx(3 * trial) == pytest.approx(3.07049655)
    assert result.trial_max_usd == pytest.approx(14 * trial)
    assert result.max_usd == pytest.approx(12 * 14 * trial) == pytest.approx(171.9478068)
    assert (result.region, result.spot, result.timeout) == (
        "us-central1",
        False,
        timedelta(hours=14),
    )
    assert (result.max_trials, result.parallel_trials, result.missing) == (12, 3, ())
    # The trial is exactly the custom job a TrainingJob with the same spec would be.
    assert result.trial == estimate(spec.trial_job(), load_catalog())


def test_unknown_machine_price_leaves_every_figure_unknown() -> None:
    spec = TuningJobSpec.parse(sweep("n1-standard-8", region="us-south1"))
    result = estimate_tuning(spec, load_catalog())
    assert result.trial_usd_per_hour is None
    assert result.usd_per_hour is None
    assert result.trial_max_usd is None and result.max_usd is None
    # The machine's row says why; the T4 is not offered there at all (no row).
    missing = (
        "n1-standard-8 in us-south1 (the source lists no n1-standard-8 in us-south1)",
        "NVIDIA_TESLA_T4 in us-south1",
    )
    assert result.missing == missing
    assert tuning_summary(result) == (
        f"$?/h on-demand in us-south1 (3 trials at once): unknown price for {', '.join(missing)}"
    )


def test_the_ceiling_defaults_to_seven_days_per_trial() -> None:
    spec = TuningJobSpec.parse(sweep(gpus=1, parallel=4, trials=24))
    result = estimate_tuning(spec, load_catalog())
    assert result.timeout == DEFAULT_TIMEOUT == timedelta(days=7)
    trial = N1_STANDARD_4 + T4
    assert result.usd_per_hour == pytest.approx(4 * trial)
    assert result.max_usd == pytest.approx(24 * 168 * trial) == pytest.approx(2503.8673632)


def test_multi_pool_trial_prices_every_replica() -> None:
    pool = {
        "machineSpec": {
            "machineType": "n1-standard-4",
            "acceleratorType": "NVIDIA_TESLA_T4",
            "acceleratorCount": 1,
        },
        "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/trainer:1"},
    }
    document = sweep(
        parallel=2,
        trials=6,
        pools=[{**pool, "replicaCount": 1}, {**pool, "replicaCount": 3}],
        scheduling={"timeout": "2h"},
    )
    result = estimate_tuning(TuningJobSpec.parse(document), load_catalog())
    assert [p.usd_per_hour for p in result.trial.pools] == pytest.approx(
        [N1_STANDARD_4 + T4, 3 * (N1_STANDARD_4 + T4)]
    )
    assert result.usd_per_hour == pytest.approx(2 * 4 * (N1_STANDARD_4 + T4))
    assert result.max_usd == pytest.approx(6 * 2 * 4 * (N1_STANDARD_4 + T4))


def spot_catalog() -> Catalog:
    return Catalog(
        machine_types={"m": MachineType("m", "n1", 8, 30)},
        accelerators={"G": Accelerator("G")},
        attachable_counts={("m", "G"): (1, 2)},
        regions={"r": Region("r"), "s": Region("s")},
        zones={"r-a": Zone("r-a", "r", frozenset({"G"}))},
        prices={
            ("r", "machine", "m"): Price("r", "machine", "m", 1.0, 0.25),
            ("r", "accelerator", "G"): Price("r", "accelerator", "G", 2.0, 0.5),
            ("s", "machine", "m"): Price("s", "machine", "m", 1.5, None),
        },
    )


def test_spot_trials_use_spot_prices_and_unknown_spot_stays_unknown() -> None:
    document = sweep("m", scheduling={"strategy": "SPOT", "timeout": "3h"}, region="r")
    document["trialJobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorType"] = "G"
    spec = TuningJobSpec.parse(document)
    result = estimate_tuning(spec, spot_catalog())
    assert result.spot
    assert result.trial_usd_per_hour == pytest.approx(0.25 + 2 * 0.5)
    assert result.usd_per_hour == pytest.approx(3 * 1.25)
    assert result.max_usd == pytest.approx(12 * 3 * 1.25)
    on_demand = estimate_tuning(spec, spot_catalog(), spot=False)
    assert on_demand.usd_per_hour == pytest.approx(3 * 5.0)
    # Region "s": no spot price for m, no price at all for G.
    elsewhere = estimate_tuning(spec, spot_catalog(), region="s")
    assert elsewhere.usd_per_hour is None and elsewhere.max_usd is None
    assert elsewhere.missing == ("m in s (spot)", "G in s (spot)")


@pytest.mark.parametrize(
    ("trials", "parallel", "expected"),
    [(12, 3, (12, 3)), (4, 8, (4, 4)), (0, 0, (1, 1)), (5, -2, (5, 1))],
)
def test_trials_at_once_never_exceed_trials_in_all_nor_fall_below_one(
    trials: int, parallel: int, expected: tuple[int, int]
) -> None:
    spec = TuningJobSpec.parse(sweep(trials=trials, parallel=parallel))
    assert concurrent_trials(spec) == expected
    result = estimate_tuning(spec, load_catalog())
    assert (result.max_trials, result.parallel_trials) == expected
    assert result.usd_per_hour == pytest.approx(expected[1] * (N1_STANDARD_4 + 2 * T4))


def test_region_comes_from_the_argument_or_the_spec() -> None:
    spec = TuningJobSpec.parse(sweep(region=None))
    with pytest.raises(ValueError, match="a region is needed"):
        estimate_tuning(spec, load_catalog())
    assert estimate_tuning(spec, load_catalog(), region="us-central1").region == "us-central1"


def test_cost_outputs_for_the_provider() -> None:
    outputs = tuning_cost_outputs(sweep(scheduling={"timeout": "14h"}), "us-central1")
    assert outputs == {
        "hourly_cost_usd": pytest.approx(3.07049655),
        "max_cost_usd": pytest.approx(171.9478068),
        "trial_hourly_cost_usd": pytest.approx(1.02349885),
        "cost_basis": "price",
        "hourly_cost_low_usd": pytest.approx(3.07049655),
        "hourly_cost_high_usd": pytest.approx(3.07049655),
        "max_cost_low_usd": pytest.approx(171.9478068),
        "max_cost_high_usd": pytest.approx(171.9478068),
    }
    unknown = {
        **dict.fromkeys(outputs, None),
        "cost_basis": "unknown",
    }
    assert tuning_cost_outputs(sweep("n1-standard-8"), "us-south1") == unknown
    # Not a tuning job document (a CustomJobSpec): no figures rather than an error.
    assert tuning_cost_outputs({"workerPoolSpecs": []}, "us-central1") == unknown


def test_summary_line() -> None:
    spec = TuningJobSpec.parse(sweep(scheduling={"timeout": "14h"}))
    assert tuning_summary(estimate_tuning(spec, load_catalog())) == (
        "$3.07/h on-demand in us-central1 (3 trials at once, $1.02/h each), "
        "at most $171.95 (12 trials, 14 h timeout each); prices: Vertex price"
    )
