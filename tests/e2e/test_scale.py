"""A stack of 50 TrainingJobs (training:jobs in the generated stack file) previews, ups, destroys.

``up`` and ``destroy`` run 32 operations at once (``--parallel 32``), which the provider serves
side by side on its one client.
"""

from __future__ import annotations

from tests.e2e._engine import (
    SIMULATE,
    TRAINING_JOB_TYPE,
    Workspace,
    emulator_for,
    job_entry,
    list_jobs,
    local_config,
    python_job,
)

JOBS = 50


def test_fifty_jobs_preview_up_and_destroy(ws: Workspace) -> None:
    with emulator_for(ws, *SIMULATE, "--simulate-run-seconds", "600") as emu:
        # One spec file without displayName: each job is named after its resource.
        spec = ws.write_job("shared", python_job(None))
        names = [f"job-{i:02d}" for i in range(JOBS)]
        entries = [job_entry(n, spec, waitFor="submitted", triggers=[f"shard-{n}"]) for n in names]
        # Records are kept by default (issue 35); the deleting path is the one measured here.
        ws.init_stack(local_config(emu.endpoint, entries, **{"training:deleteRecords": True}))

        preview = ws.preview_json()
        creates = [s for s in preview["steps"] if s["op"] == "create"]
        assert sorted(s["urn"].rsplit("::", 1)[-1] for s in creates) == sorted(
            [*names, "gpu-training-e2e", "training-run-key"]
        )
        assert preview["changeSummary"] == {"create": JOBS + 2}
        assert list_jobs(emu.client()) == []

        ws.up("--parallel", "32")

        jobs = list_jobs(emu.client())
        assert len(jobs) == JOBS
        assert sorted(j.display_name for j in jobs) == names
        # One job per resource: 50 distinct identities, each found once.
        assert len({j.labels["pulumi_resource"] for j in jobs}) == JOBS
        state = ws.training_jobs()
        assert sorted(state) == names
        assert {r["id"] for r in state.values()} == {j.name for j in jobs}
        assert all(r["type"] == TRAINING_JOB_TYPE for r in state.values())

        # Nothing changed: a second preview is empty.
        ws.pulumi("preview", "--expect-no-changes")

        ws.pulumi("destroy", "--yes", "--skip-preview", "--parallel", "32")
        # Every job was cancelled and its record deleted.
        assert list_jobs(emu.client()) == []
        assert ws.resources() == []
