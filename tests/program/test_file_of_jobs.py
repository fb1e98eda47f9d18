"""A training:jobs entry whose file holds several jobs (a Python file of Vertex AI SDK calls, a
notebook, a Pulumi program's AiCustomJobs) makes one job of each, under
``pulumi.runtime.Mocks`` (issue 44, items 4 and 9)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from components.config import ConfigError
from tests.program.harness import JOB_TYPE, REPO, run_stack

EXECUTOR = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest"
PACKAGE = json.dumps(str(REPO / "examples" / "trainer"))


def _job(name: str, machine: str) -> str:
    pool = {
        "machine_spec": {"machine_type": machine},
        "replica_count": 1,
        "python_package_spec": {
            "executor_image_uri": EXECUTOR,
            "package_uris": [str(REPO / "examples" / "trainer")],
            "python_module": "trainer.task",
        },
    }
    return f"aiplatform.CustomJob(display_name={name!r}, worker_pool_specs=[{pool!r}]).run()\n"


def test_each_job_of_a_python_file_is_a_job_of_the_stack(tmp_path: Path) -> None:
    path = tmp_path / "launch.py"
    path.write_text(
        "from google.cloud import aiplatform\n"
        + _job("Small Run", "n1-standard-4")
        + _job("large", "n1-standard-8")
    )
    run = run_stack("local", {"training:jobs": [{"name": "sdk", "spec": str(path)}]})
    jobs = {r.name: json.loads(r.inputs["spec"]) for r in run.by_type(JOB_TYPE)}
    assert sorted(jobs) == ["sdk-large", "sdk-small-run"]
    machines = {n: s["workerPoolSpecs"][0]["machineSpec"]["machineType"] for n, s in jobs.items()}
    assert machines == {"sdk-small-run": "n1-standard-4", "sdk-large": "n1-standard-8"}


def test_a_job_of_the_file_that_cannot_be_read_fails_the_program_naming_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "launch.py"
    path.write_text(
        "from google.cloud import aiplatform\n"
        + _job("ok", "n1-standard-4")
        + "aiplatform.CustomJob('bad', worker_pool_specs=make_pools()).run()\n"
    )
    with pytest.raises(ConfigError) as caught:
        run_stack("local", {"training:jobs": [{"name": "sdk", "spec": str(path)}]})
    message = str(caught.value)
    assert "1 of its jobs cannot run" in message
    assert "line 3: CustomJob bad" in message and "worker_pool_specs is computed" in message


def test_each_run_of_a_scripts_loop_is_a_job_of_the_stack(tmp_path: Path) -> None:
    path = tmp_path / "sweep.sh"
    path.write_text(
        "#!/bin/bash\nfor LR in 0.01 0.1; do\n"
        "  gcloud ai custom-jobs create --region=us-central1 --display-name=lr-$LR "
        "--worker-pool-spec=machine-type=n1-standard-4,replica-count=1,"
        f"container-image-uri={EXECUTOR} --args=--lr=$LR\ndone\n"
    )
    run = run_stack("local", {"training:jobs": [{"name": "sweep", "spec": str(path)}]})
    jobs = {r.name: json.loads(r.inputs["spec"]) for r in run.by_type(JOB_TYPE)}
    assert sorted(jobs) == ["sweep-lr-0-01", "sweep-lr-0-1"]
    args = {n: s["workerPoolSpecs"][0]["containerSpec"]["args"] for n, s in jobs.items()}
    assert args == {"sweep-lr-0-01": ["--lr=0.01"], "sweep-lr-0-1": ["--lr=0.1"]}


def _typescript_resource(name: str, machine: str) -> str:
    return (
        f'new gcp.vertex.AiCustomJob("{name}", {{ displayName: "{name}", jobSpec: {{\n'
        f'  workerPoolSpecs: [{{ machineSpec: {{ machineType: "{machine}" }}, replicaCount: 1,\n'
        f'    pythonPackageSpec: {{ executorImageUri: "{EXECUTOR}", packageUris: [{PACKAGE}],\n'
        '      pythonModule: "trainer.task" } }] } });\n'
    )


def _yaml_resource(name: str, machine: str) -> str:
    return (
        f"  {name}:\n    type: gcp:vertex/aiCustomJob:AiCustomJob\n    properties:\n"
        f"      displayName: {name}\n      jobSpec:\n        workerPoolSpecs:\n"
        f"          - {{machineSpec: {{machineType: {machine}}}, replicaCount: 1,\n"
        f"             pythonPackageSpec: {{executorImageUri: {EXECUTOR}, "
        f"packageUris: [{PACKAGE}], pythonModule: trainer.task}}}}\n"
    )


@pytest.mark.parametrize(
    ("name", "header", "resource"),
    [
        ("index.ts", 'import * as gcp from "@pulumi/gcp";\n', _typescript_resource),
        (
            "Pulumi.yaml",
            "name: training\nruntime: yaml\nresources:\n  bucket:\n    type: gcp:storage:Bucket\n",
            _yaml_resource,
        ),
    ],
)
def test_each_ai_custom_job_of_a_pulumi_program_is_a_job_of_the_stack(
    tmp_path: Path, name: str, header: str, resource: Callable[[str, str], str]
) -> None:
    path = tmp_path / name
    path.write_text(
        header + resource("small", "n1-standard-4") + resource("large", "n1-standard-8")
    )
    run = run_stack("local", {"training:jobs": [{"name": "prog", "spec": str(path)}]})
    jobs = {r.name: json.loads(r.inputs["spec"]) for r in run.by_type(JOB_TYPE)}
    machines = {n: s["workerPoolSpecs"][0]["machineSpec"]["machineType"] for n, s in jobs.items()}
    assert machines == {"prog-small": "n1-standard-4", "prog-large": "n1-standard-8"}
