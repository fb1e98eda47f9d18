"""A job Vertex refuses for quota (429 RESOURCE_EXHAUSTED naming the metric): the provider says
which metric, where, need vs limit and how to request more, and does not retry it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from components.vertex.api import JobOperationError, is_transient, quota_refusal
from emulator.testing import EmulatorProcess, running_emulator
from tests.provider.conftest import SIMULATE_ARGS, configured, job_inputs, jobs_with_identity

CPUS = "aiplatform.googleapis.com/custom_model_training_cpus"


@pytest.fixture(scope="module")
def small() -> Iterator[EmulatorProcess]:
    """An emulator whose project has 2 training vCPUs in us-central1 (the trainer needs 4)."""
    with running_emulator(
        *SIMULATE_ARGS, "--quota", "custom_model_training_cpus@us-central1=2"
    ) as server:
        yield server


def test_a_quota_refusal_is_a_clear_error_and_is_not_retried(small):
    provider = configured(small.endpoint, retryDeadline="60")
    inputs = provider.check({}, job_inputs()).inputs
    started = time.monotonic()
    with pytest.raises(JobOperationError) as info:
        provider.create(inputs)
    assert time.monotonic() - started < 10  # a retried 429 would take up to retryDeadline
    message = str(info.value)
    assert "Vertex AI refused the job for quota" in message
    assert (
        f"{CPUS} in us-central1: the job needs 4, in use: 0 by the active jobs the API lists, "
        "the project's limit is 2"
    ) in message
    assert "--quota-id=CustomModelTrainingCPUsPerProjectPerRegion" in message
    assert "--preferred-value=4 --dimensions=region=us-central1" in message
    assert "no job was started" in message
    assert jobs_with_identity(small, inputs["identity"]) == []


def test_rate_limits_stay_transient_and_quota_refusals_do_not():
    from google.api_core import exceptions as gexc

    refusal = gexc.TooManyRequests(f"The following quota metrics exceed quota limits: {CPUS}")  # type: ignore[no-untyped-call]
    rate_limit = gexc.TooManyRequests("Quota exceeded for quota metric 'Resource management'")  # type: ignore[no-untyped-call]
    assert quota_refusal(refusal) == [CPUS] and not is_transient(refusal)
    assert quota_refusal(rate_limit) == [] and is_transient(rate_limit)
    bad_request = gexc.BadRequest(f"exceed quota limits: {CPUS}")  # type: ignore[no-untyped-call]
    assert quota_refusal(bad_request) == []


def test_the_quota_read_gives_up_at_the_retry_deadline(sim, monkeypatch):
    """Quotas that cannot be read are a warning: with the API unavailable, the read retries for
    ``training:retryDeadline`` (here 2 s), not the client library's own 60 s."""
    from components.lifecycle._settings import Endpoint
    from components.vertex import quotas

    monkeypatch.setattr(quotas, "_cache", {})
    sim.set_faults(unavailable_rate=1.0)
    started = time.monotonic()
    with pytest.raises(quotas.QuotaUnavailable) as info:
        quotas.read_limits(Endpoint(sim.endpoint), "local-training", retry_deadline=2.0)
    took = time.monotonic() - started
    assert took < 15, f"the quota read took {took:.1f}s"  # the library's own retry: 60 s
    assert "could not be read" in str(info.value)
    sim.clear_faults()
    limits = quotas.read_limits(Endpoint(sim.endpoint), "local-training", retry_deadline=2.0)
    assert limits is not None
