"""The project's Vertex training limits, read with Google's Cloud Quotas client (``cloudquotas_v1``).

One list call per project and endpoint, cached for the life of the process (a preview or an
update runs the program once). The client is made as the job client is
(``components.vertex.api.job_service_client``): REST transport; an explicit endpoint (the local
emulator) is the API's address, and an ``http://`` one gets anonymous credentials. The library is
imported on the first call only (0.12 s of CPU after the program's own imports, 0.26 s in a
bare interpreter; the list call itself about 0.01 s against the emulator), and nothing here
imports ``google.cloud.aiplatform``.

Any failure (no Application Default Credentials, no permission, the API not enabled, the network)
is a ``QuotaUnavailable`` whose message says what to do: the program makes it one warning, never
a failed preview.
"""

from __future__ import annotations

import threading
from typing import Any

from .._errors import TrainingJobError
from ..costs._quota import SERVICE, QuotaLimits
from ..lifecycle._settings import Endpoint, public_url

__all__ = ["QUOTA_API", "QuotaUnavailable", "quota_client", "read_limits"]

QUOTA_API = "cloudquotas.googleapis.com"
CALL_TIMEOUT = 20.0
"""Seconds the list call may take: a preview does not wait longer for quotas."""
MAX_PAGES = 50
"""Pages read at most (500 quota infos each): a misbehaving server cannot hold the preview."""

_cache: dict[tuple[str | None, str], QuotaLimits] = {}
_lock = threading.Lock()


class QuotaUnavailable(TrainingJobError, RuntimeError):
    """The quotas could not be read; the message says why and what to do."""


def quota_client(endpoint: Endpoint) -> Any:
    """A REST ``CloudQuotasClient`` for Google's API, or for ``endpoint`` if it has a URL."""
    from google.cloud import cloudquotas_v1

    kwargs: dict[str, Any] = {
        "transport": "rest",
        "client_options": {"api_endpoint": endpoint.url.rstrip("/") if endpoint.url else QUOTA_API},
    }
    if endpoint.anonymous:
        from google.auth.credentials import AnonymousCredentials

        kwargs["credentials"] = AnonymousCredentials()  # type: ignore[no-untyped-call]
    return cloudquotas_v1.CloudQuotasClient(**kwargs)


def _retry(deadline: float) -> Any:
    """The client library's own retry of the list call (its backoff and what it retries: the
    API unavailable), ended at ``deadline`` seconds instead of its 60."""
    from google.api_core import exceptions as gexc
    from google.api_core import retry as retries

    return retries.Retry(
        initial=1.0,
        maximum=10.0,
        multiplier=1.3,
        predicate=retries.if_exception_type(gexc.ServiceUnavailable),
        timeout=deadline,
    )


def _reason(exc: BaseException, endpoint: Endpoint) -> str:
    from google.api_core import exceptions as gexc
    from google.auth import exceptions as auth_exc

    text = endpoint.scrub(str(exc).strip().splitlines()[0] if str(exc).strip() else "")[:300]
    if isinstance(exc, auth_exc.DefaultCredentialsError):
        return "no Google credentials (gcloud auth application-default login)"
    if isinstance(exc, gexc.PermissionDenied | gexc.Forbidden | gexc.Unauthorized):
        return (
            f"no access to the Cloud Quotas API ({text}); it needs the API enabled "
            "(gcloud services enable cloudquotas.googleapis.com) and cloudquotas.quotas.get "
            "(roles/cloudquotas.viewer)"
        )
    import requests

    if isinstance(exc, requests.exceptions.ConnectionError | requests.exceptions.Timeout):
        where = public_url(endpoint.url) if endpoint.url else QUOTA_API
        return f"could not reach {where} ({type(exc).__name__})"
    return f"{type(exc).__name__}: {text}"


def read_limits(
    endpoint: Endpoint, project: str, *, retry_deadline: float = CALL_TIMEOUT
) -> QuotaLimits:
    """The project's per-region limits of ``aiplatform.googleapis.com``; cached per process.

    Transient errors are retried for at most ``retry_deadline`` seconds
    (``training:retryDeadline``; at most ``CALL_TIMEOUT``), not the client library's own 60 s:
    quotas that cannot be read only make a warning, and a preview must not wait longer for them
    than the provider waits for the API. Raises ``QuotaUnavailable`` (never anything else) when
    they cannot be read.
    """
    key = (endpoint.url, project)
    with _lock:  # one list call per project, whoever asks first
        if key in _cache:
            return _cache[key]
        try:
            client = quota_client(endpoint)
            parent = f"projects/{project}/locations/global/services/{SERVICE}"
            deadline = min(retry_deadline, CALL_TIMEOUT)
            pager = client.list_quota_infos(
                request={"parent": parent, "page_size": 500},
                retry=_retry(deadline),
                timeout=deadline,
            )
            infos = []
            for number, page in enumerate(pager.pages):
                if number >= MAX_PAGES:
                    break
                infos.extend(page.quota_infos)
            limits = QuotaLimits.from_quota_infos(infos)
        except Exception as exc:
            raise QuotaUnavailable(
                f"the Vertex training quotas of project {project} could not be read: "
                f"{_reason(exc, endpoint)}"
            ) from None
        _cache[key] = limits
        return limits
