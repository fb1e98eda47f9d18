"""Windows batch files (``.bat``, ``.cmd``): read as cmd.exe reads them, never run
(``components.formats.batch``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from components import SpecFormatError, load_spec_file

JOB = """workerPoolSpecs:
- machineSpec: {machineType: n1-standard-8}
  replicaCount: 1
  containerSpec: {imageUri: gcr.io/p/t:latest}
"""
POOL = (
    "--worker-pool-spec=machine-type=%MACHINE%,replica-count=1,"
    "container-image-uri=gcr.io/p/t:latest"
)


def write(tmp_path: Path, lines: list[str], name: str = "submit.bat") -> Path:
    (tmp_path / "job.yaml").write_text(JOB)
    path = tmp_path / name
    path.write_bytes("\r\n".join(lines).encode() + b"\r\n")
    return path


def test_a_batch_file_with_continuations_comments_and_set_is_read(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            "@echo off",
            "REM Submit the training job",
            ":: settings",
            "setlocal",
            "set REGION=us-central1",
            'set "NAME=nightly run"',
            'if "%PROJECT%"=="" (',
            "  echo Set PROJECT first",
            "  exit /b 1",
            ")",
            "call gcloud ai custom-jobs create ^",
            "  --region=%REGION% ^",
            '  --display-name="%NAME%" ^',
            "  --config=%~dp0job.yaml",
            "endlocal",
        ],
    )
    loaded = load_spec_file(path, env={})
    assert loaded.spec.display_name == "nightly run"
    assert loaded.spec.region == "us-central1"
    machine = loaded.spec.worker_pool_specs[0].machine_spec
    assert machine is not None and machine.machine_type == "n1-standard-8"
    assert loaded.notes[0] == "read the gcloud command at line 11 (`gcloud ai custom-jobs create`)"
    assert any("read as a Windows batch file" in note for note in loaded.notes)


@pytest.mark.parametrize(
    "program",
    [
        "gcloud.cmd",
        '"C:\\Program Files (x86)\\Google\\Cloud SDK\\google-cloud-sdk\\bin\\gcloud.cmd"',
        "@call gcloud",
    ],
)
def test_gcloud_is_found_by_any_of_its_windows_names(tmp_path: Path, program: str) -> None:
    path = write(
        tmp_path,
        [
            "SET machine=a2-highgpu-1g",
            f"{program} ai custom-jobs create --region=us-central1 --display-name=d {POOL}"
            ",accelerator-type=NVIDIA_TESLA_A100,accelerator-count=1 --args=--lr=0.1,'--x=1'",
        ],
        "submit.cmd",
    )
    spec = load_spec_file(path, env={}).spec
    machine = spec.worker_pool_specs[0].machine_spec
    assert machine is not None and machine.machine_type == "a2-highgpu-1g"
    container = spec.worker_pool_specs[0].container_spec
    # `'` is no quote on Windows: gcloud receives it as written.
    assert container is not None and container.args == ["--lr=0.1", "'--x=1'"]


def test_the_environment_gives_what_the_file_does_not_set_and_commands_chain(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        [
            "@echo off",
            "setlocal enabledelayedexpansion",
            "gcloud config set project my-proj & gcloud ai custom-jobs create ^",
            "--region=!Region! --display-name=run-100%% --config=job.yaml",
        ],
    )
    loaded = load_spec_file(path, env={"REGION": "europe-west4"})
    assert loaded.spec.region == "europe-west4"
    assert loaded.spec.display_name == "run-100%"


def test_a_computed_value_is_kept_as_written_in_the_name(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            "gcloud ai custom-jobs create --region=us-central1 --display-name=run-%DATE:~-4% "
            "--config=job.yaml"
        ],
    )
    loaded = load_spec_file(path, env={})
    assert loaded.spec.display_name == "run-%DATE:~-4%"
    assert any("%DATE% (line 1) is computed when the batch file runs" in n for n in loaded.notes)


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (
            [
                "set /p MACHINE=Machine: ",
                f"gcloud ai custom-jobs create --region=us-central1 --display-name=d {POOL}",
            ],
            r"line 2: .*%MACHINE% is read from the terminal \(`set /p`, line 1\).*; set MACHINE "
            r"in the environment",
        ),
        (
            [
                'if "%1"=="big" (set MACHINE=n1-highmem-16) else (set MACHINE=n1-standard-4)',
                f"gcloud ai custom-jobs create --region=us-central1 --display-name=d {POOL}",
            ],
            r"%MACHINE% is set inside `if` \(line 1\), which is not evaluated here",
        ),
        (
            ["gcloud ai custom-jobs create --region=%1 --display-name=d --config=job.yaml"],
            r"%1 \(line 1\) is an argument of the batch file, not known here",
        ),
        (
            ["gcloud ai custom-jobs create --region=%REGION% --display-name=d --config=job.yaml"],
            r"%REGION% is not set .*; set REGION in the environment",
        ),
        (
            [
                "for /f %%i in (regions.txt) do gcloud ai custom-jobs create --region=%%i "
                "--display-name=d --config=job.yaml"
            ],
            r"line 1: the gcloud command is inside a `for /f` loop, which takes its values from "
            r"a file, a string or a command's output: not read here",
        ),
        (
            [
                "goto submit",
                ":submit",
                "gcloud ai custom-jobs create --region=us-central1 --display-name=d --config=job.yaml",
            ],
            r"line 1: `goto submit` jumps to a label, which this reader does not follow",
        ),
        (["echo nothing to submit", "pause"], r"no gcloud command found"),
    ],
)
def test_what_a_batch_file_reader_cannot_know_is_named(
    tmp_path: Path, lines: list[str], message: str
) -> None:
    with pytest.raises(SpecFormatError, match=message):
        load_spec_file(write(tmp_path, lines), env={})


def test_a_config_the_batch_file_writes_is_refused_and_a_goto_after_the_job_ends_it(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        [
            "echo workerPoolSpecs: > job.yaml",
            "gcloud ai custom-jobs create --region=us-central1 --display-name=d --config=job.yaml",
        ],
    )
    with pytest.raises(SpecFormatError, match=r"line 1 writes job\.yaml"):
        load_spec_file(path, env={})
    path = write(
        tmp_path,
        [
            "gcloud ai custom-jobs create --region=us-central1 --display-name=d --config=job.yaml",
            "goto :eof",
            "gcloud ai custom-jobs create --region=us-central1 --display-name=e --config=job.yaml",
        ],
    )
    assert load_spec_file(path, env={}).spec.display_name == "d"


def test_a_hostile_batch_file_ends_in_an_error_within_bounds(tmp_path: Path) -> None:
    doubling = ["set A=xxxxxxxxxxxxxxxx", *["set A=%A%%A%"] * 40, "gcloud ai custom-jobs create"]
    started = time.process_time()
    with pytest.raises(SpecFormatError, match=r"more than \d+ characters"):
        load_spec_file(write(tmp_path, doubling), env={})
    carets = ["gcloud ai custom-jobs create ^"] * 5000 + ["--region=us-central1"]
    with pytest.raises(SpecFormatError):
        load_spec_file(write(tmp_path, carets), env={})
    assert time.process_time() - started < 10


def test_an_unclosed_block_reads_to_the_end_within_bounds(tmp_path: Path) -> None:
    lines = ["if exist x.txt (", *["  echo (still open ^"] * 4000, "gcloud ai custom-jobs create"]
    started = time.process_time()
    with pytest.raises(SpecFormatError, match=r"line 1: the gcloud command is inside `if`"):
        load_spec_file(write(tmp_path, lines), env={})
    assert time.process_time() - started < 10
