"""Issue 35 on the real engine: a replacement trains anew, and records outlive their resource.

A program of one's own declares a ``TrainingJob`` of the example trainer (which resumes from
the checkpoints in its output directory) on the local emulator, with a stand-in for
``TrainingInfra`` whose wiring chooses the output directory, as on a cloud stack. Its first
run succeeds; ``pulumi up --replace`` starts a new run, which must train from scratch in a
directory of its own (before issue 35 it logged ``resumed from checkpoint at step 4 of 4``
and trained nothing). ``destroy`` then cancels nothing and deletes no record: the emulator
still holds both runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emulator.testing import running_emulator
from tests.e2e._engine import Workspace, list_jobs, local_config

MAIN = '''
import pulumi
from components import TrainingJob


class LocalOutputs:
    """Stands in for TrainingInfra on the local stack: what its wiring fills in."""

    package_uri = None
    service_account_email = "trainer@local-training.iam.gserviceaccount.com"

    def output_uri(self, job):
        return f"gs://local-training/jobs/{job}"


job = TrainingJob(
    "train",
    spec={
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "n1-standard-4"},
                "replicaCount": 1,
                "pythonPackageSpec": {
                    "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest",
                    "packageUris": ["trainer"],
                    "pythonModule": "trainer.task",
                    "args": ["--epochs", "1", "--steps-per-epoch", "4", "--samples", "32",
                             "--checkpoint-every", "2"],
                }
            }
        ],
        "scheduling": {"timeout": "600s"},
    },
    wait_for="succeeded",
    wait_timeout="5m",
    infra=LocalOutputs(),
)
pulumi.export("status", job.status)
'''
URN = "urn:pulumi:dev::my-training::pulumi-python:dynamic/vertex:TrainingJob::train"


@pytest.fixture
def emulator_of(tmp_path: Path) -> Iterator[Any]:
    project = tmp_path / "project"
    project.mkdir()
    with running_emulator(
        "--gpus", "ignore", "--allow-root", str(project), state_dir=tmp_path / "emulator"
    ) as emu:
        yield emu


def _chief_log(tmp_path: Path, job_name: str) -> str:
    log = tmp_path / "emulator" / "jobs" / job_name.rsplit("/", 1)[-1] / "logs"
    return "\n".join(p.read_text() for p in sorted(log.glob("workerpool0-0*.log")))


def test_a_replacement_trains_anew_and_every_record_is_kept(
    tmp_path: Path, pulumi_bin_dir: Path, emulator_of: Any
) -> None:
    (tmp_path / "project").rmdir()  # made for the emulator to allow it: own_project fills it
    ws = Workspace.own_project(tmp_path, pulumi_bin_dir, MAIN)
    try:
        config = local_config(emulator_of.endpoint, [])
        config.pop("training:jobs")
        ws.init_stack(config)
        preview = ws.pulumi("preview").output
        assert "train: a new run writes under gs://local-training/jobs/train/runs/" in preview
        ws.pulumi("up", "--yes", "--skip-preview")
        first = ws.pulumi("stack", "output", "status", "--json").json()
        assert first["state"] == "JOB_STATE_SUCCEEDED"
        assert first["output_dir"].startswith("gs://local-training/jobs/train/runs/")
        assert "starting from scratch: 4 steps" in _chief_log(tmp_path, first["job_name"])

        # The next preview sees no change; nor does it for the state of a release before
        # issue 35 (no output_root, no output_dir): the provider decides the run directory at
        # create, so the registered inputs of a running job are as they were.
        assert ws.preview_json()["changeSummary"] == {"same": 3}
        exported = ws.pulumi("stack", "export").json()
        for resource in exported["deployment"]["resources"]:
            if resource["type"].endswith(":TrainingJob"):
                assert resource["inputs"].pop("output_root") == "gs://local-training/jobs/train"
                resource["outputs"]["status"].pop("output_dir")
        (tmp_path / "before.json").write_text(json.dumps(exported))
        ws.pulumi("stack", "import", "--file", str(tmp_path / "before.json"))
        assert ws.preview_json()["changeSummary"] == {"same": 3}

        ws.pulumi("up", "--yes", "--skip-preview", "--replace", URN)
        second = ws.pulumi("stack", "output", "status", "--json").json()
        assert second["job_name"] != first["job_name"]
        assert second["state"] == "JOB_STATE_SUCCEEDED" and second["adopted"] is False
        assert second["output_dir"].startswith("gs://local-training/jobs/train/runs/")
        assert second["output_dir"] != first["output_dir"]
        log = _chief_log(tmp_path, second["job_name"])
        assert "starting from scratch: 4 steps" in log and "resumed from checkpoint" not in log

        ws.pulumi("destroy", "--yes", "--skip-preview")
        held = {str(j.name): j.state.name for j in list_jobs(emulator_of.client())}
        assert held == {
            first["job_name"]: "JOB_STATE_SUCCEEDED",
            second["job_name"]: "JOB_STATE_SUCCEEDED",
        }
    finally:
        assert ws.kill_strays() == []


def test_a_replace_that_continues_the_last_run_stops_it_first(
    tmp_path: Path, pulumi_bin_dir: Path
) -> None:
    """Issue 42 item 9: with continue_last_run (and no exclusive_gpus) the new run writes into
    the old one's directory, so a forced replace (the engine asks no diff) cancels the old
    job and waits for it to stop before the new one is submitted: never two writers."""
    from emulator.testing import running_emulator
    from tests.e2e._engine import SIMULATE

    main = (
        MAIN.replace('wait_for="succeeded"', 'wait_for="running"')
        .replace("infra=LocalOutputs(),", "infra=LocalOutputs(),\n    continue_last_run=True,")
        .replace('"scheduling":', '"labels": {"emulator-outcome": "hang"},\n        "scheduling":')
    )
    assert "continue_last_run=True" in main and "emulator-outcome" in main
    project = tmp_path / "project"
    project.mkdir()  # for the emulator to allow it; own_project fills it
    allowed = ("--allow-root", str(project))
    with running_emulator(*SIMULATE, *allowed, state_dir=tmp_path / "emulator") as emu:
        project.rmdir()
        ws = Workspace.own_project(tmp_path, pulumi_bin_dir, main)
        try:
            config = local_config(emu.endpoint, [])
            config.pop("training:jobs")
            ws.init_stack(config)
            ws.pulumi("up", "--yes", "--skip-preview")
            first = ws.pulumi("stack", "output", "status", "--json").json()
            ws.pulumi("up", "--yes", "--skip-preview", "--replace", URN)
            second = ws.pulumi("stack", "output", "status", "--json").json()
            assert second["job_name"] != first["job_name"]
            assert second["output_dir"] == first["output_dir"]  # it continues that run
            client = emu.client()
            old = client.get_custom_job(name=first["job_name"])
            new = client.get_custom_job(name=second["job_name"])
            assert old.state.name == "JOB_STATE_CANCELLED"
            assert old.end_time <= new.create_time  # stopped before the new one was made
        finally:
            assert ws.kill_strays() == []
