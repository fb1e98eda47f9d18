"""Server-side checks of a CustomJob (or a HyperparameterTuningJob) at create time.

The emulator's own code, written from what Vertex AI documents; it imports nothing of the project
it serves. Every rule a job breaks is listed in one 400 INVALID_ARGUMENT, in Vertex AI's form
(:func:`emulator.errors.field_violations`), with field paths relative to the job
(``job_spec.worker_pool_specs[0].machine_spec.accelerator_type``):

1. Field behaviours of the v1 protos (:mod:`emulator.fieldbehavior`): output-only fields a client
   sends are ignored (cleared), required fields that are not set are refused.
2. Vertex AI's rules of a CustomJob: display name length, labels (:func:`label_violations`),
   worker pools (1 to 4, the first not empty and of one replica, one task kind per pool),
   accelerator type and count given together, enum numbers the API knows, a Cloud Storage output
   directory, a SPECIFIC_RESERVATION naming its reservation.
3. Hardware facts, read as data from the catalog CSVs (:mod:`emulator.hardware`): the machine type
   is one Vertex AI training offers, the accelerator type attaches to it in that count, the
   accelerator is not retired, a GPU partition size is one the GPU offers. Without the catalog
   files these checks are skipped.
4. The emulator's rules for every string that becomes a process argument or an environment
   variable here (no NUL, a module name that is one, a container image that is not a docker flag,
   environment variable names a shell can export).
5. (In ``server``: package and output paths, which need the service's settings.)

A HyperparameterTuningJob's trials are CustomJobs made from its ``trial_job_spec``: the same rules
run on that CustomJob (:func:`emulator.tuning.custom_job_view`), its fields named as in the tuning
job (``trial_job_spec.worker_pool_specs[0]...``), beside the rules of its study spec
(:func:`emulator.studyspec.study_violations`).

Messages never contain environment variable values: each is replaced by ``<redacted>``
(:mod:`emulator.redaction`) before a message leaves this module.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, TypeAlias

from google.cloud.aiplatform_v1 import types as aip

from . import errors
from .fieldbehavior import clear_output_only, missing_required
from .hardware import hardware
from .redaction import redact as _redact
from .studyspec import study_violations

__all__ = [
    "check_service_rules",
    "check_tuning_service_rules",
    "clear_output_only_fields",
    "env_values",
    "label_violations",
    "redact",
]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A docker image reference as `docker run` takes it; above all it must not start with '-', or
# docker would read it as one of its own flags.
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]*")
MAX_POOLS = 4
_ACCELERATOR_NUMBERS = frozenset(int(v) for v in aip.AcceleratorType.__members__.values())
_RESERVATION_NUMBERS = frozenset(int(v) for v in aip.ReservationAffinity.Type.__members__.values())
_STRATEGY_NUMBERS = frozenset(int(v) for v in aip.Scheduling.Strategy.__members__.values())
_SPECIFIC_RESERVATION = int(aip.ReservationAffinity.Type.SPECIFIC_RESERVATION)
MAX_DISPLAY_NAME = 128
MAX_MODULE_NAME = 1000

# Labels, as the v1 protos document ``CustomJob.labels`` and ``HyperparameterTuningJob.labels``:
# "Label keys and values can be no longer than 64 characters (Unicode codepoints), can only
# contain lowercase letters, numeric characters, underscores and dashes. International characters
# are allowed." (google/cloud/aiplatform/v1/custom_job.proto, hyperparameter_tuning_job.proto).
# The page that comment links (https://goo.gl/xmQnxf, "Requirements for labels", Resource Manager)
# adds: at most 64 labels per resource, keys not empty and starting with a lowercase letter or an
# international character, values may be empty. Google's Backup and DR API spells the same rule
# as [\p{Ll}\p{Lo}\p{N}_-] (https://googleapis.dev/dotnet/Google.Apis.Backupdr.v1/latest/api/
# Google.Apis.Backupdr.v1.Data.LabelKeyValPair.html). Here "international characters" are also
# the modifier letters (Lm: the Japanese prolonged sound mark of チーム) and the combining marks
# (Mn, Mc: the vowel signs of Devanagari) that words of those scripts are written with; what is
# refused is an uppercase or titlecase letter (Lu, Lt), punctuation, symbols and spaces.
MAX_LABELS = 64
MAX_LABEL_LENGTH = 64

# (field path, message) pairs, in the order the rules are checked.
_Found: TypeAlias = list[tuple[str, str]]


_LABEL_LETTERS = ("Ll", "Lo", "Lm")
_LABEL_MARKS = ("Mn", "Mc")


def _label_char(ch: str) -> bool:
    category = unicodedata.category(ch)
    return ch in "_-" or category in _LABEL_LETTERS + _LABEL_MARKS or category[0] == "N"


def _label_start(ch: str) -> bool:
    return unicodedata.category(ch) in _LABEL_LETTERS


def label_violations(labels: Any) -> _Found:
    """(field path, message) for each label rule ``labels`` (a str -> str mapping) breaks."""
    found: _Found = []
    if len(labels) > MAX_LABELS:
        found.append(("labels", f"At most {MAX_LABELS} labels are allowed; got {len(labels)}."))
    chars = "lowercase letters, international characters, digits, '_' or '-'"
    for key, value in labels.items():
        shown = key if len(key) <= 80 else key[:80] + "..."
        if not key or not _label_start(key[0]) or not all(map(_label_char, key)):
            found.append(
                (
                    "labels",
                    f"Label key {shown!r}: label keys must start with a lowercase letter or an "
                    f"international character and contain only {chars}.",
                )
            )
        elif len(key) > MAX_LABEL_LENGTH:
            found.append(
                (
                    "labels",
                    f"Label key {shown!r}: label keys can be no longer than "
                    f"{MAX_LABEL_LENGTH} characters.",
                )
            )
        elif len(value) > MAX_LABEL_LENGTH or not all(map(_label_char, value)):
            found.append(
                (
                    "labels",
                    f"Label {shown!r}: label values can be no longer than {MAX_LABEL_LENGTH} "
                    f"characters and contain only {chars}.",
                )
            )
    return found


def _pool_is_empty(pool: Any) -> bool:
    # Vertex lets pools 1-3 be `{}` placeholders so that evaluators can sit in pool 3.
    return bool(pool.ByteSize() == 0)


def vertex_rule_violations(job: Any) -> _Found:
    """(field path, message) for each of Vertex's rules of a CustomJob that ``job`` breaks
    (field behaviours aside: :func:`missing_required`)."""
    spec = job.job_spec
    pools = list(spec.worker_pool_specs)
    found = _display_name_violations(job) + label_violations(job.labels)
    found += _pool_list_violations(pools)
    for i, pool in enumerate(pools):
        found.extend(_pool_violations(i, pool))
    return found + _job_spec_violations(spec)


def _display_name_violations(job: Any) -> _Found:
    if len(job.display_name) > MAX_DISPLAY_NAME:
        return [
            (
                "display_name",
                f"The display name can be up to {MAX_DISPLAY_NAME} characters long.",
            )
        ]
    return []


def _pool_list_violations(pools: list[Any]) -> _Found:
    if not pools:
        return [("job_spec.worker_pool_specs", "At least one worker pool is required.")]
    if len(pools) > MAX_POOLS:
        return [("job_spec.worker_pool_specs", f"At most {MAX_POOLS} worker pools are allowed.")]
    return []


def _pool_violations(i: int, pool: Any) -> _Found:
    path = f"job_spec.worker_pool_specs[{i}]"
    if _pool_is_empty(pool):
        if i == 0:
            return [(path, "The first worker pool (the chief) must not be empty.")]
        return []
    found: _Found = []
    if i == 0 and pool.replica_count != 1:
        found.append(
            (f"{path}.replica_count", "The first worker pool must have exactly 1 replica.")
        )
    elif pool.replica_count < 1:
        found.append((f"{path}.replica_count", "replica_count must be at least 1."))
    if pool.WhichOneof("task") is None:
        found.append((path, "Exactly one of container_spec or python_package_spec must be set."))
    for name in ("python_package_spec", "container_spec"):
        if pool.HasField(name):
            found.extend(_env_violations(getattr(pool, name).env, f"{path}.{name}.env"))
    return found + _machine_violations(f"{path}.machine_spec", pool.machine_spec)


def _machine_violations(path: str, ms: Any) -> _Found:
    found: _Found = []
    if not ms.machine_type:
        found.append((f"{path}.machine_type", "Required field is not set."))
    if ms.accelerator_type not in _ACCELERATOR_NUMBERS:
        # JSON may carry any number for an enum; the protobuf runtime keeps unknown ones.
        found.append(
            (f"{path}.accelerator_type", f"Unknown accelerator type {ms.accelerator_type}.")
        )
    affinity = ms.reservation_affinity
    if affinity.reservation_affinity_type not in _RESERVATION_NUMBERS:
        found.append(
            (
                f"{path}.reservation_affinity.reservation_affinity_type",
                f"Unknown reservation affinity type {affinity.reservation_affinity_type}.",
            )
        )
    elif affinity.reservation_affinity_type == _SPECIFIC_RESERVATION and not (
        affinity.key and affinity.values
    ):
        # ReservationAffinity.Type (v1): "When chosen, the reservation must be identified via
        # the key and values fields."
        found.append(
            (
                f"{path}.reservation_affinity",
                "SPECIFIC_RESERVATION needs the reservation named by key and values.",
            )
        )
    has_type = ms.accelerator_type != aip.AcceleratorType.ACCELERATOR_TYPE_UNSPECIFIED
    if has_type != (ms.accelerator_count > 0):
        # Vertex AI's own words (https://github.com/prefect-archive/prefect-gcp/issues/175).
        found.append(
            (
                f"{path}.accelerator_type",
                "Both `accelerator_type` and `accelerator_count` should be specified or none.",
            )
        )
    elif ms.machine_type and ms.accelerator_type in _ACCELERATOR_NUMBERS:
        found.extend(_hardware_violations(path, ms))
    return found


def _hardware_violations(path: str, ms: Any) -> _Found:
    """The machine type, accelerator and partition size against the catalog's facts."""
    facts = hardware()
    if not facts.known:
        return []
    machine = ms.machine_type
    if machine not in facts.training_machine_types:
        return [(f"{path}.machine_type", f'Machine type "{machine}" is not supported.')]
    if not ms.accelerator_count:
        return []
    accelerator = aip.AcceleratorType(ms.accelerator_type).name
    known = facts.accelerators.get(accelerator)
    if known is not None and known.retired:
        since = f" since {known.retired_on}" if known.retired_on else ""
        return [
            (
                f"{path}.accelerator_type",
                f'Accelerator "{accelerator}" is no longer available{since}.',
            )
        ]
    counts = facts.attachable.get((machine, accelerator))
    if counts is None:
        return [
            (
                f"{path}.accelerator_type",
                f'Accelerator "{accelerator}" is not supported for machine type "{machine}".',
            )
        ]
    found: _Found = []
    if counts and ms.accelerator_count not in counts:
        valid = ", ".join(str(c) for c in sorted(counts))
        found.append(
            (
                f"{path}.accelerator_count",
                f"Accelerator count {ms.accelerator_count} is not valid for {accelerator} on "
                f'machine type "{machine}"; valid counts: {valid}.',
            )
        )
    size = ms.gpu_partition_size
    if size and known is not None and size not in known.partition_sizes:
        offered = ", ".join(sorted(known.partition_sizes)) or "none"
        found.append(
            (
                f"{path}.gpu_partition_size",
                f'GPU partition size "{size}" is not offered by {accelerator} '
                f"(partition sizes: {offered}).",
            )
        )
    return found


def _job_spec_violations(spec: Any) -> _Found:
    found: _Found = []
    if spec.scheduling.timeout.seconds < 0 or spec.scheduling.timeout.nanos < 0:
        found.append(("job_spec.scheduling.timeout", "The timeout must not be negative."))
    if spec.scheduling.strategy not in _STRATEGY_NUMBERS:
        found.append(
            (
                "job_spec.scheduling.strategy",
                f"Unknown scheduling strategy {spec.scheduling.strategy}.",
            )
        )
    prefix = spec.base_output_directory.output_uri_prefix
    if prefix and not prefix.startswith("gs://"):
        found.append(
            (
                "job_spec.base_output_directory.output_uri_prefix",
                "Must be a Cloud Storage URI (gs://bucket/path).",
            )
        )
    return found


def _nul(value: str) -> bool:
    return "\x00" in value


def process_rule_violations(job: Any) -> _Found:
    """(field path, message) for each string that could not reach a replica's process as sent.

    Arguments and environment values cannot hold NUL (the OS call would fail when the job runs);
    a python_module must be a dotted module name (it follows ``python -m``); a container image
    must look like an image reference (it follows ``docker run`` flags). Messages never quote an
    environment value.
    """
    found: _Found = []
    for i, pool in enumerate(job.job_spec.worker_pool_specs):
        path = f"job_spec.worker_pool_specs[{i}]"
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
        found.append(
            (f"{base}.python_module", "Must be a Python module name such as trainer.task.")
        )
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
                "Must be a container image reference such as "
                "us-docker.pkg.dev/project/repo/image:tag.",
            )
        )
    found.extend(_list_violations(cs.command, f"{base}.command"))
    found.extend(_list_violations(cs.args, f"{base}.args"))
    found.extend(_env_value_violations(cs.env, f"{base}.env"))
    return found


def _list_violations(values: Any, path: str) -> _Found:
    return [
        (f"{path}[{j}]", "Must not contain a NUL character.")
        for j, value in enumerate(values)
        if _nul(value)
    ]


def _env_value_violations(env: Any, path: str) -> _Found:
    return [
        (f"{path}[{j}].value", "Must not contain a NUL character.")
        for j, var in enumerate(env)
        if _nul(var.value)
    ]


def _env_violations(env: Any, path: str) -> _Found:
    found: _Found = []
    seen: set[str] = set()
    for j, var in enumerate(env):
        if not var.name:
            continue  # a required field: missing_required names it
        if not _ENV_NAME.fullmatch(var.name):
            found.append((f"{path}[{j}].name", "Must be a valid environment variable name."))
        elif var.name in seen:
            found.append((f"{path}[{j}].name", f"Duplicate environment variable {var.name}."))
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
    """``message`` without the job's env values (:func:`emulator.redaction.redact`)."""
    return _redact(message, secrets)


def clear_output_only_fields(job: Any) -> None:
    """Clear what a client sent in the output-only fields of ``job`` (a raw CustomJob or
    HyperparameterTuningJob message), at any depth: Vertex AI ignores them."""
    clear_output_only(job, getattr(aip, job.DESCRIPTOR.name))


def _with_required(found: _Found, required: _Found) -> _Found:
    """``found``, then each required field not set whose path no rule has named already (a
    rule's message says more: "At least one worker pool is required.")."""
    named = {path for path, _ in found}
    return found + [(path, message) for path, message in required if path not in named]


def _raise_if_any(found: _Found, secrets: list[str]) -> None:
    if found:
        raise errors.field_violations(
            [(redact(path, secrets), redact(message, secrets)) for path, message in found]
        )


def check_service_rules(job: Any) -> None:
    """Raise 400 INVALID_ARGUMENT listing every rule (see module doc) ``job`` breaks."""
    found = vertex_rule_violations(job) + process_rule_violations(job)
    found = _with_required(found, missing_required(job, aip.CustomJob))
    _raise_if_any(found, env_values(job))


def _as_tuning_path(path: str) -> str:
    """A field path of a trial's CustomJob as the tuning job names the field."""
    if path.startswith("job_spec"):
        return "trial_job_spec" + path[len("job_spec") :]
    return path


def check_tuning_service_rules(job: Any, view: Any) -> None:
    """Raise 400 INVALID_ARGUMENT listing every rule a tuning job breaks.

    ``view`` is the CustomJob its trials are made from: Vertex's and the process rules of
    CustomJobs run on it, then the study spec's rules and the field behaviours on ``job``.
    """
    found = [
        (_as_tuning_path(path), msg)
        for path, msg in vertex_rule_violations(view) + process_rule_violations(view)
    ]
    found += study_violations(job)
    found = _with_required(found, missing_required(job, aip.HyperparameterTuningJob))
    _raise_if_any(found, env_values(view))
