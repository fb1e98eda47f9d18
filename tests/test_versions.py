"""Each version is stated in one place; the rest agrees with it (docs/pulumi-toolchain.md).

The engine in scripts/pulumi-wrapper/go.mod; this repo's own packages pinned in the constraints;
the package's requirements (runtime and its extras) as ranges that hold those pins, each from
its lowest tested version to below the next major; the supported Pythons in pyproject.toml.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
PINNED_SETS = {
    "requirements-dev.txt": "constraints.txt",
    "policy/requirements.txt": "policy/constraints.txt",
}
# What the wheel requires (pyproject.toml reads these files): ranges a user's project resolves.
RANGED_SETS = ("requirements.txt", "requirements-gcp.txt", "requirements-emulator.txt")


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


def _ranges(path: Path) -> dict[str, SpecifierSet]:
    ranges = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            requirement = Requirement(line)
            ranges[requirement.name.lower().replace("_", "-")] = requirement.specifier
    return ranges


@pytest.mark.parametrize(("requirements", "constraints"), sorted(PINNED_SETS.items()))
def test_every_requirement_is_pinned_as_its_constraints_pin_it(requirements, constraints):
    wanted, pinned = _pins(REPO / requirements), _pins(REPO / constraints)
    assert {name: pinned.get(name) for name in wanted} == wanted


@pytest.mark.parametrize("requirements", RANGED_SETS)
def test_the_package_requires_ranges_from_the_lowest_tested_to_the_next_major(requirements):
    """``>=LOW,<HIGH``: LOW is what ``scripts/smoke-runtime lowest`` installs, the repo's pin is
    inside, and HIGH is the major after the pin's (a user's newer minor releases resolve)."""
    pinned = _pins(REPO / "constraints.txt")
    ranges = _ranges(REPO / requirements)
    assert ranges, f"{requirements} lists nothing"
    for name, specifier in ranges.items():
        kinds = sorted(spec.operator for spec in specifier)
        assert kinds == ["<", ">="], f"{requirements}: {name}{specifier} is not >=LOW,<HIGH"
        assert name in pinned, f"{name} is not pinned in constraints.txt"
        pin = Version(pinned[name])
        assert specifier.contains(pin, prereleases=True), f"{name}: pin {pin} outside {specifier}"
        high = Version(next(spec.version for spec in specifier if spec.operator == "<"))
        assert high == Version(str(pin.major + 1)), f"{name}{specifier}: not below the next major"


def test_the_wheel_declares_the_ranges_and_the_extras():
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'dependencies = { file = ["requirements.txt"] }' in pyproject
    assert 'optional-dependencies.gcp = { file = ["requirements-gcp.txt"] }' in pyproject
    assert 'optional-dependencies.emulator = { file = ["requirements-emulator.txt"] }' in pyproject
    assert "pulumi-gcp" not in _ranges(REPO / "requirements.txt")


def test_the_program_and_the_policy_pack_use_one_python_sdk():
    runtime = _pins(REPO / "constraints.txt")["pulumi"]
    assert _pins(REPO / "policy" / "requirements.txt")["pulumi"] == runtime


def test_documents_name_only_the_pinned_pulumi_versions():
    engine, _ = _engine()
    sdk = _pins(REPO / "constraints.txt")["pulumi"]
    lowest = next(
        s.version for s in _ranges(REPO / "requirements.txt")["pulumi"] if s.operator == ">="
    )
    node = json.loads((REPO / "tests" / "e2e" / "data" / "node" / "package.json").read_text())
    node_sdk = node["dependencies"]["@pulumi/pulumi"]  # the TypeScript e2e's, pinned there
    allowed = {engine.removeprefix("v"), sdk, lowest, node_sdk}
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


def test_the_wheel_lists_every_package_folder_under_its_installed_name():
    """components/ installs as ``gpu_training``, emulator/ as ``gpu_training_emulator``
    (pyproject.toml, ``package-dir``): a folder missing from ``packages`` would be missing from
    the wheel, and only the installed smoke run would notice."""
    import tomllib

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    setuptools = pyproject["tool"]["setuptools"]
    roots = {folder: name for name, folder in setuptools["package-dir"].items()}
    assert roots == {"components": "gpu_training", "emulator": "gpu_training_emulator"}
    folders = {
        ".".join(
            [
                roots[init.parent.relative_to(REPO).parts[0]],
                *init.parent.relative_to(REPO).parts[1:],
            ]
        )
        for root in roots
        for init in (REPO / root).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    listed = set(setuptools["packages"])
    assert folders <= listed, sorted(folders - listed)
    assert listed - folders == {"gpu_training.catalog"}  # data only
