"""`make up` uses the emulator of its own checkout, never another clone's."""

from __future__ import annotations

import socket
import subprocess
import sys
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
