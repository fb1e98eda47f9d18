"""SQLite persistence for jobs, replicas, trials and long-running operations.

Everything the service knows lives in ``<state-dir>/emulator.db`` so that a restarted service
reports the same jobs (and, for jobs that were running, reports truthfully what happened to them).
Jobs of every kind share one table, as proto JSON with their kind (the REST collection, see
:class:`emulator.protos.Kind`) beside it. ``trial_jobs`` links the CustomJob of each
hyperparameter tuning trial to its tuning job.

What a list filter can test is kept beside the JSON, in the same transaction as every insert,
update and delete: the state, display name and times as columns of ``jobs``, the labels as rows of
``job_labels``, each with an index. :meth:`Store.list_matching` compiles a parsed filter
(:mod:`emulator.filters`) into SQL over them and reaches the candidates through the most selective
index, so a list costs what it returns, not the number of jobs stored. A database written before
these existed is upgraded when the service opens it (once: ``PRAGMA user_version``).

Concurrency: one connection writes, under a lock, in ``BEGIN IMMEDIATE`` transactions; reads take
a connection of their own from a pool and, the journal being WAL, never wait for a writer.

When the database cannot be used (the disk is full, an I/O error, a file it cannot open) the store
raises :class:`StateUnavailable` naming it, in one of two ways. Work the service has accepted (a
job's progress, a tuning job's trials, a cancel) must not be lost to a full disk, so by default a
call waits until the store answers again and then carries on; an API request cannot wait, so its
thread asks to fail fast (:meth:`Store.failing_fast`) and answers 503 UNAVAILABLE. A read-only
store (the CLI) always fails fast.
"""

from __future__ import annotations

import errno
import functools
import logging
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from . import filters, names, protos

__all__ = ["DB_NAME", "Replica", "StateUnavailable", "Store"]

log = logging.getLogger("emulator.store")

DB_NAME = "emulator.db"
# meta keys "project-id:<number>" hold the project ID a number stood for (emulator.names).
_PROJECT_KEY = "project-id:"

# 1: the list index (columns and job_labels below) exists and holds every job.
SCHEMA_VERSION = 1

_TABLES = """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    parent TEXT NOT NULL,
    state INTEGER NOT NULL,
    job_json TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'customJobs',
    display_name TEXT NOT NULL DEFAULT '',
    create_time REAL,
    update_time REAL,
    start_time REAL,
    end_time REAL
);
CREATE TABLE IF NOT EXISTS job_labels (
    key TEXT NOT NULL,
    job_seq INTEGER NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (key, job_seq)
) WITHOUT ROWID;
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
CREATE TABLE IF NOT EXISTS install_processes (
    job_id TEXT PRIMARY KEY,
    pid INTEGER NOT NULL,
    start_ticks INTEGER
);
"""

# Columns of `jobs` added since the first schema, for ALTER TABLE on an older database.
_ADDED_COLUMNS = {
    "kind": "TEXT NOT NULL DEFAULT 'customJobs'",
    "display_name": "TEXT NOT NULL DEFAULT ''",
    "create_time": "REAL",
    "update_time": "REAL",
    "start_time": "REAL",
    "end_time": "REAL",
}

# An index of a rowid table ends with the rowid (seq), and one of a WITHOUT ROWID table with its
# primary key: equal keys come out in creation order, which is the order of a list.
_INDEXES = """
DROP INDEX IF EXISTS jobs_parent;
CREATE INDEX IF NOT EXISTS jobs_scope ON jobs(parent, kind);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(parent, kind, state);
CREATE INDEX IF NOT EXISTS jobs_display_name ON jobs(parent, kind, display_name);
CREATE INDEX IF NOT EXISTS jobs_create_time ON jobs(parent, kind, create_time);
CREATE INDEX IF NOT EXISTS jobs_update_time ON jobs(parent, kind, update_time);
CREATE INDEX IF NOT EXISTS jobs_start_time ON jobs(parent, kind, start_time);
CREATE INDEX IF NOT EXISTS jobs_end_time ON jobs(parent, kind, end_time);
CREATE INDEX IF NOT EXISTS job_labels_value ON job_labels(key, value);
CREATE INDEX IF NOT EXISTS job_labels_job ON job_labels(job_seq);
"""

_TIME_COLUMNS = ("create_time", "update_time", "start_time", "end_time")
_JOB_COLUMNS = ("state", "display_name", *_TIME_COLUMNS)

# A filter term that could drive a list is counted up to this many matches to pick the most
# selective one: enough to tell a handful from thousands, cheap to count.
_COUNT_CAP = 1000


@dataclass
class Replica:
    """One process of a job: ``workerpool<pool>-<idx>``."""

    job_id: str
    replica: str
    pool: int
    idx: int
    pid: int | None
    start_ticks: int | None
    state: str
    exit_code: int | None
    restarts: int
    port: int
    log_path: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly view for the admin API and the CLI."""
        return {
            "replica": self.replica,
            "pool": self.pool,
            "index": self.idx,
            "pid": self.pid,
            "state": self.state,
            "exitCode": self.exit_code,
            "restarts": self.restarts,
            "port": self.port,
            "logPath": self.log_path,
        }


# -- when the state cannot be used ----------------------------------------------------------------

# SQLite's result codes (their primary part) and, for an error without one, its messages, that say
# the database cannot be used now: not that the emulator asked for something wrong (a bug must not
# pass for a full disk, nor be waited for).
_UNAVAILABLE_CODES = frozenset(
    {
        "SQLITE_FULL",
        "SQLITE_IOERR",
        "SQLITE_CANTOPEN",
        "SQLITE_READONLY",
        "SQLITE_PERM",
        "SQLITE_BUSY",
        "SQLITE_LOCKED",
        "SQLITE_NOMEM",
        "SQLITE_NOTADB",
        "SQLITE_CORRUPT",
    }
)
_UNAVAILABLE_MESSAGES = (
    "database or disk is full",
    "disk I/O error",
    "unable to open database file",
    "attempt to write a readonly database",
    "database is locked",
    "file is not a database",
    "database disk image is malformed",
    "out of memory",
)
_DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
# How long a call waits before it tries the database again: doubling from the first to the longest.
_FIRST_WAIT_SECONDS = 0.05
_LONGEST_WAIT_SECONDS = 2.0


class StateUnavailable(Exception):
    """The emulator's state cannot be used now: the disk is full, an I/O error, a file that cannot
    be opened or written. ``path`` is what could not be used, ``reason`` what the system said."""

    def __init__(self, path: Path, reason: str, *, disk_full: bool) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.disk_full = disk_full

    @classmethod
    def of_os_error(cls, path: Path, exc: OSError) -> StateUnavailable:
        """``path`` could not be read or written, as ``exc`` says."""
        return cls(path, exc.strerror or str(exc), disk_full=exc.errno in _DISK_FULL_ERRNOS)

    @classmethod
    def of(cls, path: Path, exc: BaseException) -> StateUnavailable | None:
        """What ``exc``, raised while using ``path``, says about the state; None when it is not
        about the state (a bug of the emulator's, which must come out as itself)."""
        if isinstance(exc, OSError):
            where = Path(exc.filename) if isinstance(exc.filename, str) else path
            return cls.of_os_error(where, exc)
        if not (isinstance(exc, sqlite3.OperationalError) or type(exc) is sqlite3.DatabaseError):
            return None
        text = str(exc)
        code = getattr(exc, "sqlite_errorname", None)
        if code:
            known = "_".join(str(code).split("_")[:2]) in _UNAVAILABLE_CODES
        else:
            known = any(message in text for message in _UNAVAILABLE_MESSAGES)
        if not known:
            return None
        return cls(path, text, disk_full=code == "SQLITE_FULL" or "disk is full" in text)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _patient(method: Callable[Concatenate[Store, _P], _R]) -> Callable[Concatenate[Store, _P], _R]:
    """A store method that waits for the database while it cannot be used (see the module doc)."""

    @functools.wraps(method)
    def call(store: Store, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return store._patiently(functools.partial(method, store, *args, **kwargs))

    return call


class Store:
    """Thread-safe access to the service's SQLite database."""

    def __init__(self, state_dir: Path, *, readonly: bool = False) -> None:
        self.path = state_dir / DB_NAME
        self._readonly = readonly
        if not readonly:
            state_dir.mkdir(parents=True, exist_ok=True)
        self._write_lock = threading.RLock()
        self._tx_owner: int | None = None
        self._tx_depth = 0
        self._pool_lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._closed = False
        # For calls that find the database unusable: see _patiently.
        self._local = threading.local()
        self._given_up = threading.Event()
        self._trouble: str | None = None
        self._db = self._connect()
        if not readonly:
            # WAL lets readers (other connections, the `jobs` CLI) read while the service writes;
            # NORMAL sync keeps creates cheap and still never corrupts the database on a crash
            # (the last commit may be lost only on power failure, which an emulator can live with).
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            _upgrade(self._db)
        columns = _columns_of(self._db, "jobs")
        # Read-only (the CLI) on a database from before tuning jobs: every row is a custom job.
        self._kind = "kind" if "kind" in columns else "'customJobs'"
        # Read-only on a database not yet upgraded: lists scan, as they did then.
        self._indexed = _user_version(self._db) >= SCHEMA_VERSION

    def _connect(self) -> sqlite3.Connection:
        if self._readonly:
            db = sqlite3.connect(
                f"file:{self.path}?mode=ro", uri=True, check_same_thread=False, timeout=10
            )
        else:
            db = sqlite3.connect(self.path, check_same_thread=False, timeout=10)
        # Transactions are explicit (BEGIN IMMEDIATE in _tx); a read is its own snapshot.
        db.isolation_level = None
        db.create_function("glob_match", 2, filters.glob_match, deterministic=True)
        return db

    @classmethod
    def open(cls, state_dir: Path, *, readonly: bool = False) -> Store:
        """The store of ``state_dir``; StateUnavailable when it cannot be opened: a state dir that
        is a file or cannot be created, a database that is a directory, not SQLite, unreadable."""
        database = state_dir / DB_NAME
        try:
            if state_dir.exists() and not state_dir.is_dir():
                raise StateUnavailable(state_dir, "not a directory", disk_full=False)
            return cls(state_dir, readonly=readonly)
        except (sqlite3.DatabaseError, OSError) as exc:
            problem = StateUnavailable.of(database, exc)
            raise (problem or StateUnavailable(database, str(exc), disk_full=False)) from exc

    @contextmanager
    def failing_fast(self) -> Iterator[None]:
        """Within (in this thread): a call that finds the database unusable raises
        StateUnavailable at once instead of waiting for it. For API requests, which answer 503."""
        before = getattr(self._local, "fail_fast", False)
        self._local.fail_fast = True
        try:
            yield
        finally:
            self._local.fail_fast = before

    def stop_waiting(self) -> None:
        """Calls waiting for the database give up, and later ones fail fast: the service stops."""
        self._given_up.set()

    def _fails_fast(self) -> bool:
        return (
            self._readonly
            or self._given_up.is_set()
            or getattr(self._local, "fail_fast", False)
            # Within this thread's transaction: the outer call tries the whole of it again.
            or self._tx_owner == threading.get_ident()
        )

    def _patiently(self, attempt: Callable[[], _R]) -> _R:
        """``attempt()``; while it finds the database unusable, try again after a while (growing
        to a few seconds), unless this call must fail fast (StateUnavailable then)."""
        wait = _FIRST_WAIT_SECONDS
        while True:
            try:
                result = attempt()
            except (sqlite3.Error, OSError, StateUnavailable) as exc:
                # StateUnavailable: from a call nested in this one's transaction.
                problem = (
                    exc
                    if isinstance(exc, StateUnavailable)
                    else StateUnavailable.of(self.path, exc)
                )
                if problem is None:
                    raise
                if self._fails_fast():
                    raise problem from exc
                self._note_trouble(problem)
                if self._given_up.wait(wait):
                    raise problem from exc
                wait = min(wait * 2, _LONGEST_WAIT_SECONDS)
                continue
            if self._trouble is not None:
                self._note_trouble(None)
            return result

    def _note_trouble(self, problem: StateUnavailable | None) -> None:
        """Log when the database stops being usable, and when it is again (once each)."""
        with self._pool_lock:
            before, self._trouble = self._trouble, None if problem is None else problem.reason
        if problem is not None and before is None:
            log.warning("the state cannot be used (%s): work waits for it", problem)
        elif problem is None and before is not None:
            log.warning("the state can be used again (it was: %s): work goes on", before)

    def close(self) -> None:
        """Close every connection (one still lent to a reader closes when it comes back)."""
        with self._write_lock, self._pool_lock:
            self._closed = True
            for db in self._idle:
                db.close()
            self._idle.clear()
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """A write transaction on the writer connection (nested calls join the outer one)."""
        with self._write_lock:
            if self._tx_depth:
                self._tx_depth += 1
                try:
                    yield self._db
                finally:
                    self._tx_depth -= 1
                return
            # IMMEDIATE takes the write lock up front: a read-modify-write never finds, at its
            # write, that another connection wrote since its read (SQLITE_BUSY without waiting).
            self._db.execute("BEGIN IMMEDIATE")
            self._tx_owner, self._tx_depth = threading.get_ident(), 1
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:  # SQLite may have rolled back already
                    self._db.execute("ROLLBACK")
                raise
            finally:
                self._tx_owner, self._tx_depth = None, 0

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A connection for reads: a pooled one, or the writer within this thread's transaction
        (which must see its own uncommitted writes)."""
        if self._tx_owner == threading.get_ident():
            yield self._db
            return
        with self._pool_lock:
            if self._closed:
                # What the one connection of a closed store said, before there was a pool.
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            db = self._idle.pop() if self._idle else None
        if db is None:
            db = self._connect()
        try:
            yield db
        finally:
            with self._pool_lock:
                if self._closed:
                    db.close()
                else:
                    self._idle.append(db)

    @_patient
    def _read(self, query: str, args: tuple[Any, ...] = ()) -> list[Any]:
        with self._reading() as db:
            return db.execute(query, args).fetchall()

    # -- jobs -------------------------------------------------------------------------------

    def new_job_id(self) -> str:
        """A fresh numeric id like Vertex's (19 digits, never reused in this database)."""
        while True:
            candidate = str(10**18 + secrets.randbelow(9 * 10**18))
            if not self._read("SELECT 1 FROM jobs WHERE id=?", (candidate,)):
                return candidate

    @_patient
    def insert_job(
        self, job_id: str, parent: str, job: Any, *, trial_of: tuple[str, str] | None = None
    ) -> None:
        """Store a new job (of the kind its message type says).

        ``trial_of`` = (tuning job id, trial id) links the CustomJob of a tuning job's trial to
        it, in the same transaction.
        """
        kind = protos.kind_of(job).collection
        columns = ", ".join(_JOB_COLUMNS)
        marks = ", ".join("?" for _ in _JOB_COLUMNS)
        with self._tx() as db:
            cursor = db.execute(
                f"INSERT INTO jobs(id, parent, job_json, kind, {columns}) "
                f"VALUES (?, ?, ?, ?, {marks})",
                (job_id, parent, protos.dump_job(job), kind, *_filter_columns(job)),
            )
            _put_labels(db, _rowid(cursor), job)
            if trial_of is not None:
                db.execute(
                    "INSERT INTO trial_jobs(job_id, tuning_job_id, trial_id) VALUES (?, ?, ?)",
                    (job_id, *trial_of),
                )

    def _select(self, columns: str, where: str, args: tuple[Any, ...]) -> list[Any]:
        """Rows of ``SELECT <columns>, job_json, kind FROM jobs WHERE <where>``."""
        return self._read(f"SELECT {columns}job_json, {self._kind} FROM jobs WHERE {where}", args)

    def get_job(self, job_id: str) -> Any | None:
        """The job's proto, or None."""
        rows = self._select("", "id=?", (job_id,))
        return _load(rows[0]) if rows else None

    def job_kind(self, job_id: str) -> protos.Kind | None:
        """The job's kind, or None when there is no such job."""
        rows = self._read(f"SELECT {self._kind} FROM jobs WHERE id=?", (job_id,))
        return protos.KINDS[rows[0][0]] if rows else None

    @_patient
    def update_job(self, job_id: str, change: Callable[[Any], bool]) -> Any | None:
        """Read-modify-write a job atomically; ``change`` returns False to leave it untouched.

        Returns the job as stored afterwards, or None when it does not exist.
        """
        with self._tx() as db:
            query = f"SELECT seq, job_json, {self._kind} FROM jobs WHERE id=?"
            found = db.execute(query, (job_id,)).fetchone()
            if found is None:
                return None
            seq, job = found[0], _load(found[1:])
            labels_before = dict(job.labels)
            if change(job):
                assignments = ", ".join(f"{c}=?" for c in _JOB_COLUMNS)
                db.execute(
                    f"UPDATE jobs SET job_json=?, {assignments} WHERE seq=?",
                    (protos.dump_job(job), *_filter_columns(job), seq),
                )
                if dict(job.labels) != labels_before:
                    db.execute("DELETE FROM job_labels WHERE job_seq=?", (seq,))
                    _put_labels(db, seq, job)
            return job

    def list_jobs(
        self, parent: str, *, kind: protos.Kind = protos.CUSTOM_JOB, after_seq: int = 0
    ) -> Iterator[tuple[int, Any]]:
        """(seq, job) for the parent's jobs of ``kind`` in creation order, after ``after_seq``."""
        rows = self._select(
            "seq, ",
            f"parent=? AND {self._kind}=? AND seq>? ORDER BY seq",
            (parent, kind.collection, after_seq),
        )
        for row in rows:
            yield row[0], _load(row[1:])

    def list_matching(
        self,
        parent: str,
        where: filters.Node | None,
        *,
        kind: protos.Kind = protos.CUSTOM_JOB,
        after_seq: int = 0,
        limit: int,
    ) -> list[tuple[int, Any]]:
        """(seq, job) for the first ``limit`` jobs of the parent and kind after ``after_seq``, in
        creation order, that match the parsed filter ``where`` (None: every job).

        The SQL selects exactly what :func:`emulator.filters.to_predicate` accepts (the tests hold
        it to that); the predicate still checks each job it returns, which costs little next to
        loading the job, so the reference meaning of a filter is what a list answers regardless.
        """
        matches = filters.to_predicate(where)
        found: list[tuple[int, Any]] = []
        if not self._indexed:
            for seq, job in self.list_jobs(parent, kind=kind, after_seq=after_seq):
                if len(found) == limit:
                    break
                if matches(job):
                    found.append((seq, job))
            return found
        while len(found) < limit:
            wanted = limit - len(found)
            rows = self._query_matching(parent, kind, where, after_seq, wanted)
            for seq, job in rows:
                after_seq = seq
                if matches(job):
                    found.append((seq, job))
            if len(rows) < wanted:
                break
        return found

    @_patient
    def _query_matching(
        self,
        parent: str,
        kind: protos.Kind,
        where: filters.Node | None,
        after_seq: int,
        limit: int,
    ) -> list[tuple[int, Any]]:
        """What the SQL of ``where`` selects (see :meth:`list_matching`), without the check."""
        with self._reading() as db:
            query = _list_query(db, parent, kind, where, after_seq, limit)
            rows = [] if query is None else db.execute(*query).fetchall()
        return [(row[0], _load(row[1:])) for row in rows]

    @_patient
    def explain_list(
        self, parent: str, where: filters.Node | None, *, kind: protos.Kind = protos.CUSTOM_JOB
    ) -> list[str]:
        """SQLite's plan for the first page of a list with this filter, one line per step."""
        with self._reading() as db:
            query = _list_query(db, parent, kind, where, 0, 1)
            if query is None:
                return ["NO ROWS: a term no job matches"]
            rows = db.execute(f"EXPLAIN QUERY PLAN {query[0]}", query[1]).fetchall()
        return [str(row[-1]) for row in rows]

    def all_jobs(self) -> list[tuple[str, Any]]:
        """(id, job) for every job of every kind, oldest first."""
        return [(row[0], _load(row[1:])) for row in self._select("id, ", "1 ORDER BY seq", ())]

    def active_job_ids(self, parent: str) -> list[str]:
        """Ids of the parent's jobs not in a terminal state, trials' CustomJobs left out (their
        tuning job holds their quota): what the quota check at create counts."""
        terminal = ",".join(str(int(s)) for s in protos.TERMINAL_STATES)
        rows = self._read(
            f"SELECT id FROM jobs WHERE parent=? AND state NOT IN ({terminal}) "
            "AND id NOT IN (SELECT job_id FROM trial_jobs)",
            (parent,),
        )
        return [str(r[0]) for r in rows]

    def unfinished_job_ids(self) -> list[str]:
        """Ids of jobs that are not in a terminal state, oldest first."""
        terminal = ",".join(str(int(s)) for s in protos.TERMINAL_STATES)
        rows = self._read(f"SELECT id FROM jobs WHERE state NOT IN ({terminal}) ORDER BY seq")
        return [r[0] for r in rows]

    @_patient
    def delete_job(self, job_id: str) -> None:
        """Remove a job, its labels, its replicas, and its link to a tuning job (or its trials')."""
        with self._tx() as db:
            db.execute(
                "DELETE FROM job_labels WHERE job_seq IN (SELECT seq FROM jobs WHERE id=?)",
                (job_id,),
            )
            db.execute("DELETE FROM jobs WHERE id=?", (job_id,))
            db.execute("DELETE FROM replicas WHERE job_id=?", (job_id,))
            db.execute("DELETE FROM trial_jobs WHERE job_id=? OR tuning_job_id=?", (job_id, job_id))

    # -- hyperparameter tuning trials -------------------------------------------------------

    def trial_of(self, job_id: str) -> tuple[str, str] | None:
        """(tuning job id, trial id) when ``job_id`` is a trial's CustomJob, else None."""
        rows = self._read(
            "SELECT tuning_job_id, trial_id FROM trial_jobs WHERE job_id=?", (job_id,)
        )
        return (str(rows[0][0]), str(rows[0][1])) if rows else None

    def trial_job_ids(self, tuning_job_id: str) -> list[str]:
        """Ids of the CustomJobs of a tuning job's trials."""
        rows = self._read("SELECT job_id FROM trial_jobs WHERE tuning_job_id=?", (tuning_job_id,))
        return [str(r[0]) for r in rows]

    def trial_job_states(self, tuning_job_id: str) -> dict[str, int]:
        """The state of each CustomJob of a tuning job's trials, by id (a deleted one is absent):
        what each step of a tuning job needs, without loading every trial's job."""
        rows = self._read(
            "SELECT t.job_id, j.state FROM trial_jobs AS t JOIN jobs AS j ON j.id = t.job_id "
            "WHERE t.tuning_job_id=?",
            (tuning_job_id,),
        )
        return {str(r[0]): int(r[1]) for r in rows}

    # -- replicas ---------------------------------------------------------------------------

    @_patient
    def put_replica(self, r: Replica) -> None:
        """Insert or replace a replica row."""
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO replicas VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    r.job_id,
                    r.replica,
                    r.pool,
                    r.idx,
                    r.pid,
                    r.start_ticks,
                    r.state,
                    r.exit_code,
                    r.restarts,
                    r.port,
                    r.log_path,
                ),
            )

    def replicas(self, job_id: str) -> list[Replica]:
        """The job's replicas, pool by pool."""
        rows = self._read("SELECT * FROM replicas WHERE job_id=? ORDER BY pool, idx", (job_id,))
        return [Replica(*row) for row in rows]

    def all_replicas(self) -> list[Replica]:
        """Every replica row (used to clean up processes left by a killed service)."""
        return [Replica(*row) for row in self._read("SELECT * FROM replicas")]

    # -- pip installs -----------------------------------------------------------------------

    def put_install_process(self, job_id: str, pid: int, start_ticks: int | None) -> None:
        """Record the pip process installing the job's packages (it leads its process group)."""
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO install_processes VALUES (?,?,?)",
                (job_id, pid, start_ticks),
            )

    def clear_install_process(self, job_id: str) -> None:
        """The job's pip process has ended."""
        with self._tx() as db:
            db.execute("DELETE FROM install_processes WHERE job_id=?", (job_id,))

    def install_processes(self) -> list[tuple[str, int, int | None]]:
        """(job id, pid, start ticks) of each pip process recorded: after a crash, what runs on.

        Empty on a database from before the table, which only a read-only store leaves as it is.
        """
        with self._reading() as db:
            if not _columns_of(db, "install_processes"):
                return []
            query = "SELECT job_id, pid, start_ticks FROM install_processes ORDER BY job_id"
            rows = db.execute(query).fetchall()
        return [(str(r[0]), int(r[1]), r[2]) for r in rows]

    # -- service secrets --------------------------------------------------------------------

    @_patient
    def secret_key(self, name: str) -> bytes:
        """A random 32-byte key kept in the database under ``name``, made on first use.

        Kept with the jobs so that what it signs (page tokens) stays valid across restarts.
        """
        with self._tx() as db:
            row = db.execute("SELECT value FROM meta WHERE key=?", (name,)).fetchone()
            if row is not None:
                return bytes(row[0])
            key = secrets.token_bytes(32)
            db.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (name, key))
            return key

    # -- project numbers (emulator.names) ---------------------------------------------------

    @_patient
    def remember_project(self, project_id: str, number: str) -> None:
        """Note that jobs named with project ``number`` were created for ``project_id``."""
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                (_PROJECT_KEY + number, project_id.encode()),
            )

    def project_ids(self) -> dict[str, str]:
        """``{number: project id}`` of every project remembered."""
        rows = self._read("SELECT key, value FROM meta WHERE key GLOB ?", (_PROJECT_KEY + "*",))
        return {str(k)[len(_PROJECT_KEY) :]: bytes(v).decode() for k, v in rows}

    @_patient
    def number_projects(self, numbers: names.ProjectNumbers) -> int:
        """Rename the jobs of a database written before names carried project numbers.

        Each job whose name has a project ID gets the number instead (in its name, its parent,
        and a tuning job's trials' job names); the ID is remembered. Returns how many jobs were
        renamed (0 on every start after the first).
        """
        renamed = 0
        with self._tx() as db:
            # The distinct parents come from an index: a start with nothing to rename reads
            # no job.
            parents = [str(row[0]) for row in db.execute("SELECT DISTINCT parent FROM jobs")]
            for parent in parents:
                project_id = parent.split("/")[1]
                if names.is_number(project_id):
                    continue
                number = numbers.number(project_id)
                rows = db.execute(
                    "SELECT seq, job_json, kind FROM jobs WHERE parent=?", (parent,)
                ).fetchall()
                for seq, job_json, kind in rows:
                    job = _load((job_json, kind))
                    job.name = names.with_project(job.name, number)
                    for trial in getattr(job, "trials", ()):
                        if trial.custom_job:
                            trial.custom_job = names.with_project(trial.custom_job, number)
                    db.execute(
                        "UPDATE jobs SET parent=?, job_json=? WHERE seq=?",
                        (names.with_project(parent, number), protos.dump_job(job), seq),
                    )
                    renamed += 1
                db.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                    (_PROJECT_KEY + number, project_id.encode()),
                )
        return renamed

    # -- operations -------------------------------------------------------------------------

    @_patient
    def put_operation(self, name: str, job_id: str | None, done: bool, op_json: str) -> None:
        """Insert or replace an operation (stored as google.longrunning.Operation JSON)."""
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO operations VALUES (?,?,?,?)",
                (name, job_id, int(done), op_json),
            )

    def get_operation(self, name: str) -> str | None:
        """The operation's JSON, or None."""
        rows = self._read("SELECT op_json FROM operations WHERE name=?", (name,))
        return str(rows[0][0]) if rows else None

    def pending_operations(self) -> list[tuple[str, str | None]]:
        """(name, job id) of operations that are not done."""
        rows = self._read("SELECT name, job_id FROM operations WHERE done=0")
        return [(r[0], r[1]) for r in rows]


def _load(row: tuple[str, str]) -> Any:
    """A job from its (job_json, kind) columns."""
    return protos.load_job(row[0], protos.KINDS[row[1]])


def _rowid(cursor: sqlite3.Cursor) -> int:
    rowid = cursor.lastrowid
    assert rowid is not None  # an INSERT into a rowid table always has one
    return rowid


# -- the list index -------------------------------------------------------------------------------


def _filter_columns(job: Any) -> tuple[Any, ...]:
    """The values of :data:`_JOB_COLUMNS` for ``job``: what filters test, beside its JSON.

    Times as the filter evaluator reads them (float seconds; NULL when unset, which no time
    comparison matches).
    """
    times = (protos.ts_seconds(getattr(job, f)) if job.HasField(f) else None for f in _TIME_COLUMNS)
    return (int(job.state), job.display_name, *times)


def _put_labels(db: sqlite3.Connection, seq: int, job: Any) -> None:
    db.executemany(
        "INSERT INTO job_labels(key, job_seq, value) VALUES (?, ?, ?)",
        [(key, seq, value) for key, value in job.labels.items()],
    )


def _columns_of(db: sqlite3.Connection, table: str) -> set[str]:
    return {str(c[1]) for c in db.execute(f"PRAGMA table_info({table})").fetchall()}


def _user_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def _upgrade(db: sqlite3.Connection) -> None:
    """Bring a database of any earlier schema to this one; the backfill runs once."""
    db.execute("BEGIN IMMEDIATE")
    try:
        for statement in _statements(_TABLES):
            db.execute(statement)
        present = _columns_of(db, "jobs")
        for name, declaration in _ADDED_COLUMNS.items():
            if name not in present:
                db.execute(f"ALTER TABLE jobs ADD COLUMN {name} {declaration}")
        if _user_version(db) < SCHEMA_VERSION:
            _backfill(db)
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        for statement in _statements(_INDEXES):
            db.execute(statement)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _backfill(db: sqlite3.Connection) -> None:
    """Fill the filter columns and job_labels from each job's JSON (a database from before them).

    ``user_version`` is 0 in such a database; afterwards every write keeps the index up to date.
    """
    assignments = ", ".join(f"{c}=?" for c in _JOB_COLUMNS)
    db.execute("DELETE FROM job_labels")
    for seq, job_json, kind in db.execute("SELECT seq, job_json, kind FROM jobs").fetchall():
        job = _load((job_json, kind))
        db.execute(f"UPDATE jobs SET {assignments} WHERE seq=?", (*_filter_columns(job), seq))
        _put_labels(db, seq, job)


# -- filters as SQL -------------------------------------------------------------------------------
#
# Every term compiles to an expression that is 0 or 1, never NULL, so that NOT, AND and OR keep
# the two-valued meaning the predicate gives them.


def _text(value: str) -> str | None:
    """``value`` if SQLite can hold it; None for a string with lone surrogates (which no stored
    label or name holds: stored strings come from valid JSON)."""
    try:
        value.encode()
    except UnicodeEncodeError:
        return None
    return value


def _sql(node: filters.Node, args: list[Any]) -> str:
    """The filter as a SQL expression over ``jobs``; its parameters are appended to ``args``."""
    if isinstance(node, filters.Label):
        key, value = _text(node.key), _text(node.value)
        if key is None or value is None:  # matches no job: `=` and `has` never, `!=` always
            return "1" if node.op == "!=" else "0"
        if node.op == "has":
            args.append(key)
            return "EXISTS (SELECT 1 FROM job_labels AS l WHERE l.key=? AND l.job_seq=jobs.seq)"
        args.extend((key, value))
        test = "IS" if node.op == "=" else "IS NOT"
        return (
            f"((SELECT l.value FROM job_labels AS l WHERE l.key=? AND l.job_seq=jobs.seq) {test} ?)"
        )
    if isinstance(node, filters.State):
        args.append(node.state)
        return "jobs.state=?" if node.equal else "jobs.state!=?"
    if isinstance(node, filters.DisplayName):
        text = _text(node.value)
        if text is None:
            return "1" if node.op == "!=" else "0"
        if node.op != "glob":
            args.append(text)
            return f"jobs.display_name{node.op}?"
        if "\0" in text:
            # SQLite's GLOB stops at a NUL in either string; Python's glob does not.
            args.append(text)
            return "glob_match(jobs.display_name, ?)"
        # GLOB has `*`, `?` and classes; `[[]` is a literal `[`, as filters.glob_match reads it.
        args.extend((text, text.replace("[", "[[]")))
        return (
            "(CASE WHEN instr(jobs.display_name, char(0)) THEN glob_match(jobs.display_name, ?) "
            "ELSE jobs.display_name GLOB ? END)"
        )
    if isinstance(node, filters.Time):
        args.append(node.seconds)
        return f"IFNULL(jobs.{node.field}{node.op}?, 0)"
    if isinstance(node, filters.Not):
        return f"NOT {_sql(node.inner, args)}"
    joiner = " AND " if isinstance(node, filters.And) else " OR "
    return _balanced([_sql(p, args) for p in node.parts], joiner)


def _balanced(terms: list[str], joiner: str) -> str:
    """``(a J b J c ...)`` as a balanced tree: SQLite limits how deep an expression may nest."""
    if len(terms) == 1:
        return terms[0]
    middle = len(terms) // 2
    return f"({_balanced(terms[:middle], joiner)}{joiner}{_balanced(terms[middle:], joiner)})"


@dataclass(frozen=True)
class _Access:
    """How a list reaches its candidate rows: a FROM clause, the condition that goes with it
    (scope and page position included), and the order it returns them in."""

    source: str
    condition: str
    args: tuple[Any, ...]
    order: str = "jobs.seq"
    ordered: bool = True  # rows come out in seq order: LIMIT stops after a page
    count: str = ""  # SELECT counting this term's matches (up to a LIMIT ?)
    count_args: tuple[Any, ...] = ()


def _access_for(term: filters.Node, parent: str, kind: str, after_seq: int) -> _Access | None:
    """The index that ``term``, one term of a conjunction, can be reached through, if any."""
    scope = (parent, kind)
    if isinstance(term, filters.Label) and term.op in ("=", "has"):
        key, value = _text(term.key), _text(term.value)
        if key is None or value is None:
            return None
        if term.op == "has":
            # The primary key (key, job_seq): the key's jobs in creation order.
            return _Access(
                "job_labels AS d NOT INDEXED CROSS JOIN jobs ON jobs.seq=d.job_seq",
                "d.key=? AND d.job_seq>? AND jobs.parent=? AND jobs.kind=?",
                (key, after_seq, *scope),
                order="d.job_seq",
                count="SELECT 1 FROM job_labels NOT INDEXED WHERE key=? AND job_seq>?",
                count_args=(key, after_seq),
            )
        source = "job_labels AS d INDEXED BY job_labels_value CROSS JOIN jobs ON jobs.seq=d.job_seq"
        return _Access(
            source,
            "d.key=? AND d.value=? AND d.job_seq>? AND jobs.parent=? AND jobs.kind=?",
            (key, value, after_seq, *scope),
            order="d.job_seq",
            count="SELECT 1 FROM job_labels INDEXED BY job_labels_value "
            "WHERE key=? AND value=? AND job_seq>?",
            count_args=(key, value, after_seq),
        )
    if isinstance(term, filters.State) and term.equal:
        return _on_jobs("jobs_state", "jobs.state=?", term.state, scope, after_seq)
    if isinstance(term, filters.DisplayName) and term.op == "=":
        text = _text(term.value)
        if text is None:
            return None
        return _on_jobs("jobs_display_name", "jobs.display_name=?", text, scope, after_seq)
    if isinstance(term, filters.Time) and term.op != "!=":
        return _on_jobs(
            f"jobs_{term.field}",
            f"jobs.{term.field}{term.op}?",
            term.seconds,
            scope,
            after_seq,
            ordered=False,
        )
    return None


def _on_jobs(
    index: str,
    test: str,
    value: Any,
    scope: tuple[str, str],
    after_seq: int,
    *,
    ordered: bool = True,
) -> _Access:
    condition = f"jobs.parent=? AND jobs.kind=? AND {test} AND jobs.seq>?"
    args = (*scope, value, after_seq)
    return _Access(
        f"jobs INDEXED BY {index}",
        condition,
        args,
        ordered=ordered,
        count=f"SELECT 1 FROM jobs INDEXED BY {index} WHERE {condition}",
        count_args=args,
    )


def _list_query(
    db: sqlite3.Connection,
    parent: str,
    kind: protos.Kind,
    where: filters.Node | None,
    after_seq: int,
    limit: int,
) -> tuple[str, tuple[Any, ...]] | None:
    """The SELECT of (seq, job_json, kind) for one page, and its parameters; None when a term of
    the filter matches no job."""
    args: list[Any] = []
    condition = "1" if where is None else _sql(where, args)
    access = _choose_access(db, where, parent, kind.collection, after_seq)
    if access is None:
        return None
    query = (
        f"SELECT jobs.seq, jobs.job_json, jobs.kind FROM {access.source} "
        f"WHERE {access.condition} AND ({condition}) ORDER BY {access.order} LIMIT ?"
    )
    return query, (*access.args, *args, limit)


def _conjuncts(node: filters.Node) -> Iterator[filters.Node]:
    if isinstance(node, filters.And):
        for part in node.parts:
            yield from _conjuncts(part)
    else:
        yield node


def _choose_access(
    db: sqlite3.Connection,
    where: filters.Node | None,
    parent: str,
    kind: str,
    after_seq: int,
) -> _Access | None:
    """The cheapest way to the rows of a list; None when a term of the filter matches nothing.

    Candidates are the indexed terms the filter ANDs (an OR or NOT is tested on the rows, not
    used to reach them). One term in creation order is used as it is: it never visits more rows
    than the scope would. Otherwise each is counted (up to :data:`_COUNT_CAP`) and the fewest
    wins; when all are that common, one in creation order, or the scope, lets LIMIT end early.
    """
    scope = _Access(
        "jobs INDEXED BY jobs_scope",
        "jobs.parent=? AND jobs.kind=? AND jobs.seq>?",
        (parent, kind, after_seq),
    )
    if where is None:
        return scope
    candidates = [
        a
        for a in (_access_for(t, parent, kind, after_seq) for t in _conjuncts(where))
        if a is not None
    ]
    if not candidates:
        return scope
    if len(candidates) == 1 and candidates[0].ordered:
        return candidates[0]
    counted = []
    for access in candidates:
        (count,) = db.execute(
            f"SELECT count(*) FROM ({access.count} LIMIT ?)", (*access.count_args, _COUNT_CAP)
        ).fetchone()
        if count == 0:
            return None
        counted.append((int(count), not access.ordered, access))
    fewest, _, best = min(counted, key=lambda c: (c[0], c[1]))
    if fewest < _COUNT_CAP:
        return best
    return next((a for _, _, a in counted if a.ordered), scope)
