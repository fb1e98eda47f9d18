"""The job of a create request body (``CreateCustomJobRequest``,
``CreateHyperparameterTuningJobRequest``): ``parent`` + the job, the project and region taken
from ``parent``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .._errors import SpecInvalidError
from ..rules._violations import Violation, did_you_mean
from .text import clipped

__all__ = ["RequestShape", "job_from_request"]

_PARENT = re.compile(r"projects/([^/\s]+)/locations/([^/\s]+)")


@dataclass(frozen=True)
class RequestShape:
    """One request type: its name, the field holding the job (camelCase, snake_case), and
    the job's type."""

    name: str
    field: str
    snake: str
    job: str


def job_from_request(request: dict[Any, Any], shape: RequestShape, notes: list[str]) -> Any:
    """The job of a request, with the project and region of its ``parent``
    (``projects/P/locations/L``); ``SpecInvalidError`` for what does not fit."""
    problems: list[Violation] = []
    for key in request:
        if key not in ("parent", shape.field, shape.snake):
            problems.append(
                Violation(
                    str(key),
                    f"is not a field of a {shape.name}",
                    did_you_mean(
                        str(key),
                        ("parent", shape.field),
                        otherwise=f"known fields: parent, {shape.field}",
                    ),
                    rule="schema",
                )
            )
    job = request.get(shape.field, request.get(shape.snake))
    if not isinstance(job, dict):
        problems.append(
            Violation(shape.field, f"must be a mapping (the {shape.job})", rule="schema")
        )
        raise SpecInvalidError(problems)
    parent = request.get("parent")
    if parent is None:
        if problems:
            raise SpecInvalidError(problems)
        return job
    match = _PARENT.fullmatch(parent) if isinstance(parent, str) else None
    if match is None:
        problems.append(
            Violation(
                "parent",
                "must name a location as projects/PROJECT/locations/REGION",
                rule="schema",
            )
        )
        raise SpecInvalidError(problems)
    place = {"project": match.group(1), "region": match.group(2)}
    job = _with_place(job, place, shape.field, problems)
    if problems:
        raise SpecInvalidError(problems)
    notes.append(f"project and region taken from parent: {match.group(1)}, {match.group(2)}")
    return job


def _with_place(
    job: dict[str, Any], place: dict[str, str], field: str, problems: list[Violation]
) -> dict[str, Any]:
    """``job`` with the project and region of ``parent`` where it names none; a conflict with
    one it names is a violation at that field."""
    inner = job.get("jobSpec", job.get("job_spec"))
    added = dict(job)
    for key, value in place.items():
        given = job.get(key, inner.get(key) if isinstance(inner, dict) else None)
        if given is None:
            added[key] = value
        elif given != value:
            problems.append(
                Violation(
                    f"{field}.{key}",
                    f"is {clipped(repr(given))}, but parent names {key} {value!r}",
                    "remove it, or make parent and it agree",
                    rule="project" if key == "project" else "region",
                )
            )
    return added
