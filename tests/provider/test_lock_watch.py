"""``pulumi cancel`` on a file:// backend removes only the stack's lock: the waits notice.

The engine-level behaviour is ``tests/e2e/test_running_job_table.py``
(``test_pulumi_cancel_from_another_shell_stops_the_waits``); here the backend and lock
lookup, and the watch itself, without an engine.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import components.lifecycle._interrupt as interrupt_module
import components.lifecycle._lock_watch as lock_watch
from components.lifecycle._lock_watch import file_backend, stack_locks, watch_lock


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    interrupt_module.reset()
    lock_watch._watched.clear()
    yield
    interrupt_module.reset()
    lock_watch._watched.clear()


def test_the_backend_comes_from_the_env_then_from_the_logged_in_one(tmp_path: Path) -> None:
    assert file_backend({"PULUMI_BACKEND_URL": f"file://{tmp_path}"}) == tmp_path
    assert file_backend({"PULUMI_BACKEND_URL": "https://api.pulumi.com"}) is None
    assert file_backend({"PULUMI_BACKEND_URL": "s3://bucket"}) is None
    (tmp_path / "credentials.json").write_text(json.dumps({"current": "file://~/state"}))
    found = file_backend({"PULUMI_HOME": str(tmp_path)})
    assert found == Path("~/state").expanduser()
    assert file_backend({"PULUMI_HOME": str(tmp_path / "none")}) is None


def test_the_locks_of_one_stack_are_found_in_both_layouts(tmp_path: Path) -> None:
    project_lock = tmp_path / ".pulumi/locks/organization/proj/dev/a.json"
    legacy_lock = tmp_path / ".pulumi/locks/dev/b.json"
    other = tmp_path / ".pulumi/locks/organization/proj/prod/c.json"
    for path in (project_lock, legacy_lock, other):
        path.parent.mkdir(parents=True)
        path.write_text("{}")
    assert sorted(stack_locks(tmp_path, "proj", "dev")) == sorted([project_lock, legacy_lock])


def test_the_waits_stop_once_the_lock_is_gone_and_not_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = tmp_path / ".pulumi/locks/organization/proj/dev/a.json"
    lock.parent.mkdir(parents=True)
    lock.write_text("{}")
    monkeypatch.setenv("PULUMI_BACKEND_URL", tmp_path.as_uri())
    assert watch_lock("proj", "dev") is True
    interrupt_module.pause(3 * lock_watch.POLL_SECONDS)  # runs out: the lock is there
    assert interrupt_module.interrupted() is None
    lock.unlink()
    with pytest.raises(interrupt_module.Interrupted, match="the stack's lock was removed"):
        interrupt_module.pause(30)


def test_nothing_is_watched_without_a_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_BACKEND_URL", tmp_path.as_uri())
    assert watch_lock("proj", "dev") is False
    assert interrupt_module.interrupted() is None
