"""The emulator's own redaction of environment values in the text it shows (errors, logs).

A job's ``env`` values are secrets: an error message that quotes a field, or a traceback that
quotes the request, must not carry them. For every value, these are replaced by ``<redacted>``:

* the value itself, and the escaped forms a message may quote it in (Python ``repr``, JSON);
* each line of a value that has several (a PEM key is printed line by line);
* a value, or a line of one, shorter than :data:`SHORT` characters only where it makes up a
  whole line of the text: replaced everywhere, a value such as ``1`` would blank digits of job
  ids and so tell what it is by where the gaps are.

Longer pieces are replaced first, so a shorter piece never leaves part of a longer one behind.
This module is the emulator's: it imports nothing of the project it serves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

__all__ = ["REDACTED", "SHORT", "redact"]

REDACTED = "<redacted>"
SHORT = 6
"""Pieces shorter than this are replaced only where they are a whole line of the text."""

_BREAK = re.compile(r"\r\n|\r|\n")
_SPLIT_KEEPING_BREAKS = re.compile(r"(\r\n|\r|\n)")


def _pieces(value: str) -> set[str]:
    """The strings that would show ``value``: itself, its escaped forms and its lines."""
    found = {value, repr(value)[1:-1], json.dumps(value)[1:-1]}
    found.update(line.strip() for line in _BREAK.split(value))
    return {piece for piece in found if piece.strip()}


def redact(text: str, values: Iterable[str | None]) -> str:
    """``text`` with every non-empty value of ``values`` (and its escaped forms) replaced."""
    anywhere: set[str] = set()
    line_only: set[str] = set()
    for value in values:
        if not value:
            continue
        for piece in _pieces(value):
            (anywhere if len(piece) >= SHORT else line_only).add(piece)
    for piece in sorted(anywhere, key=len, reverse=True):
        text = text.replace(piece, REDACTED)
    if not line_only:
        return text
    # Even indices are lines, odd ones the breaks between them (kept as they were).
    parts = _SPLIT_KEEPING_BREAKS.split(text)
    for i in range(0, len(parts), 2):
        stripped = parts[i].strip()
        if stripped in line_only:
            parts[i] = parts[i].replace(stripped, REDACTED)
    return "".join(parts)
