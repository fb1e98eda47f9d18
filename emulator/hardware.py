"""Hardware and image facts the emulator's checks use, read as data from the catalog CSVs.

The CSV files under ``components/catalog/`` (``gpu_training/catalog/`` once installed) are data
shared by the project and the emulator;
this module reads them with its own small reader (the ``csv`` module, a few columns) and keeps
no rules: what the facts mean for a job is decided in :mod:`emulator._validation`. Without the
files (the emulator copied elsewhere) every look-up answers "unknown", and the checks that need
a fact are skipped rather than guessed.

``EMULATOR_CATALOG_DIR`` names another directory with files of the same columns.
``EMULATOR_CATALOG_OVERLAY`` (``serve --catalog-overlay DIR``) names a folder of rows put over
it, as the project's ``training:catalogOverlay`` puts them over its own: a row with the key of a
catalog row replaces it, any other is added. So a machine type, an accelerator's counts or an
image that a stack's overlay adds is accepted here too. The overlay is read again when one of
its files changes.
"""

from __future__ import annotations

import csv
import functools
import io
import logging
import os
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from . import paths

__all__ = [
    "OVERLAY_ENV",
    "Accelerator",
    "Hardware",
    "TrainingImage",
    "catalog_dir",
    "catalog_overlay",
    "catalog_rows",
    "hardware",
]

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
OVERLAY_ENV = "EMULATOR_CATALOG_OVERLAY"
# The files read here, each with the columns that key a row (the project's catalog keys its
# files the same way: an overlay row with a catalog row's key replaces it).
_KEYS: dict[str, tuple[str, ...]] = {
    "machine_types.csv": ("machine_type",),
    "attachable_counts.csv": ("machine_type", "accelerator_type"),
    "accelerators.csv": ("accelerator_type",),
    "training_images.csv": ("image_path", "accelerator"),
}


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


def catalog_overlay() -> Path | None:
    """The folder of rows put over the catalog (``serve --catalog-overlay``), or None."""
    value = os.environ.get(OVERLAY_ENV)
    return Path(value) if value else None


def catalog_rows(directory: Path, name: str, overlay: Path | None = None) -> list[dict[str, str]]:
    """The rows of catalog file ``name`` (cells stripped), with ``overlay``'s rows of the same
    file over them; [] when the catalog file cannot be read."""
    rows = _file_rows(directory / name)
    if overlay is None or not (overlay / name).exists():
        return rows
    keys = _KEYS.get(name, ())
    merged = {tuple(row.get(k, "") for k in keys): row for row in rows}
    for row in _file_rows(overlay / name):
        key = tuple(row.get(k, "") for k in keys)
        if all(key):
            merged[key] = row
    return list(merged.values())


def _file_rows(path: Path) -> list[dict[str, str]]:
    shown = ascii(str(path))  # a path's control characters never reach the log raw
    try:
        # A regular file only, to a cap, opened without blocking (paths.read_regular): an
        # overlay file may be a FIFO (a plain open waits for a writer forever) or /dev/zero.
        data = paths.read_regular(path.resolve(), _MAX_FILE_BYTES, what=f"catalog file {shown}")
        text = data.decode("utf-8-sig")
        return [
            {k: (v or "").strip() for k, v in row.items() if k}
            for row in csv.DictReader(io.StringIO(text, newline=""))
        ]
    except paths.PackageError as exc:
        log.warning("%s: the checks it serves are skipped", exc)
        return []
    except (OSError, RuntimeError, UnicodeDecodeError, csv.Error) as exc:
        reason = type(exc).__name__
        log.warning(
            "catalog file %s not read (%s): the checks it serves are skipped", shown, reason
        )
        return []


def _retired(lifecycle: str, retired_on: str) -> bool:
    """RETIRED, or DEPRECATED and past its end of support (P100: 2026-09-15)."""
    if lifecycle == "RETIRED":
        return True
    return lifecycle == "DEPRECATED" and bool(retired_on) and retired_on <= date.today().isoformat()


def _read(directory: Path, overlay: Path | None = None) -> Hardware:
    machines = catalog_rows(directory, "machine_types.csv", overlay)
    attachable: dict[tuple[str, str], frozenset[int]] = {}
    for row in catalog_rows(directory, "attachable_counts.csv", overlay):
        counts = frozenset(int(c) for c in row.get("counts", "").split() if c.isdigit())
        attachable[(row.get("machine_type", ""), row.get("accelerator_type", ""))] = counts
    accelerators = {
        row["accelerator_type"]: Accelerator(
            row["accelerator_type"],
            _retired(row.get("lifecycle", ""), row.get("retired_on", "")),
            row.get("retired_on", ""),
            frozenset(row.get("mig_partition_sizes", "").split()),
        )
        for row in catalog_rows(directory, "accelerators.csv", overlay)
        if row.get("accelerator_type")
    }
    images = tuple(
        TrainingImage(row["framework"], row.get("framework_version", ""), row["image_path"])
        for row in catalog_rows(directory, "training_images.csv", overlay)
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


@functools.lru_cache(maxsize=8)
def _cached(directory: str, overlay: str, stamp: tuple[tuple[str, int, int], ...]) -> Hardware:
    return _read(Path(directory), Path(overlay) if overlay else None)


def _stamp(overlay: Path | None) -> tuple[tuple[str, int, int], ...]:
    """When and how large each overlay file is: a changed file is read again."""
    found = []
    for name in _KEYS:
        try:
            info = (overlay / name).stat() if overlay is not None else None
        except OSError:
            info = None
        if info is not None:
            found.append((name, info.st_mtime_ns, info.st_size))
    return tuple(found)


def hardware() -> Hardware:
    """The catalog's facts with the overlay's rows, read once per directory and overlay state."""
    overlay = catalog_overlay()
    return _cached(str(catalog_dir()), str(overlay or ""), _stamp(overlay))
