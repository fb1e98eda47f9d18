"""The running-job table's row of the plugin's own: ``pulumi import`` of a job another resource
holds is refused (docs/rules.md, "What happens to a running job"). The rows both doors have are
``test_running_job_table.py``'s, run through a YAML program of the plugin there too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e._engine import HANG_LABELS, SIMULATE, Workspace, emulator_for
from tests.e2e._plugin import (
    SECRET,
    TOKEN,
    end_plugin_workspace,
    init_plugin_stack,
    job_states,
    plugin_jobs,
    plugin_workspace,
    training_job,
    write_yaml_program,
)


@pytest.fixture
def yaml_ws(pulumi_bin_dir: Path, tmp_path: Path) -> Iterator[Workspace]:
    ws = plugin_workspace(pulumi_bin_dir, tmp_path)
    yield ws
    end_plugin_workspace(ws)


def test_import_of_a_job_another_resource_holds_is_refused(yaml_ws: Workspace) -> None:
    # One job, one owner: `pulumi import` of the job resource `train` holds fails naming its
    # holder; nothing is imported, and the job keeps running for `train` alone.
    ws = yaml_ws
    with emulator_for(ws, *SIMULATE) as emu:
        job = training_job(secret={"fn::secret": SECRET})
        job["labels"].update(HANG_LABELS)
        write_yaml_program(
            ws, {"train": {"type": TOKEN, "properties": {**job, "waitFor": "running"}}}
        )
        init_plugin_stack(ws, emu.endpoint)
        ws.up()
        held = str(plugin_jobs(ws)["train"]["id"])
        assert job_states(emu.client()) == {held: "JOB_STATE_RUNNING"}

        out = ws.pulumi(
            "import", TOKEN, "byhand", held, "--yes", "--protect=false", expect_failure=True
        ).output

        assert "is held by another resource" in out, out
        assert "plugin-yaml--e2e--train (pulumi_owner label)" in out, out
        assert "Traceback" not in out
        assert set(plugin_jobs(ws)) == {"train"}
        assert job_states(emu.client()) == {held: "JOB_STATE_RUNNING"}
