"""A provider process whose main loop ends (SIGINT) ends its waits at once, in both doors:
``concurrent.futures`` joins its worker threads at exit, and a wait would hold the join for as
long as it lasts (``components.lifecycle._interrupt.stop_waits_at_exit``)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_PROCESS = """
import concurrent.futures, sys, threading, time
from components.lifecycle._interrupt import Interrupted, pause, stop_waits_at_exit

said = threading.Lock()  # one whole line at a time: two waits end at the same moment

def say(line):
    with said:
        print(line, flush=True)

if sys.argv[1] == "registered":
    stop_waits_at_exit()

def wait():
    try:
        pause(60)
        say("waited 60 s")
    except Interrupted as exc:
        say(f"interrupted: {exc.reason}")

pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
pool.submit(wait)
pool.submit(wait)
time.sleep(0.2)
say("main loop ends")
"""


def _process(registered: bool) -> subprocess.Popen[str]:
    args = [sys.executable, "-c", textwrap.dedent(_PROCESS), "registered" if registered else "-"]
    return subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, text=True)


def test_the_end_of_the_main_loop_ends_every_wait() -> None:
    process = _process(registered=True)
    out, _ = process.communicate(timeout=60)  # the waits would hold it 60 s
    assert process.returncode == 0
    assert (
        out.splitlines()
        == ["main loop ends"] + ["interrupted: the provider process is stopping"] * 2
    )


def test_without_it_the_waits_hold_the_process_at_exit() -> None:
    process = _process(registered=False)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "main loop ends"
        time.sleep(1.0)
        assert process.poll() is None, "the process ended although its waits had not"
    finally:
        process.kill()
        process.wait()


def test_a_late_registration_stops_the_waits_at_once() -> None:
    from components.lifecycle._interrupt import interrupted, reset, stop_waits_at_exit

    class ShuttingDown:
        @staticmethod
        def _register_atexit(function: object) -> None:
            raise RuntimeError("can't register atexit after shutdown")

    try:
        stop_waits_at_exit(ShuttingDown)
        assert interrupted() == "the provider process is stopping"
    finally:
        reset()


def test_both_doors_register_it() -> None:
    for path in ("components/plugin/_server.py", "components/dynamic/_host.py"):
        assert "stop_waits_at_exit()" in (REPO / path).read_text(), path
