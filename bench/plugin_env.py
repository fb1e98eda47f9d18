"""The released plugin's installed environment: its size and how long the install takes.

Run: ``.venv/bin/python bench/plugin_env.py [--dist DIR]`` (``make bench``). Builds the plugin
archive (``scripts/release.py``'s, unless ``--dist`` holds one), then times ``pulumi plugin
install resource gpu-training V --file ARCHIVE`` into a fresh PULUMI_HOME: the engine unpacks it
and makes the plugin's virtualenv from its requirements (the runtime set only), here offline
from a wheel folder of this virtualenv's runtime set (``scripts/wheelhouse.py``: pip's own work,
no download). Prints the wall time, the virtualenv's size on disk and its number of
distributions (docs/release.md; goal: at most 400 MB).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

import release  # noqa: E402  (scripts/ is no package)
import wheelhouse  # noqa: E402


def _size(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--dist", type=Path)
    args = parser.parse_args()
    bin_dir = Path(
        subprocess.run(
            [str(REPO / "scripts" / "install-pulumi")],
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        ).stdout.split()[-1]
    )
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        dist = args.dist or base / "dist"
        if args.dist is None:
            release.build(dist, ["nodejs", "go", "policy"])
        wheels = base / "wheels"
        wheelhouse.fill(wheels)
        env = {
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "PULUMI_HOME": str(base / "home"),
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(wheels),
            "PULUMI_PYTHON_CMD": getattr(sys, "_base_executable", sys.executable),
        }
        ver = release.version()
        archive = dist / release.plugin_archive_name(ver, "linux-amd64")
        start = time.monotonic()
        subprocess.run(
            release.install_command(ver, archive),
            env=env,
            check=True,
            capture_output=True,
        )
        seconds = time.monotonic() - start
        venv = base / "home" / "plugins" / f"resource-gpu-training-v{ver}" / "venv"
        dists = len(list(venv.glob("lib/python*/site-packages/*.dist-info")))
        print(f"plugin install: {seconds:.1f} s wall")
        print(f"plugin virtualenv: {_size(venv) / 1e6:.0f} MB, {dists} distributions")


if __name__ == "__main__":
    main()
