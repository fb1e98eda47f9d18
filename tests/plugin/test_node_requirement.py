"""The Node.js SDK's one Node requirement (issue 43 item 6): ``sdk/nodejs/package.json``
declares what its ``@pulumi/pulumi`` declares (``engines.node``), so npm names it at install
rather than a dependency's bare EBADENGINE warning; the docs say it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "tests" / "e2e" / "data" / "node" / "package-lock.json"
"""The ``@pulumi/pulumi`` the TypeScript e2e test installs (``scripts/install-node-deps``)."""


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def test_the_sdk_declares_the_node_its_pulumi_sdk_needs() -> None:
    sdk = _json(REPO / "sdk" / "nodejs" / "package.json")
    pulumi = _json(LOCK)["packages"]["node_modules/@pulumi/pulumi"]
    wanted = sdk["dependencies"]["@pulumi/pulumi"]
    # The locked @pulumi/pulumi is one the SDK's range takes (^3.269.0: at least its floor).
    assert wanted.startswith("^") and _release(pulumi["version"]) >= _release(wanted[1:])
    assert sdk["engines"] == {"node": pulumi["engines"]["node"]}


def test_the_docs_state_the_requirement() -> None:
    floor = re.fullmatch(
        r">=(\d+)", _json(REPO / "sdk" / "nodejs" / "package.json")["engines"]["node"]
    )
    assert floor is not None, "engines.node is a plain lower bound"
    docs = [p.read_text(encoding="utf-8") for p in [REPO / "README.md", *REPO.glob("docs/*.md")]]
    assert any(f"Node.js {floor.group(1)} or later" in text for text in docs)
