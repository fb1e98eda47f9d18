"""Issue 44, item 3: a script whose one submission is inside loops over known values is one
job per run of the loops (``load_jobs``), each read with the loops' variables as that run
sets them and named by it; the CLI reads each, as it does a notebook's jobs."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from components import SpecFormatError, load_spec_file
from components.cli._cli import main
from components.formats.load import holds_jobs, load_jobs
from components.formats.result import FileJob
from components.formats.script import MAX_LOOP_COMMANDS, MAX_LOOP_JOBS

from .helpers import loop_verdicts

CREATE = (
    "gcloud ai custom-jobs create --region=us-central1 --display-name=lr-$LR "
    "--worker-pool-spec=machine-type=n1-standard-4,accelerator-type=NVIDIA_TESLA_T4,"
    "accelerator-count=$GPUS,replica-count=1,container-image-uri=us-docker.pkg.dev/p/r/t:v1 "
    "--args=--lr=$LR"
)


def write(tmp_path: Path, body: str, name: str = "sweep.sh") -> Path:
    path = tmp_path / name
    path.write_text("#!/bin/bash\n" + body.replace("{create}", CREATE))
    return path


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def read(job: FileJob) -> tuple[str | None, list[str]]:
    """The job's display name and its trainer arguments."""
    assert job.loaded is not None, job.error
    spec = job.loaded.spec
    container = spec.worker_pool_specs[0].container_spec
    assert container is not None
    return spec.display_name, list(container.args or [])


def test_a_for_loop_over_three_values_is_three_named_jobs(tmp_path: Path) -> None:
    path = write(tmp_path, "GPUS=1\nfor LR in 0.01 0.1 1.0; do\n  {create}\ndone\n")
    assert holds_jobs(path)
    jobs = load_jobs(path, env={})
    assert [job.name for job in jobs] == [
        "line 3: for LR=0.01",
        "line 3: for LR=0.1",
        "line 3: for LR=1.0",
    ]
    assert [read(job) for job in jobs] == [
        ("lr-0.01", ["--lr=0.01"]),
        ("lr-0.1", ["--lr=0.1"]),
        ("lr-1.0", ["--lr=1.0"]),
    ]
    notes = jobs[1].loaded.notes if jobs[1].loaded else []
    assert any("runs its body 3 times: this job is its run with LR=0.1" in n for n in notes)


def test_a_caller_of_one_job_is_told_how_many_and_where_they_are_read(tmp_path: Path) -> None:
    path = write(tmp_path, "GPUS=1\nfor LR in 0.01 0.1; do {create}; done\n")
    with pytest.raises(SpecFormatError) as caught:
        load_spec_file(path, env={})
    message = str(caught.value)
    assert "loop at line 3 submits 2 jobs, one per value of $LR (0.01, 0.1)" in message
    assert "`validate`, `convert` and `estimate` read each" in message


def test_a_value_that_makes_one_run_invalid_is_that_runs_error_only(tmp_path: Path) -> None:
    path = write(tmp_path, "for GPUS in 1 3 2; do\n  LR=0.1\n  {create}\ndone\n")
    code, headers, out, err, valid = loop_verdicts(path)
    assert code == 1
    assert headers == ["line 2: for GPUS=1", "line 2: for GPUS=3", "line 2: for GPUS=2"]
    assert out.count("3 x NVIDIA_TESLA_T4 is not allowed") == 1
    assert err.count(f"{path}: valid (gcloud-command)") == 2
    assert valid == {
        "line 2: for GPUS=1": True,
        "line 2: for GPUS=3": False,
        "line 2: for GPUS=2": True,
    }


def test_a_while_read_loop_over_a_here_document_is_a_job_per_line(tmp_path: Path) -> None:
    body = "while IFS=, read -r LR GPUS; do\n  {create}\ndone <<'EOF'\n0.01,1\n0.5,2\nEOF\n"
    jobs = load_jobs(write(tmp_path, body), env={})
    assert [job.name for job in jobs] == [
        "line 2: while read LR=0.01 GPUS=1",
        "line 2: while read LR=0.5 GPUS=2",
    ]
    assert [read(job) for job in jobs] == [("lr-0.01", ["--lr=0.01"]), ("lr-0.5", ["--lr=0.5"])]
    counts = [j.loaded.spec.worker_pool_specs[0].machine_spec for j in jobs if j.loaded]
    assert [m.accelerator_count for m in counts if m is not None] == [1, 2]


def test_nested_loops_are_the_product_of_their_values(tmp_path: Path) -> None:
    body = "for GPUS in 1 2; do\n  for LR in 0.1 0.2 0.3; do\n    {create}\n  done\ndone\n"
    jobs = load_jobs(write(tmp_path, body), env={})
    assert len(jobs) == 6
    assert jobs[4].name == "line 2: for GPUS=2; line 3: for LR=0.2"
    loaded = jobs[4].loaded
    assert loaded is not None
    machine = loaded.spec.worker_pool_specs[0].machine_spec
    assert machine is not None and machine.accelerator_count == 2
    assert read(jobs[4]) == ("lr-0.2", ["--lr=0.2"])
    with pytest.raises(SpecFormatError, match=r"with the loops around it \(line 2\), 6 jobs"):
        load_spec_file(write(tmp_path, body), env={})


def test_nested_loops_on_one_line_are_the_product_of_their_values(tmp_path: Path) -> None:
    # `do for ...` opens the inner loop where `do` stands.
    body = "for GPUS in 1 2; do for LR in 0.1 0.2; do {create}; done; done\n"
    jobs = load_jobs(write(tmp_path, body), env={})
    assert [job.name for job in jobs][3] == "line 2: for GPUS=2; line 2: for LR=0.2"
    assert read(jobs[3]) == ("lr-0.2", ["--lr=0.2"])


def test_a_quoted_value_with_glob_characters_is_a_value_not_file_names(tmp_path: Path) -> None:
    body = "GPUS=1\nfor LR in '[0.1]' \"0.*\" 2; do {create}; done\n"
    jobs = load_jobs(write(tmp_path, body), env={})
    assert [job.name for job in jobs] == [
        "line 3: for LR=[0.1]",
        "line 3: for LR=0.*",
        "line 3: for LR=2",
    ]
    (job,) = load_jobs(write(tmp_path, "GPUS=1\nfor LR in 0.*; do {create}; done\n"), env={})
    assert job.loaded is not None
    assert any("its words name files (a glob)" in note for note in job.loaded.notes)


def test_loops_over_more_runs_than_the_bound_are_refused(tmp_path: Path) -> None:
    values = " ".join(str(n) for n in range(MAX_LOOP_JOBS // 10 + 1))
    body = f"for GPUS in 1 2 4 1 2 4 1 2 4 1; do\n  for LR in {values}; do {{create}}; done\ndone\n"
    with pytest.raises(SpecFormatError) as caught:
        load_jobs(write(tmp_path, body), env={})
    message = str(caught.value)
    assert f"line 3 run it {10 * (MAX_LOOP_JOBS // 10 + 1)} times" in message
    assert f"at most {MAX_LOOP_JOBS} jobs of one script" in message
    # At the bound, every run is read.
    values = " ".join(str(n) for n in range(MAX_LOOP_JOBS))
    jobs = load_jobs(write(tmp_path, f"GPUS=1\nfor LR in {values}; do {{create}}; done\n"))
    assert len(jobs) == MAX_LOOP_JOBS and all(job.loaded for job in jobs)


def test_many_runs_of_a_long_script_are_refused_as_too_much_to_read(tmp_path: Path) -> None:
    values = " ".join(str(n) for n in range(MAX_LOOP_JOBS))
    filler = "".join(f"A{n}=x\n" for n in range(MAX_LOOP_COMMANDS // MAX_LOOP_JOBS))
    path = write(tmp_path, f"GPUS=1\n{filler}for LR in {values}; do {{create}}; done\n")
    code, _, err = run("validate", str(path))
    assert code == 2
    assert f"more than {MAX_LOOP_COMMANDS} in all" in err and "Traceback" not in err


def test_a_loop_over_one_value_is_still_one_unnamed_job(tmp_path: Path) -> None:
    (job,) = load_jobs(write(tmp_path, "GPUS=1\nfor LR in 0.05; do {create}; done\n"), env={})
    assert job.name is None
    assert read(job) == ("lr-0.05", ["--lr=0.05"])


def test_a_loop_over_unknown_values_keeps_its_message(tmp_path: Path) -> None:
    path = write(tmp_path, "GPUS=1\nfor LR in $(seq 1 3); do {create}; done\n")
    (job,) = load_jobs(path, env={})
    assert job.name is None and job.loaded is not None
    assert any("which submits one job per value" in note for note in job.loaded.notes)


def test_several_submissions_outside_loops_are_still_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "GPUS=1\nLR=1\n{create}\n{create}\n")
    with pytest.raises(SpecFormatError, match="the script submits 2 jobs"):
        load_jobs(path, env={})


def test_continue_under_a_file_test_is_said_in_a_note(tmp_path: Path) -> None:
    body = "GPUS=1\nfor LR in 1 2; do\n  [ -f skip-$LR ] && continue\n  {create}\ndone\n"
    jobs = load_jobs(write(tmp_path, body), env={})
    assert len(jobs) == 2
    for job in jobs:
        assert job.loaded is not None
        assert any("`continue` is not evaluated here" in n for n in job.loaded.notes)


def test_a_value_the_run_before_sets_after_the_submission_is_not_guessed(
    tmp_path: Path,
) -> None:
    body = (
        "GPUS=1\nPREV=none\nfor LR in 1 2; do\n"
        "  gcloud ai custom-jobs create --region=us-central1 --display-name=after-$PREV "
        "--worker-pool-spec=machine-type=n1-standard-4,replica-count=1,"
        "container-image-uri=gcr.io/p/t:1\n  PREV=$LR\ndone\n"
    )
    first, second = load_jobs(write(tmp_path, body), env={})
    assert first.loaded is not None and first.loaded.spec.display_name == "after-none"
    assert second.error is not None
    assert "$PREV is set in the body of the `for LR in ...` loop at line 4" in str(second.error)


def test_a_makefile_recipes_loop_is_a_job_per_run(tmp_path: Path) -> None:
    recipe = CREATE.replace("$LR", "$$LR").replace("$GPUS", "1")
    makefile = tmp_path / "Makefile"
    makefile.write_text(f"train:\n\tfor LR in 0.1 0.2; do {recipe}; done\n")
    jobs = load_jobs(makefile, env={})
    assert [read(job) for job in jobs] == [("lr-0.1", ["--lr=0.1"]), ("lr-0.2", ["--lr=0.2"])]
    assert [job.name for job in jobs] == ["line 2: for LR=0.1", "line 2: for LR=0.2"]


def test_estimate_and_convert_of_a_loop_script_give_each_job(tmp_path: Path) -> None:
    path = write(tmp_path, "for GPUS in 1 2; do\n  LR=0.1\n  {create}\ndone\n")
    code, out, err = run("estimate", str(path))
    assert code == 0, err
    assert "== " in err and "line 2: for GPUS=2 ==" in err
    assert "1 x NVIDIA_TESLA_T4" in out and "2 x NVIDIA_TESLA_T4" in out
    code, out, err = run("convert", str(path))
    assert code == 0, err
    assert out.count("---") == 1 and out.count("acceleratorCount: 2") == 1


def test_a_notebooks_bash_cell_with_a_loop_is_a_job_per_run(tmp_path: Path) -> None:
    source = "%%bash\nGPUS=1\nfor LR in 0.1 0.2; do\n  " + CREATE + "\ndone\n"
    cells = [{"cell_type": "code", "metadata": {}, "source": source, "outputs": []}]
    path = tmp_path / "sweep.ipynb"
    path.write_text(
        json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells})
    )
    jobs = load_jobs(path, env={})
    assert [job.name for job in jobs] == [
        "cell 1, line 4: a %%bash cell (cell 1, line 3: for LR=0.1)",
        "cell 1, line 4: a %%bash cell (cell 1, line 3: for LR=0.2)",
    ]
    assert [read(job) for job in jobs] == [("lr-0.1", ["--lr=0.1"]), ("lr-0.2", ["--lr=0.2"])]


@pytest.mark.parametrize("command", ["validate", "estimate", "convert"])
def test_the_cli_reads_a_one_job_script_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    from components.formats import load

    path = write(tmp_path, "GPUS=1\nLR=0.1\n{create}\n")
    reads: list[str] = []
    real = load.read_gcloud_command  # type: ignore[attr-defined]  # the name load_spec_file calls

    def counted(*args: object, **kwargs: object) -> object:
        reads.append(str(args[0]))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(load, "read_gcloud_command", counted)
    code, out, err = run(command, str(path))
    assert code == 0, err
    assert command == "validate" or "NVIDIA_TESLA_T4" in out
    assert reads == [str(path)]
