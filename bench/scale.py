"""`pulumi up`, `refresh` and `destroy` at scale: N TrainingJobs next to N no-op dynamic resources.

Run: ``.venv/bin/python bench/scale.py [--sizes 50 200] [--rounds 3] [--quick] [--shaped]
[--baseline REV] [--parts table waiting destroy provider] [--profile DIR]``.

Both projects run on the real engine (scripts/install-pulumi) with ``file://`` backends in a
temp dir. The TrainingJob project is the project itself (``components.program``), its
``training:jobs`` list generated (``waitFor: submitted``), against an emulator in simulate mode
started by the bench (jobs start at once and then run for a day; a cancel is immediate,
``--simulate-cancel-seconds 0``). The floor is the same number of resources of a dynamic
provider that does nothing (``bench/preview.py``'s): what any Python dynamic resource costs.
With ``--shaped``, a third project: no-op resources that carry a TrainingJob's inputs and the
``status`` output of one of the bench's real jobs (taken after its first ``up``), the ``jobs``
stack output of every job's status, and the jobs stack's configuration (which the engine
hands a dynamic provider whole and keeps in its state), so the engine checkpoints the same
state: what is left between it and the jobs is the provider's.
With ``--baseline REV``, a fourth: the same jobs run by the ``components`` package of git
revision ``REV`` (against the same emulator, in the same rounds), so a change's effect is
measured side by side rather than across runs on a shared machine.
Each round runs ``up`` (all creates), ``preview`` (nothing changed: the program runs, reads
the stack's state for the jobs it holds, and every resource is checked and diffed), ``refresh`` (every job RUNNING) and ``destroy`` (every
job RUNNING: cancel, wait, delete the record) of both projects, one after the other, the
project that goes first alternating from round to round, so a change of load on a shared
machine hits both alike. Figures are medians over the rounds; "per round" is the range of the
rounds' own ratios.

CPU seconds per process come from /proc: the CLI (``pulumi``), the program (the Python that
runs ``__main__.py``), the dynamic provider (``python -m pulumi.dynamic``), the language host
(the Go ``pulumi-language-python``) and, for the TrainingJob project, the emulator. The
emulator's figure is exact (read before and after the command); the others are the last
sample of a 50 ms poll of the CLI's descendants (each may miss its last 50 ms), and ``total``
is exact (``wait4``: the CLI and every descendant it reaped).

Then the figures of issue 16, the provider host's concurrency: ``up`` of 16 jobs with
``waitFor: running`` that each take 5 s to start, against one such job, and the same with
``training:maxConcurrentOperations: 4`` (what the stock host serves without our lift); and
``destroy`` of 200 running jobs whose cancel takes 1 s (Vertex AI's take tens of seconds) at
``--parallel`` 8 and 16, and at 16 with the stock host's 4.

Last (``--parts provider``), the provider alone, without the engine: as many creates, reads and
deletes as the largest size, 8 at a time, in the bench's own process against the emulator (its
CPU and wall time): the provider's own cost per operation, which the engine's noise hides.

``--profile DIR`` runs the TrainingJob commands with ``GPU_TRAINING_PROVIDER_PROFILE`` set
(every provider operation sampled on its thread's CPU time, summed per command in pstats
format: ``components.dynamic._host``) and prints where the provider's time goes.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pstats
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The client library warns about Python 3.11's end of life on import; not news for a bench.
warnings.filterwarnings("ignore", category=FutureWarning)
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.preview import (  # noqa: E402
    OUTPUTS_FILE,
    STACK_OUTPUT_FILE,
    Project,
    floor_project,
    training_job_props,
)
from components.lifecycle._profile import PROFILE_ENV  # noqa: E402
from tests.e2e._engine import (  # noqa: E402
    Workspace,
    install_pulumi,
    job_entry,
    list_jobs,
    local_config,
    python_job,
)

CLI = ["pulumi", "--non-interactive", "--color", "never"]
COMMANDS = {
    "up": ["up", "--yes", "--skip-preview"],
    "preview": ["preview"],
    "refresh": ["refresh", "--yes", "--skip-preview"],
    "destroy": ["destroy", "--yes", "--skip-preview"],
}
ROLES = ("cli", "program", "provider", "langhost", "emulator")
PARTS = ("table", "waiting", "destroy", "provider")
_TICK = os.sysconf("SC_CLK_TCK")
_SAMPLE_SECONDS = 0.05


# -- CPU per process -------------------------------------------------------------------------------


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process itself) from /proc/PID/stat."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK


def _cpu_seconds(pid: int | None) -> float:
    stat = _stat(pid) if pid else None
    return stat[1] if stat else 0.0


def _role(pid: int, cli: int) -> str:
    if pid == cli:
        return "cli"
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "other"
    text = b" ".join(argv)
    if b"pulumi-language-python-exec" in text:
        return "program"
    if b"pulumi.dynamic" in text or b"pulumi-resource-pulumi-python" in text:
        return "provider"
    if argv and argv[0].endswith(b"pulumi-language-python"):
        return "langhost"
    return "other"


@dataclass
class Run:
    """One command's wall time and CPU seconds by role."""

    seconds: float
    cpu: dict[str, float]


@dataclass
class _Sampler:
    cli: int
    last: dict[int, tuple[str, float]] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    def poll(self) -> None:
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(_SAMPLE_SECONDS)

    def sample(self) -> None:
        parents: dict[int, int] = {}
        cpu: dict[int, float] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                stat = _stat(int(entry.name))
                if stat is not None:
                    parents[int(entry.name)], cpu[int(entry.name)] = stat
        for pid, seconds in cpu.items():
            ancestor, hops = pid, 0
            while ancestor not in (self.cli, 0, 1) and hops < 16:
                ancestor, hops = parents.get(ancestor, 0), hops + 1
            if ancestor == self.cli:
                role = self.last[pid][0] if pid in self.last else _role(pid, self.cli)
                self.last[pid] = (role, seconds)


def run_measured(
    args: Sequence[str], *, cwd: Path, env: dict[str, str], emulator_pid: int | None = None
) -> Run:
    """Run a pulumi command (it must succeed); its wall time and CPU seconds per role."""
    emulator_before = _cpu_seconds(emulator_pid)
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*CLI, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    sampler = _Sampler(proc.pid)
    thread = threading.Thread(target=sampler.poll, daemon=True)
    thread.start()
    assert proc.stdout is not None
    output = proc.stdout.read()  # drained while it runs: a full pipe would stall the CLI
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    sampler.stop.set()
    thread.join()
    if proc.returncode != 0:
        raise SystemExit(
            f"pulumi {' '.join(args)} failed in {cwd}:\n{output.decode(errors='replace')[-4000:]}"
        )
    cpu = dict.fromkeys(ROLES, 0.0)
    for role, seconds in sampler.last.values():
        if role in cpu:
            cpu[role] += seconds
    cpu["total"] = usage.ru_utime + usage.ru_stime
    if emulator_pid:
        cpu["emulator"] = _cpu_seconds(emulator_pid) - emulator_before
    return Run(elapsed, cpu)


# -- projects ----------------------------------------------------------------------------------------


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


@contextmanager
def emulator(state_dir: Path, *args: str) -> Iterator[Any]:
    from emulator.testing import running_emulator

    # The projects' trainer packages lie beside the state dir: let the emulator read them.
    allowed = ("--allow-root", str(state_dir.parent))
    with running_emulator(*SIMULATE, *allowed, *args, state_dir=state_dir, cwd=REPO) as emu:
        yield emu


@dataclass
class JobsProject:
    """A TrainingJob project: ``ws`` against the emulator ``emu``."""

    ws: Workspace
    emu: Any
    profile: Path | None = None

    def run(self, op: str, *extra: str) -> Run:
        env = dict(self.ws.env)
        if self.profile is not None:
            env[PROFILE_ENV] = str(self.profile / f"{op}.prof")
        return run_measured(
            [*COMMANDS[op], *extra], cwd=self.ws.project, env=env, emulator_pid=self.emu.process.pid
        )

    def wait_running(self, count: int) -> None:
        """Until the emulator holds ``count`` jobs, all RUNNING (refresh/destroy see them so)."""
        wait_running(self.emu, count)


def wait_running(emu: Any, count: int) -> None:
    """Until ``emu`` holds ``count`` jobs, all RUNNING."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        jobs = list_jobs(emu.client())
        if len(jobs) == count and all(j.state.name == "JOB_STATE_RUNNING" for j in jobs):
            return
        time.sleep(0.2)
    raise SystemExit(f"the emulator's {count} jobs did not all run within 120 s")


def jobs_project(
    base: Path,
    bin_dir: Path,
    emu: Any,
    count: int,
    *,
    wait_for: str = "submitted",
    profile: Path | None = None,
    config: dict[str, Any] | None = None,
) -> JobsProject:
    ws = Workspace.create(base, bin_dir, stack="bench")
    spec = ws.write_job("bench", python_job(None))
    jobs = [
        job_entry(f"job-{i:03d}", spec, waitFor=wait_for, triggers=[f"shard-{i}"])
        for i in range(count)
    ]
    # Records deleted, as before issue 35 kept them by default: the same work as a baseline's.
    settings = {"training:deleteRecords": True, **(config or {})}
    ws.init_stack(local_config(emu.endpoint, jobs, **settings))
    return JobsProject(ws, emu, profile)


# -- the side-by-side rounds -----------------------------------------------------------------------


@dataclass
class Figures:
    """Per project (``jobs``, ``floor``, maybe ``shaped``) and operation: the runs, round by round."""

    runs: dict[str, dict[str, list[Run]]]


def with_components_of(project: JobsProject, revision: str) -> JobsProject:
    """``project`` running the ``components`` package of a git ``revision`` (a baseline)."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision, "components"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    shutil.rmtree(project.ws.project / "components")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(project.ws.project, filter="data")
    return project


def side_by_side(
    base: Path,
    bin_dir: Path,
    count: int,
    rounds: int,
    profile: Path | None,
    *,
    shaped: bool,
    baseline: str | None = None,
) -> Figures:
    with emulator(base / "emulator") as emu:
        projects = {"jobs": jobs_project(base / "jobs", bin_dir, emu, count, profile=profile)}
        if baseline is not None:
            projects["baseline"] = with_components_of(
                jobs_project(base / "baseline", bin_dir, emu, count), baseline
            )
        jobs = projects["jobs"]
        floors = {"floor": floor_project(base / "floor", bin_dir, count)}
        if shaped:
            floors["shaped"] = floor_project(base / "shaped", bin_dir, count, training_job_props())

        def runner(name: str) -> Any:
            if name in projects:
                return projects[name].run
            floor = floors[name]
            return lambda op: run_measured(COMMANDS[op], cwd=floor.cwd, env=floor.env)

        names = [*projects, *floors]
        figures = Figures({name: {op: [] for op in COMMANDS} for name in names})
        # Warm-up: bytecode, plugin discovery, page cache (and the emulator's first jobs).
        for op in COMMANDS:
            if op == "refresh":
                wait_running(emu, count * len(projects))
            for name in names:
                if name == "shaped" and op == "up":
                    give_a_jobs_status(floors["shaped"], jobs.ws)
                runner(name)(op)
        for index in range(rounds):
            # The project that goes first alternates: a trend in the machine's load hits all.
            order = names if index % 2 == 0 else names[::-1]
            for op in COMMANDS:
                if op == "refresh":
                    wait_running(emu, count * len(projects))
                for name in order:
                    figures.runs[name][op].append(runner(name)(op))
            print(f"  (round {index + 1} of {rounds} at {count} done)", file=sys.stderr, flush=True)
    return figures


def give_a_jobs_status(floor: Project, jobs: Workspace) -> None:
    """Give the shaped floor a TrainingJob stack's whole state: a real job's ``status`` output
    in each resource's property bag, the ``jobs`` stack output (every job's status), and the
    jobs stack's configuration (the engine hands a dynamic provider the whole stack
    configuration, ``training:jobs`` included, and keeps it in the provider's state).

    The CLI serialises every property of every resource at each checkpoint, and its cost grows
    with their number and nesting, not only with their bytes: without these the shaped floor
    would under-state what a TrainingJob stack's state costs the engine.
    """
    status = next(iter(jobs.training_jobs().values()))["outputs"]["status"]
    outputs_file = floor.cwd / "outputs.json"
    outputs_file.write_text(json.dumps({"status": status}))
    (floor.cwd / STACK_OUTPUT_FILE).write_text(json.dumps(status))
    props_file = floor.cwd / "props.json"
    props = json.loads(props_file.read_text())
    # An input that names the file: the no-op's create adds it to its outputs only, as a
    # TrainingJob's status is an output and not an input.
    props_file.write_text(json.dumps({**props, OUTPUTS_FILE: str(outputs_file)}))
    config = json.loads(jobs.pulumi("config", "--json").stdout)
    for key, entry in config.items():
        subprocess.run(
            ["pulumi", "config", "set", key, "--", str(entry["value"])],
            cwd=floor.cwd,
            env=floor.env,
            capture_output=True,
            check=True,
        )


def _median(runs: list[Run]) -> float:
    return statistics.median(r.seconds for r in runs)


def _cpu(runs: list[Run], roles: Sequence[str]) -> str:
    return " / ".join(f"{statistics.median(r.cpu[role] for r in runs):.1f}" for role in roles)


LABELS = {
    "up": "`up` (create, waitFor submitted)",
    "preview": "`preview` (all unchanged)",
    "refresh": "`refresh` (all RUNNING)",
    "destroy": "`destroy` (all RUNNING)",
}


def print_table(count: int, figures: Figures) -> None:
    shaped = "shaped" in figures.runs
    extra = " floor, TrainingJob props | ratio |" if shaped else ""
    print(
        f"\n| operation, {count} resources | TrainingJob | no-op floor | ratio | per round |{extra}"
    )
    print("|---|---|---|---|---|" + ("---|---|" if shaped else ""))
    for op, label in LABELS.items():
        runs = figures.runs
        jobs, floor = _median(runs["jobs"][op]), _median(runs["floor"][op])
        ratios = [
            j.seconds / f.seconds for j, f in zip(runs["jobs"][op], runs["floor"][op], strict=True)
        ]
        row = (
            f"| {label} | {jobs:.1f} s | {floor:.1f} s | {jobs / floor:.2f}x "
            f"| {min(ratios):.2f}-{max(ratios):.2f} |"
        )
        if shaped:
            props = _median(runs["shaped"][op])
            row += f" {props:.1f} s | {jobs / props:.2f}x |"
        print(row)
    roles = ("cli", "program", "provider", "langhost")
    print(
        f"\nCPU seconds, median ({' / '.join(roles)} / emulator; total = CLI and every process "
        "it started):\n"
    )
    floors = [name for name in figures.runs if name != "jobs"]
    print("| operation | TrainingJob | total |" + "".join(f" {n} | total |" for n in floors))
    print("|---|---|---|" + "---|---|" * len(floors))
    for op in COMMANDS:
        runs = figures.runs
        row = (
            f"| `{op}` | {_cpu(runs['jobs'][op], (*roles, 'emulator'))} "
            f"| {_cpu(runs['jobs'][op], ('total',))} |"
        )
        for name in floors:
            row += f" {_cpu(runs[name][op], roles)} | {_cpu(runs[name][op], ('total',))} |"
        print(row)
    if "baseline" in figures.runs:
        print_baseline(figures)
    if shaped:
        print(
            "\n(shaped: no-op resources with a TrainingJob's inputs and a real job's `status` "
            "output, the `jobs` stack output and the jobs stack's configuration, so the same "
            "state: the part of the gap that is the engine moving and checkpointing it)"
        )


def print_baseline(figures: Figures) -> None:
    """The same TrainingJobs run by the baseline revision's code and by this one, side by side."""
    runs = figures.runs
    print("\n| operation | baseline | this code | baseline / this, per round | provider CPU |")
    print("|---|---|---|---|---|")
    for op, label in LABELS.items():
        old, new = runs["baseline"][op], runs["jobs"][op]
        ratios = [o.seconds / n.seconds for o, n in zip(old, new, strict=True)]
        print(
            f"| {label} | {_median(old):.1f} s | {_median(new):.1f} s "
            f"| {min(ratios):.2f}-{max(ratios):.2f} "
            f"| {_cpu(old, ('provider',))} -> {_cpu(new, ('provider',))} s |"
        )


# -- issue 16: the host's concurrency --------------------------------------------------------------


def waiting_jobs(
    base: Path, bin_dir: Path, *, jobs: int, start_seconds: float, rounds: int
) -> None:
    """``up`` of ``jobs`` jobs that wait for RUNNING, each ``start_seconds`` to start, vs one."""
    with emulator(base / "emulator", "--simulate-pending-seconds", str(start_seconds)) as emu:
        cases = {
            "one job": jobs_project(base / "one", bin_dir, emu, 1, wait_for="running"),
            f"{jobs} jobs": jobs_project(base / "many", bin_dir, emu, jobs, wait_for="running"),
            f"{jobs} jobs, maxConcurrentOperations 4 (the stock host)": jobs_project(
                base / "stock",
                bin_dir,
                emu,
                jobs,
                wait_for="running",
                config={"training:maxConcurrentOperations": 4},
            ),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for index in range(rounds + 1):  # the first round warms up
            for name, project in cases.items():
                seconds = project.run("up", "--parallel", str(jobs)).seconds
                project.run("destroy", "--parallel", str(jobs))
                if index:
                    times[name].append(seconds)
    one = statistics.median(times["one job"])
    print(
        f"\n`up` of jobs with `waitFor: running`, each {start_seconds:g} s to start "
        f"(`--parallel {jobs}`), median of {rounds}:\n"
    )
    print("| stack | `pulumi up` | vs one job |")
    print("|---|---|---|")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"| {name} | {median:.1f} s | {median / one:.2f}x |")


def destroy_parallel(
    base: Path, bin_dir: Path, *, jobs: int, rounds: int, cancel_seconds: float
) -> None:
    """``destroy`` of ``jobs`` running jobs whose cancel takes ``cancel_seconds``.

    At ``--parallel`` 8 and 16, and at 16 with ``maxConcurrentOperations: 4`` (the stock
    host). A cancel that takes time, as Vertex AI's do (tens of seconds), makes the destroy
    wait-bound, which the provider's concurrency decides; with an immediate cancel a destroy
    on this 2-core machine is CPU-bound (the main table).
    """
    cancel = ("--simulate-cancel-seconds", str(cancel_seconds))
    with emulator(base / "emulator", *cancel) as emu:
        lifted = jobs_project(base / "jobs", bin_dir, emu, jobs)
        stock = jobs_project(
            base / "stock", bin_dir, emu, jobs, config={"training:maxConcurrentOperations": 4}
        )
        cases = {
            "8": (lifted, 8),
            "16": (lifted, 16),
            "16, maxConcurrentOperations 4 (the stock host)": (stock, 16),
        }
        times: dict[str, list[Run]] = {name: [] for name in cases}
        for index in range(rounds + 1):  # the first round warms up
            for name, (project, parallel) in cases.items():
                project.run("up")
                project.wait_running(jobs)
                run = project.run("destroy", "--parallel", str(parallel))
                if index:
                    times[name].append(run)
    print(
        f"\n`destroy` of {jobs} running jobs, each cancel taking {cancel_seconds:g} s, "
        f"median of {rounds}:\n"
    )
    print("| `--parallel` | `pulumi destroy` | provider CPU |")
    print("|---|---|---|")
    for name, runs in times.items():
        print(f"| {name} | {_median(runs):.1f} s | {_cpu(runs, ('provider',))} s |")


def provider_alone(base: Path, *, jobs: int, threads: int, rounds: int) -> None:
    """The provider's own cost, without the engine: ``jobs`` creates, reads and deletes of
    running jobs, ``threads`` at a time, in this process (CPU of this process, wall time)."""
    from concurrent.futures import ThreadPoolExecutor

    from pulumi.dynamic import ConfigureRequest
    from pulumi.dynamic.config import Config

    from components._provider import TrainingJobProvider
    from tests.provider.conftest import job_inputs

    samples: dict[str, list[tuple[float, float]]] = {"create": [], "read": [], "delete": []}
    with emulator(base / "emulator") as emu:
        provider = TrainingJobProvider()
        # Records deleted, as before issue 35 kept them by default (the same calls measured).
        settings = {"training:endpoint": emu.endpoint, "training:deleteRecords": "true"}
        provider.configure(ConfigureRequest(Config(settings, "gpu-training")))
        checked = provider.check({}, job_inputs()).inputs
        warm = provider.create({**checked, "triggers": ["warm-up"]})  # imports, the client
        provider.delete(warm.id, warm.outs or {})
        for index in range(rounds):
            created: list[Any] = []
            for op in samples:
                cpu, wall = time.process_time(), time.perf_counter()
                with ThreadPoolExecutor(max_workers=threads) as pool:
                    if op == "create":
                        created = list(
                            pool.map(
                                lambda i: provider.create(
                                    {**checked, "triggers": [f"{index}-{i}"]}  # noqa: B023
                                ),
                                range(jobs),
                            )
                        )
                    elif op == "read":
                        list(pool.map(lambda c: provider.read(c.id, c.outs), created))
                    else:
                        list(pool.map(lambda c: provider.delete(c.id, c.outs), created))
                samples[op].append((time.process_time() - cpu, time.perf_counter() - wall))
                if op == "create":
                    wait_running(emu, jobs)
    print(
        f"\nthe provider alone (no engine): {jobs} jobs, {threads} operations at once, in one "
        f"process, median of {rounds}:\n"
    )
    print("| operation | CPU | wall | per operation |")
    print("|---|---|---|---|")
    for op, runs in samples.items():
        cpu = statistics.median(c for c, _ in runs)
        wall = statistics.median(w for _, w in runs)
        print(f"| `{op}` | {cpu:.2f} s | {wall:.2f} s | {cpu / jobs * 1000:.1f} ms CPU |")


def print_profile(directory: Path, top: int = 12) -> None:
    for op in COMMANDS:
        path = directory / f"{op}.prof"
        if not path.exists():
            continue
        print(f"\nprovider profile, `{op}` (all rounds, cumulative, top {top}):")
        stats = pstats.Stats(str(path))
        stats.sort_stats("cumulative").print_stats(top)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per size (median)")
    parser.add_argument(
        "--quick", action="store_true", help="20 resources, 1 round, smaller issue-16 figures"
    )
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=PARTS,
        default=list(PARTS),
        help="table: up/refresh/destroy vs the floor; waiting: jobs that wait for RUNNING; "
        "destroy: destroy at --parallel 8 and 16; provider: the provider alone (default: all)",
    )
    parser.add_argument("--profile", type=Path, help="profile the provider into this directory")
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="a fourth project: the same jobs run by the components package of git REV",
    )
    parser.add_argument(
        "--shaped",
        action="store_true",
        help="a third project: no-op resources with a TrainingJob's inputs and status output",
    )
    args = parser.parse_args()
    # A bench stopped with SIGTERM still stops the emulators it started (context managers).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.quick:
        args.sizes, args.rounds = [20], 1
    bin_dir = install_pulumi()
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        base = Path(tmp)
        if "provider" in args.parts:
            provider_alone(
                base / "alone", jobs=args.sizes[-1], threads=8, rounds=max(args.rounds, 1)
            )
        if "table" in args.parts:
            print(
                f"pulumi up / refresh / destroy, TrainingJobs vs no-op dynamic resources: median "
                f"of {args.rounds} rounds after a warm-up, the two projects alternating"
            )
            for count in args.sizes:
                profile = None
                if args.profile is not None:
                    profile = args.profile / str(count)
                    profile.mkdir(parents=True, exist_ok=True)
                figures = side_by_side(
                    base / f"n{count}",
                    bin_dir,
                    count,
                    args.rounds,
                    profile,
                    shaped=args.shaped,
                    baseline=args.baseline,
                )
                print_table(count, figures)
                if profile is not None:
                    print_profile(profile)
        if "waiting" in args.parts:
            jobs, start = (8, 2.0) if args.quick else (16, 5.0)
            waiting_jobs(
                base / "waiting", bin_dir, jobs=jobs, start_seconds=start, rounds=args.rounds
            )
        if "destroy" in args.parts:
            destroy_parallel(
                base / "destroy",
                bin_dir,
                jobs=50 if args.quick else 200,
                rounds=args.rounds,
                cancel_seconds=0.5 if args.quick else 1.0,
            )
    print(
        "\ngoals: up <= 1.5x the floor at 200, refresh <= 1.5x, destroy of running jobs <= 2x; "
        "16 waiting jobs <= 2x one job; destroy faster at --parallel 16 than at 8"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
