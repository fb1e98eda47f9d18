"""Whether a shell test holds, from its words as bash expands them, where that is known here.

A script's ``continue``/``break`` runs under a condition (``[ "$LR" = 0.1 ] && continue``,
``if [[ $N -gt 2 ]]; then break; fi``); this module judges the condition's test command,
never running anything: ``[ ... ]``, ``[[ ... ]]`` and ``test ...`` with string ``=``/``==``/
``!=``, integer ``-eq -ne -lt -le -gt -ge``, ``-z``/``-n``, a lone word and ``!``; the
builtins ``true``, ``false`` and ``:``; and ``&&``/``||`` chains of them (``chain_verdict``).
Anything else (a file test, ``-a``/``-o``, a command that would have to run) is a verdict of
None with a sentence saying why, and the caller reads on as if the condition were unknown.
"""

from __future__ import annotations

import fnmatch
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["Verdict", "chain_verdict", "command_verdict"]

_INTEGER = re.compile(r"\s*[+-]?\d{1,18}\s*")
_NUMERIC: dict[str, Callable[[int, int], bool]] = dict(
    zip(
        ("-eq", "-ne", "-lt", "-le", "-gt", "-ge"),
        (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge),
        strict=True,
    )
)
_FILE_TESTS = frozenset(f"-{c}" for c in "abcdefghknoprstuwxGLNORSv") - {"-n"}
_BUILTINS = {"true": True, ":": True, "false": False}


@dataclass(frozen=True)
class Verdict:
    """Whether a condition holds (``value``; None: not known here, ``why`` says so)."""

    value: bool | None
    why: str = ""

    def negated(self) -> Verdict:
        return self if self.value is None else Verdict(not self.value)


def command_verdict(program: str, args: Sequence[str], globs: Sequence[bool] = ()) -> Verdict:
    """The verdict of the command ``program args`` as a condition: ``[``/``[[`` (their closing
    bracket among ``args``), ``test``, ``true``/``false``/``:``; ``globs``: for ``[[``, which
    words hold an unquoted glob (the right side of ``==``/``!=`` is then a pattern)."""
    if program in _BUILTINS:
        return Verdict(_BUILTINS[program])
    closing = {"[": "]", "[[": "]]"}.get(program)
    if closing is not None:
        if not args or args[-1] != closing:
            return Verdict(None, f"`{program}` has no closing `{closing}` here")
        args, globs = args[:-1], globs[: len(args) - 1]
    elif program != "test":
        return Verdict(None, f"`{program}` would have to run")
    return _expression(list(args), list(globs) if program == "[[" else [])


def _expression(args: list[str], globs: list[bool]) -> Verdict:
    """POSIX ``test`` by its number of arguments (bash's rule), ``!`` in front negating."""
    if args and args[0] == "!" and len(args) in (2, 3, 4):
        return _expression(args[1:], globs[1:]).negated()
    if not args:
        return Verdict(False)
    if len(args) == 1:
        return Verdict(bool(args[0]))
    if len(args) == 2:
        return _unary(args[0], args[1])
    if len(args) == 3:
        pattern = len(globs) > 2 and globs[2]
        return _binary(args[0], args[1], args[2], pattern=pattern)
    return Verdict(None, "a test of more than one comparison (`-a`, `-o`) is not evaluated here")


def _unary(op: str, operand: str) -> Verdict:
    if op == "-z":
        return Verdict(not operand)
    if op == "-n":
        return Verdict(bool(operand))
    if op in _FILE_TESTS:
        return Verdict(None, f"`{op}` tests a file or the shell, which is not known here")
    return Verdict(None, f"`{op}` is not a test evaluated here")


def _binary(left: str, op: str, right: str, *, pattern: bool) -> Verdict:
    if op in ("=", "==", "!="):
        same = fnmatch.fnmatchcase(left, right) if pattern else left == right
        return Verdict(same if op != "!=" else not same)
    compare = _NUMERIC.get(op)
    if compare is None:
        return Verdict(None, f"`{op}` is not a comparison evaluated here")
    if not (_INTEGER.fullmatch(left) and _INTEGER.fullmatch(right)):
        return Verdict(None, f"`{left} {op} {right}` compares values that are not integers")
    return Verdict(bool(compare(int(left), int(right))))


def chain_verdict(links: Sequence[tuple[str, Verdict]]) -> Verdict:
    """An ``&&``/``||`` list's status: each link's operator before it (``&&``, ``||``; the
    first's is ignored) and verdict, left to right as bash runs them (a known first side
    that decides the list leaves the other unrun)."""
    status = links[0][1] if links else Verdict(True)
    for op, verdict in links[1:]:
        runs = status.value is True if op == "&&" else status.value is False
        if status.value is None:
            decided = verdict.value is (op == "||")  # `x || true` holds, `x && false` fails
            status = verdict if decided else status
        elif runs:
            status = verdict
    return status
