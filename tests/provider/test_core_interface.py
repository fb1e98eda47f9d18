"""The core's typed interface (components.core): the answers both doors translate."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Any

import pytest

from components._provider import TrainingJobProvider
from components._tuning_provider import TuningJobProvider
from components.core._jobs import REPLACE_REASONS, TRAINING_JOB, JobCore
from components.core._results import (
    Checked,
    Diff,
    JobCost,
    Note,
    Notes,
    Problem,
    Replace,
    Shortfall,
    State,
)
from components.core._tuning import TUNING_JOB
from components.lifecycle._settings import ProviderSettings
from tests.provider.conftest import configured, job_inputs


def _core() -> JobCore:
    return JobCore(
        TRAINING_JOB, ProviderSettings.read({"training:endpoint": "http://127.0.0.1:9"}.get)
    )


def test_a_check_answers_problems_at_their_property_paths():
    inputs = job_inputs()
    inputs["spec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorCount"] = 3
    checked = _core().check(inputs)
    assert isinstance(checked, Checked) and not checked.ok
    paths = [p.path for p in checked.problems]
    assert any(p.startswith("workerPoolSpecs[0].machineSpec") for p in paths), paths
    assert all(isinstance(p, Problem) and p.reason for p in checked.problems)


def _gpu_count(inputs: dict[str, Any]) -> str:
    machine = inputs["spec"]["workerPoolSpecs"][0]["machineSpec"]
    machine.update(machineType="n1-standard-8", acceleratorType="NVIDIA_TESLA_T4")
    machine["acceleratorCount"] = 3
    return "workerPoolSpecs[0].machineSpec.acceleratorCount"


def _region(inputs: dict[str, Any]) -> str:
    inputs["region"] = "us-centrall1"
    return "region"


def _trial_machine(inputs: dict[str, Any]) -> str:
    machine = inputs["spec"]["trialJobSpec"]["workerPoolSpecs"][0]["machineSpec"]
    machine["machineType"] = "n1-standard-9"
    return "trialJobSpec.workerPoolSpecs[0].machineSpec.machineType"


@pytest.mark.parametrize(
    ("spoil", "tuning"), [(_gpu_count, False), (_region, False), (_trial_machine, True)]
)
def test_a_problem_keeps_its_suggestion_apart_and_is_shown_as_before(
    spoil: Callable[[dict[str, Any]], str], tuning: bool
):
    inputs = job_inputs(tuning=tuning)
    path = spoil(inputs)
    core = JobCore(TUNING_JOB) if tuning else _core()
    [problem] = [p for p in core.check(dict(inputs)).problems if p.path == path]
    assert problem.suggestion and problem.reason
    assert problem.suggestion not in problem.reason and not problem.reason.endswith(")")
    # The wording users saw when the suggestion was part of the reason.
    assert problem.text == f"{problem.reason} ({problem.suggestion})"
    door = configured(
        "http://127.0.0.1:9", provider_class=TuningJobProvider if tuning else TrainingJobProvider
    )
    answered = {f.property: f.reason for f in door.check({}, inputs).failures}
    assert answered[path] == problem.text


def test_a_problem_without_a_suggestion_is_its_reason_alone():
    assert Problem("waitFor", "must be a string").text == "must be a string"


def test_a_valid_check_is_what_the_dynamic_provider_answers():
    inputs = job_inputs()
    checked = _core().check(dict(inputs))
    assert checked.ok and checked.problems == ()
    answered = configured("http://127.0.0.1:9").check({}, dict(inputs))
    assert answered.failures == [] and answered.inputs == checked.inputs


def test_a_diff_names_each_replaced_path_and_why():
    core = _core()
    olds = core.check(job_inputs()).inputs
    news = core.check({**job_inputs(), "region": "europe-west4"}).inputs
    diff = core.diff(olds, news)
    assert isinstance(diff, Diff) and diff.changes
    assert Replace("region", REPLACE_REASONS["region"]) in diff.replaces
    assert "region" in diff.replaced_paths
    assert core.diff(olds, dict(olds)) == Diff(changes=False)


def test_an_update_is_the_jobs_state_with_its_status_kept():
    core = JobCore(TUNING_JOB)
    olds = {"project": "p", "region": "r", "status": {"state": "JOB_STATE_RUNNING"}}
    news = {"project": "p", "region": "r", "wait_for": "running"}
    updated = core.update("job-1", olds, news)
    assert isinstance(updated, State) and updated.id == "job-1" and not updated.gone
    assert updated.status["state"] == "JOB_STATE_RUNNING"
    assert State("", {}).gone


def test_notes_are_kept_as_data():
    notes = Notes()
    notes("warning", "short of quota")
    notes("info", "estimated cost")
    assert [(n.severity, n.text) for n in notes.said] == [
        ("warning", "short of quota"),
        ("info", "estimated cost"),
    ]


def test_every_answer_is_a_plain_dataclass():
    for answer in (Checked, Diff, Problem, Replace, State, Notes, Note, JobCost, Shortfall):
        assert is_dataclass(answer)
        assert all("pulumi" not in str(f.type) for f in fields(answer))


def test_a_jobs_preview_notes_come_back_as_data():
    from components.core._preview import PreviewSettings, Say, job_notes
    from components.rules._catalog import Catalog, load_catalog
    from components.rules._spec import JobSpec

    spec = JobSpec.parse(job_inputs()["spec"])
    settings = PreviewSettings(
        project="my-project", region="us-central1", endpoint=None, quota="off", live_prices=False
    )
    asked: list[Say] = []

    def catalog(say: Say) -> Catalog:
        asked.append(say)
        return load_catalog()

    notes, shortfalls = job_notes("train", spec, settings, None, catalog=catalog)
    assert shortfalls == [] and len(asked) == 1  # quota off: nothing read, nothing short
    [cost] = [n for n in notes if n.text.startswith("estimated cost per job:")]
    assert cost.severity == "info" and "train:" in cost.text
    # The cost note's figures, as data: the price per hour and its ceiling over the timeout.
    assert cost.topic == "cost" and cost.cost is not None
    assert (cost.cost.region, cost.cost.capacity) == ("us-central1", "on_demand")
    hourly, ceiling = cost.cost.hourly, cost.cost.ceiling
    assert hourly.low is not None and hourly.high is not None
    assert hourly.low == hourly.high > 0
    timeout = spec.scheduling.timeout if spec.scheduling else None
    hours = timeout.total_seconds() / 3600 if timeout else 7 * 24
    assert ceiling.high == pytest.approx(hourly.high * hours)
    assert f"${hourly.high:.2f}/h" in cost.text


def test_a_placed_jobs_notes_hold_its_placement_plan():
    from components.core._placement import declared_placement
    from components.core._preview import PreviewSettings, job_notes
    from components.rules._catalog import load_catalog
    from components.rules._spec import JobSpec

    spec = JobSpec.parse(job_inputs()["spec"])
    settings = PreviewSettings(
        project="my-project", region="us-central1", endpoint=None, quota="off", live_prices=False
    )
    placement = declared_placement(["us-central1", "europe-west4"])
    notes, _ = job_notes("train", spec, settings, placement, catalog=lambda say: load_catalog())
    assert {"cost", "placement"} <= {n.topic for n in notes} and "quota" not in {
        n.topic for n in notes
    }
    [plan] = [n for n in notes if n.topic == "placement"]
    assert "us-central1" in plan.text and "europe-west4" in plan.text


def test_a_bad_setting_names_its_key_and_reason_apart():
    from components.lifecycle._settings import SettingError

    with pytest.raises(SettingError) as raised:
        ProviderSettings.read({"training:endpoint": "ftp://host: 1"}.get)
    assert raised.value.key == "training:endpoint"
    assert raised.value.reason.startswith("expected http(s)://HOST:PORT, got 'ftp://host: 1'")
    assert str(raised.value) == f"{raised.value.key}: {raised.value.reason}"


@pytest.mark.parametrize(
    ("regions", "capacity", "path"),
    [
        (["us-central1"], "flex", "capacity[0]"),
        ("us-central1", None, "regions"),
        (
            ["us-central1", {"region": "europe-west4", "capacity": ["spot", "nope"]}],
            None,
            "regions[1].capacity[1]",
        ),
    ],
)
def test_bad_candidate_regions_name_the_field_and_reason_apart(regions, capacity, path):
    from components.core._placement import PlacementInputError, declared_placement

    with pytest.raises(PlacementInputError) as raised:
        declared_placement(regions, capacity)
    assert raised.value.path == path and raised.value.reason
    assert ": " not in raised.value.path


T4_QUOTA = "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"


def _t4_limits(us_central1: int) -> Any:
    """A project whose T4 training quota is ``us_central1`` there and 8 everywhere else, and
    its training vCPUs unlimited."""
    import json

    from components.costs._quota import QuotaLimits

    quota_id = "CustomModelTrainingT4GPUsPerProjectPerRegion"
    regions = {"us-central1": us_central1}
    cpus = {"quotaId": "CustomModelTrainingCPUsPerProjectPerRegion", "regions": {}, "default": -1}
    limits = {
        T4_QUOTA: {"quotaId": quota_id, "regions": regions, "default": 8},
        "aiplatform.googleapis.com/custom_model_training_cpus": cpus,
    }
    return QuotaLimits.from_json(json.dumps(limits))


def _t4_job() -> Any:
    from components.rules._spec import JobSpec

    inputs = job_inputs()
    machine = inputs["spec"]["workerPoolSpecs"][0]["machineSpec"]
    machine.update(machineType="n1-standard-8", acceleratorType="NVIDIA_TESLA_T4")
    machine["acceleratorCount"] = 2
    return JobSpec.parse(inputs["spec"])


def _t4_notes(placement: Any, us_central1: int) -> Any:
    """``job_notes`` of a T4 job under ``quota: error``, with ``us_central1`` T4s there."""
    from components.core._preview import PreviewSettings, job_notes
    from components.rules._catalog import load_catalog

    settings = PreviewSettings(
        project="my-project", region="us-central1", endpoint=None, quota="error", live_prices=False
    )
    return job_notes(
        "train",
        _t4_job(),
        settings,
        placement,
        catalog=lambda say: load_catalog(),
        read_limits=lambda endpoint, project, deadline: _t4_limits(us_central1),
    )


def test_a_quota_shortfall_comes_back_as_data():
    from components.core._results import Shortfall

    notes, shortfalls = _t4_notes(None, 1)
    [short] = shortfalls
    assert isinstance(short, Shortfall) and short.kind == "quota"
    assert (short.region, short.metric, short.need, short.limit) == (
        "us-central1",
        T4_QUOTA,
        2,
        1,
    )
    assert short.jobs == ("train",)
    assert short.request is not None and "--preferred-value=2" in short.request
    assert "europe-west4" in short.fits_in["train"] and "us-central1" not in short.fits_in["train"]
    # The words every door shows, made of the same figures.
    assert short.text.startswith(f"quota {T4_QUOTA} in us-central1: the job needs 2 at once")
    assert "the project's limit is 1" in short.text and short.request in short.text
    assert str(short) == short.text
    assert any(n.topic == "quota" and "SHORT" in n.text for n in notes)
    # With room for the job, nothing is short.
    assert _t4_notes(None, 2)[1] == []


def test_a_placed_job_that_fits_no_candidate_is_a_placement_shortfall():
    from components.core._placement import declared_placement

    [short] = _t4_notes(declared_placement(["us-central1"]), 0)[1]
    assert short.kind == "placement" and short.jobs == ("train",)
    assert short.metric is None and short.text.startswith(
        "train: no candidate region fits the quota now"
    )


def test_the_cores_cancel_ends_every_wait_of_the_process_with_its_reason() -> None:
    import threading

    from components.core._jobs import cancel_operations
    from components.lifecycle._interrupt import Interrupted, pause, reset

    ended: list[str] = []

    def wait() -> None:
        try:
            pause(60)
        except Interrupted as exc:
            ended.append(exc.reason)

    waits = [threading.Thread(target=wait) for _ in range(3)]
    try:
        for thread in waits:
            thread.start()
        cancel_operations()
        for thread in waits:
            thread.join(timeout=5)
        assert ended == ["pulumi was cancelled"] * 3
    finally:
        reset()
