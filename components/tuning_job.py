"""``HyperparameterTuningJob``: a Vertex AI hyperparameter tuning job as a Pulumi resource.

::

    from .tuning_job import HyperparameterTuningJob

    tune = HyperparameterTuningJob("tune", spec="stacks/jobs/local-tuning.yaml", wait_for="succeeded")
    pulumi.export("best", tune.best_trial)

The spec is a ``TuningJobSpec``, a mapping (camelCase or snake_case, values may be
``pulumi.Output``), or the path of a Vertex ``HyperparameterTuningJob`` YAML/JSON file (the
document ``gcloud ai hp-tuning-jobs create --config`` reads: ``studySpec``, ``trialJobSpec``,
``maxTrialCount``...; relative local package paths are relative to the file). It is the same
resource as ``TrainingJob`` in every other respect (``components.dynamic._job_resource``): the same
inputs, the same validation before any API call, a replace for any change of the job, the
provider's adoption of a job it submitted after a lost response or a crash, waits that cancel
the job when they fail, and env values (``trialJobSpec.workerPoolSpecs[i]...env[j].value``)
kept out of the state's plain text. Cancelling or deleting it cancels its running trials.

Outputs, besides a job's (``job_name``, ``state``, ``console_url``...): ``trial_counts``,
``best_trial`` (``id``, ``parameters``, ``metric_id``, ``value``), ``best_trial_model_dir``
and ``trial_hourly_cost_usd``. The type token is
``pulumi-python:dynamic/vertex:HyperparameterTuningJob``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi

from ._errors import SpecFormatError
from ._tuning_provider import TuningJobProvider
from .dynamic._job_resource import (
    JobArgs,
    JobResource,
    PreparedSpec,
    ResourceKind,
    StatusField,
    check_job_args,
    prepare,
    resolve_pool_paths,
)
from .formats import load_spec_file
from .lifecycle._wire import TRIAL_JOB_SPEC
from .rules._tuning_spec import TuningJobSpec

__all__ = [
    "TUNING_JOB_RESOURCE",
    "HyperparameterTuningJob",
    "HyperparameterTuningJobArgs",
    "TuningSpecInput",
    "check_tuning_args",
    "load_tuning_spec_file",
    "prepare_tuning_spec",
    "resolve_trial_local_paths",
]

TuningSpecInput = TuningJobSpec | Mapping[str, Any] | str | os.PathLike[str] | pulumi.Output[Any]
"""What ``spec`` accepts: a model, a mapping (may hold Outputs), a spec file path, an Output."""


@dataclass
class HyperparameterTuningJobArgs(JobArgs[TuningSpecInput]):
    """The inputs of a ``HyperparameterTuningJob`` (see ``JobArgs``); ``spec`` is a
    ``TuningJobSpec``, a mapping, the path of a tuning job YAML/JSON file, or an Output."""


def resolve_trial_local_paths(spec: TuningJobSpec, base: Path) -> TuningJobSpec:
    """The trials' relative local package paths made absolute, relative to ``base``."""
    trial = spec.trial_job_spec
    pools = resolve_pool_paths(trial.worker_pool_specs, base, prefix=f"{TRIAL_JOB_SPEC}.")
    return spec.model_copy(
        update={"trial_job_spec": trial.model_copy(update={"worker_pool_specs": pools})}
    )


def load_tuning_spec_file(path: str | os.PathLike[str]) -> TuningJobSpec:
    """A tuning job file's spec in any form ``validate`` reads, its trials' local paths
    resolved; raises ``SpecError`` (a custom job file is refused: use TrainingJob for it)."""
    return _read_tuning_file(Path(path))[0]


def _read_tuning_file(path: Path) -> tuple[TuningJobSpec, list[str]]:
    loaded = load_spec_file(path, tuning=True)
    if loaded.tuning is None:
        raise SpecFormatError(
            f"{path}: a custom job, not a hyperparameter tuning job: use TrainingJob for it"
        )
    return resolve_trial_local_paths(loaded.tuning, path.resolve().parent), loaded.notes


TUNING_JOB_RESOURCE = ResourceKind(
    "HyperparameterTuningJob", TuningJobProvider, _read_tuning_file, resolve_trial_local_paths
)


def prepare_tuning_spec(
    spec: TuningJobSpec | Mapping[str, Any] | str | os.PathLike[str],
) -> PreparedSpec:
    """Normalise a tuning spec input (not an Output) to the resource's form (see
    ``components.dynamic._job_resource.prepare``)."""
    return prepare(TUNING_JOB_RESOURCE, spec)


class HyperparameterTuningJob(
    JobResource[TuningSpecInput], module="vertex", name="HyperparameterTuningJob"
):
    """A Vertex AI hyperparameter tuning job (type
    ``pulumi-python:dynamic/vertex:HyperparameterTuningJob``).

    Besides the fields every job resource has (``job_name``, ``state``, ``console_url``...):
    """

    _kind = TUNING_JOB_RESOURCE

    trial_counts = StatusField[dict[str, int]]("trial_counts")
    """Trials by state: ``{"SUCCEEDED": 2, "INFEASIBLE": 0, "ACTIVE": 1, ...}``."""
    best_trial = StatusField[dict[str, Any] | None]("best_trial")
    """``{"id", "parameters": {parameter id: value}, "metric_id", "value"}``: the succeeded
    trial best for the goal of the study's first metric; None while there is none."""
    best_trial_model_dir = StatusField[str]("best_trial_model_dir")
    """``<trialJobSpec.baseOutputDirectory>/<best trial id>/model/`` (that trial's
    ``AIP_MODEL_DIR``), or empty without an output dir or a best trial."""
    trial_hourly_cost_usd = StatusField[float | None]("trial_hourly_cost_usd")
    """One trial's price per hour (``hourly_cost_usd`` is every parallel trial at once)."""


def check_tuning_args(
    resource_name: str, args: HyperparameterTuningJobArgs
) -> tuple[str | None, list[Any]]:
    """Why ``HyperparameterTuningJob(resource_name, args)`` would be rejected (or None), and
    its warnings; registers nothing (see ``components.training_job.check_args``)."""
    return check_job_args(TUNING_JOB_RESOURCE, resource_name, args)
