"""Conversion between ``JobSpec`` and ``google.cloud.aiplatform_v1.CustomJob``.

This module imports the client library's types (about a second) when it is imported, so nothing
on the validation path imports it: the provider's ``create`` and ``python -m components convert``
import it on first use. ``validate_custom_job`` is what the emulator calls to check a job it was
sent with the project's validator.
"""

from __future__ import annotations

from typing import Any

from google.cloud import aiplatform_v1
from pydantic import ValidationError

from components._errors import SpecInvalidError
from components._spec import (
    ContainerSpec,
    DiskSpec,
    EncryptionSpec,
    EnvVar,
    JobSpec,
    MachineSpec,
    PythonPackageSpec,
    Scheduling,
    WorkerPoolSpec,
    violations_from_pydantic,
)
from components._validation import Target, validate
from components._violations import Violation
from components._wire import parse_job_name

__all__ = ["custom_job_spec_document", "from_custom_job", "to_custom_job", "validate_custom_job"]


def _env_to_proto(env: list[EnvVar]) -> list[Any]:
    return [aiplatform_v1.EnvVar(name=e.name, value=e.value) for e in env]


def _pool_to_proto(pool: WorkerPoolSpec) -> Any:
    proto = aiplatform_v1.WorkerPoolSpec()
    if pool.machine_spec is not None:
        spec = pool.machine_spec
        machine = aiplatform_v1.MachineSpec()
        if spec.machine_type:
            machine.machine_type = spec.machine_type
        if spec.accelerator_type:
            machine.accelerator_type = getattr(aiplatform_v1.AcceleratorType, spec.accelerator_type)
        machine.accelerator_count = spec.accelerator_count
        if spec.tpu_topology:
            machine.tpu_topology = spec.tpu_topology
        proto.machine_spec = machine
    if pool.replica_count is not None:
        proto.replica_count = pool.replica_count
    if pool.disk_spec is not None:
        proto.disk_spec = aiplatform_v1.DiskSpec(
            boot_disk_type=pool.disk_spec.boot_disk_type or "",
            boot_disk_size_gb=pool.disk_spec.boot_disk_size_gb or 0,
        )
    if pool.python_package_spec is not None:
        package = pool.python_package_spec
        proto.python_package_spec = aiplatform_v1.PythonPackageSpec(
            executor_image_uri=package.executor_image_uri or "",
            package_uris=package.package_uris,
            python_module=package.python_module or "",
            args=package.args,
            env=_env_to_proto(package.env),
        )
    if pool.container_spec is not None:
        container = pool.container_spec
        proto.container_spec = aiplatform_v1.ContainerSpec(
            image_uri=container.image_uri or "",
            command=container.command,
            args=container.args,
            env=_env_to_proto(container.env),
        )
    return proto


def to_custom_job(spec: JobSpec) -> Any:
    """Build the ``CustomJob`` that Vertex AI receives for this spec.

    Raises ``AttributeError`` for an accelerator or strategy name the API does not know, so
    callers validate first.
    """
    job_spec = aiplatform_v1.CustomJobSpec(
        worker_pool_specs=[_pool_to_proto(pool) for pool in spec.worker_pool_specs],
        service_account=spec.service_account or "",
        network=spec.network or "",
        reserved_ip_ranges=spec.reserved_ip_ranges,
        tensorboard=spec.tensorboard or "",
        enable_web_access=spec.enable_web_access,
        enable_dashboard_access=spec.enable_dashboard_access,
    )
    if spec.base_output_directory:
        job_spec.base_output_directory = aiplatform_v1.GcsDestination(
            output_uri_prefix=spec.base_output_directory
        )
    if spec.scheduling is not None:
        sched = spec.scheduling
        scheduling = aiplatform_v1.Scheduling(
            restart_job_on_worker_restart=sched.restart_job_on_worker_restart,
            disable_retries=sched.disable_retries,
        )
        if sched.timeout is not None:
            scheduling.timeout = sched.timeout
        if sched.max_wait_duration is not None:
            scheduling.max_wait_duration = sched.max_wait_duration
        if sched.strategy:
            scheduling.strategy = getattr(aiplatform_v1.Scheduling.Strategy, sched.strategy)
        job_spec.scheduling = scheduling
    job = aiplatform_v1.CustomJob(
        display_name=spec.display_name or "", job_spec=job_spec, labels=spec.labels
    )
    if spec.encryption_spec is not None:
        job.encryption_spec = aiplatform_v1.EncryptionSpec(
            kms_key_name=spec.encryption_spec.kms_key_name
        )
    return job


def _has(message: Any, field: str) -> bool:
    return field in message


def _env_from_proto(env: Any) -> list[EnvVar]:
    return [EnvVar(name=e.name, value=e.value) for e in env]


def _pool_from_proto(proto: Any) -> WorkerPoolSpec:
    machine = None
    if _has(proto, "machine_spec"):
        m = proto.machine_spec
        machine = MachineSpec(
            machine_type=m.machine_type or None,
            accelerator_type=m.accelerator_type.name if m.accelerator_type else None,
            accelerator_count=m.accelerator_count,
            tpu_topology=m.tpu_topology or None,
        )
    disk = None
    if _has(proto, "disk_spec"):
        disk = DiskSpec(
            boot_disk_type=proto.disk_spec.boot_disk_type or None,
            boot_disk_size_gb=proto.disk_spec.boot_disk_size_gb or None,
        )
    package = None
    if _has(proto, "python_package_spec"):
        p = proto.python_package_spec
        package = PythonPackageSpec(
            executor_image_uri=p.executor_image_uri or None,
            package_uris=list(p.package_uris),
            python_module=p.python_module or None,
            args=list(p.args),
            env=_env_from_proto(p.env),
        )
    container = None
    if _has(proto, "container_spec"):
        c = proto.container_spec
        container = ContainerSpec(
            image_uri=c.image_uri or None,
            command=list(c.command),
            args=list(c.args),
            env=_env_from_proto(c.env),
        )
    return WorkerPoolSpec(
        machine_spec=machine,
        replica_count=proto.replica_count or None,
        disk_spec=disk,
        python_package_spec=package,
        container_spec=container,
    )


def from_custom_job(job: Any, *, project: str | None = None, region: str | None = None) -> JobSpec:
    """Read a ``CustomJob`` back into a spec (output-only fields are not part of a spec).

    Project and region default to the job name's. Raises ``SpecInvalidError`` for a job no
    spec can hold (e.g. a NUL byte in a field).
    """
    place = parse_job_name(job.name or "")
    if place is not None:
        project, region = project or place[0], region or place[1]
    try:
        return _spec_from_proto(job, project, region)
    except ValidationError as exc:
        raise SpecInvalidError(violations_from_pydantic(exc)) from None


def _scheduling_from_proto(spec: Any) -> Scheduling | None:
    if not _has(spec, "scheduling"):
        return None
    s = spec.scheduling
    return Scheduling(
        timeout=s.timeout if _has(s, "timeout") else None,
        restart_job_on_worker_restart=s.restart_job_on_worker_restart,
        disable_retries=s.disable_retries,
        strategy=s.strategy.name if s.strategy else None,
        max_wait_duration=s.max_wait_duration if _has(s, "max_wait_duration") else None,
    )


def _spec_from_proto(job: Any, project: str | None, region: str | None) -> JobSpec:
    spec = job.job_spec
    return JobSpec(
        project=project,
        region=region,
        display_name=job.display_name or None,
        labels=dict(job.labels),
        worker_pool_specs=[_pool_from_proto(p) for p in spec.worker_pool_specs],
        scheduling=_scheduling_from_proto(spec),
        service_account=spec.service_account or None,
        network=spec.network or None,
        reserved_ip_ranges=list(spec.reserved_ip_ranges),
        base_output_directory=(
            spec.base_output_directory.output_uri_prefix or None
            if _has(spec, "base_output_directory")
            else None
        ),
        tensorboard=spec.tensorboard or None,
        enable_web_access=spec.enable_web_access,
        enable_dashboard_access=spec.enable_dashboard_access,
        encryption_spec=(
            EncryptionSpec(kms_key_name=job.encryption_spec.kms_key_name)
            if _has(job, "encryption_spec") and job.encryption_spec.kms_key_name
            else None
        ),
    )


def validate_custom_job(
    job: Any, *, project: str, region: str, target: Target = "local"
) -> list[Violation]:
    """The project's validator on a ``CustomJob`` as a client sent it: every violation found.

    A job no spec can hold gives the reasons of ``from_custom_job`` as violations.
    """
    try:
        spec = from_custom_job(job, project=project, region=region)
    except SpecInvalidError as exc:
        return list(exc.violations)
    return validate(spec, region=region, target=target)


def custom_job_spec_document(spec: JobSpec) -> dict[str, Any]:
    """The ``CustomJobSpec`` part as the camelCase mapping ``gcloud --config`` reads."""
    job = to_custom_job(spec)
    document = aiplatform_v1.CustomJobSpec.to_dict(
        job.job_spec, use_integers_for_enums=False, preserving_proto_field_name=False
    )
    cleaned: dict[str, Any] = _drop_empty(document)
    return cleaned


_UNSET: tuple[object, ...] = (
    "",
    0,
    "0",
    False,
    [],
    {},
    None,
    "ACCELERATOR_TYPE_UNSPECIFIED",
    "STRATEGY_UNSPECIFIED",
)
# proto JSON writes int64 as strings; YAML readers expect a number.
_INT64_FIELDS = frozenset({"replicaCount"})


def _drop_empty(value: Any) -> Any:
    if isinstance(value, dict):
        cleaned = {
            k: int(v) if k in _INT64_FIELDS and isinstance(v, str) else _drop_empty(v)
            for k, v in value.items()
        }
        return {k: v for k, v in cleaned.items() if not any(v is u or v == u for u in _UNSET)}
    if isinstance(value, list):
        return [_drop_empty(v) for v in value]
    return value
