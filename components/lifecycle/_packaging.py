"""Deterministic source distributions of a trainer package: same source, same bytes.

Vertex AI installs a trainer from an sdist (``pip install`` of a ``.tar.gz``). Building it
with setuptools stamps the current time into the archive, so every ``pulumi up`` would see a
"new" package and re-run the job. This builder writes the archive itself: entries sorted,
mtimes fixed, owners and modes normalised, gzip header without a time or file name. The
archive's hash then names the uploaded object, so a code change (and only a code change)
shows in the diff and replaces the job.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import io
import os
import tarfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .._errors import TrainingJobError
from .._files import FileReadError, read_bytes_capped, read_text_capped

__all__ = [
    "FIXED_MTIME",
    "MAX_METADATA_BYTES",
    "MAX_PACKAGE_BYTES",
    "MAX_SOURCE_ENTRIES",
    "SKIP_DIRS",
    "SKIP_SUFFIXES",
    "PackagingError",
    "Sdist",
    "build_sdist",
    "package_metadata",
    "source_digest",
    "source_files",
    "write_sdist",
]

SKIP_DIRS = frozenset(
    {
        "__pycache__",
        ".git",
        ".venv",
        "venv",
        "build",
        "dist",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".tox",
        "output",
    }
)
SKIP_SUFFIXES = (".pyc", ".pyo", ".egg-info", ".so", ".DS_Store")
FIXED_MTIME = 315532800  # 1980-01-01, the earliest time zip-based tools accept as well
MAX_PACKAGE_BYTES = 256 << 20
"""The most source a trainer package may hold: it is read (and archived) in memory."""
MAX_METADATA_BYTES = 1 << 20
MAX_SOURCE_ENTRIES = 20_000
"""The most files and folders a trainer source may hold (skipped folders not counted): the
walk of a folder named by mistake (``/``, a home directory) stops there."""


class PackagingError(TrainingJobError, ValueError):
    """The trainer source cannot be packaged; the message names the path and the problem."""


@dataclass(frozen=True)
class Sdist:
    """A built archive: its file name, bytes and sha256."""

    name: str
    version: str
    data: bytes

    @property
    def filename(self) -> str:
        return f"{self.name}-{self.version}.tar.gz"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def source_files(root: Path) -> list[Path]:
    """The files that make up the package source, relative to ``root``, sorted.

    Symlinks are never followed (a link to ``/proc/1/cwd`` is a link to ``/``), skipped folders
    are not entered, and the walk stops at ``MAX_SOURCE_ENTRIES`` files and folders: a folder
    such as ``/`` is refused in bounded time, naming the folder, as is one that cannot be listed.
    """
    try:
        is_dir = root.is_dir()
    except OSError:  # is_dir() catches most, not every, error (a name too long, say)
        is_dir = False
    if not is_dir:
        raise PackagingError(f"{root}: trainer source is not a directory")
    found: list[Path] = []
    seen = 0
    folders = [Path()]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(root / folder) as listing:
                entries = list(listing)
        except OSError as exc:
            raise PackagingError(
                f"{root / folder}: cannot list the trainer source ({exc.strerror})"
            ) from None
        seen += len(entries)
        if seen > MAX_SOURCE_ENTRIES:
            raise PackagingError(
                f"{root}: more than {MAX_SOURCE_ENTRIES:,} files and folders (skipped folders "
                f"such as .git and .venv left out); a trainer package is smaller: is this the "
                "trainer's folder?"
            )
        for entry in entries:
            name = entry.name
            if name in SKIP_DIRS or name.endswith(".egg-info"):
                continue
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    folders.append(folder / name)
                elif entry.is_file(follow_symlinks=False) and not name.endswith(SKIP_SUFFIXES):
                    found.append(folder / name)
            except OSError:
                continue  # gone since it was listed
    if not found:
        raise PackagingError(f"{root}: no source files found")
    return sorted(found)


def _read_sources(root: Path) -> Iterator[tuple[Path, bytes]]:
    """Each source file and its bytes; refuses a package larger than ``MAX_PACKAGE_BYTES``."""
    budget = MAX_PACKAGE_BYTES
    for rel in source_files(root):
        try:
            data = read_bytes_capped(root / rel, budget, what="source file")
        except FileReadError as exc:
            raise PackagingError(
                f"{root}: {exc} (a trainer package holds at most {MAX_PACKAGE_BYTES:,} bytes)"
                if "larger than" in str(exc)
                else str(exc)
            ) from None
        budget -= len(data)
        yield rel, data


def source_digest(root: Path) -> str:
    """sha256 over the package source (paths and contents), for a local-path trigger."""
    digest = hashlib.sha256()
    for rel, data in _read_sources(root):
        digest.update(rel.as_posix().encode() + b"\0")
        digest.update(data)
        digest.update(b"\0")
    return digest.hexdigest()


def _metadata_text(path: Path) -> str:
    try:
        return read_text_capped(path, MAX_METADATA_BYTES, what="package metadata file")
    except FileReadError as exc:
        raise PackagingError(str(exc)) from None


def package_metadata(root: Path) -> tuple[str, str]:
    """(name, version) from ``pyproject.toml`` or literal ``setup(name=..., version=...)``.

    ``setup.py`` is read, not run: packaging must not execute the trainer's code.
    """
    pyproject = root / "pyproject.toml"
    if pyproject.exists():
        try:
            project = tomllib.loads(_metadata_text(pyproject)).get("project")
        except (tomllib.TOMLDecodeError, RecursionError) as exc:
            raise PackagingError(f"{pyproject}: not valid TOML: {exc}") from None
        if not isinstance(project, dict):
            project = {}
        if isinstance(project.get("name"), str) and isinstance(project.get("version"), str):
            return project["name"], project["version"]
    setup = root / "setup.py"
    if setup.exists():
        found: dict[str, str] = {}
        try:
            tree = ast.parse(_metadata_text(setup), str(setup))
        except (SyntaxError, ValueError, RecursionError) as exc:
            detail = exc.msg if isinstance(exc, SyntaxError) else type(exc).__name__
            raise PackagingError(f"{setup}: not valid Python: {detail}") from None
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setup":
                for keyword in node.keywords:
                    if keyword.arg in ("name", "version") and isinstance(
                        keyword.value, ast.Constant
                    ):
                        found[keyword.arg] = str(keyword.value.value)
        if "name" in found and "version" in found:
            return found["name"], found["version"]
    raise PackagingError(
        f"{root}: cannot tell the package name and version: give [project] name and version "
        "in pyproject.toml, or literal name= and version= in setup.py's setup() call"
    )


def _pkg_info(name: str, version: str) -> bytes:
    return f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()


def build_sdist(root: Path) -> Sdist:
    """Build the sdist of the package in ``root`` deterministically."""
    root = root.resolve()
    name, version = package_metadata(root)
    prefix = f"{name}-{version}"
    entries: list[tuple[str, bytes]] = [(f"{prefix}/PKG-INFO", _pkg_info(name, version))]
    for rel, data in _read_sources(root):
        if rel.as_posix() == "PKG-INFO":
            continue
        entries.append((f"{prefix}/{rel.as_posix()}", data))
    entries.sort(key=lambda item: item[0])

    tar_bytes = io.BytesIO()
    with tarfile.open(fileobj=tar_bytes, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for directory in sorted({str(Path(n).parent) for n, _ in entries}):
            # Directories are listed too, so every extractor creates them with sane modes.
            _add_dirs(tar, directory)
        for arcname, data in entries:
            info = _info(arcname, tarfile.REGTYPE, 0o644)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    compressed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=compressed, mtime=0, compresslevel=9) as gz:
        gz.write(tar_bytes.getvalue())
    return Sdist(name, version, compressed.getvalue())


def _add_dirs(tar: tarfile.TarFile, directory: str) -> None:
    parts = Path(directory).parts
    names = tar.getnames()
    for i in range(1, len(parts) + 1):
        path = "/".join(parts[:i])
        if path not in names:
            tar.addfile(_info(path, tarfile.DIRTYPE, 0o755))
            names.append(path)


def _info(name: str, kind: bytes, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.mtime = FIXED_MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_sdist(sdist: Sdist, directory: Path) -> Path:
    """Write the archive under ``directory/<sha256[:16]>/`` (once; same bytes, same path)."""
    target = directory / sdist.sha256[:16] / sdist.filename
    if not (target.is_file() and target.read_bytes() == sdist.data):
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        tmp.write_bytes(sdist.data)
        tmp.replace(target)
    return target
