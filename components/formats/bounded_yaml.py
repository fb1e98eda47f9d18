"""YAML (and JSON) parsing with bounds, for documents a pull request may bring.

A 575-byte file of nested aliases ("billion laughs") expands to billions of values once a
converter walks or prints it; 40,000 nested ``[`` crash the interpreter (libyaml's composer
recurses in C). So before a document is composed, its event stream is read once, and the
document is refused when it nests deeper than ``MAX_DEPTH``, uses more than ``MAX_ALIASES``
aliases, or would expand to more than ``MAX_NODES`` values or ``MAX_SCALAR_CHARS`` characters
of text. The scan stops at the first bound crossed, so a hostile document costs little.

A job spec nests about 8 levels and holds a few hundred values; the bounds leave room for the
largest real configs (long lists of categorical values, many env vars) many times over.

A float keeps the text it was written as (``SourceFloat``): YAML reads ``runtimeVersion: 2.10``
as the number 2.1, but a version means "2.10".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import yaml

from .._errors import TrainingJobError

__all__ = [
    "MAX_ALIASES",
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_SCALAR_CHARS",
    "SourceFloat",
    "YamlBoundsError",
    "check_bounds",
    "load_documents",
]

# libyaml's loader when PyYAML was built with it: the same safe subset, several times faster.
_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SourceFloat(float):
    """A float read from YAML, with the text it was written as (``2.10``, not ``2.1``).

    It is a float in every other way: arithmetic, comparison, ``repr`` and JSON.
    """

    __slots__ = ("text",)
    text: str

    def __new__(cls, value: float, text: str) -> SourceFloat:
        made = super().__new__(cls, value)
        made.text = text
        return made

    def __getnewargs__(self) -> tuple[float, str]:  # type: ignore[override]
        return float(self), self.text


def _source_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> SourceFloat:
    return SourceFloat(loader.construct_yaml_float(node), str(node.value))


# The safe loader, except that floats keep their text.
_DOCUMENT_LOADER = cast("type[yaml.SafeLoader]", type("_DocumentLoader", (_SAFE_LOADER,), {}))
_DOCUMENT_LOADER.add_constructor("tag:yaml.org,2002:float", _source_float)

MAX_DEPTH = 64
MAX_ALIASES = 1_000
MAX_NODES = 200_000
MAX_SCALAR_CHARS = 8 << 20


class YamlBoundsError(TrainingJobError, ValueError):
    """The document crosses one of the bounds; the message says which and where."""


@dataclass
class _Collection:
    anchor: str | None
    nodes: int = 1
    chars: int = 0


@dataclass
class _Scan:
    anchors: dict[str, tuple[int, int]] = field(default_factory=dict)
    open_anchors: set[str] = field(default_factory=set)
    stack: list[_Collection] = field(default_factory=list)
    aliases: int = 0
    nodes: int = 0
    chars: int = 0

    def add(self, nodes: int, chars: int, line: int) -> None:
        if self.stack:
            self.stack[-1].nodes += nodes
            self.stack[-1].chars += chars
        self.nodes += nodes
        self.chars += chars
        if self.nodes > MAX_NODES:
            raise YamlBoundsError(
                f"at line {line}: the document expands to more than {MAX_NODES:,} values "
                "(nested aliases?)"
            )
        if self.chars > MAX_SCALAR_CHARS:
            raise YamlBoundsError(
                f"at line {line}: the document expands to more than {MAX_SCALAR_CHARS:,} "
                "characters of text (nested aliases?)"
            )


def _line(event: Any) -> int:
    mark = getattr(event, "start_mark", None)
    return int(mark.line) + 1 if mark is not None else 0


def check_bounds(text: str) -> None:
    """Raise ``YamlBoundsError`` if ``text`` crosses a bound; ``yaml.YAMLError`` if malformed.

    Sizes count what a document expands to: an alias adds the whole size of its anchor.
    """
    scan = _Scan()
    try:
        _scan_events(text, scan)
    except yaml.YAMLError as exc:
        # PyYAML (6.0.4 on) refuses more than 1,000 levels itself, in its scanner, which reads
        # a flow collection ahead before it hands out the first event: the same refusal.
        if "nesting depth" not in str(getattr(exc, "problem", "") or ""):
            raise
        mark = getattr(exc, "problem_mark", None)
        line = int(mark.line) + 1 if mark is not None else 0
        raise YamlBoundsError(f"at line {line}: nested deeper than {MAX_DEPTH} levels") from None


def _scan_events(text: str, scan: _Scan) -> None:
    for event in yaml.parse(text, Loader=_SAFE_LOADER):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(scan.stack) >= MAX_DEPTH:
                raise YamlBoundsError(
                    f"at line {_line(event)}: nested deeper than {MAX_DEPTH} levels"
                )
            scan.add(1, 0, _line(event))
            scan.stack.append(_Collection(event.anchor, nodes=0))
            if event.anchor:
                scan.open_anchors.add(event.anchor)
        elif isinstance(event, yaml.CollectionEndEvent):
            done = scan.stack.pop()
            if scan.stack:  # the parent holds everything nested in it
                scan.stack[-1].nodes += done.nodes
                scan.stack[-1].chars += done.chars
            if done.anchor:
                scan.open_anchors.discard(done.anchor)
                # the collection's own node was counted in its parent when it started
                scan.anchors[done.anchor] = (done.nodes + 1, done.chars)
        elif isinstance(event, yaml.ScalarEvent):
            scan.add(1, len(event.value), _line(event))
            if event.anchor:
                scan.anchors[event.anchor] = (1, len(event.value))
        elif isinstance(event, yaml.AliasEvent):
            scan.aliases += 1
            if scan.aliases > MAX_ALIASES:
                raise YamlBoundsError(f"at line {_line(event)}: more than {MAX_ALIASES:,} aliases")
            if event.anchor in scan.open_anchors:
                raise YamlBoundsError(
                    f"at line {_line(event)}: alias *{event.anchor} refers to a collection "
                    "that contains it (a recursive document)"
                )
            nodes, chars = scan.anchors.get(event.anchor or "", (1, 0))
            scan.add(nodes, chars, _line(event))
        elif isinstance(event, yaml.DocumentEndEvent):
            scan.anchors.clear()


def load_documents(text: str) -> list[Any]:
    """Every non-empty document in ``text``, after ``check_bounds``; floats are ``SourceFloat``.

    Raises ``YamlBoundsError`` or ``yaml.YAMLError``.
    """
    check_bounds(text)
    return [d for d in yaml.load_all(text, Loader=_DOCUMENT_LOADER) if d is not None]
