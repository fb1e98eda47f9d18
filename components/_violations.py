"""The result type of validation: one violation per problem found."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


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
    rule: str = ""
    severity: Severity = "error"

    def __str__(self) -> str:
        text = f"{self.path}: {self.reason}"
        if self.suggestion:
            text += f" ({self.suggestion})"
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


def errors_only(violations: list[Violation]) -> list[Violation]:
    """The violations that make a spec invalid (warnings dropped)."""
    return [v for v in violations if v.severity == "error"]
