"""Path containment and archive checks of ``emulator.packages``, in-process (no server)."""

from __future__ import annotations

import gzip
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from emulator import packages
from emulator.packages import PackageError


@pytest.mark.parametrize(
    "name",
    ["abc", "a-b_c", "my.bucket.name", "a" * 63, ".".join(["a" * 63] * 3) + ".abc", "0x1"],
)
def test_valid_bucket_names(name: str) -> None:
    assert packages.bucket_problem(name) is None


@pytest.mark.parametrize(
    "name",
    ["", "a", "ab", "..", ".", "a..b", "-ab", "ab-", "Abc", "a b", "a/b", "a" * 64, "é" * 5],
)
def test_invalid_bucket_names(name: str) -> None:
    assert packages.bucket_problem(name)


@pytest.mark.parametrize(
    "uri",
    [
        "gs://abc/a/../b",
        "gs://abc/%2e%2e/x",
        "gs://abc/x%00y",
        "gs://abc/x\ny",
        "gs://abc/" + "x" * 256,
    ],
)
def test_gcs_uris_that_are_refused(uri: str) -> None:
    with pytest.raises(PackageError):
        packages.parse_gcs_uri(uri)


def test_gcs_uri_segments() -> None:
    assert packages.parse_gcs_uri("gs://abc//x/./y%20z/") == ("abc", ("x", "y z"))
    assert packages.parse_gcs_uri("gs://abc") == ("abc", ())


def test_symlinked_ancestor_of_a_path_that_does_not_exist_yet(tmp_path: Path) -> None:
    root, outside = tmp_path / "gcs", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "bucket").symlink_to(outside)
    with pytest.raises(PackageError, match="through the symbolic link"):
        packages.contained(root / "bucket" / "a" / "b" / "c", [root], outside="gcs")
    (root / "inner").symlink_to(root / "real")
    assert packages.contained(root / "inner" / "x", [root], outside="gcs") == root / "real" / "x"


def test_long_symlink_chains_and_loops_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "gcs"
    root.mkdir()
    for i in range(3000):
        (root / f"l{i}").symlink_to(root / f"l{i + 1}")
    with pytest.raises(PackageError, match="symbolic links"):
        packages.contained(root / "l0" / "x", [root], outside="gcs")
    (root / "loop").symlink_to(root / "loop")
    with pytest.raises(PackageError, match="loop"):
        packages.contained(root / "loop" / "x", [root], outside="gcs")


def test_output_dirs_are_created_without_following_a_swapped_in_symlink(tmp_path: Path) -> None:
    state, outside = tmp_path / "state", tmp_path / "outside"
    (state / "gcs" / "bucket").mkdir(parents=True)
    outside.mkdir()
    checked = packages.output_dirs("gs://bucket/run", state)
    # The attacker wins the race: between the check and the creation, the bucket becomes a link.
    (state / "gcs" / "bucket").rmdir()
    (state / "gcs" / "bucket").symlink_to(outside)
    with pytest.raises(PackageError, match="symbolic link"):
        packages._mkdirs_no_follow(state / "gcs", checked[0])
    assert os.listdir(outside) == []
    with pytest.raises(PackageError, match="outside"):
        packages.prepare_output_dir("gs://bucket/run", state)
    assert os.listdir(outside) == []


def test_prepare_output_dir_creates_the_aip_directories(tmp_path: Path) -> None:
    made = packages.prepare_output_dir("gs://bucket/a/b", tmp_path)
    assert made == tmp_path / "gcs" / "bucket" / "a" / "b"
    assert sorted(os.listdir(made)) == ["checkpoints", "logs", "model"]


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
