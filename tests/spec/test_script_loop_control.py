"""Issue 44, item 3: ``continue`` and ``break`` in the body of loops that submit one job per
run are evaluated where their condition is known for the run, as bash runs them: a run that
does not reach the submission is no job, and a ``break`` ends the later runs of its loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from components import SpecFormatError, load_spec_file
from components.formats.conditions import Verdict, chain_verdict, command_verdict
from components.formats.load import load_jobs
from components.formats.result import FileJob
from components.formats.script import MAX_LOOP_JOBS

from .helpers import loop_verdicts

CREATE = (
    "gcloud ai custom-jobs create --region=us-central1 --display-name=lr-$LR "
    "--worker-pool-spec=machine-type=n1-standard-4,replica-count=1,"
    "container-image-uri=us-docker.pkg.dev/p/r/t:v1 --args=--lr=$LR"
)


NESTED = CREATE.replace("--display-name=lr-$LR ", "--display-name=lr-$LR-$B ")
"""The submission of two nested loops over $B and $LR, named by both."""


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "sweep.sh"
    text = body.replace("{create}", CREATE).replace("{nested}", NESTED)
    path.write_text("#!/bin/bash\n" + text)
    return path


def names(tmp_path: Path, body: str) -> list[str | None]:
    """The display name of each job the script is read as."""
    jobs = load_jobs(write(tmp_path, body), env={})
    return [display(job) for job in jobs]


def display(job: FileJob) -> str | None:
    assert job.loaded is not None, job.error
    return job.loaded.spec.display_name


@pytest.mark.parametrize(
    "skip",
    [
        'if [ "$LR" = "0.1" ]; then continue; fi',
        "if [[ $LR == 0.1 ]]\n  then\n    continue\n  fi",
        'test "$LR" != 0.1 || continue',
        '[ "$LR" == 0.1 ] && { continue; }',
        'case "$LR" in 0.1) continue;; esac',
        'case "$LR" in\n    0.*) [ "$LR" = 0.01 ] || continue;;\n  esac',
        'if [ "$LR" = 1 ]; then echo one; elif [ "$LR" = 0.1 ]; then continue; fi',
        'if [ "$LR" = 0.01 ]; then echo; elif [ "$LR" = 1 ]; then echo; else continue; fi',
        'if ! [ "$LR" != 0.1 ]; then continue; fi',
        '[ ! "$LR" != 0.1 ] && continue',
    ],
)
def test_a_continue_whose_condition_holds_for_a_run_leaves_that_run_out(
    tmp_path: Path, skip: str
) -> None:
    body = f"for LR in 0.01 0.1 1; do\n  {skip}\n  {{create}}\ndone\n"
    assert names(tmp_path, body) == ["lr-0.01", "lr-1"]


def test_a_break_before_the_submission_ends_the_loop(tmp_path: Path) -> None:
    body = 'for LR in 0.01 0.1 1 10; do\n  [ "$LR" = 1 ] && break\n  {create}\ndone\n'
    assert names(tmp_path, body) == ["lr-0.01", "lr-0.1"]


def test_a_break_after_the_submission_ends_the_later_runs(tmp_path: Path) -> None:
    body = 'for LR in 0.01 0.1 1; do\n  {create}\n  if [ "$LR" = 0.1 ]; then break; fi\ndone\n'
    jobs = load_jobs(write(tmp_path, body), env={})
    assert [display(job) for job in jobs] == ["lr-0.01", "lr-0.1"]
    assert jobs[1].loaded is not None
    assert any(
        "`break` runs in this run" in note and "later runs" in note for note in jobs[1].loaded.notes
    )


@pytest.mark.parametrize(
    ("control", "expected"),
    [
        # `continue 2` ends the inner loop's run and its later runs, and goes on with B's next
        ("continue 2", ["lr-x-1", "lr-x-2"]),
        # `break 2` ends both loops
        ("break 2", ["lr-x-1"]),
        # `break` (level 1) ends the inner loop only
        ("break", ["lr-x-1", "lr-x-2"]),
        # `continue` (level 1) leaves out the inner run only
        ("continue", ["lr-x-1", "lr-z-1", "lr-x-2", "lr-z-2"]),
    ],
)
def test_a_level_counts_the_loops_out_from_the_innermost(
    tmp_path: Path, control: str, expected: list[str]
) -> None:
    body = (
        "for B in 1 2; do\n  for LR in x y z; do\n"
        f'    [ "$LR" = y ] && {control}\n'
        "    {nested}\n  done\ndone\n"
    )
    assert names(tmp_path, body) == expected


def test_a_break_of_the_outer_loop_after_an_inner_loop_keeps_the_inner_runs(
    tmp_path: Path,
) -> None:
    body = (
        "for B in 1 2 3; do\n  for LR in x y; do\n    {nested}\n  done\n"
        '  [ "$B" -ge 2 ] && break\ndone\n'
    )
    assert names(tmp_path, body) == ["lr-x-1", "lr-y-1", "lr-x-2", "lr-y-2"]


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ('[ "$N" -eq 2 ]', ["lr-1", "lr-3"]),
        ('[ "$N" -ne 2 ]', ["lr-2"]),
        ("[ $N -lt 2 ]", ["lr-2", "lr-3"]),
        ("[[ $N -le 2 ]]", ["lr-3"]),
        ('test "$N" -gt 2', ["lr-1", "lr-2"]),
        ('[ "$N" -ge 2 ] && [ "$N" -lt 3 ]', ["lr-1", "lr-3"]),
        ('[ "$N" = 1 ] || [ "$N" = 3 ]', ["lr-2"]),
        ('[ -z "$SKIP" ] && [ "$N" = 1 ]', ["lr-2", "lr-3"]),
        ('[ -n "$SKIP" ]', ["lr-1", "lr-2", "lr-3"]),
        ("false", ["lr-1", "lr-2", "lr-3"]),
    ],
)
def test_numeric_string_and_chained_conditions_are_evaluated(
    tmp_path: Path, condition: str, expected: list[str]
) -> None:
    body = f'SKIP=""\nfor N in 1 2 3; do\n  LR=$N\n  if {condition}; then continue; fi\n  {{create}}\ndone\n'
    assert names(tmp_path, body) == expected


@pytest.mark.parametrize(
    ("condition", "why"),
    [
        ('[ "$(cat skip)" = "$LR" ]', "would have to run"),
        ('[ -f "done-$LR" ]', "tests a file"),
        ('[ "$UNSET_HERE" = "$LR" ]', "not known here"),
        ("grep -q $LR skip.txt", "would have to run"),
        ('[ "$LR" = 1 -o "$LR" = 2 ]', "more than one comparison"),
    ],
)
def test_a_condition_not_known_here_keeps_every_run_and_says_which(
    tmp_path: Path, condition: str, why: str
) -> None:
    body = f"for LR in 1 2; do\n  {condition} && continue\n  {{create}}\ndone\n"
    assert_every_run_is_read(tmp_path, body, "`continue`", why)


def test_a_level_not_known_here_keeps_every_run(tmp_path: Path) -> None:
    body = 'for LR in 1 2; do\n  [ "$LR" = 1 ] && break $LEVEL\n  {create}\ndone\n'
    assert_every_run_is_read(tmp_path, body, "`break`", "its level `${LEVEL}` is not a number")


def assert_every_run_is_read(tmp_path: Path, body: str, control: str, why: str) -> None:
    """Both runs of ``body`` are jobs, each noting once that ``control`` is not evaluated."""
    jobs = load_jobs(write(tmp_path, body), env={})
    assert [display(job) for job in jobs] == ["lr-1", "lr-2"]
    for job in jobs:
        assert job.loaded is not None
        notes = [n for n in job.loaded.notes if f"{control} is not evaluated here" in n]
        assert len(notes) == 1 and why in notes[0], job.loaded.notes


def test_a_control_inside_a_loop_read_at_its_first_run_only_is_not_guessed(
    tmp_path: Path,
) -> None:
    # the inner loop does not hold the submission, so it is not read run by run: its
    # `break 2` at B=y is not followed (a note says so), and both runs of LR are read
    body = (
        'for LR in 1 2; do\n  for B in x y; do\n    [ "$B" = y ] && break 2\n  done\n'
        "  {create}\ndone\n"
    )
    jobs = load_jobs(write(tmp_path, body), env={})
    assert [display(job) for job in jobs] == ["lr-1", "lr-2"]
    assert jobs[0].loaded is not None
    assert any("read here at its first run only" in n for n in jobs[0].loaded.notes)


def test_when_no_run_submits_the_error_is_one_line(tmp_path: Path) -> None:
    body = 'for LR in 1 2 3; do\n  [ "$LR" -ge 1 ] && continue\n  {create}\ndone\n'
    with pytest.raises(SpecFormatError) as caught:
        load_jobs(write(tmp_path, body), env={})
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("line 4: the script submits no job: none of the 3 runs")
    assert "`continue` at line 3 runs before the submission" in message


def test_a_loop_of_one_value_whose_run_continues_submits_no_job(tmp_path: Path) -> None:
    body = 'for LR in 5; do\n  [ "$LR" = 5 ] && continue\n  {create}\ndone\n'
    with pytest.raises(SpecFormatError, match=r"^line 4: the script submits no job: `continue`"):
        load_jobs(write(tmp_path, body), env={})


def test_a_script_without_a_control_still_reads_every_run(tmp_path: Path) -> None:
    body = 'for LR in 1 2; do\n  if [ "$LR" = 1 ]; then echo first; fi\n  {create}\ndone\n'
    assert names(tmp_path, body) == ["lr-1", "lr-2"]


def test_validate_shows_the_jobs_the_runs_that_submit_make(tmp_path: Path) -> None:
    body = 'for LR in 0.01 0.1 1; do\n  if [ "$LR" = "0.1" ]; then continue; fi\n  {create}\ndone\n'
    code, headers, out, err, valid = loop_verdicts(write(tmp_path, body))
    assert code == 0, err
    assert headers == ["line 2: for LR=0.01", "line 2: for LR=1"]
    assert "LR=0.1 ==" not in out + err
    assert "line 3: `continue` does not run in this run" in out + err
    assert valid == {"line 2: for LR=0.01": True, "line 2: for LR=1": True}


@pytest.mark.parametrize(
    ("program", "args", "value"),
    [
        ("[", ["a", "=", "a", "]"], True),
        ("[", ["a", "]"], True),
        ("[", ["", "]"], False),
        ("[", ["]"], False),
        ("[[", ["abc", "==", "a*", "]]"], True),
        ("test", ["!", "-z", "x"], True),
        ("test", ["10", "-gt", "9"], True),
        ("true", [], True),
        (":", [], True),
    ],
)
def test_a_test_command_is_judged_as_bash_would(program: str, args: list[str], value: bool) -> None:
    globs = [False, False, True, False] if program == "[[" else []
    assert command_verdict(program, args, globs).value is value


@pytest.mark.parametrize(
    ("program", "args"),
    [("[", ["a", "=", "a"]), ("[", ["x", "-eq", "1", "]"]), ("[", ["-d", "x", "]"])],
)
def test_a_test_not_judged_here_says_why(program: str, args: list[str]) -> None:
    verdict = command_verdict(program, args)
    assert verdict.value is None and verdict.why


def test_an_unknown_side_of_a_chain_is_decided_by_a_known_other() -> None:
    unknown = Verdict(None, "?")
    assert chain_verdict([("", unknown), ("||", Verdict(True))]).value is True
    assert chain_verdict([("", unknown), ("&&", Verdict(False))]).value is False
    assert chain_verdict([("", unknown), ("&&", Verdict(True))]).value is None
    assert chain_verdict([("", Verdict(False)), ("&&", unknown)]).value is False


def test_a_while_read_loop_leaves_out_the_lines_it_continues_past(tmp_path: Path) -> None:
    body = (
        'while read -r LR; do\n  [ "$LR" = 0.1 ] && continue\n  {create}\n'
        "done <<EOF\n0.01\n0.1\n1\nEOF\n"
    )
    assert names(tmp_path, body) == ["lr-0.01", "lr-1"]


def test_a_caller_of_one_job_is_told_how_many_runs_submit(tmp_path: Path) -> None:
    body = 'for LR in 0.01 0.1 1; do\n  [ "$LR" = 0.1 ] && continue\n  {create}\ndone\n'
    with pytest.raises(SpecFormatError) as caught:
        load_spec_file(write(tmp_path, body), env={})
    message = str(caught.value)
    assert (
        "runs 3 times, once per value of $LR (0.01, 0.1, 1), of which 1 submit nothing" in message
    )
    assert (
        "(line 2: for LR=0.1: `continue` at line 3 runs before the submission): 2 jobs;" in message
    )
    assert "one job was asked for" in message


def test_at_the_bound_the_runs_after_a_break_are_left_out(tmp_path: Path) -> None:
    values = " ".join(str(n) for n in range(MAX_LOOP_JOBS))
    half = MAX_LOOP_JOBS // 2
    body = f'for LR in {values}; do\n  [ "$LR" -ge {half} ] && break\n  {{create}}\ndone\n'
    assert names(tmp_path, body) == [f"lr-{n}" for n in range(half)]
    # one run over the bound is refused as before, break or not
    over = f"{values} {MAX_LOOP_JOBS}"
    with pytest.raises(SpecFormatError, match=f"at most {MAX_LOOP_JOBS} jobs of one script"):
        load_jobs(write(tmp_path, body.replace(values, over)), env={})
