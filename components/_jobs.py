"""Vertex AI CustomJob operations for the TrainingJob provider.

Everything here that touches the API imports ``google.cloud.aiplatform_v1`` inside the
function (about 1.5 s): ``check`` and ``diff`` never come here, so a preview stays fast.
Clients are made per operation and closed afterwards; the provider object keeps none.

Transient errors (429, 503, 504, a dropped connection, 409 ABORTED) are retried with
exponential backoff. Creating is the one call that is not idempotent, so every create
attempt first looks for a job it may have submitted already (see ``submit_or_adopt``).
"""

from __future__ import annotations

import random
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from components._identity import IDENTITY_LABEL, RUN_LABEL
from components._settings import DEFAULT_RETRY_DEADLINE, Endpoint

T = TypeVar("T")

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
ADOPTABLE_ACTIVE = ACTIVE_STATES - {"JOB_STATE_CANCELLING"}
"""A job being cancelled was given up on (by a failed wait or by hand): never adopt it."""

ADOPT_FINISHED_WITHIN = timedelta(hours=24)
"""A succeeded job with the same identity and run hash that ended this recently is adopted."""


class JobOperationError(RuntimeError):
    """An API operation failed; the message says what happened to the job."""


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff for transient errors: ``initial`` doubling up to ``maximum``, within ``deadline``."""

    initial: float = 0.5
    maximum: float = 8.0
    deadline: float = DEFAULT_RETRY_DEADLINE
    attempts: int = 10


def aiplatform() -> Any:
    """``google.cloud.aiplatform_v1``, imported on first use without its version warnings."""
    with warnings.catch_warnings():
        # google.api_core warns about Python 3.11's end of life on import; in the provider
        # process that would reach every `pulumi up` as a diagnostic.
        warnings.simplefilter("ignore", FutureWarning)
        import google.api_core  # noqa: F401
        from google.cloud import aiplatform_v1

    return aiplatform_v1


@contextmanager
def job_client(endpoint: Endpoint, region: str) -> Iterator[Any]:
    """A REST ``JobServiceClient``, closed on exit (no socket outlives the operation)."""
    aip = aiplatform()
    kwargs: dict[str, Any] = {
        "transport": "rest",
        "client_options": {"api_endpoint": endpoint.api_endpoint(region)},
    }
    if endpoint.anonymous:
        from google.auth.credentials import AnonymousCredentials

        kwargs["credentials"] = AnonymousCredentials()  # type: ignore[no-untyped-call]
    client = aip.JobServiceClient(**kwargs)
    try:
        yield client
    finally:
        client.transport.close()


def is_transient(exc: BaseException) -> bool:
    """True for errors worth retrying: rate limits, unavailability, timeouts, lost connections."""
    from google.api_core import exceptions as gexc

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


def is_not_found(exc: BaseException) -> bool:
    from google.api_core import exceptions as gexc

    return isinstance(exc, gexc.NotFound)


def is_failed_precondition(exc: BaseException) -> bool:
    from google.api_core import exceptions as gexc

    return isinstance(exc, gexc.FailedPrecondition) or (
        isinstance(exc, gexc.BadRequest) and "FAILED_PRECONDITION" in str(exc)
    )


def with_retries(
    call: Callable[[], T],
    policy: RetryPolicy,
    *,
    what: str,
    before_retry: Callable[[BaseException], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``call``; retry transient errors with jittered exponential backoff."""
    deadline = time.monotonic() + policy.deadline
    delay = policy.initial
    attempt = 0
    while True:
        attempt += 1
        try:
            return call()
        except Exception as exc:
            if not is_transient(exc):
                raise
            remaining = deadline - time.monotonic()
            if attempt >= policy.attempts or remaining <= 0:
                raise JobOperationError(
                    f"{what}: still failing after {attempt} attempts: {_short(exc)}"
                ) from None
            if before_retry is not None:
                before_retry(exc)
            sleep(min(delay * (0.5 + random.random() / 2), max(remaining, 0.0)))
            delay = min(delay * 2, policy.maximum)


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def state_name(job: Any) -> str:
    """``JOB_STATE_RUNNING`` for a job proto."""
    return str(job.state.name)


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


def _run_filter(identity: str, runs: Sequence[str]) -> str:
    any_run = " OR ".join(f'labels.{RUN_LABEL}="{run}"' for run in runs)
    return f'labels.{IDENTITY_LABEL}="{identity}" AND ({any_run})'


def find_adoptable(
    client: Any,
    parent: str,
    *,
    identity: str,
    run: str,
    earlier_runs: Sequence[str] = (),
    now: datetime | None = None,
) -> Any | None:
    """The job this resource submitted for this exact run, if one may be adopted.

    ``earlier_runs`` are the same run's hashes as an earlier release computed them (the
    unkeyed hash), so a job submitted before an upgrade is still found.
    Adoptable: active (queued to running, not being cancelled), or succeeded within
    ``ADOPT_FINISHED_WITHIN``. Failed, cancelled and expired jobs are never adopted: a new
    ``pulumi up`` after those is a request to run again. The newest candidate wins.
    """
    now = now or datetime.now(UTC)
    runs = (run, *(r for r in earlier_runs if r != run))
    request = {"parent": parent, "filter": _run_filter(identity, runs), "page_size": 100}
    best: Any | None = None
    for job in client.list_custom_jobs(request=request, retry=None, timeout=60.0):
        # Filtering again here costs nothing and guards against a service that ignores filters.
        if job.labels.get(IDENTITY_LABEL) != identity or job.labels.get(RUN_LABEL) not in runs:
            continue
        state = state_name(job)
        if state in ADOPTABLE_ACTIVE:
            pass
        elif state in SUCCEEDED_STATES:
            ended = _timestamp(job.end_time) or _timestamp(job.update_time)
            if ended is None or now - ended > ADOPT_FINISHED_WITHIN:
                continue
        else:
            continue
        if best is None or (_timestamp(job.create_time) or now) > (
            _timestamp(best.create_time) or now
        ):
            best = job
    return best


@dataclass
class Submission:
    """The job a create ended up with, and whether it was adopted rather than submitted."""

    job: Any
    adopted: bool
    attempts: int


def submit_or_adopt(
    client: Any,
    parent: str,
    custom_job: Any,
    *,
    identity: str,
    run: str,
    earlier_runs: Sequence[str] = (),
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
) -> Submission:
    """Adopt this run's job if one exists, else submit ``custom_job``.

    A lost response (connection dropped, 503 after the job was stored) is retried, and each
    retry looks for an adoptable job first, so at most one job is started per run. The
    look-up is idempotent and retried on its own; only the create counts as an attempt.
    """
    deadline = time.monotonic() + policy.deadline
    delay = policy.initial
    attempts = 0
    while True:
        found = with_retries(
            lambda: find_adoptable(
                client, parent, identity=identity, run=run, earlier_runs=earlier_runs
            ),
            policy,
            what=f"looking for this run's job in {parent}",
            sleep=sleep,
        )
        if found is not None:
            return Submission(found, adopted=True, attempts=attempts)
        attempts += 1
        try:
            job = client.create_custom_job(
                parent=parent, custom_job=custom_job, retry=None, timeout=60.0
            )
        except Exception as exc:
            if not is_transient(exc):
                raise
            remaining = deadline - time.monotonic()
            if attempts >= policy.attempts or remaining <= 0:
                raise JobOperationError(
                    f"submitting a job to {parent}: still failing after {attempts} attempts: "
                    f"{_short(exc)}"
                ) from None
            sleep(min(delay * (0.5 + random.random() / 2), max(remaining, 0.0)))
            delay = min(delay * 2, policy.maximum)
            continue
        return Submission(job, adopted=False, attempts=attempts)


def get_job(client: Any, name: str, policy: RetryPolicy) -> Any:
    """The job; raises ``google.api_core.exceptions.NotFound`` when it does not exist."""
    return with_retries(
        lambda: client.get_custom_job(name=name, retry=None, timeout=60.0),
        policy,
        what=f"reading {name}",
    )


def reached(state: str, wait_for: str) -> bool:
    """True when a job in ``state`` satisfies ``wait_for``."""
    if wait_for == "submitted":
        return True
    if wait_for == "running":
        return state == "JOB_STATE_RUNNING" or state in SUCCEEDED_STATES
    return state in SUCCEEDED_STATES


class WaitFailed(JobOperationError):
    """The job did not reach the wanted state; ``job`` is its last known form."""

    def __init__(self, message: str, job: Any, *, timed_out: bool) -> None:
        super().__init__(message)
        self.job = job
        self.timed_out = timed_out


def wait_for_state(
    client: Any,
    job: Any,
    wait_for: str,
    *,
    timeout: float,
    policy: RetryPolicy,
    interval: tuple[float, float] = (0.25, 10.0),
    sleep: Callable[[float], None] = time.sleep,
) -> Any:
    """Poll until ``job`` satisfies ``wait_for``; raises ``WaitFailed`` otherwise."""
    deadline = time.monotonic() + timeout
    delay, longest = interval
    while True:
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
                f"job {job.name} was still {state} after {timeout:g}s of waiting for it to be "
                f"{wait_for}",
                job,
                timed_out=True,
            )
        sleep(min(delay, max(deadline - time.monotonic(), 0.0)))
        delay = min(delay * 1.5, longest)
        job = get_job(client, job.name, policy)


def cancel_and_wait(
    client: Any,
    name: str,
    *,
    timeout: float,
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
) -> Any | None:
    """Cancel an active job and wait up to ``timeout`` for a terminal state.

    Returns the last job seen, or None when the job does not exist. A job that already
    finished is left as it is.
    """
    try:
        job = get_job(client, name, policy)
    except Exception as exc:
        if is_not_found(exc):
            return None
        raise
    if state_name(job) in TERMINAL_STATES:
        return job
    if state_name(job) != "JOB_STATE_CANCELLING":
        try:
            with_retries(
                lambda: client.cancel_custom_job(name=name, retry=None, timeout=60.0),
                policy,
                what=f"cancelling {name}",
            )
        except Exception as exc:
            if is_not_found(exc):
                return None
            if not is_failed_precondition(exc):  # it finished meanwhile
                raise
    deadline = time.monotonic() + timeout
    delay = 0.2
    while True:
        try:
            job = get_job(client, name, policy)
        except Exception as exc:
            if is_not_found(exc):
                return None
            raise
        if state_name(job) in TERMINAL_STATES or time.monotonic() >= deadline:
            return job
        sleep(min(delay, max(deadline - time.monotonic(), 0.0)))
        delay = min(delay * 1.5, 5.0)


def delete_record(client: Any, name: str, *, timeout: float, policy: RetryPolicy) -> None:
    """Delete a finished job's record; a record already gone is fine."""
    try:
        operation = with_retries(
            lambda: client.delete_custom_job(name=name, retry=None, timeout=60.0),
            policy,
            what=f"deleting {name}",
        )
    except Exception as exc:
        if is_not_found(exc):
            return
        raise
    try:
        operation.result(timeout=timeout)
    except Exception as exc:
        # The service accepted the deletion; a slow or vanished operation does not undo it.
        # (concurrent.futures.TimeoutError is the builtin TimeoutError since Python 3.11.)
        if not (is_not_found(exc) or isinstance(exc, TimeoutError) or is_transient(exc)):
            raise


def job_outputs(job: Any, endpoint: Endpoint, *, project: str, region: str) -> dict[str, Any]:
    """The resource's declared outputs, read from a job."""
    name = str(job.name)
    base = ""
    if "base_output_directory" in job.job_spec:
        base = str(job.job_spec.base_output_directory.output_uri_prefix or "")
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
        "model_dir": f"{base.rstrip('/')}/model/" if base else "",
        "web_access_uris": dict(job.web_access_uris),
    }


def redact(text: str, secrets: Mapping[str, Any] | None) -> str:
    """``text`` with every env value replaced by ``<redacted>`` (longest first)."""
    values = sorted(
        {str(v) for v in (secrets or {}).values() if v not in (None, "")}, key=len, reverse=True
    )
    for value in values:
        text = text.replace(value, "<redacted>")
    return text
