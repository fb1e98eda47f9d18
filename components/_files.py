"""Reading files that a pull request may bring: regular files only, never more than a cap.

A path in a job spec, a ``--config`` flag or the stack configuration may name a device
(``/dev/zero`` reads forever), a FIFO (blocks forever), a directory, a kernel pseudo-file
(``/proc/self/environ`` says it is a regular file of 0 bytes, and holds the process's
secrets), or a symlink to any of them. Every path this package reads goes through
``read_bytes_capped``: it opens without blocking, checks what the open file *is* (not what the
path looked like a moment before), reads at most ``limit`` bytes and no more than the file's
size says it holds.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ._errors import TrainingJobError

__all__ = ["FileReadError", "is_regular_file", "read_bytes_capped", "read_text_capped"]


class FileReadError(TrainingJobError, ValueError):
    """A file cannot be read as a regular file within the cap; the message names the path."""


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
    shown = os.fspath(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever.
        fd = os.open(shown, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
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
        raise FileReadError(f"{os.fspath(path)}: not UTF-8 text") from None


def is_regular_file(path: Path) -> bool:
    """True for a regular file (following symlinks); never raises."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (OSError, ValueError):
        return False
