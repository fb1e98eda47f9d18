"""Validation of a job spec against the catalog, before any API call.

``validate`` returns every violation it finds, never raises, and never prints the value
of an environment variable. Each rule cites where it comes from in ``catalog/README.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from components._catalog import (
    Catalog,
    MachineType,
    allowed_counts,
    load_catalog,
    regions_offering,
    zones_offering,
)
from components._errors import SpecError
from components._spec import JobSpec, MachineSpec, WorkerPoolSpec
from components._violations import Violation, did_you_mean

__all__ = [
    "BOOT_DISK_GB",
    "BOOT_DISK_TYPES",
    "MAX_DISPLAY_NAME",
    "MAX_LABELS",
    "MAX_LABEL_CHARS",
    "POOL_ROLES",
    "STRATEGIES",
    "Target",
    "validate",
    "validate_document",
]

Target = Literal["vertex", "local"]

POOL_ROLES = ("chief", "workers", "parameter servers", "evaluators")
STRATEGIES = ("STANDARD", "SPOT", "FLEX_START", "ON_DEMAND", "LOW_COST")
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
_PROJECT = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
_NETWORK = re.compile(r"^projects/[^/]+/global/networks/[^/]+$")
_TENSORBOARD = re.compile(r"^projects/[^/]+/locations/([^/]+)/tensorboards/[^/]+$")
_KMS_KEY = re.compile(r"^projects/[^/]+/locations/([^/]+)/keyRings/[^/]+/cryptoKeys/[^/]+$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_LOCAL_SCHEMES = ("file://", "/", "./", "../")


@dataclass(frozen=True, slots=True)
class _Context:
    catalog: Catalog
    region: str | None
    target: Target


def validate(
    spec: JobSpec,
    *,
    catalog: Catalog | None = None,
    region: str | None = None,
    target: Target = "vertex",
) -> list[Violation]:
    """Every violation in ``spec``; an empty list means Vertex AI should accept it.

    ``region`` overrides ``spec.region``; with neither, region rules are skipped.
    ``target="local"`` also accepts local paths where Vertex needs ``gs://`` URIs.
    """
    context = _Context(catalog or load_catalog(), region or spec.region, target)
    try:
        return list(_job_violations(spec, context))
    except Exception as exc:  # a bug here must not hide the spec's problems as a traceback
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
    if spec.project is not None and not _PROJECT.match(spec.project):
        yield Violation(
            "project",
            f"{spec.project!r} is not a project ID",
            "6-30 lowercase letters, digits or hyphens, starting with a letter",
            rule="project",
        )
    yield from _scheduling(spec)
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
    if sched.max_wait_duration is not None:
        if sched.strategy != "FLEX_START":
            yield Violation(
                "scheduling.maxWaitDuration",
                "only applies to the FLEX_START strategy",
                "set strategy: FLEX_START or remove maxWaitDuration",
                rule="scheduling",
            )
        if sched.max_wait_duration.total_seconds() <= 0:
            yield Violation(
                "scheduling.maxWaitDuration", "must be longer than zero", None, rule="scheduling"
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


def _uri(path: str, uri: str, ctx: _Context) -> Iterator[Violation]:
    if uri.startswith("gs://"):
        if len(uri) <= len("gs://") or uri[5] == "/":
            yield Violation(path, "names no bucket", "gs://BUCKET/PATH", rule="uris")
        return
    if ctx.target == "local" and (uri.startswith(_LOCAL_SCHEMES) or "://" not in uri):
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
    for index, pool in enumerate(pools):
        if not pool.is_placeholder:
            yield from _pool(index, pool, ctx)


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
    if pool.machine_spec is None or not pool.machine_spec.machine_type:
        yield Violation(
            f"{base}.machineSpec.machineType", "is required", "e.g. n1-standard-8", rule="machine"
        )
        return
    yield from _machine(f"{base}.machineSpec", pool.machine_spec, ctx)


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
        path = f"{base}.pythonPackageSpec"
        if not package.executor_image_uri:
            yield Violation(
                f"{path}.executorImageUri",
                "is required",
                "a prebuilt training image",
                rule="trainer",
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
        if not package.python_module:
            yield Violation(
                f"{path}.pythonModule", "is required", "e.g. trainer.task", rule="trainer"
            )
        elif not _MODULE.match(package.python_module):
            yield Violation(
                f"{path}.pythonModule",
                f"{package.python_module!r} is not a Python module name",
                "dotted names like trainer.task",
                rule="trainer",
            )
        yield from _env(f"{path}.env", package.env)
    if container is not None:
        path = f"{base}.containerSpec"
        if not container.image_uri:
            yield Violation(
                f"{path}.imageUri",
                "is required",
                "e.g. us-docker.pkg.dev/PROJECT/REPO/IMAGE:TAG",
                rule="trainer",
            )
        yield from _env(f"{path}.env", container.env)


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


# --- machines and accelerators ----------------------------------------------------------


def _machine(path: str, spec: MachineSpec, ctx: _Context) -> Iterator[Violation]:
    catalog = ctx.catalog
    assert spec.machine_type is not None
    machine = catalog.machine_types.get(spec.machine_type)
    if machine is None:
        yield Violation(
            f"{path}.machineType",
            f"unknown machine type {spec.machine_type!r}",
            _did_you_mean(spec.machine_type, catalog.machine_types),
            rule="machine",
        )
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
    accelerator_info = catalog.accelerators.get(acc_name) if acc_name else None
    if spec.tpu_topology and (accelerator_info is None or accelerator_info.kind != "tpu"):
        yield Violation(
            f"{path}.tpuTopology",
            "only applies to TPU accelerators",
            "remove it",
            rule="accelerator",
        )
    if acc_name is None:
        yield from _fixed_accelerator_missing(path, machine)
        return
    accelerator = catalog.accelerators.get(acc_name)
    if accelerator is None:
        yield Violation(
            f"{path}.acceleratorType",
            f"unknown accelerator type {acc_name!r}",
            _accelerator_suggestion(acc_name, catalog),
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


def _fixed_accelerator_missing(path: str, machine: MachineType | None) -> Iterator[Violation]:
    """A machine that comes with GPUs (a2, g2, a3...) named without them."""
    if machine is not None and machine.fixed_accelerator:
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


def _accelerator_suggestion(name: str, catalog: Catalog) -> str:
    by_gcloud = catalog.accelerators_by_gcloud_name.get(name.lower())
    if by_gcloud:
        return f"the API spells it {by_gcloud}"
    return _did_you_mean(name, catalog.accelerators)


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


def _short_list(names: Any, limit: int = 6) -> str:
    items = list(names)
    text = ", ".join(items[:limit])
    return text + (f" and {len(items) - limit} more" if len(items) > limit else "")


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


def _region(spec: JobSpec, ctx: _Context) -> Iterator[Violation]:
    catalog, region = ctx.catalog, ctx.region
    assert region is not None
    if region not in catalog.regions:
        yield Violation(
            "region",
            f"unknown region {region!r}",
            _did_you_mean(region, catalog.regions),
            rule="region",
        )
        return
    gpus: dict[str, list[int]] = {}
    for index, pool in enumerate(spec.worker_pool_specs):
        acc = pool.machine_spec.accelerator_type if pool.machine_spec else None
        info = catalog.accelerators.get(acc) if acc else None
        if acc and info is not None and info.kind == "gpu":
            gpus.setdefault(acc, []).append(index)
    offered = catalog.region_accelerators.get(region, frozenset())
    for acc, pools in gpus.items():
        if acc in offered:
            continue
        elsewhere = _closest_regions(catalog, region, regions_offering(catalog, [acc]))
        nothing_here = f"; {region} has no GPUs" if not offered else ""
        yield Violation(
            f"workerPoolSpecs[{pools[0]}].machineSpec.acceleratorType",
            f"{acc} is not offered in {region}{nothing_here}",
            f"{acc} is offered in {_short_list(elsewhere)}"
            if elsewhere
            else "no region in the catalog offers it",
            rule="region",
        )
    wanted = [acc for acc in gpus if acc in offered]
    if len(wanted) > 1 and not zones_offering(catalog, region, wanted):
        everywhere = _closest_regions(catalog, region, regions_offering(catalog, wanted))
        per_zone = "; ".join(
            f"{z.name}: {', '.join(sorted(z.accelerators & set(wanted))) or 'none of them'}"
            for z in catalog.zones_by_region.get(region, ())
        )
        yield Violation(
            "workerPoolSpecs",
            f"all GPU types of one job must be in a single zone, and no zone of {region} offers "
            f"{', '.join(sorted(wanted))} together ({per_zone})",
            f"use one GPU type, or a region where one zone has them all: {_short_list(everywhere)}"
            if everywhere
            else "use one GPU type for every pool",
            rule="zone",
        )
