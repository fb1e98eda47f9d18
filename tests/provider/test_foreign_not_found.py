"""A 404 is the API's only when the API says so: a front (a proxy, a load balancer) answering
404 with its own page during refresh, destroy or ``components import`` is an unreachable API,
and the stack keeps what it knew. Through the real client, over REST, against the emulator
and a loopback front that answers every request with an HTML 404."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from google.cloud.aiplatform_v1 import JobState

from components.core._importing import JobImportError, fetch_job
from components.lifecycle._settings import Endpoint
from components.vertex.api import JobOperationError, RetryPolicy
from emulator.testing import EmulatorProcess, wait_for_state
from tests.provider.conftest import configured, job_inputs

PAGE = b"<!DOCTYPE html><html><body><h1>404 Not Found</h1>nginx</body></html>"
ACTIVE = (JobState.JOB_STATE_QUEUED, JobState.JOB_STATE_PENDING, JobState.JOB_STATE_RUNNING)


class _HtmlNotFound(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_response(404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    do_GET = do_POST = do_DELETE = do_PATCH = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def front() -> Iterator[str]:
    """The URL of a front whose every answer is an HTML 404 page."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HtmlNotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _running_job(sim: EmulatorProcess) -> tuple[Any, Any]:
    provider = configured(sim.endpoint, cancelTimeout="20", retryDeadline="30")
    inputs = provider.check({}, job_inputs(labels={"emulator-outcome": "hang"})).inputs
    return provider, provider.create(inputs)


def test_refresh_and_destroy_through_a_front_answering_html_404_keep_the_job(
    sim: EmulatorProcess, front: str
) -> None:
    provider, created = _running_job(sim)
    behind = configured(front, cancelTimeout="20", retryDeadline="1")
    with pytest.raises(JobOperationError, match="the stack keeps what it last knew"):
        behind.read(created.id, created.outs)
    with pytest.raises(JobOperationError, match="was not deleted"):
        behind.delete(created.id, created.outs)
    job = sim.client().get_custom_job(name=created.id)
    assert job.state in ACTIVE
    provider.delete(created.id, created.outs)


def test_the_apis_own_not_found_still_means_the_job_is_gone(sim: EmulatorProcess) -> None:
    provider, created = _running_job(sim)
    client = sim.client()
    client.cancel_custom_job(name=created.id)
    wait_for_state(client, created.id, [JobState.JOB_STATE_CANCELLED], timeout=30)
    client.delete_custom_job(name=created.id).result(timeout=30)  # type: ignore[no-untyped-call]
    gone = provider.read(created.id, created.outs)
    assert gone.id == "" and gone.outs == {}
    provider.delete(created.id, created.outs)  # already gone: nothing to do


def test_import_through_a_front_answering_html_404_is_no_missing_job(front: str) -> None:
    name = "projects/local-training/locations/us-central1/customJobs/123"
    with pytest.raises(JobImportError) as raised:
        fetch_job(name, endpoint=Endpoint(url=front), policy=RetryPolicy(deadline=1))
    assert "could not read" in str(raised.value)
    assert "there is no job" not in str(raised.value)
