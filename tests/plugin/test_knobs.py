"""The dynamic resources' knobs through the plugin: ``regions``/``capacity`` (the core's
``placement``), ``continueLastRun`` and ``deleteRecordOnDelete``, on the same core rules."""

from __future__ import annotations

from typing import Any

from pulumi.provider.experimental.provider import (
    CheckRequest,
    ConfigureRequest,
    DiffRequest,
    PropertyDiffKind,
)

from components.lifecycle._wire import CONTINUE_LAST_RUN, DELETE_RECORD, PLACEMENT, REGION
from components.plugin._provider import GpuTrainingProvider
from components.plugin._shape import TRAINING, core_inputs, outputs_of_status, status_of_outputs
from components.plugin._values import wrap_map
from tests.e2e._plugin import training_job
from tests.plugin.conftest import run_isolated

URN = "urn:pulumi:dev::proj::gpu-training:vertex:TrainingJob::train"
HELD = "projects/local-training/locations/us-east4/customJobs/7"


def _provider() -> GpuTrainingProvider:
    provider = GpuTrainingProvider()
    settings = {"project": "local-training", "region": "us-central1"}
    run_isolated(provider.configure(ConfigureRequest({}, wrap_map(settings), True, True)))
    return provider


def _failures(props: dict[str, Any]) -> dict[str, str]:
    response = run_isolated(_provider().check(CheckRequest(URN, {}, wrap_map(props), b"")))
    return {f.property: f.reason for f in response.failures or []}


def test_regions_and_capacity_are_the_cores_placement_its_first_candidate_the_region() -> None:
    props = {
        **training_job(),
        "regions": ["us-east4", {"region": "europe-west4", "capacity": ["on-demand"]}],
        "capacity": ["spot"],
        "continueLastRun": True,
        "deleteRecordOnDelete": True,
    }
    inputs = core_inputs(TRAINING, props, project="p", region="us-central1", display_name="t")
    assert inputs[PLACEMENT] == [
        {"region": "us-east4", "capacity": ["spot"]},
        {"region": "europe-west4", "capacity": ["on-demand"]},
    ]
    assert inputs[REGION] == "us-east4"
    assert inputs[CONTINUE_LAST_RUN] is True and inputs[DELETE_RECORD] is True
    assert "regions" not in inputs["spec"] and "capacity" not in inputs["spec"]
    assert _failures(props) == {}


def test_bad_regions_or_capacity_fail_check_on_the_field() -> None:
    job = training_job()
    assert _failures({**job, "regions": ["us-east4", "us-east4"]}) == {
        "regions[1].region": "us-east4 is named twice"
    }
    assert _failures({**job, "regions": ["us-east4"], "capacity": ["cheap"]}).keys() == {
        "capacity[0]"
    }
    assert _failures({**job, "capacity": ["spot"]}) == {
        "capacity": "needs regions (the candidate regions)"
    }
    assert _failures({**job, "continueLastRun": "yes"}) == {
        "continueLastRun": "must be true or false"
    }


def test_the_placement_outputs_are_camel_case_and_read_back() -> None:
    status = {
        "job_name": HELD,
        "placed_region": "us-east4",
        "placed_capacity": "as in the spec",
        "placement_attempts": [
            {"region": "us-central1", "capacity": None, "job_name": None, "stopped_by": "quota"},
            {"region": "us-east4", "capacity": None, "job_name": HELD, "stopped_by": None},
        ],
    }
    outputs = outputs_of_status(TRAINING, status)
    assert outputs["placedRegion"] == "us-east4"
    assert outputs["placementAttempts"][0] == {
        "region": "us-central1",
        "capacity": None,
        "jobName": None,
        "stoppedBy": "quota",
    }
    assert status_of_outputs(TRAINING, outputs) == status


def _diff(old_regions: list[str], new_regions: list[str]) -> Any:
    job = training_job()
    state = {**job, "regions": old_regions, "name": HELD, "project": "local-training"}
    state["region"] = old_regions[0]
    request = DiffRequest(URN, HELD, wrap_map(state), wrap_map({**job, "regions": new_regions}), [])
    return run_isolated(_provider().diff(request))


def test_new_candidates_that_still_name_the_jobs_region_update_others_replace() -> None:
    kept = _diff(["us-central1", "us-east4"], ["europe-west4", "us-east4"])
    assert kept.changes and kept.replaces == []
    assert kept.detailed_diff["regions[0]"].kind == PropertyDiffKind.UPDATE
    moved = _diff(["us-central1", "us-east4"], ["europe-west4"])
    assert moved.changes and "regions" in moved.replaces


def test_a_replace_with_continue_last_run_stops_the_old_job_first() -> None:
    """Issue 42 item 9: the new run continues in the old one's directory: the old job is
    cancelled and stopped before the new one starts (delete before replace)."""
    old = {**training_job(), "project": "local-training", "region": "us-central1"}
    new = training_job(machine_type="n1-standard-8")

    def diff(**knobs: Any) -> Any:
        request = DiffRequest(URN, HELD, wrap_map(old), wrap_map({**new, **knobs}), [])
        return run_isolated(_provider().diff(request))

    assert diff().replaces and diff().delete_before_replace is False
    assert diff(continueLastRun=True).delete_before_replace is True
