"""Reading files that a pull request may bring: regular files only, never more than a cap.

A path in a job spec, a ``--config`` flag or the stack configuration may name a device
(``/dev/zero`` reads forever), a FIFO (blocks forever), a directory, a kernel pseudo-file
(``/proc/self/environ`` says it is a regular file of 0 bytes, and holds the process's
secrets), or a symlink to any of them. Every path this package reads goes through
``read_bytes_capped``: it opens without blocking, checks what the open file *is* (not what the
path looked like a moment before), reads at most ``limit`` bytes and no more than the file's
size says it holds.

A path a stack's settings name (``training:prices``, ``training:catalogOverlay``) must also lie
in the project's folder, symlinks resolved (``outside_read_roots``): those settings come with a
pull request, and a sheet naming ``/etc/passwd`` or ``~/.ssh/id_rsa`` must not be read. The
person running may allow more folders by naming them in ``GPU_TRAINING_READ_ROOTS``
(``os.pathsep``-separated), which no file of the stack can set. A path named on the command
line (``--prices``, ``--catalog-overlay``) is the user's own choice and may lie anywhere.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ._errors import TrainingJobError

__all__ = [
    "READ_ROOTS_ENV",
    "FileReadError",
    "is_local_relative",
    "is_regular_file",
    "local_path_resolved",
    "outside_read_roots",
    "read_bytes_capped",
    "read_roots",
    "read_text_capped",
]

READ_ROOTS_ENV = "GPU_TRAINING_READ_ROOTS"
"""Folders besides the project's that a stack's settings may name files in (``os.pathsep``
between them): set by the person running, never by the stack."""


class FileReadError(TrainingJobError, ValueError):
    """A file cannot be read as a regular file within the cap; the message names the path."""


def _printable(text: str) -> str:
    """``text`` with control characters escaped: a path in a message never acts on a terminal."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def read_bytes_capped(path: str | os.PathLike[str], limit: int, *, what: str = "file") -> bytes:
    """The bytes of the regular file at ``path``; raises ``FileReadError`` otherwise.

    ``what`` names the file in messages (``spec file``, ``--config file``...).
    """
    shown = _printable(os.fspath(path))
    try:
        # O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise FileReadError(f"{shown}: no such file") from None
    except ValueError:  # an embedded NUL byte
        raise FileReadError(f"{shown!r}: not a valid path (it holds a NUL byte)") from None
    except OSError as exc:
        raise FileReadError(f"{shown}: cannot read the {what}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        mode = info.st_mode
        if not stat.S_ISREG(mode):
            raise FileReadError(f"{shown}: is {_kind(mode)}, not a {what}")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise FileReadError(f"{shown}: larger than {limit:,} bytes; not a {what}")
        if size > info.st_size:
            # /proc and /sys files say they are regular and empty, and read as the kernel's
            # view of the process (its environment, with every secret in it): a file on disk
            # never holds more than its size.
            raise FileReadError(
                f"{shown}: holds more than the {info.st_size:,} bytes its size says (a /proc or "
                f"/sys file, or one written to while read); not a {what}"
            )
        return b"".join(chunks)
    except OSError as exc:
        raise FileReadError(f"{shown}: cannot read the {what}: {exc.strerror}") from None
    finally:
        os.close(fd)


def read_text_capped(path: str | os.PathLike[str], limit: int, *, what: str = "file") -> str:
    """``read_bytes_capped`` decoded as UTF-8 (a BOM is dropped)."""
    data = read_bytes_capped(path, limit, what=what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise FileReadError(f"{_printable(os.fspath(path))}: not UTF-8 text") from None


def is_regular_file(path: Path) -> bool:
    """True for a regular file (following symlinks); never raises."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (OSError, ValueError):
        return False


def read_roots(project: Path) -> tuple[Path, ...]:
    """The folders a stack's settings may name files in: ``project`` and those of
    ``READ_ROOTS_ENV``, each resolved."""
    named = [p for p in os.environ.get(READ_ROOTS_ENV, "").split(os.pathsep) if p.strip()]
    return (project.resolve(), *(Path(p).resolve() for p in named))


def outside_read_roots(path: Path, project: Path) -> str | None:
    """None when ``path`` (symlinks resolved) lies in ``project`` or a folder of
    ``READ_ROOTS_ENV``; else a sentence saying so, for the setting's error."""
    try:
        real = path.resolve()
    except (OSError, RuntimeError, ValueError):
        return "cannot be resolved (a symlink loop or a NUL byte)"
    if any(real == root or real.is_relative_to(root) for root in read_roots(project)):
        return None
    return (
        f"lies outside the project folder {project} (symlinks resolved): a stack reads files "
        f"in its project only; name other folders in {READ_ROOTS_ENV} to allow them"
    )


def is_local_relative(uri: str) -> bool:
    """Whether a spec's package URI is a relative local path (neither a URI nor absolute)."""
    return "://" not in uri and not uri.startswith("/")


def local_path_resolved(base: Path, uri: str) -> str:
    """The relative local path ``uri`` made absolute against ``base``, symlinks resolved; a
    path that is not there (yet) resolved as far as it goes. Raises ``OSError``,
    ``RuntimeError`` or ``ValueError`` for a path that cannot be resolved (a symlink loop)."""
    target = base / uri
    try:
        # Strict first: a link loop raises (RuntimeError before Python 3.13, OSError ELOOP
        # since), where a plain resolve() on 3.13 hands the looping path back.
        return str(target.resolve(strict=True))
    except FileNotFoundError:
        return str(target.resolve())  # not there (yet): the validator says so if it matters
