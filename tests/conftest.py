"""How the suite is shared out between pytest-xdist workers (`make test`: ``-n``, ``--dist loadfile``).

A unit of work goes to one worker and runs there in its order. The units are:

- a test file, for every file outside ``tests/e2e``: a module-scoped fixture (an emulator, a
  built SDK, a virtualenv) is set up once, and tests that rely on running after each other in
  their file still do;
- a single test, for the end-to-end files: each of their tests makes its own engine project and
  emulator, and they are the slow ones, so the workers share them out test by test;
- except a file of ``WHOLE_FILES``: end-to-end files whose module-scoped fixtures (built release
  artifacts, a virtualenv) must be made once (``tests/test_scheduling.py`` keeps the list whole).

The units are handed out longest first (``expected_seconds``: the seconds each took in a
recorded run, ``tests/unit_seconds.csv``, written by ``scripts/unit_seconds.py`` from a JUnit
report; a unit it lacks is expected to take the median of its kind), so the longest units
start while the others fill the gaps and no long unit starts last. ``FileUnits`` replaces pytest-xdist's ``loadgroup`` here: with pytest
9 the group suffix xdist writes into a node id no longer reaches the id its scheduler reads, so
every test had been a unit of its own (a file's module fixtures set up again in every worker).
Without xdist (a plain ``pytest``) nothing here changes what runs.
"""

from __future__ import annotations

import csv
import signal
import statistics
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]  # no stubs

# A suite started in the background of a shell without job control (`make test &`, a CI
# runner's script) inherits SIGINT ignored, and so would every process the tests start: the
# tests that stop a host or the engine with SIGINT, as the engine and a user's Ctrl-C do, would
# wait on a process that cannot hear it. The processes start as they would from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

SPREAD_DIR = "tests/e2e/"
WHOLE_FILES = frozenset(
    {
        "tests/e2e/test_own_project.py",
        "tests/e2e/test_plugin_python.py",
        "tests/e2e/test_release.py",
    }
)


UNIT_SECONDS = Path(__file__).with_name("unit_seconds.csv")


def work_unit(nodeid: str) -> str:
    """The unit of work ``nodeid`` belongs to: its file, or itself (a spread end-to-end test)."""
    path = nodeid.split("::", 1)[0]
    if path.startswith(SPREAD_DIR) and path not in WHOLE_FILES:
        return nodeid
    return path


def start_rank(nodeid: str) -> int:
    """Where a test's unit starts: the whole end-to-end files, the other end-to-end tests, the rest."""
    path = nodeid.split("::", 1)[0]
    if path in WHOLE_FILES:
        return 0
    return 1 if path.startswith(SPREAD_DIR) else 2


@cache
def _recorded(table: Path = UNIT_SECONDS) -> dict[str, float]:
    """``unit_seconds.csv`` as unit → seconds (empty when the file is missing)."""
    try:
        with table.open(newline="") as rows:
            return {row["unit"]: float(row["seconds"]) for row in csv.DictReader(rows)}
    except (OSError, KeyError, ValueError):
        return {}


@cache
def _kind_median(rank: int) -> float:
    """The median recorded seconds of the units of one ``start_rank`` (0 when none)."""
    seconds = [s for unit, s in _recorded().items() if start_rank(unit) == rank]
    return statistics.median(seconds) if seconds else 0.0


def expected_seconds(nodeid: str) -> float:
    """How long the unit of ``nodeid`` is expected to take: as recorded, else its kind's median."""
    found = _recorded().get(work_unit(nodeid))
    return found if found is not None else _kind_median(start_rank(nodeid))


class FileUnits(LoadScopeScheduling):  # type: ignore[misc]  # xdist is untyped
    """``LoadScopeScheduling`` with ``work_unit`` as the scope of a test."""

    def _split_scope(self, nodeid: str) -> str:
        return work_unit(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> FileUnits | None:
    if config.getvalue("dist") == "loadfile":
        return FileUnits(config, log)
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Every worker collects the same order (the scheduler checks it); with
    # --no-loadscope-reorder the units are handed out in it.
    # Longest first; a stable sort keeps each unit's tests in their file's order.
    items.sort(key=lambda item: (-expected_seconds(item.nodeid), start_rank(item.nodeid)))
