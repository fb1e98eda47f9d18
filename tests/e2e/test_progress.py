"""While `pulumi up` waits for a job, the provider's progress lines reach its output.

The example trainer really runs (execute mode) with ``waitFor: succeeded``: the output shows
the job's state transitions with the time waited, and, the endpoint being the local emulator,
the last line of the chief's log, with env values redacted.
"""

from __future__ import annotations

import re

from tests.e2e._engine import Workspace, emulator_for, job_entry, local_config, python_job

SECRET = "pr0gress-s3cret-value"


def test_up_shows_state_transitions_and_the_chiefs_last_log_line(ws: Workspace) -> None:
    with emulator_for(ws, "--gpus", "ignore") as emu:
        # The trainer's last log line names its model directory: with the env value in the
        # output directory's name (no secret there, but the same text as an env value is
        # redacted wherever the provider shows it), the line must show it redacted.
        document = python_job(
            "progress-job",
            args=("--epochs", "2", "--steps-per-epoch", "5", "--samples", "64"),
            env={"API_TOKEN": SECRET},
        )
        document["baseOutputDirectory"] = f"gs://local-training/jobs/{SECRET}"
        spec = ws.write_job("progress", document)
        ws.init_stack(
            local_config(
                emu.endpoint,
                [job_entry("progress-job", spec, waitFor="succeeded", waitTimeout="5m")],
            )
        )

        out = ws.up().output

        job_id = ws.training_jobs()["progress-job"]["id"].rsplit("/", 1)[-1]
        lines = [line for line in out.splitlines() if f"progress-job (job {job_id})" in line]
        assert lines, out
        # The first line says where the wait started, then each change of state.
        first = re.search(r"\(job \d+\): (JOB_STATE_\w+) after (\d+)s \(waitFor: succeeded\)", out)
        assert first is not None, out
        assert first.group(1) in ("JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING")
        assert re.search(r"-> JOB_STATE_SUCCEEDED after \d+s \(waitFor: succeeded\)", out), out
        # The chief's last log line, read through the emulator (the trainer's final message).
        succeeded = next(line for line in lines if "-> JOB_STATE_SUCCEEDED" in line)
        assert "| chief: " in succeeded, succeeded
        assert "wrote model to" in succeeded, succeeded
        assert "<redacted>" in succeeded and not any(SECRET in line for line in lines), lines
