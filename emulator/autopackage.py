"""A pool gcloud would have autopackaged (``local-package-path``), run as its image would run it.

``gcloud ai custom-jobs create --worker-pool-spec=...,local-package-path=DIR,python-module=M``
builds an image from the executor image: working directory ``/usr/app`` holding the entry
point's folder and the ``extra-dirs`` (copied from DIR), plus ``setup.py``,
``requirements.txt`` and the extra package files; those requirements installed; then
``python3 -m M`` (or ``python3 F`` / ``/bin/bash F`` for ``script=F``) runs there. The
project's readers hand such a pool to this service as a ``python_package_spec`` with DIR (and
the extra packages) as its packages and the build, as JSON, in the environment variable
:data:`ENV` (``docs/emulator.md`` describes it). Here:

* :func:`build_of` reads that variable (bounded), refusing paths that leave DIR;
* :func:`requirements_project` makes the requirements (``requirements.txt``'s lines and the
  ``requirements`` items) a project of their own, installed with the pool's packages by
  :mod:`emulator.pyenv` (so its checks apply: no direct references, pip only when needed);
* :func:`populate` fills a replica's working directory from a checked copy of DIR;
* :func:`command` is what the replica runs; the variable itself never reaches the trainer.
"""

from __future__ import annotations

import json
import posixpath
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import paths

__all__ = [
    "ENV",
    "MAX_BUILD_CHARS",
    "MAX_REQUIREMENT_LINES",
    "Build",
    "BuildError",
    "build_of",
    "command",
    "populate",
    "requirements_project",
]

ENV = "VERTEX_EMULATOR_AUTOPACKAGE"
MAX_BUILD_CHARS = 64 * 1024
MAX_REQUIREMENT_LINES = 1000
_MAX_REQUIREMENTS_BYTES = 1024 * 1024
_MODULE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")


class BuildError(ValueError):
    """The build cannot be followed; the message is meant for the API caller."""


@dataclass(frozen=True)
class Build:
    """What gcloud's image holds and runs (paths relative to DIR)."""

    copy: tuple[str, ...]
    module: str | None
    script: str | None
    requirements: tuple[str, ...]
    extra_packages: tuple[str, ...]
    setup_py: bool
    requirements_txt: bool

    @property
    def files(self) -> tuple[str, ...]:
        """Everything of DIR the image holds, in its working directory."""
        kept = [
            *self.copy,
            *(["setup.py"] if self.setup_py else []),
            *(["requirements.txt"] if self.requirements_txt else []),
        ]
        return tuple(dict.fromkeys(kept))


def _inside(path: str, what: str) -> str:
    """``path`` normalised, refused when it leaves DIR (absolute, ``..``)."""
    normal = posixpath.normpath(path)
    if not path or path.startswith("/") or normal == ".." or normal.startswith("../"):
        raise BuildError(f"{ENV}: {what} {path[:80]!r} is not a path under the package directory")
    return normal


def _texts(data: dict[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BuildError(f"{ENV}: {key} must be a list of texts")
    if len(value) > MAX_REQUIREMENT_LINES:
        raise BuildError(f"{ENV}: {key} holds more than {MAX_REQUIREMENT_LINES} items")
    return tuple(value)


def build_of(env: Sequence[Any]) -> Build | None:
    """The build in a ``python_package_spec``'s env (``EnvVar`` messages), or None."""
    text = next((e.value for e in env if e.name == ENV), None)
    if text is None:
        return None
    if len(text) > MAX_BUILD_CHARS:
        raise BuildError(f"{ENV} is longer than {MAX_BUILD_CHARS} characters")
    try:
        data = json.loads(text)
    except ValueError:
        raise BuildError(f"{ENV} is not JSON") from None
    if not isinstance(data, dict):
        raise BuildError(f"{ENV} must be a JSON object")
    target = data.get("target")
    if not isinstance(target, str) or not target:
        raise BuildError(f"{ENV}: target (the module or script to run) is required")
    module = script = None
    if data.get("entry") == "module":
        if not _MODULE.match(target):
            raise BuildError(f"{ENV}: {target[:80]!r} is not a Python module name")
        module = target
    else:
        script = _inside(target, "script")
    return Build(
        copy=tuple(_inside(p, "copied path") for p in _texts(data, "copy")),
        module=module,
        script=script,
        requirements=_texts(data, "requirements"),
        extra_packages=tuple(_inside(p, "extra package") for p in _texts(data, "extraPackages")),
        setup_py=bool(data.get("setupPy")),
        requirements_txt=bool(data.get("requirementsTxt")),
    )


def requirements_project(
    build: Build, package_dir: Path, dest: Path, roots: Sequence[Path]
) -> Path | None:
    """A project (in ``dest``) whose dependencies are the build's requirements: the lines of
    DIR's ``requirements.txt`` (comments, blanks and pip options left out) and the
    ``requirements`` items; None when there are none.

    ``requirements.txt`` is read as every file a client names (``paths.read_allowed``): only a
    regular file under ``roots`` (a symlink out of them, a FIFO, a device are refused, by
    name, never by content), at most 1 MB.
    """
    lines: list[str] = []
    if build.requirements_txt:
        try:
            data = paths.read_allowed(
                package_dir / "requirements.txt",
                roots,
                _MAX_REQUIREMENTS_BYTES,
                what="requirements.txt of the package",
            )
        except paths.PackageError as exc:
            raise BuildError(str(exc)) from None
        for raw in data.decode("utf-8", errors="replace").splitlines():
            line = raw.split(" #", 1)[0].strip()
            if line and not line.startswith(("#", "-")):
                lines.append(line)
    lines += [r.strip() for r in build.requirements if r.strip()]
    if not lines:
        return None
    if len(lines) > MAX_REQUIREMENT_LINES:
        raise BuildError(f"the package requires more than {MAX_REQUIREMENT_LINES} distributions")
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    dependencies = ", ".join(json.dumps(line) for line in dict.fromkeys(lines))
    (dest / "pyproject.toml").write_text(
        '[project]\nname = "autopackage-requirements"\nversion = "0"\n'
        f"dependencies = [{dependencies}]\n",
        encoding="utf-8",
    )
    # A project holds some code: an empty module, so that installing it adds nothing else.
    (dest / "autopackage_requirements.py").write_text("", encoding="utf-8")
    return dest


def populate(build: Build, checked_copy: Path, workdir: Path) -> None:
    """Put in ``workdir`` what gcloud's image holds in its working directory, from a checked
    copy of DIR (no symlink in it leads out: ``emulator.packages.copy_for_pip``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    for name in build.files:
        source = checked_copy / name
        target = workdir / name
        if name == ".":
            shutil.copytree(checked_copy, workdir, dirs_exist_ok=True)
        elif source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        elif source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        else:
            # gcloud's `docker build` stops at the COPY of a path that is not there.
            raise BuildError(f"{name} is not in the package directory (gcloud copies it)")
    for package in build.extra_packages:
        source = checked_copy / package
        if not source.is_file():
            raise BuildError(f"extra package {package} is not in the package directory")
        shutil.copy2(source, workdir / posixpath.basename(package))


def command(build: Build, python: str, args: Sequence[str]) -> list[str]:
    """What the replica runs: the module or the script, as the image's entry point runs it."""
    if build.module is not None:
        return [python, "-m", build.module, *args]
    assert build.script is not None
    if build.script.endswith(".py"):
        return [python, build.script, *args]
    return ["/bin/bash", build.script, *args]
