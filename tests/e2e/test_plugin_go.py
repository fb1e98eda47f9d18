"""The provider plugin from a Go program on the generated SDK, on the real engine.

``sdk/go`` (a module of its own) replaced into the program's ``go.mod``; our Go language host
(``scripts/pulumi-go-host``, ``make pulumi``: the upstream one is not served as a Go module)
builds the program with ``go build`` and runs it; the plugin (``make provider``). The program
declares one ``vertex.TrainingJob`` through the SDK, its env value a secret; ``job.json``
carries what the test edits. Steps: up, a preview with no change, an edit that ``preview
--diff`` marks as replacing, destroy, counting the jobs the emulator holds; that program is
built once and run as the prebuilt ``binary:`` of ``Pulumi.yaml`` (no build per command). Skipped only where
``go`` is absent (CI has it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.lifecycle._wire import SECRET_SIGNATURE
from tests.e2e._engine import REPO, Workspace, emulator_for, list_jobs
from tests.e2e._plugin import (
    GPU_IMAGE,
    HAND_SECRET,
    SCENARIO,
    SECRET,
    end_plugin_workspace,
    import_as_the_program,
    init_plugin_stack,
    plugin_jobs,
    plugin_workspace,
    same_then_edit_then_destroy,
    write_job_settings,
)

GO_MODULE = "github.com/gpu-training/pulumi-gpu-training/sdk/go"

PROGRAM = """\
package main

import (
	"encoding/json"
	"os"

	"github.com/gpu-training/pulumi-gpu-training/sdk/go/gputraining/vertex"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

type settings struct {
	MachineType string            `json:"machineType"`
	Labels      map[string]string `json:"labels"`
}

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		raw, err := os.ReadFile("job.json")
		if err != nil {
			return err
		}
		var s settings
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		labels := pulumi.StringMap{"team": pulumi.String("ml")}
		for k, v := range s.Labels {
			labels[k] = pulumi.String(v)
		}
		secret := pulumi.ToSecret(pulumi.String("SECRET")).(pulumi.StringOutput)
		job, err := vertex.NewTrainingJob(ctx, "train", &vertex.TrainingJobArgs{
			Labels: labels,
			JobSpec: vertex.CustomJobSpecArgs{
				WorkerPoolSpecs: vertex.WorkerPoolSpecArray{
					vertex.WorkerPoolSpecArgs{
						MachineSpec: vertex.MachineSpecArgs{
							MachineType:      pulumi.String(s.MachineType),
							AcceleratorType:  pulumi.String("NVIDIA_TESLA_T4"),
							AcceleratorCount: pulumi.Int(1),
						},
						ReplicaCount: pulumi.Int(1),
						ContainerSpec: vertex.ContainerSpecArgs{
							ImageUri: pulumi.String("IMAGE"),
							Command:  pulumi.ToStringArray([]string{"python", "-c", "print(1)"}),
							Env: vertex.EnvVarArray{
								vertex.EnvVarArgs{Name: pulumi.String("TOKEN"), Value: secret},
							},
						},
					},
				},
				Scheduling: vertex.SchedulingArgs{Timeout: pulumi.String("600s")},
			},
		})
		if err != nil {
			return err
		}
		ctx.Export("state", job.State)
		return nil
	})
}
"""


@pytest.fixture
def go_ws(pulumi_bin_dir: Path, tmp_path: Path) -> Iterator[Workspace]:
    go = shutil.which("go") or "/usr/local/go/bin/go"  # where the build scripts look too
    if not Path(go).is_file():
        pytest.skip("the Go toolchain is not installed (CI has it)")
    ws = plugin_workspace(pulumi_bin_dir, tmp_path)
    assert (pulumi_bin_dir / "pulumi-language-go").exists(), "make pulumi builds it"
    (ws.project / "Pulumi.yaml").write_text(
        "name: plugin-go\nruntime: go\nstackConfigDir: stacks\n"
    )
    requires = (REPO / "sdk" / "go" / "go.mod").read_text().split("\n", 1)[1]
    (ws.project / "go.mod").write_text(
        f"module example.com/plugin-go\n{requires}\nrequire {GO_MODULE} v0.0.0\n\n"
        f"replace {GO_MODULE} => {REPO / 'sdk' / 'go'}\n"
    )
    shutil.copy(REPO / "sdk" / "go" / "go.sum", ws.project / "go.sum")
    program = PROGRAM.replace('"SECRET"', json.dumps(SECRET)).replace('"IMAGE"', f'"{GPU_IMAGE}"')
    (ws.project / "main.go").write_text(program)
    # The unit tests' build settings, so the Go build cache they filled is reused.
    ws.env.update(
        GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS="-mod=readonly -buildvcs=false -trimpath"
    )
    ws.env["PATH"] += os.pathsep + str(Path(go).parent)  # the host runs `go build`
    yield ws
    end_plugin_workspace(ws)


def use_a_prebuilt_binary(ws: Workspace) -> None:
    """Build the program once and name it in ``Pulumi.yaml`` (``runtime.options.binary``, as
    the docs' Go quickstart does), so no command builds it again; ``main.go`` is then moved
    away: a host that still ran ``go build`` would fail on a folder without Go files."""
    go = shutil.which("go", path=ws.env["PATH"]) or "go"
    subprocess.run(
        [go, "build", "-o", "bin/plugin-go", "."],
        cwd=ws.project,
        env=ws.env,
        check=True,
        timeout=1500,  # a cold go build of pulumi/sdk
    )
    (ws.project / "Pulumi.yaml").write_text(
        "name: plugin-go\nruntime:\n  name: go\n  options:\n    binary: bin/plugin-go\n"
        "stackConfigDir: stacks\n"
    )
    (ws.project / "main.go").rename(ws.project / "main.go.built")


@pytest.mark.timeout(1800)  # the first go build of a program on pulumi/sdk, on a cold cache
def test_go_program_on_the_sdk_up_preview_edit_destroy(go_ws: Workspace) -> None:
    ws = go_ws
    write_job_settings(ws)
    use_a_prebuilt_binary(ws)
    with emulator_for(ws, *SCENARIO) as emu:
        client = emu.client()
        init_plugin_stack(ws, emu.endpoint)

        # up: one job, its env value a secret in the state and in no output; every command
        # runs the prebuilt binary (no main.go is left to build).
        ws.pulumi("up", "--yes", "--skip-preview", timeout=1500)
        train = plugin_jobs(ws)["train"]
        assert [j.name for j in list_jobs(client)] == [train["id"]]
        machine = train["inputs"]["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]
        assert machine == {
            "machineType": "n1-standard-4",
            "acceleratorType": "NVIDIA_TESLA_T4",
            "acceleratorCount": 1,
        }
        env = train["outputs"]["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"]
        assert env[0]["value"][SECRET_SIGNATURE[0]] == SECRET_SIGNATURE[1]
        assert SECRET not in json.dumps(ws.export())
        assert ws.pulumi("stack", "output", "state").stdout.startswith("JOB_STATE_")

        # The same program again: nothing to do; an edit previews as a replace of the changed
        # paths; destroy cancels the jobs and keeps their records.
        same_then_edit_then_destroy(
            ws, client, lambda: write_job_settings(ws, "n1-standard-8", stage="two"), {train["id"]}
        )


@pytest.mark.timeout(1800)  # a go build of the imported program on pulumi/sdk, on a cold cache
def test_pulumi_import_writes_go_that_previews_no_change(go_ws: Workspace) -> None:
    # Our Go host generates the code (pkg/v3 codegen/go): before, GenerateProgram was not
    # implemented and `pulumi import --out imported.go` failed with the job already imported.
    with emulator_for(go_ws, *SCENARIO) as emu:
        code = import_as_the_program(go_ws, emu, "main.go")
    assert f'"{GO_MODULE}/gputraining/vertex"' in code, code
    assert 'vertex.NewTrainingJob(ctx, "byhand", &vertex.TrainingJobArgs{' in code, code
    assert 'DisplayName: pulumi.String("by-hand")' in code, code
    assert f'pulumi.ToSecret("{HAND_SECRET}")' in code, code
