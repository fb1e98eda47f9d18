"""The job spec model: a typed mirror of Vertex AI ``CustomJob`` (pydantic v2).

Field names follow ``google.cloud.aiplatform_v1`` in snake_case; inputs may use the
camelCase names of the REST API and ``gcloud`` config files as well. Names of machine
and accelerator types stay plain strings here: the validator, not the parser, tells the
user what is wrong with them and what to write instead.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from .._errors import SpecInvalidError
from ._violations import Violation, did_you_mean

__all__ = [
    "CUSTOM_JOB_OUTPUT_ONLY",
    "MAX_DURATION_SECONDS",
    "RESERVATION_AFFINITY_TYPES",
    "ContainerSpec",
    "CustomJobSpec",
    "DiskSpec",
    "DnsPeeringConfig",
    "Duration",
    "EncryptionSpec",
    "EnvList",
    "EnvVar",
    "Int32",
    "Int64",
    "JobSpec",
    "LustreMount",
    "MachineSpec",
    "NfsMount",
    "PscInterfaceConfig",
    "PythonPackageSpec",
    "ReservationAffinity",
    "Scheduling",
    "WorkerPoolSpec",
    "format_duration",
    "format_path",
    "parse_duration",
    "violations_from_pydantic",
]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)?\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


MAX_DURATION_SECONDS = 315_576_000_000
"""The longest duration a protobuf ``Duration`` holds (10,000 years)."""


def parse_duration(value: Any) -> Any:
    """Accept ``"3600s"``, ``"90m"``, ``"2h"``, ``"1d"``, seconds as a number, or a timedelta."""
    if isinstance(value, timedelta) or value is None:
        return value
    if isinstance(value, bool):
        raise ValueError("a duration, like '3600s' or '2h', not a boolean")
    seconds: float | None = None
    if isinstance(value, int | float):
        try:
            seconds = float(value)
        except OverflowError:  # an integer of hundreds of digits
            seconds = math.inf
    elif isinstance(value, str) and len(value) <= 64:
        match = _DURATION.match(value)
        if match:
            seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds is None:
        shown = repr(value) if len(repr(value)) <= 64 else f"{repr(value)[:60]}..."
        raise ValueError(f"a duration, like '3600s' or '2h', not {shown}")
    if not math.isfinite(seconds) or abs(seconds) > MAX_DURATION_SECONDS:
        raise ValueError(f"a duration of at most {MAX_DURATION_SECONDS:,} seconds (10,000 years)")
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """The proto JSON form of a duration: seconds with an ``s`` suffix."""
    seconds = value.total_seconds()
    return f"{int(seconds)}s" if seconds == int(seconds) else f"{seconds}s"


Duration = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]


Text = Annotated[str, StringConstraints(pattern=r"^[^\x00]*$")]
"""Text of a spec: a NUL byte is never part of a name, URI, path or argument (the OS and the
API refuse it far from where it was written). Checked by pydantic's core, at no Python cost."""

RequiredText = Annotated[str, StringConstraints(min_length=1, pattern=r"^[^\x00]*$")]
"""Text the API marks REQUIRED: present and not blank."""


def _one_text_is_a_list(value: Any) -> Any:
    # A mapping where texts belong stays a mapping: pydantic refuses it ("must be a list").
    return [value] if isinstance(value, str | int | float) else value


def _one_object_is_a_list(value: Any) -> Any:
    return [value] if isinstance(value, dict) else value


# gcloud's reading of YAML, for every list field of the spec: one value stands for a list of
# one (``args: --epochs=3``, ``workerPoolSpecs:`` given as a single mapping). A validator runs
# only on a field the input has, so lists cost nothing where they are written as lists.
Texts = Annotated[list[Text], BeforeValidator(_one_text_is_a_list)]
"""A list of texts, or one text standing for a list of one."""

Arguments = Annotated[
    list[Annotated[str, StringConstraints(pattern=r"^[^\x00]*$", strip_whitespace=False)]],
    BeforeValidator(_one_text_is_a_list),
]
"""A command or its arguments: each kept as written, blanks and newlines included (a YAML
block scalar's trailing newline is part of an ``sh -c`` script), which every other text of
a spec loses at its ends."""

_Item = TypeVar("_Item", bound=BaseModel)
Objects = Annotated[list[_Item], BeforeValidator(_one_object_is_a_list)]
"""A list of objects, or one mapping standing for a list of one."""


AUTOPACKAGE_ENV = "VERTEX_EMULATOR_AUTOPACKAGE"
"""The ``pythonPackageSpec`` environment variable holding gcloud's autopackaging build (JSON;
``components.formats.autopackage``): read and removed by the emulator, turned into the
``containerSpec`` gcloud submits by ``convert``; never seen by a trainer."""

CUSTOM_JOB_OUTPUT_ONLY = (
    "name",
    "state",
    "create_time",
    "start_time",
    "end_time",
    "update_time",
    "error",
    "web_access_uris",
    "satisfies_pzs",
    "satisfies_pzi",
)
"""Fields of ``CustomJob`` the API sets and returns, never what a request asks it to run."""


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
        str_strip_whitespace=True,
        defer_build=True,
    )


class EnvVar(_Model):
    """An environment variable of a replica (its value is treated as secret)."""

    name: Text
    value: Text = ""


def _env_list(value: Any) -> Any:
    # A mapping is the natural way to write env vars in Python and YAML; the API wants a list.
    # One ``{name: X, value: Y}`` is a single variable, as gcloud reads it, not two named so.
    if isinstance(value, dict) and "name" in value and set(value) <= {"name", "value"}:
        return [value]
    if isinstance(value, dict):
        return [{"name": str(k), "value": "" if v is None else str(v)} for k, v in value.items()]
    return value


EnvList = Annotated[list[EnvVar], BeforeValidator(_env_list)]


# Whole numbers as the API's protobuf fields hold them: a larger one cannot even be sent.
Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]


RESERVATION_AFFINITY_TYPES = ("NO_RESERVATION", "ANY_RESERVATION", "SPECIFIC_RESERVATION")
"""``ReservationAffinity.Type`` names (``TYPE_UNSPECIFIED`` is read as unset)."""


class ReservationAffinity(_Model):
    """Which Compute Engine reservations a pool's machines are taken from."""

    reservation_affinity_type: Text | None = None
    key: Text | None = None
    values: Texts = Field(default_factory=list)

    @field_validator("reservation_affinity_type")
    @classmethod
    def _known_type(cls, value: str | None) -> str | None:
        if value in (None, "", "TYPE_UNSPECIFIED"):
            return None
        if value in RESERVATION_AFFINITY_TYPES:
            return value
        allowed = ", ".join(RESERVATION_AFFINITY_TYPES)
        raise PydanticCustomError(
            "enum_choice",
            "must be one of {allowed}",
            {
                "allowed": allowed,
                "suggestion": did_you_mean(str(value), RESERVATION_AFFINITY_TYPES),
            },
        )


class MachineSpec(_Model):
    machine_type: Text | None = None
    accelerator_type: Text | None = None
    accelerator_count: Int32 = 0
    tpu_topology: Text | None = None
    gpu_partition_size: Text | None = None
    reservation_affinity: ReservationAffinity | None = None

    @field_validator(
        "accelerator_type", "machine_type", "tpu_topology", "gpu_partition_size", mode="before"
    )
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        if value == "" or value == "ACCELERATOR_TYPE_UNSPECIFIED":
            return None
        return value


class DiskSpec(_Model):
    boot_disk_type: Text | None = None
    boot_disk_size_gb: Int32 | None = None


class PythonPackageSpec(_Model):
    executor_image_uri: Text | None = None
    package_uris: Texts = Field(default_factory=list)
    python_module: Text | None = None
    args: Arguments = Field(default_factory=list)
    env: EnvList = Field(default_factory=list)


class ContainerSpec(_Model):
    image_uri: Text | None = None
    command: Arguments = Field(default_factory=list)
    args: Arguments = Field(default_factory=list)
    env: EnvList = Field(default_factory=list)


class NfsMount(_Model):
    """An NFS share mounted in every replica of a pool, under ``/mnt/nfs/<mount_point>``."""

    server: RequiredText
    path: RequiredText
    mount_point: RequiredText


class LustreMount(_Model):
    """A Managed Lustre instance mounted in every replica of a pool."""

    instance_ip: RequiredText
    volume_handle: RequiredText
    filesystem: RequiredText
    mount_point: RequiredText


class WorkerPoolSpec(_Model):
    """One worker pool: 0 chief, 1 workers, 2 parameter servers, 3 evaluators."""

    machine_spec: MachineSpec | None = None
    replica_count: Int64 | None = None
    disk_spec: DiskSpec | None = None
    python_package_spec: PythonPackageSpec | None = None
    container_spec: ContainerSpec | None = None
    nfs_mounts: Objects[NfsMount] = Field(default_factory=list)
    lustre_mounts: Objects[LustreMount] = Field(default_factory=list)

    @property
    def is_placeholder(self) -> bool:
        """An empty pool keeps the position of pools after it (e.g. no parameter servers)."""
        return (
            self.machine_spec is None
            and self.replica_count in (None, 0)
            and self.disk_spec is None
            and self.python_package_spec is None
            and self.container_spec is None
            and not self.nfs_mounts
            and not self.lustre_mounts
        )

    @property
    def replicas(self) -> int:
        """The replica count in effect (an omitted count means one replica)."""
        return 1 if self.replica_count is None else self.replica_count


class Scheduling(_Model):
    """How the job gets its machines; ``strategy`` is a ``Scheduling.Strategy`` name (ON_DEMAND,
    LOW_COST, STANDARD, SPOT, FLEX_START), checked by the validator."""

    timeout: Duration | None = None
    restart_job_on_worker_restart: bool = False
    disable_retries: bool = False
    strategy: Text | None = None
    max_wait_duration: Duration | None = None

    @field_validator("strategy", mode="before")
    @classmethod
    def _unspecified_is_unset(cls, value: Any) -> Any:
        return None if value in ("", "STRATEGY_UNSPECIFIED") else value


class EncryptionSpec(_Model):
    kms_key_name: Text


class DnsPeeringConfig(_Model):
    """DNS names resolved in another project's network, through a PSC interface."""

    domain: RequiredText
    target_project: RequiredText
    target_network: RequiredText


class PscInterfaceConfig(_Model):
    """Private Service Connect interface of the job (instead of VPC peering with ``network``)."""

    network_attachment: Text | None = None
    dns_peering_configs: Objects[DnsPeeringConfig] = Field(default_factory=list)


def _output_directory(value: Any) -> Any:
    # The API nests it as GcsDestination {outputUriPrefix}; a plain URI is what people write.
    if isinstance(value, dict) and set(value) <= {"outputUriPrefix", "output_uri_prefix"}:
        return value.get("outputUriPrefix", value.get("output_uri_prefix"))
    return value


def _label_values(value: Any) -> Any:
    # YAML reads `cost-center: 1234` as a number; a label value is always text.
    if isinstance(value, dict):
        return {
            k: str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
            for k, v in value.items()
        }
    return value


class CustomJobSpec(_Model):
    """The API's ``CustomJobSpec``: what a job runs (pools, scheduling, network, outputs...).

    A ``JobSpec`` is one with the job's own fields; a tuning job's trials run one as it is."""

    worker_pool_specs: Objects[WorkerPoolSpec] = Field(default_factory=list)
    scheduling: Scheduling | None = None
    service_account: Text | None = None
    network: Text | None = None
    reserved_ip_ranges: Texts = Field(default_factory=list)
    base_output_directory: Annotated[Text | None, BeforeValidator(_output_directory)] = None
    tensorboard: Text | None = None
    enable_web_access: bool = False
    enable_dashboard_access: bool = False
    persistent_resource_id: Text | None = None
    psc_interface_config: PscInterfaceConfig | None = None
    protected_artifact_location_id: Text | None = None
    experiment: Text | None = None
    experiment_run: Text | None = None
    models: Texts = Field(default_factory=list)


class JobSpec(CustomJobSpec):
    """A Vertex AI custom training job, plus the project and region it runs in."""

    project: Text | None = None
    region: Text | None = None
    display_name: Text | None = None
    labels: Annotated[dict[Text, Text], BeforeValidator(_label_values)] = Field(
        default_factory=dict
    )
    encryption_spec: EncryptionSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _flatten_custom_job(cls, data: Any) -> Any:
        """Accept a whole CustomJob (``displayName`` + ``jobSpec``) as well as a bare spec."""
        if isinstance(data, dict):
            job_spec = data.get("jobSpec", data.get("job_spec"))
            if isinstance(job_spec, dict):
                rest = {k: v for k, v in data.items() if k not in ("jobSpec", "job_spec")}
                clash = set(rest) & set(job_spec)
                if clash:
                    raise ValueError(f"{sorted(clash)} given both inside and outside jobSpec")
                return {**rest, **job_spec}
        return data

    @property
    def kms_key_name(self) -> str | None:
        return self.encryption_spec.kms_key_name if self.encryption_spec else None

    @property
    def accelerator_types(self) -> set[str]:
        """The GPU (or TPU) types the job's pools ask for; empty for a CPU-only job."""
        return {
            pool.machine_spec.accelerator_type
            for pool in self.worker_pool_specs
            if pool.machine_spec and pool.machine_spec.accelerator_type
        }

    @classmethod
    def parse(cls, data: Any) -> JobSpec:
        """Build a spec from a mapping; raises ``SpecInvalidError`` naming each bad field."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise SpecInvalidError(violations_from_pydantic(exc)) from None

    def to_document(self) -> dict[str, Any]:
        """The spec as camelCase JSON-ready data, with unset fields left out."""
        return self.model_dump(mode="json", exclude_none=True, exclude_defaults=True)


# --- pydantic errors as violations ----------------------------------------------------


def format_path(location: tuple[str | int, ...]) -> str:
    """``("workerPoolSpecs", 1, "machineSpec")`` → ``workerPoolSpecs[1].machineSpec``."""
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path or "(document)"


_FRIENDLY_TYPES = {
    "string_pattern_mismatch": "must not contain NUL bytes",
    "string_too_short": "must not be empty",
    "int_parsing": "must be a whole number",
    "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "finite_number": "must be a finite number",
    "string_type": "must be a string",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "missing": "is required",
}


def violations_from_pydantic(
    exc: ValidationError, root: type[BaseModel] | None = None
) -> list[Violation]:
    """One violation per pydantic error, with camelCase paths and no echo of input values.

    ``root`` is the model the paths start from (``JobSpec`` unless given): it names the known
    fields of an unknown one."""
    violations = []
    for error in exc.errors(include_url=False, include_input=False):
        location = tuple(p for p in error["loc"] if not (isinstance(p, str) and "[" in p))
        # Union members show up as extra location parts ("str", "function-before"...).
        location = tuple(
            p
            for p in location
            if p not in ("str", "int", "function-before[_env_list(), list[EnvVar]]")
        )
        kind = error["type"]
        suggestion = None
        if kind == "extra_forbidden":
            field_name = str(location[-1]) if location else ""
            parent = _model_at(location[:-1], root or JobSpec)
            known = sorted(_aliases(parent)) if parent else []
            reason = "is not a field of this object"
            suggestion = did_you_mean(
                field_name, known, otherwise=f"known fields: {', '.join(known)}"
            )
        elif kind == "enum_choice":
            reason = str(error["msg"])
            suggestion = (error.get("ctx") or {}).get("suggestion")
        elif kind in ("less_than_equal", "greater_than_equal"):
            bound = (error.get("ctx") or {}).get("le" if kind == "less_than_equal" else "ge")
            reason = f"must be {'at most' if kind == 'less_than_equal' else 'at least'} {bound}"
        else:
            reason = _FRIENDLY_TYPES.get(kind, str(error["msg"]).replace("Value error, ", ""))
        violations.append(Violation(format_path(location), reason, suggestion, rule="schema"))
    return violations


def _aliases(model: type[BaseModel]) -> set[str]:
    return {info.alias or name for name, info in model.model_fields.items()}


def _model_at(location: tuple[str | int, ...], root: type[BaseModel]) -> type[BaseModel] | None:
    """The model class that sits at a (camelCase) location under ``root``."""
    model: type[BaseModel] = root
    for part in location:
        if isinstance(part, int):
            continue
        field = next((f for n, f in model.model_fields.items() if part in (n, f.alias)), None)
        if field is None:
            return None
        inner = _model_class(field.annotation)
        if inner is None:
            return None
        model = inner
    return model


def _model_class(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_class(arg)
        if found is not None:
            return found
    return None
