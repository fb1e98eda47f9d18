"""Declarative GPU training jobs for Pulumi on Vertex AI.

Installed, this package is ``gpu_training`` (in this checkout, the folder ``components``)::

    from gpu_training import TrainingJob, HyperparameterTuningJob, TrainingInfra

Importing it is cheap: it never imports ``google.cloud.aiplatform`` or ``pulumi``; the Pulumi
resources (``TrainingJob``, ``HyperparameterTuningJob``) and the GCP infrastructure component
(``TrainingInfra``, the ``[gcp]`` extra) are imported on first use. Inside, one room per role,
on floors (``_floors``: an import goes down, never up):

- ``rules/``: what a job may be (spec models, the hardware catalog, images, validation);
- ``formats/``: the input formats a job comes in (YAML, gcloud commands and scripts, legacy);
- ``costs/``: what it costs and whether it fits (prices, price sheets, quotas);
- ``lifecycle/``: the terms of a job's life (the wire, settings, adoption's rules, check and
  diff decisions, interrupts, progress), no API call;
- ``vertex/``: everything that talks to Vertex AI (the only importer of its client library);
- ``core/``: a job's whole life behind a typed interface, for every door (no Pulumi type);
- ``dynamic/``: the dynamic door (the resources' base and preview, the host's patches);
- ``plugin/``: the provider plugin, the door of every language;
- ``cli/``: ``python -m gpu_training`` (``python -m components`` here); ``policies``: the
  policy pack's rules; ``review``: the PR comment;
- ``catalog/``: the hardware, image, quota and price facts as CSV data, each row with its source.

``_provider``, ``_tuning_provider`` and ``_run_key`` stay at the top: states pickle their
classes by reference, by these module names. Every error raised on purpose is a
``TrainingJobError`` (``_errors``).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._errors import (
        CatalogError,
        SpecError,
        SpecFormatError,
        SpecInvalidError,
        TrainingJobError,
    )
    from .formats import LoadedSpec, load_spec_file, spec_from_document
    from .infra import TrainingInfra, TrainingInfraArgs
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
    from .training_job import TrainingJob, TrainingJobArgs
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
    "TrainingInfra",
    "TrainingInfraArgs",
    "TrainingJob",
    "TrainingJobArgs",
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

_EXPORTS = {
    "CatalogError": "._errors",
    "SpecError": "._errors",
    "SpecFormatError": "._errors",
    "SpecInvalidError": "._errors",
    "TrainingJobError": "._errors",
    "LoadedSpec": ".formats",
    "load_spec_file": ".formats",
    "spec_from_document": ".formats",
    "Accelerator": ".rules._catalog",
    "Catalog": ".rules._catalog",
    "Combination": ".rules._catalog",
    "MachineType": ".rules._catalog",
    "allowed_counts": ".rules._catalog",
    "combinations": ".rules._catalog",
    "load_catalog": ".rules._catalog",
    "load_catalog_from": ".rules._catalog",
    "regions_offering": ".rules._catalog",
    "zones_offering": ".rules._catalog",
    "ContainerSpec": ".rules._spec",
    "DiskSpec": ".rules._spec",
    "EncryptionSpec": ".rules._spec",
    "EnvVar": ".rules._spec",
    "JobSpec": ".rules._spec",
    "MachineSpec": ".rules._spec",
    "PythonPackageSpec": ".rules._spec",
    "Scheduling": ".rules._spec",
    "WorkerPoolSpec": ".rules._spec",
    "StudySpec": ".rules._tuning_spec",
    "TrialJobSpec": ".rules._tuning_spec",
    "TuningJobSpec": ".rules._tuning_spec",
    "validate_tuning": ".rules._tuning_validation",
    "validate_tuning_document": ".rules._tuning_validation",
    "validate": ".rules._validation",
    "validate_document": ".rules._validation",
    "Violation": ".rules._violations",
    "did_you_mean": ".rules._violations",
    "errors_only": ".rules._violations",
    "nearest": ".rules._violations",
    "TrainingJob": ".training_job",
    "TrainingJobArgs": ".training_job",
    "HyperparameterTuningJob": ".tuning_job",
    "HyperparameterTuningJobArgs": ".tuning_job",
    "TrainingInfra": ".infra",
    "TrainingInfraArgs": ".infra",
}
"""Where each public name lives: imported on first use, so that importing one module of the
package (the provider process loads ``_provider``) loads only what that module needs."""


def __getattr__(name: str) -> Any:
    """A public name, imported on first use (the resources import ``pulumi``; ``TrainingInfra``
    imports ``pulumi_gcp``, the ``[gcp]`` extra)."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
