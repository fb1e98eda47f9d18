"""Errors raised by the package: one tree under one root.

The tree (each error is also what it says after the dash, so ``except ValueError`` still
catches the input errors)::

    TrainingJobError                     base of everything raised here
    ├── CatalogError                     catalog data is missing or malformed
    ├── SpecError (ValueError)           a job spec cannot be read or built
    │   ├── SpecFormatError              the file is unreadable or in no known format
    │   │   ├── TuningJobFileError       a tuning job where a single custom job was wanted
    │   │   ├── LoopJobs                 a script's one submission runs in loops: a job per run
    │   │   ├── _SeveralJobs             a file of several jobs where one was wanted
    │   │   └── _MakeUnknown             a Makefile variable set only under ifeq/ifdef
    │   └── SpecInvalidError             the spec parsed, but has violations
    │       └── LegacyConversionError    a legacy job with problems, in the input's terms
    ├── YamlBoundsError (ValueError)     a document crosses a size or depth bound
    ├── Unresolvable                     a script's value that only running it would give
    ├── FileReadError (ValueError)       a file is not a regular file within the cap
    ├── PackagingError (ValueError)      a trainer source cannot be packaged
    ├── PlacementInputError (ValueError) candidate regions or capacity cannot be read
    ├── ConfigError (RunError, ValueError)            the stack configuration is invalid
    ├── TrainingJobInputError (RunError, ValueError)  a job resource's inputs are invalid
    ├── SettingError (ValueError)        a provider stack setting is malformed
    ├── PriceSheetError (ValueError)     ``training:prices`` or its sheet is invalid
    ├── JobImportError (ValueError)      a job cannot be imported
    ├── ReviewError (ValueError)         not the JSON ``pulumi preview --json`` prints
    ├── QuotaUnavailable (RuntimeError)  the project's quotas cannot be read
    ├── BillingUnavailable (RuntimeError)  the billing SKUs cannot be read (prices: the snapshot)
    ├── Interrupted                      the provider process was asked to stop mid-wait
    ├── StateUnreadable                  `pulumi stack export` could not read the stack
    ├── PlacementFailed (RuntimeError)   no candidate region took a placed job
    └── JobOperationError (RuntimeError) an API operation failed
        ├── ApiUnreachable               transient errors outlasted the retry deadline
        ├── CapacityLost                 a placed job's region had no machines for it
        └── WaitFailed                   the job did not reach the wanted state

Validation itself never raises: ``validate`` returns violations. ``SpecInvalidError``
is for callers that need a spec that is valid (e.g. before submitting a job).
tests/test_layout.py checks that every error the package defines is under the root and drawn here.
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
