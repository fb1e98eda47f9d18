"""The generated SDKs (sdk/python, sdk/go, sdk/nodejs) build and can be used as published.

- Python: ``pip install --no-deps --target`` of a copy of sdk/python (its setup.py, as a user
  would install it), then imported in a fresh interpreter beside this virtualenv's ``pulumi``;
  its package metadata names the package, the schema's version and the plugin ``gpu-training``.
  (tests/e2e/test_plugin_python.py runs a program on it against the plugin and the emulator;
  tests/e2e/test_plugin_go.py does so for Go, through our Go language host.)
- Go: ``go build`` and ``go vet`` of a copy of sdk/go (a module of its own, go.mod/go.sum from
  scripts/gen-sdk, ``-mod=readonly``), and ``go test`` of a tiny program that declares a
  TrainingJob through the SDK under Pulumi's mocks (it type-checks and registers the right
  token and inputs). Skipped only where ``go`` is absent (CI has it).
- TypeScript: ``tsc --noEmit`` of sdk/nodejs with @pulumi/pulumi and typescript from
  scripts/install-node-deps (pinned by tests/e2e/data/node/package-lock.json), and of a tiny
  program that imports it as ``@gpu-training/pulumi`` (a wrong property type must not compile).

Each language's environment is built once per module.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

import pytest

from components.plugin._schema import PACKAGE, PLUGIN_DOWNLOAD_URL, VERSION
from tests.e2e._plugin import install_python_sdk

REPO = Path(__file__).resolve().parents[2]
SDK = REPO / "sdk"
GO_MODULE = "github.com/gpu-training/pulumi-gpu-training/sdk/go"
# What every SDK tells the engine about its plugin: where a release of it is downloaded from.
PLUGIN_METADATA = {
    "resource": True,
    "name": PACKAGE,
    "version": VERSION,
    "server": PLUGIN_DOWNLOAD_URL,
}
BUILD_TIMEOUT = 1800  # a cold Go build compiles pulumi/sdk on a loaded 2-core machine


def _run(
    args: list[str], cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        args,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, f"{' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


# -- Python ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def python_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sdk/python installed (``pip install --no-deps --target``) into a directory of its own."""
    return install_python_sdk(tmp_path_factory.mktemp("sdk-python"))


@pytest.mark.timeout(BUILD_TIMEOUT)
def test_python_sdk_metadata_names_package_version_and_plugin(python_site: Path) -> None:
    [dist] = list(metadata.distributions(path=[str(python_site)]))
    assert dist.metadata["Name"] == "pulumi_gpu_training"
    assert dist.version == VERSION
    requires = dist.requires or []
    assert any(r.startswith("pulumi") and "<4.0.0" in r for r in requires), requires
    plugin = json.loads((python_site / "pulumi_gpu_training" / "pulumi-plugin.json").read_text())
    assert plugin == PLUGIN_METADATA


PYTHON_CHECK = """\
import json
import pulumi_gpu_training as gpu
from pulumi_gpu_training import _utilities

job_args = gpu.vertex.TrainingJobArgs(
    job_spec=gpu.vertex.CustomJobSpecArgs(
        worker_pool_specs=[
            gpu.vertex.WorkerPoolSpecArgs(
                machine_spec=gpu.vertex.MachineSpecArgs(machine_type="n1-standard-4"),
                replica_count=1,
            )
        ]
    )
)
print(json.dumps({
    "file": gpu.__file__,
    "version": _utilities.get_version(),
    "classes": sorted(n for n in dir(gpu.vertex) if n.endswith("Job")),
    "pools": len(job_args.job_spec.worker_pool_specs),
}))
"""


@pytest.mark.timeout(BUILD_TIMEOUT)
def test_python_sdk_imports_beside_pulumi(python_site: Path) -> None:
    proc = _run(
        [sys.executable, "-c", PYTHON_CHECK],
        cwd=python_site.parent,
        env={"PYTHONPATH": str(python_site)},
    )
    found = json.loads(proc.stdout)
    assert Path(found["file"]).is_relative_to(python_site)  # the installed copy, not sdk/
    assert found["version"] == VERSION
    assert found["classes"] == ["HyperparameterTuningJob", "TrainingJob"]
    assert found["pools"] == 1


# -- Go ----------------------------------------------------------------------------------------

GO_PROGRAM = """\
package main

import (
	"github.com/gpu-training/pulumi-gpu-training/sdk/go/gputraining/vertex"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func program(ctx *pulumi.Context) error {
	job, err := vertex.NewTrainingJob(ctx, "train", &vertex.TrainingJobArgs{
		Labels: pulumi.StringMap{"team": pulumi.String("ml")},
		JobSpec: vertex.CustomJobSpecArgs{
			WorkerPoolSpecs: vertex.WorkerPoolSpecArray{
				vertex.WorkerPoolSpecArgs{
					MachineSpec: vertex.MachineSpecArgs{
						MachineType:      pulumi.String("n1-standard-4"),
						AcceleratorType:  pulumi.String("NVIDIA_TESLA_T4"),
						AcceleratorCount: pulumi.Int(1),
					},
					ReplicaCount: pulumi.Int(1),
					ContainerSpec: vertex.ContainerSpecArgs{
						ImageUri: pulumi.String("us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-15.py310:latest"),
						Env: vertex.EnvVarArray{
							vertex.EnvVarArgs{Name: pulumi.String("TOKEN"), Value: pulumi.ToSecret(pulumi.String("s")).(pulumi.StringOutput)},
						},
					},
				},
			},
		},
	})
	if err != nil {
		return err
	}
	ctx.Export("state", job.State)
	return nil
}

func main() { pulumi.Run(program) }
"""

GO_TEST = """\
package main

import (
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

type mocks struct {
	mu   sync.Mutex
	seen []pulumi.MockResourceArgs
}

func (m *mocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seen = append(m.seen, args)
	outputs := args.Inputs.Copy()
	outputs["state"] = resource.NewStringProperty("JOB_STATE_QUEUED")
	return "projects/p/locations/r/customJobs/1", outputs, nil
}

func (m *mocks) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return args.Args, nil
}

func TestProgramDeclaresATrainingJob(t *testing.T) {
	m := &mocks{}
	if err := pulumi.RunErr(program, pulumi.WithMocks("p", "s", m)); err != nil {
		t.Fatal(err)
	}
	if len(m.seen) != 1 || m.seen[0].TypeToken != "gpu-training:vertex:TrainingJob" {
		t.Fatalf("registered %+v", m.seen)
	}
	if m.seen[0].RegisterRPC.GetVersion() != "VERSION" {
		t.Fatalf("plugin version %q", m.seen[0].RegisterRPC.GetVersion())
	}
	pool := m.seen[0].Inputs["jobSpec"].ObjectValue()["workerPoolSpecs"].ArrayValue()[0].ObjectValue()
	machine := pool["machineSpec"].ObjectValue()
	if machine["acceleratorCount"].NumberValue() != 1 || machine["machineType"].StringValue() != "n1-standard-4" {
		t.Fatalf("machineSpec %v", machine)
	}
	env := pool["containerSpec"].ObjectValue()["env"].ArrayValue()[0].ObjectValue()
	if !env["value"].IsSecret() {
		t.Fatalf("env value not secret: %v", env["value"])
	}
}
"""


def _go_env(base: Path) -> dict[str, str]:
    return {
        "GOTOOLCHAIN": "local",
        "CGO_ENABLED": "0",
        "GOFLAGS": "-mod=readonly -buildvcs=false -trimpath",
        "GOWORK": "off",
        "HOME": os.environ.get("HOME", str(base)),
    }


def _go() -> str | None:
    """The Go toolchain as the build scripts find it: on PATH, else /usr/local/go."""
    fallback = Path("/usr/local/go/bin/go")
    return shutil.which("go") or (str(fallback) if fallback.is_file() else None)


@pytest.fixture(scope="module")
def go_sdk(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """A copy of sdk/go, built (``go build ./...``) once; answers (go, its dir)."""
    go = _go()
    if go is None:
        pytest.skip("the Go toolchain is not installed (CI has it)")
    base = tmp_path_factory.mktemp("sdk-go")
    sdk = base / "sdk"
    shutil.copytree(SDK / "go", sdk)
    _run([go, "build", "./..."], cwd=sdk, env=_go_env(base), timeout=BUILD_TIMEOUT)
    return go, sdk


@pytest.mark.timeout(BUILD_TIMEOUT)
def test_go_sdk_is_a_module_that_vets(go_sdk: tuple[str, Path]) -> None:
    go, sdk = go_sdk
    assert (sdk / "go.mod").read_text().startswith(f"module {GO_MODULE}\n")
    plugin = json.loads((sdk / "gputraining" / "pulumi-plugin.json").read_text())
    assert plugin == PLUGIN_METADATA
    _run([go, "vet", "./..."], cwd=sdk, env=_go_env(sdk.parent), timeout=BUILD_TIMEOUT)


@pytest.mark.timeout(BUILD_TIMEOUT)
def test_go_program_on_the_sdk_registers_a_training_job(go_sdk: tuple[str, Path]) -> None:
    go, sdk = go_sdk
    program = sdk.parent / "program"
    program.mkdir()
    requires = (sdk / "go.mod").read_text().split("\n", 1)[1]
    (program / "go.mod").write_text(
        f"module example.com/program\n{requires}\n"
        f"require {GO_MODULE} v0.0.0\n\nreplace {GO_MODULE} => ../sdk\n"
    )
    shutil.copy(sdk / "go.sum", program / "go.sum")
    (program / "main.go").write_text(GO_PROGRAM)
    (program / "main_test.go").write_text(GO_TEST.replace('"VERSION"', f'"{VERSION}"'))
    env = _go_env(sdk.parent)
    _run([go, "vet", "."], cwd=program, env=env, timeout=BUILD_TIMEOUT)
    proc = _run([go, "test", "-count=1", "-v", "."], cwd=program, env=env, timeout=BUILD_TIMEOUT)
    assert "--- PASS: TestProgramDeclaresATrainingJob" in proc.stdout


# -- TypeScript --------------------------------------------------------------------------------

TS_PROGRAM = """\
import * as pulumi from "@pulumi/pulumi";
import * as gpu from "@gpu-training/pulumi";

const job = new gpu.vertex.TrainingJob("train", {
    labels: { team: "ml" },
    jobSpec: {
        workerPoolSpecs: [{
            machineSpec: { machineType: "n1-standard-4", acceleratorType: "NVIDIA_TESLA_T4", acceleratorCount: 1 },
            replicaCount: 1,
            containerSpec: {
                imageUri: "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-15.py310:latest",
                env: [{ name: "TOKEN", value: pulumi.secret("s") }],
            },
        }],
    },
});
export const state: pulumi.Output<string> = job.state;

new gpu.vertex.TrainingJob("wrong", {
    jobSpec: {
        // @ts-expect-error: acceleratorCount is a number in the SDK's types
        workerPoolSpecs: [{ machineSpec: { acceleratorCount: "one" } }],
    },
});
// @ts-expect-error: jobSpec is required
new gpu.vertex.TrainingJob("nospec", {});
"""


@pytest.fixture(scope="module")
def node_sdk(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A copy of sdk/nodejs beside the pinned node_modules; answers (sdk dir, tsc)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed (CI has them)")
    proc = _run([str(REPO / "scripts" / "install-node-deps")], cwd=REPO, timeout=BUILD_TIMEOUT)
    node_modules = Path(proc.stdout.strip().splitlines()[-1])
    base = tmp_path_factory.mktemp("sdk-nodejs")
    sdk = base / "sdk"
    shutil.copytree(SDK / "nodejs", sdk)
    (sdk / "node_modules").symlink_to(node_modules, target_is_directory=True)
    return sdk, node_modules / "typescript" / "bin" / "tsc"


@pytest.mark.timeout(BUILD_TIMEOUT)
def test_typescript_sdk_type_checks(node_sdk: tuple[Path, Path]) -> None:
    sdk, tsc = node_sdk
    package = json.loads((sdk / "package.json").read_text())
    assert package["name"] == "@gpu-training/pulumi" and package["version"] == VERSION
    assert package["pulumi"] == PLUGIN_METADATA
    _run(["node", str(tsc), "--noEmit", "-p", str(sdk)], cwd=sdk)


@pytest.mark.timeout(BUILD_TIMEOUT)
def test_typescript_program_on_the_sdk_type_checks(node_sdk: tuple[Path, Path]) -> None:
    sdk, tsc = node_sdk
    program = sdk.parent / "program"
    program.mkdir()
    (program / "node_modules").symlink_to(sdk / "node_modules", target_is_directory=True)
    (program / "index.ts").write_text(TS_PROGRAM)
    config = {
        "compilerOptions": {
            "strict": True,
            "noEmit": True,
            "target": "ES2020",
            "module": "commonjs",
            "moduleResolution": "node",
            "skipLibCheck": True,
            "baseUrl": ".",
            "paths": {"@gpu-training/pulumi": ["../sdk/index.ts"]},
        },
        "files": ["index.ts"],
    }
    (program / "tsconfig.json").write_text(json.dumps(config))
    _run(["node", str(tsc), "-p", str(program)], cwd=program)
