"""Errors raised by the components package.

The tree::

    TrainingJobError                  base of everything raised here
    ├── CatalogError                  catalog data is missing or malformed
    └── SpecError (also ValueError)   a job spec cannot be read or built
        ├── SpecFormatError           the file is unreadable or in no known format
        └── SpecInvalidError          the spec parsed, but has violations

Validation itself never raises: ``validate`` returns violations. ``SpecInvalidError``
is for callers that need a spec that is valid (e.g. before submitting a job).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

__all__ = ["CatalogError", "SpecError", "SpecFormatError", "SpecInvalidError", "TrainingJobError"]

if TYPE_CHECKING:
    from .rules._violations import Violation


class TrainingJobError(Exception):
    """Base class of every error raised by this package."""


class CatalogError(TrainingJobError):
    """The catalog data could not be loaded (missing file, bad row)."""


class SpecError(TrainingJobError, ValueError):
    """A job spec could not be read or built."""


class SpecFormatError(SpecError):
    """The input is unreadable, malformed, or in no format this package knows."""


class SpecInvalidError(SpecError):
    """The spec has violations; ``violations`` holds every one of them."""

    def __init__(self, violations: Sequence[Violation], message: str | None = None) -> None:
        self.violations: tuple[Violation, ...] = tuple(violations)
        lines = "\n".join(f"  {v}" for v in self.violations)
        super().__init__(message or f"the job spec has {len(self.violations)} problem(s):\n{lines}")
