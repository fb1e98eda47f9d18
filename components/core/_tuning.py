"""What a HyperparameterTuningJob does its own way in the core's lifecycle (``TUNING_JOB``).

The lifecycle is ``components.core._jobs.JobCore``'s, with every guarantee a TrainingJob has
(validated check, replace reasons, submit-or-adopt by the identity and run labels, waits that
cancel on failure, cancel on delete, refresh, secrets kept out of the state's plain text and of
errors, the keyed run hash); this module only says what a tuning job does its own way: its spec
(``TuningJobSpec``, env values under ``trialJobSpec``), the API calls of
``hyperparameterTuningJobs``, the job object (``to_tuning_job``), the outputs (trial counts, the
best trial and its model dir) and the prices (every parallel trial at once).
"""

from __future__ import annotations

from typing import Any

from ..costs._pricing import tuning_cost_outputs
from ..lifecycle._check import TUNING_JOB_SPEC
from ..lifecycle._wire import parse_tuning_job_name
from ..rules._tuning_spec import TuningJobSpec
from ..vertex._library import types_only
from ..vertex.api import TUNING_JOB as TUNING_JOB_API
from ..vertex.api import tuning_job_outputs
from ._jobs import JobResourceKind

__all__ = ["TUNING_JOB"]


def _described_tuning_job(document: dict[str, Any]) -> TuningJobSpec:
    from ..formats import spec_from_document

    tuning = spec_from_document(document, "(existing job)", tuning=True).tuning
    if tuning is None:  # the API returned a tuning job: it reads as one
        raise ValueError("not a hyperparameter tuning job")
    return tuning


def _tuning_job(document: dict[str, Any]) -> Any:
    # The message types alone, without the library's clients and its version warnings: the
    # job is sent on the job service's client (the whole library costs 0.25 s more of CPU).
    types_only()
    from ..vertex.tuning_convert import to_tuning_job

    return to_tuning_job(TuningJobSpec.parse(document))


TUNING_JOB = JobResourceKind(
    what="hyperparameter tuning job",
    spec=TUNING_JOB_SPEC,
    api=TUNING_JOB_API,
    build=_tuning_job,
    outputs=tuning_job_outputs,
    costs=tuning_cost_outputs,
    parse_name=parse_tuning_job_name,
    read_spec=_described_tuning_job,
    gcloud_group="hp-tuning-jobs",
)
"""A ``HyperparameterTuningJob``: cancelling it cancels its running trials."""
