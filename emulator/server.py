"""The HTTP front end: Vertex AI v1 REST routes for jobs, operations and an admin API.

Routes (``{p}``/``{l}`` are any project and location, ``{c}`` a collection of jobs:
``customJobs`` or ``hyperparameterTuningJobs``, see :data:`emulator.protos.KINDS`):

* ``POST   /v1/projects/{p}/locations/{l}/{c}``            create
* ``GET    /v1/projects/{p}/locations/{l}/{c}``            list (filter, pageSize, pageToken)
* ``GET    /v1/projects/{p}/locations/{l}/{c}/{id}``       get
* ``DELETE /v1/projects/{p}/locations/{l}/{c}/{id}``       delete (long-running operation)
* ``POST   /v1/projects/{p}/locations/{l}/{c}/{id}:cancel`` cancel
* ``GET    /{v1,ui}/projects/{p}/locations/{l}[/{c}/{id}]/operations/{op}`` (and ``:wait``)
* the Cloud Quotas API v1 for ``aiplatform.googleapis.com`` (quota infos, quota preferences;
  :mod:`emulator.quotas`), whose limits every create is checked against (429)
* ``GET    /emulator/v1/health``, ``GET|POST /emulator/v1/faults``,
  ``POST /emulator/v1/jobs/{id}:maintenance``, ``GET /emulator/v1/jobs/{id}/replicas``

Responses use the enum encoding the client asks for in ``$alt`` (``json;enum-encoding=int``).

Hostile input is answered with a 4xx naming what is wrong, never a 500: bodies must arrive whole
within :data:`BODY_TIMEOUT_SECONDS` and hold at most :data:`MAX_BODY` bytes of JSON (too deep a
nesting is a 400), project and location must look like IDs, page tokens are signed with a key kept
in the database (a token this service did not issue is a 400), and HTTP-level errors of
``http.server`` itself (bad request line, unknown method) come back as the same JSON errors.

A request that finds the state unusable (the disk is full, an I/O error) answers 503 UNAVAILABLE
saying so, at once: its thread does not wait for the store, as the threads running jobs do
(:class:`~emulator.store.Store`), and what it had already stored goes on once the disk is back.

The service binds its port before it opens anything else: with ``free_port_if_taken`` a taken port
is not an error but a free one instead, which ``server.json`` names. Binding is the only check of a
port that cannot race with another process starting at the same time (two ``make up`` at once).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import logging
import os
import re
import signal
import socket
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from . import (
    _validation,
    billing,
    cluster,
    errors,
    filters,
    hardware,
    names,
    paths,
    protos,
    quotas,
    runner,
    tuning,
)
from .config import Faults, Settings
from .errors import ApiError
from .protos import Kind
from .store import StateUnavailable, Store

__all__ = ["BODY_TIMEOUT_SECONDS", "Service"]

log = logging.getLogger("emulator.server")

SERVER_FILE = "server.json"
DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
MAX_BODY = 10 * 1024 * 1024
# A body announced by Content-Length must arrive within this time, or the request is a 400.
BODY_TIMEOUT_SECONDS = 10.0
# Replicas of one job in execute mode: each is a real process on this machine.
MAX_LOCAL_REPLICAS = 32
_TOKEN_KEY = "page-token-key"

_SEG = r"[^/:]+"
_KIND = "|".join(protos.KINDS)
_JOBS = re.compile(rf"^/v1/projects/(?P<p>{_SEG})/locations/(?P<l>{_SEG})/(?P<c>{_KIND})$")
_JOB = re.compile(
    rf"^/v1/projects/(?P<p>{_SEG})/locations/(?P<l>{_SEG})/(?P<c>{_KIND})/(?P<id>{_SEG})"
    r"(?P<verb>:cancel)?$"
)
_OP = re.compile(
    rf"^/(?:v1|ui)/(?P<name>projects/{_SEG}/locations/{_SEG}"
    rf"(?:/(?:{_KIND})/{_SEG})?/operations/{_SEG})(?P<verb>:wait)?$"
)
_ADMIN_JOB = re.compile(rf"^/emulator/v1/jobs/(?P<id>{_SEG})(?P<rest>:maintenance|/replicas)$")
# Used with fullmatch: `$` would also match before a trailing newline.
_NUMERIC = re.compile(r"[0-9]{1,19}")
_RUN_MS = re.compile(r"[0-9]{1,12}")
# Project IDs and numbers, and location names: they end up in job names, replica environments and
# messages, so anything else (`..`, control characters, 300 characters) is refused.
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
_TOKEN = re.compile(r"(?P<seq>[0-9]{1,19})\.(?P<scope>[0-9a-f]{16})\.(?P<mac>[0-9a-f]{32})")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class Service:
    """The whole service: store, runner, faults and the HTTP server bound to its address."""

    def __init__(
        self,
        settings: Settings,
        faults: Faults,
        *,
        host: str,
        port: int,
        free_port_if_taken: bool = False,
    ) -> None:
        """Bind the port (OSError if it cannot be), then open the state (StateUnavailable)."""
        self.settings = settings
        self.faults = faults
        self.httpd = _listen(host, port, free_port_if_taken=free_port_if_taken)
        self.projects = names.ProjectNumbers(settings.project_numbers)
        # Project IDs whose number the store has noted (a write on the first create only).
        self._remembered: set[str] = set()
        try:
            self.store = Store.open(settings.state_dir)
            with self.store.failing_fast():
                self._token_key = self.store.secret_key(_TOKEN_KEY)
                renamed = self.store.number_projects(self.projects)
            if renamed:
                log.info("named %d job(s) of an older state by project number", renamed)
        except BaseException:
            self.httpd.server_close()
            raise
        self.runner = runner.Runner(settings, self.store)
        self.quotas = quotas.Quotas(
            settings.quota_limits, load=self._job_and_kind, project_key=self.projects.number
        )
        self.billing = billing.Billing(settings.billing_snapshot, settings.billing_account_prices)
        self.httpd.service = self
        self.host = host
        self.port = int(self.httpd.server_address[1])

    @property
    def endpoint(self) -> str:
        """``http://HOST:PORT``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def serve(self) -> None:
        """Recover unfinished jobs, serve until SIGTERM/SIGINT, then stop replicas and exit.

        StateUnavailable, and nothing served, when the state cannot be used at start: the
        database, or ``server.json``, which tells clients where the service listens.
        """
        server_file = self.settings.state_dir / SERVER_FILE
        try:
            with self.store.failing_fast():
                self.runner.recover()
            self._announce(server_file)
        except BaseException:
            self.close()
            raise

        def on_signal(signum: int, _frame: Any) -> None:
            log.info("received %s: shutting down", signal.Signals(signum).name)
            # shutdown() blocks until serve_forever returns, so it cannot run in this frame.
            threading.Thread(target=self.httpd.shutdown, daemon=True).start()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        print(
            f"emulator listening on {self.endpoint} (mode {self.settings.mode}, "
            f"state {self.settings.state_dir})",
            flush=True,
        )
        try:
            self.httpd.serve_forever(poll_interval=0.2)
        finally:
            self.close()
            try:
                if json.loads(server_file.read_text()).get("pid") == os.getpid():
                    server_file.unlink()
            except (OSError, ValueError):
                pass
            log.info("stopped")

    def close(self) -> None:
        """Stop listening, stop every replica (jobs stay as stored), close the store."""
        self.httpd.server_close()
        self.runner.shutdown()
        self.store.close()

    def _announce(self, server_file: Path) -> None:
        """Write ``server.json`` (pid, port, endpoint) for clients and ``emulator stop``."""
        info = {
            "pid": os.getpid(),
            "endpoint": self.endpoint,
            "port": self.port,
            "host": self.host,
            "mode": self.settings.mode,
            "started": time.time(),
        }
        tmp = server_file.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(info))
            os.replace(tmp, server_file)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise StateUnavailable.of_os_error(server_file, exc) from exc

    # -- API operations -----------------------------------------------------------------------

    def create_job(self, kind: Kind, project: str, location: str, body: bytes) -> Any:
        """Validate and store a new job, then hand it to the runner."""
        job = protos.parse_job(body, kind)
        _check_ids(project, location)
        self._check_new_job(kind, job)
        job_id = self.store.new_job_id()
        # Named by project number whatever the request used, as Vertex AI names jobs.
        parent = self._parent(project, location)
        job.name = f"{parent}/{kind.collection}/{job_id}"
        protos.set_state(job, protos.JobState.JOB_STATE_QUEUED)
        protos.now_ts(job.create_time, protos.ts_seconds(job.update_time))
        # --no-capacity with --no-capacity-at-create: refused at once, nothing stored.
        if self.settings.no_capacity_at_create:
            short = self.runner.capacity.lacking(job, kind, location)
            if short is not None:
                raise errors.resource_exhausted(short)
        # Vertex's training quotas (429 RESOURCE_EXHAUSTED): the check and the insert are one
        # step, so two creates cannot both take the last GPUs.
        with self.quotas.admitting:
            self.quotas.admit(
                job_id, job, kind, project, location, lambda: self.store.active_job_ids(parent)
            )
            self.store.insert_job(job_id, parent, job)
        self.runner.submit(job_id)
        return job

    def _job_and_kind(self, job_id: str) -> tuple[Any, Kind] | None:
        """A stored job and its kind (the quota check reads those it has not seen)."""
        job = self.store.get_job(job_id)
        kind = self.store.job_kind(job_id)
        return None if job is None or kind is None else (job, kind)

    def _parent(self, project: str, location: str) -> str:
        """``projects/<number>/locations/<location>``; the store learns the ID of the number."""
        number = self.projects.number(project)
        if project != number and project not in self._remembered:
            self.store.remember_project(project, number)
            self._remembered.add(project)
        return f"projects/{number}/locations/{location}"

    def _check_new_job(self, kind: Kind, job: Any) -> None:
        """Drop the output-only fields a client sent, then check the job (400s).

        The checks are the emulator's own (:mod:`emulator._validation`), written from Vertex
        AI's documentation and protos, then the local ones (paths, replica count). A tuning
        job's trials are CustomJobs: the CustomJob checks run on the one they share.
        """
        _validation.clear_output_only_fields(job)
        if kind is protos.TUNING_JOB:
            custom_job = tuning.custom_job_view(job)
            _validation.check_tuning_service_rules(job, custom_job)
            self._check_local_rules(custom_job, spec_field="trial_job_spec")
        else:
            _validation.check_service_rules(job)
            self._check_local_rules(job)

    def _check_local_rules(self, job: Any, *, spec_field: str = "job_spec") -> None:
        """Emulator-specific checks: package and output paths, replica count, simulate labels.

        Paths are resolved (symlinks followed) and must stay under their root: a package under an
        allowed root (``<state-dir>/gcs`` for gs://), an output directory and its model/,
        checkpoints/ and logs/ under ``<state-dir>/gcs``. The runner checks again before it reads
        or writes anything, since the file system may change in between.
        """
        secrets = _validation.env_values(job)
        state_dir = self.settings.state_dir
        for i, pool in enumerate(job.job_spec.worker_pool_specs):
            for j, uri in enumerate(pool.python_package_spec.package_uris):
                field = f"{spec_field}.worker_pool_specs[{i}].python_package_spec.package_uris[{j}]"
                try:
                    paths.resolve_package(uri, state_dir, self.settings.allow_roots)
                except paths.PackageError as exc:
                    raise errors.field_violations(
                        [(field, _validation.redact(str(exc), secrets))]
                    ) from None
        prefix = job.job_spec.base_output_directory.output_uri_prefix
        output_field = f"{spec_field}.base_output_directory.output_uri_prefix"
        if prefix:
            try:
                paths.output_dirs(prefix, state_dir)
            except paths.PackageError as exc:
                raise errors.field_violations(
                    [(output_field, _validation.redact(str(exc), secrets))]
                ) from None
            if ":" in prefix[len("gs://") :] and any(
                p.WhichOneof("task") == "container_spec" for p in job.job_spec.worker_pool_specs
            ):
                # docker -v SRC:DST splits at ':', so the mount would name another directory.
                raise errors.field_violations(
                    [
                        (
                            output_field,
                            "':' in the path is not supported for container_spec pools "
                            "(docker -v would split at it)",
                        )
                    ]
                )
        if self.settings.mode == "execute":
            replicas = sum(
                p.replica_count for p in job.job_spec.worker_pool_specs if p.ByteSize() > 0
            )
            if replicas > MAX_LOCAL_REPLICAS:
                raise errors.field_violations(
                    [
                        (
                            f"{spec_field}.worker_pool_specs",
                            f"{replicas} replicas in total; the emulator runs at most "
                            f"{MAX_LOCAL_REPLICAS} processes for one job on this machine",
                        )
                    ]
                )
        _check_simulate_labels(job)

    def get_job(self, kind: Kind, project: str, location: str, job_id: str) -> Any:
        """The job, or 404 (also for a job of another kind)."""
        _check_ids(project, location)
        job = self.store.get_job(job_id) if _NUMERIC.fullmatch(job_id) else None
        # By project ID or number alike: the stored name has the number.
        name = f"{self.projects.parent(project, location)}/{kind.collection}/{job_id}"
        if job is None or job.name != name:
            asked = f"projects/{project}/locations/{location}/{kind.collection}/{job_id}"
            raise errors.not_found(f'The {kind.type_name} "{asked}" does not exist.')
        return job

    def list_jobs(
        self, kind: Kind, project: str, location: str, query: dict[str, str]
    ) -> dict[str, Any]:
        """One page of jobs matching ``filter``; the page token encodes where to resume."""
        _check_ids(project, location)
        text = query.get("filter", "")
        try:
            where = filters.parse_filter(text)
        except ValueError as exc:
            raise errors.invalid_argument(str(exc)) from None
        size = protos.query_integer(query.get("pageSize") or str(DEFAULT_PAGE_SIZE))
        if size is None:
            raise errors.invalid_argument("pageSize: expected an integer")
        if size < 0:
            raise errors.invalid_argument("pageSize: must not be negative")
        size = min(size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        # The same jobs, and page tokens, whether the request names the project by ID or number.
        parent = self.projects.parent(project, location)
        # A token is bound to the collection too: one of customJobs is refused elsewhere.
        scope = f"{parent}/{kind.collection}"
        after = self._decode_token(query.get("pageToken", ""), scope, text)
        # One match beyond the page says whether a next page exists; the token then resumes
        # after the page's last job.
        found = self.store.list_matching(parent, where, kind=kind, after_seq=after, limit=size + 1)
        page = [job for _, job in found[:size]]
        next_token = (
            self._encode_token(found[size - 1][0], scope, text) if len(found) > size else ""
        )
        return {"jobs": page, "next_page_token": next_token}

    def cancel_job(self, kind: Kind, project: str, location: str, job_id: str) -> None:
        """Mark the job CANCELLING and tell the runner; a finished job is FAILED_PRECONDITION."""
        self.get_job(kind, project, location, job_id)
        final_state = self.runner.request_cancel(job_id)
        if final_state is not None:
            raise errors.failed_precondition(
                f"Cannot cancel {kind.type_name} {job_id}: it is already in state "
                f"{protos.state_name(final_state)}."
            )

    def delete_job(self, kind: Kind, project: str, location: str, job_id: str) -> str:
        """Start deleting a finished job; returns the operation's JSON."""
        job = self.get_job(kind, project, location, job_id)
        if not protos.is_terminal(job.state):
            raise errors.failed_precondition(
                f"{kind.type_name} {job_id} is in state {protos.state_name(job.state)}; cancel "
                "it and wait until it is finished before deleting it."
            )
        op_name = f"{self.projects.parent(project, location)}/operations/{self.store.new_job_id()}"
        created = time.time()
        op_json = protos.delete_operation_json(op_name, done=False, created=created)
        self.store.put_operation(op_name, job_id, False, op_json)
        self.runner.delete_later(op_name, job_id, created)
        return op_json

    def get_operation(self, name: str) -> str:
        """The operation's JSON, or 404 (by project ID or number; one stored before operations
        were named by number only by the name it was given)."""
        op_json = self.store.get_operation(self.projects.canonical(name))
        if op_json is None:
            op_json = self.store.get_operation(name)
        if op_json is None:
            raise errors.not_found(f'The Operation "{_printable(name)}" does not exist.')
        return op_json

    # -- page tokens ----------------------------------------------------------------------------
    #
    # `<seq>.<scope>.<mac>`: the last job sequence number of the page, a hash of the parent and
    # filter the token belongs to, and an HMAC of both under a key kept in the database. Only
    # tokens this service issued verify, so a client cannot hand SQLite a number it cannot bind.

    def _token_mac(self, payload: str) -> str:
        return hmac.new(self._token_key, payload.encode(), hashlib.sha256).hexdigest()[:32]

    def _encode_token(self, seq: int, parent: str, filter_text: str) -> str:
        payload = f"{seq}.{_token_scope(parent, filter_text)}"
        return f"{payload}.{self._token_mac(payload)}"

    def _decode_token(self, token: str, parent: str, filter_text: str) -> int:
        if not token:
            return 0
        m = _TOKEN.fullmatch(token)
        if m is None or not hmac.compare_digest(
            m["mac"], self._token_mac(f"{m['seq']}.{m['scope']}")
        ):
            raise errors.invalid_argument("pageToken: not a token returned by this service")
        if m["scope"] != _token_scope(parent, filter_text):
            raise errors.invalid_argument(
                "pageToken: the parent or the filter changed since this token was issued"
            )
        return int(m["seq"])


def _listen(host: str, port: int, *, free_port_if_taken: bool) -> _HTTPServer:
    """The HTTP server bound to ``host:port``; when that port is taken and ``free_port_if_taken``,
    to a port the system picks instead."""
    try:
        return _HTTPServer((host, port), _Handler)
    except OSError as exc:
        if not (free_port_if_taken and port and exc.errno == errno.EADDRINUSE):
            raise
    log.info("port %d is taken: listening on a free port instead", port)
    return _HTTPServer((host, 0), _Handler)


def _state_error(problem: StateUnavailable, state_dir: Path) -> ApiError:
    """503 UNAVAILABLE for a request the state could not take: the client may retry later."""
    if problem.disk_full:
        return errors.unavailable(
            f"The emulator's disk is full: it cannot write its state in {state_dir} "
            f"({problem.reason}). Free some space, then retry."
        )
    return errors.unavailable(
        f"The emulator cannot use its state in {state_dir}: {_printable(str(problem))}. "
        "Retry once that is fixed."
    )


def _token_scope(parent: str, filter_text: str) -> str:
    return hashlib.sha256(f"{parent}\n{filter_text}".encode()).hexdigest()[:16]


def _check_simulate_labels(job: Any) -> None:
    """400 unless the simulate-mode labels a job carries hold values the simulator reads."""
    outcome = job.labels.get(runner.OUTCOME_LABEL)
    if outcome is not None and outcome not in runner.OUTCOMES:
        raise errors.field_violations(
            [(f"labels.{runner.OUTCOME_LABEL}", f"expected one of {list(runner.OUTCOMES)}")]
        )
    run_ms = job.labels.get(runner.RUN_MS_LABEL)
    if run_ms is not None and not _RUN_MS.fullmatch(run_ms):
        raise errors.field_violations(
            [(f"labels.{runner.RUN_MS_LABEL}", "expected a whole number of milliseconds")]
        )


def _check_ids(project: str, location: str) -> None:
    """400 unless the project and location of a request path look like IDs."""
    if not _ID.fullmatch(project):
        raise errors.invalid_argument(
            f"projects/{_printable(project)}: not a valid project ID or number"
        )
    if not _ID.fullmatch(location):
        raise errors.invalid_argument(f"locations/{_printable(location)}: not a valid location")


def _printable(text: str, limit: int = 200) -> str:
    """``text`` with control characters escaped and cut to ``limit``: safe in messages and logs."""
    short = text if len(text) <= limit else text[:limit] + "..."
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", short)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    service: Service


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps client connections open between calls (the client library pools them).
    protocol_version = "HTTP/1.1"
    # Headers and body are separate writes; with Nagle's algorithm on, the body waits for the
    # client's delayed ACK (~40 ms per call on Linux).
    disable_nagle_algorithm = True
    server: _HTTPServer
    server_version = "vertex-emulator"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_OPTIONS(self) -> None:
        self._dispatch("OPTIONS")

    # -- plumbing -----------------------------------------------------------------------------

    def _dispatch(self, method: str) -> None:
        started = time.perf_counter()
        status = 500
        shown = _printable(self.path.split("?")[0])
        svc = self.server.service
        try:
            url = urlsplit(self.path)
            path = unquote(url.path)
            query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
            body = self._read_body()
            with svc.store.failing_fast():
                if path.startswith("/emulator/"):
                    status = self._admin(method, path, body)
                else:
                    status = self._api(method, path, query, body)
        except ApiError as exc:
            status = exc.http_code
            self._send(exc.http_code, exc.body())
        except StateUnavailable as problem:
            log.warning("%s %s: the state cannot be used: %s", method, shown, problem)
            failure = _state_error(problem, svc.settings.state_dir)
            status = failure.http_code
            self._send(failure.http_code, failure.body())
        except Exception:
            log.exception("internal error on %s %s", method, shown)
            failure = errors.internal("Internal error in the emulator; see its log.")
            status = failure.http_code
            self._send(failure.http_code, failure.body())
        finally:
            log.info(
                "%s %s %d %.1fms", method, shown, status, (time.perf_counter() - started) * 1000
            )

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding"):
            # Without a length the body would be read as the next request; refuse it whole.
            self.close_connection = True
            raise errors.invalid_argument(
                "Transfer-Encoding: not supported; send the body with a Content-Length"
            )
        length_text = self.headers.get("Content-Length")
        if not length_text:
            return b""
        try:
            length = int(length_text)
        except ValueError:
            self.close_connection = True
            raise errors.invalid_argument("Content-Length: not a number") from None
        if length < 0:
            self.close_connection = True
            raise errors.invalid_argument("Content-Length: must not be negative")
        if length > MAX_BODY:
            self.close_connection = True
            raise errors.invalid_argument(f"request body: must be at most {MAX_BODY} bytes")
        return self._read_exactly(length)

    def _read_exactly(self, length: int) -> bytes:
        """The body, which must arrive whole within BODY_TIMEOUT_SECONDS (a 400 otherwise).

        One deadline for the whole body, not per read: a client dribbling a byte at a time cannot
        hold the thread longer.
        """
        deadline = time.monotonic() + BODY_TIMEOUT_SECONDS
        chunks: list[bytes] = []
        received = 0
        previous = self.connection.gettimeout()
        try:
            while received < length:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                self.connection.settimeout(left)
                chunk = self.rfile.read1(min(length - received, 1024 * 1024))
                if not chunk:
                    break
                chunks.append(chunk)
                received += len(chunk)
        except OSError:  # TimeoutError included; the connection is unusable either way
            self.close_connection = True
            raise errors.invalid_argument(
                f"request body: {received} of the {length} bytes of Content-Length arrived "
                f"within {BODY_TIMEOUT_SECONDS:g} seconds"
            ) from None
        finally:
            with contextlib.suppress(OSError):
                self.connection.settimeout(previous)
        if received < length:
            self.close_connection = True
            raise errors.invalid_argument(
                f"request body: the connection ended after {received} of the {length} bytes "
                "of Content-Length"
            )
        return b"".join(chunks)

    def _send(self, code: int, payload: bytes) -> None:
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(payload)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if getattr(self, "command", None) != "HEAD":
                self.wfile.write(payload)
        except OSError:
            # The client went away (it may have sent half a body and hung up): nobody to tell.
            self.close_connection = True

    def _discard_request_head(self) -> None:
        # Read the rest of the request line and the headers before answering: closing a socket
        # with unread data resets the connection, and the client would never see the answer.
        deadline = time.monotonic() + 2.0
        left = 1024 * 1024
        with contextlib.suppress(OSError, ValueError):
            while left > 0 and time.monotonic() < deadline:
                self.connection.settimeout(max(deadline - time.monotonic(), 0.01))
                line = self.rfile.readline(min(left, 65537))
                left -= len(line)
                if line in (b"", b"\r\n", b"\n"):
                    break

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own errors (bad request line, headers too long, unknown method) as JSON.

        A method without a handler is a 404 like any unknown route, not http.server's 501.
        """
        self.close_connection = True
        # Called before the request line is parsed too: path and command may not exist yet.
        command = _printable(str(getattr(self, "command", None) or "-"))
        path = _printable(str(getattr(self, "path", None) or "-"))
        if code == HTTPStatus.REQUEST_URI_TOO_LONG:
            self._discard_request_head()
        if code == HTTPStatus.NOT_IMPLEMENTED:
            code = HTTPStatus.NOT_FOUND
            message = f"No such method: {command} {path}"
        elif code >= 500:  # 505 HTTP version not supported: still the client's request
            code = HTTPStatus.BAD_REQUEST
        status = "NOT_FOUND" if code == HTTPStatus.NOT_FOUND else "INVALID_ARGUMENT"
        text = _printable(message or HTTPStatus(code).phrase)
        log.info("%s %s %d (%s)", command, path, code, text)
        self._send(code, ApiError(code, status, text).body())

    def _send_json(self, obj: Any) -> int:
        self._send(200, json.dumps(obj).encode())
        return 200

    def _api(self, method: str, path: str, query: dict[str, str], body: bytes) -> int:
        svc = self.server.service
        faults = svc.faults
        delay = faults.latency_seconds()
        if delay:
            time.sleep(delay)
        injected = faults.roll_error()
        if injected is not None:
            code, status = injected
            raise ApiError(code, status, f"Injected fault: {status} (emulator fault injection).")
        int_enums = "enum-encoding=int" in query.get("$alt", "")

        if (m := _JOBS.match(path)) is not None:
            kind = protos.KINDS[m["c"]]
            if method == "POST":
                job = svc.create_job(kind, m["p"], m["l"], body)
                drop = faults.take_drop()
                if drop == "close":
                    # The job is stored but the client never hears back, like a lost response.
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return 0
                if drop == "503":
                    raise errors.unavailable("Injected fault: create response dropped.")
                return self._send_json(protos.to_dict(job, int_enums=int_enums))
            if method == "GET":
                result = svc.list_jobs(kind, m["p"], m["l"], query)
                out: dict[str, Any] = {
                    kind.collection: [
                        protos.to_dict(j, int_enums=int_enums) for j in result["jobs"]
                    ]
                }
                if result["next_page_token"]:
                    out["nextPageToken"] = result["next_page_token"]
                return self._send_json(out)
        elif (m := _JOB.match(path)) is not None:
            kind = protos.KINDS[m["c"]]
            if m["verb"] == ":cancel" and method == "POST":
                svc.cancel_job(kind, m["p"], m["l"], m["id"])
                return self._send_json({})
            if m["verb"] is None and method == "GET":
                job = svc.get_job(kind, m["p"], m["l"], m["id"])
                return self._send_json(protos.to_dict(job, int_enums=int_enums))
            if m["verb"] is None and method == "DELETE":
                op_json = svc.delete_job(kind, m["p"], m["l"], m["id"])
                self._send(200, op_json.encode())
                return 200
        elif (m := _OP.match(path)) is not None and (
            (method == "GET" and m["verb"] is None) or (method == "POST" and m["verb"])
        ):
            self._send(200, svc.get_operation(m["name"]).encode())
            return 200
        elif (answer := svc.quotas.route(method, path, query, body)) is not None:
            return self._send_json(answer)  # the Cloud Quotas API (emulator.quotas)
        elif (answer := svc.billing.route(method, path, query)) is not None:
            return self._send_json(answer)  # the Cloud Billing APIs (emulator.billing)
        raise errors.not_found(f"No such method: {method} {_printable(path)}")

    def _admin(self, method: str, path: str, body: bytes) -> int:
        svc = self.server.service
        if path == "/emulator/v1/health" and method == "GET":
            return self._send_json(
                {
                    "status": "ok",
                    "pid": os.getpid(),
                    "mode": svc.settings.mode,
                    "stateDir": str(svc.settings.state_dir),
                    "catalogOverlay": str(hardware.catalog_overlay() or ""),
                }
            )
        if path == "/emulator/v1/faults":
            if method == "GET":
                return self._send_json(svc.faults.snapshot())
            if method == "POST":
                try:
                    return self._send_json(svc.faults.update(_json_body(body)))
                except ValueError as exc:
                    raise errors.invalid_argument(str(exc)) from None
        if (m := _ADMIN_JOB.match(path)) is not None:
            job_id = m["id"]
            job = svc.store.get_job(job_id) if _NUMERIC.fullmatch(job_id) else None
            if job is None:
                raise errors.not_found(f"No job with id {_printable(job_id)}.")
            if m["rest"] == "/replicas" and method == "GET":
                # A GPU replica's record says what it runs on (a GPU, or the CPU and why).
                said = cluster.hardware_said(svc.runner.job_dir(job_id))
                replicas = [
                    {**r.to_dict(), **({"hardware": said[r.replica]} if r.replica in said else {})}
                    for r in svc.store.replicas(job_id)
                ]
                return self._send_json({"replicas": replicas})
            if m["rest"] == ":maintenance" and method == "POST":
                data = _json_body(body) if body.strip() else {}
                replica = data.get("replica", "workerpool0-0") if isinstance(data, dict) else None
                if not isinstance(replica, str):
                    raise errors.invalid_argument("replica: expected a name like workerpool0-0")
                _check_job_name(job, data.get("name") if isinstance(data, dict) else None, svc)
                return self._send_json(svc.runner.maintenance(job_id, replica))
        raise errors.not_found(f"No such method: {method} {_printable(path)}")


def _check_job_name(job: Any, name: Any, svc: Service) -> None:
    """The job a maintenance request names by its full name (``name``, None: by id only) must be
    that name's: a job of another project or location is not found, as the REST API answers."""
    if name is None:
        return
    if not isinstance(name, str):
        raise errors.invalid_argument(
            "name: expected a job name like projects/P/locations/L/customJobs/ID"
        )
    if svc.projects.canonical(name) != job.name:
        kind = protos.KINDS.get(name.split("/")[-2]) if name.count("/") >= 2 else None
        what = kind.type_name if kind is not None else "job"
        raise errors.not_found(f'The {what} "{_printable(name)}" does not exist.')


def _json_body(body: bytes) -> Any:
    try:
        return json.loads(body or b"{}")
    except ValueError:
        raise errors.invalid_argument("Invalid JSON payload received.") from None
    except RecursionError:
        raise errors.invalid_argument(
            "Invalid JSON payload received: the JSON is nested too deeply."
        ) from None


def default_state_dir() -> Path:
    """``.local/emulator`` under the current directory."""
    return Path.cwd() / ".local" / "emulator"
