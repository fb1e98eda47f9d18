"""A HyperparameterTuningJob through the real engine: preview, up to a best trial, destroy.

``test_up_tunes_the_example_trainer`` runs three real trials of the example trainer (execute
mode, two at a time, a few seconds each); ``test_destroy_cancels_a_running_tuning_job`` uses
simulate mode, where trials labelled ``emulator-outcome: hang`` run until they are cancelled.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from google.api_core import exceptions as gexc
from google.cloud.aiplatform_v1 import JobState

from components.lifecycle._wire import TUNING_JOB_TYPE
from tests.e2e._engine import (
    HANG_LABELS,
    PARENT,
    REPO,
    SIMULATE,
    Workspace,
    emulator_for,
    job_entry,
    job_spec,
    list_jobs,
    local_config,
)

# The engine's marker of a secret value in a checkpoint.
SECRET_SIG = "4dabf18193072939515e22adb298388d"


def _tuning_spec(**changes: Any) -> dict[str, Any]:
    """``stacks/jobs/local-tuning.yaml`` (3 trials of the example trainer, 2 at a time)."""
    document: dict[str, Any] = yaml.safe_load((REPO / "stacks/jobs/local-tuning.yaml").read_text())
    document.update(changes)
    return document


def _tuning_jobs(ws: Workspace) -> dict[str, dict[str, Any]]:
    return {r["urn"].rsplit("::", 1)[-1]: r for r in ws.resources(TUNING_JOB_TYPE)}


def test_up_tunes_the_example_trainer(ws: Workspace) -> None:
    with emulator_for(ws, "--gpus", "ignore") as emu:
        client = emu.client()
        spec = ws.write_job("tune", _tuning_spec())
        entry = job_entry("tune", spec, waitFor="succeeded", waitTimeout="5m")
        ws.init_stack(local_config(emu.endpoint, [entry]))

        preview = ws.preview_json()
        [step] = [s for s in preview["steps"] if TUNING_JOB_TYPE in s["urn"]]
        assert step["op"] == "create"
        assert step["urn"] == f"urn:pulumi:e2e::gpu-training::{TUNING_JOB_TYPE}::tune"
        inputs = step["newState"]["inputs"]
        assert job_spec(inputs)["maxTrialCount"] == 3
        assert "local-tuning-demo" not in json.dumps(preview)  # the env value is a secret
        assert list(client.list_hyperparameter_tuning_jobs(parent=PARENT)) == []

        ws.up()

        status = ws.pulumi("stack", "output", "--json").json()["jobs"]["tune"]
        assert status["state"] == "JOB_STATE_SUCCEEDED", status
        assert status["trial_counts"]["SUCCEEDED"] == 3
        best = status["best_trial"]
        job = client.get_hyperparameter_tuning_job(name=status["job_name"])
        losses = {t.id: t.final_measurement.metrics[0].value for t in job.trials}
        assert best["id"] == min(losses, key=lambda trial_id: losses[trial_id])
        assert best["value"] == pytest.approx(losses[best["id"]])
        assert best["parameters"]["learning_rate"] in (0.01, 0.05, 0.1)
        model_dir = f"gs://local-training/jobs/example-tuning/{best['id']}/model/"
        assert status["best_trial_model_dir"] == model_dir
        # gs://local-training/... is <state-dir>/gcs/local-training/... in the emulator.
        local = emu.state_dir / "gcs" / model_dir.removeprefix("gs://")
        assert (local / "model.npz").stat().st_size > 0
        resource = _tuning_jobs(ws)["tune"]
        assert resource["id"] == status["job_name"]
        assert resource["outputs"]["status"]["adopted"] is False
        assert resource["inputs"]["env_values"].get(SECRET_SIG)  # stored encrypted
        [env] = job.trial_job_spec.worker_pool_specs[0].python_package_spec.env
        assert env.value == "local-tuning-demo"


def test_destroy_cancels_a_running_tuning_job(ws: Workspace) -> None:
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        spec = ws.write_job("tune", _tuning_spec(labels=HANG_LABELS))
        ws.init_stack(local_config(emu.endpoint, [job_entry("tune", spec, waitFor="running")]))
        ws.up()
        name = _tuning_jobs(ws)["tune"]["id"]
        assert client.get_hyperparameter_tuning_job(name=name).state == JobState.JOB_STATE_RUNNING
        trials = list_jobs(client)  # each trial is a CustomJob
        assert len(trials) == 2 and {t.state for t in trials} == {JobState.JOB_STATE_RUNNING}

        # A knob is an update in place; a spec change would be a replace.
        # deleteRecordOnDelete (opt-in: records are kept by default) is such a knob too.
        entry = job_entry("tune", spec, waitFor="succeeded", deleteRecordOnDelete=True)
        ws.write_config(local_config(emu.endpoint, [entry]))
        preview = ws.preview_json()
        [step] = [s for s in preview["steps"] if TUNING_JOB_TYPE in s["urn"]]
        assert step["op"] == "update" and step.get("replaceReasons") in (None, [])
        ws.up()  # the update: no API call, no wait
        assert _tuning_jobs(ws)["tune"]["inputs"]["delete_record_on_delete"] is True

        out = ws.pulumi("destroy", "--yes", "--skip-preview").output

        assert f"{TUNING_JOB_TYPE} tune deleted" in out
        assert ws.resources() == []
        # The tuning job was cancelled (the emulator, like Vertex AI, refuses to delete an
        # active one), then its record deleted, and its trials' jobs with it.
        with pytest.raises(gexc.NotFound):
            client.get_hyperparameter_tuning_job(name=name)
        assert list_jobs(client) == []
