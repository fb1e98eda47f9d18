"""Issue 44, item 3 for Windows batch files: a batch file whose one submission is inside ``for``
loops over literal values (``for %%V in (list)``, ``for /L %%V in (start,step,end)``, nested)
is one job per run of the loops, read and named as a shell script's loops are
(``components.formats.batch``); forms whose values are not written in the file are refused."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from components import SpecFormatError, load_spec_file
from components.formats.batch import MAX_LOOP_DEPTH
from components.formats.load import holds_jobs, load_jobs
from components.formats.result import FileJob
from components.formats.script import MAX_LOOP_COMMANDS, MAX_LOOP_JOBS

from .helpers import loop_verdicts, run_cli

POOL = (
    "--worker-pool-spec=machine-type=n1-standard-8,replica-count=1,"
    "accelerator-type=NVIDIA_TESLA_T4,accelerator-count={gpus},"
    "container-image-uri=us-docker.pkg.dev/p/r/t:1"
)
CREATE = "gcloud ai custom-jobs create --region=us-central1"


def write(tmp_path: Path, lines: list[str], name: str = "sweep.bat") -> Path:
    path = tmp_path / name
    path.write_bytes("\r\n".join(["@echo off", *lines]).encode() + b"\r\n")
    return path


def read(job: FileJob) -> tuple[str | None, list[str], int | None]:
    """The job's display name, trainer arguments and GPU count."""
    assert job.loaded is not None, job.error
    pool = job.loaded.spec.worker_pool_specs[0]
    assert pool.container_spec is not None and pool.machine_spec is not None
    return (
        job.loaded.spec.display_name,
        list(pool.container_spec.args or []),
        pool.machine_spec.accelerator_count,
    )


def test_a_for_block_over_three_values_is_three_named_jobs(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            "for %%L in (0.01 0.1 1) do (",
            f"  {CREATE} --display-name=lr-%%L ^",
            f"    {POOL.format(gpus=1)} ^",
            "    --args=--lr=%%L",
            ")",
        ],
    )
    assert holds_jobs(path)
    jobs = load_jobs(path, env={})
    assert [job.name for job in jobs] == [
        "line 2: for L=0.01",
        "line 2: for L=0.1",
        "line 2: for L=1",
    ]
    assert [read(job) for job in jobs] == [
        ("lr-0.01", ["--lr=0.01"], 1),
        ("lr-0.1", ["--lr=0.1"], 1),
        ("lr-1", ["--lr=1"], 1),
    ]
    notes = jobs[1].loaded.notes if jobs[1].loaded else []
    assert "read the gcloud command at line 3 (`gcloud ai custom-jobs create`)" in notes
    assert (
        "line 2: the `for %%L in (...)` loop runs its body 3 times: this job is its run with L=0.1"
        in notes
    )
    with pytest.raises(
        SpecFormatError, match=r"loop at line 2 submits 3 jobs, one per value of %%L"
    ):
        load_spec_file(path, env={})


def test_a_one_line_loop_splits_its_list_as_cmd_does(tmp_path: Path) -> None:
    # Blanks, tabs, commas, semicolons and `=` separate; a quoted value keeps its spaces and
    # its quotes (gcloud receives `--display-name=big run`), `%%~D` drops them.
    path = write(
        tmp_path,
        [
            f'for %%D in ("big run",small;\ttiny=[last]) do {CREATE} --display-name=%%D '
            f'{POOL.format(gpus=1)} "--args=--tag=%%~D" & echo sent %%D'
        ],
    )
    jobs = load_jobs(path, env={})
    assert [job.name for job in jobs] == [
        "line 2: for D='big run'",
        "line 2: for D=small",
        "line 2: for D=tiny",
        "line 2: for D=[last]",
    ]
    assert [read(job)[:2] for job in jobs] == [
        ("big run", ["--tag=big run"]),
        ("small", ["--tag=small"]),
        ("tiny", ["--tag=tiny"]),
        ("[last]", ["--tag=[last]"]),
    ]


def test_a_gpu_count_one_run_gets_wrong_is_that_runs_error_only(tmp_path: Path) -> None:
    path = write(
        tmp_path, [f"FOR %%G IN (1 3 2) DO {CREATE} --display-name=g%%G {POOL.format(gpus='%%G')}"]
    )
    code, headers, out, err, valid = loop_verdicts(path)
    assert code == 1
    assert headers == ["line 2: for G=1", "line 2: for G=3", "line 2: for G=2"]
    assert out.count("3 x NVIDIA_TESLA_T4 is not allowed") == 1
    assert err.count(f"{path}: valid (gcloud-command)") == 2
    assert valid == {"line 2: for G=1": True, "line 2: for G=3": False, "line 2: for G=2": True}


def test_nested_loops_are_the_product_of_their_values(tmp_path: Path) -> None:
    lines = [
        "setlocal enabledelayedexpansion",
        "for %%G in (1 2) do (",
        "  for %%L in (0.1 0.2 0.3) do (",
        "    set NAME=g%%G-lr%%L",
        f"    {CREATE} --display-name=!NAME! {POOL.format(gpus='%%G')} --args=--lr=%%L",
        "  )",
        ")",
    ]
    jobs = load_jobs(write(tmp_path, lines), env={})
    assert len(jobs) == 6
    assert jobs[4].name == "line 3: for G=2; line 4: for L=0.2"
    assert read(jobs[4]) == ("g2-lr0.2", ["--lr=0.2"], 2)
    with pytest.raises(SpecFormatError, match=r"with the loops around it \(line 3\), 6 jobs"):
        load_spec_file(write(tmp_path, lines), env={})
    # The same loops on one line.
    one = f"for %%G in (1 2) do for %%L in (0.1 0.2 0.3) do {CREATE} --display-name=g%%G-%%L "
    jobs = load_jobs(write(tmp_path, [one + POOL.format(gpus="%%G")]), env={})
    assert [job.name for job in jobs][4] == "line 2: for G=2; line 2: for L=0.2"
    assert read(jobs[4])[0] == "g2-0.2"


def test_a_counted_loop_is_a_job_per_number(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [f"for /L %%S in (1,2,7) do {CREATE} --display-name=s%%S {POOL.format(gpus=1)}"],
    )
    jobs = load_jobs(path, env={})
    assert [job.name for job in jobs] == [f"line 2: for S={n}" for n in (1, 3, 5, 7)]
    assert [read(job)[0] for job in jobs] == ["s1", "s3", "s5", "s7"]
    down = [f"for /l %%S in (4 -2 0) do {CREATE} --display-name=s%%S {POOL.format(gpus=1)}"]
    assert [read(job)[0] for job in load_jobs(write(tmp_path, down), env={})] == [
        "s4",
        "s2",
        "s0",
    ]


def test_a_block_expands_percent_names_before_it_runs_as_cmd_does(tmp_path: Path) -> None:
    # %NAME% in a block is its value before the loop (the `set` in the body does not change
    # it); !NAME! under delayed expansion is the value the run set.
    lines = [
        "for %%L in (1 2) do (",
        "  set NAME=lr-%%L",
        f"  {CREATE} --display-name=%NAME% {POOL.format(gpus=1)}",
        ")",
    ]
    for job in load_jobs(write(tmp_path, lines), env={}):
        assert job.error is not None and "%NAME% is not set" in str(job.error)
        assert "the `set` at line 3 inside the loop does not reach it" in str(job.error)
        assert "write !NAME! under `setlocal enabledelayedexpansion`" in str(job.error)
    jobs = load_jobs(write(tmp_path, ["set NAME=before", *lines]), env={})
    assert [read(job)[0] for job in jobs] == ["before", "before"]


def test_a_value_the_run_before_sets_after_the_submission_is_not_guessed(
    tmp_path: Path,
) -> None:
    lines = [
        "setlocal EnableDelayedExpansion",
        "set PREV=none",
        "for %%L in (1 2) do (",
        f"  {CREATE} --display-name=after-!PREV! {POOL.format(gpus=1)}",
        "  set PREV=%%L",
        ")",
    ]
    first, second = load_jobs(write(tmp_path, lines), env={})
    assert read(first)[0] == "after-none"
    assert second.error is not None
    assert "!PREV! is set in the body of the `for %%L` loop at line 4 after the submission" in (
        str(second.error)
    )


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (
            [f"for /f %%R in (regions.txt) do {CREATE} --display-name=%%R --config=job.yaml"],
            r"line 2: the gcloud command is inside a `for /f` loop, which takes its values from "
            r"a file, a string or a command's output",
        ),
        (
            [f"for /R C:\\jobs %%F in (*.yaml) do {CREATE} --config=%%F"],
            r"line 2: the gcloud command is inside a `for /R` loop, which takes its values from "
            r"the files of a folder tree",
        ),
        (
            [f"for /D %%F in (run*) do {CREATE} --config=%%F\\job.yaml"],
            r"line 2: .* `for /D` loop, which takes its values from folder names",
        ),
        (
            ["for %%F in (a.yaml", f" *.yaml) do ({CREATE} --config=%%F)"],
            r"line 2: the `for` loop's value \*\.yaml names files \(a wildcard\)",
        ),
        (
            [f"for %%F in (a.yaml) do {CREATE} --display-name=%%~nF {POOL.format(gpus=1)}"],
            r"line 2: `%%~nF` reads %%F as a file name \(a `for` modifier\)",
        ),
        (
            [f"for %%L in (%LRS%) do {CREATE} --display-name=%%L {POOL.format(gpus=1)}"],
            r"line 2: the values of the `for` loop are not known here: %LRS% is not set",
        ),
        (
            [f"for /L %%i in (1,0,3) do {CREATE} --display-name=%%i {POOL.format(gpus=1)}"],
            r"line 2: `for /L` counts by 0 from 1 to 3, which never ends",
        ),
        (
            [f"for /L %%i in (1,x,3) do {CREATE} --display-name=%%i {POOL.format(gpus=1)}"],
            r"line 2: `for /L` counts through \(1,x,3\), which is not three numbers",
        ),
        (
            [f"for %%1 in (a) do {CREATE} --display-name=%%1 {POOL.format(gpus=1)}"],
            r"line 2: the `for` variable %%1 is not a letter",
        ),
        (
            [
                "for %%L in (a b) do (",
                f"  {CREATE} --display-name=%%L {POOL.format(gpus=1)}",
                "  goto :eof",
                ")",
            ],
            r"line 4: `goto :eof` inside the `for` loop ends the loop",
        ),
        (
            [f"for %%L in () do {CREATE} --display-name=x {POOL.format(gpus=1)}"],
            r"the `for %%L in \(\.\.\.\)` loop at line 2 never runs its body",
        ),
    ],
)
def test_a_loop_whose_values_are_not_in_the_file_is_refused_naming_it(
    tmp_path: Path, lines: list[str], message: str
) -> None:
    path = write(tmp_path, lines)
    with pytest.raises(SpecFormatError, match=message):
        load_jobs(path, env={})
    code, _, err = run_cli("validate", str(path))
    assert code == 2 and "Traceback" not in err
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1


def test_loops_over_more_runs_than_the_bound_are_refused(tmp_path: Path) -> None:
    create = f"{CREATE} --display-name=r%%i {POOL.format(gpus=1)}"
    counted = write(tmp_path, [f"for /L %%i in (1,1,{MAX_LOOP_JOBS + 1}) do {create}"])
    with pytest.raises(SpecFormatError) as caught:
        load_jobs(counted, env={})
    assert f"runs its body {MAX_LOOP_JOBS + 1} times" in str(caught.value)
    assert f"at most {MAX_LOOP_JOBS} jobs of one script" in str(caught.value)
    huge = write(tmp_path, [f"for /L %%i in (0,1,2000000000) do {create}"])
    with pytest.raises(SpecFormatError, match=r"runs its body 2000000001 times"):
        load_jobs(huge, env={})
    values = " ".join(str(n) for n in range(MAX_LOOP_JOBS // 10 + 1))
    nested = write(
        tmp_path, [f"for %%G in (1 2 4 1 2 4 1 2 4 1) do for %%i in ({values}) do {create}"]
    )
    with pytest.raises(SpecFormatError, match=rf"run it {10 * (MAX_LOOP_JOBS // 10 + 1)} times"):
        load_jobs(nested, env={})
    # At the bound, every run is read.
    jobs = load_jobs(write(tmp_path, [f"for /L %%i in (1,1,{MAX_LOOP_JOBS}) do {create}"]))
    assert len(jobs) == MAX_LOOP_JOBS and all(job.loaded for job in jobs)


def test_many_runs_of_a_long_batch_file_are_refused_as_too_much_to_read(
    tmp_path: Path,
) -> None:
    filler = ["echo waiting & rem %%i"] * (MAX_LOOP_COMMANDS // MAX_LOOP_JOBS)
    create = f"{CREATE} --display-name=r%%i {POOL.format(gpus=1)}"
    path = write(tmp_path, [*filler, f"for /L %%i in (1,1,{MAX_LOOP_JOBS}) do {create}"])
    started = time.process_time()
    code, _, err = run_cli("validate", str(path))
    assert code == 2
    assert f"more than {MAX_LOOP_COMMANDS} in all" in err and "Traceback" not in err
    assert time.process_time() - started < 10


def test_a_loop_that_submits_nothing_is_read_as_before(tmp_path: Path) -> None:
    lines = [
        "for %%M in (n1-standard-4) do set MACHINE=%%M",
        f"{CREATE} --display-name=d --worker-pool-spec=machine-type=%MACHINE%,replica-count=1,"
        "container-image-uri=gcr.io/p/t:1",
    ]
    with pytest.raises(SpecFormatError, match=r"%MACHINE% is set inside `for` \(line 2\)"):
        load_jobs(write(tmp_path, lines), env={})


def test_a_loop_naming_gcloud_without_running_it_is_a_loop_that_submits_nothing(
    tmp_path: Path,
) -> None:
    # gcloud in a `for /F` loop's command, or in an `echo`, is no submission: what the loop
    # sets is not known here, and the job after it is read.
    lines = [
        "for /F \"tokens=*\" %%p in ('gcloud config get-value project') do set PROJECT=%%p",
        "for %%x in (1 2) do (",
        "  echo gcloud run %%x",
        "  set NAME=run-%%x",
        ")",
        f"{CREATE} --project=%PROJECT% --display-name=%NAME% {POOL.format(gpus=1)}",
    ]
    (job,) = load_jobs(write(tmp_path, lines), env={})
    assert job.loaded is not None, job.error
    assert job.loaded.spec.display_name == "%NAME%"
    notes = job.loaded.notes
    assert any("%PROJECT% is set inside `for` (line 2), which is not evaluated" in n for n in notes)
    assert any("%NAME% is set inside `for` (line 3), which is not evaluated" in n for n in notes)


def test_loops_nested_deeper_than_the_bound_are_refused_within_bounds(tmp_path: Path) -> None:
    letters = "abcdefghijklmnopqrstuvwxyz"
    create = f"{CREATE} --display-name=x {POOL.format(gpus=1)}"
    filler = ["echo waiting for the quota to be granted"] * 15_000

    def nested(depth: int) -> list[str]:
        opened = [f"for %%{letter} in (1) do (" for letter in letters[:depth]]
        return [*opened, *filler, create, *[")"] * depth]

    started = time.process_time()
    (job,) = load_jobs(write(tmp_path, nested(MAX_LOOP_DEPTH)), env={})
    assert job.loaded is not None and job.loaded.spec.display_name == "x"
    with pytest.raises(SpecFormatError) as caught:
        load_jobs(write(tmp_path, nested(len(letters))), env={})
    assert str(caught.value) == (
        f"refused: line {MAX_LOOP_DEPTH + 2}: the `for` loop is nested in {MAX_LOOP_DEPTH} "
        f"loops around the gcloud command: at most {MAX_LOOP_DEPTH} are read here"
    )
    assert time.process_time() - started < 10


def test_a_goto_eof_after_the_loop_on_its_closing_line_ends_the_file(tmp_path: Path) -> None:
    lines = [
        "for %%a in (x y) do (",
        f"  {CREATE} --display-name=%%a {POOL.format(gpus=1)}",
        ") & goto :eof",
        f"{CREATE} --display-name=never {POOL.format(gpus=1)}",
    ]
    jobs = load_jobs(write(tmp_path, lines), env={})
    assert [read(job)[0] for job in jobs] == ["x", "y"]
