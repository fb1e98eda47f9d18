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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.plugin._schema import SCHEMA_FILE
from tests.e2e._engine import (
    GCP_PROJECT,
    HANG_LABELS,
    SIMULATE,
    Workspace,
    emulator_for,
    kill_group,
    list_jobs,
    wait_until,
)
from tests.e2e._plugin import (
    HAND_SECRET,
    SECRET,
    TOKEN,
    assert_bad_gpu_count_fails_preview,
    assert_no_change,
    assert_replacing_diff,
    end_plugin_workspace,
    init_plugin_stack,
    plugin_jobs,
    plugin_processes,
    plugin_workspace,
    start_job_by_hand,
    training_job,
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


def _write_program(ws: Workspace, resources: dict[str, Any]) -> None:
    program = {
        "name": "plugin-yaml",
        "runtime": "yaml",
        "stackConfigDir": "stacks",  # where Workspace keeps the stack file
        "resources": resources,
        "outputs": {name: f"${{{name}.state}}" for name in resources},
    }
    (ws.project / "Pulumi.yaml").write_text(yaml.safe_dump(program, sort_keys=False))


def test_yaml_program_up_diff_replace_import_invalid_destroy(yaml_ws: Workspace) -> None:
    ws = yaml_ws
    with emulator_for(ws, *SIMULATE) as emu:
        client = emu.client()
        _write_program(ws, {"train": _job()})
        init_plugin_stack(ws, emu.endpoint)

        # up: one job, its env value a secret in the state and in no output.
        ws.up()
        first = plugin_jobs(ws)["train"]
        assert [j.name for j in list_jobs(client)] == [first["id"]]
        assert first["outputs"]["state"].startswith("JOB_STATE_")
        assert first["outputs"]["project"] == GCP_PROJECT
        assert SECRET not in json.dumps(ws.export())
        env = first["outputs"]["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"][0]
        assert env["value"]["4dabf18193072939515e22adb298388d"]  # the engine's secret envelope

        # An edit: the changed paths show, each marked as replacing; nothing else does.
        _write_program(ws, {"train": _job("n1-standard-8", stage="two")})
        assert_replacing_diff(ws)

        # up (replace): a new job; the old one is cancelled and its record deleted.
        ws.up()
        second = plugin_jobs(ws)["train"]
        assert second["id"] != first["id"]
        assert [j.name for j in list_jobs(client)] == [second["id"]]

        # pulumi import of a job started with the client; the code it prints, added to the
        # program, previews as no change.
        hand = start_job_by_hand(client)
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
        assert plugin_jobs(ws)["byhand"]["id"] == hand.name
        assert len(list_jobs(client)) == 2  # imported, not started again
        _write_program(ws, {"train": _job("n1-standard-8", stage="two"), "byhand": imported})
        assert_no_change(ws, resources=2)

        # A bad GPU count fails the preview on the property's path, with no traceback.
        _write_program(ws, {"train": _job("n1-standard-8", count=3, stage="two")})
        assert_bad_gpu_count_fails_preview(ws)
        assert len(list_jobs(client)) == 2

        # destroy: every job cancelled and its record deleted.
        ws.pulumi("destroy", "--yes", "--skip-preview")
        assert list_jobs(client) == []
        assert plugin_jobs(ws) == {}


def test_pulumi_package_get_schema_prints_the_committed_schema(yaml_ws: Workspace) -> None:
    plugin = yaml_ws.bin_dir / "pulumi-resource-gpu-training"
    printed = yaml_ws.pulumi("package", "get-schema", str(plugin)).stdout
    assert json.loads(printed) == json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def test_up_killed_while_waiting_leaves_one_job_that_the_next_up_adopts(
    yaml_ws: Workspace, tmp_path: Path
) -> None:
    # A row of docs/provider.md's table through the plugin: the engine killed (kill -9) while a
    # create waits; the plugin ends with it; the next `up` adopts the job, never starts another.
    ws = yaml_ws
    with emulator_for(
        ws, *SIMULATE, "--simulate-queued-seconds", "3", "--simulate-pending-seconds", "1"
    ) as emu:
        client = emu.client()
        job = _job("n1-standard-4", 1, **HANG_LABELS)
        job["properties"]["waitFor"] = "running"
        _write_program(ws, {"train": job})
        init_plugin_stack(ws, emu.endpoint)

        up = ws.spawn("up", "--yes", "--skip-preview", log=tmp_path / "killed-up.log")
        try:
            [submitted] = wait_until(lambda: list_jobs(client), timeout=120, what="a submitted job")
            assert up.poll() is None, "pulumi up ended before it could be killed"
        finally:
            kill_group(up)
        wait_until(lambda: not plugin_processes(ws), timeout=10, what="the plugin to end by itself")
        ws.kill_strays()  # pulumi-language-yaml does not watch for its engine: as a crash would
        ws.pulumi("cancel", "--yes")
        ws.pulumi("refresh", "--yes", "--skip-preview", "--clear-pending-creates")

        ws.up()
        assert [j.name for j in list_jobs(client)] == [submitted.name], "a second job was started"
        resource = plugin_jobs(ws)["train"]
        assert resource["id"] == submitted.name
        assert resource["outputs"]["adopted"] is True
        assert resource["outputs"]["state"] == "JOB_STATE_RUNNING"

        ws.pulumi("destroy", "--yes", "--skip-preview")
        assert list_jobs(client) == []
