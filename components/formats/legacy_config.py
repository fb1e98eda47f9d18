"""AI Platform Training ``trainingInput`` (legacy ``config.yaml``) → ``JobSpec``.

AI Platform Training is retired; Vertex AI ``CustomJob`` replaces it. Pool order is the
same: 0 master (chief), 1 workers, 2 parameter servers, 3 evaluators. Legacy machine
types and scale tiers map to today's machine types through the catalog
(``legacy_machine_types.csv``, ``scale_tiers.csv``); a runtime version maps to a
prebuilt Vertex training image (``training_images.csv``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from components._catalog import Catalog, load_catalog
from components._errors import SpecInvalidError
from components._spec import JobSpec
from components._violations import Violation, did_you_mean
from components.formats.result import LoadedSpec

__all__ = [
    "DEFAULT_RUNTIME_VERSION",
    "LegacyConversion",
    "convert_training_input",
    "read_legacy_config",
    "training_image",
]

DEFAULT_RUNTIME_VERSION = "2.15"
"""Used when a legacy config names no runtimeVersion (documented in the README)."""

_ROLES = (
    ("master", "masterType"),
    ("worker", "workerType"),
    ("parameterServer", "parameterServerType"),
    ("evaluator", "evaluatorType"),
)
# The shape of each trainingInput field: checked before anything is converted, so a list
# where a name belongs is a violation naming the field, never a crash (or a huge str()).
_TEXT = "text"
_NUMBER = "number"  # a whole number, or text holding one ("4")
_VERSION = "version"  # text or a number: YAML reads `runtimeVersion: 2.11` as a float
_FLAG = "flag"
_MAPPING = "mapping"
_TEXT_LIST = "list of text"
_SCALAR_LIST = "list of values"  # args: YAML reads `--epochs, 10` as text and a number

_FIELD_KINDS: dict[str, str] = {
    "scaleTier": _TEXT,
    "masterType": _TEXT,
    "masterConfig": _MAPPING,
    "workerType": _TEXT,
    "workerConfig": _MAPPING,
    "workerCount": _NUMBER,
    "parameterServerType": _TEXT,
    "parameterServerConfig": _MAPPING,
    "parameterServerCount": _NUMBER,
    "evaluatorType": _TEXT,
    "evaluatorConfig": _MAPPING,
    "evaluatorCount": _NUMBER,
    "packageUris": _TEXT_LIST,
    "pythonModule": _TEXT,
    "args": _SCALAR_LIST,
    "region": _TEXT,
    "jobDir": _TEXT,
    "runtimeVersion": _VERSION,
    "pythonVersion": _VERSION,
    "scheduling": _MAPPING,
    "serviceAccount": _TEXT,
    "network": _TEXT,
    "encryptionConfig": _MAPPING,
    "enableWebAccess": _FLAG,
    "useChiefInTfConfig": _FLAG,
    "hyperparameters": _MAPPING,
}
_CONFIG_FIELD_KINDS: dict[str, str] = {
    "acceleratorConfig": _MAPPING,
    "imageUri": _TEXT,
    "containerCommand": _TEXT_LIST,
    "containerArgs": _SCALAR_LIST,
    "diskConfig": _MAPPING,
    "tpuTfVersion": _VERSION,
}
_ACCELERATOR_FIELD_KINDS: dict[str, str] = {"count": _NUMBER, "type": _TEXT}
_DISK_FIELD_KINDS: dict[str, str] = {"bootDiskSizeGb": _NUMBER, "bootDiskType": _TEXT}
_NESTED_KINDS: dict[str, dict[str, str]] = {
    **dict.fromkeys(
        ("masterConfig", "workerConfig", "parameterServerConfig", "evaluatorConfig"),
        _CONFIG_FIELD_KINDS,
    ),
    "acceleratorConfig": _ACCELERATOR_FIELD_KINDS,
    "diskConfig": _DISK_FIELD_KINDS,
    "encryptionConfig": {"kmsKeyName": _TEXT},
}
_SCALARS = (str, int, float)


def _fits(value: Any, kind: str) -> bool:
    if value is None:
        return True  # absent and null mean the same here
    if kind == _TEXT:
        return isinstance(value, str)
    if kind == _NUMBER:
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, str) and value.strip().lstrip("+").isdigit() and len(value) < 20
        )
    if kind == _VERSION:
        return isinstance(value, _SCALARS) and not isinstance(value, bool)
    if kind == _FLAG:
        return isinstance(value, bool)
    if kind == _MAPPING:
        return isinstance(value, dict)
    if kind == _TEXT_LIST:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, list) and all(
        isinstance(v, _SCALARS) and not isinstance(v, bool) for v in value
    )


def _shape_violations(mapping: dict[Any, Any], kinds: dict[str, str], path: str) -> list[Violation]:
    """One violation per field of ``mapping`` that is unknown or of the wrong kind."""
    found: list[Violation] = []
    for key, value in mapping.items():
        where = f"{path}.{key}"
        kind = kinds.get(key) if isinstance(key, str) else None
        if kind is None:
            found.append(
                Violation(
                    where,
                    f"is not a {path.rsplit('.', 1)[-1]} field this converter knows",
                    did_you_mean(str(key), kinds),
                    rule="legacy",
                )
            )
        elif not _fits(value, kind):
            found.append(Violation(where, f"must be {_KIND_WORDS[kind]}", rule="legacy"))
        elif isinstance(value, dict) and key in _NESTED_KINDS:
            found.extend(_shape_violations(value, _NESTED_KINDS[key], where))
    return found


_KIND_WORDS = {
    _TEXT: "text",
    _NUMBER: "a whole number",
    _VERSION: "a version like 2.11",
    _FLAG: "true or false",
    _MAPPING: "a mapping",
    _TEXT_LIST: "a list of text",
    _SCALAR_LIST: "a list of text or numbers",
}


@dataclass
class LegacyConversion:
    """The spec converted from a legacy config, and notes on what was assumed."""

    spec: JobSpec
    notes: list[str] = field(default_factory=list)
    scale_tier: str | None = None
    """The legacy scale tier the cluster came from (None for CUSTOM): it has its own price."""


def _registry_prefix(catalog: Catalog, region: str | None) -> str:
    known = catalog.regions.get(region) if region else None
    geography = known.geography if known else ""
    return {"Europe": "europe-docker.pkg.dev", "Asia-Pacific": "asia-docker.pkg.dev"}.get(
        geography, "us-docker.pkg.dev"
    )


def training_image(
    catalog: Catalog,
    runtime_version: str,
    python_version: str | None,
    gpu: bool,
    region: str | None,
) -> str | None:
    """The prebuilt Vertex training image for a legacy runtime version, or None."""
    kind = "gpu" if gpu else "cpu"
    for image in catalog.training_images:
        if image.runtime_version == runtime_version and image.accelerator == kind:
            if python_version and image.python_version != python_version:
                continue
            return f"{_registry_prefix(catalog, region)}/{image.image_path}"
    return None


def convert_training_input(
    training_input: Any,
    *,
    display_name: str | None = None,
    labels: dict[str, str] | None = None,
    project: str | None = None,
    catalog: Catalog | None = None,
) -> LegacyConversion:
    """Convert a ``trainingInput`` mapping; raises ``SpecInvalidError`` naming bad fields."""
    if not isinstance(training_input, dict):
        raise SpecInvalidError([Violation("trainingInput", "must be a mapping", rule="legacy")])
    # Fields of the wrong shape are reported and left out, so the rest is still converted
    # (and checked) without ever touching them.
    shape = _shape_violations(training_input, _FIELD_KINDS, "trainingInput")
    misshapen = {v.path.split(".")[1] for v in shape}
    ti = {k: v for k, v in training_input.items() if v is not None and k not in misshapen}
    converter = _Converter(ti, catalog or load_catalog())
    tier_name = converter.expand_scale_tier()
    pools = converter.pools()
    if shape or converter.problems:
        reported = {v.path for v in shape}
        raise SpecInvalidError([*shape, *(v for v in converter.problems if v.path not in reported)])
    document = converter.document(pools, display_name, labels, project)
    spec = JobSpec.parse({k: v for k, v in document.items() if v is not None})
    return LegacyConversion(spec, converter.notes, None if tier_name == "CUSTOM" else tier_name)


_TIER_SETS = (
    "masterType",
    "workerType",
    "parameterServerType",
    "workerCount",
    "parameterServerCount",
)


@dataclass
class _Converter:
    """One conversion: the (well-shaped) trainingInput, and what it found on the way."""

    ti: dict[str, Any]
    catalog: Catalog
    problems: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def problem(self, path: str, reason: str, suggestion: str | None = None) -> None:
        self.problems.append(Violation(path, reason, suggestion, rule="legacy"))

    def expand_scale_tier(self) -> str:
        """Fill the cluster in from the scale tier (not CUSTOM); returns the tier's name."""
        ti = self.ti
        tier_name = str(ti.get("scaleTier", "BASIC")).upper()
        if tier_name == "CUSTOM":
            if "masterType" not in ti:
                path = "trainingInput.masterType"
                self.problem(path, "is required with scaleTier CUSTOM", "e.g. n1-standard-8")
            return tier_name
        tier = self.catalog.scale_tiers.get(tier_name)
        if tier is None:
            choices = [*self.catalog.scale_tiers, "CUSTOM"]
            reason = f"unknown scale tier {tier_name!r}"
            self.problem("trainingInput.scaleTier", reason, did_you_mean(tier_name, choices))
            return tier_name
        conflicting = [k for k in _TIER_SETS if k in ti]
        if conflicting:
            self.problem(
                "trainingInput.scaleTier",
                f"{tier_name} sets the cluster itself; {', '.join(conflicting)} need scaleTier CUSTOM",
                "set scaleTier: CUSTOM",
            )
        ti["masterType"] = tier.master_type
        if tier.worker_type:
            ti["workerType"], ti["workerCount"] = tier.worker_type, tier.worker_count
        if tier.parameter_server_type:
            ti["parameterServerType"] = tier.parameter_server_type
            ti["parameterServerCount"] = tier.parameter_server_count
        self.notes.append(f"scale tier {tier_name} expanded from scale_tiers.csv ({tier.source})")
        return tier_name

    def trainer_args(self) -> list[str]:
        args = [str(a) for a in self.ti.get("args") or []]
        job_dir = self.ti.get("jobDir")
        if job_dir:
            # The legacy service passed --job-dir to the trainer as well (seeds 000/001).
            args = [f"--job-dir={job_dir}", *args]
        return args

    def pools(self) -> list[dict[str, Any]]:
        """Pool 0 master, 1 workers, 2 parameter servers, 3 evaluators; empty middle pools kept."""
        if not self.ti.get("runtimeVersion"):
            self.notes.append(f"no runtimeVersion: using the default {DEFAULT_RUNTIME_VERSION}")
        args = self.trainer_args()
        pools = [
            self.role_pool(index, role, type_key, args)
            for index, (role, type_key) in enumerate(_ROLES)
        ]
        while pools and not pools[-1]:
            pools.pop()
        return pools

    def role_pool(self, index: int, role: str, type_key: str, args: list[str]) -> dict[str, Any]:
        ti = self.ti
        count = 1 if index == 0 else _count(ti, f"{role}Count", self.problems)
        machine_name = ti.get(type_key)
        if index > 0 and count == 0:
            return {}
        if machine_name is None:
            if index > 0:
                self.problem(
                    f"trainingInput.{type_key}",
                    f"is required when {role}Count is {count}",
                    f"e.g. {ti.get('masterType', 'n1-standard-8')}",
                )
            return {}
        pool = _pool(ti, role, str(machine_name), count, self.catalog, self.problems, self.notes)
        config = ti.get(f"{role}Config") or {}
        image_uri = config.get("imageUri")
        if image_uri is None and index > 0:
            # pools inherit the master's container
            image_uri = (ti.get("masterConfig") or {}).get("imageUri")
        if image_uri:
            pool["containerSpec"] = _container(image_uri, config, args)
        else:
            gpu = bool(pool.get("machineSpec", {}).get("acceleratorCount"))
            pool["pythonPackageSpec"] = self.python_package(gpu, args)
        return pool

    def python_package(self, gpu: bool, args: list[str]) -> dict[str, Any]:
        ti = self.ti
        runtime = str(ti.get("runtimeVersion") or DEFAULT_RUNTIME_VERSION)
        python = str(ti["pythonVersion"]) if ti.get("pythonVersion") else None
        image = training_image(self.catalog, runtime, python, gpu, ti.get("region"))
        if image is None:
            known = sorted({i.runtime_version for i in self.catalog.training_images})
            self.problem(
                "trainingInput.runtimeVersion",
                f"no prebuilt Vertex training image is known for runtimeVersion {runtime}"
                + (f" with pythonVersion {python}" if python else ""),
                f"known runtime versions: {', '.join(known)}",
            )
        package: dict[str, Any] = {"executorImageUri": image or "", "args": args}
        if ti.get("packageUris"):
            package["packageUris"] = [str(u) for u in ti["packageUris"]]
        if ti.get("pythonModule"):
            package["pythonModule"] = str(ti["pythonModule"])
        return package

    def document(
        self,
        pools: list[dict[str, Any]],
        display_name: str | None,
        labels: dict[str, str] | None,
        project: str | None,
    ) -> dict[str, Any]:
        """The CustomJob document (None values are left out by the caller)."""
        ti = self.ti
        document: dict[str, Any] = {
            "workerPoolSpecs": pools,
            "displayName": display_name,
            "labels": labels or {},
            "project": project,
            "region": ti.get("region"),
        }
        if ti.get("jobDir"):
            document["baseOutputDirectory"] = ti["jobDir"]
        for key in ("serviceAccount", "network", "scheduling"):
            if ti.get(key) is not None:
                document[key] = _legacy_scheduling(ti[key]) if key == "scheduling" else ti[key]
        if isinstance(ti.get("encryptionConfig"), dict) and ti["encryptionConfig"].get(
            "kmsKeyName"
        ):
            document["encryptionSpec"] = {"kmsKeyName": ti["encryptionConfig"]["kmsKeyName"]}
        if ti.get("enableWebAccess"):
            document["enableWebAccess"] = True
        return document


def _container(image_uri: str, config: dict[str, Any], args: list[str]) -> dict[str, Any]:
    container: dict[str, Any] = {"imageUri": image_uri, "args": args}
    if config.get("containerCommand"):
        container["command"] = config["containerCommand"]
    if config.get("containerArgs"):
        container["args"] = [str(a) for a in config["containerArgs"]]
    return container


def _legacy_scheduling(value: Any) -> Any:
    # Legacy scheduling had maxRunningTime / maxWaitTime; Vertex has timeout.
    if isinstance(value, dict) and "maxRunningTime" in value:
        return {"timeout": value["maxRunningTime"]}
    return value


def _count(ti: dict[str, Any], key: str, problems: list[Violation]) -> int:
    value = ti.get(key, 0)
    try:
        count = int(value)
    except (TypeError, ValueError):
        problems.append(Violation(f"trainingInput.{key}", "must be a whole number", rule="legacy"))
        return 0
    if count < 0:
        problems.append(Violation(f"trainingInput.{key}", "must not be negative", rule="legacy"))
        return 0
    return count


def _pool(
    ti: dict[str, Any],
    role: str,
    machine_name: str,
    count: int,
    catalog: Catalog,
    problems: list[Violation],
    notes: list[str],
) -> dict[str, Any]:
    machine: dict[str, Any] = {"machineType": machine_name}
    legacy = catalog.legacy_machine_types.get(machine_name)
    if legacy is not None:
        machine = {"machineType": legacy.machine_type}
        if legacy.accelerator:
            machine["acceleratorType"] = legacy.accelerator
            machine["acceleratorCount"] = legacy.accelerator_count
        what = (
            f" with {legacy.accelerator_count} x {legacy.accelerator}" if legacy.accelerator else ""
        )
        notes.append(f"{role}: legacy machine type {machine_name} is {legacy.machine_type}{what}")
    config = ti.get(f"{role}Config") or {}
    accel = config.get("acceleratorConfig")
    if accel is not None:
        if legacy is not None and legacy.accelerator:
            problems.append(
                Violation(
                    f"trainingInput.{role}Config.acceleratorConfig",
                    f"{machine_name} already includes {legacy.accelerator_count} x {legacy.accelerator}",
                    f"use a Compute Engine machine type such as {legacy.machine_type} with acceleratorConfig",
                    rule="legacy",
                )
            )
        if accel.get("type") is not None:
            machine["acceleratorType"] = accel["type"]
        if accel.get("count") is not None:
            machine["acceleratorCount"] = int(accel["count"])
    pool: dict[str, Any] = {"machineSpec": machine, "replicaCount": count}
    disk = {
        vertex: value
        for legacy_key, vertex in (
            ("bootDiskSizeGb", "bootDiskSizeGb"),
            ("bootDiskType", "bootDiskType"),
        )
        if (value := (config.get("diskConfig") or {}).get(legacy_key))
    }
    if disk:
        pool["diskSpec"] = disk
    return pool


def read_legacy_config(document: dict[str, Any], *, catalog: Catalog | None = None) -> LoadedSpec:
    """The spec of a legacy ``config.yaml``: ``trainingInput``, ``jobId`` and ``labels``."""
    if not isinstance(document.get("jobId"), str | None):
        raise SpecInvalidError([Violation("jobId", "must be text", rule="legacy")])
    conversion = convert_training_input(
        document["trainingInput"],
        display_name=document.get("jobId"),
        labels=document.get("labels"),
        catalog=catalog,
    )
    return LoadedSpec(conversion.spec, "legacy-config", conversion.notes, conversion.scale_tier)
