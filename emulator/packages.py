"""Opening a job's Python packages within limits, and installing them without running their code.

Every package is first *opened* (:func:`opened`): an archive (wheel, sdist, zip) is copied into the
job's directory and that copy is unpacked there within the limits; a directory is used where it
is. Its packaging metadata (a wheel's ``METADATA``; a project's ``PKG-INFO``, ``pyproject.toml``,
``setup.cfg`` and ``setup.py``, at most :data:`MAX_METADATA_BYTES` each) is read as bytes, never
run: :mod:`emulator.pyenv` decides from it whether the package needs pip.

Without pip (:func:`install`, :func:`install_opened`), packages go into the job's
``<job-dir>/site-<n>`` and no code of theirs runs: wheels are unpacked, and for sdists and
directories the importable packages (directories with ``__init__.py``, in the root or in ``src/``)
and top-level modules are copied. Dependencies are not installed (like ``pip --no-deps``); replicas
import them from the service's own interpreter (numpy is there).

For pip (:func:`copy_for_pip`), pip is given a checked copy: of an archive, the very copy that was
unpacked within the limits; of a directory, a whole copy made under the rules below. So pip never
reads a file outside the roots, a symlink swapped in after the check, or an archive that unpacks to
more than the limits allow.

Copying never follows a symlink out of the allowed roots (a link that stays inside them is copied as
its content), and what one package may unpack or copy is capped (:class:`Limits`, see
:mod:`emulator.archives`). Where packages may come from is :mod:`emulator.paths`. Every problem is a
:class:`PackageError` whose message is meant for the API caller.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .archives import Budget, Limits, extract_tar, extract_zip
from .paths import PackageError, is_under, real_path

# PackageError and Limits are re-exported: they are part of install()'s contract.
__all__ = [
    "MAX_METADATA_BYTES",
    "METADATA_FILES",
    "Limits",
    "OpenedPackage",
    "PackageError",
    "copy_for_pip",
    "install",
    "install_opened",
    "opened",
]

_SKIP_DIRS = {"__pycache__", "build", "dist", ".git", ".venv", ".tox", ".mypy_cache"}
_SKIP_MODULES = {"setup.py", "conftest.py"}
# What a project root may hold that says how it is built and what it requires.
METADATA_FILES = ("PKG-INFO", "pyproject.toml", "setup.cfg", "setup.py")
# Real metadata files are a few KB; a bigger one is not read (pip decides about that package).
MAX_METADATA_BYTES = 1024 * 1024
_TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar")


@dataclass
class _Copy:
    roots: list[Path]  # real paths a symlink may lead to
    outside: str  # names those roots in messages
    budget: Budget


@dataclass(frozen=True)
class OpenedPackage:
    """One package of a job, checked and readable (see the module doc)."""

    source: Path  # the checked real path the job named
    kind: str  # "wheel", "sdist" or "directory"
    tree: Path  # archives: the real path their copy was unpacked to; directories: the source
    archive: Path | None  # archives: the checked copy (what pip is given); directories: None
    roots: tuple[Path, ...]  # real paths a symlink in `tree` may lead to
    # A wheel's "METADATA", or the project root's METADATA_FILES that exist, by file name; None
    # when the file is there but cannot be read as metadata (too big, not a regular file).
    metadata: dict[str, bytes | None]

    @property
    def project(self) -> Path:
        """Where the package's own files start: an sdist's ``<name>-<version>/``, else the tree."""
        return _single_root(self.tree) if self.kind == "sdist" else self.tree

    def _context(self, limits: Limits) -> _Copy:
        outside = "the allowed directories" if self.kind == "directory" else "the archive"
        return _Copy(list(self.roots), outside, Budget(limits, f"package {self.source.name}"))


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
    with opened(sources, site.parent, roots=roots, limits=limits) as found:
        install_opened(found, site, limits=limits)


@contextlib.contextmanager
def opened(
    sources: Sequence[Path],
    scratch: Path,
    *,
    roots: Sequence[Path] = (),
    limits: Limits | None = None,
) -> Iterator[list[OpenedPackage]]:
    """Open every package in ``sources`` (real paths, checked); unpacked copies live in a
    temporary directory under ``scratch`` until the ``with`` block ends."""
    limits = limits or Limits()
    scratch.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="packages-", dir=scratch))
    try:
        yield [_open(src, work / str(i), roots, limits) for i, src in enumerate(sources)]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _open(src: Path, work: Path, roots: Sequence[Path], limits: Limits) -> OpenedPackage:
    try:
        st = os.stat(src)
    except FileNotFoundError:
        raise PackageError(f"package {src} does not exist") from None
    name = src.name.lower()
    if stat.S_ISDIR(st.st_mode):
        allowed = tuple(real_path(r) for r in roots) or (src,)
        ctx = _Copy(list(allowed), "the allowed directories", Budget(limits, f"package {src.name}"))
        return OpenedPackage(src, "directory", src, None, allowed, _project_metadata(src, ctx))
    if not stat.S_ISREG(st.st_mode):
        raise PackageError(f"package {src}: not a regular file or a directory")
    if not name.endswith((".whl", ".zip", *_TAR_SUFFIXES)):
        raise PackageError(
            f"package {src}: expected a directory, a wheel (.whl) or an sdist (.tar.gz, .tgz, .zip)"
        )
    # An archive is at most what it unpacks to plus its headers (tar blocks, zip entries).
    archive_limits = Limits(limits.max_bytes + 4096 * (limits.max_files + 16), limits.max_files)
    if st.st_size > archive_limits.max_bytes:
        raise PackageError(
            f"package {src.name} is a {st.st_size / (1024 * 1024):.0f} MB archive, more than "
            f"one that unpacks to at most {limits.mb} MB can be; this emulator's limit is "
            f"--max-unpacked-mb {limits.mb}"
        )
    # The copy keeps the file's name: pip reads a wheel's tags and an sdist's version from it.
    work.mkdir(parents=True)
    archive = work / src.name
    _copy_file(src, archive, _Copy([], "", Budget(archive_limits, f"package {src.name}")))
    tree = work / "unpacked"
    tree.mkdir()
    tree = real_path(tree)
    if name.endswith(_TAR_SUFFIXES):
        extract_tar(archive, tree, limits)
    else:
        extract_zip(archive, tree, limits)
    kind = "wheel" if name.endswith(".whl") else "sdist"
    ctx = _Copy([tree], "the archive", Budget(limits, f"package {src.name}"))
    if kind == "wheel":
        metadata = _wheel_metadata(tree, ctx)
    else:
        metadata = _project_metadata(_single_root(tree), ctx)
    return OpenedPackage(src, kind, tree, archive, (tree,), metadata)


def _single_root(tmp: Path) -> Path:
    # An sdist holds one top-level directory `<name>-<version>/`.
    children = [p for p in tmp.iterdir() if p.name not in _SKIP_DIRS]
    if len(children) == 1 and not children[0].is_symlink() and children[0].is_dir():
        return children[0]
    return tmp


def _project_metadata(root: Path, ctx: _Copy) -> dict[str, bytes | None]:
    found: dict[str, bytes | None] = {}
    for name in METADATA_FILES:
        entry = _follow(root / name, ctx)
        if entry is not None:
            found[name] = _read_metadata_file(*entry)
    return found


def _wheel_metadata(tree: Path, ctx: _Copy) -> dict[str, bytes | None]:
    infos = [p for p in tree.iterdir() if p.name.endswith(".dist-info") and p.is_dir()]
    if len(infos) != 1:
        return {}  # not built by a wheel builder: nothing declared
    entry = _follow(infos[0] / "METADATA", ctx)
    return {} if entry is None else {"METADATA": _read_metadata_file(*entry)}


def _read_metadata_file(path: Path, st: os.stat_result) -> bytes | None:
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_METADATA_BYTES:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with open(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        data = f.read(MAX_METADATA_BYTES + 1)
    return data if len(data) <= MAX_METADATA_BYTES else None


def install_opened(found: Sequence[OpenedPackage], site: Path, *, limits: Limits) -> None:
    """Install opened packages into ``site`` without running their code (see the module doc)."""
    site.mkdir(parents=True, exist_ok=True)
    for pkg in found:
        ctx = pkg._context(limits)
        if pkg.kind == "wheel":
            _copy_wheel_tree(pkg.tree, site, ctx)
        else:
            _copy_project(pkg.project, site, ctx)


def copy_for_pip(pkg: OpenedPackage, dest: Path, *, limits: Limits) -> Path:
    """A checked copy of ``pkg`` in directory ``dest``, for pip to read; returns its path.

    An archive's copy is the one that was unpacked within the limits; a directory is copied whole
    (every file but caches, VCS and build outputs; symlinks only into the roots, as content).
    """
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / pkg.source.name
    if pkg.archive is not None:
        try:
            os.link(pkg.archive, target)
        except OSError:
            shutil.copyfile(pkg.archive, target)
        return target
    _copy_tree(pkg.tree, target, pkg._context(limits), replace=True)
    return target


def _copy_wheel_tree(root: Path, site: Path, ctx: _Copy) -> None:
    # A wheel's root is its purelib/platlib content; `<name>.data/{purelib,platlib}` go there too,
    # scripts and headers are not needed to run `python -m module`.
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
