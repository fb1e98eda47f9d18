"""Placement across candidate regions, on the provider against the emulator (simulate mode,
Google's REST client): a quota refusal and a capacity failure move the job on; one job is
active in all; adoption searches every candidate region; the outputs say where it ran."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from components._tuning_provider import TuningJobProvider
from components.core._placement import (
    check_placed,
    parse_placement,
    placement_replaces,
    run_region,
    with_capacity,
)
from components.vertex.api import JobOperationError, capacity_refusal
from emulator.testing import EmulatorProcess, running_emulator
from tests._pools import on_one_t4
from tests.provider.conftest import SIMULATE_ARGS, configured, job_inputs, job_label

T4 = "NVIDIA_TESLA_T4"
REGIONS = ["us-central1", "us-east4", "europe-west4"]


@pytest.fixture(scope="module")
def short() -> Iterator[EmulatorProcess]:
    """No T4 quota in us-central1; no T4 capacity in us-east4; europe-west4 takes the job."""
    with running_emulator(
        *SIMULATE_ARGS,
        "--quota",
        "custom_model_training_nvidia_t4_gpus@us-central1=0",
        "--no-capacity",
        f"{T4}@us-east4",
    ) as server:
        yield server


def _t4(inputs: dict[str, Any], *, tuning: bool = False) -> dict[str, Any]:
    spec = inputs["spec"]
    job = spec["trialJobSpec"] if tuning else spec
    on_one_t4(job["workerPoolSpecs"][0])
    return inputs


def placed_inputs(**knobs: Any) -> dict[str, Any]:
    tuning = bool(knobs.pop("tuning", False))
    inputs = _t4(job_inputs(tuning=tuning, **knobs), tuning=tuning)
    inputs["placement"] = [{"region": r, "capacity": []} for r in REGIONS]
    return inputs


def _all_jobs(emu: EmulatorProcess, identity: str, *, tuning: bool = False) -> list[Any]:
    client = emu.client()
    found = []
    for region in REGIONS:
        request = {
            "parent": f"projects/local-training/locations/{region}",
            "filter": f'labels.pulumi_resource="{job_label(identity)}"',
        }
        listed = (
            client.list_hyperparameter_tuning_jobs(request=request)
            if tuning
            else client.list_custom_jobs(request=request)
        )
        found += list(listed)
    return found


def test_the_job_moves_past_a_quota_refusal_and_a_capacity_failure(short):
    provider = configured(short.endpoint, cancelTimeout="20", retryDeadline="20")
    inputs = provider.check({}, placed_inputs(wait_for="running")).inputs
    result = provider.create(inputs)
    status = result.outs["status"]
    assert "/locations/europe-west4/customJobs/" in result.id
    assert status["placed_region"] == "europe-west4"
    attempts = status["placement_attempts"]
    assert [a["region"] for a in attempts] == REGIONS
    assert attempts[0]["job_name"] is None and "quota refused" in attempts[0]["stopped_by"]
    assert "custom_model_training_nvidia_t4_gpus" in attempts[0]["stopped_by"]
    assert "/locations/us-east4/" in attempts[1]["job_name"]
    assert "Resources are insufficient in region: us-east4" in attempts[1]["stopped_by"]
    assert attempts[2]["stopped_by"] is None
    jobs = _all_jobs(short, inputs["identity"])
    active = [j for j in jobs if j.state.name not in ("JOB_STATE_FAILED", "JOB_STATE_CANCELLED")]
    assert [j.name for j in active] == [result.id]
    assert {j.state.name for j in jobs if j.name != result.id} == {"JOB_STATE_FAILED"}


def test_a_second_create_adopts_the_job_in_whichever_candidate_it_is(short):
    provider = configured(short.endpoint, cancelTimeout="20", retryDeadline="20")
    inputs = provider.check({}, placed_inputs(wait_for="running")).inputs
    first = provider.create(inputs)
    again = provider.create(inputs)  # as after a kill before the state was written
    assert again.id == first.id
    assert again.outs["status"]["adopted"] is True
    assert again.outs["status"]["placed_region"] == "europe-west4"
    assert len(_all_jobs(short, inputs["identity"])) == 2  # the failed us-east4 one, and it


def test_no_candidate_left_names_each_region_and_what_stopped_it(short):
    provider = configured(short.endpoint, cancelTimeout="20", retryDeadline="20")
    raw = placed_inputs(wait_for="running")
    raw["placement"] = raw["placement"][:2]
    with pytest.raises(JobOperationError) as info:
        provider.create(provider.check({}, raw).inputs)
    message = str(info.value)
    assert "no candidate region took the job" in message
    assert "us-central1: quota refused" in message
    assert "us-east4: no capacity" in message


def test_a_tuning_job_is_placed_the_same_way(short):
    provider = configured(
        short.endpoint, provider_class=TuningJobProvider, cancelTimeout="20", retryDeadline="20"
    )
    inputs = provider.check({}, placed_inputs(tuning=True, wait_for="running")).inputs
    result = provider.create(inputs)
    assert "/locations/europe-west4/hyperparameterTuningJobs/" in result.id
    assert result.outs["status"]["placed_region"] == "europe-west4"
    jobs = _all_jobs(short, inputs["identity"], tuning=True)
    assert sorted(j.state.name for j in jobs if j.name != result.id) == ["JOB_STATE_FAILED"]


# -- without the API -----------------------------------------------------------------------


def test_capacity_kinds_set_the_strategy_and_the_reservation():
    spec = {"workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"}}]}
    assert with_capacity(spec, "spot")["scheduling"] == {"strategy": "SPOT"}
    assert "scheduling" not in with_capacity(
        {**spec, "scheduling": {"strategy": "SPOT"}}, "on-demand"
    )
    named = with_capacity(spec, "reservation:r1")["workerPoolSpecs"][0]["machineSpec"]
    assert named["reservationAffinity"]["values"] == ["r1"]
    trial = with_capacity({"trialJobSpec": spec}, "flex-start", under="trialJobSpec")
    assert trial["trialJobSpec"]["scheduling"] == {"strategy": "FLEX_START"}
    assert spec == {"workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"}}]}


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ([], "placement"),
        (["us-central1", "us-central1"], "placement[1].region"),
        ([{"region": "us-east4", "capacity": ["cheap"]}], "placement[0].capacity[0]"),
        ([{"region": "us-east4", "zone": "a"}], "placement[0].zone"),
        ([{"region": f"r{i}", "capacity": ["spot", "on-demand"]} for i in range(20)], "placement"),
    ],
)
def test_bad_candidate_lists_name_the_field(value, path):
    _, failures = parse_placement(value)
    assert path in [p for p, _ in failures]


def test_a_candidate_without_the_gpu_is_skipped_and_none_left_is_refused():
    from components.lifecycle._check import CUSTOM_JOB_SPEC

    inputs = placed_inputs()
    inputs["placement"] = [{"region": "us-south1"}, {"region": "europe-west4"}]
    outcome, fine = check_placed(inputs, target="local", kind=CUSTOM_JOB_SPEC)
    assert outcome.failures == []
    assert [a.region for a in fine] == ["europe-west4"]
    assert outcome.inputs["region"] == "us-central1"  # the declared region stays
    inputs["placement"] = [{"region": "us-south1"}]
    outcome, fine = check_placed(inputs, target="local", kind=CUSTOM_JOB_SPEC)
    assert fine == []
    assert any(p == "placement" and "us-south1" in r for p, r, _ in outcome.failures)


def test_the_run_hash_covers_the_candidates_not_the_region():
    placement = [{"region": r, "capacity": []} for r in REGIONS]
    assert run_region("us-central1", None) == "us-central1"
    assert run_region("us-central1", placement) == run_region("europe-west4", placement)
    assert run_region("us-central1", placement) != run_region("us-central1", placement[:2])


def test_changing_the_candidates_replaces_only_when_the_job_region_leaves_the_list():
    status = {"job_name": "projects/p/locations/us-east4/customJobs/1"}
    olds = {
        "region": "us-central1",
        "placement": [{"region": "us-central1"}, {"region": "us-east4"}],
        "status": status,
    }
    kept = {
        "region": "europe-west4",
        "placement": [{"region": "europe-west4"}, {"region": "us-east4"}],
    }
    assert placement_replaces(olds, kept, ["region"]) == []
    gone = {"region": "europe-west4", "placement": [{"region": "europe-west4"}]}
    assert placement_replaces(olds, gone, ["region"]) == ["placement"]


def test_a_capacity_refusal_is_told_apart_from_quota_and_rate_limits():
    from google.api_core import exceptions as gexc

    assert capacity_refusal(gexc.TooManyRequests("Resources are insufficient in region: x."))  # type: ignore[no-untyped-call]
    assert not capacity_refusal(gexc.TooManyRequests("Quota exceeded for quota metric 'x'"))  # type: ignore[no-untyped-call]
    assert not capacity_refusal(gexc.BadRequest("Resources are insufficient in region: x."))  # type: ignore[no-untyped-call]


def test_the_provider_diff_updates_a_kept_region_and_replaces_a_dropped_one():
    from components._provider import TrainingJobProvider

    provider = TrainingJobProvider()
    olds = placed_inputs()
    olds["status"] = {"job_name": "projects/p/locations/us-east4/customJobs/1"}
    kept = dict(olds, region="us-east4", placement=[{"region": "us-east4", "capacity": []}])
    result = provider.diff("id", olds, kept)
    assert result.changes is True and not result.replaces
    dropped = dict(olds, region="europe-west4", placement=[{"region": "europe-west4"}])
    assert provider.diff("id", olds, dropped).replaces == ["placement"]
    assert provider.diff("id", olds, dict(olds)).changes is False


def test_a_job_taken_over_cannot_name_candidates():
    from components.lifecycle._check import CUSTOM_JOB_SPEC

    inputs = placed_inputs(existing_job="projects/local-training/locations/us-east4/customJobs/1")
    outcome, _ = check_placed(inputs, target="local", kind=CUSTOM_JOB_SPEC)
    assert any(p == "existing_job" and "runs where it is" in r for p, r, _ in outcome.failures)


def test_an_outage_during_placement_starts_nothing_and_the_next_create_places_it(short):
    provider = configured(short.endpoint, cancelTimeout="20", retryDeadline="2")
    inputs = provider.check({}, placed_inputs(wait_for="running")).inputs
    short.set_faults(unavailable_rate=1.0)
    try:
        with pytest.raises(JobOperationError) as info:
            provider.create(inputs)
    finally:
        short.clear_faults()
    assert "could not be reached" in str(info.value)
    assert _all_jobs(short, inputs["identity"]) == []
    result = provider.create(inputs)
    assert result.outs["status"]["placed_region"] == "europe-west4"


def test_a_capacity_refusal_at_create_is_not_retried_and_moves_the_job_on():
    with running_emulator(
        *SIMULATE_ARGS, "--no-capacity", f"{T4}@us-central1", "--no-capacity-at-create"
    ) as server:
        provider = configured(server.endpoint, cancelTimeout="20", retryDeadline="60")
        inputs = provider.check({}, placed_inputs(wait_for="running")).inputs
        started = time.monotonic()
        result = provider.create(inputs)
        assert time.monotonic() - started < 20  # a retried 429 would take retryDeadline
        first, second = result.outs["status"]["placement_attempts"][:2]
        assert first["job_name"] is None
        assert first["stopped_by"].startswith("no capacity at create (")
        assert "Resources are insufficient in region: us-central1" in first["stopped_by"]
        assert "/locations/us-east4/" in result.id and second["stopped_by"] is None
