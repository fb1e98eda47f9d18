"""Reading a shell script as bash would parse it, without ever running any of it.

``split_commands`` turns a script into simple commands: words made of parts (literal text,
``$VAR``/``${VAR...}`` parameters, ``$(...)``/backtick command substitutions), each part
marked quoted or not, with the line where the command starts, and its redirections (with
the bodies of its here-documents). Quotes, ``\\`` escapes and continuations, comments,
``;``/``&&``/``||``/``|`` separators, redirections and here-documents are understood the way
bash reads them; nothing is executed, no file is opened. Where bash ends a command that a
reader would think goes on (a comment line inside a ``\\`` continuation, an unquoted ``;``
glued inside a word), the command says so (``Command.cut``).

``expand_word`` gives a word's fields as bash does: an unquoted expansion is split on blanks
(``--nnsize $NNSIZE`` with ``NNSIZE="32 8"`` is three words), a quoted one stays one word,
an unquoted empty one is no word at all. Values come from a ``Lookup``; what cannot be known
without running the script (a command substitution, a script argument, an unset variable)
raises ``Unresolvable``, or, for a first look at a command, becomes a placeholder.

Everything is bounded: the text is capped by its reader, ``${...}`` nests at most
``MAX_NESTING`` deep, and ``Scope`` (``components.formats.script``) caps what expansions make.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from .._errors import SpecFormatError, TrainingJobError

__all__ = [
    "MAX_COMMANDS",
    "MAX_FIELDS",
    "MAX_NESTING",
    "MAX_WORDS",
    "PLACEHOLDER",
    "Command",
    "Lookup",
    "Part",
    "Redirect",
    "Unresolvable",
    "Word",
    "expand_word",
    "expand_words",
    "heredoc_word",
    "split_commands",
]

MAX_NESTING = 16
"""How deep ``${A:-${B:-...}}`` may nest: real scripts use two or three levels."""
MAX_FIELDS = 10_000
"""The most words one command may expand to."""
MAX_COMMANDS = 20_000
MAX_WORDS = 50_000
"""The most commands and words a script may hold (real ones hold hundreds)."""
PLACEHOLDER = "\x00"
"""Stands for a value that cannot be known, in a first look at a command (never in a result)."""

PartKind = Literal["text", "param", "command"]
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL = "@*#?$!-0123456789"
_PARAM_OPS = (":-", ":=", ":+", ":?", "-", "=", "+", "?", "%%", "%", "##", "#", "^^", ",,")
_REDIRECT = re.compile(r"\d*(<<<|<<-|<<|&>>|&>|>>|>&|<&|<>|>\||<|>)")
_WORD_END = frozenset(" \t\n;&|()<>")
_PLAIN = re.compile(r"[^ \t\n;&|()<>\\'\"$`]+")
_PLAIN_IN_BRACES = re.compile(r"[^}\n\\'\"$`]+")
_PLAIN_IN_DOUBLE_QUOTES = re.compile(r'[^"\\$`]+')
_PLAIN_IN_HEREDOC = re.compile(r"[^\\$`]+")
_HEREDOC_SPECIALS = re.compile(r"[\\$`]")
_DIGITS = re.compile(r"\d+")
_BLANKS = re.compile(r"[ \t\r]+")
_ARRAY_START = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=$")
_SUBSCRIPT = re.compile(r"\[([@*]|\d{1,6})\]\}")
_ONE = re.compile(r".", re.DOTALL)
_DOUBLE_QUOTE_ESCAPES = frozenset('$`"\\\n')
_HEREDOC_ESCAPES = frozenset("$`\\\n")
"""What a backslash quotes inside double quotes, and in a heredoc body (a backslash before a
newline joins the lines in both)."""
_ANSI_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "e": "\x1b"}


@dataclass(frozen=True, slots=True)
class Part:
    """A piece of a word: literal ``text``, a ``param`` expansion or a ``command`` substitution.

    For a parameter, ``value`` is its name and ``op`` the operator of ``${NAME<op>word}``
    (``:-``, ``-``, ``:=``, ``=``, ``:+``, ``+``, ``:?``, ``?``, ``%``, ``%%``, ``#``,
    ``##``, ``^^``, ``,,``; ``length`` for ``${#NAME}``; ``unsupported`` for forms like
    ``${NAME/a/b}`` or ``${NAME:1:2}``); ``word`` holds the operand. For a command
    substitution, ``value`` is its source and ``line`` where it starts; an array assignment's
    ``(a b c)`` is one too, with op ``array``.
    """

    kind: PartKind
    value: str
    quoted: bool
    op: str = ""
    word: tuple[Part, ...] = ()
    line: int = 0


@dataclass(frozen=True, slots=True)
class Word:
    """One word of a command, as written: its parts in order."""

    parts: tuple[Part, ...]

    def literal(self) -> str | None:
        """The word's text when it holds no expansion (quotes removed), else None."""
        if all(p.kind == "text" for p in self.parts):
            return "".join(p.value for p in self.parts)
        return None

    def assignment(self) -> tuple[str, Word] | None:
        """``(NAME, value)`` when the word is ``NAME=value`` (the ``NAME=`` unquoted)."""
        found = self.assigned()
        return (found[0], found[1]) if found is not None and not found[2] else None

    def assigned(self) -> tuple[str, Word, bool] | None:
        """``(NAME, value, append)`` when the word is ``NAME=value`` or ``NAME+=value``."""
        if not self.parts or self.parts[0].kind != "text" or self.parts[0].quoted:
            return None
        first = self.parts[0].value
        match = _NAME.match(first)
        if match is None:
            return None
        append = first.startswith("+=", match.end())
        if not append and first[match.end() : match.end() + 1] != "=":
            return None
        rest = first[match.end() + 1 + append :]
        head = (Part("text", rest, False),) if rest else ()
        return match.group(), Word(head + self.parts[1:]), append


@dataclass(frozen=True, slots=True)
class Redirect:
    """A redirection: ``op`` (``>``, ``>>``, ``&>``, ``<<``...), the file descriptor written
    before it (``2`` of ``2>``; empty for the default), its target word and line.

    A here-document (``<<``/``<<-``) has its ``body``: one quoted text when the delimiter is
    quoted (``<<'EOF'``: nothing expands), else parts to expand as bash expands the body
    (``$VAR``, ``$(...)``, ``\\$``); ``body_error`` says why bash could not read it.
    """

    op: str
    fd: str
    target: Word
    line: int
    body: Word | None = None
    body_error: str = ""


@dataclass(frozen=True, slots=True)
class Command:
    """A simple command: its words, its redirections and the line it starts on.

    ``conditional``: it follows ``&&`` or ``||``, so whether it runs depends on another.
    ``cut``: a sentence saying that bash ended the command where its writer likely meant it
    to go on (a comment line inside a ``\\`` continuation, an unquoted ``;`` inside a word).
    ``ended_by`` and ``branch_end`` let a reader follow ``case`` blocks.
    """

    words: tuple[Word, ...]
    line: int
    conditional: bool = False
    redirects: tuple[Redirect, ...] = ()
    cut: str = ""
    ended_by: str = ""
    """The operator that ended it: ``)`` ends a ``case`` pattern list (``small)``)."""
    branch_end: bool = False
    """A ``;;`` follows it: the end of a ``case`` branch (its last command, or its pattern)."""


class Unresolvable(TrainingJobError):
    """A value that cannot be known without running the script.

    ``message`` says why (``environment variable $X is not set``, ```$(date)` would have to
    run``); ``names`` are the variables whose value, set in the environment, would supply it;
    ``unset`` tells an unset variable from a value the script computes; ``text`` is the value
    as written (``census_$(date +%s)``); ``keepable``: that text may stand for the value where
    its exact text does not matter (not so for an array or an expansion not evaluated here,
    which stand for several words or an unknown transformation); ``marked``: the value with
    only its unknown parts marked (``gs://b/m_MARK`` for ``gs://b/m_$(date +%s)``), where a
    reader can mark them; ``required``: unset where the script demands a value
    (``${NAME:?}``), so it never expands to nothing.
    """

    def __init__(
        self,
        message: str,
        names: tuple[str, ...] = (),
        *,
        unset: bool = False,
        text: str = "",
        keepable: bool = True,
        marked: str | None = None,
        required: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.names = names
        self.unset = unset
        self.text = text
        self.keepable = keepable
        self.marked = marked
        self.required = required


Lookup = Callable[[Part], str]
"""Resolves a ``param`` or ``command`` part to its text, or raises ``Unresolvable``."""


def split_commands(text: str, first_line: int = 1) -> list[Command]:
    """The simple commands of a script; ``SpecFormatError`` naming the line of bad quoting."""
    return _Lexer(text.replace("\r\n", "\n"), first_line).commands()


def heredoc_word(body: str, first_line: int = 1) -> Word:
    """An unquoted here-document's body as bash expands it: ``$VAR``, ``${...}``, ``$(...)``
    and backticks expand, ``\\`` escapes only ``$``, `````, ``\\`` and a newline, quotes are
    text. ``SpecFormatError`` naming the line of an unclosed expansion."""
    return _Lexer(body, first_line).heredoc_body()


@dataclass
class _Pending:
    """A here-document whose body is still to be read: which command and redirection get it
    (``command`` -1 until the command ends, -2 for a command of redirections only)."""

    delimiter: str
    strip_tabs: bool
    quoted: bool
    command: int
    redirect: int


@dataclass
class _Lexer:
    text: str
    line: int
    pos: int = 0
    depth: int = 0
    words: list[Word] = field(default_factory=list)
    start_line: int = 0
    found: list[Command] = field(default_factory=list)
    heredocs: list[_Pending] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    conditional: bool = False
    count: int = 0
    continued: int = 0
    """The line a ``\\`` continuation of the current command reached (0: none)."""
    cut: str = ""

    def fail(self, message: str, line: int | None = None) -> SpecFormatError:
        return SpecFormatError(
            f"line {self.line if line is None else line}: cannot split the command line: {message}"
        )

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.text[index] if index < len(self.text) else ""

    def end_command(self, ended_by: str = "") -> None:
        index = len(self.found) if self.words else -2  # a command of redirections only
        for pending in self.heredocs:
            if pending.command == -1:
                pending.command = index
        if self.words:
            if len(self.found) >= MAX_COMMANDS:
                raise SpecFormatError(f"refused: the script has more than {MAX_COMMANDS} commands")
            command = Command(
                tuple(self.words),
                self.start_line,
                self.conditional,
                tuple(self.redirects),
                self.cut,
                ended_by,
            )
            self.found.append(command)
            self.conditional = False  # `a &&` then a newline: the next command still depends
        self.words = []
        self.redirects = []
        self.cut = ""
        self.continued = 0

    def commands(self) -> list[Command]:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in " \t\r":
                self.pos = _BLANKS.match(text, self.pos).end()  # type: ignore[union-attr]
            elif char == "\\" and self.peek(1) == "\n":
                self.pos += 2
                self.line += 1
                self.continued = self.line if self.words else 0
            elif char == "\\" and self.pos + 1 == len(text):
                self.pos += 1  # a backslash that ends the file: bash drops it
            elif char in "<>" and self.peek(1) == "(":
                if not self.words:
                    self.start_line = self.line
                self.words.append(self.word())  # `diff <(a) <(b)`: a word, not a redirection
            elif char == "\n":
                self.end_command()
                self.pos += 1
                self.line += 1
                self.read_heredocs()
            elif char == "#":
                newline = text.find("\n", self.pos)
                end = len(text) if newline < 0 else newline
                self.comment(text[self.pos : end])
                self.pos = end
            elif self.redirection():
                continue
            elif char in ";&|()":
                if char == ";" and self.peek(1) != ";":
                    self.glued_semicolon()
                self.end_command(char)
                if char == ";" and self.peek(1) == ";" and self.found:
                    # `;;` ends a case branch: said on the command before it (its pattern, for
                    # an empty branch).
                    self.found[-1] = replace(self.found[-1], branch_end=True)
                    self.pos += 1
                doubled = char in "&|" and self.peek(1) == char
                self.pos += 2 if doubled else 1
                self.conditional = doubled
            else:
                if not self.words:
                    self.start_line = self.line
                self.words.append(self.word())
                if self.peek() == "(" and _ARRAY_START.match(self.words[-1].literal() or ""):
                    self.words[-1] = self.array(self.words[-1])
                self.count += 1
                if self.count > MAX_WORDS:
                    raise SpecFormatError(f"refused: the script has more than {MAX_WORDS} words")
        self.end_command()
        return self.found

    def comment(self, comment: str) -> None:
        """A comment inside a command that a ``\\`` continued, or one ending in ``\\``: bash
        ends the command there, though its writer meant it to go on."""
        if not self.words:
            return
        line_start = self.text.rfind("\n", 0, self.pos) + 1
        own_line = not self.text[line_start : self.pos].strip()
        if (own_line and self.continued == self.line) or comment.rstrip().endswith("\\"):
            self.cut = (
                f"line {self.line}: a comment ends the command started at line "
                f"{self.start_line} (bash does not continue a line through a comment): the "
                "lines after it are not part of the command"
            )

    def glued_semicolon(self) -> None:
        """``a;b`` inside what looks like one word (``requirements=a;b``): bash ends the
        command at the ``;``."""
        before = self.text[self.pos - 1] if self.pos else " "
        after = self.peek(1)
        if not self.words or before in " \t\n" or not after or after in " \t\n;&|)":
            return
        window = self.text[self.pos + 1 : self.pos + 200]  # bounded: `;` may come often
        rest = window.split("\n", 1)[0].strip()
        shown = rest if len(rest) <= 60 else rest[:60] + "…"
        self.cut = (
            f"line {self.line}: an unquoted `;` ends the command (bash reads it as a command "
            f"separator): `{shown}` is not part of the command (if it belongs to the value before the `;`, "
            "quote that value)"
        )

    def redirection(self) -> bool:
        """A redirection and its target (``> file``, ``2>&1``, ``<<EOF``); True if one."""
        match = _REDIRECT.match(self.text, self.pos)
        if match is None:
            return False
        line = self.line
        self.pos = match.end()
        while self.peek() in (" ", "\t"):
            self.pos += 1
        op = match.group(1)
        if op in ("<", ">") and match.group() == op and self.text.startswith("(", match.end()):
            self.pos = match.start()  # `<(cmd)` / `>(cmd)` itself: a word (see commands)
            return False
        if self.text.startswith((">(", "<("), self.pos):
            target = self.word()  # `exec > >(tee -a "$LOG")`: output into a process
            self.redirects.append(Redirect(op, match.group()[: -len(op)], target, line))
            return True
        if self.pos >= len(self.text) or self.peek() in _WORD_END:
            if op in (">&", "<&") and self.peek() == "-":
                self.pos += 1
                return True
            raise self.fail(f"{op} needs a target")
        target = self.word()
        self.redirects.append(Redirect(op, match.group()[: -len(op)], target, line))
        if op in ("<<", "<<-"):
            delimiter = "".join(p.value for p in target.parts)
            quoted = any(p.quoted for p in target.parts)
            pending = _Pending(delimiter, op == "<<-", quoted, -1, len(self.redirects) - 1)
            self.heredocs.append(pending)
        return True

    def read_heredocs(self) -> None:
        """The bodies of the here-documents started on the line just ended, each given to
        the redirection of its command."""
        for pending in self.heredocs:
            first_line = self.line
            lines: list[str] = []
            while self.pos < len(self.text):
                newline = self.text.find("\n", self.pos)
                end = len(self.text) if newline < 0 else newline
                line = self.text[self.pos : end]
                self.pos = end + 1
                self.line += 1
                if pending.strip_tabs:
                    line = line.lstrip("\t")
                if line == pending.delimiter:
                    break
                lines.append(line)
            if pending.command >= 0:
                self.attach(pending, "".join(f"{line}\n" for line in lines), first_line)
        self.heredocs = []

    def attach(self, pending: _Pending, body: str, first_line: int) -> None:
        command = self.found[pending.command]
        redirects = list(command.redirects)
        slot = redirects[pending.redirect]
        if pending.quoted or not _HEREDOC_SPECIALS.search(body):
            slot = replace(slot, body=Word((Part("text", body, True),)))
        else:
            try:
                slot = replace(slot, body=heredoc_word(body, first_line))
            except SpecFormatError as exc:
                slot = replace(slot, body_error=str(exc))
        redirects[pending.redirect] = slot
        self.found[pending.command] = replace(command, redirects=tuple(redirects))

    def heredoc_body(self) -> Word:
        parts: list[Part] = []
        buffer: list[str] = []
        while self.pos < len(self.text):
            self.quoted_piece(buffer, parts, _HEREDOC_ESCAPES, _PLAIN_IN_HEREDOC)
        parts.append(Part("text", "".join(buffer), True))
        return Word(tuple(p for p in parts if p.kind != "text" or p.value))

    def quoted_piece(
        self, buffer: list[str], parts: list[Part], escapes: frozenset[str], plain: re.Pattern[str]
    ) -> None:
        """One step inside double quotes or a heredoc body: an escape, an expansion (``$``,
        backtick), or a run of plain text; ``escapes`` are the characters a backslash quotes."""
        text = self.text
        char = text[self.pos]
        if char == "\\" and self.peek(1) in escapes:
            if self.peek(1) == "\n":
                self.line += 1
            else:
                buffer.append(self.peek(1))
            self.pos += 2
        elif char in "$`":
            parts.append(Part("text", "".join(buffer), True))
            buffer.clear()
            parts.extend(self.expansion(True))
        else:
            run = plain.match(text, self.pos) or _ONE.match(text, self.pos)
            assert run is not None
            self.line += run.group().count("\n")
            buffer.append(run.group())
            self.pos = run.end()

    def word(self, close: str = "", quoted: bool = False) -> Word:
        """A word, up to a blank or operator (or, inside ``${...}``, up to ``close``)."""
        parts: list[Part] = []
        buffer: list[str] = []

        def flush() -> None:
            if buffer:
                parts.append(Part("text", "".join(buffer), quoted))
                buffer.clear()

        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if not close and char in "<>" and self.peek(1) == "(":
                # `<(cmd)` starts a word, or follows a flag's `=` (`--config=<(cat <<EOF)`).
                after_equals = bool(buffer) and buffer[-1].endswith("=")
                if after_equals or (not parts and not buffer):
                    flush()
                    parts.append(self.process_substitution())
                    continue
            if (char == close) if close else (char in _WORD_END):
                break
            if char == "\\":
                flush()
                parts.extend(self.escaped(quoted))
            elif char == "'" and not quoted:
                flush()
                parts.append(self.single_quoted())
            elif char == '"':
                flush()
                parts.extend(self.double_quoted())
            elif char in "$`":
                flush()
                parts.extend(self.expansion(quoted))
            else:
                run = (_PLAIN_IN_BRACES if close else _PLAIN).match(text, self.pos)
                if run is None:  # a newline or a quote inside ${...}
                    self.line += char == "\n"
                    run = _ONE.match(text, self.pos)
                    assert run is not None
                buffer.append(run.group())
                self.pos = run.end()
        flush()
        return Word(tuple(parts))

    def array(self, head: Word) -> Word:
        """``NAME=(a b c)``: kept as one ``command`` part (op ``array``), never expanded."""
        start_line = self.line
        end = _closing_paren(self.text, self.pos + 1)
        if end < 0:
            raise self.fail("an array ( is never closed", start_line)
        source = self.text[self.pos + 1 : end]
        self.line += source.count("\n")
        self.pos = end + 1
        return Word((*head.parts, Part("command", source, False, "array", line=start_line)))

    def escaped(self, quoted: bool) -> list[Part]:
        following = self.peek(1)
        self.pos += 2
        if following == "\n":
            self.line += 1
            self.continued = self.line
            return []
        if not following:
            return []  # a backslash that ends the file: bash drops it
        return [Part("text", following, True)]

    def single_quoted(self) -> Part:
        start_line = self.line
        end = self.text.find("'", self.pos + 1)
        if end < 0:
            raise self.fail("a ' quote is never closed", start_line)
        value = self.text[self.pos + 1 : end]
        self.line += value.count("\n")
        self.pos = end + 1
        return Part("text", value, True)

    def double_quoted(self) -> list[Part]:
        start_line = self.line
        self.pos += 1
        parts: list[Part] = [Part("text", "", True)]  # "" is still a word
        buffer: list[str] = []
        text = self.text
        while True:
            if self.pos >= len(text):
                raise self.fail('a " quote is never closed', start_line)
            char = text[self.pos]
            if char == '"':
                self.pos += 1
                break
            self.quoted_piece(buffer, parts, _DOUBLE_QUOTE_ESCAPES, _PLAIN_IN_DOUBLE_QUOTES)
        parts.append(Part("text", "".join(buffer), True))
        return [p for p in parts if p.kind != "text" or p.value] or parts[:1]

    def expansion(self, quoted: bool) -> list[Part]:
        """``$NAME``, ``${...}``, ``$(...)``, ``$((...))``, backticks, ``$'...'``."""
        following = self.peek(1)
        if self.peek() == "`":
            return [self.substitution("`", quoted)]
        if following == "(":
            return [self.substitution("$(", quoted)]
        if following == "{":
            return [self.braced(quoted)]
        if following == "'" and not quoted:
            return [self.ansi_c()]
        if following == '"' and not quoted:
            self.pos += 1
            return self.double_quoted()
        match = _NAME.match(self.text, self.pos + 1)
        if match:
            self.pos = match.end()
            return [Part("param", match.group(), quoted, line=self.line)]
        if following and following in _SPECIAL:
            self.pos += 2
            return [Part("param", following, quoted, line=self.line)]
        self.pos += 1
        return [Part("text", "$", quoted)]

    def substitution(self, opener: str, quoted: bool) -> Part:
        start_line = self.line
        start = self.pos + len(opener)
        if opener == "`":
            end = start
            while end < len(self.text) and self.text[end] != "`":
                end += 2 if self.text[end] == "\\" else 1
            if end >= len(self.text):
                raise self.fail("a ` command substitution is never closed", start_line)
            after = end + 1
        else:
            end = _closing_paren(self.text, start)
            if end < 0:
                raise self.fail("a $( command substitution is never closed", start_line)
            after = end + 1
        source = self.text[start:end]
        self.line += source.count("\n")
        self.pos = after
        return Part("command", source, quoted, line=start_line)

    def process_substitution(self) -> Part:
        """``<(cmd)`` / ``>(cmd)``: a command bash runs, named by a path (op ``process``)."""
        start_line = self.line
        end = _closing_paren(self.text, self.pos + 2)
        if end < 0:
            raise self.fail(f"a {self.text[self.pos]}( process substitution is never closed")
        source = self.text[self.pos + 2 : end]
        self.line += source.count("\n")
        self.pos = end + 1
        return Part("command", source, False, "process", line=start_line)

    def braced(self, quoted: bool) -> Part:
        start_line = self.line
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.fail(f"${{...}} nests more than {MAX_NESTING} deep", start_line)
        self.pos += 2
        match = _NAME.match(self.text, self.pos) or _DIGITS.match(self.text, self.pos)
        length = _NAME.match(self.text, self.pos + 1) if self.peek() == "#" else None
        if match:
            name = match.group()
        elif length and self.text.startswith("}", length.end()):
            name = length.group()
            self.pos += 1
        elif self.peek() and self.peek() in _SPECIAL:
            name = self.peek()
        else:
            name = ""
        self.pos += len(name)
        subscript = _SUBSCRIPT.match(self.text, self.pos) if match and not length else None
        if subscript is not None:
            # `${cmd[@]}`, `${cmd[*]}`, `${cmd[0]}`: an array's elements, or one of them.
            self.pos = subscript.end()
            self.depth -= 1
            index = subscript.group(1)
            op = f"[{index}]" if index in "@*" else "[]"
            word = () if index in "@*" else (Part("text", index, True),)
            return Part("param", name, quoted, op, word, start_line)
        op = next((o for o in _PARAM_OPS if self.text.startswith(o, self.pos)), "")
        if name and self.peek() == "}":
            op = "length" if length and not match else ""
        elif not name or not op:
            op = "unsupported"
        else:
            self.pos += len(op)
        operand = self.word(close="}", quoted=quoted) if self.peek() != "}" else Word(())
        if self.peek() != "}":
            raise self.fail("a ${ expansion is never closed", start_line)
        self.pos += 1
        self.depth -= 1
        return Part("param", name, quoted, op, operand.parts, start_line)

    def ansi_c(self) -> Part:
        start_line = self.line
        self.pos += 2
        out: list[str] = []
        while True:
            char = self.peek()
            if not char:
                raise self.fail("a $' quote is never closed", start_line)
            self.pos += 1
            if char == "'":
                return Part("text", "".join(out), True)
            if char == "\\" and self.peek():
                out.append(_ANSI_ESCAPES.get(self.peek(), "\\" + self.peek()))
                self.pos += 1
            else:
                self.line += char == "\n"
                out.append(char)


def _closing_paren(text: str, start: int) -> int:
    """The index of the ``)`` closing a ``$(`` whose source starts at ``start``, or -1."""
    depth = 1
    index = start
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char in "'\"":
            index = _quote_end(text, index)
            if index < 0:
                return -1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return -1


def _quote_end(text: str, start: int) -> int:
    quote = text[start]
    index = start + 1
    while index < len(text):
        if text[index] == "\\" and quote == '"':
            index += 2
            continue
        if text[index] == quote:
            return index
        index += 1
    return -1


# --- expansion -------------------------------------------------------------------------


def expand_word(word: Word, lookup: Lookup, *, split: bool = True) -> list[str]:
    """The fields of a word; ``split=False`` (assignments) gives exactly one field."""
    fields: list[str] = []
    current: list[str] = []
    started = False
    for index, part in enumerate(word.parts):
        value = _tilde(part, lookup) if index == 0 else None
        if value is None:
            value = part.value if part.kind == "text" else lookup(part)
        if part.kind == "text" or part.quoted or not split:
            current.append(value)
            started = started or part.quoted or bool(value)
            continue
        pieces = value.split()
        if value[:1].isspace() and started:
            fields.append("".join(current))
            current, started = [], False
        for number, piece in enumerate(pieces):
            if number:
                fields.append("".join(current))
                current = []
            current.append(piece)
            started = True
        if pieces and value[-1:].isspace():
            fields.append("".join(current))
            current, started = [], False
        if len(fields) > MAX_FIELDS:
            raise SpecFormatError(f"a word expands to more than {MAX_FIELDS} words")
    if started or not split:
        fields.append("".join(current))
    return fields


def _tilde(part: Part, lookup: Lookup) -> str | None:
    """``~`` or ``~/...`` at the start of a word is ``$HOME`` (left as is when unset)."""
    if part.kind != "text" or part.quoted or not part.value.startswith("~"):
        return None
    if len(part.value) > 1 and part.value[1] != "/":
        return None
    try:
        home = lookup(Part("param", "HOME", True))
    except Unresolvable:
        return None
    return home + part.value[1:]


def expand_words(words: tuple[Word, ...] | list[Word], lookup: Lookup) -> list[str]:
    """The fields of several words, in order, within ``MAX_FIELDS``."""
    out: list[str] = []
    for word in words:
        out.extend(expand_word(word, lookup))
        if len(out) > MAX_FIELDS:
            raise SpecFormatError(f"the command expands to more than {MAX_FIELDS} words")
    return out
