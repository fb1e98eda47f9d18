"""``gcloud ai hp-tuning-jobs create`` (also under beta/alpha) → tuning job, built as gcloud
builds it.

What gcloud does with the flags (``command_lib/ai/hp_tuning_jobs/flags.py`` and the
``Create`` of ``api_lib/ai/hp_tuning_jobs/client.py`` in the Cloud SDK):

- ``--config`` (required) is a ``HyperparameterTuningJob`` YAML (``studySpec``,
  ``trialJobSpec``, counts; camelCase keys), read relative to the file holding the command,
  or the here-document the script writes it with. ``--display-name`` is required too.
- ``--max-trial-count`` and ``--parallel-trial-count`` replace the config's counts when given
  (0 is not given); a count neither sets is sent as 1 (with a note).
- ``--algorithm`` (``grid-search``, ``random-search``, ``algorithm-unspecified``) replaces
  ``studySpec.algorithm`` when the config has a ``studySpec``.
- ``--service-account`` and ``--network`` replace the trial job's; ``--enable-web-access``
  and ``--enable-dashboard-access`` only turn access on.
- ``--labels`` replace the config's labels; ``--kms-key`` (with ``--kms-keyring``,
  ``--kms-location``, ``--kms-project``) sets ``encryptionSpec``; ``--region`` and
  ``--project`` say where it runs (else ``gcloud config set`` in the script).
- There is no ``--max-failed-trial-count``: ``maxFailedTrialCount`` goes in the config.

A violation of a value a flag gave is said at that flag (``--max-trial-count``), in the
errors of reading and in validation's report (``LoadedSpec.renames``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import SpecFormatError, SpecInvalidError
from ..rules._violations import did_you_mean
from .ai_platform_command import kms_key_name
from .gcloud_flags import (
    GLOBAL_SWITCHES,
    GLOBAL_VALUE_FLAGS,
    KMS_FLAGS,
    shown,
    split_dict,
    split_flags,
    whole_number,
)
from .result import LoadedSpec, PathRenames, in_input_terms
from .script import ConfigFile, ScriptCommand
from .tuning import tuning_from_document

__all__ = ["TuningCommand", "parse_hp_tuning_create", "read_hp_tuning_create"]

_COMMAND = "`gcloud ai hp-tuning-jobs create`"
# flag → the dotted camelCase path of the tuning job it sets
_TEXT_FLAGS = {
    "--display-name": "displayName",
    "--region": "region",
    "--project": "project",
    "--service-account": "trialJobSpec.serviceAccount",
    "--network": "trialJobSpec.network",
}
_COUNT_FLAGS = {
    "--max-trial-count": "maxTrialCount",
    "--parallel-trial-count": "parallelTrialCount",
}
_ACCESS_SWITCHES = {
    "--enable-web-access": "trialJobSpec.enableWebAccess",
    "--enable-dashboard-access": "trialJobSpec.enableDashboardAccess",
}
_SWITCHES = frozenset(_ACCESS_SWITCHES) | GLOBAL_SWITCHES
_ALGORITHMS = {
    "grid-search": "GRID_SEARCH",
    "random-search": "RANDOM_SEARCH",
    "algorithm-unspecified": "ALGORITHM_UNSPECIFIED",
}
_KNOWN_FLAGS = [
    *_TEXT_FLAGS,
    *_COUNT_FLAGS,
    "--config",
    "--algorithm",
    "--labels",
    *KMS_FLAGS,
    *_SWITCHES,
    *GLOBAL_VALUE_FLAGS,
]
# what a --config holds that is not a HyperparameterTuningJob: the command that takes it
_FOREIGN_CONFIGS = {
    "hyperparameterTuningJob": "a CreateHyperparameterTuningJobRequest body: --config takes "
    "the HyperparameterTuningJob inside it (its hyperparameterTuningJob)",
    "trainingInput": "a legacy trainingInput: that is `gcloud ai-platform jobs submit "
    "training --config` (its trainingInput.hyperparameters)",
    "workerPoolSpecs": "a CustomJobSpec: a tuning config holds it under trialJobSpec, next "
    "to a studySpec",
    "jobSpec": "a CustomJob: a tuning config holds its jobSpec as trialJobSpec, next to a "
    "studySpec",
}


@dataclass
class TuningCommand:
    """What a ``gcloud ai hp-tuning-jobs create`` command line says: its ``--config`` and
    the values its flags set over it, each by its path with the flag that set it."""

    config: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    flag_of: dict[str, str] = field(default_factory=dict)
    """Each path in ``overrides``, with the flag that set it."""
    given: set[str] = field(default_factory=set)
    """Every flag the command line gives."""
    algorithm: str | None = None
    kms: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def set(self, path: str, value: Any, flag: str) -> None:
        self.overrides[path] = value
        self.flag_of[path] = flag

    @property
    def renames(self) -> PathRenames:
        """Violations of values a flag gave, said at the flag (``--labels.team``)."""
        return tuple(
            (rf"^{re.escape(path)}(?=$|[.\[])", flag)
            for path, flag in sorted(self.flag_of.items(), key=lambda item: -len(item[0]))
        )


def parse_hp_tuning_create(args: list[str]) -> TuningCommand:
    """The words after ``gcloud ai hp-tuning-jobs create``; ``SpecFormatError`` naming the
    flag that is wrong, or what gcloud itself would refuse."""
    flags, positionals = split_flags(args, _SWITCHES)
    if positionals:
        raise SpecFormatError(f"{_COMMAND} takes no arguments, got {shown(positionals[0])}")
    command = TuningCommand()
    for name, value in flags:
        command.given.add(name)
        _read_flag(command, name, value)
    for required in ("--display-name", "--config"):
        if required not in command.given:
            raise SpecFormatError(f"{required} is required (gcloud refuses the command without it)")
    if command.kms:
        project = command.overrides.get("project")
        command.set("encryptionSpec.kmsKeyName", kms_key_name(command.kms, project), "--kms-key")
    return command


def _read_flag(command: TuningCommand, name: str, value: str | None) -> None:
    if name in _SWITCHES:
        if name in _ACCESS_SWITCHES and value != "false":
            command.set(_ACCESS_SWITCHES[name], True, name)
        return
    assert value is not None
    if name in _TEXT_FLAGS:
        if value or name != "--display-name":  # gcloud keeps the config's name for an empty one
            command.set(_TEXT_FLAGS[name], value, name)
    elif name in _COUNT_FLAGS:
        count = whole_number(name, value)
        if count:
            command.set(_COUNT_FLAGS[name], count, name)
        else:
            command.notes.append(f"{name}=0 is not used: gcloud sends the config's value, or 1")
    elif name == "--config":
        command.config = value
    elif name == "--algorithm":
        command.algorithm = _algorithm(value)
    elif name == "--labels":
        command.set(
            "labels", {**command.overrides.get("labels", {}), **split_dict(name, value)}, name
        )
    elif name in KMS_FLAGS:
        command.kms[name] = value
    elif name == "--max-failed-trial-count":
        raise SpecFormatError(
            f"{_COMMAND} has no {name} flag (gcloud refuses it): set maxFailedTrialCount in the "
            "--config file"
        )
    elif name not in GLOBAL_VALUE_FLAGS:
        hint = did_you_mean(name, _KNOWN_FLAGS)
        raise SpecFormatError(f"unknown flag {name} for {_COMMAND}" + (f"; {hint}" if hint else ""))


def _algorithm(value: str) -> str:
    """An ``--algorithm`` choice as the API names it (``random-search`` → RANDOM_SEARCH)."""
    choice = value.strip().lower().replace("_", "-")
    if choice not in _ALGORITHMS:
        hint = did_you_mean(choice, _ALGORITHMS, otherwise=f"choices: {', '.join(_ALGORITHMS)}")
        raise SpecFormatError(f"--algorithm: unknown algorithm {shown(value)} ({hint})")
    return _ALGORITHMS[choice]


def _config_document(command: TuningCommand, base: Path, found: ScriptCommand) -> ConfigFile:
    """The ``--config`` HyperparameterTuningJob (a here-document's body when the script writes
    the file so) and the note saying where it came from; refused when it is something else."""
    assert command.config is not None
    config = found.read_config(command.config, base)
    document = config.document
    origin = f"{config.origin}: --config"
    if not isinstance(document, dict):
        raise SpecFormatError(
            f"{origin} must hold a HyperparameterTuningJob mapping (studySpec...)"
        )
    foreign = next((key for key in _FOREIGN_CONFIGS if key in document), None)
    if foreign is not None:
        raise SpecFormatError(f"{origin} holds {_FOREIGN_CONFIGS[foreign]}")
    snake = [str(key) for key in document if not isinstance(key, str) or "_" in key]
    if snake:
        raise SpecFormatError(
            f"{origin}: gcloud reads camelCase fields only, and refuses "
            + ", ".join(shown(key, 40) for key in snake[:5])
            + " (use camelCase)"
        )
    return config


def read_hp_tuning_create(found: ScriptCommand, path: Path) -> LoadedSpec:
    """The tuning job of a ``gcloud ai hp-tuning-jobs create`` command: its flags over its
    ``--config`` (relative to the file holding the command)."""
    command = parse_hp_tuning_create(found.invocation.args)
    config = _config_document(command, path.parent, found)
    document = config.document
    notes = [f"{config.note}; flags override its values", *command.notes]
    if command.algorithm is not None:
        if isinstance(document.get("studySpec"), dict):
            command.set("studySpec.algorithm", command.algorithm, "--algorithm")
        else:
            notes.append("--algorithm is not used: the config has no studySpec (as gcloud does)")
    for name in ("project", "region"):
        if name not in command.overrides and name in found.properties:
            command.overrides[name] = found.properties[name]
            notes.append(f"{name} from `gcloud config set` in the script")
    try:
        loaded = tuning_from_document(document, config.origin, overrides=command.overrides)
    except SpecInvalidError as exc:
        raise SpecInvalidError(in_input_terms(exc.violations, command.renames)) from None
    assert loaded.tuning is not None
    every = [*notes, *loaded.notes]
    return LoadedSpec.of_tuning(loaded.tuning, "gcloud-command", every, renames=command.renames)
