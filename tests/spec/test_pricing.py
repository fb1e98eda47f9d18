"""Cost estimates: on-demand, spot, multi-pool, unknown prices, seed 003, region order."""

from __future__ import annotations

import dataclasses
import io
from datetime import timedelta
from pathlib import Path

import pytest

from components import Catalog, load_catalog, load_spec_file
from components.cli._cli import main
from components.costs._pricing import compare_regions, duration_text, estimate, gpu_offers, summary
from components.formats.legacy_config import LegacyConversionError
from components.rules._catalog import Accelerator, MachineType, Price, Region, Zone
from tests.spec.helpers import pool, spec


def tiny_catalog() -> Catalog:
    def price(
        region: str, kind: str, name: str, on_demand: float | None, spot: float | None
    ) -> tuple[tuple[str, str, str], Price]:
        return (region, kind, name), Price(region, kind, name, on_demand, spot, "2026-11", "test")

    return Catalog(
        machine_types={"m": MachineType("m", "n1", 8, 30), "big": MachineType("big", "n1", 16, 60)},
        accelerators={"G": Accelerator("G")},
        attachable_counts={("m", "G"): (1, 2), ("big", "G"): (2,)},
        regions={
            "cheap": Region("cheap"),
            "dear": Region("dear"),
            "unpriced": Region("unpriced"),
            "nogpu": Region("nogpu"),
        },
        zones={
            name + "-a": Zone(name + "-a", name, frozenset({"G"}))
            for name in ("cheap", "dear", "unpriced")
        },
        prices=dict(
            [
                price("cheap", "machine", "m", 0.5, 0.1),
                price("cheap", "machine", "big", 1.0, None),
                price("cheap", "accelerator", "G", 0.25, 0.05),
                price("dear", "machine", "m", 0.6, 0.2),
                price("dear", "machine", "big", 1.2, 0.4),
                price("dear", "accelerator", "G", 0.5, 0.1),
                price("unpriced", "machine", "m", None, None),
            ]
        ),
    )


def test_on_demand_multi_pool_and_ceiling() -> None:
    job = spec(
        pool("m", "G", 2),
        pool("big", "G", 2, replicas=3),
        {},
        pool("m"),
        region="cheap",
        scheduling={"timeout": "10h"},
    )
    result = estimate(job, tiny_catalog())
    assert [(p.index, p.role, p.replica_usd_per_hour, p.usd_per_hour) for p in result.pools] == [
        (0, "chief", 1.0, 1.0),
        (1, "workers", 1.5, 4.5),
        (3, "evaluators", 0.5, 0.5),
    ]
    assert result.usd_per_hour == pytest.approx(6.0)
    assert result.max_usd == pytest.approx(60.0)
    assert result.missing == ()


def test_spot_from_strategy_and_unknown_spot_price() -> None:
    catalog = tiny_catalog()
    job = spec(pool("m", "G", 1), region="cheap", scheduling={"strategy": "SPOT"})
    result = estimate(job, catalog)
    assert result.spot and result.usd_per_hour == pytest.approx(0.15)
    # big has no spot price in "cheap": unknown, never guessed.
    unknown = estimate(spec(pool("big", "G", 2), region="cheap"), catalog, spot=True)
    assert unknown.usd_per_hour is None and unknown.max_usd is None
    assert unknown.missing == ("big in cheap (spot)",)


def test_unknown_region_price_is_reported() -> None:
    result = estimate(spec(pool("m", "G", 1)), tiny_catalog(), region="unpriced")
    assert result.usd_per_hour is None
    assert result.missing == ("m in unpriced", "G in unpriced")
    assert result.timeout == timedelta(days=7)  # Vertex's default when no timeout is set


def test_compare_regions_cheapest_first_unknown_last_unrunnable_left_out() -> None:
    job = spec(pool("m", "G", 1), scheduling={"timeout": "1h"})
    ordered = compare_regions(job, tiny_catalog())
    assert [(e.region, e.usd_per_hour) for e in ordered] == [
        ("cheap", 0.75),
        ("dear", 1.1),
        ("unpriced", None),
    ]


def test_seed_003_basic_gpu_asia_pacific_twelve_hours(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "trainingInput:\n  scaleTier: BASIC_GPU\n  region: asia-east1\n  runtimeVersion: '2.11'\n"
        "  packageUris: [gs://bkt/t.tgz]\n"
        "  pythonModule: trainer.task\n  scheduling: {maxRunningTime: 43200s}\n"
    )
    # BASIC_GPU ran on a K80, which Vertex AI retired: the legacy converter refuses the job
    # in the config's terms (issue 12), and still hands over the job converted, to price it.
    with pytest.raises(LegacyConversionError) as info:
        load_spec_file(path)
    assert [v.path for v in info.value.violations] == ["trainingInput.scaleTier"]
    loaded = info.value.conversion
    assert loaded is not None and loaded.scale_tier == "BASIC_GPU"
    result = estimate(loaded.spec, load_catalog(), scale_tier=loaded.scale_tier)
    assert result.usd_per_hour == 1.3578
    assert result.cost_for(timedelta(hours=12)) == pytest.approx(16.2936)


def test_real_catalog_known_us_central1_prices() -> None:
    result = estimate(
        spec(
            pool("n1-standard-4", "NVIDIA_TESLA_T4", 1),
            region="us-central1",
            scheduling={"timeout": "2h"},
        ),
        load_catalog(),
    )
    assert result.usd_per_hour == pytest.approx(0.21849885 + 0.4025)
    assert result.max_usd == pytest.approx(2 * (0.21849885 + 0.4025))


def test_cli_estimate_table_and_unknowns() -> None:
    out, err = io.StringIO(), io.StringIO()
    data = Path(__file__).parent / "data" / "custom_job.yaml"
    assert main(["estimate", str(data), "--region", "us-central1"], out, err) == 0
    assert out.getvalue().splitlines()[0].split() == [
        "POOL",
        "ROLE",
        "REPLICAS",
        "MACHINE",
        "GPUS",
        "$/H",
        "EACH",
        "$/H",
        "PRICES",
    ]
    # n1-standard-8 with a T4, Spot: each price derived, its Spot uplift not checked.
    prices = load_catalog().prices
    spot = [
        prices[("us-central1", kind, name)].spot_usd
        for kind, name in (("machine", "n1-standard-8"), ("accelerator", "NVIDIA_TESLA_T4"))
    ]
    assert spot[0] is not None and spot[1] is not None
    assert f"total $/h: {spot[0] + spot[1]:,.4f}" in out.getvalue()
    assert "region us-central1, spot prices" in out.getvalue()
    assert "prices: derived, unverified\n" in out.getvalue()
    assert err.getvalue() == ""


def test_cost_outputs_and_summary_line() -> None:
    from components.costs._pricing import cost_outputs, summary

    known = {
        "workerPoolSpecs": [pool("n1-standard-4", "NVIDIA_TESLA_T4", 1)],
        "scheduling": {"timeout": "2h"},
    }
    outs = cost_outputs(known, "us-central1")
    assert outs["hourly_cost_usd"] == pytest.approx(0.62099885)
    assert outs["max_cost_usd"] == pytest.approx(1.2419977)
    assert outs["cost_basis"] == "price"
    broken = cost_outputs({"workerPoolSpecs": "broken"}, "us-central1")
    assert broken == {**dict.fromkeys(outs, None), "cost_basis": "unknown"}
    line = summary(
        estimate(
            spec(pool("n1-standard-4", "NVIDIA_TESLA_T4", 1), scheduling={"timeout": "2h"}),
            load_catalog(),
            region="us-central1",
        )
    )
    assert line == (
        "$0.62/h on-demand in us-central1, at most $1.24 (2 h timeout); prices: Vertex price"
    )
    unknown = summary(estimate(spec(pool("n1-standard-8")), load_catalog(), region="us-south1"))
    assert unknown == (
        "$?/h on-demand in us-south1: unknown price for n1-standard-8 in us-south1 "
        "(the source lists no n1-standard-8 in us-south1)"
    )


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (7200, "2 h"),
        (600, "10 min"),
        (5400, "1 h 30 min"),
        (45, "45 s"),
        (3661, "1 h 1 min 1 s"),
        (0, "0 s"),
    ],
)
def test_durations_read_as_people_write_them(seconds, text):
    assert duration_text(timedelta(seconds=seconds)) == text


# --- each capacity priced as Vertex bills it (issue 34) ----------------------------------------


def _capacity_catalog() -> Catalog:
    """One machine and GPU whose on-demand, Spot and flex-start rates all differ."""
    return Catalog(
        machine_types={"a3": MachineType("a3", "a3", 208, 1872)},
        accelerators={"H": Accelerator("H", flex_start=True)},
        attachable_counts={("a3", "H"): (8,)},
        regions={"r": Region("r")},
        zones={"r-a": Zone("r-a", "r", frozenset({"H"}))},
        prices={
            ("r", "machine", "a3"): Price(
                "r",
                "machine",
                "a3",
                10.0,
                4.0,
                "2026-11",
                "t",
                "vertex",
                "unverified",
                0,
                "",
                5.0,
                "vertex",
            ),
            ("r", "accelerator", "H"): Price(
                "r",
                "accelerator",
                "H",
                11.0,
                3.0,
                "2026-11",
                "t",
                "vertex",
                "unverified",
                0,
                "",
                5.5,
                "vertex",
            ),
        },
    )


@pytest.mark.parametrize(
    ("strategy", "hourly", "word"),
    [
        ("STANDARD", 10.0 + 8 * 11.0, "on-demand"),
        ("SPOT", 4.0 + 8 * 3.0, "spot"),
        ("FLEX_START", 5.0 + 8 * 5.5, "flex-start"),
    ],
)
def test_each_scheduling_strategy_is_priced_at_its_own_rates(
    strategy: str, hourly: float, word: str
) -> None:
    job = spec(pool("a3", "H", 8), region="r", scheduling={"strategy": strategy, "timeout": "2h"})
    result = estimate(job, _capacity_catalog())
    assert result.usd_per_hour == pytest.approx(hourly)
    assert summary(result).startswith(f"${hourly:,.2f}/h {word} in r")


def test_a_flex_start_job_without_a_flex_start_price_is_unknown_not_on_demand() -> None:
    shipped = _capacity_catalog()
    no_flex = {("r", "accelerator", "H"): Price("r", "accelerator", "H", 11.0, 3.0)}
    catalog = dataclasses.replace(shipped, prices={**shipped.prices, **no_flex})
    job = spec(pool("a3", "H", 8), region="r", scheduling={"strategy": "FLEX_START"})
    result = estimate(job, catalog)
    assert result.usd_per_hour is None
    assert result.missing == ("H in r (flex-start)",)


def test_the_shipped_flex_start_price_of_a3_highgpu_8g_is_the_billed_one() -> None:
    # Iowa, billing SKUs (catalog/billing_skus.csv): Compute Engine's DWS rates plus Vertex's
    # management fee, for the GPUs and the machine; about half the on-demand price.
    job = spec(
        pool("a3-highgpu-8g", "NVIDIA_H100_80GB", 8),
        region="us-central1",
        scheduling={"strategy": "FLEX_START"},
    )
    flex = estimate(job, load_catalog())
    machine = 208 * (0.010934 + 0.0038247) + 1872 * (0.000952 + 0.0003331)
    assert flex.usd_per_hour == pytest.approx(machine + 8 * (4.200761 + 1.4694826), rel=1e-6)
    assert flex.price_labels == ("Vertex price",)
    on_demand = estimate(job, load_catalog(), capacity="on_demand")
    assert on_demand.usd_per_hour is not None and flex.usd_per_hour is not None
    assert flex.usd_per_hour < 0.6 * on_demand.usd_per_hour


def test_estimate_prices_a_flex_start_job_file_at_flex_start_rates(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(
        "region: us-central1\n"
        "scheduling: {strategy: FLEX_START, timeout: 2h}\n"
        "workerPoolSpecs:\n"
        "  - machineSpec: {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB,"
        " acceleratorCount: 8}\n"
        "    replicaCount: 1\n"
        "    containerSpec: {imageUri: us-docker.pkg.dev/p/r/img:1}\n"
    )
    out, err = io.StringIO(), io.StringIO()
    assert main(["estimate", str(job)], out, err) == 0, err.getvalue()
    flex = estimate(load_spec_file(job).spec, load_catalog())
    assert flex.usd_per_hour is not None
    assert "region us-central1, flex-start prices" in out.getvalue()
    assert f"total $/h: {flex.usd_per_hour:.4f}" in out.getvalue()
    out = io.StringIO()
    assert main(["estimate", str(job), "--spot"], out, err) == 0
    assert "region us-central1, spot prices" in out.getvalue()


def test_rankings_put_known_prices_before_cheaper_bounds() -> None:
    # Region "b" is cheaper only as a lower bound (a DWS rate without Vertex's fee).
    shipped = _capacity_catalog()
    floor = {
        ("b", "machine", "a3"): Price(
            "b", "machine", "a3", 10.0, 4.0, flex_start_usd=4.0, flex_start_basis="floor"
        ),
        ("b", "accelerator", "H"): Price(
            "b", "accelerator", "H", 11.0, 3.0, flex_start_usd=4.0, flex_start_basis="floor"
        ),
    }
    catalog = dataclasses.replace(
        shipped,
        regions={**shipped.regions, "b": Region("b")},
        zones={**shipped.zones, "b-a": Zone("b-a", "b", frozenset({"H"}))},
        prices={**shipped.prices, **floor},
    )
    job = spec(pool("a3", "H", 8), region="r", scheduling={"strategy": "FLEX_START"})
    ranked = compare_regions(job, catalog)
    assert [(e.region, e.price_labels) for e in ranked] == [
        ("r", ("Vertex price",)),
        ("b", ("lower bound",)),
    ]
    offers = gpu_offers(catalog, accelerator="H", capacity="flex_start")
    assert [o.region for o in offers] == ["r", "b"]
