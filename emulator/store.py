"""SQLite persistence for jobs, replicas, trials and long-running operations.

Everything the service knows lives in ``<state-dir>/emulator.db`` so that a restarted service
reports the same jobs (and, for jobs that were running, reports truthfully what happened to them).
Jobs of every kind share one table, as proto JSON with their kind (the REST collection, see
:class:`emulator.protos.Kind`) beside it; the state column is duplicated only to find unfinished
jobs without parsing every row. ``trial_jobs`` links the CustomJob of each hyperparameter tuning
trial to its tuning job.
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emulator import protos

__all__ = ["DB_NAME", "Replica", "Store"]

DB_NAME = "emulator.db"

_SCHEMA = """
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


class Store:
    """Thread-safe access to the service's SQLite database."""

    def __init__(self, state_dir: Path, *, readonly: bool = False) -> None:
        self.path = state_dir / DB_NAME
        if readonly:
            uri = f"file:{self.path}?mode=ro"
            self._db = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=10)
        else:
            state_dir.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=10)
            # WAL lets the `jobs` CLI read while the service writes; NORMAL sync keeps creates
            # cheap and still never corrupts the database on a crash (the last commit may be lost
            # only on power failure, which an emulator can live with).
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            if not self._has_kind_column():
                # A database written before tuning jobs existed holds custom jobs only.
                self._db.execute(
                    "ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'customJobs'"
                )
                self._db.commit()
        # Read-only (the CLI) on such a database: every row is a custom job.
        self._kind = "kind" if self._has_kind_column() else "'customJobs'"
        self._lock = threading.RLock()

    def _has_kind_column(self) -> bool:
        columns = self._db.execute("PRAGMA table_info(jobs)").fetchall()
        return any(c[1] == "kind" for c in columns)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._db
                self._db.commit()
            except BaseException:
                self._db.rollback()
                raise

    # -- jobs -------------------------------------------------------------------------------

    def new_job_id(self) -> str:
        """A fresh numeric id like Vertex's (19 digits, never reused in this database)."""
        while True:
            candidate = str(10**18 + secrets.randbelow(9 * 10**18))
            with self._lock:
                row = self._db.execute("SELECT 1 FROM jobs WHERE id=?", (candidate,)).fetchone()
            if row is None:
                return candidate

    def insert_job(
        self, job_id: str, parent: str, job: Any, *, trial_of: tuple[str, str] | None = None
    ) -> None:
        """Store a new job (of the kind its message type says).

        ``trial_of`` = (tuning job id, trial id) links the CustomJob of a tuning job's trial to
        it, in the same transaction.
        """
        kind = protos.kind_of(job).collection
        with self._tx() as db:
            db.execute(
                "INSERT INTO jobs(id, parent, state, job_json, kind) VALUES (?, ?, ?, ?, ?)",
                (job_id, parent, int(job.state), protos.dump_job(job), kind),
            )
            if trial_of is not None:
                db.execute(
                    "INSERT INTO trial_jobs(job_id, tuning_job_id, trial_id) VALUES (?, ?, ?)",
                    (job_id, *trial_of),
                )

    def _select(self, columns: str, where: str, args: tuple[Any, ...]) -> list[Any]:
        """Rows of ``SELECT <columns>, job_json, kind FROM jobs WHERE <where>``."""
        with self._lock:
            return self._db.execute(
                f"SELECT {columns}job_json, {self._kind} FROM jobs WHERE {where}", args
            ).fetchall()

    def get_job(self, job_id: str) -> Any | None:
        """The job's proto, or None."""
        rows = self._select("", "id=?", (job_id,))
        return _load(rows[0]) if rows else None

    def job_kind(self, job_id: str) -> protos.Kind | None:
        """The job's kind, or None when there is no such job."""
        with self._lock:
            row = self._db.execute(
                f"SELECT {self._kind} FROM jobs WHERE id=?", (job_id,)
            ).fetchone()
        return None if row is None else protos.KINDS[row[0]]

    def update_job(self, job_id: str, change: Callable[[Any], bool]) -> Any | None:
        """Read-modify-write a job atomically; ``change`` returns False to leave it untouched.

        Returns the job as stored afterwards, or None when it does not exist.
        """
        with self._tx() as db:
            query = f"SELECT job_json, {self._kind} FROM jobs WHERE id=?"
            found = db.execute(query, (job_id,)).fetchone()
            if found is None:
                return None
            job = _load(found)
            if change(job):
                db.execute(
                    "UPDATE jobs SET state=?, job_json=? WHERE id=?",
                    (int(job.state), protos.dump_job(job), job_id),
                )
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

    def all_jobs(self) -> list[tuple[str, Any]]:
        """(id, job) for every job of every kind, oldest first."""
        return [(row[0], _load(row[1:])) for row in self._select("id, ", "1 ORDER BY seq", ())]

    def unfinished_job_ids(self) -> list[str]:
        """Ids of jobs that are not in a terminal state, oldest first."""
        terminal = ",".join(str(int(s)) for s in protos.TERMINAL_STATES)
        with self._lock:
            rows = self._db.execute(
                f"SELECT id FROM jobs WHERE state NOT IN ({terminal}) ORDER BY seq"
            ).fetchall()
        return [r[0] for r in rows]

    def delete_job(self, job_id: str) -> None:
        """Remove a job, its replicas, and its link to a tuning job (or its trials' links)."""
        with self._tx() as db:
            db.execute("DELETE FROM jobs WHERE id=?", (job_id,))
            db.execute("DELETE FROM replicas WHERE job_id=?", (job_id,))
            db.execute("DELETE FROM trial_jobs WHERE job_id=? OR tuning_job_id=?", (job_id, job_id))

    # -- hyperparameter tuning trials -------------------------------------------------------

    def trial_of(self, job_id: str) -> tuple[str, str] | None:
        """(tuning job id, trial id) when ``job_id`` is a trial's CustomJob, else None."""
        with self._lock:
            row = self._db.execute(
                "SELECT tuning_job_id, trial_id FROM trial_jobs WHERE job_id=?", (job_id,)
            ).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    def trial_job_ids(self, tuning_job_id: str) -> list[str]:
        """Ids of the CustomJobs of a tuning job's trials."""
        with self._lock:
            rows = self._db.execute(
                "SELECT job_id FROM trial_jobs WHERE tuning_job_id=?", (tuning_job_id,)
            ).fetchall()
        return [str(r[0]) for r in rows]

    # -- replicas ---------------------------------------------------------------------------

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
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM replicas WHERE job_id=? ORDER BY pool, idx", (job_id,)
            ).fetchall()
        return [Replica(*row) for row in rows]

    def all_replicas(self) -> list[Replica]:
        """Every replica row (used to clean up processes left by a killed service)."""
        with self._lock:
            rows = self._db.execute("SELECT * FROM replicas").fetchall()
        return [Replica(*row) for row in rows]

    # -- service secrets --------------------------------------------------------------------

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

    # -- operations -------------------------------------------------------------------------

    def put_operation(self, name: str, job_id: str | None, done: bool, op_json: str) -> None:
        """Insert or replace an operation (stored as google.longrunning.Operation JSON)."""
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO operations VALUES (?,?,?,?)",
                (name, job_id, int(done), op_json),
            )

    def get_operation(self, name: str) -> str | None:
        """The operation's JSON, or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT op_json FROM operations WHERE name=?", (name,)
            ).fetchone()
        return None if row is None else str(row[0])

    def pending_operations(self) -> list[tuple[str, str | None]]:
        """(name, job id) of operations that are not done."""
        with self._lock:
            rows = self._db.execute("SELECT name, job_id FROM operations WHERE done=0").fetchall()
        return [(r[0], r[1]) for r in rows]


def _load(row: tuple[str, str]) -> Any:
    """A job from its (job_json, kind) columns."""
    return protos.load_job(row[0], protos.KINDS[row[1]])
