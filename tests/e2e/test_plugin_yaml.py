"""The provider plugin from a YAML program, on the real engine against the emulator.

``pulumi-resource-gpu-training`` (``make provider``) and ``pulumi-language-yaml`` (``make pulumi``)
on PATH; a Pulumi YAML project of one ``gpu-training:vertex:TrainingJob`` whose env value is a
secret. One stack goes through up, an edit with ``preview --diff`` (the replacement is marked on
the changed paths; bookkeeping and outputs do not show), up (replace), ``pulumi import`` of a job
started with the client (the preview after it shows no change), a bad GPU count (preview fails
on the property's path, no traceback) and destroy, counting the jobs the emulator holds.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.plugin._schema import SCHEMA_FILE
from tests.e2e._engine import (
    GCP_PROJECT,
    GCP_REGION,
    PARENT,
    REPO,
    SIMULATE,
    Workspace,
    emulator_for,
    list_jobs,
)

TOKEN = "gpu-training:vertex:TrainingJob"
SECRET = "plugin-e2e-secret-4242"
HAND_SECRET = "hand-started-secret-777"
IMAGE = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest"


def _job(machine_type: str = "n1-standard-4", count: int = 1, **labels: str) -> dict[str, Any]:
    return {
        "type": TOKEN,
        "properties": {
            "labels": {"team": "ml", **labels},
            "jobSpec": {
                "workerPoolSpecs": [
                    {
                        "machineSpec": {
                            "machineType": machine_type,
                            "acceleratorType": "NVIDIA_TESLA_T4",
                            "acceleratorCount": count,
                        },
                        "replicaCount": 1,
                        "containerSpec": {
                            "imageUri": IMAGE,
                            "command": ["python", "-c", "print(1)"],
                            "env": [{"name": "TOKEN", "value": {"fn::secret": SECRET}}],
                        },
                    }
                ],
                "scheduling": {"timeout": "600s"},
            },
        },
    }


@pytest.fixture
def yaml_ws(pulumi_bin_dir: Path, tmp_path: Path) -> Iterator[Workspace]:
    """A YAML project with its own backend; the plugin and the YAML host linked by make."""
    subprocess.run(
        ["make", "--no-print-directory", "-s", "provider"], cwd=REPO, check=True, timeout=3600
    )
    for tool in ("pulumi-language-yaml", "pulumi-resource-gpu-training"):
        assert (pulumi_bin_dir / tool).exists(), f"{tool} missing from {pulumi_bin_dir}"
    ws = Workspace(tmp_path, pulumi_bin_dir)
    for folder in (ws.project / "stacks", ws.backend, ws.home):
        folder.mkdir(parents=True)
    yield ws
    assert ws.kill_strays() == [], "pulumi processes outlived the test"


def _write_program(ws: Workspace, resources: dict[str, Any]) -> None:
    program = {
        "name": "plugin-yaml",
        "runtime": "yaml",
        "stackConfigDir": "stacks",  # where Workspace keeps the stack file
        "resources": resources,
        "outputs": {name: f"${{{name}.state}}" for name in resources},
    }
    (ws.project / "Pulumi.yaml").write_text(yaml.safe_dump(program, sort_keys=False))


def _jobs(ws: Workspace) -> dict[str, dict[str, Any]]:
    return {
        r["urn"].rsplit("::", 1)[-1]: r
        for r in ws.export().get("resources") or []
        if r["type"] == TOKEN
    }


def _active(client: Any) -> list[str]:
    return sorted(j.name for j in list_jobs(client) if j.state.name != "JOB_STATE_CANCELLED")


def test_yaml_program_up_diff_replace_import_invalid_destroy(yaml_ws: Workspace) -> None:
    ws = yaml_ws
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        _write_program(ws, {"train": _job()})
        ws.write_config(
            {
                "gpu-training:endpoint": emu.endpoint,
                "gpu-training:project": GCP_PROJECT,
                "gpu-training:region": GCP_REGION,
                "gpu-training:retryDeadline": "20",
                "gpu-training:cancelTimeout": "60",
            }
        )
        ws.pulumi("stack", "init", ws.stack)

        # up: one job, its env value a secret in the state and in no output.
        ws.up()
        first = _jobs(ws)["train"]
        assert [j.name for j in list_jobs(client)] == [first["id"]]
        assert first["outputs"]["state"].startswith("JOB_STATE_")
        assert first["outputs"]["project"] == GCP_PROJECT
        assert SECRET not in json.dumps(ws.export())
        env = first["outputs"]["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"][0]
        assert env["value"]["4dabf18193072939515e22adb298388d"]  # the engine's secret envelope

        # An edit: the changed paths show, each marked as replacing; nothing else does.
        _write_program(ws, {"train": _job("n1-standard-8", stage="two")})
        diff = ws.pulumi("preview", "--diff").output
        assert "+-gpu-training:vertex:TrainingJob: (replace)" in diff
        assert '~ machineType: "n1-standard-4" => "n1-standard-8"' in diff
        assert '+ stage: "two"' in diff
        for hidden in ("held", "run_key", "runKey", "identity", "pulumi_resource", "status"):
            assert hidden not in diff, hidden
        assert "imageUri" not in diff and "createTime" not in diff
        step = next(s for s in ws.preview_json()["steps"] if s["urn"].endswith("::train"))
        assert step["op"] == "replace"
        assert sorted(step["replaceReasons"]) == ["jobSpec", "labels"]
        assert step["detailedDiff"] == {
            "jobSpec.workerPoolSpecs[0].machineSpec.machineType": {
                "kind": "update-replace",
                "inputDiff": True,
            },
            "labels.stage": {"kind": "add-replace", "inputDiff": True},
        }

        # up (replace): a new job; the old one is cancelled and its record deleted.
        ws.up()
        second = _jobs(ws)["train"]
        assert second["id"] != first["id"]
        assert [j.name for j in list_jobs(client)] == [second["id"]]

        # pulumi import of a job started with the client.
        hand = client.create_custom_job(
            parent=PARENT,
            custom_job={
                "display_name": "by-hand",
                "labels": {"owner": "me"},
                "job_spec": {
                    "worker_pool_specs": [
                        {
                            "machine_spec": {"machine_type": "n1-standard-4"},
                            "replica_count": 1,
                            "container_spec": {
                                "image_uri": IMAGE,
                                "command": ["python", "-c", "print(2)"],
                                "env": [{"name": "K", "value": HAND_SECRET}],
                            },
                        }
                    ],
                    "scheduling": {"timeout": "600s"},
                },
            },
        )
        code = ws.project / "imported.yaml"
        ws.pulumi(
            "import", TOKEN, "byhand", hand.name, "--yes", "--protect=false", "--out", str(code)
        )
        imported = yaml.safe_load(code.read_text())["resources"]["byhand"]
        assert imported["properties"]["displayName"] == "by-hand"
        assert imported["properties"]["labels"] == {"owner": "me"}
        hand_env = imported["properties"]["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]
        assert hand_env["env"] == [{"name": "K", "value": {"fn::secret": HAND_SECRET}}]
        assert "project" not in imported["properties"]  # the provider's; Vertex names its number
        assert _jobs(ws)["byhand"]["id"] == hand.name
        assert len(list_jobs(client)) == 2  # imported, not started again
        _write_program(ws, {"train": _job("n1-standard-8", stage="two"), "byhand": imported})
        preview = ws.preview_json()
        assert preview["changeSummary"] == {"same": 3}, preview["changeSummary"]
        assert [s["op"] for s in preview["steps"]] == ["same"] * len(preview["steps"])

        # A bad GPU count fails the preview on the property's path, with no traceback.
        _write_program(ws, {"train": _job("n1-standard-8", count=3, stage="two")})
        bad = ws.pulumi("preview", expect_failure=True).output
        assert "jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount" in bad
        assert "3 x NVIDIA_TESLA_T4 is not allowed on n1-standard-8" in bad
        assert "Traceback" not in bad and 'File "' not in bad
        assert len(list_jobs(client)) == 2

        # destroy: every job cancelled and its record deleted.
        ws.pulumi("destroy", "--yes", "--skip-preview")
        assert list_jobs(client) == []
        assert _jobs(ws) == {}


def test_pulumi_package_get_schema_prints_the_committed_schema(yaml_ws: Workspace) -> None:
    plugin = yaml_ws.bin_dir / "pulumi-resource-gpu-training"
    printed = yaml_ws.pulumi("package", "get-schema", str(plugin)).stdout
    assert json.loads(printed) == json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
