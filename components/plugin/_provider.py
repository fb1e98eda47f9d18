"""The plugin's provider: ``TrainingJob`` and ``HyperparameterTuningJob`` for every Pulumi language.

A thin front door on the lifecycle core the dynamic provider uses too
(``components.core._jobs.JobCore`` with the kinds ``TRAINING_JOB`` and ``TUNING_JOB``): each
operation turns the plugin's properties (the v1 REST shape, ``components.plugin._shape``) into the
core's inputs, calls the core's own ``check``/``diff``/``create``/``read``/``update``/``delete``,
and turns its typed answer (``components.core._results``) back. What the core guarantees (submit or adopt, waits that cancel only
on a timeout, a delete that waits for the job to stop, secrets out of errors) holds here as it
is. What is the plugin's own:

- **Bookkeeping stays out of the properties.** The resource's identity comes from its URN (the
  core's dynamic resource gets it from the program), the run key from the provider's
  ``runKey``; neither is an input, an output or a diff.
- **One stack instance, one owner.** ``check_config`` gives a provider made by this release a
  random ``stackKey`` (secret), which its state then keeps: every later ``check_config`` passes
  the old one on, so it never changes and shows in no diff. Its hash keys each job's identity
  label (``components.lifecycle._adoption``, rule 1): two stacks of the same names on two
  backends never adopt, name or cancel each other's jobs. A provider whose state holds no key
  (made before) gets none: its stack keeps matching on names alone, as before (rule 8).
- **Diffs name properties.** ``diff`` asks the core whether the job changes, then lists each
  changed path the user wrote (``jobSpec.workerPoolSpecs[0].machineSpec.machineType``), a
  replacing one marked as such.
- **Import.** A ``read`` without properties (``pulumi import``) reads the job through the API
  and answers its spec as the resource's inputs: the preview after it shows no change.
- **Cancel** stops every wait of the process at once (``components.lifecycle._interrupt``).

The core is synchronous (it waits for jobs); its calls run in a thread pool large enough that
the engine's ``--parallel`` is the only limit.
"""

from __future__ import annotations

import asyncio
import json
import math
import secrets
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pulumi.provider.experimental.property_value import PropertyValue
from pulumi.provider.experimental.provider import (
    CheckFailure,
    CheckRequest,
    CheckResponse,
    ConfigureRequest,
    ConfigureResponse,
    CreateRequest,
    CreateResponse,
    DeleteRequest,
    DiffRequest,
    DiffResponse,
    GetSchemaRequest,
    GetSchemaResponse,
    InvokeRequest,
    InvokeResponse,
    PropertyDiff,
    PropertyDiffKind,
    Provider,
    ReadRequest,
    ReadResponse,
    UpdateRequest,
    UpdateResponse,
)

from ..core._jobs import TRAINING_JOB, JobCore, cancel_operations
from ..core._results import Checked
from ..core._tuning import TUNING_JOB
from ..costs._quota import QUOTA_KEY
from ..lifecycle._adoption import (
    forget_new_instance,
    held_elsewhere,
    identity_label,
    instance_identity,
    instance_of,
    record_create,
    record_new_instance,
)
from ..lifecycle._settings import PLUGIN_DOOR, ProviderSettings, SettingError, read_place
from ..lifecycle._wire import (
    EXCLUSIVE_GPUS,
    IDENTITY,
    INSTANCE,
    OWNER,
    PLACEMENT,
    STATUS,
    UNKNOWN,
    contains_unknown,
    decode_spec,
    is_unknown,
)
from ..rules._catalog import Catalog
from ..rules._violations import problem_text
from ..vertex.api import JobOperationError
from ._log import EngineLog
from ._notes import PreviewNotes, planned_job
from ._schema import TRAINING_JOB_TOKEN, TUNING_JOB_TOKEN, load_schema
from ._shape import (
    PROPERTY_KNOBS,
    REPLACING_KNOBS,
    TRAINING,
    TUNING,
    Shape,
    core_inputs,
    outputs_of_status,
    placement_input,
    plugin_path,
    status_of_outputs,
)
from ._stack_state import (
    StateCache,
    StateUnreadable,
    held_reader,
    read_resources,
    stack_instance,
)
from ._values import plain, plain_map, secret_texts, wrap, wrap_map

__all__ = ["VALIDATE_FUNCTION", "GpuTrainingProvider", "PluginError"]

T = TypeVar("T")

STACK_KEY = "stackKey"
"""The provider input ``check_config`` makes once (a secret): the stack instance's key."""

STACK_INSTANCE = "stackInstance"
"""The provider input naming the stack instance (``instance_of`` its key: public) in a
provider made since instances carry over: what its successor reads from the checkpoint
without decrypting anything (``_stack_state.stack_instance``)."""

VALIDATE_FUNCTION = "gpu-training:vertex:validate"
"""``invoke``: a TrainingJob's or tuning job's properties → the failures its check would give."""

_WORKERS = 256
"""Threads for the core's calls: the engine's ``--parallel`` bounds what runs at once."""

PluginError = JobOperationError
"""An operation failed; the message is all the engine shows (``components.plugin._server``)."""


@dataclass(frozen=True)
class _Kind:
    token: str
    shape: Shape
    core: JobCore


@dataclass(frozen=True)
class _Config:
    settings: ProviderSettings
    project: str | None
    region: str | None
    run_key: str | None
    quota: str
    instance: str | None = None
    """The stack instance (``instance_of`` its ``stackKey``), or None: a provider made before."""


def _parse_urn(urn: str) -> tuple[str, str, str]:
    """(Pulumi project, stack, resource name) of ``urn:pulumi:STACK::PROJECT::TYPE::NAME``."""
    parts = urn.split("::")
    stack = parts[0].rsplit(":", 1)[-1] if parts else ""
    project = parts[1] if len(parts) > 1 else ""
    name = parts[-1] if len(parts) > 3 else ""
    return project, stack, name


def _read_config(
    values: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    default_project: Callable[[], str | None] | None = None,
) -> _Config:
    """The provider configuration (plain values by plugin key) through the settings reader
    both doors share (``ProviderSettings``, ``read_place``): a job's default project and
    region from ``gpu-training:project``/``region``, then the environment pulumi-gcp reads,
    then the credentials' project. Raises ``SettingError`` naming the plugin's key."""

    def get(key: str) -> Any:
        # Only the keys the schema offers (`gpu-training:continueLastRun` is a job property).
        name = key.removeprefix(f"{PLUGIN_DOOR.namespace}:")
        return values.get(name) if name in _CONFIG_NAMES else None

    settings = ProviderSettings.read(get, PLUGIN_DOOR)
    project, region = read_place(PLUGIN_DOOR, get, settings.endpoint, environ, default_project)
    run_key = values.get("runKey")
    if run_key is not None and not isinstance(run_key, str):
        raise SettingError(f"{PLUGIN_DOOR.namespace}:runKey", "must be a string")
    stack_key, instance = values.get(STACK_KEY), values.get(STACK_INSTANCE)
    if not isinstance(instance, str) or not instance:
        instance = instance_of(stack_key) if isinstance(stack_key, str) and stack_key else None
    return _Config(settings, project, region, run_key or None, settings.quota, instance)


class GpuTrainingProvider(Provider):
    """The ``gpu-training`` resource provider (``pulumi-resource-gpu-training``)."""

    def __init__(
        self,
        engine: str = "",
        read_state: Callable[..., list[Mapping[str, Any]]] = read_resources,
    ) -> None:
        """``engine``: the engine's address (its ``Log`` service); ``read_state(urn,
        show_secrets=False)``: the resources of the stack ``urn`` belongs to
        (``components.plugin._stack_state``)."""
        self._log = EngineLog(engine)
        self._notes = PreviewNotes(self._log)
        self._read_state = StateCache(read_state)
        self._read_stack = read_state
        self._pool = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="operation")
        self._config = _Config(ProviderSettings(door=PLUGIN_DOOR), None, None, None, "error")
        self._kinds = {
            TRAINING_JOB_TOKEN: _Kind(TRAINING_JOB_TOKEN, TRAINING, JobCore(TRAINING_JOB)),
            TUNING_JOB_TOKEN: _Kind(TUNING_JOB_TOKEN, TUNING, JobCore(TUNING_JOB)),
        }

    # -- plumbing ---------------------------------------------------------------------------

    async def _run(self, call: Callable[[], T]) -> T:
        """``call()`` in a worker thread (the core blocks while it waits for a job)."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    def _kind(self, urn_or_token: str) -> _Kind:
        token = urn_or_token.split("::")[2] if "::" in urn_or_token else urn_or_token
        token = token.rsplit("$", 1)[-1]  # a child's type is PARENT$TYPE
        kind = self._kinds.get(token)
        if kind is None:
            raise PluginError(f"unknown resource type {token!r}")
        return kind

    def _core_inputs(self, kind: _Kind, props: Mapping[str, Any], urn: str) -> dict[str, Any]:
        _, _, name = _parse_urn(urn)
        inputs = {k: v for k, v in props.items() if k in _input_names(kind)}
        core = core_inputs(
            kind.shape,
            inputs,
            project=self._config.project,
            region=self._config.region,
            display_name=name,
            run_key=self._config.run_key,
            # The engine starts the plugin in the program's directory (as for
            # `catalogOverlay`): a relative local package path is relative to it.
            base=Path.cwd(),
        )
        core[INSTANCE] = self._config.instance  # None: the core keys no label with it
        return core

    def _identity(self, kind: _Kind, urn: str) -> str:
        project, stack, name = _parse_urn(urn)
        return identity_label(project, stack, name, kind.token)

    def _held_reader(self, urn: str) -> Callable[[], list[str]]:
        """Where a create of ``urn`` reads the jobs the stack holds for it, should it find
        an active job of its own (``components.plugin._stack_state``)."""

        def identity_of(other: str) -> str | None:
            try:
                return self._identity(self._kind(other), other)
            except PluginError:
                return None

        return held_reader(
            urn,
            identity_of,
            frozenset(self._kinds),
            lambda text: self._log.warn(text, urn),
            self._read_state,
        )

    # -- configuration and schema -----------------------------------------------------------

    async def get_schema(self, request: GetSchemaRequest) -> GetSchemaResponse:
        return GetSchemaResponse(schema=load_schema())

    async def check_config(self, request: CheckRequest) -> CheckResponse:
        try:
            _read_config(plain_map(request.new_inputs), default_project=lambda: None)
        except SettingError as exc:
            return CheckResponse(
                inputs=request.new_inputs,
                failures=[CheckFailure(exc.key.removeprefix("gpu-training:"), exc.reason)],
            )
        succeeded = await asyncio.to_thread(self._succeeded_instance, request)
        return CheckResponse(
            inputs=_with_stack_key(request.old_inputs, request.new_inputs, succeeded)
        )

    def _succeeded_instance(self, request: CheckRequest) -> tuple[bool, str | None]:
        """For a provider with no state of its own, the stack instance of the provider it
        succeeds (``_stack_state.stack_instance``); (False, None): none, a new instance."""
        if request.old_inputs:
            return False, None
        try:
            return stack_instance(request.urn, STACK_KEY, STACK_INSTANCE, self._read_stack)
        except StateUnreadable as exc:
            self._log.warn(
                f"{exc}: this provider starts a new stack instance, so the jobs its "
                "predecessor submitted are not this stack's to cancel or adopt (a destroy "
                "leaves them running and says so)",
                request.urn,
            )
            return False, None

    async def configure(self, request: ConfigureRequest) -> ConfigureResponse:
        values = plain_map(request.args)
        for full, value in request.variables.items():
            key = full.rsplit(":", 1)[-1]
            if key not in values:
                values[key] = value
        self._config = await self._run(lambda: _read_config(values))
        for kind in self._kinds.values():
            kind.core.use_settings(self._config.settings)
            kind.core.use_pricing(self._catalog_for)
        # supports_preview: the engine asks create and update at preview too; the outputs a
        # create's preview knows (the price, the placed region) reach the streamed
        # `preview --json` (resOutputsEvent) and the program.
        return ConfigureResponse(accept_secrets=True, supports_preview=True, accept_resources=True)

    def _catalog_for(self, project: str) -> Catalog:
        """The billed catalog a create prices with: its preview's (``PreviewNotes.catalog_for``)."""
        return self._notes.catalog_for(project, self._config.settings)

    async def cancel(self) -> None:
        """The engine's Cancel (Ctrl-C, ``pulumi cancel``): every wait ends now; each job is
        left as it is (a waiting create's job is adopted by the next ``pulumi up``)."""
        cancel_operations()

    # -- preview path -----------------------------------------------------------------------

    def _checked(
        self, kind: _Kind, urn: str, news: dict[str, Any]
    ) -> tuple[list[CheckFailure], Checked]:
        """The failures of ``news`` on the user's paths, and the core's whole answer."""
        failures = list(_knob_type_failures(news))
        checked = kind.core.check(self._core_inputs(kind, news, urn))
        failures += [
            CheckFailure(plugin_path(kind.shape, p.path), p.text) for p in checked.problems
        ]
        return failures, checked

    def _failures(self, kind: _Kind, urn: str, news: dict[str, Any]) -> list[CheckFailure]:
        return self._checked(kind, urn, news)[0]

    async def check(self, request: CheckRequest) -> CheckResponse:
        """Validate: one failure per violation, on the path of the property the user wrote;
        a valid job's notes said on the resource, its quota applied (``_preview_notes``)."""
        kind = self._kind(request.urn)
        news = plain_map(request.new_inputs)
        unknown_props = [k for k in request.new_inputs if k not in _input_names(kind)]
        failures = [
            CheckFailure(key, f"is not a property of {kind.token.rsplit(':', 1)[-1]}")
            for key in unknown_props
        ]

        def checked() -> list[CheckFailure]:  # one worker call: its notes follow at once
            found, outcome = self._checked(kind, request.urn, news)
            if failures or found:
                return found
            return self._preview_notes(kind, request.urn, outcome)

        failures += await self._run(checked)
        return CheckResponse(inputs=request.new_inputs, failures=failures)

    def _preview_notes(self, kind: _Kind, urn: str, outcome: Checked) -> list[CheckFailure]:
        """What the dynamic door says at preview (``components.plugin._notes``), on ``urn``;
        ``gpu-training:quota``: a shortfall fails the check on the job's pools (``error``) or
        is a warning (``warn``)."""
        for warning in outcome.warnings:
            self._log.warn(f"{plugin_path(kind.shape, warning.path)}: {warning.reason}", urn)
        _, _, name = _parse_urn(urn)
        job = planned_job(kind.shape, name, outcome.inputs)
        if job is None:
            return []
        shortfalls = self._notes.tell(job, self._config.settings, urn)
        if self._config.quota == "warn":
            for shortfall in shortfalls:
                self._log.warn(shortfall.text, urn)
            return []
        pools = plugin_path(kind.shape, "workerPoolSpecs" if kind.shape.nested else "trialJobSpec")
        key = PLUGIN_DOOR.key(QUOTA_KEY)
        return [
            CheckFailure(pools, f"{shortfall.text} ({key}: warn makes this a warning)")
            for shortfall in shortfalls
        ]

    async def diff(self, request: DiffRequest) -> DiffResponse:
        """The core says whether the job changes; the answer lists each changed path the
        user wrote, those of the job marked as replacing it. Outputs never show."""
        kind = self._kind(request.urn)
        names = _input_names(kind)
        olds = plain_map({k: v for k, v in request.old_state.items() if k in names})
        news = plain_map({k: v for k, v in request.new_inputs.items() if k in names})
        # The project and region the job runs in are in the state even when they were the
        # provider's defaults: unset in the new inputs, they are the defaults again, and a
        # default that moved moves the job.
        for key in ("project", "region"):
            default = getattr(self._config, key)
            if news.get(key) is None and default:
                news[key] = default
        old_core = self._core_inputs(kind, olds, request.urn)
        new_core = self._core_inputs(kind, news, request.urn)
        if PLACEMENT in old_core or PLACEMENT in new_core:
            # The placement rule asks where the held job runs (its name, an output).
            old_core[STATUS] = status_of_outputs(kind.shape, plain_map(request.old_state))
        result = kind.core.diff(old_core, new_core)
        replacing = bool(result.replaces)
        detailed: dict[str, PropertyDiff] = {}
        for path, change in _changes(olds, news, names, request.ignore_changes):
            top = _top(path)
            replaces = top not in PROPERTY_KNOBS or top in REPLACING_KNOBS
            if replaces and not replacing:
                continue  # the core found no change of the job (1 == 1.0, blank ends...)
            detailed[path] = PropertyDiff(_diff_kind(change, replaces), input_diff=True)
        if replacing and not any(_is_replace(d) for d in detailed.values()):
            # The core saw a change of the job no path shows (a default display name): say so
            # on the property it is about rather than hide a replacement.
            for key in result.replaced_paths:
                path = plugin_path(kind.shape, key)
                detailed[path] = PropertyDiff(PropertyDiffKind.UPDATE_REPLACE, True)
        return DiffResponse(
            changes=bool(detailed),
            replaces=sorted({_top(p) for p, d in detailed.items() if _is_replace(d)}),
            delete_before_replace=bool(result.delete_before_replace),
            diffs=sorted({_top(p) for p in detailed}),
            detailed_diff=detailed,
        )

    async def invoke(self, request: InvokeRequest) -> InvokeResponse:
        """``gpu-training:vertex:validate``: ``{type, properties}`` → ``{failures: [...]}``."""
        if request.tok != VALIDATE_FUNCTION:
            raise PluginError(f"unknown function {request.tok!r}")
        args = plain_map(request.args)
        kind = self._kind(str(args.get("type") or TRAINING_JOB_TOKEN))
        props = args.get("properties")
        if not isinstance(props, dict):
            return InvokeResponse(
                failures=[CheckFailure("properties", "must be a mapping of the resource's inputs")]
            )
        urn = f"urn:pulumi:invoke::invoke::{kind.token}::{props.get('displayName') or 'job'}"
        found = await self._run(lambda: self._failures(kind, urn, props))
        return InvokeResponse(
            return_value={
                "failures": wrap([{"property": f.property, "reason": f.reason} for f in found])
            }
        )

    # -- API path ---------------------------------------------------------------------------

    async def create(self, request: CreateRequest) -> CreateResponse:
        kind = self._kind(request.urn)
        if request.preview:
            planned = await self._guarded(
                lambda: self._planned_state(kind, request), request.properties
            )
            return CreateResponse(resource_id="", properties=planned)
        props = plain_map(request.properties)

        def create() -> tuple[str, dict[str, Any], dict[str, Any]]:
            inputs = self._core_inputs(kind, props, request.urn)
            inputs[IDENTITY] = self._identity(kind, request.urn)
            # project/stack/resource: the job's `pulumi_owner` label, and the stack whose lock
            # the waits watch (`pulumi cancel` from another shell, file:// backends).
            inputs[OWNER] = "/".join(_parse_urn(request.urn))
            checked = kind.core.check(inputs)
            if checked.problems:
                raise PluginError(
                    "; ".join(
                        problem_text(p.reason, p.suggestion, path=plugin_path(kind.shape, p.path))
                        for p in checked.problems
                    )
                )
            held = self._held_reader(request.urn)
            # A replace: the deletes below leave a job a killed replace left, for it to adopt.
            record_create(inputs[IDENTITY])
            if kind.core.stops_before_replace(checked.inputs):
                self._stop_held(kind, request.urn, checked.inputs, held())
            result = kind.core.create(checked.inputs, held)
            return result.id, checked.inputs, dict(result.outputs)

        job, inputs, outs = await self._guarded(create, request.properties)
        return CreateResponse(
            resource_id=job,
            properties=self._state(kind, request.properties, inputs, outs),
        )

    def _planned_state(self, kind: _Kind, request: CreateRequest) -> dict[str, PropertyValue]:
        """The preview of a create: the inputs as given, the outputs already known (the
        price, the placed region where one candidate is left: ``PreviewNotes.known_status``)
        and every other output unknown."""
        inputs = self._core_inputs(kind, plain_map(request.properties), request.urn)
        _, _, name = _parse_urn(request.urn)
        job = planned_job(kind.shape, name, inputs)
        status: dict[str, Any] = {}
        if job is not None:
            under = kind.shape.spec.pools_under
            catalog = self._notes.catalog_for(job.project, self._config.settings)
            status = PreviewNotes.known_status(job, kind.core.kind.costs, under, catalog)
        state = self._state(kind, request.properties, inputs, {STATUS: status})
        for output in _OUTPUT_NAMES[kind.token]:
            # The engine's unknown text: the SDK cannot marshal its own Computed value.
            state.setdefault(output, PropertyValue(UNKNOWN))
        return state

    def _stop_held(self, kind: _Kind, urn: str, inputs: dict[str, Any], held: list[str]) -> None:
        """``exclusiveGpus`` or ``continueLastRun`` (``JobCore.stops_before_replace``):
        the jobs the stack holds for the resource are cancelled, and waited for, before a new
        one is submitted (with ``continueLastRun`` the new one writes into their directory). A create of a resource the stack holds a job
        for is a replace the engine creates first: a forced one (``--replace``) calls no diff,
        so ``deleteBeforeReplace`` never reaches it. The delete of the replaced resource then
        finds its job stopped (its record goes as ``deleteRecords`` says, now or then)."""
        why = "exclusiveGpus" if inputs.get(EXCLUSIVE_GPUS) is True else "continueLastRun"
        for job in held:
            self._log.info(
                f"{why}: cancelling job {job}, held by the resource this one replaces, "
                "before the new job is submitted",
                urn,
            )
            kind.core.delete(job, inputs)

    def _state(
        self,
        kind: _Kind,
        given: Mapping[str, PropertyValue],
        inputs: Mapping[str, Any],
        outs: Mapping[str, Any],
    ) -> dict[str, PropertyValue]:
        """The resource's outputs: its inputs as given (secrets stay secret), the place the
        job runs in, and the job's status."""
        state = {k: v for k, v in given.items() if k in _input_names(kind)}
        for key in ("project", "region"):
            if key not in state and inputs.get(key):
                state[key] = wrap(inputs[key])
        status = outs.get(STATUS)
        if isinstance(status, Mapping):
            state.update(wrap_map(outputs_of_status(kind.shape, status)))
        return state

    async def read(self, request: ReadRequest) -> ReadResponse:
        kind = self._kind(request.urn)
        if not request.properties and not request.inputs:
            return await self._import(kind, request)
        props = plain_map(request.properties)

        def read() -> tuple[str, dict[str, Any], dict[str, Any]]:
            inputs = self._core_inputs(kind, props, request.urn)
            core_props = {
                **inputs,
                # the core then names an active job of the resource the stack does not hold
                IDENTITY: self._identity(kind, request.urn),
                STATUS: status_of_outputs(kind.shape, props),
            }
            result = kind.core.read(request.resource_id, core_props)
            return result.id, inputs, dict(result.outputs)

        job, inputs, outs = await self._guarded(read, request.properties)
        if not job:
            return ReadResponse(resource_id="", properties={}, inputs={})
        given = request.inputs or {k: v for k, v in request.properties.items()}
        return ReadResponse(
            resource_id=job,
            properties=self._state(kind, request.properties, inputs, outs),
            inputs={k: v for k, v in given.items() if k in _input_names(kind)},
        )

    async def _import(self, kind: _Kind, request: ReadRequest) -> ReadResponse:
        """``pulumi import TYPE NAME JOB``: the job's spec as the resource's inputs."""
        from ..core._importing import fetch_job, imported_job

        def read() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
            core = kind.core
            job, api_kind = fetch_job(
                request.resource_id, endpoint=core.endpoint, policy=core.policy
            )
            if api_kind is not core.kind.api:
                raise PluginError(
                    f"{request.resource_id} is not a {core.kind.what}: import it as "
                    f"{TUNING_JOB_TOKEN if kind.token == TRAINING_JOB_TOKEN else TRAINING_JOB_TOKEN}"
                )
            refused = held_elsewhere(
                f"job {request.resource_id}",
                job.labels,
                instance_identity(self._identity(kind, request.urn), self._config.instance),
                "`pulumi import` takes only a job no other resource holds (its holder's "
                "destroy would cancel it): end it there, or import it into that resource",
            )
            if refused is not None:
                raise PluginError(refused)
            imported = imported_job(job, api_kind)
            props = kind.shape.rest_document(imported.document)
            parsed = kind.core.kind.parse_name(str(job.name))
            if parsed is not None:
                for key, value in (("project", parsed[0]), ("region", parsed[1])):
                    # Vertex AI names a job's project by its number, which says nothing of
                    # the project's id: the provider's project stands.
                    numbered = key == "project" and value.isdigit()
                    if not numbered and value != getattr(self._config, key):
                        props[key] = value
            inputs = self._core_inputs(kind, props, request.urn)
            result = core.read(request.resource_id, {**inputs, STATUS: {}})
            return props, inputs, dict(result.outputs)

        props, inputs, outs = await self._guarded(read, {})
        given = _with_secret_env(wrap_map(props))
        return ReadResponse(
            resource_id=request.resource_id,
            properties=self._state(kind, given, inputs, outs),
            inputs=given,
        )

    async def update(self, request: UpdateRequest) -> UpdateResponse:
        """Only knobs change in place (``diff`` replaces the job otherwise): no API call."""
        kind = self._kind(request.urn)
        olds, news = plain_map(request.olds), plain_map(request.news)

        def update() -> tuple[dict[str, Any], dict[str, Any]]:
            old_inputs = self._core_inputs(kind, olds, request.urn)
            old_inputs[STATUS] = status_of_outputs(kind.shape, olds)
            new_inputs = self._core_inputs(kind, news, request.urn)
            result = kind.core.update(request.resource_id, old_inputs, new_inputs)
            return new_inputs, dict(result.outputs)

        inputs, outs = await self._guarded(update, request.news)
        return UpdateResponse(properties=self._state(kind, request.news, inputs, outs))

    async def delete(self, request: DeleteRequest) -> None:
        """Cancel an active job, wait for it to stop, delete its record unless kept."""
        kind = self._kind(request.urn)
        props = plain_map(request.properties)

        def delete() -> None:
            inputs = self._core_inputs(kind, props, request.urn)
            inputs[IDENTITY] = self._identity(kind, request.urn)
            kind.core.delete(request.resource_id, inputs)

        await self._guarded(delete, request.properties)

    async def _guarded(self, call: Callable[[], T], given: Mapping[str, PropertyValue]) -> T:
        """``call()`` in a worker; any error leaves as a ``PluginError`` whose message has no
        secret of ``given`` (the operation's properties) in it: the core already redacts its
        own; this covers the rest. The secrets are looked for only when there is an error."""
        from .._redaction import redact

        try:
            return await self._run(call)
        except PluginError as exc:
            raise PluginError(redact(str(exc), _secrets(given))) from None
        except Exception as exc:
            text = str(exc) or type(exc).__name__
            scrubbed = self._kinds[TRAINING_JOB_TOKEN].core.endpoint.scrub(text)
            raise PluginError(redact(scrubbed, _secrets(given))) from None


def _with_stack_key(
    olds: Mapping[str, PropertyValue],
    news: Mapping[str, PropertyValue],
    succeeded: tuple[bool, str | None] = (False, None),
) -> dict[str, PropertyValue]:
    """``news`` (a provider's inputs) with its stack instance: the key (and instance) its
    state holds; none for one whose state was written before keys (its stack keeps matching
    on names alone: a new key would be a diff of the provider). A provider with no state yet
    takes the instance of the one it succeeds (``succeeded``: found, instance), else a new
    key and its instance."""
    checked = {k: v for k, v in news.items() if k not in (STACK_KEY, STACK_INSTANCE)}
    if olds:
        _came_back(olds)
        if STACK_KEY in olds:
            checked[STACK_KEY] = olds[STACK_KEY].with_secret(True)
        if STACK_INSTANCE in olds:
            checked[STACK_INSTANCE] = olds[STACK_INSTANCE]
        return checked
    found, instance = succeeded
    if found:
        forget_new_instance(instance)
        if instance is not None:
            checked[STACK_INSTANCE] = PropertyValue(instance)
        return checked
    key = secrets.token_hex(32)
    record_new_instance(instance_of(key))  # no job carries it: a create need not look (rule 4)
    checked[STACK_KEY] = PropertyValue(key).with_secret(True)
    checked[STACK_INSTANCE] = PropertyValue(instance_of(key))
    return checked


def _came_back(olds: Mapping[str, PropertyValue]) -> None:
    """The stack instance of a provider state (``olds``) is known beyond this process now:
    its creates look for their jobs again (``forget_new_instance``)."""
    key, instance = (plain(olds[k]) if k in olds else None for k in (STACK_KEY, STACK_INSTANCE))
    forget_new_instance(instance)
    if isinstance(key, str) and key:
        forget_new_instance(instance_of(key))


def _input_names(kind: _Kind) -> frozenset[str]:
    return _INPUT_NAMES[kind.token]


def _schema_inputs() -> dict[str, frozenset[str]]:
    resources = json.loads(load_schema())["resources"]
    return {token: frozenset(r["inputProperties"]) for token, r in resources.items()}


def _schema_outputs() -> dict[str, tuple[str, ...]]:
    """Each resource's outputs that are not inputs: unknown at a create's preview unless known."""
    resources = json.loads(load_schema())["resources"]
    return {
        token: tuple(sorted(set(r["properties"]) - set(r["inputProperties"])))
        for token, r in resources.items()
    }


_INPUT_NAMES = _schema_inputs()
_OUTPUT_NAMES = _schema_outputs()
_CONFIG_NAMES = frozenset(json.loads(load_schema())["config"]["variables"])


def _secrets(values: Mapping[str, PropertyValue]) -> list[str]:
    return [text for value in values.values() for text in secret_texts(value)]


def _knob_type_failures(props: Mapping[str, Any]) -> Iterator[CheckFailure]:
    """The knobs the core reads by type: a YAML program may give any type."""
    timeout = props.get("waitTimeout")
    if isinstance(timeout, float) and not math.isfinite(timeout):
        yield CheckFailure("waitTimeout", "must be a finite duration")
    triggers = props.get("triggers")
    if triggers is not None and not is_unknown(triggers) and not isinstance(triggers, list):
        yield CheckFailure("triggers", "must be a list")
    _, placement_failure = placement_input(props)
    if placement_failure is not None:
        yield CheckFailure(*placement_failure)


def _with_secret_env(props: dict[str, PropertyValue]) -> dict[str, PropertyValue]:
    """An imported job's env values, marked secret (the API returns them in plain text)."""

    def walk(value: PropertyValue, key: str | None) -> PropertyValue:
        inner = value.value
        if key == "env" and isinstance(inner, tuple):
            return PropertyValue([_secret_value(item) for item in inner])
        if isinstance(inner, Mapping):
            return PropertyValue({k: walk(v, k) for k, v in inner.items()})
        if isinstance(inner, tuple):
            return PropertyValue([walk(v, None) for v in inner])
        return value

    return {k: walk(v, k) for k, v in props.items()}


def _secret_value(var: PropertyValue) -> PropertyValue:
    inner = var.value
    if not isinstance(inner, Mapping) or "value" not in inner:
        return var
    return PropertyValue(
        {k: (v.with_secret(True) if k == "value" else v) for k, v in inner.items()}
    )


def _changes(
    olds: Mapping[str, Any], news: Mapping[str, Any], names: frozenset[str], ignored: list[str]
) -> Iterator[tuple[str, str]]:
    """(path, ``add``|``delete``|``update``) of each leaf that differs, in the user's terms."""
    for key in sorted(names):
        if key in ignored:
            continue
        old, new = olds.get(key), news.get(key)
        if old == new and not contains_unknown(new):
            continue  # nothing under it differs: one comparison, not a walk of every leaf
        yield from _leaf_changes(key, old, new)


def _empty(value: Any) -> bool:
    return value is None or value == {} or value == []


def _leaf_changes(path: str, old: Any, new: Any) -> Iterator[tuple[str, str]]:
    if _empty(old) and _empty(new):
        return
    if contains_unknown(new):
        yield path, "update"
        return
    if _empty(old):
        yield path, "add"
        return
    if _empty(new):
        yield path, "delete"
        return
    old, new = decode_spec(old), decode_spec(new)
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new)):
            yield from _leaf_changes(f"{path}.{key}", old.get(key), new.get(key))
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            yield from _leaf_changes(f"{path}[{index}]", a, b)
    elif old != new:
        yield path, "update"


def _top(path: str) -> str:
    cut = min((i for i in (path.find("."), path.find("[")) if i >= 0), default=len(path))
    return path[:cut]


_KINDS = {
    ("add", False): PropertyDiffKind.ADD,
    ("add", True): PropertyDiffKind.ADD_REPLACE,
    ("delete", False): PropertyDiffKind.DELETE,
    ("delete", True): PropertyDiffKind.DELETE_REPLACE,
    ("update", False): PropertyDiffKind.UPDATE,
    ("update", True): PropertyDiffKind.UPDATE_REPLACE,
}


def _diff_kind(change: str, replaces: bool) -> PropertyDiffKind:
    return _KINDS[(change, replaces)]


def _is_replace(diff: PropertyDiff) -> bool:
    return diff.kind in (
        PropertyDiffKind.ADD_REPLACE,
        PropertyDiffKind.DELETE_REPLACE,
        PropertyDiffKind.UPDATE_REPLACE,
    )
