"""A ``JobServiceClient`` that talks to the emulator, made the way the provider makes one.

The one constructor is ``components.vertex.api.job_service_client``: an ``http://`` endpoint
gets anonymous credentials, and the REST transport keeps the explicit scheme.
"""

from __future__ import annotations

from typing import cast

from google.cloud.aiplatform_v1 import JobServiceClient

from components._settings import Endpoint
from components.vertex.api import job_service_client as _client_for

__all__ = ["job_service_client"]


def job_service_client(endpoint: str) -> JobServiceClient:
    """A REST ``JobServiceClient`` for ``endpoint`` (``http://127.0.0.1:PORT``)."""
    if not endpoint.startswith(("http://", "https://")):
        raise ValueError(f"endpoint: expected http://HOST:PORT, got {endpoint!r}")
    # The region only names Vertex AI's regional host, which an explicit endpoint replaces.
    return cast(JobServiceClient, _client_for(Endpoint(endpoint), region="us-central1"))
