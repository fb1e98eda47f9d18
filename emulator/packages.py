"""Where a job's packages and outputs live on this machine, and how packages are installed.

URIs map to local paths:

* ``gs://bucket/path`` → ``<state-dir>/gcs/bucket/path`` (a local stand-in for Cloud Storage);
* ``file:///abs/path`` and plain paths (relative ones are relative to the service's current
  directory).

Containment: every mapped path is resolved (symlinks followed, also for a tail that does not exist
yet) and must stay under its root: ``<state-dir>/gcs`` for ``gs://`` URIs, one of the allowed roots
(the state dir, the service's current directory and every ``--allow-root``) for packages. So a
client can make the service neither read arbitrary files nor write outside its state dir, whatever
symlinks lie around. Bucket names follow Cloud Storage's rules, and no URI may hold ``..`` or a
control character.

Installing: each job gets ``<job-dir>/site-<n>``, filled without running any code of the package
(the service never executes a package's ``setup.py``, and installing through pip would need the
``wheel`` package to build sdists): wheels are unpacked, and for sdists and directories the
importable packages (directories with ``__init__.py``, in the root or in ``src/``) and top-level
modules are copied. Dependencies are not installed (like ``pip --no-deps``); replicas import them
from the service's own interpreter (numpy is there). Packages with C extensions that need compiling
are therefore not supported.

Copying never follows a symlink out of the allowed roots (a link that stays inside them is copied as
its content), and what one package may unpack or copy is capped (:class:`Limits`): archive sizes are
checked from their headers before anything is extracted. Every problem is a :class:`PackageError`
whose message is meant for the API caller.
"""

from __future__ import annotations

import bz2
import contextlib
import errno
import gzip
import lzma
import os
import re
import shutil
import stat
import struct
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, cast
from urllib.parse import unquote, urlsplit

from emulator.config import DEFAULT_MAX_UNPACKED_MB

GCS_DIR = "gcs"
# What base_output_directory gives each replica (AIP_MODEL_DIR, AIP_CHECKPOINT_DIR,
# AIP_TENSORBOARD_LOG_DIR); the service creates them so that none can be a symlink out of gcs/.
OUTPUT_SUBDIRS = ("model", "checkpoints", "logs")
# Members of one archive, or files copied from one package directory. Python trainers hold tens
# or hundreds of files; this only stops archives built to exhaust inodes or time.
MAX_FILES = 20_000
MAX_OBJECT_NAME_BYTES = 1024  # Cloud Storage's own limit
MAX_NAME_BYTES = 255  # one path component on Linux file systems

_SKIP_DIRS = {"__pycache__", "build", "dist", ".git", ".venv", ".tox", ".mypy_cache"}
_SKIP_MODULES = {"setup.py", "conftest.py"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BUCKET = re.compile(r"[a-z0-9](?:[a-z0-9_.-]*[a-z0-9])?")
# Reading a tar archive never needs more than this in one read (headers are 512 bytes, data is
# copied in 16 KiB chunks); a bigger read is a GNU long name or pax header sized to exhaust memory.
_MAX_TAR_READ = 1024 * 1024
_ARCHIVE_ERRORS = (
    tarfile.TarError,
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    EOFError,
    zlib.error,
    lzma.LZMAError,
    struct.error,
    UnicodeError,
    NotImplementedError,  # a zip compression method Python does not implement
    RuntimeError,  # an encrypted zip member
    OSError,  # gzip.BadGzipFile, bz2 "Invalid data stream", a truncated file
)


class PackageError(ValueError):
    """A package URI or package that cannot be used; the message is meant for the API caller."""


@dataclass(frozen=True)
class Limits:
    """What installing one package may unpack or copy (``--max-unpacked-mb``, :data:`MAX_FILES`)."""

    max_bytes: int = DEFAULT_MAX_UNPACKED_MB * 1024 * 1024
    max_files: int = MAX_FILES

    @property
    def mb(self) -> str:
        """The byte limit in MB, as ``--max-unpacked-mb`` takes it."""
        return f"{self.max_bytes / (1024 * 1024):g}"


# -- URIs ----------------------------------------------------------------------------------------


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be part of a path or a process argument, or None.

    NUL can be in neither (the OS call fails); other control characters are refused too, since
    no real URI needs them and they garble logs and terminals.
    """
    m = _CONTROL.search(value)
    if m is None:
        return None
    return f"contains the control character {m.group()!r} (at position {m.start()})"


def bucket_problem(name: str) -> str | None:
    """Why ``name`` is not a valid Cloud Storage bucket name, or None.

    3-63 characters (up to 222 when the name has dots, each dot-separated part at most 63) of
    lowercase letters, digits, ``-``, ``_`` and ``.``, starting and ending with a letter or digit.
    """
    if not _BUCKET.fullmatch(name):
        return (
            f"{name!r} is not a valid bucket name (lowercase letters, digits, '-', '_' and '.', "
            "starting and ending with a letter or digit)"
        )
    if "." in name:
        if len(name) > 222 or any(not 1 <= len(part) <= 63 for part in name.split(".")):
            return (
                f"{name[:70]!r} is not a valid bucket name (names with dots have at most 222 "
                "characters, and 1 to 63 between dots)"
            )
    elif not 3 <= len(name) <= 63:
        return f"{name[:70]!r} is not a valid bucket name (3 to 63 characters)"
    return None


def parse_gcs_uri(uri: str) -> tuple[str, tuple[str, ...]]:
    """(bucket, object path segments) of ``gs://bucket/path``; PackageError if it is malformed.

    The object path is percent-decoded (``%20`` is a space), empty and ``.`` segments are dropped,
    and ``..`` is refused.
    """
    if not uri.startswith("gs://"):
        raise PackageError(f"{uri[:200]!r} is not a gs://bucket/path URI")
    problem = text_problem(uri)
    if problem:
        raise PackageError(f"{uri[:200]!r} {problem}")
    bucket, _, encoded = uri[len("gs://") :].partition("/")
    problem = bucket_problem(bucket)
    if problem:
        raise PackageError(f"{uri[:200]!r}: {problem}")
    name = unquote(encoded)
    problem = text_problem(name)
    if problem:
        raise PackageError(f"{uri[:200]!r}: the decoded path {problem}")
    if len(name.encode()) > MAX_OBJECT_NAME_BYTES:
        raise PackageError(f"{uri[:200]!r}: object names have at most 1024 bytes")
    segments = tuple(s for s in name.split("/") if s not in ("", "."))
    if ".." in segments:
        raise PackageError(f"{uri[:200]!r} must not contain '..'")
    for s in segments:
        if len(s.encode()) > MAX_NAME_BYTES:
            raise PackageError(
                f"{uri[:200]!r}: the path segment {s[:40]!r}... is longer than {MAX_NAME_BYTES} "
                "bytes, more than a local file name can hold"
            )
    return bucket, segments


def gcs_to_local(uri: str, state_dir: Path) -> Path:
    """Map ``gs://bucket/path`` to ``<state-dir>/gcs/bucket/path`` (lexically: symlinks unresolved)."""
    bucket, segments = parse_gcs_uri(uri)
    return state_dir.joinpath(GCS_DIR, bucket, *segments)


def resolve_uri(uri: str, state_dir: Path) -> Path:
    """The local path a package URI stands for, lexically (not resolved, not checked)."""
    if uri.startswith("gs://"):
        return gcs_to_local(uri, state_dir)
    problem = text_problem(uri)
    if problem:
        raise PackageError(f"{uri[:200]!r} {problem}")
    parts = urlsplit(uri)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise PackageError(f"{uri!r}: file:// URIs must name a local path")
        decoded = unquote(parts.path)
        problem = text_problem(decoded)
        if problem:
            raise PackageError(f"{uri!r}: the decoded path {problem}")
        return Path(os.path.normpath(Path(decoded).absolute()))
    if parts.scheme and len(parts.scheme) > 1:  # one letter would be a Windows drive
        raise PackageError(
            f"{uri!r}: unsupported scheme {parts.scheme!r} (use gs://, file:// or a local path)"
        )
    try:
        path = Path(uri).expanduser()
    except RuntimeError:  # ~user of a user this machine does not know
        raise PackageError(f"{uri!r}: cannot expand '~' in it") from None
    return Path(os.path.normpath(path.absolute()))


# -- containment ---------------------------------------------------------------------------------


def _under(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _real(path: Path) -> Path:
    """``path`` with every symlink resolved; a tail that does not exist is kept as written.

    os.path.realpath walks component by component, so a symlinked ancestor of a path that does not
    exist yet is still resolved.
    """
    try:
        return Path(os.path.realpath(path))
    except RecursionError:
        # realpath recurses once per link in a chain; the kernel gives up after 40.
        raise PackageError(f"{path}: too many levels of symbolic links") from None


def _via_link(path: Path) -> str:
    # For messages: the first symlink on the way to `path`, which is what led it astray.
    for candidate in [*reversed(path.parents), path]:
        try:
            if candidate.is_symlink():
                return f" (through the symbolic link {candidate} -> {os.readlink(candidate)})"
        except OSError:
            return ""
    return ""


def _refuse_links_below(root: Path, real: Path) -> None:
    # realpath leaves a component unresolved only when it is part of a symlink loop (or when the
    # file system changed while it ran): a symlink still on the resolved path means one of those.
    current = root
    for part in real.relative_to(root).parts:
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise PackageError(f"{current}: {exc.strerror}") from None
        if stat.S_ISLNK(st.st_mode):
            raise PackageError(f"{current} is a symbolic link loop")


def contained(path: Path, roots: Sequence[Path], *, outside: str) -> Path:
    """The real path of ``path`` if it lies under one of ``roots``; PackageError otherwise.

    Symlinks are resolved (a not-yet-existing tail is kept, its existing ancestors are resolved),
    so a symlink anywhere on the way cannot lead out of the roots. ``outside`` ends the message:
    what the roots are, and how to add one.
    """
    real = _real(path)
    for root in roots:
        real_root = _real(root)
        if _under(real, real_root):
            _refuse_links_below(real_root, real)
            return real
    raise PackageError(f"{path}{_via_link(path)} leads outside {outside}")


def check_allowed(path: Path, roots: Sequence[Path]) -> Path:
    """The real path of package ``path``, if it lies under one of ``roots`` (see :func:`contained`)."""
    shown = ", ".join(str(r) for r in roots)
    return contained(
        path,
        roots,
        outside=(
            f"the directories this emulator may read ({shown}); "
            "start it with --allow-root DIR to allow another one"
        ),
    )


def resolve_package(uri: str, state_dir: Path, roots: Sequence[Path]) -> Path:
    """The real local path of a package URI, checked: ``gs://`` under ``<state-dir>/gcs``, every
    other path under one of ``roots``."""
    path = resolve_uri(uri, state_dir)
    if uri.startswith("gs://"):
        return contained(path, [state_dir / GCS_DIR], outside=_gcs_shown(state_dir))
    return check_allowed(path, roots)


def _gcs_shown(state_dir: Path) -> str:
    return f"{state_dir / GCS_DIR}, where gs:// URIs live"


def output_dirs(uri: str, state_dir: Path) -> list[Path]:
    """Real paths of a ``base_output_directory`` and of its model/checkpoints/logs directories.

    Each must stay under ``<state-dir>/gcs`` once symlinks are resolved; PackageError otherwise.
    """
    gcs = state_dir / GCS_DIR
    base = gcs_to_local(uri, state_dir)
    shown = _gcs_shown(state_dir)
    return [contained(base, [gcs], outside=shown)] + [
        contained(base / sub, [gcs], outside=shown) for sub in OUTPUT_SUBDIRS
    ]


def prepare_output_dir(uri: str, state_dir: Path) -> Path:
    """Create a job's output directory (and model/checkpoints/logs in it); return its real path.

    Checked as :func:`output_dirs`, then created from ``<state-dir>/gcs`` down without following
    any symlink, so one swapped in after the check makes this fail instead of creating anything
    outside the root.
    """
    gcs = state_dir / GCS_DIR
    gcs.mkdir(parents=True, exist_ok=True)
    real_root = _real(gcs)
    dirs = output_dirs(uri, state_dir)
    for path in dirs:
        _mkdirs_no_follow(real_root, path)
    return dirs[0]


def _mkdirs_no_follow(root: Path, path: Path) -> None:
    if not _under(path, root):  # the root itself moved since `path` was resolved
        raise PackageError(f"{path} leads outside {root}")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        current = root
        for part in path.relative_to(root).parts:
            current = current / part
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o777, dir_fd=fd)
            try:
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                # With O_DIRECTORY, Linux reports a symlink as ENOTDIR rather than ELOOP.
                is_link = os.path.islink(current)
                what = "a symbolic link" if is_link else f"not a directory ({exc.strerror})"
                raise PackageError(
                    f"{current} is {what} (it changed after it was checked)"
                ) from None
            os.close(fd)
            fd = child
    finally:
        os.close(fd)


# -- installing ----------------------------------------------------------------------------------


class _Budget:
    """Counts files and bytes one package adds; PackageError once it passes its :class:`Limits`."""

    def __init__(self, limits: Limits, what: str) -> None:
        self.limits = limits
        self.what = what
        self.files = 0
        self.bytes = 0

    def add(self, files: int, size: int, name: str = "") -> None:
        self.files += files
        self.bytes += size
        if self.files > self.limits.max_files:
            raise PackageError(f"{self.what} has more than {self.limits.max_files} files")
        if self.bytes > self.limits.max_bytes:
            at = f" (at {name})" if name else ""
            mb = self.limits.mb
            raise PackageError(
                f"{self.what} unpacks to more than {mb} MB{at}; this emulator's limit is "
                f"--max-unpacked-mb {mb}"
            )


@dataclass
class _Copy:
    roots: list[Path]  # real paths a symlink may lead to
    outside: str  # names those roots in messages
    budget: _Budget


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
        budget = _Budget(limits, f"package {src.name}")
        if stat.S_ISDIR(st.st_mode):
            allowed = [_real(r) for r in roots] or [src]
            _copy_project(src, site, _Copy(allowed, "the allowed directories", budget))
        elif not stat.S_ISREG(st.st_mode):
            raise PackageError(f"package {src}: not a regular file or a directory")
        elif name.endswith(".whl"):
            _install_wheel(src, site, limits, budget)
        elif name.endswith((".tar.gz", ".tgz", ".tar")):
            with tempfile.TemporaryDirectory(dir=site.parent) as tmp:
                root = _real(Path(tmp))
                _extract_tar(src, root, limits)
                _copy_project(_single_root(root), site, _Copy([root], "the archive", budget))
        elif name.endswith(".zip"):
            with tempfile.TemporaryDirectory(dir=site.parent) as tmp:
                root = _real(Path(tmp))
                _extract_zip(src, root, limits)
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


def _follow(path: Path, ctx: _Copy) -> tuple[Path, os.stat_result] | None:
    """(real path, stat) of ``path``, following a symlink only into ``ctx.roots``; None if absent."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISLNK(st.st_mode):
        return path, st
    target = _real(path)
    try:
        target_st = os.stat(target)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PackageError(f"{path} is a symbolic link loop") from None
        raise PackageError(f"{path} is a broken symbolic link ({exc.strerror})") from None
    if not any(_under(target, root) for root in ctx.roots):
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


# -- archives ------------------------------------------------------------------------------------


def _member_problem(name: str) -> str | None:
    # Sdists and wheels name their files relative to the archive: anything else is an attack.
    if "\x00" in name:
        return "has a NUL character in its name"
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        return "has an absolute path"
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        return "has '..' in its path"
    return None


def _archive_error(archive: Path, exc: BaseException) -> PackageError:
    detail = str(exc) or type(exc).__name__
    return PackageError(
        f"package {archive.name} is not a readable archive ({type(exc).__name__}: {detail[:300]})"
    )


class _BoundedStream:
    """A read-only stream over a decompressed archive that refuses to go past ``limit`` bytes.

    tarfile reads headers (and GNU long names and pax headers, sized by the archive) straight from
    the stream, and skips a member's data by seeking, which for a compressed stream means
    decompressing it: both are bounded here, before they happen.
    """

    def __init__(self, raw: IO[bytes], limit: int, archive: Path) -> None:
        self.raw = raw
        self.limit = limit
        self.archive = archive
        self.pos = 0

    def _refuse(self) -> PackageError:
        return PackageError(
            f"package {self.archive.name}: its decompressed tar stream is larger than the "
            "unpacked size limit allows"
        )

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0 or size > _MAX_TAR_READ:
            raise PackageError(
                f"package {self.archive.name} has a tar header (GNU long name or pax header) "
                f"of more than {_MAX_TAR_READ // (1024 * 1024)} MB"
            )
        if self.pos + size > self.limit:
            raise self._refuse()
        data = self.raw.read(size)
        self.pos += len(data)
        return data

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        target = {os.SEEK_SET: offset, os.SEEK_CUR: self.pos + offset}.get(whence)
        if target is None:
            raise OSError("seeking from the end is not supported")
        if target > self.limit:
            raise self._refuse()
        self.pos = self.raw.seek(target)
        return self.pos

    def tell(self) -> int:
        return self.pos


def _open_decompressed(archive: Path) -> IO[bytes]:
    # By content, not by name: a .tar.gz may be plain and a .tar compressed.
    with open(archive, "rb") as f:
        magic = f.read(6)
    if magic.startswith(b"\x1f\x8b"):
        return cast(IO[bytes], gzip.open(archive, "rb"))
    if magic.startswith(b"BZh"):
        return cast(IO[bytes], bz2.open(archive, "rb"))
    if magic.startswith(b"\xfd7zXZ\x00"):
        return cast(IO[bytes], lzma.open(archive, "rb"))
    return open(archive, "rb")


def _tar_link_problem(member: tarfile.TarInfo) -> str | None:
    if not (member.issym() or member.islnk()):
        return None
    target = member.linkname
    if target.startswith("/") or "\x00" in target:
        return f"links to the absolute path {target!r}"
    # A symlink is relative to its own directory, a hard link to the archive's root.
    base = PurePosixPath(member.name).parent if member.issym() else PurePosixPath()
    depth = 0
    for part in (base / target).parts:
        depth += -1 if part == ".." else 0 if part == "." else 1
        if depth < 0:
            return f"links outside the archive ({target!r})"
    return None


def _extract_tar(archive: Path, dest: Path, limits: Limits) -> None:
    # Room for headers and padding on top of the members' own sizes.
    stream_limit = limits.max_bytes + 4096 * (limits.max_files + 16)
    try:
        with _open_decompressed(archive) as raw:
            stream = _BoundedStream(raw, stream_limit, archive)
            with tarfile.open(fileobj=cast(IO[bytes], stream), mode="r:") as tar:
                members = _scan_tar(tar, archive, limits)
                tar.extractall(dest, members=members, filter="data")
    except PackageError:
        raise
    except tarfile.FilterError as exc:
        raise PackageError(f"package {archive.name}: refused to unpack it: {exc}") from None
    except _ARCHIVE_ERRORS as exc:
        raise _archive_error(archive, exc) from None


def _scan_tar(tar: tarfile.TarFile, archive: Path, limits: Limits) -> list[tarfile.TarInfo]:
    """Every member's header, checked before any data is read or written."""
    budget = _Budget(limits, f"package {archive.name}")
    members: list[tarfile.TarInfo] = []
    # next() reads one header; the data of the member before it is skipped only on the next
    # call, so a member whose declared size is too big is refused before it is decompressed.
    while (member := tar.next()) is not None:
        problem = _member_problem(member.name) or _tar_link_problem(member)
        if problem:
            raise PackageError(f"package {archive.name}: member {member.name!r} {problem}")
        budget.add(1, member.size if member.isfile() else 0, member.name)
        members.append(member)
    return members


def _open_zip(archive: Path, limits: Limits) -> zipfile.ZipFile:
    zf = zipfile.ZipFile(archive)
    try:
        infos = zf.infolist()
        budget = _Budget(limits, f"package {archive.name}")
        for info in infos:
            problem = _member_problem(info.filename)
            if problem:
                raise PackageError(f"package {archive.name}: member {info.filename!r} {problem}")
            # zipfile never yields more than a member's declared file_size, so the declared
            # sizes bound what extracting writes.
            budget.add(1, info.file_size, info.filename)
    except BaseException:
        zf.close()
        raise
    return zf


def _extract_zip(archive: Path, dest: Path, limits: Limits) -> None:
    try:
        with _open_zip(archive, limits) as zf:
            real_dest = _real(dest)
            for member in zf.namelist():
                if not _under(_real(dest / member), real_dest):
                    raise PackageError(
                        f"package {archive.name}: member {member!r} escapes the archive"
                    )
            zf.extractall(dest)
    except PackageError:
        raise
    except _ARCHIVE_ERRORS as exc:
        raise _archive_error(archive, exc) from None


def _install_wheel(wheel: Path, site: Path, limits: Limits, budget: _Budget) -> None:
    # A wheel's root is its purelib/platlib content; `<name>.data/{purelib,platlib}` go there too,
    # scripts and headers are not needed to run `python -m module`.
    with tempfile.TemporaryDirectory(dir=site.parent) as tmp:
        root = _real(Path(tmp))
        _extract_zip(wheel, root, limits)
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
