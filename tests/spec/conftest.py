"""Every spec test runs as a caller without Google credentials, whatever this machine has:
``estimate`` and ``prices`` read Vertex's live SKUs by default where credentials are present
(``components.core._billing_cli.priced_from``), and a test never reaches Google."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _no_google_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "no-gcloud-config"))
