"""Helpers for the provider plugin's e2e tests (a YAML and a TypeScript program).

The plugin (``make provider``) and the language hosts (``make pulumi``) are linked into the
engine's bin dir; each program declares ``gpu-training:vertex:TrainingJob`` resources with the
v1 REST-shaped properties ``training_job`` writes, an env value a secret.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import yaml

from components.lifecycle._wire import SECRET_SIGNATURE
from tests.e2e._engine import (
    GCP_PROJECT,
    GCP_REGION,
    PARENT,
    REPO,
    SIMULATE,
    Workspace,
    list_jobs,
)

TOKEN = "gpu-training:vertex:TrainingJob"
SECRET = "plugin-e2e-secret-4242"
HAND_SECRET = "hand-started-secret-777"
IMAGE = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest"
GPU_IMAGE = "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-15.py310:latest"
"""The image a T4 pool runs (a CPU image on GPUs is refused before launch)."""
SCENARIO = (*SIMULATE, "--simulate-run-seconds", "600")
"""Emulator arguments for a scenario: a simulated job runs until cancelled (the default 5 s run
can end before a slow program's next step, on a loaded machine, and a replaced job is then
SUCCEEDED, not CANCELLED)."""
HIDDEN = ("held", "run_key", "runKey", "identity", "pulumi_resource", "status")
"""Bookkeeping of the core: never in a plugin resource's diff."""


def active_jobs(client: Any) -> list[Any]:
    """The emulator's jobs that are not finished (a finished one's record is kept)."""
    return [j for j in list_jobs(client) if j.state.name not in _ENDED]


def job_states(client: Any) -> dict[str, str]:
    """Each job the emulator holds, by name: its state."""
    return {j.name: j.state.name for j in list_jobs(client)}


_ENDED = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED"}


def install_python_sdk(base: Path) -> Path:
    """sdk/python installed as a user would (``pip install --no-deps --target``, from a copy: the
    build writes beside its setup.py) into ``base/site``; answers that directory, to put on
    PYTHONPATH beside this virtualenv's ``pulumi``."""
    source, site = base / "sdk-python", base / "site"
    shutil.copytree(REPO / "sdk" / "python", source)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(site),
            ".",
        ],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert proc.returncode == 0, f"pip install of sdk/python failed:\n{proc.stdout}{proc.stderr}"
    return site


def plugin_workspace(bin_dir: Path, base: Path) -> Workspace:
    """A workspace for a program of another language: empty project dir, own backend."""
    subprocess.run(
        ["make", "--no-print-directory", "-s", "provider"], cwd=REPO, check=True, timeout=3600
    )
    for tool in ("pulumi-language-yaml", "pulumi-language-nodejs", "pulumi-resource-gpu-training"):
        assert (bin_dir / tool).exists(), f"{tool} missing from {bin_dir}"
    ws = Workspace(base, bin_dir)
    for folder in (ws.project / "stacks", ws.backend, ws.home):
        folder.mkdir(parents=True)
    return ws


def plugin_processes(ws: Workspace) -> list[int]:
    """The provider plugin's processes (``python -m components.plugin``) in this workspace
    (``Workspace.stray_processes`` looks for "pulumi" in a command line: this has none)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if b"components.plugin" in cmdline and cwd == ws.project:
            found.append(int(entry.name))
    return found


def end_plugin_workspace(ws: Workspace) -> None:
    """Fail the test if a pulumi process or the plugin outlived it (and end them)."""
    plugins = plugin_processes(ws)
    for pid in plugins:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert ws.kill_strays() == [], "pulumi processes outlived the test"
    assert plugins == [], "the provider plugin outlived the test"


def write_yaml_program(ws: Workspace, resources: dict[str, Any]) -> None:
    """``Pulumi.yaml``: a YAML program of ``resources`` (by name), each one's ``state`` an output."""
    program = {
        "name": "plugin-yaml",
        "runtime": "yaml",
        "stackConfigDir": "stacks",  # where Workspace keeps the stack file
        "resources": resources,
        "outputs": {name: f"${{{name}.state}}" for name in resources},
    }
    (ws.project / "Pulumi.yaml").write_text(yaml.safe_dump(program, sort_keys=False))


def init_plugin_stack(ws: Workspace, endpoint: str) -> None:
    """The stack, its provider configuration pointing at the emulator."""
    ws.write_config(
        {
            "gpu-training:endpoint": endpoint,
            "gpu-training:project": GCP_PROJECT,
            "gpu-training:region": GCP_REGION,
            "gpu-training:retryDeadline": "20",
            "gpu-training:cancelTimeout": "60",
        }
    )
    ws.pulumi("stack", "init", ws.stack)


def training_job(
    machine_type: str = "n1-standard-4", count: int = 1, secret: Any = SECRET, **labels: str
) -> dict[str, Any]:
    """A TrainingJob's properties: one T4 pool whose env value is ``secret`` (as the program
    language marks a secret)."""
    return {
        "labels": {"team": "ml", **labels},
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {
                        "machineType": machine_type,
                        "acceleratorType": "NVIDIA_TESLA_T4",
                        "acceleratorCount": count,
                    },
                    "replicaCount": 1,
                    "containerSpec": {
                        "imageUri": GPU_IMAGE,
                        "command": ["python", "-c", "print(1)"],
                        "env": [{"name": "TOKEN", "value": secret}],
                    },
                }
            ],
            "scheduling": {"timeout": "600s"},
        },
    }


def start_job_by_hand(client: Any) -> Any:
    """A CustomJob started with the client, outside any stack (to be imported)."""
    return client.create_custom_job(
        parent=PARENT,
        custom_job={
            "display_name": "by-hand",
            "labels": {"owner": "me"},
            "job_spec": {
                "worker_pool_specs": [
                    {
                        "machine_spec": {"machine_type": "n1-standard-4"},
                        "replica_count": 1,
                        "container_spec": {
                            "image_uri": IMAGE,
                            "command": ["python", "-c", "print(2)"],
                            "env": [{"name": "K", "value": HAND_SECRET}],
                        },
                    }
                ],
                "scheduling": {"timeout": "600s"},
            },
        },
    )


def plugin_jobs(ws: Workspace) -> dict[str, dict[str, Any]]:
    """The plugin's TrainingJobs in the state, by resource name."""
    return {
        r["urn"].rsplit("::", 1)[-1]: r
        for r in ws.export().get("resources") or []
        if r["type"] == TOKEN
    }


def assert_replacing_diff(ws: Workspace) -> None:
    """``preview --diff`` and ``--json`` of ``training_job("n1-standard-8", stage="two")`` over
    ``training_job()``: the changed paths, each marked as replacing; nothing else."""
    diff = ws.pulumi("preview", "--diff").output
    assert "+-gpu-training:vertex:TrainingJob: (replace)" in diff
    assert '~ machineType: "n1-standard-4" => "n1-standard-8"' in diff
    assert '+ stage: "two"' in diff
    for hidden in HIDDEN:
        assert hidden not in diff, hidden
    assert "imageUri" not in diff and "createTime" not in diff
    step = next(s for s in ws.preview_json()["steps"] if s["urn"].endswith("::train"))
    assert step["op"] == "replace"
    assert sorted(step["replaceReasons"]) == ["jobSpec", "labels"]
    assert step["detailedDiff"] == {
        "jobSpec.workerPoolSpecs[0].machineSpec.machineType": {
            "kind": "update-replace",
            "inputDiff": True,
        },
        "labels.stage": {"kind": "add-replace", "inputDiff": True},
    }


def assert_bad_gpu_count_fails_preview(ws: Workspace) -> None:
    bad = ws.pulumi("preview", expect_failure=True).output
    # The full path, then the reason; never the engine's `value {<nil>}` of a path it looked
    # up as a top-level input.
    assert (
        "has a problem: jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount: 3 x "
        "NVIDIA_TESLA_T4 is not allowed on n1-standard-8"
    ) in bad, bad
    assert "<nil>" not in bad and "value {" not in bad, bad
    assert "Traceback" not in bad and 'File "' not in bad


def assert_no_change(ws: Workspace, resources: int) -> None:
    preview = ws.preview_json()
    assert preview["changeSummary"] == {"same": resources + 1}, preview["changeSummary"]
    assert [s["op"] for s in preview["steps"]] == ["same"] * len(preview["steps"])


def write_job_settings(ws: Workspace, machine_type: str = "n1-standard-4", **labels: str) -> None:
    """``job.json``, what an SDK program (Go, Python) reads of its job: the machine type and
    labels the tests edit."""
    (ws.project / "job.json").write_text(
        json.dumps({"machineType": machine_type, "labels": labels})
    )


def same_then_edit_then_destroy(
    ws: Workspace, client: Any, edit: Callable[[], None], ids: set[str]
) -> None:
    """The stack up with the jobs ``ids``: the same program again changes nothing and submits
    nothing; ``edit()`` (to ``training_job("n1-standard-8", stage="two")``) previews as a
    replace of the changed paths alone; destroy cancels every job and keeps its record."""
    assert_no_change(ws, resources=len(ids))
    assert len(list_jobs(client)) == len(ids)
    edit()
    assert_replacing_diff(ws)
    assert len(list_jobs(client)) == len(ids)
    ws.pulumi("destroy", "--yes", "--skip-preview")
    assert active_jobs(client) == []
    assert set(job_states(client)) == ids
    assert plugin_jobs(ws) == {}


ProgramJob = Callable[..., dict[str, Any]]
"""``job(machine_type="n1-standard-4", count=1, **labels)``: a TrainingJob as the program's
language writes it (``training_job`` with its secret marker)."""


def up_diff_replace_import_invalid_destroy(
    ws: Workspace,
    emu: Any,
    write: Callable[[dict[str, Any]], None],
    job: ProgramJob,
    import_job: Callable[[str], Any],
) -> None:
    """The plugin's lifecycle from one program: ``write`` puts resources (by name) in it,
    ``import_job(job name)`` runs ``pulumi import`` and answers the resource as the program
    writes it. Each step counts the jobs the emulator holds."""
    client = emu.client()
    write({"train": job()})
    init_plugin_stack(ws, emu.endpoint)

    # up: one job, its env value a secret in the state and in no output.
    ws.up()
    first = plugin_jobs(ws)["train"]
    assert [j.name for j in list_jobs(client)] == [first["id"]]
    assert first["outputs"]["state"].startswith("JOB_STATE_")
    assert first["outputs"]["project"] == GCP_PROJECT
    assert SECRET not in json.dumps(ws.export())
    env = first["outputs"]["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"][0]
    assert env["value"][SECRET_SIGNATURE[0]] == SECRET_SIGNATURE[1]  # the engine's envelope

    # An edit: the changed paths show, each marked as replacing; nothing else does.
    write({"train": job("n1-standard-8", stage="two")})
    assert_replacing_diff(ws)

    # up (replace): a new job; the old one is cancelled, its record kept (issue 35).
    ws.up()
    second = plugin_jobs(ws)["train"]
    assert second["id"] != first["id"]
    assert set(job_states(client)) == {first["id"], second["id"]}
    assert job_states(client)[first["id"]] == "JOB_STATE_CANCELLED"

    # pulumi import of a job started with the client: taken over, not started again; the
    # resource added to the program previews as no change.
    hand = start_job_by_hand(client)
    imported = import_job(hand.name)
    assert plugin_jobs(ws)["byhand"]["id"] == hand.name
    assert set(job_states(client)) == {first["id"], second["id"], hand.name}
    write({"train": job("n1-standard-8", stage="two"), "byhand": imported})
    assert_no_change(ws, resources=2)

    # A bad GPU count fails the preview on the property's path, with no traceback.
    write({"train": job("n1-standard-8", count=3, stage="two")})
    assert_bad_gpu_count_fails_preview(ws)
    assert set(job_states(client)) == {first["id"], second["id"], hand.name}  # none submitted

    # destroy: every job cancelled, its record kept (deleting records is opt-in).
    ws.pulumi("destroy", "--yes", "--skip-preview")
    assert active_jobs(client) == []
    assert set(job_states(client)) == {first["id"], second["id"], hand.name}
    assert plugin_jobs(ws) == {}


def import_as_the_program(ws: Workspace, emu: Any, program_file: str) -> str:
    """``pulumi import --out`` of a job started by hand, into a stack of its own, writes the
    program's language; that code as the whole program previews no change; destroy cancels the
    job. Answers the code (each language's test checks its form)."""
    client = emu.client()
    init_plugin_stack(ws, emu.endpoint)
    hand = start_job_by_hand(client)
    code = ws.project / "imported" / program_file
    code.parent.mkdir()
    imported = ws.pulumi(
        "import", TOKEN, "byhand", hand.name, "--yes", "--protect=false", "--out", str(code)
    )
    assert "not implemented" not in imported.output, imported.output
    text = code.read_text()
    assert plugin_jobs(ws)["byhand"]["id"] == hand.name
    assert [j.name for j in list_jobs(client)] == [hand.name]  # taken over, none started
    (ws.project / program_file).write_text(text)
    assert_no_change(ws, resources=1)
    ws.pulumi("destroy", "--yes", "--skip-preview")
    assert active_jobs(client) == []
    assert set(job_states(client)) == {hand.name}
    return text
