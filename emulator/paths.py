"""Where a job's packages and outputs live on this machine, and the roots they must stay under.

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

Every problem is a :class:`PackageError` whose message is meant for the API caller.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = [
    "PackageError",
    "bucket_problem",
    "contained",
    "is_under",
    "output_dirs",
    "parse_gcs_uri",
    "prepare_output_dir",
    "read_allowed",
    "read_regular",
    "real_path",
    "resolve_package",
]

GCS_DIR = "gcs"
# What base_output_directory gives each replica (AIP_MODEL_DIR, AIP_CHECKPOINT_DIR,
# AIP_TENSORBOARD_LOG_DIR); the service creates them so that none can be a symlink out of gcs/.
OUTPUT_SUBDIRS = ("model", "checkpoints", "logs")
MAX_OBJECT_NAME_BYTES = 1024  # Cloud Storage's own limit
MAX_NAME_BYTES = 255  # one path component on Linux file systems

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BUCKET = re.compile(r"[a-z0-9](?:[a-z0-9_.-]*[a-z0-9])?")


class PackageError(ValueError):
    """A package URI or package that cannot be used; the message is meant for the API caller."""


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


def is_under(path: Path, root: Path) -> bool:
    """True when ``path`` is ``root`` or lies below it (lexically: both should be real paths)."""
    return path == root or path.is_relative_to(root)


def real_path(path: Path) -> Path:
    """``path`` with every symlink resolved; a tail that does not exist is kept as written.

    os.path.realpath walks component by component, so a symlinked ancestor of a path that does not
    exist yet is still resolved.
    """
    try:
        real = Path(os.path.realpath(path))
    except RecursionError:  # before Python 3.13, realpath recursed once per link of a chain
        real = None
    if real is not None:
        try:
            os.stat(path)  # what the system makes of it: it follows at most 40 links
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                return real  # a tail that does not exist (yet), or one we may not see
            real = None
        else:
            return real
    raise PackageError(
        f"{path}: too many levels of symbolic links (a chain longer than the system follows, "
        "or a loop)"
    )


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
    real = real_path(path)
    for root in roots:
        real_root = real_path(root)
        if is_under(real, real_root):
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


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def read_regular(path: Path, limit: int, *, what: str) -> bytes:
    """The bytes of the regular file ``path`` (a real path: no symlink is followed), at most
    ``limit`` of them; PackageError otherwise, naming ``what`` and never the file's content.

    Opened without blocking (a FIFO with no writer would wait forever) and checked as the
    open file is, not as the path looked a moment before.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PackageError(
                f"{what} is a symbolic link (it changed after it was checked)"
            ) from None
        raise PackageError(f"{what} cannot be read ({exc.strerror})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise PackageError(f"{what} is {_kind(mode)}, not a regular file")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise PackageError(f"{what} is larger than {limit:,} bytes")
        return b"".join(chunks)
    except OSError as exc:
        raise PackageError(f"{what} cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)


def read_allowed(path: Path, roots: Sequence[Path], limit: int, *, what: str) -> bytes:
    """``read_regular`` of ``path`` once it is known to lie under one of ``roots``, symlinks
    resolved (:func:`check_allowed`): the one way this service reads a file a client names."""
    return read_regular(check_allowed(path, roots), limit, what=what)


def resolve_package(uri: str, state_dir: Path, roots: Sequence[Path]) -> Path:
    """The real local path of a package URI, checked: ``gs://`` under ``<state-dir>/gcs``, every
    other path under one of ``roots``."""
    path = resolve_uri(uri, state_dir)
    if uri.startswith("gs://"):
        return contained(path, [state_dir / GCS_DIR], outside=_gcs_shown(state_dir))
    return check_allowed(path, roots)


def _gcs_shown(state_dir: Path) -> str:
    return f"{state_dir / GCS_DIR}, where gs:// URIs live"


# -- output directories --------------------------------------------------------------------------


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
    real_root = real_path(gcs)
    dirs = output_dirs(uri, state_dir)
    for path in dirs:
        _mkdirs_no_follow(real_root, path)
    return dirs[0]


def _mkdirs_no_follow(root: Path, path: Path) -> None:
    if not is_under(path, root):  # the root itself moved since `path` was resolved
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
