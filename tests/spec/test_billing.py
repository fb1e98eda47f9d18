"""Prices from Vertex's own billing data (issue 34): the Cloud Billing Catalog client against the
emulator's Catalog API, the per-day cache, the fallback to the catalog's snapshot, and
``catalog check``."""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.cli._cli import main
from components.costs._billing import (
    SNAPSHOT_FILE,
    Sku,
    apply_billing,
    billing_prices,
    read_snapshot,
    sku_capacity,
)
from components.lifecycle._settings import Endpoint
from components.rules._catalog import load_catalog
from components.vertex import billing
from components.vertex.account_prices import read_account_prices
from components.vertex.billing import BillingUnavailable, read_skus
from emulator.testing import EmulatorProcess, running_emulator
from tests.spec.catalog_fixtures import packaged_catalog  # noqa: F401 (a fixture)

DAY = datetime.date(2026, 11, 27)
DAY_1 = datetime.timedelta(days=1)
H100_DWS = "341A-49A5-0C07"


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("billing") / "skus.csv"
    shutil.copy(SNAPSHOT_FILE, path)
    return path


@pytest.fixture(scope="module")
def account_file(snapshot: Path) -> Path:
    """The emulator's billing-account discount file; absent: the caller may not read them."""
    return snapshot.with_name("account.json")


@pytest.fixture(scope="module")
def emu(snapshot: Path, account_file: Path) -> Iterator[EmulatorProcess]:
    argv = ["--billing-snapshot", str(snapshot), "--billing-account-prices", str(account_file)]
    with running_emulator("--mode", "simulate", *argv) as server:
        yield server


@contextlib.contextmanager
def _repriced(path: Path, usd: str) -> Iterator[None]:
    """The snapshot with the H100 DWS SKU at ``usd`` for the block, then as it was."""
    original = path.read_text()
    try:
        _reprice(path, H100_DWS, usd)
        yield
    finally:
        path.write_text(original)


def _flex_start_h100(endpoint: str, *more: str) -> tuple[int, str, str]:
    """``prices --gpu H100 --flex-start --live-prices`` in us-central1: the a3-highgpu-1g line."""
    out, err = io.StringIO(), io.StringIO()
    argv = ["prices", "--gpu", "H100", "--region", "us-central1", "--flex-start", *more]
    code = main([*argv, "--live-prices", "--endpoint", endpoint], out, err)
    line = next((li for li in out.getvalue().splitlines() if "a3-highgpu-1g" in li), "")
    return code, line, err.getvalue()


# One H100 on a3-highgpu-1g at Iowa's DWS and management-fee rates, without the GPU's DWS rate.
A3_1G_FLEX = 26 * (0.010934 + 0.0038247) + 234 * (0.000952 + 0.0003331) + 1.4694826


def _reprice(path: Path, sku_id: str, usd: str) -> None:
    """The snapshot with one SKU's unit price changed."""
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    at = header.index("usd_per_unit")
    for n, line in enumerate(lines):
        cells = line.split(",")
        if len(cells) > at and cells[2] == sku_id:
            cells[at] = usd
            lines[n] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("service", "description", "usage_type", "capacity"),
    [
        # Compute Engine files DWS SKUs under usage type OnDemand: the description decides.
        (
            "Compute Engine",
            "Nvidia H100 80GB GPU attached to DWS Defined Duration VMs running in Americas",
            "OnDemand",
            "flex_start",
        ),
        (
            "Compute Engine",
            "DWS Defined Duration A3 Core running in Americas",
            "OnDemand",
            "flex_start",
        ),
        ("Compute Engine", "Nvidia H100 80GB GPU running in Americas", "OnDemand", "on_demand"),
        (
            "Compute Engine",
            "Nvidia H100 80GB GPU attached to Spot Preemptible VMs running in Americas",
            "Preemptible",
            "spot",
        ),
        (
            "Vertex AI",
            "Vertex AI: Training/Pipelines management fee on NVIDIA H100 80GB in Iowa",
            "OnDemand",
            "fee",
        ),
        ("Compute Engine", "Commitment v1: H100 GPU in Americas for 1 Year", "Commit1Yr", None),
        ("Compute Engine", "Reserved H100 GPU in Calendar Mode", "OnDemand", None),
    ],
)
def test_a_skus_capacity_is_read_from_its_description_first(
    service: str, description: str, usage_type: str, capacity: str | None
) -> None:
    assert sku_capacity(Sku(service, "ID", description, usage_type=usage_type)) == capacity


def test_the_client_reads_the_skus_the_emulator_serves(
    emu: EmulatorProcess, tmp_path: Path
) -> None:
    skus = read_skus(Endpoint(emu.endpoint), today=DAY, directory=tmp_path)
    # A row a public source quotes without its SKU id (billing_skus.csv) has no id to serve.
    assert {s.sku_id for s in skus} == {s.sku_id for s in read_snapshot() if s.sku_id}
    dws = next(s for s in skus if s.sku_id == H100_DWS)
    assert (dws.service, dws.usd, dws.regions, dws.usage_type) == (
        "Compute Engine",
        4.200761,
        ("us-central1",),
        "OnDemand",
    )
    prices = billing_prices(skus, load_catalog())
    h100 = prices[("us-central1", "accelerator", "NVIDIA_H100_80GB")]
    assert h100.flex_start_usd == pytest.approx(4.200761 + 1.4694826)
    assert h100.on_demand_usd == pytest.approx(11.2660332)
    assert H100_DWS in h100.source


def test_the_emulator_pages_skus_as_the_api_does(emu: EmulatorProcess) -> None:
    def get(path: str) -> dict[str, Any]:
        with urllib.request.urlopen(f"{emu.endpoint}{path}", timeout=10) as answer:
            found: dict[str, Any] = json.loads(answer.read())
            return found

    services = get("/v1/services")["services"]
    names = {s["displayName"]: s["name"] for s in services}
    assert set(names) == {"Vertex AI", "Compute Engine"}
    first = get(f"/v1/{names['Vertex AI']}/skus?pageSize=4")
    assert len(first["skus"]) == 4 and first["nextPageToken"]
    rest = get(f"/v1/{names['Vertex AI']}/skus?pageSize=4&pageToken={first['nextPageToken']}")
    sku = rest["skus"][0]
    assert set(sku) >= {"name", "skuId", "description", "category", "serviceRegions", "pricingInfo"}
    assert len(first["skus"]) + len(rest["skus"]) == 6
    with pytest.raises(urllib.error.HTTPError) as missing:
        get("/v1/services/NO-SUCH-SERVICE/skus")
    assert missing.value.code == 404


def test_skus_are_read_once_a_day(emu: EmulatorProcess, snapshot: Path, tmp_path: Path) -> None:
    endpoint = Endpoint(emu.endpoint)
    first = read_skus(endpoint, today=DAY, directory=tmp_path)
    with _repriced(snapshot, "3.5"):
        # The same day, even in another process (the file cache): the price read in the morning.
        billing._memory.clear()  # what a new process starts with
        again = read_skus(endpoint, today=DAY, directory=tmp_path)
        assert next(s.usd for s in again if s.sku_id == H100_DWS) == 4.200761
        assert again == first
        # The next day: read again.
        later = read_skus(endpoint, today=DAY + datetime.timedelta(days=1), directory=tmp_path)
        assert next(s.usd for s in later if s.sku_id == H100_DWS) == 3.5
        # The earlier day's file is gone: one day's SKUs are kept, no more.
        assert [p.name[-15:] for p in tmp_path.glob("skus-*.json")] == ["2026-11-28.json"]


def test_unreadable_skus_are_one_error_and_the_cli_falls_back_to_the_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(BillingUnavailable, match=r"could not reach http://127.0.0.1:9"):
        read_skus(Endpoint("http://127.0.0.1:9"), today=DAY, directory=tmp_path)
    code, line, err = _flex_start_h100("http://127.0.0.1:9")
    assert code == 0, err
    assert "prices from the catalog's snapshot (as of 2026-11-24)" in err
    # The snapshot's flex-start price of one H100 on a3-highgpu-1g in Iowa, with its source.
    assert f"{A3_1G_FLEX + 4.200761:.4f}" in line and "Vertex price" in line


def test_live_prices_go_over_the_catalog(
    emu: EmulatorProcess, snapshot: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with _repriced(snapshot, "3.5"):
        code, line, err = _flex_start_h100(emu.endpoint)
    assert code == 0, err
    assert "from the Cloud Billing Catalog API" in err
    assert f"{A3_1G_FLEX + 3.5:.4f}" in line


def test_apply_billing_keeps_what_the_skus_do_not_price() -> None:
    catalog = load_catalog()
    billed = billing_prices(read_snapshot(), catalog)
    merged = apply_billing(catalog, billed)
    key = ("us-central1", "accelerator", "NVIDIA_H100_80GB")
    assert merged.prices[key].spot_usd == catalog.prices[key].spot_usd  # no Spot SKU
    assert merged.prices[key].on_demand_usd == pytest.approx(11.2660332)
    other = ("us-east4", "accelerator", "NVIDIA_H100_80GB")
    assert merged.prices[other] is catalog.prices[other]


def test_catalog_check_prints_each_difference_and_exits_1(
    emu: EmulatorProcess, snapshot: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    out, err = io.StringIO(), io.StringIO()
    with _repriced(snapshot, "3.5"):
        code = main(["catalog", "check", "--endpoint", emu.endpoint], out, err)
    assert code == 1, err.getvalue()
    text = out.getvalue()
    assert (
        f"NVIDIA_H100_80GB (accelerator) in us-central1, flex-start: catalog 5.67024, billing "
        f"{3.5 + 1.4694826:.6g} USD/h" in text
    )
    # The catalog's on-demand H100 rate is a newer public figure than the 2025-08 SKU: shown.
    assert "NVIDIA_H100_80GB (accelerator) in us-central1, on-demand: catalog 9.79655" in text
    assert "difference(s)" in text.splitlines()[-1]


def test_catalog_check_of_the_shipped_snapshot_names_only_the_newer_vertex_rate(
    emu: EmulatorProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other"))
    out, err = io.StringIO(), io.StringIO()
    code = main(["catalog", "check", "--endpoint", emu.endpoint], out, err)
    lines = [li for li in out.getvalue().splitlines() if not li.startswith("unknown on-demand:")]
    assert code == 1
    assert (
        len(lines) == 2 and "NVIDIA_H100_80GB (accelerator) in us-central1, on-demand" in lines[0]
    )


@pytest.mark.parametrize(
    ("endpoint", "message"),
    [
        (
            "http://127.0.0.1:9",
            "the billing SKUs could not be read: could not reach http://127.0.0.1:9",
        ),
        ("ftp://x", "--endpoint: expected http(s)://HOST:PORT, got 'ftp://x'"),
    ],
)
def test_catalog_check_without_access_exits_2(
    endpoint: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    out, err = io.StringIO(), io.StringIO()
    code = main(["catalog", "check", "--endpoint", endpoint], out, err)
    assert code == 2
    assert message in err.getvalue()


def test_a_series_sku_prices_its_own_machines_only() -> None:
    # "A3 Instance Core/RAM" SKUs are A3 High's: A3 Mega and A3 Ultra have SKUs of their own.
    priced = {name for _, kind, name in billing_prices(read_snapshot(), load_catalog())}
    assert {"a3-highgpu-1g", "a3-highgpu-8g", "NVIDIA_H100_80GB"} <= priced
    assert not priced & {"a3-megagpu-8g", "a3-ultragpu-8g", "NVIDIA_H100_MEGA_80GB"}


T4_SPOT_SKU = (
    "6F81-5844-456A,Compute Engine,T4SP-0000-0001,Nvidia Tesla T4 GPU attached to Spot "
    "Preemptible VMs running in Americas,Compute,GPU,Preemptible,us-central1,h,{usd},2026-11-27,"
    "test row\n"
)


def test_catalog_check_catches_a_stale_spot_input(
    emu: EmulatorProcess, snapshot: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The catalog's T4 Spot price in Iowa is Compute Engine's Spot rate 0.175 of its reference
    # + the fee (15% of Compute Engine's on-demand 0.35). Compute Engine's Spot SKU now says
    # 0.2: by the same rule the Spot price is 0.2 + 0.15 x 0.4025 / 1.15.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    original = snapshot.read_text()
    out, err = io.StringIO(), io.StringIO()
    try:
        snapshot.write_text(original + T4_SPOT_SKU.format(usd="0.2"))
        code = main(["catalog", "check", "--endpoint", emu.endpoint], out, err)
    finally:
        snapshot.write_text(original)
    assert code == 1, err.getvalue()
    line = next(li for li in out.getvalue().splitlines() if "NVIDIA_TESLA_T4" in li)
    assert line.startswith(
        f"NVIDIA_TESLA_T4 (accelerator) in us-central1, spot: catalog 0.2275, billing "
        f"{0.2 + 0.15 * 0.4025 / 1.15:.6g} USD/h"
    )
    assert "T4SP-0000-0001" in line and "the management fee rule" in line


@pytest.mark.usefixtures("packaged_catalog")
def test_catalog_check_names_a_suspect_on_demand_price(
    emu: EmulatorProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An overlay's on-demand T4 price at half of what the T4 costs elsewhere: reported.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "prices.csv").write_text(
        "region,resource_kind,name,on_demand_usd_per_hour,spot_usd_per_hour,as_of,source\n"
        "us-west4,accelerator,NVIDIA_TESLA_T4,0.2,0.1,2026-11-27,a test's half-price row\n"
    )
    out, err = io.StringIO(), io.StringIO()
    argv = ["catalog", "check", "--endpoint", emu.endpoint, "--catalog-overlay", str(overlay)]
    code = main(argv, out, err)
    assert code == 1, err.getvalue()
    text = out.getvalue()
    assert "NVIDIA_TESLA_T4 (accelerator) in us-west4, on-demand: suspect: 0.2 is 0." in text
    assert "1 suspect on-demand price(s)" in text.splitlines()[-1]


ACCOUNT = "billingAccounts/012345-6789AB-CDEF01"


def test_the_callers_account_prices_go_over_the_list_prices(
    emu: EmulatorProcess, account_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    account_file.write_text(json.dumps({"discountPercent": 20}))
    try:
        code, line, err = _flex_start_h100(emu.endpoint, "--project", "my-project")
        # Read once a day: a discount changed since shows the next day, not before.
        account_file.write_text(json.dumps({"discountPercent": 50}))
        same_day = read_account_prices(Endpoint(emu.endpoint), "my-project")
        prices = read_account_prices(Endpoint(emu.endpoint), "my-project", today=DAY + DAY_1)
        again = read_account_prices(Endpoint(emu.endpoint), "my-project", today=DAY + DAY_1)
    finally:
        account_file.unlink()
    assert code == 0, err
    # Every SKU of the flex-start price (the DWS and management-fee SKUs) at 20% off.
    assert f"{0.8 * (A3_1G_FLEX + 4.200761):.4f}" in line
    assert f"{ACCOUNT}'s own prices where it has them" in err
    assert same_day.usd[H100_DWS] == pytest.approx(0.8 * 4.200761)
    assert prices.account == ACCOUNT and again is prices
    assert prices.usd[H100_DWS] == pytest.approx(0.5 * 4.200761)


def test_without_permission_the_list_prices_are_used_and_said_once(
    emu: EmulatorProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No account file: the emulator answers 403 PERMISSION_DENIED, as Google does to a caller
    # without billing.accounts.getPricing.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    code, line, err = _flex_start_h100(emu.endpoint, "--project", "other-project")
    assert code == 0, err
    assert f"{A3_1G_FLEX + 4.200761:.4f}" in line  # the list prices
    assert err.count("account prices of project other-project not read") == 1
    assert "no access to the Cloud Billing API" in err and "list prices used" in err
    with pytest.raises(BillingUnavailable, match=r"billing\.accounts\.getPricing"):
        read_account_prices(Endpoint(emu.endpoint), "other-project", today=DAY)


def test_the_emulator_serves_billing_info_and_account_prices_as_the_api_does(
    emu: EmulatorProcess, account_file: Path
) -> None:
    def get(path: str) -> dict[str, Any]:
        with urllib.request.urlopen(f"{emu.endpoint}{path}", timeout=10) as answer:
            found: dict[str, Any] = json.loads(answer.read())
            return found

    info = get("/v1/projects/p/billingInfo")
    assert (info["billingAccountName"], info["billingEnabled"]) == (ACCOUNT, True)
    account_file.write_text(json.dumps({"discountPercent": 10}))
    try:
        one = get(f"/v1beta/{ACCOUNT}/skus/{H100_DWS}/price")
        page = get(f"/v1beta/{ACCOUNT}/skus/-/prices?pageSize=4")
    finally:
        account_file.unlink()
    assert one["name"] == f"{ACCOUNT}/skus/{H100_DWS}/price"
    tier = one["rate"]["tiers"][0]
    assert (tier["listPrice"]["units"], tier["listPrice"]["nanos"]) == ("4", 200761000)
    assert tier["effectiveDiscountPercent"] == {"value": "10"}
    assert len(page["billingAccountPrices"]) == 4 and page["nextPageToken"] == "4"


def test_live_spot_prices_follow_compute_engines_spot_skus_by_the_spot_rule(
    emu: EmulatorProcess, snapshot: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No Vertex fee SKU for the T4: the live Spot price is the Spot SKU + the fee rule, and
    # says it rests on the unpublished fee (derived, unverified), never "Vertex price".
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    original = snapshot.read_text()
    out, err = io.StringIO(), io.StringIO()
    argv = ["prices", "--gpu", "T4", "--region", "us-central1", "--spot", "--live-prices"]
    try:
        snapshot.write_text(original + T4_SPOT_SKU.format(usd="0.2"))
        code = main([*argv, "--endpoint", emu.endpoint], out, err)
    finally:
        snapshot.write_text(original)
    assert code == 0, err.getvalue()
    n1 = load_catalog().prices[("us-central1", "machine", "n1-standard-4")].spot_usd
    assert n1 is not None
    line = next(li for li in out.getvalue().splitlines() if " 1 " in li and "n1-standard-4" in li)
    assert f"{n1 + 0.2 + 0.15 * 0.4025 / 1.15:.4f}" in line
    assert line.rstrip().endswith("derived, unverified")


def test_estimate_and_prices_read_live_skus_by_default_and_not_when_told(
    emu: EmulatorProcess, snapshot: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One rule for the CLI and the previews (issue 45): live by default, --no-live-prices off.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    argv = ["prices", "--gpu", "H100", "--region", "us-central1", "--flex-start"]
    lines = {}
    with _repriced(snapshot, "3.5"):
        for flag in ("", "--no-live-prices"):
            out, err = io.StringIO(), io.StringIO()
            code = main([*argv, *([flag] if flag else []), "--endpoint", emu.endpoint], out, err)
            assert code == 0, err.getvalue()
            lines[flag] = (out.getvalue(), err.getvalue())
    assert f"{A3_1G_FLEX + 3.5:.4f}" in lines[""][0]
    assert "from the Cloud Billing Catalog API" in lines[""][1]
    assert f"{A3_1G_FLEX + 4.200761:.4f}" in lines["--no-live-prices"][0]
    assert "Cloud Billing" not in lines["--no-live-prices"][1]


def test_google_credentials_are_told_without_a_network_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from components.core._billing_cli import has_google_credentials

    assert not has_google_credentials()  # tests/spec/conftest.py: none
    config = tmp_path / "gcloud"
    config.mkdir()
    (config / "application_default_credentials.json").write_text("{}")
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(config))
    assert has_google_credentials()
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "none"))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "key.json"))
    assert has_google_credentials()
