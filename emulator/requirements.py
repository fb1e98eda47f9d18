"""Requirements a job's packages declare: read within bounds, and checked before pip sees them.

**Where pip may get a requirement.** From the package index, as pip is configured (``pip.conf``,
``PIP_INDEX_URL``, ``PIP_FIND_LINKS``...): that is the service user's choice. A requirement that
is a *direct reference* is the package's choice instead, and pip follows it wherever it leads: a
URL to any host, a VCS URL (``git+https://...``), or a local directory that pip then reads and
builds in place (writing ``build/`` and ``*.egg-info`` into it), symlinks and all. So every direct
reference is refused (:func:`check_reference`), also a ``file:`` one into the allowed roots: pip
would read that directory itself, unchecked, and it reads the direct references of what is
installed again each time it resolves. A package of the job that needs another local package
requires it by name, and the job lists both in ``package_uris`` (each is checked and copied, as
Vertex AI installs each one it is given). :mod:`emulator.pyenv` checks what packages declare
before pip runs, and what pip's build of a package says it requires before pip installs any of
it.

**Reading within bounds.** Metadata comes from the job: a requirement whose marker nests
thousands of parentheses exhausts the stack of ``packaging``'s parser, and so does a
``pyproject.toml`` of nested arrays or inline tables for ``tomllib``, whose memory also grows with
the square of the number of parts of a dotted key (10,000 parts: 400 MB; a 1 MB file holds far
more). :func:`parse_requirement` and :func:`load_toml` measure before they parse, and every
problem is a :class:`RequirementError` (or :class:`TomlError`) whose message is meant for the API
caller.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from packaging.requirements import InvalidRequirement, Requirement

from .paths import PackageError, check_allowed

__all__ = [
    "MAX_KEY_PARTS",
    "MAX_NESTING",
    "RequirementError",
    "TomlError",
    "check_reference",
    "load_toml",
    "parse_requirement",
    "printable",
]

# Real pyproject.toml files nest a few levels and their longest keys have a handful of parts
# (tool.hatch.build.targets.wheel.hooks.custom: 7); these bounds keep tomllib's stack and memory
# small for any file of the size packages.MAX_METADATA_BYTES lets through.
MAX_NESTING = 32
MAX_KEY_PARTS = 32
# A marker nests this deep at most (packaging's parser recurses once or twice per parenthesis).
_MAX_MARKER_NESTING = 32
_MAX_SHOWN = 300
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")  # a marker's string values

# TOML, as far as nesting goes: comments and the four kinds of strings are skipped whole (a
# multi-line string ends at the first """ or ''', which may be followed by one or two more quotes
# that belong to it, as tomllib reads it); brackets nest; dots outside strings separate the parts
# of a dotted key (or are the point of a float, one per value).
_TOML_TOKEN = re.compile(
    r"""
      \#[^\n]*
    | \"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"(?:""?)?
    | "(?:[^"\\\n]|\\.)*"
    | '''(?:[^']|'(?!''))*'''(?:''?)?
    | '[^'\n]*'
    | (?P<open>[\[{])
    | (?P<close>[\]}])
    | (?P<dot>\.)
    | (?P<separator>[=,\n])
    | (?P<quote>["'])
    | [^"'\#\[\]{}.=,\n]+
    """,
    re.VERBOSE | re.DOTALL,
)


class RequirementError(ValueError):
    """A requirement that cannot be used (a direct reference, or unreadable); for the API caller."""


class TomlError(ValueError):
    """A TOML file that cannot be read; the message says why (for the API caller)."""


def printable(text: str) -> str:
    """``text`` as a message may quote it: one printable line, at most a few hundred characters."""
    text = _CONTROL.sub("?", text)
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "..."


def parse_requirement(text: str) -> Requirement | None:
    """``text`` as a PEP 508 requirement; None when it is not one (pip says why, as before).

    RequirementError when it nests too deeply to be read (pip's own parser would crash on it).
    """
    if _parenthesis_depth(text) > _MAX_MARKER_NESTING:
        raise RequirementError(
            f"the requirement {printable(text)!r} could not be read (nested too deeply: more than "
            f"{_MAX_MARKER_NESTING} levels of parentheses)"
        )
    if _CONTROL.search(text):
        return None  # no PEP 508 requirement holds one
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


def _parenthesis_depth(text: str) -> int:
    depth = deepest = 0
    for match in re.finditer(r"[()]", _QUOTED.sub("", text)):
        depth = depth + 1 if match.group() == "(" else max(depth - 1, 0)
        deepest = max(deepest, depth)
    return deepest


def check_reference(req: Requirement, text: str, roots: Sequence[Path]) -> None:
    """Nothing for a requirement from the package index; RequirementError naming ``text`` (the
    requirement as declared) for a direct reference, saying where it leads (see the module doc)."""
    if req.url is None:
        return
    refused = f"{printable(text)!r} is a direct reference"
    parts = urlsplit(req.url)
    path = unquote(parts.path)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        raise RequirementError(
            f"{refused} to {printable(req.url)}, which pip would fetch from there; requirements "
            "come from the package index pip is configured with"
        )
    if not path.startswith("/") or _CONTROL.search(path):
        raise RequirementError(f"{refused} to {printable(req.url)}, which names no absolute path")
    try:
        check_allowed(Path(path), roots)
    except PackageError as exc:
        raise RequirementError(f"{refused}: {exc}") from None
    raise RequirementError(
        f"{refused}, which pip would read and build itself, unchecked; list that package in "
        "the pool's package_uris and require it by its name"
    )


def load_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads(text)``, once the text is known to nest at most :data:`MAX_NESTING`
    levels and to have keys of at most :data:`MAX_KEY_PARTS` parts; TomlError otherwise."""
    _check_toml_shape(text)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlError(f"not valid TOML: {exc}") from None
    except (RecursionError, MemoryError):  # not expected within the bounds; never a crash
        raise TomlError("nested too deeply") from None


def _check_toml_shape(text: str) -> None:
    depth = dots = 0
    for token in _TOML_TOKEN.finditer(text):
        kind = token.lastgroup
        if kind == "open":
            depth, dots = depth + 1, 0
            if depth > MAX_NESTING:
                raise TomlError(f"nested too deeply: more than {MAX_NESTING} levels of [ and {{")
        elif kind == "close":
            depth, dots = max(depth - 1, 0), 0
        elif kind == "separator":
            dots = 0
        elif kind == "dot":
            dots += 1
            if dots >= MAX_KEY_PARTS:
                raise TomlError(
                    f"nested too deeply: a dotted key of more than {MAX_KEY_PARTS} parts"
                )
        elif kind == "quote":
            return  # a string that never ends: tomllib stops here, so does the measure
