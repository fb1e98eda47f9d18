"""Redaction in the provider and in the emulator (two implementations that must agree): every
line of a value of several lines, and short values taken out without pointing at them (issue 27,
item 2)."""

from __future__ import annotations

import pytest

from components._redaction import MIN_INLINE, REDACTED, redact
from components.lifecycle._progress import WaitProgress
from emulator import _validation

PEM = (
    "-----BEGIN PRIVATE KEY-----\n"
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n"
    "BKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n"
    "-----END PRIVATE KEY-----"
)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_each_line_of_a_value_of_several_lines_is_taken_out(newline: str) -> None:
    value = PEM.replace("\n", newline)
    printed = "loaded key\n" + "\n".join(PEM.splitlines()) + "\ndone"  # line by line
    shown = redact(printed, [value])
    for line in PEM.splitlines():
        assert line not in shown
    assert shown.splitlines()[0] == "loaded key" and shown.endswith("done")


def test_escaped_forms_are_taken_out_too() -> None:
    value = "first-line\nsecond-line"
    quoted = f"input_value={value!r} and {{'env': \"first-line\\nsecond-line\"}}"
    assert "line" not in redact(quoted, [value])


def test_a_short_value_never_marks_where_it_stands_in_other_text() -> None:
    text = "job 1234532 epoch 2 step 12, loss 0.25"
    assert redact(text, ["2"]) == text  # taken out here, it would point at every 2
    assert redact("2", ["2"]) == REDACTED  # a line that is the value alone
    assert redact("epoch 1\n  2  \r\nend", ["2"]) == f"epoch 1\n  {REDACTED}  \r\nend"
    assert len("abcde") < MIN_INLINE <= len("abcdef")
    assert redact("x abcdef y", ["abcdef"]) == f"x {REDACTED} y"


def test_the_longest_value_goes_first() -> None:
    assert redact("token=abcdefgh1234", ["abcdefgh", "abcdefgh1234"]) == f"token={REDACTED}"


def test_the_emulator_and_the_provider_redact_alike() -> None:
    text = "bad value 'x' in " + PEM.replace("\n", "\r\n") + " and 2 and\n2\n"
    assert _validation.redact(text, [PEM, "2"]) == redact(text, [PEM, "2"])


def test_a_progress_line_never_shows_a_line_of_a_multi_line_value() -> None:
    lines: list[str] = []

    class Job:
        class state:  # the shape of a job proto's state
            name = "JOB_STATE_RUNNING"

        name = "projects/p/locations/r/customJobs/1"
        display_name = "train"

    progress = WaitProgress(
        "waitFor: succeeded",
        scrub=lambda text: redact(text, [PEM]),
        chief_log=lambda _job: "2026-11-25 INFO MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
        write=lines.append,
    )
    progress.observe(Job())
    assert lines and "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" not in lines[0]
    assert REDACTED in lines[0]
