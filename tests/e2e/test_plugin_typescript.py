"""The provider plugin from a TypeScript program, on the real engine against the emulator.

Node and ``@pulumi/pulumi`` from npm (``scripts/install-node-deps``, pinned by
tests/e2e/data/node/package-lock.json), the generated SDK (``sdk/nodejs``, compiled here with
``tsc``) as ``@gpu-training/pulumi``, our Node language host (``make pulumi``: the upstream one is
not served as a Go module) and the plugin (``make provider``). The program declares one
``gpu.vertex.TrainingJob`` per entry of ``resources.json`` (an env value wrapped in
``pulumi.secret``), so the test edits that file. The same steps as the YAML program's: up, an
edit with ``preview --diff``, up (replace), ``pulumi import`` of a job started with the client
(then no change), a bad GPU count, destroy, counting the emulator's jobs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.lifecycle._wire import is_secret_envelope
from tests.e2e._engine import REPO, SIMULATE, Workspace, emulator_for
from tests.e2e._plugin import (
    HAND_SECRET,
    SCENARIO_EMULATOR,
    SECRET,
    TOKEN,
    end_plugin_workspace,
    plugin_workspace,
    training_job,
    up_diff_replace_import_invalid_destroy,
)

SECRET_MARK = "__secret"

PROGRAM = """\
import * as fs from "fs";
import * as pulumi from "@pulumi/pulumi";
import * as gpu from "@gpu-training/pulumi";

// {"__secret": text} anywhere in resources.json is pulumi.secret(text).
function inputs(value: any): any {
    if (Array.isArray(value)) {
        return value.map(inputs);
    }
    if (value !== null && typeof value === "object") {
        if (Object.keys(value).length === 1 && "__secret" in value) {
            return pulumi.secret(value.__secret);
        }
        return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, inputs(v)]));
    }
    return value;
}

const resources: Record<string, gpu.vertex.TrainingJobArgs> = JSON.parse(
    fs.readFileSync("resources.json", "utf8"),
);
export const states: Record<string, pulumi.Output<string>> = {};
for (const [name, args] of Object.entries(resources)) {
    states[name] = new gpu.vertex.TrainingJob(name, inputs(args)).state;
}
"""


def _node_modules() -> Path:
    proc = subprocess.run(
        [str(REPO / "scripts" / "install-node-deps")],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
        timeout=1800,
    )
    return Path(proc.stdout.strip().splitlines()[-1])


def _compiled_sdk(base: Path, node_modules: Path) -> Path:
    """sdk/nodejs compiled with tsc, as a package directory (what npm would install)."""
    sdk = base / "sdk-nodejs"
    shutil.copytree(REPO / "sdk" / "nodejs", sdk)
    package = json.loads((sdk / "package.json").read_text())
    package["version"] = "0.2.0"
    (sdk / "package.json").write_text(json.dumps(package))
    (sdk / "node_modules").symlink_to(node_modules, target_is_directory=True)
    subprocess.run(
        ["node", str(node_modules / "typescript" / "bin" / "tsc"), "-p", str(sdk)],
        check=True,
        timeout=600,
    )
    shutil.copy(sdk / "package.json", sdk / "bin" / "package.json")
    return sdk / "bin"


@pytest.fixture
def ts_ws(pulumi_bin_dir: Path, tmp_path: Path) -> Iterator[Workspace]:
    ws = plugin_workspace(pulumi_bin_dir, tmp_path)
    node_modules = _node_modules()
    sdk = _compiled_sdk(tmp_path, node_modules)
    modules = ws.project / "node_modules"
    modules.mkdir()
    for entry in node_modules.iterdir():
        (modules / entry.name).symlink_to(entry)
    (modules / "@gpu-training").mkdir()
    (modules / "@gpu-training" / "pulumi").symlink_to(sdk, target_is_directory=True)
    (ws.project / "Pulumi.yaml").write_text(
        "name: plugin-ts\nruntime: nodejs\nstackConfigDir: stacks\n"
    )
    (ws.project / "package.json").write_text(json.dumps({"name": "plugin-ts", "main": "index.ts"}))
    (ws.project / "tsconfig.json").write_text(
        json.dumps(
            {
                "compilerOptions": {
                    "strict": True,
                    "target": "ES2020",
                    "module": "commonjs",
                    "moduleResolution": "node",
                    "skipLibCheck": True,
                },
                "files": ["index.ts"],
            }
        )
    )
    (ws.project / "index.ts").write_text(PROGRAM)
    yield ws
    end_plugin_workspace(ws)


def _write_resources(ws: Workspace, resources: dict[str, Any]) -> None:
    (ws.project / "resources.json").write_text(json.dumps(resources, indent=1))


def _job(machine_type: str = "n1-standard-4", count: int = 1, **labels: str) -> dict[str, Any]:
    return training_job(machine_type, count, {SECRET_MARK: SECRET}, **labels)


def _as_program_inputs(value: Any) -> Any:
    """Inputs from ``pulumi stack export --show-secrets`` as resources.json writes them."""
    if isinstance(value, dict):
        if is_secret_envelope(value):
            return {SECRET_MARK: json.loads(value["plaintext"])}
        return {k: _as_program_inputs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_program_inputs(v) for v in value]
    return value


def test_typescript_program_up_diff_replace_import_invalid_destroy(ts_ws: Workspace) -> None:
    ws = ts_ws

    def import_job(name: str) -> Any:
        # This language host generates no code: the program's resource is the state's inputs.
        ws.pulumi(
            "import", TOKEN, "byhand", name, "--yes", "--protect=false", "--generate-code=false"
        )
        [resource] = [
            r
            for r in ws.export(show_secrets=True)["resources"]
            if r["urn"].endswith(f"{TOKEN}::byhand")
        ]
        imported = _as_program_inputs(resource["inputs"])
        env = imported["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"]
        assert env == [{"name": "K", "value": {SECRET_MARK: HAND_SECRET}}]
        return imported

    with emulator_for(ws, *SIMULATE, *SCENARIO_EMULATOR) as emu:
        up_diff_replace_import_invalid_destroy(
            ws, emu, lambda resources: _write_resources(ws, resources), _job, import_job
        )
