"""A fixture for tests that put a catalog overlay over the packaged catalog (issue 34)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from components.rules._catalog import use_catalog_overlay


@pytest.fixture
def packaged_catalog() -> Iterator[None]:
    """The packaged catalog alone before and after the test: an overlay holds per process."""
    use_catalog_overlay(None)
    yield
    use_catalog_overlay(None)
