"""The core's typed interface (components.core): the answers both doors translate."""

from __future__ import annotations

from dataclasses import fields, is_dataclass

from components.core._jobs import REPLACE_REASONS, TRAINING_JOB, JobCore
from components.core._results import Checked, Diff, Notes, Problem, Replace, State
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
    for answer in (Checked, Diff, Problem, Replace, State, Notes):
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
