"""The list filter language, on protos directly (no server)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from emulator import filters, protos
from emulator.filters import compile_filter

KEYS = st.sampled_from(["team", "env", "run"])
VALUES = st.sampled_from(["a", "b", "c-1"])
LABELS = st.dictionaries(KEYS, VALUES, max_size=3)


def job_with(labels: dict[str, str], name: str = "train-x", state: int = 3):
    job = protos.new_job_pb()
    job.display_name = name
    job.state = state
    job.labels.update(labels)
    return job


@given(LABELS, KEYS, VALUES)
def test_label_comparisons_match_python(labels: dict[str, str], key: str, value: str) -> None:
    job = job_with(labels)
    assert compile_filter(f"labels.{key}={value}")(job) == (labels.get(key) == value)
    assert compile_filter(f'labels.{key}="{value}"')(job) == (labels.get(key) == value)
    assert compile_filter(f"labels.{key}!={value}")(job) == (labels.get(key) != value)
    assert compile_filter(f"labels.{key}:*")(job) == (key in labels)
    assert compile_filter(f"NOT labels.{key}:*")(job) == (key not in labels)
    assert compile_filter(f"-labels.{key}:*")(job) == (key not in labels)


@given(LABELS, KEYS, VALUES, KEYS, VALUES)
def test_boolean_operators(labels: dict[str, str], k1: str, v1: str, k2: str, v2: str) -> None:
    job = job_with(labels)
    a, b = labels.get(k1) == v1, labels.get(k2) == v2
    assert compile_filter(f"labels.{k1}={v1} AND labels.{k2}={v2}")(job) == (a and b)
    assert compile_filter(f"labels.{k1}={v1} labels.{k2}={v2}")(job) == (a and b)
    assert compile_filter(f"labels.{k1}={v1} OR labels.{k2}={v2}")(job) == (a or b)
    assert compile_filter(f"NOT (labels.{k1}={v1} OR labels.{k2}={v2})")(job) == (not (a or b))
    # OR binds tighter than AND in AIP-160.
    text = f"labels.{k1}={v1} AND labels.{k2}={v2} OR labels.{k1}:*"
    assert compile_filter(text)(job) == (a and (b or k1 in labels))


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ('display_name:"train-*"', True),
        ("display_name:train-*", True),
        ('display_name:"*-x"', True),
        ('display_name:"eval-*"', False),
        ("display_name=train-x", True),
        ("displayName=train-x", True),
        ("display_name!=train-x", False),
        ("state=JOB_STATE_RUNNING", True),
        ("state!=JOB_STATE_RUNNING", False),
        ("", True),
    ],
)
def test_display_name_and_state(expr: str, expected: bool) -> None:
    assert compile_filter(expr)(job_with({})) is expected


def test_time_comparisons() -> None:
    job = job_with({})
    protos.now_ts(job.create_time, 1_700_000_000.0)  # 2023-11-14T22:13:20Z
    assert compile_filter('create_time>"2023-11-14T22:00:00Z"')(job)
    assert not compile_filter('create_time<"2023-11-14T22:00:00Z"')(job)
    assert compile_filter('createTime>="2023-11-14T22:13:20Z"')(job)
    assert not compile_filter('end_time>"2000-01-01T00:00:00Z"')(job)  # unset never matches


def test_the_parse_tree_says_what_the_filter_means() -> None:
    # What the store compiles into SQL: OR binds tighter than AND, juxtaposition is AND, `:*` asks
    # for the key, `:value` is equality, `-` is NOT, both spellings of a field are one field.
    tree = filters.parse_filter(
        'labels.a=x labels.b:* AND labels.c:y OR -displayName:"t-*" AND createTime<"2024-01-01T00:00:00Z"'
    )
    assert tree == filters.And(
        (
            filters.Label("a", "=", "x"),
            filters.Label("b", "has"),
            filters.Or(
                (filters.Label("c", "=", "y"), filters.Not(filters.DisplayName("glob", "t-*")))
            ),
            filters.Time("create_time", "<", 1_704_067_200.0),
        )
    )
    assert filters.parse_filter("state!=JOB_STATE_RUNNING") == filters.State(3, equal=False)
    assert filters.parse_filter("  ") is None


@pytest.mark.parametrize(
    ("name", "pattern", "expected"),
    [
        ("train-1", "train-*", True),
        ("train-1", "train-?", True),
        ("train-12", "train-?", False),
        ("a[1]", "a[1]", True),  # brackets are literal characters, not a class
        ("a1", "a[1]", False),
        ("", "*", True),
        ("x", "", False),
    ],
)
def test_display_name_glob(name: str, pattern: str, expected: bool) -> None:
    assert filters.glob_match(name, pattern) is expected
    assert compile_filter(f'display_name:"{pattern}"')(job_with({}, name=name)) is expected


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("owner=me", "unsupported field 'owner'"),
        ("state=DONE", "unknown state 'DONE'"),
        ("labels.=x", "needs a key"),
        ("labels.a=", "expected a value after labels.a="),
        ("labels.a", "expected an operator"),
        ("(labels.a=b", "expected ')'"),
        ("labels.a=b)", "unexpected ')'"),
        ("labels.a=b AND", "expected a comparison"),
        ("labels.a>b", "operator '>' is not supported"),
        ('create_time>"yesterday"', "not an RFC 3339 timestamp"),
        ("labels.a=b & labels.c=d", "unexpected character '&'"),
    ],
)
def test_malformed_filters_explain_themselves(expr: str, message: str) -> None:
    with pytest.raises(ValueError, match="filter: ") as info:
        compile_filter(expr)
    assert message in str(info.value)
