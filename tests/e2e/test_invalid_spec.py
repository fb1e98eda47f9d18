"""An invalid job spec fails `pulumi preview` (and `up`) with the validator's message; nothing is created."""

from __future__ import annotations

import json

from components.review import render_markdown
from tests.e2e._engine import (
    SIMULATE,
    Workspace,
    emulator_for,
    job_entry,
    list_jobs,
    local_config,
    python_job,
)

MESSAGE = (
    "workerPoolSpecs[0].machineSpec.acceleratorCount: 3 x NVIDIA_TESLA_T4 is not allowed on "
    "n1-highcpu-16 (allowed counts of NVIDIA_TESLA_T4 on n1-highcpu-16: 1, 2, 4)"
)


def test_invalid_spec_fails_preview_with_the_validators_message(ws: Workspace) -> None:
    with emulator_for(ws, *SIMULATE) as emu:
        bad = ws.write_job(
            "bad",
            python_job(
                "bad",
                machine_type="n1-highcpu-16",
                accelerator="NVIDIA_TESLA_T4",
                accelerator_count=3,
            ),
        )
        ws.init_stack(local_config(emu.endpoint, [job_entry("bad", bad)]))

        preview = ws.pulumi("preview", expect_failure=True).output
        assert "TrainingJob 'bad' is invalid:" in preview
        assert MESSAGE in preview
        assert "Traceback" not in preview

        # The same through --json: the message is an error diagnostic.
        printed = ws.pulumi("preview", "--json", expect_failure=True).stdout
        as_json = json.loads(printed)
        errors = [d["message"] for d in as_json["diagnostics"] if d["severity"] == "error"]
        assert any(MESSAGE in e for e in errors), errors
        # ... which the PR comment quotes.
        comment = render_markdown(printed)
        assert "**❌ The preview failed**" in comment
        assert f"TrainingJob 'bad' is invalid:\n  {MESSAGE}\n" in comment

        # `up` fails the same way before anything is submitted.
        up = ws.pulumi("up", "--yes", "--skip-preview", expect_failure=True).output
        assert MESSAGE in up
        assert list_jobs(emu.client()) == []
        assert ws.training_jobs() == {}
