"""Installing packages with ``emulator.packages``, in-process (no server)."""

from __future__ import annotations

import gzip
import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from emulator import packages
from emulator.packages import PackageError


def test_tar_header_sized_to_exhaust_memory_is_refused(tmp_path: Path) -> None:
    info = tarfile.TarInfo("x")
    info.type = tarfile.GNUTYPE_LONGNAME
    info.size = 100 * 1024 * 1024  # tarfile would read the whole name into memory
    archive = tmp_path / "trainer-0.1.0.tar.gz"
    archive.write_bytes(gzip.compress(info.tobuf(format=tarfile.GNU_FORMAT) + b"\0" * 1024))
    (tmp_path / "job").mkdir()
    with pytest.raises(PackageError, match="tar header"):
        packages.install([archive], tmp_path / "job" / "site")


def test_deep_package_tree_does_not_exhaust_the_stack(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    deep = pkg
    for _ in range(1200):  # deeper than Python's recursion limit
        deep = deep / "d"
        deep.mkdir()  # one level at a time: Path.mkdir(parents=True) recurses
    (pkg / "__init__.py").write_text("")
    (deep / "leaf.txt").write_text("leaf")
    (tmp_path / "job").mkdir()
    site = tmp_path / "job" / "site"
    try:
        packages.install([pkg], site, roots=[tmp_path])
        assert (site / "pkg" / Path(*["d"] * 1200) / "leaf.txt").read_text() == "leaf"
    finally:
        # pytest's own clean-up of old temporary dirs recurses once per level and would fail.
        subprocess.run(["rm", "-rf", str(pkg), str(site)], check=True)


# -- what pip is given ---------------------------------------------------------------------------


def project(root: Path) -> Path:
    pkg = root / "proj"
    (pkg / "proj").mkdir(parents=True)
    (pkg / "proj" / "__init__.py").write_text("")
    (pkg / "setup.py").write_text("from setuptools import setup\nsetup(name='proj')\n")
    (pkg / "data.csv").write_text("a,b\n")
    for skipped in ("build", "dist", ".git", "__pycache__"):
        (pkg / skipped).mkdir()
        (pkg / skipped / "junk.txt").write_text("junk")
    return pkg


def test_pip_gets_a_whole_copy_of_a_project_without_build_outputs(tmp_path: Path) -> None:
    pkg = project(tmp_path / "allowed")
    with packages.opened([pkg], tmp_path / "job", roots=[tmp_path / "allowed"]) as (opened,):
        assert opened.kind == "directory" and opened.archive is None
        assert opened.metadata == {"setup.py": (pkg / "setup.py").read_bytes()}
        copy = packages.copy_for_pip(opened, tmp_path / "for-pip", limits=packages.Limits())
    found = sorted(str(p.relative_to(copy)) for p in copy.rglob("*"))
    assert found == ["data.csv", "proj", "proj/__init__.py", "setup.py"]


def test_pip_never_gets_a_link_out_of_the_roots(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside-the-roots")
    pkg = project(tmp_path / "allowed")
    (pkg / "proj" / "leak").symlink_to(outside)
    with (
        packages.opened([pkg], tmp_path / "job", roots=[tmp_path / "allowed"]) as (opened,),
        pytest.raises(PackageError, match="symbolic link"),
    ):
        packages.copy_for_pip(opened, tmp_path / "for-pip", limits=packages.Limits())
    leaked = [p for p in (tmp_path / "for-pip").rglob("*") if p.name == "secret.txt"]
    assert leaked == []


def test_an_archive_bigger_than_its_limits_is_refused_before_it_is_copied(tmp_path: Path) -> None:
    archive = tmp_path / "big-0.1.0.tar.gz"
    archive.write_bytes(b"\0" * 200_000)
    tiny = packages.Limits(max_bytes=1024, max_files=2)
    with (
        pytest.raises(PackageError, match="--max-unpacked-mb"),
        packages.opened([archive], tmp_path / "job", limits=tiny),
    ):
        pass
    assert list((tmp_path / "job").iterdir()) == []


def test_opening_an_archive_reads_its_metadata_from_the_checked_copy(tmp_path: Path) -> None:
    archive = tmp_path / "meta-0.1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in {
            "meta-0.1.0/PKG-INFO": b"Metadata-Version: 2.2\nName: meta\n",
            "meta-0.1.0/meta/__init__.py": b"",
        }.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with packages.opened([archive], tmp_path / "job") as (opened,):
        assert opened.kind == "sdist"
        assert opened.archive is not None
        assert opened.archive.read_bytes() == archive.read_bytes()
        assert opened.project.name == "meta-0.1.0"
        assert opened.metadata == {"PKG-INFO": b"Metadata-Version: 2.2\nName: meta\n"}
    assert list((tmp_path / "job").iterdir()) == []
