"""The provider plugin from a Python program on the generated SDK, on the real engine.

``sdk/python`` installed with pip (``pip install --no-deps --target``, once per module) and put
on PYTHONPATH beside this virtualenv's ``pulumi``; the repo's Python language host (``make
pulumi``) and the plugin (``make provider``). The program declares two
``gpu_training.vertex.TrainingJob`` resources through the SDK, one with its ``*Args`` classes and
one with plain dicts (snake_case keys, as the ``*ArgsDict`` types have them), each with an env
value wrapped in ``pulumi.Output.secret``; ``job.json`` carries what the test edits. Steps: up,
a preview with no change, an edit that ``preview --diff`` marks as replacing, destroy, counting
the jobs the emulator holds.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from components.lifecycle._wire import SECRET_SIGNATURE
from tests.e2e._engine import Workspace, emulator_for, list_jobs, venv_dir
from tests.e2e._plugin import (
    GPU_IMAGE,
    HAND_SECRET,
    SCENARIO,
    SECRET,
    TOKEN,
    active_jobs,
    end_plugin_workspace,
    import_as_the_program,
    init_plugin_stack,
    install_python_sdk,
    plugin_jobs,
    plugin_workspace,
    same_then_edit_then_destroy,
    write_job_settings,
)

PROGRAM = f"""\
import json
from pathlib import Path

import pulumi
import pulumi_gpu_training as gpu

settings = json.loads(Path("job.json").read_text())
machine = dict(
    machine_type=settings["machineType"], accelerator_type="NVIDIA_TESLA_T4", accelerator_count=1
)
container = dict(image_uri={GPU_IMAGE!r}, command=["python", "-c", "print(1)"])
labels = {{"team": "ml", **settings["labels"]}}

typed = gpu.vertex.TrainingJob(
    "train",
    labels=labels,
    job_spec=gpu.vertex.CustomJobSpecArgs(
        worker_pool_specs=[
            gpu.vertex.WorkerPoolSpecArgs(
                machine_spec=gpu.vertex.MachineSpecArgs(**machine),
                replica_count=1,
                container_spec=gpu.vertex.ContainerSpecArgs(
                    **container,
                    env=[gpu.vertex.EnvVarArgs(name="TOKEN", value=pulumi.Output.secret({SECRET!r}))],
                ),
            )
        ],
        scheduling=gpu.vertex.SchedulingArgs(timeout="600s"),
    ),
)
dicts = gpu.vertex.TrainingJob(
    "train-dicts",
    labels=labels,
    job_spec={{
        "worker_pool_specs": [
            {{
                "machine_spec": machine,
                "replica_count": 1,
                "container_spec": {{
                    **container,
                    "env": [{{"name": "TOKEN", "value": pulumi.Output.secret({SECRET!r})}}],
                }},
            }}
        ],
        "scheduling": {{"timeout": "600s"}},
    }},
)
pulumi.export("states", [typed.state, dicts.state])
"""


@pytest.fixture(scope="module")
def python_sdk_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_python_sdk(tmp_path_factory.mktemp("python-sdk"))


@pytest.fixture
def py_ws(pulumi_bin_dir: Path, tmp_path: Path, python_sdk_site: Path) -> Iterator[Workspace]:
    ws = plugin_workspace(pulumi_bin_dir, tmp_path)
    (ws.project / "Pulumi.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "plugin-python",
                "runtime": {
                    "name": "python",
                    "options": {"toolchain": "pip", "virtualenv": ".venv"},
                },
                "stackConfigDir": "stacks",
            },
            sort_keys=False,
        )
    )
    (ws.project / ".venv").symlink_to(venv_dir(), target_is_directory=True)
    (ws.project / "__main__.py").write_text(PROGRAM)
    ws.env["PYTHONPATH"] = str(python_sdk_site)  # the installed SDK, not the checkout
    yield ws
    end_plugin_workspace(ws)


def test_python_program_on_the_sdk_up_preview_edit_destroy(py_ws: Workspace) -> None:
    ws = py_ws
    write_job_settings(ws)
    with emulator_for(ws, *SCENARIO) as emu:
        client = emu.client()
        init_plugin_stack(ws, emu.endpoint)

        # up: two jobs, the same inputs whichever way the program wrote them.
        ws.up()
        jobs = plugin_jobs(ws)
        assert sorted(jobs) == ["train", "train-dicts"]
        assert sorted(j.name for j in list_jobs(client)) == sorted(r["id"] for r in jobs.values())
        shown = {
            r["urn"].rsplit("::", 1)[-1]: r["inputs"]
            for r in ws.export(show_secrets=True)["resources"]
            if r["type"] == TOKEN
        }  # (each secret's ciphertext differs)
        assert shown["train"] == shown["train-dicts"]
        pool = shown["train"]["jobSpec"]["workerPoolSpecs"][0]
        assert json.loads(pool["containerSpec"]["env"][0]["value"]["plaintext"]) == SECRET
        machine = jobs["train"]["inputs"]["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]
        assert machine == {
            "machineType": "n1-standard-4",
            "acceleratorType": "NVIDIA_TESLA_T4",
            "acceleratorCount": 1,
        }
        env = jobs["train"]["outputs"]["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"]
        assert env[0]["value"][SECRET_SIGNATURE[0]] == SECRET_SIGNATURE[1]
        assert SECRET not in json.dumps(ws.export())
        assert all(r["type"] == TOKEN for r in jobs.values())
        outputs = ws.pulumi("stack", "output", "states", "--json").json()
        assert all(state.startswith("JOB_STATE_") for state in outputs), outputs

        # The same program again: nothing to do; an edit previews as a replace of the changed
        # paths; destroy cancels the jobs and keeps their records.
        same_then_edit_then_destroy(
            ws,
            client,
            lambda: write_job_settings(ws, "n1-standard-8", stage="two"),
            {r["id"] for r in jobs.values()},
        )


def test_pulumi_import_writes_python_that_previews_no_change(py_ws: Workspace) -> None:
    # Our Python host generates the code (pkg/v3 codegen/python): before, GenerateProgram was
    # not implemented and `pulumi import --out imported.py` failed with the job already imported.
    with emulator_for(py_ws, *SCENARIO) as emu:
        code = import_as_the_program(py_ws, emu, "__main__.py")
    assert "import pulumi_gpu_training as gpu_training" in code, code
    assert 'gpu_training.vertex.TrainingJob("byhand"' in code, code
    assert '"display_name": "by-hand"' in code or 'display_name="by-hand"' in code, code
    assert f'pulumi.Output.secret("{HAND_SECRET}")' in code, code


@pytest.mark.parametrize("provider_state", ["today", "key only"])
def test_a_stack_up_on_the_sdk_before_its_download_url_upgrades_with_no_change(
    py_ws: Workspace, python_sdk_site: Path, tmp_path: Path, provider_state: str
) -> None:
    # The SDK as generated before the schema named a pluginDownloadURL (before 0.2.0): its
    # resources ask for the default provider without a download URL, which the engine names
    # differently. A program moved to today's SDK must keep its jobs: no replace, no new job.
    ws = py_ws
    old = tmp_path / "sdk-without-download-url"
    shutil.copytree(python_sdk_site, old, symlinks=True)
    utilities = old / "pulumi_gpu_training" / "_utilities.py"
    text = utilities.read_text()
    assert text.count("github://") == 1, "the SDK's download URL moved"
    utilities.write_text(re.sub(r'return "github://[^"]*"', "return None", text))
    manifest = old / "pulumi_gpu_training" / "pulumi-plugin.json"
    manifest.write_text(
        json.dumps({k: v for k, v in json.loads(manifest.read_text()).items() if k != "server"})
    )
    write_job_settings(ws)
    with emulator_for(ws, *SCENARIO) as emu:
        client = emu.client()
        init_plugin_stack(ws, emu.endpoint)
        ws.env["PYTHONPATH"] = str(old)
        ws.up()
        before = {name: r["id"] for name, r in plugin_jobs(ws).items()}
        old_providers = [
            r["urn"] for r in ws.export()["resources"] if r["type"].startswith("pulumi:providers:")
        ]
        assert len(before) == 2 and len(old_providers) == 1, (before, old_providers)
        if provider_state == "key only":
            # A provider as release 0.2.0 wrote it: its stack key (a secret) and no plain
            # instance beside it; its successor decrypts the key.
            state = ws.pulumi("stack", "export").json()
            for resource in state["deployment"]["resources"]:
                for part in ("inputs", "outputs"):
                    resource.get(part, {}).pop("stackInstance", None)
            (tmp_path / "key-only.json").write_text(json.dumps(state))
            ws.pulumi("stack", "import", "--file", str(tmp_path / "key-only.json"))

        ws.env["PYTHONPATH"] = str(python_sdk_site)
        summary = ws.preview_json()["changeSummary"]
        assert summary == {"same": len(before) + 1}, summary  # the jobs and the stack
        ws.up()
        assert {name: r["id"] for name, r in plugin_jobs(ws).items()} == before
        assert sorted(j.name for j in list_jobs(client)) == sorted(before.values())
        new_providers = [
            r for r in ws.export()["resources"] if r["type"].startswith("pulumi:providers:")
        ]
        assert [p["urn"] for p in new_providers] != old_providers, new_providers
        gone = ws.pulumi("destroy", "--yes", "--skip-preview").output
        assert active_jobs(client) == [], gone
