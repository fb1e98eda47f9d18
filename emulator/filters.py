"""The ``filter`` of ListCustomJobs: a subset of Google's AIP-160 filter language.

What Vertex documents (the comment of ``ListCustomJobsRequest.filter`` and
``ListHyperparameterTuningJobsRequest.filter`` in googleapis ``google/cloud/aiplatform/v1/
job_service.proto``, shipped in the client's ``aiplatform_v1/types/job_service.py``; read
2026-11-25): ``display_name`` with ``=``, ``!=`` and the ``:`` wildcard, ``state`` with ``=`` and
``!=``, ``create_time`` with ``= != < <= > >=`` and an RFC 3339 value, ``labels.key=value`` and
``labels.key:*``, and ``AND``, ``OR``, ``NOT`` in its examples. It calls this "the standard list
filter", AIP-160's, from which the rest below comes (parentheses, ``-``, ``!=`` and ``:`` of a
label, the other three times, camelCase field names); docs/emulator.md's fidelity table says so.

Supported:

* ``labels.<key>=<value>``, ``labels.<key>!=<value>``, ``labels.<key>:*`` (key present),
  ``labels.<key>:<value>``;
* ``state=JOB_STATE_RUNNING`` / ``state!=...``;
* ``display_name=<value>`` / ``!=``, and ``display_name:<pattern>`` where ``*`` matches any run of
  characters (``display_name:"train-*"``); ``displayName`` is accepted too;
* ``create_time``, ``update_time``, ``start_time``, ``end_time`` compared (``= != < <= > >=``)
  with an RFC 3339 timestamp in quotes;
* ``AND``, ``OR``, ``NOT`` (and ``-`` as a prefix for NOT), juxtaposition as AND, parentheses;
  as in AIP-160, OR binds tighter than AND.

Values are bare words or double-quoted strings. A malformed filter raises ``ValueError`` with a
message that names the offending part; the service turns it into 400 INVALID_ARGUMENT. So does a
filter longer than :data:`MAX_FILTER_LENGTH` characters or nested deeper than :data:`MAX_DEPTH`
levels (parentheses, ``NOT`` and ``-``): the parser is recursive, and Python's stack is not.

:func:`parse_filter` gives the filter as a tree of :data:`Node` (what the store compiles into SQL
over its indexes); :func:`to_predicate` turns that tree into a predicate over job protos, which is
the reference meaning of every filter (the store's SQL must select exactly the jobs it accepts).
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from . import protos

__all__ = [
    "And",
    "DisplayName",
    "Label",
    "Node",
    "Not",
    "Or",
    "State",
    "Time",
    "compile_filter",
    "glob_match",
    "parse_filter",
    "to_predicate",
]

Predicate = Callable[[Any], bool]

MAX_FILTER_LENGTH = 8192
MAX_DEPTH = 32

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<lparen>\() | (?P<rparen>\)) |
        (?P<op><=|>=|!=|=|<|>|:) |
        (?P<string>"(?:[^"\\]|\\.)*") |
        (?P<minus>-(?=[(A-Za-z_])) |
        (?P<word>[\w.\-*]+)
    )""",
    re.VERBOSE,
)

# Filter field -> the job's Timestamp field (also the store's column of that time).
TIME_FIELDS = {
    "create_time": "create_time",
    "createTime": "create_time",
    "update_time": "update_time",
    "updateTime": "update_time",
    "start_time": "start_time",
    "startTime": "start_time",
    "end_time": "end_time",
    "endTime": "end_time",
}

TimeOp = Literal["=", "!=", "<", "<=", ">", ">="]
_TIME_OPS: dict[str, Callable[[float, float], bool]] = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


# -- the tree ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Label:
    """``labels.<key>``: ``=`` the value (also ``:value``), ``!=`` it, or ``has`` the key (``:*``).

    ``!=`` holds for a job without the key too (its value is not ``value``).
    """

    key: str
    op: Literal["=", "!=", "has"]
    value: str = ""


@dataclass(frozen=True)
class State:
    """``state=`` (``equal``) or ``state!=`` a :class:`protos.JobState` number."""

    state: int
    equal: bool = True


@dataclass(frozen=True)
class DisplayName:
    """``display_name``: ``=``, ``!=``, or ``glob`` (``:pattern``, see :func:`glob_match`)."""

    op: Literal["=", "!=", "glob"]
    value: str


@dataclass(frozen=True)
class Time:
    """``<field> <op> <timestamp>``, ``field`` a Timestamp field of the job (``create_time``).

    A job whose field is unset matches no comparison (``!=`` included).
    """

    field: str
    op: TimeOp
    seconds: float


@dataclass(frozen=True)
class And:
    """Every part holds (two or more parts)."""

    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    """Some part holds (two or more parts)."""

    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Not:
    """The inner filter does not hold."""

    inner: Node


Node = Label | State | DisplayName | Time | And | Or | Not


# -- parsing ----------------------------------------------------------------------------------


@dataclass
class _Tok:
    kind: str
    text: str
    pos: int


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"filter: unexpected character {text[pos:].lstrip()[:1]!r} at {pos}")
        group = m.lastgroup or ""
        value = m.group(group)
        kind = value if group == "word" and value in ("AND", "OR", "NOT") else group
        toks.append(_Tok(kind, value, m.start(group)))
        pos = m.end()
    return toks


def _unquote(tok: _Tok) -> str:
    if tok.kind == "string":
        return re.sub(r"\\(.)", r"\1", tok.text[1:-1])
    return tok.text


def _parse_time(value: str) -> float:
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"filter: {value!r} is not an RFC 3339 timestamp") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


def _comparison(field: str, op: str, value: str) -> Node:
    if field.startswith("labels."):
        key = field[len("labels.") :]
        if not key:
            raise ValueError("filter: 'labels.' needs a key, as in labels.team=vision")
        if op == ":":
            return Label(key, "has") if value == "*" else Label(key, "=", value)
        if op in ("=", "!="):
            return Label(key, "=" if op == "=" else "!=", value)
        raise ValueError(f"filter: operator {op!r} is not supported for {field}")
    if field == "state":
        states = protos.STATE_NUMBERS
        if value not in states:
            raise ValueError(f"filter: unknown state {value!r} (use e.g. JOB_STATE_RUNNING)")
        if op in ("=", "!="):
            return State(states[value], equal=op == "=")
        raise ValueError(f"filter: operator {op!r} is not supported for state")
    if field in ("display_name", "displayName"):
        if op in ("=", "!="):
            return DisplayName("=" if op == "=" else "!=", value)
        if op == ":":
            return DisplayName("glob", value)
        raise ValueError(f"filter: operator {op!r} is not supported for {field}")
    if field in TIME_FIELDS:
        when = _parse_time(value)
        if op not in _TIME_OPS:
            raise ValueError(f"filter: operator {op!r} is not supported for {field}")
        time_op: TimeOp = op  # type: ignore[assignment]  # checked just above
        return Time(TIME_FIELDS[field], time_op, when)
    raise ValueError(
        f"filter: unsupported field {field!r} (supported: labels.<key>, state, display_name, "
        "create_time, update_time, start_time, end_time)"
    )


class _Parser:
    def __init__(self, toks: list[_Tok]) -> None:
        self.toks = toks
        self.i = 0
        self.depth = 0

    def enter(self, tok: _Tok) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ValueError(
                f"filter: nested more than {MAX_DEPTH} levels deep (parentheses, NOT and '-') "
                f"at {tok.pos}"
            )

    def peek(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, expecting: str = "more") -> _Tok:
        tok = self.peek()
        if tok is None:
            raise ValueError(f"filter: unexpected end of filter, expected {expecting}")
        self.i += 1
        return tok

    def parse(self) -> Node:
        node = self.and_expr()
        tok = self.peek()
        if tok is not None:
            raise ValueError(f"filter: unexpected {tok.text!r} at {tok.pos}")
        return node

    # AIP-160 gives OR a higher precedence than AND: `a AND b OR c` is `a AND (b OR c)`.
    def and_expr(self) -> Node:
        parts = [self.or_expr()]
        while (tok := self.peek()) is not None and tok.kind != "rparen":
            if tok.kind == "AND":
                self.take()
            parts.append(self.or_expr())
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def or_expr(self) -> Node:
        parts = [self.unary()]
        while (tok := self.peek()) is not None and tok.kind == "OR":
            self.take()
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def unary(self) -> Node:
        tok = self.peek()
        if tok is not None and tok.kind in ("NOT", "minus"):
            self.take()
            self.enter(tok)
            inner = self.unary()
            self.depth -= 1
            return Not(inner)
        return self.primary()

    def primary(self) -> Node:
        tok = self.take("a comparison such as labels.team=vision")
        if tok.kind == "lparen":
            self.enter(tok)
            inner = self.and_expr()
            close = self.take("')'")
            if close.kind != "rparen":
                raise ValueError(f"filter: expected ')' at {close.pos}")
            self.depth -= 1
            return inner
        if tok.kind != "word":
            raise ValueError(f"filter: expected a field name at {tok.pos}, got {tok.text!r}")
        op = self.take(f"an operator after {tok.text!r}")
        if op.kind != "op":
            raise ValueError(f"filter: expected an operator after {tok.text!r} at {op.pos}")
        value = self.take(f"a value after {tok.text}{op.text}")
        if value.kind not in ("word", "string"):
            raise ValueError(f"filter: expected a value after {tok.text}{op.text} at {value.pos}")
        return _comparison(tok.text, op.text, _unquote(value))


def parse_filter(text: str) -> Node | None:
    """The filter as a tree; None for an empty filter (every job). ``ValueError`` if malformed."""
    if len(text) > MAX_FILTER_LENGTH:
        raise ValueError(
            f"filter: at most {MAX_FILTER_LENGTH} characters are supported (got {len(text)})"
        )
    if not text.strip():
        return None
    return _Parser(_tokenize(text)).parse()


# -- meaning ----------------------------------------------------------------------------------


def glob_match(name: str, pattern: str) -> bool:
    """``display_name:<pattern>``: ``*`` is any run of characters, ``?`` one; all else literal."""
    return fnmatch.fnmatchcase(name, pattern.replace("[", "[[]"))


def to_predicate(node: Node | None) -> Predicate:
    """The filter as a predicate over job protos (None: every job matches)."""
    if node is None:
        return lambda job: True
    if isinstance(node, Label):
        key, value = node.key, node.value
        if node.op == "has":
            return lambda job: key in job.labels
        if node.op == "=":
            return lambda job: job.labels.get(key) == value
        return lambda job: job.labels.get(key) != value
    if isinstance(node, State):
        state = node.state
        if node.equal:
            return lambda job: job.state == state
        return lambda job: job.state != state
    if isinstance(node, DisplayName):
        text = node.value
        if node.op == "=":
            return lambda job: job.display_name == text
        if node.op == "!=":
            return lambda job: job.display_name != text
        return lambda job: glob_match(job.display_name, text)
    if isinstance(node, Time):
        field, cmp, when = node.field, _TIME_OPS[node.op], node.seconds

        def check_time(job: Any) -> bool:
            if not job.HasField(field):
                return False
            return cmp(protos.ts_seconds(getattr(job, field)), when)

        return check_time
    if isinstance(node, And):
        parts = [to_predicate(p) for p in node.parts]
        return lambda job: all(p(job) for p in parts)
    if isinstance(node, Or):
        parts = [to_predicate(p) for p in node.parts]
        return lambda job: any(p(job) for p in parts)
    inner = to_predicate(node.inner)
    return lambda job: not inner(job)


def compile_filter(text: str) -> Predicate:
    """Compile a filter string into a predicate over CustomJob protos (empty: match all)."""
    return to_predicate(parse_filter(text))
