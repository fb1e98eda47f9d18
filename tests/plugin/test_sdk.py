"""The committed SDKs (sdk/python, sdk/nodejs, sdk/go) are what the schema generates now."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.mark.timeout(3600)  # a cold build of the generator compiles part of pulumi/pkg
def test_committed_sdks_are_current(tmp_path: Path) -> None:
    subprocess.run(
        [str(REPO / "scripts" / "generate-sdk"), str(tmp_path)], check=True, timeout=3600
    )
    fresh, committed = _tree(tmp_path), _tree(REPO / "sdk")
    assert sorted(fresh) == sorted(committed), "sdk/ is stale: run `make sdk`"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert stale == [], f"sdk/ is stale ({', '.join(stale[:5])}): run `make sdk`"
    assert {"python", "nodejs", "go"} == {name.split("/", 1)[0] for name in fresh}
