"""Each version is stated in one place; the rest agrees with it (docs/pulumi-toolchain.md).

The engine in scripts/pulumi-wrapper/go.mod, the Python SDK and every other package in the
requirement sets and their constraints, the supported Pythons in pyproject.toml.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REQUIREMENT_SETS = {
    "requirements.txt": "constraints.txt",
    "requirements-emulator.txt": "constraints.txt",
    "requirements-dev.txt": "constraints.txt",
    "policy/requirements.txt": "policy/constraints.txt",
}


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{path.name}: {line!r} is not pinned with =="
            pins[name.lower().replace("_", "-")] = version.strip()
    return pins


def _engine() -> tuple[str, str]:
    text = (REPO / "scripts" / "pulumi-wrapper" / "go.mod").read_text()
    pkg = re.search(r"^\s*github\.com/pulumi/pulumi/pkg/v3 (v\S+)", text, re.MULTILINE)
    sdk = re.search(r"^\s*github\.com/pulumi/pulumi/sdk/v3 (v\S+)", text, re.MULTILINE)
    assert pkg and sdk
    return pkg.group(1), sdk.group(1)


def test_the_engine_is_built_with_its_own_sdk():
    pkg, sdk = _engine()
    assert pkg == sdk


@pytest.mark.parametrize(("requirements", "constraints"), sorted(REQUIREMENT_SETS.items()))
def test_every_requirement_is_pinned_as_its_constraints_pin_it(requirements, constraints):
    wanted, pinned = _pins(REPO / requirements), _pins(REPO / constraints)
    assert {name: pinned.get(name) for name in wanted} == wanted


def test_the_program_and_the_policy_pack_use_one_python_sdk():
    runtime = _pins(REPO / "requirements.txt")["pulumi"]
    assert _pins(REPO / "policy" / "requirements.txt")["pulumi"] == runtime


def test_documents_name_only_the_pinned_pulumi_versions():
    engine, _ = _engine()
    sdk = _pins(REPO / "requirements.txt")["pulumi"]
    allowed = {engine.removeprefix("v"), sdk}
    # The upstream report is a bug report against the release it was found on.
    docs = [
        d
        for d in sorted((REPO / "docs").glob("*.md"))
        if d.name != "upstream-dynamic-provider-workers.md"
    ]
    for doc in [REPO / "README.md", *docs]:
        named = set(re.findall(r"\bv?(3\.2\d\d\.\d+)\b", doc.read_text()))
        # Releases named as history (what changed since, what the proxy serves) are the
        # toolchain document's to name.
        if doc.name == "pulumi-toolchain.md":
            named -= {"3.259.0", "3.260.0"}
        assert named <= allowed, f"{doc.relative_to(REPO)} names {sorted(named - allowed)}"


def test_the_supported_pythons_are_the_ones_find_python_picks_from():
    pyproject = (REPO / "pyproject.toml").read_text()
    match = re.search(r'requires-python = ">=(\d+\.\d+),<3\.(\d+)"', pyproject)
    assert match
    script = (REPO / "scripts" / "find-python").read_text()
    assert f"LOWEST={match.group(1)}" in script
    newest = f"3.{int(match.group(2)) - 1}"
    assert re.search(rf"PREFERRED=\({re.escape(newest)} ", script)
