"""Resource names as Vertex AI writes them: with the project's *number*, whatever the request used.

Vertex AI answers a request made with a project ID (``projects/my-proj/...``) with names that
carry the project number (``projects/123456789012/locations/us-central1/customJobs/...``), and
takes either form in a request path. The emulator has no Resource Manager to ask for a number,
so it makes one up: :func:`derived_number` (12 digits, the same for an ID every time, on every
machine), unless ``serve --project-number ID=NUMBER`` names it. A request whose project is all
digits is taken as a number already.

Jobs, their parents in the store, and operations are named by number, and replicas get the
number in ``CLOUD_ML_PROJECT_ID``, as on Vertex AI (where that variable holds the number:
googleapis/python-aiplatform#852 and #943). The store remembers which ID each number stood
for (:meth:`emulator.store.Store.remember_project`: ``python -m emulator logs`` takes a name by
either), and a state directory written before numbers were used is renamed on start
(:meth:`emulator.store.Store.number_projects`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping

__all__ = [
    "ProjectNumbers",
    "derived_number",
    "is_number",
    "parse_project_numbers",
    "with_project",
]

# Project IDs (6-30 characters: lowercase letters, digits, hyphens; a letter first, no hyphen
# last, https://cloud.google.com/resource-manager/docs/creating-managing-projects) and numbers.
_PROJECT_ID = re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]")
_NUMBER = re.compile(r"[0-9]{1,19}")


def is_number(project: str) -> bool:
    """True when ``project`` (a path segment) is a project number rather than an ID."""
    return _NUMBER.fullmatch(project) is not None


def derived_number(project_id: str) -> str:
    """A 12-digit project number for ``project_id`` (never starting with 0), always the same."""
    digest = hashlib.sha256(f"vertex-emulator-project:{project_id}".encode()).digest()
    return str(10**11 + int.from_bytes(digest[:8], "big") % (9 * 10**11))


def parse_project_numbers(specs: Iterable[str]) -> dict[str, str]:
    """``{id: number}`` of ``--project-number ID=NUMBER`` flags; ValueError names a bad one."""
    numbers: dict[str, str] = {}
    owners: dict[str, str] = {}
    for spec in specs:
        project_id, sep, number = spec.partition("=")
        if not sep or not _PROJECT_ID.fullmatch(project_id) or not _NUMBER.fullmatch(number):
            raise ValueError(
                f"--project-number {spec!r}: expected ID=NUMBER, a project ID (6-30 lowercase "
                "letters, digits and hyphens, starting with a letter) and its number (digits)"
            )
        if numbers.get(project_id, number) != number:
            raise ValueError(f"--project-number: {project_id} is given two numbers")
        if owners.get(number, project_id) != project_id:
            raise ValueError(f"--project-number: {number} is given to {owners[number]} already")
        numbers[project_id] = number
        owners[number] = project_id
    return numbers


class ProjectNumbers:
    """The project number of each project ID: the configured ones, else :func:`derived_number`."""

    def __init__(self, configured: Mapping[str, str] | None = None) -> None:
        self._configured = dict(configured or {})

    def number(self, project: str) -> str:
        """The number of ``project`` (an ID or a number already)."""
        if is_number(project):
            return project
        return self._configured.get(project) or derived_number(project)

    def parent(self, project: str, location: str) -> str:
        """``projects/<number>/locations/<location>``."""
        return f"projects/{self.number(project)}/locations/{location}"

    def canonical(self, name: str) -> str:
        """``name`` (``projects/P/...``) with its project as a number; other text unchanged."""
        parts = name.split("/", 2)
        if len(parts) < 2 or parts[0] != "projects" or not parts[1]:
            return name
        return with_project(name, self.number(parts[1]))


def with_project(name: str, project: str) -> str:
    """``projects/<project>/...``: ``name`` with its project segment replaced."""
    parts = name.split("/", 2)
    return "/".join(["projects", project, *parts[2:]])
