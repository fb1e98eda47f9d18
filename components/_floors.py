"""The floors of ``components/``: which module may import which, named once, lowest first.

A module imports only from its own floor or the floors below it (an import inside a function
counts: a lazy import is still a dependency). On the doors floor each door is a room of its
own: the dynamic door (Python's ``pulumi.dynamic`` resources and their provider) and the
provider plugin (every language) are two clients of the core, and neither imports the other.
``tests/test_layout.py`` parses every module and fails on an import that climbs or crosses.

1. ``rules``: the spec models, the catalog (``catalog/*.csv``), validation; the error tree
   and bounded file reading every floor uses (``_errors``, ``_files``, ``_redaction``).
2. ``formats``: the input formats, read into the spec models.
3. ``costs``: prices, billing SKUs, price sheets, quotas: figures computed from data.
4. ``lifecycle``: the terms of a job's life, with no API call: the wire (property names,
   labels), the settings, adoption's rules, check and diff decisions, interrupts, progress.
5. ``vertex``: the only code that talks to Vertex AI (its client library, billing, quotas).
6. ``core``: a job's whole life behind a typed interface (``components.core``): check, diff,
   create, read, update, delete, placement, import, the preview's notes. No Pulumi type.
7. ``doors``: the dynamic door (``components.dynamic`` and the modules that states pickle by
   reference: ``_provider``, ``_tuning_provider``, ``_run_key``; the resources, ``config``)
   | the plugin (``components.plugin``).
8. ``program``: this project's ``training:jobs`` program, written on the dynamic door.
9. ``tools``: the CLI, the PR comment (``review``), the policy pack's rules (``policies``), and
   the package's lazy front (``components/__init__.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FLOORS", "Floor", "floor_of"]


@dataclass(frozen=True)
class Floor:
    """One floor: its name and its rooms (room name → module prefixes)."""

    name: str
    rooms: dict[str, tuple[str, ...]]


FLOORS: tuple[Floor, ...] = (
    Floor(
        "rules",
        {
            "rules": (
                "components.rules",
                "components._errors",
                "components._files",
                "components._redaction",
                "components._floors",
            )
        },
    ),
    Floor("formats", {"formats": ("components.formats",)}),
    Floor("costs", {"costs": ("components.costs",)}),
    Floor("lifecycle", {"lifecycle": ("components.lifecycle",)}),
    Floor("vertex", {"vertex": ("components.vertex",)}),
    Floor("core", {"core": ("components.core",)}),
    Floor(
        "doors",
        {
            "dynamic": (
                "components.dynamic",
                "components._provider",
                "components._tuning_provider",
                "components._run_key",
                "components.training_job",
                "components.tuning_job",
                "components.config",
            ),
            "plugin": ("components.plugin",),
        },
    ),
    Floor("program", {"program": ("components.program", "components.infra")}),
    Floor(
        "tools",
        {
            "tools": (
                "components.cli",
                "components.review",
                "components.policies",
                "components.__main__",
                "components",
            )
        },
    ),
)
"""Lowest first."""


def floor_of(module: str) -> tuple[int, str]:
    """``(floor number, room)`` of a module of ``components`` (the longest prefix that names
    it wins: ``components.rules._spec`` is on ``rules``, ``components`` itself on ``tools``).
    Raises ``KeyError`` for a module no floor names."""
    best: tuple[int, int, str] | None = None
    for number, floor in enumerate(FLOORS):
        for room, prefixes in floor.rooms.items():
            for prefix in prefixes:
                names_it = module == prefix or module.startswith(prefix + ".")
                if names_it and (best is None or len(prefix) > best[0]):
                    best = (len(prefix), number, room)
    if best is None:
        raise KeyError(f"{module}: no floor names it (components/_floors.py)")
    return best[1], best[2]
