"""The provider plugin at scale: `pulumi up`, `refresh`, `destroy` of N TrainingJobs of a YAML
program, next to the same N resources of a no-op plugin (``bench/noop_plugin.py``, the same
schema and server, nothing done): what is left between them is the plugin's own cost.

Run: ``.venv/bin/python bench/plugin_scale.py [--size 200] [--rounds 1] [--profile DIR]``
(``make provider`` and ``make pulumi`` first: the plugin and the YAML host in .tools/bin).

A third side, the **client floor**, is the same no-op plugin that also imports Vertex AI's job
service client at ``configure`` (``NOOP_CLIENT=1``): what any plugin that calls Vertex AI through
``google-cloud-aiplatform`` pays before its first operation. Its ratio to the no-op is the part
of the plugin's that comes with Google's Python client, not with what the plugin does; the
plugin's ratio to it is the rest.

A fourth side, the **API floor**, is that no-op plugin making the one API call each operation
needs (``NOOP_CLIENT=api``: a create submits the job, a read gets it, a delete cancels it): any
plugin that really runs the jobs pays it. Its ratio to the client floor is what the API calls
alone cost on this machine (the emulator answers them on the same cores); the plugin's ratio to
it is what its checks, notes and guarantees (the look-up before a submit, the wait for a
cancelled job to stop) add.

All four projects run on the real engine (its default ``--parallel``) with ``file://`` backends
in a temp dir; the jobs against an emulator in simulate mode (jobs run for a day; a cancel is
immediate). Each round runs ``up``, ``refresh`` and ``destroy`` of the four projects, the one that
goes first moving on from round to round; after each round no job may be left running (a
cancelled job's record is kept, as by default). Printed, per command: the median wall seconds of
each side and their ratios (issue 41's target: plugin/floor at most 1.1x), and the median CPU
seconds of the command's processes (the engine, the YAML host and the plugin:
``RUSAGE_CHILDREN``) and, for the sides that call the API, of the emulator, which stands for
Vertex AI but shares the machine; then the checkpoint's bytes per resource after ``up``.

``--profile DIR`` runs every plugin under ``bench/sampling.py`` (CPU samples of every thread,
one JSON file per plugin process, command and round in DIR) and prints each command's figures, all
rounds added up. Sampling costs every side alike, but the times of a profiled run are not the
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
SIDES = {
    "gpu-training": "gpu-training",
    "noop": "noop",
    "client-floor": "noop",
    "api-floor": "noop",
}
"""Each side of the benchmark and the package its plugin serves."""
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


def _launchers(root: Path, profile: Path | None) -> dict[str, Path]:
    """Per side, a directory for the front of its ``PATH``: ``pulumi-resource-noop`` for the
    no-op and the client floor (with ``NOOP_CLIENT=1``); with ``profile``, every plugin under
    the sampler (``BENCH_SAMPLE_OUT`` names each run's file)."""
    python = REPO / ".venv" / "bin" / "python"
    noop = REPO / "bench" / "noop_plugin.py"
    sampled = f'{python} {REPO / "bench" / "sampling.py"} "$BENCH_SAMPLE_OUT"'
    run_noop = f"{sampled} {noop}" if profile is not None else f"{python} {noop}"
    scripts = {
        "noop": {"pulumi-resource-noop": f'exec {run_noop} "$@"\n'},
        "client-floor": {"pulumi-resource-noop": f'export NOOP_CLIENT=1\nexec {run_noop} "$@"\n'},
        "api-floor": {"pulumi-resource-noop": f'export NOOP_CLIENT=api\nexec {run_noop} "$@"\n'},
        "gpu-training": {},
    }
    if profile is not None:
        scripts["gpu-training"]["pulumi-resource-gpu-training"] = (
            f'export PYTHONPATH={REPO}\nexec {sampled} -m components.plugin "$@"\n'
        )
    dirs = {}
    for side, launchers in scripts.items():
        dirs[side] = root / "bin" / side
        dirs[side].mkdir(parents=True)
        for name, body in launchers.items():
            launcher = dirs[side] / name
            launcher.write_text(f"#!/bin/sh\n{body}")
            launcher.chmod(0o755)
    return dirs


def _round(
    root: Path,
    round_: int,
    args: argparse.Namespace,
    emu: Any,
    figures: Figures,
    env: dict[str, Path],
) -> None:
    """One round: the three projects made, then up, refresh, destroy of each in turn (the
    side that goes first moves on by one each round)."""
    sides = list(SIDES)
    order = sides[round_ % len(sides) :] + sides[: round_ % len(sides)]
    spaces: dict[str, Workspace] = {}
    for side in order:
        ws = _workspace(root / f"{side}-{round_}", env["BIN"])
        ws.env["PATH"] = f"{env[side]}:{ws.env['PATH']}"
        ws.env["NOOP_ENDPOINT"] = emu.endpoint  # the API floor's
        _project(ws, SIDES[side], args.size, emu.endpoint)
        spaces[side] = ws
    for command in COMMANDS:
        for side in order:
            ws = spaces[side]
            if args.profile is not None:
                ws.env["BENCH_SAMPLE_OUT"] = str(args.profile / f"{side}-{command}-{round_}")
            _timed(ws, command, emu.process.pid, figures, side)
            if command == "up":
                size = len(json.dumps(ws.export()).encode())
                figures.state[side] = size // args.size
    # A cancelled job's record is kept (the default): only a running one is left over.
    if active_jobs(emu.client()):
        raise SystemExit("jobs were left running by destroy")


def _print(args: argparse.Namespace, figures: Figures) -> None:
    median = statistics.median
    print(f"{args.size} resources, {args.rounds} round(s), medians (wall and CPU seconds):")
    columns = ("plugin", "no-op", "floor", "api")
    ratios = [("plugin", "no-op"), ("floor", "no-op"), ("plugin", "floor"), ("api", "floor")]
    ratios.append(("plugin", "api"))
    print(
        f"{'command':<9}"
        + "".join(f"{c:>8}" for c in columns)
        + "".join(f"{f'{a}/{b}':>13}" for a, b in ratios)
        + "".join(f"{f'{c} cpu':>11}" for c in columns)
        + f"{'emulator cpu: plugin':>22}{'api':>6}"
    )
    named = dict(zip(columns, SIDES, strict=True))
    for command in COMMANDS:
        wall = {c: median(figures.wall[named[c]][command]) for c in columns}
        cpu = {c: median(figures.cpu[named[c]][command]) for c in columns}
        emulator = {c: median(figures.emulator[named[c]][command]) for c in ("plugin", "api")}
        print(
            f"{command:<9}"
            + "".join(f"{wall[c]:>8.2f}" for c in columns)
            + "".join(f"{wall[a] / wall[b]:>13.2f}" for a, b in ratios)
            + "".join(f"{cpu[c]:>11.2f}" for c in columns)
            + f"{emulator['plugin']:>22.2f}{emulator['api']:>6.2f}"
        )
    state = figures.state
    ratio = state["gpu-training"] / state["noop"]
    print(
        f"state bytes per resource: plugin {state['gpu-training']}, no-op {state['noop']} "
        f"({ratio:.2f}x)"
    )
    if args.profile is not None:
        for command in COMMANDS:
            for side in SIDES:
                print(f"\nprofile of the {side} plugin, `{command}`, all rounds:")
                report(sorted(args.profile.glob(f"{side}-{command}-*.json")))


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
        env = {"BIN": bin_dir, **_launchers(root, args.profile)}
        with running_emulator(*SIMULATE, state_dir=root / "emulator") as emu:
            for round_ in range(args.rounds):
                _round(root, round_, args, emu, figures, env)
    _print(args, figures)


if __name__ == "__main__":
    main()
