"""The CrossGuard pack in policy/ run by the real engine (`--policy-pack`) on the local stack.

The engine starts the Python pack through our language host's RunPlugin; its virtualenv is
``policy/PulumiPolicy.yaml``'s own ``.venv`` (``make policy``; the workspace links it).
"""

from __future__ import annotations

from typing import Any

import yaml

from tests.e2e._engine import (
    REPO,
    SIMULATE,
    Workspace,
    emulator_for,
    job_entry,
    list_jobs,
    python_job,
)

DEV_JOB = python_job(
    "dev-t4",
    accelerator="NVIDIA_TESLA_T4",
    accelerator_count=1,
    labels={"team": "ml-platform", "cost-center": "cc-42"},
    spot=True,
)
PROD_JOB = python_job(
    "prod-a100",
    machine_type="a2-highgpu-8g",
    accelerator="NVIDIA_TESLA_A100",
    accelerator_count=8,
    labels={"team": "ml-platform", "cost-center": "cc-42"},
    spot=True,
)


def _local_stack(endpoint: str, jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """stacks/Pulumi.local.yaml's config with the emulator's endpoint and these jobs."""
    config: dict[str, Any] = yaml.safe_load((REPO / "stacks" / "Pulumi.local.yaml").read_text())[
        "config"
    ]
    assert config["gcp:region"] == "us-central1"
    config.pop("training:emulatorStateDir")  # the test's own emulator, by its endpoint
    return {**config, "training:endpoint": endpoint, "training:jobs": jobs}


def _preview_with(ws: Workspace, config: str, *, expect_failure: bool) -> str:
    return ws.pulumi(
        "preview",
        "--policy-pack",
        "policy",
        "--policy-pack-config",
        config,
        expect_failure=expect_failure,
    ).output


def test_dev_policies_pass_a_dev_job_and_reject_a_prod_sized_one(ws: Workspace) -> None:
    with emulator_for(ws, *SIMULATE) as emu:
        dev = job_entry("dev-t4", ws.write_job("dev-t4", DEV_JOB))
        prod = job_entry("prod-a100", ws.write_job("prod-a100", PROD_JOB))
        ws.init_stack(_local_stack(emu.endpoint, [dev]))

        passed = _preview_with(ws, "policy/dev.json", expect_failure=False)
        assert "gpu-training-guardrails" in passed
        assert "mandatory" not in passed

        ws.write_config(_local_stack(emu.endpoint, [dev, prod]))
        rejected = _preview_with(ws, "policy/dev.json", expect_failure=True)
        assert "[mandatory]  allowed-accelerators" in rejected
        assert (
            "job 'prod-a100' uses NVIDIA_TESLA_A100; this stack allows NVIDIA_L4, NVIDIA_TESLA_T4"
            in (rejected)
        )
        assert "[mandatory]  max-gpus-per-job" in rejected
        assert "job 'prod-a100' holds 8 accelerators at once; the limit is 4" in rejected
        # Eight A100s on Spot cost more than the dev limit, priced as derived prices.
        assert "job 'prod-a100' costs $" in rejected
        assert "(spot; prices: derived, unverified)" in rejected
        # The dev job itself breaks no rule.
        assert "job 'dev-t4'" not in rejected

        # The prod guardrails allow both (A100, up to 64 GPUs, up to $400/h per job).
        prod_ok = _preview_with(ws, "policy/prod.json", expect_failure=False)
        assert "mandatory" not in prod_ok

        # Policies run at preview: nothing was submitted.
        assert list_jobs(emu.client()) == []
