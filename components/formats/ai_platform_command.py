"""``gcloud ai-platform jobs submit training`` (or ``ml-engine``) → ``trainingInput`` → spec.

A ``--config`` holding ``trainingInput.hyperparameters`` makes it a hyperparameter tuning job
(HyperTune): it is read as one (``LoadedSpec.tuning``, ``legacy_tuning``), its study's
violations in the legacy terms (``trainingInput.hyperparameters.params[0].minValue``).

Flags map onto the same ``trainingInput`` keys as a legacy ``config.yaml``, and a flag
overrides the value from ``--config`` (seed 001), key by key and inside ``*Config``
mappings. Everything after a bare ``--`` goes to the trainer. A violation of a value that a
flag gave is reported at that flag (``--scale-tier``, ``--master-machine-type``), so the
user reads it in the terms of the command they wrote.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .._errors import SpecFormatError, SpecInvalidError
from ..rules._catalog import Catalog
from ..rules._violations import Violation, did_you_mean
from .gcloud_flags import (
    GLOBAL_SWITCHES,
    GLOBAL_VALUE_FLAGS,
    split_dict,
    split_flags,
    split_list,
    whole_number,
)
from .legacy_config import LegacyConversionError, convert_training_input
from .result import LoadedSpec
from .script import ScriptCommand, locate

__all__ = [
    "GcloudCommand",
    "merge_training_input",
    "parse_submit_training",
    "read_submit_training",
]

# flag → trainingInput key (value types converted below)
_SIMPLE_FLAGS = {
    "--module-name": "pythonModule",
    "--job-dir": "jobDir",
    "--region": "region",
    "--scale-tier": "scaleTier",
    "--runtime-version": "runtimeVersion",
    "--python-version": "pythonVersion",
    "--master-machine-type": "masterType",
    "--worker-machine-type": "workerType",
    "--parameter-server-machine-type": "parameterServerType",
    "--evaluator-machine-type": "evaluatorType",
    "--worker-count": "workerCount",
    "--parameter-server-count": "parameterServerCount",
    "--evaluator-count": "evaluatorCount",
    "--service-account": "serviceAccount",
    "--network": "network",
}
_ACCELERATOR_FLAGS = {
    "--master-accelerator": "masterConfig",
    "--worker-accelerator": "workerConfig",
    "--parameter-server-accelerator": "parameterServerConfig",
    "--evaluator-accelerator": "evaluatorConfig",
}
_IMAGE_FLAGS = {
    "--master-image-uri": "masterConfig",
    "--worker-image-uri": "workerConfig",
    "--parameter-server-image-uri": "parameterServerConfig",
    "--evaluator-image-uri": "evaluatorConfig",
}
_INT_KEYS = frozenset({"workerCount", "parameterServerCount", "evaluatorCount"})
_OTHER_FLAGS = frozenset(
    {
        "--package-path",
        "--packages",
        "--config",
        "--labels",
        "--project",
        "--kms-key",
        "--kms-keyring",
        "--kms-location",
        "--kms-project",
        "--staging-bucket",
    }
)
_SWITCHES = frozenset(
    {"--stream-logs", "--async", "--use-chief-in-tf-config", "--enable-web-access"}
    | GLOBAL_SWITCHES
)
_KNOWN_FLAGS = [
    *_SIMPLE_FLAGS,
    *_ACCELERATOR_FLAGS,
    *_IMAGE_FLAGS,
    *_OTHER_FLAGS,
    *GLOBAL_VALUE_FLAGS,
    *_SWITCHES,
]
# trainingInput key → the flag that sets it, for violations in the command's terms
_FLAG_OF_KEY = {
    **{key: flag for flag, key in _SIMPLE_FLAGS.items()},
    **{f"{config}.acceleratorConfig": flag for flag, config in _ACCELERATOR_FLAGS.items()},
    **{f"{config}.imageUri": flag for flag, config in _IMAGE_FLAGS.items()},
    "packageUris": "--package-path",
    "encryptionConfig": "--kms-key",
    "args": "the trainer arguments (after --)",
}


_BUILT_PACKAGE = (".tar.gz", ".tgz", ".whl", ".zip", ".egg")
"""Built package files: a gs:// --package-path naming one is read as that package (as this
reader always has); any other gs:// path is a folder, which gcloud cannot build from."""


@dataclass
class GcloudCommand:
    """What a legacy submit command says: the job name, its trainingInput, and more."""

    job_name: str
    training_input: dict[str, Any]
    labels: dict[str, str] = field(default_factory=dict)
    project: str | None = None
    config_path: Path | None = None
    staging_bucket: str | None = None
    enable_web_access: bool = False
    local_packages: list[str] = field(default_factory=list)
    flag_of_key: dict[str, str] = field(default_factory=dict)
    """The trainingInput keys set by flags, each with the flag that set it."""


def parse_submit_training(args: list[str], catalog: Catalog) -> GcloudCommand:
    """The command's words after ``gcloud ... submit training``; ``SpecFormatError`` naming
    the flag that is wrong."""
    user_args: list[str] = []
    if "--" in args:
        cut = args.index("--")
        args, user_args = args[:cut], args[cut + 1 :]
    flags, positionals = split_flags(args, _SWITCHES)
    if len(positionals) != 1:
        raise SpecFormatError(
            "expected exactly one job name after `gcloud ai-platform jobs submit training`, "
            f"got {positionals[:5] or 'none'}"
        )
    reader = _FlagReader(GcloudCommand(job_name=positionals[0], training_input={}), catalog)
    for name, value in flags:
        reader.read(name, value)
    overrides = reader.overrides
    if reader.package_uris:
        overrides["packageUris"] = reader.package_uris
    if user_args:
        overrides["args"] = user_args
        reader.result.flag_of_key["args"] = _FLAG_OF_KEY["args"]
    reader.finish_kms()
    reader.result.training_input = overrides
    return reader.result


@dataclass
class _FlagReader:
    """Reads flags, one at a time, into a ``GcloudCommand`` and its trainingInput overrides."""

    result: GcloudCommand
    catalog: Catalog
    overrides: dict[str, Any] = field(default_factory=dict)
    package_uris: list[str] = field(default_factory=list)
    kms: dict[str, str] = field(default_factory=dict)

    def read(self, name: str, value: str | None) -> None:
        if name in _SWITCHES:
            if name == "--enable-web-access":
                self.result.enable_web_access = value != "false"
            return
        assert value is not None
        if name in _SIMPLE_FLAGS:
            self.simple(name, _SIMPLE_FLAGS[name], value)
        elif name in _ACCELERATOR_FLAGS:
            config = self.overrides.setdefault(_ACCELERATOR_FLAGS[name], {})
            config["acceleratorConfig"] = self.accelerator(name, value)
            self.result.flag_of_key[f"{_ACCELERATOR_FLAGS[name]}.acceleratorConfig"] = name
        elif name in _IMAGE_FLAGS:
            self.overrides.setdefault(_IMAGE_FLAGS[name], {})["imageUri"] = value
            self.result.flag_of_key[f"{_IMAGE_FLAGS[name]}.imageUri"] = name
        elif name in _OTHER_FLAGS:
            self.other(name, value)
        elif name not in GLOBAL_VALUE_FLAGS:
            hint = did_you_mean(name, _KNOWN_FLAGS)
            raise SpecFormatError(f"unknown flag {name}" + (f"; {hint}" if hint else ""))

    def simple(self, name: str, key: str, value: str) -> None:
        self.result.flag_of_key[key] = name
        if key in _INT_KEYS:
            self.overrides[key] = whole_number(name, value)
        else:
            # gcloud's choices are lowercase with dashes (basic-gpu, standard-1): enum names
            self.overrides[key] = value.upper().replace("-", "_") if key == "scaleTier" else value

    def accelerator(self, name: str, value: str) -> dict[str, Any]:
        pairs = split_dict(name, value)
        unknown = set(pairs) - {"count", "type"}
        if unknown:
            raise SpecFormatError(
                f"{name}: unknown key(s) {sorted(unknown)[:5]}; use count=N,type=TYPE"
            )
        accel: dict[str, Any] = {}
        if "type" in pairs:
            by_gcloud_name = self.catalog.accelerators_by_gcloud_name
            accel["type"] = by_gcloud_name.get(pairs["type"].lower(), pairs["type"])
        if "count" in pairs:
            accel["count"] = whole_number(f"{name}: count", pairs["count"])
        return accel

    def other(self, name: str, value: str) -> None:
        result = self.result
        if name == "--package-path":
            if "://" in value and not value.lower().endswith(_BUILT_PACKAGE):
                # gcloud builds --package-path from a local folder (setup.py sdist) and uploads
                # it: a gs:// folder is not one, and the command fails before submitting.
                raise SpecFormatError(
                    f"--package-path {value}: gcloud builds the package from a local folder, "
                    "so a Cloud Storage path fails; name built packages with "
                    f"--packages=gs://BUCKET/trainer-0.1.tar.gz, or give --package-path a "
                    "local folder"
                )
            self.package_uris.insert(0, value)
            result.flag_of_key["packageUris"] = name
            if "://" not in value:
                result.local_packages.append(value)
        elif name == "--packages":
            self.package_uris.extend(p for p in split_list(name, value) if p)
            result.flag_of_key.setdefault("packageUris", name)
        elif name == "--config":
            result.config_path = Path(value)
        elif name == "--labels":
            result.labels.update(split_dict(name, value))
        elif name == "--project":
            result.project = value
        elif name.startswith("--kms-"):
            self.kms[name] = value
        elif name == "--staging-bucket":
            result.staging_bucket = value

    def finish_kms(self) -> None:
        """``--kms-key`` as a full name, or with ``--kms-keyring/-location/-project``."""
        if not self.kms:
            return
        key = kms_key_name(self.kms, self.result.project)
        self.overrides["encryptionConfig"] = {"kmsKeyName": key}
        self.result.flag_of_key["encryptionConfig"] = "--kms-key"


def kms_key_name(parts: dict[str, str], project: str | None) -> str:
    """The full key name from gcloud's ``--kms-*`` flags; ``SpecFormatError`` if partial."""
    key = parts.get("--kms-key", "")
    if key.startswith("projects/"):
        return key
    place = {
        "--kms-project": parts.get("--kms-project") or project,
        "--kms-location": parts.get("--kms-location"),
        "--kms-keyring": parts.get("--kms-keyring"),
    }
    missing = [flag for flag, given in place.items() if not given]
    if not key or missing:
        raise SpecFormatError(
            "--kms-key: the encryption key is not fully specified: give its full name "
            "(projects/P/locations/L/keyRings/R/cryptoKeys/K), or --kms-key with "
            + ", ".join(missing or ["--kms-keyring", "--kms-location"])
        )
    return (
        f"projects/{place['--kms-project']}/locations/{place['--kms-location']}"
        f"/keyRings/{place['--kms-keyring']}/cryptoKeys/{key}"
    )


def merge_training_input(from_config: dict[str, Any], from_flags: dict[str, Any]) -> dict[str, Any]:
    """Flags win over the config file, key by key (and inside ``*Config`` mappings)."""
    merged = dict(from_config)
    for key, value in from_flags.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def _config_training_input(
    command: GcloudCommand, base: Path, found: ScriptCommand
) -> tuple[dict[str, Any], str]:
    """The ``--config`` file's trainingInput (a here-document's body when the script writes
    the file so), and the note saying where it came from."""
    assert command.config_path is not None
    config = found.read_config(str(command.config_path), base)
    document = config.document
    if not isinstance(document, dict) or not isinstance(document.get("trainingInput"), dict):
        hint = ""
        if isinstance(document, dict) and ("workerPoolSpecs" in document or "jobSpec" in document):
            hint = " (it holds a Vertex CustomJobSpec: that is `gcloud ai custom-jobs create --config`)"
        raise SpecFormatError(f"{config.origin}: --config must hold a trainingInput mapping{hint}")
    return document["trainingInput"], config.note


# trainingInput keys whose computed values are kept (``ScriptCommand.keep``): kind, place.
# Never a package or an image: kept as written, `$(...)` would be what is fetched or pulled.
_KEPT_KEYS: dict[str, tuple[Literal["text", "id"], str]] = {
    "jobDir": ("text", "output directory"),
    "args": ("text", "trainer arguments"),
    "serviceAccount": ("id", "service account"),
}
_KEPT_IN_CONFIGS: dict[str, tuple[Literal["text", "id"], str]] = {
    "containerArgs": ("text", "trainer arguments"),
}


def _kept(training_input: dict[str, Any], found: ScriptCommand) -> dict[str, Any]:
    """Computed values where only their shape is checked, settled before the conversion
    (which validates the job when it finds a problem): the rest stay marked."""

    def settled(value: Any, kind: Literal["text", "id"], label: str) -> Any:
        if isinstance(value, str):
            return found.keep(value, kind, label)
        if isinstance(value, list):
            return [found.keep(v, kind, label) if isinstance(v, str) else v for v in value]
        return value

    out = dict(training_input)
    for key, (kind, label) in _KEPT_KEYS.items():
        if key in out:
            out[key] = settled(out[key], kind, label)
    for key in _ACCELERATOR_FLAGS.values():
        config = out.get(key)
        if isinstance(config, dict):
            out[key] = {
                k: settled(v, *_KEPT_IN_CONFIGS[k]) if k in _KEPT_IN_CONFIGS else v
                for k, v in config.items()
            }
    return out


def read_submit_training(
    found: ScriptCommand, path: Path, catalog: Catalog, region: str | None = None
) -> LoadedSpec:
    """The spec of a legacy submit command: its flags over its ``--config`` (relative to the
    file holding the command); ``region`` overrides the command's (its image registry too)."""
    command = parse_submit_training(found.invocation.args, catalog)
    from_config: dict[str, Any] = {}
    notes: list[str] = []
    if command.config_path is not None:
        from_config, config_note = _config_training_input(command, path.parent, found)
        notes.append(f"{config_note}; flags override its values")
    training_input = merge_training_input(from_config, command.training_input)
    if "region" not in training_input and "legacy-region" in found.properties:
        training_input["region"] = found.properties["legacy-region"]
        notes.append("region from `gcloud config set ai_platform/region` in the script")
    project = command.project
    if project is None and "project" in found.properties:
        project = found.properties["project"]
        notes.append("project from `gcloud config set project` in the script")
    notes.extend(_package_notes(command))
    _locate_packages(command, training_input, path.parent, notes)
    if found.unknowns:
        training_input = _kept(training_input, found)
        project = found.keep(project, "id", "project") if project is not None else None
    try:
        conversion = convert_training_input(
            training_input,
            display_name=found.keep(command.job_name, "text", "name"),
            labels=command.labels,
            project=project,
            catalog=catalog,
            region=region,
            tuning=True,
        )
    except SpecInvalidError as exc:
        flag_keys = dict(command.flag_of_key)
        if command.config_path is None:  # every value came from a flag, or is missing from one
            flag_keys = {**_FLAG_OF_KEY, **flag_keys}
        violations = in_flag_terms(exc.violations, flag_keys)
        if isinstance(exc, LegacyConversionError):  # keeps the job converted anyway, to price
            raise LegacyConversionError(violations, exc.conversion) from None
        raise SpecInvalidError(violations) from None
    loaded = conversion.loaded("gcloud-command", notes)
    return _with_web_access(loaded) if command.enable_web_access else loaded


def _with_web_access(loaded: LoadedSpec) -> LoadedSpec:
    """``--enable-web-access``: on the job, or on every trial of a tuning job."""
    if loaded.tuning is None:
        spec = loaded.spec.model_copy(update={"enable_web_access": True})
        return dataclasses.replace(loaded, spec=spec)
    trial = loaded.tuning.trial_job_spec.model_copy(update={"enable_web_access": True})
    tuning = loaded.tuning.model_copy(update={"trial_job_spec": trial})
    return dataclasses.replace(loaded, spec=tuning.trial_job(), tuning=tuning)


def _locate_packages(
    command: GcloudCommand, training_input: dict[str, Any], base: Path, notes: list[str]
) -> None:
    """Each local ``--package-path`` as a path from the script's folder, looked for there and
    in the folders above it (``components.formats.script.locate``)."""
    uris = training_input.get("packageUris")
    if not isinstance(uris, list):
        return
    for local in command.local_packages:
        relative, note = locate(local, base, "--package-path")
        if note is not None:
            training_input["packageUris"] = [relative if u == local else u for u in uris]
            uris = training_input["packageUris"]
            notes.append(note)


def _package_notes(command: GcloudCommand) -> list[str]:
    notes = []
    for local in command.local_packages:
        notes.append(
            f"--package-path {local}: gcloud builds this directory into a package and uploads "
            "it; packageUris keeps the local path, so `convert` output needs a gs:// package "
            "URI (or let the TrainingJob resource package it)"
        )
    if command.staging_bucket:
        notes.append(
            f"--staging-bucket {command.staging_bucket}: package staging is done by the "
            "TrainingJob resource"
        )
    return notes


def in_flag_terms(
    violations: tuple[Violation, ...], flag_of_key: dict[str, str]
) -> list[Violation]:
    """Violations at ``trainingInput.KEY`` moved to the flag that set KEY (reason kept)."""
    keys = sorted(flag_of_key, key=len, reverse=True)
    moved = []
    for violation in violations:
        rest = violation.path.removeprefix("trainingInput.")
        key = (
            next((k for k in keys if rest == k or rest.startswith((k + ".", k + "["))), None)
            if rest != violation.path
            else None
        )
        if key is None:
            moved.append(violation)
            continue
        tail = rest[len(key) :]
        where = flag_of_key[key] + (f" {tail[1:]}" if tail.startswith(".") else tail)
        moved.append(dataclasses.replace(violation, path=where))
    return moved
