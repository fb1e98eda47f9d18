"""The release artifacts, used as a user would: no checkout, no plugin on ``PATH``.

``scripts/release.py`` builds ``dist/`` once for the module; the plugin archive is installed
with ``pulumi plugin install resource gpu-training V --file ARCHIVE`` into a PULUMI_HOME the
quickstarts share (the engine makes the plugin's virtualenv there, once, from its
requirements: offline, from a wheel folder of this virtualenv's runtime set,
``scripts/wheelhouse.py``). Each quickstart of ``examples/quickstart`` is copied to a folder
outside the checkout and run against one emulator, with a bin dir that holds the engine and
the language hosts only, each end to end (up, ``preview --diff`` of an edit, a bad GPU
count, ``pulumi import --out``, destroy, counting the emulator's jobs): YAML, Python (on the
SDK wheel), TypeScript (the npm tarball) and Go (the module from the proxy tree), the last
two where node and go are on this machine. The policy archive, unpacked, is given to
``pulumi preview --policy-pack`` of the YAML quickstart.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e._engine import PARENT, REPO, SIMULATE, Workspace
from tests.e2e._plugin import TOKEN, active_jobs, start_job_by_hand

sys.path.insert(0, str(REPO / "scripts"))
import release
import wheelhouse

QUICKSTARTS = REPO / "examples" / "quickstart"
FROM_PATH = "using pulumi-resource-gpu-training from $PATH"
TUNING = "gpu-training:vertex:HyperparameterTuningJob"
INSTALL_TIMEOUT = 1200


@dataclass
class Release:
    dist: Path
    bin_dir: Path
    home: Path
    emulator: Any
    base: Path


def _cache() -> Path:
    return Path(
        os.environ.get("PULUMI_TOOLCHAIN_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpu-training"
    )


def _bin_dir_without_plugin(source: Path, target: Path) -> Path:
    """The engine and language hosts, linked; no ``pulumi-resource-gpu-training``."""
    target.mkdir()
    for tool in source.iterdir():
        if tool.name != "pulumi-resource-gpu-training":
            (target / tool.name).symlink_to(tool.resolve())
    return target


@pytest.fixture(scope="module")
def rel(pulumi_bin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Release]:
    from emulator.testing import running_emulator

    subprocess.run(["make", "-s", "pulumi"], cwd=REPO, check=True, timeout=3600)
    base = tmp_path_factory.mktemp("release")
    without = [part for part, tool in (("nodejs", "npm"), ("go", "go")) if not shutil.which(tool)]
    dist = base / "dist"
    release.build(dist, without)
    pins = json.dumps(release.runtime_closure(), sort_keys=True) + sys.version
    wheels = _cache() / "wheelhouse" / hashlib.sha256(pins.encode()).hexdigest()[:16]
    wheelhouse.fill(wheels)
    bin_dir = _bin_dir_without_plugin(pulumi_bin_dir, base / "bin")
    home = base / "pulumi-home"
    env = {
        **Workspace(base, bin_dir).env,
        "PULUMI_HOME": str(home),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheels),
        "PULUMI_PYTHON_CMD": getattr(sys, "_base_executable", sys.executable),  # the wheels' Python
    }
    archive = dist / release.plugin_archive_name(release.version(), "linux-amd64")
    subprocess.run(
        release.install_command(release.version(), archive),
        env=env,
        check=True,
        timeout=INSTALL_TIMEOUT,
        capture_output=True,
    )
    with running_emulator(
        *SIMULATE, "--simulate-run-seconds", "1", state_dir=base / "emulator", cwd=base
    ) as emu:
        yield Release(dist, bin_dir, home, emu, base)


def _quickstart(rel: Release, name: str, tmp_path: Path) -> Workspace:
    """A copy of one quickstart outside the checkout, its stack on the shared emulator."""
    ws = Workspace(tmp_path, rel.bin_dir, stack="dev")
    shutil.copytree(QUICKSTARTS / name, ws.project)
    ws.stack_dir, ws.home = ws.project, rel.home
    ws.env.update(PULUMI_HOME=str(rel.home))
    ws.backend.mkdir()
    assert REPO not in ws.project.resolve().parents
    ws.write_config(
        {
            "gpu-training:endpoint": rel.emulator.endpoint,
            "gpu-training:retryDeadline": "20",
        }
    )
    ws.pulumi("stack", "init", "dev")
    return ws


def _edit(ws: Workspace, file: str, old: str, new: str) -> None:
    path = ws.project / file
    text = path.read_text()
    assert old in text, (file, old)
    path.write_text(text.replace(old, new, 1))


def _up_preview_destroy(ws: Workspace, rel: Release, program: str, args: tuple[str, str]) -> None:
    """up (both jobs succeed), an edit previewed as a replace, destroy: no job left running."""
    client = rel.emulator.client()
    before = {j.name for j in client.list_custom_jobs(parent=PARENT)}
    up = ws.up()
    assert FROM_PATH not in up.output, up.output
    outputs = json.loads(ws.pulumi("stack", "output", "--json").stdout)
    assert outputs["trainState"] == "JOB_STATE_SUCCEEDED"
    assert outputs["tuneState"] == "JOB_STATE_SUCCEEDED"
    assert outputs["bestTrial"]["id"]
    started = {j.name for j in client.list_custom_jobs(parent=PARENT)} - before
    assert len(started) == 1 + 3, started  # the training job and the tuning job's 3 trials
    _edit(ws, program, *args)
    diff = ws.pulumi("preview", "--diff").output
    assert f"+-{TOKEN}: (replace)" in diff, diff
    assert FROM_PATH not in diff
    ws.pulumi("destroy", "--yes", "--skip-preview")
    assert ws.resources(TOKEN) == [] and ws.resources(TUNING) == []
    assert active_jobs(client) == []


def _bad_count_import_destroy(
    ws: Workspace,
    rel: Release,
    program: str,
    count: tuple[str, str],
    out: str,
    build: Callable[[], None] = lambda: None,
) -> str:
    """A bad GPU count fails the preview (clear, no traceback, no job); ``import --out`` of a
    job started by hand writes the program's language; destroy cancels it. Answers the code.
    ``build()`` runs after each edit of ``program`` (a Go program's binary)."""
    client = rel.emulator.client()
    _edit(ws, program, *count)
    build()
    bad = ws.pulumi("preview", expect_failure=True).output
    assert "jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount: 3 x NVIDIA_TESLA_T4" in bad, (
        bad
    )
    assert "Traceback" not in bad and FROM_PATH not in bad
    assert active_jobs(client) == []
    _edit(ws, program, count[1], count[0])
    build()
    hand = start_job_by_hand(client)
    code = ws.project / "imported" / out
    code.parent.mkdir()
    imported = ws.pulumi(
        "import", TOKEN, "byhand", hand.name, "--yes", "--protect=false", "--out", str(code)
    )
    assert "not implemented" not in imported.output and FROM_PATH not in imported.output
    assert [r["id"] for r in ws.resources(TOKEN)] == [hand.name]  # taken over, none started
    ws.pulumi("destroy", "--yes", "--skip-preview")
    assert active_jobs(client) == []
    return code.read_text()


def test_the_plugin_installs_from_its_archive_into_pulumi_home(rel: Release) -> None:
    plugin = rel.home / "plugins" / f"resource-gpu-training-v{release.version()}"
    assert (plugin / "PulumiPlugin.yaml").is_file() and (
        plugin / "venv" / "bin" / "python"
    ).exists()
    site = next((plugin / "venv" / "lib").glob("python*/site-packages"))
    installed = {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")}
    assert "gpu_training" in installed and "google_cloud_aiplatform" in installed
    for absent in ("numpy", "optuna", "pytest", "mypy", "pulumi_policy"):  # the runtime set only
        assert absent not in installed, absent
    sums = (rel.dist / "SHA256SUMS").read_text().splitlines()
    for line in sums:
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((rel.dist / name).read_bytes()).hexdigest() == digest, name
    with tarfile.open(rel.dist / f"gpu-training-policy-v{release.version()}.tar.gz") as pack:
        names = pack.getnames()
    assert "gpu-training-policy/PulumiPolicy.yaml" in names
    assert "gpu-training-policy/components/policies.py" in names


def _released_policy_pack(rel: Release, tmp_path: Path) -> Path:
    """The policy archive unpacked outside the checkout; its ``venv`` is the one ``make
    policy`` made of the same requirements (policy/requirements.txt)."""
    with tarfile.open(rel.dist / f"gpu-training-policy-v{release.version()}.tar.gz") as pack:
        pack.extractall(tmp_path / "policy-release", filter="data")
    folder = tmp_path / "policy-release" / "gpu-training-policy"
    (folder / "venv").symlink_to(REPO / "policy" / ".venv", target_is_directory=True)
    return folder


def test_yaml_quickstart_end_to_end(rel: Release, tmp_path: Path) -> None:
    ws = _quickstart(rel, "yaml", tmp_path)
    # The released policy pack judges the quickstart's jobs (its dev rules: a cost-center
    # label and Spot are required) before anything is submitted.
    pack = _released_policy_pack(rel, tmp_path)
    judged = ws.pulumi(
        "preview",
        "--policy-pack",
        str(pack),
        "--policy-pack-config",
        str(pack / "dev.json"),
        expect_failure=True,
    ).output
    assert "[mandatory]  required-labels" in judged and "cost-center" in judged, judged
    assert "[mandatory]  spot-required" in judged, judged
    assert "allowed-accelerators" not in judged and "Traceback" not in judged, judged
    assert active_jobs(rel.emulator.client()) == []
    _up_preview_destroy(ws, rel, "Pulumi.yaml", ('"--epochs", "2"', '"--epochs", "3"'))
    code = _bad_count_import_destroy(
        ws, rel, "Pulumi.yaml", ("acceleratorCount: 1}", "acceleratorCount: 3}"), "imported.yaml"
    )
    assert "type: gpu-training:vertex:TrainingJob" in code and "by-hand" in code


def test_python_plugin_quickstart_end_to_end(rel: Release, tmp_path: Path) -> None:
    ws = _quickstart(rel, "python-plugin", tmp_path)
    # The program's virtualenv: this one's pulumi, and the SDK from its release wheel.
    site = tmp_path / "sdk-site"
    (sdk_wheel,) = rel.dist.glob("pulumi_gpu_training-*.whl")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(site),
            str(sdk_wheel),
        ],
        check=True,
        timeout=600,
    )
    (ws.project / "venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    ws.env["PYTHONPATH"] = str(site)
    _up_preview_destroy(ws, rel, "__main__.py", ('"--epochs", "2"', '"--epochs", "3"'))
    code = _bad_count_import_destroy(
        ws, rel, "__main__.py", ('"accelerator_count": 1', '"accelerator_count": 3'), "imported.py"
    )
    assert "pulumi_gpu_training" in code and "TrainingJob(" in code


@pytest.mark.skipif(shutil.which("npm") is None, reason="node and npm are not on this machine")
def test_typescript_quickstart_end_to_end(rel: Release, tmp_path: Path) -> None:
    ws = _quickstart(rel, "typescript", tmp_path)
    modules = Path(
        subprocess.run(
            [str(REPO / "scripts" / "install-node-deps")],
            stdout=subprocess.PIPE,
            text=True,
            check=True,
            timeout=1800,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    # node_modules as `npm install` of package.json leaves it: the pinned @pulumi/pulumi and
    # the SDK unpacked from its release tarball.
    (ws.project / "node_modules").mkdir()
    for entry in modules.iterdir():
        (ws.project / "node_modules" / entry.name).symlink_to(entry)
    sdk = ws.project / "node_modules" / "@gpu-training" / "pulumi"
    sdk.parent.mkdir()
    with tarfile.open(rel.dist / f"gpu-training-pulumi-{release.version()}.tgz") as packed:
        packed.extractall(tmp_path / "npm", filter="data")
    shutil.move(tmp_path / "npm" / "package", sdk)
    _up_preview_destroy(ws, rel, "index.ts", ('"--epochs", "2"', '"--epochs", "3"'))
    code = _bad_count_import_destroy(
        ws, rel, "index.ts", ("acceleratorCount: 1 }", "acceleratorCount: 3 }"), "imported.ts"
    )
    assert "vertex.TrainingJob(" in code and "by-hand" in code, code


@pytest.mark.skipif(shutil.which("go") is None, reason="go is not on this machine")
def test_go_quickstart_end_to_end(rel: Release, tmp_path: Path) -> None:
    ws = _quickstart(rel, "go", tmp_path)
    cache, proxy = subprocess.run(
        ["go", "env", "GOMODCACHE", "GOPROXY"], capture_output=True, text=True, check=True
    ).stdout.split()
    # The SDK from the release's proxy tree; pulumi's modules from this machine's cache, as a
    # proxy (a module cache of its own: the shared one never holds the SDK's v0.2.0), else from
    # the machine's own proxy: the cache holds what earlier builds fetched, not always all the
    # program needs (a fresh machine that ran no SDK build yet).
    go_env = {
        **ws.env,
        "GOMODCACHE": str(tmp_path / "gomod"),
        "GOPROXY": f"{(rel.dist / 'goproxy').as_uri()},{Path(cache, 'cache', 'download').as_uri()},{proxy}",
        "GOFLAGS": "-mod=mod",
        "GONOSUMDB": "github.com/gpu-training",
        "GOSUMDB": "off",
        "GOTOOLCHAIN": "local",
        "CGO_ENABLED": "0",
    }

    def build() -> None:
        subprocess.run(
            ["go", "build", "-trimpath", "-o", "bin/quickstart", "."],
            cwd=ws.project,
            env=go_env,
            check=True,
            timeout=1200,
        )

    build()
    client = rel.emulator.client()
    up = ws.up()
    assert FROM_PATH not in up.output
    assert (
        json.loads(ws.pulumi("stack", "output", "--json").stdout)["trainState"]
        == "JOB_STATE_SUCCEEDED"
    )
    _edit(ws, "main.go", 'pulumi.String("2")', 'pulumi.String("3")')
    build()
    assert f"+-{TOKEN}: (replace)" in ws.pulumi("preview", "--diff").output
    ws.pulumi("destroy", "--yes", "--skip-preview")
    assert active_jobs(client) == []
    code = _bad_count_import_destroy(
        ws,
        rel,
        "main.go",
        ("AcceleratorCount: pulumi.Int(1)", "AcceleratorCount: pulumi.Int(3)"),
        "imported.go",
        build,
    )
    assert "vertex.NewTrainingJob(" in code and "by-hand" in code, code
    assert active_jobs(client) == []
    assert ws.resources(TOKEN) == [] and ws.resources(TUNING) == []
