"""Between the plugin's properties (the v1 REST shape) and the lifecycle core's inputs.

A plugin resource's inputs are a Vertex job as the REST API writes it (``displayName``,
``labels``, ``jobSpec.workerPoolSpecs[…]``; a tuning job's ``studySpec``, ``trialJobSpec``...)
plus the knobs (``waitFor``, ``waitTimeout``...). The core (``components.core._jobs.JobCore``)
takes the dynamic resource's inputs: ``spec`` (JSON text), ``env_values``, ``project``,
``region``, ``wait_for``... ``core_inputs`` makes those from these; ``plugin_path`` puts a
core failure's property path back on the property the user wrote
(``workerPoolSpecs[0].machineSpec.acceleratorCount`` → ``jobSpec.workerPoolSpecs[0]…``).

The job's ``status`` (the core's one output mapping) is flat camelCase outputs here (``state``,
``createTime``, ``bestTrial``...): ``outputs_of_status`` and ``status_of_outputs``.

Nothing here imports ``pulumi`` or the Vertex client.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .._files import is_local_relative, local_path_resolved
from ..core._placement import PLACEMENT_STATUS_FIELDS, PlacementInputError, declared_placement
from ..lifecycle._check import CUSTOM_JOB_SPEC, TUNING_JOB_SPEC, SpecKind
from ..lifecycle._settings import PLUGIN_DOOR
from ..lifecycle._wire import (
    CONTINUE_LAST_RUN,
    DELETE_RECORD,
    ENV_VALUES,
    EXCLUSIVE_GPUS,
    KEEP_RECORD,
    PLACEMENT,
    PROJECT,
    REGION,
    RUN_KEY,
    SPEC,
    STATUS_FIELDS,
    TRIGGERS,
    TUNING_STATUS_FIELDS,
    UNKNOWN_VALUES,
    WAIT_FOR,
    WAIT_TIMEOUT,
    contains_unknown,
    copy_document,
    encode_spec,
    is_unknown,
)

__all__ = [
    "KNOBS",
    "NO_ENVIRONMENT",
    "PACKAGE",
    "PLACEMENT_KNOBS",
    "PROPERTY_KNOBS",
    "PROVIDER_TYPE",
    "REPLACING_KNOBS",
    "TRAINING",
    "TUNING",
    "PlacementInput",
    "Shape",
    "camel",
    "candidates_of",
    "core_inputs",
    "outputs_of_status",
    "placement_input",
    "plugin_path",
    "provider_defaults",
    "status_of_outputs",
]

KNOBS: dict[str, str] = {
    "project": PROJECT,
    "region": REGION,
    "triggers": TRIGGERS,
    "waitFor": WAIT_FOR,
    "waitTimeout": WAIT_TIMEOUT,
    "exclusiveGpus": EXCLUSIVE_GPUS,
    "keepRecordOnDelete": KEEP_RECORD,
    "deleteRecordOnDelete": DELETE_RECORD,
    "continueLastRun": CONTINUE_LAST_RUN,
}
"""Plugin property → core input, for everything that is not the job document itself."""

PLACEMENT_KNOBS = ("regions", "capacity")
"""The candidate regions and their capacity kinds: together the core's ``placement`` input
(``components.core._placement.declared_placement``, as ``TrainingJob(regions=,
capacity=)``); the core's diff decides whether a change moves the job."""

REPLACING_KNOBS = frozenset({"project", "region", "triggers"})
"""Knobs whose change is another job; the other knobs update without an API call (a change of
``regions`` replaces the job where the core's diff says so)."""

PROPERTY_KNOBS = frozenset({*KNOBS, *PLACEMENT_KNOBS})
"""Every property that is not the job document itself."""

_CORE_TO_PLUGIN = {core: plugin for plugin, core in KNOBS.items()} | {PLACEMENT: "regions"}

_CUSTOM_JOB_SPEC_FIELDS = frozenset(
    {
        "persistentResourceId",
        "workerPoolSpecs",
        "scheduling",
        "serviceAccount",
        "network",
        "reservedIpRanges",
        "pscInterfaceConfig",
        "baseOutputDirectory",
        "protectedArtifactLocationId",
        "tensorboard",
        "enableWebAccess",
        "enableDashboardAccess",
        "experiment",
        "experimentRun",
        "models",
    }
)
"""The fields of a v1 ``CustomJobSpec``: what sits under ``jobSpec`` in a CustomJob."""


@dataclass(frozen=True)
class Shape:
    """How one kind of plugin resource's properties become the core's spec document."""

    spec: SpecKind[Any]
    nested: str | None
    """The property holding the job spec the core takes flat (``jobSpec``), or None."""
    status_fields: tuple[str, ...]

    def document(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """The job document of ``props`` as the core's models read it."""
        document = {k: v for k, v in props.items() if k not in PROPERTY_KNOBS}
        if self.nested is None:
            return document
        inner = document.pop(self.nested, None)
        if isinstance(inner, Mapping):
            # A field given both inside and outside jobSpec is the model's to refuse.
            return {**document, **{k: v for k, v in inner.items() if k not in document}}
        if inner is not None:
            document[self.nested] = inner
        return document

    @property
    def output_names(self) -> frozenset[str]:
        """The resource's outputs that are not inputs (``outputs_of_status``'s names): what a
        stack policy sees beside the inputs, never part of the job's spec."""
        return frozenset(
            _OUTPUT_NAME.get(field, camel(field))
            for field in self.status_fields
            if field not in _BOOKKEEPING
        )

    def rest_document(self, flat: Mapping[str, Any]) -> dict[str, Any]:
        """A flat spec document (the core's) in the REST shape (``document``'s inverse)."""
        if self.nested is None:
            return dict(flat)
        inner = {k: v for k, v in flat.items() if k in _CUSTOM_JOB_SPEC_FIELDS}
        outer = {k: v for k, v in flat.items() if k not in _CUSTOM_JOB_SPEC_FIELDS}
        return {**outer, self.nested: inner} if inner else outer


TRAINING = Shape(CUSTOM_JOB_SPEC, "jobSpec", (*STATUS_FIELDS, *PLACEMENT_STATUS_FIELDS))
"""A ``TrainingJob``: a v1 CustomJob, whose spec sits under ``jobSpec``."""
TUNING = Shape(TUNING_JOB_SPEC, None, (*TUNING_STATUS_FIELDS, *PLACEMENT_STATUS_FIELDS))
"""A ``HyperparameterTuningJob``: the v1 shape is already the core's."""


def core_inputs(
    shape: Shape,
    props: Mapping[str, Any],
    *,
    project: str | None,
    region: str | None,
    display_name: str,
    run_key: str | None = None,
    base: Path | None = None,
) -> dict[str, Any]:
    """The core's inputs for a plugin resource's ``props`` (plain values, unknowns as the
    engine's UNKNOWN text): ``project``/``region`` default to the provider's, ``displayName``
    to ``display_name`` (the resource's name), and relative local ``packageUris`` made
    absolute against ``base`` (the program's directory), as the dynamic door resolves an
    inline spec's against its program's: the job runs where the user's path points, not
    where the emulator happens to run."""
    document = shape.document(props)
    document.setdefault("displayName", display_name)
    if base is not None:  # on a copy: ``props`` (the engine's values) stay as they are
        document = copy_document(document)
        _resolve_package_paths(document, shape.spec.pools_under, base)
    spec, env_values = shape.spec.split_env(document)
    inputs: dict[str, Any] = {SPEC: encode_spec(spec)}
    if env_values:
        inputs[ENV_VALUES] = env_values
    for plugin, core in KNOBS.items():
        if props.get(plugin) is not None:
            inputs[core] = props[plugin]
    if inputs.get(PROJECT) is None and project:
        inputs[PROJECT] = project
    if inputs.get(REGION) is None and region:
        inputs[REGION] = region
    placement, _ = placement_input(props)  # a bad one: the plugin's check names the field
    if placement:  # the first candidate is the job's region, as for TrainingJob(regions=)
        inputs[PLACEMENT] = placement
        inputs[REGION] = placement[0]["region"]
    if run_key:
        inputs[RUN_KEY] = run_key
    return inputs


def _resolve_package_paths(document: dict[str, Any], under: str | None, base: Path) -> None:
    """``document``'s relative local package paths made absolute against ``base``, in place.

    Unknown values (known at ``up``) stay as they are, and so does a path that cannot be
    resolved (a symlink loop): the core's check then names it (``does not exist``)."""
    target = document.get(under) if under else document
    pools = target.get("workerPoolSpecs") if isinstance(target, dict) else None
    for pool in pools if isinstance(pools, list) else ():
        package = pool.get("pythonPackageSpec") if isinstance(pool, dict) else None
        if not isinstance(package, dict) or not isinstance(
            uris := package.get("packageUris"), list
        ):
            continue
        resolved = []
        for uri in uris:
            if isinstance(uri, str) and uri and not is_unknown(uri) and is_local_relative(uri):
                with contextlib.suppress(OSError, RuntimeError, ValueError):
                    uri = local_path_resolved(base, uri)
            resolved.append(uri)
        package["packageUris"] = resolved


PROVIDER_TYPE = "pulumi:providers:gpu-training"
"""The type of the plugin's provider resource, in a URN and as the engine shows it."""
PACKAGE = "gpu-training"
"""The plugin's package: its resource types' prefix, the stack configuration namespace a
default provider takes its inputs from."""
_DEFAULT_PROVIDER = re.compile(r"^default(_\d+_\d+_\d+\S*)?$")
NO_ENVIRONMENT: Mapping[str, str] = MappingProxyType({})
"""No environment variables: what a reader of a saved preview or state is given unless its
caller hands it the environment the engine ran in (``os.environ``, at the command line)."""


def provider_defaults(
    provider_name: str | None,
    provider_inputs: Mapping[str, Any] | None,
    stack_config: Mapping[str, Any],
    environ: Mapping[str, str] = NO_ENVIRONMENT,
) -> dict[str, str]:
    """The ``project`` and ``region`` a plugin resource that sets neither runs in: its
    provider's inputs; a default provider (``default``, ``default_1_2_3``, or None: not known)
    is configured by the stack's ``gpu-training:project``/``gpu-training:region``, an
    explicit one by its own inputs; then, for either, the environment pulumi-gcp reads
    (``environ``: where the engine ran, as the plugin's ``read_place`` reads it for every
    provider; none by default). Unknown and secret values are left out."""
    default = provider_name is None or _DEFAULT_PROVIDER.match(provider_name) is not None
    found: dict[str, str] = {}
    for key in (PROJECT, REGION):
        value = (provider_inputs or {}).get(key)
        if value is None and default:
            value = stack_config.get(f"{PACKAGE}:{key}")
        if not value and (variable := PLUGIN_DOOR.place.from_environment(key, environ)):
            value = variable[1]
        if isinstance(value, str) and value and value not in UNKNOWN_VALUES | {"[secret]"}:
            found[key] = value
    return found


PlacementInput = tuple[list[dict[str, Any]] | None, tuple[str, str] | None]
"""(the core's ``placement`` input or None, the first bad field's (path, reason) or None)."""


def placement_input(props: Mapping[str, Any]) -> PlacementInput:
    """The core's ``placement`` input of ``regions`` and ``capacity``: None without
    ``regions`` (or while either is unknown: the core checks it once known), or with the
    first bad field (``regions[1].capacity[0]``, why) when they are malformed."""
    regions, capacity = props.get("regions"), props.get("capacity")
    if regions is None:
        failure = ("capacity", "needs regions (the candidate regions)") if capacity else None
        return None, failure
    if contains_unknown(regions) or contains_unknown(capacity):
        return None, None
    try:
        return declared_placement(regions, capacity), None
    except PlacementInputError as exc:
        return None, (exc.path, exc.reason)


def candidates_of(props: Mapping[str, Any]) -> Any:
    """A job resource's candidate regions as the core's ``placement``, whichever door wrote
    its inputs: the dynamic resources' ``placement`` input, or the plugin's ``regions`` and
    ``capacity`` (``placement_input``; None: one region, or not known yet), for
    ``parse_placement``. What the policy pack and the PR comment read of a job's placement."""
    return props.get(PLACEMENT) or placement_input(props)[0]


_HEAD = re.compile(r"^([A-Za-z_]\w*)(.*)$", re.S)
_ENV_VALUE = re.compile(r"^(?:\w+\.)?(workerPoolSpecs\[\d+\].*)$")


def plugin_path(shape: Shape, path: str) -> str:
    """A core failure's property path, on the plugin property it is about."""
    if path in _CORE_TO_PLUGIN:
        return _CORE_TO_PLUGIN[path]
    if path == ENV_VALUES:
        return shape.nested or "trialJobSpec"
    if path == SPEC:
        return shape.nested or "studySpec"
    match = _HEAD.match(path)
    if match is None or shape.nested is None:
        return path
    head = match.group(1)
    return f"{shape.nested}.{path}" if head in _CUSTOM_JOB_SPEC_FIELDS else path


@cache  # a few dozen names, each read and answered by every operation
def camel(snake: str) -> str:
    """``best_trial_model_dir`` → ``bestTrialModelDir``."""
    head, *rest = snake.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


_OUTPUT_NAME = {"job_name": "name"}
_BOOKKEEPING = frozenset({"run_hash"})
"""Status fields that are the core's bookkeeping (the run's label), not outputs here."""


def outputs_of_status(shape: Shape, status: Mapping[str, Any]) -> dict[str, Any]:
    """The core's ``status`` as the plugin's outputs (``job_name`` → ``name``, camelCase)."""
    outputs: dict[str, Any] = {}
    for field in shape.status_fields:
        if field in status and field not in _BOOKKEEPING:
            outputs[_OUTPUT_NAME.get(field, camel(field))] = _camel_keys(status[field])
    return outputs


def status_of_outputs(shape: Shape, outputs: Mapping[str, Any]) -> dict[str, Any]:
    """``outputs_of_status``'s inverse: the ``status`` the core reads back."""
    status: dict[str, Any] = {}
    for field in shape.status_fields:
        name = _OUTPUT_NAME.get(field, camel(field))
        if name in outputs:
            status[field] = _snake_keys(outputs[name])
    return status


def _camel_keys(value: Any) -> Any:
    # ``best_trial`` holds ``metric_id``, ``placement_attempts`` records with ``job_name`` and
    # ``stopped_by``: the nested snake_case keys of the status.
    if isinstance(value, Mapping) and "metric_id" in value:
        return {camel(k): v for k, v in value.items()}
    if isinstance(value, list):
        return [_record_keys(item, camel) for item in value]
    return value


_UPPER = re.compile(r"[A-Z]")


def _snake(name: str) -> str:
    return _UPPER.sub(lambda m: "_" + m.group(0).lower(), name)


def _snake_keys(value: Any) -> Any:
    if isinstance(value, Mapping) and "metricId" in value:
        return {("metric_id" if k == "metricId" else k): v for k, v in value.items()}
    if isinstance(value, list):
        return [_record_keys(item, _snake) for item in value]
    return value


def _record_keys(item: Any, name: Any) -> Any:
    return {name(k): v for k, v in item.items()} if isinstance(item, Mapping) else item
