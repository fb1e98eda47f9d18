"""The Pulumi program: stack configuration → infrastructure and training jobs.

``__main__.py`` only calls ``run()``. This module reads ``training:jobs`` (and the spec files
it names, once each) and declares the resources a program of one's own would declare with the
same arguments; what a job gets besides its spec is the resource's doing
(``components.core._preview``): cloud stacks (no local endpoint) get a ``TrainingInfra`` (API,
bucket, service account, staged trainer package) passed to each job as ``infra``, which fills
in the package URI, the service account and an output directory where the spec file leaves
them out; on the local stack the emulator runs packages from local paths, ``trainerSource``
is each job's ``trainer_source``, and a digest of each local package directory is a trigger,
so editing the trainer re-runs the job.

A job whose spec file is a Vertex hyperparameter tuning job (``studySpec``/``trialJobSpec`` at
the top level) is a ``HyperparameterTuningJob``; the wiring above applies to its trials' spec
(``trialJobSpec``), each trial writing under ``<baseOutputDirectory>/<trial id>``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi

from . import config as _config_module
from ._errors import SpecError
from .config import ConfigError, JobConfig, StackConfig, load_stack_config
from .core._preview import PreviewSettings
from .dynamic._job_preview import package_digests, planned_infra
from .dynamic._job_resource import ResourceKind, check_jobs
from .formats import LoadedSpec
from .formats.load import load_jobs
from .lifecycle._packaging import PackagingError
from .rules._spec import JobSpec
from .rules._tuning_spec import TuningJobSpec
from .training_job import (
    TRAINING_JOB_RESOURCE,
    TrainingJob,
    TrainingJobArgs,
    resolve_local_paths,
)
from .tuning_job import (
    TUNING_JOB_RESOURCE,
    HyperparameterTuningJob,
    HyperparameterTuningJobArgs,
    resolve_trial_local_paths,
)

__all__ = ["Program", "run"]


@dataclass
class Program:
    """What ``run`` declared (returned for tests and for programs that build on it)."""

    config: StackConfig
    jobs: dict[str, TrainingJob | HyperparameterTuningJob] = field(default_factory=dict)
    infra: Any = None


Spec = JobSpec | TuningJobSpec
"""A job of the stack: a custom job, or a tuning job (its trials' spec is ``trialJobSpec``)."""


def _resolved(loaded: LoadedSpec, path: Path) -> Spec:
    """A job read from ``path``, its local paths resolved from the file's folder."""
    if loaded.tuning is not None:
        return resolve_trial_local_paths(loaded.tuning, path.parent)
    return resolve_local_paths(loaded.spec, path.parent)


def _read(path: Path) -> list[tuple[str | None, Spec, list[str]]]:
    """The jobs of a job file (one, unnamed, for a file of one job; several for a notebook, a
    Python file, a Pulumi program or Terraform file of several resources, a script's loops),
    local paths resolved, each with the notes of its reading."""
    jobs = load_jobs(path, tuning=True)
    failed = [job for job in jobs if job.error is not None]
    if failed:
        lines = []
        for job in failed:
            violations = getattr(job.error, "violations", ())
            detail = "; ".join(str(v) for v in violations) or str(job.error)
            lines.append(f"  {job.name}: {detail}")
        raise ConfigError("\n".join([f"{path}: {len(failed)} of its jobs cannot run:", *lines]))
    return [(job.name, _resolved(job.loaded, path), job.loaded.notes) for job in jobs if job.loaded]


def _load(
    job: JobConfig, seen: dict[Path, list[tuple[str | None, Spec]]]
) -> list[tuple[JobConfig, Spec]]:
    """The entry's jobs, parsed once; a file several entries share is read once per run. A file
    of several jobs (a notebook, a Python file) makes one job of each, named
    ``<entry name>-<job>`` (``_job_names``)."""
    if job.spec not in seen:
        try:
            read = _read(job.spec)
        except SpecError as exc:
            lines = [f"  {v}" for v in getattr(exc, "violations", ())]
            detail = "\n".join(["invalid spec:", *lines]) if lines else str(exc)
            raise ConfigError(f"{job.spec}: {detail}") from None
        for name, _, notes in read:
            for note in notes:
                where = f"{job.spec.name} ({name})" if name else job.spec.name
                pulumi.log.info(f"{where}: {note}")
        specs = [spec for _, spec, _ in read]
        named = len(read) > 1  # a notebook of one job is the entry's job, as any file
        seen[job.spec] = list(zip(_job_names(specs) if named else [None], specs, strict=True))
    return [
        (job if name is None else dataclasses.replace(job, name=f"{job.name}-{name}"), spec)
        for name, spec in seen[job.spec]
    ]


def _job_names(specs: list[Spec]) -> list[str]:
    """Names for the jobs of one file: their display names (made resource-name safe) when
    each has its own, else their places in the file (1, 2, ...), which stay as the notebook is
    edited less well; either way stable across runs of an unchanged file."""
    names = [
        re.sub(r"[^a-z0-9-]+", "-", (spec.display_name or "").lower()).strip("-") for spec in specs
    ]
    if all(names) and len(set(names)) == len(names):
        return names
    return [str(index) for index in range(1, len(specs) + 1)]


def _wired(config: StackConfig, infra: Any) -> Any:
    """The infra the jobs' specs are wired to: the cloud stack's (the resource leaves a job
    taken over, ``existingJob``, as it was started), or None."""
    return infra if config.target == "vertex" else None


def _job_args(
    job: JobConfig, spec: Spec, config: StackConfig, infra: Any
) -> tuple[ResourceKind, TrainingJobArgs | HyperparameterTuningJobArgs]:
    """The job's resource kind and arguments, as a program of one's own would pass them.

    Project and region are left to the resource, which reads gcp:project and gcp:region itself
    and so names those keys in its messages; where the stack's came from the environment
    (``StackConfig.place_origins``), they are passed on, as gcp:* would have been read, so
    every job runs where the infra is and the preview priced it, and messages name the
    variable.
    """
    knobs: dict[str, Any] = dict(
        triggers=list(job.triggers) or None,
        wait_for=job.wait_for,
        wait_timeout=job.wait_timeout,
        exclusive_gpus=job.exclusive_gpus,
        keep_record_on_delete=job.keep_record_on_delete,
        delete_record_on_delete=job.delete_record_on_delete,
        continue_last_run=job.continue_last_run,
        existing_job=job.existing_job,
        take_over_held_job=job.take_over_held_job,
        regions=job.placement,
        **{key: getattr(config, key) for key in config.place_origins},
        place_origins=config.place_origins or None,
        trainer_source=config.trainer_source,
        infra=_wired(config, infra),
    )
    if isinstance(spec, TuningJobSpec):
        return TUNING_JOB_RESOURCE, HyperparameterTuningJobArgs(spec, **knobs)
    return TRAINING_JOB_RESOURCE, TrainingJobArgs(spec, **knobs)


def _settings(config: StackConfig) -> PreviewSettings:
    return PreviewSettings(
        project=config.project,
        region=config.region,
        endpoint=config.endpoint,
        prices=config.prices,
        quota=config.quota,
        live_prices=config.live_prices and bool(config.jobs),
        root=_config_module.PROJECT_ROOT,
        retry_deadline=config.retry_deadline,
    )


def _check_stack_region(config: StackConfig, jobs: list[JobConfig]) -> None:
    """The cloud stack's region where no job is checked in it (every job has candidate
    regions, or there is none): the infra's bucket goes there. Otherwise each job's own check
    names a bad one. Raises ``ConfigError`` naming the key or variable it was read from."""
    if config.target != "vertex" or any(not job.placement for job in jobs):
        return
    from .rules._catalog import load_catalog
    from .rules._validation import region_violation

    origin = config.place_origins.get("region", "gcp:region")
    unknown = region_violation(origin, config.region, load_catalog())
    if unknown is not None:
        raise ConfigError(str(unknown))


def run(config: StackConfig | None = None) -> Program:
    """Declare the stack's resources; returns them.

    Every job is loaded and checked before anything is registered: one invalid job fails the
    whole program with every job's problems, and nothing starts.
    """
    config = config or load_stack_config()
    with package_digests():  # jobs sharing a trainer folder hash it once
        return _declare(config)


def _declare(config: StackConfig) -> Program:
    seen: dict[Path, list[tuple[str | None, Spec]]] = {}
    specs = [pair for job in config.jobs for pair in _load(job, seen)]
    # Checked with a stand-in for the infra: nothing, the infra included, exists before every
    # job is known to be valid and to fit the project's quotas.
    stand_in = planned_infra(config.trainer_source is not None)
    checks = []
    for job, spec in specs:
        kind, args = _job_args(job, spec, config, stand_in)
        checks.append((kind, job.name, args))
    check_jobs(checks, _settings(config))
    _check_stack_region(config, [job for job, _ in specs])
    program = Program(config)
    depends: list[pulumi.Resource] = []
    if config.target == "vertex":
        from .infra import TrainingInfra, TrainingInfraArgs

        try:
            program.infra = TrainingInfra(
                "training",
                TrainingInfraArgs(
                    project=config.project,
                    region=config.region,
                    trainer_source=config.trainer_source,
                    bucket_name=config.infra.bucket_name,
                    output_retention_days=config.infra.output_retention_days,
                    force_destroy=config.infra.force_destroy,
                    deployer=config.infra.deployer,
                ),
            )
        except PackagingError as exc:
            raise ConfigError(f"training:trainerSource: {exc}") from None
        depends.append(program.infra)
        pulumi.export("bucket", program.infra.bucket_name)
        pulumi.export("service_account", program.infra.service_account_email)
        if program.infra.package_uri is not None:
            pulumi.export("package_uri", program.infra.package_uri)
    exports: dict[str, Any] = {}
    for job, spec in specs:
        _, args = _job_args(job, spec, config, program.infra)
        options = pulumi.ResourceOptions(depends_on=depends)
        # validate=False: check_jobs checked every job before anything was registered.
        resource: TrainingJob | HyperparameterTuningJob
        if isinstance(args, HyperparameterTuningJobArgs):
            resource = HyperparameterTuningJob(job.name, args, options, validate=False)
        else:
            resource = TrainingJob(job.name, args, options, validate=False)
        program.jobs[job.name] = resource
        exports[job.name] = resource.status
    pulumi.export("jobs", exports)
    return program
