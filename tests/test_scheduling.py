"""The units pytest-xdist shares out (tests/conftest.py): a file is one unit unless it is an
end-to-end file of independent tests, and no file with module-scoped fixtures is spread."""

from __future__ import annotations

import ast
import csv
import statistics
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import conftest
from tests.conftest import SPREAD_DIR, WHOLE_FILES, expected_seconds, start_rank, work_unit

REPO = Path(__file__).resolve().parents[1]


def _module_scoped(path: Path) -> bool:
    """Whether a test file declares a fixture of module (or wider) scope."""
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.keyword)
            and node.arg == "scope"
            and isinstance(node.value, ast.Constant)
            and node.value.value in ("module", "package")
        ):
            return True
    return False


def test_a_file_outside_the_end_to_end_tests_is_one_unit() -> None:
    assert work_unit("tests/spec/test_x.py::test_a[1]") == "tests/spec/test_x.py"
    assert work_unit("tests/spec/test_x.py::TestY::test_b") == "tests/spec/test_x.py"


def test_an_end_to_end_test_is_a_unit_of_its_own_unless_its_file_is_whole() -> None:
    spread = f"{SPREAD_DIR}test_lifecycle.py::test_up[plugin]"
    assert work_unit(spread) == spread
    whole = sorted(WHOLE_FILES)[0]
    assert work_unit(f"{whole}::test_a") == whole


def test_every_end_to_end_file_with_module_fixtures_is_whole() -> None:
    e2e = REPO / SPREAD_DIR
    scoped = {f"{SPREAD_DIR}{path.name}" for path in e2e.glob("test_*.py") if _module_scoped(path)}
    assert scoped == set(WHOLE_FILES), "keep tests/conftest.py's WHOLE_FILES to these files"


def test_the_units_are_expected_to_take_what_they_took_and_new_ones_their_kinds_median() -> None:
    recorded = conftest._recorded()
    assert recorded, "tests/unit_seconds.csv is missing or unreadable"
    unit, seconds = max(recorded.items(), key=lambda item: item[1])
    assert expected_seconds(f"{unit}::any" if unit in WHOLE_FILES else unit) == seconds
    e2e = [s for u, s in recorded.items() if start_rank(u) == 1]
    new = f"{SPREAD_DIR}test_not_recorded_yet.py::test_x"
    assert expected_seconds(new) == statistics.median(e2e)


def test_the_recorded_units_are_files_of_the_suite() -> None:
    with conftest.UNIT_SECONDS.open(newline="") as rows:
        files = {row["unit"].split("::", 1)[0] for row in csv.DictReader(rows)}
    assert files and not {f for f in files if not (REPO / f).is_file()}


def test_the_longest_units_start_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    junit = tmp_path / "run.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_short" name="test_s" time="1.5"/>'
        '<testcase classname="tests.e2e.test_a" name="test_x[1]" time="40"/>'
        "</testsuite></testsuites>"
    )
    out = tmp_path / "unit_seconds.csv"
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "unit_seconds.py"), str(junit), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    table = conftest._recorded.__wrapped__(out)
    assert table == {"tests/e2e/test_a.py::test_x[1]": 40.0, "tests/test_short.py": 1.5}
    monkeypatch.setattr(conftest, "_recorded", lambda: table)
    conftest._kind_median.cache_clear()
    ids = [
        "tests/test_short.py::test_s",
        "tests/test_short.py::test_t",
        "tests/test_new.py::test_n",
        f"{SPREAD_DIR}test_a.py::test_x[1]",
    ]
    items = [SimpleNamespace(nodeid=nodeid) for nodeid in ids]
    try:
        conftest.pytest_collection_modifyitems(pytest.Config, items)  # type: ignore[arg-type]
    finally:
        conftest._kind_median.cache_clear()
    # The e2e test first (40 s); the new file is expected to take its kind's median (1.5 s),
    # so it keeps its place after tests/test_short.py, whose tests stay in their order.
    assert [item.nodeid for item in items] == [ids[3], ids[0], ids[1], ids[2]]
