"""Server-side validation of a CustomJob at create time.

Two layers, both answered as 400 INVALID_ARGUMENT:

1. Vertex's own basic rules, enforced here whatever else is installed (display name, worker pools,
   replica counts, one task kind per pool, accelerator type/count pairing, label syntax, ...).
2. The project's validator (``components.JobSpec`` + ``components.validate``), imported lazily so
   the service starts and works even when that package is absent or older than the contract.

Messages never contain environment variable values: every value of every pool's ``env`` is
replaced by ``<redacted>`` before a message leaves this module.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
import re
from typing import Any

from google.cloud.aiplatform_v1 import types as aip

from emulator import errors

log = logging.getLogger("emulator.validation")

_LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_POOLS = 4


def _pool_is_empty(pool: Any) -> bool:
    # Vertex lets pools 1-3 be `{}` placeholders so that evaluators can sit in pool 3.
    return bool(pool.ByteSize() == 0)


def vertex_rule_violations(job: Any) -> list[tuple[str, str]]:
    """(field path, message) for each of Vertex's basic rules that ``job`` breaks."""
    found: list[tuple[str, str]] = []
    if not job.display_name.strip():
        found.append(("custom_job.display_name", "Required field is not set"))
    for key, value in job.labels.items():
        if not _LABEL_KEY.match(key):
            found.append(
                (
                    f"custom_job.labels[{key!r}]",
                    "label keys must start with a lowercase letter and contain only lowercase "
                    "letters, digits, '_' or '-' (at most 63 characters)",
                )
            )
        elif not _LABEL_VALUE.match(value):
            found.append(
                (
                    f"custom_job.labels[{key!r}]",
                    "label values may contain only lowercase letters, digits, '_' or '-' "
                    "(at most 63 characters)",
                )
            )
    spec = job.job_spec
    pools = list(spec.worker_pool_specs)
    if not pools:
        found.append(
            ("custom_job.job_spec.worker_pool_specs", "At least one worker pool is required")
        )
    if len(pools) > MAX_POOLS:
        found.append(
            (
                "custom_job.job_spec.worker_pool_specs",
                f"At most {MAX_POOLS} worker pools are allowed",
            )
        )
    for i, pool in enumerate(pools):
        path = f"custom_job.job_spec.worker_pool_specs[{i}]"
        if _pool_is_empty(pool):
            if i == 0:
                found.append((path, "The first worker pool (the chief) must not be empty"))
            continue
        if i == 0 and pool.replica_count != 1:
            found.append(
                (f"{path}.replica_count", "The first worker pool must have exactly 1 replica")
            )
        elif pool.replica_count < 1:
            found.append((f"{path}.replica_count", "replica_count must be at least 1"))
        task = pool.WhichOneof("task")
        if task is None:
            found.append((path, "Exactly one of container_spec or python_package_spec must be set"))
        elif task == "python_package_spec":
            pps = pool.python_package_spec
            if not pps.executor_image_uri:
                found.append(
                    (f"{path}.python_package_spec.executor_image_uri", "Required field is not set")
                )
            if not pps.package_uris:
                found.append(
                    (f"{path}.python_package_spec.package_uris", "Required field is not set")
                )
            if not pps.python_module:
                found.append(
                    (f"{path}.python_package_spec.python_module", "Required field is not set")
                )
            found.extend(_env_violations(pps.env, f"{path}.python_package_spec.env"))
        else:
            cs = pool.container_spec
            if not cs.image_uri:
                found.append((f"{path}.container_spec.image_uri", "Required field is not set"))
            found.extend(_env_violations(cs.env, f"{path}.container_spec.env"))
        ms = pool.machine_spec
        if not ms.machine_type:
            found.append((f"{path}.machine_spec.machine_type", "Required field is not set"))
        has_type = ms.accelerator_type != aip.AcceleratorType.ACCELERATOR_TYPE_UNSPECIFIED
        if has_type != (ms.accelerator_count > 0):
            found.append(
                (
                    f"{path}.machine_spec",
                    "Both accelerator_type and accelerator_count should be specified or none",
                )
            )
    if spec.scheduling.timeout.seconds < 0:
        found.append(("custom_job.job_spec.scheduling.timeout", "timeout must not be negative"))
    prefix = spec.base_output_directory.output_uri_prefix
    if spec.HasField("base_output_directory") and not prefix.startswith("gs://"):
        found.append(
            (
                "custom_job.job_spec.base_output_directory.output_uri_prefix",
                "must be a Cloud Storage URI (gs://bucket/path)",
            )
        )
    return found


def _env_violations(env: Any, path: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    for j, var in enumerate(env):
        if not _ENV_NAME.match(var.name):
            found.append((f"{path}[{j}].name", "must be a valid environment variable name"))
        elif var.name in seen:
            found.append((f"{path}[{j}].name", f"duplicate environment variable {var.name}"))
        seen.add(var.name)
    return found


def env_values(job: Any) -> list[str]:
    """Every environment variable value of every pool: the strings that must never be echoed."""
    values: list[str] = []
    for pool in job.job_spec.worker_pool_specs:
        for var in list(pool.python_package_spec.env) + list(pool.container_spec.env):
            if var.value:
                values.append(var.value)
    return values


def redact(message: str, secrets: list[str]) -> str:
    """Replace each secret in ``message`` by ``<redacted>`` (longest first, so none leaks)."""
    for value in sorted(set(secrets), key=len, reverse=True):
        message = message.replace(value, "<redacted>")
    return message


def project_violations(job: Any, project: str, region: str) -> list[str]:
    """Violations found by the project's validator, or [] when it is not installed (yet).

    Contract: ``components.JobSpec.from_custom_job(custom_job, project=, region=)`` may raise
    ``components.SpecError`` (a ValueError); ``components.validate(spec)`` returns objects whose
    ``str()`` is ``"path: reason (suggestion)"``. Validators that take ``target`` are asked for
    the ``"local"`` rules, and violations whose ``severity`` is ``"warning"`` are ignored.
    """
    try:
        components = importlib.import_module("components")
    except ImportError:
        return []
    job_spec_cls = getattr(components, "JobSpec", None)
    validate = getattr(components, "validate", None)
    if job_spec_cls is None or validate is None:
        return []
    spec_error = getattr(components, "SpecError", ValueError)
    wrapped = aip.CustomJob.wrap(job)
    try:
        spec = job_spec_cls.from_custom_job(wrapped, project=project, region=region)
    except spec_error as exc:
        return [str(exc)]
    kwargs: dict[str, Any] = {}
    if _takes_target(validate):
        # The emulator runs packages from local paths, which Vertex itself would refuse.
        kwargs["target"] = "local"
    found = validate(spec, **kwargs)
    # Warnings do not make a spec invalid; only errors reject the create.
    return [str(v) for v in found if getattr(v, "severity", "error") != "warning"]


@functools.lru_cache(maxsize=4)
def _takes_target(validate: Any) -> bool:
    # inspect.signature costs ~2 ms: once per validator function, not once per request.
    return "target" in inspect.signature(validate).parameters


def check_create(job: Any, *, project: str, region: str, use_project_validator: bool) -> None:
    """Raise 400 INVALID_ARGUMENT listing every problem with ``job``; return when it is valid."""
    problems = [f"Field: {path}; Message: {msg}." for path, msg in vertex_rule_violations(job)]
    if not problems and use_project_validator:
        problems = [f"Message: {v}." for v in project_violations(job, project, region)]
    if problems:
        listed = " ".join(f"{i}.{p}" for i, p in enumerate(problems, start=1))
        raise errors.invalid_argument(redact(f"List of found errors: {listed}", env_values(job)))
