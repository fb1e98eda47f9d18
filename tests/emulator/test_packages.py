"""Installing packages with ``emulator.packages``, in-process (no server)."""

from __future__ import annotations

import gzip
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
