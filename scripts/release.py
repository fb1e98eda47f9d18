"""``make release``: every release artifact of one version, written to ``dist/`` (docs/release.md).

    python scripts/release.py [--out DIST] [--without nodejs|go|policy ...]

The version is ``components/VERSION`` (the package, the schema, the SDKs). What it writes:

- ``gpu_training-V-py3-none-any.whl``: the package (the dynamic resources, the plugin, the CLI
  and the local Vertex), as ``make dist`` builds it;
- ``pulumi-resource-gpu-training-vV-{linux,darwin}-{amd64,arm64}.tar.gz``: the provider plugin
  as ``pulumi plugin install resource gpu-training V --file ARCHIVE`` takes it: a Python plugin
  (``PulumiPlugin.yaml``, ``__main__.py``, ``requirements.txt``, the package's wheel) whose
  virtualenv the engine makes at install. The archives are one file under four names: the
  engine asks a release for ``<os>-<arch>`` and the plugin is pure Python;
- ``pulumi_gpu_training-V-py3-none-any.whl``: the plugin's Python SDK (``sdk/python``);
- ``gpu-training-pulumi-V.tgz``: the Node.js SDK, ``npm pack`` of ``sdk/nodejs`` compiled by tsc;
- ``goproxy/``: the Go SDK as a module proxy tree (``GOPROXY=file://…/goproxy``), module
  ``github.com/gpu-training/pulumi-gpu-training/sdk/go`` at ``vV`` (tag ``sdk/go/vV``);
- ``gpu-training-policy-vV.tar.gz``: the CrossGuard pack, a folder ``pulumi preview
  --policy-pack`` takes once its requirements are installed;
- ``SHA256SUMS``: ``sha256sum -c`` reads it.

Wheels are built by pip (``pip wheel --no-deps``: the build backend comes from the index, or
from ``PIP_FIND_LINKS`` with ``PIP_NO_INDEX``); the Node.js SDK needs node and npm
(``scripts/install-node-deps`` provides tsc and ``@pulumi/pulumi``). Every archive is written
reproducibly (sorted entries, fixed times and owners), so a rebuild of the same tree gives the
same checksums.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.metadata
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
PLUGIN = "gpu-training"
GO_MODULE = "github.com/gpu-training/pulumi-gpu-training/sdk/go"
PLATFORMS = ("linux-amd64", "linux-arm64", "darwin-amd64", "darwin-arm64")
PARTS = ("nodejs", "go", "policy")
"""The artifacts ``--without`` may leave out (the wheels and the plugin are always built)."""
_FIXED_TIME = 315532800  # 1980-01-01, the earliest time a zip entry can hold
_PLUGIN_MAIN = '''"""The gpu-training provider plugin, run by the engine's Python language host."""

from gpu_training.plugin import main

main()
'''


def version() -> str:
    """The one version of every artifact (``components/VERSION``)."""
    return (REPO / "components" / "VERSION").read_text(encoding="utf-8").strip()


def plugin_archive_name(ver: str, platform: str) -> str:
    """The asset name the engine's ``github://`` source asks a release for."""
    return f"pulumi-resource-{PLUGIN}-v{ver}-{platform}.tar.gz"


def install_command(ver: str, archive: Path) -> list[str]:
    """The command that installs the plugin archive ``archive`` of version ``ver``, as a user
    would (the engine unpacks it and makes the plugin's virtualenv)."""
    return ["pulumi", "plugin", "install", "resource", PLUGIN, ver, "--file", str(archive)]


def runtime_closure(requirements: Path = REPO / "requirements.txt") -> dict[str, str]:
    """The runtime set, resolved: each distribution ``requirements.txt`` needs, directly or
    through another, with its version in this interpreter's environment (the tested pins)."""
    pending = [Requirement(line.split("#", 1)[0].strip()) for line in _lines(requirements)]
    found: dict[str, str] = {}
    seen: set[tuple[str, str]] = set()  # (distribution, extra): an extra adds requirements
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        extras = {""} | set(requirement.extras)
        if all((name, extra) in seen for extra in extras):
            continue
        seen.update((name, extra) for extra in extras)
        try:
            dist = importlib.metadata.distribution(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            raise SystemExit(
                f"release: {requirement.name} (the runtime set) is not installed in {sys.prefix}"
            ) from None
        found[name] = dist.version
        for line in dist.requires or []:
            needed = Requirement(line)
            if needed.marker is None or any(needed.marker.evaluate({"extra": e}) for e in extras):
                pending.append(needed)
    return dict(sorted(found.items()))


def _lines(path: Path) -> list[str]:
    return [
        line
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.split("#", 1)[0].strip()
    ]


def _run(command: list[str], cwd: Path = REPO) -> str:
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"release: {' '.join(command)} failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def build_wheel(source: Path, out: Path) -> Path:
    """``pip wheel --no-deps`` of a project folder, from a copy (a build writes beside it)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "src"
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns(*_NOT_SOURCE))
        built = Path(tmp) / "wheels"
        _run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(built), "."],
            copy,
        )
        (wheel,) = built.glob("*.whl")
        return Path(shutil.copy2(wheel, out / wheel.name))


_NOT_SOURCE = (
    ".venv",
    ".local",
    ".tools",
    "dist",
    "build",
    "node_modules",
    "__pycache__",
    "*.egg-info",
    ".git",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    "sdk",
    "tests",
    "bench",
    "examples",
)


def _tar(out: Path, files: Iterable[tuple[str, bytes, int]]) -> Path:
    """A reproducible .tar.gz of (name, content, mode) entries."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, content, mode in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(content), mode, _FIXED_TIME
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(content))
    with out.open("wb") as handle, gzip.GzipFile(fileobj=handle, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return out


def _tree(root: Path, prefix: str) -> list[tuple[str, bytes, int]]:
    return [
        (f"{prefix}{path.relative_to(root).as_posix()}", path.read_bytes(), 0o644)
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    ]


def plugin_files(ver: str, wheel: Path, pins: dict[str, str]) -> list[tuple[str, bytes, int]]:
    """The plugin folder: the engine reads PulumiPlugin.yaml, makes ``venv`` at install from
    requirements.txt (the wheel, the runtime set pinned as tested) and runs ``__main__.py``."""
    manifest = (
        "# The gpu-training provider plugin (docs/release.md): the engine makes `venv` from\n"
        "# requirements.txt when `pulumi plugin install` unpacks this folder.\n"
        "runtime:\n  name: python\n  options:\n    toolchain: pip\n    virtualenv: venv\n"
    )
    requirements = [
        f"# gpu-training {ver}: the package and its runtime set at the versions it was tested with.",
        f"./{wheel.name}",
        *(f"{name}=={pin}" for name, pin in pins.items()),
    ]
    return [
        ("PulumiPlugin.yaml", manifest.encode(), 0o644),
        ("__main__.py", _PLUGIN_MAIN.encode(), 0o644),
        ("requirements.txt", ("\n".join(requirements) + "\n").encode(), 0o644),
        (wheel.name, wheel.read_bytes(), 0o644),
    ]


def plugin_archives(ver: str, wheel: Path, out: Path) -> list[Path]:
    pins = runtime_closure()
    first = _tar(out / plugin_archive_name(ver, PLATFORMS[0]), plugin_files(ver, wheel, pins))
    others = [out / plugin_archive_name(ver, platform) for platform in PLATFORMS[1:]]
    for other in others:
        shutil.copy2(first, other)
    return [first, *others]


def nodejs_sdk(ver: str, out: Path) -> Path:
    """sdk/nodejs compiled by tsc, packed by npm as a user's ``npm install`` takes it."""
    node_modules = Path(
        _run([str(REPO / "scripts" / "install-node-deps")]).strip().splitlines()[-1]
    )
    with tempfile.TemporaryDirectory() as tmp:
        sdk = Path(tmp) / "nodejs"
        shutil.copytree(REPO / "sdk" / "nodejs", sdk)
        (sdk / "node_modules").symlink_to(node_modules, target_is_directory=True)
        _run(["node", str(node_modules / "typescript" / "bin" / "tsc"), "-p", str(sdk)], sdk)
        for name in ("package.json", "README.md"):
            shutil.copy2(sdk / name, sdk / "bin" / name)
        _run(["npm", "pack", "--quiet", "--pack-destination", str(out), "./bin"], sdk)
    (packed,) = out.glob(f"gpu-training-pulumi-{ver}.tgz")
    return packed


def go_proxy(ver: str, out: Path) -> list[Path]:
    """``sdk/go`` as a module proxy serves it: ``<module>/@v/{list,vV.info,vV.mod,vV.zip}``."""
    tag = f"v{ver}"
    folder = out / "goproxy" / GO_MODULE / "@v"
    folder.mkdir(parents=True, exist_ok=True)
    source = REPO / "sdk" / "go"
    (folder / "list").write_text(tag + "\n", encoding="utf-8")
    (folder / f"{tag}.info").write_text(
        json.dumps({"Version": tag, "Time": "1980-01-01T00:00:00Z"}) + "\n", encoding="utf-8"
    )
    shutil.copy2(source / "go.mod", folder / f"{tag}.mod")
    archive = folder / f"{tag}.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, content, _ in _tree(source, f"{GO_MODULE}@{tag}/"):
            entry = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            entry.compress_type = zipfile.ZIP_DEFLATED
            zipped.writestr(entry, content)
    return [folder / "list", folder / f"{tag}.info", folder / f"{tag}.mod", archive]


def policy_pack(ver: str, out: Path) -> Path:
    """policy/ with the package's ``components/`` beside it (the rules it runs), as one folder
    ``gpu-training-policy/``: its own virtualenv (policy/requirements.txt: protobuf 5)."""
    prefix = "gpu-training-policy/"
    files = [
        (f"{prefix}{name}", (REPO / "policy" / name).read_bytes(), 0o644)
        for name in (
            "PulumiPolicy.yaml",
            "__main__.py",
            "requirements.txt",
            "constraints.txt",
            "dev.json",
            "prod.json",
        )
    ]
    manifest = (REPO / "policy" / "PulumiPolicy.yaml").read_text(encoding="utf-8")
    manifest = re.sub(
        r"virtualenv: \.venv.*", "virtualenv: venv  # pip install -r requirements.txt", manifest
    )
    files[0] = (f"{prefix}PulumiPolicy.yaml", manifest.encode(), 0o644)
    files += _tree(REPO / "components", f"{prefix}components/")
    return _tar(out / f"gpu-training-policy-v{ver}.tar.gz", files)


def checksums(out: Path) -> Path:
    lines = [
        f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.relative_to(out).as_posix()}"
        for path in sorted(out.rglob("*"))
        if path.is_file() and path.name != "SHA256SUMS"
    ]
    target = out / "SHA256SUMS"
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def build(out: Path, without: Iterable[str] = ()) -> list[Path]:
    """Every artifact into ``out`` (emptied first); answers the files written."""
    ver, skip = version(), set(without)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    wheel = build_wheel(REPO, out)
    written = [wheel, *plugin_archives(ver, wheel, out), build_wheel(REPO / "sdk" / "python", out)]
    if "nodejs" not in skip:
        written.append(nodejs_sdk(ver, out))
    if "go" not in skip:
        written += go_proxy(ver, out)
    if "policy" not in skip:
        written.append(policy_pack(ver, out))
    written.append(checksums(out))
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=REPO / "dist")
    parser.add_argument("--without", action="append", choices=PARTS, default=[])
    args = parser.parse_args(argv)
    for path in build(args.out.resolve(), args.without):
        print(path)


if __name__ == "__main__":
    main()
