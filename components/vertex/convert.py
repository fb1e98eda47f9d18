"""Conversion between ``JobSpec`` and ``google.cloud.aiplatform_v1.CustomJob``.

This module imports the client library's message types when it is imported, so nothing on
the validation path imports it: the provider's ``create`` and ``python -m components convert``
import it on first use; ``convert`` imports the types alone (``_library.types_only``), not the
library's clients. ``validate_custom_job`` runs the project's validator on a ``CustomJob``
message, e.g. one read back from the API.
"""

from __future__ import annotations

from typing import Any

# The message types only: with ``components.vertex._library.types_only()`` called first, the
# library's clients (its package ``__init__``) are never imported.
from google.cloud.aiplatform_v1 import types as aiplatform_v1
from pydantic import ValidationError
from pydantic.alias_generators import to_camel

from .._errors import SpecInvalidError
from ..lifecycle._wire import parse_job_name
from ..rules._spec import (
    EnvVar,
    JobSpec,
    MachineSpec,
    PscInterfaceConfig,
    Scheduling,
    WorkerPoolSpec,
    violations_from_pydantic,
)
from ..rules._validation import Target, validate
from ..rules._violations import Violation

__all__ = ["custom_job_spec_document", "from_custom_job", "to_custom_job", "validate_custom_job"]


def _env_to_proto(env: list[EnvVar]) -> list[Any]:
    return [aiplatform_v1.EnvVar(name=e.name, value=e.value) for e in env]


def _machine_to_proto(spec: MachineSpec) -> Any:
    machine = aiplatform_v1.MachineSpec()
    if spec.machine_type:
        machine.machine_type = spec.machine_type
    if spec.accelerator_type:
        machine.accelerator_type = getattr(aiplatform_v1.AcceleratorType, spec.accelerator_type)
    machine.accelerator_count = spec.accelerator_count
    if spec.tpu_topology:
        machine.tpu_topology = spec.tpu_topology
    if spec.gpu_partition_size:
        machine.gpu_partition_size = spec.gpu_partition_size
    if spec.reservation_affinity is not None:
        affinity = spec.reservation_affinity
        machine.reservation_affinity = aiplatform_v1.ReservationAffinity(
            reservation_affinity_type=getattr(
                aiplatform_v1.ReservationAffinity.Type,
                affinity.reservation_affinity_type or "TYPE_UNSPECIFIED",
            ),
            key=affinity.key or "",
            values=affinity.values,
        )
    return machine


def _mounts_to_proto(pool: WorkerPoolSpec, proto: Any) -> None:
    for nfs in pool.nfs_mounts:
        proto.nfs_mounts.append(
            aiplatform_v1.NfsMount(server=nfs.server, path=nfs.path, mount_point=nfs.mount_point)
        )
    for lustre in pool.lustre_mounts:
        proto.lustre_mounts.append(
            aiplatform_v1.LustreMount(
                instance_ip=lustre.instance_ip,
                volume_handle=lustre.volume_handle,
                filesystem=lustre.filesystem,
                mount_point=lustre.mount_point,
            )
        )


def _pool_to_proto(pool: WorkerPoolSpec) -> Any:
    proto = aiplatform_v1.WorkerPoolSpec()
    if pool.machine_spec is not None:
        proto.machine_spec = _machine_to_proto(pool.machine_spec)
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
    _mounts_to_proto(pool, proto)
    return proto


def _scheduling_to_proto(sched: Scheduling) -> Any:
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
    return scheduling


def _psc_to_proto(psc: PscInterfaceConfig) -> Any:
    return aiplatform_v1.PscInterfaceConfig(
        network_attachment=psc.network_attachment or "",
        dns_peering_configs=[
            aiplatform_v1.DnsPeeringConfig(
                domain=dns.domain,
                target_project=dns.target_project,
                target_network=dns.target_network,
            )
            for dns in psc.dns_peering_configs
        ],
    )


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
        persistent_resource_id=spec.persistent_resource_id or "",
        protected_artifact_location_id=spec.protected_artifact_location_id or "",
        experiment=spec.experiment or "",
        experiment_run=spec.experiment_run or "",
        models=spec.models,
    )
    if spec.base_output_directory:
        job_spec.base_output_directory = aiplatform_v1.GcsDestination(
            output_uri_prefix=spec.base_output_directory
        )
    if spec.scheduling is not None:
        job_spec.scheduling = _scheduling_to_proto(spec.scheduling)
    if spec.psc_interface_config is not None:
        job_spec.psc_interface_config = _psc_to_proto(spec.psc_interface_config)
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


def _env_from_proto(env: Any) -> list[dict[str, Any]]:
    return [dict(name=e.name, value=e.value) for e in env]


def _enum_name(value: Any) -> str | None:
    """An enum field's name; None when unset. A number the library does not know (JSON may carry
    any) is kept as its digits, so the validator names it rather than this code crashing."""
    if not value:
        return None
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else str(int(value))


def _machine_from_proto(m: Any) -> dict[str, Any]:
    affinity: dict[str, Any] | None = None
    if _has(m, "reservation_affinity"):
        a = m.reservation_affinity
        affinity = dict(
            reservation_affinity_type=_enum_name(a.reservation_affinity_type),
            key=a.key or None,
            values=list(a.values),
        )
    return dict(
        machine_type=m.machine_type or None,
        accelerator_type=_enum_name(m.accelerator_type),
        accelerator_count=m.accelerator_count,
        tpu_topology=m.tpu_topology or None,
        gpu_partition_size=m.gpu_partition_size or None,
        reservation_affinity=affinity,
    )


def _package_from_proto(p: Any) -> dict[str, Any]:
    return dict(
        executor_image_uri=p.executor_image_uri or None,
        package_uris=list(p.package_uris),
        python_module=p.python_module or None,
        args=list(p.args),
        env=_env_from_proto(p.env),
    )


def _container_from_proto(c: Any) -> dict[str, Any]:
    return dict(
        image_uri=c.image_uri or None,
        command=list(c.command),
        args=list(c.args),
        env=_env_from_proto(c.env),
    )


def _pool_from_proto(proto: Any) -> dict[str, Any]:
    disk: dict[str, Any] | None = None
    if _has(proto, "disk_spec"):
        disk = dict(
            boot_disk_type=proto.disk_spec.boot_disk_type or None,
            boot_disk_size_gb=proto.disk_spec.boot_disk_size_gb or None,
        )
    return dict(
        machine_spec=_machine_from_proto(proto.machine_spec)
        if _has(proto, "machine_spec")
        else None,
        replica_count=proto.replica_count or None,
        disk_spec=disk,
        python_package_spec=_package_from_proto(proto.python_package_spec)
        if _has(proto, "python_package_spec")
        else None,
        container_spec=_container_from_proto(proto.container_spec)
        if _has(proto, "container_spec")
        else None,
        nfs_mounts=[
            dict(server=n.server, path=n.path, mount_point=n.mount_point) for n in proto.nfs_mounts
        ],
        lustre_mounts=[
            dict(
                instance_ip=m.instance_ip,
                volume_handle=m.volume_handle,
                filesystem=m.filesystem,
                mount_point=m.mount_point,
            )
            for m in proto.lustre_mounts
        ],
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


def _scheduling_from_proto(spec: Any) -> dict[str, Any] | None:
    if not _has(spec, "scheduling"):
        return None
    s = spec.scheduling
    return dict(
        timeout=s.timeout if _has(s, "timeout") else None,
        restart_job_on_worker_restart=s.restart_job_on_worker_restart,
        disable_retries=s.disable_retries,
        strategy=_enum_name(s.strategy),
        max_wait_duration=s.max_wait_duration if _has(s, "max_wait_duration") else None,
    )


def _psc_from_proto(spec: Any) -> dict[str, Any] | None:
    if not _has(spec, "psc_interface_config"):
        return None
    psc = spec.psc_interface_config
    return dict(
        network_attachment=psc.network_attachment or None,
        dns_peering_configs=[
            dict(domain=d.domain, target_project=d.target_project, target_network=d.target_network)
            for d in psc.dns_peering_configs
        ],
    )


def _spec_from_proto(job: Any, project: str | None, region: str | None) -> JobSpec:
    spec = job.job_spec
    document = dict(
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
            dict(kms_key_name=job.encryption_spec.kms_key_name)
            if _has(job, "encryption_spec") and job.encryption_spec.kms_key_name
            else None
        ),
        persistent_resource_id=spec.persistent_resource_id or None,
        psc_interface_config=_psc_from_proto(spec),
        protected_artifact_location_id=spec.protected_artifact_location_id or None,
        experiment=spec.experiment or None,
        experiment_run=spec.experiment_run or None,
        models=list(spec.models),
    )
    # Validated as one camelCase document, so that a field no spec holds is named by its whole
    # path, as in any other spec.
    return JobSpec.model_validate(_camel_keys(document))


def _camel_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {to_camel(k): v if k == "labels" else _camel_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel_keys(v) for v in value]
    return value


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
    False,
    [],
    {},
    None,
    "ACCELERATOR_TYPE_UNSPECIFIED",
    "STRATEGY_UNSPECIFIED",
    "TYPE_UNSPECIFIED",
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
