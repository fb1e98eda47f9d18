"""``TrainingJob``: a Vertex AI custom training job as a Pulumi resource.

::

    from .training_job import TrainingJob

    job = TrainingJob("train", spec="stacks/jobs/dev-t4-spot.yaml", wait_for="running")
    pulumi.export("job", job.job_name)

The spec is a ``JobSpec``, a mapping (camelCase or snake_case, values may be
``pulumi.Output``), or the path of a spec file in any of the three formats
(``components.load_spec_file``). Project and region default to the stack's ``gcp:project``
and ``gcp:region``, then the spec's own, then the environment pulumi-gcp reads
(``GOOGLE_PROJECT``..., ``GOOGLE_REGION``...). Any change of the job (spec, env values, project, region, ``triggers``)
replaces it: the new job starts, then the old one is cancelled, or the other way round with
``exclusive_gpus=True``. Env var values never appear in plain text in the state: they are
kept out of ``spec`` in the secret ``env_values`` property.

The arguments, their checks and the resource's common outputs are shared with
``HyperparameterTuningJob`` (``components.dynamic._job_resource``); the type token is
``pulumi-python:dynamic/vertex:TrainingJob``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi

from ._provider import TrainingJobProvider
from .dynamic._job_resource import (
    DefaultInput,
    JobArgs,
    JobResource,
    PreparedSpec,
    ResourceKind,
    StatusField,
    TrainingJobInputError,
    check_job_args,
    prepare,
    resolve_pool_paths,
)
from .formats import load_spec_file
from .lifecycle._wire import WaitFor
from .rules._spec import JobSpec

__all__ = [
    "TRAINING_JOB_RESOURCE",
    "SpecInput",
    "TrainingJob",
    "TrainingJobArgs",
    "TrainingJobInputError",
    "WaitFor",
    "check_args",
    "prepare_spec",
    "resolve_local_paths",
]

SpecInput = JobSpec | Mapping[str, Any] | str | os.PathLike[str] | pulumi.Output[Any]
"""What ``spec`` accepts: a model, a mapping (may hold Outputs), a spec file path, an Output."""

# What the attributes were called before they were shared (tests and programs use them).
_StatusField = StatusField
_DefaultInput = DefaultInput


@dataclass
class TrainingJobArgs(JobArgs[SpecInput]):
    """The inputs of a ``TrainingJob`` (see ``JobArgs``); ``spec`` is a ``JobSpec``, a
    mapping, the path of a spec file in any format ``validate`` reads, or an Output."""


def resolve_local_paths(spec: JobSpec, base: Path) -> JobSpec:
    """Make relative local package paths absolute, relative to ``base`` (the spec file's dir).

    A spec file's local paths mean the same wherever ``pulumi`` is started from. Raises
    ``SpecInvalidError`` naming a path that cannot be resolved (a symlink loop).
    """
    pools = resolve_pool_paths(spec.worker_pool_specs, base)
    return spec.model_copy(update={"worker_pool_specs": pools})


def _read_spec_file(path: Path) -> tuple[JobSpec, list[str]]:
    loaded = load_spec_file(path)
    return resolve_local_paths(loaded.spec, path.resolve().parent), loaded.notes


TRAINING_JOB_RESOURCE = ResourceKind(
    "TrainingJob", TrainingJobProvider, _read_spec_file, resolve_local_paths
)


def prepare_spec(spec: JobSpec | Mapping[str, Any] | str | os.PathLike[str]) -> PreparedSpec:
    """Normalise a spec input (not an Output) to the resource's form.

    Nested Outputs in a mapping are kept (as the same Output objects) at their places in the
    result. Raises ``TrainingJobInputError`` naming the file or the fields that are wrong.
    """
    return prepare(TRAINING_JOB_RESOURCE, spec)


class TrainingJob(JobResource[SpecInput], module="vertex", name="TrainingJob"):
    """A Vertex AI custom training job (type ``pulumi-python:dynamic/vertex:TrainingJob``).

    Besides the fields every job resource has (``job_name``, ``state``, ``console_url``...):
    """

    _kind = TRAINING_JOB_RESOURCE

    model_dir = StatusField[str]("model_dir")
    """``<baseOutputDirectory>/model/`` (``AIP_MODEL_DIR``), or empty without an output dir."""
    web_access_uris = StatusField[dict[str, str]]("web_access_uris")


def check_args(resource_name: str, args: TrainingJobArgs) -> tuple[str | None, list[Any]]:
    """Why ``TrainingJob(resource_name, args)`` would be rejected (or None), and its warnings.

    Registers nothing. A program with several jobs checks them all first, so one invalid job
    cannot leave the others half-applied (the engine starts creating a resource as soon as it
    is registered).
    """
    return check_job_args(TRAINING_JOB_RESOURCE, resource_name, args)
