"""A Windows batch file (``.bat``, ``.cmd``) holding a gcloud job submission, read as cmd.exe
reads it and never run.

What is read: ``^`` line continuations and escapes, ``REM`` and ``::`` comments, ``@echo off``
and other ``@`` lines, ``set NAME=value`` / ``set "NAME=value"`` (names in any case, as
Windows has them) expanded as ``%NAME%`` (``%NAME:~0,4%`` and ``%NAME:a=b%`` too, ``!NAME!``
under ``setlocal enabledelayedexpansion``; the environment's value where the file sets none),
``%%`` as ``%``, ``%~dp0`` as the file's folder, ``&``/``&&``/``||`` between commands, and
``call gcloud ...``, ``gcloud.cmd`` or a full path to it. The gcloud (or ``curl``) command is
split into its arguments as gcloud's Python receives them (Windows rules: ``"`` quotes,
``\\"`` a literal quote; ``'`` is no quote) and handed, as a shell script of the same lines,
to the script reader (``components.formats.script``), which reads the command as any other.

A value not known here (``set /p`` from the terminal, ``set /a``, ``%DATE%``, ``%1``, a
variable set inside an ``if`` or ``for`` block) stands in the command as the script reader's
unknown value, named by the batch file's own words. A gcloud command inside an ``if`` or
``for`` block, or behind a ``goto`` or ``call :label``, stops the reading with one line naming
what it stopped on. Bounded like the shell reader: the file's size by its loader,
``MAX_LINES`` lines, ``MAX_VARIABLES`` names and ``MAX_VALUE_CHARS`` per value.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import SpecFormatError
from .script import (
    MAX_EXPANDED_CHARS,
    MAX_VALUE_CHARS,
    MAX_VARIABLES,
    LoopPins,
    ScriptCommand,
    Unresolved,
    find_submission_in,
)
from .text import clipped

__all__ = ["MAX_LINES", "is_batch_file", "read_batch_submission"]

MAX_LINES = 20_000
_UNKNOWN = re.compile("\x02(\\d+)\x02")
"""Where a value not known here stands in an expanded line: ``\\x02N\\x02``."""
_PERCENT = re.compile(r"%(?:(%)|(\*)|(~[a-z]*\d)|(\d)|([^%\s=:][^%\n]*?)(?::([^%\n]*))?%)", re.I)
_DELAYED = re.compile(r"!([^!\s=:][^!\n]*?)(?::([^!\n]*))?!")
_SUBSTRING = re.compile(r"~\s*(-?\d+)\s*(?:,\s*(-?\d+))?")
_DYNAMIC = frozenset({"DATE", "TIME", "RANDOM", "CD", "ERRORLEVEL", "CMDCMDLINE", "CMDEXTVERSION"})
_PROGRAMS = frozenset({"gcloud", "curl"})
_BLOCKS = ("if", "for")
_SKIPPED_FLOW = frozenset({"exit", "pause"})


def is_batch_file(text: str, path: Path | None = None) -> bool:
    """True for a Windows batch file: a ``.bat``/``.cmd`` name or an ``@echo off`` first line."""
    if path is not None and path.suffix.lower() in (".bat", ".cmd"):
        return True
    return text.lstrip().lower().startswith("@echo off")


@dataclass
class _Batch:
    """A batch file's variables as read so far, and the script the reader is given."""

    env: Mapping[str, str]
    values: dict[str, str] = field(default_factory=dict)
    """Each variable's value by its upper-case name (``\\x02N\\x02`` where not known)."""
    unknowns: list[Unresolved] = field(default_factory=list)
    delayed: bool = False
    used: int = 0
    lines: list[str] = field(default_factory=list)
    """The script handed to the shell reader, one line per line of the batch file."""
    submitted: bool = False

    def __post_init__(self) -> None:
        self.upper_env = {k.upper(): v for k, v in self.env.items()}

    def unknown(
        self, message: str, names: tuple[str, ...], text: str, *, unset: bool = False
    ) -> str:
        self.unknowns.append(Unresolved(message, names, unset, text))
        return f"\x02{len(self.unknowns) - 1}\x02"

    def variable(self, name: str, line: int) -> str:
        """``%NAME%``: the file's value, else the environment's, else not known."""
        key = name.upper()
        if key in self.values:
            return self.values[key]
        if key in self.upper_env:
            return self.upper_env[key]
        text = f"%{name}%"
        if key in _DYNAMIC:
            return self.unknown(
                f"{text} (line {line}) is computed when the batch file runs", (), text
            )
        return self.unknown(
            f"{text} is not set (line {line}; neither the batch file nor the environment sets it)",
            (key,),
            text,
            unset=True,
        )

    def expand(self, text: str, line: int, pattern: re.Pattern[str] = _PERCENT) -> str:
        """``text`` with its ``%...%`` (or, ``pattern`` ``_DELAYED``, ``!...!``) expanded."""

        def one(match: re.Match[str]) -> str:
            if pattern is _DELAYED:
                return self.modified(match.group(1), match.group(2), line)
            percent, every, modifier, argument, name, how = match.groups()
            if percent:
                return "%"
            if modifier and modifier.lower().endswith("dp0"):
                return ".\\"  # the batch file's folder: relative paths are read from it anyway
            if every or modifier or argument:
                shown = match.group()
                return self.unknown(
                    f"{shown} (line {line}) is an argument of the batch file, not known here",
                    (),
                    shown,
                )
            return self.modified(name, how, line)

        result = pattern.sub(one, text)
        self.used += len(result)
        if self.used > MAX_EXPANDED_CHARS:
            raise SpecFormatError(
                f"the batch file's variables expand to more than {MAX_EXPANDED_CHARS} characters"
            )
        return result

    def modified(self, name: str, how: str | None, line: int) -> str:
        """``%NAME%``, ``%NAME:~start,length%`` or ``%NAME:old=new%``."""
        value = self.variable(name, line)
        if how is None:
            return value
        if (mark := _UNKNOWN.search(value)) is not None:
            shown = f"%{name}:{how}%"
            if mark.group() == value:  # part of one value not known: that value's reason
                first = self.unknowns[int(mark.group(1))]
                return self.unknown(first.message, first.names, shown, unset=first.unset)
            return self.unknown(
                f"{shown} (line {line}) takes part of a value not known here", (), shown
            )
        substring = _SUBSTRING.fullmatch(how)
        if substring is not None:
            start = int(substring.group(1))
            length = substring.group(2)
            part = value[start:] if start >= 0 else value[len(value) + start :]
            if length is not None:
                count = int(length)
                part = part[:count] if count >= 0 else part[: max(len(part) + count, 0)]
            return part
        old, _, new = how.partition("=")
        if not old:
            return value
        return re.sub(re.escape(old.lstrip("*")), lambda _: new, value, flags=re.IGNORECASE)

    def assign(self, name: str, value: str, line: int) -> None:
        key = name.upper()
        if key not in self.values and len(self.values) >= MAX_VARIABLES:
            raise SpecFormatError(
                f"line {line}: the batch file sets more than {MAX_VARIABLES} variables"
            )
        if len(value) > MAX_VALUE_CHARS:
            raise SpecFormatError(
                f"line {line}: %{name}% would hold more than {MAX_VALUE_CHARS} characters"
            )
        if value:
            self.values[key] = value
        else:
            self.values.pop(key, None)
            self.upper_env.pop(key, None)  # `set NAME=` deletes the variable

    def readable(self, text: str) -> str:
        """``text`` with each value not known as the batch file writes it."""
        return _UNKNOWN.sub(lambda m: self.unknowns[int(m.group(1))].text, text)


def read_batch_submission(
    text: str, env: Mapping[str, str], directory: Path, *, pins: LoopPins | None = None
) -> ScriptCommand:
    """The one job submission of a batch file; ``SpecFormatError`` for one that cannot be read
    here, naming the line and what it stopped on (``pins`` as for ``find_submission``)."""
    batch = _Batch(env)
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if len(lines) > MAX_LINES:
        raise SpecFormatError(f"refused: the batch file holds more than {MAX_LINES} lines")
    batch.lines = [""] * len(lines)
    index = 0
    while index < len(lines):
        start = index
        logical, index = _logical_line(lines, index)
        # An `if (` / `for ... do (` block goes on to its closing parenthesis.
        block = re.match(r"(?i)\s*@?\s*(?:if|for)\b", logical) is not None
        depth = _parentheses(logical) if block else 0
        while depth > 0 and index < len(lines):
            following, index = _logical_line(lines, index)
            logical += "\n" + following
            depth += _parentheses(following)
        if _statement(batch, logical, start + 1) == "stop":
            break
    unknown = {f"__BAT_{i}": u for i, u in enumerate(batch.unknowns)}
    found = find_submission_in(
        [(1, "\n".join(batch.lines))], {}, directory, unknown=unknown, pins=pins
    )
    found.notes[1:1] = [
        "read as a Windows batch file (cmd.exe): `set` variables expanded as %NAME%, the "
        "command split into its arguments as gcloud receives them on Windows"
    ]
    return found


def _logical_line(lines: list[str], index: int) -> tuple[str, int]:
    """The line at ``index`` with its ``^`` continuations joined, and the index after it
    (each line scanned once: the quoting goes on from where the line before left it)."""
    parts = [lines[index]]
    continued, quoted = _continued(lines[index], False)
    index += 1
    while continued and index < len(lines):
        parts[-1] = parts[-1][:-1]
        parts.append(lines[index])
        continued, quoted = _continued(lines[index], quoted)
        index += 1
    return "".join(parts), index


def _continued(line: str, quoted: bool) -> tuple[bool, bool]:
    """Whether the line ends in a ``^`` outside quotes (cmd joins the next line to it), and
    whether a quote is open at its end; ``quoted``: open at its start."""
    escaped = False
    for char in line:
        if escaped:
            escaped = False
        elif char == '"':
            quoted = not quoted
        elif char == "^" and not quoted:
            escaped = True
    return escaped, quoted


def _parentheses(text: str) -> int:
    """How many ``(`` a line opens and leaves open (outside quotes, ``^`` escapes; negative
    for more ``)``)."""
    depth = 0
    quoted = escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif char == "^" and not quoted:
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif not quoted and char in "()":
            depth += 1 if char == "(" else -1
    return depth


def _statement(batch: _Batch, logical: str, line: int) -> str:
    """One logical line: a comment, a label, a block, or commands; ``stop`` where the file
    ends for the command (``exit``, ``goto :eof``)."""
    stripped = logical.strip().lstrip("@").strip()
    word = re.split(r"[\s(]", stripped, maxsplit=1)[0].lower() if stripped else ""
    if not word or word == "rem" or stripped.startswith(":"):
        return ""
    if word in _BLOCKS:
        _block(batch, stripped, line, word)
        return ""
    expanded = batch.expand(logical, line)
    if batch.delayed:
        expanded = batch.expand(expanded, line, _DELAYED)
    out: list[str] = []
    for operator, command in _commands(expanded):
        result = _command(batch, command, line)
        if result == "stop":
            batch.lines[line - 1] = " ".join(out)
            return "stop"
        if result:
            out.append(f"{operator} {result}" if out and operator else result)
    batch.lines[line - 1] = " ".join(out)
    return ""


def _block(batch: _Batch, statement: str, line: int, word: str) -> None:
    """An ``if``/``for`` line (its parenthesised block joined by the caller's continuation
    only when on one line): not evaluated. A gcloud command in it stops the reading; the
    variables it sets become values not known here."""
    if re.search(r"(?i)(?:^|[\s(&|\"\\/])gcloud(?:\.cmd)?(?=[\s\"]|$)", statement):
        raise SpecFormatError(
            f"line {line}: the gcloud command is inside `{word}` ({clipped(statement)}), "
            f"which this reader does not evaluate: write the submission outside the `{word}`"
        )
    for name in re.findall(r"(?i)\bset\s+(?:/[ap]\s+)?\"?([^\s=\"]+)=", statement):
        shown = f"%{name}%"
        batch.assign(
            name,
            batch.unknown(
                f"{shown} is set inside `{word}` (line {line}), which is not evaluated here",
                (name.upper(),),
                shown,
            ),
            line,
        )


def _commands(text: str) -> list[tuple[str, str]]:
    """The commands of a line, split on ``&``, ``&&``, ``||`` and ``|`` outside quotes, each
    with the operator before it, ``^`` escapes removed outside quotes (as cmd passes them)."""
    out: list[tuple[str, str]] = []
    current: list[str] = []
    operator = ""
    quoted = False
    index = 0
    while index < len(text):
        char = text[index]
        if char == "^" and not quoted and index + 1 < len(text):
            current.append(text[index + 1])
            index += 2
            continue
        if char == '"':
            quoted = not quoted
        if not quoted and char in "&|":
            doubled = text[index : index + 2] in ("&&", "||")
            out.append((operator, "".join(current).strip()))
            operator = text[index : index + 2] if doubled else ";" if char == "&" else "|"
            current = []
            index += 2 if doubled else 1
            continue
        current.append(char)
        index += 1
    out.append((operator, "".join(current).strip()))
    return [(op, command) for op, command in out if command]


def _command(batch: _Batch, command: str, line: int) -> str:
    """One command: the bash text it stands for in the script handed on ("" for none)."""
    command = command.lstrip("@").strip()
    arguments = _arguments(command)
    if not arguments:
        return ""
    first = arguments[0].lower()
    if first == "call" and len(arguments) > 1:
        if arguments[1].startswith(":"):
            return _flow(batch, f"call {arguments[1]}", line)
        arguments = arguments[1:]
        first = arguments[0].lower()
        command = command.split(None, 1)[1]
    if first == "set":
        _set(batch, command[3:].strip(), line)
        return ""
    if first == "setlocal":
        batch.delayed = batch.delayed or "enabledelayedexpansion" in command.lower()
        return ""
    if first == "goto":
        target = arguments[1].lower() if len(arguments) > 1 else ""
        return "stop" if target in (":eof", "eof") else _flow(batch, f"goto {target}", line)
    if first in _SKIPPED_FLOW:
        return "stop" if first == "exit" else ""
    program = re.split(r"[\\/]", first)[-1].removesuffix(".cmd").removesuffix(".exe")
    if program in _PROGRAMS:
        batch.submitted = True
        words = [program]
        for before, argument in itertools.pairwise(arguments):
            if argument.startswith("--config=") or before == "--config":
                # A Windows path, read here from the batch file's folder.
                argument = argument.replace("\\", "/")
            words.append(_bash_word(batch, argument))
        return " ".join(words)
    written = re.search(r"(>>?)\s*\"?([^\s\"&|<>]+)", command)
    if written is not None:  # what a command writes (`echo x > job.yaml`), for the reader
        return (
            f"echo {written.group(1)} {_bash_word(batch, written.group(2).replace(chr(92), '/'))}"
        )
    return ""


def _flow(batch: _Batch, what: str, line: int) -> str:
    """A ``goto``/``call :label``: after the submission the file ends there for it; before,
    the reading stops, naming it."""
    if batch.submitted:
        return "stop"
    raise SpecFormatError(
        f"line {line}: `{clipped(batch.readable(what))}` jumps to a label, which this reader "
        "does not follow (it reads a batch file top to bottom): write the gcloud command "
        "before it, or in a file of its own"
    )


def _set(batch: _Batch, rest: str, line: int) -> None:
    """``set NAME=value``, ``set "NAME=value"``, ``set /p NAME=prompt``, ``set /a NAME=expr``."""
    option = ""
    if rest[:2].lower() in ("/p", "/a"):
        option, rest = rest[:2].lower(), rest[2:].strip()
    if rest.startswith('"') and rest.count('"') >= 2:
        rest = rest[1 : rest.rindex('"')]
    name, equals, value = rest.partition("=")
    name = name.strip() if option else name
    if not equals or not name or '"' in name:
        return  # `set` alone lists the variables; `set NAME` shows one
    if option:
        why = "is read from the terminal (`set /p`" if option == "/p" else "is computed (`set /a`"
        shown = f"%{name}%"
        message = f"{shown} {why}, line {line}) when the batch file runs, so it is not known here"
        value = batch.unknown(message, (name.upper(),), shown)
    elif (mark := _UNKNOWN.search(value)) is not None:
        # One value not known makes the variable's whole value so, named as written.
        first = batch.unknowns[int(mark.group(1))]
        names = first.names if first.unset else (*first.names, name.upper())
        value = batch.unknown(first.message, names, batch.readable(value), unset=first.unset)
    batch.assign(name, value, line)


def _arguments(command: str) -> list[str]:
    """A command line split as a Windows program receives its arguments (the C runtime's
    rules: blanks separate outside ``"``; ``\\"`` is a quote; ``'`` is a plain character)."""
    arguments: list[str] = []
    current: list[str] = []
    started = quoted = False
    index = 0
    while index < len(command):
        char = command[index]
        if char == "\\":
            run = len(command) - index - len(command[index:].lstrip("\\"))
            if command[index + run : index + run + 1] == '"':
                current.append("\\" * (run // 2))
                index += run
                if run % 2:
                    current.append('"')
                    index += 1
                started = True
                continue
            current.append("\\" * run)
            index += run
            started = True
            continue
        if char == '"':
            quoted = not quoted
            started = True
        elif char in " \t" and not quoted:
            if started:
                arguments.append("".join(current))
            current, started = [], False
        else:
            current.append(char)
            started = True
        index += 1
    if started:
        arguments.append("".join(current))
    return arguments


def _bash_word(batch: _Batch, argument: str) -> str:
    """An argument as one word of a shell script: its text in single quotes, each value not
    known here as the variable that stands for it (``"${__BAT_N}"``)."""
    pieces: list[str] = []
    last = 0
    for match in _UNKNOWN.finditer(argument):
        pieces.append(_quoted(argument[last : match.start()]))
        pieces.append(f'"${{__BAT_{match.group(1)}}}"')
        last = match.end()
    pieces.append(_quoted(argument[last:]))
    return "".join(p for p in pieces if p) or "''"


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'" if text else ""
