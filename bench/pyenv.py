"""How long a job's Python environment takes to set up (emulator.pyenv), before its replicas start.

Run: .venv/bin/python bench/pyenv.py [--repeat 5]
Measures, in-process and with fresh state directories:

* probing the interpreter (once per job);
* the example trainer (examples/trainer) on the no-pip path, and through pip (first build, then
  the cached environment); pip builds the trainer's setup.py with build isolation, so its first
  run reads setuptools through pip's own configuration (index or cache);
* a wheel whose dependency comes from a local wheel directory (PIP_NO_INDEX, PIP_FIND_LINKS): a
  first (cold) build, then the cached environment. No network is needed for this one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from emulator import pyenv  # noqa: E402
from emulator.config import Settings  # noqa: E402

TRAINER = REPO / "examples" / "trainer"


def wheel(folder: Path, name: str, requires: tuple[str, ...] = ()) -> Path:
    """A pure-Python wheel holding one module, requiring ``requires``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-1.0.0-py3-none-any.whl"
    info = f"{name}-1.0.0.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0.0\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{name}/__init__.py", "")
        zf.writestr(f"{info}/METADATA", metadata)
        zf.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        zf.writestr(f"{info}/RECORD", "")
    return path


class Bench:
    """One fresh state directory; each call sets one job's environment up in a new job dir."""

    def __init__(self, root: Path, roots: list[Path]) -> None:
        self.settings = Settings(state_dir=root / "state", allow_roots=roots)
        self.base = pyenv.probe(self.settings.python)
        self.jobs = 0

    def setup(self, source: Path, *, always_pip: bool = False) -> tuple[float, pyenv.PoolPython]:
        self.jobs += 1
        job_dir = self.settings.state_dir / "jobs" / str(self.jobs)
        (job_dir / "logs").mkdir(parents=True)
        started = time.perf_counter()
        done = pyenv.prepare_pool(
            [source],
            index=0,
            job_dir=job_dir,
            settings=self.settings,
            base=self.base,
            always_pip=always_pip,
        )
        return time.perf_counter() - started, done


def median_of(repeat: int, run: Callable[[], float]) -> float:
    return statistics.median(run() for _ in range(repeat))


def show(what: str, seconds: float) -> None:
    print(f"  {what:<56} {seconds * 1000:9.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5, help="runs per cached/no-pip figure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-pyenv-") as tmp:
        root = Path(tmp)
        python = Settings(state_dir=root).python
        print(f"pyenv bench: one job's environment set up, interpreter {python}")
        show("probe of the interpreter (every job)", median_of(args.repeat, lambda: _probe(python)))

        trainer = Bench(root / "trainer", [TRAINER])
        fast = median_of(args.repeat, lambda: trainer.setup(TRAINER)[0])
        show("example trainer, no pip (copied into site-<n>)", fast)
        try:
            cold, _ = trainer.setup(TRAINER, always_pip=True)
            cached = median_of(args.repeat, lambda: trainer.setup(TRAINER, always_pip=True)[0])
            show("example trainer through pip: first build", cold)
            show("example trainer through pip: cached environment", cached)
        except (pyenv.InstallError, pyenv.EnvironmentProblem) as exc:
            print(f"  example trainer through pip: not measured, pip failed: {exc}")

        wheels = root / "wheels"
        wheel(wheels, "benchdep")
        package = wheel(root / "packages", "benchpkg", requires=("benchdep==1.0.0",))
        os.environ.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels))
        local = Bench(root / "local", [root])
        cold, _ = local.setup(package)
        show("wheel + dependency from a wheel dir: first build", cold)
        show(
            "wheel + dependency from a wheel dir: cached environment",
            median_of(args.repeat, lambda: local.setup(package)[0]),
        )
    return 0


def _probe(python: str) -> float:
    started = time.perf_counter()
    pyenv.probe(python)
    return time.perf_counter() - started


if __name__ == "__main__":
    sys.exit(main())
