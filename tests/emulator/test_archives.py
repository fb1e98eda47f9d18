"""Hostile package archives (wheels, sdists, zips): bombs, corrupt files, escaping members.

The server runs with ``--max-unpacked-mb 1``, so a bomb needs only a few KB here; every such job
must fail with code 3 (INVALID_ARGUMENT) and a message naming the problem, never 13, and nothing
may be written outside the job's directory.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from google.cloud.aiplatform_v1 import types as aip

from emulator import archives, cli
from emulator.testing import EmulatorProcess, running_emulator, wait_for_state

from .conftest import (
    EXECUTE_ARGS,
    PARENT,
    TERMINAL,
    TRAINER_DIR,
    S,
    job_id,
    make_job,
    trainer_pool,
    unique,
)

MB = 1024 * 1024


def trainer_files() -> dict[str, bytes]:
    pkg = TRAINER_DIR / "trainer"
    return {f"trainer/{p.name}": p.read_bytes() for p in sorted(pkg.glob("*.py"))}


@pytest.fixture(scope="module")
def where(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(allowed root holding the archives, a sentinel directory outside every root)."""
    return tmp_path_factory.mktemp("archives"), tmp_path_factory.mktemp("outside")


@pytest.fixture(scope="module")
def small(where: tuple[Path, Path]) -> Iterator[EmulatorProcess]:
    allowed, _ = where
    with running_emulator(
        *EXECUTE_ARGS, "--allow-root", str(allowed), "--max-unpacked-mb", "1"
    ) as emu:
        yield emu


def place(where: tuple[Path, Path], name: str) -> Path:
    """A fresh path named ``name`` under the allowed root."""
    folder = where[0] / unique()
    folder.mkdir()
    return folder / name


def wheel(path: Path, extra: dict[str, bytes] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in {**trainer_files(), **(extra or {})}.items():
            zf.writestr(name, data)
    return path


def add_file(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def sdist(
    path: Path, extra: dict[str, bytes] | None = None, members: list[tarfile.TarInfo] | None = None
) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        add_file(tar, "trainer-0.1.0/setup.py", b"raise SystemExit('never run')\n")
        for name, data in {**trainer_files(), **(extra or {})}.items():
            add_file(tar, f"trainer-0.1.0/{name}", data)
        for info in members or []:
            tar.addfile(info, io.BytesIO(b"x" * info.size) if info.isfile() else None)
    return path


def run_package(emu: EmulatorProcess, uri: str) -> tuple[aip.CustomJob, aip.CustomJob]:
    client = emu.client()
    created = client.create_custom_job(
        parent=PARENT, custom_job=make_job("archive", pools=[trainer_pool(package_uris=[uri])])
    )
    return created, wait_for_state(client, created.name, TERMINAL, timeout=60)


def assert_code_3(done: aip.CustomJob, *mentions: str) -> None:
    assert done.state == S.JOB_STATE_FAILED, done.state
    assert done.error.code == 3, done.error
    for text in mentions:
        assert text in done.error.message, done.error.message


def job_files(emu: EmulatorProcess, job: aip.CustomJob) -> list[Path]:
    root = emu.state_dir / "jobs" / job_id(job)
    return [Path(d, f) for d, _, files in os.walk(root) for f in files]


def test_small_wheel_and_sdist_still_install(
    small: EmulatorProcess, where: tuple[Path, Path]
) -> None:
    for archive in (
        wheel(place(where, "trainer-0.1.0-py3-none-any.whl")),
        sdist(place(where, "trainer-0.1.0.tar.gz")),
        sdist(place(where, "trainer-0.1.0.tar.gz"), members=[tar_member("trainer-0.1.0/ok.txt")]),
    ):
        _, done = run_package(small, str(archive))
        assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message


BOMB = {"trainer/zeros.bin": b"\0" * (3 * MB)}


@pytest.mark.parametrize(
    ("name", "build"),
    [
        ("trainer-0.1.0-py3-none-any.whl", lambda p: wheel(p, BOMB)),
        ("trainer-0.1.0.tar.gz", lambda p: sdist(p, BOMB)),
        (
            "trainer-0.1.0.zip",
            lambda p: wheel(p, {f"trainer-0.1.0/{k}": v for k, v in BOMB.items()}),
        ),
    ],
)
def test_archive_bombs_are_refused_before_unpacking(
    small: EmulatorProcess, where: tuple[Path, Path], name: str, build: Callable[[Path], Path]
) -> None:
    archive = build(place(where, name))
    assert archive.stat().st_size < 200_000  # a few KB that would unpack to 3 MB
    created, done = run_package(small, str(archive))
    assert_code_3(done, "1 MB", "--max-unpacked-mb")
    assert not [p for p in job_files(small, created) if p.name == "zeros.bin"]


def test_tar_declared_size_is_checked_before_reading(
    small: EmulatorProcess, where: tuple[Path, Path]
) -> None:
    # A header that claims 10 GB with no data behind it: refused for its size, not for the
    # truncation that reading it would find.
    info = tarfile.TarInfo("trainer-0.1.0/trainer/huge.bin")
    info.size = 10 * 1024 * MB
    header = info.tobuf(format=tarfile.GNU_FORMAT)
    archive = place(where, "trainer-0.1.0.tar.gz")
    archive.write_bytes(gzip.compress(header))
    _, done = run_package(small, str(archive))
    assert_code_3(done, "huge.bin", "--max-unpacked-mb")


def test_too_many_members_are_refused(small: EmulatorProcess, where: tuple[Path, Path]) -> None:
    archive = place(where, "trainer-0.1.0-py3-none-any.whl")
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(archives.MAX_FILES + 1):
            zf.writestr(f"trainer/f{i}.txt", b"")
    created, done = run_package(small, str(archive))
    assert_code_3(done, f"more than {archives.MAX_FILES} files")
    assert len(job_files(small, created)) < 10


def valid_sdist_bytes(tmp: Path) -> bytes:
    return sdist(tmp / "valid.tar.gz").read_bytes()


CORRUPT: dict[str, Callable[[bytes], tuple[str, bytes]]] = {
    "garbage tar.gz": lambda ok: ("trainer-0.1.0.tar.gz", b"this is not a tarball at all"),
    "truncated gzip": lambda ok: ("trainer-0.1.0.tar.gz", ok[: len(ok) // 2]),
    "corrupt deflate": lambda ok: (
        "trainer-0.1.0.tar.gz",
        ok[:40] + bytes(b ^ 0x5A for b in ok[40:80]) + ok[80:],
    ),
    "gzip of garbage": lambda ok: ("trainer-0.1.0.tgz", gzip.compress(b"\x01" * 5000)),
    "plain tar garbage": lambda ok: ("trainer-0.1.0.tar", b"\x07" * 1024),
    "garbage zip": lambda ok: ("trainer-0.1.0.zip", b"PK\x03\x04" + b"\x00" * 100),
    "garbage wheel": lambda ok: ("trainer-0.1.0-py3-none-any.whl", b"not a zip"),
    "empty wheel": lambda ok: ("trainer-0.1.0-py3-none-any.whl", b""),
}


@pytest.mark.parametrize("case", list(CORRUPT))
def test_corrupt_archives_fail_with_code_3(
    small: EmulatorProcess, where: tuple[Path, Path], case: str, tmp_path: Path
) -> None:
    name, data = CORRUPT[case](valid_sdist_bytes(tmp_path))
    archive = place(where, name)
    archive.write_bytes(data)
    _, done = run_package(small, str(archive))
    assert_code_3(done, "archive", name)


def corrupt_zip_member() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in trainer_files().items():
            zf.writestr(name, data * 20)
    raw = bytearray(buf.getvalue())
    start = raw.index(b"PK\x03\x04") + 30 + len("trainer/__init__.py")
    for i in range(start, start + 60):
        raw[i] ^= 0xFF
    return bytes(raw)


def test_corrupt_zip_member_fails_with_code_3(
    small: EmulatorProcess, where: tuple[Path, Path]
) -> None:
    archive = place(where, "trainer-0.1.0-py3-none-any.whl")
    archive.write_bytes(corrupt_zip_member())
    _, done = run_package(small, str(archive))
    assert_code_3(done, "archive")


def tar_member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = 5 if kind == tarfile.REGTYPE else 0
    return info


def hostile_tar_members(outside: Path) -> dict[str, tuple[tarfile.TarInfo, str]]:
    escape = "../" * 40 + str(outside / "pwned.py").lstrip("/")
    return {
        "absolute": (tar_member(str(outside / "abs.py")), "abs.py"),
        "dot-dot": (tar_member("trainer-0.1.0/../../dotdot.py"), "dotdot.py"),
        "deep dot-dot": (tar_member(escape), "pwned.py"),
        "absolute symlink": (
            tar_member("trainer-0.1.0/trainer/link", tarfile.SYMTYPE, str(outside)),
            "link",
        ),
        "escaping symlink": (
            tar_member("trainer-0.1.0/trainer/link", tarfile.SYMTYPE, "../" * 40 + "etc"),
            "link",
        ),
        "hard link": (
            tar_member("trainer-0.1.0/trainer/hard", tarfile.LNKTYPE, str(outside / "x")),
            "hard",
        ),
        "device": (tar_member("trainer-0.1.0/trainer/null", tarfile.CHRTYPE), "null"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "absolute",
        "dot-dot",
        "deep dot-dot",
        "absolute symlink",
        "escaping symlink",
        "hard link",
        "device",
    ],
)
def test_escaping_tar_members_fail_with_code_3(
    small: EmulatorProcess, where: tuple[Path, Path], case: str
) -> None:
    _, outside = where
    before = sorted(os.listdir(outside))
    member, mentions = hostile_tar_members(outside)[case]
    archive = sdist(place(where, "trainer-0.1.0.tar.gz"), members=[member])
    created, done = run_package(small, str(archive))
    assert_code_3(done, mentions)
    assert sorted(os.listdir(outside)) == before
    assert small.replicas(job_id(created)) == []


@pytest.mark.parametrize("member", ["../evil.py", "/abs/evil.py", "trainer/../../evil.py"])
def test_escaping_zip_members_fail_with_code_3(
    small: EmulatorProcess, where: tuple[Path, Path], member: str
) -> None:
    archive = place(where, "trainer-0.1.0-py3-none-any.whl")
    with zipfile.ZipFile(wheel(archive), "a") as zf:
        zf.writestr(zipfile.ZipInfo(member), b"x = 1\n")
    created, done = run_package(small, str(archive))
    assert_code_3(done, "evil.py")
    assert not [p for p in job_files(small, created) if p.name == "evil.py"]
    assert not Path("/abs/evil.py").exists()


def test_max_unpacked_mb_flag() -> None:
    parser = cli.build_parser()
    assert parser.parse_args(["serve"]).max_unpacked_mb == 512
    assert parser.parse_args(["serve", "--max-unpacked-mb", "2"]).max_unpacked_mb == 2
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--max-unpacked-mb", "0"])
