"""How the plugin reads the jobs its stack holds (``components.plugin._stack_state``): the
``pulumi stack export`` it runs, what it takes from it, one read per stack and process."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from components.plugin._stack_state import (
    StateCache,
    StateUnreadable,
    held_by_urn,
    held_reader,
    read_resources,
)

TOKEN = "gpu-training:vertex:TrainingJob"
TUNING = "gpu-training:vertex:HyperparameterTuningJob"
URN = f"urn:pulumi:dev::proj::{TOKEN}::train"


def _fake_pulumi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> Path:
    """A ``pulumi`` first on PATH running ``script`` (bash); its arguments go to ``args``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "pulumi"
    tool.write_text(f'#!/usr/bin/env bash\necho "$@" > {tmp_path}/args\n{script}\n')
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return tmp_path / "args"


def test_the_export_of_the_urns_stack_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployment = {"deployment": {"resources": [{"urn": URN, "type": TOKEN, "id": "job/1"}]}}
    (tmp_path / "out.json").write_text(json.dumps(deployment))
    args = _fake_pulumi(tmp_path, monkeypatch, f"cat {tmp_path}/out.json")
    assert read_resources(URN) == [{"urn": URN, "type": TOKEN, "id": "job/1"}]
    assert args.read_text().split() == ["stack", "export", "--stack", "dev"]  # no secrets shown


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        ("echo 'error: no stack named dev found' >&2; exit 255", "no stack named dev found"),
        ("echo not json", "printed no deployment"),
    ],
)
def test_an_export_that_fails_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, reason: str
) -> None:
    _fake_pulumi(tmp_path, monkeypatch, script)
    with pytest.raises(StateUnreadable, match=reason):
        read_resources(URN)


def test_no_pulumi_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(StateUnreadable, match="not on PATH"):
        read_resources(URN)


def test_held_jobs_are_those_of_the_plugins_types_children_and_pending_deletes_included() -> None:
    child = f"urn:pulumi:dev::proj::my:Parent${TOKEN}::train"
    resources: list[Any] = [
        {"urn": URN, "type": TOKEN, "id": "jobs/1"},
        {"urn": URN, "type": TOKEN, "id": "jobs/0", "delete": True},
        {"urn": child, "type": f"my:Parent${TOKEN}", "id": "jobs/2"},
        {"urn": "urn:pulumi:dev::proj::gcp:x:Y::train", "type": "gcp:x:Y", "id": "other"},
        {"urn": f"urn:pulumi:dev::proj::{TUNING}::pending", "type": TUNING},  # no id yet
    ]
    assert held_by_urn(resources, frozenset({TOKEN, TUNING})) == {
        URN: ["jobs/1", "jobs/0"],
        child: ["jobs/2"],
    }


def test_the_reader_keeps_the_jobs_of_the_same_identity_and_reads_once() -> None:
    calls: list[str] = []
    other = f"urn:pulumi:dev::proj::{TOKEN}::other"

    def read(urn: str) -> list[Any]:
        calls.append(urn)
        return [{"urn": URN, "type": TOKEN, "id": "a"}, {"urn": other, "type": TOKEN, "id": "b"}]

    held = held_reader(URN, lambda u: u.rsplit("::", 1)[-1], frozenset({TOKEN}), print, read)
    assert held() == ["a"] and held() == ["a"]
    assert calls == [URN]


def test_an_unreadable_state_is_a_warning_and_holds_nothing() -> None:
    def read(urn: str) -> list[Any]:
        raise StateUnreadable("`pulumi` is not on PATH")

    warnings: list[str] = []
    held = held_reader(URN, lambda u: u, frozenset({TOKEN}), warnings.append, read)
    assert held() == []
    assert len(warnings) == 1 and "could not read the stack's state" in warnings[0]


def test_the_cache_reads_each_stack_once_and_keeps_no_error() -> None:
    answers: list[Any] = [StateUnreadable("busy"), [{"id": "x"}]]
    calls: list[str] = []

    def read(urn: str) -> list[Any]:
        calls.append(urn)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return list(answer)

    cache = StateCache(read)
    with pytest.raises(StateUnreadable):
        cache(URN)
    assert cache(URN) == [{"id": "x"}]
    assert cache(URN.replace("::train", "::other")) == [{"id": "x"}]  # the same stack
    assert len(calls) == 2
