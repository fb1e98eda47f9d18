"""Quota before launch, on the real engine and the emulator's Cloud Quotas API: a stack that does
not fit fails `pulumi preview` (and `up`) before any job is created; a granted quota preference
makes it fit; a job the emulator refuses at create (429) is a clear error, not retried."""

from __future__ import annotations

import json
import re
from typing import Any

from google.auth.credentials import AnonymousCredentials
from google.cloud import cloudquotas_v1 as cq
from google.cloud.aiplatform_v1 import JobState

from tests.e2e._engine import (
    GCP_PROJECT,
    GCP_REGION,
    HANG_LABELS,
    SIMULATE,
    Workspace,
    emulator_for,
    job_entry,
    list_jobs,
    local_config,
    python_job,
)

T4 = "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"


def _two_one_t4_jobs(ws: Workspace) -> list[dict[str, Any]]:
    """The stack's jobs ``t4-a`` and ``t4-b``, one T4 each: 2 T4s at once."""
    return [
        job_entry(
            name,
            ws.write_job(
                name, python_job(name, accelerator="NVIDIA_TESLA_T4", accelerator_count=1)
            ),
        )
        for name in ("t4-a", "t4-b")
    ]


def test_a_stack_over_quota_fails_before_any_job_and_fits_once_more_is_granted(
    ws: Workspace,
) -> None:
    with emulator_for(
        ws, *SIMULATE, "--quota", f"custom_model_training_nvidia_t4_gpus@{GCP_REGION}=1"
    ) as emu:
        jobs = _two_one_t4_jobs(ws)
        ws.init_stack(local_config(emu.endpoint, jobs))

        preview = ws.pulumi("preview", expect_failure=True).output
        assert "the project's Vertex training quota is short" in preview
        assert f"quota {T4} in {GCP_REGION}: the stack's jobs need 2 at once" in preview
        assert "the project's limit is 1" in preview
        assert "--quota-id=CustomModelTrainingT4GPUsPerProjectPerRegion" in preview
        assert "Traceback" not in preview
        up = ws.pulumi("up", "--yes", "--skip-preview", expect_failure=True).output
        assert "the project's Vertex training quota is short" in up
        assert list_jobs(emu.client()) == []

        # More quota, as the message says: the emulator grants a preference at once.
        client = cq.CloudQuotasClient(
            transport="rest",
            client_options={"api_endpoint": emu.endpoint},
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        )
        client.create_quota_preference(
            parent=f"projects/{GCP_PROJECT}/locations/global",
            quota_preference=cq.QuotaPreference(
                quota_id="CustomModelTrainingT4GPUsPerProjectPerRegion",
                dimensions={"region": GCP_REGION},
                quota_config=cq.QuotaConfig(preferred_value=2),
            ),
        )
        preview = ws.pulumi("preview").output
        assert "t4-a, t4-b: custom_model_training_nvidia_t4_gpus: need 2, limit 2: fits" in preview


def test_a_429_at_create_is_a_clear_error_and_nothing_runs(ws: Workspace) -> None:
    with emulator_for(
        ws, *SIMULATE, "--quota", f"custom_model_training_nvidia_t4_gpus@{GCP_REGION}=0"
    ) as emu:
        spec = ws.write_job(
            "t4", python_job("t4", accelerator="NVIDIA_TESLA_T4", accelerator_count=1)
        )
        # The preview's check is off: the provider meets Vertex's own refusal at create.
        ws.init_stack(
            local_config(emu.endpoint, [job_entry("t4", spec)], **{"training:quota": "off"})
        )
        up = ws.pulumi("up", "--yes", "--skip-preview", expect_failure=True).output
        assert "Vertex AI refused the job for quota (429 RESOURCE_EXHAUSTED; not retried" in up
        assert (
            f"{T4} in {GCP_REGION}: the job needs 1, in use: 0 by the active jobs the API "
            "lists, the project's limit is 0"
        ) in up
        assert "gcloud alpha quotas preferences create" in up
        assert list_jobs(emu.client()) == []


def test_the_policy_pack_can_require_that_the_jobs_fit(ws: Workspace) -> None:
    with emulator_for(
        ws, *SIMULATE, "--quota", f"custom_model_training_nvidia_t4_gpus@{GCP_REGION}=1"
    ) as emu:
        jobs = _two_one_t4_jobs(ws)
        # The program only warns; the pack (mandatory) refuses.
        ws.init_stack(local_config(emu.endpoint, jobs, **{"training:quota": "warn"}))
        config = ws.base / "quota-policy.json"
        config.write_text(json.dumps({"quota-fits": {"enabled": True}}))
        preview = ws.pulumi(
            "preview",
            "--policy-pack",
            "policy",
            "--policy-pack-config",
            str(config),
            expect_failure=True,
        ).output
        assert "quota-fits" in preview
        assert f"quota {T4} in {GCP_REGION}: the stack's jobs need 2 at once" in preview
        # The limits' age, rounded to minutes: a loaded machine can take over 30 s between the
        # program's quota read and the pack's verdict.
        age = re.search(r"limits read (\d+) min ago", preview)
        assert age is not None and int(age.group(1)) <= 5, preview
        assert list_jobs(emu.client()) == []


def test_a_replace_counts_the_running_job_and_its_replacement(ws: Workspace) -> None:
    """Create-before-delete: while the new job starts, the old one still holds its quota. With
    quota for one, an edited running job fails the preview (and ``up``) before anything is
    cancelled or submitted; unchanged, or with exclusiveGpus, it fits."""
    with emulator_for(
        ws, *SIMULATE, "--quota", f"custom_model_training_nvidia_t4_gpus@{GCP_REGION}=1"
    ) as emu:
        client = emu.client()

        def write(epochs: str) -> str:
            return ws.write_job(
                "t4",
                python_job(
                    "t4",
                    accelerator="NVIDIA_TESLA_T4",
                    accelerator_count=1,
                    labels=HANG_LABELS,
                    args=("--epochs", epochs),
                ),
            )

        spec = write("1")
        ws.init_stack(local_config(emu.endpoint, [job_entry("t4", spec, waitFor="running")]))
        ws.up()
        [running] = list_jobs(client)
        assert "t4: custom_model_training_nvidia_t4_gpus: need 1, limit 1: fits" in (
            ws.pulumi("preview").output
        )

        write("2")
        preview = ws.pulumi("preview", expect_failure=True).output
        assert f"quota {T4} in {GCP_REGION}: the stack's jobs need 2 at once" in preview
        assert "t4 (its running job, until the replacement runs)" in preview
        up = ws.pulumi("up", "--yes", "--skip-preview", expect_failure=True).output
        assert "the project's Vertex training quota is short" in up
        assert [(j.name, j.state) for j in list_jobs(client)] == [
            (running.name, JobState.JOB_STATE_RUNNING)
        ]

        # exclusiveGpus cancels the old job first: one T4 at a time, it fits.
        entry = job_entry("t4", spec, waitFor="running", exclusiveGpus=True)
        ws.write_config(local_config(emu.endpoint, [entry]))
        assert "need 1, limit 1: fits" in ws.pulumi("preview").output


def test_a_429_says_what_is_in_use(ws: Workspace) -> None:
    with emulator_for(
        ws, *SIMULATE, "--quota", f"custom_model_training_nvidia_t4_gpus@{GCP_REGION}=1"
    ) as emu:
        client = emu.client()
        first = ws.write_job(
            "t4-a",
            python_job(
                "t4-a", accelerator="NVIDIA_TESLA_T4", accelerator_count=1, labels=HANG_LABELS
            ),
        )
        second = ws.write_job(
            "t4-b", python_job("t4-b", accelerator="NVIDIA_TESLA_T4", accelerator_count=1)
        )
        off = {"training:quota": "off"}  # Vertex's own refusal at create, not the preview's
        ws.init_stack(
            local_config(emu.endpoint, [job_entry("t4-a", first, waitFor="running")], **off)
        )
        ws.up()
        [running] = list_jobs(client)
        jobs = [job_entry("t4-a", first, waitFor="running"), job_entry("t4-b", second)]
        ws.write_config(local_config(emu.endpoint, jobs, **off))

        up = ws.pulumi("up", "--yes", "--skip-preview", expect_failure=True).output

        in_use = f"in use: 1 by active jobs ({running.name.rsplit('/', 1)[-1]} (t4-a) 1)"
        assert f"{T4} in {GCP_REGION}: the job needs 1, {in_use}, the project's limit is 1" in up
        assert [j.name for j in list_jobs(client)] == [running.name]
