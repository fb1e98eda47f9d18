"""``components import`` is bounded: an endpoint that trickles its answer ends in a timeout, and
no argument makes the error output huge or reach the terminal raw."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.cli._cli import main

REPO = Path(__file__).resolve().parents[2]
NAME = "projects/p/locations/us-central1/customJobs/1"
IMPORT = (sys.executable, "-m", "components", "import")


@pytest.fixture
def trickle() -> Iterator[str]:
    """An endpoint that answers every request with one byte every half second, forever."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" * 1000:
                if stop.wait(0.5):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        server.close()


def test_an_endpoint_sending_a_byte_at_a_time_ends_in_a_timeout(trickle: str) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [*IMPORT, NAME, "--endpoint", trickle, "--timeout", "3"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "no whole answer within 3 s" in done.stderr
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 60


@pytest.mark.parametrize(
    "reference", ["7" * (50 << 20), "123\x1b]0;pwned\x07", "projects/p/\x1b[2J/customJobs/1"]
)
def test_a_huge_or_escaping_job_argument_is_refused_briefly(reference: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    args = ["import", reference, "--project", "p", "--region", "us-central1"]
    assert main([*args, "--endpoint", "http://127.0.0.1:9"], out, err) == 2
    assert len(err.getvalue()) < 1000
    assert "\x1b" not in err.getvalue() and "\x07" not in err.getvalue()
    assert "is not a job's resource name or id" in err.getvalue()
