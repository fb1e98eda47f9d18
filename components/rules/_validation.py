"""Validation of a job spec against the catalog, before any API call.

``validate`` returns every violation it finds, never raises, and never prints the value
of an environment variable. Each rule cites where it comes from in ``catalog/README.md``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .._errors import SpecError
from ._catalog import (
    Accelerator,
    Catalog,
    MachineType,
    accepted_accelerators,
    allowed_counts,
    load_catalog,
    regions_offering,
    resolve_accelerator,
    training_regions,
    zones_offering,
)
from ._images import executor_image, image_for_hardware, registry_uri
from ._spec import (
    AUTOPACKAGE_ENV,
    RESERVATION_AFFINITY_TYPES,
    JobSpec,
    MachineSpec,
    PythonPackageSpec,
    WorkerPoolSpec,
)
from ._violations import (
    Violation,
    clipped,
    did_you_mean,
    did_you_mean_one_of,
    nearest,
)

__all__ = [
    "BOOT_DISK_GB",
    "BOOT_DISK_TYPES",
    "BUCKET_NAME_RULES",
    "MAX_DISPLAY_NAME",
    "MAX_LABELS",
    "MAX_LABEL_CHARS",
    "POOL_ROLES",
    "REDUCTION_SERVER_IMAGE",
    "RESERVATION_NAME_KEY",
    "STRATEGIES",
    "Target",
    "bucket_name_problem",
    "guarded",
    "missing_built_in_gpus",
    "pool_role",
    "project_violation",
    "region_violation",
    "validate",
    "validate_document",
]

Target = Literal["vertex", "local"]

POOL_ROLES = ("chief", "workers", "parameter servers", "evaluators")

REDUCTION_SERVER_IMAGE = "vertex-ai-restricted/training/reductionserver"
"""The path of Google's Reduction Server image (``us-docker.pkg.dev/vertex-ai-restricted/
training/reductionserver:latest``), which a job runs as pool 2 in place of parameter
servers: https://cloud.google.com/vertex-ai/docs/training/distributed-training#reduction-server
(read 2026-12)."""


def pool_role(index: int, pool: WorkerPoolSpec | None = None) -> str:
    """What pool ``index`` is for: its place in ``POOL_ROLES``, "reduction servers" for a
    pool 2 that runs the Reduction Server image, ``pool N`` past the four."""
    if index >= len(POOL_ROLES):
        return f"pool {index}"
    container = pool.container_spec if pool is not None else None
    if (
        index == 2
        and container is not None
        and REDUCTION_SERVER_IMAGE in (container.image_uri or "")
    ):
        return "reduction servers"
    return POOL_ROLES[index]


STRATEGIES = ("STANDARD", "SPOT", "FLEX_START", "ON_DEMAND", "LOW_COST")
_DEPRECATED_STRATEGIES = {
    "ON_DEMAND": ("regular on-demand capacity", "STANDARD"),
    "LOW_COST": ("on-demand capacity with potential use of Spot VMs", "SPOT"),
}
# The capacity (catalog ``CAPACITY_OPTIONS``) each scheduling strategy asks for.
_STRATEGY_CAPACITY = {
    None: "ON_DEMAND",
    "STANDARD": "ON_DEMAND",
    "ON_DEMAND": "ON_DEMAND",
    "LOW_COST": "SPOT",
    "SPOT": "SPOT",
    "FLEX_START": "FLEX_START",
}
_CAPACITY_WORDS = {
    "ON_DEMAND": "on-demand capacity",
    "RESERVATION": "reservations",
    "FLEX_START": "FLEX_START (Dynamic Workload Scheduler)",
    "SPOT": "Spot VMs",
}
_FLEX_START_DAYS = 7
RESERVATION_NAME_KEY = "compute.googleapis.com/reservation-name"
_RESERVATION_NAME = re.compile(
    r"^(?:projects/[^/\s]+/(?:zones/[a-z0-9-]+/)?reservations/)?[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$"
)
BOOT_DISK_TYPES = ("pd-ssd", "pd-standard", "hyperdisk-balanced")
BOOT_DISK_GB = (100, 64000)
MAX_LABELS = 64
MAX_LABEL_CHARS = 64
MAX_DISPLAY_NAME = 128

_PLAIN_LABEL = re.compile(r"[a-z0-9_-]*")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SERVICE_ACCOUNT = re.compile(
    r"^[a-z0-9-]{1,64}@[a-z0-9.-]+\.iam\.gserviceaccount\.com$|^[^@\s]+@[^@\s]+\.[a-z]+$"
)
# A project ID (domain-scoped ones, `example.com:proj`, included) or a project number: the API
# takes either in resource names, and `describe` output and request bodies use the number.
_PROJECT = re.compile(
    r"^(?:(?:[a-z][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]|[1-9][0-9]{0,18})$"
)


def project_violation(path: str, project: str) -> Violation | None:
    """The violation of ``project`` at ``path`` when it is neither a project ID nor a number."""
    if _PROJECT.match(project):
        return None
    return Violation(
        path,
        f"{clipped(project)!r} is not a project ID or number",
        "an ID is 6-30 lowercase letters, digits or hyphens, starting with a letter",
        rule="project",
    )


_NETWORK = re.compile(r"^projects/[^/]+/global/networks/[^/]+$")
_TENSORBOARD = re.compile(r"^projects/[^/]+/locations/([^/]+)/tensorboards/[^/]+$")
_KMS_KEY = re.compile(r"^projects/[^/]+/locations/([^/]+)/keyRings/[^/]+/cryptoKeys/[^/]+$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_LOCAL_SCHEMES = ("file://", "/", "./", "../")
_SIZED_NAME = re.compile(r"^(.+)-(\d+)([a-z]*)$")


@dataclass(frozen=True, slots=True)
class _Context:
    catalog: Catalog
    region: str | None
    target: Target
    strategy: str | None = None
    on_persistent_resource: bool = False
    base: Path | None = None


def validate(
    spec: JobSpec,
    *,
    catalog: Catalog | None = None,
    region: str | None = None,
    target: Target = "vertex",
    base: Path | None = None,
) -> list[Violation]:
    """Every violation in ``spec``; an empty list means Vertex AI should accept it.

    ``region`` overrides ``spec.region``; with neither, region rules are skipped.
    ``target="local"`` also accepts local paths where Vertex needs ``gs://`` URIs; relative
    ones are looked for under ``base`` (the spec file's directory; default the current one).
    """
    context = _Context(
        catalog or load_catalog(),
        region or spec.region,
        target,
        strategy=spec.scheduling.strategy if spec.scheduling else None,
        on_persistent_resource=bool(spec.persistent_resource_id),
        base=base,
    )
    return guarded(lambda: _job_violations(spec, context))


def guarded(find: Callable[[], Iterable[Violation]]) -> list[Violation]:
    """Every violation ``find`` yields; a bug in a rule is one ``internal`` violation, never a
    traceback that would hide the spec's problems (validation never raises)."""
    try:
        return list(find())
    except Exception as exc:
        return [
            Violation(
                "(spec)", f"internal validator error: {type(exc).__name__}: {exc}", rule="internal"
            )
        ]


def validate_document(
    data: Any,
    *,
    catalog: Catalog | None = None,
    region: str | None = None,
    target: Target = "vertex",
) -> list[Violation]:
    """Parse raw data (e.g. a YAML document) and validate it; never raises."""
    try:
        spec = JobSpec.parse(data)
    except SpecError as exc:
        return list(getattr(exc, "violations", ())) or [
            Violation("(document)", str(exc), rule="schema")
        ]
    except Exception as exc:
        return [Violation("(document)", f"cannot be read as a job spec: {exc}", rule="schema")]
    return validate(spec, catalog=catalog, region=region, target=target)


# --- job level ------------------------------------------------------------------------


def _job_violations(spec: JobSpec, ctx: _Context) -> Iterator[Violation]:
    yield from _pools(spec, ctx)
    yield from _labels(spec.labels)
    if spec.display_name is not None and not spec.display_name:
        yield Violation(
            "displayName",
            "must not be empty",
            "leave it out to use the resource name",
            rule="display-name",
        )
    if spec.display_name and len(spec.display_name) > MAX_DISPLAY_NAME:
        yield Violation(
            "displayName",
            f"is {len(spec.display_name)} characters long; Vertex AI allows at most {MAX_DISPLAY_NAME}",
            "shorten it",
            rule="display-name",
        )
    if spec.project is not None and (found := project_violation("project", spec.project)):
        yield found
    yield from _scheduling(spec)
    yield from _flex_start(spec, ctx)
    yield from _references(spec, ctx)
    if ctx.region is not None:
        yield from _region(spec, ctx)


def _labels(labels: dict[str, str]) -> Iterator[Violation]:
    if len(labels) > MAX_LABELS:
        yield Violation(
            "labels",
            f"has {len(labels)} labels; at most {MAX_LABELS} are allowed",
            None,
            rule="labels",
        )
    for key, value in labels.items():
        path = f"labels.{key}"
        if not key or len(key) > MAX_LABEL_CHARS:
            yield Violation(
                path, f"key must be 1-{MAX_LABEL_CHARS} characters", None, rule="labels"
            )
        elif not key[0].islower():
            yield Violation(
                path,
                "key must start with a lowercase letter",
                f"use {key.lower()!r}",
                rule="labels",
            )
        bad = (
            [] if _PLAIN_LABEL.fullmatch(key) else sorted({c for c in key if not _label_char_ok(c)})
        )
        if bad:
            yield Violation(
                path,
                f"key has characters labels do not allow: {''.join(bad)!r}",
                "use lowercase letters, digits, '_' and '-'",
                rule="labels",
            )
        if len(value) > MAX_LABEL_CHARS:
            yield Violation(
                path,
                f"value is {len(value)} characters; at most {MAX_LABEL_CHARS}",
                None,
                rule="labels",
            )
        bad = (
            []
            if _PLAIN_LABEL.fullmatch(value)
            else sorted({c for c in value if not _label_char_ok(c)})
        )
        if bad:
            yield Violation(
                path,
                f"value has characters labels do not allow: {''.join(bad)!r}",
                f"e.g. {_label_safe(value)!r}",
                rule="labels",
            )


def _label_char_ok(char: str) -> bool:
    return char in "_-" or char.isdigit() or (char.isalpha() and not char.isupper())


def _label_safe(value: str) -> str:
    return "".join(c if _label_char_ok(c) else "-" for c in value.lower())[:MAX_LABEL_CHARS]


def _scheduling(spec: JobSpec) -> Iterator[Violation]:
    sched = spec.scheduling
    if sched is None:
        return
    if sched.timeout is not None and sched.timeout.total_seconds() <= 0:
        yield Violation(
            "scheduling.timeout", "must be longer than zero", "e.g. '86400s'", rule="scheduling"
        )
    if sched.strategy is not None and sched.strategy not in STRATEGIES:
        yield Violation(
            "scheduling.strategy",
            f"unknown strategy {sched.strategy!r}",
            did_you_mean(
                sched.strategy, STRATEGIES, otherwise=f"one of {', '.join(STRATEGIES[:3])}"
            ),
            rule="scheduling",
        )
    if sched.strategy in _DEPRECATED_STRATEGIES:
        meaning, instead = _DEPRECATED_STRATEGIES[sched.strategy]
        yield Violation(
            "scheduling.strategy",
            f"{sched.strategy} ({meaning}) is deprecated in the v1 API",
            f"use {instead}",
            rule="scheduling",
            severity="warning",
        )
    if sched.max_wait_duration is not None:
        if sched.strategy != "FLEX_START":
            yield Violation(
                "scheduling.maxWaitDuration",
                "only applies to the FLEX_START strategy",
                "set strategy: FLEX_START or remove maxWaitDuration",
                rule="scheduling",
            )
        if sched.max_wait_duration.total_seconds() < 0:
            yield Violation(
                "scheduling.maxWaitDuration",
                "must not be negative",
                "0 waits without limit; the default is 24 hours",
                rule="scheduling",
            )


def _flex_start(spec: JobSpec, ctx: _Context) -> Iterator[Violation]:
    """Dynamic Workload Scheduler: supported GPUs only, one machine configuration, 7 days."""
    if ctx.strategy != "FLEX_START":
        return
    served = [a.name for a in ctx.catalog.accelerators.values() if a.flex_start]
    configs = set()
    for index, pool in enumerate(spec.worker_pool_specs):
        machine = pool.machine_spec
        if pool.is_placeholder or machine is None:
            continue
        configs.add((machine.machine_type, machine.accelerator_type, machine.accelerator_count))
        info = ctx.catalog.accelerators.get(machine.accelerator_type or "")
        if info is not None and info.kind == "gpu" and not info.flex_start:
            # (A pool without a GPU, or with an unknown type, is not this rule's to judge.)
            yield Violation(
                f"workerPoolSpecs[{index}].machineSpec.acceleratorType",
                "FLEX_START (Dynamic Workload Scheduler) serves only jobs with "
                f"{_or_list(served)} GPUs; this pool has {info.name}",
                f"use scheduling.strategy STANDARD or SPOT, or one of {_or_list(served)}",
                rule="scheduling",
            )
    if len(configs) > 1:
        yield Violation(
            "workerPoolSpecs",
            "FLEX_START needs the same machine configuration in every worker pool",
            "give every pool the same machineSpec, or use scheduling.strategy STANDARD or SPOT",
            rule="scheduling",
        )
    timeout = spec.scheduling.timeout if spec.scheduling else None
    if timeout is not None and timeout.total_seconds() > _FLEX_START_DAYS * 86400:
        yield Violation(
            "scheduling.timeout",
            f"a FLEX_START job runs at most {_FLEX_START_DAYS} days",
            f"set timeout to at most {_FLEX_START_DAYS * 86400}s",
            rule="scheduling",
        )


def _references(spec: JobSpec, ctx: _Context) -> Iterator[Violation]:
    if spec.service_account is not None and not _SERVICE_ACCOUNT.match(spec.service_account):
        yield Violation(
            "serviceAccount",
            f"{spec.service_account!r} is not a service account email",
            "e.g. trainer@my-project.iam.gserviceaccount.com",
            rule="references",
        )
    if spec.network is not None and not _NETWORK.match(spec.network):
        yield Violation(
            "network",
            "must be a full network name",
            "projects/PROJECT_NUMBER/global/networks/NETWORK",
            rule="references",
        )
    if spec.reserved_ip_ranges and spec.network is None:
        yield Violation(
            "reservedIpRanges", "only applies with a network", "set network too", rule="references"
        )
    if spec.tensorboard is not None:
        yield from _regional_name(
            "tensorboard",
            spec.tensorboard,
            _TENSORBOARD,
            (
                "must be a full Tensorboard resource name",
                "projects/PROJECT/locations/REGION/tensorboards/ID",
            ),
            ctx.region,
            lambda found, region: (
                f"is in {found}, the job runs in {region}",
                f"use a Tensorboard in {region}",
            ),
        )
    if spec.kms_key_name is not None:
        yield from _regional_name(
            "encryptionSpec.kmsKeyName",
            spec.kms_key_name,
            _KMS_KEY,
            (
                "must be a full Cloud KMS key name",
                "projects/PROJECT/locations/REGION/keyRings/RING/cryptoKeys/KEY",
            ),
            ctx.region,
            lambda found, region: (
                f"the key is in {found}; Vertex AI needs a key in the job's region {region}",
                f"create the key ring in {region}",
            ),
        )
    if spec.base_output_directory is not None:
        yield from _uri("baseOutputDirectory", spec.base_output_directory, ctx)


def _regional_name(
    path: str,
    name: str,
    pattern: re.Pattern[str],
    malformed: tuple[str, str],
    region: str | None,
    elsewhere: Callable[[str, str], tuple[str, str]],
) -> Iterator[Violation]:
    """A full resource name whose location (the pattern's group 1) must be the job's region."""
    match = pattern.match(name)
    if not match:
        yield Violation(path, malformed[0], malformed[1], rule="references")
    elif region and match.group(1) != region:
        reason, suggestion = elsewhere(match.group(1), region)
        yield Violation(path, reason, suggestion, rule="references")


BUCKET_NAME_RULES = (
    "3-63 characters (up to 222 when it holds dots, each dot-separated part at most 63)",
    "only lowercase letters, digits, dashes (-), underscores (_) and dots (.)",
    "starts and ends with a letter or digit",
    "not an IP address in dotted-decimal notation (192.168.5.4)",
    'does not begin with "goog"',
    'does not contain "google" or a close misspelling of it ("g00gle")',
)
"""Cloud Storage's bucket naming requirements, as "Bucket names" lists them:
https://cloud.google.com/storage/docs/buckets#naming (read 2026-11). Vertex AI refuses a job
whose ``gs://`` URI names a bucket that breaks one (``'b' is not a valid bucket name``)."""
_BUCKET_CHARS = re.compile(r"^[a-z0-9._-]+$")
_GOOGLE_LIKE = re.compile(r"g[o0]{2}g[l1]e")


def bucket_name_problem(bucket: str) -> str | None:
    """Which of ``BUCKET_NAME_RULES`` ``bucket`` breaks, as a reason, or None."""
    dotted = "." in bucket
    longest = 222 if dotted else 63
    if not 3 <= len(bucket) <= longest:
        return (
            f"the bucket name is {len(bucket)} characters long; it must be {BUCKET_NAME_RULES[0]}"
        )
    if not _BUCKET_CHARS.match(bucket):
        return f"the bucket name must hold {BUCKET_NAME_RULES[1]}"
    if not (bucket[0].isalnum() and bucket[-1].isalnum()):
        return "the bucket name must start and end with a letter or digit"
    if dotted and max(len(part) for part in bucket.split(".")) > 63:
        return "each dot-separated part of a bucket name is at most 63 characters"
    if _is_ip(bucket):
        return "a bucket name cannot be an IP address"
    if bucket.startswith("goog"):
        return 'a bucket name cannot begin with "goog"'
    if _GOOGLE_LIKE.search(bucket):
        return 'a bucket name cannot contain "google" or a close misspelling of it'
    return None


def _bucket(
    path: str, uri: str, severity: Literal["error", "warning"] = "error"
) -> Iterator[Violation]:
    """The bucket of a ``gs://`` URI (``BUCKET_NAME_RULES``)."""
    bucket = uri[len("gs://") :].split("/", 1)[0]
    problem = bucket_name_problem(bucket)
    if problem is not None:
        yield Violation(
            path,
            f"{clipped(bucket)!r} is not a valid Cloud Storage bucket name: {problem}",
            "name the job's bucket, e.g. gs://my-project-training/PATH",
            rule="uris",
            severity=severity,
        )


def _local_path_missing(path: str, uri: str, base: Path | None) -> Iterator[Violation]:
    """A local trainer path that is not there: staging (or the local stack) would fail late."""
    local = uri.removeprefix("file://")
    try:
        there = ((base or Path()) / local).exists()
    except (OSError, ValueError):  # a name no file can have (too long, a NUL)
        there = False
    if not there:
        yield Violation(
            path,
            f"{clipped(local, 240)!r} does not exist",
            "give the path of the trainer's package directory or archive (relative to the "
            "spec file)",
            rule="uris",
        )


def _uri(path: str, uri: str, ctx: _Context) -> Iterator[Violation]:
    if uri.startswith("gs://"):
        if len(uri) <= len("gs://") or uri[5] == "/":
            yield Violation(path, "names no bucket", "gs://BUCKET/PATH", rule="uris")
        else:
            yield from _bucket(path, uri)
        return
    if ctx.target == "local" and (uri.startswith(_LOCAL_SCHEMES) or "://" not in uri):
        # The local stack runs the package from this path (an output directory is made).
        if path.endswith("]"):
            yield from _local_path_missing(path, uri, ctx.base)
        return
    if ctx.target == "vertex" and "://" not in uri:
        yield Violation(
            path,
            "is a local path; Vertex AI reads only Cloud Storage",
            "upload it and use a gs:// URI (the TrainingJob resource stages local trainer code for you)",
            rule="uris",
            severity="warning" if path.endswith("]") else "error",
        )
        return
    yield Violation(path, f"unsupported URI scheme in {uri!r}", "use gs://BUCKET/PATH", rule="uris")


# --- worker pools ---------------------------------------------------------------------


def _pools(spec: JobSpec, ctx: _Context) -> Iterator[Violation]:
    pools = spec.worker_pool_specs
    if not pools:
        yield Violation(
            "workerPoolSpecs",
            "at least one worker pool is required",
            "add the chief as workerPoolSpecs[0]",
            rule="pools",
        )
        return
    if len(pools) > len(POOL_ROLES):
        yield Violation(
            "workerPoolSpecs",
            f"has {len(pools)} pools; Vertex AI has {len(POOL_ROLES)} (chief, workers, parameter servers, evaluators)",
            "merge the extra pools into workerPoolSpecs[1]",
            rule="pools",
        )
    if pools[0].is_placeholder:
        yield Violation(
            "workerPoolSpecs[0]",
            "the chief pool is empty; pools 1-3 need a chief in pool 0",
            "move the first pool's settings to workerPoolSpecs[0]",
            rule="pools",
        )
    if pools[-1].is_placeholder and len(pools) > 1:
        yield Violation(
            f"workerPoolSpecs[{len(pools) - 1}]",
            "an empty pool only holds the place of a later pool",
            "remove trailing empty pools",
            rule="pools",
        )
    yield from _tpu_pools(pools, ctx)
    for index, pool in enumerate(pools):
        if not pool.is_placeholder:
            yield from _pool(index, pool, ctx)


def _tpu_pools(pools: list[WorkerPoolSpec], ctx: _Context) -> Iterator[Violation]:
    """A TPU VM runs the whole job: Vertex takes it only as the one pool (pool 0's own rule
    already holds it to one replica)."""
    for index, pool in enumerate(pools):
        accelerator = _pool_tpu(pool, ctx.catalog)
        if accelerator is None:
            continue
        named = pool.machine_spec is not None and pool.machine_spec.accelerator_type
        field_name = "acceleratorType" if named else "machineType"
        if len(pools) > 1:
            yield Violation(
                f"workerPoolSpecs[{index}].machineSpec.{field_name}",
                f"a {accelerator} job runs on one TPU VM: Vertex AI takes a single worker pool, "
                f"not {len(pools)}",
                "keep only this pool, as workerPoolSpecs[0] with replicaCount: 1",
                rule="pools",
            )


def _pool_tpu(pool: WorkerPoolSpec, catalog: Catalog) -> str | None:
    """The TPU type a pool runs on: its acceleratorType, or the TPU its machine type comes
    with (``ct6e-standard-4t`` names no accelerator); None for a pool without TPUs."""
    spec = pool.machine_spec
    if spec is None:
        return None
    machine = catalog.machine_types.get(spec.machine_type or "")
    name = spec.accelerator_type or (
        machine.fixed_accelerator if machine is not None and machine.family == "tpu" else None
    )
    info = catalog.accelerators.get(name) if name else None
    return name if info is not None and info.kind == "tpu" else None


def _pool(index: int, pool: WorkerPoolSpec, ctx: _Context) -> Iterator[Violation]:
    base = f"workerPoolSpecs[{index}]"
    if index == 0 and pool.replicas != 1:
        yield Violation(
            f"{base}.replicaCount",
            f"the chief pool runs exactly 1 replica, not {pool.replicas}",
            "set replicaCount: 1 and put the other replicas in workerPoolSpecs[1]",
            rule="pools",
        )
    elif pool.replicas < 1:
        yield Violation(
            f"{base}.replicaCount",
            "must be at least 1",
            "remove the pool or set replicaCount: 1",
            rule="pools",
        )
    yield from _trainer(base, pool, ctx)
    yield from _image_hardware(base, pool, ctx)
    yield from _disk(base, pool)
    yield from _mounts(base, pool)
    if pool.machine_spec is None or not pool.machine_spec.machine_type:
        yield Violation(
            f"{base}.machineSpec.machineType", "is required", "e.g. n1-standard-8", rule="machine"
        )
        return
    yield from _machine(f"{base}.machineSpec", pool.machine_spec, ctx)
    machine = ctx.catalog.machine_types.get(pool.machine_spec.machine_type)
    if machine is not None:
        yield from _boot_disk(base, pool, machine)
        yield from _capacity(f"{base}.machineSpec", pool.machine_spec, machine, ctx)


def _disk(base: str, pool: WorkerPoolSpec) -> Iterator[Violation]:
    disk = pool.disk_spec
    if disk is not None:
        if disk.boot_disk_type is not None and disk.boot_disk_type not in BOOT_DISK_TYPES:
            yield Violation(
                f"{base}.diskSpec.bootDiskType",
                f"unknown disk type {disk.boot_disk_type!r}",
                did_you_mean(
                    disk.boot_disk_type,
                    BOOT_DISK_TYPES,
                    otherwise=f"one of {', '.join(BOOT_DISK_TYPES)}",
                ),
                rule="disk",
            )
        low, high = BOOT_DISK_GB
        if disk.boot_disk_size_gb is not None and not low <= disk.boot_disk_size_gb <= high:
            yield Violation(
                f"{base}.diskSpec.bootDiskSizeGb",
                f"{disk.boot_disk_size_gb} GB is outside {low}-{high} GB",
                f"the default is {low}",
                rule="disk",
            )


def _boot_disk(base: str, pool: WorkerPoolSpec, machine: MachineType) -> Iterator[Violation]:
    """Machine series that boot only from some disk types (``machine_types.csv``)."""
    kind = pool.disk_spec.boot_disk_type if pool.disk_spec else None
    allowed = machine.boot_disk_types
    if kind and allowed and kind in BOOT_DISK_TYPES and kind not in allowed:
        yield Violation(
            f"{base}.diskSpec.bootDiskType",
            f"{machine.name} boots only from {' or '.join(allowed)}, not {kind}",
            f"set bootDiskType: {allowed[0]}",
            rule="disk",
        )


def _executor_image(
    path: str, uri: str, ctx: _Context, hardware: str = "cpu"
) -> Iterator[Violation]:
    """A Python package runs only on a prebuilt training image (``components.rules._images``).

    ``hardware`` is what the pool runs on (cpu, gpu or tpu): an image suggested to it is one
    built for that, never a CPU image for a GPU pool.
    """
    # An image past its end of availability is a reader's note (``with_prebuilt_images``),
    # not a violation: Vertex AI may still run it.
    if not ctx.catalog.training_images:
        return  # a catalog that knows no image (a test's tiny one) judges none
    found = executor_image(ctx.catalog, uri, ctx.region)
    if found.kind == "legacy":
        yield Violation(
            path,
            f"{uri.strip()[:120]!r} is an earlier name of a prebuilt training image, which "
            "Vertex AI does not accept",
            f"use its Vertex AI name: {found.successor}",
            rule="trainer",
        )
    elif found.kind == "named":
        # Google publishes images after a catalog release: one named as its prebuilt images
        # are is let through, saying how little was checked.
        yield Violation(
            path,
            f"{uri.strip()[:120]} is not in the catalog's prebuilt training images; it follows "
            "Google's naming of them, so it was checked by name only",
            "make sure Google lists it (pre-built containers for custom training), or add its "
            "row to a catalog overlay (training:catalogOverlay, --catalog-overlay)",
            rule="trainer",
            severity="warning",
        )
    elif found.kind == "custom":
        tagged = executor_image(ctx.catalog, f"{uri.strip()}:latest", ctx.region)
        instead = (
            f"add its :latest tag ({uri.strip()[:120]}:latest), which Vertex AI requires"
            if tagged.kind in ("prebuilt", "named")
            else f"use a prebuilt executor image (e.g. {_newest_prebuilt(ctx, hardware)})"
        )
        yield Violation(
            path,
            f"{uri.strip()[:120]!r} is not one of Vertex AI's prebuilt training images, the "
            "only images it runs a Python package on",
            f"{instead}, or build the package into your image and run it with containerSpec "
            "(imageUri, command: [python, -m, MODULE])",
            rule="trainer",
        )


_HARDWARE_WORDS = {"cpu": "CPU", "gpu": "GPU", "tpu": "TPU"}


def _pool_compute(pool: WorkerPoolSpec, catalog: Catalog) -> tuple[str, str] | None:
    """What a pool's replicas compute on (``_pool_hardware``: cpu, gpu or tpu) and how to say
    it (``4 x NVIDIA_TESLA_T4``, ``n1-standard-8``); None when the catalog cannot tell."""
    spec = pool.machine_spec
    if spec is None or not spec.machine_type:
        return None
    machine = catalog.machine_types.get(spec.machine_type)
    name = spec.accelerator_type or (machine.fixed_accelerator if machine else None)
    if not name:
        return (_pool_hardware(pool, catalog), spec.machine_type) if machine is not None else None
    if catalog.accelerators.get(name) is None:
        return None
    count = spec.accelerator_count or (machine.fixed_accelerator_count if machine else 0)
    return _pool_hardware(pool, catalog), f"{count} x {name}"


def _image_hardware(base: str, pool: WorkerPoolSpec, ctx: _Context) -> Iterator[Violation]:
    """A prebuilt image built for other hardware than the pool's: a CPU image leaves the
    GPUs (or TPU) idle while they are paid for, a TPU image needs a TPU, and a GPU image on a
    CPU-only machine trains on the CPU (catalog ``training_images.csv``, column
    ``accelerator``). The suggestion is the image's build for the pool's hardware."""
    package, container = pool.python_package_spec, pool.container_spec
    if package is not None and package.executor_image_uri:
        path, uri = f"{base}.pythonPackageSpec.executorImageUri", package.executor_image_uri
    elif container is not None and container.image_uri:
        path, uri = f"{base}.containerSpec.imageUri", container.image_uri
    else:
        return
    found = executor_image(ctx.catalog, uri, ctx.region)
    hardware = _pool_compute(pool, ctx.catalog)
    image = found.image
    if image is None or found.kind == "unknown" or hardware is None:
        return
    kind, shown = hardware
    # One image may be listed for several: Google's table gives pytorch-gpu.1-13 for CPU too.
    serves = {
        i.accelerator for i in ctx.catalog.training_images if i.image_path == image.image_path
    }
    if kind in serves or kind not in _HARDWARE_WORDS:
        return
    name = image.image_path.rsplit("/", 1)[-1].split(":", 1)[0]
    built, wanted = _HARDWARE_WORDS.get(image.accelerator, image.accelerator), _HARDWARE_WORDS[kind]
    if kind == "cpu":
        reason = f"{name} is a {built} image, and {shown} has no {built}" + (
            ": the trainer runs on the CPU" if image.accelerator == "gpu" else ""
        )
        fix = f"add a {built} to the pool (acceleratorType, acceleratorCount)"
    else:
        reason = (
            f"{name} is a {built} image: on {shown} the trainer would not use the {wanted}s, "
            "which are paid for all the same"
        )
        fix = "remove the accelerator"
    match = image_for_hardware(ctx.catalog, image, kind)
    suggestion = (
        f"use its {wanted} build, {registry_uri(ctx.catalog, match, ctx.region)}, or {fix}"
        if match is not None
        else f"{image.framework} has no {wanted} image in the catalog: {fix}"
    )
    yield Violation(
        path,
        reason,
        suggestion,
        rule="trainer",
        severity="warning" if (kind, image.accelerator) == ("cpu", "gpu") else "error",
    )


def _newest_prebuilt(ctx: _Context, hardware: str = "cpu") -> str:
    """The newest prebuilt image for ``hardware`` (cpu, gpu or tpu), as an example in a
    suggestion; never one built for other hardware."""
    images = [i for i in ctx.catalog.training_images if i.accelerator == hardware]
    if not images:
        return f"us-docker.pkg.dev/vertex-ai/training/IMAGE-{hardware}:latest"
    best = max(images, key=lambda i: (i.end_of_availability or "", i.image_path))
    return registry_uri(ctx.catalog, best, ctx.region)


def _pool_hardware(pool: WorkerPoolSpec, catalog: Catalog) -> str:
    """cpu, gpu or tpu: what the pool's machine runs its code on (its own GPUs included)."""
    spec = pool.machine_spec
    if spec is None:
        return "cpu"
    machine = catalog.machine_types.get(spec.machine_type or "")
    name = spec.accelerator_type or (machine.fixed_accelerator if machine else None)
    accelerator = catalog.accelerators.get(name) if name else None
    if accelerator is not None:
        return accelerator.kind
    return "tpu" if machine is not None and machine.family == "tpu" else "cpu"


def _program(path: str, command: list[str]) -> Iterator[Violation]:
    """A warning for a command whose program holds a blank (``python src/x.py`` as one word,
    as ``gcloud --command="python src/x.py"`` gives it): no shell splits it, so the container
    looks for a program of that whole name."""
    program = command[0] if command else ""
    if program.strip() and any(c.isspace() for c in program.strip()):
        words = program.split()
        yield Violation(
            f"{path}[0]",
            f"{program.strip()[:80]!r} is one argument: Vertex AI runs no shell, so the "
            "container looks for a program of that whole name",
            f"split it into words: [{', '.join(words[:6])}{', ...' if len(words) > 6 else ''}]"
            " (gcloud: --command=" + ",".join(words[:6]) + ")",
            rule="trainer",
            severity="warning",
        )


def _trainer(base: str, pool: WorkerPoolSpec, ctx: _Context) -> Iterator[Violation]:
    package, container = pool.python_package_spec, pool.container_spec
    if (package is None) == (container is None):
        yield Violation(
            base,
            "needs exactly one of pythonPackageSpec and containerSpec"
            + (", not both" if package else ""),
            "a Python package on a prebuilt image, or your own container image",
            rule="trainer",
        )
    if package is not None:
        hardware = _pool_hardware(pool, ctx.catalog)
        yield from _package(f"{base}.pythonPackageSpec", package, ctx, hardware)
    if container is not None:
        path = f"{base}.containerSpec"
        if not container.image_uri:
            yield Violation(
                f"{path}.imageUri",
                "is required",
                "e.g. us-docker.pkg.dev/PROJECT/REPO/IMAGE:TAG",
                rule="trainer",
            )
        yield from _program(f"{path}.command", container.command)
        yield from _env(f"{path}.env", container.env)


def _package(
    path: str, package: PythonPackageSpec, ctx: _Context, hardware: str = "cpu"
) -> Iterator[Violation]:
    """A Python package pool: its prebuilt image, packages and module."""
    if not package.executor_image_uri:
        yield Violation(
            f"{path}.executorImageUri",
            "is required",
            "a prebuilt training image",
            rule="trainer",
        )
    else:
        yield from _executor_image(
            f"{path}.executorImageUri", package.executor_image_uri, ctx, hardware
        )
    if not package.package_uris:
        yield Violation(
            f"{path}.packageUris",
            "needs at least one package",
            "gs://BUCKET/trainer.tar.gz",
            rule="trainer",
        )
    for i, uri in enumerate(package.package_uris):
        yield from _uri(f"{path}.packageUris[{i}]", uri, ctx)
    autopackaged = any(e.name == AUTOPACKAGE_ENV for e in package.env)
    if autopackaged and ctx.target == "vertex":
        # At the package spec itself (gcloud: local-package-path), not at its env, which only
        # carries the build for the local stack.
        yield Violation(
            path,
            "stands for the image gcloud builds from a local-package-path, which Vertex AI "
            "needs built and pushed (the local stack runs the pool as that image would)",
            "`python -m components convert FILE` prints the containerSpec, the Dockerfile "
            "and the commands to build it",
            rule="trainer",
            severity="warning",
        )
    if not package.python_module and autopackaged:
        pass  # gcloud's image runs a script (script=run.sh): it has no module to name
    elif not package.python_module:
        yield Violation(f"{path}.pythonModule", "is required", "e.g. trainer.task", rule="trainer")
    elif not _MODULE.match(package.python_module):
        yield Violation(
            f"{path}.pythonModule",
            f"{package.python_module!r} is not a Python module name",
            "dotted names like trainer.task",
            rule="trainer",
        )
    yield from _env(f"{path}.env", package.env)


def _env(path: str, env: list[Any]) -> Iterator[Violation]:
    seen: set[str] = set()
    for i, var in enumerate(env):
        if not _ENV_NAME.match(var.name):
            yield Violation(
                f"{path}[{i}].name", f"{var.name!r} is not a valid variable name", None, rule="env"
            )
        if var.name in seen:
            yield Violation(f"{path}[{i}].name", f"{var.name} is set twice", "keep one", rule="env")
        seen.add(var.name)
        if var.value == "":
            # EnvVar.value is REQUIRED in v1: Vertex answers 400 "Required field is not set".
            yield Violation(
                f"{path}[{i}].value",
                f"{var.name} has no value, and Vertex AI refuses an environment variable "
                "without one",
                "give it a value, or leave the variable out",
                rule="env",
            )


# --- machines and accelerators ----------------------------------------------------------


def _machine(path: str, spec: MachineSpec, ctx: _Context) -> Iterator[Violation]:
    catalog = ctx.catalog
    assert spec.machine_type is not None
    machine = catalog.machine_types.get(spec.machine_type)
    yield from _machine_type(f"{path}.machineType", spec.machine_type, machine, catalog)
    yield from _reservation(f"{path}.reservationAffinity", spec)
    acc_name, count = spec.accelerator_type, spec.accelerator_count
    if count < 0:
        yield Violation(
            f"{path}.acceleratorCount", "must not be negative", None, rule="accelerator"
        )
        return
    if (acc_name is None) != (count == 0):
        missing = "acceleratorCount" if acc_name else "acceleratorType"
        yield Violation(
            f"{path}.{missing}",
            "acceleratorType and acceleratorCount must be given together, or neither",
            f"set {missing} too"
            + (f" (e.g. {_counts_text(catalog, spec)})" if acc_name and machine else ""),
            rule="accelerator",
        )
        return
    accelerator = catalog.accelerators.get(acc_name) if acc_name else None
    yield from _topology(f"{path}.tpuTopology", spec, machine, accelerator, catalog)
    yield from _gpu_partition(path, spec, machine, catalog)
    if acc_name is None:
        yield from _fixed_accelerator_missing(path, machine)
        return
    if accelerator is None:
        yield Violation(
            f"{path}.acceleratorType",
            f"unknown accelerator type {acc_name!r}",
            _accelerator_suggestion(acc_name, machine, catalog),
            rule="accelerator",
        )
        return
    if not accelerator.api_enum:
        yield Violation(
            f"{path}.acceleratorType",
            f"{acc_name} is no acceleratorType of Vertex AI's API: a "
            f"{accelerator.gcloud_name.removeprefix('tpu-')} job names its TPUs by machine "
            "type alone",
            _machine_only_suggestion(acc_name, catalog),
            rule="accelerator",
        )
        return
    if accelerator.retired:
        yield Violation(
            f"{path}.acceleratorType",
            f"{acc_name} was retired on {accelerator.retired_on}; Vertex AI no longer offers it",
            _replacement_suggestion(accelerator.replacement, machine, catalog),
            rule="retired",
        )
    if machine is not None:
        yield from _compatibility(path, machine, acc_name, count, catalog)


def _topology(
    path: str,
    spec: MachineSpec,
    machine: MachineType | None,
    accelerator: Accelerator | None,
    catalog: Catalog,
) -> Iterator[Violation]:
    """``tpuTopology``: only on a TPU machine (or with a TPU accelerator), and one the machine
    type comes in."""
    if not spec.tpu_topology:
        return
    tpu_machine = machine is not None and machine.family == "tpu"
    if not tpu_machine and (accelerator is None or accelerator.kind != "tpu"):
        yield Violation(
            path,
            "only applies to TPU machines (ct5lp-hightpu-*, ct6e-standard-*, ct5p-hightpu-*, "
            "cloud-tpu)",
            "remove it",
            rule="accelerator",
        )
    elif machine is not None:
        yield from _tpu_topology(path, spec.tpu_topology, machine, catalog)


def _tpu_topology(
    path: str, topology: str, machine: MachineType, catalog: Catalog
) -> Iterator[Violation]:
    """A ``tpuTopology`` the machine type does not come in (``tpu_topologies.csv``, from
    Vertex AI's configure-compute page); a machine with no topologies listed is not checked."""
    accepted = catalog.tpu_topologies.get(machine.name, ())
    if accepted and topology.strip().lower() not in accepted:
        yield Violation(
            path,
            f"{topology!r} is not a topology of {machine.name}",
            f"{machine.name} takes {_or_list(accepted)}",
            rule="accelerator",
        )


def _machine_type(
    path: str, name: str, machine: MachineType | None, catalog: Catalog
) -> Iterator[Violation]:
    """An unknown machine type, or one Vertex AI training refuses: the nearest it accepts."""
    custom = _CUSTOM_MACHINE.match(name.strip().lower()) if machine is None else None
    if custom is not None:
        yield _custom_machine(path, name, custom, catalog)
    elif machine is None:
        yield Violation(
            path,
            f"unknown machine type {name!r}",
            _machine_suggestion(name, catalog),
            rule="machine",
        )
    elif not machine.training:
        bigger = sorted(
            (
                m
                for m in catalog.machine_types.values()
                if m.training and m.family == machine.family
            ),
            key=lambda m: (
                m.vcpus < machine.vcpus or m.memory_gb < machine.memory_gb,
                m.vcpus,
                m.memory_gb,
            ),
        )
        yield Violation(
            path,
            f"Vertex AI training does not accept {name}",
            f"the nearest machine types it accepts: {_or_list(m.name for m in bigger[:3])}"
            if bigger
            else "see `python -m components catalog`",
            rule="machine",
        )


_CUSTOM_MACHINE = re.compile(r"^(?:([a-z][a-z0-9]*)-)?custom-(\d{1,4})-(\d{1,9})(-ext)?$")
"""A Compute Engine custom machine type, ``[FAMILY-]custom-VCPUS-MEMORY_MB[-ext]`` (no family:
N1): https://cloud.google.com/compute/docs/instances/creating-instance-with-custom-machine-type
(read 2026-11)."""


def _custom_machine(path: str, name: str, custom: re.Match[str], catalog: Catalog) -> Violation:
    """Vertex AI training takes predefined machine types only (``MachineSpec.machine_type``:
    https://cloud.google.com/vertex-ai/docs/training/configure-compute, read 2026-11): the
    smallest predefined type of the family with at least the vCPUs and memory asked."""
    family = custom.group(1) or "n1"
    vcpus, memory_gb = int(custom.group(2)), int(custom.group(3)) / 1024
    same = [m for m in catalog.machine_types.values() if m.training and m.family == family]
    fits = sorted(
        (m for m in same if m.vcpus >= vcpus and m.memory_gb >= memory_gb),
        key=lambda m: (m.vcpus, m.memory_gb, m.name),
    )
    asked = f"{vcpus} vCPUs and {memory_gb:g} GB"
    if fits:
        suggestion = f"use {fits[0].name} ({fits[0].vcpus} vCPUs, {fits[0].memory_gb:g} GB), the smallest predefined {family} type with at least {asked}"
    elif same:
        largest = max(same, key=lambda m: (m.memory_gb, m.vcpus))
        suggestion = f"no predefined {family} type has {asked}; the largest is {largest.name} ({largest.vcpus} vCPUs, {largest.memory_gb:g} GB)"
    else:
        suggestion = "see `python -m components catalog` for the predefined machine types"
    return Violation(
        path,
        f"{name} is a custom machine type ({asked}); Vertex AI training takes predefined "
        "machine types only",
        suggestion,
        rule="machine",
    )


def _machine_suggestion(name: str, catalog: Catalog) -> str:
    """The nearest accepted machine types: the same shape closest in size (``n1-highmem-9`` →
    ``n1-highmem-8``), else the closest spelling in the same series (``n1``, ``a3``), else any."""
    accepted = [m.name for m in catalog.machine_types.values() if m.training]
    shape, size = _shape_and_size(name)
    shapes: dict[str, list[tuple[int, str]]] = {}
    for machine in accepted:
        other_shape, other_size = _shape_and_size(machine)
        if other_size is not None:
            shapes.setdefault(other_shape, []).append((other_size, machine))
    # The same shape (or the closest spelling of it), then the sizes nearest the one written.
    closest = [shape] if shape in shapes else nearest(shape, shapes, limit=1)
    if size is not None and closest:
        ranked = sorted(shapes[closest[0]], key=lambda s: (abs(s[0] - size), s[0]))
        return str(did_you_mean_one_of([m for _, m in ranked[:2]]))
    series = name.split("-", 1)[0].lower()
    same = [m for m in accepted if m.split("-", 1)[0] == series]
    found = did_you_mean(name, same, limit=3) or did_you_mean(name, accepted, limit=3)
    return found or "see `python -m components catalog`"


def _shape_and_size(name: str) -> tuple[str, int | None]:
    """``a2-highgpu-3g`` → (``a2-highgpu-*g``, 3); a name with no trailing size → (name, None)."""
    match = _SIZED_NAME.match(name.strip().lower())
    if not match:
        return name, None
    return f"{match.group(1)}-*{match.group(3)}", int(match.group(2))


def missing_built_in_gpus(spec: JobSpec, catalog: Catalog) -> list[Violation]:
    """The pools whose machine comes with GPUs (a2, g2, a3...) but name none: ``validate``
    refuses them, and ``estimate`` must too rather than price the machine without its GPUs
    (Vertex AI refuses such a pool, so it never runs at that price)."""
    found: list[Violation] = []
    for index, pool in enumerate(spec.worker_pool_specs):
        machine_spec = pool.machine_spec
        if machine_spec is None or machine_spec.accelerator_type or pool.is_placeholder:
            continue
        machine = catalog.machine_types.get(machine_spec.machine_type or "")
        path = f"workerPoolSpecs[{index}].machineSpec"
        found.extend(_fixed_accelerator_missing(path, machine))
    return found


def _fixed_accelerator_missing(path: str, machine: MachineType | None) -> Iterator[Violation]:
    """A machine that comes with GPUs (a2, g2, a3...) named without them (a TPU machine names
    its TPUs by itself: Vertex AI takes ``ct5lp-*``/``ct6e-*``/``ct5p-*`` with no accelerator
    fields)."""
    if machine is not None and machine.fixed_accelerator and machine.family != "tpu":
        yield Violation(
            f"{path}.acceleratorType",
            f"{machine.name} comes with {machine.fixed_accelerator_count} {machine.fixed_accelerator}",
            f"set acceleratorType: {machine.fixed_accelerator} and "
            f"acceleratorCount: {machine.fixed_accelerator_count}",
            rule="accelerator",
        )


def _compatibility(
    path: str, machine: MachineType, acc: str, count: int, catalog: Catalog
) -> Iterator[Violation]:
    counts = allowed_counts(catalog, machine.name, acc)
    if not counts:
        hosts = catalog.machines_by_accelerator.get(acc, ())
        yield Violation(
            f"{path}.acceleratorType",
            f"{acc} cannot be attached to {machine.name}",
            (
                f"{acc} runs on {_short_list(hosts)}"
                if hosts
                else f"{machine.name} takes {machine.fixed_accelerator}"
                if machine.fixed_accelerator
                else "no machine type in the catalog takes it"
            ),
            rule="compatibility",
        )
        return
    if count not in counts:
        hint = ""
        limits_ok = [c for c in counts if _host_limit_problem(machine, acc, c, catalog) is None]
        problem = _host_limit_problem(machine, acc, count, catalog)
        if problem and limits_ok and count < min(limits_ok):
            hint = f"; {problem}, so {machine.name} needs at least {min(limits_ok)}"
        yield Violation(
            f"{path}.acceleratorCount",
            f"{count} x {acc} is not allowed on {machine.name}{hint}",
            f"allowed counts of {acc} on {machine.name}: {', '.join(map(str, counts))}",
            rule="compatibility",
        )
        return
    problem = _host_limit_problem(machine, acc, count, catalog)
    if problem:
        yield Violation(
            f"{path}.machineType",
            f"{problem}",
            _smaller_machine_suggestion(machine, acc, count, catalog),
            rule="host-limits",
        )


def _host_limit_problem(machine: MachineType, acc: str, count: int, catalog: Catalog) -> str | None:
    limit = catalog.host_limits.get((acc, count))
    if limit is None or machine.family != "n1":
        return None
    if machine.vcpus <= limit.max_vcpus and machine.memory_gb <= limit.max_memory_gb:
        return None
    return (
        f"{count} x {acc} support at most {limit.max_vcpus} vCPUs and {limit.max_memory_gb:g} GB; "
        f"{machine.name} has {machine.vcpus} vCPUs and {machine.memory_gb:g} GB"
    )


def _smaller_machine_suggestion(
    machine: MachineType, acc: str, count: int, catalog: Catalog
) -> str:
    fits = [
        m.name
        for m in catalog.machine_types.values()
        if count in allowed_counts(catalog, m.name, acc)
        and _host_limit_problem(m, acc, count, catalog) is None
    ]
    return (
        f"with {count} x {acc} use one of {_short_list(fits)}"
        if fits
        else "use fewer vCPUs or less memory"
    )


def _counts_text(catalog: Catalog, spec: MachineSpec) -> str:
    counts = allowed_counts(catalog, spec.machine_type or "", spec.accelerator_type or "")
    return f"acceleratorCount: {counts[0]}" if counts else "acceleratorCount: 1"


def _machine_only_suggestion(accelerator: str, catalog: Catalog) -> str:
    """How Vertex AI takes a TPU that has no ``AcceleratorType`` value: its machine types,
    with a ``tpuTopology`` and no accelerator fields."""
    machines = sorted(
        (m for m in catalog.machine_types.values() if m.fixed_accelerator == accelerator),
        key=lambda m: (m.fixed_accelerator_count, m.name),
    )
    if not machines:
        return "see `python -m components catalog`"
    example = machines[len(machines) // 2]
    topologies = catalog.tpu_topologies.get(example.name, ())
    return (
        "remove acceleratorType and acceleratorCount; set machineType "
        f"{_or_list(m.name for m in machines)}"
        + (f" with tpuTopology (e.g. {example.name} with {topologies[0]})" if topologies else "")
    )


_TPU_GENERATION = re.compile(r"^(?:cloud[-_ ]?)?tpu[-_ ]?v(\d+)", re.IGNORECASE)
"""A name that says which TPU generation it means (``TPU_V6E``, ``tpu-v5p``): the digit."""


def _tpu_suggestion(name: str, catalog: Catalog) -> str | None:
    """For a TPU name the catalog does not know, the TPU types of its generation (``TPU_V5`` →
    TPU_V5_LITEPOD or TPU_V5P), never another generation's."""
    match = _TPU_GENERATION.match(name.strip())
    if match is None:
        return None
    generation = match.group(1)
    same = [
        a.name
        for a in catalog.accelerators.values()
        if a.kind == "tpu" and re.match(rf"^TPU_V{generation}(?!\d)", a.name)
    ]
    if not same:
        return None
    enum = [a for a in same if catalog.accelerators[a].api_enum]
    by_machine = [
        f"{catalog.accelerators[a].gcloud_name.removeprefix('tpu-')}: "
        + _machine_only_suggestion(a, catalog).removeprefix(
            "remove acceleratorType and acceleratorCount; "
        )
        for a in same
        if a not in enum
    ]
    parts = (
        [str(did_you_mean(name.upper(), enum, limit=2) or did_you_mean_one_of(enum))]
        if enum
        else []
    )
    if by_machine and not enum:
        parts.append("remove acceleratorType and acceleratorCount")
    parts += [f"for TPU {hint}" for hint in by_machine]
    return "; ".join(parts)


def _accelerator_suggestion(name: str, machine: MachineType | None, catalog: Catalog) -> str:
    """The enum name ``name`` stands for (gcloud name, shorthand), else the nearest type the
    machine takes, else the nearest current type; never a retired one."""
    takes = [
        a
        for a in (accepted_accelerators(catalog, machine.name) if machine else ())
        if not catalog.accelerators[a].retired
    ]
    resolved = resolve_accelerator(catalog, name)
    if resolved and not catalog.accelerators[resolved].api_enum:
        return f"{name} means {resolved}: {_machine_only_suggestion(resolved, catalog)}"
    tpu = None if resolved else _tpu_suggestion(name, catalog)
    if tpu:
        return tpu
    if resolved:
        text = f"the API spells it {resolved}"
        if machine is not None and takes and resolved not in takes:
            text += f", which {machine.name} cannot take; {machine.name} takes {_or_list(takes)}"
        return text
    close = did_you_mean(name, takes, limit=2)
    if close:
        return close
    if machine is not None and len(takes) == 1:
        return f"{machine.name} takes {takes[0]}"
    current = [a.name for a in catalog.accelerators.values() if not a.retired and a.api_enum]
    return _did_you_mean(name, current)


def _replacement_suggestion(
    replacement: str | None, machine: MachineType | None, catalog: Catalog
) -> str:
    if not replacement:
        return "choose a current accelerator type"
    if machine is not None:
        counts = allowed_counts(catalog, machine.name, replacement)
        if counts:
            return f"use {replacement}; allowed counts on {machine.name}: {', '.join(map(str, counts))}"
    return f"use {replacement}"


def _did_you_mean(name: str, choices: Any) -> str:
    found = did_you_mean(name, choices, limit=3, otherwise="see `python -m components catalog`")
    return str(found)


def _or_list(names: Iterable[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    items = list(names)
    return " or ".join(items) if len(items) < 3 else f"{', '.join(items[:-1])} or {items[-1]}"


def _short_list(names: Any, limit: int = 6) -> str:
    items = list(names)
    text = ", ".join(items[:limit])
    return text + (f" and {len(items) - limit} more" if len(items) > limit else "")


# --- reservations, GPU partitions, capacity, mounts --------------------------------------


def _reservation(path: str, spec: MachineSpec) -> Iterator[Violation]:
    """``reservation_affinity.proto``: only SPECIFIC_RESERVATION names one, by key and values."""
    affinity = spec.reservation_affinity
    if affinity is None:
        return
    kind, key, values = affinity.reservation_affinity_type, affinity.key, list(affinity.values)
    types = ", ".join(RESERVATION_AFFINITY_TYPES)
    if not kind or kind == "TYPE_UNSPECIFIED":
        yield Violation(
            f"{path}.reservationAffinityType", "is required", f"one of {types}", rule="reservation"
        )
        return
    if kind not in RESERVATION_AFFINITY_TYPES:
        yield Violation(
            f"{path}.reservationAffinityType",
            f"unknown reservation affinity type {kind!r}",
            did_you_mean(kind, RESERVATION_AFFINITY_TYPES, otherwise=f"one of {types}"),
            rule="reservation",
        )
        return
    if kind != "SPECIFIC_RESERVATION":
        if key or values:
            yield Violation(
                path,
                f"{kind} names no reservation, so it takes neither key nor values",
                "remove key and values, or set reservationAffinityType: SPECIFIC_RESERVATION",
                rule="reservation",
            )
        return
    yield from _specific_reservation(path, key, values)


def _specific_reservation(path: str, key: str | None, values: list[str]) -> Iterator[Violation]:
    example = "projects/PROJECT/zones/ZONE/reservations/NAME"
    if not key and not values:
        yield Violation(
            path,
            "SPECIFIC_RESERVATION names the reservation to consume with key and values",
            f"key: {RESERVATION_NAME_KEY}, values: [{example}]",
            rule="reservation",
        )
        return
    if key != RESERVATION_NAME_KEY:
        yield Violation(
            f"{path}.key",
            "is required with SPECIFIC_RESERVATION"
            if not key
            else f"{key!r} is not the key that names a reservation",
            f"key: {RESERVATION_NAME_KEY}",
            rule="reservation",
        )
    if not values:
        yield Violation(
            f"{path}.values",
            "SPECIFIC_RESERVATION needs the reservation to consume",
            f"values: [{example}]",
            rule="reservation",
        )
    for index, value in enumerate(values):
        if not _RESERVATION_NAME.match(value):
            yield Violation(
                f"{path}.values[{index}]",
                f"{value!r} is not a reservation name",
                f"write it as NAME, projects/PROJECT/reservations/NAME or {example}",
                rule="reservation",
            )


def _gpu_partition(
    path: str, spec: MachineSpec, machine: MachineType | None, catalog: Catalog
) -> Iterator[Violation]:
    """MIG (``MachineSpec.gpu_partition_size``): one GPU that partitions, into a size it offers."""
    size = spec.gpu_partition_size
    acc = spec.accelerator_type
    info = catalog.accelerators.get(acc) if acc else None
    if not size or (acc and info is None):
        return  # an unknown accelerator is reported on its own
    capable = [a.name for a in catalog.accelerators.values() if a.mig_partition_sizes]
    if info is None or not info.mig_partition_sizes:
        yield Violation(
            f"{path}.gpuPartitionSize",
            f"{acc} has no MIG partitions" if acc else "partitions a GPU, but the pool has none",
            f"GPUs that partition: {_or_list(capable)}",
            rule="mig",
        )
        return
    if size not in info.mig_partition_sizes:
        yield Violation(
            f"{path}.gpuPartitionSize",
            f"{acc} has no {size!r} partition",
            f"{acc} partitions into {_or_list(info.mig_partition_sizes)}",
            rule="mig",
        )
    if spec.accelerator_count != 1:
        singles = [
            m for (m, a), counts in catalog.attachable_counts.items() if a == acc and 1 in counts
        ]
        takes_one = machine is not None and 1 in allowed_counts(catalog, machine.name, info.name)
        yield Violation(
            f"{path}.acceleratorCount",
            f"gpuPartitionSize partitions exactly one GPU; acceleratorCount is {spec.accelerator_count}",
            "set acceleratorCount: 1"
            + (
                f" on a machine type that has one {acc}: {_or_list(singles)}"
                if singles and not takes_one
                else ""
            ),
            rule="mig",
        )


def _capacity(
    path: str, spec: MachineSpec, machine: MachineType, ctx: _Context
) -> Iterator[Violation]:
    """Machines whose capacity comes only from some consumption options (A3 Ultra, A4, A4X...)."""
    if not machine.capacity or ctx.on_persistent_resource:
        return  # a persistent resource's machines are already there
    asked = _STRATEGY_CAPACITY.get(ctx.strategy)
    affinity = spec.reservation_affinity
    reserved = (affinity.reservation_affinity_type if affinity else None) in (
        "ANY_RESERVATION",
        "SPECIFIC_RESERVATION",
    )
    if (
        asked is None
        or asked in machine.capacity
        or (reserved and "RESERVATION" in machine.capacity)
    ):
        return
    ways = []
    strategies: list[str] = [
        s for s in ("FLEX_START", "SPOT") if s in machine.capacity and s != asked
    ]
    if "ON_DEMAND" in machine.capacity:
        strategies.append("STANDARD")
    if strategies:
        ways.append(f"set scheduling.strategy: {' or '.join(strategies)}")
    if "RESERVATION" in machine.capacity:
        ways.append("consume a reservation (machineSpec.reservationAffinity: SPECIFIC_RESERVATION)")
    how = ctx.strategy or "STANDARD, the default"
    yield Violation(
        f"{path}.machineType",
        f"{machine.name} capacity comes only from "
        f"{_or_list(_CAPACITY_WORDS[c] for c in machine.capacity)}; "
        f"this job asks for {_CAPACITY_WORDS[asked]} (scheduling.strategy {how})",
        ", or ".join(ways),
        rule="capacity",
    )


def _mounts(base: str, pool: WorkerPoolSpec) -> Iterator[Violation]:
    """NFS and Lustre mounts: the fields ``machine_resources.proto`` requires, one mount point each."""
    for kind, mounts, required in (
        ("nfsMounts", pool.nfs_mounts, _NFS_FIELDS),
        ("lustreMounts", pool.lustre_mounts, _LUSTRE_FIELDS),
    ):
        seen: set[str] = set()
        for index, mount in enumerate(mounts):
            path = f"{base}.{kind}[{index}]"
            yield from _mount(path, mount, required)
            point = getattr(mount, "mount_point", None)
            if point and point in seen:
                yield Violation(
                    f"{path}.mountPoint",
                    f"{point!r} is mounted twice",
                    "give each mount its own mountPoint",
                    rule="mounts",
                )
            seen.add(point or "")


# (attribute, camelCase name, example) per required mount field.
_NFS_FIELDS = (
    ("server", "server", "the NFS server's IP address, e.g. 10.0.0.2"),
    ("path", "path", "the exported path, e.g. /share"),
    ("mount_point", "mountPoint", "a directory name under /mnt/nfs/, e.g. data"),
)
_LUSTRE_FIELDS = (
    ("instance_ip", "instanceIp", "the Lustre instance's IP address"),
    ("volume_handle", "volumeHandle", "the Lustre volume's identifier"),
    ("filesystem", "filesystem", "the Lustre file system name"),
    ("mount_point", "mountPoint", "a directory name under /mnt/lustre/, e.g. data"),
)


def _mount(
    path: str, mount: Any, required: tuple[tuple[str, str, str], ...]
) -> Iterator[Violation]:
    for attribute, name, example in required:
        value = getattr(mount, attribute, None)
        if not value:
            yield Violation(f"{path}.{name}", "is required", example, rule="mounts")
        elif attribute in ("server", "instance_ip") and not _is_ip(value):
            yield Violation(
                f"{path}.{name}", f"{value!r} is not an IP address", example, rule="mounts"
            )
        elif attribute == "path" and not value.startswith("/"):
            yield Violation(f"{path}.{name}", "must start with '/'", f"/{value}", rule="mounts")
        elif attribute == "mount_point" and ".." in value.split("/"):
            yield Violation(
                f"{path}.{name}", "must stay inside its mount directory", example, rule="mounts"
            )


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


# --- region and zones -------------------------------------------------------------------


def _closest_regions(catalog: Catalog, near: str, regions: list[str]) -> list[str]:
    """Regions ordered as a user would move: same geography first, then by shared name prefix."""
    home = catalog.regions[near].geography if near in catalog.regions else ""

    def shared_prefix(name: str) -> int:
        return next(
            (i for i, (a, b) in enumerate(zip(name, near, strict=False)) if a != b),
            min(len(name), len(near)),
        )

    return sorted(
        regions,
        key=lambda r: (
            catalog.regions[r].geography != home if r in catalog.regions else True,
            -shared_prefix(r),
            r,
        ),
    )


def region_violation(path: str, region: str, catalog: Catalog) -> Violation | None:
    """The violation of ``region`` at ``path`` when ``catalog`` has no such region, with the
    nearest ones."""
    if region in catalog.regions:
        return None
    return Violation(
        path,
        f"unknown region {clipped(region)!r}",
        _did_you_mean(clipped(region, 200), catalog.regions),
        rule="region",
    )


def _region(spec: JobSpec, ctx: _Context) -> Iterator[Violation]:
    catalog, region = ctx.catalog, ctx.region
    assert region is not None
    unknown = region_violation("region", region, catalog)
    if unknown is not None:
        yield unknown
        return
    gpus: dict[str, list[int]] = {}
    for index, pool in enumerate(spec.worker_pool_specs):
        acc = pool.machine_spec.accelerator_type if pool.machine_spec else None
        info = catalog.accelerators.get(acc) if acc else None
        if acc and info is not None and info.kind == "gpu":
            gpus.setdefault(acc, []).append(index)
    # Where a GPU may run for training is Vertex AI's list; Compute Engine's zones only say
    # which GPUs one zone holds together (the single-zone rule).
    offered = catalog.training_accelerators.get(region, frozenset())
    zoned = catalog.region_accelerators.get(region, frozenset())
    for acc, pools in gpus.items():
        # A retired GPU is refused by the `retired` rule; where the zones' history still has
        # it, saying it is not offered there too would only repeat that.
        retired_here = catalog.accelerators[acc].retired and acc in zoned
        if acc not in offered and not retired_here:
            path = f"workerPoolSpecs[{pools[0]}].machineSpec.acceleratorType"
            yield from _not_offered(path, acc, offered, ctx)
    for index, pool in enumerate(spec.worker_pool_specs):
        tpu = _pool_tpu(pool, catalog)
        if tpu is not None and tpu not in offered and not catalog.accelerators[tpu].retired:
            named = pool.machine_spec is not None and pool.machine_spec.accelerator_type
            field_name = "acceleratorType" if named else "machineType"
            yield from _not_offered(
                f"workerPoolSpecs[{index}].machineSpec.{field_name}", tpu, offered, ctx
            )
    wanted = [acc for acc in gpus if acc in zoned]
    if len(wanted) > 1 and not zones_offering(catalog, region, wanted):
        yield _zone_violation(wanted, ctx)


def _not_offered(
    path: str, acc: str, offered: frozenset[str], ctx: _Context
) -> Iterator[Violation]:
    """A GPU the job's region does not offer for training: where it is offered, or, retired,
    where its replacement is."""
    catalog, region = ctx.catalog, ctx.region or ""
    info = catalog.accelerators[acc]
    nothing_here = f"; {region} has no GPUs" if not offered else ""
    if info.retired:
        instead = info.replacement
        where = (
            _closest_regions(catalog, region, training_regions(catalog, instead)) if instead else []
        )
        yield Violation(
            path,
            f"{acc} is not offered in {region}{nothing_here}",
            f"{acc} is retired: use {instead}"
            + (
                f", which {region} offers"
                if region in where
                else f" (offered in {_short_list(where)})"
                if where
                else ""
            )
            if instead
            else f"{acc} is retired: choose a current accelerator type",
            rule="region",
        )
        return
    elsewhere = _closest_regions(catalog, region, training_regions(catalog, acc))
    if not elsewhere:
        yield Violation(
            path,
            f"the catalog has no training-region data for {acc}, so its availability in "
            f"{region} is not checked",
            "check Vertex AI's locations page (accelerators for training) before launching",
            rule="region",
            severity="warning",
        )
        return
    offer = catalog.training_offers.get((region, acc))
    why = (
        f"Vertex AI offers {acc} in {region} for prediction only, not for training"
        if offer is not None and not offer.training
        else f"{acc} is not offered in {region}{nothing_here}"
    )
    yield Violation(
        path,
        why,
        f"{acc} is offered in {_short_list(elsewhere)}",
        rule="region",
    )


def _zone_violation(wanted: list[str], ctx: _Context) -> Violation:
    """Several GPU types no single zone of the region offers together (seed 001)."""
    catalog, region = ctx.catalog, ctx.region or ""
    per_zone = "; ".join(
        f"{z.name}: {', '.join(sorted(z.accelerators & set(wanted))) or 'none of them'}"
        for z in catalog.zones_by_region.get(region, ())
    )
    reason = (
        f"all GPU types of one job must be in a single zone, and no zone of {region} offers "
        f"{', '.join(sorted(wanted))} together ({per_zone})"
    )
    retired = {
        a: catalog.accelerators[a].replacement for a in wanted if catalog.accelerators[a].retired
    }
    if retired:
        current = sorted({retired.get(a) or a for a in wanted})
        zones = zones_offering(catalog, region, current)
        swap = "; ".join(f"replace the retired {a} with {b}" for a, b in retired.items() if b)
        found = (
            f": {zones[0]} then offers {' and '.join(current)} together"
            if zones
            else f" and use a region where one zone has {', '.join(current)}: "
            f"{_short_list(_closest_regions(catalog, region, regions_offering(catalog, current)))}"
        )
        return Violation(
            "workerPoolSpecs", reason, (swap or "replace the retired types") + found, rule="zone"
        )
    everywhere = _closest_regions(catalog, region, regions_offering(catalog, wanted))
    return Violation(
        "workerPoolSpecs",
        reason,
        f"use one GPU type, or a region where one zone has them all: {_short_list(everywhere)}"
        if everywhere
        else "use one GPU type for every pool",
        rule="zone",
    )
