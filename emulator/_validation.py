"""Server-side validation of a CustomJob (or a HyperparameterTuningJob) at create time.

Layers, all answered as 400 INVALID_ARGUMENT:

1. Vertex's own basic rules, enforced here whatever else is installed (display name, worker pools,
   replica counts, one task kind per pool, accelerator type/count pairing, label syntax, ...), and
   the emulator's rules for every string that becomes a process argument or environment variable
   (no NUL, a module name that is one, a container image that is not a docker flag).
2. (In ``server``: package and output paths, which need the service's settings.)
3. The project's validator (``components.vertex.convert.validate_custom_job``), imported on the
   first create that uses it (``--no-project-validation`` skips it). A crash in it is answered as
   a 400 naming the validator, never as a 500.

A HyperparameterTuningJob's trials are CustomJobs made from its ``trial_job_spec``: the same
rules run on that CustomJob (:func:`emulator.tuning.custom_job_view`), with field paths named as
in the tuning job, beside the rules of its study spec (:func:`emulator.studyspec.study_violations`).

Messages never contain environment variable values: every value of every pool's ``env`` is
replaced by ``<redacted>`` before a message leaves this module.
"""

from __future__ import annotations

import logging
import re
import traceback
from typing import Any, TypeAlias

from google.cloud.aiplatform_v1 import types as aip

from components._redaction import redact as shared_redact
from emulator import errors
from emulator.studyspec import study_violations

__all__ = [
    "check_project_rules",
    "check_service_rules",
    "check_tuning_service_rules",
    "env_values",
    "redact",
]

log = logging.getLogger("emulator.validation")

# Used with fullmatch: `$` would also match before a trailing newline.
_LABEL_KEY = re.compile(r"[a-z][a-z0-9_-]{0,62}")
_LABEL_VALUE = re.compile(r"[a-z0-9_-]{0,63}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A docker image reference as `docker run` takes it; above all it must not start with '-', or
# docker would read it as one of its own flags.
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]*")
MAX_POOLS = 4
_ACCELERATOR_NUMBERS = frozenset(int(v) for v in aip.AcceleratorType.__members__.values())
_RESERVATION_NUMBERS = frozenset(int(v) for v in aip.ReservationAffinity.Type.__members__.values())
_STRATEGY_NUMBERS = frozenset(int(v) for v in aip.Scheduling.Strategy.__members__.values())
MAX_DISPLAY_NAME = 128
MAX_LABELS = 64
MAX_MODULE_NAME = 1000

# (field path, message) pairs, in the order the rules are checked.
_Found: TypeAlias = list[tuple[str, str]]


def _pool_is_empty(pool: Any) -> bool:
    # Vertex lets pools 1-3 be `{}` placeholders so that evaluators can sit in pool 3.
    return bool(pool.ByteSize() == 0)


def vertex_rule_violations(job: Any) -> list[tuple[str, str]]:
    """(field path, message) for each of Vertex's basic rules that ``job`` breaks."""
    spec = job.job_spec
    pools = list(spec.worker_pool_specs)
    found = _display_name_violations(job) + _label_violations(job) + _pool_list_violations(pools)
    for i, pool in enumerate(pools):
        found.extend(_pool_violations(i, pool))
    return found + _job_spec_violations(spec)


def _display_name_violations(job: Any) -> _Found:
    if not job.display_name.strip():
        return [("custom_job.display_name", "Required field is not set")]
    if len(job.display_name) > MAX_DISPLAY_NAME:
        return [
            (
                "custom_job.display_name",
                f"The display name may have at most {MAX_DISPLAY_NAME} characters",
            )
        ]
    return []


def _label_violations(job: Any) -> _Found:
    found: _Found = []
    if len(job.labels) > MAX_LABELS:
        found.append(("custom_job.labels", f"At most {MAX_LABELS} labels are allowed"))
    for key, value in job.labels.items():
        if not _LABEL_KEY.fullmatch(key):
            found.append(
                (
                    f"custom_job.labels[{key!r}]",
                    "label keys must start with a lowercase letter and contain only lowercase "
                    "letters, digits, '_' or '-' (at most 63 characters)",
                )
            )
        elif not _LABEL_VALUE.fullmatch(value):
            found.append(
                (
                    f"custom_job.labels[{key!r}]",
                    "label values may contain only lowercase letters, digits, '_' or '-' "
                    "(at most 63 characters)",
                )
            )
    return found


def _pool_list_violations(pools: list[Any]) -> _Found:
    found: _Found = []
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
    return found


def _pool_violations(i: int, pool: Any) -> _Found:
    path = f"custom_job.job_spec.worker_pool_specs[{i}]"
    if _pool_is_empty(pool):
        if i == 0:
            return [(path, "The first worker pool (the chief) must not be empty")]
        return []
    found: _Found = []
    if i == 0 and pool.replica_count != 1:
        found.append((f"{path}.replica_count", "The first worker pool must have exactly 1 replica"))
    elif pool.replica_count < 1:
        found.append((f"{path}.replica_count", "replica_count must be at least 1"))
    return found + _task_violations(path, pool) + _machine_violations(path, pool.machine_spec)


def _task_violations(path: str, pool: Any) -> _Found:
    task = pool.WhichOneof("task")
    if task is None:
        return [(path, "Exactly one of container_spec or python_package_spec must be set")]
    found: _Found = []
    if task == "python_package_spec":
        pps = pool.python_package_spec
        base = f"{path}.python_package_spec"
        for name in ("executor_image_uri", "package_uris", "python_module"):
            if not getattr(pps, name):
                found.append((f"{base}.{name}", "Required field is not set"))
        return found + _env_violations(pps.env, f"{base}.env")
    cs = pool.container_spec
    if not cs.image_uri:
        found.append((f"{path}.container_spec.image_uri", "Required field is not set"))
    return found + _env_violations(cs.env, f"{path}.container_spec.env")


def _machine_violations(path: str, ms: Any) -> _Found:
    found: _Found = []
    if not ms.machine_type:
        found.append((f"{path}.machine_spec.machine_type", "Required field is not set"))
    if ms.accelerator_type not in _ACCELERATOR_NUMBERS:
        # JSON may carry any number for an enum; the protobuf runtime keeps unknown ones.
        found.append(
            (
                f"{path}.machine_spec.accelerator_type",
                f"unknown accelerator type {ms.accelerator_type}",
            )
        )
    if ms.reservation_affinity.reservation_affinity_type not in _RESERVATION_NUMBERS:
        found.append(
            (
                f"{path}.machine_spec.reservation_affinity.reservation_affinity_type",
                "unknown reservation affinity type "
                f"{ms.reservation_affinity.reservation_affinity_type}",
            )
        )
    has_type = ms.accelerator_type != aip.AcceleratorType.ACCELERATOR_TYPE_UNSPECIFIED
    if has_type != (ms.accelerator_count > 0):
        found.append(
            (
                f"{path}.machine_spec",
                "Both accelerator_type and accelerator_count should be specified or none",
            )
        )
    return found


def _job_spec_violations(spec: Any) -> _Found:
    found: _Found = []
    if spec.scheduling.timeout.seconds < 0 or spec.scheduling.timeout.nanos < 0:
        found.append(("custom_job.job_spec.scheduling.timeout", "timeout must not be negative"))
    if spec.scheduling.strategy not in _STRATEGY_NUMBERS:
        found.append(
            (
                "custom_job.job_spec.scheduling.strategy",
                f"unknown scheduling strategy {spec.scheduling.strategy}",
            )
        )
    prefix = spec.base_output_directory.output_uri_prefix
    if spec.HasField("base_output_directory") and not prefix.startswith("gs://"):
        found.append(
            (
                "custom_job.job_spec.base_output_directory.output_uri_prefix",
                "must be a Cloud Storage URI (gs://bucket/path)",
            )
        )
    return found


def _nul(value: str) -> bool:
    return "\x00" in value


def process_rule_violations(job: Any) -> list[tuple[str, str]]:
    """(field path, message) for each string that could not reach a replica's process as sent.

    Arguments and environment values cannot hold NUL (the OS call would fail when the job runs);
    a python_module must be a dotted module name (it follows ``python -m``); a container image
    must look like an image reference (it follows ``docker run`` flags). Messages never quote an
    environment value.
    """
    found: _Found = []
    for i, pool in enumerate(job.job_spec.worker_pool_specs):
        path = f"custom_job.job_spec.worker_pool_specs[{i}]"
        task = pool.WhichOneof("task")
        if task == "python_package_spec":
            found.extend(_python_process_violations(f"{path}.python_package_spec", pool))
        elif task == "container_spec":
            found.extend(_container_process_violations(f"{path}.container_spec", pool))
    return found


def _python_process_violations(base: str, pool: Any) -> _Found:
    pps = pool.python_package_spec
    found: _Found = []
    module = pps.python_module
    if module and (
        len(module) > MAX_MODULE_NAME or not all(part.isidentifier() for part in module.split("."))
    ):
        found.append((f"{base}.python_module", "must be a Python module name such as trainer.task"))
    found.extend(_list_violations(pps.args, f"{base}.args"))
    found.extend(_env_value_violations(pps.env, f"{base}.env"))
    return found


def _container_process_violations(base: str, pool: Any) -> _Found:
    cs = pool.container_spec
    found: _Found = []
    if cs.image_uri and not _IMAGE.fullmatch(cs.image_uri):
        found.append(
            (
                f"{base}.image_uri",
                "must be a container image reference such as "
                "us-docker.pkg.dev/project/repo/image:tag",
            )
        )
    found.extend(_list_violations(cs.command, f"{base}.command"))
    found.extend(_list_violations(cs.args, f"{base}.args"))
    found.extend(_env_value_violations(cs.env, f"{base}.env"))
    return found


def _list_violations(values: Any, path: str) -> list[tuple[str, str]]:
    return [
        (f"{path}[{j}]", "must not contain a NUL character")
        for j, value in enumerate(values)
        if _nul(value)
    ]


def _env_value_violations(env: Any, path: str) -> list[tuple[str, str]]:
    return [
        (f"{path}[{j}].value", "must not contain a NUL character")
        for j, var in enumerate(env)
        if _nul(var.value)
    ]


def _env_violations(env: Any, path: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    for j, var in enumerate(env):
        if not _ENV_NAME.fullmatch(var.name):
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
    """``message`` without the job's env values: the one redaction the provider uses too
    (``components._redaction``: whole values, escaped forms, each line of a value of several)."""
    return shared_redact(message, secrets)


def project_violations(job: Any, project: str, region: str) -> list[str]:
    """The errors the project's validator finds in ``job`` (warnings do not reject a create).

    ``components.vertex.convert.validate_custom_job`` with the ``"local"`` rules: the emulator
    runs packages from local paths, which Vertex itself would refuse.
    """
    from components.vertex.convert import validate_custom_job

    found = validate_custom_job(
        aip.CustomJob.wrap(job), project=project, region=region, target="local"
    )
    return [str(v) for v in found if v.severity != "warning"]


def _raise_if_any(job: Any, problems: list[str]) -> None:
    if problems:
        listed = " ".join(f"{i}.{p}" for i, p in enumerate(problems, start=1))
        raise errors.invalid_argument(redact(f"List of found errors: {listed}", env_values(job)))


def check_service_rules(job: Any) -> None:
    """Raise 400 INVALID_ARGUMENT listing every Vertex and process rule ``job`` breaks."""
    found = vertex_rule_violations(job) + process_rule_violations(job)
    _raise_if_any(job, [f"Field: {path}; Message: {msg}." for path, msg in found])


def _as_tuning_path(path: str) -> str:
    """A field path of a trial's CustomJob as the tuning job names the field."""
    if path.startswith("custom_job.job_spec"):
        return "hyperparameter_tuning_job.trial_job_spec" + path[len("custom_job.job_spec") :]
    return "hyperparameter_tuning_job" + path[len("custom_job") :]


def check_tuning_service_rules(job: Any, view: Any) -> None:
    """Raise 400 INVALID_ARGUMENT listing every rule a tuning job breaks.

    ``view`` is the CustomJob its trials are made from: Vertex's and the process rules of
    CustomJobs run on it, then the study spec's rules on ``job``.
    """
    found = [
        (_as_tuning_path(path), msg)
        for path, msg in vertex_rule_violations(view) + process_rule_violations(view)
    ]
    found += study_violations(job)
    _raise_if_any(view, [f"Field: {path}; Message: {msg}." for path, msg in found])


def check_project_rules(job: Any, *, project: str, region: str) -> None:
    """Raise 400 INVALID_ARGUMENT listing the project validator's errors about ``job``.

    The validator is the project's code, run on whatever a client sent: if it crashes, the job is
    refused with a message naming the crash (logged with its traceback), not answered with a 500.
    """
    try:
        found = project_violations(job, project, region)
    except Exception as exc:
        # The traceback may quote the job (environment values included): redacted like messages.
        trace = redact(traceback.format_exc(), env_values(job))
        log.error("the project's validator failed on a create request:\n%s", trace)
        found = [
            f"the project's validator (components.validate) could not check this job "
            f"({type(exc).__name__}); start the emulator with --no-project-validation to skip it"
        ]
    _raise_if_any(job, [f"Message: {v}." for v in found])
