"""What each requirement set costs to install, and what the provider process costs to start.

Run: ``.venv/bin/python bench/install.py [--sets runtime emulator dev policy] [--repeat 5]
[--baseline REV --baseline-python python3.11]``.

For each set (``runtime``: requirements.txt; ``emulator``: + requirements-emulator.txt; ``dev``:
+ requirements-dev.txt, the project's virtualenv; ``policy``: policy/requirements.txt, the
policy pack's own), a fresh virtualenv made with scripts/find-python's interpreter gets the set
installed under its constraints: the wall time (with this machine's pip cache, which holds every
wheel after a first install: a cold cache adds the downloads), the virtualenv's size and its
number of distributions.

Then the start-up of a dynamic provider process in the ``runtime`` virtualenv: a fresh
interpreter importing what the host imports when it unpickles the provider
(``components._provider``) and what refresh and destroy then import (the client library's job
service), wall and CPU seconds, median of ``--repeat``. With ``--baseline REV``, the same for
git revision REV: its requirements (runtime, or its one requirements file) under its
constraints, with ``--baseline-python``, running its ``components``, side by side.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SETS: dict[str, tuple[tuple[str, ...], str]] = {
    "runtime": (("requirements.txt",), "constraints.txt"),
    "emulator": (("requirements.txt", "requirements-emulator.txt"), "constraints.txt"),
    "dev": (
        ("requirements.txt", "requirements-emulator.txt", "requirements-dev.txt"),
        "constraints.txt",
    ),
    "policy": (("policy/requirements.txt",), "policy/constraints.txt"),
}

START_UP = (
    "import components._provider\n"
    "from components.vertex._library import job_service\n"
    "job_service()\n"
)
"""What a provider process imports before its first refresh or destroy call."""


@dataclass
class Installed:
    name: str
    seconds: float
    megabytes: float
    distributions: int
    python: str


def _run(cmd: list[str], cwd: Path | None = None) -> None:
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _size_mb(path: Path) -> float:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            file = Path(root) / name
            if not file.is_symlink():
                total += file.stat().st_size
    return total / 2**20


def install(
    name: str, python: str, venv: Path, files: tuple[str, ...], constraints: str, root: Path
) -> Installed:
    """A fresh virtualenv at ``venv`` with ``files`` (relative to ``root``) installed."""
    _run([python, "-m", "venv", str(venv)])
    py = str(venv / "bin" / "python")
    _run([py, "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    args = [a for f in files for a in ("-r", str(root / f))]
    started = time.monotonic()
    _run([py, "-m", "pip", "install", "--quiet", *args, "-c", str(root / constraints)])
    seconds = time.monotonic() - started
    listed = subprocess.run(
        [py, "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True, check=True
    ).stdout
    version = subprocess.run(
        [py, "--version"], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    return Installed(name, seconds, _size_mb(venv), len(listed.splitlines()), version)


def start_up(python: Path, code: Path, repeat: int) -> tuple[float, float]:
    """(wall, CPU) seconds of a fresh interpreter importing the provider, medians."""
    walls, cpus = [], []
    for _ in range(repeat + 1):  # the first run fills the page cache and writes bytecode
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        subprocess.run(
            [str(python), "-W", "ignore", "-c", START_UP],
            cwd=code,
            check=True,
            env={**os.environ, "PYTHONPATH": str(code)},
        )
        walls.append(time.monotonic() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls[1:]), statistics.median(cpus[1:])


def baseline_tree(revision: str, into: Path) -> Path:
    """``components`` and the requirement files of git ``revision``, under ``into``."""
    names = subprocess.run(
        ["git", "ls-tree", "--name-only", revision], cwd=REPO, capture_output=True, text=True
    ).stdout.split()
    wanted = ["components", *[n for n in names if n.startswith(("requirements", "constraints"))]]
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision, *wanted],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", choices=list(SETS), default=list(SETS))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", help="a git revision to compare the start-up with")
    parser.add_argument("--baseline-python", default="python3")
    args = parser.parse_args()
    python = subprocess.run(
        [str(REPO / "scripts" / "find-python")], capture_output=True, text=True, check=True
    ).stdout.strip()
    base = Path(tempfile.mkdtemp(prefix="bench-install-"))
    try:
        rows = []
        for name in args.sets:
            files, constraints = SETS[name]
            rows.append(install(name, python, base / name, files, constraints, REPO))
            print(f"  ({name} installed)", file=sys.stderr, flush=True)
        print("\n| set | Python | install (warm pip cache) | virtualenv | distributions |")
        print("|---|---|---|---|---|")
        for row in rows:
            print(
                f"| {row.name} | {row.python} | {row.seconds:.0f} s | {row.megabytes:.0f} MiB "
                f"| {row.distributions} |"
            )
        if "runtime" not in args.sets:
            return
        wall, cpu = start_up(base / "runtime" / "bin" / "python", REPO, args.repeat)
        print("\nProvider process start-up (import the provider, then the job service):\n")
        print("| code | Python | wall | CPU |")
        print("|---|---|---|---|")
        print(f"| this checkout | {rows[0].python} | {wall:.2f} s | {cpu:.2f} s |")
        if args.baseline:
            tree = baseline_tree(args.baseline, base / "baseline-tree")
            files = ("requirements.txt",)
            constraints = "constraints.txt"
            old = install(
                "baseline", args.baseline_python, base / "baseline", files, constraints, tree
            )
            wall, cpu = start_up(base / "baseline" / "bin" / "python", tree, args.repeat)
            print(f"| {args.baseline} | {old.python} | {wall:.2f} s | {cpu:.2f} s |")
            print(
                f"\n(baseline {args.baseline}: its requirements.txt, {old.seconds:.0f} s to "
                f"install, {old.megabytes:.0f} MiB, {old.distributions} distributions)"
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
