"""The PR comment and the policy pack on a provider plugin program, on the real engine.

A Pulumi YAML project of one ``gpu-training:vertex:TrainingJob`` and one
``gpu-training:vertex:HyperparameterTuningJob``, neither naming a project or region: the
provider's configuration does (the default provider's is the stack's ``gpu-training:region``;
the tuning job's explicit provider ``eu`` has its own, ``europe-west4``).
``preview --json`` → ``components.review`` shows their machines, GPUs and prices; the policy
pack (``--policy-pack``) prices them in the provider's region, and a policy config that sets
one rule leaves the others off.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import load_catalog
from components.review import render_markdown
from tests.e2e._engine import (
    GCP_PROJECT,
    GCP_REGION,
    REPO,
    SIMULATE,
    Workspace,
    emulator_for,
    list_jobs,
)
from tests.e2e._plugin import (
    SECRET,
    TOKEN,
    end_plugin_workspace,
    init_plugin_stack,
    plugin_workspace,
    training_job,
)
from tests.policy.test_tuning_review import sweep

TUNING_TOKEN = "gpu-training:vertex:HyperparameterTuningJob"
STREAMING = {"PULUMI_ENABLE_STREAMING_JSON_PREVIEW": "true"}


@pytest.fixture
def yaml_ws(pulumi_bin_dir: Path, tmp_path: Path) -> Iterator[Workspace]:
    ws = plugin_workspace(pulumi_bin_dir, tmp_path)
    yield ws
    end_plugin_workspace(ws)


EU_REGION = "europe-west4"


def _on_demand(kind: str, name: str, region: str = GCP_REGION) -> float:
    price = load_catalog().prices[(region, kind, name)].on_demand_usd
    assert price is not None
    return price


def _rows(markdown: str) -> dict[str, str]:
    """Each job's table row, by job name."""
    return {
        line.split("`")[1]: line
        for line in markdown.splitlines()
        if line.startswith("| ") and "`" in line
    }


def _create_outputs(events: str) -> dict[str, dict[str, Any]]:
    """The outputs each plugin job's previewed create returned, by job name."""
    found: dict[str, dict[str, Any]] = {}
    for line in events.splitlines():
        meta = json.loads(line).get("resOutputsEvent", {}).get("metadata", {})
        if meta.get("type") in (TOKEN, TUNING_TOKEN):
            found[meta["urn"].rsplit("::", 1)[-1]] = meta["new"]["outputs"]
    return found


def _write_program(ws: Workspace, endpoint: str) -> None:
    eu = {"endpoint": endpoint, "project": GCP_PROJECT, "region": EU_REGION}
    resources: dict[str, Any] = {
        "eu": {"type": "pulumi:providers:gpu-training", "properties": eu},
        "job": {"type": TOKEN, "properties": training_job(secret={"fn::secret": SECRET})},
        "sweep": {
            "type": TUNING_TOKEN,
            "properties": sweep(),
            "options": {"provider": "${eu}"},
        },
    }
    program = {
        "name": "plugin-review",
        "runtime": "yaml",
        "stackConfigDir": "stacks",
        "resources": resources,
    }
    (ws.project / "Pulumi.yaml").write_text(yaml.safe_dump(program, sort_keys=False))


def _policy_config(ws: Workspace, name: str, settings: dict[str, Any]) -> str:
    path = ws.project / f"{name}.json"
    path.write_text(json.dumps(settings))
    return str(path)


def test_review_and_policy_read_a_plugin_job_placed_by_the_provider(yaml_ws: Workspace) -> None:
    ws = yaml_ws
    n1 = _on_demand("machine", "n1-standard-4")
    t4 = _on_demand("accelerator", "NVIDIA_TESLA_T4")
    # sweep(): 12 trials, 3 at once, each n1-standard-4 + 2 x T4, in the eu provider's region.
    trials = 3 * (
        _on_demand("machine", "n1-standard-4", EU_REGION)
        + 2 * _on_demand("accelerator", "NVIDIA_TESLA_T4", EU_REGION)
    )
    with emulator_for(ws, *SIMULATE) as emu:
        _write_program(ws, emu.endpoint)
        init_plugin_stack(ws, emu.endpoint)  # gpu-training:region: us-central1

        document = ws.pulumi("preview", "--json").stdout
        (ws.project / "preview.json").write_text(document)
        markdown = render_markdown(document)
        rows = _rows(markdown)
        assert rows["job"] == (
            f"| 🟢 create | `job` | n1-standard-4 | 1 x NVIDIA_TESLA_T4 | {GCP_REGION} "
            f"| ${n1 + t4:,.2f}/h | ${(n1 + t4) / 6:,.2f} (10 min) |"
        )
        assert rows["sweep"].startswith(
            f"| 🟢 create | `sweep` | 12 (3 at once) | n1-standard-4 | 2 x NVIDIA_TESLA_T4 "
            f"| {EU_REGION} | ${trials:,.2f}/h |"
        )
        assert "Prices not in the catalog" not in markdown and SECRET not in markdown
        cli = subprocess.run(
            [sys.executable, "-m", "components.review", str(ws.project / "preview.json")],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
        assert (cli.returncode, cli.stdout) == (0, markdown), cli.stderr

        # The plugin previews each create (supports_preview): the streamed preview's outputs
        # events carry the price its create records, and the review takes it from there.
        streamed = ws.pulumi("preview", "--json", env=STREAMING).stdout
        outputs = _create_outputs(streamed)
        assert outputs["job"]["hourlyCostUsd"] == pytest.approx(n1 + t4)
        assert outputs["job"]["maxCostUsd"] == pytest.approx((n1 + t4) / 6)
        assert outputs["sweep"]["hourlyCostUsd"] == pytest.approx(trials)
        assert outputs["job"]["state"] not in ("JOB_STATE_RUNNING", "JOB_STATE_PENDING")
        # The same prices; an output figure comes without the catalog's account of its timeout.
        shown = _rows(render_markdown(streamed))
        assert shown["job"] == rows["job"].replace(" (10 min)", "")
        assert shown["sweep"] == rows["sweep"].replace(" (12 x 14 h)", "")

        # One rule set, below both jobs' prices: each is priced in its provider's region
        # and rejected by that rule alone, the rules the config leaves out are off.
        strict = _policy_config(ws, "strict", {"max-hourly-cost-per-job": {"maxUsdPerHour": 0.1}})
        policy = ("--policy-pack", str(REPO / "policy"), "--policy-pack-config", strict)
        events = ws.pulumi("preview", "--json", *policy, expect_failure=True, env=STREAMING)
        comment = render_markdown(events.stdout)
        violations = [line for line in comment.splitlines() if line.startswith("- `")]
        rule = "[mandatory] max-hourly-cost-per-job:"
        assert len(violations) == 2, comment
        job_line, sweep_line = violations
        assert job_line.startswith(f"- `job`: {rule} job 'job' costs ${n1 + t4:,.2f}/h (on-demand")
        assert sweep_line.startswith(
            f"- `sweep`: {rule} tuning job 'sweep' costs ${trials:,.2f}/h "
            "(on-demand, 3 trials at once"
        )
        assert all(line.endswith("; the limit is $0.1/h per job") for line in violations)
        assert _rows(comment) == shown

        # Above both prices: the preview passes, no other rule judges with empty values.
        loose = _policy_config(ws, "loose", {"max-hourly-cost-per-job": {"maxUsdPerHour": 5}})
        passed = ws.pulumi(
            "preview", "--policy-pack", str(REPO / "policy"), "--policy-pack-config", loose
        ).output
        assert "gpu-training-guardrails" in passed
        assert "mandatory" not in passed and "cannot check" not in passed

        assert list_jobs(emu.client()) == []  # policies and previews submit nothing
