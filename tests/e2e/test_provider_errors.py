"""On the real engine, a failed create, refresh or destroy shows the provider's message, never
the Python traceback the dynamic provider host puts before it (``components.dynamic._host``)."""

from __future__ import annotations

from tests.e2e._engine import (
    HANG_LABELS,
    SIMULATE,
    TRAINING_JOB_TYPE,
    Workspace,
    emulator_for,
    fails_while_unreachable,
    job_entry,
    list_jobs,
    local_config,
    python_job,
)


def test_failed_operations_show_the_message_only(ws: Workspace) -> None:
    with emulator_for(ws, *SIMULATE) as emu:
        spec = ws.write_job("train", python_job("train", labels=HANG_LABELS))
        ws.init_stack(
            local_config(emu.endpoint, [job_entry("train", spec)], **{"training:retryDeadline": 2})
        )
        emu.set_faults(unavailable_rate=1.0)
        out = ws.pulumi("up", "--yes", "--skip-preview", expect_failure=True).output
        assert "could not submit the training job" in out
        assert "Traceback" not in out and 'File "' not in out
        emu.clear_faults()
        ws.up()
        [job] = list_jobs(emu.client())
        for command, kept in (("refresh", "keeps what it last knew"), ("destroy", "stays in")):
            out = fails_while_unreachable(ws, emu, command, TRAINING_JOB_TYPE, "train")
            assert job.name in out and kept in out, out
        assert ws.training_jobs()["train"]["id"] == job.name
        ws.pulumi("destroy", "--yes", "--skip-preview")
