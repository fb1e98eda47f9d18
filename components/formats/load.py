"""Reading a job spec from any of the input formats (see ``components.formats``)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic.alias_generators import to_camel

from components._catalog import Catalog, load_catalog
from components._errors import SpecFormatError, SpecInvalidError
from components._spec import CUSTOM_JOB_OUTPUT_ONLY, JobSpec
from components._violations import Violation, did_you_mean
from components.formats.gcloud_command import is_gcloud_command, read_gcloud_command
from components.formats.legacy_config import read_legacy_config
from components.formats.result import Format, LoadedSpec
from components.formats.text import parse_document, read_text

__all__ = ["detect_format", "load_spec_file", "spec_from_document"]


# What the API returns about a job, never what it is asked to run: ``describe`` prints them.
_OUTPUT_ONLY = frozenset(CUSTOM_JOB_OUTPUT_ONLY) | {to_camel(n) for n in CUSTOM_JOB_OUTPUT_ONLY}
_PARENT = re.compile(r"projects/([^/\s]+)/locations/([^/\s]+)")
_REQUEST_FIELDS = ("parent", "customJob")


_TUNING_KEYS = (
    "studySpec",
    "study_spec",
    "trialJobSpec",
    "trial_job_spec",
    "maxTrialCount",
    "max_trial_count",
    "hyperparameterTuningJob",
    "hyperparameter_tuning_job",
)


def _refuse_tuning_job(document: dict[Any, Any], origin: str) -> None:
    """A Vertex ``HyperparameterTuningJob`` (or its request) is never read as a single job."""
    found = [key for key in _TUNING_KEYS if key in document]
    if not found:
        return
    job = document.get("hyperparameterTuningJob", document.get("hyperparameter_tuning_job"))
    job = job if isinstance(job, dict) else document
    study = job.get("studySpec", job.get("study_spec"))
    parameters = study.get("parameters") if isinstance(study, dict) else None
    what = f" with {len(parameters)} parameter(s)" if isinstance(parameters, list) else ""
    raise SpecFormatError(
        f"{origin}: this is a Vertex AI hyperparameter tuning job{what} ({', '.join(found)} at "
        "the top level), not a single custom job: TrainingJob runs one CustomJob and does not "
        "run hyperparameter tuning jobs. To check one trial, validate its trialJobSpec as a "
        "CustomJobSpec file"
    )


def detect_format(document: Any, origin: str) -> Format:
    """Which format a parsed document is in; ``SpecFormatError`` naming what was expected."""
    if not isinstance(document, dict):
        raise SpecFormatError(
            f"{origin}: expected a mapping at the top level, got {type(document).__name__}"
        )
    _refuse_tuning_job(document, origin)
    if "trainingInput" in document:
        return "legacy-config"
    if "customJob" in document or "custom_job" in document:
        return "create-custom-job-request"
    if "jobSpec" in document or "job_spec" in document:
        return "custom-job"
    if "workerPoolSpecs" in document or "worker_pool_specs" in document:
        return "custom-job-spec"
    raise SpecFormatError(
        f"{origin}: unknown format: expected workerPoolSpecs (CustomJobSpec), jobSpec (CustomJob), "
        "customJob (CreateCustomJobRequest) or trainingInput (legacy config.yaml) at the top level"
    )


def spec_from_document(
    document: Any,
    origin: str = "(spec)",
    *,
    catalog: Catalog | None = None,
    region: str | None = None,
) -> LoadedSpec:
    """A spec from parsed data in any of the YAML formats; raises ``SpecError``.

    A whole ``CustomJob`` as the API returns it may carry its output-only fields (``name``,
    ``state``, ``createTime``...): they are ignored, with a note. A ``CreateCustomJobRequest``
    gives its project and region through ``parent``. ``region`` overrides a legacy
    config's region, which also picks its prebuilt image's registry.
    """
    kind = detect_format(document, origin)
    if kind == "legacy-config":
        return read_legacy_config(document, catalog=catalog, region=region)
    notes: list[str] = []
    if kind == "create-custom-job-request":
        document = _request_job(document, notes)
    if kind != "custom-job-spec":
        ignored = [key for key in document if key in _OUTPUT_ONLY]
        if ignored:
            notes.append(f"output-only fields ignored: {', '.join(ignored)}")
            document = {k: v for k, v in document.items() if k not in _OUTPUT_ONLY}
    return LoadedSpec(JobSpec.parse(document), kind, notes)


def _request_job(request: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """The ``customJob`` of a ``CreateCustomJobRequest``, with the project and region of its
    ``parent`` (``projects/P/locations/L``); ``SpecInvalidError`` for what does not fit."""
    problems: list[Violation] = []
    for key in request:
        if key not in ("parent", "customJob", "custom_job"):
            problems.append(
                Violation(
                    str(key),
                    "is not a field of a CreateCustomJobRequest",
                    did_you_mean(
                        str(key), _REQUEST_FIELDS, otherwise="known fields: parent, customJob"
                    ),
                    rule="schema",
                )
            )
    job = request.get("customJob", request.get("custom_job"))
    if not isinstance(job, dict):
        problems.append(Violation("customJob", "must be a mapping (the CustomJob)", rule="schema"))
        raise SpecInvalidError(problems)
    parent = request.get("parent")
    if parent is None:
        if problems:
            raise SpecInvalidError(problems)
        return job
    match = _PARENT.fullmatch(parent) if isinstance(parent, str) else None
    if match is None:
        problems.append(
            Violation(
                "parent",
                "must name a location as projects/PROJECT/locations/REGION",
                rule="schema",
            )
        )
        raise SpecInvalidError(problems)
    job = _with_place(job, {"project": match.group(1), "region": match.group(2)}, problems)
    if problems:
        raise SpecInvalidError(problems)
    notes.append(f"project and region taken from parent: {match.group(1)}, {match.group(2)}")
    return job


def _with_place(
    job: dict[str, Any], place: dict[str, str], problems: list[Violation]
) -> dict[str, Any]:
    """``job`` with the project and region of ``parent`` where it names none; a conflict with
    one it names is a violation at that field."""
    inner = job.get("jobSpec", job.get("job_spec"))
    added = dict(job)
    for key, value in place.items():
        given = job.get(key, inner.get(key) if isinstance(inner, dict) else None)
        if given is None:
            added[key] = value
        elif given != value:
            problems.append(
                Violation(
                    f"customJob.{key}",
                    f"is {given!r}, but parent names {key} {value!r}",
                    "remove it, or make parent and it agree",
                    rule="project" if key == "project" else "region",
                )
            )
    return added


def load_spec_file(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    catalog: Catalog | None = None,
    region: str | None = None,
) -> LoadedSpec:
    """Read a spec file in any of the formats; raises ``SpecError`` subclasses.

    ``region`` (the CLI's ``--region``) overrides a legacy job's region and so its image
    registry; other formats keep what the file says (the caller checks against ``region``).

    ``SpecFormatError``: unreadable or in no known format. ``SpecInvalidError``: the
    file was read but fields are malformed (each named in ``violations``).
    """
    path = Path(path)
    text = read_text(path)
    catalog = catalog or load_catalog()
    if is_gcloud_command(text, path):
        environment = os.environ if env is None else env
        return read_gcloud_command(path, text, environment, catalog, region)
    document = parse_document(text, str(path))
    return spec_from_document(document, str(path), catalog=catalog, region=region)
