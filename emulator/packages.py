"""Where a job's packages and outputs live on this machine, and how packages are installed.

URIs map to local paths:

* ``gs://bucket/path`` → ``<state-dir>/gcs/bucket/path`` (a local stand-in for Cloud Storage);
* ``file:///abs/path`` and plain paths (relative ones are relative to the service's current
  directory).

Only paths under an allowed root (the state dir, the service's current directory and every
``--allow-root``) are accepted, so a client cannot make the service read arbitrary files.

Installing: each job gets ``<job-dir>/site``, filled without running any code of the package (the
service never executes a package's ``setup.py``, and installing through pip would need the
``wheel`` package to build sdists): wheels are unpacked, and for sdists and directories the
importable packages (directories with ``__init__.py``, in the root or in ``src/``) and top-level
modules are copied. Dependencies are not installed (like ``pip --no-deps``); replicas import them
from the service's own interpreter (numpy is there). Packages with C extensions that need compiling
are therefore not supported.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
import zipfile
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

_SKIP_DIRS = {"__pycache__", "build", "dist", ".git", ".venv", ".tox", ".mypy_cache"}
_SKIP_MODULES = {"setup.py", "conftest.py"}


class PackageError(ValueError):
    """A package URI that cannot be used; the message is meant for the API caller."""


def gcs_to_local(uri: str, state_dir: Path) -> Path:
    """Map ``gs://bucket/path`` into ``<state-dir>/gcs/bucket/path``."""
    parts = urlsplit(uri)
    if parts.scheme != "gs" or not parts.netloc:
        raise PackageError(f"{uri!r} is not a gs://bucket/path URI")
    rel = PurePosixPath(unquote(parts.path.lstrip("/")))
    if ".." in rel.parts:
        raise PackageError(f"{uri!r} must not contain '..'")
    return state_dir / "gcs" / parts.netloc / rel


def resolve_uri(uri: str, state_dir: Path) -> Path:
    """The local path a package URI stands for (not checked for existence)."""
    if uri.startswith("gs://"):
        return gcs_to_local(uri, state_dir)
    parts = urlsplit(uri)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise PackageError(f"{uri!r}: file:// URIs must name a local path")
        return Path(os.path.normpath(Path(unquote(parts.path)).absolute()))
    if parts.scheme and len(parts.scheme) > 1:  # one letter would be a Windows drive
        raise PackageError(
            f"{uri!r}: unsupported scheme {parts.scheme!r} (use gs://, file:// or a local path)"
        )
    return Path(os.path.normpath(Path(uri).expanduser().absolute()))


def check_allowed(path: Path, roots: list[Path], *, follow_symlinks: bool = True) -> None:
    """Raise PackageError unless ``path`` lies under one of ``roots`` (resolved paths).

    ``follow_symlinks=False`` checks the path lexically: cheap enough for every create request
    (resolving stats each path component). The check that guards reading the files, right before
    a job installs them, always follows symlinks.
    """
    real = path.resolve() if follow_symlinks else Path(os.path.normpath(path.absolute()))
    for root in roots:
        if real == root or root in real.parents:
            return
    shown = ", ".join(str(r) for r in roots)
    raise PackageError(
        f"{path} is outside the directories this emulator may read ({shown}); "
        "start it with --allow-root DIR to allow another one"
    )


def install(sources: list[Path], site: Path) -> None:
    """Install every package in ``sources`` into ``site`` (see the module docstring)."""
    site.mkdir(parents=True, exist_ok=True)
    for src in sources:
        if not src.exists():
            raise PackageError(f"package {src} does not exist")
        name = src.name.lower()
        if src.is_dir():
            _copy_project(src, site)
        elif name.endswith(".whl"):
            _install_wheel(src, site)
        elif name.endswith((".tar.gz", ".tgz", ".tar")):
            with tempfile.TemporaryDirectory(dir=site.parent) as tmp:
                with tarfile.open(src) as tar:
                    tar.extractall(tmp, filter="data")
                _copy_project(_single_root(Path(tmp)), site)
        elif name.endswith(".zip"):
            with tempfile.TemporaryDirectory(dir=site.parent) as tmp:
                _safe_unzip(src, Path(tmp))
                _copy_project(_single_root(Path(tmp)), site)
        else:
            raise PackageError(
                f"package {src}: expected a directory, a wheel (.whl) or an sdist "
                "(.tar.gz, .tgz, .zip)"
            )


def _single_root(tmp: Path) -> Path:
    # An sdist holds one top-level directory `<name>-<version>/`.
    children = [p for p in tmp.iterdir() if p.name not in _SKIP_DIRS]
    return children[0] if len(children) == 1 and children[0].is_dir() else tmp


def _copy_project(root: Path, site: Path) -> None:
    if (root / "__init__.py").exists():
        _copy_package(root, site / root.name)
        return
    base = root / "src" if (root / "src").is_dir() else root
    copied = 0
    for child in sorted(base.iterdir()):
        if child.is_dir() and (child / "__init__.py").exists() and child.name not in _SKIP_DIRS:
            _copy_package(child, site / child.name)
            copied += 1
        elif child.suffix == ".py" and child.name not in _SKIP_MODULES:
            shutil.copy2(child, site / child.name)
            copied += 1
    if not copied:
        raise PackageError(f"package {root.name}: found no Python package or module in it")


def _copy_package(src: Path, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(
        src, dest, ignore=shutil.ignore_patterns(*_SKIP_DIRS, "*.pyc", "*.egg-info"), symlinks=False
    )


def _safe_unzip(archive: Path, dest: Path) -> list[str]:
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
        for member in names:
            target = (dest / member).resolve()
            if target != dest.resolve() and dest.resolve() not in target.parents:
                raise PackageError(f"package {archive.name}: member {member!r} escapes the archive")
        zf.extractall(dest)
    return names


def _install_wheel(wheel: Path, site: Path) -> None:
    # A wheel's root is its purelib/platlib content; `<name>.data/{purelib,platlib}` go there too,
    # scripts and headers are not needed to run `python -m module`.
    with tempfile.TemporaryDirectory(dir=site.parent) as tmp:
        root = Path(tmp)
        _safe_unzip(wheel, root)
        for child in root.iterdir():
            if child.name.endswith(".data"):
                for lib in ("purelib", "platlib"):
                    if (child / lib).is_dir():
                        shutil.copytree(child / lib, site, dirs_exist_ok=True)
                continue
            target = site / child.name
            if child.is_dir():
                shutil.copytree(child, target, dirs_exist_ok=True)
            else:
                shutil.copy2(child, target)
