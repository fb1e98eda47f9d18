"""A ``JobServiceClient`` of the real client library, pointed at the emulator.

The emulator speaks HTTP without TLS and wants no credentials: the client is made with the REST
transport (which keeps an explicit ``http://`` scheme in ``api_endpoint``) and anonymous
credentials, so that no token is ever sent over plain HTTP.
"""

from __future__ import annotations

from google.auth.credentials import AnonymousCredentials
from google.cloud.aiplatform_v1 import JobServiceClient

__all__ = ["job_service_client"]


def job_service_client(endpoint: str) -> JobServiceClient:
    """A REST ``JobServiceClient`` for ``endpoint`` (``http://127.0.0.1:PORT``)."""
    if not endpoint.startswith(("http://", "https://")):
        raise ValueError(f"endpoint: expected http://HOST:PORT, got {endpoint!r}")
    return JobServiceClient(
        transport="rest",
        client_options={"api_endpoint": endpoint.rstrip("/")},
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
    )
