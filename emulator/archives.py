"""Bounded extraction of package archives (tar, optionally compressed, and zip: sdists, wheels).

What one package may unpack is capped (:class:`Limits`, counted by a :class:`Budget`, which also
bounds copying a package directory): archive sizes are checked from their headers before
anything is extracted, a tar stream is read through :class:`_BoundedStream` so that neither an
oversized header nor skipping a member's data can decompress more than the limit, and members
with an absolute path, ``..``, a link leading out of the archive or a device type are refused.
Corrupt or truncated archives are a :class:`~emulator.paths.PackageError` like every other
problem, never a crash.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import re
import struct
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, cast

from .config import DEFAULT_MAX_UNPACKED_MB
from .paths import PackageError, is_under, real_path

__all__ = ["MAX_FILES", "Budget", "Limits", "extract_tar", "extract_zip"]

# Members of one archive, or files copied from one package directory. Python trainers hold tens
# or hundreds of files; this only stops archives built to exhaust inodes or time.
MAX_FILES = 20_000
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


@dataclass(frozen=True)
class Limits:
    """What installing one package may unpack or copy (``--max-unpacked-mb``, :data:`MAX_FILES`)."""

    max_bytes: int = DEFAULT_MAX_UNPACKED_MB * 1024 * 1024
    max_files: int = MAX_FILES

    @property
    def mb(self) -> str:
        """The byte limit in MB, as ``--max-unpacked-mb`` takes it."""
        return f"{self.max_bytes / (1024 * 1024):g}"


class Budget:
    """Counts files and bytes one package adds; PackageError once it passes its :class:`Limits`."""

    def __init__(self, limits: Limits, what: str) -> None:
        self.limits = limits
        self.what = what
        self.files = 0
        self.bytes = 0

    def add(self, files: int, size: int, name: str = "") -> None:
        """Count ``files`` more files and ``size`` more bytes (``name``: where, for the message)."""
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


# -- tar -----------------------------------------------------------------------------------------


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


def extract_tar(archive: Path, dest: Path, limits: Limits) -> None:
    """Extract tar ``archive`` (plain, gzip, bzip2 or xz) into ``dest``, headers checked first."""
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
    budget = Budget(limits, f"package {archive.name}")
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


# -- zip -----------------------------------------------------------------------------------------


def _open_zip(archive: Path, limits: Limits) -> zipfile.ZipFile:
    zf = zipfile.ZipFile(archive)
    try:
        infos = zf.infolist()
        budget = Budget(limits, f"package {archive.name}")
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


def extract_zip(archive: Path, dest: Path, limits: Limits) -> None:
    """Extract zip ``archive`` (a wheel or a zip sdist) into ``dest``, all members checked first."""
    try:
        with _open_zip(archive, limits) as zf:
            real_dest = real_path(dest)
            for member in zf.namelist():
                if not is_under(real_path(dest / member), real_dest):
                    raise PackageError(
                        f"package {archive.name}: member {member!r} escapes the archive"
                    )
            zf.extractall(dest)
    except PackageError:
        raise
    except _ARCHIVE_ERRORS as exc:
        raise _archive_error(archive, exc) from None
