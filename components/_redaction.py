"""Env values taken out of text that is shown: errors, progress lines, the emulator's messages.

One function for the provider (errors of create, read and delete; the progress lines of a wait,
with the chief's log line) and the emulator (its API's error messages, and tracebacks): a job's
env values are secrets (the ``env_values`` input), and a trainer, a validator or a client
library may print them.

What is taken out, for each value:

* the value wherever it appears, and the forms Python's ``repr`` and JSON give it (a validator
  quotes bad input as ``input_value='a\\nb'``);
* each line of a value of several lines (``\\n``, ``\\r\\n`` or ``\\r``: a PEM key), wherever it
  appears: a trainer that prints the value prints it line by line;
* a value, or line, shorter than ``MIN_INLINE`` characters only where it is a whole line of the
  text. Taken out wherever it appears, a value like ``2`` would turn job ids into
  ``<redacted><redacted>3518...`` and so show, by position, what the value is; where a line is
  the value alone (a trainer printing it), it is taken out. Such a value is no secret worth the
  name (docs/rules.md, "Secrets", says so).

Longer parts go first, so that no part of a longer value is left by a shorter one's removal.
Nothing here imports anything of the project's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["MIN_INLINE", "REDACTED", "redact"]

REDACTED = "<redacted>"
MIN_INLINE = 6
"""Values (or lines of a value) shorter than this are taken out only where they are a whole line."""

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LINE_BREAK_KEPT = re.compile(r"(\r\n|\r|\n)")


def _parts(value: str) -> set[str]:
    """The texts that show ``value``: itself, its escaped forms, each of its lines."""
    parts = {value, repr(value)[1:-1], json.dumps(value)[1:-1]}
    parts.update(line.strip() for line in _LINE_BREAK.split(value))
    return {part for part in parts if part.strip()}


def redact(text: str, values: Iterable[Any]) -> str:
    """``text`` with every env value in ``values`` (None and empty ones skipped) taken out."""
    inline: set[str] = set()
    whole_lines: set[str] = set()
    for value in values:
        if value is None or value == "":
            continue
        for part in _parts(str(value)):
            (inline if len(part) >= MIN_INLINE else whole_lines).add(part)
    for part in sorted(inline, key=len, reverse=True):
        text = text.replace(part, REDACTED)
    if whole_lines:
        # Lines and their breaks, alternating: the breaks stay as they were.
        pieces = _LINE_BREAK_KEPT.split(text)
        for index in range(0, len(pieces), 2):
            line = pieces[index]
            if line.strip() in whole_lines:
                pieces[index] = line.replace(line.strip(), REDACTED)
        text = "".join(pieces)
    return text
