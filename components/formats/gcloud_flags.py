"""gcloud's command-line conventions: which command a line runs, its flags, list and dict values.

A gcloud command line is ``gcloud [TRACK] GROUP... COMMAND [ARGS] [FLAGS]``; gcloud-wide flags
(``--project``, ``--format``, ``--quiet``...) may stand anywhere, even before the group.
Flags take ``--flag=value`` or ``--flag value``; a boolean flag stands alone (``--no-flag``
turns it off). List values are comma-separated and dict values ``KEY=VALUE`` pairs; a value
starting with ``^DELIM^`` uses DELIM instead of the comma (``gcloud topic escaping``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .._errors import SpecFormatError

__all__ = [
    "GLOBAL_SWITCHES",
    "GLOBAL_VALUE_FLAGS",
    "KMS_FLAGS",
    "SUBMISSIONS",
    "TUNING",
    "UNDERSTOOD",
    "CommandForm",
    "Invocation",
    "invocation",
    "shown",
    "split_dict",
    "split_flags",
    "split_list",
    "whole_number",
]

CommandForm = Literal["legacy-training", "custom-job", "hp-tuning", "other"]

_FORMS: dict[tuple[str, ...], CommandForm] = {
    ("ai-platform", "jobs", "submit", "training"): "legacy-training",
    ("ml-engine", "jobs", "submit", "training"): "legacy-training",
    ("ai", "custom-jobs", "create"): "custom-job",
    ("ai", "hp-tuning-jobs", "create"): "hp-tuning",
}
SUBMISSIONS: frozenset[CommandForm] = frozenset({"legacy-training", "custom-job", "hp-tuning"})
"""The forms that submit a training job (one of them per file)."""
UNDERSTOOD = (
    "only `gcloud ai-platform jobs submit training` (or `gcloud ml-engine jobs submit training`), "
    "`gcloud ai custom-jobs create` and `gcloud ai hp-tuning-jobs create`, each also under beta "
    "or alpha, and a `curl -X POST` to Vertex AI's customJobs or hyperparameterTuningJobs URL"
)
TUNING = (
    "`gcloud ai custom-jobs create` cannot run a tuning job (gcloud refuses studySpec in a "
    "CustomJobSpec): submit it with `gcloud ai hp-tuning-jobs create --config` (read here as "
    "the tuning job it is), or give one trial's configuration (its trialJobSpec) to "
    "`gcloud ai custom-jobs create --config`"
)
"""Why a tuning config is refused by ``custom-jobs create``, and what to do instead."""
KMS_FLAGS = ("--kms-key", "--kms-keyring", "--kms-location", "--kms-project")
"""gcloud's flags naming a Cloud KMS key (``--kms-key`` alone: its full name)."""
_RELEASE_TRACKS = frozenset({"alpha", "beta", "preview"})

GLOBAL_VALUE_FLAGS = frozenset(
    {
        "--access-token-file",
        "--account",
        "--billing-project",
        "--configuration",
        "--flags-file",
        "--flatten",
        "--format",
        "--impersonate-service-account",
        "--trace-token",
        "--verbosity",
    }
)
"""gcloud-wide flags with a value, which change how gcloud runs, not the job."""
GLOBAL_SWITCHES = frozenset(
    {
        "--quiet",
        "-q",
        "--log-http",
        "--no-log-http",
        "--user-output-enabled",
        "--no-user-output-enabled",
        "--help",
        "-h",
    }
)
_NUMBER = re.compile(r"^[+-]?\d{1,18}$")


@dataclass(frozen=True)
class Invocation:
    """A gcloud command line: its form, command path, release track and other words."""

    form: CommandForm
    path: tuple[str, ...]
    track: str | None
    args: list[str]
    """Every word after ``gcloud`` but the track and the path (flags before it first)."""

    @property
    def name(self) -> str:
        """``gcloud beta ai custom-jobs create``: the command as a user would name it."""
        words = [w if len(w) <= 40 else w[:37] + "..." for w in self.path]
        words = [w.replace("\x00", "…") for w in words]  # a value only running would give
        return " ".join(["gcloud", *([self.track] if self.track else []), *words])


def invocation(argv: list[str]) -> Invocation:
    """What a ``gcloud ...`` word list runs (``argv[0]`` is gcloud)."""
    words = argv[1:]
    path: list[str] = []
    flags: list[str] = []
    track = None
    index = 0
    while index < len(words) and len(path) < 4 and tuple(path) not in _FORMS:
        word = words[index]
        if word == "--" or (path and word.startswith("-")):
            break
        index += 1
        if word.startswith("-") and len(word) > 1:
            flags.append(word)
            if "=" not in word and word in {*GLOBAL_VALUE_FLAGS, "--project"}:
                flags.extend(words[index : index + 1])
                index += 1
        elif not path and track is None and word in _RELEASE_TRACKS:
            track = word
        else:
            path.append(word)
    return Invocation(_FORMS.get(tuple(path), "other"), tuple(path), track, flags + words[index:])


def shown(text: str, limit: int = 60) -> str:
    """``text`` quoted for a message, cut to ``limit`` characters."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "..."


def split_flags(
    words: list[str], switches: frozenset[str]
) -> tuple[list[tuple[str, str | None]], list[str]]:
    """(flags with their values, positional words); a switch's value is None or ``"false"``."""
    flags: list[tuple[str, str | None]] = []
    positionals: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if not word.startswith("-") or word in ("-", "--"):
            positionals.append(word)
            continue
        name, eq, inline = word.partition("=")
        if name == "--flags-file":
            raise SpecFormatError(
                "--flags-file: flags kept in a file are not read here; write them in the command"
            )
        if name in switches:
            flags.append((name, None))
        elif name.startswith("--no-") and "--" + name[5:] in switches:
            flags.append(("--" + name[5:], "false"))
        elif eq:
            flags.append((name, inline))
        elif index < len(words):
            flags.append((name, words[index]))
            index += 1
        else:
            raise SpecFormatError(f"{name} needs a value")
    return flags, positionals


def _delimited(flag: str, value: str) -> tuple[str, str]:
    if value.startswith("^") and "^" in value[1:]:
        delimiter, rest = value[1:].split("^", 1)
        if not delimiter:
            raise SpecFormatError(f"{flag}: an empty ^^ delimiter (see `gcloud topic escaping`)")
        return delimiter, rest
    return ",", value


def split_list(flag: str, value: str, delimiter: str = "") -> list[str]:
    """A gcloud list value: ``a,b,c`` (or ``^:^a:b,c``); empty is no item, a trailing
    delimiter adds none. ``delimiter`` given: that one, with no ``^`` escape (``a;b``)."""
    if not delimiter:
        delimiter, value = _delimited(flag, value)
    if not value:
        return []
    if not value.endswith(delimiter):
        value += delimiter
    return value.split(delimiter)[:-1]


def split_dict(flag: str, value: str) -> dict[str, str]:
    """A gcloud dict value: ``k=v,k2=v2`` (or ``^:^k=v:k2=v2``); blanks and double quotes
    around keys and values are dropped, a later key wins."""
    pairs: dict[str, str] = {}
    for item in split_list(flag, value):
        key, eq, item_value = item.partition("=")
        if not eq:
            raise SpecFormatError(
                f"{flag}: expected KEY=VALUE pairs separated by commas, got {shown(item)}"
            )
        pairs[key.strip().strip('"')] = item_value.strip().strip('"')
    return pairs


def whole_number(what: str, text: str) -> int:
    """An integer written in a flag; ``SpecFormatError`` naming ``what`` otherwise."""
    if not _NUMBER.match(text.strip()):
        raise SpecFormatError(f"{what} must be a whole number, got {shown(text)}")
    return int(text)
