"""The units pytest-xdist shares out (tests/conftest.py): a file is one unit unless it is an
end-to-end file of independent tests, and no file with module-scoped fixtures is spread."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import SPREAD_DIR, WHOLE_FILES, start_rank, work_unit

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


def test_the_whole_end_to_end_files_start_first() -> None:
    ids = ["tests/spec/test_x.py::t", f"{SPREAD_DIR}test_a.py::t", f"{sorted(WHOLE_FILES)[0]}::t"]
    assert sorted(ids, key=start_rank) == [ids[2], ids[1], ids[0]]
