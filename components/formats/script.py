"""The one job-submitting gcloud command of a shell script, with the script's variables applied.

Real commands live in scripts: ``export BUCKET=...``, ``JOB_NAME=census_$(date +%s)``,
``set -e``, ``echo``, ``gsutil cp``, then one ``gcloud ... submit``. The script is read in
order and never run: simple assignments (``NAME=value``, ``export``/``readonly``/``declare``/
``local NAME=value``, ``unset NAME``) are applied as bash would, every other command is
skipped, and the gcloud command is expanded with the variables as they stand at its line.

Where a value comes from:

- the script's own assignment wins over the environment (bash semantics);
- ``${NAME:-default}`` and the other ``${NAME<op>word}`` defaults are honoured;
- a value bash would compute by running something (``$(date +%s)``, backticks, ``$1``), or
  one set inside an ``if``/``case``/loop or after ``&&``/``||``, is unknown here: the
  environment's value is used when it sets that variable. Otherwise the command's word is
  marked (``MARK``) where the unknown part stands, and the reader of the command decides
  (``components.formats.gcloud_command``): kept as written where the exact text does not
  change what is validated (the job's name, output directory, trainer arguments), an error
  naming the variable anywhere else;
- an unset variable is an error naming it.

A script with several job submissions is refused (one job per file), naming their lines;
``gcloud config set project|ai/region`` lines before the submission are kept as defaults.
Expansions are bounded: ``MAX_VARIABLES`` names, ``MAX_VALUE_CHARS`` per value and
``MAX_EXPANDED_CHARS`` for the whole script, so ``A=$A$A`` chains end in an error.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from components._errors import SpecFormatError
from components._files import FileReadError, read_text_capped
from components.formats.gcloud_flags import SUBMISSIONS, UNDERSTOOD, Invocation, invocation
from components.formats.shell import (
    MAX_COMMANDS,
    PLACEHOLDER,
    Command,
    Part,
    Unresolvable,
    Word,
    expand_word,
    expand_words,
    split_commands,
)

__all__ = [
    "MARK",
    "MAX_EXPANDED_CHARS",
    "MAX_VALUE_CHARS",
    "MAX_VARIABLES",
    "Scope",
    "ScriptCommand",
    "Unresolved",
    "find_submission",
    "unresolved_message",
]

MAX_VARIABLES = 4096
MAX_VALUE_CHARS = 1 << 16
MAX_EXPANDED_CHARS = 1 << 22
MARK = re.compile("\x01(\\d+)\x01")
"""Where an unknown value stands in a command's word: ``\\x01N\\x01``, N its index."""
_MAX_SUBSTITUTION_DEPTH = 2
_MAX_SOURCED = 4
_MAX_SOURCED_BYTES = 1 << 16
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PREFIX_WORDS = frozenset(
    {"if", "then", "else", "elif", "do", "while", "until", "!", "time", "exec", "nohup"}
    | {"command", "{", "sudo", "builtin"}
)
_DECLARATIONS = frozenset({"export", "readonly", "declare", "typeset", "local"})
_BLOCK_OPEN = frozenset({"if", "case", "for", "while", "until", "select"})
_BLOCK_CLOSE = frozenset({"fi", "esac", "done"})
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
    """A variable whose value cannot be known without running the script, why, and its
    value as written (``census_$(date +%s)``)."""

    message: str
    names: tuple[str, ...]
    unset: bool = False
    text: str = ""
    keepable: bool = True

    def error(self) -> Unresolvable:
        return Unresolvable(
            self.message, self.names, unset=self.unset, text=self.text, keepable=self.keepable
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
        if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
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
        if not _NAME.fullmatch(name):
            what = "script argument" if name in _ARGUMENTS else "shell-set parameter"
            raise Unresolvable(f"the {what} ${name} would have to be given", text=f"${name}")
        result = self.operate(part, name, self.get(name))
        self.used += len(result)
        if self.used > MAX_EXPANDED_CHARS:
            raise SpecFormatError(
                f"the script's variables expand to more than {MAX_EXPANDED_CHARS} characters"
            )
        return result

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
            self.unknowns.append(exc)
            return f"\x01{len(self.unknowns) - 1}\x01"

    def operate(self, part: Part, name: str, value: str | Unresolved | None) -> str:
        """``$NAME`` and ``${NAME<op>word}`` as bash evaluates them."""
        if isinstance(value, Unresolved):
            raise value.error()
        op = part.op
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
            f"environment variable ${name} is not set (the script requires it)", (name,), unset=True
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


@dataclass
class _Found:
    line: int
    invocation: Invocation
    argv: list[str] | Unresolvable
    in_block: bool
    unknowns: list[Unresolvable]


def find_submission(
    text: str, env: Mapping[str, str], directory: Path | None = None
) -> ScriptCommand:
    """The script's one job submission; ``SpecFormatError`` when there is none or several.

    ``directory``: the script's own, from which ``source FILE`` / ``. FILE`` are read (their
    assignments only, and only files under it); without it, sourced files are not read.
    """
    walker = _Walker(Scope(env), directory.resolve() if directory is not None else None)
    walker.walk(split_commands(text), mode="main")
    return walker.choose()


def unresolved_message(line: int, exc: Unresolvable, what: str = "the gcloud command") -> str:
    """The error for a value that cannot be known, naming the variables that would give it."""
    hint = " or ".join(exc.names)
    hint = f"; set {hint} in the environment" if hint else "; write the value in the script"
    if exc.unset:
        return f"line {line}: {exc.message} ({what} uses it){hint}"
    return f"line {line}: {what} needs a value the script computes: {exc.message}{hint}"


_Mode = Literal["main", "substitution", "sourced"]


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

    def walk(self, commands: list[Command], *, mode: _Mode) -> None:
        for command in commands:
            self.visit(command, mode=mode)

    def visit(self, command: Command, *, mode: _Mode) -> None:
        """One command: assignments applied (not in a substitution), a sourced file read,
        a gcloud command looked at (not in a sourced file)."""
        self.visited += 1
        if self.visited > MAX_COMMANDS:
            raise SpecFormatError(
                f"refused: the script holds more than {MAX_COMMANDS} commands "
                "(with those in $(...) and sourced files)"
            )
        words = list(command.words)
        self.substitutions(words)
        first = words[0].literal()
        if first in _BLOCK_CLOSE:
            self.blocks = max(0, self.blocks - 1)
        elif first in _BLOCK_OPEN:
            self.blocks += 1
        while words and words[0].literal() in _PREFIX_WORDS:
            words.pop(0)
        conditional = command.conditional or self.blocks > 0
        head = words[0].literal() if words else None
        if head in _DECLARATIONS or head == "unset":
            if mode != "substitution":
                self.declare(head, words[1:], command.line, conditional)
            return
        if head in ("source", ".") and len(words) > 1:
            if mode != "substitution":
                self.source(words[1], command.line)
            return
        assignments = 0
        while assignments < len(words) and words[assignments].assignment():
            assignments += 1
        if assignments == len(words):
            if mode != "substitution":
                self.declare(None, words, command.line, conditional)
            return
        program = words[assignments].literal() or ""
        if program.rsplit("/", 1)[-1] == "gcloud" and mode != "sourced":
            self.gcloud(words[assignments:], command.line)

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
                    self.scope.unset.add(literal)
                continue
            found = word.assignment()
            if found is not None:
                self.assign(found[0], found[1], line, conditional)

    def assign(self, name: str, value: Word, line: int, conditional: bool) -> None:
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
            text = expand_word(value, readable, split=False)[0]
        except Unresolvable as exc:
            names = exc.names if name in exc.names else (*exc.names, name)
            scope.assign(name, Unresolved(exc.message, names, True, f"${name}"), line)
            return
        if conditional:
            reason = f"${name} is set under a condition (line {line}), which is not evaluated"
            scope.assign(name, Unresolved(reason, (name,), False, text), line)
        elif unknown:
            cause = unknown[0]
            message = cause.message
            if not cause.names:
                message += f" to set ${name}" + ("" if "(line " in message else f" (line {line})")
            names = cause.names if name in cause.names else (*cause.names, name)
            keepable = all(u.keepable for u in unknown)
            scope.assign(name, Unresolved(message, names, False, text, keepable), line)
        else:
            scope.assign(name, text, line)

    def substitutions(self, words: list[Word]) -> None:
        """Look for gcloud commands inside ``$(...)`` (``JOB=$(gcloud ai custom-jobs create)``)."""
        if self.depth >= _MAX_SUBSTITUTION_DEPTH:
            return
        for part in _command_parts(words):
            if "gcloud" not in part.value:
                continue
            self.depth += 1
            blocks, self.blocks = self.blocks, 0
            try:
                self.walk(split_commands(part.value, part.line), mode="substitution")
            except SpecFormatError:
                pass  # a substitution bash would fail on submits nothing
            finally:
                self.depth -= 1
                self.blocks = blocks

    def gcloud(self, words: list[Word], line: int) -> None:
        scope = self.scope
        preview = invocation(expand_words(words, scope.preview))
        if preview.form not in SUBMISSIONS:
            self.others.append((line, preview.name))
            if preview.path[:2] == ("config", "set"):
                self.config_set(preview)
            return
        scope.unknowns = []
        argv: list[str] | Unresolvable
        try:
            argv = expand_words(words, scope.marking)
            found = invocation(argv)
        except Unresolvable as exc:
            argv, found = exc, preview
        self.submissions.append(_Found(line, found, argv, self.blocks > 0, scope.unknowns))

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
        if isinstance(found.argv, Unresolvable):
            raise SpecFormatError(unresolved_message(found.line, found.argv))
        notes = [f"read the gcloud command at line {found.line} (`{found.invocation.name}`)"]
        notes.extend(self.scope.notes)
        if found.in_block:
            notes.append(
                f"line {found.line}: the command is inside an if/case/loop block, "
                "whose condition is not evaluated here"
            )
        return ScriptCommand(
            found.argv, found.line, found.invocation, notes, self.scope.properties, found.unknowns
        )


def _command_parts(words: list[Word]) -> list[Part]:
    found: list[Part] = []
    stack = [part for word in words for part in word.parts]
    while stack:
        part = stack.pop()
        if part.kind == "command":
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
