"""URI mapping and path containment of ``emulator.paths``, in-process (no server)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from emulator import paths
from emulator.paths import PackageError


@pytest.mark.parametrize(
    "name",
    ["abc", "a-b_c", "my.bucket.name", "a" * 63, ".".join(["a" * 63] * 3) + ".abc", "0x1"],
)
def test_valid_bucket_names(name: str) -> None:
    assert paths.bucket_problem(name) is None


@pytest.mark.parametrize(
    "name",
    ["", "a", "ab", "..", ".", "a..b", "-ab", "ab-", "Abc", "a b", "a/b", "a" * 64, "é" * 5],
)
def test_invalid_bucket_names(name: str) -> None:
    assert paths.bucket_problem(name)


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
        paths.parse_gcs_uri(uri)


def test_gcs_uri_segments() -> None:
    assert paths.parse_gcs_uri("gs://abc//x/./y%20z/") == ("abc", ("x", "y z"))
    assert paths.parse_gcs_uri("gs://abc") == ("abc", ())


def test_symlinked_ancestor_of_a_path_that_does_not_exist_yet(tmp_path: Path) -> None:
    root, outside = tmp_path / "gcs", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "bucket").symlink_to(outside)
    with pytest.raises(PackageError, match="through the symbolic link"):
        paths.contained(root / "bucket" / "a" / "b" / "c", [root], outside="gcs")
    (root / "inner").symlink_to(root / "real")
    assert paths.contained(root / "inner" / "x", [root], outside="gcs") == root / "real" / "x"


def test_long_symlink_chains_and_loops_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "gcs"
    root.mkdir()
    for i in range(3000):
        (root / f"l{i}").symlink_to(root / f"l{i + 1}")
    with pytest.raises(PackageError, match="symbolic links"):
        paths.contained(root / "l0" / "x", [root], outside="gcs")
    (root / "loop").symlink_to(root / "loop")
    with pytest.raises(PackageError, match="loop"):
        paths.contained(root / "loop" / "x", [root], outside="gcs")


def test_output_dirs_are_created_without_following_a_swapped_in_symlink(tmp_path: Path) -> None:
    state, outside = tmp_path / "state", tmp_path / "outside"
    (state / "gcs" / "bucket").mkdir(parents=True)
    outside.mkdir()
    checked = paths.output_dirs("gs://bucket/run", state)
    # The attacker wins the race: between the check and the creation, the bucket becomes a link.
    (state / "gcs" / "bucket").rmdir()
    (state / "gcs" / "bucket").symlink_to(outside)
    with pytest.raises(PackageError, match="symbolic link"):
        paths._mkdirs_no_follow(state / "gcs", checked[0])
    assert os.listdir(outside) == []
    with pytest.raises(PackageError, match="outside"):
        paths.prepare_output_dir("gs://bucket/run", state)
    assert os.listdir(outside) == []


def test_prepare_output_dir_creates_the_aip_directories(tmp_path: Path) -> None:
    made = paths.prepare_output_dir("gs://bucket/a/b", tmp_path)
    assert made == tmp_path / "gcs" / "bucket" / "a" / "b"
    assert sorted(os.listdir(made)) == ["checkpoints", "logs", "model"]
