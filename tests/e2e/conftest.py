"""Shared fixtures for end-to-end tests that drive the real Pulumi engine.

`pulumi_bin_dir` runs scripts/install-pulumi once per session and returns the directory holding
`pulumi`, `pulumi-language-python` and the two SDK scripts. On a machine without the cached build
that is a cold Go build of several minutes (`make test` runs scripts/install-pulumi first), so the
first test using the fixture gets a long timeout; once the cache exists the fixture takes well
under a second.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e._engine import Workspace

REPO = Path(__file__).resolve().parents[2]
INSTALL_PULUMI = REPO / "scripts" / "install-pulumi"
# A cold build (module download + compile) on a 2-core machine, with a wide margin.
BUILD_TIMEOUT_SECONDS = 3600


_built: list[Path] = []
"""The session's bin dir once ``pulumi_bin_dir`` has run in this process (each xdist worker is
a process of its own)."""


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    # The session fixture is built during the first test of this process that uses it: only
    # that test needs room for a cold build (or for the wait on another worker's build, behind
    # scripts/install-pulumi's lock); the others keep the project's normal timeout. Which test
    # that is depends on the order each xdist worker gets its tests in, so it is decided here,
    # as each test starts; tryfirst: pytest-timeout's own wrapper, inside this one, reads it.
    if not _built and "pulumi_bin_dir" in getattr(item, "fixturenames", ()):
        item.add_marker(pytest.mark.timeout(BUILD_TIMEOUT_SECONDS), append=False)
    yield


@pytest.fixture(scope="session")
def pulumi_bin_dir() -> Path:
    """The bin dir of the pinned Pulumi engine (built from Go modules on first use)."""
    # Progress goes to stderr (shown by pytest if this fails); stdout's last line is the bin dir.
    proc = subprocess.run(
        [str(INSTALL_PULUMI)],
        stdout=subprocess.PIPE,
        text=True,
        timeout=BUILD_TIMEOUT_SECONDS,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(
            f"scripts/install-pulumi failed with exit code {proc.returncode}", pytrace=False
        )
    bin_dir = Path(proc.stdout.strip().splitlines()[-1])
    for tool in ("pulumi", "pulumi-language-python", "pulumi-language-python-exec"):
        assert (bin_dir / tool).is_file(), f"{tool} missing from {bin_dir}"
    _built.append(bin_dir)
    return bin_dir


@pytest.fixture
def ws(pulumi_bin_dir: Path, tmp_path: Path) -> Iterator[Workspace]:
    """A copy of the project with its own backend; fails the test if a pulumi process outlives it."""
    workspace = Workspace.create(tmp_path, pulumi_bin_dir)
    yield workspace
    assert workspace.kill_strays() == [], "pulumi processes outlived the test"
