"""`pulumi preview` wall time: N TrainingJobs next to N no-op dynamic resources (the floor).

Run: ``.venv/bin/python bench/preview.py [--sizes 10 50 200] [--repeat 5]``.

Both projects run on the real engine (scripts/install-pulumi) with a ``file://`` backend in a
temp dir, on a new stack, so every resource is a create: the engine runs the program, starts
the Python dynamic provider and calls ``check`` once per resource. The floor is the same
number of resources of a provider that does nothing, in an importable module (pickled by
reference, like ``TrainingJobProvider``): what any Python dynamic resource costs. The
TrainingJob stack is the project itself (``components.program``), its ``training:jobs`` list
generated, with ``training:endpoint`` on a port where nothing listens: a preview must not
call the API (it would fail), so no emulator runs. After one warm-up run of each, every round
runs the three projects one after the other (so a change of load on a shared machine hits
all three alike); each figure is the median of ``--repeat`` rounds, the ratio is
TrainingJob / floor (goal: <= 1.5 at 200), and "per round" is the range of the rounds'
own ratios.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from components.formats import spec_from_document  # noqa: E402
from components.lifecycle._wire import (  # noqa: E402
    INPUT_PROPERTIES,
    OUTPUT_PROPERTIES,
    encode_spec,
    is_default_input,
)
from components.training_job import prepare_spec, resolve_local_paths  # noqa: E402
from tests.e2e._engine import (  # noqa: E402
    GCP_PROJECT,
    GCP_REGION,
    Workspace,
    install_pulumi,
    job_entry,
    local_config,
    offline_env,
    python_job,
    venv_dir,
)

OUTPUTS_FILE = "outputs_file"
STACK_OUTPUT_FILE = "stack_output.json"
"""A file in a floor project whose status every no-op's name maps to in the ``jobs`` stack
output (``bench/scale.py --shaped``); no file, no stack output."""
"""The no-op's input naming a JSON file of outputs its create adds (the input is not kept);
spelled again inside ``NOOP_PROVIDER``, which the provider process runs on its own."""

NOOP_PROVIDER = '''
"""A dynamic provider that does nothing: the floor of a Python dynamic resource."""

import json

from pulumi.dynamic import CheckResult, CreateResult, DiffResult, Resource, ResourceProvider

OUTPUTS_FILE = "outputs_file"  # bench/preview.py's OUTPUTS_FILE


class NoopProvider(ResourceProvider):
    def check(self, olds, news):
        return CheckResult(news, [])

    def diff(self, id, olds, news):
        return DiffResult(changes=olds != news)

    def create(self, props):
        outs = {k: v for k, v in props.items() if k != OUTPUTS_FILE}
        if props.get(OUTPUTS_FILE):
            with open(props[OUTPUTS_FILE], encoding="utf-8") as f:
                outs.update(json.load(f))
        return CreateResult(f"noop-{props['index']}", outs)


class Noop(Resource):
    def __init__(self, name, index, extra, opts=None):
        super().__init__(NoopProvider(), name, {**extra, "index": index}, opts)
'''

NOOP_MAIN = """
import json
import os

import pulumi
from noop_provider import Noop

STACK_OUTPUT_FILE = "{STACK_OUTPUT_FILE}"

count = int(pulumi.Config().require("count"))
with open("props.json", encoding="utf-8") as f:
    extra = json.load(f)
for i in range(count):
    Noop(f"noop-{i:03d}", i, extra)
# bench/scale.py --shaped: the stack output a TrainingJob stack exports (each job's status).
if os.path.exists(STACK_OUTPUT_FILE):
    with open(STACK_OUTPUT_FILE, encoding="utf-8") as f:
        status = json.load(f)
    pulumi.export("jobs", {f"noop-{i:03d}": status for i in range(count)})
"""


def training_job_props() -> dict[str, Any]:
    """The property bag one bench TrainingJob registers (inputs, and ``status`` as None).

    Like ``TrainingJob``, it leaves out inputs at their defaults (``INPUT_DEFAULTS``).
    """
    loaded = spec_from_document(python_job(None), "bench").spec
    prepared = prepare_spec(resolve_local_paths(loaded, REPO / "stacks" / "jobs"))
    props: dict[str, Any] = dict.fromkeys((*INPUT_PROPERTIES, *OUTPUT_PROPERTIES))
    props.update(
        spec=encode_spec({"displayName": "job-000", **prepared.spec}),
        project=GCP_PROJECT,
        region=GCP_REGION,
        triggers=["shard-0", "package:trainer:0123456789abcdef"],
        wait_for="submitted",
        exclusive_gpus=False,
        keep_record_on_delete=False,
        identity="0" * 24,
    )
    return {k: v for k, v in props.items() if not is_default_input(k, v)}


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when this returns


PREVIEW = ["pulumi", "--non-interactive", "--color", "never", "preview"]


@dataclass(frozen=True)
class Project:
    """A project ready for ``pulumi preview``: its directory and environment."""

    cwd: Path
    env: dict[str, str]

    def preview_seconds(self) -> float:
        start = time.perf_counter()
        proc = subprocess.run(
            PREVIEW, cwd=self.cwd, env=self.env, capture_output=True, text=True, check=False
        )
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"pulumi preview failed in {self.cwd}:\n{proc.stdout}\n{proc.stderr}")
        return elapsed


def training_jobs_project(base: Path, bin_dir: Path, count: int) -> Project:
    ws = Workspace.create(base, bin_dir, stack="bench")
    spec = ws.write_job("bench", python_job(None))
    jobs = [job_entry(f"job-{i:03d}", spec, triggers=[f"shard-{i}"]) for i in range(count)]
    ws.init_stack(local_config(f"http://127.0.0.1:{_closed_port()}", jobs))
    return Project(ws.project, ws.env)


def floor_project(
    base: Path, bin_dir: Path, count: int, props: dict[str, Any] | None = None
) -> Project:
    """N no-op resources; ``props`` adds the same properties to each (default: none)."""
    project = base / "floor"
    project.mkdir(parents=True)
    (project / "props.json").write_text(json.dumps(props or {}))
    (project / "Pulumi.yaml").write_text(
        textwrap.dedent(
            f"""\
            name: preview-floor
            runtime:
              name: python
              options:
                toolchain: pip
                virtualenv: {venv_dir()}
            """
        )
    )
    (project / "noop_provider.py").write_text(NOOP_PROVIDER)
    (project / "__main__.py").write_text(
        NOOP_MAIN.replace("{STACK_OUTPUT_FILE}", STACK_OUTPUT_FILE)
    )
    (base / "backend").mkdir()
    env = offline_env(bin_dir, base / "home", base / "backend", "bench-only")
    base_cmd = ["pulumi", "--non-interactive", "--color", "never"]
    for args in (["stack", "init", "bench"], ["config", "set", "count", str(count)]):
        subprocess.run([*base_cmd, *args], cwd=project, env=env, capture_output=True, check=True)
    return Project(project, env)


def side_by_side(projects: dict[str, Project], repeat: int) -> dict[str, list[float]]:
    """Preview times per project, one of each in turn: load changes hit all of them alike."""
    for project in projects.values():
        project.preview_seconds()  # warm-up: bytecode, plugin discovery, page cache
    times: dict[str, list[float]] = {name: [] for name in projects}
    for _ in range(repeat):
        for name, project in projects.items():
            times[name].append(project.preview_seconds())
    return times


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 200])
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds per size (median)")
    args = parser.parse_args()
    bin_dir = install_pulumi()
    print(
        f"pulumi preview, new stack (all creates): median of {args.repeat} rounds after a "
        "warm-up; each round runs the three projects one after the other"
    )
    print(
        f"{'resources':>9}  {'TrainingJob':>11}  {'no-op floor':>11}  {'ratio':>5}  "
        f"{'(per round)':>11}  {'floor, TrainingJob props':>24}  {'ratio':>5}"
    )
    shaped_props = training_job_props()
    for count in args.sizes:
        with tempfile.TemporaryDirectory(prefix="bench-preview-") as tmp:
            base = Path(tmp)
            times = side_by_side(
                {
                    "jobs": training_jobs_project(base / "jobs", bin_dir, count),
                    "floor": floor_project(base / "floor", bin_dir, count),
                    "shaped": floor_project(base / "shaped", bin_dir, count, shaped_props),
                },
                args.repeat,
            )
        jobs, floor, shaped = (statistics.median(times[k]) for k in ("jobs", "floor", "shaped"))
        rounds = [j / f for j, f in zip(times["jobs"], times["floor"], strict=True)]
        spread = f"{min(rounds):.2f}-{max(rounds):.2f}"
        print(
            f"{count:>9}  {jobs:>10.2f}s  {floor:>10.2f}s  {jobs / floor:>4.2f}x  {spread:>11}"
            f"  {shaped:>23.2f}s  {jobs / shaped:>4.2f}x",
            flush=True,
        )
    print(
        f"goal: <= 1.5x the no-op floor at {max(args.sizes)} jobs. The second floor registers "
        "no-op resources with a TrainingJob's property bag (spec, inputs, status placeholder): "
        "the part of the gap that is the engine and SDK moving those properties."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
