"""``catalog check`` without Google credentials (issue 45): it says what it would read, and
checks offline what it can; it shows where two public figures disagree, and the unknown cells."""

from __future__ import annotations

import io
from pathlib import Path

from components.cli._cli import main

HEADER = (
    "region,resource_kind,name,on_demand_usd_per_hour,spot_usd_per_hour,as_of,source,basis,"
    "spot_basis,flex_start_usd_per_hour,flex_start_basis\n"
)


def _check(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["catalog", "check", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def test_without_credentials_it_names_the_api_and_checks_the_shipped_catalog_offline() -> None:
    # tests/spec/conftest.py: no Google credentials.
    code, out, err = _check()
    assert code == 0, out + err
    assert "no Google credentials" in err
    assert "cloudbilling.googleapis.com" in err and "skus.list" in err
    assert out.splitlines()[-1].startswith(
        "offline: 0 difference(s) from the shipped billing snapshot, 1 known conflict(s) "
        "between public figures, 0 catalog rule problem(s)"
    )


def test_the_h100_conflict_says_which_figure_is_used_its_date_and_the_other() -> None:
    _, out, _ = _check()
    [line] = [li for li in out.splitlines() if li.startswith("sources differ:")]
    assert (
        "NVIDIA_H100_80GB (accelerator) in us-central1, on-demand: uses 9.79655 (2026-10-07" in line
    )
    assert "billing SKU 3F95-001E-B747" in line and "11.266 (2025-08-15)" in line
    prices, err = io.StringIO(), io.StringIO()
    argv = ["prices", "--gpu", "H100", "--region", "us-central1"]
    assert main(argv, prices, err) == 0, err.getvalue()
    row = next(li for li in prices.getvalue().splitlines() if "a3-highgpu-8g" in li)
    assert "sources differ: uses 9.79655 (2026-10-07" in row and "3F95-001E-B747" in row


def test_the_unknown_cells_are_listed_per_gpu_and_region_with_why() -> None:
    _, out, _ = _check()
    [a100] = [li for li in out.splitlines() if li.startswith("unknown on-demand: NVIDIA_A100_80GB")]
    assert "us-central1 (the source's figure 1.8462 is a DWS flex-start rate" in a100
    assert "europe-west4 (" in a100
    # A second public source was looked for (derive_prices.py) and the shipped SKUs have none.
    assert a100.count("; no second source in billing_skus.csv)") == 3
    assert not [li for li in out.splitlines() if "NVIDIA_TESLA_P100" in li]  # retired


def test_the_catalogs_own_rules_fail_the_check(tmp_path: Path) -> None:
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "prices.csv").write_text(
        HEADER
        # Spot above on-demand; flex-start the on-demand figure labelled a Vertex price.
        + "us-central1,accelerator,NVIDIA_TESLA_T4,0.4025,0.5,2026-11,test,vertex,unverified,"
        "0.4025,vertex\n"
        # A bound that is not the on-demand price.
         + "us-central1,accelerator,NVIDIA_L4,0.8,0.3,2026-11,test,vertex,unverified,0.5,bound\n"
    )
    code, out, _ = _check("--catalog-overlay", str(overlay))
    rules = [li for li in out.splitlines() if li.startswith("rule:")]
    assert code == 1
    assert rules == [
        "rule: NVIDIA_L4 (accelerator) in us-central1, flex-start: a bound 0.5 that is not "
        "on-demand 0.8",
        "rule: NVIDIA_TESLA_T4 (accelerator) in us-central1, spot: 0.5 is above on-demand 0.4025",
        "rule: NVIDIA_TESLA_T4 (accelerator) in us-central1, flex-start: 0.4025 is the on-demand "
        "price labelled vertex: a bound labelled as a price (basis bound)",
    ]


def test_a_snapshot_difference_fails_the_check(tmp_path: Path) -> None:
    # The a3-highgpu-8g machine's flex-start price as the snapshot's SKUs do not make it.
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "prices.csv").write_text(
        HEADER + "us-central1,accelerator,NVIDIA_H100_80GB,9.79655057,4.270411,2026-10-07,test,"
        "vertex,unverified,5.0,vertex\n"
    )
    code, out, _ = _check("--catalog-overlay", str(overlay))
    assert code == 1
    assert (
        "snapshot: NVIDIA_H100_80GB (accelerator) in us-central1, flex-start: catalog 5, billing "
        "5.67024 USD/h" in out
    )


def test_estimate_names_the_conflict_of_a_price_it_used(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(
        "region: us-central1\nworkerPoolSpecs:\n"
        "  - machineSpec: {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB,"
        " acceleratorCount: 8}\n"
        "    replicaCount: 1\n    containerSpec: {imageUri: us-docker.pkg.dev/p/r/img:1}\n"
    )
    out, err = io.StringIO(), io.StringIO()
    assert main(["estimate", str(job)], out, err) == 0, err.getvalue()
    assert "sources differ: NVIDIA_H100_80GB in us-central1: uses 9.79655 (2026-10-07" in (
        out.getvalue()
    )
    out = io.StringIO()
    assert main(["estimate", str(job), "--flex-start"], out, err) == 0
    assert "sources differ" not in out.getvalue()  # the flex-start price is the SKUs' own
