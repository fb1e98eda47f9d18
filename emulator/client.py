"""How to build a ``JobServiceClient`` that talks to the emulator.

Nothing special is needed with google-cloud-aiplatform 2.7.0: the REST transport keeps an
explicit ``http://`` scheme given in ``api_endpoint`` (it only prepends ``https://`` when no
scheme is present), and anonymous credentials skip token fetching. This helper is the one place
that spells the construction out, so the rest of the project does it the same way.
"""

from __future__ import annotations

from google.auth.credentials import AnonymousCredentials
from google.cloud.aiplatform_v1 import JobServiceClient


def job_service_client(endpoint: str) -> JobServiceClient:
    """A REST ``JobServiceClient`` for ``endpoint`` (``http://127.0.0.1:PORT``)."""
    if not endpoint.startswith(("http://", "https://")):
        raise ValueError(f"endpoint: expected http://HOST:PORT, got {endpoint!r}")
    return JobServiceClient(
        transport="rest",
        client_options={"api_endpoint": endpoint.rstrip("/")},
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
    )
