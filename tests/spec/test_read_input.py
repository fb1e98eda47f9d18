"""``components.formats.read_input``: a line split as ``read`` splits it, and what ``printf``
and ``echo`` write into a loop."""

from __future__ import annotations

import pytest

from components.formats.read_input import (
    DEFAULT_IFS,
    echo_output,
    input_lines,
    printf_output,
    read_options,
    split_line,
)


@pytest.mark.parametrize(
    ("line", "count", "ifs", "raw", "values"),
    [
        ("  a  b  c ", 2, DEFAULT_IFS, True, ["a", "b  c"]),
        ("1,2,3", 2, ",", True, ["1", "2,3"]),
        ("1, 2", 2, ", ", True, ["1", "2"]),
        ("x", 3, DEFAULT_IFS, True, ["x", "", ""]),
        (r"a\ b c", 2, DEFAULT_IFS, False, ["a b", "c"]),
        (r"a\ b c", 2, DEFAULT_IFS, True, ["a\\", "b c"]),
        ("  keep  ", 1, "", True, ["  keep  "]),
    ],
)
def test_a_line_splits_as_read_splits_it(
    line: str, count: int, ifs: str, raw: bool, values: list[str]
) -> None:
    assert split_line(line, count, ifs, raw) == values


def test_printf_reuses_its_format_and_refuses_what_it_does_not_read() -> None:
    assert printf_output(["%s\\n", "0.01", "0.1"]) == "0.01\n0.1\n"
    assert printf_output(["%s,%s\\n", "a", "b", "c"]) == "a,b\nc,\n"
    assert printf_output(["100%%\\n"]) == "100%\n"
    assert printf_output(["%b\\n", "x"]) is None
    assert printf_output(["-v", "X", "%s", "y"]) is None
    assert printf_output(["%*s\\n", "3", "y"]) is None


def test_echo_and_the_last_unterminated_line() -> None:
    assert echo_output(["-e", "0.1\\n0.2"]) == "0.1\n0.2\n"
    assert echo_output(["-n", "x"]) == "x"
    assert input_lines("a\nb", last_unterminated=False) == ["a"]
    assert input_lines("a\nb", last_unterminated=True) == ["a", "b"]
    options = read_options(["-r", "-p", "Rate: ", "-u", "3", "A", "B"])
    assert (options.names, options.raw, options.prompted, options.fd) == (
        ("A", "B"),
        True,
        True,
        "3",
    )
