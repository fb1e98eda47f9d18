"""The dynamic resources' knobs and settings through the provider plugin, from a YAML program on
the real engine against the emulator: placement fail-over (``regions``; no quota in the first
candidate, no capacity in the second: the job runs in the third, one job in all), and the project and region from the
environment pulumi-gcp reads (``GOOGLE_PROJECT``, ``GOOGLE_REGION``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e._engine import GCP_PROJECT, HANG_LABELS, SIMULATE, Workspace, emulator_for
from tests.e2e._plugin import (
    TOKEN,
    end_plugin_workspace,
    init_plugin_stack,
    plugin_workspace,
    training_job,
)

REGIONS = ["us-central1", "us-east4", "europe-west4"]
NO_T4_IN_THE_FIRST = ("--quota", "custom_model_training_nvidia_t4_gpus@us-central1=0")
NO_CAPACITY_IN_THE_SECOND = ("--no-capacity", "NVIDIA_TESLA_T4@us-east4")


@pytest.fixture
def yaml_ws(pulumi_bin_dir: Path, tmp_path: Path) -> Iterator[Workspace]:
    ws = plugin_workspace(pulumi_bin_dir, tmp_path)
    yield ws
    end_plugin_workspace(ws)


def _write_program(ws: Workspace, properties: dict[str, Any], *outputs: str) -> None:
    program = {
        "name": "plugin-knobs",
        "runtime": "yaml",
        "stackConfigDir": "stacks",
        "resources": {"train": {"type": TOKEN, "properties": properties}},
        "outputs": {name: f"${{train.{name}}}" for name in ("name", *outputs)},
    }
    (ws.project / "Pulumi.yaml").write_text(yaml.safe_dump(program, sort_keys=False))


def _jobs(client: Any, regions: list[str]) -> list[Any]:
    found: list[Any] = []
    for region in regions:
        found += client.list_custom_jobs(parent=f"projects/{GCP_PROJECT}/locations/{region}")
    return found


def test_a_job_with_regions_runs_in_the_third_after_no_quota_and_no_capacity(
    yaml_ws: Workspace,
) -> None:
    # The first candidate has no T4 quota (refused at submit), the second no capacity (its job
    # fails with "Resources are insufficient" during the wait, and is cancelled); the job runs
    # in the third: one job active in all.
    ws = yaml_ws
    with emulator_for(ws, *SIMULATE, *NO_T4_IN_THE_FIRST, *NO_CAPACITY_IN_THE_SECOND) as emu:
        job = {**training_job(), "labels": {"team": "ml", **HANG_LABELS}}
        _write_program(ws, {**job, "regions": REGIONS, "waitFor": "running"}, "placedRegion")
        init_plugin_stack(ws, emu.endpoint)
        # The quota check at preview passes: one candidate fits.
        ws.pulumi("preview")
        up = ws.pulumi("up", "--yes", "--skip-preview").output
        assert "placement: us-central1: quota refused" in up
        assert "placement: us-east4: no capacity" in up
        assert "Resources are insufficient in region: us-east4" in up
        assert "Traceback" not in up
        jobs = _jobs(emu.client(), REGIONS)
        [placed] = [j for j in jobs if j.state.name == "JOB_STATE_RUNNING"]
        assert "/locations/europe-west4/" in placed.name
        [failed] = [j for j in jobs if j.name != placed.name]
        assert "/locations/us-east4/" in failed.name and failed.state.name == "JOB_STATE_FAILED"
        outputs = ws.pulumi("stack", "output", "--json").json()
        assert outputs == {"name": placed.name, "placedRegion": "europe-west4"}
        ws.pulumi("destroy", "--yes", "--skip-preview")
        assert emu.client().get_custom_job(name=placed.name).state.name == "JOB_STATE_CANCELLED"


def test_project_and_region_from_the_environment_pulumi_gcp_reads(yaml_ws: Workspace) -> None:
    ws = yaml_ws
    with emulator_for(ws, *SIMULATE) as emu:
        _write_program(ws, training_job())
        ws.write_config({"gpu-training:endpoint": emu.endpoint})
        ws.pulumi("stack", "init", ws.stack)
        unset = ws.pulumi("preview", expect_failure=True).output
        assert "set GOOGLE_PROJECT, GOOGLE_CLOUD_PROJECT" in unset
        assert "pass project= or set gcp:project" not in unset and "Traceback" not in unset
        env = {"GOOGLE_PROJECT": GCP_PROJECT, "GOOGLE_REGION": "us-east4"}
        ws.pulumi("up", "--yes", "--skip-preview", env=env)
        [job] = _jobs(emu.client(), ["us-east4"])  # listed under GOOGLE_PROJECT's project
        assert "/locations/us-east4/" in job.name
        assert ws.pulumi("stack", "output", "name").output.strip() == job.name
        ws.pulumi("destroy", "--yes", "--skip-preview", env=env)
