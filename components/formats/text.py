"""A spec file's text and its one YAML (or JSON) document, read within bounds.

Files are read only when they are regular files of at most ``MAX_SPEC_BYTES``
(``components._files``), and YAML only within the bounds of ``bounded_yaml``: whatever a pull
request brings is refused with a ``SpecFormatError`` (exit 2), never read until memory runs out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .._errors import SpecFormatError
from .._files import FileReadError, read_text_capped
from ..rules._violations import clipped
from .bounded_yaml import YamlBoundsError, load_documents

__all__ = ["MAX_SPEC_BYTES", "clipped", "parse_document", "read_text"]

MAX_SPEC_BYTES = 1 << 20


def read_text(path: Path, *, what: str = "spec file") -> str:
    """The text of a spec file: a regular UTF-8 file of at most ``MAX_SPEC_BYTES``."""
    try:
        return read_text_capped(path, MAX_SPEC_BYTES, what=what)
    except FileReadError as exc:
        raise SpecFormatError(str(exc)) from None


def parse_document(text: str, origin: str) -> Any:
    """Parse YAML (JSON is YAML too); raises ``SpecFormatError`` with the line of the error."""
    try:
        documents = load_documents(text)
    except YamlBoundsError as exc:
        raise SpecFormatError(f"{origin}: refused: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise SpecFormatError(f"{origin}: not valid YAML{where}: {problem}") from None
    except (ValueError, RecursionError) as exc:
        raise SpecFormatError(f"{origin}: not valid YAML: {exc}") from None
    if len(documents) != 1:
        raise SpecFormatError(f"{origin}: expected one YAML document, found {len(documents)}")
    return documents[0]
