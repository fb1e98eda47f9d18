"""The emulator of THIS checkout for `make up`/`make down`, and the local stack's config for it.

    python scripts/local_emulator.py ensure STATE_DIR   # prints the endpoint on stdout
    python scripts/local_emulator.py config ENDPOINT SOURCE TARGET

``ensure`` uses the emulator whose state dir is STATE_DIR when one is running; otherwise it
starts one, on the port the local stack names (8642) when that port is free, else on a free
port: a second clone must not send its jobs to the first clone's emulator, which cannot read
its packages. What it did is said on stderr.

``config`` copies the local stack's config file (SOURCE) to TARGET with ``training:endpoint``
set to ENDPOINT; `make up` passes TARGET to pulumi with ``--config-file``, so the committed
stack file is never rewritten.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

DEFAULT_PORT = 8642
HOST = "127.0.0.1"
_ENDPOINT_LINE = re.compile(r"^(\s*training:endpoint:).*$", re.MULTILINE)


def say(message: str) -> None:
    print(f"==> {message}", file=sys.stderr)


def health(endpoint: str) -> dict[str, object] | None:
    """The emulator's health answer at ``endpoint``, or None when none answers there."""
    try:
        with urllib.request.urlopen(f"{endpoint}/emulator/v1/health", timeout=2) as reply:
            data = json.loads(reply.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def same_dir(a: object, b: Path) -> bool:
    return isinstance(a, str) and Path(a).resolve() == b.resolve()


def running_here(state_dir: Path) -> str | None:
    """The endpoint of the emulator that serves ``state_dir``, if one is running."""
    try:
        info = json.loads((state_dir / "server.json").read_text())
        endpoint = str(info["endpoint"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    answer = health(endpoint)
    if answer is not None and same_dir(answer.get("stateDir"), state_dir):
        return endpoint
    return None


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def ensure(state_dir: Path) -> str:
    endpoint = running_here(state_dir)
    if endpoint is not None:
        say(f"this checkout's emulator is already running at {endpoint} (state in {state_dir})")
        return endpoint
    port = DEFAULT_PORT
    if not port_is_free(DEFAULT_PORT):
        other = health(f"http://{HOST}:{DEFAULT_PORT}")
        holder = (
            f"the emulator of another checkout (state in {other.get('stateDir')})"
            if other is not None
            else "another program"
        )
        say(
            f"port {DEFAULT_PORT} is taken by {holder}: starting this checkout's own on a free port"
        )
        port = 0
    say(f"starting the emulator (state in {state_dir})")
    state_dir.mkdir(parents=True, exist_ok=True)
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
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        check=False,
    )
    endpoint = running_here(state_dir) if started.returncode == 0 else None
    if endpoint is None:
        raise SystemExit(f"the emulator did not start; see {state_dir / 'server.log'}")
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
    if len(argv) == 2 and argv[0] == "ensure":
        print(ensure(Path(argv[1])))
        return 0
    if len(argv) == 4 and argv[0] == "config":
        write_config(argv[1], Path(argv[2]), Path(argv[3]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
