"""Nothing outside ``<state-dir>/gcs`` and the allowed roots is read or written (execute mode).

Every test plants a sentinel directory outside the roots and checks afterwards that nothing was
created in it and that none of its content reached the job's directory, whatever the request
tried: symlinked buckets, symlinks inside package directories, ``..``, absolute paths, symlinks
created after the job was accepted.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from google.api_core import exceptions as gexc
from google.cloud.aiplatform_v1 import types as aip

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

SENTINEL = b"outside-the-roots-3f1c9a"
LONG_RUN = ["--epochs", "1", "--steps-per-epoch", "2000", "--step-sleep", "0.05"]


@dataclass
class Dirs:
    allowed: Path  # given to the server with --allow-root
    outside: Path  # no root contains it
    initial: list[str]  # what `outside` held before any test ran


def snapshot(root: Path) -> list[str]:
    """Every entry under ``root``, symlinks not followed."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            found.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(found)


def copy_trainer(dest: Path) -> Path:
    shutil.copytree(TRAINER_DIR, dest, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    return dest


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> Dirs:
    allowed = tmp_path_factory.mktemp("allowed")
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_bytes(SENTINEL)
    (outside / "secret.py").write_bytes(b"SECRET = '" + SENTINEL + b"'\n")
    pkg = copy_trainer(outside / "pkgroot")
    (pkg / "trainer" / "stolen.txt").write_bytes(SENTINEL)
    return Dirs(allowed, outside, snapshot(outside))


@pytest.fixture(scope="module")
def box(dirs: Dirs) -> Iterator[EmulatorProcess]:
    with running_emulator(*EXECUTE_ARGS, "--allow-root", str(dirs.allowed)) as emu:
        (emu.state_dir / "gcs").mkdir(exist_ok=True)
        yield emu


def assert_outside_untouched(dirs: Dirs) -> None:
    assert snapshot(dirs.outside) == dirs.initial


def assert_no_leak(emu: EmulatorProcess, job: aip.CustomJob) -> None:
    """No file the job's directory holds carries the sentinel from outside the roots."""
    job_dir = emu.state_dir / "jobs" / job_id(job)
    for dirpath, _, filenames in os.walk(job_dir):
        for name in filenames:
            path = Path(dirpath, name)
            assert not path.is_symlink(), path
            assert SENTINEL not in path.read_bytes(), path


def run(
    emu: EmulatorProcess, job: aip.CustomJob, timeout: float = 60
) -> tuple[aip.CustomJob, aip.CustomJob]:
    client = emu.client()
    created = client.create_custom_job(parent=PARENT, custom_job=job)
    return created, wait_for_state(client, created.name, TERMINAL, timeout=timeout)


def assert_failed_with_code_3(done: aip.CustomJob, *mentions: str) -> None:
    assert done.state == S.JOB_STATE_FAILED, done.state
    assert done.error.code == 3, done.error
    for text in mentions:
        assert text in done.error.message, done.error.message


# -- gs:// output directories ------------------------------------------------------------------


def test_symlinked_buckets_are_refused_at_create(box: EmulatorProcess, dirs: Dirs) -> None:
    gcs = box.state_dir / "gcs"
    (gcs / "evil").symlink_to(dirs.outside)
    (gcs / "deep").mkdir()
    (gcs / "deep" / "sub").symlink_to(dirs.outside)
    (gcs / "dangling").symlink_to(dirs.outside / "not-yet")
    (gcs / "loop").symlink_to(gcs / "loop")
    (gcs / "model-link" / "run").mkdir(parents=True)
    (gcs / "model-link" / "run" / "model").symlink_to(dirs.outside)
    client = box.client()
    for uri, mentions in [
        ("gs://evil/run1", "outside"),
        ("gs://evil", "outside"),
        ("gs://evil/a/b/c", "outside"),
        ("gs://deep/sub/run", "outside"),
        ("gs://dangling/run", "outside"),
        ("gs://loop/run", "loop"),
        ("gs://model-link/run", "model"),
    ]:
        with pytest.raises(gexc.BadRequest, match="output_uri_prefix") as info:
            client.create_custom_job(parent=PARENT, custom_job=make_job("evil", output=uri))
        assert mentions in info.value.message, (uri, info.value.message)
    with pytest.raises(gexc.BadRequest, match=r"package_uris\[0\].*outside"):
        client.create_custom_job(
            parent=PARENT,
            custom_job=make_job("evil", pools=[trainer_pool(package_uris=["gs://evil/pkgroot"])]),
        )
    assert_outside_untouched(dirs)


@pytest.mark.parametrize(
    "uri",
    [
        "gs://../x",
        "gs://./x",
        "gs://..",
        "gs://",
        "gs:///x",
        "gs://a/../../x",
        "gs://bucket/x/%2e%2e/%2e%2e/%2e%2e/y",
        "gs://bucket/x/..",
        "gs://AB/x",
        "gs://ab/x",
        "gs://-ab/x",
        "gs://ab-/x",
        "gs://a..b/x",
        "gs://a b/x",
        "gs://" + "a" * 64 + "/x",
        "gs://" + ".".join(["a" * 63] * 4) + "/x",
        "gs://user@bucket/x",
        "gs://bucket:80/x",
        "gs://bucket%2F../x",
    ],
)
def test_bad_bucket_names_and_dot_dot_are_refused(box: EmulatorProcess, uri: str) -> None:
    client = box.client()
    with pytest.raises(gexc.BadRequest, match="output_uri_prefix"):
        client.create_custom_job(parent=PARENT, custom_job=make_job("bad", output=uri))
    with pytest.raises(gexc.BadRequest, match=r"package_uris\[0\]"):
        client.create_custom_job(
            parent=PARENT, custom_job=make_job("bad", pools=[trainer_pool(package_uris=[uri])])
        )


@pytest.mark.parametrize(
    "uri",
    ["gs://my.bucket.name/x", "gs://a_b-c9/x", "gs://abc", "gs://" + "a" * 63, "gs://bkt/./x//y"],
)
def test_valid_bucket_names_are_accepted(sim: EmulatorProcess, uri: str) -> None:
    created = sim.client().create_custom_job(parent=PARENT, custom_job=make_job("ok", output=uri))
    assert created.state == S.JOB_STATE_QUEUED


def test_symlink_inside_gcs_that_stays_inside_is_followed(box: EmulatorProcess) -> None:
    gcs = box.state_dir / "gcs"
    (gcs / "real-bucket").mkdir()
    (gcs / "alias-bucket").symlink_to(gcs / "real-bucket")
    run_dir = unique()
    _created, done = run(box, make_job("alias", output=f"gs://alias-bucket/{run_dir}"))
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message
    assert (gcs / "real-bucket" / run_dir / "model" / "model.npz").is_file()


def test_symlinks_created_after_create_fail_the_job_with_code_3(dirs: Dirs) -> None:
    # One running slot, taken by a long job: the hostile jobs wait in QUEUED while the links
    # that make them hostile are planted.
    with running_emulator(*EXECUTE_ARGS, "--max-running-jobs", "1") as emu:
        client = emu.client()
        gcs = emu.state_dir / "gcs"
        gcs.mkdir(exist_ok=True)
        blocker = client.create_custom_job(
            parent=PARENT, custom_job=make_job("blocker", pools=[trainer_pool(args=LONG_RUN)])
        )
        wait_for_state(client, blocker.name, [S.JOB_STATE_RUNNING], timeout=30)
        later_bucket = client.create_custom_job(
            parent=PARENT, custom_job=make_job("bucket", output="gs://later/run1")
        )
        later_model = client.create_custom_job(
            parent=PARENT, custom_job=make_job("model", output="gs://pre/run")
        )
        later_pkg = client.create_custom_job(
            parent=PARENT,
            custom_job=make_job(
                "pkg", pools=[trainer_pool(package_uris=["gs://laterpkg/pkgroot"])]
            ),
        )
        (gcs / "later").symlink_to(dirs.outside)
        (gcs / "pre" / "run").mkdir(parents=True)
        (gcs / "pre" / "run" / "model").symlink_to(dirs.outside)
        (gcs / "laterpkg").symlink_to(dirs.outside)
        client.cancel_custom_job(name=blocker.name)
        for job, mentions in [
            (later_bucket, ("output_uri_prefix", "outside")),
            (later_model, ("output_uri_prefix", "model")),
            (later_pkg, ("package", "outside")),
        ]:
            done = wait_for_state(client, job.name, TERMINAL, timeout=60)
            assert_failed_with_code_3(done, *mentions)
            assert emu.replicas(job_id(job)) == []  # nothing was started
            assert_no_leak(emu, job)
    assert_outside_untouched(dirs)


# -- package paths -----------------------------------------------------------------------------


def test_package_paths_leaving_the_roots_are_refused_at_create(
    box: EmulatorProcess, dirs: Dirs
) -> None:
    link = dirs.allowed / f"link-{unique()}"
    link.symlink_to(dirs.outside / "pkgroot")
    client = box.client()
    for uri in [
        str(link),
        f"file://{link}",
        str(link / "trainer"),
        f"{dirs.allowed}/../{dirs.outside.name}/pkgroot",
        f"file://{dirs.allowed}/../{dirs.outside.name}/pkgroot",
        str(dirs.outside / "pkgroot"),
        "/etc/passwd",
        "file://localhost/etc/passwd",
        "gs://staging/../../../etc",
    ]:
        with pytest.raises(gexc.BadRequest, match=r"package_uris\[0\]"):
            client.create_custom_job(
                parent=PARENT, custom_job=make_job("esc", pools=[trainer_pool(package_uris=[uri])])
            )
    assert_outside_untouched(dirs)


def package_with(dirs: Dirs, plant: str) -> Path:
    """A copy of the trainer under the allowed root, with one hostile entry planted."""
    pkg = copy_trainer(dirs.allowed / f"pkg-{unique()}")
    if plant == "file link":
        (pkg / "trainer" / "leak.txt").symlink_to(dirs.outside / "secret.txt")
    elif plant == "dir link":
        (pkg / "trainer" / "leak").symlink_to(dirs.outside)
    elif plant == "module link":
        (pkg / "leak.py").symlink_to(dirs.outside / "secret.py")
    elif plant == "package link":
        (pkg / "trainer").rename(pkg / "real")
        (pkg / "trainer").symlink_to(dirs.outside / "pkgroot" / "trainer")
    elif plant == "relative link":
        (pkg / "trainer" / "leak").symlink_to(Path("../..") / ".." / dirs.outside.name)
    return pkg


@pytest.mark.parametrize(
    "plant", ["file link", "dir link", "module link", "package link", "relative link"]
)
def test_links_out_of_the_roots_inside_packages_fail_the_job(
    box: EmulatorProcess, dirs: Dirs, plant: str
) -> None:
    pkg = package_with(dirs, plant)
    created, done = run(
        box, make_job("leaky", pools=[trainer_pool(package_uris=[str(pkg)])]), timeout=30
    )
    link_name = {"file link": "leak.txt", "module link": "leak.py", "package link": "trainer"}
    assert_failed_with_code_3(done, "symbolic link", link_name.get(plant, "leak"))
    assert box.replicas(job_id(created)) == []
    assert_no_leak(box, created)
    assert_outside_untouched(dirs)


def test_links_inside_the_roots_are_copied_as_content(box: EmulatorProcess, dirs: Dirs) -> None:
    shared = dirs.allowed / f"shared-{unique()}"
    shared.mkdir()
    (shared / "data.txt").write_text("shared data\n")
    pkg = copy_trainer(dirs.allowed / f"pkg-{unique()}")
    task = pkg / "trainer" / "task.py"
    task.unlink()
    task.symlink_to(TRAINER_DIR / "trainer" / "task.py")  # the repository is an allowed root
    (pkg / "trainer" / "shared").symlink_to(shared)
    created, done = run(box, make_job("linked", pools=[trainer_pool(package_uris=[str(pkg)])]))
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message
    site = box.state_dir / "jobs" / job_id(created) / "site-0" / "trainer"
    assert not (site / "task.py").is_symlink()
    assert (site / "task.py").read_bytes() == (TRAINER_DIR / "trainer" / "task.py").read_bytes()
    assert not (site / "shared").is_symlink()
    assert (site / "shared" / "data.txt").read_text() == "shared data\n"


@pytest.mark.parametrize("target", [".", "..", "self"])
def test_directory_symlink_loops_fail_fast(box: EmulatorProcess, dirs: Dirs, target: str) -> None:
    pkg = copy_trainer(dirs.allowed / f"pkg-{unique()}")
    loop = pkg / "trainer" / "loop"
    loop.symlink_to(loop if target == "self" else Path(target))
    _created, done = run(box, make_job("loop", pools=[trainer_pool(package_uris=[str(pkg)])]), 30)
    assert_failed_with_code_3(done, "loop")


# -- values that reach a process ---------------------------------------------------------------


def test_arguments_too_long_for_the_os_fail_with_code_3(box: EmulatorProcess) -> None:
    pool = trainer_pool(args=["--epochs", "1", "--job-dir", "x" * 200_000])
    _created, done = run(box, make_job("huge-args", pools=[pool]))
    assert_failed_with_code_3(done, "workerpool0-0")


def test_more_replicas_than_the_machine_runs_are_refused(box: EmulatorProcess) -> None:
    pools = [trainer_pool(), trainer_pool(replicas=40)]
    with pytest.raises(gexc.BadRequest, match="at most 32 processes"):
        box.client().create_custom_job(parent=PARENT, custom_job=make_job("many", pools=pools))
