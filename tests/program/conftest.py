"""Program tests never read a real project's quotas: ``read_limits`` answers "unavailable"
unless a test gives it limits (``tests/program/test_quota_program.py``), and the quota snapshot
is written under a temporary directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pulumi
import pytest

from components import config
from components.costs._quota import QuotaLimits
from components.vertex import quotas


@pytest.fixture(autouse=True)
def _no_quota_api(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    def unavailable(endpoint: object, project: str, *, retry_deadline: float) -> QuotaLimits:
        raise quotas.QuotaUnavailable(f"quotas of {project} are not read in tests")

    monkeypatch.setattr(quotas, "read_limits", unavailable)
    # The quota snapshot (for the policy pack) goes to a temporary project directory.
    monkeypatch.setattr(config, "PROJECT_ROOT", tmp_path)
    yield


@pytest.fixture
def logs(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """What the program logs, by level (``info``, ``warn``)."""
    seen: dict[str, list[str]] = {"info": [], "warn": []}
    for level in seen:
        monkeypatch.setattr(
            pulumi.log, level, lambda msg, *a, _l=level, **k: seen[_l].append(str(msg))
        )
    return seen
