"""The provider plugin at scale: `pulumi up`, `refresh`, `destroy` of N TrainingJobs of a YAML
program, next to the same N resources of a no-op plugin (``bench/noop_plugin.py``, the same
schema and server, nothing done): what is left between them is the plugin's own cost.

Run: ``.venv/bin/python bench/plugin_scale.py [--size 200] [--rounds 1] [--profile DIR]``
(``make provider`` and ``make pulumi`` first: the plugin and the YAML host in .tools/bin).

Both projects run on the real engine (its default ``--parallel``) with ``file://`` backends in a
temp dir; the jobs against an emulator in simulate mode (jobs run for a day; a cancel is
immediate). Each round runs ``up``, ``refresh`` and ``destroy`` of both projects, the one that
goes first alternating from round to round; after each round no job may be left running (a
cancelled job's record is kept, as by default). Printed, per command: the median wall seconds
of each side and their ratio (the issue's target: at most 1.2x), and the median CPU seconds of
the command's processes (the engine, the YAML host and the plugin: ``RUSAGE_CHILDREN``) and, for
the plugin's side, of the emulator, which stands for Vertex AI but shares the machine; then the
checkpoint's bytes per resource after ``up`` (target: at most 1.5x).

``--profile DIR`` runs both plugins under ``bench/sampling.py`` (CPU samples of every thread,
one JSON file per plugin process, command and round in DIR) and prints each command's figures, all
rounds added up. Sampling costs both sides alike, but the times of a profiled run are not the
benchmark's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore", category=FutureWarning)
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

from bench.sampling import report  # noqa: E402
from tests.e2e._engine import Workspace, install_pulumi  # noqa: E402
from tests.e2e._plugin import active_jobs, training_job  # noqa: E402

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


def _cpu(pid: int) -> float:
    """CPU seconds process ``pid`` has used (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Figures:
    """Per side and command: wall seconds, the command's CPU seconds, the emulator's."""

    wall: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    cpu: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    emulator: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    state: dict[str, int] = field(default_factory=dict)

    def add(self, package: str, command: str, wall: float, cpu: float, emulator: float) -> None:
        for table, value in ((self.wall, wall), (self.cpu, cpu), (self.emulator, emulator)):
            table.setdefault(package, {}).setdefault(command, []).append(value)


def _timed(ws: Workspace, command: str, emulator_pid: int, figures: Figures, package: str) -> None:
    emulator = _cpu(emulator_pid)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    ws.pulumi(*COMMANDS[command], timeout=3600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    figures.add(package, command, wall, cpu, _cpu(emulator_pid) - emulator)


def _launchers(bin_dir: Path, profile: Path | None) -> None:
    """``pulumi-resource-noop`` in ``bin_dir``; with ``profile``, both plugins under the sampler
    (``BENCH_SAMPLE_OUT`` names each run's file)."""
    python = REPO / ".venv" / "bin" / "python"
    noop = REPO / "bench" / "noop_plugin.py"
    sampled = f'{python} {REPO / "bench" / "sampling.py"} "$BENCH_SAMPLE_OUT"'
    scripts = {"pulumi-resource-noop": f'exec {python} {noop} "$@"\n'}
    if profile is not None:
        scripts["pulumi-resource-noop"] = f'exec {sampled} {noop} "$@"\n'
        scripts["pulumi-resource-gpu-training"] = (
            f'export PYTHONPATH={REPO}\nexec {sampled} -m components.plugin "$@"\n'
        )
    for name, body in scripts.items():
        launcher = bin_dir / name
        launcher.write_text(f"#!/bin/sh\n{body}")
        launcher.chmod(0o755)


def _round(
    root: Path,
    round_: int,
    args: argparse.Namespace,
    emu: Any,
    figures: Figures,
    env: dict[str, str],
) -> None:
    """One round: both projects made, then up, refresh, destroy of each in turn."""
    order = ("gpu-training", "noop") if round_ % 2 == 0 else ("noop", "gpu-training")
    spaces: dict[str, Workspace] = {}
    for package in order:
        ws = _workspace(root / f"{package}-{round_}", Path(env["BIN"]))
        ws.env["PATH"] = f"{env['NOOP_BIN']}:{ws.env['PATH']}"
        _project(ws, package, args.size, emu.endpoint)
        spaces[package] = ws
    for command in COMMANDS:
        for package in order:
            ws = spaces[package]
            if args.profile is not None:
                ws.env["BENCH_SAMPLE_OUT"] = str(args.profile / f"{package}-{command}-{round_}")
            _timed(ws, command, emu.process.pid, figures, package)
            if command == "up":
                size = len(json.dumps(ws.export()).encode())
                figures.state[package] = size // args.size
    # A cancelled job's record is kept (the default): only a running one is left over.
    if active_jobs(emu.client()):
        raise SystemExit("jobs were left running by destroy")


def _print(args: argparse.Namespace, figures: Figures) -> None:
    median = statistics.median
    print(f"{args.size} resources, {args.rounds} round(s), medians:")
    print(
        f"{'command':<10}{'plugin s':>10}{'no-op s':>10}{'ratio':>8}"
        f"{'plugin cpu':>12}{'no-op cpu':>11}{'emulator cpu':>14}"
    )
    for command in COMMANDS:
        plugin = median(figures.wall["gpu-training"][command])
        floor = median(figures.wall["noop"][command])
        print(
            f"{command:<10}{plugin:>10.2f}{floor:>10.2f}{plugin / floor:>8.2f}"
            f"{median(figures.cpu['gpu-training'][command]):>12.2f}"
            f"{median(figures.cpu['noop'][command]):>11.2f}"
            f"{median(figures.emulator['gpu-training'][command]):>14.2f}"
        )
    state = figures.state
    ratio = state["gpu-training"] / state["noop"]
    print(
        f"state bytes per resource: plugin {state['gpu-training']}, no-op {state['noop']} "
        f"({ratio:.2f}x)"
    )
    if args.profile is not None:
        for command in COMMANDS:
            for package in ("gpu-training", "noop"):
                print(f"\nprofile of the {package} plugin, `{command}`, all rounds:")
                report(sorted(args.profile.glob(f"{package}-{command}-*.json")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--profile", type=Path, help="sample both plugins into this directory")
    args = parser.parse_args()
    if args.profile is not None:
        args.profile = args.profile.resolve()
        args.profile.mkdir(parents=True, exist_ok=True)

    from emulator.testing import running_emulator

    bin_dir = install_pulumi()
    subprocess.run(["make", "--no-print-directory", "-s", "provider"], cwd=REPO, check=True)
    figures = Figures()
    with tempfile.TemporaryDirectory(prefix="plugin-scale-") as tmp:
        root = Path(tmp)
        noop_bin = root / "bin"
        noop_bin.mkdir()
        _launchers(noop_bin, args.profile)
        env = {"BIN": str(bin_dir), "NOOP_BIN": str(noop_bin)}
        with running_emulator(*SIMULATE, state_dir=root / "emulator") as emu:
            for round_ in range(args.rounds):
                _round(root, round_, args, emu, figures, env)
    _print(args, figures)


if __name__ == "__main__":
    main()
