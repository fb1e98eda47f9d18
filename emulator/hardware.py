"""Hardware and image facts the emulator's checks use, read as data from the catalog CSVs.

The CSV files under ``components/catalog/`` (``gpu_training/catalog/`` once installed) are data
shared by the project and the emulator;
this module reads them with its own small reader (the ``csv`` module, a few columns) and keeps
no rules: what the facts mean for a job is decided in :mod:`emulator._validation`. Without the
files (the emulator copied elsewhere) every look-up answers "unknown", and the checks that need
a fact are skipped rather than guessed.

``EMULATOR_CATALOG_DIR`` names another directory with files of the same columns.
"""

from __future__ import annotations

import csv
import functools
import logging
import os
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

__all__ = ["Accelerator", "Hardware", "TrainingImage", "catalog_dir", "catalog_rows", "hardware"]

log = logging.getLogger("emulator.hardware")

# The checkout's folder, else the installed package beside this one (read as files: importing
# it would load the project's code, which the emulator never does).
_CATALOG_HOMES = ("components", "gpu_training")
_DEFAULT_DIR = next(
    (
        home
        for name in _CATALOG_HOMES
        if (home := Path(__file__).resolve().parent.parent / name / "catalog").is_dir()
    ),
    Path(__file__).resolve().parent.parent / _CATALOG_HOMES[0] / "catalog",
)
# The largest catalog file is a few tens of KiB: anything far larger is not the catalog.
_MAX_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Accelerator:
    """One accelerator type: whether it is retired (and since when), its MIG partition sizes."""

    name: str
    retired: bool
    retired_on: str
    partition_sizes: frozenset[str]


@dataclass(frozen=True)
class TrainingImage:
    """A prebuilt training image (``image_path`` without its registry host) and its framework."""

    framework: str
    framework_version: str
    image_path: str


@dataclass(frozen=True)
class Hardware:
    """The facts of the catalog files; empty collections when the files are missing."""

    # Machine types Vertex AI training offers.
    training_machine_types: frozenset[str] = frozenset()
    # Machine types the catalog lists but Vertex AI training does not offer.
    other_machine_types: frozenset[str] = frozenset()
    # (machine type, accelerator type) -> the accelerator counts that machine type takes.
    attachable: dict[tuple[str, str], frozenset[int]] = field(default_factory=dict)
    accelerators: dict[str, Accelerator] = field(default_factory=dict)
    training_images: tuple[TrainingImage, ...] = ()

    @property
    def known(self) -> bool:
        """True when the machine type files were read."""
        return bool(self.training_machine_types)


def catalog_dir() -> Path:
    """Where the catalog CSVs are read from."""
    return Path(os.environ.get("EMULATOR_CATALOG_DIR") or _DEFAULT_DIR)


def catalog_rows(directory: Path, name: str) -> list[dict[str, str]]:
    """The rows of catalog file ``name`` (cells stripped); [] when it cannot be read."""
    path = directory / name
    try:
        if path.stat().st_size > _MAX_FILE_BYTES:
            log.warning("%s is larger than %d bytes: not read", path, _MAX_FILE_BYTES)
            return []
        with path.open(newline="", encoding="utf-8") as f:
            return [
                {k: (v or "").strip() for k, v in row.items() if k} for row in csv.DictReader(f)
            ]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        log.warning("catalog file %s not read (%s): the checks it serves are skipped", path, exc)
        return []


def _retired(lifecycle: str, retired_on: str) -> bool:
    """RETIRED, or DEPRECATED and past its end of support (P100: 2026-09-15)."""
    if lifecycle == "RETIRED":
        return True
    return lifecycle == "DEPRECATED" and bool(retired_on) and retired_on <= date.today().isoformat()


def _read(directory: Path) -> Hardware:
    machines = catalog_rows(directory, "machine_types.csv")
    attachable: dict[tuple[str, str], frozenset[int]] = {}
    for row in catalog_rows(directory, "attachable_counts.csv"):
        counts = frozenset(int(c) for c in row.get("counts", "").split() if c.isdigit())
        attachable[(row.get("machine_type", ""), row.get("accelerator_type", ""))] = counts
    accelerators = {
        row["accelerator_type"]: Accelerator(
            row["accelerator_type"],
            _retired(row.get("lifecycle", ""), row.get("retired_on", "")),
            row.get("retired_on", ""),
            frozenset(row.get("mig_partition_sizes", "").split()),
        )
        for row in catalog_rows(directory, "accelerators.csv")
        if row.get("accelerator_type")
    }
    images = tuple(
        TrainingImage(row["framework"], row.get("framework_version", ""), row["image_path"])
        for row in catalog_rows(directory, "training_images.csv")
        if row.get("framework") and row.get("image_path")
    )
    return Hardware(
        training_machine_types=frozenset(
            r["machine_type"] for r in machines if r.get("training") == "yes"
        ),
        other_machine_types=frozenset(
            r["machine_type"] for r in machines if r.get("training") != "yes"
        ),
        attachable=attachable,
        accelerators=accelerators,
        training_images=images,
    )


@functools.cache
def _cached(directory: str) -> Hardware:
    return _read(Path(directory))


def hardware() -> Hardware:
    """The catalog's facts, read once per directory."""
    return _cached(str(catalog_dir()))
