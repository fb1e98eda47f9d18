"""A dynamic job's project and region (``components.dynamic._job_resource``): its argument,
``gcp:project``/``gcp:region``, the spec's own, then the environment pulumi-gcp reads
(``GOOGLE_PROJECT``... ``GOOGLE_REGION``...), the same lookup as the plugin's
(``PlaceSources.from_environment``). The environment comes last, so a stack that sets any
other source registers the inputs it always did; an unset one's error names every source.
The ``training:jobs`` program reads the environment as its stack's ``gcp:*``: every job's place,
over the spec's own (the last test)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from components.config import ConfigError
from components.lifecycle._settings import PROJECT_ENV, REGION_ENV
from components.training_job import TrainingJob, TrainingJobInputError
from tests.program.harness import JOB_TYPE, REPO, run_program_of, stack_config
from tests.program.test_resource_alone import _declare, _job

LOCAL = {"training:endpoint": "http://127.0.0.1:8642"}
PACKAGE = ["gs://bucket/trainer-0.1.tar.gz"]


@pytest.fixture(autouse=True)
def _no_place_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in (*PROJECT_ENV, *REGION_ENV):
        monkeypatch.delenv(name, raising=False)
    yield


def _registered(config: dict[str, str], **args: Any) -> dict[str, Any]:
    """The project and region the job registers with ``config`` and ``args``."""
    make = lambda n: TrainingJob(n, spec=args.pop("spec", _job(PACKAGE)), **args)  # noqa: E731
    inputs = run_program_of(_declare(train=make), {**LOCAL, **config}).one(JOB_TYPE).inputs
    return {"project": inputs.get("project"), "region": inputs.get("region")}


def test_project_and_region_from_the_environment_in_pulumi_gcp_s_order(monkeypatch, logs):
    monkeypatch.setenv("GCLOUD_PROJECT", "third-project")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "second-project")
    monkeypatch.setenv("CLOUDSDK_COMPUTE_REGION", "us-east4")
    assert _registered({}) == {"project": "second-project", "region": "us-east4"}
    monkeypatch.setenv("GOOGLE_PROJECT", "first-project")
    monkeypatch.setenv("GOOGLE_REGION", "us-west1")
    assert _registered({}) == {"project": "first-project", "region": "us-west1"}


def test_every_other_source_comes_before_the_environment(monkeypatch, logs):
    monkeypatch.setenv("GOOGLE_PROJECT", "from-env")
    monkeypatch.setenv("GOOGLE_REGION", "us-west1")
    config = {"gcp:project": "from-config", "gcp:region": "us-central1"}
    assert _registered(config) == {"project": "from-config", "region": "us-central1"}
    assert _registered(config, project="given-project", region="europe-west4") == {
        "project": "given-project",
        "region": "europe-west4",
    }
    in_spec = {**_job(PACKAGE), "project": "spec-project", "region": "us-east1"}
    assert _registered({}, spec=in_spec) == {"project": "spec-project", "region": "us-east1"}


def test_a_spec_not_known_yet_takes_the_environment_once_it_is(monkeypatch, logs):
    monkeypatch.setenv("GOOGLE_PROJECT", "from-env")
    monkeypatch.setenv("GOOGLE_REGION", "us-west1")
    spec = pulumi.Output.from_input({**_job(PACKAGE), "region": "us-east1"})
    assert _registered({}, spec=spec) == {"project": "from-env", "region": "us-east1"}


def test_an_unset_project_and_region_name_every_source_the_door_reads(logs):
    with pytest.raises(TrainingJobInputError) as info:
        run_program_of(_declare(train=lambda n: TrainingJob(n, spec=_job(PACKAGE))), LOCAL)
    assert str(info.value).splitlines()[1:3] == [
        "  project: is not set: pass project=, set gcp:project in the stack configuration, "
        "set project in the job's spec or set GOOGLE_PROJECT, GOOGLE_CLOUD_PROJECT, "
        "GCLOUD_PROJECT or CLOUDSDK_CORE_PROJECT in the environment",
        "  region: is not set: pass region=, set gcp:region in the stack configuration, set "
        "region in the job's spec or set GOOGLE_REGION, GCLOUD_REGION or "
        "CLOUDSDK_COMPUTE_REGION in the environment",
    ]


def test_a_bad_value_from_the_environment_is_named_by_its_variable(monkeypatch, logs):
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "Not_A_Project")
    with pytest.raises(TrainingJobInputError) as info:
        _registered({"gcp:region": "us-central1"})
    assert "\n  GOOGLE_CLOUD_PROJECT: 'Not_A_Project' is not a project ID" in str(info.value)


def test_a_region_from_the_environment_is_named_by_its_variable_unless_candidates_replace_it(
    monkeypatch, logs
):
    monkeypatch.setenv("GOOGLE_REGION", "mars-central9")
    config = {"gcp:project": "my-project"}
    with pytest.raises(TrainingJobInputError) as info:
        _registered(config)
    assert "\n  GOOGLE_REGION: unknown region 'mars-central9'" in str(info.value)
    # With candidate regions the job's region is the first candidate, not the variable's.
    monkeypatch.setenv("GOOGLE_REGION", "us-central1")
    with pytest.raises(TrainingJobInputError) as info:
        _registered(config, regions=["mars-central9", "venus-east1"])
    assert "\n  region: unknown region 'mars-central9'" in str(info.value)
    assert "GOOGLE_REGION" not in str(info.value)


def _stack_without_place(spec: Path) -> dict[str, str]:
    """The local stack with no gcp:project/gcp:region and one job, the spec at ``spec``."""
    config = stack_config("local", {"training:jobs": [{"name": "train", "spec": str(spec)}]})
    for key in ("gcp:project", "gcp:region"):
        config.pop(key)
    return config


def test_the_jobs_program_takes_its_place_from_the_environment_for_every_job(
    monkeypatch, logs, tmp_path
):
    # The stack's place, from the environment, is every job's (as gcp:* would be), over the
    # spec's own: the infra and the preview's prices and quotas use the same place.
    spec = tmp_path / "job.yaml"
    document = yaml.safe_load((REPO / "stacks/jobs/local-trainer.yaml").read_text())
    trainer = str(REPO / "examples" / "trainer")
    document["workerPoolSpecs"][0]["pythonPackageSpec"]["packageUris"] = [trainer]
    spec.write_text(yaml.safe_dump({**document, "region": "us-east1", "project": "spec-project"}))
    from components.program import run as run_program

    with pytest.raises(ConfigError) as unset:
        run_program_of(run_program, _stack_without_place(spec))
    assert str(unset.value) == (
        "gcp:project: not set (pulumi config set gcp:project MY-PROJECT, or set "
        "GOOGLE_PROJECT, GOOGLE_CLOUD_PROJECT, GCLOUD_PROJECT or CLOUDSDK_CORE_PROJECT in the "
        "environment)"
    )
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-project")
    monkeypatch.setenv("GCLOUD_REGION", "europe-west4")
    run = run_program_of(run_program, _stack_without_place(spec))
    inputs = run.one(JOB_TYPE).inputs
    assert (inputs["project"], inputs["region"]) == ("env-project", "europe-west4")
    assert "europe-west4" in "\n".join(logs["info"])  # the preview priced it there
    # A bad value is named by its variable, as gcp:region would be by its key.
    monkeypatch.setenv("GCLOUD_REGION", "mars-central9")
    with pytest.raises(TrainingJobInputError) as info:
        run_program_of(run_program, _stack_without_place(spec))
    assert "\n  GCLOUD_REGION: unknown region 'mars-central9'" in str(info.value)


@pytest.mark.parametrize(
    ("kept", "environment"),
    [
        ({}, {"GOOGLE_PROJECT": "env-project", "GOOGLE_REGION": "us-east1"}),
        ({"gcp:project": "env-project"}, {"GCLOUD_REGION": "us-east1"}),
        ({"gcp:region": "us-east1"}, {"CLOUDSDK_CORE_PROJECT": "env-project"}),
    ],
)
def test_the_cloud_stack_s_infra_and_jobs_share_the_place_from_the_environment(
    monkeypatch, logs, kept, environment
):
    # The dev stack (Vertex AI): its bucket, service account and jobs all in one place, each
    # half of it from gcp:* or the environment.
    from components.program import run as run_program

    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    config = stack_config("dev")
    for key in ("gcp:project", "gcp:region"):
        config.pop(key)
    run = run_program_of(run_program, {**config, **kept})
    job = run.one(JOB_TYPE).inputs
    assert (job["project"], job["region"]) == ("env-project", "us-east1")
    bucket = run.one("gcp:storage/bucket:Bucket").inputs
    assert (bucket["project"], bucket["location"]) == ("env-project", "US-EAST1")
    account = run.one("gcp:serviceaccount/account:Account").inputs
    assert account["project"] == "env-project"
    assert any("us-east1" in line for line in logs["info"])  # the cost line's region


def test_a_job_with_candidate_regions_is_priced_in_its_first_not_the_stack_s(logs):
    from components.program import run as run_program

    job = {"name": "train", "spec": "stacks/jobs/local-trainer.yaml"}
    run_program_of(
        run_program,
        stack_config("local", {"training:jobs": [{**job, "regions": ["us-west1", "us-east1"]}]}),
    )
    cost = next(line for line in logs["info"] if line.startswith("estimated cost per job"))
    assert "in us-west1" in cost and "us-central1" not in cost  # the stack's region


@pytest.mark.parametrize(
    "jobs",
    [[], [{"name": "t4", "spec": "stacks/jobs/dev-t4-spot.yaml", "regions": ["us-central1"]}]],
)
def test_the_cloud_stack_s_region_is_checked_where_no_job_runs_in_it(monkeypatch, logs, jobs):
    # Its bucket goes there: no job's own check names a bad one when every job has
    # candidate regions, or when there is none.
    from components.program import run as run_program

    config = stack_config("dev", {"training:jobs": jobs, "gcp:region": "mars-central9"})
    with pytest.raises(ConfigError) as bad:
        run_program_of(run_program, config)
    assert str(bad.value).startswith("gcp:region: unknown region 'mars-central9'")
    config.pop("gcp:region")
    monkeypatch.setenv("GOOGLE_REGION", "us-centrall1")
    with pytest.raises(ConfigError) as bad:
        run_program_of(run_program, config)
    assert str(bad.value) == (
        "GOOGLE_REGION: unknown region 'us-centrall1' (did you mean us-central1 or "
        "me-central2 or europe-central2?)"
    )


def test_a_placed_job_s_candidates_are_not_refused_for_the_package_its_infra_stages(logs):
    # The dev stack stages its trainer (training:trainerSource) and fills each job's package
    # at create: no candidate is skipped for a package the plan does not name yet.
    from components.program import run as run_program

    job = {"name": "t4", "spec": "stacks/jobs/dev-t4-spot.yaml"}
    placed = {**job, "regions": ["us-central1", "us-west1"], "capacity": ["spot", "on-demand"]}
    run_program_of(run_program, stack_config("dev", {"training:jobs": [placed]}))
    lines = next(line for line in logs["info"] if line.startswith("placement of t4"))
    assert "skip" not in lines and "packageUris" not in lines
    assert "try first us-central1" in lines


def test_a_candidate_without_the_job_s_gpu_is_still_skipped(logs):
    # Only what the spec lacks everywhere is left to the job's own check: a region that has
    # no T4 for training refuses the attempt, the package staged at create does not.
    from components.program import run as run_program

    job = {"name": "t4", "spec": "stacks/jobs/dev-t4-spot.yaml"}
    placed = {**job, "regions": ["europe-west6", "us-central1"]}
    run_program_of(run_program, stack_config("dev", {"training:jobs": [placed]}))
    lines = next(line for line in logs["info"] if line.startswith("placement of t4"))
    assert "skip europe-west6: workerPoolSpecs[0].machineSpec.acceleratorType" in lines
    assert "packageUris" not in lines and "try first us-central1" in lines


def test_a_huge_value_from_the_environment_makes_a_short_message(monkeypatch, logs):
    monkeypatch.setenv("GOOGLE_REGION", "x\x1b[31m" * 100_000)
    monkeypatch.setenv("GOOGLE_PROJECT", "p" * 100_000)
    with pytest.raises(TrainingJobInputError) as info:
        _registered({})
    assert len(str(info.value)) < 2_000
    assert "\x1b" not in str(info.value)  # written as an escape, never sent to the terminal
