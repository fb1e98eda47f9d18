"""Write a stack state with the current code, for the upgrade tests of a later release.

    .venv/bin/python -m tests.e2e.upgrade_fixture tests/e2e/data/state-<name>
    .venv/bin/python -m tests.e2e.upgrade_fixture --running tests/e2e/data/state-<name>
    .venv/bin/python -m tests.e2e.upgrade_fixture --plugin tests/e2e/data/state-plugin-<name>

``--running``: a TrainingJob and a HyperparameterTuningJob that keep running (simulate mode,
``emulator-outcome: hang``), so a later release can refresh, replace and destroy jobs its
predecessor started (the test starts them again, with the labels the state records).

``--plugin``: the provider plugin's state instead, from a YAML program (``Pulumi.yaml``, written
beside the state) of one running ``gpu-training:vertex:TrainingJob`` whose env value is a secret,
and ``job-labels.json``, the labels the job was submitted with.

Otherwise runs ``pulumi up`` of two jobs (a CustomJob spec with an env value and triggers, a legacy
``config.yaml`` with exclusiveGpus) against a simulate-mode emulator, and writes what a later
release needs to load that state as if it were a user's stack: ``state.json`` (``pulumi stack
export``), ``encryptionsalt`` (the stack's secrets salt), ``config.json`` (the stack config)
and the two spec files. Package URIs are gs:// and the endpoint is kept in the config, so the
inputs do not depend on where the test runs. Run it with the release whose state you capture;
``tests/e2e/test_upgrade.py`` then checks that this release previews no change to it.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from tests.e2e._engine import (
    GCP_PROJECT,
    GCP_REGION,
    SIMULATE,
    Workspace,
    emulator_for,
    install_pulumi,
    job_entry,
    list_jobs,
    local_config,
)

PACKAGE = "gs://local-training/packages/trainer-0.1.tar.gz"
WITH_ENV_SPEC: dict[str, Any] = {
    "displayName": "with-env",
    "labels": {"team": "ml"},
    "workerPoolSpecs": [
        {
            "machineSpec": {
                "machineType": "n1-standard-4",
                "acceleratorType": "NVIDIA_TESLA_T4",
                "acceleratorCount": 1,
            },
            "replicaCount": 1,
            "pythonPackageSpec": {
                "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-15.py310:latest",
                "packageUris": [PACKAGE],
                "pythonModule": "trainer.task",
                "args": ["--epochs", "3"],
                "env": [{"name": "API_TOKEN", "value": "upgrade-fixture-secret"}],
            },
        }
    ],
    "scheduling": {"timeout": "3600s", "strategy": "SPOT"},
    "baseOutputDirectory": "gs://local-training/jobs/with-env",
}
LEGACY_CONFIG: dict[str, Any] = {
    "trainingInput": {
        "scaleTier": "CUSTOM",
        "region": "us-central1",
        "runtimeVersion": "2.15",
        "pythonVersion": "3.10",
        "pythonModule": "trainer.task",
        "packageUris": [PACKAGE],
        "masterType": "n1-standard-8",
        "masterConfig": {"acceleratorConfig": {"count": 2, "type": "NVIDIA_TESLA_T4"}},
        "workerType": "n1-standard-8",
        "workerCount": 1,
        "workerConfig": {"acceleratorConfig": {"count": 2, "type": "NVIDIA_TESLA_T4"}},
    },
    "labels": {"team": "ml"},
}
SPEC_FILES = {"upgrade-with-env.yaml": WITH_ENV_SPEC, "upgrade-legacy.yaml": LEGACY_CONFIG}
HANG = {"emulator-outcome": "hang"}
# A job the emulator (like Vertex AI) runs again when its service restarts, rather than fail it.
RESTARTED = {**WITH_ENV_SPEC, "scheduling": {"timeout": "3600s", "restartJobOnWorkerRestart": True}}
RUNNING_SPEC_FILES: dict[str, dict[str, Any]] = {
    "running-train.yaml": {**RESTARTED, "displayName": "running-train", "labels": HANG},
    "running-tune.yaml": {
        "displayName": "running-tune",
        "labels": HANG,
        "maxTrialCount": 2,
        "parallelTrialCount": 1,
        "studySpec": {
            "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
            "parameters": [
                {
                    "parameterId": "learning_rate",
                    "discreteValueSpec": {"values": [0.01, 0.1]},
                }
            ],
            "algorithm": "GRID_SEARCH",
        },
        "trialJobSpec": {
            key: value for key, value in RESTARTED.items() if key not in ("displayName", "labels")
        },
    },
}


def write_fixture(out: Path, *, running: bool = False) -> None:
    """Run the stack and write its state and everything needed to load it into ``out``."""
    files = RUNNING_SPEC_FILES if running else SPEC_FILES
    if running:
        entries = [
            job_entry("train", "stacks/jobs/running-train.yaml", waitFor="running"),
            job_entry("tune", "stacks/jobs/running-tune.yaml", waitFor="running"),
        ]
    else:
        entries = [
            job_entry("with-env", "stacks/jobs/upgrade-with-env.yaml", triggers=["data-v1"]),
            job_entry("legacy", "stacks/jobs/upgrade-legacy.yaml", exclusiveGpus=True),
        ]
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.create(Path(tmp), install_pulumi())
        for name, document in files.items():
            (ws.project / "stacks" / "jobs" / name).write_text(
                yaml.safe_dump(document, sort_keys=False)
            )
        with emulator_for(ws, *SIMULATE) as emu:
            ws.init_stack(local_config(emu.endpoint, entries))
            ws.up()
            state = ws.pulumi("stack", "export").json()
        stack = yaml.safe_load(ws.stack_file.read_text())
        out.mkdir(parents=True, exist_ok=True)
        (out / "state.json").write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")
        (out / "encryptionsalt").write_text(stack["encryptionsalt"] + "\n")
        (out / "config.json").write_text(json.dumps(stack["config"], indent=1) + "\n")
        for name in files:
            shutil.copy(ws.project / "stacks" / "jobs" / name, out / name)


def write_plugin_fixture(out: Path) -> None:
    """Run the plugin's YAML program and write its state and what loads it into ``out``."""
    from tests.e2e._plugin import (
        SECRET,
        TOKEN,
        end_plugin_workspace,
        plugin_workspace,
        training_job,
        write_yaml_program,
    )

    job = training_job(secret={"fn::secret": SECRET})
    job["labels"].update(HANG)
    with tempfile.TemporaryDirectory() as tmp:
        ws = plugin_workspace(install_pulumi(), Path(tmp))
        write_yaml_program(
            ws, {"train": {"type": TOKEN, "properties": {**job, "waitFor": "running"}}}
        )
        try:
            with emulator_for(ws, *SIMULATE) as emu:
                ws.write_config(
                    {
                        "gpu-training:endpoint": emu.endpoint,
                        "gpu-training:project": GCP_PROJECT,
                        "gpu-training:region": GCP_REGION,
                    }
                )
                ws.pulumi("stack", "init", ws.stack)
                ws.up()
                state = ws.pulumi("stack", "export").json()
                # The labels it was submitted with (its identity, run hash, owner), for a
                # later release's test to start it again as this one did.
                [submitted] = list_jobs(emu.client())
                labels = dict(submitted.labels)
        finally:
            end_plugin_workspace(ws)
        stack = yaml.safe_load(ws.stack_file.read_text())
        out.mkdir(parents=True, exist_ok=True)
        (out / "state.json").write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")
        (out / "encryptionsalt").write_text(stack["encryptionsalt"] + "\n")
        (out / "config.json").write_text(json.dumps(stack["config"], indent=1) + "\n")
        shutil.copy(ws.project / "Pulumi.yaml", out / "Pulumi.yaml")
        (out / "job-labels.json").write_text(json.dumps(labels, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    flags = {"--running", "--plugin"}
    target = Path(next(a for a in sys.argv[1:] if a not in flags))
    if "--plugin" in sys.argv[1:]:
        write_plugin_fixture(target)
    else:
        write_fixture(target, running="--running" in sys.argv[1:])
