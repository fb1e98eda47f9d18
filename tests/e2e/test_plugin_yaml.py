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
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.plugin._schema import SCHEMA_FILE
from tests.e2e._engine import (
    REPO,
    SIMULATE,
    Workspace,
    emulator_for,
    list_jobs,
)
from tests.e2e._plugin import (
    HAND_SECRET,
    SCENARIO,
    SECRET,
    TOKEN,
    end_plugin_workspace,
    init_plugin_stack,
    plugin_workspace,
    training_job,
    up_diff_replace_import_invalid_destroy,
    write_yaml_program,
)


@pytest.fixture
def yaml_ws(pulumi_bin_dir: Path, tmp_path: Path) -> Iterator[Workspace]:
    ws = plugin_workspace(pulumi_bin_dir, tmp_path)
    yield ws
    end_plugin_workspace(ws)


def _job(machine_type: str = "n1-standard-4", count: int = 1, **labels: str) -> dict[str, Any]:
    return {
        "type": TOKEN,
        "properties": training_job(machine_type, count, {"fn::secret": SECRET}, **labels),
    }


def test_yaml_program_up_diff_replace_import_invalid_destroy(yaml_ws: Workspace) -> None:
    ws = yaml_ws

    def import_job(name: str) -> Any:
        # The code `pulumi import` prints is what the program takes as it is.
        code = ws.project / "imported.yaml"
        ws.pulumi("import", TOKEN, "byhand", name, "--yes", "--protect=false", "--out", str(code))
        imported = yaml.safe_load(code.read_text())["resources"]["byhand"]
        props = imported["properties"]
        assert props["displayName"] == "by-hand"
        assert props["labels"] == {"owner": "me"}
        env = props["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"]
        assert env == [{"name": "K", "value": {"fn::secret": HAND_SECRET}}]
        assert "project" not in props  # the provider's: Vertex names the project by number
        return imported

    with emulator_for(ws, *SCENARIO) as emu:
        up_diff_replace_import_invalid_destroy(
            ws, emu, lambda resources: write_yaml_program(ws, resources), _job, import_job
        )


def test_pulumi_package_get_schema_prints_the_committed_schema(yaml_ws: Workspace) -> None:
    plugin = yaml_ws.bin_dir / "pulumi-resource-gpu-training"
    printed = yaml_ws.pulumi("package", "get-schema", str(plugin)).stdout
    assert json.loads(printed) == json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def test_the_policy_pack_judges_the_plugins_resources(yaml_ws: Workspace) -> None:
    # The pack reads REST-shaped inputs (as pulumi-gcp's AiCustomJob has them) on the real
    # engine: a valid but prod-sized job passes the plugin's check and is stopped by dev.json.
    ws = yaml_ws
    with emulator_for(ws, *SIMULATE) as emu:
        big = _job("a2-highgpu-8g")
        machine = big["properties"]["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]
        machine.update(acceleratorType="NVIDIA_TESLA_A100", acceleratorCount=8)
        write_yaml_program(ws, {"big": big})
        init_plugin_stack(ws, emu.endpoint)
        output = ws.pulumi(
            "preview",
            "--policy-pack",
            str(REPO / "policy"),
            "--policy-pack-config",
            str(REPO / "policy" / "dev.json"),
            expect_failure=True,
        ).output
        assert "max-gpus-per-job" in output
        assert "job 'big' holds 8 accelerators at once; the limit is 4" in output
        assert "job 'big' uses NVIDIA_TESLA_A100; this stack allows" in output
        assert "job 'big' lacks the label(s) cost-center, required in this stack" in output
        assert list_jobs(emu.client()) == []


def test_the_preview_says_the_jobs_cost_and_quota_and_applies_gpu_training_quota(
    yaml_ws: Workspace,
) -> None:
    # The dynamic door's notes on the resource (components.plugin._notes): its cost line and its
    # quota table. `gpu-training:quota`: a job over the project's limit fails the preview on its
    # pools (error, the default); under `warn` the preview passes and the engine shows the
    # warning (the plugin logs through the engine, not to its stderr, which is a debug message).
    ws = yaml_ws
    t4 = "custom_model_training_nvidia_t4_gpus"
    with emulator_for(ws, *SIMULATE, "--quota", f"{t4}@us-central1=1") as emu:
        write_yaml_program(ws, {"train": _job("n1-standard-4", 2)})
        init_plugin_stack(ws, emu.endpoint)
        failed = ws.pulumi("preview", expect_failure=True).output
        assert "jobSpec.workerPoolSpecs" in failed
        assert f"quota aiplatform.googleapis.com/{t4} in us-central1" in failed
        assert "the job needs 2 at once, the project's limit is 1" in failed
        assert "need 2, limit 1: SHORT" in failed  # the quota table, said before the failure
        assert "Traceback" not in failed

        ws.pulumi("config", "set", "gpu-training:quota", "warn")
        warned = ws.pulumi("preview", "--diff").output  # the notes show in a diff too
        lines = [x for x in warned.splitlines() if "the job needs 2 at once" in x]
        assert lines and all("the project's limit is 1" in x for x in lines), warned
        assert any(x.lstrip().startswith("warning: quota ") for x in lines), warned
        assert "estimated cost per job:" in warned, warned
        cost = re.compile(
            r"train: \$[\d,.]+/h on-demand in us-central1, at most \$[\d,.]+ \(10 min timeout\)"
        )
        assert cost.search(warned), warned
        assert "quota (project local-training, us-central1; Cloud Quotas API):" in warned
        assert list_jobs(emu.client()) == []
