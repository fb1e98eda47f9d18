"""What a ``while read`` loop of a script reads, when the script gives it as text.

``while read LR; do ... done < lrs.txt`` runs its body once per line of its input, ``read``
setting its variables from each line. Where that input is written in the script (a file beside
it, a here-document, ``printf '%s\\n' 0.01 0.1 |``, ``echo ... |``), its lines are known
without running anything: this module reads ``read``'s options, splits a line as ``read``
splits it (``IFS``, ``-r``), and gives the output of the two builtins a pipe may feed it
(``printf`` and ``echo``), within ``MAX_INPUT_LINES``. Anything else is for the caller to name
as not known (``components.formats.script``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "DEFAULT_IFS",
    "MAX_INPUT_BYTES",
    "MAX_INPUT_LINES",
    "ReadOptions",
    "echo_output",
    "input_lines",
    "printf_output",
    "read_options",
    "split_line",
]

DEFAULT_IFS = " \t\n"
MAX_INPUT_BYTES = 1 << 16
"""The most text a loop's input may hold (a file beside the script, a here-document)."""
MAX_INPUT_LINES = 10_000
_VALUE_OPTIONS = frozenset("apdtnNiu")
"""The options of ``read`` that take a value (``-p PROMPT``, ``-t SECONDS``, ``-u FD``...)."""
_PRINTF_DIRECTIVE = re.compile(r"%(?:%|[-+ #0]*\d*(?:\.\d+)?([sdifgqbxXoeEc]))")
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "a": "\a", "r": "\r", "e": "\x1b", "'": "'"}
_ESCAPE = re.compile(r"\\([ntr\\ae'\"]|0[0-7]{0,3})")


@dataclass(frozen=True)
class ReadOptions:
    """``read``'s variables (``REPLY`` when none is named) and the options that change what a
    line gives them: ``-r`` (backslashes kept), ``-u FD`` (the descriptor read), ``-p``
    (a prompt: the terminal), ``-a NAME`` (an array) and ``-d`` (a delimiter other than a
    newline)."""

    names: tuple[str, ...]
    raw: bool = False
    fd: str = "0"
    prompted: bool = False
    array: str = ""
    delimiter: str | None = None


def read_options(literals: list[str]) -> ReadOptions:
    """The options and variable names of ``read`` (its words after ``read``)."""
    names: list[str] = []
    values: dict[str, str] = {}
    flags: set[str] = set()
    index = 0
    while index < len(literals):
        option = literals[index]
        if option == "--":
            names.extend(literals[index + 1 :])
            break
        if option.startswith("-") and len(option) > 1:
            flags.update(option[1:])
            # `-p PROMPT`, `-t 5`, `-rp PROMPT`: the last letter may take the next word.
            if option[-1] in _VALUE_OPTIONS:
                values[option[-1]] = literals[index + 1] if index + 1 < len(literals) else ""
                index += 2
            else:
                index += 1
            continue
        names.append(option)
        index += 1
    return ReadOptions(
        tuple(names) or (() if "a" in values else ("REPLY",)),
        raw="r" in flags,
        fd=values.get("u", "0") or "0",
        prompted="p" in flags,
        array=values.get("a", ""),
        delimiter=values.get("d"),
    )


def input_lines(text: str, *, last_unterminated: bool) -> list[str]:
    """The lines ``read`` reads from ``text``, one per run of the loop's body. A last line
    with no newline ends ``read`` with a failure (bash leaves the loop without running its
    body for it) unless the condition goes on (``while read X || [ -n "$X" ]``:
    ``last_unterminated``)."""
    lines = text.split("\n")
    tail = lines.pop()
    if tail and last_unterminated:
        lines.append(tail)
    return lines


def split_line(line: str, count: int, ifs: str, raw: bool) -> list[str]:
    """The values ``read NAME...`` gives its ``count`` names for one line, as bash splits it:
    fields separated by ``IFS`` characters (blank ones collapsing and trimmed), the last name
    taking the rest of the line; without ``-r`` a backslash quotes the next character."""
    hidden: dict[str, str] = {}
    if not raw:
        # An escaped character is never a separator: it stands hidden while the line splits.
        def hide(match: re.Match[str]) -> str:
            key = hidden.setdefault(match.group(1), chr(0xF0000 + len(hidden)))
            return key

        line = re.sub(r"\\(.)", hide, line.replace("\\\n", ""))
    blanks = "".join(c for c in ifs if c in " \t\n")
    others = "".join(c for c in ifs if c not in blanks)
    line = line.strip(blanks) if blanks else line
    around = f"[{re.escape(blanks)}]*" if blanks else ""
    # A non-blank IFS character is one separator, with the blanks around it.
    patterns = [f"{around}[{re.escape(others)}]{around}"] if others else []
    patterns += [f"[{re.escape(blanks)}]+"] if blanks else []
    fields = [line]
    if patterns and line:
        fields = re.split("|".join(patterns), line, maxsplit=max(count - 1, 0))
    if len(fields) == count and blanks:
        fields[-1] = fields[-1].rstrip(blanks)
    shown = {key: char for char, key in hidden.items()}
    fields = [
        re.sub("[\U000f0000-\U000fffff]", lambda m: shown.get(m.group(), m.group()), f)
        for f in fields
    ]
    return fields + [""] * (count - len(fields))


def printf_output(arguments: list[str]) -> str | None:
    """What ``printf FORMAT ARG...`` writes, for formats of ``%s``/``%d``-like directives
    and escapes (the format reused until the arguments are spent, as bash does); None for
    one not read here (``-v``, ``%b``, a width taken from an argument)."""
    if not arguments or arguments[0].startswith("-") or "*" in arguments[0]:
        return None
    form, values = arguments[0], arguments[1:]
    directives = [m for m in _PRINTF_DIRECTIVE.finditer(form) if m.group() != "%%"]
    if any(m.group(1) in ("b", "q") for m in directives) or "%" in _PRINTF_DIRECTIVE.sub("", form):
        return None
    out: list[str] = []
    used = 0
    while True:
        pieces: list[str] = []
        last = 0
        for match in _PRINTF_DIRECTIVE.finditer(form):
            pieces.append(_unescaped(form[last : match.start()]))
            last = match.end()
            if match.group() == "%%":
                pieces.append("%")
                continue
            pieces.append(values[used] if used < len(values) else "")
            used += 1
        pieces.append(_unescaped(form[last:]))
        out.append("".join(pieces))
        if not directives or used >= len(values) or len(out) > MAX_INPUT_LINES:
            return "".join(out)


def echo_output(arguments: list[str]) -> str:
    """What ``echo [-n] [-e] ARG...`` writes (``-e``: escapes read)."""
    newline, escapes = "\n", False
    while arguments and re.fullmatch(r"-[neE]+", arguments[0]):
        newline = "" if "n" in arguments[0] else newline
        escapes = "e" in arguments[0] or (escapes and "E" not in arguments[0])
        arguments = arguments[1:]
    text = " ".join(arguments)
    return (_unescaped(text) if escapes else text) + newline


def _unescaped(text: str) -> str:
    """``\\n``, ``\\t``, ``\\\\`` and the like, as ``printf``'s format and ``echo -e`` read them."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code.startswith("0"):
            return chr(int(code, 8) if len(code) > 1 else 0)
        return _ESCAPES.get(code, "\\" + code)

    return _ESCAPE.sub(one, text)
