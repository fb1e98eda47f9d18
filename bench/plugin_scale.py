"""The provider plugin at scale: `pulumi up`, `refresh`, `destroy` of N TrainingJobs of a YAML
program, next to the same N resources of a no-op plugin (``bench/noop_plugin.py``, the same
schema and server, nothing done): what is left between them is the plugin's own cost.

Run: ``.venv/bin/python bench/plugin_scale.py [--size 200] [--rounds 1]`` (``make provider`` and
``make pulumi`` first: the plugin and the YAML host in .tools/bin).

Both projects run on the real engine with ``file://`` backends in a temp dir; the jobs against
an emulator in simulate mode (jobs run for a day; a cancel is immediate). Each round runs
``up``, ``refresh`` and ``destroy`` of both projects, the one that goes first alternating from
round to round. Printed: median wall seconds per command, the ratio to the floor, and the
checkpoint's bytes per resource after ``up``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore", category=FutureWarning)
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

from tests.e2e._engine import Workspace, install_pulumi, list_jobs  # noqa: E402
from tests.e2e._plugin import training_job  # noqa: E402

SIMULATE = (
    "--mode",
    "simulate",
    "--simulate-queued-seconds",
    "0.05",
    "--simulate-pending-seconds",
    "0.05",
    "--simulate-run-seconds",
    "86400",
    "--simulate-cancel-seconds",
    "0",
)
COMMANDS = {
    "up": ("up", "--yes", "--skip-preview"),
    "refresh": ("refresh", "--yes", "--skip-preview"),
    "destroy": ("destroy", "--yes", "--skip-preview"),
}


def _project(ws: Workspace, package: str, size: int, endpoint: str) -> None:
    resources: dict[str, Any] = {}
    for i in range(size):
        props = training_job(secret={"fn::secret": f"value-{i}"})
        # CPU only: the emulator holds the project to Vertex's default GPU quotas (64 T4s).
        props["jobSpec"]["workerPoolSpecs"][0]["machineSpec"] = {"machineType": "n1-standard-4"}
        resources[f"job-{i}"] = {"type": f"{package}:vertex:TrainingJob", "properties": props}
    program = {
        "name": f"bench-{package}",
        "runtime": "yaml",
        "stackConfigDir": "stacks",
        "resources": resources,
    }
    (ws.project / "Pulumi.yaml").write_text(yaml.safe_dump(program, sort_keys=False))
    ws.write_config(
        {
            f"{package}:endpoint": endpoint,
            f"{package}:project": "local-training",
            f"{package}:region": "us-central1",
        }
        if package == "gpu-training"
        else {}
    )
    ws.pulumi("stack", "init", ws.stack)


def _workspace(base: Path, bin_dir: Path) -> Workspace:
    ws = Workspace(base, bin_dir)
    for folder in (ws.project / "stacks", ws.backend, ws.home):
        folder.mkdir(parents=True)
    return ws


def _timed(ws: Workspace, command: str) -> float:
    start = time.perf_counter()
    ws.pulumi(*COMMANDS[command], timeout=3600)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()

    from emulator.testing import running_emulator

    bin_dir = install_pulumi()
    subprocess.run(["make", "--no-print-directory", "-s", "provider"], cwd=REPO, check=True)
    with tempfile.TemporaryDirectory(prefix="plugin-scale-") as tmp:
        root = Path(tmp)
        noop_bin = root / "bin"
        noop_bin.mkdir()
        launcher = noop_bin / "pulumi-resource-noop"
        launcher.write_text(
            f"#!/bin/sh\nexec {REPO / '.venv' / 'bin' / 'python'} {REPO / 'bench' / 'noop_plugin.py'}"
            ' "$@"\n'
        )
        launcher.chmod(0o755)
        times: dict[str, dict[str, list[float]]] = {"gpu-training": {}, "noop": {}}
        state: dict[str, int] = {}
        with running_emulator(*SIMULATE, state_dir=root / "emulator") as emu:
            for round_ in range(args.rounds):
                order = ("gpu-training", "noop") if round_ % 2 == 0 else ("noop", "gpu-training")
                spaces: dict[str, Workspace] = {}
                for package in order:
                    ws = _workspace(root / f"{package}-{round_}", bin_dir)
                    ws.env["PATH"] = f"{noop_bin}:{ws.env['PATH']}"
                    _project(ws, package, args.size, emu.endpoint)
                    spaces[package] = ws
                for command in COMMANDS:
                    for package in order:
                        ws = spaces[package]
                        times[package].setdefault(command, []).append(_timed(ws, command))
                        if command == "up":
                            size = len(json.dumps(ws.export()).encode())
                            state[package] = size // args.size
                if list_jobs(emu.client(), "projects/local-training/locations/us-central1"):
                    raise SystemExit("jobs were left behind by destroy")
    print(f"{args.size} resources, {args.rounds} round(s), median wall seconds:")
    print(f"{'command':<10}{'plugin':>10}{'no-op':>10}{'ratio':>8}")
    for command in COMMANDS:
        plugin = statistics.median(times["gpu-training"][command])
        floor = statistics.median(times["noop"][command])
        print(f"{command:<10}{plugin:>10.2f}{floor:>10.2f}{plugin / floor:>8.2f}")
    ratio: Any = state["gpu-training"] / state["noop"]
    print(
        f"state bytes per resource: plugin {state['gpu-training']}, no-op {state['noop']} "
        f"({ratio:.2f}x)"
    )


if __name__ == "__main__":
    main()
