"""The running-job table's rows of ``existingJob``, the dynamic resources' own: the real engine.

A job started elsewhere taken over through ``python -m components import`` (both kinds), a
job another stack holds not taken over unless ``takeOverHeldJob`` says so, and a job taken over
whose labels leave no room for a replacement's failing the preview. The rows both doors have
are ``test_running_job_table.py``'s.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.cloud.aiplatform_v1 import JobState

from components.lifecycle._wire import TUNING_JOB_TYPE
from tests.e2e._engine import (
    HANG_LABELS,
    PARENT,
    REPO,
    SIMULATE,
    TRAINING_JOB_TYPE,
    Workspace,
    emulator_for,
    job_entry,
    list_jobs,
    local_config,
    python_job,
)


def _start(ws: Workspace, emu: Any, **entry: Any) -> str:
    spec = ws.write_job("train", python_job("train", labels=HANG_LABELS))
    config = local_config(emu.endpoint, [job_entry("train", spec, **entry)])
    ws.init_stack(config)
    ws.up()
    return str(ws.training_jobs()["train"]["id"])


# -- a job started elsewhere, taken over ----------------------------------------------------------


def _start_elsewhere(ws: Workspace, client: Any, path: Path, *, tuning: bool) -> str:
    """Start the job in ``path`` as gcloud would: no labels of the provider."""
    from components.formats import load_spec_file
    from components.training_job import resolve_local_paths
    from components.tuning_job import resolve_trial_local_paths

    loaded = load_spec_file(path, tuning=tuning)
    if tuning:
        from components.vertex.tuning_convert import to_tuning_job

        assert loaded.tuning is not None
        spec = resolve_trial_local_paths(loaded.tuning, path.parent)
        return str(
            client.create_hyperparameter_tuning_job(
                parent=PARENT, hyperparameter_tuning_job=to_tuning_job(spec)
            ).name
        )
    from components.vertex.convert import to_custom_job

    job = to_custom_job(resolve_local_paths(loaded.spec, path.parent))
    return str(client.create_custom_job(parent=PARENT, custom_job=job).name)


def _import(ws: Workspace, emu: Any, name: str, *args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "components", "import", name, "--endpoint", emu.endpoint, *args],
        cwd=ws.project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "existingJob: " + name in proc.stdout
    # The entry the command prints is what goes into training:jobs.
    printed = proc.stdout.split("training:jobs in the stack's configuration", 1)[1]
    block = "\n".join(line for line in printed.splitlines() if line.startswith("    "))
    [entry] = yaml.safe_load(block)
    return dict(entry)


@pytest.mark.parametrize("tuning", [False, True], ids=["custom-job", "tuning-job"])
def test_a_job_started_elsewhere_is_taken_over(ws: Workspace, tuning: bool) -> None:
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        if tuning:
            document = yaml.safe_load((REPO / "stacks/jobs/local-tuning.yaml").read_text())
            document["labels"] = HANG_LABELS
            document["displayName"] = "tuned elsewhere"
        else:
            document = python_job("trained elsewhere", labels=HANG_LABELS)
        source = ws.project / ws.write_job("started-elsewhere", document)
        name = _start_elsewhere(ws, client, source, tuning=tuning)
        listing = client.list_hyperparameter_tuning_jobs if tuning else client.list_custom_jobs
        before = len(list(listing(parent=PARENT)))

        entry = _import(ws, emu, name)
        ws.init_stack(local_config(emu.endpoint, [{**entry, "waitFor": "running"}]))
        ws.up()

        job_type = TUNING_JOB_TYPE if tuning else TRAINING_JOB_TYPE
        [resource] = ws.resources(job_type)
        assert resource["id"] == name
        assert resource["outputs"]["status"]["adopted"] is True
        assert len(list(listing(parent=PARENT))) == before, "a second job was started"
        # As after `pulumi import`: the next preview shows no change.
        preview = ws.preview_json()
        assert preview["changeSummary"].get("same") == 3, preview["changeSummary"]
        assert set(preview["changeSummary"]) == {"same"}

        # A change of the file is a replace like any change: a new job, the old one cancelled.
        spec_file = ws.project / entry["spec"]
        changed = yaml.safe_load(spec_file.read_text())
        changed["labels"] = {**changed["labels"], "edited": "yes"}
        spec_file.write_text(yaml.safe_dump(changed, sort_keys=False))
        [step] = [s for s in ws.preview_json()["steps"] if job_type in s["urn"]]
        assert step["op"] == "replace" and step["replaceReasons"] == ["spec"]
        ws.up()
        [replaced] = ws.resources(job_type)
        assert replaced["id"] != name and replaced["outputs"]["status"]["adopted"] is False
        # Cancelled, its record kept (issue 35).
        old_job = (client.get_hyperparameter_tuning_job if tuning else client.get_custom_job)(
            name=name
        )
        assert old_job.state == JobState.JOB_STATE_CANCELLED
        ws.pulumi("destroy", "--yes", "--skip-preview")


def test_a_job_another_stack_holds_is_not_taken_over(ws: Workspace) -> None:
    """One job, one owner: stack B importing stack A's running job is refused (naming A's
    stack and resource) unless B's entry says takeOverHeldJob; B's destroy then touches
    nothing of A's."""
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        held = _start(ws, emu, waitFor="running")
        other = Workspace(ws.base, ws.bin_dir, stack="other")
        entry = _import(other, emu, held, "--out", "stacks/jobs/theirs.yaml")
        other.init_stack(local_config(emu.endpoint, [{**entry, "waitFor": "running"}]))

        out = other.pulumi("up", "--yes", "--skip-preview", expect_failure=True).output

        assert "is held by another resource" in out
        assert "gpu-training--e2e--train (pulumi_owner label)" in out
        assert "takeOverHeldJob: true" in out
        assert other.resources(TRAINING_JOB_TYPE) == []
        other.pulumi("destroy", "--yes", "--skip-preview")
        assert [(j.name, j.state) for j in list_jobs(client)] == [
            (held, JobState.JOB_STATE_RUNNING)
        ]
        ws.pulumi("stack", "select", ws.stack)
        ws.pulumi("refresh", "--yes", "--skip-preview")
        assert ws.training_jobs()["train"]["id"] == held

        # Said explicitly, the takeover is done, and recorded: that stack may now cancel it.
        other.pulumi("stack", "select", other.stack)
        taken = {**entry, "waitFor": "running", "takeOverHeldJob": True}
        other.write_config(local_config(emu.endpoint, [taken]))
        other.up()
        [resource] = other.resources(TRAINING_JOB_TYPE)
        assert resource["id"] == held and resource["outputs"]["status"]["adopted"] is True
        assert resource["outputs"]["status"]["taken_over_from"]
        assert len(list_jobs(client)) == 1


def test_a_job_taken_over_whose_labels_leave_no_room_fails_the_preview(ws: Workspace) -> None:
    """A replacement of it could not be submitted: the preview says so before anything is
    cancelled (before, an edit with exclusiveGpus cancelled it, then got a 400)."""
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        labels = {**HANG_LABELS, **{f"team{i}": "ml" for i in range(63)}}  # 64: Vertex's most
        source = ws.project / ws.write_job("full", python_job("full", labels=labels))
        name = _start_elsewhere(ws, client, source, tuning=False)
        entry = _import(ws, emu, name, "--out", "stacks/jobs/imported.yaml")
        ws.init_stack(local_config(emu.endpoint, [{**entry, "exclusiveGpus": True}]))

        out = ws.pulumi("preview", expect_failure=True).output

        assert "has 64 labels" in out and "taken over with existingJob" in out
        ws.pulumi("up", "--yes", "--skip-preview", expect_failure=True)
        assert [(j.name, j.state) for j in list_jobs(client)] == [
            (name, JobState.JOB_STATE_RUNNING)
        ]
