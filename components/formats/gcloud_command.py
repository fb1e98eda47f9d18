"""A legacy ``gcloud ai-platform jobs submit training`` command line → ``trainingInput``.

Users keep these commands in shell scripts, so the file may use ``\\`` continuations,
comments and ``$VARS``; an unset variable is an error that names it. Flags map onto the
same ``trainingInput`` keys as ``config.yaml``, and a flag overrides the value from
``--config`` (seed 001). Everything after a bare ``--`` goes to the trainer.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components._catalog import Catalog
from components._errors import SpecFormatError
from components._violations import did_you_mean
from components.formats.legacy_config import convert_training_input
from components.formats.result import LoadedSpec
from components.formats.text import parse_document, read_text

__all__ = [
    "GcloudCommand",
    "expand_variables",
    "is_gcloud_command",
    "merge_training_input",
    "parse_gcloud_command",
    "read_gcloud_command",
]

_COMMANDS = (
    ("ai-platform", "jobs", "submit", "training"),
    ("ml-engine", "jobs", "submit", "training"),
)
_RELEASE_TRACKS = ("alpha", "beta")
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")

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
        "--staging-bucket",
    }
)
# Flags that change how gcloud behaves, not the job.
_IGNORED_VALUE_FLAGS = frozenset({"--format", "--verbosity", "--account", "--configuration"})
_IGNORED_SWITCHES = frozenset(
    {"--stream-logs", "--async", "--use-chief-in-tf-config", "--quiet", "-q", "--enable-web-access"}
)


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


def is_gcloud_command(text: str) -> bool:
    """True when the first word of the file (after comments) is ``gcloud``."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return stripped.split()[0] == "gcloud"
    return False


def expand_variables(text: str, env: Mapping[str, str]) -> str:
    """Expand ``$VAR`` and ``${VAR}`` outside single quotes; an unset one is an error."""
    out: list[str] = []
    in_single = False
    i = 0
    while i < len(text):
        char = text[i]
        if char == "'" and not in_single:
            in_single = True
        elif char == "'" and in_single:
            in_single = False
        if char == "$" and not in_single:
            match = _VARIABLE.match(text, i)
            if match:
                name = match.group(1) or match.group(2)
                if name not in env:
                    raise SpecFormatError(
                        f"environment variable ${name} is not set (the command uses it)"
                    )
                out.append(shlex.quote(env[name]))
                i = match.end()
                continue
        out.append(char)
        i += 1
    return "".join(out)


def _tokens(text: str, env: Mapping[str, str]) -> list[str]:
    joined = re.sub(r"\\\r?\n", " ", text)
    lines = [
        line for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")
    ]
    if len(lines) != 1:
        raise SpecFormatError(
            "the file must hold exactly one gcloud command (use \\ to continue lines)"
        )
    expanded = expand_variables(lines[0], env)
    try:
        return shlex.split(expanded, comments=True)
    except ValueError as exc:
        raise SpecFormatError(f"cannot split the command line: {exc}") from exc


def _key_values(flag: str, value: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for part in value.split(","):
        if "=" not in part:
            raise SpecFormatError(
                f"{flag}: expected KEY=VALUE pairs separated by commas, got {part!r}"
            )
        key, _, item = part.partition("=")
        pairs[key.strip()] = item.strip()
    return pairs


def parse_gcloud_command(text: str, env: Mapping[str, str], catalog: Catalog) -> GcloudCommand:
    """Parse the command; raises ``SpecFormatError`` naming the flag that is wrong."""
    command, rest = _command_words(_tokens(text, env))
    user_args: list[str] = []
    if "--" in rest:
        cut = rest.index("--")
        rest, user_args = rest[:cut], rest[cut + 1 :]
    flags, positionals = _split_flags(rest)
    if len(positionals) != 1:
        raise SpecFormatError(
            f"expected exactly one job name after `{' '.join(command)}`, got {positionals or 'none'}"
        )
    reader = _FlagReader(GcloudCommand(job_name=positionals[0], training_input={}), catalog)
    for name, value in flags:
        reader.read(name, value)
    overrides = reader.overrides
    if reader.package_uris:
        overrides["packageUris"] = reader.package_uris
    if user_args:
        overrides["args"] = user_args
    reader.result.training_input = overrides
    return reader.result


def _command_words(words: list[str]) -> tuple[tuple[str, ...], list[str]]:
    """(the submit command's words, the words after them); refuses any other gcloud command."""
    if not words or words[0] != "gcloud":
        raise SpecFormatError("the command must start with gcloud")
    rest = words[1:]
    if rest and rest[0] in _RELEASE_TRACKS:
        rest = rest[1:]
    command = next((c for c in _COMMANDS if tuple(rest[: len(c)]) == c), None)
    if command is None:
        raise SpecFormatError(
            "only `gcloud ai-platform jobs submit training` (or `gcloud ml-engine ...`) is understood, "
            f"got `gcloud {' '.join(rest[:4])}`"
        )
    return command, rest[len(command) :]


def _split_flags(words: list[str]) -> tuple[list[tuple[str, str | None]], list[str]]:
    """(flags with their values, positional words); ``--flag value`` and ``--flag=value``."""
    flags: list[tuple[str, str | None]] = []
    positionals: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("-") and word != "-":
            name, eq, inline = word.partition("=")
            if name in _IGNORED_SWITCHES:
                flags.append((name, None))
            elif eq:
                flags.append((name, inline))
            elif i + 1 < len(words):
                flags.append((name, words[i + 1]))
                i += 1
            else:
                raise SpecFormatError(f"{name} needs a value")
        else:
            positionals.append(word)
        i += 1
    return flags, positionals


_KNOWN_FLAGS = [
    *_SIMPLE_FLAGS,
    *_ACCELERATOR_FLAGS,
    *_IMAGE_FLAGS,
    *_OTHER_FLAGS,
    *_IGNORED_VALUE_FLAGS,
    *_IGNORED_SWITCHES,
]


@dataclass
class _FlagReader:
    """Reads flags, one at a time, into a ``GcloudCommand`` and its trainingInput overrides."""

    result: GcloudCommand
    catalog: Catalog
    overrides: dict[str, Any] = field(default_factory=dict)
    package_uris: list[str] = field(default_factory=list)

    def read(self, name: str, value: str | None) -> None:
        if name in _IGNORED_SWITCHES:
            if name == "--enable-web-access":
                self.result.enable_web_access = True
            return
        assert value is not None
        if name in _SIMPLE_FLAGS:
            self.simple(name, _SIMPLE_FLAGS[name], value)
        elif name in _ACCELERATOR_FLAGS:
            config = self.overrides.setdefault(_ACCELERATOR_FLAGS[name], {})
            config["acceleratorConfig"] = self.accelerator(name, value)
        elif name in _IMAGE_FLAGS:
            self.overrides.setdefault(_IMAGE_FLAGS[name], {})["imageUri"] = value
        elif name in _OTHER_FLAGS:
            self.other(name, value)
        elif name not in _IGNORED_VALUE_FLAGS:
            hint = did_you_mean(name, _KNOWN_FLAGS)
            raise SpecFormatError(f"unknown flag {name}" + (f"; {hint}" if hint else ""))

    def simple(self, name: str, key: str, value: str) -> None:
        if key in _INT_KEYS:
            try:
                self.overrides[key] = int(value)
            except ValueError:
                raise SpecFormatError(f"{name} must be a whole number, got {value!r}") from None
        else:
            self.overrides[key] = value.upper() if key == "scaleTier" else value

    def accelerator(self, name: str, value: str) -> dict[str, Any]:
        pairs = _key_values(name, value)
        unknown = set(pairs) - {"count", "type"}
        if unknown:
            raise SpecFormatError(
                f"{name}: unknown key(s) {sorted(unknown)}; use count=N,type=TYPE"
            )
        accel: dict[str, Any] = {}
        if "type" in pairs:
            by_gcloud_name = self.catalog.accelerators_by_gcloud_name
            accel["type"] = by_gcloud_name.get(pairs["type"].lower(), pairs["type"])
        if "count" in pairs:
            try:
                accel["count"] = int(pairs["count"])
            except ValueError:
                raise SpecFormatError(
                    f"{name}: count must be a whole number, got {pairs['count']!r}"
                ) from None
        return accel

    def other(self, name: str, value: str) -> None:
        result = self.result
        if name == "--package-path":
            self.package_uris.insert(0, value)
        elif name == "--packages":
            self.package_uris.extend(p for p in value.split(",") if p)
        elif name == "--config":
            result.config_path = Path(value)
        elif name == "--labels":
            result.labels.update(_key_values(name, value))
        elif name == "--project":
            result.project = value
        elif name == "--kms-key":
            self.overrides["encryptionConfig"] = {"kmsKeyName": value}
        elif name == "--staging-bucket":
            result.staging_bucket = value


def merge_training_input(from_config: dict[str, Any], from_flags: dict[str, Any]) -> dict[str, Any]:
    """Flags win over the config file, key by key (and inside ``*Config`` mappings)."""
    merged = dict(from_config)
    for key, value in from_flags.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def read_gcloud_command(
    path: Path, text: str, env: Mapping[str, str], catalog: Catalog
) -> LoadedSpec:
    """The spec of a command file: its flags over its ``--config`` (relative to the file)."""
    command = parse_gcloud_command(text, env, catalog)
    from_config: dict[str, Any] = {}
    notes: list[str] = []
    if command.config_path is not None:
        config_path = command.config_path
        if not config_path.is_absolute():
            config_path = path.parent / config_path
        document = parse_document(read_text(config_path, what="--config file"), str(config_path))
        if not isinstance(document, dict) or not isinstance(document.get("trainingInput"), dict):
            raise SpecFormatError(f"{config_path}: --config must hold a trainingInput mapping")
        from_config = document["trainingInput"]
        notes.append(f"read --config {config_path}; flags override its values")
    training_input = merge_training_input(from_config, command.training_input)
    if command.staging_bucket:
        notes.append(
            f"--staging-bucket {command.staging_bucket}: package staging is done by the TrainingJob resource"
        )
    conversion = convert_training_input(
        training_input,
        display_name=command.job_name,
        labels=command.labels,
        project=command.project,
        catalog=catalog,
    )
    spec = conversion.spec
    if command.enable_web_access:
        spec = spec.model_copy(update={"enable_web_access": True})
    return LoadedSpec(spec, "gcloud-command", notes + conversion.notes, conversion.scale_tier)
