"""Installing a job's Python packages into its own site directory.

Each job gets ``<job-dir>/site-<n>``, filled without running any code of the package (the service
never executes a package's ``setup.py``, and installing through pip would need the ``wheel``
package to build sdists): wheels are unpacked, and for sdists and directories the importable
packages (directories with ``__init__.py``, in the root or in ``src/``) and top-level modules are
copied. Dependencies are not installed (like ``pip --no-deps``); replicas import them from the
service's own interpreter (numpy is there). Packages with C extensions that need compiling are
therefore not supported.

Copying never follows a symlink out of the allowed roots (a link that stays inside them is copied as
its content), and what one package may unpack or copy is capped (:class:`Limits`, see
:mod:`emulator.archives`). Where packages may come from is :mod:`emulator.paths`. Every problem is a
:class:`PackageError` whose message is meant for the API caller.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from emulator.archives import Budget, Limits, extract_tar, extract_zip
from emulator.paths import PackageError, is_under, real_path

# PackageError and Limits are re-exported: they are part of install()'s contract.
__all__ = ["Limits", "PackageError", "install"]

_SKIP_DIRS = {"__pycache__", "build", "dist", ".git", ".venv", ".tox", ".mypy_cache"}
_SKIP_MODULES = {"setup.py", "conftest.py"}


@dataclass
class _Copy:
    roots: list[Path]  # real paths a symlink may lead to
    outside: str  # names those roots in messages
    budget: Budget


def install(
    sources: list[Path],
    site: Path,
    *,
    roots: Sequence[Path] = (),
    limits: Limits | None = None,
) -> None:
    """Install every package in ``sources`` (real paths, checked) into ``site``.

    ``roots`` are where a symlink inside a package directory may lead (default: the package's own
    directory); ``limits`` caps what each package may unpack or copy.
    """
    limits = limits or Limits()
    site.mkdir(parents=True, exist_ok=True)
    for src in sources:
        try:
            st = os.stat(src)
        except FileNotFoundError:
            raise PackageError(f"package {src} does not exist") from None
        name = src.name.lower()
        budget = Budget(limits, f"package {src.name}")
        if stat.S_ISDIR(st.st_mode):
            allowed = [real_path(r) for r in roots] or [src]
            _copy_project(src, site, _Copy(allowed, "the allowed directories", budget))
        elif not stat.S_ISREG(st.st_mode):
            raise PackageError(f"package {src}: not a regular file or a directory")
        elif name.endswith(".whl"):
            _install_wheel(src, site, limits, budget)
        elif name.endswith((".tar.gz", ".tgz", ".tar")):
            with tempfile.TemporaryDirectory(dir=site.parent) as tmp:
                root = real_path(Path(tmp))
                extract_tar(src, root, limits)
                _copy_project(_single_root(root), site, _Copy([root], "the archive", budget))
        elif name.endswith(".zip"):
            with tempfile.TemporaryDirectory(dir=site.parent) as tmp:
                root = real_path(Path(tmp))
                extract_zip(src, root, limits)
                _copy_project(_single_root(root), site, _Copy([root], "the archive", budget))
        else:
            raise PackageError(
                f"package {src}: expected a directory, a wheel (.whl) or an sdist "
                "(.tar.gz, .tgz, .zip)"
            )


def _single_root(tmp: Path) -> Path:
    # An sdist holds one top-level directory `<name>-<version>/`.
    children = [p for p in tmp.iterdir() if p.name not in _SKIP_DIRS]
    if len(children) == 1 and not children[0].is_symlink() and children[0].is_dir():
        return children[0]
    return tmp


def _install_wheel(wheel: Path, site: Path, limits: Limits, budget: Budget) -> None:
    # A wheel's root is its purelib/platlib content; `<name>.data/{purelib,platlib}` go there too,
    # scripts and headers are not needed to run `python -m module`.
    with tempfile.TemporaryDirectory(dir=site.parent) as tmp:
        root = real_path(Path(tmp))
        extract_zip(wheel, root, limits)
        ctx = _Copy([root], "the archive", budget)
        for child in sorted(root.iterdir()):
            if child.name.endswith(".data"):
                for lib in ("purelib", "platlib"):
                    if (child / lib).is_dir():
                        _copy_tree(child / lib, site, ctx, replace=False)
                continue
            if child.is_dir():
                _copy_tree(child, site / child.name, ctx, replace=False)
            else:
                _copy_file(child, site / child.name, ctx)


# -- copying -------------------------------------------------------------------------------------


def _follow(path: Path, ctx: _Copy) -> tuple[Path, os.stat_result] | None:
    """(real path, stat) of ``path``, following a symlink only into ``ctx.roots``; None if absent."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISLNK(st.st_mode):
        return path, st
    target = real_path(path)
    try:
        target_st = os.stat(target)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PackageError(f"{path} is a symbolic link loop") from None
        raise PackageError(f"{path} is a broken symbolic link ({exc.strerror})") from None
    if not any(is_under(target, root) for root in ctx.roots):
        raise PackageError(
            f"{path} is a symbolic link to {target}, outside {ctx.outside}; "
            "packages may only link to files under those"
        )
    return target, target_st


def _skipped(name: str) -> bool:
    return name in _SKIP_DIRS or name.endswith((".pyc", ".egg-info"))


def _is_package(path: Path, ctx: _Copy) -> bool:
    found = _follow(path / "__init__.py", ctx)
    return found is not None and stat.S_ISREG(found[1].st_mode)


def _copy_project(root: Path, site: Path, ctx: _Copy) -> None:
    if _is_package(root, ctx):
        _copy_tree(root, site / root.name, ctx, replace=True)
        return
    src = _follow(root / "src", ctx)
    base = src[0] if src is not None and stat.S_ISDIR(src[1].st_mode) else root
    copied = 0
    for name in sorted(os.listdir(base)):
        if _skipped(name):
            continue
        is_module = name.endswith(".py") and name not in _SKIP_MODULES
        entry = _follow(base / name, ctx)
        if entry is None:
            continue
        real, st = entry
        if stat.S_ISDIR(st.st_mode) and _is_package(real, ctx):
            _copy_tree(real, site / name, ctx, replace=True, shown=base / name)
            copied += 1
        elif is_module and stat.S_ISREG(st.st_mode):
            _copy_file(real, site / name, ctx)
            copied += 1
    if not copied:
        raise PackageError(f"package {root.name}: found no Python package or module in it")


@dataclass(frozen=True)
class _Visit:
    src: Path  # real directory to read
    dest: Path
    shown: Path  # the path as the package names it, for messages
    identity: tuple[int, int]  # (st_dev, st_ino)
    parent: _Visit | None

    def has_ancestor(self, identity: tuple[int, int]) -> bool:
        node: _Visit | None = self
        while node is not None:
            if node.identity == identity:
                return True
            node = node.parent
        return False


def _copy_tree(
    src: Path, dest: Path, ctx: _Copy, *, replace: bool, shown: Path | None = None
) -> None:
    """Copy directory ``src`` to ``dest``: regular files as content, symlinks only into the roots.

    Iterative (a deep tree cannot exhaust the stack); a directory reached again below itself is a
    symlink loop.
    """
    if replace and dest.exists():
        shutil.rmtree(dest)
    st = os.stat(src)
    stack = [_Visit(src, dest, shown or src, (st.st_dev, st.st_ino), None)]
    while stack:
        visit = stack.pop()
        visit.dest.mkdir(exist_ok=True)
        ctx.budget.add(1, 0, str(visit.shown))
        for name in sorted(os.listdir(visit.src)):
            if _skipped(name):
                continue
            entry = _follow(visit.src / name, ctx)
            if entry is None:
                continue
            real, entry_st = entry
            shown_path = visit.shown / name
            if stat.S_ISDIR(entry_st.st_mode):
                identity = (entry_st.st_dev, entry_st.st_ino)
                if visit.has_ancestor(identity):
                    raise PackageError(
                        f"{shown_path} is a symbolic link loop (it leads back to {real})"
                    )
                stack.append(_Visit(real, visit.dest / name, shown_path, identity, visit))
            elif stat.S_ISREG(entry_st.st_mode):
                _copy_file(real, visit.dest / name, ctx, shown=shown_path)
            else:
                raise PackageError(f"{shown_path}: not a regular file or a directory")


def _copy_file(src: Path, dest: Path, ctx: _Copy, *, shown: Path | None = None) -> None:
    # O_NOFOLLOW: `src` was checked as a real file; a symlink swapped in since is not followed.
    # O_NONBLOCK: nor does a named pipe swapped in block the open (fstat below refuses it).
    ctx.budget.add(1, 0, str(shown or src))
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise PackageError(f"{shown or src}: cannot read it ({exc.strerror})") from None
    with open(fd, "rb") as fin:
        st = os.fstat(fin.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise PackageError(f"{shown or src}: not a regular file")
        with open(dest, "wb") as fout:
            while chunk := fin.read(1024 * 1024):
                ctx.budget.add(0, len(chunk), str(shown or src))
                fout.write(chunk)
    os.chmod(dest, (stat.S_IMODE(st.st_mode) & 0o777) | 0o600)
