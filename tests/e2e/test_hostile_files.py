"""Issue 42 on the real engine: a hostile catalog overlay or a price sheet outside the project
fails `pulumi preview` with a clean error naming the file, row and field (or the setting),
never a traceback and never the file's content."""

from __future__ import annotations

from tests.e2e._engine import (
    SIMULATE,
    Workspace,
    emulator_for,
    job_entry,
    local_config,
    python_job,
)

HEADER = "machine_type,family,vcpus,memory_gb,fixed_accelerator_type,fixed_accelerator_count,source"
SECRET = "sk-live-0123456789abcdefghijklmnopqrstu"


def test_a_hostile_overlay_or_an_outside_sheet_fails_the_preview_cleanly(ws: Workspace) -> None:
    overlay = ws.project / "hostile-catalog"
    overlay.mkdir()
    (overlay / "machine_types.csv").write_text(f"{HEADER}\nn9-standard-8,n9,1e400,32,,,src\n")
    with emulator_for(ws, *SIMULATE) as emu:
        job = ws.write_job("job", python_job("job"))
        config = local_config(emu.endpoint, [job_entry("job", job)])
        ws.init_stack({**config, "training:catalogOverlay": "hostile-catalog"})
        preview = ws.pulumi("preview", expect_failure=True).output
        assert "training:catalogOverlay:" in preview
        assert (
            "hostile-catalog/machine_types.csv:2: column 'vcpus' must be a number from 0 to "
            "1,000,000, got inf"
        ) in preview
        assert "Traceback" not in preview

        secret = ws.base / "secret.csv"  # beside the project, not in it
        secret.write_text(SECRET + "\n")
        ws.write_config({**config, "training:prices": str(secret)})
        preview = ws.pulumi("preview", expect_failure=True).output
        assert "training:prices:" in preview and "lies outside the project folder" in preview
        assert SECRET[:8] not in preview
        assert "Traceback" not in preview
