"""A wheel folder of the runtime set, from what this machine already has (tests, benches).

    python scripts/wheelhouse.py DEST

Each distribution of the runtime set (``scripts/release.py``'s ``runtime_closure``) installed in
this interpreter's environment is packed back into a wheel from its files (its ``RECORD``, the
scripts pip makes at install and the ``__pycache__`` left out), so a virtualenv of the same
Python installs the runtime set with ``PIP_NO_INDEX=1 PIP_FIND_LINKS=DEST``: no download, the
versions this checkout is tested with. ``pip install --upgrade pip setuptools wheel``, which the
engine runs before a Python plugin's requirements, also needs setuptools and wheel, which the
project's environment does not hold: they are downloaded once by pip (``pip download``, the
ordinary client), the only files asked of the index. A wheel already in DEST is kept.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from release import runtime_closure

BOOTSTRAP = ("setuptools==84.2.1", "wheel==0.45.1")
"""What the engine's pip step upgrades besides pip (setuptools as pyproject's build needs it)."""
_DROPPED = {"INSTALLER", "REQUESTED", "RECORD", "direct_url.json"}


def _tags(wheel_metadata: str) -> str:
    """The compressed tag of a wheel's file name, from its WHEEL file's ``Tag:`` lines."""
    tags = [
        line.split(":", 1)[1].strip()
        for line in wheel_metadata.splitlines()
        if line.startswith("Tag:")
    ]
    parts = [list(dict.fromkeys(tag.split("-")[index] for tag in tags)) for index in range(3)]
    return "-".join(".".join(part) for part in parts)


def repack(dist: importlib.metadata.Distribution, dest: Path) -> Path:
    """One installed distribution as a wheel in ``dest``."""
    info = next(
        Path(str(f)).parts[0] for f in dist.files or [] if str(f).endswith(".dist-info/METADATA")
    )
    wheel_file = dist.read_text("WHEEL") or ""
    name = dist.metadata["Name"].replace("-", "_").replace(".", "_")
    target = dest / f"{name}-{dist.version}-{_tags(wheel_file)}.whl"
    if target.exists():
        return target
    root = Path(str(dist.locate_file("")))
    record: list[str] = []
    partial = target.with_suffix(".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as wheel:
        for entry in dist.files or []:
            relative = Path(str(entry))
            if relative.parts[0] == ".." or "__pycache__" in relative.parts:
                continue  # scripts pip writes at install; bytecode
            if relative.parts[0] == info and relative.name in _DROPPED:
                continue
            content = (root / relative).read_bytes()
            digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=")
            record.append(f"{relative.as_posix()},sha256={digest.decode()},{len(content)}")
            wheel.writestr(relative.as_posix(), content)
        record.append(f"{info}/RECORD,,")
        wheel.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    partial.rename(target)
    return target


def fill(dest: Path) -> list[Path]:
    """The runtime set's wheels and the engine's bootstrap wheels in ``dest``."""
    import subprocess

    dest.mkdir(parents=True, exist_ok=True)
    wheels = [repack(importlib.metadata.distribution(name), dest) for name in runtime_closure()]
    missing = [
        spec
        for spec in BOOTSTRAP
        if not list(dest.glob(spec.split("==")[0] + "-" + spec.split("==")[1] + "-*.whl"))
    ]
    if missing:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--only-binary=:all:",
                "-d",
                str(dest),
                *missing,
            ],
            check=True,
        )
    return wheels


if __name__ == "__main__":
    for path in fill(Path(sys.argv[1]).resolve()):
        print(path)
