"""Declarative GPU training jobs: spec model, hardware catalog and validation.

Importing this package is cheap: it never imports ``google.cloud.aiplatform`` or
``pulumi``. The Pulumi resources live in ``components.training_job`` and
``components.tuning_job`` (``HyperparameterTuningJob`` is also offered here, imported on first
use), the GCP infrastructure component in ``components.infra``.
"""

from typing import TYPE_CHECKING, Any

from ._errors import (
    CatalogError,
    SpecError,
    SpecFormatError,
    SpecInvalidError,
    TrainingJobError,
)
from .formats import LoadedSpec, load_spec_file, spec_from_document
from .rules._catalog import (
    Accelerator,
    Catalog,
    Combination,
    MachineType,
    allowed_counts,
    combinations,
    load_catalog,
    load_catalog_from,
    regions_offering,
    zones_offering,
)
from .rules._spec import (
    ContainerSpec,
    DiskSpec,
    EncryptionSpec,
    EnvVar,
    JobSpec,
    MachineSpec,
    PythonPackageSpec,
    Scheduling,
    WorkerPoolSpec,
)
from .rules._tuning_spec import StudySpec, TrialJobSpec, TuningJobSpec
from .rules._tuning_validation import validate_tuning, validate_tuning_document
from .rules._validation import validate, validate_document
from .rules._violations import Violation, did_you_mean, errors_only, nearest

if TYPE_CHECKING:
    from .tuning_job import HyperparameterTuningJob, HyperparameterTuningJobArgs

__all__ = [
    "Accelerator",
    "Catalog",
    "CatalogError",
    "Combination",
    "ContainerSpec",
    "DiskSpec",
    "EncryptionSpec",
    "EnvVar",
    "HyperparameterTuningJob",
    "HyperparameterTuningJobArgs",
    "JobSpec",
    "LoadedSpec",
    "MachineSpec",
    "MachineType",
    "PythonPackageSpec",
    "Scheduling",
    "SpecError",
    "SpecFormatError",
    "SpecInvalidError",
    "StudySpec",
    "TrainingJobError",
    "TrialJobSpec",
    "TuningJobSpec",
    "Violation",
    "WorkerPoolSpec",
    "allowed_counts",
    "combinations",
    "did_you_mean",
    "errors_only",
    "load_catalog",
    "load_catalog_from",
    "load_spec_file",
    "nearest",
    "regions_offering",
    "spec_from_document",
    "validate",
    "validate_document",
    "validate_tuning",
    "validate_tuning_document",
    "zones_offering",
]

_RESOURCES = ("HyperparameterTuningJob", "HyperparameterTuningJobArgs")


def __getattr__(name: str) -> Any:
    """The Pulumi resources, imported on first use (they import ``pulumi``)."""
    if name in _RESOURCES:
        from . import tuning_job

        return getattr(tuning_job, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
