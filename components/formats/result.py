"""The one result type every input format's reader gives: ``LoadedSpec``.

A file holds a custom job or a hyperparameter tuning job. ``LoadedSpec.tuning`` tells them
apart: None for a custom job (``spec`` is the job), the ``TuningJobSpec`` for a tuning job
(``spec`` is then the custom job each trial runs, ``tuning.trial_job()``, for what needs one
trial's job: local paths, prices). A reader asked for a single job never hands a tuning job
over as one: ``load_spec_file`` raises ``TuningJobFileError`` unless called with
``tuning=True``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from .._errors import SpecError, SpecFormatError
from ..rules._spec import JobSpec
from ..rules._tuning_spec import TuningJobSpec
from ..rules._violations import Violation

__all__ = [
    "FileJob",
    "Format",
    "Kind",
    "LoadedSpec",
    "PathRenames",
    "TuningJobFileError",
    "in_input_terms",
]

Format = Literal[
    "custom-job",
    "custom-job-spec",
    "create-custom-job-request",
    "legacy-config",
    "gcloud-command",
    "notebook",
    "python-sdk",
    "pulumi-program",
    "hyperparameter-tuning-job",
    "create-hyperparameter-tuning-job-request",
]
Kind = Literal["custom-job", "hyperparameter-tuning-job"]
"""What a file holds, whatever its format: ``LoadedSpec.kind``."""

PathRenames = tuple[tuple[str, str], ...]
"""``(pattern, replacement)`` pairs (``re.sub`` syntax, the first match wins) that say a
violation's path in the terms of the input it was converted from."""


class TuningJobFileError(SpecFormatError):
    """The file holds a hyperparameter tuning job, and a single custom job was asked for."""


@dataclass
class LoadedSpec:
    """A spec read from a file, the format it was in, and notes on what was assumed."""

    spec: JobSpec
    """The custom job; for a tuning job, the one each trial runs (``tuning.trial_job()``)."""
    format: Format
    notes: list[str] = field(default_factory=list)
    scale_tier: str | None = None
    """The legacy scale tier the cluster came from (None for CUSTOM): it has its own price."""
    tuning: TuningJobSpec | None = None
    """The hyperparameter tuning job the file holds; None for a custom job."""
    renames: PathRenames = ()
    """How a violation's path reads in the input's terms (legacy ``hyperparameters``)."""

    @classmethod
    def of_tuning(
        cls,
        tuning: TuningJobSpec,
        format: Format,
        notes: Sequence[str] = (),
        *,
        scale_tier: str | None = None,
        renames: PathRenames = (),
    ) -> LoadedSpec:
        """A tuning job read from a file (``spec`` is its trial's custom job)."""
        return cls(tuning.trial_job(), format, list(notes), scale_tier, tuning, renames)

    @property
    def kind(self) -> Kind:
        return "custom-job" if self.tuning is None else "hyperparameter-tuning-job"

    def in_input_terms(self, violations: Iterable[Violation]) -> list[Violation]:
        """``violations`` (of the spec read) with their paths in the input's terms."""
        return in_input_terms(violations, self.renames)


@dataclass
class FileJob:
    """One job of a file that may hold several (a notebook, a Python file): its name in
    messages (``cell 4, line 2: the ! line``; None for a file of one job in any other format)
    and either what was read or why it could not be (the file's other jobs are still read)."""

    name: str | None
    loaded: LoadedSpec | None = None
    error: SpecError | None = None


def in_input_terms(violations: Iterable[Violation], renames: PathRenames) -> list[Violation]:
    """Each violation's path rewritten by the first of ``renames`` that matches it."""
    if not renames:
        return list(violations)
    compiled = [(re.compile(pattern), replacement) for pattern, replacement in renames]
    found = []
    for violation in violations:
        for pattern, replacement in compiled:
            path, count = pattern.subn(replacement, violation.path, count=1)
            if count:
                violation = dataclasses.replace(violation, path=path)
                break
        found.append(violation)
    return found
