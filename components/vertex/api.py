"""Calls to the Vertex AI job API: the client, retries, and a job's lifecycle.

Everything that touches the API imports ``google.cloud.aiplatform_v1`` inside the function
(0.6 s of CPU, half of it for the job service alone: ``_library``): ``check`` and ``diff``
never come here, so a preview stays fast.

One client per process and API endpoint (``shared_client``), made on the first API call
and kept for the life of the provider process, which serves many operations at once in
threads: the provider object keeps none (its pickle stays empty). The REST transport's
``requests`` session may be shared by threads (its connection pool, urllib3's, is thread-safe;
the cookie jar has its own lock; nothing mutates the session after it is made), and its pool
is sized to the operations the process runs at once, so no connection is opened and thrown
away per call.

The lifecycle (``JobApi``) is written against a ``JobKind``: the calls and names of one kind of
Vertex AI job, ``CUSTOM_JOB`` or ``TUNING_JOB`` (a ``HyperparameterTuningJob``); both kinds
share the job states and the ``labels`` field the lifecycle relies on. Their outputs share the
fields of a job (``job_outputs`` adds a custom job's model dir, ``tuning_job_outputs`` the
trials: counts by state, the best trial and its model dir).

Transient errors (429, 503, 504, a dropped connection, 409 ABORTED) are retried with
exponential backoff. Creating is the one call that is not idempotent, so every create
attempt first looks for a job it may have submitted already (see ``JobApi.submit_or_adopt``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

from .._errors import TrainingJobError
from ..lifecycle._adoption import (
    Lookup,
    RunLabels,
    find_adoptable,
    identity_filter,
    job_id,
    record_submission,
    unseen_identity,
)
from ..lifecycle._interrupt import Interrupted, pause
from ..lifecycle._settings import (
    DEFAULT_MAX_CONCURRENT_OPERATIONS,
    DEFAULT_RETRY_DEADLINE,
    Endpoint,
)
from ..lifecycle._wire import IDENTITY_LABEL
from ._library import job_service, whole_library

__all__ = [
    "ACTIVE_STATES",
    "CUSTOM_JOB",
    "INSUFFICIENT",
    "SUCCEEDED_STATES",
    "TERMINAL_STATES",
    "TRIAL_STATES",
    "TUNING_JOB",
    "ApiUnreachable",
    "Backoff",
    "CapacityLost",
    "JobApi",
    "JobKind",
    "JobOperationError",
    "RetryPolicy",
    "Submission",
    "WaitFailed",
    "aiplatform",
    "best_trial",
    "capacity_refusal",
    "insufficient_resources",
    "is_foreign_not_found",
    "is_not_found",
    "is_transient",
    "job_api",
    "job_document",
    "job_outputs",
    "job_service_client",
    "quota_refusal",
    "reached",
    "shared_client",
    "state_name",
    "trial_counts",
    "tuning_job_outputs",
    "with_retries",
]

T = TypeVar("T")

CALL_TIMEOUT = 60.0
"""Seconds one API call may take."""
POLL_FIRST = 0.05
"""Seconds between the first two reads of a job being cancelled, and before the first read of
a deletion's operation."""
POLL_GROWTH = 1.5
"""Each pause between two such reads is this much longer than the one before: a state that
changes while the provider pauses is seen at most half a pause late."""
POLL_LONGEST = 5.0
"""The longest pause between two such reads."""

ACTIVE_STATES = frozenset(
    {
        "JOB_STATE_QUEUED",
        "JOB_STATE_PENDING",
        "JOB_STATE_RUNNING",
        "JOB_STATE_UPDATING",
        "JOB_STATE_PAUSED",
        "JOB_STATE_CANCELLING",
    }
)
SUCCEEDED_STATES = frozenset({"JOB_STATE_SUCCEEDED", "JOB_STATE_PARTIALLY_SUCCEEDED"})
TERMINAL_STATES = SUCCEEDED_STATES | {
    "JOB_STATE_FAILED",
    "JOB_STATE_CANCELLED",
    "JOB_STATE_EXPIRED",
}


class JobOperationError(TrainingJobError, RuntimeError):
    """An API operation failed; the message says what happened to the job."""


class ApiUnreachable(JobOperationError):
    """Transient errors (503, 429, timeouts, dropped connections) outlasted the retry deadline:
    the API could not be reached, which says nothing about the job."""


class WaitFailed(JobOperationError):
    """The job did not reach the wanted state; ``job`` is its last known form."""

    def __init__(self, message: str, job: Any, *, timed_out: bool) -> None:
        super().__init__(message)
        self.job = job
        self.timed_out = timed_out


@dataclass(frozen=True)
class JobKind:
    """The calls and names of one kind of Vertex AI job, as the lifecycle uses them.

    Every kind has the same five ``JobServiceClient`` calls, named after it
    (``create_custom_job``, ``get_custom_job``...): ``method`` is that common part.
    """

    noun: str
    """``CustomJob``: for messages."""
    collection: str
    """``customJobs``: the last collection of the job's resource name."""
    method: str
    """``custom_job``: the client's calls are ``create_custom_job`` and so on."""

    def create(self, client: Any, parent: str, job: Any) -> Any:
        """The created job."""
        call = getattr(client, f"create_{self.method}")
        return call(parent=parent, **{self.method: job}, retry=None, timeout=CALL_TIMEOUT)

    def get(self, client: Any, name: str) -> Any:
        return getattr(client, f"get_{self.method}")(name=name, retry=None, timeout=CALL_TIMEOUT)

    def list(self, client: Any, request: dict[str, Any]) -> Iterable[Any]:
        """``request``: ``{"parent", "filter", "page_size"}``; the jobs, every page."""
        call = getattr(client, f"list_{self.method}s")
        return call(request=request, retry=None, timeout=CALL_TIMEOUT)  # type: ignore[no-any-return]

    def cancel(self, client: Any, name: str) -> Any:
        call = getattr(client, f"cancel_{self.method}")
        return call(name=name, retry=None, timeout=CALL_TIMEOUT)

    def delete(self, client: Any, name: str) -> Any:
        """A long-running operation."""
        call = getattr(client, f"delete_{self.method}")
        return call(name=name, retry=None, timeout=CALL_TIMEOUT)


CUSTOM_JOB = JobKind(noun="CustomJob", collection="customJobs", method="custom_job")

TUNING_JOB = JobKind(
    noun="HyperparameterTuningJob",
    collection="hyperparameterTuningJobs",
    method="hyperparameter_tuning_job",
)
"""Cancelling one cancels its running trials; its record, once deleted, takes theirs along."""


# -- the client ------------------------------------------------------------------------------


def aiplatform() -> Any:
    """``google.cloud.aiplatform_v1``, whole, imported on first use without its version warnings."""
    return whole_library()


def job_service_client(endpoint: Endpoint, region: str) -> Any:
    """A REST ``JobServiceClient`` for Vertex AI in ``region``, or for ``endpoint`` if it has a URL.

    The one place a client is made, for the provider and for the emulator's own tools. The REST
    transport keeps an explicit ``http://`` scheme in ``api_endpoint``; an ``http://`` endpoint
    (the local emulator) gets anonymous credentials, so no token is ever sent over plain HTTP.
    """
    kwargs: dict[str, Any] = {
        "transport": "rest",
        "client_options": {"api_endpoint": endpoint.api_endpoint(region)},
    }
    if endpoint.anonymous:
        from google.auth.credentials import AnonymousCredentials

        kwargs["credentials"] = AnonymousCredentials()  # type: ignore[no-untyped-call]
    # Only the job service: a process that never builds a job (refresh, destroy) is spared
    # the import of the rest of the library (see ``_library``).
    return job_service().JobServiceClient(**kwargs)


_shared_clients: dict[tuple[str, bool], Any] = {}
_shared_clients_lock = threading.Lock()


def _tune_sessions(client: Any, connections: int) -> None:
    """Size the client's connection pools to ``connections``; read its environment once.

    ``requests`` keeps 10 connections per host by default: with more calls under way, each
    extra one is opened, used once and thrown away ("connection pool is full"). And with
    ``trust_env`` it reads the environment on every call (proxies, ``no_proxy``, a CA bundle,
    ``~/.netrc``), which was a quarter of the provider's CPU in a destroy of 200 jobs: the
    proxies and CA bundle the environment gives for the client's one host are set on the
    session instead, once. (A ``.netrc`` entry is not used: the Authorization header comes
    from the credentials, and the emulator wants none.)
    """
    import requests.adapters
    import requests.utils

    transport = getattr(client, "transport", None)
    host = str(getattr(transport, "_host", ""))
    # The transport makes its operations client (a session of its own, for a deletion's
    # long-running operation) on first use; made here, under the caller's lock, it is made
    # once rather than by whichever threads first poll an operation at the same time.
    operations = getattr(transport, "operations_client", None)
    for session in (
        getattr(transport, "_session", None),
        getattr(getattr(operations, "_transport", None), "_session", None),
    ):
        if not isinstance(session, requests.Session):
            continue  # another transport: nothing of ours to tune
        for prefix in ("https://", "http://"):
            session.mount(
                prefix,
                requests.adapters.HTTPAdapter(pool_maxsize=connections, pool_block=False),
            )
        if host.startswith(("http://", "https://")) and session.trust_env:
            session.proxies.update(requests.utils.get_environ_proxies(host))
            bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
            if bundle and session.verify is True:
                session.verify = bundle
            session.trust_env = False


def shared_client(
    endpoint: Endpoint, region: str, *, connections: int = DEFAULT_MAX_CONCURRENT_OPERATIONS
) -> Any:
    """This process's ``JobServiceClient`` for ``endpoint`` in ``region``, made on first use.

    One per API endpoint: Vertex AI's are regional, an explicit endpoint serves every region.
    Thread-safe; never closed (it lives as long as the provider process). ``connections``: how
    many calls may be under way at once without opening throwaway connections (used when the
    client is made).
    """
    key = (endpoint.api_endpoint(region), endpoint.anonymous)
    client = _shared_clients.get(key)
    if client is None:
        # Held only while a client is made (once per endpoint), never across an API call.
        with _shared_clients_lock:
            client = _shared_clients.get(key)
            if client is None:
                client = job_service_client(endpoint, region)
                _tune_sessions(client, connections)
                _shared_clients[key] = client
    return client


# -- errors and retries ----------------------------------------------------------------------


class CapacityLost(JobOperationError):
    """A placed job ended because its region had no machines for it (``components.core._placement``
    moves it to the next candidate)."""

    def __init__(self, job: Any, message: str) -> None:
        super().__init__(message)
        self.job = job
        self.message = message


def is_transient(exc: BaseException) -> bool:
    """True for errors worth retrying: rate limits, unavailability, timeouts, lost connections."""
    from google.api_core import exceptions as gexc

    if quota_refusal(exc):
        return False  # a quota limit: retrying does not raise it
    if is_foreign_not_found(exc):
        return True  # the API was not reached: retried, then ApiUnreachable
    if capacity_refusal(exc):
        return False  # no machines in the region: the next candidate's turn, not a retry
    if isinstance(
        exc,
        gexc.TooManyRequests
        | gexc.ResourceExhausted
        | gexc.ServiceUnavailable
        | gexc.GatewayTimeout
        | gexc.DeadlineExceeded
        | gexc.Aborted
        | gexc.InternalServerError
        | gexc.BadGateway,
    ):
        return True
    if isinstance(exc, gexc.Conflict) and "ABORTED" in str(exc):
        return True
    try:
        import requests
    except ImportError:  # pragma: no cover - the REST transport depends on it
        return False
    return isinstance(exc, requests.exceptions.ConnectionError | requests.exceptions.Timeout)


INSUFFICIENT = "Resources are insufficient in region"
"""How Vertex AI's message starts when a job found no machines (``...: R. Please try a
different region.``)."""
_CAPACITY_REFUSALS = (
    INSUFFICIENT.lower(),
    "does not have enough resources available",
    "zone_resource_pool_exhausted",
    "stockout",
)


def capacity_refusal(exc: BaseException) -> bool:
    """True for a create refused for want of machines (``RESOURCE_EXHAUSTED``, not a quota
    metric and not a rate limit): retrying it in the same region does not help."""
    from google.api_core import exceptions as gexc

    if not isinstance(exc, gexc.TooManyRequests | gexc.ResourceExhausted):
        return False
    text = str(exc)[:4000].lower()
    return any(marker in text for marker in _CAPACITY_REFUSALS)


def insufficient_resources(job: Any) -> bool:
    """True for a job that ended because its region had no machines for it (code 8,
    "Resources are insufficient in region: ...")."""
    error = getattr(job, "error", None)
    message = str(getattr(error, "message", "") or "").lower()
    return bool(error) and any(marker in message for marker in _CAPACITY_REFUSALS)


def quota_refusal(exc: BaseException) -> list[str]:
    """The quota metrics a 429 RESOURCE_EXHAUSTED names when Vertex refuses a job for quota
    (``The following quota metrics exceed quota limits: ...``); [] for any other error, rate
    limits included (those are retried)."""
    from google.api_core import exceptions as gexc

    if not isinstance(exc, gexc.TooManyRequests | gexc.ResourceExhausted):
        return []
    from ..costs._quota import refused_metrics

    return refused_metrics(str(exc))


def is_not_found(exc: BaseException) -> bool:
    """NOT_FOUND said by the API itself: what it answers for a job that does not exist.

    ``google.api_core`` maps every HTTP 404 to ``NotFound``, a proxy's or a load balancer's
    HTML page too; over REST only a JSON error body whose ``error.status`` is NOT_FOUND is the
    API's (``is_foreign_not_found`` is the other kind). Over gRPC the status is the service's.
    """
    from google.api_core import exceptions as gexc

    if not isinstance(exc, gexc.NotFound):
        return False
    response = getattr(exc, "response", None)
    if response is None or not hasattr(response, "status_code"):
        return True  # gRPC (the response is the call) or no response to tell by
    return _error_status(exc) == "NOT_FOUND"


def is_foreign_not_found(exc: BaseException) -> bool:
    """A 404 that is not the API's NOT_FOUND (an HTML page, a body of another shape): something
    between the client and the API answered, so the API was not reached; it says nothing
    about the job."""
    from google.api_core import exceptions as gexc

    return isinstance(exc, gexc.NotFound) and not is_not_found(exc)


def _error_status(exc: BaseException) -> str:
    """The ``error.status`` of a REST error's JSON body (``FAILED_PRECONDITION``), or ""."""
    response = getattr(exc, "response", None)
    try:
        error = response.json().get("error") if response is not None else None
    except (AttributeError, ValueError):
        return ""
    status = error.get("status") if isinstance(error, dict) else None
    return status if isinstance(status, str) else ""


def is_failed_precondition(exc: BaseException) -> bool:
    """FAILED_PRECONDITION: over REST an HTTP 400, told apart by the body's ``error.status``."""
    from google.api_core import exceptions as gexc

    return isinstance(exc, gexc.FailedPrecondition) or (
        isinstance(exc, gexc.BadRequest)
        and ("FAILED_PRECONDITION" in str(exc) or _error_status(exc) == "FAILED_PRECONDITION")
    )


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff for transient errors: ``initial`` doubling up to ``maximum``, within ``deadline``
    (``training:retryDeadline``: how long the API may be unreachable before an operation gives
    up), and at most ``attempts`` attempts when that is set."""

    initial: float = 0.5
    maximum: float = 8.0
    deadline: float = DEFAULT_RETRY_DEADLINE
    attempts: int | None = None


class Backoff:
    """The waits between attempts of one operation under a ``RetryPolicy``.

    ``pause()`` sleeps before the next attempt, or returns False when the attempts or the
    deadline are used up. The delays are the client library's own (``google.api_core.retry``'s
    truncated exponential backoff with full jitter); the loop around them is ours, because
    ``google.api_core.retry.Retry`` does not fit here: its sleeps cannot be cut short (ours end
    at once when the engine cancels, ``components.lifecycle._interrupt``), and a create is not idempotent
    (each retry first looks for the job a lost response may have created, ``submit_or_adopt``).
    """

    def __init__(self, policy: RetryPolicy, sleep: Callable[[float], None] = pause) -> None:
        from google.api_core.retry import exponential_sleep_generator

        self.policy = policy
        self.sleep = sleep
        self.started = time.monotonic()
        self.deadline = self.started + policy.deadline
        self.delays = exponential_sleep_generator(policy.initial, policy.maximum, multiplier=2)
        self.attempts = 0

    def pause(self) -> bool:
        """Count a failed attempt; sleep and return True if another one may follow."""
        self.attempts += 1
        remaining = self.deadline - time.monotonic()
        limit = self.policy.attempts
        if (limit is not None and self.attempts >= limit) or remaining <= 0:
            return False
        self.sleep(min(next(self.delays), remaining))
        return True

    def unreachable(self, what: str, exc: BaseException) -> ApiUnreachable:
        """The error once the attempts are used up: for how long, and the last answer."""
        return ApiUnreachable(
            f"{what}: the API could not be reached for {time.monotonic() - self.started:.0f}s "
            f"({self.attempts} attempts; training:retryDeadline is {self.policy.deadline:g}s): "
            f"{_short(exc)}"
        )


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def with_retries(
    call: Callable[[], T],
    policy: RetryPolicy,
    *,
    what: str,
    sleep: Callable[[float], None] = pause,
) -> T:
    """Run ``call``; retry transient errors with jittered exponential backoff.

    Raises ``ApiUnreachable`` when they outlast the policy; the default ``sleep`` raises
    ``components.lifecycle._interrupt.Interrupted`` when the process is asked to stop.
    """
    backoff = Backoff(policy, sleep)
    while True:
        try:
            return call()
        except Exception as exc:
            if not is_transient(exc):
                raise
            if not backoff.pause():
                raise backoff.unreachable(what, exc) from None


# -- job fields ------------------------------------------------------------------------------


def state_name(job: Any) -> str:
    """``JOB_STATE_RUNNING`` for a job proto."""
    return str(job.state.name)


def reached(state: str, wait_for: str) -> bool:
    """True when a job in ``state`` satisfies ``wait_for``."""
    if wait_for == "submitted":
        return True
    if wait_for == "running":
        return state == "JOB_STATE_RUNNING" or state in SUCCEEDED_STATES
    return state in SUCCEEDED_STATES


def _timestamp(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.year <= 1970:
            return None
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return None


def _iso(value: Any) -> str:
    stamp = _timestamp(value)
    return stamp.isoformat().replace("+00:00", "Z") if stamp else ""


@dataclass
class Submission:
    """The job a create ended up with, and whether it was adopted rather than submitted."""

    job: Any
    adopted: bool
    attempts: int
    strays: list[Any] = field(default_factory=list)
    """Active jobs of the resource's other runs, not in the stack (``components.lifecycle._adoption``)."""


# -- the lifecycle ---------------------------------------------------------------------------


ACTIVE_LISTING_SECONDS = 30.0
"""How long one listing of a region's active jobs answers ``JobApi.active_look_up``."""
READ_LISTING_SECONDS = 5.0
"""How old a listing of a region's active jobs may be to answer a read (``JobApi.current``):
the reads of one ``pulumi refresh`` come in a burst, and each sees its job as it was at a
moment of that burst."""
ACTIVE_FILTER = " AND ".join(
    [
        f"labels.{IDENTITY_LABEL}:*",
        *(
            f'state!="{state}"'
            for state in (
                "JOB_STATE_SUCCEEDED",
                "JOB_STATE_FAILED",
                "JOB_STATE_CANCELLED",
                "JOB_STATE_EXPIRED",
            )
        ),
    ]
)
"""Every job of a Pulumi resource that has not ended: only forms the v1 reference documents
(``labels.key:*``, ``state!="..."``, ``AND``), no parentheses (``identity_filter``)."""


@dataclass(frozen=True)
class _Listing:
    """One listing of a region's active jobs of Pulumi resources, and when it was taken."""

    taken: float
    by_identity: dict[str, list[Any]]
    by_id: dict[str, Any]


_LISTINGS: dict[tuple[int, str, str], _Listing] = {}
_LISTING_LOCKS: dict[tuple[int, str, str], threading.Lock] = {}
_LISTINGS_LOCK = threading.Lock()


@dataclass
class JobApi:
    """One kind of job's lifecycle on one client: submit or adopt, wait, cancel, delete.

    Its three polling loops (a job reaching a state, a cancelled job stopping, a deletion's
    operation) are its own rather than ``google.api_core``'s polling (``Retry`` on a result,
    ``PollingFuture``): each must end within a moment of the engine's Cancel (the library
    sleeps with ``time.sleep``), show every state it reads (progress lines), and at its deadline
    hand back the last state seen rather than raise, for the caller to say what became of the
    job. Each poll's API call is retried with ``Backoff``.
    """

    client: Any
    kind: JobKind
    policy: RetryPolicy
    sleep: Callable[[float], None] = pause
    """How waits sleep: by default they end at once, raising ``Interrupted``, when the process
    is asked to stop (``components.lifecycle._interrupt``)."""

    def retried(self, what: str, call: Callable[[], T]) -> T:
        """``call`` with transient errors retried under this API's policy."""
        return with_retries(call, self.policy, what=what, sleep=self.sleep)

    def get(self, name: str) -> Any:
        """The job; raises ``google.api_core.exceptions.NotFound`` when it does not exist."""
        return self.retried(f"reading {name}", lambda: self.kind.get(self.client, name))

    def look_up(self, parent: str, labels: RunLabels) -> Lookup:
        """What one identity's jobs in ``parent`` offer this run (``components.lifecycle._adoption``).

        One list call per page of the identity's jobs (the filter is the one form the API
        documents for labels, ``labels.key="value"``), and of its identity of names alone where
        the labels name one (``RunLabels.earlier_identity``); the rules are applied here. An
        identity no job carries yet (``unseen_identity``: asked now) is not listed.
        """
        jobs: list[Any] = []
        for identity in (labels.identity, labels.earlier_identity):
            if identity == labels.identity and unseen_identity(labels.instance, identity):
                continue
            if identity is not None:
                request = {"parent": parent, "filter": identity_filter(identity), "page_size": 100}
                jobs += self.kind.list(self.client, request)
        return find_adoptable(jobs, labels)

    def active_look_up(self, parent: str, labels: RunLabels) -> Lookup:
        """What one identity's ACTIVE jobs in ``parent`` offer this run, from one listing of
        every active job of a Pulumi resource in ``parent`` shared by the calls of the next
        ``ACTIVE_LISTING_SECONDS``: a refresh of N jobs lists once per region, not N times.

        Only for reports (a refresh naming a job left outside the stack): a finished job is not
        listed, and a listing may be that many seconds old. A create's look-up is ``look_up``.
        """
        listing = self._active_listing(parent, ACTIVE_LISTING_SECONDS)
        return find_adoptable(listing.by_identity.get(labels.identity, ()), labels)

    def lists_active_others(self, parent: str, identity: str, held: frozenset[str]) -> bool:
        """Whether the listing ``active_look_up`` reads holds an active job of ``identity``
        other than the ``held`` ids: when it does not, that look-up finds nothing."""
        listing = self._active_listing(parent, ACTIVE_LISTING_SECONDS)
        jobs = listing.by_identity.get(identity, ())
        return any(job_id(str(job.name)) not in held for job in jobs)

    def current(self, parent: str, name: str) -> Any:
        """The job ``name`` of ``parent`` for a read: from the shared listing of the region's
        active jobs when it lists the job and is at most ``READ_LISTING_SECONDS`` old (a
        refresh of N running jobs makes a list call per 100 jobs, not N calls), else ``get``.

        A job the listing does not hold (ended, deleted, not a Pulumi resource's) is read
        alone, so an ended or vanished job is always seen as it is now. A listing the API
        refuses (a role without the list permission) leaves the read to ``get``; an API that
        cannot be reached fails the read as ``get`` would, without a second round of retries.
        """
        try:
            listing = self._active_listing(parent, READ_LISTING_SECONDS)
        except (ApiUnreachable, Interrupted):
            raise
        except Exception:
            return self.get(name)
        listed = listing.by_id.get(job_id(name))
        return self.get(name) if listed is None else listed

    def active_jobs(
        self, parent: str, max_age: float = READ_LISTING_SECONDS
    ) -> tuple[dict[str, Any], dict[str, list[Any]]]:
        """``parent``'s active jobs of Pulumi resources, by id and by identity label, from the
        shared listing (at most ``max_age`` seconds old): what a delete reads to tell a job
        held by another resource and to find its resource's jobs left outside the stack."""
        listing = self._active_listing(parent, max_age)
        return listing.by_id, listing.by_identity

    def _active_listing(self, parent: str, max_age: float) -> _Listing:
        """The shared listing of ``parent``'s active jobs, listed again once ``max_age``
        seconds old; the first caller of a region lists, the others wait for its answer."""
        key = (id(self.client), self.kind.method, parent)
        with _LISTINGS_LOCK:
            lock = _LISTING_LOCKS.setdefault(key, threading.Lock())
        with lock:
            listing = _LISTINGS.get(key)
            if listing is None or time.monotonic() - listing.taken > max_age:
                request = {"parent": parent, "filter": ACTIVE_FILTER, "page_size": 100}
                taken = time.monotonic()
                jobs = self.retried(
                    f"listing the active jobs in {parent}",
                    lambda: list(self.kind.list(self.client, request)),
                )
                by_identity: dict[str, list[Any]] = {}
                for job in jobs:
                    by_identity.setdefault(str(job.labels.get(IDENTITY_LABEL, "")), []).append(job)
                by_id = {job_id(str(job.name)): job for job in jobs}
                listing = _LISTINGS[key] = _Listing(taken, by_identity, by_id)
        return listing

    def submit_or_adopt(
        self, parent: str, build: Callable[[], Any], labels: RunLabels
    ) -> Submission:
        """Adopt this run's job if one may be adopted, else submit the job ``build()`` makes.

        A lost response (connection dropped, 503 after the job was stored) is retried, and each
        retry looks for an adoptable job first, so at most one job is started per run. The
        look-up is idempotent and retried on its own; only the create counts as an attempt.
        The job is built once, and only when it is submitted. Labels that read the held jobs
        late (``RunLabels.read_held``) read them when the identity has an active job.
        """
        backoff = Backoff(self.policy, self.sleep)
        strays: list[Any] | None = None
        job: Any = None
        while True:
            found = self.retried(
                f"looking for this run's job in {parent}",
                partial(self.look_up, parent, labels),
            )
            if labels.read_held is not None and (found.adoptable is not None or found.strays):
                labels = labels.with_state()  # an active job: is it the one the stack holds?
                continue
            strays = found.strays if strays is None else strays
            if found.adoptable is not None:
                return Submission(found.adoptable, True, backoff.attempts, strays)
            job = build() if job is None else job
            record_submission(labels.identity)  # from now on a job of it may exist
            try:
                created = self.kind.create(self.client, parent, job)
            except Exception as exc:
                if not is_transient(exc):
                    raise
                if not backoff.pause():
                    raise backoff.unreachable(f"submitting a job to {parent}", exc) from None
                continue
            return Submission(created, False, backoff.attempts + 1, strays)

    def wait_for_state(
        self,
        job: Any,
        wait_for: str,
        *,
        timeout: float,
        interval: tuple[float, float] = (0.25, 10.0),
        observe: Callable[[Any], None] | None = None,
    ) -> Any:
        """Poll until ``job`` satisfies ``wait_for``; raises ``WaitFailed`` otherwise.

        ``observe`` is called with every form of the job seen (the one given included).
        """
        deadline = time.monotonic() + timeout
        delay, longest = interval
        while True:
            if observe is not None:
                observe(job)
            state = state_name(job)
            if reached(state, wait_for):
                return job
            if state in TERMINAL_STATES:
                detail = job.error.message if job.error and job.error.message else ""
                raise WaitFailed(
                    f"job {job.name} ended in {state} while waiting for it to be {wait_for}"
                    + (f": {detail}" if detail else ""),
                    job,
                    timed_out=False,
                )
            if time.monotonic() >= deadline:
                raise WaitFailed(
                    f"job {job.name} was still {state} after {timeout:g}s of waiting for it to "
                    f"be {wait_for}",
                    job,
                    timed_out=True,
                )
            self.sleep(min(delay, max(deadline - time.monotonic(), 0.0)))
            delay = min(delay * 1.5, longest)
            job = self.get(job.name)

    def _get_or_none(self, name: str) -> Any | None:
        try:
            return self.get(name)
        except Exception as exc:
            if is_not_found(exc):
                return None
            raise

    def _cancel(self, name: str) -> bool:
        """Ask to cancel; False when the job no longer exists."""
        try:
            self.retried(f"cancelling {name}", lambda: self.kind.cancel(self.client, name))
        except Exception as exc:
            if is_not_found(exc):
                return False
            if not is_failed_precondition(exc):  # it finished meanwhile
                raise
        return True

    def cancel_and_wait(
        self,
        name: str,
        *,
        timeout: float,
        observe: Callable[[Any], None] | None = None,
    ) -> Any | None:
        """Cancel an active job and wait up to ``timeout`` for a terminal state.

        Returns the last job seen, or None when the job does not exist. The cancel is asked
        first, without reading the job: the service refuses to cancel a job that already
        finished (FAILED_PRECONDITION, which leaves it as it is) and the read that follows
        returns it at once, so a running job, the usual case, costs one read less. After the
        cancel, the job is read at once, then after ``POLL_FIRST`` seconds and at intervals
        growing by ``POLL_GROWTH`` up to ``POLL_LONGEST``: a cancel the service carries out at
        once (the emulator's) costs one read and no wait, a slow one (Vertex AI's take tens of
        seconds) a read every 5 s. ``observe`` sees each form read after the cancel.
        """
        if not self._cancel(name):
            return None
        deadline = time.monotonic() + timeout
        delay = POLL_FIRST
        while True:
            job = self._get_or_none(name)
            if job is not None and observe is not None:
                observe(job)
            if job is None or state_name(job) in TERMINAL_STATES:
                return job
            if time.monotonic() >= deadline:
                return job
            self.sleep(min(delay, max(deadline - time.monotonic(), 0.0)))
            delay = min(delay * POLL_GROWTH, POLL_LONGEST)

    def delete_record(self, name: str, *, timeout: float) -> None:
        """Delete a finished job's record; a record already gone is fine.

        Waits for the deletion's long-running operation (the record is gone when this
        returns), polling it like ``cancel_and_wait`` polls a job, and not at all when the
        service's answer says it is done already. A slow or vanished operation does not undo
        a deletion the service accepted: it ends the wait without an error.
        """
        try:
            operation = self.retried(
                f"deleting {name}", lambda: self.kind.delete(self.client, name)
            )
        except Exception as exc:
            if is_not_found(exc):
                return
            raise
        deadline = time.monotonic() + timeout
        delay = POLL_FIRST
        while not operation.operation.done:
            if time.monotonic() >= deadline:
                return
            try:
                self.sleep(min(delay, max(deadline - time.monotonic(), 0.0)))
            except Interrupted:
                return  # the service accepted the deletion: stopping the wait undoes nothing
            delay = min(delay * POLL_GROWTH, POLL_LONGEST)
            try:
                operation.done(retry=None)  # reads the operation once
            except Exception as exc:
                if is_not_found(exc):
                    return
                if not is_transient(exc):
                    raise
        try:
            operation.result(timeout=0)  # done: raises the operation's error, if it has one
        except Exception as exc:
            if not (is_not_found(exc) or is_transient(exc)):
                raise


@contextmanager
def job_api(
    endpoint: Endpoint,
    region: str,
    kind: JobKind,
    policy: RetryPolicy,
    *,
    connections: int = DEFAULT_MAX_CONCURRENT_OPERATIONS,
) -> Iterator[JobApi]:
    """A ``JobApi`` for one operation, on the process's shared client (``shared_client``)."""
    yield JobApi(shared_client(endpoint, region, connections=connections), kind, policy)


# -- outputs ---------------------------------------------------------------------------------


def job_document(job: Any) -> dict[str, Any]:
    """A job (either kind) as the REST API shows it: camelCase fields, enums by name, output-only
    fields included; what ``gcloud ai custom-jobs describe --format=json`` prints."""
    document: dict[str, Any] = type(job).to_dict(
        job,
        use_integers_for_enums=False,
        preserving_proto_field_name=False,
        always_print_fields_with_no_presence=False,  # no empty defaults: only what is set
    )
    return document


def _job_fields(job: Any, endpoint: Endpoint, project: str, region: str) -> dict[str, Any]:
    """What every kind of job reports: its name, state, times and error."""
    name = str(job.name)
    error = job.error.message if "error" in job and job.error.message else ""
    return {
        "job_name": name,
        "job_id": name.rsplit("/", 1)[-1],
        "state": state_name(job),
        "console_url": endpoint.console_url(name, project, region),
        "create_time": _iso(job.create_time),
        "start_time": _iso(job.start_time),
        "end_time": _iso(job.end_time),
        "error_message": str(error),
    }


def _output_directory(job_spec: Any) -> str:
    """A ``CustomJobSpec``'s ``baseOutputDirectory`` without its trailing slash ("" if none)."""
    if "base_output_directory" not in job_spec:
        return ""
    return str(job_spec.base_output_directory.output_uri_prefix or "").rstrip("/")


def job_outputs(job: Any, endpoint: Endpoint, *, project: str, region: str) -> dict[str, Any]:
    """The resource's declared outputs, read from a custom job."""
    base = _output_directory(job.job_spec)
    return {
        **_job_fields(job, endpoint, project, region),
        "output_dir": base,
        "model_dir": f"{base}/model/" if base else "",
        "web_access_uris": dict(job.web_access_uris),
    }


TRIAL_STATES = ("REQUESTED", "ACTIVE", "STOPPING", "SUCCEEDED", "INFEASIBLE")
"""``Trial.State`` names a tuning job's trials are counted by (always all of them)."""


def trial_counts(job: Any) -> dict[str, int]:
    """How many of a tuning job's trials are in each state (``{"SUCCEEDED": 2, ...}``)."""
    counts = dict.fromkeys(TRIAL_STATES, 0)
    for trial in job.trials:
        name = str(trial.state.name)
        counts[name] = counts.get(name, 0) + 1
    return counts


def _integer_parameters(parameters: Iterable[Any]) -> Iterator[str]:
    """Ids of the integer parameters, conditional ones included (their values come as floats)."""
    for parameter in parameters:
        if "integer_value_spec" in parameter:
            yield str(parameter.parameter_id)
        yield from _integer_parameters(
            c.parameter_spec for c in parameter.conditional_parameter_specs
        )


def _metric_value(trial: Any, metric_id: str) -> float | None:
    found = [m.value for m in trial.final_measurement.metrics if m.metric_id == metric_id]
    return float(found[0]) if found else None


def best_trial(job: Any) -> dict[str, Any] | None:
    """The succeeded trial with the best value of the study's first metric for its goal.

    ``{"id", "parameters": {id: value}, "metric_id", "value"}``, or None while no trial has
    succeeded with a value. Of equal values the earliest trial wins.
    """
    if not job.study_spec.metrics:
        return None
    metric = job.study_spec.metrics[0]
    metric_id = str(metric.metric_id)
    scored = [
        (value, trial)
        for trial in job.trials
        if trial.state.name == "SUCCEEDED"
        and (value := _metric_value(trial, metric_id)) is not None
    ]
    if not scored:
        return None
    pick = max if metric.goal.name == "MAXIMIZE" else min
    value, trial = pick(scored, key=lambda scored_trial: scored_trial[0])
    integers = set(_integer_parameters(job.study_spec.parameters))
    parameters = {}
    for parameter in trial.parameters:
        given = parameter.value
        if parameter.parameter_id in integers and isinstance(given, float) and given.is_integer():
            given = int(given)
        parameters[str(parameter.parameter_id)] = given
    return {"id": str(trial.id), "parameters": parameters, "metric_id": metric_id, "value": value}


def tuning_job_outputs(
    job: Any, endpoint: Endpoint, *, project: str, region: str
) -> dict[str, Any]:
    """The resource's declared outputs, read from a hyperparameter tuning job.

    Each trial writes under ``<baseOutputDirectory>/<trial id>/`` (its ``AIP_MODEL_DIR`` is
    that directory's ``model/``), as Vertex AI lays a tuning job's output out.
    """
    best = best_trial(job)
    base = _output_directory(job.trial_job_spec)
    return {
        **_job_fields(job, endpoint, project, region),
        "output_dir": base,
        "trial_counts": trial_counts(job),
        "best_trial": best,
        "best_trial_model_dir": f"{base}/{best['id']}/model/" if base and best else "",
    }
