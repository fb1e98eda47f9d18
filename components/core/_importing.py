"""Bringing a job started elsewhere (gcloud, the Vertex SDK) under a stack's management.

``pulumi import`` does not work for dynamic resources (pulumi/pulumi#16175), so the job is
taken over by its own resource's create instead: ``python -m components import JOB`` reads the
job through the API and writes its spec as a job file, exactly as the job is (so the provider
finds it equal and adopts it, ``components.lifecycle._adoption`` rule 6), and prints the
``training:jobs`` entry that names it (``existingJob``). The next ``pulumi up`` takes the job
over without starting another; from then on it is an ordinary resource: a change of its file
replaces it (a new job starts, this one is cancelled), ``destroy`` cancels it.

The spec file holds the job's env values as the API returns them, in plain text; the labels
only the provider sets (from another stack) are left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .._errors import TrainingJobError
from ..lifecycle._adoption import holder_text, job_id, without_managed_labels
from ..lifecycle._settings import Endpoint
from ..lifecycle._wire import MANAGED_LABELS, parse_job_name, parse_tuning_job_name
from ..vertex.api import (
    CUSTOM_JOB,
    TUNING_JOB,
    JobApi,
    JobKind,
    RetryPolicy,
    is_not_found,
    job_document,
    shared_client,
    state_name,
)

__all__ = ["ImportedJob", "JobImportError", "fetch_job", "imported_job", "job_reference"]

_RESOURCE_NAME = re.compile(r"[^a-z0-9-]+")


class JobImportError(TrainingJobError, ValueError):
    """The job cannot be imported; the message says why (not found, unreachable, unreadable)."""


@dataclass
class ImportedJob:
    """A job's spec as a job file, and what the stack's entry for it says."""

    name: str
    """The job's resource name (``existingJob``)."""
    noun: str
    """``CustomJob`` or ``HyperparameterTuningJob``."""
    state: str
    resource_name: str
    """A resource name for the entry: the job's display name, made a Pulumi name."""
    document: dict[str, Any]
    """What the job file holds: the job's spec (a CustomJob's or a tuning job's)."""
    notes: list[str] = field(default_factory=list)

    def entry(self, spec_path: str) -> dict[str, Any]:
        """The ``training:jobs`` entry that takes the job over."""
        return {"name": self.resource_name, "spec": spec_path, "existingJob": self.name}


def job_reference(
    reference: str, project: str | None, region: str | None
) -> list[tuple[str, JobKind]]:
    """The names to try for ``reference`` (a full resource name, or an id with ``project`` and
    ``region``), with the kind of job each names."""
    if parse_job_name(reference):
        return [(reference, CUSTOM_JOB)]
    if parse_tuning_job_name(reference):
        return [(reference, TUNING_JOB)]
    if "/" in reference or not reference:
        raise JobImportError(
            f"{reference!r} is not a job: give its resource name "
            "(projects/P/locations/R/customJobs/ID or .../hyperparameterTuningJobs/ID), "
            "or its id with --project and --region"
        )
    if not project or not region:
        raise JobImportError(f"job id {reference!r}: give --project and --region too")
    parent = f"projects/{project}/locations/{region}"
    return [(f"{parent}/{kind.collection}/{reference}", kind) for kind in (CUSTOM_JOB, TUNING_JOB)]


def _region_of(name: str) -> str:
    return name.split("/")[3]


def fetch_job(
    reference: str,
    *,
    project: str | None = None,
    region: str | None = None,
    endpoint: Endpoint | None = None,
    policy: RetryPolicy | None = None,
) -> tuple[Any, JobKind]:
    """The job ``reference`` names, read through the API, and its kind."""
    endpoint = endpoint or Endpoint()
    policy = policy or RetryPolicy(deadline=30.0)
    tried = job_reference(reference, project, region)
    for name, kind in tried:
        api = JobApi(shared_client(endpoint, _region_of(name)), kind, policy)
        try:
            return api.get(name), kind
        except Exception as exc:
            if is_not_found(exc):
                continue
            raise JobImportError(f"could not read {name}: {exc}") from None
    names = " or ".join(name for name, _ in tried)
    raise JobImportError(f"there is no job {names}")


def _resource_name(display_name: str, name: str) -> str:
    cleaned = _RESOURCE_NAME.sub("-", display_name.lower()).strip("-")
    return cleaned[:60] or f"imported-{job_id(name)}"


def imported_job(job: Any, kind: JobKind) -> ImportedJob:
    """The job file and entry of ``job`` (read through the API) of ``kind``.

    The file is the job's spec as the spec models read a described job (what the provider
    compares it with when it takes the job over); raises ``JobImportError`` if they cannot.
    """
    from .._errors import SpecError
    from ..formats import spec_from_document

    described = job_document(job)
    try:
        loaded = spec_from_document(described, str(job.name), tuning=kind is TUNING_JOB)
    except SpecError as exc:
        raise JobImportError(f"{job.name}: its spec could not be read: {exc}") from None
    spec = loaded.tuning if loaded.tuning is not None else loaded.spec
    document = spec.to_document()
    for place in ("project", "region"):
        document.pop(place, None)
    notes = []
    labels = document.get("labels") or {}
    managed = [key for key in MANAGED_LABELS if key in labels]
    if managed:
        document = without_managed_labels(document)
        notes.append(
            f"left out the labels {', '.join(managed)}: the provider sets them on the jobs it "
            f"submits. This job is held by another resource ({holder_text(labels)}): "
            "`pulumi up` refuses to take it over, and so to let this stack cancel it, unless "
            "the entry says takeOverHeldJob: true"
        )
    if _has_env_values(document):
        notes.append(
            "the file holds the job's env values in plain text, as the API returns them: keep "
            "it out of version control if any of them is a secret"
        )
    return ImportedJob(
        name=str(job.name),
        noun=kind.noun,
        state=state_name(job),
        resource_name=_resource_name(str(document.get("displayName") or ""), str(job.name)),
        document=document,
        notes=notes,
    )


def _has_env_values(document: Any) -> bool:
    if isinstance(document, dict):
        env = document.get("env")
        if isinstance(env, list) and any(isinstance(v, dict) and v.get("value") for v in env):
            return True
        return any(_has_env_values(v) for v in document.values())
    if isinstance(document, list):
        return any(_has_env_values(v) for v in document)
    return False
