"""The result type of validation: one violation per problem found."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

__all__ = [
    "RULES",
    "Rule",
    "Severity",
    "Violation",
    "clipped",
    "did_you_mean",
    "did_you_mean_one_of",
    "errors_only",
    "nearest",
    "problem_text",
    "terminal_safe",
]

Severity = Literal["error", "warning"]

Rule = Literal[
    "accelerator",
    "capacity",
    "compatibility",
    "disk",
    "display-name",
    "env",
    "host-limits",
    "internal",
    "labels",
    "legacy",
    "machine",
    "metrics",
    "mig",
    "mounts",
    "parameters",
    "pools",
    "project",
    "references",
    "region",
    "reservation",
    "retired",
    "scheduling",
    "schema",
    "study",
    "trainer",
    "trial-args",
    "trials",
    "uris",
    "zone",
]
"""Which rule found a violation; ``components/catalog/README.md`` says where each comes from."""
RULES: tuple[str, ...] = get_args(Rule)


@dataclass(frozen=True, slots=True)
class Violation:
    """One problem in a job spec.

    ``path`` is the property path in the spec's camelCase form
    (``workerPoolSpecs[1].machineSpec.acceleratorCount``), ``reason`` says what is wrong,
    ``suggestion`` what to change. Warnings do not make a spec invalid.
    """

    path: str
    reason: str
    suggestion: str | None = None
    rule: Rule = field(kw_only=True)
    severity: Severity = field(default="error", kw_only=True)

    def __str__(self) -> str:
        text = problem_text(self.reason, self.suggestion, path=self.path)
        if self.severity == "warning":
            text = f"warning: {text}"
        return text

    def to_dict(self) -> dict[str, str | None]:
        """A JSON-ready form, as printed by ``validate --json``."""
        return {
            "path": self.path,
            "reason": self.reason,
            "suggestion": self.suggestion,
            "rule": self.rule,
            "severity": self.severity,
        }


def problem_text(reason: str, suggestion: str | None = None, *, path: str = "") -> str:
    """A problem as every door and the CLI show it: ``path: reason (suggestion)``, without
    ``path: `` where ``path`` is empty and without the parenthesis where there is no
    suggestion. The one wording: a door that reads the parts as data words them back here."""
    text = f"{reason} ({suggestion})" if suggestion else reason
    return f"{path}: {text}" if path else text


def errors_only(violations: list[Violation]) -> list[Violation]:
    """The violations that make a spec invalid (warnings dropped)."""
    return [v for v in violations if v.severity == "error"]


def nearest(name: str, choices: Iterable[str], limit: int = 3) -> list[str]:
    """The valid names closest to ``name`` (case-insensitive, ``-``/``_`` folded)."""
    fold = {c.lower().replace("_", "-"): c for c in choices}
    key = name.lower().replace("_", "-")
    if key in fold:
        return [fold[key]]
    matches = difflib.get_close_matches(key, list(fold), n=limit, cutoff=0.6)
    return [fold[m] for m in matches]


def did_you_mean(
    name: str, choices: Iterable[str], *, limit: int = 1, otherwise: str | None = None
) -> str | None:
    """``did you mean X?`` (or ``X or Y``) for the choices closest to ``name``, else ``otherwise``.

    The one wording of every suggestion this package makes.
    """
    return did_you_mean_one_of(nearest(name, choices, limit=limit), otherwise=otherwise)


def did_you_mean_one_of(names: Sequence[str], *, otherwise: str | None = None) -> str | None:
    """``did you mean X?`` (or ``X or Y``) for names already chosen and ordered by the caller."""
    return f"did you mean {' or '.join(names)}?" if names else otherwise


def clipped(text: str, limit: int = 60) -> str:
    """``text`` for a message: cut to ``limit`` characters, so no input makes a message huge."""
    return text if len(text) <= limit else text[:limit] + "…"


def terminal_safe(text: str, limit: int) -> str:
    """``text`` as a message shows it: control characters (an escape sequence would act on the
    user's terminal) written as escapes, line breaks and tabs kept, at most ``limit``
    characters before the escaping."""
    cut = (
        text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit:,} more characters)"
    )
    return "".join(ch if ch.isprintable() or ch in "\n\t" else ascii(ch)[1:-1] for ch in cut)
