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
variable set inside an ``if`` block or a ``for`` loop that submits nothing, gcloud in its
values or an ``echo`` being no submission: ``for /F %%p in ('gcloud config get-value
project') do set P=%%p``) stands in the command as the script reader's unknown value, named by
the batch file's own words. A gcloud command inside an ``if`` block, or behind a ``goto`` or
``call :label``, stops the reading with one line naming what it stopped on.

A gcloud command inside ``for %%V in (values) do ...`` (a ``( ... )`` block or one command on
the line) or ``for /L %%V in (start,step,end) do ...``, nested or not, is read as the bash loop
``for V in values; do ...; done`` is (``components.formats.script``): one job per run, at most
``MAX_LOOP_JOBS``, named by its run (``line 2: for V=0.01``). The values are split as cmd
splits them (blanks, ``,``, ``;``, ``=``; a quoted value keeps its spaces and quotes, which
``%%~V`` removes); each run is read with ``%%V`` replaced by its value before the command is
split into arguments, the block's ``%NAME%`` expanded once before it runs and ``!NAME!`` as
the run sets it, as cmd does. Values not written in the file are refused naming the line and
the form: ``for /F`` (a file's lines, a command's output), ``/R``, ``/D``, a wildcard in the
list, a ``%%~nV`` modifier, a ``%NAME%`` not known here; so are a ``goto``/``exit`` in the body
and a ``!NAME!`` of the submission that the body sets after it (in runs after the first).

Bounded like the shell reader: the file's size by its loader, ``MAX_LINES`` lines,
``MAX_VARIABLES`` names and ``MAX_VALUE_CHARS`` per value; ``MAX_LOOP_DEPTH`` loops nested
around the submission; the file is read again for each run of its loops, its lines counted
with the script's commands in ``MAX_LOOP_COMMANDS``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from .._errors import SpecFormatError
from .script import (
    MAX_EXPANDED_CHARS,
    MAX_LOOP_JOBS,
    MAX_VALUE_CHARS,
    MAX_VARIABLES,
    LoopJobs,
    LoopPins,
    ScriptCommand,
    Unresolved,
    find_submission_in,
    for_loop_key,
)
from .text import clipped

__all__ = ["MAX_LINES", "MAX_LOOP_DEPTH", "is_batch_file", "read_batch_submission"]

MAX_LINES = 20_000
MAX_LOOP_DEPTH = 8
"""The most ``for`` loops read nested around the submission (each reads its body again)."""
_UNKNOWN = re.compile("\x02(\\d+)\x02")
"""Where a value not known here stands in an expanded line: ``\\x02N\\x02``."""
_PERCENT = re.compile(r"%(?:(%)|(\*)|(~[a-z]*\d)|(\d)|([^%\s=:][^%\n]*?)(?::([^%\n]*))?%)", re.I)
_DELAYED = re.compile(r"!([^!\s=:][^!\n]*?)(?::([^!\n]*))?!")
_SUBSTRING = re.compile(r"~\s*(-?\d+)\s*(?:,\s*(-?\d+))?")
_DYNAMIC = frozenset({"DATE", "TIME", "RANDOM", "CD", "ERRORLEVEL", "CMDCMDLINE", "CMDEXTVERSION"})
_PROGRAMS = frozenset({"gcloud", "curl"})
_BLOCKS = ("if", "for")
_SKIPPED_FLOW = frozenset({"exit", "pause"})
_GCLOUD = re.compile(r"(?i)(?:^|[\s(&|\"\\/])gcloud(?:\.cmd)?(?=[\s\"]|$)")
_FOR_HEADER = re.compile(r'(?i)for(?:\s+/(\S+)(?:\s+(?:"[^"]*"|[^\s%"]\S*))?)?\s+%(\S)\s+in\s*\(')
"""``for [/X [options or path]] %V in (``, once ``%%`` is ``%``."""
_SHELL_LOOP = re.compile(r"`for ([A-Za-z]) in \.\.\.`")
_SHELL_LOOP_VALUE = re.compile(r"value of \$([A-Za-z])\b")
_FOR_VARIABLE = re.compile(r"%(?:~([fdpnxsatz]*)(\$[^:%\s]*:)?)?([A-Za-z])")
"""A ``for`` variable's use once ``%%`` is ``%``: ``%L``, ``%~L`` (its quotes removed) or a
modifier (``%~nL``, ``%~$PATH:L``) that reads it as a file name."""
_SET_DELIMITERS = " \t,;="
"""What separates the values of a ``for`` list, as cmd.exe splits them (outside quotes)."""
_FOR_SWITCHES = {
    "f": "takes its values from a file, a string or a command's output",
    "r": "takes its values from the files of a folder tree",
    "d": "takes its values from folder names",
}
_MAX_INT = 2**31 - 1
"""cmd.exe's numbers (``for /L``) are 32-bit."""


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
    submissions: int = 0
    """The gcloud (or curl) commands read so far."""
    pins: LoopPins = field(default_factory=dict)
    """The run of each ``for`` loop around the submission this reading takes (``loop_runs``)."""
    loop_values: dict[str, str] = field(default_factory=dict)
    """The value each ``for`` variable the reading is inside takes in that run, by its letter."""
    assigned: list[tuple[str, int]] = field(default_factory=list)
    """Each ``set`` read, in order: the upper-case name and its line."""
    loops: list[tuple[int, str, int]] = field(default_factory=list)
    """The ``for`` loops the reading is inside, outer first: line, letter, run taken."""
    uses: tuple[int, frozenset[str]] | None = None
    """The submission's line and the ``!NAME!`` it reads (delayed expansion), once met."""

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
        self.assigned.append((key, line))
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
    batch = _Batch(env, pins=pins or {})
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if len(lines) > MAX_LINES:
        raise SpecFormatError(f"refused: the batch file holds more than {MAX_LINES} lines")
    batch.lines = [""] * len(lines)
    index = read = 0
    while index < len(lines):
        start = index
        logical, index = _logical_line(lines, index)
        pieces = [(start + 1, logical)]
        # An `if (` / `for ... do (` block goes on to its closing parenthesis.
        block = re.match(r"(?i)\s*@?\s*(?:if|for)\b", logical) is not None
        depth = _parentheses(logical) if block else 0
        while depth > 0 and index < len(lines):
            following_line = index + 1
            following, index = _logical_line(lines, index)
            pieces.append((following_line, following))
            logical += "\n" + following
            depth += _parentheses(following)
        read += len(pieces)
        if _statement(batch, logical, start + 1, pieces) == "stop":
            break
    unknown = {f"__BAT_{i}": u for i, u in enumerate(batch.unknowns)}
    try:
        found = find_submission_in(
            [(1, "\n".join(batch.lines))],
            {},
            directory,
            unknown=unknown,
            pins=pins,
            translated=read,
        )
    except LoopJobs as jobs:
        raise LoopJobs(_batch_words(str(jobs)), jobs.loops, jobs.runs) from None
    except SpecFormatError as exc:
        if type(exc) is not SpecFormatError:
            raise
        raise SpecFormatError(_batch_words(str(exc))) from None
    found.notes[:] = [_batch_words(note) for note in found.notes]
    found.notes[1:1] = [
        "read as a Windows batch file (cmd.exe): `set` variables expanded as %NAME%, the "
        "command split into its arguments as gcloud receives them on Windows"
    ]
    return found


def _batch_words(text: str) -> str:
    """The script reader's words for a loop of the translated script as the batch file writes
    it (``the `for %%L in (...)` loop``, ``one per value of %%L``)."""
    text = _SHELL_LOOP.sub(lambda m: f"`for %%{m.group(1)} in (...)`", text)
    return _SHELL_LOOP_VALUE.sub(lambda m: f"value of %%{m.group(1)}", text)


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
    return sum(1 if char == "(" else -1 for _, char in _parenthesis_marks(text))


def _parenthesis_marks(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """Each ``(`` and ``)`` of ``text`` from ``start`` that cmd reads as one (outside quotes,
    not ``^``-escaped), with its position."""
    quoted = escaped = False
    for position in range(start, len(text)):
        char = text[position]
        if escaped:
            escaped = False
        elif char == "^" and not quoted:
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif not quoted and char in "()":
            yield position, char


def _statement(batch: _Batch, logical: str, line: int, pieces: list[tuple[int, str]]) -> str:
    """One logical line (``pieces``: its lines, a block's each with its number): a comment, a
    label, a block, a ``for`` loop around the submission, or commands; ``stop`` where the file
    ends for the command (``exit``, ``goto :eof``)."""
    stripped = logical.strip().lstrip("@").strip()
    word = _first_word(stripped)
    if not word or word == "rem" or stripped.startswith(":"):
        return ""
    if word == "for" and _GCLOUD.search(stripped):
        # cmd expands a block's %NAME% once, before any of its commands runs.
        first, assigned = len(batch.unknowns), len(batch.assigned)
        loop = _Block([(number, batch.expand(text, number)) for number, text in pieces])
        expanded = len(batch.unknowns)
        stopped = _sequence(batch, loop, closing=False)
        _set_too_late(batch, range(first, expanded), batch.assigned[assigned:])
        return "stop" if stopped else ""
    if word in _BLOCKS:
        _block(batch, stripped, line, word)
        return ""
    shell, stopped = _run(batch, batch.expand(logical, line), line)
    batch.lines[line - 1] = shell
    return "stop" if stopped else ""


def _set_too_late(batch: _Batch, unknowns: range, assigned: list[tuple[str, int]]) -> None:
    """Each ``%NAME%`` of a loop's block that was not set when cmd expanded it, though the block
    sets it: its message says why that ``set`` does not reach it."""
    lines = {name: line for name, line in reversed(assigned)}
    for index in unknowns:
        unknown = batch.unknowns[index]
        line = next((lines[n] for n in unknown.names if n in lines), None)
        if unknown.unset and line is not None:
            batch.unknowns[index] = replace(
                unknown,
                message=f"{unknown.message}; the `set` at line {line} inside the loop does not "
                "reach it: cmd expands %NAME% in a block once, before the block runs (write "
                "!NAME! under `setlocal enabledelayedexpansion`)",
            )


def _first_word(statement: str) -> str:
    """A statement's first word in lower case (``for`` of ``for %%L in``, ``if`` of ``if(``)."""
    return re.split(r"[\s(]", statement, maxsplit=1)[0].lower() if statement else ""


def _run(batch: _Batch, expanded: str, line: int) -> tuple[str, bool]:
    """Commands whose ``%NAME%`` are expanded: the bash text they stand for, and whether the
    file ends there for the submission."""
    expanded = _for_values(batch, expanded, line)
    submitted = batch.submitted
    names = frozenset(name.upper() for name, _ in _DELAYED.findall(expanded))
    if batch.delayed:
        expanded = batch.expand(expanded, line, _DELAYED)
    out: list[str] = []
    for operator, command in _commands(expanded):
        result = _command(batch, command, line)
        if batch.delayed and batch.submitted and not submitted:
            batch.uses = (line, names)  # what the submission's line reads as !NAME!
        if result == "stop":
            return " ".join(out), True
        if result:
            out.append(f"{operator} {result}" if out and operator else result)
    return " ".join(out), False


@dataclass
class _Block:
    """A ``for`` statement around the submission, as cmd parses it before running it: its
    lines (``%NAME%`` expanded), each with its number, read from ``index`` at ``offset``."""

    lines: list[tuple[int, str]]
    index: int = 0
    offset: int = 0

    @property
    def line(self) -> int:
        """The number of the line being read (the last one once all are)."""
        return self.lines[min(self.index, len(self.lines) - 1)][0]

    def rest(self) -> str:
        """What is left of the line being read."""
        return self.lines[self.index][1][self.offset :] if self.index < len(self.lines) else ""

    def skip_blanks(self, *, lines: bool = True) -> None:
        """On past blanks (and, ``lines``, past the ends of lines)."""
        while self.index < len(self.lines):
            text = self.lines[self.index][1]
            while self.offset < len(text) and text[self.offset] in " \t":
                self.offset += 1
            if self.offset < len(text) or not lines:
                return
            self.index, self.offset = self.index + 1, 0

    def take_statement(self) -> list[tuple[int, str]]:
        """The statement read from here, by line: to the end of its line, or on to the line
        that closes the parentheses it opens, or to the ``)`` that closes the block it is in
        (left to read)."""
        pieces: list[tuple[int, str]] = []
        depth = 0
        while self.index < len(self.lines):
            number, text = self.lines[self.index]
            start = self.offset
            for position, char in _parenthesis_marks(text, start):
                if char == "(":
                    depth += 1
                elif depth == 0:
                    pieces.append((number, text[start:position]))
                    self.offset = position
                    return pieces
                else:
                    depth -= 1
            pieces.append((number, text[start:]))
            self.index, self.offset = self.index + 1, 0
            if depth <= 0:
                break
        return pieces


def _sequence(batch: _Batch, block: _Block, *, closing: bool) -> bool:
    """The statements of ``block`` from where it is read: to the ``)`` that closes it
    (``closing``), or to its end; whether the file ends there for the submission (``exit``,
    ``goto :eof`` after the loop, on its last line)."""
    opened = block.line
    while True:
        block.skip_blanks()
        if block.index >= len(block.lines):
            if closing:
                raise SpecFormatError(
                    f"line {opened}: the block of the `for` loop is not closed (no `)`)"
                )
            return False
        if block.rest().startswith(")"):
            block.offset += 1
            if closing:
                return False
            continue  # a `)` that closes no block: skipped
        if _one_statement(batch, block):
            return True


def _one_statement(batch: _Batch, block: _Block) -> bool:
    """The statement where ``block`` is read: a ``for`` loop around the submission, an
    ``if``/``for`` block read as outside loops, a comment, or commands; whether the file ends
    there for the submission (only outside loops: in one, that is refused)."""
    line = block.line
    index, offset = block.index, block.offset
    pieces = block.take_statement()
    text = "\n".join(piece for _, piece in pieces)
    stripped = text.strip().lstrip("@").strip()
    word = _first_word(stripped)
    if word == "for" and _GCLOUD.search(stripped):
        start = block.lines[index][1][offset:]
        block.index, block.offset = index, offset + len(start) - len(start.lstrip(" \t@"))
        _loop(batch, block)
        return False
    if not word or word == "rem" or stripped.startswith(":"):
        return False
    if word in _BLOCKS:
        _block(batch, stripped, line, word)
        return False
    for number, piece in pieces:
        shell, stopped = _run(batch, piece, number)
        _emit(batch, number, shell)
        if stopped and batch.loops:
            raise SpecFormatError(
                f"line {number}: `{clipped(batch.readable(piece.strip()))}` inside the `for` "
                "loop ends the loop (or the file), which this reader does not evaluate: write "
                "it after the loop"
            )
        if stopped:
            return True
    return False


def _emit(batch: _Batch, line: int, shell: str) -> None:
    """Add ``shell`` to the bash text of ``line`` (a loop's header, body and ``done`` can
    share one line)."""
    if not shell:
        return
    before = batch.lines[line - 1]
    joiner = "" if not before else " " if before.endswith("; do") else "; "
    batch.lines[line - 1] = before + joiner + shell


def _loop(batch: _Batch, block: _Block) -> None:
    """A ``for`` statement whose text names gcloud. ``for %%V in (values) do ...`` or
    ``for /L %%V in (start,step,end) do ...`` around the submission is read as the bash loop
    ``for V in values; do ...; done``, whose runs the script reader counts and names; this
    reading takes the run ``batch.pins`` names (its first by default), with ``%%V`` as cmd
    sets it in that run. One whose body submits nothing (gcloud only in its values, or in an
    ``echo``) is not evaluated, as any loop that submits nothing."""
    line = block.line
    form, name, listed = _loop_head(batch, block, line)
    body_at = block.index, block.offset
    body = "\n".join(piece for _, piece in block.take_statement())
    if not _GCLOUD.search(body):
        _not_evaluated(batch, body, line, "for")
        return
    block.index, block.offset = body_at
    if form and form.lower() != "l":
        raise _unread_form(form, line)
    _check_variable(batch, name, line)
    values = _counted(listed, line) if form else _listed(batch, listed, line)
    before = _Saved.of(batch)
    index = batch.pins.get(for_loop_key(line, name), 0)
    words = " ".join(_quoted(_unquoted(value)) or "''" for value in values)
    _emit(batch, line, f"for {name} in {words}; do")
    batch.loop_values[name] = values[index] if index < len(values) else ""
    batch.loops.append((line, name, index))
    if block.rest().startswith("("):
        block.offset += 1
        _sequence(batch, block, closing=True)
    else:
        _one_statement(batch, block)
    del batch.loop_values[name]
    batch.loops.pop()
    if batch.submissions == before.submissions:
        before.restore(batch)  # it names gcloud only in words of other commands (`echo`)
        _not_evaluated(batch, body, line, "for")
        return
    # `done` on the line the body ends on: the one read, or, read to its end, the one before.
    _emit(batch, block.lines[block.index - 1][0] if block.offset == 0 else block.line, "done")


def _loop_head(batch: _Batch, block: _Block, line: int) -> tuple[str, str, str]:
    """Read a ``for`` statement up to its body (``block`` left there): its switch (``L``, or
    ""), its variable and its set as written; refuses a form not read here, a missing
    ``do``, a ``do`` without a command, and loops nested deeper than ``MAX_LOOP_DEPTH``."""
    rest = block.rest()
    switch = re.match(r"(?i)for\s+/(\S+)", rest)
    form = switch.group(1) if switch is not None else ""
    header = _FOR_HEADER.match(rest)
    if header is None:
        if form and form.lower() != "l":
            raise _unread_form(form, line)
        raise SpecFormatError(
            f"line {line}: the `for` loop around the gcloud command is not read here: write it "
            "as `for %%V in (values) do ...` or `for /L %%V in (start,step,end) do ...`"
        )
    name = header.group(2)
    block.offset += header.end()
    listed = _for_set(batch, block, line)
    block.skip_blanks(lines=False)
    do = re.match(r"(?i)do(?=[\s(]|$)", block.rest())
    if do is None:
        raise SpecFormatError(f"line {line}: the `for` loop has no `do` after its values")
    block.offset += do.end()
    block.skip_blanks(lines=False)
    if not block.rest():
        raise SpecFormatError(
            f"line {line}: the `for` loop's `do` has no command on its line (cmd needs one, "
            "or a `(` that opens its block there)"
        )
    if len(batch.loops) >= MAX_LOOP_DEPTH:
        raise SpecFormatError(
            f"refused: line {line}: the `for` loop is nested in {len(batch.loops)} loops around "
            f"the gcloud command: at most {MAX_LOOP_DEPTH} are read here"
        )
    return form, name, listed


def _check_variable(batch: _Batch, name: str, line: int) -> None:
    """Refuse a ``for`` variable this reader cannot follow: not a letter, or one a loop
    around it already sets."""
    if not name.isascii() or not name.isalpha():
        raise SpecFormatError(
            f"line {line}: the `for` variable %%{name} is not a letter, which this reader "
            "needs: name it %%A to %%Z or %%a to %%z"
        )
    if name in batch.loop_values:
        raise SpecFormatError(
            f"line {line}: the `for` loop reuses %%{name} of the loop around it: give it a "
            "letter of its own"
        )


def _unread_form(form: str, line: int) -> SpecFormatError:
    """The error for a submission inside ``for /F``, ``/R``, ``/D`` (or a switch not known)."""
    why = _FOR_SWITCHES.get(form.lower(), "is not a form this reader knows")
    return SpecFormatError(
        f"line {line}: the gcloud command is inside a `for /{form}` loop, which {why}: not "
        "read here; list the values themselves (`for %%V in (a b) do`) or write one job per "
        "file"
    )


@dataclass(frozen=True)
class _Saved:
    """What reading a loop's body changes, kept to undo it when the body submits nothing."""

    values: dict[str, str]
    upper_env: dict[str, str]
    lines: list[str]
    delayed: bool
    submitted: bool
    submissions: int

    @classmethod
    def of(cls, batch: _Batch) -> _Saved:
        return cls(
            dict(batch.values),
            dict(batch.upper_env),
            list(batch.lines),
            batch.delayed,
            batch.submitted,
            batch.submissions,
        )

    def restore(self, batch: _Batch) -> None:
        batch.values, batch.upper_env = self.values, self.upper_env
        batch.lines, batch.delayed, batch.submitted = self.lines, self.delayed, self.submitted


def _for_set(batch: _Batch, block: _Block, line: int) -> str:
    """The text of a ``for`` loop's values, from after its ``(`` to the ``)`` that ends them
    (lines between are blanks, as cmd reads them)."""
    parts: list[str] = []
    while block.index < len(block.lines):
        text = block.rest()
        quoted = False
        for position, char in enumerate(text):
            if char == '"':
                quoted = not quoted
            elif char == ")" and not quoted:
                parts.append(text[:position])
                block.offset += position + 1
                return " ".join(parts)
        parts.append(text)
        block.index, block.offset = block.index + 1, 0
    raise SpecFormatError(f"line {line}: the values of the `for` loop have no closing `)`")


def _listed(batch: _Batch, listed: str, line: int) -> list[str]:
    """A ``for`` list's values, split as cmd splits them: on blanks, ``,``, ``;`` and ``=``
    outside quotes, a quoted value keeping its quotes (``%%~V`` removes them)."""
    if (mark := _UNKNOWN.search(listed)) is not None:
        raise SpecFormatError(
            f"line {line}: the values of the `for` loop are not known here: "
            f"{batch.unknowns[int(mark.group(1))].message}"
        )
    values: list[str] = []
    current: list[str] = []
    quoted = False
    for char in listed:
        if char == '"':
            quoted = not quoted
        elif char in _SET_DELIMITERS and not quoted:
            if current:
                values.append("".join(current))
            current = []
            continue
        elif char == "^" and not quoted:
            raise SpecFormatError(
                f"line {line}: the values of the `for` loop ({clipped(listed.strip())}) escape "
                "a character with `^`, which this reader does not read: quote that value"
            )
        current.append(char)
    if current:
        values.append("".join(current))
    for value in values:
        if any(char in value for char in "*?"):
            raise SpecFormatError(
                f"line {line}: the `for` loop's value {clipped(value)} names files (a "
                "wildcard), which this reader does not list: write the values themselves"
            )
    return values


def _counted(listed: str, line: int) -> list[str]:
    """``for /L``'s ``(start,step,end)``: the numbers it counts through, at most
    ``MAX_LOOP_JOBS`` (the most jobs one file is read as)."""
    numbers = [part for part in re.split(r"[\s,;=]+", listed.strip()) if part]
    if len(numbers) != 3 or not all(re.fullmatch(r"[+-]?\d{1,10}", n) for n in numbers):
        raise SpecFormatError(
            f"line {line}: `for /L` counts through ({clipped(listed.strip())}), which is not "
            "three numbers written in the file (start,step,end)"
        )
    start, step, end = (int(n) for n in numbers)
    if any(abs(n) > _MAX_INT for n in (start, step, end)):
        raise SpecFormatError(f"line {line}: `for /L` counts past cmd's 32-bit numbers")
    if step == 0:
        if start <= end:
            raise SpecFormatError(
                f"line {line}: `for /L` counts by 0 from {start} to {end}, which never ends"
            )
        return []
    runs = max(0, (end - start) // step + 1)
    if runs > MAX_LOOP_JOBS:
        raise SpecFormatError(
            f"refused: the `for /L` loop at line {line} runs its body {runs} times "
            f"({start} to {end} by {step}): at most {MAX_LOOP_JOBS} jobs of one script are "
            "read here; loop over fewer values"
        )
    return [str(start + step * run) for run in range(runs)]


def _unquoted(value: str) -> str:
    """``%%~V``: the value without the quotes around it."""
    if value.startswith('"'):
        value = value[1:]
        return value[:-1] if value.endswith('"') else value
    return value


def _for_values(batch: _Batch, text: str, line: int) -> str:
    """``text`` with each ``for`` variable the reading is inside replaced by its value in this
    run (``%V``, ``%~V``); a modifier that reads it as a file name is refused."""
    if not batch.loop_values:
        return text

    def one(match: re.Match[str]) -> str:
        modifiers, search, name = match.groups()
        value = batch.loop_values.get(name)
        if value is None:
            return match.group()
        if modifiers is None:
            return value
        if modifiers or search:
            raise SpecFormatError(
                f"line {line}: `%{match.group()}` reads %%{name} as a file name (a `for` "
                f"modifier), which this reader does not: use %%{name} or %%~{name}"
            )
        return _unquoted(value)

    return _FOR_VARIABLE.sub(one, text)


def _block(batch: _Batch, statement: str, line: int, word: str) -> None:
    """An ``if``/``for`` line (its parenthesised block joined by the caller's continuation
    only when on one line): not evaluated. A gcloud command in it stops the reading; the
    variables it sets become values not known here."""
    if _GCLOUD.search(statement):
        raise SpecFormatError(
            f"line {line}: the gcloud command is inside `{word}` ({clipped(statement)}), "
            f"which this reader does not evaluate: write the submission outside the `{word}`"
        )
    _not_evaluated(batch, statement, line, word)


def _not_evaluated(batch: _Batch, statement: str, line: int, word: str) -> None:
    """The variables an ``if``/``for`` that submits nothing sets: values not known here."""
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
        batch.submissions += 1
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
    _carried(batch, name, line)
    batch.assign(name, value, line)


def _carried(batch: _Batch, name: str, line: int) -> None:
    """``set NAME=...`` after the submission, in the body of a loop read at a later run than
    its first, where the submission reads ``!NAME!``: that run would read the value the run
    before set here, which is not followed."""
    if batch.uses is None or name.upper() not in batch.uses[1]:
        return
    loop = next(((at, letter) for at, letter, run in batch.loops if run > 0), None)
    if loop is not None:
        raise SpecFormatError(
            f"line {line}: !{name}! is set in the body of the `for %%{loop[1]}` loop at line "
            f"{loop[0]} after the submission (line {batch.uses[0]}) that uses it: this run "
            "reads the value the run before sets, which is not followed here"
        )


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
