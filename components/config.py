"""Typed stack configuration of the training program, read with ``pulumi.Config``.

Keys (``Pulumi.<stack>.yaml``)::

    gcp:project: my-project           # required (or GOOGLE_PROJECT... in the environment)
    gcp:region: us-central1           # required (or GOOGLE_REGION... in the environment)
    training:endpoint: http://127.0.0.1:8642   # optional: the local emulator
    training:emulatorStateDir: .local/emulator  # optional: the local emulator of that state
                                       # dir, at the port it runs now (components.lifecycle._settings)
    training:trainerSource: examples/trainer   # optional: package source to stage
    training:jobs:                     # or training:job with one entry
      - name: t4-spot                  # the resource name
        spec: stacks/jobs/dev-t4-spot.yaml   # any format; a tuning job file (studySpec,
                                       # trialJobSpec) makes a HyperparameterTuningJob
        waitFor: submitted             # submitted | running | succeeded
        waitTimeout: 30m
        exclusiveGpus: false
        keepRecordOnDelete: false      # true: never delete the job's record (the default)
        deleteRecordOnDelete: false    # true: destroy and replace delete the job's record
        continueLastRun: false         # true: a new run writes into the last run's directory
        triggers: [data-v1]
        existingJob: projects/p/locations/us-central1/customJobs/123   # optional: take over
                                       # this job instead of submitting one (python -m
                                       # components import writes the entry)
        takeOverHeldJob: false         # true: take existingJob over even when its labels
                                       # name another resource or stack (refused otherwise)
        regions: [us-central1, {region: us-east4, capacity: [spot]}, europe-west4]
                                       # optional: candidate regions, in order; the job runs
                                       # in the first that takes it (components.core._placement)
        capacity: [on-demand, spot]    # optional, with regions: the capacity kinds a region
                                       # without its own accepts, in order
    training:prices: stacks/prices/acme.csv   # optional: organisation prices, a sheet in
                                       # the prices.csv schema, a discount in percent (12.5),
                                       # or {sheet: ..., discountPercent: ...}
    training:quota: error              # error (default) | warn | off: the jobs' Vertex training
                                       # quotas checked at preview (components.costs._quota)
    training:livePrices: true          # true (default) | false: the preview's cost lines
                                       # price from the Cloud Billing Catalog API (cached per
                                       # day) over the catalog's dated snapshot
    training:deleteRecords: false      # provider: true deletes every job's record on delete
    training:continueLastRun: false    # provider: true makes every new run continue the last
    training:catalogOverlay: stacks/catalog   # optional: a folder of catalog CSV files
                                       # (components/catalog schemas) whose rows add to or
                                       # replace the packaged catalog's, by key
    training:infra:                    # cloud stacks only; all optional
      bucketName: my-project-dev-training
      outputRetentionDays: 90
      forceDestroy: false
      deployer: user:me@example.com

Relative paths are relative to the project directory (where ``Pulumi.yaml`` is). Every
problem raises ``ConfigError`` naming the key, e.g. ``training:jobs[1].waitFor``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pulumi

from ._errors import CatalogError, TrainingJobError
from ._files import is_regular_file, outside_read_roots
from .costs._price_sheet import PriceSetting, PriceSheetError, apply_prices, parse_price_setting
from .lifecycle._check import wait_timeout_seconds
from .lifecycle._settings import (
    CATALOG_OVERLAY_KEY,
    DEFAULT_RETRY_DEADLINE,
    DYNAMIC_DOOR,
    ProviderSettings,
    SettingError,
    environment_text,
    target_for_endpoint,
)
from .lifecycle._wire import WAIT_FOR_VALUES, WaitFor
from .rules._catalog import Catalog, load_catalog, use_catalog_overlay
from .rules._validation import Target
from .rules._violations import terminal_safe

PROJECT_ROOT = Path(__file__).resolve().parents[1]

__all__ = [
    "ConfigError",
    "InfraConfig",
    "JobConfig",
    "StackConfig",
    "load_catalog_overlay",
    "load_live_prices",
    "load_price_setting",
    "load_stack_config",
    "priced_catalog",
]


class ConfigError(TrainingJobError, pulumi.RunError, ValueError):
    """The stack configuration is invalid; the message names the key."""


@dataclass(frozen=True)
class JobConfig:
    """One job of the stack."""

    name: str
    spec: Path
    wait_for: WaitFor = "submitted"
    wait_timeout: float | None = None
    exclusive_gpus: bool = False
    keep_record_on_delete: bool = False
    delete_record_on_delete: bool = False
    """Delete the job's record on delete (by default it outlives the resource)."""
    continue_last_run: bool = False
    """A new run writes into the replaced run's directory (``continueLastRun``)."""
    triggers: list[Any] = field(default_factory=list)
    existing_job: str | None = None
    """A job started elsewhere that the resource takes over instead of submitting one."""
    take_over_held_job: bool = False
    """Take ``existing_job`` over even when its labels name another resource or stack."""
    placement: list[dict[str, Any]] | None = None
    """``regions`` (and ``capacity``): the candidate regions, as the ``placement`` input
    (``components.core._placement``); None: the stack's region."""


@dataclass(frozen=True)
class InfraConfig:
    """Settings of the GCP infrastructure component (cloud stacks)."""

    bucket_name: str | None = None
    output_retention_days: int | None = 90
    force_destroy: bool = False
    deployer: str | None = None


@dataclass(frozen=True)
class StackConfig:
    """Everything the program reads from the stack configuration."""

    project: str
    region: str
    jobs: list[JobConfig]
    endpoint: str | None = None
    trainer_source: Path | None = None
    infra: InfraConfig = field(default_factory=InfraConfig)
    prices: PriceSetting | None = None
    """Organisation prices (``training:prices``) over the catalog's."""
    quota: str = "error"
    """``training:quota``: what a quota shortfall is at preview (error, warn) or off."""
    live_prices: bool = True
    """``training:livePrices``: price the preview from the live billing SKUs where readable."""
    catalog_overlay: Path | None = None
    """``training:catalogOverlay``: catalog rows over the packaged catalog."""
    retry_deadline: float = DEFAULT_RETRY_DEADLINE
    """``training:retryDeadline``: how long a call retries an unavailable API (the quota read
    at preview; the provider reads the setting itself)."""
    place_origins: Mapping[str, str] = field(default_factory=dict)
    """Where ``project`` and ``region`` were read when not from ``gcp:project``/``gcp:region``
    (``{"region": "GOOGLE_REGION"}``): the program then passes them to every job, so the jobs,
    the infra and the preview's prices and quotas all use the one place."""

    @property
    def target(self) -> Target:
        """``local`` for the emulator on this machine, ``vertex`` otherwise."""
        return target_for_endpoint(self.endpoint)


_JOB_KEYS = frozenset(
    {
        "name",
        "spec",
        "waitFor",
        "waitTimeout",
        "exclusiveGpus",
        "keepRecordOnDelete",
        "deleteRecordOnDelete",
        "continueLastRun",
        "triggers",
        "existingJob",
        "takeOverHeldJob",
        "regions",
        "capacity",
    }
)
_INFRA_KEYS = frozenset({"bucketName", "outputRetentionDays", "forceDestroy", "deployer"})


def _path(value: Any, key: str, root: Path, *, directory: bool) -> Path:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{key}: expected a path, got {value!r}")
    path = Path(value)
    path = path if path.is_absolute() else root / path
    if "\0" in value:
        raise ConfigError(f"{key}: {value!r} is not a valid path (it holds a NUL byte)")
    if directory and not path.is_dir():
        raise ConfigError(f"{key}: {value} is not a directory")
    if not directory and not is_regular_file(path):
        if not path.exists():
            raise ConfigError(f"{key}: {value} does not exist")
        what = "a directory" if path.is_dir() else "not a regular file"
        raise ConfigError(f"{key}: {value} is {what}, not a spec file")
    return path


def _bool(value: Any, key: str, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConfigError(f"{key}: expected true or false, got {value!r}")


def _placement(
    entry: Mapping[str, Any], key: str, existing: str | None
) -> list[dict[str, Any]] | None:
    """An entry's ``regions`` and ``capacity`` as the ``placement`` input, or None."""
    if entry.get("regions") is None and entry.get("capacity") is None:
        return None
    from .core._placement import declared_placement

    if existing is not None:
        raise ConfigError(f"{key}.regions: a job taken over (existingJob) runs where it is")
    if entry.get("regions") is None:
        raise ConfigError(f"{key}.capacity: needs regions (the candidate regions)")
    try:
        return declared_placement(entry.get("regions"), entry.get("capacity"))
    except ValueError as exc:
        raise ConfigError(f"{key}.{exc}") from None


def _job(entry: Any, key: str, root: Path) -> JobConfig:
    if isinstance(entry, str):
        entry = {"spec": entry}
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{key}: expected a mapping with name and spec, or a spec file path")
    unknown = sorted(set(entry) - _JOB_KEYS)
    if unknown:
        raise ConfigError(
            f"{key}.{unknown[0]}: unknown key (known: {', '.join(sorted(_JOB_KEYS))})"
        )
    spec = _path(entry.get("spec"), f"{key}.spec", root, directory=False)
    name = entry.get("name") or spec.stem
    if not isinstance(name, str):
        raise ConfigError(f"{key}.name: expected a string")
    wait_for = entry.get("waitFor", "submitted")
    if wait_for not in WAIT_FOR_VALUES:
        raise ConfigError(f"{key}.waitFor: {wait_for!r} is not one of {', '.join(WAIT_FOR_VALUES)}")
    try:
        timeout = wait_timeout_seconds(entry.get("waitTimeout"))
    except ValueError as exc:
        raise ConfigError(f"{key}.waitTimeout: {exc}") from None
    triggers = entry.get("triggers", [])
    if not isinstance(triggers, list):
        raise ConfigError(f"{key}.triggers: expected a list")
    existing = entry.get("existingJob")
    if existing is not None and (
        not isinstance(existing, str) or not existing.startswith("projects/")
    ):
        raise ConfigError(
            f"{key}.existingJob: expected a job's resource name, "
            f"projects/PROJECT/locations/REGION/customJobs/ID (or .../hyperparameterTuningJobs/ID)"
        )
    placement = _placement(entry, key, existing)
    return JobConfig(
        name=name,
        spec=spec,
        wait_for=cast(WaitFor, wait_for),
        wait_timeout=timeout,
        exclusive_gpus=_bool(entry.get("exclusiveGpus"), f"{key}.exclusiveGpus", False),
        keep_record_on_delete=_bool(
            entry.get("keepRecordOnDelete"), f"{key}.keepRecordOnDelete", False
        ),
        delete_record_on_delete=_bool(
            entry.get("deleteRecordOnDelete"), f"{key}.deleteRecordOnDelete", False
        ),
        continue_last_run=_bool(entry.get("continueLastRun"), f"{key}.continueLastRun", False),
        triggers=list(triggers),
        existing_job=existing,
        take_over_held_job=_bool(entry.get("takeOverHeldJob"), f"{key}.takeOverHeldJob", False),
        placement=placement,
    )


def _infra(value: Any) -> InfraConfig:
    if value is None:
        return InfraConfig()
    if not isinstance(value, Mapping):
        raise ConfigError("training:infra: expected a mapping")
    unknown = sorted(set(value) - _INFRA_KEYS)
    if unknown:
        raise ConfigError(
            f"training:infra.{unknown[0]}: unknown key (known: {', '.join(sorted(_INFRA_KEYS))})"
        )
    retention = value.get("outputRetentionDays", 90)
    if retention is not None and (
        isinstance(retention, bool) or not isinstance(retention, int) or retention < 1
    ):
        raise ConfigError(
            "training:infra.outputRetentionDays: expected a whole number of days >= 1"
        )
    deployer = value.get("deployer")
    if deployer is not None and (not isinstance(deployer, str) or ":" not in deployer):
        raise ConfigError(
            "training:infra.deployer: expected an IAM member like user:me@example.com"
        )
    bucket = value.get("bucketName")
    if bucket is not None and not isinstance(bucket, str):
        raise ConfigError("training:infra.bucketName: expected a string")
    return InfraConfig(
        bucket_name=bucket,
        output_retention_days=retention,
        force_destroy=_bool(value.get("forceDestroy"), "training:infra.forceDestroy", False),
        deployer=deployer,
    )


def load_catalog_overlay(value: str | None, root: Path = PROJECT_ROOT) -> Path | None:
    """``training:catalogOverlay``: the folder read and put over the packaged catalog for this
    process (every later ``load_catalog()``); unset: the packaged catalog alone. Raises
    ``ConfigError`` naming the key, and the file, row and field of a bad row."""
    path = _path(value, CATALOG_OVERLAY_KEY, root, directory=True) if value else None
    outside = outside_read_roots(path, root) if path is not None else None
    if outside:
        raise ConfigError(f"{CATALOG_OVERLAY_KEY}: {terminal_safe(value or '', 200)} {outside}")
    try:
        use_catalog_overlay(path)
    except CatalogError as exc:
        raise ConfigError(f"{CATALOG_OVERLAY_KEY}: {exc}") from None
    return path


def load_price_setting(root: Path = PROJECT_ROOT) -> PriceSetting | None:
    """``training:prices``, its sheet read and checked; raises ``ConfigError`` naming the key,
    or the sheet's file, row and field."""
    setting = _price_setting(pulumi.Config("training").get("prices"), root)
    priced_catalog(setting)  # a bad sheet fails here, before anything is priced with it
    return setting


def _price_setting(value: Any, root: Path) -> PriceSetting | None:
    try:
        return parse_price_setting(value, root)
    except PriceSheetError as exc:
        raise ConfigError(str(exc)) from None


def priced_catalog(setting: PriceSetting | None, base: Catalog | None = None) -> Catalog:
    """The catalog (or ``base``: the catalog with live billing prices) with the stack's
    organisation prices over its own."""
    try:
        return apply_prices(base or load_catalog(), setting)
    except PriceSheetError as exc:
        raise ConfigError(str(exc)) from None


def load_live_prices(value: str | None) -> bool:
    """``training:livePrices`` (default true); raises ``ConfigError`` naming the key."""
    live = (value or "true").strip().lower()
    if live not in ("true", "false"):
        raise ConfigError(f"training:livePrices: expected true or false, got {live[:40]!r}")
    return live == "true"


def configured_place(key: str) -> tuple[str, str] | None:
    """(value, key) of the stack's ``gcp:project`` or ``gcp:region`` (as ``DYNAMIC_DOOR``
    names them), where the stack configuration sets it."""
    config_key = DYNAMIC_DOOR.place.config.format(key=key)
    namespace, _, name = config_key.partition(":")
    value = pulumi.Config(namespace).get(name)
    return (value, config_key) if value else None


def _stack_place(key: str, example: str) -> tuple[str, str]:
    """The stack's ``project`` or ``region`` and where it was read: ``gcp:KEY``, else the
    environment pulumi-gcp reads (``GOOGLE_PROJECT``..., the first set, in its order)."""
    configured = configured_place(key)
    if configured is not None:
        return configured
    found = DYNAMIC_DOOR.place.from_environment(key, os.environ)
    if found is not None:
        return found[1], found[0]
    config_key = DYNAMIC_DOOR.place.config.format(key=key)
    raise ConfigError(
        f"{config_key}: not set (pulumi config set {config_key} {example}, or "
        f"{environment_text(key)})"
    )


def load_stack_config(root: Path = PROJECT_ROOT) -> StackConfig:
    """Read and check the stack configuration; raises ``ConfigError`` naming the key."""
    training = pulumi.Config("training")
    (project, project_from), (region, region_from) = (
        _stack_place(key, example)
        for key, example in (("project", "MY-PROJECT"), ("region", "us-central1"))
    )
    try:
        jobs_value = training.get_object("jobs")
        job_value = training.get_object("job")
        infra_value = training.get_object("infra")
    except Exception as exc:  # pulumi raises ConfigTypeError for values that are not JSON
        raise ConfigError(f"training: {exc}") from None
    if jobs_value is not None and job_value is not None:
        raise ConfigError("training:job and training:jobs: set one of them, not both")
    if job_value is not None:
        jobs = [_job(job_value, "training:job", root)]
    elif jobs_value is None:
        jobs = []
    elif isinstance(jobs_value, list):
        jobs = [_job(e, f"training:jobs[{i}]", root) for i, e in enumerate(jobs_value)]
    else:
        raise ConfigError("training:jobs: expected a list of jobs")
    names = [j.name for j in jobs]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise ConfigError(f"training:jobs: the name {duplicate!r} is used twice")
    source = training.get("trainerSource")
    try:
        # The provider reads these too; checking them here fails a preview before it starts.
        settings = ProviderSettings.read(lambda key: training.get(key.removeprefix("training:")))
    except SettingError as exc:
        raise ConfigError(str(exc)) from None
    endpoint = settings.endpoint.url
    quota = settings.quota
    overlay = load_catalog_overlay(settings.catalog_overlay, root)
    return StackConfig(
        project=project,
        region=region,
        place_origins={
            key: origin
            for key, origin in (("project", project_from), ("region", region_from))
            if not origin.startswith("gcp:")
        },
        jobs=jobs,
        endpoint=endpoint,
        trainer_source=(
            _path(source, "training:trainerSource", root, directory=True) if source else None
        ),
        infra=_infra(infra_value),
        prices=load_price_setting(root),
        quota=quota,
        live_prices=load_live_prices(training.get("livePrices")),
        catalog_overlay=overlay,
        retry_deadline=settings.retry_deadline,
    )
