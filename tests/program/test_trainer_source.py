"""The trainer source a stack names is walked within bounds: never through a symlink, never
into skipped folders, and a folder that is no trainer's (``/``) is refused in bounded time with
a message naming it, never a traceback."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from components.lifecycle import _packaging
from components.lifecycle._packaging import PackagingError, source_digest, source_files


def _trainer(root: Path) -> Path:
    (root / "trainer").mkdir(parents=True)
    (root / "trainer" / "task.py").write_text("print('hi')\n")
    (root / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    return root


def test_symlinks_to_the_whole_machine_are_not_followed(tmp_path: Path) -> None:
    root = _trainer(tmp_path / "src")
    plain = source_digest(root)
    (root / "host").symlink_to("/proc/1/cwd")
    (root / "trainer" / "everything").symlink_to("/")
    started = time.monotonic()
    assert source_digest(root) == plain
    assert source_files(root) == [Path("setup.py"), Path("trainer/task.py")]
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("folder", ["/", "/proc/1/cwd"])
def test_a_folder_that_is_no_trainers_is_refused_quickly(folder: str) -> None:
    started = time.monotonic()
    with pytest.raises(PackagingError) as raised:
        source_digest(Path(folder))
    assert str(raised.value).startswith(f"{folder}: ")
    assert time.monotonic() - started < 10


def test_the_walk_stops_at_its_bound_and_skipped_folders_do_not_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _trainer(tmp_path / "src")
    (root / ".venv" / "lib").mkdir(parents=True)
    for i in range(50):
        (root / ".venv" / "lib" / f"m{i}.py").write_text("")
    monkeypatch.setattr(_packaging, "MAX_SOURCE_ENTRIES", 10)
    assert len(source_files(root)) == 2  # .venv is one entry, never entered
    for i in range(10):
        (root / "trainer" / f"extra{i}.py").write_text("")
    with pytest.raises(PackagingError, match="more than 10 files and folders"):
        source_files(root)
