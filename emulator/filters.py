"""The ``filter`` of ListCustomJobs: a subset of Google's AIP-160 filter language.

Supported (as Vertex documents for custom jobs):

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
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from emulator import protos

__all__ = ["compile_filter"]

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

_TIME_FIELDS = {
    "create_time": "create_time",
    "createTime": "create_time",
    "update_time": "update_time",
    "updateTime": "update_time",
    "start_time": "start_time",
    "startTime": "start_time",
    "end_time": "end_time",
    "endTime": "end_time",
}


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


def _glob(pattern: str) -> Callable[[str], bool]:
    return lambda s: fnmatch.fnmatchcase(s, pattern.replace("[", "[[]"))


def _compare(field: str, op: str, value: str) -> Predicate:
    if field.startswith("labels."):
        key = field[len("labels.") :]
        if not key:
            raise ValueError("filter: 'labels.' needs a key, as in labels.team=vision")
        if op == ":":
            if value == "*":
                return lambda job: key in job.labels
            return lambda job: job.labels.get(key) == value
        if op == "=":
            return lambda job: job.labels.get(key) == value
        if op == "!=":
            return lambda job: job.labels.get(key) != value
        raise ValueError(f"filter: operator {op!r} is not supported for {field}")
    if field == "state":
        states = protos.STATE_NUMBERS
        if value not in states:
            raise ValueError(f"filter: unknown state {value!r} (use e.g. JOB_STATE_RUNNING)")
        state = states[value]
        if op == "=":
            return lambda job: job.state == state
        if op == "!=":
            return lambda job: job.state != state
        raise ValueError(f"filter: operator {op!r} is not supported for state")
    if field in ("display_name", "displayName"):
        if op == "=":
            return lambda job: job.display_name == value
        if op == "!=":
            return lambda job: job.display_name != value
        if op == ":":
            match = _glob(value)
            return lambda job: match(job.display_name)
        raise ValueError(f"filter: operator {op!r} is not supported for {field}")
    if field in _TIME_FIELDS:
        attr = _TIME_FIELDS[field]
        when = _parse_time(value)
        ops: dict[str, Callable[[float, float], bool]] = {
            "=": lambda a, b: a == b,
            "!=": lambda a, b: a != b,
            "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b,
            ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b,
        }
        if op not in ops:
            raise ValueError(f"filter: operator {op!r} is not supported for {field}")
        cmp = ops[op]

        def check_time(job: Any) -> bool:
            if not job.HasField(attr):
                return False
            return cmp(protos.ts_seconds(getattr(job, attr)), when)

        return check_time
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

    def parse(self) -> Predicate:
        pred = self.and_expr()
        tok = self.peek()
        if tok is not None:
            raise ValueError(f"filter: unexpected {tok.text!r} at {tok.pos}")
        return pred

    # AIP-160 gives OR a higher precedence than AND: `a AND b OR c` is `a AND (b OR c)`.
    def and_expr(self) -> Predicate:
        parts = [self.or_expr()]
        while (tok := self.peek()) is not None and tok.kind != "rparen":
            if tok.kind == "AND":
                self.take()
            parts.append(self.or_expr())
        return parts[0] if len(parts) == 1 else (lambda job: all(p(job) for p in parts))

    def or_expr(self) -> Predicate:
        parts = [self.unary()]
        while (tok := self.peek()) is not None and tok.kind == "OR":
            self.take()
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else (lambda job: any(p(job) for p in parts))

    def unary(self) -> Predicate:
        tok = self.peek()
        if tok is not None and tok.kind in ("NOT", "minus"):
            self.take()
            self.enter(tok)
            inner = self.unary()
            self.depth -= 1
            return lambda job: not inner(job)
        return self.primary()

    def primary(self) -> Predicate:
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
        return _compare(tok.text, op.text, _unquote(value))


def compile_filter(text: str) -> Predicate:
    """Compile a filter string into a predicate over CustomJob protos (empty: match all)."""
    if len(text) > MAX_FILTER_LENGTH:
        raise ValueError(
            f"filter: at most {MAX_FILTER_LENGTH} characters are supported (got {len(text)})"
        )
    if not text.strip():
        return lambda job: True
    return _Parser(_tokenize(text)).parse()
