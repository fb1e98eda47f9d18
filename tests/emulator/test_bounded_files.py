"""Issue 42: the local Vertex reads its own files (``--catalog-overlay``,
``--billing-account-prices``) as regular files only, to a cap, without blocking: a FIFO in
their place never hangs a request, ``/dev/zero`` never fills the memory, and the error says
which file and what it is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from emulator import errors, hardware
from emulator.billing import ACCOUNT, MAX_ACCOUNT_PRICES_BYTES, Billing

PRICES = f"/v1beta/billingAccounts/{ACCOUNT}/skus/-/prices"
HEADER = "machine_type,family,vcpus,memory_gb,fixed_accelerator_type,fixed_accelerator_count,source"


def _hostile(folder: Path, name: str, kind: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if kind == "fifo":
        os.mkfifo(path)  # a plain open for reading waits for a writer forever
    elif kind == "zero":
        path.symlink_to("/dev/zero")  # reads forever
    elif kind == "large":
        path.write_text(HEADER + "\n" + "x" * (4 * 1024 * 1024 + 1))
    else:
        path.mkdir()
    return path


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("fifo", "is a FIFO"),
        ("zero", "is a device"),
        ("large", "larger than 4,194,304 bytes"),
        ("folder", "is a directory"),
    ],
)
def test_an_overlay_file_that_is_no_regular_file_is_skipped_unread(
    tmp_path: Path, kind: str, says: str, caplog: pytest.LogCaptureFixture
) -> None:
    overlay = tmp_path / "overlay"
    _hostile(overlay, "machine_types.csv", kind)
    rows = hardware.catalog_rows(hardware.catalog_dir(), "machine_types.csv", overlay)
    assert any(r["machine_type"] == "n1-standard-8" for r in rows)  # the catalog's rows stay
    assert "machine_types.csv" in caplog.text and says in caplog.text


@pytest.mark.parametrize(
    ("kind", "says"),
    [("fifo", "is a FIFO"), ("zero", "is a device"), ("folder", "is a directory")],
)
def test_an_account_prices_file_that_is_no_regular_file_is_a_clear_500(
    tmp_path: Path, kind: str, says: str
) -> None:
    billing = Billing(account_prices=_hostile(tmp_path, "prices.json", kind))
    with pytest.raises(errors.ApiError) as raised:
        billing.route("GET", PRICES, {})
    assert raised.value.http_code == 500
    assert "the account prices file" in str(raised.value) and says in str(raised.value)


def test_an_account_prices_file_over_the_cap_or_not_json_is_refused_without_its_content(
    tmp_path: Path,
) -> None:
    big = tmp_path / "big.json"
    big.write_text('{"discountPercent": 10, "pad": "' + "x" * MAX_ACCOUNT_PRICES_BYTES + '"}')
    with pytest.raises(errors.ApiError, match="larger than 65,536 bytes"):
        Billing(account_prices=big).route("GET", PRICES, {})
    secret = tmp_path / "secret.json"
    secret.write_text("API_KEY=sk-live-1234567890abcdef\n")
    with pytest.raises(errors.ApiError) as raised:
        Billing(account_prices=secret).route("GET", PRICES, {})
    assert "sk-live" not in str(raised.value) and "not a JSON object" in str(raised.value)


def test_a_regular_account_prices_file_is_served(tmp_path: Path) -> None:
    good = tmp_path / "prices.json"
    good.write_text('{"discountPercent": 10}')
    answer = Billing(account_prices=good).route("GET", PRICES, {})
    assert answer is not None and answer["billingAccountPrices"]
