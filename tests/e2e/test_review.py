"""The PR comment renderer (components/review.py) on JSON the real engine printed in this test."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from components import load_catalog
from components.review import parse_preview, render_markdown
from tests.e2e._engine import (
    GCP_REGION,
    HANG_LABELS,
    REPO,
    SIMULATE,
    Workspace,
    emulator_for,
    job_entry,
    local_config,
    python_job,
)

STREAMING = {"PULUMI_ENABLE_STREAMING_JSON_PREVIEW": "true"}


def _on_demand(kind: str, name: str) -> float:
    price = load_catalog().prices[(GCP_REGION, kind, name)].on_demand_usd
    assert price is not None
    return price


def _row(markdown: str, job: str) -> str:
    [row] = [line for line in markdown.splitlines() if line.startswith("|") and f"`{job}`" in line]
    return row


def test_review_comment_from_real_previews(ws: Workspace, tmp_path: Path) -> None:
    secret = f"review-secret-{uuid.uuid4().hex}"
    n1 = _on_demand("machine", "n1-standard-4")
    t4 = _on_demand("accelerator", "NVIDIA_TESLA_T4")

    def t4_job(count: int) -> dict[str, Any]:
        return python_job(
            "gpu", accelerator="NVIDIA_TESLA_T4", accelerator_count=count, labels=HANG_LABELS
        )

    with emulator_for(ws, *SIMULATE) as emu:
        gpu = ws.write_job("gpu", t4_job(1))
        cpu = ws.write_job("cpu", python_job("cpu", labels=HANG_LABELS, env={"TOKEN": secret}))
        ws.init_stack(local_config(emu.endpoint, [job_entry("gpu", gpu), job_entry("cpu", cpu)]))

        # A new stack: two creates with their prices.
        created = render_markdown(ws.pulumi("preview", "--json").stdout)
        assert created.startswith("### Training jobs — `gpu-training/e2e`\n")
        assert "**2 to create**" in created
        # ... then the ceiling (the job's timeout x $/h).
        assert _row(created, "gpu").startswith(
            f"| 🟢 create | `gpu` | n1-standard-4 | 1 x NVIDIA_TESLA_T4 | us-central1 "
            f"| ${n1 + t4:,.2f}/h | $"
        )
        assert "| none | us-central1 |" in _row(created, "cpu")
        assert f"**Hourly cost change: +${2 * n1 + t4:,.2f}/h**" in created

        ws.up()

        # Replace one (2 GPUs, and a knob), delete one, create one on another machine.
        ws.write_job("gpu", t4_job(2))
        new = ws.write_job("big", python_job("big", machine_type="n1-standard-8"))
        ws.write_config(
            local_config(
                emu.endpoint, [job_entry("gpu", gpu, waitFor="running"), job_entry("big", new)]
            )
        )
        document = ws.pulumi("preview", "--json").stdout
        (tmp_path / "preview.json").write_text(document)
        markdown = render_markdown(document)

        assert "**1 to create · 1 to replace · 1 to delete**" in markdown
        assert _row(markdown, "gpu").startswith(
            "| 🔁 replace | `gpu` | n1-standard-4 | 1 x NVIDIA_TESLA_T4 → 2 x NVIDIA_TESLA_T4 "
            f"| us-central1 | ${n1 + t4:,.2f}/h → ${n1 + 2 * t4:,.2f}/h (+${t4:,.2f}/h) | $"
        )
        n1_8 = _on_demand("machine", "n1-standard-8")
        assert f"| n1-standard-8 | none | us-central1 | ${n1_8:,.2f}/h | $" in _row(markdown, "big")
        assert _row(markdown, "cpu").startswith("| 🔴 delete | `cpu` | n1-standard-4 |")
        assert f"| ${n1:,.2f}/h | $" in _row(markdown, "cpu")
        # Rows: create, replace, delete, in that order.
        rows = [line for line in markdown.splitlines() if line.startswith("| ") and "`" in line]
        assert [r.split("`")[1] for r in rows] == ["big", "gpu", "cpu"]
        assert f"**Hourly cost change: +${t4 + n1_8 - n1:,.2f}/h**\n" in markdown
        assert "Prices not in the catalog" not in markdown
        assert "Price sources: big: derived; gpu: Vertex price; cpu: Vertex price." in markdown
        assert "**`gpu`** — replace: a new job starts, then the old one is cancelled" in markdown
        assert (
            "- `spec.workerPoolSpecs[0].machineSpec.acceleratorCount`: `1` → `2` "
            "(forces replacement)" in markdown
        )
        assert '- `wait_for`: `"submitted"` → `"running"`\n' in markdown
        assert secret not in document and secret not in markdown
        # The engine's own count agrees with the comment.
        preview = parse_preview(document)
        assert {j.name: j.op for j in preview.jobs} == {
            "big": "create",
            "gpu": "replace",
            "cpu": "delete",
        }

        # The CLI entry point prints the same; a file that is not preview JSON exits 2.
        cli = subprocess.run(
            [sys.executable, "-m", "components.review", str(tmp_path / "preview.json")],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
        assert (cli.returncode, cli.stdout) == (0, markdown), cli.stderr
        (tmp_path / "not-json.txt").write_text("Previewing update (e2e):\n")
        bad = subprocess.run(
            [sys.executable, "-m", "components.review", str(tmp_path / "not-json.txt")],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
        assert bad.returncode == 2
        assert "expected `pulumi preview --json` output" in bad.stderr

        # With the dev policy pack the preview fails. The plain JSON says only that; the
        # streamed events carry the violations, which the comment lists per job.
        policy_args = ("--policy-pack", "policy", "--policy-pack-config", "policy/dev.json")
        plain = ws.pulumi("preview", "--json", *policy_args, expect_failure=True).stdout
        plain_md = render_markdown(plain)
        assert "**❌ The preview failed**" in plain_md
        assert "PULUMI_ENABLE_STREAMING_JSON_PREVIEW=true" in plain_md

        events = ws.pulumi(
            "preview", "--json", *policy_args, expect_failure=True, env=STREAMING
        ).stdout
        streamed = render_markdown(events)
        (tmp_path / "comment.md").write_text(streamed)
        assert "**🛑 Policy violations**" in streamed
        assert (
            "- `gpu`: [mandatory] required-labels: job 'gpu' lacks the label(s) team, "
            "cost-center, required in this stack" in streamed
        )
        assert "- `gpu`: [mandatory] spot-required: job 'gpu' runs STANDARD" in streamed
        assert "- `big`: [mandatory] required-labels:" in streamed
        # The same plan either way.
        for job in ("gpu", "big", "cpu"):
            assert _row(streamed, job) == _row(markdown, job)
        assert (
            "- `spec.workerPoolSpecs[0].machineSpec.acceleratorCount`: `1` → `2` "
            "(forces replacement)" in streamed
        )
