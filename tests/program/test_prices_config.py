"""``training:prices``: a stack's organisation prices, read through ``components.config``."""

from __future__ import annotations

from pathlib import Path

import pulumi
import pytest

from components import load_catalog
from components._files import READ_ROOTS_ENV
from components.config import ConfigError
from emulator.testing import running_emulator
from tests.program.harness import run_stack


@pytest.fixture(autouse=True)
def _tmp_path_is_a_read_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """These stacks name files in tmp_path, outside the project: the person running allows it
    (``GPU_TRAINING_READ_ROOTS``, components._files)."""
    monkeypatch.setenv(READ_ROOTS_ENV, str(tmp_path))


SHEET = (
    "region,resource_kind,name,on_demand_usd_per_hour,spot_usd_per_hour\n"
    "*,accelerator,NVIDIA_TESLA_T4,0.30,0.09\n"
)


def _cost_lines(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    logged: list[str] = []
    monkeypatch.setattr(pulumi.log, "info", lambda m, *a, **k: logged.append(m))
    return logged


def test_the_preview_cost_lines_use_the_stacks_sheet_and_discount(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sheet = tmp_path / "acme.csv"
    sheet.write_text(SHEET)
    logged = _cost_lines(monkeypatch)
    run_stack("dev", {"training:prices": {"sheet": str(sheet), "discountPercent": 20}})
    [costs] = [m for m in logged if m.startswith("estimated cost per job:")]
    # The dev job: n1-standard-4 (shipped, 20 % off) with one T4 (the sheet's Spot rate).
    n1 = load_catalog().prices[("us-central1", "machine", "n1-standard-4")].spot_usd
    assert n1 is not None
    hourly = n1 * 0.8 + 0.09
    assert f"${hourly:,.2f}/h spot in us-central1" in costs
    assert "; prices: derived, unverified -20% org discount + org sheet acme.csv" in costs


def test_without_a_setting_the_shipped_prices_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    logged = _cost_lines(monkeypatch)
    run_stack("dev")
    [costs] = [m for m in logged if m.startswith("estimated cost per job:")]
    assert "spot in us-central1" in costs and "; prices: derived, unverified" in costs
    assert "org" not in costs


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("150", "training:prices: a discount is from 0 to below 100 percent, got 150"),
        ({"sheet": "nowhere.csv"}, "training:prices: price sheet .*nowhere.csv does not exist"),
        ({"colour": 1}, r"training:prices.colour: unknown key"),
        ("BAD_SHEET", r"acme.csv:2: spot_usd_per_hour must be above 0, got -1"),
    ],
)
def test_a_bad_setting_stops_the_program_naming_key_file_row_field(
    tmp_path: Path, value: object, message: str
) -> None:
    sheet = tmp_path / "acme.csv"
    sheet.write_text(SHEET.replace("0.09", "-1"))
    with pytest.raises(ConfigError, match=message):
        run_stack("dev", {"training:prices": str(sheet) if value == "BAD_SHEET" else value})


BILLING_HEADER = (
    "service_id,service_name,sku_id,description,resource_family,resource_group,usage_type,"
    "service_regions,usage_unit,usd_per_unit,as_of,source\n"
)


N1_SKUS = (
    BILLING_HEADER
    + "C7E2-9256-1C43,Vertex AI,T-1,Vertex AI: Training/Pipelines on N1 Predefined Instance "
    "Core in Iowa,Compute,CPU,OnDemand,us-central1,h,0.05,2026-11-27,test\n"
    "C7E2-9256-1C43,Vertex AI,T-2,Vertex AI: Training/Pipelines on N1 Predefined Instance "
    "Ram in Iowa,Compute,RAM,OnDemand,us-central1,GiBy.h,0.005,2026-11-27,test\n"
)
"""Vertex's N1 training SKUs (core, RAM) in us-central1 at rates of the tests' own."""


def test_the_preview_prices_from_the_billing_skus_the_endpoint_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Vertex's N1 training SKUs at rates of this test's own: the local stack's cost lines use
    # them, read through the Cloud Billing Catalog API the emulator serves.
    snapshot = tmp_path / "skus.csv"
    snapshot.write_text(N1_SKUS)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    logged = _cost_lines(monkeypatch)
    with running_emulator("--mode", "simulate", "--billing-snapshot", str(snapshot)) as emu:
        run_stack("local", {"training:endpoint": emu.endpoint, "training:quota": "off"})
        [costs] = [m for m in logged if m.startswith("estimated cost per job:")]
        assert f"example-trainer: ${4 * 0.05 + 15 * 0.005:,.2f}/h on-demand" in costs
        assert any("from the Cloud Billing Catalog API (2 SKUs" in m for m in logged)
        # Off: the catalog's snapshot alone.
        logged.clear()
        run_stack(
            "local",
            {
                "training:endpoint": emu.endpoint,
                "training:quota": "off",
                "training:livePrices": "false",
            },
        )
    [costs] = [m for m in logged if m.startswith("estimated cost per job:")]
    n1 = load_catalog().prices[("us-central1", "machine", "n1-standard-4")].on_demand_usd
    assert f"example-trainer: ${n1:,.2f}/h on-demand" in costs


def test_the_local_stack_never_asks_for_account_prices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The local stack (an http:// emulator endpoint) has no billing account: its preview prices
    # at the SKUs' list prices and never asks the Billing API for the account's (which, with no
    # account file, answers 403 as Google does: the line `make up` printed, issue 45).
    snapshot = tmp_path / "skus.csv"
    snapshot.write_text(N1_SKUS)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    logged = _cost_lines(monkeypatch)
    with running_emulator("--mode", "simulate", "--billing-snapshot", str(snapshot)) as emu:
        run_stack("local", {"training:endpoint": emu.endpoint, "training:quota": "off"})
    [costs] = [m for m in logged if m.startswith("estimated cost per job:")]
    assert f"example-trainer: ${4 * 0.05 + 15 * 0.005:,.2f}/h on-demand" in costs
    assert any("from the Cloud Billing Catalog API (2 SKUs" in m for m in logged)
    assert not [m for m in logged if "account prices" in m or "403" in m], logged


def test_a_bad_live_prices_setting_names_the_key() -> None:
    with pytest.raises(
        ConfigError, match=r"training:livePrices: expected true or false, got 'yes'"
    ):
        run_stack("dev", {"training:livePrices": "yes"})
