"""What the job resources share in the program: arguments, their checks, and the resource base.

``TrainingJob`` (``components.training_job``) and ``HyperparameterTuningJob``
(``components.tuning_job``) take the same arguments (``JobArgs``: a spec as a model, a mapping
whose values may be Outputs, or a spec file; project, region, triggers and the provider-only
knobs) and are the same resource (``JobResource``) to their programs: the spec is prepared
(``prepare``: env values split into their own secret input, local package paths made
absolute, the display name defaulted to the resource name), checked with the provider's own
``check`` before anything is registered, and registered without the inputs at their
defaults, with the stack's run key. A ``ResourceKind`` names what differs: the provider (and
through it the spec's model, validator and env paths) and how a spec file is read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast, overload

import pulumi
import pulumi.dynamic

from .._errors import SpecError, SpecInvalidError, TrainingJobError
from .._files import is_local_relative, local_path_resolved
from .._provider import JobProvider
from .._run_key import stack_run_key
from ..config import configured_place
from ..core._preview import Placed, PreviewSettings, image_notes
from ..lifecycle._adoption import identity_label
from ..lifecycle._check import CheckOutcome, SpecKind, check_inputs
from ..lifecycle._packaging import PackagingError
from ..lifecycle._settings import (
    DYNAMIC_DOOR,
    SettingError,
    parse_endpoint,
    target_for_endpoint,
)
from ..lifecycle._wire import (
    CONTINUE_LAST_RUN,
    DELETE_RECORD,
    ENV_VALUES,
    EXCLUSIVE_GPUS,
    EXISTING_JOB,
    HELD_INSTANCE,
    HELD_JOBS,
    IDENTITY,
    INPUT_DEFAULTS,
    KEEP_RECORD,
    OUTPUT_ROOT,
    OWNER,
    PLACEMENT,
    PROJECT,
    REGION,
    RUN_KEY,
    SPEC,
    STATUS,
    TAKE_OVER_HELD_JOB,
    TRIGGERS,
    WAIT_FOR,
    WAIT_TIMEOUT,
    WaitFor,
    encode_spec,
    is_default_input,
)
from ..rules._spec import JobSpec, WorkerPoolSpec
from ..rules._tuning_spec import TuningJobSpec
from ..rules._validation import Target
from ..rules._violations import Violation, problem_text
from ._job_preview import (
    add_triggers,
    cost_message,
    held_while_replaced,
    local_trainer,
    output_directory_note,
    program_root,
    quota_problem,
    stack_preview_settings,
    wire_infra,
    wired_output_root,
)
from ._stack_state import held_instance, held_jobs

__all__ = [
    "DefaultInput",
    "JobArgs",
    "JobInputs",
    "JobResource",
    "PreparedSpec",
    "ResourceKind",
    "StatusField",
    "TrainingJobInputError",
    "check_job_args",
    "check_jobs",
    "job_inputs",
    "prepare",
    "resolve_pool_paths",
]

SpecModel = JobSpec | TuningJobSpec
S = TypeVar("S")
T = TypeVar("T")


class TrainingJobInputError(TrainingJobError, pulumi.RunError, ValueError):
    """A job resource's inputs are invalid; the message names every bad field.

    A ``pulumi.RunError``, so ``pulumi preview`` prints the message without a traceback.
    """


@dataclass(frozen=True)
class ResourceKind:
    """What one job resource does its own way in the program."""

    name: str
    """``TrainingJob``: for messages."""
    provider: type[JobProvider]
    """Its provider class; its ``kind.spec`` is the spec's model, validator and env paths."""
    read_file: Callable[[Path], tuple[SpecModel, list[str]]]
    """A spec file's path → its spec, local package paths resolved against the file's dir,
    and the notes of its reading (images past their end of availability...); raises
    ``SpecError``."""
    resolve: Callable[[Any, Path], SpecModel]
    """A spec and a directory → the spec with relative local package paths resolved there."""

    @property
    def spec(self) -> SpecKind[Any]:
        return self.provider.kind.spec

    @property
    def type_token(self) -> str:
        """``pulumi-python:dynamic/vertex:TrainingJob``: what the engine calls the resource."""
        return f"pulumi-python:dynamic/vertex:{self.name}"


@dataclass
class JobArgs(Generic[S]):
    """The inputs of a job resource (``TrainingJobArgs``, ``HyperparameterTuningJobArgs``).

    :param spec: the job: its model, a mapping, a spec file path, or an Output of a mapping.
    :param project: GCP project; default ``gcp:project``, then the spec's own ``project``,
        then the environment pulumi-gcp reads (``GOOGLE_PROJECT``..., ``PROJECT_ENV``).
    :param region: region to run in; default ``gcp:region``, then the spec's ``region``, then
        the environment (``GOOGLE_REGION``..., ``REGION_ENV``).
    :param triggers: any values; a change starts a new run (e.g. a data set version).
    :param wait_for: ``submitted`` (default), ``running`` or ``succeeded``: when
        ``pulumi up`` moves on. If waiting fails the job is cancelled and the error says so.
    :param wait_timeout: how long to wait: seconds or text like ``"90m"`` (default 1 hour).
    :param exclusive_gpus: on replacement, cancel the old job before starting the new one
        (for quota that cannot hold both).
    :param keep_record_on_delete: keep the job's record on delete whatever
        ``delete_record_on_delete`` or ``training:deleteRecords`` say (the default already
        keeps it; states of earlier releases record this as false, their default).
    :param delete_record_on_delete: a delete (destroy, the end of a replace) deletes the job's
        record (its logs, times and metrics) after cancelling it; by default the record
        outlives the resource (``training:deleteRecords: true`` sets this for a stack).
    :param continue_last_run: where the output directory is the project's to choose (``infra``
        filled it), a new run writes into the directory of the run it replaces, resuming its
        checkpoints, instead of a directory of its own (``training:continueLastRun: true``
        sets this for a stack).
    :param existing_job: the resource name of a job started elsewhere (gcloud, the SDK) to take
        over instead of submitting one: its spec must be ``spec`` (``python -m components
        import`` writes it). Ignored once the resource holds a job.
    :param trainer_source: a local trainer folder (``setup.py`` or ``pyproject.toml``),
        relative to the program's directory: on a local stack (``training:endpoint`` on this
        machine) the python pools that name no package run it. On any local stack, each local
        package folder of the spec adds a trigger with its code's digest, so editing the
        trainer starts a new run.
    :param infra: a ``TrainingInfra`` (Vertex AI): its staged trainer package, service account
        and output directory ``gs://<bucket>/jobs/<resource name>`` fill in what the spec
        leaves out (not for an ``existing_job``, which runs as it was started).
    :param take_over_held_job: take over ``existing_job`` even when its identity label names
        another resource or stack (by default such a job is refused, naming its holder).
    :param regions: candidate regions, in order (each a region or ``{"region": R, "capacity":
        [...]}``) instead of one ``region``: the job runs in the first that takes it
        (``components.core._placement``); ``region`` is then the first candidate.
    :param capacity: the capacity kinds every candidate without its own accepts, in order
        (``on-demand``, ``spot``, ``flex-start``, ``reservation``, ``reservation:NAME``);
        none: the spec's own.
    :param place_origins: where the ``project`` and ``region`` given here were read (``{"region":
        "GOOGLE_REGION"}``): the key or variable a message about them names.
    """

    spec: S
    project: pulumi.Input[str] | None = None
    region: pulumi.Input[str] | None = None
    triggers: pulumi.Input[Sequence[Any] | Mapping[str, Any]] | None = None
    wait_for: pulumi.Input[WaitFor] = "submitted"
    wait_timeout: pulumi.Input[float | str] | None = None
    exclusive_gpus: pulumi.Input[bool] = False
    keep_record_on_delete: pulumi.Input[bool] = False
    existing_job: pulumi.Input[str] | None = None
    delete_record_on_delete: pulumi.Input[bool] = False
    continue_last_run: pulumi.Input[bool] = False
    trainer_source: str | os.PathLike[str] | None = None
    infra: Any = None
    take_over_held_job: bool = False
    regions: Sequence[str | Mapping[str, Any]] | None = None
    capacity: Sequence[str] | None = None
    place_origins: Mapping[str, str] | None = None


@dataclass
class PreparedSpec:
    """A spec ready for the resource: the document without env values, and the values."""

    spec: dict[str, Any]
    env_values: dict[str, Any]
    project: str | None
    region: str | None
    nested_outputs: bool = False
    """Outputs sit at some places of the result (given in a mapping)."""
    model: Any = None
    """The parsed spec (``JobSpec``, ``TuningJobSpec``), project and region included, when no
    Output sits in it."""
    notes: list[str] = field(default_factory=list)
    """What reading the spec noted (a spec file's reader; images past their end)."""


# Private-use characters: no spec text holds them (and NUL bytes are refused by the model).
_PLACEHOLDER = "\uf8ffpulumi-output-{}\uf8ff"


def _swap_outputs(value: Any, found: dict[str, pulumi.Output[Any]]) -> Any:
    """Replace every nested Output by a unique placeholder string, remembering it."""
    if isinstance(value, pulumi.Output):
        key = _PLACEHOLDER.format(len(found))
        found[key] = value
        return key
    if isinstance(value, Mapping):
        return {k: _swap_outputs(v, found) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_swap_outputs(v, found) for v in value]
    return value


def _restore(value: Any, lookup: Mapping[str, Any]) -> Any:
    if isinstance(value, str) and value in lookup:
        return lookup[value]
    if isinstance(value, Mapping):
        return {k: _restore(v, lookup) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore(v, lookup) for v in value]
    return value


def resolve_pool_paths(
    pools: Iterable[WorkerPoolSpec], base: Path, *, prefix: str = ""
) -> list[WorkerPoolSpec]:
    """The pools with relative local package paths made absolute, relative to ``base``.

    ``prefix`` goes before the paths named in errors (``trialJobSpec.``). Raises
    ``SpecInvalidError`` naming a path that cannot be resolved (a symlink loop).
    """
    resolved = []
    for index, pool in enumerate(pools):
        package = pool.python_package_spec
        if package is not None and package.package_uris:
            where = f"{prefix}workerPoolSpecs[{index}].pythonPackageSpec.packageUris"
            uris = [
                _resolved(base, uri, f"{where}[{j}]") for j, uri in enumerate(package.package_uris)
            ]
            if uris != package.package_uris:  # copies only what changes: a spec of 200 jobs
                update = {"package_uris": uris}
                pool = pool.model_copy(
                    update={"python_package_spec": package.model_copy(update=update)}
                )
        resolved.append(pool)
    return resolved


def _resolved(base: Path, uri: str, path: str) -> str:
    if not is_local_relative(uri) or uri.startswith(_PLACEHOLDER[0]):
        return uri  # a URI, an absolute path, or an Output's place (known later)
    try:
        return local_path_resolved(base, uri)
    except (OSError, RuntimeError, ValueError) as exc:
        raise SpecInvalidError(
            [Violation(path, f"cannot be resolved: {exc}", rule="uris")]
        ) from None


def _invalid(origin: str, exc: SpecError) -> TrainingJobInputError:
    violations = getattr(exc, "violations", ())
    if violations:
        lines = "\n".join(f"  {v}" for v in violations)
        return TrainingJobInputError(f"{origin}: the job spec has problems:\n{lines}")
    return TrainingJobInputError(f"{origin}: {exc}")


def prepare(
    kind: ResourceKind,
    spec: Any,
    *,
    base: Path | None = None,
    adjust: Callable[[Any], Any] | None = None,
) -> PreparedSpec:
    """Normalise a spec input (not an Output) of ``kind`` to the resource's form.

    Relative local package paths of a spec file are relative to the file; of a spec given
    inline (a model, a mapping), to ``base`` (default: the program's directory). ``adjust``
    changes the parsed spec before it becomes the document (a local trainer filled in).
    Nested Outputs in a mapping are kept (as the same Output objects) at their places in the
    result. Raises ``TrainingJobInputError`` naming the file or the fields that are wrong.
    """
    model_type = kind.spec.model
    found: dict[str, pulumi.Output[Any]] = {}
    notes: list[str] = []
    try:
        if isinstance(spec, str | os.PathLike):
            origin = str(spec)
            model, notes = kind.read_file(Path(spec))
        elif isinstance(spec, model_type | Mapping):
            origin = "spec"
            parsed = (
                spec
                if isinstance(spec, model_type)
                else model_type.parse(_swap_outputs(spec, found))
            )
            model = kind.resolve(parsed, program_root() if base is None else base)
            notes = image_notes(model, model.region)
        else:
            raise TrainingJobInputError(
                f"spec: expected a {model_type.__name__}, a mapping or a spec file path, "
                f"not {type(spec).__name__}"
            )
    except SpecError as exc:
        raise _invalid(origin, exc) from None
    if adjust is not None:
        model = adjust(model)
    document = model.to_document()
    project = document.pop("project", None)
    region = document.pop("region", None)
    without_values, env_values = kind.spec.split_env(document)
    return PreparedSpec(
        spec=_restore(without_values, found),
        env_values=_restore(env_values, found),
        project=_restore(project, found),
        region=_restore(region, found),
        nested_outputs=bool(found),
        model=None if found else model,
        notes=notes,
    )


def _unknown_view(value: Any) -> Any:
    """``value`` as ``check`` sees it at preview: unresolved Outputs become unknowns."""
    from pulumi.output import Unknown

    if isinstance(value, pulumi.Output):
        return Unknown()  # type: ignore[no-untyped-call]
    if isinstance(value, Mapping):
        return {k: _unknown_view(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_unknown_view(v) for v in value]
    return value


def _target() -> Target:
    training = pulumi.Config("training")
    if training.get("emulatorStateDir") is not None:
        return "local"  # the emulator of that state dir (its endpoint is checked when read)
    try:
        endpoint = parse_endpoint(training.get("endpoint"))
    except SettingError as exc:
        raise TrainingJobInputError(str(exc)) from None
    return target_for_endpoint(endpoint)


class _LazyOutput:
    """An attribute whose Output is made on first read, then kept on the instance.

    The instance's ``__dict__`` is found before this (non-data) descriptor, so the Output is
    made once, and an attribute nobody reads costs nothing.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.attribute = name

    def make(self, instance: Any) -> pulumi.Output[Any]:
        raise NotImplementedError

    def __get__(self, instance: Any, owner: type) -> Any:
        if instance is None:
            return self
        value = self.make(instance)
        instance.__dict__[self.attribute] = value
        return value


class StatusField(_LazyOutput, Generic[T]):
    """``job.state`` and the like: one field of the ``status`` output."""

    def __init__(self, field: str) -> None:
        self.field = field

    def make(self, instance: Any) -> pulumi.Output[Any]:
        field = self.field
        return cast(pulumi.Output[Any], instance.status.apply(lambda s: (s or {}).get(field)))

    if TYPE_CHECKING:

        @overload
        def __get__(self, instance: None, owner: type) -> StatusField[T]: ...

        @overload
        def __get__(self, instance: JobResource[Any], owner: type) -> pulumi.Output[T]: ...

        def __get__(self, instance: Any, owner: type) -> Any: ...


class DefaultInput(_LazyOutput):
    """An input the job did not register, being at its default: an Output of the default."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.attribute = key  # the input's name is the attribute's

    def make(self, instance: Any) -> pulumi.Output[Any]:
        return pulumi.Output.from_input(INPUT_DEFAULTS[self.key])


class JobResource(pulumi.dynamic.Resource, Generic[S]):
    """A job resource: its inputs, the fields of its ``status`` every kind has, and its
    registration. Subclasses name their ``_kind`` and add their own ``status`` fields."""

    _kind: ClassVar[ResourceKind]

    # Declared for type checkers only: at run time the SDK would resolve these annotations
    # (typing.get_type_hints) on every registration, a cost per job for nothing, since no
    # property here needs a type conversion. The attributes exist all the same: the SDK sets
    # one Output per property.
    if TYPE_CHECKING:
        spec: pulumi.Output[str]
        """The job spec (camelCase) without env values, as canonical JSON text."""
        env_values: pulumi.Output[dict[str, str]]
        """Env var values by path (``workerPoolSpecs[0].pythonPackageSpec.env[0].value``); secret."""
        project: pulumi.Output[str]
        region: pulumi.Output[str]
        triggers: pulumi.Output[Any]
        wait_for: pulumi.Output[str]
        wait_timeout: pulumi.Output[float]
        exclusive_gpus: pulumi.Output[bool]
        keep_record_on_delete: pulumi.Output[bool]
        delete_record_on_delete: pulumi.Output[bool]
        continue_last_run: pulumi.Output[bool]
        existing_job: pulumi.Output[str | None]
        status: pulumi.Output[dict[str, Any]]
        """Every field below in one mapping: the job as last created or refreshed, and its price."""

    job_name = StatusField[str]("job_name")
    """Full resource name: ``projects/P/locations/R/<collection>/ID``."""
    job_id = StatusField[str]("job_id")
    state = StatusField[str]("state")
    """``JOB_STATE_*`` as of the last create or refresh."""
    console_url = StatusField[str]("console_url")
    create_time = StatusField[str]("create_time")
    start_time = StatusField[str]("start_time")
    end_time = StatusField[str]("end_time")
    error_message = StatusField[str]("error_message")
    output_dir = StatusField[str]("output_dir")
    """The run's own output directory (``baseOutputDirectory`` as submitted): under
    ``<default>/runs/`` where the output directory was the project's to choose."""
    run_hash = StatusField[str]("run_hash")
    adopted = StatusField[bool]("adopted")
    """True when create found this run's job already submitted (lost response, crash)."""
    hourly_cost_usd = StatusField[float | None]("hourly_cost_usd")
    """The job's price per hour from the catalog's cells; None when a cell is not known. A
    bound among them is added in as it is: ``cost_basis`` says what the figure is."""
    max_cost_usd = StatusField[float | None]("max_cost_usd")
    """The most the run can cost (for its ``scheduling.timeout``), as ``hourly_cost_usd``."""
    cost_basis = StatusField[str | None]("cost_basis")
    """What the cost figures are: ``price``; ``at most`` (an upper end only: on-demand
    standing in for an unknown rate), ``at least`` (a lower end only), ``range`` (both ends,
    apart) or ``unknown``. Absent from a state written before it."""
    hourly_cost_low_usd = StatusField[float | None]("hourly_cost_low_usd")
    """The least the job costs per hour, where known (a price: the price)."""
    hourly_cost_high_usd = StatusField[float | None]("hourly_cost_high_usd")
    """The most the job costs per hour, where known (a price: the price)."""
    max_cost_low_usd = StatusField[float | None]("max_cost_low_usd")
    """The lower end of ``max_cost_usd``, where known."""
    max_cost_high_usd = StatusField[float | None]("max_cost_high_usd")
    """The upper end of ``max_cost_usd``, where known."""

    def __init__(
        self,
        resource_name: str,
        args: JobArgs[S] | None = None,
        opts: pulumi.ResourceOptions | None = None,
        *,
        spec: S | None = None,
        project: pulumi.Input[str] | None = None,
        region: pulumi.Input[str] | None = None,
        triggers: pulumi.Input[Sequence[Any] | Mapping[str, Any]] | None = None,
        wait_for: pulumi.Input[WaitFor] = "submitted",
        wait_timeout: pulumi.Input[float | str] | None = None,
        exclusive_gpus: pulumi.Input[bool] = False,
        keep_record_on_delete: pulumi.Input[bool] = False,
        existing_job: pulumi.Input[str] | None = None,
        delete_record_on_delete: pulumi.Input[bool] = False,
        continue_last_run: pulumi.Input[bool] = False,
        trainer_source: str | os.PathLike[str] | None = None,
        infra: Any = None,
        take_over_held_job: bool = False,
        regions: Sequence[str | Mapping[str, Any]] | None = None,
        capacity: Sequence[str] | None = None,
        place_origins: Mapping[str, str] | None = None,
        validate: bool = True,
    ) -> None:
        """Declare a job (``args``, or the same fields as keywords), checked, its notes, cost and
        quotas said first (``_job_preview``); ``validate=False`` skips that for inputs that went
        through ``check_jobs`` (the provider's ``check`` validates them anyway)."""
        kind = self._kind
        if args is None:
            if spec is None:
                raise TrainingJobInputError(f"{kind.name} {resource_name!r}: spec is required")
            args = JobArgs(
                spec=spec,
                project=project,
                region=region,
                triggers=triggers,
                wait_for=wait_for,
                wait_timeout=wait_timeout,
                exclusive_gpus=exclusive_gpus,
                keep_record_on_delete=keep_record_on_delete,
                existing_job=existing_job,
                delete_record_on_delete=delete_record_on_delete,
                continue_last_run=continue_last_run,
                trainer_source=trainer_source,
                infra=infra,
                take_over_held_job=take_over_held_job,
                regions=regions,
                capacity=capacity,
                place_origins=place_origins,
            )
        elif spec is not None:
            raise TrainingJobInputError(
                f"{kind.name} {resource_name!r}: pass either args or keyword fields, not both"
            )
        checked, props = _declared(kind, resource_name, args, validate=validate)
        opts = pulumi.ResourceOptions.merge(opts, _own_options(args))
        super().__init__(kind.provider(), resource_name, props, opts)
        for warning in checked.warnings:
            pulumi.log.warn(f"{warning.path}: {warning.reason}", resource=self)


# Inputs left at their defaults are not registered (INPUT_DEFAULTS); reading one gives an
# Output of the default, as a registered value would.
for _key in INPUT_DEFAULTS:
    setattr(JobResource, _key, DefaultInput(_key))


def check_job_args(
    kind: ResourceKind, resource_name: str, args: JobArgs[Any]
) -> tuple[str | None, list[Any]]:
    """Why the job ``resource_name`` of ``kind`` would be rejected (or None), and its warnings.

    Registers nothing. A program with several jobs checks them all first, so one invalid job
    cannot leave the others half-applied (the engine starts creating a resource as soon as it
    is registered).
    """
    try:
        checked = job_inputs(kind, resource_name, args, validate=True)
    except TrainingJobInputError as exc:
        return str(exc), []
    return None, checked.warnings


@dataclass
class JobInputs:
    """A job's inputs before registration: the spec as a document, env values in the clear."""

    props: dict[str, Any]
    warnings: list[Any]
    nested_outputs: bool
    """The spec document holds Outputs (e.g. a bucket's URL) at some of its places."""
    plan: Any = None
    """The spec as priced and held against the quotas (before an infra's Outputs went in);
    None when it is not known at preview."""
    notes: list[str] = field(default_factory=list)
    output_root: Any = None
    """The output directory the wiring chose (the user wrote none): each run writes under
    ``<output_root>/runs/<run id>`` (``OUTPUT_ROOT``)."""


@dataclass
class _Spec:
    """The spec's parts as ``job_inputs`` registers them (Outputs where not known yet)."""

    document: Any
    env_values: Any
    project: Any
    region: Any
    nested_outputs: bool = False
    model: Any = None
    plan: Any = None
    notes: list[str] = field(default_factory=list)
    triggers: list[str] = field(default_factory=list)
    """Package triggers of local trainer folders (``package:<folder>:<digest>``)."""
    output_root: Any = None
    """``JobInputs.output_root``."""


def _trainer_source(value: Any) -> Path | None:
    if value is None:
        return None
    path = Path(value)
    path = path if path.is_absolute() else program_root() / path
    if not path.is_dir():
        raise TrainingJobInputError(f"trainer_source: {value} is not a directory")
    return path


def _refuse_unplaceable(kind: ResourceKind, args: JobArgs[Any], resource_name: str) -> None:
    """A trainer folder or an infra the spec cannot take: said naming the argument."""
    where = f"{kind.name} {resource_name!r}"
    if isinstance(args.spec, pulumi.Output) and (
        args.trainer_source is not None or args.infra is not None
    ):
        raise TrainingJobInputError(
            f"{where}: trainer_source and infra need a spec known when the program runs, "
            "not an Output"
        )
    if args.trainer_source is not None and args.infra is None and _target() == "vertex":
        raise TrainingJobInputError(
            f"{where}: trainer_source: Vertex AI reads a trainer from Cloud Storage only; a "
            "TrainingInfra stages it: pass infra=TrainingInfra(..., "
            "TrainingInfraArgs(trainer_source=...)) instead"
        )


def _spec_parts(kind: ResourceKind, args: JobArgs[Any], resource_name: str) -> _Spec:
    spec = args.spec
    wired = args.infra is not None and args.existing_job is None
    _refuse_unplaceable(kind, args, resource_name)
    if isinstance(spec, pulumi.Output):
        prepared_out = spec.apply(lambda value: prepare(kind, value))
        return _Spec(
            document=prepared_out.apply(lambda p: _with_display_name(p.spec, resource_name)),
            env_values=prepared_out.apply(lambda p: p.env_values),
            project=prepared_out.apply(lambda p: p.project),
            region=prepared_out.apply(lambda p: p.region),
        )
    triggers: list[str] = []
    plans: list[Any] = []

    def adjust(model: Any) -> Any:
        if _target() == "local":
            try:
                model, found = local_trainer(model, _trainer_source(args.trainer_source))
            except PackagingError as exc:
                raise TrainingJobInputError(str(exc)) from None
            triggers.extend(found)
        plans.append(model)
        return model

    prepared = first = prepare(kind, spec, adjust=adjust)
    plan = plans[0] if not first.nested_outputs else None
    output_root = None
    if wired and plan is not None:
        # The same document a program that wires it itself would pass: the spec's, then the
        # infra's Outputs where it leaves them out, read again as a mapping.
        tuning = isinstance(plan, TuningJobSpec)
        document = wire_infra(plan.to_document(), args.infra, resource_name, tuning=tuning)
        output_root = wired_output_root(plan.to_document(), document, tuning=tuning)
        prepared = prepare(kind, document)
    elif wired:
        raise TrainingJobInputError(
            f"{kind.name} {resource_name!r}: infra needs a spec without Outputs in it"
        )
    model = prepared.model
    if model is not None and not model.display_name:
        model = model.model_copy(update={"display_name": resource_name})
    return _Spec(
        document=_with_display_name(prepared.spec, resource_name),
        env_values=prepared.env_values or None,
        project=prepared.project,
        region=prepared.region,
        nested_outputs=prepared.nested_outputs,
        model=model,
        plan=plan,
        notes=first.notes,
        triggers=triggers,
        output_root=output_root,
    )


def job_inputs(
    kind: ResourceKind, resource_name: str, args: JobArgs[Any], *, validate: bool
) -> JobInputs:
    """The inputs of the job ``resource_name``; with ``validate``, checked as the provider's
    ``check`` would (raises ``TrainingJobInputError`` naming every problem)."""
    parts = _spec_parts(kind, args, resource_name)
    placement = _declared_placement(kind, resource_name, args)
    origins: dict[str, str] = {
        key: origin
        for key, origin in (args.place_origins or {}).items()
        if getattr(args, key, None)  # given: ``_place`` takes a non-empty one only
    }
    props: dict[str, Any] = {
        SPEC: parts.document,
        ENV_VALUES: parts.env_values,
        PROJECT: _place(PROJECT, args.project, parts.project, origins),
        REGION: _place(REGION, args.region, parts.region, origins),
        TRIGGERS: add_triggers(args.triggers, parts.triggers),
        WAIT_FOR: args.wait_for,
        WAIT_TIMEOUT: args.wait_timeout,
        EXCLUSIVE_GPUS: args.exclusive_gpus,
        KEEP_RECORD: args.keep_record_on_delete,
        DELETE_RECORD: args.delete_record_on_delete,
        CONTINUE_LAST_RUN: args.continue_last_run,
        EXISTING_JOB: args.existing_job,
        PLACEMENT: placement,
        IDENTITY: identity_label(
            pulumi.get_project(), pulumi.get_stack(), resource_name, kind.type_token
        ),
    }
    if placement:  # the first candidate is the job's region, not gcp:region's or the env's
        props[REGION] = placement[0]["region"]
        origins.pop(REGION, None)
    if not validate:
        return JobInputs(
            props, [], parts.nested_outputs, parts.plan, parts.notes, parts.output_root
        )
    # Validate now what is known now: an invalid spec fails the program (and a Mocks test)
    # with the validator's message; whatever is still an Output is checked by the provider.
    view = {key: _unknown_view(value) for key, value in props.items() if key != SPEC}
    # The spec document (the bulk of the inputs) is walked only when Outputs sit in it.
    walk = parts.nested_outputs or isinstance(parts.document, pulumi.Output)
    view[SPEC] = _unknown_view(parts.document) if walk else parts.document
    outcome = _checked(kind, view, parts.model, placed=bool(placement))
    if outcome.failures:
        # A value read from the stack configuration or the environment is named by its key
        # or variable in messages.
        lines = "\n".join(
            "  " + problem_text(f.reason, f.suggestion, path=origins.get(f.path, f.path))
            for f in outcome.failures
        )
        raise TrainingJobInputError(f"{kind.name} {resource_name!r} is invalid:\n{lines}")
    return JobInputs(
        props, outcome.warnings, parts.nested_outputs, parts.plan, parts.notes, parts.output_root
    )


def _place(key: str, given: Any, in_spec: Any, origins: dict[str, str]) -> Any:
    """The job's ``project`` or ``region`` from the sources ``DYNAMIC_DOOR.place`` names, in
    its order: the argument, ``gcp:KEY``, the spec's own, then the environment pulumi-gcp
    reads (last, so a stack that sets any of the others keeps its inputs). ``origins`` gets
    the key or variable a value came from (``gcp:region``, ``GOOGLE_REGION``)."""
    if given:
        return given
    configured = configured_place(key)
    if configured is not None:
        origins[key] = configured[1]
        return configured[0]

    def or_environment(value: Any) -> Any:
        variable = DYNAMIC_DOOR.place.from_environment(key, os.environ)
        if value or variable is None:
            return value
        origins[key] = variable[0]
        return variable[1]

    # A spec that is an Output: its project is known once it is, the environment read then.
    if isinstance(in_spec, pulumi.Output):
        return in_spec.apply(or_environment)
    return or_environment(in_spec)


def _declared_placement(
    kind: ResourceKind, resource_name: str, args: JobArgs[Any]
) -> list[dict[str, Any]] | None:
    """The ``placement`` input of a job that names candidate ``regions``, else None."""
    if args.regions is None:
        return None
    from ..core._placement import declared_placement

    try:
        return declared_placement(args.regions, args.capacity)
    except ValueError as exc:
        raise TrainingJobInputError(f"{kind.name} {resource_name!r}: {exc}") from None


def _checked(
    kind: ResourceKind, view: dict[str, Any], parsed: Any, *, placed: bool
) -> CheckOutcome:
    """The provider's ``check`` of the inputs known now (a placed job: per candidate)."""
    if placed:
        from ..core._placement import check_placed

        return check_placed(view, target=_target(), kind=kind.spec)[0]
    return check_inputs(view, target=_target(), parsed=parsed, kind=kind.spec)


def _preview(kind: ResourceKind, name: str, checked: JobInputs, args: JobArgs[Any]) -> None:
    """Log a job's notes and estimated cost, and check its quotas, with the stack's settings;
    raises ``TrainingJobInputError`` when the quota is short and ``training:quota`` is
    ``error``."""
    settings = stack_preview_settings(checked.props[PROJECT], checked.props[REGION])
    for note in checked.notes:
        pulumi.log.info(f"{name}: {note}")
    planned = [(name, checked.plan)] if checked.plan is not None else []
    if planned:
        pulumi.log.info(cost_message(planned, settings))
    _say_output_directory(kind, name, checked, args)
    single, placed = _by_placement([(name, checked)])
    held = [] if placed else _held_while_replaced(kind, name, checked, args)
    problem = quota_problem(single + held, settings, placed)
    if problem:
        raise TrainingJobInputError(problem)


def _by_placement(
    checked: Sequence[tuple[str, JobInputs]],
) -> tuple[list[tuple[str, Any]], list[Placed]]:
    """The jobs of one region, and the jobs with candidate regions (each checked per
    candidate by the quota step, ``components.core._placement``)."""
    single: list[tuple[str, Any]] = []
    placed: list[Placed] = []
    for name, inputs in checked:
        if inputs.plan is None:
            continue
        if inputs.props.get(PLACEMENT):
            placed.append((name, inputs.plan, inputs.props[PLACEMENT]))
        else:
            single.append((name, inputs.plan))
    return single, placed


def _held_while_replaced(
    kind: ResourceKind, name: str, checked: JobInputs, args: JobArgs[Any]
) -> list[tuple[str, Any]]:
    """The running job the state holds for this resource, when the planned job replaces it
    create-before-delete (both hold quota at once): counted in the quota check."""
    if checked.plan is None or args.exclusive_gpus is True:
        return []
    held = held_while_replaced(
        kind.spec,
        str(checked.props[IDENTITY]),
        checked.plan,
        checked.props,
        wired=args.infra is not None and args.existing_job is None,
    )
    return [] if held is None else [(f"{name} (its running job, until the replacement runs)", held)]


def _say_output_directory(
    kind: ResourceKind, name: str, checked: JobInputs, args: JobArgs[Any]
) -> None:
    """Say at preview which directory a new run of the job writes, and warn where a replace's
    new run would find the replaced run's checkpoints (a directory the user wrote)."""
    replaced = False
    if checked.output_root is None and checked.plan is not None:
        replaced = (
            held_while_replaced(
                kind.spec,
                str(checked.props[IDENTITY]),
                checked.plan,
                checked.props,
                wired=args.infra is not None and args.existing_job is None,
                active_only=False,
            )
            is not None
        )
    note = output_directory_note(
        name,
        checked.plan,
        checked.output_root,
        continue_last_run=args.continue_last_run is True or _stack_continues_last_run(),
        replaced=replaced,
    )
    if note is not None:
        level, text = note
        (pulumi.log.warn if level == "warn" else pulumi.log.info)(text)


def _stack_continues_last_run() -> bool:
    """``training:continueLastRun`` (the provider reads it too; a bad value fails there)."""
    from ..lifecycle._settings import CONTINUE_LAST_RUN_KEY, flag_setting

    try:
        return flag_setting(
            pulumi.Config("training").get(CONTINUE_LAST_RUN_KEY.removeprefix("training:")),
            CONTINUE_LAST_RUN_KEY,
        )
    except SettingError:
        return False


def check_jobs(
    jobs: Sequence[tuple[ResourceKind, str, JobArgs[Any]]], settings: PreviewSettings
) -> None:
    """Check every job, then say their cost and check their quotas together; registers nothing.

    A program with several jobs calls this before declaring any (then each with
    ``validate=False``): one invalid job fails the program with every job's problems, and
    the engine starts none of them. Raises ``TrainingJobInputError``.
    """
    problems: list[str] = []
    checked: list[tuple[str, JobInputs]] = []
    held: list[tuple[str, Any]] = []
    for kind, name, args in jobs:
        try:
            inputs = job_inputs(kind, name, args, validate=True)
        except TrainingJobInputError as exc:
            problems.append(str(exc))
            inputs = JobInputs({}, [], False, _plan_of(kind, args))
        else:
            if not inputs.props.get(PLACEMENT):
                held += _held_while_replaced(kind, name, inputs, args)
            _say_output_directory(kind, name, inputs, args)
        checked.append((name, inputs))
    # A job with candidate regions is priced in its first, as the resource alone prices it.
    own = {n: c.props[REGION] for n, c in checked if isinstance(c.props.get(REGION), str)}
    pulumi.log.info(cost_message([(n, c.plan) for n, c in checked], settings, own))
    for name, inputs in checked:
        for warning in inputs.warnings:
            pulumi.log.warn(f"{name}: {warning.path}: {warning.reason}")
    if problems:
        raise TrainingJobInputError("nothing was changed, because:\n" + "\n".join(problems))
    single, placed = _by_placement(checked)
    problem = quota_problem(single + held, settings, placed)
    if problem:
        raise TrainingJobInputError(problem)


def _plan_of(kind: ResourceKind, args: JobArgs[Any]) -> Any:
    """An invalid job's spec, as far as it is read: its cost line says what it can."""
    return args.spec if isinstance(args.spec, kind.spec.model) else None


def _declared(
    kind: ResourceKind, resource_name: str, args: JobArgs[Any], *, validate: bool
) -> tuple[JobInputs, dict[str, Any]]:
    """A job's checked inputs (with ``validate``: its preview logged and its quota checked)
    and the properties it registers."""
    checked = job_inputs(kind, resource_name, args, validate=validate)
    if validate:
        _preview(kind, resource_name, checked, args)
    props = _registered(checked)
    props.update(_create_only_inputs(checked, resource_name, args))
    return checked, props


def _own_options(args: JobArgs[Any]) -> pulumi.ResourceOptions:
    """The options every job resource sets: env values secret in its outputs.

    No ``delete_before_replace`` for ``exclusive_gpus`` or ``continue_last_run``: a replace
    the engine decides without asking the provider (``--replace``, a tainted resource) is
    created first, and its create cancels the held jobs (``held_jobs``) and waits for them
    before it submits (``JobCore._stop_held``), as the plugin's does. Deleted first, the
    old resource would stay in the state only as pending replacement, which a refresh never
    reads: after a kill, nothing would name the new job (``diff`` still asks a replace it
    decides to delete first)."""
    del args  # every job resource gets the same options
    return pulumi.ResourceOptions(additional_secret_outputs=[ENV_VALUES])


def _create_only_inputs(
    checked: JobInputs, resource_name: str, args: JobArgs[Any]
) -> dict[str, Any]:
    """The inputs only ``create`` reads (``HIDDEN_INPUTS``): the run key, the jobs the state
    holds, the owner for the ``pulumi_owner`` label, the leave to take a held job over, and
    the output directory the wiring chose (each run writes a directory of its own under it)."""
    props: dict[str, Any] = {RUN_KEY: stack_run_key()}
    held = held_jobs(str(checked.props[IDENTITY]))
    if held:
        props[HELD_JOBS] = held
        instance = held_instance(str(checked.props[IDENTITY]))
        if instance is not None:
            props[HELD_INSTANCE] = instance
    props[OWNER] = f"{pulumi.get_project()}/{pulumi.get_stack()}/{resource_name}"
    if args.take_over_held_job is True:
        props[TAKE_OVER_HELD_JOB] = True
    if checked.output_root is not None:
        props[OUTPUT_ROOT] = checked.output_root
    return props


def _registered(checked: JobInputs) -> dict[str, Any]:
    """What the resource registers: the spec as JSON text, env values as a secret, a
    placeholder for ``status``, and no input that is at its default."""
    props = {key: value for key, value in checked.props.items() if not is_default_input(key, value)}
    spec = props[SPEC]
    if checked.nested_outputs or isinstance(spec, pulumi.Output):
        props[SPEC] = pulumi.Output.from_input(spec).apply(encode_spec)
    else:
        props[SPEC] = encode_spec(spec)
    if ENV_VALUES in props:
        props[ENV_VALUES] = pulumi.Output.secret(props[ENV_VALUES])
    props[STATUS] = None
    return props


def _with_display_name(spec: dict[str, Any], resource_name: str) -> dict[str, Any]:
    # Vertex requires a display name; the resource name is the natural default.
    if spec.get("displayName"):
        return spec
    return {"displayName": resource_name, **spec}
