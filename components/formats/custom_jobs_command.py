"""``gcloud ai custom-jobs create`` (also under beta/alpha) → spec, built as gcloud builds it.

What gcloud does with the flags (``command_lib/ai/custom_jobs`` of the Cloud SDK):

- ``--config`` is a ``CustomJobSpec`` YAML (camelCase keys; relative to the file holding the
  command here). ``--display-name``, ``--labels``, ``--kms-key``, ``--region`` and
  ``--project`` are the job's, never the config's.
- Each ``--worker-pool-spec`` is one pool, in flag order (0 chief, 1 workers, 2 parameter
  servers, 3 evaluators; an empty value skips a pool, never the first). Given, they replace
  the config's ``workerPoolSpecs`` entirely. ``replica-count`` defaults to 1, and
  ``accelerator-count`` to 1 when ``accelerator-type`` is given.
- ``container-image-uri`` makes a container pool; otherwise ``executor-image-uri`` +
  ``python-module`` a Python package pool whose packages are ``--python-package-uris``
  (for the flag pools only).
- ``local-package-path`` (first pool only) makes gcloud build an image from that directory on
  ``executor-image-uri`` and run it in every pool (``extra-dirs``, ``requirements``,
  ``extra-packages``, ``python-module`` or ``script``): how this project represents and runs
  it is ``components.formats.autopackage``.
- ``--args`` replaces the args of every pool (container and package), ``--command`` the
  command of every container pool; ``--network``, ``--service-account`` and
  ``--persistent-resource-id`` replace the config's; ``--enable-web-access`` and
  ``--enable-dashboard-access`` only turn access on.
"""

from __future__ import annotations

import copy
import dataclasses
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import SpecFormatError, SpecInvalidError
from ..rules._catalog import Catalog
from ..rules._spec import JobSpec
from ..rules._violations import Violation, did_you_mean
from .ai_platform_command import kms_key_name
from .autopackage import AUTOPACKAGE_ENV, CONTAINER_WORKDIR, Autopackage
from .gcloud_flags import (
    GLOBAL_SWITCHES,
    GLOBAL_VALUE_FLAGS,
    KMS_FLAGS,
    TUNING,
    shown,
    split_dict,
    split_flags,
    split_list,
    whole_number,
)
from .result import LoadedSpec
from .script import ScriptCommand, locate

__all__ = ["CreateCommand", "parse_custom_job_create", "read_custom_job_create"]

_SCALAR_FLAGS = {
    "--display-name": "display_name",
    "--config": "config",
    "--region": "region",
    "--project": "project",
    "--service-account": "service_account",
    "--network": "network",
    "--persistent-resource-id": "persistent_resource_id",
}
_LIST_FLAGS = ("--args", "--command", "--python-package-uris")
_SWITCHES = frozenset({"--enable-web-access", "--enable-dashboard-access"}) | GLOBAL_SWITCHES
_KNOWN_FLAGS = [
    *_SCALAR_FLAGS,
    *_LIST_FLAGS,
    *KMS_FLAGS,
    "--worker-pool-spec",
    "--labels",
    *_SWITCHES,
    *GLOBAL_VALUE_FLAGS,
]
_POOL_KEYS = {
    "machine-type": "text",
    "replica-count": "int",
    "accelerator-type": "text",
    "accelerator-count": "int",
    "container-image-uri": "text",
    "executor-image-uri": "text",
    "output-image-uri": "text",
    "python-module": "text",
    "script": "text",
    "local-package-path": "text",
    "requirements": "list",
    "extra-packages": "list",
    "extra-dirs": "list",
}
_LOCAL_ONLY = ("script", "requirements", "extra-packages", "extra-dirs")
_SOFTWARE = ("executor-image-uri", "container-image-uri", "python-module", *_LOCAL_ONLY)
# CustomJob fields that a CustomJobSpec (the --config file) does not have: where they go
_NOT_IN_CONFIG = {
    "displayName": "--display-name",
    "labels": "--labels",
    "encryptionSpec": "--kms-key",
    "project": "--project",
    "region": "--region",
    "jobSpec": "the file holds what goes inside jobSpec",
}
_FLAG_OF_FIELD = {
    "displayName": "--display-name",
    "labels": "--labels",
    "encryptionSpec": "--kms-key",
    "network": "--network",
    "serviceAccount": "--service-account",
    "persistentResourceId": "--persistent-resource-id",
    "region": "--region",
    "project": "--project",
}
_KEY_OF_POOL_FIELD = {
    "replicaCount": "replica-count",
    "machineSpec.machineType": "machine-type",
    "machineSpec.acceleratorType": "accelerator-type",
    "machineSpec.acceleratorCount": "accelerator-count",
    "containerSpec.imageUri": "container-image-uri",
    "pythonPackageSpec.executorImageUri": "executor-image-uri",
    "pythonPackageSpec.pythonModule": "python-module",
    "pythonPackageSpec": "local-package-path",
}
_POOL_PATH = re.compile(r"^workerPoolSpecs\[(\d+)\]\.(.+)$")
_MODULE_PATH = re.compile(r"^(?:\./)?([A-Za-z_]\w*(?:/[A-Za-z_]\w*)*)\.py$")


@dataclass
class CreateCommand:
    """What a ``gcloud ai custom-jobs create`` command line says, flag by flag."""

    display_name: str | None = None
    config: str | None = None
    region: str | None = None
    project: str | None = None
    service_account: str | None = None
    network: str | None = None
    persistent_resource_id: str | None = None
    pools: list[dict[str, Any]] = field(default_factory=list)
    lists: dict[str, list[str]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    kms: dict[str, str] = field(default_factory=dict)
    enable_web_access: bool = False
    enable_dashboard_access: bool = False


def parse_custom_job_create(args: list[str]) -> CreateCommand:
    """The words after ``gcloud ai custom-jobs create``; ``SpecFormatError`` naming the flag
    that is wrong, or what gcloud itself would refuse."""
    flags, positionals = split_flags(args, _SWITCHES)
    if positionals:
        raise SpecFormatError(
            f"`gcloud ai custom-jobs create` takes no arguments, got {shown(positionals[0])}"
        )
    command = CreateCommand()
    for name, value in flags:
        _read_flag(command, name, value)
    if not command.display_name:
        raise SpecFormatError("--display-name is required (gcloud refuses the command without it)")
    if command.config is None and not command.pools:
        raise SpecFormatError("gcloud needs --worker-pool-spec or --config to know the pools")
    if command.pools:
        _check_pools(command.pools)
    return command


def _read_flag(command: CreateCommand, name: str, value: str | None) -> None:
    if name in _SWITCHES:
        if name == "--enable-web-access":
            command.enable_web_access = value != "false"
        elif name == "--enable-dashboard-access":
            command.enable_dashboard_access = value != "false"
        return
    assert value is not None
    if name == "--worker-pool-spec":
        command.pools.append(_pool_spec(value, len(command.pools)))
    elif name == "--python-package-uris":
        command.lists[name] = split_list(name, value)
    elif name in _LIST_FLAGS:
        items = command.lists.setdefault(name, [])
        for item in split_list(name, value):
            if item in items:  # gcloud's UpdateAction refuses a value given twice
                raise SpecFormatError(
                    f"{name}: gcloud refuses {shown(item)} given twice; put repeated "
                    "arguments in the --config file (containerSpec.args / pythonPackageSpec.args)"
                )
            items.append(item)
    elif name == "--labels":
        command.labels.update(split_dict(name, value))
    elif name in KMS_FLAGS:
        command.kms[name] = value
    elif name in _SCALAR_FLAGS:
        setattr(command, _SCALAR_FLAGS[name], value)
    elif name not in GLOBAL_VALUE_FLAGS:
        hint = did_you_mean(name, _KNOWN_FLAGS)
        raise SpecFormatError(
            f"unknown flag {name} for `gcloud ai custom-jobs create`"
            + (f"; {hint}" if hint else "")
        )


def _pool_spec(value: str, index: int) -> dict[str, Any]:
    """One ``--worker-pool-spec`` as gcloud reads it: known keys, typed values."""
    where = f"--worker-pool-spec[{index}]"
    spec: dict[str, Any] = {}
    for key, raw in split_dict(where, value).items():
        kind = _POOL_KEYS.get(key)
        if kind is None:
            hint = did_you_mean(key, _POOL_KEYS, otherwise=f"keys: {', '.join(_POOL_KEYS)}")
            if key.startswith(("disk", "boot-disk")):
                hint = "gcloud's --worker-pool-spec has no disk keys: set diskSpec in the --config file"
            raise SpecFormatError(f"{where}: unknown key {shown(key)} ({hint})")
        if kind == "int":
            spec[key] = whole_number(f"{where}: {key}", raw)
        elif kind == "list":
            spec[key] = split_list(where, raw, ";")
        else:
            spec[key] = raw
    return spec


def _check_pools(pools: list[dict[str, Any]]) -> None:
    """What gcloud checks before it builds the pools (it refuses the command otherwise)."""
    if not pools[0]:
        raise SpecFormatError("--worker-pool-spec[0] is empty: the first pool must be given")
    local = "local-package-path" in pools[0]
    for index, spec in enumerate(pools):
        if not spec:
            continue
        where = f"--worker-pool-spec[{index}]"
        if "machine-type" not in spec:
            raise SpecFormatError(f"{where}: machine-type is required")
        if "accelerator-count" in spec and "accelerator-type" not in spec:
            raise SpecFormatError(f"{where}: accelerator-count needs accelerator-type")
        if index == 0 and local:
            if "executor-image-uri" not in spec:
                raise SpecFormatError(f"{where}: local-package-path needs executor-image-uri")
            if ("python-module" in spec) == ("script" in spec):
                raise SpecFormatError(
                    f"{where}: local-package-path needs exactly one of python-module, script"
                )
        elif local:
            extra = [key for key in ("local-package-path", *_SOFTWARE) if key in spec]
            if extra:
                raise SpecFormatError(
                    f"{where}: {', '.join(extra)} not allowed: the local package of the first "
                    "--worker-pool-spec runs in every pool"
                )
        else:
            _check_software(where, spec, index)


def _check_software(where: str, spec: dict[str, Any], index: int) -> None:
    if "local-package-path" in spec:
        raise SpecFormatError(f"{where}: local-package-path is only allowed in the first pool")
    if ("executor-image-uri" in spec) == ("container-image-uri" in spec):
        raise SpecFormatError(
            f"{where}: exactly one of executor-image-uri, container-image-uri is required"
        )
    if "container-image-uri" in spec and "python-module" in spec:
        raise SpecFormatError(f"{where}: python-module does not go with container-image-uri")
    if "executor-image-uri" in spec and "python-module" not in spec:
        raise SpecFormatError(f"{where}: executor-image-uri needs python-module")
    extra = [key for key in _LOCAL_ONLY if key in spec]
    if extra:
        raise SpecFormatError(
            f"{where}: {', '.join(extra)} only go with local-package-path (in the first pool)"
        )


# --- building the spec ----------------------------------------------------------------


def _pool_documents(
    command: CreateCommand, catalog: Catalog, base: Path, notes: list[str]
) -> list[dict[str, Any]]:
    """The flag pools as CustomJobSpec ``workerPoolSpecs`` entries."""
    pools = command.pools
    package_uris = command.lists.get("--python-package-uris")
    local = _local_software(pools[0], base, notes) if "local-package-path" in pools[0] else None
    if local is not None and package_uris:
        notes.append("--python-package-uris is not used: the pools run the local package")
    documents: list[dict[str, Any]] = []
    for index, spec in enumerate(pools):
        if not spec:
            documents.append({})
            continue
        pool: dict[str, Any] = {
            "machineSpec": _machine(spec, index, catalog, notes),
            "replicaCount": spec.get("replica-count", 1),
        }
        if local is not None:
            pool["pythonPackageSpec"] = copy.deepcopy(local)
        elif "container-image-uri" in spec:
            pool["containerSpec"] = {"imageUri": spec["container-image-uri"]}
        else:
            package = {
                "executorImageUri": spec.get("executor-image-uri"),
                "packageUris": package_uris or [],
                "pythonModule": spec.get("python-module"),
            }
            pool["pythonPackageSpec"] = {k: v for k, v in package.items() if v is not None}
            if "output-image-uri" in spec:
                notes.append(
                    f"--worker-pool-spec[{index}]: output-image-uri is only used with "
                    "local-package-path (ignored, as gcloud does)"
                )
        documents.append(pool)
    return documents


def _machine(
    spec: dict[str, Any], index: int, catalog: Catalog, notes: list[str]
) -> dict[str, Any]:
    machine: dict[str, Any] = {"machineType": spec["machine-type"]}
    written = spec.get("accelerator-type")
    if written:
        name = catalog.accelerators_by_gcloud_name.get(written.lower(), written)
        if name != written:
            notes.append(
                f"--worker-pool-spec[{index}]: accelerator-type {written} read as {name} "
                f"(gcloud ai custom-jobs create itself accepts only the API name, {name})"
            )
        machine["acceleratorType"] = name
        machine["acceleratorCount"] = spec.get("accelerator-count", 1)
    return machine


def _local_software(spec: dict[str, Any], base: Path, notes: list[str]) -> dict[str, Any]:
    """The pythonPackageSpec standing for gcloud's image built from ``local-package-path``
    (``components.formats.autopackage``): DIR and the extra packages as local packages, the
    module (or a ``.py`` script's module path), and the build for the emulator."""
    directory, found_note = locate(spec["local-package-path"], base, "local-package-path")
    notes.extend([found_note] if found_note else [])
    module: str | None = spec.get("python-module")
    script: str = spec.get("script") or ""  # one of the two: _check_pools
    module_path = _script_module(script, notes) if module is None else module
    root = base / directory
    build = Autopackage(
        executor_image=spec["executor-image-uri"],
        directory=directory,
        module=module,
        script=None if module is not None else script,
        extra_dirs=tuple(spec.get("extra-dirs") or ()),
        requirements=tuple(spec.get("requirements") or ()),
        extra_packages=tuple(spec.get("extra-packages") or ()),
        output_image=spec.get("output-image-uri"),
        has_setup=_is_file(root / "setup.py"),
        has_requirements_file=_is_file(root / "requirements.txt"),
    )
    installed = [
        *(["setup.py"] if build.has_setup else []),
        *(["requirements.txt"] if build.has_requirements_file else []),
        *build.requirements,
        *build.extra_packages,
    ]
    notes.append(
        f"local-package-path={directory}: gcloud builds an image FROM "
        f"{spec['executor-image-uri']} with {', '.join(build.copied)} in its working directory "
        f"({CONTAINER_WORKDIR})"
        + (f", {', '.join(installed)} installed" if installed else "")
        + f", and runs {' '.join(build.entry_point)} there in every pool; the local stack "
        "runs it the same way, and `convert` prints the image to build for Vertex AI"
    )
    package: dict[str, Any] = {
        "executorImageUri": spec["executor-image-uri"],
        "packageUris": [directory]
        + [posixpath.join(directory, extra) for extra in build.extra_packages],
        "env": [{"name": AUTOPACKAGE_ENV, "value": build.to_json()}],
    }
    if module_path:
        package["pythonModule"] = module_path
    return package


def _script_module(script: str, notes: list[str]) -> str | None:
    """The module path of a ``.py`` script (what a Python package spec names), with a note
    on how gcloud and the local stack run it; None for another script."""
    match = _MODULE_PATH.match(script)
    module_path = match.group(1).replace("/", ".") if match else None
    notes.append(
        f"script={script}: gcloud runs it as a file ({'python3' if match else '/bin/bash'}"
        f" {script}) in its image; "
        + (
            f"the package spec names its module {module_path}, and the local stack runs "
            "the file itself"
            if module_path
            else "the local stack runs it so; a Python package spec has no module to "
            "name (pythonModule stays empty), so only the image convert prints runs it on "
            "Vertex AI"
        )
    )
    return module_path


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def _config_document(
    command: CreateCommand, base: Path, found: ScriptCommand
) -> tuple[dict[str, Any], str]:
    """The ``--config`` CustomJobSpec document (a here-document's body when the script
    writes the file so) and the note saying where it came from; refused when it is something
    else."""
    assert command.config is not None
    config = found.read_config(command.config, base)
    document = config.document
    origin = f"{config.origin}: --config"
    if not isinstance(document, dict):
        raise SpecFormatError(f"{origin} must hold a CustomJobSpec mapping (workerPoolSpecs...)")
    if "studySpec" in document or "trialJobSpec" in document:
        raise SpecFormatError(f"{origin} holds a hyperparameter tuning job (studySpec): {TUNING}")
    if "trainingInput" in document:
        raise SpecFormatError(
            f"{origin} holds a legacy trainingInput (for `gcloud ai-platform jobs submit "
            "training`), not a CustomJobSpec"
        )
    foreign = [
        f"{key} ({_NOT_IN_CONFIG[key]})" if key in _NOT_IN_CONFIG else f"{key} (use camelCase)"
        for key in document
        if not isinstance(key, str) or key in _NOT_IN_CONFIG or "_" in key
    ]
    if foreign:
        raise SpecFormatError(
            f"{origin} holds a CustomJobSpec, and gcloud refuses fields it does not have: "
            + ", ".join(str(f) for f in foreign[:5])
        )
    return document, config.note


def _apply_flags(
    document: dict[str, Any], command: CreateCommand, pools: list[dict[str, Any]] | None
) -> None:
    """gcloud's overrides of the config's values by flags (``ConstructCustomJobSpec``)."""
    if pools is not None:
        document["workerPoolSpecs"] = pools
    for name in ("network", "service_account", "persistent_resource_id"):
        value = getattr(command, name)
        if value is not None:
            document[_camel(name)] = value
    if command.enable_web_access:
        document["enableWebAccess"] = True
    if command.enable_dashboard_access:
        document["enableDashboardAccess"] = True
    args, entrypoint = command.lists.get("--args"), command.lists.get("--command")
    for pool in document.get("workerPoolSpecs") or []:
        container, package = pool.get("containerSpec"), pool.get("pythonPackageSpec")
        if args:
            for task in (container, package):
                if task is not None:
                    task["args"] = list(args)
        if entrypoint and container is not None:
            container["command"] = list(entrypoint)
    document["displayName"] = command.display_name
    if command.labels:
        document["labels"] = dict(command.labels)
    if command.kms:
        document["encryptionSpec"] = {"kmsKeyName": kms_key_name(command.kms, command.project)}
    for name in ("region", "project"):
        if getattr(command, name) is not None:
            document[name] = getattr(command, name)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def read_custom_job_create(found: ScriptCommand, path: Path, catalog: Catalog) -> LoadedSpec:
    """The spec of a ``gcloud ai custom-jobs create`` command; its ``--config`` is read
    relative to the file holding the command."""
    command = parse_custom_job_create(found.invocation.args)
    notes: list[str] = []
    document: dict[str, Any] = {}
    if command.config is not None:
        raw, config_note = _config_document(command, path.parent, found)
        document = JobSpec.parse(raw).to_document()
        replaced = " (--worker-pool-spec replaces its workerPoolSpecs)" if command.pools else ""
        notes.append(f"{config_note}; flags override its values{replaced}")
    pools = _pool_documents(command, catalog, path.parent, notes) if command.pools else None
    if pools is None and command.lists.get("--python-package-uris"):
        notes.append("--python-package-uris is ignored without --worker-pool-spec (as gcloud does)")
    if pools and command.lists.get("--command") and "local-package-path" in command.pools[0]:
        # gcloud sets it on the containers of its built image, replacing their entry point.
        notes.append(
            "--command replaces the entry point of the image gcloud builds; it is not "
            "modelled here (the pools run the module or script): drop it, or build the image "
            "yourself and use container-image-uri"
        )
    for name, prop in (("project", "project"), ("region", "region")):
        if getattr(command, name) is None and prop in found.properties:
            setattr(command, name, found.properties[prop])
            notes.append(f"{name} from `gcloud config set` in the script")
    _apply_flags(document, command, pools)
    try:
        spec = JobSpec.parse(document)
    except SpecInvalidError as exc:
        flagged = {field for field, flag in _FLAG_OF_FIELD.items() if _given(command, flag)}
        moved = _in_flag_terms(exc.violations, flagged, flag_pools=pools is not None)
        raise SpecInvalidError(moved) from None
    return LoadedSpec(spec, "gcloud-command", notes)


def _given(command: CreateCommand, flag: str) -> bool:
    if flag == "--labels":
        return bool(command.labels)
    if flag == "--kms-key":
        return bool(command.kms)
    return getattr(command, _SCALAR_FLAGS[flag]) is not None


def _in_flag_terms(
    violations: tuple[Violation, ...], flagged: set[str], *, flag_pools: bool
) -> list[Violation]:
    """Violations of values a flag gave, at that flag (``--worker-pool-spec[1] replica-count``)."""
    moved = []
    for violation in violations:
        path = violation.path
        top = path.split(".", 1)[0].split("[", 1)[0]
        match = _POOL_PATH.match(path)
        if top in flagged:
            path = _FLAG_OF_FIELD[top] + path[len(top) :]
        elif flag_pools and match and match.group(2) in _KEY_OF_POOL_FIELD:
            path = f"--worker-pool-spec[{match.group(1)}] {_KEY_OF_POOL_FIELD[match.group(2)]}"
        moved.append(dataclasses.replace(violation, path=path))
    return moved
