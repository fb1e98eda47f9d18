"""The core's typed answers: what check, diff and the API operations give every door.

Plain dataclasses of plain values (no Pulumi type): a door translates them into its host's
answer (``pulumi.dynamic.CheckResult``... for the dynamic provider, the engine's gRPC messages
for the plugin). A preview's quota shortfalls are ``Shortfall``s (made where quotas are
compared, ``components.costs._quota``; named here with the other answers).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..costs._figure import Figure
from ..costs._quota import Shortfall
from ..lifecycle._check import CheckOutcome
from ..lifecycle._wire import STATUS
from ..rules._violations import Violation, problem_text

__all__ = [
    "Checked",
    "Diff",
    "JobCost",
    "Note",
    "NoteTopic",
    "Notes",
    "Problem",
    "Replace",
    "Shortfall",
    "State",
]


@dataclass(frozen=True)
class Problem:
    """What is wrong with one input: its property path (``spec.workerPoolSpecs[0].machineSpec``,
    or a top-level input such as ``waitTimeout``), what is wrong (``reason``), and what to
    change where known (``suggestion``, not repeated in ``reason``; None where there is none).
    ``text`` words them as every door shows them."""

    path: str
    reason: str
    suggestion: str | None = None

    @property
    def text(self) -> str:
        """``reason (suggestion)``, or the reason alone (``rules._violations.problem_text``)."""
        return problem_text(self.reason, self.suggestion)


NoteTopic = Literal["image", "prices", "cost", "quota", "placement", "other"]
"""What a note is about: an executor image past its end of availability, where the prices come
from, the job's cost, its quota fit, its placement plan, or anything else."""


@dataclass(frozen=True)
class JobCost:
    """A job's price as a preview knows it: where and as what it is priced (``on_demand``,
    ``spot``, ``flex_start``), per hour and at most (its whole timeout), each a ``Figure``: a
    price, at most, at least, a range, or unknown, never a bound shown as a price."""

    region: str
    capacity: str
    hourly: Figure
    ceiling: Figure


@dataclass(frozen=True)
class Note:
    """One thing a check or a preview says about a job: ``info`` or ``warning``, its words,
    what it is about (``topic``), and for the cost note its figures (``cost``)."""

    severity: Literal["info", "warning"]
    text: str
    topic: NoteTopic = "other"
    cost: JobCost | None = None


@dataclass
class Notes:
    """A ``Say`` (``components.core._preview``) that keeps what is said, as data: each note
    under the ``topic`` it is told (``about``), or ``other``."""

    said: list[Note] = field(default_factory=list)
    topic: NoteTopic = "other"

    def __call__(self, severity: str, text: str) -> None:
        self.add(Note("warning" if severity == "warning" else "info", text, self.topic))

    def add(self, note: Note) -> None:
        self.said.append(note)

    def about(self, topic: NoteTopic) -> Notes:
        """A ``Say`` that keeps its notes here under ``topic``."""
        return Notes(self.said, topic)


@dataclass(frozen=True)
class Checked:
    """What a check found: the inputs to go on with, the problems that fail the check, and the
    validator's warnings, which do not (each door shows them its own way)."""

    inputs: dict[str, Any]
    problems: tuple[Problem, ...] = ()
    warnings: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    @classmethod
    def of(cls, outcome: CheckOutcome) -> Checked:
        return cls(
            inputs=outcome.inputs,
            problems=tuple(Problem(*failure) for failure in outcome.failures),
            warnings=tuple(_warning(v) for v in outcome.warnings),
        )


def _warning(violation: Violation) -> Problem:
    return Problem(violation.path, violation.reason, violation.suggestion)


@dataclass(frozen=True)
class Replace:
    """An input whose change replaces the job, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class Diff:
    """What a change of inputs does: nothing, an update in place (provider-only settings), or
    a replace (``replaces`` non-empty), the old job stopped first where
    ``delete_before_replace``."""

    changes: bool
    replaces: tuple[Replace, ...] = ()
    delete_before_replace: bool = False

    @property
    def replaced_paths(self) -> list[str]:
        return [r.path for r in self.replaces]


@dataclass(frozen=True)
class State:
    """A job as the stack keeps it after create, read or update: its id (the job's resource
    name; "" after a read: the job is gone) and outputs (the inputs the state keeps and
    ``status``: the job's state, times, cost, placed region...)."""

    id: str
    outputs: dict[str, Any]

    @property
    def gone(self) -> bool:
        return not self.id

    @property
    def status(self) -> Mapping[str, Any]:
        found = self.outputs.get(STATUS)
        return found if isinstance(found, Mapping) else {}
