"""How the plugin reads the jobs its stack holds (``components.plugin._stack_state``): the
``pulumi stack export`` it runs, what it takes from it, one read per stack and process."""

from __future__ import annotations

import json
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from components.lifecycle._adoption import instance_of
from components.plugin._stack_state import (
    StateCache,
    StateUnreadable,
    held_by_urn,
    held_reader,
    read_resources,
    stack_instance,
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


PROVIDERS = "urn:pulumi:dev::proj::pulumi:providers:gpu-training"


def _provider_state(name: str, **inputs: Any) -> dict[str, Any]:
    return {
        "urn": f"{PROVIDERS}::{name}",
        "type": "pulumi:providers:gpu-training",
        "inputs": inputs,
    }


def _secret(text: str | None) -> dict[str, Any]:
    """A secret as ``pulumi stack export`` writes it: ciphertext, or plaintext when shown."""
    sig = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"}
    return (
        {**sig, "ciphertext": "v1:abc"} if text is None else {**sig, "plaintext": json.dumps(text)}
    )


class _Checkpoint:
    """A stack's checkpoint as ``read(urn, show_secrets=...)`` answers it; counts the
    decrypted reads."""

    def __init__(self, *resources: dict[str, Any], keys: dict[str, str] | None = None) -> None:
        self.resources, self.keys, self.decrypted = list(resources), keys or {}, 0

    def __call__(self, urn: str, show_secrets: bool = False) -> list[Mapping[str, Any]]:
        if not show_secrets:
            return list(self.resources)
        self.decrypted += 1
        shown: list[Mapping[str, Any]] = []
        for r in self.resources:
            name = r["urn"].rsplit("::", 1)[-1]
            if name in self.keys:
                r = {**r, "inputs": {**r["inputs"], "stackKey": _secret(self.keys[name])}}
            shown.append(r)
        return shown


def test_a_new_default_provider_takes_the_instance_of_the_earlier_one() -> None:
    # An SDK upgrade names the default provider anew (version, download URL): the jobs the
    # stack's earlier provider submitted stay this stack's.
    read = _Checkpoint(
        _provider_state("default_0_2_0", stackKey=_secret(None), stackInstance="i" * 24),
        {"urn": URN, "type": TOKEN, "id": "job/1", "inputs": {}},
    )
    new = f"{PROVIDERS}::default_0_3_0"
    assert stack_instance(new, "stackKey", "stackInstance", read) == (True, "i" * 24)
    assert read.decrypted == 0  # the plain instance is enough


def test_an_earlier_provider_with_its_key_only_is_read_decrypted() -> None:
    # A provider made before the instance was kept beside the key (release 0.2.0).
    read = _Checkpoint(
        _provider_state("default_0_2_0", stackKey=_secret(None)), keys={"default_0_2_0": "k" * 64}
    )
    found = stack_instance(f"{PROVIDERS}::default_0_3_0", "stackKey", "stackInstance", read)
    assert found == (True, instance_of("k" * 64)) and read.decrypted == 1


def test_which_earlier_provider_is_succeeded() -> None:
    read = _Checkpoint(
        _provider_state("default_0_2_0", stackInstance="d" * 24),
        _provider_state("team-a", stackInstance="a" * 24),
        _provider_state("before-keys"),
    )
    # The same name first; a default provider succeeds the default ones; another explicit
    # provider succeeds none (a new instance).
    assert stack_instance(f"{PROVIDERS}::team-a", "stackKey", "stackInstance", read) == (
        True,
        "a" * 24,
    )
    assert stack_instance(f"{PROVIDERS}::default", "stackKey", "stackInstance", read)[1] == "d" * 24
    assert stack_instance(f"{PROVIDERS}::team-b", "stackKey", "stackInstance", read) == (
        False,
        None,
    )
    # One made before keys: its successor keeps matching on names alone.
    assert stack_instance(f"{PROVIDERS}::before-keys", "stackKey", "stackInstance", read) == (
        True,
        None,
    )
    assert stack_instance(f"{PROVIDERS}::x", "stackKey", "stackInstance", _Checkpoint()) == (
        False,
        None,
    )


def test_earlier_default_providers_of_two_instances_are_refused() -> None:
    read = _Checkpoint(
        _provider_state("default_0_1_0", stackInstance="a" * 24),
        _provider_state("default_0_2_0", stackInstance="b" * 24),
    )
    with pytest.raises(StateUnreadable, match="do not name one stack instance"):
        stack_instance(f"{PROVIDERS}::default_0_3_0", "stackKey", "stackInstance", read)


def test_a_key_that_cannot_be_decrypted_is_refused() -> None:
    read = _Checkpoint(_provider_state("default_0_2_0", stackKey=_secret(None)))  # no keys shown
    with pytest.raises(StateUnreadable, match="do not name one stack instance"):
        stack_instance(f"{PROVIDERS}::default_0_3_0", "stackKey", "stackInstance", read)


def test_the_decrypted_export_runs_without_a_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (A passphrase prompt would wait on the plugin's stdin, the engine's pipe.)
    script = f"readlink /proc/self/fd/0 > {tmp_path}/stdin; echo '{{\"deployment\": {{}}}}'"
    args = _fake_pulumi(tmp_path, monkeypatch, script)
    assert read_resources(URN, show_secrets=True) == []
    assert args.read_text().split() == ["stack", "export", "--stack", "dev", "--show-secrets"]
    assert (tmp_path / "stdin").read_text().strip() == "/dev/null"
