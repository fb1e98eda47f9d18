"""Issue 42: a stack reads its price sheet and catalog overlay in its project folder only (or
a folder the person running names in ``GPU_TRAINING_READ_ROOTS``), and no error prints a
file's content: it names the file, row and field."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from components._files import READ_ROOTS_ENV
from components.cli._cli import main
from components.config import ConfigError, load_catalog_overlay
from components.costs._price_sheet import (
    PriceSheetError,
    apply_prices,
    parse_price_setting,
    read_price_sheet,
)
from components.rules._catalog import load_catalog
from tests.spec.catalog_fixtures import packaged_catalog  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("packaged_catalog")

SECRET = "sk-live-0123456789abcdefghijklmnopqrstu"  # 39 characters, as in the issue
HEADER = "region,resource_kind,name,on_demand_usd_per_hour,as_of,source\n"
ROW = "us-central1,accelerator,NVIDIA_TESLA_T4,0.30,2026-12-01,our contract\n"


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(a project folder, a folder outside it holding a secret file)."""
    monkeypatch.delenv(READ_ROOTS_ENV, raising=False)
    project, outside = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    outside.mkdir()
    (outside / "secret.csv").write_text(SECRET + "\n")
    (outside / "sheet.csv").write_text(HEADER + ROW)
    return project, outside


@pytest.mark.parametrize("how", ["absolute", "relative", "symlink"])
def test_a_price_sheet_outside_the_project_is_refused_unread(
    places: tuple[Path, Path], how: str
) -> None:
    project, outside = places
    value = {
        "absolute": str(outside / "secret.csv"),
        "relative": "../home/secret.csv",
        "symlink": "linked.csv",
    }[how]
    (project / "linked.csv").symlink_to(outside / "secret.csv")
    with pytest.raises(PriceSheetError, match="lies outside the project folder") as raised:
        parse_price_setting(value, project)
    assert SECRET[:8] not in str(raised.value)
    assert READ_ROOTS_ENV in str(raised.value)


def test_a_folder_the_person_running_names_may_hold_the_sheet(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, outside = places
    monkeypatch.setenv(READ_ROOTS_ENV, str(outside))
    setting = parse_price_setting(str(outside / "sheet.csv"), project)
    assert setting is not None and setting.sheet == outside / "sheet.csv"
    priced = apply_prices(load_catalog(), setting)
    assert priced.prices[("us-central1", "accelerator", "NVIDIA_TESLA_T4")].on_demand_usd == 0.30


def test_a_sheet_in_the_project_and_one_named_on_the_command_line_are_read(
    places: tuple[Path, Path],
) -> None:
    project, outside = places
    (project / "sheet.csv").write_text(HEADER + ROW)
    assert parse_price_setting("sheet.csv", project) is not None
    # A path typed on the command line is the user's own choice.
    out, err = io.StringIO(), io.StringIO()
    code = main(["prices", "--gpu", "T4", "--prices", str(outside / "sheet.csv")], out, err)
    assert code == 0, err.getvalue()
    assert "org sheet sheet.csv" in out.getvalue()


@pytest.mark.parametrize(
    ("row", "field"),
    [
        (f"{SECRET},accelerator,NVIDIA_TESLA_T4,0.3,d,s\n", "region"),
        (f"us-central1,{SECRET},NVIDIA_TESLA_T4,0.3,d,s\n", "resource_kind"),
        (f"us-central1,accelerator,{SECRET},0.3,d,s\n", "name"),
        (f"us-central1,accelerator,NVIDIA_TESLA_T4,{SECRET},d,s\n", "on_demand_usd_per_hour"),
    ],
)
def test_a_sheet_error_names_row_and_field_never_the_content(
    tmp_path: Path, row: str, field: str
) -> None:
    sheet = tmp_path / "acme.csv"
    sheet.write_text(HEADER + row)
    with pytest.raises(PriceSheetError, match=rf"acme\.csv:2: {field}:") as raised:
        read_price_sheet(sheet, load_catalog())
    assert SECRET[:8] not in str(raised.value)


def test_a_header_error_names_the_column_by_position(tmp_path: Path) -> None:
    sheet = tmp_path / "acme.csv"
    sheet.write_text(f"region,resource_kind,name,{SECRET}\n")
    with pytest.raises(PriceSheetError, match=r"acme\.csv:1: column 4 of the header") as raised:
        read_price_sheet(sheet, load_catalog())
    assert SECRET[:8] not in str(raised.value)


def test_a_catalog_overlay_outside_the_project_is_refused(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, outside = places
    overlay = outside / "overlay"
    overlay.mkdir()
    with pytest.raises(ConfigError, match=r"training:catalogOverlay: .* lies outside the project"):
        load_catalog_overlay(str(overlay), project)
    (project / "overlay").symlink_to(overlay)
    with pytest.raises(ConfigError, match="lies outside the project"):
        load_catalog_overlay("overlay", project)
    monkeypatch.setenv(READ_ROOTS_ENV, str(outside))
    assert load_catalog_overlay(str(overlay), project) == overlay
    load_catalog_overlay(None, project)
