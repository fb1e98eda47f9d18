"""What a job resource adds to its spec and says at preview, wherever it is declared.

A ``TrainingJob`` or ``HyperparameterTuningJob`` declared in any Pulumi program gets what a
``training:jobs`` entry of this project's stacks gets (``components.program`` only reads that
list and declares the same resources):

- relative local package paths of an inline spec resolved against the program's directory
  (``program_root``), as a spec file's are against the file's;
- on a local stack (``training:endpoint`` on this machine), the trainer folder
  (``trainer_source``) in the python pools that name no package, and a trigger per local
  package folder (``package:<folder name>:<digest>``), so editing the trainer re-runs the job;
- on Vertex AI, with ``infra`` (a ``TrainingInfra``): its staged trainer package, service
  account and output directory (``gs://<bucket>/jobs/<job>``) where the spec leaves them out;
- the estimated cost of each job, and its Vertex training quotas against the project's limits
  (``training:quota``, ``training:prices``), said before anything is registered: the core's
  notes (``components.core._preview``), said on the program's log.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pulumi

from .._errors import SpecError
from ..core._preview import Placed, PreviewSettings, Spec, quota_shortfalls
from ..core._preview import cost_message as _cost_message
from ..core._preview import preview_catalog as _preview_catalog
from ..costs._price_sheet import PriceSheetError
from ..costs._quota import QUOTA_KEY
from ..lifecycle._packaging import source_digest
from ..lifecycle._settings import ProviderSettings, SettingError
from ..lifecycle._wire import (
    PROJECT,
    REGION,
    SPEC,
    TRIAL_JOB_SPEC,
    TRIGGERS,
    copy_document,
    decode_spec,
    status_of,
)
from ..rules._catalog import Catalog
from ..rules._spec import JobSpec
from ..rules._tuning_spec import TrialJobSpec, TuningJobSpec

if TYPE_CHECKING:
    from ..config import ConfigError
    from ..lifecycle._check import SpecKind

__all__ = [
    "add_triggers",
    "cost_message",
    "held_while_replaced",
    "local_trainer",
    "output_directory_note",
    "package_digests",
    "planned_infra",
    "preview_catalog",
    "program_root",
    "quota_problem",
    "stack_preview_settings",
    "wire_infra",
    "wired_output_root",
]

Pools = TypeVar("Pools", JobSpec, TrialJobSpec)


def _program_log(severity: str, text: str) -> None:
    (pulumi.log.warn if severity == "warning" else pulumi.log.info)(text)


def program_root() -> Path:
    """The directory of the running Pulumi program (where its ``Pulumi.yaml`` is).

    The engine names it to the program (``--root_directory``); the program's working directory
    is the same place, and stands in where the engine names none (under Mocks it names a
    placeholder, not a directory).
    """
    root = pulumi.get_root_directory()
    if root and Path(root).is_absolute() and Path(root).is_dir():
        return Path(root)
    return Path(os.getcwd())


def stack_preview_settings(project: Any, region: Any) -> PreviewSettings:
    """``training:endpoint``, ``training:prices``, ``training:quota``,
    ``training:livePrices`` and ``training:catalogOverlay`` (each optional; the overlay
    applies to the program's catalog from here on); raises ``ConfigError`` naming the key.
    ``project`` and ``region`` are the job's, or None where they are not known at preview
    (an Output)."""
    from ..config import (
        ConfigError,
        load_catalog_overlay,
        load_live_prices,
        load_price_setting,
    )

    training = pulumi.Config("training")
    root = program_root()
    try:
        settings = ProviderSettings.read(lambda key: training.get(key.removeprefix("training:")))
    except SettingError as exc:
        raise ConfigError(str(exc)) from None
    quota = settings.quota
    load_catalog_overlay(settings.catalog_overlay, root)
    return PreviewSettings(
        project=project if isinstance(project, str) else None,
        region=region if isinstance(region, str) else None,
        endpoint=settings.endpoint.url,
        prices=load_price_setting(root),
        quota=quota,
        live_prices=load_live_prices(training.get("livePrices")),
        root=root,
        retry_deadline=settings.retry_deadline,
    )


def _config_error(exc: PriceSheetError) -> ConfigError:
    """A price sheet that does not apply, as the program's configuration error (no traceback)."""
    from ..config import ConfigError

    return ConfigError(str(exc))


def preview_catalog(settings: PreviewSettings) -> Catalog:
    """The core's ``preview_catalog``, its notes on the program's log; raises ``ConfigError``."""
    try:
        return _preview_catalog(settings, _program_log)
    except PriceSheetError as exc:
        raise _config_error(exc) from None


def cost_message(
    jobs: Sequence[tuple[str, Spec | None]],
    settings: PreviewSettings,
    regions: Mapping[str, str] | None = None,
) -> str:
    """The core's message of the jobs' estimated cost, priced with ``preview_catalog``
    (``regions``: a job's own region where it is not the settings')."""
    return _cost_message(jobs, settings, preview_catalog(settings), regions)


def quota_problem(
    jobs: Sequence[tuple[str, Spec]], settings: PreviewSettings, placed: Sequence[Placed] = ()
) -> str | None:
    """The jobs' Vertex training quotas against the project's limits (``training:quota``).

    One list call per project (``components.vertex.quotas``), before any resource exists; the
    table is logged, and for each job with candidate regions (``placed``) where it will try
    first and why the others are skipped. Returns why the jobs do not fit when that fails the
    preview (``error``); a shortfall under ``warn`` is a warning, and quotas that cannot be
    read are one warning, never a failed preview.
    """
    try:
        shortfalls = quota_shortfalls(jobs, settings, placed, say=_program_log)
    except PriceSheetError as exc:
        raise _config_error(exc) from None
    if shortfalls and settings.quota == "error":
        return (
            "nothing was changed, because the project's Vertex training quota is short:\n"
            + "\n".join(shortfall.text for shortfall in shortfalls)
            + f"\n({settings.door.key(QUOTA_KEY)}: warn makes this a warning)"
        )
    for shortfall in shortfalls:
        pulumi.log.warn(shortfall.text)
    return None


_digests: dict[Path, str] | None = None
"""Package folders' digests while ``package_digests`` holds them (one program run)."""


@contextmanager
def package_digests() -> Iterator[None]:
    """Hash each local package folder once while this holds (jobs sharing a trainer)."""
    global _digests
    outer = _digests
    _digests = {} if outer is None else outer
    try:
        yield
    finally:
        _digests = outer


def local_trainer(spec: Spec, trainer_source: Path | None) -> tuple[Spec, list[str]]:
    """Point python pools that name no package at the local trainer; a trigger per package
    folder's digest re-runs the job when its code changes.

    Raises ``PackagingError`` naming a folder that cannot be hashed.
    """
    digests = {} if _digests is None else _digests
    if isinstance(spec, TuningJobSpec):
        trial, triggers = _local_pools(spec.trial_job_spec, trainer_source, digests)
        return spec.model_copy(update={"trial_job_spec": trial}), triggers
    return _local_pools(spec, trainer_source, digests)


def _local_pools(
    spec: Pools, trainer_source: Path | None, digests: dict[Path, str]
) -> tuple[Pools, list[str]]:
    triggers: list[str] = []
    pools = []
    filled = False
    for pool in spec.worker_pool_specs:
        package = pool.python_package_spec
        if package is not None and not package.package_uris and trainer_source is not None:
            package = package.model_copy(update={"package_uris": [str(trainer_source)]})
            pool = pool.model_copy(update={"python_package_spec": package})
            filled = True
        pools.append(pool)
        for uri in package.package_uris if package is not None else ():
            path = Path(uri.removeprefix("file://"))
            # Jobs sharing a trainer hash it once per run (a folder hashed is a folder).
            if path in digests or path.is_dir():
                if path not in digests:
                    digests[path] = source_digest(path)[:16]
                triggers.append(f"package:{path.name}:{digests[path]}")
    if not filled:
        return spec, triggers
    return spec.model_copy(update={"worker_pool_specs": pools}), triggers


def add_triggers(given: Any, found: list[str]) -> Any:
    """The job's ``triggers`` with the package triggers ``found`` after the given ones."""
    if not found:
        return given
    if given is None:
        return list(found)
    if isinstance(given, pulumi.Output):
        return given.apply(lambda value: add_triggers(value, found))
    if isinstance(given, Mapping):
        return {**given, **{f"package:{t.split(':')[1]}": t.rsplit(":", 1)[1] for t in found}}
    return [*given, *found]


def _python_pools(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        pool["pythonPackageSpec"]
        for pool in document.get("workerPoolSpecs", [])
        if isinstance(pool, dict) and isinstance(pool.get("pythonPackageSpec"), dict)
    ]


class _PlannedInfra:
    """What ``wire_infra`` reads from a ``TrainingInfra``, as values not known yet.

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


def planned_infra(has_package: bool) -> Any:
    """A stand-in for the ``TrainingInfra`` a program declares after checking its jobs."""
    return _PlannedInfra(has_package)


def wire_infra(document: dict[str, Any], infra: Any, name: str, *, tuning: bool) -> dict[str, Any]:
    """The spec document with ``infra``'s Outputs where it leaves them out (in a tuning job,
    its trials' spec): the staged trainer package in python pools with no ``gs://`` package,
    the service account, and ``gs://<bucket>/jobs/<name>`` as the output directory."""
    trial = document.setdefault(TRIAL_JOB_SPEC, {}) if tuning else None
    target = document if trial is None else trial
    if infra.package_uri is not None:
        for package in _python_pools(target):
            uris = package.get("packageUris") or []
            if not any(str(u).startswith("gs://") for u in uris):
                package["packageUris"] = [infra.package_uri]
    target.setdefault("serviceAccount", infra.service_account_email)
    target.setdefault("baseOutputDirectory", infra.output_uri(name))
    return document


def wired_output_root(before: dict[str, Any], after: dict[str, Any], *, tuning: bool) -> Any:
    """The output directory ``wire_infra`` chose (``after``'s, where ``before`` had none), or
    None where the user wrote it: the provider gives each run a directory under it only then
    (``components.lifecycle._wire.OUTPUT_ROOT``)."""
    old = before.get(TRIAL_JOB_SPEC, {}) if tuning else before
    new = after.get(TRIAL_JOB_SPEC, {}) if tuning else after
    if old.get("baseOutputDirectory"):
        return None
    return new.get("baseOutputDirectory")


def output_directory_note(
    name: str, plan: Spec | None, output_root: Any, *, continue_last_run: bool, replaced: bool
) -> tuple[str, str] | None:
    """What the preview says about the directory a new run of job ``name`` writes: ``("info",
    text)``, or ``("warn", text)`` for a replace whose new run finds the old run's checkpoints
    in a directory the user wrote; None where there is nothing to say."""
    if output_root is not None:
        root = output_root if isinstance(output_root, str) else f"gs://<bucket>/jobs/{name}"
        if continue_last_run:
            return "info", (
                f"{name}: a new run writes into the directory of the run it replaces "
                f"(continueLastRun), and resumes its checkpoints; the first run writes {root}"
            )
        return "info", (
            f"{name}: a new run writes under {root}/runs/<UTC start>-<run hash>-<random>/ (its own "
            "directory, status.output_dir), never into an earlier run's"
        )
    if not replaced or plan is None:
        return None
    job = plan.trial_job_spec if isinstance(plan, TuningJobSpec) else plan
    written = job.base_output_directory
    if not written:
        return None
    return "warn", (
        f"{name}: the new run writes {written}, the baseOutputDirectory the spec names, where "
        "the replaced run wrote: a trainer that resumes from checkpoints there resumes that "
        "run instead of training anew (write a new directory for it; on a cloud stack, leave "
        "baseOutputDirectory out and each run gets a directory of its own)"
    )


_WIRED_FIELDS = ("serviceAccount", "baseOutputDirectory")


def _unwired(document: Any, tuning: bool) -> Any:
    """A spec document without what the cloud wiring fills in (the planned spec has stand-ins
    for it, the state the real values): only the spec file's part is compared."""
    if not isinstance(document, dict):
        return document
    document = copy_document(document)
    target = document.get(TRIAL_JOB_SPEC) if tuning else document
    if isinstance(target, dict):
        for key in _WIRED_FIELDS:
            target.pop(key, None)
        for package in _python_pools(target):
            package.pop("packageUris", None)
    return document


def held_while_replaced(
    kind: SpecKind[Any],
    identity: str,
    plan: Spec,
    props: Mapping[str, Any],
    *,
    wired: bool,
    active_only: bool = True,
) -> Spec | None:
    """The spec of the running job the stack holds for a resource (``identity``) when its
    planned job (``plan``, ``props``: its checked inputs) replaces it create-before-delete
    (both then hold quota at once), else None.

    A replace is told as the provider's ``diff`` tells it, from the state's outputs against
    the planned spec: env values (secret in the state) and the cloud wiring (``wired``) are not
    compared, so a replace caused only by them is not counted; nor is a forced replace
    (``--replace``), which the program does not see. ``exclusiveGpus`` cancels first: the
    caller does not ask then. ``active_only=False``: the held job in any state (the
    output directory note, which is about its checkpoints, not its quota).
    """
    from ..lifecycle._adoption import ADOPTABLE_ACTIVE
    from ..lifecycle._check import diff_inputs
    from ._stack_state import held_outputs

    tuning = isinstance(plan, TuningJobSpec)
    new, _ = kind.split_env(plan.to_document())
    for place in ("project", "region"):
        new.pop(place, None)
    triggers = props.get(TRIGGERS)
    for outputs in held_outputs(identity):
        if active_only and status_of(outputs).get("state") not in ADOPTABLE_ACTIVE:
            continue
        old = decode_spec(outputs.get(SPEC))
        if not isinstance(old, dict):
            continue
        olds = {
            SPEC: _unwired(old, tuning) if wired else old,
            TRIGGERS: outputs.get(TRIGGERS),
            PROJECT: outputs.get(PROJECT),
            REGION: outputs.get(REGION),
        }
        news = {
            SPEC: _unwired(new, tuning) if wired else new,
            TRIGGERS: list(triggers) if triggers else None,
            PROJECT: props.get(PROJECT),
            REGION: props.get(REGION),
        }
        if diff_inputs(olds, news)[0]:
            try:
                held: Spec = kind.model.parse(old)
            except SpecError:
                return None
            return held
    return None
