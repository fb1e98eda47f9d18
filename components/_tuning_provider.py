"""The dynamic provider behind ``components.tuning_job.HyperparameterTuningJob``.

The lifecycle is the core's (``components.core._jobs.JobCore``) for the kind
``components.core._tuning.TUNING_JOB``, translated by ``components._provider.JobProvider``.
Like ``TrainingJobProvider`` it is pickled by reference (existing stacks name this module and
class) and holds nothing on ``self``.
"""

from __future__ import annotations

from ._provider import JobProvider
from .core._tuning import TUNING_JOB

__all__ = ["TUNING_JOB", "TuningJobProvider"]


class TuningJobProvider(JobProvider):
    """CRUD for a Vertex AI HyperparameterTuningJob (or the local emulator's)."""

    kind = TUNING_JOB
