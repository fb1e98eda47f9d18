"""Filtered lists answered from the store's indexes: the same jobs as the filter evaluator, in the
same order, for every filter the parser accepts, at a cost that does not grow with the number of
stored jobs; and a database written before the index is upgraded in place when opened."""

from __future__ import annotations

import datetime as dt
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator import filters, protos
from emulator import store as store_module
from emulator.store import DB_NAME, Store

from .conftest import PARENT

S = protos.JobState
OTHER_PARENT = "projects/other/locations/europe-west4"

# -- random jobs and random filters over the same small vocabulary -------------------------------

KEYS = ["team", "env", "run", "a.b"]
LABEL_VALUES = ["a", "b", "c-1", "", "x\0y", "é"]
# Glob metacharacters, a NUL (which SQLite's GLOB would stop at), non-ASCII and a backslash.
NAME_ALPHABET = "ab*?[]!^-\\\0é😀 "
STATES = [S.JOB_STATE_QUEUED, S.JOB_STATE_RUNNING, S.JOB_STATE_SUCCEEDED, S.JOB_STATE_FAILED]
BASE = 1_600_000_000
# Whole seconds and fractions both, close together, so that = and the bounds of < and <= matter.
SECONDS = st.builds(
    lambda s, n: (BASE + s, n), st.integers(0, 3), st.sampled_from([0, 500_000_000, 123_456_789])
)
TIME_FIELDS = ["create_time", "update_time", "start_time", "end_time"]

names = st.text(alphabet=NAME_ALPHABET, max_size=4)


@st.composite
def jobs(draw: st.DrawFn) -> Any:
    job = protos.new_job_pb()
    job.display_name = draw(names)
    job.state = draw(st.sampled_from(STATES))
    job.labels.update(draw(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(LABEL_VALUES))))
    for field in TIME_FIELDS:
        # create_time is always set by the service; the others may be unset.
        if field == "create_time" or draw(st.booleans()):
            seconds, nanos = draw(SECONDS)
            getattr(job, field).seconds = seconds
            getattr(job, field).nanos = nanos
    return job


def quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def timestamp(seconds: int, nanos: int) -> str:
    when = dt.datetime.fromtimestamp(seconds, dt.UTC) + dt.timedelta(microseconds=nanos // 1000)
    return quoted(when.isoformat().replace("+00:00", "Z"))


comparisons = st.one_of(
    st.builds(
        lambda k, op, v: f"labels.{k}{op}{quoted(v)}",
        st.sampled_from([*KEYS, "absent"]),
        st.sampled_from(["=", "!=", ":"]),
        st.sampled_from([*LABEL_VALUES, "*"]),
    ),
    st.builds(lambda k: f"labels.{k}:*", st.sampled_from([*KEYS, "absent"])),
    st.builds(
        lambda op, s: f"state{op}{s.name}", st.sampled_from(["=", "!="]), st.sampled_from(STATES)
    ),
    st.builds(
        lambda f, op, v: f"{f}{op}{quoted(v)}",
        st.sampled_from(["display_name", "displayName"]),
        st.sampled_from(["=", "!=", ":"]),
        names,
    ),
    st.builds(
        lambda f, op, t: f"{f}{op}{timestamp(*t)}",
        st.sampled_from([*TIME_FIELDS, "createTime", "endTime"]),
        st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
        SECONDS,
    ),
)

filter_texts = st.recursive(
    comparisons,
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"{a} AND {b}", inner, inner),
        st.builds(lambda a, b: f"{a} OR {b}", inner, inner),
        st.builds(lambda a, b: f"{a} {b}", inner, inner),
        st.builds(lambda a: f"NOT {a}", inner),
        st.builds(lambda a: f"-({a})", inner),
        st.builds(lambda a: f"({a})", inner),
    ),
    max_leaves=8,
)


@contextmanager
def fresh_store() -> Iterator[Store]:
    # Not tmp_path: hypothesis runs many examples per test function.
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp))
        try:
            yield store
        finally:
            store.close()


def insert(store: Store, job: Any, parent: str = PARENT) -> str:
    job_id = store.new_job_id()
    job.name = f"{parent}/{protos.kind_of(job).collection}/{job_id}"
    store.insert_job(job_id, parent, job)
    return job_id


def as_tuning_job(job: Any) -> Any:
    tuning = protos.new_job_pb(protos.TUNING_JOB)
    tuning.display_name = job.display_name
    tuning.state = job.state
    tuning.labels.update(job.labels)
    for field in TIME_FIELDS:
        if job.HasField(field):
            getattr(tuning, field).CopyFrom(getattr(job, field))
    return tuning


def scan(store: Store, where: filters.Node | None, kind: protos.Kind) -> list[int]:
    """The seqs a list returned before the index: every job of the scope, through the evaluator."""
    matches = filters.to_predicate(where)
    return [seq for seq, job in store.list_jobs(PARENT, kind=kind) if matches(job)]


def sql_only(store: Store, where: filters.Node | None, kind: protos.Kind) -> list[int]:
    """The seqs the SQL selects, without the evaluator's check that list_matching adds."""
    return [seq for seq, _ in store._query_matching(PARENT, kind, where, 0, 10_000)]


# -- exactness --------------------------------------------------------------------------------------


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(jobs(), max_size=10), filter_texts, st.integers(0, 12), st.integers(1, 4))
def test_indexed_lists_select_exactly_what_the_evaluator_accepts(
    stored: list[Any], text: str, after_index: int, limit: int
) -> None:
    where = filters.parse_filter(text)
    with fresh_store() as store:
        for job in stored:
            insert(store, job)
            other = protos.new_job_pb()
            other.CopyFrom(job)
            insert(store, other, OTHER_PARENT)  # another scope: never listed here
            insert(store, as_tuning_job(job))  # another kind: listed only as such
        for kind in (protos.CUSTOM_JOB, protos.TUNING_JOB):
            expected = scan(store, where, kind)
            assert sql_only(store, where, kind) == expected, text
        # Pages: resume after any job, stop at the limit, in creation order.
        seqs = [seq for seq, _ in store.list_jobs(PARENT)]
        after = seqs[after_index] if after_index < len(seqs) else 0
        page = store.list_matching(PARENT, where, after_seq=after, limit=limit)
        assert [seq for seq, _ in page] == [
            s for s in scan(store, where, protos.CUSTOM_JOB) if s > after
        ][:limit]


@pytest.mark.parametrize(
    ("name", "pattern", "expected"),
    [
        ("a\0b", "a*b", True),  # SQLite's GLOB would see "a" and fail
        ("a\0b", "a?b", True),
        ("a", "a\0*", False),  # ... and here see the pattern "a" and succeed
        ("a\0", "a\0*", True),
        ("[x]", "[x]", True),  # brackets are literal, not a class
        ("x", "[x]", False),
        ("é😀", "??", True),  # one character each, not one byte
        ("ab", "", False),
    ],
)
def test_display_name_globs_match_like_the_evaluator(
    name: str, pattern: str, expected: bool
) -> None:
    where = filters.parse_filter(f"display_name:{quoted(pattern)}")
    with fresh_store() as store:
        job = protos.new_job_pb()
        job.display_name = name
        insert(store, job)
        assert filters.glob_match(name, pattern) is expected
        assert bool(sql_only(store, where, protos.CUSTOM_JOB)) is expected
        assert (
            bool(sql_only(store, filters.Not(where) if where else None, protos.CUSTOM_JOB))
            is not expected
        )


def test_a_filter_value_sqlite_cannot_hold_matches_like_the_evaluator() -> None:
    with fresh_store() as store:
        job = protos.new_job_pb()
        job.labels["team"] = "a"
        job.display_name = "a"
        insert(store, job)
        lone_surrogate = "\ud800"
        cases: list[filters.Node] = [
            filters.Label("team", "=", lone_surrogate),
            filters.Label("team", "!=", lone_surrogate),
            filters.DisplayName("=", lone_surrogate),
            filters.DisplayName("!=", lone_surrogate),
            filters.DisplayName("glob", lone_surrogate + "*"),
        ]
        for where in cases:
            assert sql_only(store, where, protos.CUSTOM_JOB) == scan(
                store, where, protos.CUSTOM_JOB
            )


def test_the_index_follows_updates_and_deletes() -> None:
    with fresh_store() as store:
        job = protos.new_job_pb()
        job.display_name = "before"
        job.labels["team"] = "a"
        job_id = insert(store, job)

        def listed(text: str) -> list[str]:
            found = store.list_matching(PARENT, filters.parse_filter(text), limit=10)
            return [j.name.rsplit("/", 1)[1] for _, j in found]

        def change(j: Any) -> bool:
            j.display_name = "after"
            j.labels["team"] = "b"
            j.labels["env"] = "prod"
            protos.set_state(j, S.JOB_STATE_RUNNING)
            return True

        store.update_job(job_id, change)
        assert listed("labels.team=a") == []
        assert listed("labels.team=b AND labels.env=prod") == [job_id]
        assert listed("display_name=after AND state=JOB_STATE_RUNNING") == [job_id]
        assert listed('start_time>"2000-01-01T00:00:00Z"') == [job_id]
        assert listed("display_name=before") == []
        store.delete_job(job_id)
        assert listed("labels.team=b") == []
        with store._reading() as db:
            assert db.execute("SELECT count(*) FROM job_labels").fetchone() == (0,)


# -- cost -----------------------------------------------------------------------------------------

ADOPTION = (
    'labels.pulumi_resource="id-{i}" AND (labels.pulumi_run="r-{i}" OR labels.pulumi_run="x")'
)


def fill(store: Store, count: int, start: int = 0) -> None:
    for i in range(start, count):
        job = protos.new_job_pb()
        job.display_name = f"job-{i}"
        job.labels["pulumi_resource"] = f"id-{i}"
        job.labels["pulumi_run"] = f"r-{i}"
        protos.now_ts(job.create_time)
        # Three RUNNING jobs whatever the count: a state filter returns the same three.
        protos.set_state(job, S.JOB_STATE_RUNNING if i < 3 else S.JOB_STATE_SUCCEEDED)
        insert(store, job)


@pytest.mark.parametrize(
    ("text", "uses"),
    [
        (
            ADOPTION.format(i=5),
            "USING COVERING INDEX job_labels_value (key=? AND value=? AND job_seq>?)",
        ),
        (
            "state=JOB_STATE_RUNNING",
            "USING INDEX jobs_state (parent=? AND kind=? AND state=? AND rowid>?)",
        ),
        ("display_name=job-5", "USING INDEX jobs_display_name"),
        ("labels.pulumi_run:*", "USING PRIMARY KEY (key=? AND job_seq>?)"),
        ('create_time>"2000-01-01T00:00:00Z"', "USING INDEX jobs_create_time"),
        ("", "USING INDEX jobs_scope (parent=? AND kind=? AND rowid>?)"),
        ("NOT labels.team:*", "USING INDEX jobs_scope (parent=? AND kind=? AND rowid>?)"),
    ],
)
def test_lists_reach_their_rows_through_an_index(text: str, uses: str) -> None:
    with fresh_store() as store:
        fill(store, 50)
        plan = store.explain_list(PARENT, filters.parse_filter(text))
        assert uses in plan[0], plan
        assert not any(step.startswith("SCAN") for step in plan), plan


def test_the_most_selective_term_drives_a_list() -> None:
    with fresh_store() as store:
        fill(store, 50)
        # Both terms are indexed; the label matches one job, the state forty-seven.
        plan = store.explain_list(
            PARENT,
            filters.parse_filter('state=JOB_STATE_SUCCEEDED AND labels.pulumi_resource="id-9"'),
        )
        assert "job_labels_value" in plan[0], plan
        # A term that matches no job ends the list before it starts.
        nothing = filters.parse_filter("state=JOB_STATE_SUCCEEDED AND labels.pulumi_run=nobody")
        assert store.explain_list(PARENT, nothing) == ["NO ROWS: a term no job matches"]
        assert store.list_matching(PARENT, nothing, limit=10) == []


def sqlite_steps(store: Store, text: str) -> int:
    """SQLite virtual machine steps (in hundreds) one list with this filter takes."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    # One thread: the list borrows the connection this hands back to the pool.
    with store._reading() as db:
        db.set_progress_handler(count, 100)
    found = store.list_matching(PARENT, filters.parse_filter(text), limit=101)
    with store._reading() as db:
        db.set_progress_handler(None, 0)
    assert found, text
    return steps


@pytest.mark.parametrize(
    "text", [ADOPTION.format(i=2), "state=JOB_STATE_RUNNING", "display_name=job-1"]
)
def test_list_work_does_not_grow_with_stored_jobs(text: str) -> None:
    with fresh_store() as store:
        fill(store, 20)
        few = sqlite_steps(store, text)
        fill(store, 1500, start=20)
        many = sqlite_steps(store, text)
    # A scan would take 75 times the steps; what remains is a B-tree one level deeper.
    assert many <= 2 * max(few, 1), (few, many)


# -- concurrency ------------------------------------------------------------------------------------


def test_reads_do_not_wait_for_a_writer(tmp_path: Path) -> None:
    store = Store(tmp_path)
    job_id = insert(store, protos.new_job_pb())
    in_transaction, release = threading.Event(), threading.Event()

    def slow_writer() -> None:
        def change(job: Any) -> bool:
            in_transaction.set()
            release.wait(10)
            job.display_name = "written"
            return True

        store.update_job(job_id, change)

    writer = threading.Thread(target=slow_writer)
    writer.start()
    try:
        assert in_transaction.wait(10)
        # The write lock is held; a read answers from the last commit instead of waiting.
        job = store.get_job(job_id)
        assert job is not None and job.display_name == ""
        assert not release.is_set()
    finally:
        release.set()
        writer.join()
    job = store.get_job(job_id)
    assert job is not None and job.display_name == "written"
    store.close()


def test_concurrent_read_modify_writes_lose_nothing(tmp_path: Path) -> None:
    # Two stores on one database, as two connections from different processes would be: the
    # writes still serialise in SQLite (BEGIN IMMEDIATE, busy timeout), none is lost or refused.
    stores = [Store(tmp_path), Store(tmp_path)]
    job = protos.new_job_pb()
    job.labels["count"] = "0"
    job_id = insert(stores[0], job)
    errors: list[BaseException] = []

    def bump(job: Any) -> bool:
        job.labels["count"] = str(int(job.labels["count"]) + 1)
        return True

    def work(store: Store) -> None:
        try:
            for _ in range(25):
                store.update_job(job_id, bump)
                store.list_matching(PARENT, filters.parse_filter("labels.count:*"), limit=5)
        except BaseException as exc:  # collected: an assertion in a thread would go unseen
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(stores[i % 2],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    final = stores[1].get_job(job_id)
    assert final is not None and final.labels["count"] == "200"
    found = stores[0].list_matching(PARENT, filters.parse_filter("labels.count=200"), limit=5)
    assert [j.name for _, j in found] == [final.name]
    for store in stores:
        store.close()


# -- a database written before the index --------------------------------------------------------------

# The schema as the service wrote it before the list index (kept here as a fixture: the store's
# own DDL moves on, this must not).
OLD_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    parent TEXT NOT NULL,
    state INTEGER NOT NULL,
    job_json TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'customJobs'
);
CREATE INDEX IF NOT EXISTS jobs_parent ON jobs(parent, seq);
CREATE TABLE IF NOT EXISTS replicas (
    job_id TEXT NOT NULL,
    replica TEXT NOT NULL,
    pool INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    pid INTEGER,
    start_ticks INTEGER,
    state TEXT NOT NULL,
    exit_code INTEGER,
    restarts INTEGER NOT NULL DEFAULT 0,
    port INTEGER NOT NULL,
    log_path TEXT NOT NULL,
    PRIMARY KEY (job_id, replica)
);
CREATE TABLE IF NOT EXISTS operations (
    name TEXT PRIMARY KEY,
    job_id TEXT,
    done INTEGER NOT NULL,
    op_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS trial_jobs (
    job_id TEXT PRIMARY KEY,
    tuning_job_id TEXT NOT NULL,
    trial_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS trial_jobs_tuning ON trial_jobs(tuning_job_id);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
"""


def old_database(path: Path) -> list[Any]:
    """A state dir as the previous service left it: jobs of both kinds, a page-token key."""
    made: list[Any] = []
    db = sqlite3.connect(path / DB_NAME)
    db.executescript(OLD_SCHEMA)
    for i, (labels, state) in enumerate(
        [
            ({"team": "vision", "run": "r1"}, S.JOB_STATE_SUCCEEDED),
            ({"team": "nlp"}, S.JOB_STATE_RUNNING),
            ({}, S.JOB_STATE_FAILED),
        ]
    ):
        for kind in (protos.CUSTOM_JOB, protos.TUNING_JOB):
            job = protos.new_job_pb(kind)
            job.name = f"{PARENT}/{kind.collection}/{i}{len(made)}"
            job.display_name = f"old-{i}"
            job.labels.update(labels)
            protos.now_ts(job.create_time, BASE + i)
            protos.set_state(job, state, at=BASE + i + 1)
            db.execute(
                "INSERT INTO jobs(id, parent, state, job_json, kind) VALUES (?, ?, ?, ?, ?)",
                (
                    job.name.rsplit("/", 1)[1],
                    PARENT,
                    int(state),
                    protos.dump_job(job),
                    kind.collection,
                ),
            )
            made.append(job)
    db.execute("INSERT INTO meta(key, value) VALUES ('page-token-key', ?)", (b"k" * 32,))
    db.commit()
    db.close()
    return made


UPGRADE_FILTERS = [
    "labels.team=vision",
    "labels.team:*",
    "NOT labels.run:*",
    "state=JOB_STATE_RUNNING",
    "display_name=old-2",
    'display_name:"old-*"',
    f'end_time<="{dt.datetime.fromtimestamp(BASE + 2, dt.UTC).isoformat()}"',
]


def test_a_database_from_before_the_index_is_upgraded_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = old_database(tmp_path)
    # The CLI (read-only) on the old database: it cannot upgrade it, and lists by scanning.
    readonly = Store(tmp_path, readonly=True)
    before = {
        text: [
            j.name for _, j in readonly.list_matching(PARENT, filters.parse_filter(text), limit=50)
        ]
        for text in UPGRADE_FILTERS
    }
    readonly.close()
    assert before["labels.team=vision"] == [made[0].name]

    store = Store(tmp_path)
    with store._reading() as db:
        assert db.execute("PRAGMA user_version").fetchone() == (store_module.SCHEMA_VERSION,)
        assert db.execute("SELECT count(*) FROM job_labels").fetchone() == (6,)
        names = db.execute("SELECT display_name FROM jobs ORDER BY seq").fetchall()
        assert [n for (n,) in names] == [j.display_name for j in made]
    for text in UPGRADE_FILTERS:
        where = filters.parse_filter(text)
        assert sql_only(store, where, protos.CUSTOM_JOB) == scan(store, where, protos.CUSTOM_JOB)
        assert sql_only(store, where, protos.TUNING_JOB) == scan(store, where, protos.TUNING_JOB)
        assert [j.name for _, j in store.list_matching(PARENT, where, limit=50)] == before[text]
    assert (
        "job_labels_value" in store.explain_list(PARENT, filters.parse_filter("labels.team=nlp"))[0]
    )
    # What was in the database is kept: the page-token key, and ids are not reused.
    assert store.secret_key("page-token-key") == b"k" * 32
    insert(store, protos.new_job_pb())
    store.close()

    def backfill_again(db: sqlite3.Connection) -> None:
        raise AssertionError("the backfill ran on an upgraded database")

    monkeypatch.setattr(store_module, "_backfill", backfill_again)
    reopened = Store(tmp_path)
    where = filters.parse_filter("labels.team=vision")
    assert [j.name for _, j in reopened.list_matching(PARENT, where, limit=5)] == [made[0].name]
    reopened.close()
