"""The one job-submitting gcloud command of a shell script, with the script's variables applied.

Real commands live in scripts: ``export BUCKET=...``, ``JOB_NAME=census_$(date +%s)``,
``set -e``, ``echo``, ``gsutil cp``, then one ``gcloud ... submit``. The script is read in
order and never run: simple assignments (``NAME=value``, ``export``/``readonly``/``declare``/
``local NAME=value``, ``unset NAME``) are applied as bash would, every other command is
skipped, and the gcloud command is expanded with the variables as they stand at its line.

Where a value comes from:

- the script's own assignment wins over the environment (bash semantics);
- ``${NAME:-default}`` and the other ``${NAME<op>word}`` defaults are honoured, and
  ``${NAME:=default}`` assigns anywhere (``: ${REGION:=us-central1}``); a script argument
  with a default (``${1:-us-central1}``) is its default, with a note (the arguments are not
  known); ``${NAME:?message}`` with NAME unset is an error naming it;
- a value bash would compute by running something (``$(date +%s)``, backticks, ``$1``), or
  one set inside an ``if``/``case``/loop or after ``&&``/``||``, is unknown here: the
  environment's value is used when it sets that variable. Otherwise the command's word is
  marked (``MARK``) where the unknown part stands (only that part: ``gs://b/m_MARK``), and
  the reader of the command decides (``components.formats.gcloud_command``): kept as written
  where the validator checks no more than the value's shape, an error naming the variable
  anywhere else (``ScriptCommand.keep``);
- an unset variable is an error naming it, except in the trainer arguments (after ``--``, in
  ``--args``), where it expands to nothing as bash does, with a note (not under ``set -u``).

Commands are assembled as bash assembles them: an array (``cmd=(gcloud ai ...)``,
``cmd+=(--flag)``, ``declare -a``) holds each element's value as it was assigned, and
``"${cmd[@]}"`` runs its elements as the command's words (``${cmd[N]}``, ``${cmd[*]}`` and ``$cmd``
as bash reads them); an array set under a condition is unknown as a whole. A ``case`` whose
word is known (``case "${1:-small}" in``) is followed into the branch bash takes (the others
are skipped); one on the script's arguments makes what it sets depend on them (said so in the
error). In a ``while getopts`` loop an assignment keeps the value the variable had before it
(the script's default, with a note), or, with none, depends on the arguments.

Files the script writes before its submission are remembered (``WrittenFile``): a
``--config`` file written by a here-document (``cat > F <<EOF``, ``tee F <<EOF``) is read
from the here-document's body, expanded as bash would; one written another way (``echo >``,
``gsutil cp``, ``sed -i``) is refused, since the file on disk is not what the command reads.

One submission inside ``for`` / ``while read`` loops over values known here runs once per
run of the loops (their product, at most ``MAX_LOOP_JOBS``): ``choose`` raises ``LoopJobs``,
and ``loop_runs`` gives each run, read again with ``pins`` saying which value each loop takes
(its job named ``line 2: for LR=0.01``), and a variable the body sets after the submission
that uses it is an error of later runs. ``continue [N]``/``break [N]`` in the body run as bash
runs them where the run is known to reach them (the ``if``/``elif``/``else`` branches,
``case`` and ``&&``/``||`` lists around them judged by ``components.formats.conditions``): a
run kept from the submission is no job, a ``break`` ends the later runs of the loops it ends
(``LoopJobs.runs``); where a condition is not known here the run is read as if it went on,
with a note naming the condition.
A script with several job submissions is refused (one job per file), naming their lines;
``gcloud config set project|ai/region`` lines before the submission are kept as defaults.
Expansions are bounded: ``MAX_VARIABLES`` names, ``MAX_VALUE_CHARS`` per value and
``MAX_EXPANDED_CHARS`` for the whole script, so ``A=$A$A`` chains end in an error.
"""

from __future__ import annotations

import fnmatch
import itertools
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from .._errors import SpecFormatError
from .._files import FileReadError, read_text_capped
from .conditions import Verdict, chain_verdict, command_verdict
from .gcloud_flags import SUBMISSIONS, UNDERSTOOD, Invocation, invocation
from .read_input import (
    DEFAULT_IFS,
    MAX_INPUT_BYTES,
    echo_output,
    input_lines,
    printf_output,
    read_options,
    split_line,
)
from .shell import (
    MAX_COMMANDS,
    MAX_FIELDS,
    PLACEHOLDER,
    Command,
    Lookup,
    Part,
    Redirect,
    Unresolvable,
    Word,
    expand_word,
    expand_words,
    split_commands,
)
from .text import MAX_SPEC_BYTES, clipped, parse_document, read_text

__all__ = [
    "CHECKED_AS",
    "MARK",
    "MAX_EXPANDED_CHARS",
    "MAX_LOOP_JOBS",
    "MAX_VALUE_CHARS",
    "MAX_VARIABLES",
    "MAX_WRITES",
    "ConfigFile",
    "LoopJobs",
    "LoopPins",
    "Scope",
    "ScriptCommand",
    "Unresolved",
    "WrittenFile",
    "find_submission",
    "find_submission_in",
    "for_loop_key",
    "locate",
    "loop_runs",
    "map_strings",
    "parse_marked",
    "unresolved_message",
]

MAX_VARIABLES = 4096
MAX_VALUE_CHARS = 1 << 16
MAX_EXPANDED_CHARS = 1 << 22
MAX_WRITES = 10_000
MAX_LOOP_JOBS = 100
"""The most jobs a submission inside loops over known values is read as (one per run)."""
MAX_LOOP_COMMANDS = 2 * MAX_COMMANDS
"""The most commands read for all the runs of such loops together (the script is read once
per run), so that reading many runs of a long script stays as quick as reading a long one."""
"""The most file writes (redirections, copies) a script may make before its submission."""
MARK = re.compile("\x01(\\d+)\x01")
"""Where an unknown value stands in a command's word: ``\\x01N\\x01``, N its index."""
CHECKED_AS = "unknown-value"
"""What stands for a computed value in a field whose shape is checked (a project ID, a
service account's domain): a valid name, so the check says nothing about a value it cannot
know (a note says so)."""
_YAML_MARK = ("\ue000", "\ue000")
"""A ``MARK`` while a here-document's body is parsed as YAML (which refuses control
characters): private-use characters, turned back into the ``MARK`` after."""
_MAX_SUBSTITUTION_DEPTH = 2
_MAX_SOURCED = 4
_MAX_SOURCED_BYTES = 1 << 16
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FLAG_EQUALS = re.compile(r"--?[A-Za-z0-9][\w-]*=")
_PREFIX_WORDS = frozenset(
    {"if", "then", "else", "elif", "do", "while", "until", "!", "time", "exec", "nohup"}
    | {"command", "{", "sudo", "builtin"}
)
_DECLARATIONS = frozenset({"export", "readonly", "declare", "typeset", "local"})
_BLOCK_OPEN = frozenset({"if", "case", "for", "while", "until", "select"})
_BLOCK_CLOSE = frozenset({"fi", "esac", "done"})
_BODY_WORDS = frozenset({"do", "then", "else"})
_ARGUMENTS = "@*#0123456789"
_THIS_SCRIPT = r'"?\$\{?(?:0|BASH_SOURCE(?:\[0\])?)\}?"?'
_PATTERN_OPS = ("%", "%%", "#", "##", "^^", ",,")
_MAX_PATTERN_TEXT = 512
_COMMENT = re.compile(r"(?m)^\s*#.*$")
_SCRIPT_DIR = re.compile(
    rf"^(?:dirname (?:-- )?{_THIS_SCRIPT}"
    rf'|cd "?\$\(dirname (?:-- )?{_THIS_SCRIPT}\)"? ?(?:&&|;) ?pwd(?: -P)?)$'
)
"""``$(dirname "$0")``, ``$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)``: the script's
directory, which is where relative paths are read from here anyway."""
_CONFIG_PROPERTIES = {
    "project": "project",
    "core/project": "project",
    "ai/region": "region",
    "ai_platform/region": "legacy-region",
    "compute/region": "compute-region",
}
_PROPERTY_VARIABLES = {
    "project": "CLOUDSDK_CORE_PROJECT",
    "region": "CLOUDSDK_AI_REGION",
    "legacy-region": "CLOUDSDK_AI_PLATFORM_REGION",
    "compute-region": "CLOUDSDK_COMPUTE_REGION",
}
"""The environment variable gcloud reads each property from."""
_CONFIG_GET = ["gcloud", "config", "get"]
_CONFIG_GET_VALUE = ["gcloud", "config", "get-value"]


@dataclass(frozen=True)
class Unresolved:
    """A variable whose value cannot be known without running the script, why, its value
    as written (``census_$(date +%s)``) and with its unknown parts marked (``census_MARK``)."""

    message: str
    names: tuple[str, ...]
    unset: bool = False
    text: str = ""
    keepable: bool = True
    marked: str | None = None

    def error(self) -> Unresolvable:
        return Unresolvable(
            self.message,
            self.names,
            unset=self.unset,
            text=self.text,
            keepable=self.keepable,
            marked=self.marked,
        )


@dataclass
class Scope:
    """The script's variables over the environment, within the bounds."""

    env: Mapping[str, str]
    values: dict[str, str | Unresolved] = field(default_factory=dict)
    unset: set[str] = field(default_factory=set)
    used: int = 0
    unknowns: list[Unresolvable] = field(default_factory=list)
    notes: dict[str, None] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)
    """gcloud properties set by ``gcloud config set`` lines read so far."""
    arrays: dict[str, list[str | Unresolved] | Unresolved] = field(default_factory=dict)
    """Bash arrays (``cmd=(gcloud ai ...)``, ``cmd+=(...)``): each element's value as it was
    when assigned, as a plain variable's (bash expands an array's words when it assigns them)."""

    def get(self, name: str) -> str | Unresolved | None:
        value = self.values.get(name)
        if isinstance(value, Unresolved) and name in self.env:
            return self.env[name]
        if value is not None:
            return value
        return None if name in self.unset else self.env.get(name)

    def assign(self, name: str, value: str | Unresolved, line: int) -> None:
        if name not in self.values and len(self.values) >= MAX_VARIABLES:
            raise SpecFormatError(
                f"line {line}: the script sets more than {MAX_VARIABLES} variables"
            )
        size = len(value) if isinstance(value, str) else len(value.text) + len(value.marked or "")
        if size > MAX_VALUE_CHARS:
            raise SpecFormatError(
                f"line {line}: ${name} would hold more than {MAX_VALUE_CHARS} characters"
            )
        self.values[name] = value
        self.unset.discard(name)

    def lookup(self, part: Part) -> str:
        """The text of a ``$NAME``/``${NAME...}``/``$(...)`` part; ``Unresolvable`` if unknown."""
        if part.kind == "command" and part.op == "array":
            source = " ".join(part.value.split())[:60]
            raise Unresolvable(
                f"the array ({source}) (line {part.line}) would have to be expanded (this "
                "reader reads plain variables only)",
                text=f"({source})",
                keepable=False,
            )
        if part.kind == "command":
            source = " ".join(part.value.split())
            if not _COMMENT.sub("", part.value).strip():
                return ""  # `# a comment` in backticks: bash runs nothing, the value is empty
            if _SCRIPT_DIR.match(source):
                self.notes[f"`$({source})` is read as the script's directory"] = None
                return "."
            configured = self.configured(source)
            if configured is not None:
                return configured
            shown = source if len(source) <= 60 else source[:57] + "..."
            raise Unresolvable(
                f"`$({shown})` (line {part.line}) would have to run", text=f"$({source})"
            )
        name = part.value
        if part.op == "unsupported":
            raise Unresolvable(
                f"${{{name}...}} would have to be evaluated (this reader knows $NAME, "
                "${NAME} and ${NAME:-default}-like forms)",
                (name,) if name else (),
                text=f"${{{name}...}}",
                keepable=False,
            )
        if part.op in ("[@]", "[*]", "[]") and _NAME.fullmatch(name):
            return self.count(self.elements(part))
        if name in self.arrays and _NAME.fullmatch(name):
            # `$cmd` of an array is its first element, as in bash.
            element = self.element(name, 0)
            return self.count(self.operate(part, name, element))
        if not _NAME.fullmatch(name):
            if name in _ARGUMENTS and name not in "#0" and part.op in (":-", "-"):
                default = self.operand(part)
                self.notes[
                    f"line {part.line}: ${{{name}{part.op}{clipped(default)}}}: the script's "
                    f"arguments are not known here, so its default {clipped(default)!r} is used"
                ] = None
                return self.count(default)
            what = "script argument" if name in _ARGUMENTS else "shell-set parameter"
            raise Unresolvable(f"the {what} ${name} would have to be given", text=f"${name}")
        return self.count(self.operate(part, name, self.get(name)))

    def element(self, name: str, index: int) -> str | Unresolved | None:
        """Element ``index`` of the array ``name`` (a plain variable is its element 0)."""
        found = self.arrays.get(name)
        if isinstance(found, Unresolved):
            return found
        if found is None:
            return self.get(name) if index == 0 else None
        return found[index] if index < len(found) else None

    def elements(self, part: Part) -> str:
        """``${cmd[@]}``/``${cmd[*]}`` as one text (elements joined by blanks; a quoted
        ``"${cmd[@]}"`` in a command is read element by element: ``_Walker.spliced``), or
        ``${cmd[N]}``."""
        name = part.value
        if part.op == "[]":
            index = int(part.word[0].value) if part.word else 0
            return self.operate(replace(part, op=""), name, self.element(name, index))
        found = self.arrays.get(name)
        if isinstance(found, Unresolved):
            raise found.error()
        if found is None:
            return self.operate(replace(part, op=""), name, self.get(name))
        plain = replace(part, op="")
        return " ".join(self.operate(plain, name, value) for value in found)

    def count(self, text: str) -> str:
        """``text``, counted against ``MAX_EXPANDED_CHARS``."""
        self.used += len(text)
        if self.used > MAX_EXPANDED_CHARS:
            raise SpecFormatError(
                f"the script's variables expand to more than {MAX_EXPANDED_CHARS} characters"
            )
        return text

    def configured(self, source: str) -> str | None:
        """``$(gcloud config get-value project)``: the property as set by a ``gcloud config
        set`` line read before, or by gcloud's own environment variable; else unknown."""
        words = [w for w in source.split() if not w.startswith("-") and ">" not in w]
        if len(words) != 4 or words[:3] not in (_CONFIG_GET, _CONFIG_GET_VALUE):
            return None
        prop = _CONFIG_PROPERTIES.get(words[3])
        variable = _PROPERTY_VARIABLES.get(prop or "")
        if prop is None or variable is None:
            return None
        if prop in self.properties:
            self.notes[f"`$({source})` read as set by `gcloud config set` in the script"] = None
            return self.properties[prop]
        if variable in self.env:
            self.notes[f"`$({source})` read from {variable}"] = None
            return self.env[variable]
        raise Unresolvable(f"`$({source})` would have to run", (variable,), text=f"$({source})")

    def preview(self, part: Part) -> str:
        """Like ``lookup``, with a placeholder for what is unknown (a first look at a command)."""
        try:
            return self.lookup(part)
        except Unresolvable:
            return PLACEHOLDER

    def marking(self, part: Part) -> str:
        """Like ``lookup``; a value the script computes becomes a ``MARK`` (unset: an error)."""
        try:
            return self.lookup(part)
        except Unresolvable as exc:
            if exc.unset:
                raise
            if exc.marked is not None:
                return self.count(exc.marked)
            return self.mark(exc)

    def mark(self, unknown: Unresolvable) -> str:
        """A ``MARK`` standing for ``unknown`` (kept in ``unknowns``)."""
        self.unknowns.append(unknown)
        return f"\x01{len(self.unknowns) - 1}\x01"

    def operate(self, part: Part, name: str, value: str | Unresolved | None) -> str:
        """``$NAME`` and ``${NAME<op>word}`` as bash evaluates them."""
        op = part.op
        if isinstance(value, Unresolved):
            error = value.error()
            if op not in ("", ":-", "-", ":=", "=", ":?", "?"):
                error.marked = None  # a transformation of a value not known: all of it unknown
            raise error
        colon = op.startswith(":")
        kept = value if (value if colon else value is not None) else None
        if op in ("", "length", *_PATTERN_OPS):
            if value is None:
                raise Unresolvable(f"environment variable ${name} is not set", (name,), unset=True)
            if op in _PATTERN_OPS:
                return self.trimmed(part, name, value)
            return str(len(value)) if op == "length" else value
        if op in (":-", "-"):
            return kept if kept is not None else self.operand(part)
        if op in (":+", "+"):
            return self.operand(part) if kept is not None else ""
        if kept is not None:
            return kept
        if op in (":=", "="):
            default = self.operand(part)
            self.assign(name, default, part.line)
            return default
        raise Unresolvable(
            f"environment variable ${name} is not set (the script requires it)",
            (name,),
            unset=True,
            required=True,
        )

    def trimmed(self, part: Part, name: str, value: str) -> str:
        """``${NAME%pattern}`` and the like: a prefix or suffix matching a glob removed."""
        op = part.op
        if op == "^^":
            return value.upper()
        if op == ",,":
            return value.lower()
        pattern = self.operand(part)
        if len(value) > _MAX_PATTERN_TEXT or len(pattern) > _MAX_PATTERN_TEXT:
            raise Unresolvable(
                f"${{{name}{op}...}} over {_MAX_PATTERN_TEXT} characters is not evaluated here",
                (name,),
                text=value,
                keepable=False,
            )
        cuts = range(len(value) + 1)
        if op.startswith("%"):
            ends = [i for i in cuts if fnmatch.fnmatchcase(value[i:], pattern)]
            return value[: (min(ends) if op == "%%" else max(ends))] if ends else value
        starts = [i for i in cuts if fnmatch.fnmatchcase(value[:i], pattern)]
        return value[(max(starts) if op == "##" else min(starts)) :] if starts else value

    def operand(self, part: Part) -> str:
        return expand_word(Word(part.word), self.lookup, split=False)[0]


@dataclass(frozen=True)
class WrittenFile:
    """A file the script writes before its submission: ``path`` as the script names it, the
    ``line`` that writes it, and either the here-document ``body`` it holds (``MARK`` where the
    script computes a value; ``error`` when bash's expansion of it cannot be known) or what
    wrote it otherwise (``by``: the file's text is not known here)."""

    path: str
    line: int
    body: str | None = None
    by: str = ""
    error: str = ""
    conditional: bool = False


@dataclass(frozen=True)
class RestCall:
    """A ``curl`` POST to Vertex AI's REST API creating a job: the URL's project, region and
    collection (``customJobs``, ``hyperparameterTuningJobs``), its regional host's region,
    and the body: ``inline`` text, a ``file`` (``-d @FILE``) or ``stdin`` (``-d @-``)."""

    url: str
    project: str
    region: str
    collection: str
    host_region: str
    body_kind: Literal["inline", "file", "stdin"]
    body: str
    option: str


@dataclass(frozen=True)
class ConfigFile:
    """A ``--config`` document, where it came from (for messages) and a note saying so."""

    document: Any
    origin: str
    note: str


@dataclass
class ScriptCommand:
    """The job-submitting gcloud command of a script: its words, line, form and notes."""

    argv: list[str]
    line: int
    invocation: Invocation
    notes: list[str] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    """``project`` and ``region`` from ``gcloud config set`` lines before the command."""
    unknowns: list[Unresolvable] = field(default_factory=list)
    """What each ``MARK`` in ``argv`` stands for, by index."""
    written: list[tuple[str, WrittenFile]] = field(default_factory=list)
    """The files written before the command, in order, each by its normalised path."""
    cautions: list[str] = field(default_factory=list)
    """Where bash ended the command early (also in ``notes``; errors repeat them)."""
    kept: dict[int, dict[str, None]] = field(default_factory=dict)
    checked: dict[int, dict[str, None]] = field(default_factory=dict)
    rest: RestCall | None = None
    """The REST call (``curl -X POST .../customJobs``) when that is the submission."""
    stdin: WrittenFile | None = None
    """What the command reads as its standard input (``--config=-``): a here-document or
    here-string on it (``body``), or a file (``< FILE``: ``path``, no ``body``)."""

    def readable(self, text: str) -> str:
        """``text`` with each ``MARK`` as the script writes the value."""
        return MARK.sub(lambda m: self.unknowns[int(m.group(1))].text, text)

    def keep(self, text: str, kind: Literal["text", "id"], label: str) -> str:
        """``text`` with its computed values in place: as written (``kind`` text: a name, a
        URI, an argument, whose text the validator does not judge beyond its shape) or as
        ``CHECKED_AS`` (``kind`` id: a project or service account, whose whole text is checked);
        ``label`` names the place in the note. A value not keepable stays marked."""

        # A computed bucket stays marked (an error): a bucket's name is checked whole.
        bucket_end = (text.find("/", 5) % (len(text) + 1)) if text.startswith("gs://") else 0

        def settled(match: re.Match[str]) -> str:
            index = int(match.group(1))
            unknown = self.unknowns[index]
            if not unknown.keepable or match.start() < bucket_end:
                return match.group()
            places = self.kept if kind == "text" else self.checked
            places.setdefault(index, {})[label] = None
            return unknown.text if kind == "text" else CHECKED_AS

        return MARK.sub(settled, text)

    def kept_notes(self) -> list[str]:
        """What ``keep`` did, one note per computed value and way it was kept."""
        merged: dict[tuple[str, bool], dict[str, None]] = {}
        for places, checked in ((self.kept, False), (self.checked, True)):
            for index, labels in places.items():
                unknown = self.unknowns[index]
                head = f"{unknown.message}: " + (
                    f"checked as `{CHECKED_AS}`"
                    if checked
                    else f"kept as written ({clipped(unknown.text)})"
                )
                merged.setdefault((head, checked), {}).update(labels)
        return [
            f"{head} in the job's {', '.join(labels)}"
            + (
                " (the value is known only when the script runs; the validator checks its shape)"
                if checked
                else ""
            )
            for (head, checked), labels in merged.items()
        ]

    def written_file(self, value: str) -> WrittenFile | None:
        """The last write, before the command, of the file ``value`` names (relative paths
        from the script's directory, as ``--config`` is read), or None."""
        key = _file_key(self.readable(value))
        return next((w for k, w in reversed(self.written) if k == key), None)

    def read_config(self, value: str, base: Path, flag: str = "--config") -> ConfigFile:
        """The ``--config`` document: the body of the here-document that writes the file
        before the command, else the file (relative to ``base``). ``SpecFormatError`` when the
        script writes the file another way (what the command reads is not known here)."""
        if value in _STDIN:
            if self.stdin is None:
                raise SpecFormatError(
                    f"{flag} {value}: the command reads it from its standard input, and "
                    f"the command at line {self.line} is fed none that is read here: give it "
                    "with a here-document on the command (--config=- <<'EOF' ... EOF) or a file"
                )
            if self.stdin.body is None and not self.stdin.error:
                value = self.stdin.path  # `--config=- < job.yaml`: that file
        written = self.stdin if value in _STDIN else None
        if written is None and self.written:
            written = self.written_file(value)
        if written is None:
            relative, found_note = locate(value, base, flag)
            path = base / relative
            text = read_text(path, what=f"{flag} file")
            note = f"read {flag} {path}" + (f" ({found_note})" if found_note else "")
            return ConfigFile(parse_document(text, str(path)), str(path), note)
        shown = clipped(self.readable(value))
        if written.error:
            raise SpecFormatError(written.error)
        if written.body is None:
            raise SpecFormatError(
                f"{flag} {shown}: line {written.line} writes {clipped(written.path)} "
                f"({written.by}); the file on disk may not be what the command reads: write it "
                "with a here-document in the script (cat > FILE <<EOF), or commit the file "
                f"and drop line {written.line}"
            )
        heredoc = "the here-string" if written.by == "<<<" else "the heredoc"
        origin = f"{flag} {shown} ({heredoc} at line {written.line})"
        document = parse_marked(written.body, origin)
        condition = " (under a condition, which is not evaluated)" if written.conditional else ""
        note = f"{flag} {shown}: written by {heredoc} at line {written.line}{condition}"
        if value in _STDIN:
            note = f"{flag} {shown}: read from {heredoc} on the command (line {written.line})"
        elif written.by == "<(":
            note = (
                f"{flag} {shown}: a process substitution, read from {heredoc} of its `cat` "
                f"(line {written.line})"
            )
        return ConfigFile(document, origin, note)


_STDIN = frozenset({"-", "/dev/stdin"})
"""The ``--config`` values gcloud reads as its standard input."""

MAX_ROOT_LEVELS = 4
"""How far above the script's folder a relative path is looked for (``scripts/train.sh``
naming ``configs/job.yaml`` of the repository root one level up)."""


def locate(value: str, base: Path, flag: str) -> tuple[str, str | None]:
    """A relative path a script names, as a path relative to its folder ``base``, and a note
    when it was found elsewhere: a script is often run from the repository root (``bash
    scripts/train.sh``), its relative paths then name files there. ``base`` first, then each
    folder above it (at most ``MAX_ROOT_LEVELS``, not past a ``.git`` root); the first that
    holds the path wins. Absolute paths, and paths found nowhere, are kept as written."""
    path = Path(value)
    if not value or path.is_absolute() or _exists(base / path):
        return value, None
    root = base
    for level in range(1, MAX_ROOT_LEVELS + 1):
        if _exists(root / ".git") or root.parent == root:
            break
        root = root.parent
        if _exists(root / path):
            relative = posixpath.join(*([".."] * level), value)
            return relative, (
                f"{flag} {clipped(value)} is not in the script's folder {base}; found in "
                f"{root}, the folder the script runs from when its relative paths name files "
                f"there: read as {relative}"
            )
    return value, None


def _exists(path: Path) -> bool:
    """Whether ``path`` exists; False for a name no file can have (too long, a NUL)."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def parse_marked(text: str, origin: str) -> Any:
    """A YAML or JSON document whose text holds ``MARK``s, parsed with them kept."""
    hidden = MARK.sub(lambda m: f"{_YAML_MARK[0]}{m.group(1)}{_YAML_MARK[1]}", text)
    return map_strings(parse_document(hidden, origin), _unmark_yaml)


_YAML_MARK_PATTERN = re.compile(f"{_YAML_MARK[0]}(\\d+){_YAML_MARK[1]}")


def _unmark_yaml(text: str) -> str:
    return _YAML_MARK_PATTERN.sub(lambda m: f"\x01{m.group(1)}\x01", text)


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` (a parsed document) with ``change`` applied to every text, keys too."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {
            change(k) if isinstance(k, str) else k: map_strings(v, change) for k, v in value.items()
        }
    if isinstance(value, list):
        return [map_strings(v, change) for v in value]
    return value


def _file_key(text: str) -> str:
    """A path as the script names it, normalised (``./c.yaml`` and ``c.yaml`` are one)."""
    text = text.strip()
    if not text or "\x00" in text:
        return ""
    return posixpath.normpath(text)


@dataclass
class _Found:
    line: int
    invocation: Invocation
    argv: list[str] | Unresolvable
    in_block: bool
    scope: Scope
    writes: int
    cut: str
    stdin: WrittenFile | None = None
    rest: RestCall | None = None
    loops: tuple[_Loop, ...] = ()
    """The loops around it that run it more than once, or never, outer first."""
    uses: frozenset[str] = frozenset()
    """The variables its words name."""
    skipped: str = ""
    """Why this run does not reach it (a ``continue``/``break`` that ran before it), or ""."""


LoopPins = Mapping[tuple[int, str], int]
"""Which run of each loop a reading follows: the index of its value (or line), by the loop's
line and header (``loop_runs``); a loop not named runs its first."""


def for_loop_key(line: int, name: str) -> tuple[int, str]:
    """The key in ``LoopPins`` of the ``for NAME in ...`` loop at ``line`` (a batch file's
    loops, read as these, find the run they take in ``pins`` by it)."""
    return line, f"`for {name} in ...`"


class LoopJobs(SpecFormatError):
    """The one submission is inside loops over known values that run it more than once: one
    job per run (``loop_runs`` names each and says which value each loop takes in it)."""

    def __init__(
        self,
        message: str,
        loops: tuple[_Loop, ...],
        runs: list[tuple[str, LoopPins]] | None = None,
    ) -> None:
        super().__init__(message)
        self.loops = loops
        self.runs = runs
        """The runs that submit, where ``continue``/``break`` leave some out (else None:
        every run of the loops submits)."""


def loop_runs(jobs: LoopJobs) -> list[tuple[str, LoopPins]]:
    """Each run of the loops around the submission (the product of their values, outer loop
    first; at most ``MAX_LOOP_JOBS``: ``LoopJobs`` is raised for no more): its name (``line 2:
    for LR=0.01; line 3: for B=32``) and the pins that read it (``find_submission(pins=)``).
    A run that a ``continue``/``break`` keeps from the submission is left out."""
    if jobs.runs is not None:
        return list(jobs.runs)
    return _every_run(jobs.loops)


def _every_run(loops: tuple[_Loop, ...]) -> list[tuple[str, LoopPins]]:
    """Each run of ``loops`` (the product of their values, outer first), named, with its pins."""
    runs: list[tuple[str, LoopPins]] = []
    for indices in itertools.product(*(range(len(loop.values or ())) for loop in loops)):
        name = "; ".join(
            f"line {loop.line}: {loop.verb} {loop.labels[index]}"
            for loop, index in zip(loops, indices, strict=True)
        )
        runs.append((name, {loop.key: index for loop, index in zip(loops, indices, strict=True)}))
    return runs


def _shown_value(value: str) -> str:
    """A loop variable's value in a job's name: as is, or quoted when empty or with spaces."""
    shown = clipped(value)
    return shown if shown and not any(c.isspace() for c in shown) else repr(shown)


def find_submission(
    text: str,
    env: Mapping[str, str],
    directory: Path | None = None,
    *,
    pins: LoopPins | None = None,
) -> ScriptCommand:
    """The script's one job submission; ``SpecFormatError`` when there is none or several,
    ``LoopJobs`` when loops run it more than once (read each run with ``pins``).

    ``directory``: the script's own, from which ``source FILE`` / ``. FILE`` are read (their
    assignments only, and only files under it); without it, sourced files are not read.
    """
    return find_submission_in([(1, text)], env, directory, pins=pins)


def find_submission_in(
    scripts: list[tuple[int, str]],
    env: Mapping[str, str],
    directory: Path | None = None,
    *,
    unknown: Mapping[str, Unresolved] | None = None,
    pins: LoopPins | None = None,
    translated: int = 0,
) -> ScriptCommand:
    """The one job submission of several scripts that each run in a shell of their own (the
    recipe lines of a Makefile), each given with the line it starts on; bounds are shared.
    ``unknown``: variables whose value is known not to be known, and why (a batch file's,
    translated into a script: ``components.formats.batch``). ``pins``: the run of each loop
    around the submission to read (``loop_runs``). ``translated``: the lines read to make the
    scripts (a batch file's), read again for each run of its loops, so counted with the
    script's commands in ``MAX_LOOP_COMMANDS``."""

    def walked(run: LoopPins | None) -> _Walker:
        walker = _Walker(Scope(env), directory.resolve() if directory is not None else None)
        walker.pins = dict(run or {})
        walker.translated = translated
        for first_line, text in scripts:
            walker.scope = Scope(env, values=dict(unknown or {}), used=walker.scope.used)
            walker.nounset = False
            walker.walk(split_commands(text, first_line), mode="main")
        return walker

    walker = walked(pins)
    try:
        return walker.choose()
    except LoopJobs as jobs:
        if not any(_CONTROL_WORD.search(text) for _, text in scripts):
            raise
        raise _submitting_runs(jobs, walked) from None


def _submitting_runs(jobs: LoopJobs, walked: Callable[[LoopPins], _Walker]) -> LoopJobs:
    """``jobs`` with only the runs that submit, where the script has ``continue``/``break``:
    each run is read in bash's order, a run that a ``continue``/``break`` keeps from the
    submission is left out, and so is each later run of a loop a ``break`` ended (as the
    runs are read one at a time, the reading of a run cannot see an earlier run's ``break``).
    ``SpecFormatError`` when no run submits. Each run is read twice (here, then for its
    job), so at most twice ``MAX_LOOP_COMMANDS`` commands are read in all."""
    position = {loop.key: at for at, loop in enumerate(jobs.loops)}
    ended: list[tuple[tuple[int, ...], int, int]] = []
    """Each ``break``: the run's indices of the loops outside the loop it ended, that loop's
    place among ``jobs.loops`` and its index in the run."""
    kept: list[tuple[str, LoopPins]] = []
    skipped: list[str] = []
    line = 0
    for name, pins in _every_run(jobs.loops):
        indices = tuple(pins[loop.key] for loop in jobs.loops)
        if any(indices[:at] == outer and indices[at] > index for outer, at, index in ended):
            skipped.append(f"{name}: a `break` of an earlier run ended the loop")
            continue
        try:
            walker = walked(pins)
        except SpecFormatError:
            kept.append((name, pins))  # its own reading says what is wrong with it
            continue
        for key, index in walker.ended:
            if key in position:
                ended.append((indices[: position[key]], position[key], index))
        reason = next((found.skipped for found in walker.submissions if found.skipped), "")
        line = line or next((found.line for found in walker.submissions), 0)
        if reason and len(walker.submissions) == 1:
            skipped.append(f"{name}: {reason}")
        else:
            kept.append((name, pins))
    if not kept:
        raise SpecFormatError(
            f"line {line}: the script submits no job: none of the {len(skipped)} runs of the "
            f"loops around it reaches the submission ({skipped[0]}"
            + (", ...)" if len(skipped) > 1 else ")")
        )
    if not skipped:
        return jobs
    counted, asked, rest = str(jobs).partition("; one job was asked for")
    counted = re.sub(
        r" submits (\d+) jobs, one per ", r" runs \1 times, once per ", counted, count=1
    )
    counted = re.sub(r"(\d+) jobs$", r"\1 runs", counted)  # `with the loops around it, 6 runs`
    more = ", ..." if len(skipped) > 1 else ""
    return LoopJobs(
        f"{counted}, of which {len(skipped)} submit nothing ({skipped[0]}{more}): "
        f"{len(kept)} jobs{asked}{rest}",
        jobs.loops,
        kept,
    )


def unresolved_message(line: int, exc: Unresolvable, what: str = "the gcloud command") -> str:
    """The error for a value that cannot be known, naming the variables that would give it."""
    hint = " or ".join(exc.names)
    hint = f"; set {hint} in the environment" if hint else "; write the value in the script"
    if exc.unset:
        return f"line {line}: {exc.message} ({what} uses it){hint}"
    return f"line {line}: {what} needs a value the script computes: {exc.message}{hint}"


_Mode = Literal["main", "substitution", "sourced"]
_COPIERS = frozenset({"cp", "mv", "install", "ln", "rsync", "scp"})
_STORAGE_COPIES = frozenset({"cp", "mv", "rsync"})
_IN_PLACE = frozenset({"sed", "perl", "yq", "ruby"})
_OUTPUT_OPTIONS = {"curl": ("-o", "--output"), "wget": ("-O", "--output-document")}
_TRUNCATING = frozenset({">", ">|", "&>"})
_WRITING = _TRUNCATING | {">>", "&>>", ">&"}
_FD = re.compile(r"^\d*$")
_STDIN_OPS = frozenset({"<", "<<", "<<-", "<<<"})


@dataclass
class _Case:
    """A ``case`` block being read: its depth among blocks, line, word (None: not known),
    whether that word is the script's arguments, and where the reading is."""

    depth: int
    line: int
    subject: str | None
    arguments: bool
    state: Literal["pattern", "body"] = "pattern"
    patterns: list[str] = field(default_factory=list)
    active: bool = False
    taken: bool = False

    def choose(self, branch_end: bool) -> None:
        """The pattern list just read ends (``)``): its branch runs if it is the first whose
        pattern matches the known word."""
        subject = self.subject
        self.active = (
            subject is not None
            and not self.taken
            and any(p and fnmatch.fnmatchcase(subject, p) for p in self.patterns)
        )
        self.taken = self.taken or self.active
        self.patterns = []
        self.state = "pattern" if branch_end else "body"


@dataclass(frozen=True)
class _Loop:
    """A loop being read: its depth among blocks, line, the values it runs its body for
    (None: not known), how it is written (``for LR in ...``) and what each run takes (``value
    of $LR``, ``line of lrs.txt``); ``labels``: what each of the first ``MAX_LOOP_JOBS`` runs
    sets (``LR=0.01``, ``LR=0.01 B=32``), after ``verb`` in a job's name."""

    depth: int
    line: int
    values: list[str] | None
    header: str
    per: str
    labels: tuple[str, ...] = ()
    verb: str = "for"

    @property
    def key(self) -> tuple[int, str]:
        """The loop in ``LoopPins``."""
        return self.line, self.header


@dataclass
class _If:
    """An ``if`` block being read: its depth among blocks, the commands of each condition
    (the ``if``'s, then each ``elif``'s) and which part the reading is in."""

    depth: int
    conditions: list[list[Command]]
    state: Literal["condition", "then", "else"] = "condition"


@dataclass(frozen=True)
class _Skip:
    """Commands not run: after a ``continue``/``break`` that ran, up to the ``done`` of the
    loop at ``depth`` it goes to; ``reason`` says so (for a submission among them)."""

    depth: int
    reason: str


_LOOP_WORDS = frozenset({"for", "while", "until", "select"})
_CONTROLS = frozenset({"continue", "break"})
_CONTROL_WORD = re.compile(r"(?<![\w$-])(?:continue|break)(?![\w-])")
"""Where the script may hold a ``continue``/``break`` (then its runs are read one by one)."""
_CONDITION_LEADS = frozenset({"if", "elif", "then", "else", "do", "while", "until"})


@dataclass(frozen=True)
class _Input:
    """What a ``while read`` loop reads: its ``source`` (for messages), and its ``text``, or
    None and why that is not known here."""

    source: str
    text: str | None
    why: str = ""


@dataclass(frozen=True)
class _Around:
    """The commands around a loop's first line: its ``done`` (whose redirections feed the
    loop) and the command piped into it, when there are."""

    done: Command | None
    before: Command | None


def _loop_ends(commands: list[Command]) -> dict[int, int]:
    """The index of the command closing each block (``done`` of ``while``), by the index of
    the command opening it."""
    ends: dict[int, int] = {}
    opened: list[int] = []
    for index, command in enumerate(commands):
        first = command.words[0].literal() if command.words else None
        if first in _BLOCK_OPEN:
            opened.append(index)
        elif first in _BLOCK_CLOSE and opened:
            ends[opened.pop()] = index
    return ends


@dataclass
class _Walker:
    scope: Scope
    directory: Path | None
    sourced: int = 0
    visited: int = 0
    submissions: list[_Found] = field(default_factory=list)
    others: list[tuple[int, str]] = field(default_factory=list)
    blocks: int = 0
    depth: int = 0
    nounset: bool = False
    written: list[tuple[str, WrittenFile]] = field(default_factory=list)
    required: list[str] = field(default_factory=list)
    """Errors of ``${NAME:?}`` with NAME unset, met before the submission (bash stops there)."""
    cases: list[_Case] = field(default_factory=list)
    """The ``case`` blocks the walk is in, innermost last."""
    options_loop: int = 0
    """The line of the ``while getopts`` loop the walk is in (0: none), at ``options_depth``."""
    options_depth: int = 0
    array_programs: dict[str, str] = field(default_factory=dict)
    """The first word each array held when last known (``gcloud`` for a command built in it)."""
    loops: list[_Loop] = field(default_factory=list)
    """The ``for`` loops the walk is in, innermost last."""
    pins: dict[tuple[int, str], int] = field(default_factory=dict)
    """The run of each loop this walk reads (``LoopPins``); the first run of any other."""
    carried: list[str] = field(default_factory=list)
    """Why the run read cannot be known: a value the run before sets after the submission."""
    translated: int = 0
    """The lines read to make the script (``find_submission_in``), read again for each run."""
    ifs: list[_If] = field(default_factory=list)
    """The ``if`` blocks the walk is in, innermost last."""
    loop_blocks: list[tuple[int, int]] = field(default_factory=list)
    """Every loop the walk is in (``while true`` too), innermost last: its depth and line."""
    chain: list[Command] = field(default_factory=list)
    """The ``&&``/``||`` list the command read last belongs to, up to it."""
    skipping: _Skip | None = None
    """Set while the commands after a ``continue``/``break`` that ran are passed over."""
    ended: list[tuple[tuple[int, str], int]] = field(default_factory=list)
    """Each loop a ``break`` (or ``continue N``) that ran ended: its key and run index."""

    def pinned(self, loop: _Loop) -> int:
        """The index of the value (line) of ``loop`` this walk reads."""
        return self.pins.get(loop.key, 0)

    def open_for(self, words: list[Word], command: Command) -> None:
        """``for NAME in WORDS``: NAME is read as its first value (a loop over several values
        submits one job per value: ``choose`` says so); values not known make NAME unknown."""
        name = words[1].literal() if len(words) > 1 else None
        if name is None or not _NAME.fullmatch(name):
            return
        listed = words[3:] if len(words) > 2 and words[2].literal() == "in" else None
        values: list[str] | None = None
        why = "it loops over the script's arguments, which are not known here"
        if listed is not None:
            try:
                values = expand_words(listed, self.scope.lookup)
                if _globs(listed, values):
                    why, values = "its words name files (a glob), which are not listed here", None
            except Unresolvable as exc:
                why = f"its values are not known here ({exc.message})"
        header, per = for_loop_key(command.line, name)[1], f"value of ${name}"
        labels = tuple(f"{name}={_shown_value(v)}" for v in (values or [])[:MAX_LOOP_JOBS])
        loop = _Loop(self.blocks, command.line, values, header, per, labels)
        self.loops.append(loop)
        if values:
            index = self.pinned(loop)
            self.scope.assign(name, values[index if index < len(values) else 0], command.line)
            return
        reason = (
            f"${name} is the variable of the `for` loop at line {command.line}, which submits "
            f"one job per value: {why}"
        )
        self.scope.assign(name, Unresolved(reason, (name,), False, f"${name}"), command.line)

    def running(self) -> tuple[_Loop, ...]:
        """The loops the walk is in that run more than once or never, outer first."""
        return tuple(
            loop for loop in self.loops if loop.values is not None and len(loop.values) != 1
        )

    def walk(self, commands: list[Command], *, mode: _Mode) -> None:
        ends = _loop_ends(commands) if mode == "main" else {}
        for index, command in enumerate(commands):
            following = commands[index + 1] if index + 1 < len(commands) else None
            if command.cut and following is not None and following.line > command.line:
                flag = following.words[0].literal() or ""
                if flag.startswith("-"):
                    command = replace(
                        command,
                        cut=f"{command.cut}; line {following.line} starts with "
                        f"`{clipped(flag)}`, which bash runs as a command of its own",
                    )
            end = ends.get(index)
            around = _Around(
                commands[end] if end is not None else None,
                commands[index - 1] if index and commands[index - 1].ended_by == "|" else None,
            )
            self.visit(command, mode=mode, around=around)

    def visit(self, command: Command, *, mode: _Mode, around: _Around | None = None) -> None:
        """One command: assignments applied (not in a substitution), a sourced file read,
        a gcloud command looked at (not in a sourced file). ``around``: the ``done`` of the
        loop it opens and the command piped into it (what a ``while read`` loop reads)."""
        self.visited += 1
        if self.visited > MAX_COMMANDS:
            raise SpecFormatError(
                f"refused: the script holds more than {MAX_COMMANDS} commands "
                "(with those in $(...) and sourced files)"
            )
        if self.skipping is not None:
            self.skip_step(command)
            return
        words = self.spliced(list(command.words))
        self.substitutions(words)
        first = words[0].literal() if words else None
        if self.case_step(command, first):
            return
        lead = _lead(words)
        if mode == "main":
            self.if_step(words, command)
        self.block_step(words[lead].literal() if lead else first, words[lead:], command, mode)
        while words and words[0].literal() in _PREFIX_WORDS:
            words.pop(0)
        # A branch of a `case` whose word is known is followed as bash would: not a condition.
        known = sum(1 for frame in self.cases if frame.subject is not None and frame.active)
        conditional = command.conditional or self.blocks - known > 0
        head = words[0].literal() if words else None
        if mode != "substitution":
            self.defaults(words, command.line, conditional)
        if mode == "main":
            self.writes(command, words, conditional)
        if head in _CONTROLS and mode == "main" and self.loop_blocks:
            self.control(head, words, command)
            return
        if head in _DECLARATIONS or head == "unset":
            if mode != "substitution":
                self.declare(head, words[1:], command.line, conditional)
            return
        if head in ("source", ".") and len(words) > 1:
            if mode != "substitution":
                self.source(words[1], command.line)
            return
        if head == "set":
            self.options(words[1:])
        self.simple_step(command, words, mode, conditional, around if first == "while" else None)

    def simple_step(
        self,
        command: Command,
        words: list[Word],
        mode: _Mode,
        conditional: bool,
        piped: _Around | None,
    ) -> None:
        """A simple command: its assignments alone, the ``read`` builtin (``piped``: the
        loop and pipe of a ``while read``), curl, or a submission (gcloud or a wrapper)."""
        assignments = 0
        while assignments < len(words) and words[assignments].assigned():
            assignments += 1
        if assignments == len(words):
            if mode != "substitution":
                self.declare(None, words, command.line, conditional)
            return
        program = self.program(words[assignments])
        if program == "read" and mode != "substitution":
            self.read_builtin(command, words, piped)
            return
        if mode == "main" and program.rsplit("/", 1)[-1] == "curl":
            self.curl(words[assignments:], command)
            return
        if mode != "sourced" and (
            program.rsplit("/", 1)[-1] == "gcloud" or self.submits(program, words[assignments:])
        ):
            self.gcloud(words[assignments:], command)

    def block_step(
        self, first: str | None, words: list[Word], command: Command, mode: _Mode
    ) -> None:
        """A block's keyword: the depth, and the case, loop or getopts loop it opens or ends."""
        if first in _BLOCK_CLOSE:
            self.blocks = max(0, self.blocks - 1)
            if first == "esac" and self.cases and self.cases[-1].depth > self.blocks:
                self.cases.pop()
            if first == "done" and self.options_depth > self.blocks:
                self.options_loop = self.options_depth = 0
            while first == "done" and self.loops and self.loops[-1].depth > self.blocks:
                self.loops.pop()
            while self.loop_blocks and self.loop_blocks[-1][0] > self.blocks:
                self.loop_blocks.pop()
            while self.ifs and self.ifs[-1].depth > self.blocks:
                self.ifs.pop()
        elif first in _BLOCK_OPEN:
            self.blocks += 1
            if first in _LOOP_WORDS:
                self.loop_blocks.append((self.blocks, command.line))
            elif first == "if":
                self.ifs.append(_If(self.blocks, [[command]]))
            if first == "case":
                self.open_case(words, command)
            elif first == "for" and mode == "main":
                self.open_for(words, command)
            elif len(words) > 1 and words[1].literal() == "getopts" and not self.options_loop:
                self.options_loop, self.options_depth = command.line, self.blocks

    def if_step(self, words: list[Word], command: Command) -> None:
        """Follow the ``if`` blocks (for ``continue``/``break``): the ``&&``/``||`` list the
        command is in, the ``then``/``elif``/``else`` it starts with, the conditions' commands."""
        if command.conditional:
            self.chain.append(command)
        else:
            self.chain = [command]
        frame = self.ifs[-1] if self.ifs and self.ifs[-1].depth == self.blocks else None
        for word in words:
            literal = word.literal()
            if frame is None or literal not in ("then", "else", "elif"):
                break
            if literal == "elif":
                frame.conditions.append([command])
                frame.state = "condition"
                return
            frame.state = "then" if literal == "then" else "else"
        if (
            frame is not None
            and frame.state == "condition"
            and frame.conditions[-1][-1] is not command
        ):
            frame.conditions[-1].append(command)

    def control(self, head: str, words: list[Word], command: Command) -> None:
        """``continue [N]``/``break [N]`` in a loop: where the run is known to reach it, the
        commands after it are passed over to the ``done`` of the loop it goes to (a
        submission among them is not reached in this run) and the loops it ends are kept
        (``ended``); where that is not known, the run is read as if it did not."""
        level = words[1].literal() if len(words) > 1 else "1"
        enclosing = self.loop_blocks
        shown = clipped(self.written_text(words[1])) if len(words) > 1 else ""
        verdict = Verdict(None, f"its level `{shown}` is not a number known here")
        if level is not None and level.isdigit() and len(level) < 6 and int(level) > 0:
            enclosing = self.loop_blocks[-min(int(level), len(self.loop_blocks)) :]
            verdict = self.control_verdict(enclosing)
        where = f"line {command.line}: `{head}`"
        if verdict.value is None:
            if self.pins:
                self.scope.notes[
                    f"{where} is not evaluated here ({verdict.why}): each run of the loop is "
                    "read as if its body reached the submission"
                ] = None
            return
        if not verdict.value:
            self.scope.notes[f"{where} does not run in this run (its condition is false)"] = None
            return
        target = next(lp for lp in self.loops if lp.depth == enclosing[0][0])
        ended = {depth for depth, _ in enclosing[1:]} | (
            {enclosing[0][0]} if head == "break" else set()
        )
        self.ended.extend((lp.key, self.pinned(lp)) for lp in self.loops if lp.depth in ended)
        later = (
            f"; later runs of the {target.header} loop submit nothing" if head == "break" else ""
        )
        self.scope.notes[
            f"{where} runs in this run: the rest of the {target.header} loop's body (line "
            f"{target.line}) is not run{later}"
        ] = None
        self.skipping = _Skip(
            enclosing[0][0], f"`{head}` at line {command.line} runs before the submission"
        )

    def control_verdict(self, enclosing: list[tuple[int, int]]) -> Verdict:
        """Whether the ``continue``/``break`` just read runs in this run: every loop from the
        one it goes to inward is read at this run's value, and every ``if`` branch, ``case``
        and ``&&``/``||`` list between is known to lead to it."""
        for depth, line in enclosing:
            loop = next((lp for lp in self.loops if lp.depth == depth), None)
            if loop is None or not loop.values:
                return Verdict(None, f"the loop at line {line} is not read run by run here")
            if len(loop.values) > 1 and loop.key not in self.pins:
                return Verdict(
                    None,
                    f"the {loop.header} loop at line {line} is read here at its first run only",
                )
        outer = enclosing[0][0]
        verdicts = [self.branch_verdict(frame) for frame in self.ifs if frame.depth > outer]
        verdicts.extend(
            Verdict(None, f"the `case` at line {case.line} is on a word not known here")
            for case in self.cases
            if case.depth > outer and case.subject is None
        )
        verdicts.append(self.reached(self.chain))
        if any(v.value is False for v in verdicts):
            return Verdict(False)
        return next((v for v in verdicts if v.value is None), Verdict(True))

    def branch_verdict(self, frame: _If) -> Verdict:
        """Whether the branch of ``frame`` the walk is in is the one bash takes."""
        if frame.state == "condition":
            return Verdict(
                None, f"it is in the condition of the `if` at line {frame.conditions[0][0].line}"
            )
        verdicts = [self.list_verdict(commands) for commands in frame.conditions]
        taken = [verdicts[-1]] if frame.state == "then" else []
        return self.all_of([v.negated() for v in verdicts[: len(verdicts) - len(taken)]] + taken)

    @staticmethod
    def all_of(verdicts: list[Verdict]) -> Verdict:
        if any(v.value is False for v in verdicts):
            return Verdict(False)
        return next((v for v in verdicts if v.value is None), Verdict(True))

    def list_verdict(self, commands: list[Command]) -> Verdict:
        """The status of a condition's commands: that of its last ``&&``/``||`` list."""
        start = max((i for i, c in enumerate(commands) if not c.conditional), default=0)
        chain = commands[start:]
        links = [
            ("&&" if i and chain[i - 1].ended_by == "&" else "||", self.status(command))
            for i, command in enumerate(chain)
        ]
        return chain_verdict(links)

    def reached(self, chain: list[Command]) -> Verdict:
        """Whether the last command of an ``&&``/``||`` list runs, from those before it."""
        if len(chain) < 2:
            return Verdict(True)
        status = self.list_verdict(chain[:-1])
        return status if chain[-2].ended_by == "&" else status.negated()

    def status(self, command: Command) -> Verdict:
        """The verdict of one command of a condition (``! [ "$LR" = 1 ]``, ``test -z "$X"``)."""
        words = list(command.words)
        while words and words[0].literal() in _CONDITION_LEADS:
            words.pop(0)
        negations = 0
        while words and words[0].literal() == "!":
            words.pop(0)
            negations += 1
        program = words[0].literal() if words else None
        shown = clipped(" ".join(self.written_text(w) for w in words))
        if program is None:
            return Verdict(None, f"`{shown}` would have to run")
        try:
            if program == "[[":
                args = [expand_word(w, self.quietly, split=False)[0] for w in words[1:]]
            else:
                args = expand_words(words[1:], self.quietly)
        except (Unresolvable, SpecFormatError) as exc:
            return Verdict(None, f"`{shown}` uses a value not known here ({exc})")
        globs = [_unquoted_glob(w) for w in words[1:]]
        verdict = command_verdict(program, args, globs)
        if verdict.value is None:
            return Verdict(None, f"`{shown}`: {verdict.why}")
        return verdict.negated() if negations % 2 else verdict

    def quietly(self, part: Part) -> str:
        """``Scope.lookup`` for a condition: what it counts and notes is taken back (the
        condition is judged for ``continue``/``break`` only, and the reading stays as it was)."""
        scope = self.scope
        used, notes = scope.used, dict(scope.notes)
        try:
            return scope.lookup(part)
        finally:
            scope.used, scope.notes = used, notes

    def skip_step(self, command: Command) -> None:
        """A command after a ``continue``/``break`` that ran, up to the ``done`` of the loop
        it goes to: not run. Its blocks are followed, and a submission among them is recorded
        as not reached (the loops around it are still those of the script's submission)."""
        skip = self.skipping
        assert skip is not None
        words = self.spliced(list(command.words))
        first = words[0].literal() if words else None
        if self.case_step(command, first):
            return
        lead = _lead(words)
        keyword = words[lead].literal() if words else None
        if keyword in _BLOCK_CLOSE:
            self.block_step(keyword, words[lead:], command, "main")
            if self.blocks < skip.depth:
                self.skipping = None
            return
        if keyword in _BLOCK_OPEN:
            self.blocks += 1
            if keyword == "case":
                self.open_case(words[lead:], command)
            return
        while words and words[0].literal() in _PREFIX_WORDS:
            words.pop(0)
        words = list(itertools.dropwhile(lambda w: w.assigned() is not None, words))
        program = self.program(words[0]).rsplit("/", 1)[-1] if words else ""
        if program == "curl":
            self.curl(words, command)
        elif program == "gcloud" or (words and self.submits(program, words)):
            self.gcloud(words, command)

    def found(
        self,
        line: int,
        found: Invocation,
        argv: list[str] | Unresolvable,
        scope: Scope,
        command: Command,
        rest: RestCall | None = None,
    ) -> None:
        """Record a submission (gcloud's or a REST call's) where the walk now stands."""
        self.submissions.append(
            _Found(
                line,
                found,
                argv,
                self.blocks > 0,
                scope,
                len(self.written),
                command.cut,
                self.stdin_of(command),
                rest,
                self.running(),
                frozenset(part.value for part in _parts_of(list(command.words), "param")),
                self.skipping.reason if self.skipping is not None else "",
            )
        )

    def read_builtin(self, command: Command, words: list[Word], loop: _Around | None) -> None:
        """``[IFS=,] read [-r] [-p PROMPT] NAME...``: each NAME gets a line of its input. Where
        the script gives that input as text (``< FILE`` beside it, a here-document, what
        ``printf``/``echo`` pipe into a ``while read`` loop), the first line's values are
        read and a loop over several lines submits one job per line (``choose`` says so);
        otherwise (the terminal, a command's output) NAME is unknown, saying why."""
        assignments = list(itertools.takewhile(lambda w: w.assigned() is not None, words))
        ifs_value = self.scope.get("IFS")
        ifs = ifs_value if isinstance(ifs_value, str) else DEFAULT_IFS
        for word in assignments:
            found = word.assigned()
            if found is not None and found[0] == "IFS":
                try:
                    ifs = expand_word(found[1], self.scope.lookup, split=False)[0]
                except Unresolvable:
                    ifs = DEFAULT_IFS
        options = read_options([w.literal() or "" for w in words[len(assignments) + 1 :]])
        names = [n for n in (*options.names, options.array) if _NAME.fullmatch(n)]
        fed: _Input | None
        if loop is not None:
            fed = self.redirected_input(loop.done, options.fd) if loop.done else None
            if fed is None and loop.before is not None and options.fd == "0":
                fed = self.piped_input(loop.before)
        else:
            fed = self.redirected_input(command, options.fd)
        if fed is not None and fed.text is not None and (options.delimiter or options.array):
            fed = _Input(
                fed.source, None, "which `read -d`/`read -a` splits as it is not read here"
            )
        if fed is None or fed.text is None:
            self.read_unknown(command, names, fed, prompted=options.prompted, loop=bool(loop))
            return
        lines = input_lines(fed.text, last_unterminated=command.ended_by == "||")
        index = 0
        if loop is not None:
            header = f"`while read {' '.join(names)}`"
            per = f"line of {fed.source}"
            labels = tuple(
                " ".join(
                    f"{n}={_shown_value(v)}"
                    for n, v in zip(
                        names, split_line(text, len(names), ifs, options.raw), strict=False
                    )
                )
                for text in lines[:MAX_LOOP_JOBS]
            )
            opened = _Loop(self.blocks, command.line, lines, header, per, labels, "while read")
            self.loops.append(opened)
            index = min(self.pinned(opened), max(len(lines) - 1, 0))
        values = split_line(lines[index], len(names), ifs, options.raw) if lines else []
        if loop is not None and len(lines) == 1:
            read = ", ".join(f"{n}={clipped(v)!r}" for n, v in zip(names, values, strict=False))
            self.scope.notes[
                f"line {command.line}: the `while read` loop reads one line of {fed.source} "
                f"({read}): its one job is read"
            ] = None
        for index, name in enumerate(names):
            self.scope.arrays.pop(name, None)
            value = self.scope.count(values[index] if index < len(values) else "")
            self.scope.assign(name, value, command.line)

    def read_unknown(
        self, command: Command, names: list[str], fed: _Input | None, *, prompted: bool, loop: bool
    ) -> None:
        """``read``'s variables, when what it reads is not known here: each says from where."""
        where = "the terminal" if prompted and fed is None else "its standard input"
        line = command.line
        tail = ", so it is not known here"
        if fed is None and not prompted:
            tail = " (the terminal, or what is piped into the script)" + tail
        if fed is not None:
            tail = f": {fed.source}, {fed.why}"
        if loop:
            tail += "; the `while read` loop submits one job per line it reads"
        for name in names or ["REPLY"]:
            reason = (
                f"${name} is read from {where} (`read`, line {line}) when the script runs{tail}"
            )
            self.scope.arrays.pop(name, None)
            self.scope.assign(name, Unresolved(reason, (name,), False, f"${name}"), line)

    def redirected_input(self, command: Command, fd: str) -> _Input | None:
        """What a redirection gives the command's descriptor ``fd`` to read (``< FILE``, a
        here-document or here-string, ``< <(printf ...)``), or None without one."""
        fed = [r for r in command.redirects if r.op in _STDIN_OPS and (r.fd or "0") == fd]
        if not fed:
            return None
        redirect = fed[-1]
        if redirect.op in ("<<", "<<-", "<<<"):
            here = "here-string" if redirect.op == "<<<" else "here-document"
            source = f"the {here} at line {redirect.line}"
            if redirect.body_error:
                return _Input(source, None, f"which bash cannot read ({redirect.body_error})")
            body = redirect.target if redirect.op == "<<<" else redirect.body
            try:
                text = expand_word(body, self.scope.lookup, split=False)[0] if body else ""
            except Unresolvable as exc:
                return _Input(source, None, f"which holds a value not known here ({exc.message})")
            return _Input(source, text + "\n" if redirect.op == "<<<" else text)
        parts = redirect.target.parts
        if len(parts) == 1 and parts[0].kind == "command" and parts[0].op == "process":
            try:
                inner = split_commands(parts[0].value, redirect.line)
            except SpecFormatError:
                inner = []
            if len(inner) == 1:
                return self.piped_input(inner[0])
            return _Input(f"`<({clipped(parts[0].value)})`", None, "which would have to run")
        return self.file_input(self.written_text(redirect.target))

    def piped_input(self, command: Command) -> _Input:
        """The output of a command piped into a loop: known for ``printf``, ``echo`` and ``cat``
        of text the script gives, otherwise a command that would have to run."""
        program = command.words[0].literal() if command.words else None
        shown = " ".join(self.written_text(w) for w in command.words)
        source = f"the output of `{clipped(shown)}` at line {command.line}"
        try:
            arguments = expand_words(list(command.words[1:]), self.scope.lookup)
        except Unresolvable as exc:
            return _Input(source, None, f"whose words are not known here ({exc.message})")
        text: str | None = None
        if program == "printf":
            text = printf_output(arguments)
        elif program == "echo":
            text = echo_output(arguments)
        elif program == "cat" and all(a == "-" for a in arguments):
            fed = self.redirected_input(command, "0")
            return fed if fed is not None else _Input(source, None, "which reads the terminal")
        elif program == "cat" and len(arguments) == 1 and not arguments[0].startswith("-"):
            return self.file_input(arguments[0])
        if text is None:
            return _Input(source, None, "which would have to run")
        return _Input(source, text)

    def file_input(self, name: str) -> _Input:
        """A file a loop reads: as the script wrote it by a here-document before, else the
        file beside the script (as ``--config`` files are found), within ``MAX_INPUT_BYTES``."""
        source = clipped(name)
        if name == "/dev/null":
            return _Input(source, "")
        written = next((w for k, w in reversed(self.written) if k == _file_key(name)), None)
        if written is not None:
            if written.body is None or MARK.search(written.body):
                why = (
                    written.error or f"which line {written.line} writes ({written.by or 'heredoc'})"
                )
                return _Input(source, None, why + ", not known here")
            return _Input(source, written.body)
        if self.directory is None:
            return _Input(source, None, "a file, not read here (the script's folder is not known)")
        relative, _ = locate(name, self.directory, "input")
        try:
            text = read_text_capped(self.directory / relative, MAX_INPUT_BYTES, what="file")
        except FileReadError as exc:
            return _Input(source, None, f"which cannot be read beside the script ({exc})")
        return _Input(source, text)

    def open_case(self, words: list[Word], command: Command) -> None:
        """``case WORD in``: WORD's value when it is known (a script argument's default
        included), so that only the branch bash takes is read."""
        subject: str | None = None
        arguments = False
        if len(words) > 1:
            try:
                subject = expand_word(words[1], self.scope.lookup, split=False)[0]
            except Unresolvable as exc:
                arguments = "script argument" in exc.message or "arguments" in exc.message
            except SpecFormatError:
                pass
        frame = _Case(self.blocks, command.line, subject, arguments)
        self.cases.append(frame)
        if command.ended_by == ")":  # `case $x in a) ...` on one line: its first pattern
            frame.patterns.extend(w.literal() or "" for w in words[3:])
            frame.choose(command.branch_end)

    def case_step(self, command: Command, first: str | None) -> bool:
        """Follow a ``case`` block: its pattern lists are no commands, and a branch bash does
        not take is skipped (only its blocks are counted). True if the command is consumed."""
        frame = self.cases[-1] if self.cases else None
        if frame is None or (first == "esac" and self.blocks == frame.depth):
            return False
        if frame.state == "pattern" and self.blocks == frame.depth:
            frame.patterns.extend(w.literal() or "" for w in command.words)
            if command.ended_by == ")":
                frame.choose(command.branch_end)
            return True
        ending = command.branch_end and self.blocks == frame.depth
        if frame.subject is not None and not frame.active:
            if first in _BLOCK_CLOSE and self.blocks > frame.depth:
                self.blocks -= 1
            elif first in _BLOCK_OPEN:
                self.blocks += 1
            if ending:
                frame.state = "pattern"
            return True
        if ending:
            frame.state = "pattern"  # after this command, which is visited
        return False

    def submits(self, program: str, words: list[Word]) -> bool:
        """A command word whose value is not known (``$GCLOUD`` unset) before a job
        submission's words (``ai custom-jobs create``): read as gcloud, so that the error
        names the variable rather than finding no gcloud command."""
        if program or words[0].literal() is not None:
            return False
        try:
            return invocation(expand_words(words, self.scope.preview)).form in SUBMISSIONS
        except SpecFormatError:
            return False

    def program(self, word: Word) -> str:
        """The command word: as written, or the value of the variable it names
        (``"${GCLOUD}" ai ...`` with ``GCLOUD=gcloud`` or a path to gcloud)."""
        literal = word.literal()
        if literal is not None:
            return literal
        if self.unknown_array(word) is not None:
            return self.array_programs.get(word.parts[0].value, "")
        try:
            fields = expand_word(word, self.scope.preview)
        except (Unresolvable, SpecFormatError):
            return ""
        first = fields[0] if fields else ""
        return "" if PLACEHOLDER in first else first

    def options(self, words: list[Word]) -> None:
        """``set -u`` / ``set -o nounset`` (``+u`` off): unset variables stop the script."""
        literals = [w.literal() or "" for w in words]
        for index, option in enumerate(literals):
            if option == "--" or option[:1] not in ("-", "+"):
                break
            named = (
                literals[index + 1] if option in ("-o", "+o") and index + 1 < len(literals) else ""
            )
            if "u" in option[1:] or named == "nounset":
                self.nounset = option.startswith("-")

    def defaults(self, words: list[Word], line: int, conditional: bool) -> None:
        """``${NAME:=default}`` in any command assigns; ``${NAME:?}`` with NAME unset stops
        bash there (an error once a submission follows)."""
        program = next((w.literal() for w in words if not w.assignment()), None) or ""
        for part in _parts_of(words, "param"):
            name = part.value
            if part.op not in (":=", "=", ":?", "?") or not _NAME.fullmatch(name):
                continue
            value = self.scope.get(name)
            missing = value is None or (part.op.startswith(":") and value == "")
            if not missing:
                continue
            if part.op in (":=", "="):
                self.assign(name, Word(part.word), line, conditional)
            elif not conditional and not self.submissions and not program.endswith("gcloud"):
                self.required.append(
                    f"line {line}: environment variable ${name} is not set (the script "
                    f"requires it, and bash stops there); set {name} in the environment"
                )

    def source(self, word: Word, line: int) -> None:
        """``source FILE``: the assignments of a file under the script's directory."""
        try:
            name = expand_word(word, self.scope.lookup, split=False)[0]
        except Unresolvable as exc:
            self.scope.notes[f"line {line}: sourced file not read ({exc.message})"] = None
            return
        why = self.unreadable(name)
        if why is None and self.directory is not None:
            path = self.directory / name
            self.sourced += 1
            self.depth += 1
            try:
                text = read_text_capped(path, _MAX_SOURCED_BYTES, what="sourced file")
                self.walk(split_commands(text), mode="sourced")
                self.scope.notes[f"line {line}: read the assignments of sourced file {name}"] = None
            except (SpecFormatError, FileReadError) as exc:
                why = str(exc)
            finally:
                self.depth -= 1
        if why is not None:
            self.scope.notes[f"line {line}: sourced file {name} not read: {why}"] = None

    def unreadable(self, name: str) -> str | None:
        """Why ``source NAME`` is not read, or None."""
        if self.directory is None:
            return "the script's directory is not known"
        if self.sourced >= _MAX_SOURCED or self.depth >= _MAX_SUBSTITUTION_DEPTH:
            return f"at most {_MAX_SOURCED} files, {_MAX_SUBSTITUTION_DEPTH} deep, are read"
        try:
            inside = (self.directory / name).resolve().is_relative_to(self.directory)
        except (OSError, RuntimeError, ValueError):
            inside = False
        return None if inside else "only files under the script's directory are read"

    def declare(self, head: str | None, words: list[Word], line: int, conditional: bool) -> None:
        """Apply ``NAME=value`` words (``export``/``declare``... options skipped, ``unset``)."""
        for word in words:
            literal = word.literal()
            if head == "unset":
                if literal and _NAME.fullmatch(literal):
                    self.scope.values.pop(literal, None)
                    self.scope.arrays.pop(literal, None)
                    self.scope.unset.add(literal)
                continue
            found = word.assigned()
            if found is not None:
                self.assign(found[0], found[1], line, conditional, append=found[2])

    def assign(
        self, name: str, value: Word, line: int, conditional: bool, *, append: bool = False
    ) -> None:
        """``NAME=value``, ``NAME+=value``, ``NAME=(...)`` and ``NAME+=(...)`` as bash applies
        them; set under a condition, or from the script's options, as ``condition`` says."""
        scope = self.scope
        if conditional and self.options_loop and self.from_options(name, line):
            return
        self.carry(name, line)
        if len(value.parts) == 1 and value.parts[0].op == "array":
            self.assign_array(name, value.parts[0], line, conditional, append)
            return
        if append:  # `NAME+=x` is `NAME="${NAME}"x` (an unset NAME is empty)
            value = Word((Part("param", name, True, ":-", (), line), *value.parts))
        scope.arrays.pop(name, None)
        scope.assign(name, self.value_of(name, value, line, conditional), line)

    def carry(self, name: str, line: int) -> None:
        """``NAME=...`` after the submission, in the body of a loop read at a later run than its
        first: that run's submission would read the value the run before set here."""
        last = self.submissions[-1] if self.submissions else None
        if last is None or name not in last.uses or self.carried:
            return
        loop = next(
            (lp for lp in last.loops if lp in self.loops and self.pinned(lp) > 0),
            None,
        )
        if loop is not None:
            self.carried.append(
                f"line {line}: ${name} is set in the body of the {loop.header} loop at line "
                f"{loop.line} after the submission (line {last.line}) that uses it: this run "
                "reads the value the run before sets, which is not followed here"
            )

    def value_of(
        self, name: str, value: Word, line: int, conditional: bool, *, array: bool = False
    ) -> str | Unresolved:
        """What ``NAME=value`` gives ``NAME``: its text, or why it cannot be known (an
        ``array`` element's: the environment sets no array, so its name is no hint)."""
        scope = self.scope
        unknown: list[Unresolvable] = []

        def readable(part: Part) -> str:
            try:
                return scope.lookup(part)
            except Unresolvable as exc:
                if exc.unset:
                    raise
                unknown.append(exc)
                return exc.text

        try:
            text = expand_word(value, self.lenient(value, readable, line), split=False)[0]
        except Unresolvable as exc:
            names = exc.names if name in exc.names or array else (*exc.names, name)
            return Unresolved(exc.message, names, True, f"${name}")
        if conditional:
            return Unresolved(self.condition(name, line), (name,), False, text)
        if unknown:
            message, names = _why_unknown(unknown[0], name, line, offer=not array)
            keepable = all(u.keepable for u in unknown)
            marked = self.marked(value, name, line, offer=not array) if keepable else None
            return Unresolved(message, names, False, text, keepable, marked)
        return text

    def assign_array(
        self, name: str, part: Part, line: int, conditional: bool, append: bool
    ) -> None:
        """``NAME=(a b c)`` / ``NAME+=(...)``: each word's value as bash assigns it (``"${x[@]}"``
        copies x's elements, an unquoted ``$X`` splits into several)."""
        scope = self.scope
        before = scope.arrays.get(name)
        if isinstance(before, list) and before and isinstance(before[0], str):
            # What the array ran as a command, remembered: an error then names the unknown.
            self.array_programs[name] = before[0]
        if conditional:
            # Never kept as written: `"${cmd[@]}"` stands for several words.
            reason = self.condition(name, line)
            scope.arrays[name] = Unresolved(reason, (), False, f"${name}", keepable=False)
            return
        try:
            words = [w for c in split_commands(part.value, part.line) for w in c.words]
        except SpecFormatError as exc:
            scope.arrays[name] = Unresolved(str(exc), (name,), False, f"${name}", keepable=False)
            return
        before = scope.arrays.get(name) if append else None
        if isinstance(before, Unresolved):
            return  # still unknown: appending to it cannot make it known
        if append and before is None and isinstance(scope.get(name), str | Unresolved):
            before = [scope.get(name) or ""]
        # Appended in place: `cmd+=(...)` in a long script must not copy the array each time.
        elements: list[str | Unresolved] = before if isinstance(before, list) else []
        for word in words:
            elements.extend(self.element_values(name, word, line))
            if len(elements) > MAX_FIELDS:
                raise SpecFormatError(
                    f"line {line}: the array ${name} would hold more than {MAX_FIELDS} elements"
                )
        if name not in scope.arrays and len(scope.arrays) + len(scope.values) >= MAX_VARIABLES:
            raise SpecFormatError(
                f"line {line}: the script sets more than {MAX_VARIABLES} variables"
            )
        scope.values.pop(name, None)
        scope.arrays[name] = elements
        if elements and isinstance(elements[0], str):
            self.array_programs[name] = elements[0]

    def element_values(self, name: str, word: Word, line: int) -> list[str | Unresolved]:
        """The elements one word of an array assignment gives."""
        scope = self.scope
        parts = word.parts
        if len(parts) == 1 and parts[0].op == "[@]" and parts[0].quoted:
            copied = scope.arrays.get(parts[0].value)
            if isinstance(copied, list):
                return list(copied)
        if any(p.kind != "text" and not p.quoted for p in parts):
            try:  # an unquoted expansion is split into several elements, as bash does
                return [scope.count(f) for f in expand_word(word, scope.lookup)]
            except Unresolvable:
                pass
        value = self.value_of(name, word, line, False, array=True)
        if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
            raise SpecFormatError(
                f"line {line}: ${name} would hold more than {MAX_VALUE_CHARS} characters"
            )
        return [value]

    def spliced(self, words: list[Word]) -> list[Word]:
        """The command's words with each ``"${cmd[@]}"`` of a known array replaced by one word
        per element (``"${cmd[0]}" "${cmd[1]}" ...``): a command built in an array is read as
        the words it runs, each expanded when the command is read."""
        out: list[Word] = []
        for word in words:
            parts = word.parts
            found = (
                self.scope.arrays.get(parts[0].value)
                if len(parts) == 1 and parts[0].op == "[@]" and parts[0].quoted
                else None
            )
            if isinstance(found, list):
                name, line = parts[0].value, parts[0].line
                out.extend(
                    Word((Part("param", name, True, "[]", (Part("text", str(i), True),), line),))
                    for i in range(len(found))
                )
            else:
                out.append(word)
        return out

    def condition(self, name: str, line: int) -> str:
        """Why a value set under a condition is not known."""
        on_arguments = next((f for f in reversed(self.cases) if f.arguments), None)
        if on_arguments is not None:
            return (
                f"${name} is set in a `case` on the script's arguments (line "
                f"{on_arguments.line}): it depends on the arguments, which are not known here"
            )
        return f"${name} is set under a condition (line {line}), which is not evaluated"

    def from_options(self, name: str, line: int) -> bool:
        """An assignment in a ``while getopts`` loop: the script's options are not known, so
        the value before the loop (the script's default) stands, with a note; with none, the
        variable depends on the arguments (an error once a command uses it). True if handled."""
        scope = self.scope
        before = scope.get(name)
        loop = self.options_loop
        if isinstance(before, str):
            scope.notes[
                f"line {line}: ${name} is set from the script's options (getopts, line {loop}), "
                f"which are not known here: its default {clipped(before)!r} is used"
            ] = None
            return True
        if before is None:
            reason = (
                f"${name} is set from the script's options (getopts, line {loop}) and has no "
                "default: it depends on the script's arguments, which are not known here"
            )
            scope.assign(name, Unresolved(reason, (name,), False, f"${name}"), line)
            return True
        return True  # already unknown: it stays so

    def lenient(self, word: Word, lookup: Lookup, line: int) -> Lookup:
        """``lookup`` for the value of an assignment, where an unset variable inside a larger
        word (``ARGS="--a=1,--key=$UNSET"``) expands to nothing inside it, as bash does (not
        under ``set -u``, not ``${NAME:?}``), with a note. A value that is only the variable
        stays unknown, and so do the command's own words (``--region=$REGION``,
        ``machine-type=$MACHINE``): an error naming the variable helps more there than the
        empty value bash would pass."""
        parts = [p for p in word.parts if p.kind != "text" or p.value]
        if parts and parts[0].kind == "text" and _FLAG_EQUALS.fullmatch(parts[0].value):
            parts = parts[1:]  # `--region=$REGION`: the flag's whole value is the variable
        if self.nounset or len(parts) < 2:
            return lookup

        def inner(part: Part) -> str:
            try:
                return lookup(part)
            except Unresolvable as exc:
                if not exc.unset or exc.required or not exc.names:
                    raise
                self.scope.notes[
                    f"line {line}: ${exc.names[0]} is not set: it expands to nothing inside "
                    "the word that holds it, as bash does"
                ] = None
                return ""

        return inner

    def marked(self, value: Word, name: str, line: int, *, offer: bool = True) -> str | None:
        """A computed value with only its unknown parts marked (``gs://b/m_MARK``)."""
        scope = self.scope

        def marking(part: Part) -> str:
            try:
                return scope.lookup(part)
            except Unresolvable as exc:
                if exc.marked is not None:
                    return exc.marked
                message, names = _why_unknown(exc, name, line, offer=offer)
                return scope.mark(Unresolvable(message, names, text=exc.text))

        try:
            return expand_word(value, marking, split=False)[0]
        except Unresolvable:
            return None

    def writes(self, command: Command, words: list[Word], conditional: bool) -> None:
        """Remember the files a command writes: its output redirections, ``tee``, copies."""
        while words and words[0].assignment():
            words = words[1:]
        program = (words[0].literal() or "").rsplit("/", 1)[-1] if words else ""
        stdin = [r for r in command.redirects if r.op in ("<<", "<<-") and r.fd in ("", "0")]
        heredoc = stdin[-1] if stdin else None
        storage = program == "gcloud" and any(w.literal() == "storage" for w in words[1:3])
        writer = program in _WRITERS or storage
        args = [self.written_text(w) for w in words[1:]] if writer else []
        copies = heredoc is not None and (program == "tee" or all(a == "-" for a in args))
        copies = copies and program in ("cat", "tee")
        for redirect in command.redirects:
            if any(p.op == "process" for p in redirect.target.parts):
                continue  # `> >(tee -a "$LOG")`: output into a process, no file of its own
            if redirect.op not in _WRITING or (
                redirect.op == ">&" and _FD.match(redirect.target.literal() or "-")
            ):
                continue
            fresh = copies and redirect.op in _TRUNCATING and redirect.fd in ("", "1")
            target = self.written_text(redirect.target)
            self.record(
                target,
                command.line,
                heredoc if fresh else None,
                f"`{program} ... {redirect.op} {clipped(target)}`",
                conditional,
            )
        for target, by in _written_by(program, args):
            fresh = program == "tee" and heredoc is not None and by == "`tee`"
            self.record(target, command.line, heredoc if fresh else None, by, conditional)

    def written_text(self, word: Word) -> str:
        """A word as the script writes it, its unknown parts as written (one field)."""

        def readable(part: Part) -> str:
            try:
                return self.scope.lookup(part)
            except Unresolvable as exc:
                return exc.text or f"${{{part.value}}}"

        try:
            return expand_word(word, readable, split=False)[0]
        except SpecFormatError:
            return ""

    def record(
        self, path: str, line: int, heredoc: Redirect | None, by: str, conditional: bool
    ) -> None:
        key = _file_key(path)
        if not key:
            return
        if len(self.written) >= MAX_WRITES:
            raise SpecFormatError(f"refused: the script writes files more than {MAX_WRITES} times")
        if heredoc is None:
            written = WrittenFile(path, line, by=by, conditional=conditional)
        else:
            body, error = self.heredoc_text(heredoc, path)
            written = WrittenFile(path, heredoc.line, body, error=error, conditional=conditional)
        self.written.append((key, written))

    def heredoc_text(self, heredoc: Redirect, path: str) -> tuple[str | None, str]:
        """The here-document's body as bash writes it, or why it cannot be known."""
        if heredoc.body_error:
            return None, heredoc.body_error
        if heredoc.body is None:
            return "", ""
        what = f"the heredoc writing {clipped(path)}"
        try:
            text = expand_word(heredoc.body, self.scope.marking, split=False)[0]
        except Unresolvable as exc:
            return None, unresolved_message(heredoc.line, exc, what)
        except SpecFormatError as exc:
            return None, f"line {heredoc.line}: {what}: {exc}"
        if len(text) > MAX_SPEC_BYTES:
            return None, f"line {heredoc.line}: {what} is over {MAX_SPEC_BYTES} characters"
        return text, ""

    def substitutions(self, words: list[Word]) -> None:
        """Look for gcloud commands inside ``$(...)`` (``JOB=$(gcloud ai custom-jobs create)``)."""
        if self.depth >= _MAX_SUBSTITUTION_DEPTH:
            return
        for part in _parts_of(words, "command"):
            if "gcloud" not in part.value or part.op == "array":
                continue  # an array's words are values (a command built in one runs later)
            self.depth += 1
            blocks, self.blocks = self.blocks, 0
            try:
                self.walk(split_commands(part.value, part.line), mode="substitution")
            except SpecFormatError:
                pass  # a substitution bash would fail on submits nothing
            finally:
                self.depth -= 1
                self.blocks = blocks

    def unknown_array(self, word: Word) -> Unresolved | None:
        """Why the array ``word`` (``"${cmd[@]}"``) runs is not known, or None."""
        parts = word.parts
        if len(parts) != 1 or parts[0].op not in ("[@]", "[*]"):
            return None
        found = self.scope.arrays.get(parts[0].value)
        return found if isinstance(found, Unresolved) else None

    def gcloud(self, words: list[Word], command: Command) -> None:
        scope = self.scope
        line = command.line
        unknown = self.unknown_array(words[0])
        if unknown is not None:  # a command built in an array that is not known here
            self.submissions.append(
                _Found(
                    line,
                    invocation(["gcloud"]),
                    unknown.error(),
                    self.blocks > 0,
                    scope,
                    len(self.written),
                    command.cut,
                    skipped=self.skipping.reason if self.skipping is not None else "",
                )
            )
            return
        words = self.processes(words)
        preview = invocation(expand_words(words, scope.preview))
        if preview.form not in SUBMISSIONS:
            self.others.append((line, preview.name))
            if preview.path[:2] == ("config", "set"):
                self.config_set(preview)
            return
        argv: list[str] | Unresolvable
        try:
            argv = self.expanded(words, preview.form == "legacy-training", line)
            found = invocation(argv)
        except Unresolvable as exc:
            argv, found = exc, preview
        self.found(line, found, argv, scope, command)

    def processes(self, words: list[Word]) -> list[Word]:
        """The words with each ``<(cat <<EOF ... EOF)`` (a file whose text is a here-document
        or here-string) named by the path bash gives it (``/dev/fd/63``), that file written
        with the text; ``<(cat FILE)`` is FILE. Other process substitutions stay (unknown)."""
        out: list[Word] = []
        for word in words:
            parts: list[Part] = []
            for part in word.parts:
                if part.kind == "command" and part.op == "process":
                    parts.append(self.process_file(part))
                else:
                    parts.append(part)
            out.append(Word(tuple(parts)))
        return out

    def process_file(self, part: Part) -> Part:
        try:
            commands = split_commands(part.value, part.line)
        except SpecFormatError:
            return part
        if len(commands) != 1 or part.value.lstrip().startswith(">"):
            return part
        command = commands[0]
        literals = [w.literal() for w in command.words]
        if literals[:1] != ["cat"] or None in literals:
            return part
        files = [w for w in literals[1:] if w != "-"]
        if len(files) == 1 and len(literals) == 2:
            return Part("text", files[0] or "", True)  # `<(cat job.yaml)`: that file
        fed = self.stdin_of(command)
        if files or fed is None or fed.by == "<":
            return part
        if len(self.written) >= MAX_WRITES:
            raise SpecFormatError(f"refused: the script writes files more than {MAX_WRITES} times")
        path = f"/dev/fd/{63 - sum(k.startswith('/dev/fd/') for k, _ in self.written) % 60}"
        self.written.append((path, replace(fed, path=path, by="<(")))
        return Part("text", path, True)

    def curl(self, words: list[Word], command: Command) -> None:
        """``curl -X POST .../v1/projects/P/locations/R/customJobs -d BODY``: a job submission
        (its headers, ``$(gcloud auth print-access-token)`` included, are never run)."""
        scope = self.scope
        preview = expand_words(words, scope.preview)
        if not any(_REST_URL.search(w) for w in preview):
            return
        argv: list[str] | Unresolvable
        try:
            argv = expand_words(words, scope.marking)
            call = _rest_call(argv, command.line)
        except Unresolvable as exc:
            argv, call = exc, _rest_call(preview, command.line)
        if call is None:
            self.others.append((command.line, "curl (not a POST creating a job)"))
            return
        self.found(command.line, invocation(["gcloud"]), argv, scope, command, call)

    def stdin_of(self, command: Command) -> WrittenFile | None:
        """The command's standard input, when a redirection gives it: a here-document or
        here-string (its text as bash expands it), or a file (``< FILE``)."""
        fed = [r for r in command.redirects if r.op in _STDIN_OPS and r.fd in ("", "0")]
        if not fed:
            return None
        redirect = fed[-1]
        if redirect.op in ("<<", "<<-"):
            body, error = self.heredoc_text(redirect, "the standard input")
            return WrittenFile("-", redirect.line, body, error=error)
        if redirect.op == "<<<":
            try:
                text = expand_word(redirect.target, self.scope.marking, split=False)[0]
            except Unresolvable as exc:
                error = unresolved_message(redirect.line, exc, "the here-string")
                return WrittenFile("-", redirect.line, None, "<<<", error)
            return WrittenFile("-", redirect.line, text + "\n", "<<<")
        return WrittenFile(self.written_text(redirect.target), redirect.line, by="<")

    def expanded(self, words: list[Word], legacy: bool, line: int) -> list[str]:
        """The command's words; in the trainer arguments (after ``--`` of a legacy command,
        in ``--args``) an unset variable is nothing, as bash has it (unless ``set -u``)."""
        scope = self.scope

        def trainer(part: Part) -> str:
            try:
                return scope.marking(part)
            except Unresolvable as exc:
                if not exc.unset or exc.required or self.nounset or not exc.names:
                    raise
                scope.notes[
                    f"line {line}: ${exc.names[0]} is not set: it expands to nothing in the "
                    "trainer arguments, as bash does"
                ] = None
                return ""

        out: list[str] = []
        in_args = previous = False
        for word in words:
            literal = word.literal()
            first = word.parts[0] if word.parts else None
            arguments = (
                in_args
                or previous
                or (
                    first is not None and first.kind == "text" and first.value.startswith("--args=")
                )
            )
            out.extend(expand_word(word, trainer if arguments else scope.marking))
            if len(out) > MAX_FIELDS:
                raise SpecFormatError(f"the command expands to more than {MAX_FIELDS} words")
            in_args = in_args or (legacy and literal == "--")
            previous = literal == "--args"
        return out

    def config_set(self, found: Invocation) -> None:
        """``gcloud config set project P`` / ``ai/region R``: defaults for the submission."""
        prop = _CONFIG_PROPERTIES.get(found.path[2]) if len(found.path) > 2 else None
        values = [*found.path[3:], *(w for w in found.args if not w.startswith("-"))]
        if prop is None:
            return
        if values and PLACEHOLDER not in values[0]:
            self.scope.properties[prop] = values[0]
        else:
            self.scope.properties.pop(prop, None)

    def choose(self) -> ScriptCommand:
        if not self.submissions:
            raise SpecFormatError(_no_submission(self.others))
        if len(self.submissions) > 1:
            lines = ", ".join(str(f.line) for f in self.submissions[:10])
            if len(self.submissions) > 10:
                lines += f" and {len(self.submissions) - 10} more"
            raise SpecFormatError(
                f"the script submits {len(self.submissions)} jobs (gcloud commands at lines "
                f"{lines}); a spec file describes one job: keep one submission per file"
            )
        found = self.submissions[0]
        self.loop_jobs(found)
        if found.skipped:
            raise SpecFormatError(f"line {found.line}: the script submits no job: {found.skipped}")
        if self.carried:
            raise SpecFormatError(self.carried[0])
        caution = f" (note: {found.cut})" if found.cut else ""
        if self.required:
            raise SpecFormatError(self.required[0] + caution)
        if isinstance(found.argv, Unresolvable):
            raise SpecFormatError(unresolved_message(found.line, found.argv) + caution)
        notes = [f"read the gcloud command at line {found.line} (`{found.invocation.name}`)"]
        if found.rest is not None:
            notes = [
                f"read the REST call at line {found.line} (`curl -X POST …/"
                f"{found.rest.collection}`); its headers are not run"
            ]
        notes.extend(found.scope.notes)
        notes.extend(
            f"line {loop.line}: the {loop.header} loop runs its body {len(loop.values or ())} "
            f"times: this job is its run with {loop.labels[self.pinned(loop)]}"
            for loop in found.loops
        )
        if found.in_block:
            notes.append(
                f"line {found.line}: the command is inside an if/case/loop block, "
                "whose condition is not evaluated here"
            )
        cautions = [found.cut] if found.cut else []
        return ScriptCommand(
            found.argv,
            found.line,
            found.invocation,
            notes + cautions,
            found.scope.properties,
            found.scope.unknowns,
            self.written[: found.writes],
            cautions,
            stdin=found.stdin,
            rest=found.rest,
        )

    def loop_jobs(self, found: _Found) -> None:
        """``LoopJobs`` when loops run the submission more than once and the walk follows no
        one run of them; ``SpecFormatError`` when one runs it never."""
        loops = found.loops
        empty = next((loop for loop in reversed(loops) if not loop.values), None)
        if empty is not None:
            raise SpecFormatError(
                f"line {found.line}: the {empty.header} loop at line {empty.line} never runs "
                f"its body (no {empty.per.split(' of ')[0]} to read), so the script submits "
                "no job"
            )
        if not loops or all(loop.key in self.pins for loop in loops):
            return
        total = 1
        for each in loops:
            total *= len(each.values or ())
        counts = " x ".join(f"{len(lp.values or ())} ({lp.header}, line {lp.line})" for lp in loops)
        if total > MAX_LOOP_JOBS:
            raise SpecFormatError(
                f"refused: the loops around the submission at line {found.line} run it {total} "
                f"times ({counts}): at most {MAX_LOOP_JOBS} jobs of one script are read here; "
                "loop over fewer values"
            )
        read = self.visited + self.translated
        if read * total > MAX_LOOP_COMMANDS:
            what = f"{self.visited} commands" + (
                f" and the {self.translated} lines they are read from" if self.translated else ""
            )
            raise SpecFormatError(
                f"refused: the loops around the submission at line {found.line} run it {total} "
                f"times ({counts}) and each run is read from the script's {what}: more than "
                f"{MAX_LOOP_COMMANDS} in all; loop over fewer values"
            )
        loop = loops[-1]
        values = loop.values or []
        shown = ", ".join(clipped(v) for v in values[:10]) + (" ..." if len(values) > 10 else "")
        around = ""
        if len(loops) > 1:
            lines = ", ".join(str(each.line) for each in loops[:-1])
            around = f"; with the loops around it (line {lines}), {total} jobs"
        raise LoopJobs(
            f"line {found.line}: the {loop.header} loop at line {loop.line} "
            f"submits {len(values)} jobs, one per {loop.per} ({shown}){around}; one job was "
            "asked for: `validate`, `convert` and `estimate` read each, and a training:jobs "
            "entry makes one job of each (or write one file per value)",
            loops,
        )


_REST_URL = re.compile(
    r"^(?:https?://)?(?:([a-z0-9-]+)-)?aiplatform\.googleapis\.com(?::\d+)?/v1(?:beta1)?/"
    r"projects/([^/?#]+)/locations/([^/?#]+)/(customJobs|hyperparameterTuningJobs)/?(?:\?.*)?$"
)
"""Vertex AI's REST URL that creates a custom or tuning job (``-X POST``)."""
_CURL_DATA = frozenset(
    {"-d", "--data", "--data-ascii", "--data-binary", "--data-raw", "--json", "--data-urlencode"}
)
_CURL_VALUED = frozenset({"-H", "--header", "-o", "--output", "-u", "--user", "-w"})
_CURL_VALUED |= {"--write-out", "-A", "--user-agent", "-e", "--referer", "-m", "--max-time"}
_CURL_VALUED |= {"--connect-timeout", "--retry", "-x", "--proxy", "--cacert", "--oauth2-bearer"}


def _rest_call(argv: list[str], line: int) -> RestCall | None:
    """The job-creating POST of a ``curl`` command's words, or None (another request);
    ``SpecFormatError`` for a body that cannot be read here."""
    method = ""
    url = ""
    bodies: list[tuple[str, str]] = []
    index = 1
    while index < len(argv):
        word = argv[index]
        value = argv[index + 1] if index + 1 < len(argv) else ""
        if word in ("-X", "--request"):
            method, index = value, index + 2
        elif word.startswith("-X") and len(word) > 2:
            method, index = word[2:], index + 1
        elif word in _CURL_DATA:
            bodies.append((word, value))
            index += 2
        elif word.startswith("-d") and len(word) > 2:
            bodies.append(("-d", word[2:]))
            index += 1
        elif word == "--url":
            url, index = value, index + 2
        elif word in _CURL_VALUED:
            index += 2
        else:
            if not word.startswith("-") and _REST_URL.match(word):
                url = word
            index += 1
        if index > MAX_FIELDS:
            break
    match = _REST_URL.match(url)
    if match is None or (method or ("POST" if bodies else "GET")).upper() != "POST":
        return None
    if not bodies:
        raise SpecFormatError(f"line {line}: the POST to {clipped(url)} sends no body (-d)")
    if len(bodies) > 1:
        raise SpecFormatError(
            f"line {line}: the POST to {clipped(url)} sends {len(bodies)} bodies "
            f"({', '.join(o for o, _ in bodies)}), which curl joins with `&`: send one JSON body"
        )
    option, body = bodies[0]
    kind: Literal["inline", "file", "stdin"] = "inline"
    if body.startswith("@") and option not in ("--data-raw", "--data-urlencode"):
        kind = "stdin" if body[1:] in _STDIN else "file"
        body = body[1:]
    host, project, region, collection = match.groups()
    return RestCall(url, project, region, collection, host or "", kind, body, option)


_WRITERS = frozenset({"tee", "cat", "gsutil", *_COPIERS, *_IN_PLACE, *_OUTPUT_OPTIONS})


def _written_by(program: str, args: list[str]) -> list[tuple[str, str]]:
    """The files a command writes by its arguments (not its redirections), each with what
    writes it: ``tee F``, ``cp A F``, ``gsutil cp A F``, ``sed -i ... F``, ``curl -o F``."""
    if program == "tee":
        append = any(a in ("-a", "--append") for a in args)
        by = "`tee -a`" if append else "`tee`"
        return [(a, by) for a in args if not a.startswith("-")]
    if program in _OUTPUT_OPTIONS:
        options = _OUTPUT_OPTIONS[program]
        pairs = itertools.pairwise(args)
        return [(value, f"`{program} {flag}`") for flag, value in pairs if flag in options]
    if program in _IN_PLACE:
        in_place = any(
            a in ("--in-place", "--inplace") or (a[:1] == "-" and a[1:2] != "-" and "i" in a)
            for a in args
        )
        files = [a for a in args if not a.startswith("-")]
        return [(a, f"`{program} -i`") for a in files] if in_place else []
    positionals = [a for a in args if not a.startswith("-")]
    if program in ("gsutil", "gcloud"):
        storage = (
            positionals[1:] if program == "gcloud" and positionals[:1] == ["storage"] else None
        )
        rest = storage if program == "gcloud" else positionals
        if not rest or rest[0] not in _STORAGE_COPIES:
            return []
        by = f"`{program}{' storage' if storage is not None else ''} {rest[0]}`"
        positionals = rest[1:]
    elif program in _COPIERS:
        by = f"`{program}`"
    else:
        return []
    if len(positionals) < 2:
        return []
    *sources, destination = positionals
    targets = [destination]
    targets += [
        posixpath.normpath(posixpath.join(destination, posixpath.basename(s.rstrip("/"))))
        for s in sources
    ]
    return [(t, by) for t in targets]


def _why_unknown(
    cause: Unresolvable, name: str, line: int, *, offer: bool = True
) -> tuple[str, tuple[str, ...]]:
    """The message and names of a variable set from a value that cannot be known (``offer``:
    the variable itself is named as one the environment may set)."""
    message = cause.message
    if not cause.names:
        message += f" to set ${name}" + ("" if "(line " in message else f" (line {line})")
    if not offer or name in cause.names:
        return message, cause.names
    return message, (*cause.names, name)


def _globs(words: list[Word], values: list[str]) -> bool:
    """Whether bash would read ``words`` (expanded: ``values``) as file names: a ``*``, ``?``
    or ``[`` outside quotes, written or from an expansion outside quotes (a quoted one, as
    ``'[a]'``, is the text itself)."""
    unquoted = [part for word in words for part in word.parts if not part.quoted]
    if any(part.kind == "text" and any(c in part.value for c in "*?[") for part in unquoted):
        return True
    expanded = any(part.kind != "text" for part in unquoted)
    return expanded and any(any(c in v for c in "*?[") for v in values)


def _lead(words: list[Word]) -> int:
    """Where the command proper starts: a block may open after ``do``/``then``/``else`` on
    their line (``do for B in ...; do``)."""
    lead = 0
    while lead + 1 < len(words) and words[lead].literal() in _BODY_WORDS:
        lead += 1
    return lead


def _unquoted_glob(word: Word) -> bool:
    """Whether ``word`` holds a glob character outside quotes (in ``[[ ]]``: a pattern)."""
    return any(
        part.kind == "text" and not part.quoted and any(c in part.value for c in "*?[")
        for part in word.parts
    )


def _parts_of(words: list[Word], kind: str) -> list[Part]:
    """Every part of ``kind`` in the words, nested ones too (``${A:-$(b)}``)."""
    found: list[Part] = []
    stack = [part for word in words for part in word.parts]
    while stack:
        part = stack.pop()
        if part.kind == kind:
            found.append(part)
        stack.extend(part.word)
    return found


def _no_submission(others: list[tuple[int, str]]) -> str:
    if not others:
        return f"no gcloud command found; understood: {UNDERSTOOD}"
    if len(others) == 1:
        line, name = others[0]
        return f"line {line}: `{name}` is not a job submission; understood: {UNDERSTOOD}"
    listed = ", ".join(f"`{name}` (line {line})" for line, name in others[:5])
    more = f" and {len(others) - 5} more" if len(others) > 5 else ""
    return (
        f"no job submission found: {listed}{more} are not job submissions; understood: {UNDERSTOOD}"
    )
