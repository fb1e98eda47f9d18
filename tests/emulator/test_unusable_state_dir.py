"""A state dir the emulator cannot use: one clear line and a non-zero exit, never a traceback.

Issue 27: an unwritable ``.local/emulator`` gave PermissionError and sqlite3 tracebacks from
``make up``, ``serve``, ``jobs`` and ``logs``. The tests run as root, which ignores permissions,
so the state is made unusable in ways root cannot get past either, through the same code paths
(creating the directory, opening or upgrading the database, writing the service's files): the
state dir is a regular file, or lies under one; the database is a directory, or not a database.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import REPO, SIMULATE_ARGS


def _state_is_a_file(root: Path) -> Path:
    state = root / "emulator"
    state.write_text("not a directory\n")
    return state


def _state_under_a_file(root: Path) -> Path:
    (root / "local").write_text("not a directory\n")
    return root / "local" / "emulator"


def _database_is_a_directory(root: Path) -> Path:
    state = root / "emulator"
    (state / "emulator.db").mkdir(parents=True)
    return state


def _database_is_not_a_database(root: Path) -> Path:
    state = root / "emulator"
    state.mkdir()
    (state / "emulator.db").write_bytes(b"this is not an SQLite database, whatever its name\n" * 40)
    return state


def _server_file_is_a_directory(root: Path) -> Path:
    state = root / "emulator"
    (state / "server.json").mkdir(parents=True)
    return state


UNUSABLE: dict[str, Callable[[Path], Path]] = {
    "state-dir-is-a-file": _state_is_a_file,
    "state-dir-under-a-file": _state_under_a_file,
    "database-is-a-directory": _database_is_a_directory,
    "database-is-not-a-database": _database_is_not_a_database,
}
# What only a service writes (reads by `jobs` and `logs` do not go there).
UNUSABLE_TO_SERVE = {**UNUSABLE, "server-file-is-a-directory": _server_file_is_a_directory}


def run(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def assert_one_clear_line(result: subprocess.CompletedProcess[str], state: Path) -> str:
    """The command failed with one line naming the state dir (or a file in it); the line."""
    assert result.returncode != 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert str(state) in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("make", UNUSABLE_TO_SERVE.values(), ids=UNUSABLE_TO_SERVE.keys())
def test_serve(tmp_path: Path, make: Callable[[Path], Path]) -> None:
    state = make(tmp_path)
    result = run(
        "-m", "emulator", "serve", "--port", "0", "--state-dir", str(state), *SIMULATE_ARGS
    )
    assert_one_clear_line(result, state)


@pytest.mark.parametrize("make", UNUSABLE_TO_SERVE.values(), ids=UNUSABLE_TO_SERVE.keys())
def test_serve_daemon(tmp_path: Path, make: Callable[[Path], Path]) -> None:
    state = make(tmp_path)
    result = run("-m", "emulator", "serve", "--daemon", "--port", "0", "--state-dir", str(state))
    assert_one_clear_line(result, state)


@pytest.mark.parametrize("command", ["jobs", "logs"])
@pytest.mark.parametrize("make", UNUSABLE.values(), ids=UNUSABLE.keys())
def test_jobs_and_logs(tmp_path: Path, make: Callable[[Path], Path], command: str) -> None:
    state = make(tmp_path)
    job = ["1234"] if command == "logs" else []
    result = run("-m", "emulator", command, *job, "--state-dir", str(state))
    assert_one_clear_line(result, state)


@pytest.mark.parametrize("make", UNUSABLE_TO_SERVE.values(), ids=UNUSABLE_TO_SERVE.keys())
def test_make_up_starting_the_emulator(tmp_path: Path, make: Callable[[Path], Path]) -> None:
    """`make up` runs `scripts/local_emulator.py ensure STATE_DIR` before anything else."""
    state = make(tmp_path)
    result = run(str(REPO / "scripts" / "local_emulator.py"), "ensure", str(state))
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    # Its progress lines ("==> ...") and then one error line.
    errors = [line for line in result.stderr.splitlines() if not line.startswith("==> ")]
    assert len(errors) == 1, result.stderr
    assert str(state) in errors[0]
