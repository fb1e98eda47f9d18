"""Cost estimates: on-demand, spot, multi-pool, unknown prices, seed 003, region order."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path

import pytest

from components import Catalog, load_catalog, load_spec_file
from components._catalog import Accelerator, MachineType, Price, Region, Zone
from components._cli import main
from components._pricing import compare_regions, duration_text, estimate
from components.formats.legacy_config import LegacyConversionError
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
    from components._pricing import cost_outputs, summary

    known = {
        "workerPoolSpecs": [pool("n1-standard-4", "NVIDIA_TESLA_T4", 1)],
        "scheduling": {"timeout": "2h"},
    }
    outs = cost_outputs(known, "us-central1")
    assert outs["hourly_cost_usd"] == pytest.approx(0.62099885)
    assert outs["max_cost_usd"] == pytest.approx(1.2419977)
    assert cost_outputs({"workerPoolSpecs": "broken"}, "us-central1") == {
        "hourly_cost_usd": None,
        "max_cost_usd": None,
    }
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
