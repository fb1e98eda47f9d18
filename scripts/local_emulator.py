"""The emulator of THIS checkout for `make up`/`make down`, and the local stack's config for it.

    python scripts/local_emulator.py ensure STATE_DIR [STACK_FILE]   # prints the endpoint
    python scripts/local_emulator.py config ENDPOINT SOURCE TARGET

``ensure`` uses the emulator whose state dir is STATE_DIR when one is running; otherwise it
starts one, on the port the local stack names (8642) when that port is free, else on a free
port: a second clone must not send its jobs to the first clone's emulator, which cannot read
its packages. What it did is said on stderr.

The port is not chosen here: the emulator binds 8642 or, when that is taken, a free port
(``serve --free-port-if-taken``), and ``ensure`` uses the endpoint it reports in
``STATE_DIR/server.json``. A port found free here could be taken before the emulator binds it
(two checkouts' ``make up`` at once). Two ``ensure`` of the same STATE_DIR at once take turns
(a lock in STATE_DIR), so the second uses the emulator the first started. A state dir that
cannot be used is one line on stderr and exit status 1.

A stack file that sets ``training:catalogOverlay`` (a folder, relative to the project) starts
the emulator with ``--catalog-overlay`` on it, so what the overlay adds is accepted by the local
Vertex AI as it is by the validator. An emulator already running with another overlay is kept
(its jobs go on), and a line says so: ``make down`` restarts it.

``config`` copies the local stack's config file (SOURCE) to TARGET with ``training:endpoint``
set to ENDPOINT; `make up` passes TARGET to pulumi with ``--config-file``, so the committed
stack file is never rewritten.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script: the checkout

import yaml  # noqa: E402

from components.lifecycle._settings import (  # noqa: E402
    emulator_health,
    running_emulator,
    same_dir,
)

DEFAULT_PORT = 8642
HOST = "127.0.0.1"
_ENDPOINT_LINE = re.compile(r"^(\s*training:endpoint:).*$", re.MULTILINE)
LOCK_FILE = "ensure.lock"


def say(message: str) -> None:
    print(f"==> {message}", file=sys.stderr)


# The program and the provider find the emulator of a state dir the same way
# (training:emulatorStateDir): one reading of server.json and the health answer.
health = emulator_health
running_here = running_emulator
__all__ = [
    "catalog_overlay",
    "ensure",
    "health",
    "running_here",
    "same_dir",
    "start",
    "write_config",
]


def catalog_overlay(stack_file: Path | None) -> Path | None:
    """The stack file's ``training:catalogOverlay`` folder (relative to the project), or None."""
    if stack_file is None:
        return None
    try:
        document = yaml.safe_load(stack_file.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise SystemExit(f"cannot read {stack_file}: {exc}") from None
    settings = document.get("config") if isinstance(document, Mapping) else None
    value = settings.get("training:catalogOverlay") if isinstance(settings, Mapping) else None
    if not value:
        return None
    if not isinstance(value, str):
        raise SystemExit(f"{stack_file}: training:catalogOverlay must be a folder's path")
    return (REPO / value).resolve()


def ensure(state_dir: Path, overlay: Path | None = None) -> str:
    """The endpoint of this checkout's emulator, started if none runs (see the module doc)."""
    problem = usable_problem(state_dir)
    if problem is not None:
        raise SystemExit(f"cannot use the emulator's state in {state_dir}: {problem}")
    with one_at_a_time(state_dir):
        endpoint = running_here(state_dir)
        if endpoint is not None:
            say(f"this checkout's emulator is already running at {endpoint} (state in {state_dir})")
            running = (health(endpoint) or {}).get("catalogOverlay") or None
            if running != (str(overlay) if overlay else None):
                say(
                    f"it runs with catalog overlay {running or 'none'}, the stack names "
                    f"{overlay or 'none'}: `make down` restarts it with the stack's"
                )
            return endpoint
        return start(state_dir, overlay)


def usable_problem(state_dir: Path) -> str | None:
    """Why ``state_dir`` cannot be the emulator's state dir (it is made if need be), or None."""
    try:
        if state_dir.exists() and not state_dir.is_dir():
            return "not a directory"
        state_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


@contextmanager
def one_at_a_time(state_dir: Path) -> Iterator[None]:
    """Hold the state dir's lock: one `ensure` at a time looks for, and starts, its emulator."""
    lock = state_dir / LOCK_FILE
    try:
        handle = open(lock, "a")  # noqa: SIM115 - held until the end of the block
    except OSError as exc:
        problem = f"cannot use the emulator's state in {state_dir}: {lock}: {exc.strerror}"
        raise SystemExit(problem) from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def start(state_dir: Path, overlay: Path | None = None) -> str:
    """Start the emulator of ``state_dir``: on DEFAULT_PORT, or where it found a free port."""
    say(f"starting the emulator (state in {state_dir})")
    overlay_flags = ["--catalog-overlay", str(overlay)] if overlay else []
    started = subprocess.run(
        [
            sys.executable,
            "-m",
            "emulator",
            "serve",
            "--daemon",
            "--state-dir",
            str(state_dir),
            "--gpus",
            "ignore",
            "--port",
            str(DEFAULT_PORT),
            "--free-port-if-taken",
            *overlay_flags,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    endpoint = running_here(state_dir) if started.returncode == 0 else None
    if endpoint is None:
        said = started.stderr.strip()
        raise SystemExit(said or f"the emulator did not start; see {state_dir / 'server.log'}")
    if urllib.parse.urlsplit(endpoint).port != DEFAULT_PORT:
        other = health(f"http://{HOST}:{DEFAULT_PORT}")
        holder = (
            f"the emulator of another checkout (state in {other.get('stateDir')})"
            if other is not None
            else "another program"
        )
        say(f"port {DEFAULT_PORT} is taken by {holder}: this checkout's emulator took a free port")
    say(f"emulator listening at {endpoint}")
    return endpoint


def write_config(endpoint: str, source: Path, target: Path) -> None:
    text = source.read_text(encoding="utf-8")
    if not _ENDPOINT_LINE.search(text):
        raise SystemExit(f"{source} sets no training:endpoint")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(_ENDPOINT_LINE.sub(lambda m: f"{m.group(1)} {endpoint}", text), encoding="utf-8")
    os.replace(tmp, target)


def main(argv: list[str]) -> int:
    if len(argv) in (2, 3) and argv[0] == "ensure":
        print(ensure(Path(argv[1]), catalog_overlay(Path(argv[2]) if len(argv) == 3 else None)))
        return 0
    if len(argv) == 4 and argv[0] == "config":
        write_config(argv[1], Path(argv[2]), Path(argv[3]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
