"""`make up` uses the emulator of its own checkout, never another clone's."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts import local_emulator

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _stop(state_dir: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "emulator", "stop", "--state-dir", str(state_dir)],
        cwd=REPO,
        capture_output=True,
        check=False,
    )


@pytest.fixture
def port(monkeypatch: pytest.MonkeyPatch) -> int:
    chosen = _free_port()
    monkeypatch.setattr(local_emulator, "DEFAULT_PORT", chosen)
    monkeypatch.chdir(REPO)
    return chosen


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    ours, theirs = tmp_path / "ours" / "emulator", tmp_path / "theirs" / "emulator"
    yield ours, theirs
    _stop(ours)
    _stop(theirs)


def test_the_default_port_when_free_then_the_same_emulator_again(port, dirs, capfd):
    ours, _ = dirs
    endpoint = local_emulator.ensure(ours)
    assert endpoint == f"http://127.0.0.1:{port}"
    again = local_emulator.ensure(ours)
    assert again == endpoint
    assert "already running" in capfd.readouterr().err


def test_another_checkouts_emulator_on_the_port_is_left_alone(port, dirs, capfd):
    ours, theirs = dirs
    assert local_emulator.ensure(theirs) == f"http://127.0.0.1:{port}"
    capfd.readouterr()
    endpoint = local_emulator.ensure(ours)
    said = capfd.readouterr().err
    assert endpoint != f"http://127.0.0.1:{port}"
    answer = local_emulator.health(endpoint)
    assert answer is not None and Path(str(answer["stateDir"])).resolve() == ours.resolve()
    assert f"port {port} is taken by the emulator of another checkout" in said
    assert str(theirs) in said
    # The other checkout's emulator still serves its own state dir.
    other = local_emulator.health(f"http://127.0.0.1:{port}")
    assert other is not None and Path(str(other["stateDir"])).resolve() == theirs.resolve()


def test_a_port_held_by_another_program(port, dirs, capfd):
    ours, _ = dirs
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        endpoint = local_emulator.ensure(ours)
    assert endpoint != f"http://127.0.0.1:{port}"
    assert "taken by another program" in capfd.readouterr().err


def test_config_copy_points_at_the_endpoint_and_keeps_the_rest(tmp_path):
    source = REPO / "stacks" / "Pulumi.local.yaml"
    target = tmp_path / "Pulumi.local.yaml"
    local_emulator.write_config("http://127.0.0.1:40123", source, target)
    written = target.read_text().splitlines()
    original = source.read_text().splitlines()
    assert [line for line in written if "training:endpoint" in line] == [
        "  training:endpoint: http://127.0.0.1:40123"
    ]
    assert [line for line in written if "training:endpoint" not in line] == [
        line for line in original if "training:endpoint" not in line
    ]


def _ensure_together(state_dirs: list[Path]) -> list[str | BaseException]:
    """``ensure`` of every state dir at the same moment, each in its own thread."""
    start = threading.Barrier(len(state_dirs))
    results: list[str | BaseException] = [RuntimeError("did not run")] * len(state_dirs)

    def one(i: int) -> None:
        start.wait()
        try:
            results[i] = local_emulator.ensure(state_dirs[i])
        except BaseException as exc:  # SystemExit included: what `make up` would print
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(state_dirs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


def _serves(endpoint: str, state_dir: Path) -> bool:
    answer = local_emulator.health(endpoint)
    return answer is not None and local_emulator.same_dir(answer.get("stateDir"), state_dir)


def test_two_checkouts_started_together_get_a_port_each(port, tmp_path):
    """Two `make up` at once, in two checkouts, with the default port free: each comes up, one on
    the default port, the other on a port its emulator found free. Several rounds: a race."""
    for round_ in range(3):
        checkouts = [tmp_path / f"round{round_}" / name / "emulator" for name in ("a", "b")]
        try:
            results = _ensure_together(checkouts)
            assert all(isinstance(r, str) for r in results), results
            endpoints = [str(r) for r in results]
            assert len(set(endpoints)) == 2, endpoints
            assert f"http://127.0.0.1:{port}" in endpoints
            for endpoint, state_dir in zip(endpoints, checkouts, strict=True):
                assert _serves(endpoint, state_dir), (endpoint, state_dir)
        finally:
            for state_dir in checkouts:
                _stop(state_dir)


def test_one_checkout_started_twice_at_once_runs_one_emulator(port, tmp_path):
    """Two `make up` at once in the same checkout: one emulator, which both use."""
    state_dir = tmp_path / "emulator"
    try:
        results = _ensure_together([state_dir, state_dir])
        assert results == [f"http://127.0.0.1:{port}"] * 2, results
        assert _serves(str(results[0]), state_dir)
    finally:
        _stop(state_dir)


def test_the_stack_files_catalog_overlay_reaches_the_emulator(port, dirs, tmp_path, capfd):
    ours, _ = dirs
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    stack_file = tmp_path / "Pulumi.local.yaml"
    stack_file.write_text(f"config:\n  training:catalogOverlay: {overlay}\n")
    assert local_emulator.catalog_overlay(stack_file) == overlay.resolve()
    endpoint = local_emulator.ensure(ours, local_emulator.catalog_overlay(stack_file))
    answer = local_emulator.health(endpoint)
    assert answer is not None and answer["catalogOverlay"] == str(overlay.resolve())
    capfd.readouterr()
    # A stack naming no overlay (or another) keeps the running emulator and says so.
    assert local_emulator.ensure(ours, None) == endpoint
    said = capfd.readouterr().err
    assert f"catalog overlay {overlay.resolve()}" in said and "make down" in said


def test_a_stack_file_without_an_overlay_names_none(tmp_path):
    stack_file = tmp_path / "Pulumi.local.yaml"
    stack_file.write_text("config:\n  gcp:project: local-training\n")
    assert local_emulator.catalog_overlay(stack_file) is None
    assert local_emulator.catalog_overlay(REPO / "stacks" / "Pulumi.local.yaml") is None
    stack_file.write_text("config:\n  training:catalogOverlay: [a]\n")
    with pytest.raises(SystemExit, match="must be a folder"):
        local_emulator.catalog_overlay(stack_file)
