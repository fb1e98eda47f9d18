"""A Vertex AI hyperparameter tuning job document → ``TuningJobSpec``.

Three forms, told apart by their top-level keys:

- the ``HyperparameterTuningJob`` ``gcloud ai hp-tuning-jobs create --config`` reads
  (``studySpec``, ``trialJobSpec``, ``maxTrialCount``...): a count it leaves out is 1, as
  gcloud makes it when no flag sets it, with a note;
- the whole job as the API returns it (``gcloud ai hp-tuning-jobs describe``): the same, with
  output-only fields (``name``, ``state``, ``trials``...) ignored, with a note;
- a ``CreateHyperparameterTuningJobRequest`` body (``parent`` + ``hyperparameterTuningJob``):
  project and region from ``parent``; no count is filled in (the API requires them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._errors import SpecFormatError
from ..rules._tuning_spec import TuningJobSpec, output_only_fields
from .request import RequestShape, job_from_request
from .result import Format, LoadedSpec

__all__ = ["TUNING_KEYS", "tuning_format", "tuning_from_document", "tuning_job_summary"]

TUNING_KEYS = (
    "studySpec",
    "study_spec",
    "trialJobSpec",
    "trial_job_spec",
    "maxTrialCount",
    "max_trial_count",
    "parallelTrialCount",
    "parallel_trial_count",
)
"""Top-level keys that make a document a ``HyperparameterTuningJob``."""
_REQUEST = RequestShape(
    "CreateHyperparameterTuningJobRequest",
    "hyperparameterTuningJob",
    "hyperparameter_tuning_job",
    "HyperparameterTuningJob",
)
# (field, its snake_case name, the gcloud flag that sets it)
_COUNTS = (
    ("maxTrialCount", "max_trial_count", "--max-trial-count"),
    ("parallelTrialCount", "parallel_trial_count", "--parallel-trial-count"),
)


def tuning_format(document: Mapping[Any, Any]) -> Format | None:
    """The tuning job format of a parsed mapping, or None when it is no tuning job."""
    if _REQUEST.field in document or _REQUEST.snake in document:
        return "create-hyperparameter-tuning-job-request"
    if any(key in document for key in TUNING_KEYS):
        return "hyperparameter-tuning-job"
    return None


def tuning_job_summary(document: Mapping[Any, Any]) -> str:
    """`` with 2 parameters``: what a refusal says of a tuning job document."""
    job = document.get(_REQUEST.field, document.get(_REQUEST.snake))
    job = job if isinstance(job, dict) else document
    study = job.get("studySpec", job.get("study_spec"))
    parameters = study.get("parameters") if isinstance(study, dict) else None
    if not isinstance(parameters, list):
        return ""
    return f" with {len(parameters)} parameter{'' if len(parameters) == 1 else 's'}"


def tuning_from_document(
    document: Any,
    origin: str = "(tuning job)",
    *,
    overrides: Mapping[str, Any] | None = None,
) -> LoadedSpec:
    """The tuning job of a parsed document in any of the three forms; raises ``SpecError``.

    ``overrides`` are values set over the document's, by dotted camelCase path
    (``{"displayName": "x", "maxTrialCount": 12, "trialJobSpec.serviceAccount": "sa@..."}``):
    what a command's flags set over its ``--config``, as gcloud does. In a request body they
    apply to its ``hyperparameterTuningJob``.
    """
    if not isinstance(document, dict):
        raise SpecFormatError(
            f"{origin}: expected a mapping at the top level, got {type(document).__name__}"
        )
    form = tuning_format(document) or "hyperparameter-tuning-job"
    notes: list[str] = []
    job: dict[Any, Any] = document
    if form == "create-hyperparameter-tuning-job-request":
        job = job_from_request(document, _REQUEST, notes)
    ignored = output_only_fields(job)
    if ignored:
        notes.append(f"output-only fields ignored: {', '.join(ignored)}")
        job = {k: v for k, v in job.items() if k not in ignored}
    job = _overridden(job, overrides or {})
    if form == "hyperparameter-tuning-job":
        job = _gcloud_counts(job, notes)
    return LoadedSpec.of_tuning(TuningJobSpec.parse(job), form, notes)


def _overridden(job: dict[Any, Any], overrides: Mapping[str, Any]) -> dict[Any, Any]:
    """``job`` with each override set at its dotted path (mappings copied on the way)."""
    job = dict(job)
    for path, value in overrides.items():
        *parents, last = path.split(".")
        place = job
        for name in parents:
            inner = place.get(name)
            if not isinstance(inner, dict):
                inner = {}  # a malformed value the override replaces
            place[name] = inner = dict(inner)
            place = inner
        place[last] = value
    return job


def _gcloud_counts(job: dict[Any, Any], notes: list[str]) -> dict[Any, Any]:
    """The trial counts gcloud sends: 1 for each the config and flags leave out."""
    filled = dict(job)
    for name, snake, flag in _COUNTS:
        if job.get(name, job.get(snake)) is None:
            filled.pop(snake, None)
            filled[name] = 1
            notes.append(
                f"{name} not set: gcloud ai hp-tuning-jobs create makes it 1 unless {flag} is given"
            )
    return filled
