"""The Pulumi program: stack configuration → infrastructure and training jobs.

``__main__.py`` only calls ``run()``. Cloud stacks (no local endpoint) get a
``TrainingInfra`` (API, bucket, service account, staged trainer package) and their jobs are
wired to it: the package URI, the service account and an output directory are filled in
where the spec file leaves them out. The local stack runs packages from local paths on the
emulator; a digest of each local package directory is a trigger, so editing the trainer
re-runs the job.

A job whose spec file is a Vertex hyperparameter tuning job (``studySpec``/``trialJobSpec`` at
the top level) is a ``HyperparameterTuningJob``; the wiring above applies to its trials' spec
(``trialJobSpec``), each trial writing under ``<baseOutputDirectory>/<trial id>``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pulumi

from components._catalog import Catalog
from components._errors import SpecError
from components._packaging import PackagingError, source_digest
from components._pricing import estimate, estimate_tuning, summary, tuning_summary
from components._spec import JobSpec
from components._tuning_spec import TrialJobSpec, TuningJobSpec
from components._wire import TRIAL_JOB_SPEC
from components.config import (
    ConfigError,
    JobConfig,
    StackConfig,
    load_stack_config,
    priced_catalog,
)
from components.formats import load_spec_file
from components.training_job import (
    TrainingJob,
    TrainingJobArgs,
    TrainingJobInputError,
    check_args,
    resolve_local_paths,
)
from components.tuning_job import (
    HyperparameterTuningJob,
    HyperparameterTuningJobArgs,
    check_tuning_args,
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


def _python_pools(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        pool["pythonPackageSpec"]
        for pool in document.get("workerPoolSpecs", [])
        if isinstance(pool, dict) and isinstance(pool.get("pythonPackageSpec"), dict)
    ]


def _read(path: Path) -> tuple[Spec, list[str]]:
    """The spec of a job file, local paths resolved, and the notes of its reading."""
    loaded = load_spec_file(path, tuning=True)
    if loaded.tuning is not None:
        return resolve_trial_local_paths(loaded.tuning, path.parent), loaded.notes
    return resolve_local_paths(loaded.spec, path.parent), loaded.notes


def _load(job: JobConfig, seen: dict[Path, Spec]) -> Spec:
    """The job's spec, parsed once; a file several jobs share is read once per program run."""
    if job.spec in seen:
        return seen[job.spec]
    try:
        spec, notes = _read(job.spec)
    except SpecError as exc:
        lines = [f"  {v}" for v in getattr(exc, "violations", ())]
        detail = "\n".join(["invalid spec:", *lines]) if lines else str(exc)
        raise ConfigError(f"{job.spec}: {detail}") from None
    for note in notes:
        pulumi.log.info(f"{job.spec.name}: {note}")
    seen[job.spec] = spec
    return spec


def _billed_catalog(config: StackConfig) -> Catalog | None:
    """The catalog with the live billing SKUs' prices over its snapshot (``training:livePrices``;
    the local stack reads the emulator's Catalog API); None: the snapshot alone."""
    if not config.live_prices or not config.jobs:
        return None
    from components._billing_cli import live_catalog
    from components._catalog import load_catalog
    from components._settings import Endpoint

    return live_catalog(load_catalog(), Endpoint(config.endpoint), pulumi.log.info)


def _cost_line(name: str, spec: Spec, region: str, catalog: Catalog) -> str:
    try:
        if isinstance(spec, TuningJobSpec):
            line = tuning_summary(estimate_tuning(spec, catalog, region=region))
        else:
            line = summary(estimate(spec, catalog, region=region))
    except (SpecError, ValueError):
        return f"  {name}: no estimate (the spec is invalid)"
    return f"  {name}: {line}"


def _wire_cloud(spec: Spec, infra: Any, job: JobConfig) -> dict[str, Any]:
    """The spec as a document with the infra's Outputs where the spec file leaves them out
    (in a tuning job, its trials' spec)."""
    document = spec.to_document()
    trial = document.setdefault(TRIAL_JOB_SPEC, {}) if isinstance(spec, TuningJobSpec) else None
    target = document if trial is None else trial
    if infra.package_uri is not None:
        for package in _python_pools(target):
            uris = package.get("packageUris") or []
            if not any(str(u).startswith("gs://") for u in uris):
                package["packageUris"] = [infra.package_uri]
    target.setdefault("serviceAccount", infra.service_account_email)
    target.setdefault("baseOutputDirectory", infra.output_uri(job.name))
    return document


def _wire_local(
    spec: Spec, config: StackConfig, digests: dict[Path, str]
) -> tuple[Spec, list[str]]:
    """Point python pools at the local trainer; a trigger per package digest re-runs on edits."""
    if isinstance(spec, TuningJobSpec):
        trial, triggers = _wire_local_pools(spec.trial_job_spec, config, digests)
        return spec.model_copy(update={"trial_job_spec": trial}), triggers
    return _wire_local_pools(spec, config, digests)


Pools = TypeVar("Pools", JobSpec, TrialJobSpec)


def _wire_local_pools(
    spec: Pools, config: StackConfig, digests: dict[Path, str]
) -> tuple[Pools, list[str]]:
    triggers: list[str] = []
    pools = []
    for pool in spec.worker_pool_specs:
        package = pool.python_package_spec
        if package is not None and not package.package_uris and config.trainer_source:
            package = package.model_copy(update={"package_uris": [str(config.trainer_source)]})
            pool = pool.model_copy(update={"python_package_spec": package})
        pools.append(pool)
        for uri in package.package_uris if package is not None else ():
            path = Path(uri.removeprefix("file://"))
            if path.is_dir():
                if path not in digests:  # jobs sharing a trainer hash it once per run
                    try:
                        digests[path] = source_digest(path)[:16]
                    except PackagingError as exc:
                        raise ConfigError(str(exc)) from None
                triggers.append(f"package:{path.name}:{digests[path]}")
    return spec.model_copy(update={"worker_pool_specs": pools}), triggers


@dataclass
class _PlannedJob:
    job: JobConfig
    spec: Spec
    """Parsed once from the spec file; local stacks' package paths filled in."""
    triggers: list[str]


class _InfraStandIn:
    """What the cloud wiring reads from TrainingInfra, as values not known yet.

    Checking every job before any resource exists needs the wired spec; these Outputs are
    seen as unknown, exactly as the infra's real outputs are at preview.
    """

    def __init__(self, has_package: bool) -> None:
        self.package_uri = (
            pulumi.Output.from_input("gs://planned/package.tar.gz") if has_package else None
        )
        self.service_account_email = pulumi.Output.from_input(
            "planned@planned.iam.gserviceaccount.com"
        )

    def output_uri(self, job: str) -> pulumi.Output[str]:
        return pulumi.Output.from_input(f"gs://planned/jobs/{job}")


def _plan(config: StackConfig) -> list[_PlannedJob]:
    """Load every job, log its cost, and refuse the stack if any job is invalid."""
    planned: list[_PlannedJob] = []
    seen: dict[Path, Spec] = {}
    costs: list[str] = []
    digests: dict[Path, str] = {}
    catalog = priced_catalog(config.prices, _billed_catalog(config))
    for job in config.jobs:
        spec = _load(job, seen)
        region = job.placement[0]["region"] if job.placement else config.region
        costs.append(_cost_line(job.name, spec, region, catalog))
        triggers = list(job.triggers)
        if config.target != "vertex":
            spec, found = _wire_local(spec, config, digests)
            triggers += found
        planned.append(_PlannedJob(job, spec, triggers))
    # One message, not one engine call per job: `pulumi preview` shows it to reviewers.
    pulumi.log.info("estimated cost per job:\n" + "\n".join(costs))
    stand_in = _InfraStandIn(config.trainer_source is not None)
    problems: list[str] = []
    for plan in planned:
        wired = _wire_cloud(plan.spec, stand_in, plan.job) if _wired(config, plan.job) else None
        args = _job_args(plan, wired)
        if isinstance(args, HyperparameterTuningJobArgs):
            reason, warnings = check_tuning_args(plan.job.name, args)
        else:
            reason, warnings = check_args(plan.job.name, args)
        if reason:
            problems.append(reason)
        for warning in warnings:
            pulumi.log.warn(f"{plan.job.name}: {warning.path}: {warning.reason}")
    if problems:
        raise TrainingJobInputError("nothing was changed, because:\n" + "\n".join(problems))
    _check_quota(config, planned)
    return planned


def _check_quota(config: StackConfig, planned: list[_PlannedJob]) -> None:
    """The jobs' Vertex training quotas against the project's limits (``training:quota``).

    One list call per project (``components.vertex.quotas``), before any resource exists: a
    shortfall fails the preview (``error``) or is a warning (``warn``); quotas that cannot be
    read are one warning, never a failed preview.
    """
    if config.quota == "off" or not planned:
        _report_placements(config, planned, None)
        return
    from components._catalog import load_catalog
    from components._quota import (
        QUOTA_KEY,
        compare,
        job_needs,
        load_quota_metrics,
        write_snapshot,
    )
    from components._settings import Endpoint
    from components.config import PROJECT_ROOT
    from components.vertex.quotas import QuotaUnavailable, read_limits

    catalog, metrics = load_catalog(), load_quota_metrics()
    needs, unchecked = [], []
    for plan in planned:
        if plan.job.placement:
            continue  # its candidates are checked one by one (_report_placements)
        found, skipped = job_needs(plan.job.name, plan.spec, catalog, metrics)
        needs += found
        unchecked += skipped
    try:
        limits = read_limits(Endpoint(config.endpoint), config.project)
    except QuotaUnavailable as exc:
        pulumi.log.warn(f"{exc}; the jobs' quotas were not checked ({QUOTA_KEY}: off skips this)")
        _report_placements(config, planned, None)
        return
    placement_problems = _report_placements(config, planned, limits)
    try:  # for the policy pack, which has no client (components._quota.SNAPSHOT_DIR)
        write_snapshot(PROJECT_ROOT, config.project, limits, time.time())
    except (OSError, ValueError) as exc:
        pulumi.log.warn(f"the quota snapshot for the policy pack was not written: {exc}")
    report = compare(config.project, config.region, needs, limits, catalog, unchecked)
    pulumi.log.info("\n".join(report.table()))
    shortfalls = report.problems(limits) + placement_problems
    if shortfalls and config.quota == "error":
        raise TrainingJobInputError(
            "nothing was changed, because the project's Vertex training quota is short:\n"
            + "\n".join(shortfalls)
            + f"\n({QUOTA_KEY}: warn makes this a warning)"
        )
    for shortfall in shortfalls:
        pulumi.log.warn(shortfall)


def _report_placements(
    config: StackConfig, planned: list[_PlannedJob], limits: Any | None
) -> list[str]:
    """Log, for each job with candidate regions, where it will try first and why others are
    skipped (``components._placement``); the problems of jobs that fit no candidate now."""
    from components._check import CUSTOM_JOB_SPEC, TUNING_JOB_SPEC
    from components._placement import attempts_of, parse_placement, preview_lines
    from components._quota import load_quota_metrics

    problems: list[str] = []
    metrics = load_quota_metrics()
    billed = priced_catalog(config.prices, _billed_catalog(config))
    for plan in planned:
        if not plan.job.placement:
            continue
        kind = TUNING_JOB_SPEC if isinstance(plan.spec, TuningJobSpec) else CUSTOM_JOB_SPEC
        candidates, _ = parse_placement(plan.job.placement)
        attempts, skipped = [], []
        for attempt in attempts_of(candidates):
            reasons = _refused_in(plan.spec, attempt, kind, config)
            if reasons:
                skipped.append(f"{attempt.shown}: {reasons}")
            else:
                attempts.append(attempt)
        lines, fits = preview_lines(
            plan.job.name,
            plan.spec,
            attempts,
            skipped,
            billed,
            metrics,
            limits,
            under=kind.pools_under,
        )
        pulumi.log.info("\n".join(lines))
        if not fits and limits is not None:
            problems.append(f"{plan.job.name}: no candidate region fits the quota now: " + lines[0])
    return problems


def _refused_in(spec: Spec, attempt: Any, kind: Any, config: StackConfig) -> str:
    """Why the validator refuses ``spec`` for ``attempt`` (its first error), or ""."""
    from components._placement import with_capacity

    try:
        placed = type(spec).parse(
            with_capacity(spec.to_document(), attempt.capacity, under=kind.pools_under)
        )
    except Exception as exc:  # a capacity kind the model refuses: that attempt is skipped
        return str(exc).splitlines()[0]
    errors = [
        v for v in kind.validate(placed, attempt.region, config.target) if v.severity == "error"
    ]
    return f"{errors[0].path}: {errors[0].reason}" if errors else ""


def _wired(config: StackConfig, job: JobConfig) -> bool:
    """Whether the job's spec gets the cloud stack's package, account and output directory.

    A job taken over (``existingJob``) runs as it was started: its spec file is what the job
    is (``python -m components import`` wrote it), and filling in more would make it another.
    """
    return config.target == "vertex" and job.existing_job is None


def _job_args(
    plan: _PlannedJob, wired: dict[str, Any] | None
) -> TrainingJobArgs | HyperparameterTuningJobArgs:
    """The job's arguments: the typed spec, or the cloud-wired document holding Outputs.

    Project and region are left to the resource, which reads gcp:project and gcp:region itself
    and so names those keys in its messages.
    """
    knobs: dict[str, Any] = dict(
        triggers=plan.triggers or None,
        wait_for=plan.job.wait_for,
        wait_timeout=plan.job.wait_timeout,
        exclusive_gpus=plan.job.exclusive_gpus,
        keep_record_on_delete=plan.job.keep_record_on_delete,
        existing_job=plan.job.existing_job,
    )
    if plan.job.placement:
        knobs["regions"] = plan.job.placement
    if isinstance(plan.spec, TuningJobSpec):
        return HyperparameterTuningJobArgs(plan.spec if wired is None else wired, **knobs)
    return TrainingJobArgs(plan.spec if wired is None else wired, **knobs)


def run(config: StackConfig | None = None) -> Program:
    """Declare the stack's resources; returns them.

    Every job is loaded and checked before anything is registered: one invalid job fails the
    whole program with every job's problems, and nothing starts.
    """
    config = config or load_stack_config()
    planned = _plan(config)
    program = Program(config)
    depends: list[pulumi.Resource] = []
    if config.target == "vertex":
        from components.infra import TrainingInfra, TrainingInfraArgs

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
    for plan in planned:
        job = plan.job
        wired = (
            _wire_cloud(plan.spec, program.infra, job)
            if program.infra is not None and _wired(config, job)
            else None
        )
        args = _job_args(plan, wired)
        options = pulumi.ResourceOptions(depends_on=depends)
        # validate=False: _plan checked every job before anything was registered.
        resource: TrainingJob | HyperparameterTuningJob
        if isinstance(args, HyperparameterTuningJobArgs):
            resource = HyperparameterTuningJob(job.name, args, options, validate=False)
        else:
            resource = TrainingJob(job.name, args, options, validate=False)
        program.jobs[job.name] = resource
        exports[job.name] = resource.status
    pulumi.export("jobs", exports)
    return program
