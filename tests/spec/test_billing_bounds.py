"""Issue 42: every live billing read is bounded in time and size, and an account's absurd
prices are not taken.

The hostile servers here are small local HTTP servers; Google's own Cloud Billing client
(``billing_v1``, REST) and the pricing API's session talk to them as they would to Google.
"""

from __future__ import annotations

import threading
import time
import tracemalloc
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from components.core._billing_cli import live_catalog
from components.costs._billing import Sku
from components.lifecycle._settings import Endpoint, parse_endpoint
from components.rules._catalog import load_catalog
from components.vertex import billing
from components.vertex.account_prices import (
    AccountPrices,
    _unit_usd,
    apply_account_prices,
    implausible_account_prices,
    read_account_prices,
)
from components.vertex.billing import BillingUnavailable, read_skus
from tests.spec.catalog_fixtures import packaged_catalog  # noqa: F401 (a fixture)

DEADLINE = 2.0
SLACK = 20.0
"""How far past the deadline a loaded machine may take to give up: far below the hang."""


class _Hostile(BaseHTTPRequestHandler):
    """``mode`` ``trickle``: a 200 whose body comes a byte a second, for ever; ``headers``: the
    status line, then a header byte a second; ``huge``: an endless JSON body, fast."""

    mode = "trickle"
    stop = threading.Event()
    endpoint: ClassVar[Endpoint]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        try:
            if self.mode == "headers":
                self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                while not self.stop.wait(1):
                    self.wfile.write(b"X")
                    self.wfile.flush()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"services": [')
            block = b" " * (1 << 20)
            while not self.stop.is_set():
                if self.mode == "huge":
                    self.wfile.write(block)
                else:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    self.stop.wait(1)
        except OSError:
            pass  # the client gave up: what it must do


@pytest.fixture
def hostile(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[type[_Hostile]]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    class Handler(_Hostile):
        stop = threading.Event()  # this test's own

    handler = Handler
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    handler.endpoint = Endpoint(parse_endpoint(f"http://127.0.0.1:{server.server_port}"))
    yield handler
    handler.stop.set()
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("mode", ["trickle", "headers"])
def test_a_server_answering_a_byte_a_second_is_given_up_at_the_deadline(
    hostile: type[_Hostile], mode: str, tmp_path: Path
) -> None:
    hostile.mode = mode
    started = time.monotonic()
    with pytest.raises(
        BillingUnavailable, match=rf"within {DEADLINE:g} s \(training:retryDeadline\)"
    ):
        read_skus(hostile.endpoint, deadline=DEADLINE, directory=tmp_path)
    assert time.monotonic() - started < DEADLINE + SLACK


def test_the_account_prices_read_is_given_up_at_the_deadline(
    hostile: type[_Hostile], tmp_path: Path
) -> None:
    started = time.monotonic()
    with pytest.raises(BillingUnavailable, match="within 2 s"):
        read_account_prices(hostile.endpoint, "p", deadline=DEADLINE, directory=tmp_path)
    assert time.monotonic() - started < DEADLINE + SLACK


def test_an_endless_answer_is_refused_at_the_cap_without_filling_the_memory(
    hostile: type[_Hostile], tmp_path: Path
) -> None:
    hostile.mode = "huge"
    tracemalloc.start()
    try:
        with pytest.raises(BillingUnavailable, match=r"larger than 33,554,432 bytes was refused"):
            read_skus(hostile.endpoint, deadline=120, directory=tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * billing.MAX_ANSWER_BYTES


def test_the_preview_and_the_cli_fall_back_to_the_snapshot_with_a_note(
    hostile: type[_Hostile],
) -> None:
    catalog = load_catalog()
    notes: list[str] = []
    started = time.monotonic()
    priced = live_catalog(catalog, hostile.endpoint, notes.append, deadline=DEADLINE)
    assert priced is catalog
    assert time.monotonic() - started < DEADLINE + SLACK
    [note] = notes
    assert "within 2 s" in note and "prices from the catalog's snapshot" in note


# --- an account's prices, judged against the list price ---------------------------------------


T4 = Sku("Compute Engine", "T4-SKU", "Nvidia Tesla T4 GPU running in Americas", usd=0.35)
H100 = Sku("Vertex AI", "H100-SKU", "Vertex AI: Training on NVIDIA H100 80GB in Iowa", usd=11.0)


@pytest.mark.parametrize("usd", [400.0, 0.0, 1e300, 0.001])
def test_an_absurd_account_price_is_refused_naming_the_sku_and_the_range(usd: float) -> None:
    account = AccountPrices("billingAccounts/X", {"T4-SKU": usd, "H100-SKU": 8.8}, "2026-12-02")
    [t4, h100] = apply_account_prices([T4, H100], account)
    assert t4.usd == 0.35 and "own price" not in t4.source  # the list price stays
    assert h100.usd == 8.8 and "own price" in h100.source  # a 20 % discount is taken
    [why] = implausible_account_prices([T4, H100], account)
    assert "SKU T4-SKU" in why and "0.05x-1.5x of the list price 0.35 (0.0175 to 0.525)" in why


@pytest.mark.parametrize("units", ["9" * 5000, "1e400", "nan", {"x": 1}, ["1"]])
def test_an_account_price_that_is_no_number_is_left_out(units: object) -> None:
    assert _unit_usd({"rate": {"tiers": [{"contractPrice": {"units": units}}]}}) is None


def test_a_300_digit_account_price_is_read_and_refused_against_the_list_price() -> None:
    value = _unit_usd({"rate": {"tiers": [{"contractPrice": {"units": "9" * 300}}]}})
    assert value is not None and value > 1e299
    account = AccountPrices("billingAccounts/X", {"T4-SKU": value}, "2026-12-02")
    assert apply_account_prices([T4], account) == [T4]
    [why] = implausible_account_prices([T4], account)
    assert "SKU T4-SKU" in why and "the list price is used" in why


def test_an_account_price_answer_keeps_only_finite_numbers() -> None:
    answer: dict[str, Any] = {"rate": {"tiers": [{"contractPrice": {"nanos": 280000000}}]}}
    assert _unit_usd(answer) == pytest.approx(0.28)
    answer["rate"]["unitInfo"] = {"unitQuantity": {"value": "nan"}}
    assert _unit_usd(answer) is None
