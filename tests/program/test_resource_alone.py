"""A job resource declared in a program of one's own (no ``training:jobs``) gets what a
``training:jobs`` entry gets: local paths resolved against the program's directory, the local
trainer and its digest trigger, a cloud stack's infra wired in, the spec's image notes, its
cost line and its quota check (``components.core._preview``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pulumi
import pytest

from components.lifecycle._packaging import source_digest
from components.training_job import TrainingJob, TrainingJobInputError
from components.tuning_job import HyperparameterTuningJob
from tests.program.harness import (
    JOB_TYPE,
    REPO,
    TUNING_TYPE,
    StackRun,
    run_program_of,
    run_stack,
    stack_config,
)
from tests.program.test_quota_program import CPUS, T4_SPOT, _limits, _serve

LOCAL = {
    "gcp:project": "local-training",
    "gcp:region": "us-central1",
    "training:endpoint": "http://127.0.0.1:8642",
}
IMAGE = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest"


def _package(uris: list[str] | None = None, image: str = IMAGE) -> dict[str, Any]:
    package: dict[str, Any] = {
        "executorImageUri": image,
        "pythonModule": "trainer.task",
        "args": ["--epochs", "1"],
    }
    if uris is not None:
        package["packageUris"] = uris
    return package


def _job(uris: list[str] | None = None, image: str = IMAGE) -> dict[str, Any]:
    return {
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "n1-standard-4"},
                "replicaCount": 1,
                "pythonPackageSpec": _package(uris, image),
            }
        ],
        "scheduling": {"timeout": "600s"},
    }


def _tuning(uris: list[str]) -> dict[str, Any]:
    return {
        "maxTrialCount": 2,
        "parallelTrialCount": 2,
        "studySpec": {
            "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
            "parameters": [
                {"parameterId": "lr", "discreteValueSpec": {"values": [0.01, 0.1]}},
            ],
        },
        "trialJobSpec": _job(uris),
    }


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A program's directory of its own, with a trainer folder; the program runs there."""
    root = tmp_path / "my-project"
    shutil.copytree(
        REPO / "examples" / "trainer",
        root / "trainer",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    monkeypatch.chdir(root)
    return root


def _declare(**jobs: Any) -> Any:
    """A program that declares ``jobs`` (name → a function of the name making the resource)."""
    return lambda: SimpleNamespace(jobs={name: make(name) for name, make in jobs.items()})


def _spec(registration: Any) -> Any:
    return json.loads(registration.inputs["spec"])


def test_a_relative_package_path_is_the_program_s_and_its_code_a_trigger(project, logs):
    run = run_program_of(_declare(train=lambda n: TrainingJob(n, spec=_job(["trainer"]))), LOCAL)
    job = run.one(JOB_TYPE)
    package = _spec(job)["workerPoolSpecs"][0]["pythonPackageSpec"]
    assert package["packageUris"] == [str(project / "trainer")]
    digest = source_digest(project / "trainer")[:16]
    assert job.inputs["triggers"] == [f"package:trainer:{digest}"]


def test_given_triggers_come_first_and_the_package_s_follows(project, logs):
    make = lambda n: TrainingJob(n, spec=_job(["trainer"]), triggers=["data-v1"])  # noqa: E731
    job = run_program_of(_declare(train=make), LOCAL).one(JOB_TYPE)
    assert job.inputs["triggers"][0] == "data-v1"
    assert job.inputs["triggers"][1].startswith("package:trainer:")


def test_trainer_source_fills_the_pools_that_name_no_package(project, logs):
    make = lambda n: TrainingJob(n, spec=_job(), trainer_source="trainer")  # noqa: E731
    job = run_program_of(_declare(train=make), LOCAL).one(JOB_TYPE)
    package = _spec(job)["workerPoolSpecs"][0]["pythonPackageSpec"]
    assert package["packageUris"] == [str(project / "trainer")]


def test_a_trainer_source_that_is_no_folder_is_named(project, logs):
    make = lambda n: TrainingJob(n, spec=_job(), trainer_source="nowhere")  # noqa: E731
    record = StackRun()
    with pytest.raises(TrainingJobInputError, match="trainer_source: nowhere is not a directory"):
        run_program_of(_declare(train=make), LOCAL, record)
    assert record.by_type(JOB_TYPE) == []


def test_a_trainer_source_on_vertex_without_infra_says_how_to_stage_it(project, logs):
    config = {"gcp:project": "my-project", "gcp:region": "us-central1"}
    make = lambda n: TrainingJob(n, spec=_job(), trainer_source="trainer")  # noqa: E731
    record = StackRun()
    with pytest.raises(TrainingJobInputError, match="pass infra=TrainingInfra"):
        run_program_of(_declare(train=make), config, record)
    assert record.by_type(JOB_TYPE) == []


def test_a_trainer_source_for_a_spec_not_known_yet_is_refused(project, logs):
    spec = pulumi.Output.from_input(_job())
    make = lambda n: TrainingJob(n, spec=spec, trainer_source="trainer")  # noqa: E731
    with pytest.raises(TrainingJobInputError, match="need a spec known when the program runs"):
        run_program_of(_declare(train=make), LOCAL)


def test_the_resource_says_its_cost_and_checks_its_quota(project, monkeypatch, logs):
    calls = _serve(monkeypatch, _limits({CPUS: 8}))
    run_program_of(_declare(train=lambda n: TrainingJob(n, spec=_job(["trainer"]))), LOCAL)
    [costs] = [m for m in logs["info"] if m.startswith("estimated cost per job:")]
    assert "\n  train: " in costs and "in us-central1" in costs
    [table] = [m for m in logs["info"] if m.startswith("quota (")]
    assert "train: custom_model_training_cpus: need 4, limit 8: fits" in table
    assert [(endpoint.url, p) for endpoint, p, _ in calls] == [
        ("http://127.0.0.1:8642", "local-training")
    ]


def test_a_short_quota_fails_the_resource_before_it_is_registered(project, monkeypatch, logs):
    _serve(monkeypatch, _limits({CPUS: 2}))
    record = StackRun()
    with pytest.raises(TrainingJobInputError, match="quota is short") as info:
        run_program_of(
            _declare(train=lambda n: TrainingJob(n, spec=_job(["trainer"]))), LOCAL, record
        )
    assert "training:quota: warn" in str(info.value)
    assert record.by_type(JOB_TYPE) == []
    # ...and the stack's training:quota makes it a warning, read by the resource itself.
    run = run_program_of(
        _declare(train=lambda n: TrainingJob(n, spec=_job(["trainer"]))),
        {**LOCAL, "training:quota": "warn"},
    )
    assert len(run.by_type(JOB_TYPE)) == 1
    assert any("custom_model_training_cpus" in w and "limit is 2" in w for w in logs["warn"])


def test_the_stack_s_prices_price_the_resource(project, logs):
    run_program_of(
        _declare(train=lambda n: TrainingJob(n, spec=_job(["trainer"]))),
        {**LOCAL, "training:prices": "50", "training:quota": "off"},
    )
    [costs] = [m for m in logs["info"] if m.startswith("estimated cost per job:")]
    assert "-50% org discount" in costs
    assert not [m for m in logs["info"] + logs["warn"] if "quota" in m]


def test_a_tuning_job_alone_gets_the_same(project, monkeypatch, logs):
    _serve(monkeypatch, _limits({CPUS: 8}))
    make = lambda n: HyperparameterTuningJob(n, spec=_tuning(["trainer"]))  # noqa: E731
    job = run_program_of(_declare(tune=make), LOCAL).one(TUNING_TYPE)
    trial = _spec(job)["trialJobSpec"]
    assert trial["workerPoolSpecs"][0]["pythonPackageSpec"]["packageUris"] == [
        str(project / "trainer")
    ]
    assert job.inputs["triggers"][0].startswith("package:trainer:")
    [costs] = [m for m in logs["info"] if m.startswith("estimated cost per job:")]
    assert "\n  tune: " in costs
    [table] = [m for m in logs["info"] if m.startswith("quota (")]
    assert "need 8, limit 8: fits" in table  # two parallel trials of 4 vCPUs


def test_an_image_past_its_end_is_noted_for_an_inline_spec(project, logs):
    late = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-16.py310:latest"  # 2026-06-28
    run_program_of(
        _declare(train=lambda n: TrainingJob(n, spec=_job(["trainer"], image=late))),
        {**LOCAL, "training:quota": "off"},
    )
    assert any(
        m.startswith("train: vertex-ai/training/tf-cpu.2-16.py310:latest reached its end")
        for m in logs["info"]
    )


def test_a_spec_file_s_reading_notes_are_logged(project, logs):
    (project / "job.yaml").write_text(
        json.dumps(
            _job(["trainer"], image="gcr.io/cloud-aiplatform/training/tf-cpu.2-15.py310:latest")
        )
    )
    run_program_of(
        _declare(train=lambda n: TrainingJob(n, spec="job.yaml")),
        {**LOCAL, "training:quota": "off"},
    )
    assert any("an earlier name of a prebuilt training image" in m for m in logs["info"])


def _inputs(run: StackRun, typ: str) -> dict[str, dict[str, Any]]:
    return {r.name: r.inputs for r in run.by_type(typ)}


def test_the_local_stack_s_jobs_declared_alone_are_the_same_jobs(monkeypatch, logs):
    program = run_stack("local")
    config = stack_config("local")
    config.pop("training:jobs")

    def declare() -> Any:
        jobs = {
            "example-trainer": TrainingJob(
                "example-trainer",
                spec="stacks/jobs/local-trainer.yaml",
                wait_for="succeeded",
                wait_timeout=600.0,
            ),
            "example-tuning": HyperparameterTuningJob(
                "example-tuning",
                spec="stacks/jobs/local-tuning.yaml",
                wait_for="succeeded",
                wait_timeout=600.0,
            ),
        }
        return SimpleNamespace(jobs=jobs)

    monkeypatch.chdir(REPO)
    alone = run_program_of(declare, config, stack="local")
    assert _inputs(alone, JOB_TYPE) == _inputs(program, JOB_TYPE)
    assert _inputs(alone, TUNING_TYPE) == _inputs(program, TUNING_TYPE)


def test_the_dev_stack_s_job_with_its_infra_is_the_same_job(monkeypatch, logs):
    _serve(
        monkeypatch,
        _limits(
            {T4_SPOT: 4, "aiplatform.googleapis.com/custom_model_training_preemptible_cpus": 100}
        ),
    )
    program = run_stack("dev")
    config = stack_config("dev")
    config.pop("training:jobs")

    def declare() -> Any:
        from components.infra import TrainingInfra, TrainingInfraArgs

        infra = TrainingInfra(
            "training",
            TrainingInfraArgs(
                project="gpu-training-dev",
                region="us-central1",
                trainer_source=REPO / "examples" / "trainer",
                output_retention_days=30,
                force_destroy=True,
            ),
        )
        job = TrainingJob(
            "t4-spot",
            spec="stacks/jobs/dev-t4-spot.yaml",
            infra=infra,
            opts=pulumi.ResourceOptions(depends_on=[infra]),
        )
        return SimpleNamespace(jobs={"t4-spot": job})

    monkeypatch.chdir(REPO)
    alone = run_program_of(declare, config, stack="dev")
    assert _inputs(alone, JOB_TYPE) == _inputs(program, JOB_TYPE)
    spec = _spec(alone.one(JOB_TYPE))
    assert spec["baseOutputDirectory"].endswith("/jobs/t4-spot")
    assert spec["workerPoolSpecs"][0]["pythonPackageSpec"]["packageUris"][0].startswith("gs://")


def test_a_job_with_candidate_regions_alone_says_where_it_tries_first(project, monkeypatch, logs):
    """Placement's preview (each candidate's quota and price, where it tries first) comes from
    the resource, as for a ``training:jobs`` entry: no candidate's quota is in the table."""
    _serve(monkeypatch, _limits({CPUS: 8}))
    regions = ["us-central1", "europe-west4"]
    run = run_program_of(
        _declare(train=lambda n: TrainingJob(n, spec=_job(["trainer"]), regions=regions)),
        LOCAL,
    )
    [job] = run.by_type(JOB_TYPE)
    assert [c["region"] for c in job.inputs["placement"]] == regions
    [lines] = [m for m in logs["info"] if "try first" in m]
    assert "try first us-central1" in lines and "europe-west4" in lines
    assert not [m for m in logs["info"] if m.startswith("quota (")]
