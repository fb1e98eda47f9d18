"""A job's Python environment, as Vertex AI's prebuilt images make it: packages and dependencies.

On Vertex AI a python-package job runs in a prebuilt image whose Python already holds the
framework (TensorFlow, PyTorch...); the image pip-installs the job's packages, with their
dependencies, before it runs ``python -m <module>``. Here the service's interpreter
(``Settings.python``) plays the image's Python, and :func:`prepare_pool` gives each worker pool
one of two environments:

* **No pip** when every package declares, in metadata read without running code, requirements
  that the interpreter already satisfies (the example trainer: ``numpy``), and is built from plain
  Python files (no compiled extensions, no custom build steps). The packages are copied into the
  job's ``site-<n>`` (:mod:`emulator.packages`) and replicas run the interpreter with that on
  ``PYTHONPATH``. Pip would install nothing more, and this is much faster: on the example trainer
  1 ms, against 2.3 s for pip's first build of it and 3 ms for its cached environment, plus
  80 ms for probing the interpreter either way (``bench/pyenv.py``, two loaded cores).
* **pip** otherwise: the packages (checked copies, see :func:`emulator.packages.copy_for_pip`) are
  pip-installed, dependencies included, into an environment of their own under
  ``<state-dir>/envs/<key>``, cached by the hash of what is installed (the packages' content, the
  interpreter, its installed distributions, pip's version): the second run of the same package
  reuses it. Replicas run that environment's ``bin/python``.

What a package requires must come from pip's package index: a direct reference (a URL, a VCS URL,
a ``file:`` path) is refused before pip runs (:mod:`emulator.requirements` says why). Requirements
that a build computes in code are known only once pip has built the package, so pip runs twice:
``--no-deps`` on the packages, then, once what their built metadata requires is checked the same
way, on those requirements (the packages pinned as installed). So pip never follows a direct
reference from what it builds. Metadata that cannot be read within bounds (a
pyproject.toml nested too deeply, a requirement whose marker is) fails the install, as pip would.

What a package declares is read from a wheel's ``METADATA``; from an sdist's ``PKG-INFO`` when its
``Metadata-Version`` is 2.2 or later and ``Requires-Dist`` is not ``Dynamic``; from
``pyproject.toml`` ``[project]``; from a ``setup.py`` whose ``setup()`` call holds only literal
requirements and keywords that do not change the build; from ``setup.cfg``. Anything else (an
``ext_modules``, a ``cmdclass``, requirements computed by code, a build backend that compiles)
means pip. A project with none of those files declares nothing and is copied as before.

Why a venv, and not ``pip install --target``: with ``--target`` pip ignores what is already
installed and would install the framework (torch, tensorflow) again into every environment,
hiding the interpreter's own copy. The environment is a venv created with ``--without-pip``
(40 ms) whose ``site-packages`` holds a ``.pth`` file adding the interpreter's own site
directories after its own: replicas import the job's dependencies first and the interpreter's
framework next, as in the prebuilt image; pip (the interpreter's, found through the same ``.pth``)
sees the interpreter's distributions as installed and only adds what is missing; and since they lie
outside the venv, pip never uninstalls or changes them (it installs another version into the venv
instead). ``sys.executable`` in a replica is the environment's Python, so a trainer that starts
Python subprocesses (multiprocessing, torchrun) gets the same environment.

Why build in place and publish with a symlink: pip writes absolute paths into what it installs
(console scripts' ``#!`` lines, ``RECORD``), so an environment cannot be renamed once built. It is
built in ``<state-dir>/envs/.build-<key>-<random>`` and published by atomically renaming a symlink
``<state-dir>/envs/<key>`` onto it, so no job ever sees a half-built environment; a lock file per
key makes a second job wanting the same environment wait for the first and then reuse it. A crash
leaves an unpublished build directory, removed by the next build of that key.

pip runs with the user's own pip configuration (``pip.conf``, ``PIP_*`` variables such as
``PIP_INDEX_URL`` or ``PIP_FIND_LINKS``), except the variables that would install somewhere else
(``PIP_TARGET``, ``PIP_PREFIX``, ``PIP_ROOT``, ``PIP_USER``); it never sees the job's environment
variables (they may hold secrets), and is stopped after ``Settings.pip_timeout_seconds``. Its
whole output is kept in the job's ``logs/pip-<n>.log``; when it fails, its last lines are the
job's error (:class:`InstallError`). pip leads a process group of its own (its builds run in it),
and each run is reported to a :data:`Track` callback: the service records it so that, should it be
killed while pip runs, its next start kills the group, as it kills replicas left running.

:func:`framework_warning` compares the framework an ``executorImageUri`` names with what the
replicas' interpreter has installed.
"""

from __future__ import annotations

import ast
import configparser
import contextlib
import email.parser
import email.policy
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from . import packages
from .config import Settings
from .hardware import TrainingImage, hardware
from .requirements import (
    RequirementError,
    TomlError,
    check_reference,
    load_toml,
    parse_requirement,
    printable,
)

__all__ = [
    "ENVS_DIR",
    "Declared",
    "EnvironmentProblem",
    "InstallError",
    "Interpreter",
    "Interrupted",
    "PoolPython",
    "Track",
    "build_requirements",
    "declared",
    "framework_warning",
    "image_framework",
    "pip_error_summary",
    "prepare_pool",
    "probe",
    "unmet",
]

ENVS_DIR = "envs"
_ENV_INFO = "vertex-emulator-env.json"  # in an environment: what its Python has installed
_BASE_PTH = "_vertex_emulator_base.pth"
_KEY_VERSION = "pyenv-2"  # change it when what an environment holds changes
_PINS_FILE = "vertex-emulator-pins.txt"  # in an environment being built, for its second pip run
_PIN_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*")  # a version a pin may hold as it is
_MAX_REQUIREMENT_CHARS = 64 * 1024  # what one pip run may be asked for (real ones: a few KB)
_PROBE_TIMEOUT = 120.0
_VENV_TIMEOUT = 300.0
_PIP_TAIL_BYTES = 64 * 1024
_STOP_POLL_SECONDS = 0.2
# What interpreters and pip need from the service's environment; nothing of the job's.
_BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
_PIP_ENV = (
    *_BASE_ENV,
    "TMPDIR",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "NETRC",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
)
# pip settings that would install somewhere else than the environment being built.
_PIP_REDIRECTS = {"PIP_TARGET", "PIP_PREFIX", "PIP_ROOT", "PIP_USER"}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_MAX_NOTE_CHARS = 4000


class InstallError(Exception):
    """Installing a pool's packages failed (the job fails with code 3); meant for the API caller."""


class EnvironmentProblem(Exception):
    """This machine cannot build environments (no pip, no venv): the job fails with code 9."""


class Interrupted(Exception):
    """The install was given up because the job was cancelled or the service is stopping."""


Stop = Callable[[], bool]
"""Asked while pip runs (and while waiting for another job's build): True gives up at once."""


def _never() -> bool:
    return False


Track = Callable[[int | None], None]
"""Told the pid of each pip run as it starts (the leader of a process group of its own, with its
build subprocesses), and None once it has ended: the service records it, so that its next start
kills what a crash of this one left running (:meth:`emulator.runner.Runner.recover`)."""


def _untracked(pid: int | None) -> None:
    pass


# -- the interpreter -----------------------------------------------------------------------------

# Runs in the interpreter being probed: stdlib only, prints one JSON object.
_PROBE = r"""
import importlib.metadata, json, os, platform, site, sys
dists = []
for d in importlib.metadata.distributions():
    name = d.metadata["Name"]
    if name:
        dists.append([name, d.version, str(d.locate_file(""))])
impl = sys.implementation
impl_version = "{0.major}.{0.minor}.{0.micro}".format(impl.version)
if impl.version.releaselevel != "final":
    impl_version += impl.version.releaselevel[0] + str(impl.version.serial)
user = [site.getusersitepackages()] if site.ENABLE_USER_SITE else []
print(json.dumps({
    "version": platform.python_version(),
    "prefix": sys.prefix,
    "site_dirs": [d for d in user + site.getsitepackages() if os.path.isdir(d)],
    "distributions": dists,
    "markers": {
        "implementation_name": impl.name,
        "implementation_version": impl_version,
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_python_implementation": platform.python_implementation(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    },
}))
"""


@dataclass(frozen=True)
class Distribution:
    """One installed distribution, as the interpreter finds it first on its path."""

    name: str
    version: str
    location: str


@dataclass(frozen=True)
class Interpreter:
    """What a Python interpreter is and has installed (:func:`probe`)."""

    executable: str
    version: str
    prefix: str
    site_dirs: tuple[str, ...]
    distributions: dict[str, Distribution]  # by canonical name (PEP 503)
    markers: dict[str, str]  # PEP 508 marker variables

    def has(self, name: str) -> Distribution | None:
        """The installed distribution called ``name`` (any spelling), or None."""
        return self.distributions.get(canonicalize_name(name))


def _interpreter_env() -> dict[str, str]:
    env = {k: os.environ[k] for k in _BASE_ENV if k in os.environ}
    env["PYTHONSAFEPATH"] = "1"  # the working directory is not on the probe's path
    return env


def probe(python: str, *, cwd: Path | None = None) -> Interpreter:
    """Ask interpreter ``python`` what it is and has installed (one short subprocess)."""
    try:
        out = subprocess.run(
            [python, "-c", _PROBE],
            env=_interpreter_env(),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentProblem(f"The interpreter {python} could not be run: {exc}") from None
    if out.returncode != 0:
        raise EnvironmentProblem(
            f"The interpreter {python} failed to describe itself (exit status {out.returncode}): "
            + pip_error_summary(out.stderr, max_lines=4)
        )
    try:
        return _parse_probe(python, json.loads(out.stdout))
    except (ValueError, TypeError, KeyError) as exc:
        raise EnvironmentProblem(f"The interpreter {python} answered unexpectedly: {exc}") from None


def _parse_probe(python: str, data: Any) -> Interpreter:
    dists: dict[str, Distribution] = {}
    for name, version, location in data["distributions"]:
        # The first one on the path is the one imported; later ones are shadowed.
        dists.setdefault(canonicalize_name(str(name)), Distribution(name, version, location))
    return Interpreter(
        executable=python,
        version=str(data["version"]),
        prefix=str(data["prefix"]),
        site_dirs=tuple(str(d) for d in data["site_dirs"]),
        distributions=dists,
        markers={str(k): str(v) for k, v in dict(data["markers"]).items()},
    )


def _probe_json(interp: Interpreter) -> dict[str, Any]:
    return {
        "version": interp.version,
        "prefix": interp.prefix,
        "site_dirs": list(interp.site_dirs),
        "distributions": [[d.name, d.version, d.location] for d in interp.distributions.values()],
        "markers": interp.markers,
    }


# -- what a package declares, read without running it --------------------------------------------


@dataclass(frozen=True)
class Declared:
    """What a package requires, as its metadata says it."""

    name: str | None
    version: str | None
    requirements: tuple[str, ...] = ()
    python_requires: str | None = None

    def shown(self, fallback: str) -> str:
        """``name==version``, or what is known of it."""
        if self.name and self.version:
            return f"{self.name}=={self.version}"
        return self.name or fallback


# Backends that build a pure-Python project from its files, unless configured to run hooks.
_PURE_BACKENDS = {
    "setuptools.build_meta",
    "setuptools.build_meta:__legacy__",
    "hatchling.build",
    "flit_core.buildapi",
    "pdm.backend",
    "poetry.core.masonry.api",
}
# setup() keywords that neither compute requirements nor change how the files are built or laid out.
_PLAIN_SETUP_KEYWORDS = {
    "name",
    "version",
    "description",
    "long_description",
    "long_description_content_type",
    "author",
    "author_email",
    "maintainer",
    "maintainer_email",
    "url",
    "download_url",
    "project_urls",
    "license",
    "license_files",
    "classifiers",
    "keywords",
    "platforms",
    "packages",
    "py_modules",
    "python_requires",
    "install_requires",
    "extras_require",
    "include_package_data",
    "package_data",
    "exclude_package_data",
    "zip_safe",
    "entry_points",
    "tests_require",
    "test_suite",
}


class _PipDecides(Exception):
    """The metadata cannot be read without running code: pip decides."""


class _Unreadable(Exception):
    """A metadata file that pip could not read either: the job's install error."""

    def __init__(self, file: str, why: str) -> None:
        super().__init__(f"its {file} could not be read ({why})")


def declared(pkg: packages.OpenedPackage) -> Declared | None:
    """What ``pkg`` declares, or None when only pip (running its build) can tell.

    InstallError when its pyproject.toml, or a requirement it declares, cannot be read within
    the bounds of :mod:`emulator.requirements` (pip could not read them either).
    """
    try:
        found = _declared(pkg)
        for text in found.requirements if found is not None else ():
            parse_requirement(text)
    except (_Unreadable, RequirementError) as exc:
        raise InstallError(f"package {pkg.source.name}: {exc}") from None
    return found


def _declared(pkg: packages.OpenedPackage) -> Declared | None:
    meta = pkg.metadata
    pyproject = None if pkg.kind == "wheel" else _pyproject_table(meta)
    if any(data is None for data in meta.values()):
        return None
    try:
        if pkg.kind == "wheel":
            wheel_metadata = meta.get("METADATA")
            if wheel_metadata is None:
                return Declared(None, None)  # not built by a wheel builder: nothing declared
            return _core_metadata(wheel_metadata, trust_dynamic=True)
        return _project(meta, pyproject)
    except _PipDecides:
        return None


def _pyproject_table(meta: Mapping[str, bytes | None]) -> dict[str, Any] | None:
    """The project's pyproject.toml, parsed; None when it has none. Every build reads it, so one
    that cannot be read is _Unreadable: pip would fail on it (or exhaust its memory)."""
    if "pyproject.toml" not in meta:
        return None
    data = meta["pyproject.toml"]
    if data is None:
        limit = packages.MAX_METADATA_BYTES // 1024
        raise _Unreadable("pyproject.toml", f"larger than {limit} KB, or not a regular file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Unreadable(
            "pyproject.toml", f"not UTF-8: {exc.reason} at byte {exc.start}"
        ) from None
    try:
        return load_toml(text)
    except TomlError as exc:
        raise _Unreadable("pyproject.toml", str(exc)) from None


def _utf8(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _PipDecides from None  # e.g. a setup.py with a coding line: Python reads it


def _project(meta: Mapping[str, bytes | None], pyproject_table: dict[str, Any] | None) -> Declared:
    # An sdist's PKG-INFO of Metadata-Version 2.2 or later is what its build produces: its
    # requirements are final. The build files are read all the same, for how the files are built.
    trusted = None
    pkg_info = meta.get("PKG-INFO")
    if pkg_info is not None:
        with contextlib.suppress(_PipDecides):
            trusted = _core_metadata(pkg_info, trust_dynamic=False)
    wanted = trusted is None
    pyproject = _pyproject(pyproject_table, requirements=wanted)
    setup_py = _setup_py(_utf8(meta.get("setup.py")), requirements=wanted)
    setup_cfg = _setup_cfg(_utf8(meta.get("setup.cfg")), requirements=wanted)
    if trusted is not None:
        return trusted
    if pyproject is not None:
        return pyproject
    if setup_cfg is not None and (setup_py is None or not setup_py.requirements):
        # setup() without install_requires takes them from setup.cfg
        if setup_py is None:
            return setup_cfg
        return replace(
            setup_py,
            requirements=setup_cfg.requirements,
            python_requires=setup_py.python_requires or setup_cfg.python_requires,
        )
    return setup_py or setup_cfg or Declared(None, None)


def _core_metadata(data: bytes, *, trust_dynamic: bool) -> Declared:
    try:
        parser = email.parser.BytesParser(policy=email.policy.compat32)
        msg = parser.parsebytes(data, headersonly=True)
        if not trust_dynamic:
            # Before Metadata-Version 2.2 an sdist's PKG-INFO may leave out what its build computes.
            version = str(msg.get("Metadata-Version", "0"))
            dynamic = {str(d).strip().lower() for d in msg.get_all("Dynamic") or []}
            if _version_tuple(version) < (2, 2) or dynamic & {"requires-dist", "requires-python"}:
                raise _PipDecides
        return Declared(
            name=_header(msg.get("Name")),
            version=_header(msg.get("Version")),
            requirements=tuple(str(r).strip() for r in msg.get_all("Requires-Dist") or []),
            python_requires=_header(msg.get("Requires-Python")),
        )
    except (ValueError, TypeError, LookupError):  # headers no parser of metadata would take
        raise _PipDecides from None


def _header(value: Any) -> str | None:
    return str(value).strip() or None if value is not None else None


def _version_tuple(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.strip().split("."))
    except ValueError:
        return (0,)


def _pyproject(data: dict[str, Any] | None, *, requirements: bool) -> Declared | None:
    """[project]'s requirements; None when it has no [project] table and setuptools builds it
    (setup.py or setup.cfg may declare them). ``requirements``: False when they are known."""
    if data is None:
        return None
    build = data.get("build-system", {})
    backend = build.get("build-backend") if isinstance(build, dict) else None
    if backend is not None and backend not in _PURE_BACKENDS:
        raise _PipDecides  # a backend that may compile (scikit-build, maturin, meson...)
    tool = data.get("tool", {})
    if _has_build_hooks(tool):
        raise _PipDecides
    project = data.get("project")
    if not requirements:
        return None
    if not isinstance(project, dict):
        if not str(backend or "setuptools").startswith("setuptools") or "poetry" in tool:
            raise _PipDecides  # its backend reads the requirements from its own tables
        return None
    dynamic = project.get("dynamic", [])
    if not isinstance(dynamic, list) or {"dependencies", "requires-python"} & set(dynamic):
        raise _PipDecides
    deps = project.get("dependencies", [])
    python_requires = project.get("requires-python")
    if not _strings(deps) or not isinstance(python_requires, str | None):
        raise _PipDecides
    name, version = project.get("name"), project.get("version")
    return Declared(
        name if isinstance(name, str) else None,
        version if isinstance(version, str) else None,
        tuple(deps),
        python_requires,
    )


def _has_build_hooks(tool: Any) -> bool:
    """True when a pure backend is configured to compile, run code, or move the sources."""

    def table(parent: Any, *names: str) -> dict[str, Any]:
        for name in names:
            parent = parent.get(name) if isinstance(parent, dict) else None
        return parent if isinstance(parent, dict) else {}

    hatch_build = table(tool, "hatch", "build")
    hatch_targets = [t for t in table(hatch_build, "targets").values() if isinstance(t, dict)]
    return bool(
        {"ext-modules", "package-dir"} & set(table(tool, "setuptools"))
        or "hooks" in hatch_build
        or any("hooks" in target for target in hatch_targets)
        or {"run-setuptools", "setup-script"} & set(table(tool, "pdm", "build"))
        or "build" in table(tool, "poetry")
    )


def _strings(value: Any) -> bool:
    return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)


def _setup_py(text: str | None, *, requirements: bool) -> Declared | None:
    """The literal requirements of a setup.py's one setup() call (see the module doc); None when
    it is not a build script. ``requirements``: False when they are known (only the build is
    checked)."""
    if text is None:
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise _PipDecides from None
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _callee(n.func) == "setup"]
    if not calls:
        if _imports_a_build_tool(tree):
            raise _PipDecides  # it builds through setuptools in a way this reading cannot see
        return None  # not a packaging script at all (it cannot build a distribution)
    if len(calls) > 1 or calls[0].args or any(k.arg is None for k in calls[0].keywords):
        raise _PipDecides
    keywords = {k.arg: k.value for k in calls[0].keywords if k.arg is not None}
    if set(keywords) - _PLAIN_SETUP_KEYWORDS:
        raise _PipDecides  # ext_modules, cmdclass, setup_requires, package_dir...
    name = _literal_or_none(keywords.get("name"))
    version = _literal_or_none(keywords.get("version"))
    if not requirements:
        return Declared(name, version)
    install_requires = _literal(keywords.get("install_requires"), default=[])
    python_requires = _literal(keywords.get("python_requires"), default=None)
    if not _strings(install_requires) or not isinstance(python_requires, str | None):
        raise _PipDecides
    return Declared(name, version, tuple(install_requires), python_requires)


def _callee(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _imports_a_build_tool(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        if any(n.split(".")[0] in {"setuptools", "distutils"} for n in names):
            return True
    return False


def _literal(node: ast.expr | None, *, default: Any) -> Any:
    if node is None:
        return default
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        raise _PipDecides from None


def _literal_or_none(node: ast.expr | None) -> str | None:
    try:
        value = _literal(node, default=None)
    except _PipDecides:
        return None
    return value if isinstance(value, str) else None


def _setup_cfg(text: str | None, *, requirements: bool) -> Declared | None:
    """setup.cfg's ``[options] install_requires``; None when it has none (or they are known)."""
    if text is None:
        return None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        raise _PipDecides from None
    options = parser["options"] if parser.has_section("options") else {}
    if {"package_dir", "setup_requires"} & set(options):
        raise _PipDecides
    raw = options.get("install_requires")
    if raw is None or not requirements:
        return None
    raw = raw.strip()
    if raw.startswith(("file:", "attr:")) or ("\n" not in raw and ";" in raw):
        raise _PipDecides  # read from a file, or ';'-separated where markers also use ';'
    metadata = parser["metadata"] if parser.has_section("metadata") else {}
    python_requires = options.get("python_requires")
    return Declared(
        metadata.get("name"),
        metadata.get("version"),
        tuple(
            line.strip() for line in raw.splitlines() if line.strip() and not line.startswith("#")
        ),
        python_requires.strip() if python_requires else None,
    )


def build_requirements(pkg: packages.OpenedPackage) -> tuple[str, ...]:
    """What pip installs to build ``pkg``, as far as it is declared without code: pyproject.toml's
    ``[build-system] requires`` and a literal ``setup_requires`` (setup.py, setup.cfg), which
    setuptools hands to pip. A wheel is not built: nothing. InstallError as :func:`declared`."""
    if pkg.kind == "wheel":
        return ()
    try:
        pyproject = _pyproject_table(pkg.metadata) or {}
    except _Unreadable as exc:
        raise InstallError(f"package {pkg.source.name}: {exc}") from None
    build = pyproject.get("build-system")
    requires = build.get("requires") if isinstance(build, dict) else None
    found = [r for r in requires if isinstance(r, str)] if isinstance(requires, list) else []
    for name, read in (
        ("setup.py", _setup_py_setup_requires),
        ("setup.cfg", _setup_cfg_setup_requires),
    ):
        with contextlib.suppress(_PipDecides):
            found += read(_utf8(pkg.metadata.get(name)))
    return tuple(found)


def _requirement_lines(value: Any) -> list[str]:
    """setuptools' requirement list: strings, or one string of lines (comments dropped)."""
    if isinstance(value, str):
        value = value.splitlines()
    if not _strings(value):
        return []
    return [line.strip() for line in value if line.strip() and not line.strip().startswith("#")]


def _setup_py_setup_requires(text: str | None) -> list[str]:
    if text is None:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []  # pip's build fails on it before installing anything
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _callee(node.func) == "setup":
            for keyword in node.keywords:
                if keyword.arg == "setup_requires":
                    found += _requirement_lines(_literal(keyword.value, default=[]))
    return found


def _setup_cfg_setup_requires(text: str | None) -> list[str]:
    if text is None:
        return []
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return []  # setuptools fails on it before installing anything
    options = parser["options"] if parser.has_section("options") else {}
    return _requirement_lines(options.get("setup_requires", ""))


def unmet(decl: Declared, interp: Interpreter) -> list[str]:
    """The requirements of ``decl`` that ``interp`` does not satisfy (as pip would judge them);
    a requirement this cannot judge (extras, a URL, a bad marker) counts as unmet."""
    missing: list[str] = []
    if decl.python_requires:
        try:
            ok = SpecifierSet(decl.python_requires).contains(interp.version, prereleases=True)
        except (InvalidSpecifier, InvalidVersion):
            ok = False
        if not ok:
            missing.append(f"Python {decl.python_requires} (this is {interp.version})")
    for text in decl.requirements:
        if not _satisfied(text, interp):
            missing.append(text)
    return missing


def _satisfied(text: str, interp: Interpreter) -> bool:
    try:
        req = parse_requirement(text)
        if req is None:
            return False
        if req.marker is not None and not req.marker.evaluate({**interp.markers, "extra": ""}):
            return True  # not for this interpreter
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return False
    have = interp.has(req.name)
    if req.url or req.extras or have is None:
        return False
    try:
        return req.specifier.contains(Version(have.version), prereleases=True)
    except InvalidVersion:
        return False


def _met(decl: Declared, interp: Interpreter) -> list[str]:
    """``name==version`` of what ``interp`` has installed for ``decl``'s requirements."""
    found = []
    for text in decl.requirements:
        req = parse_requirement(text)
        have = interp.has(req.name) if req is not None else None
        if have is not None:
            found.append(f"{have.name}=={have.version}")
    return found


# -- a pool's environment ------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolPython:
    """How one pool's replicas run Python, and what the job log says about it."""

    python: str  # the interpreter replicas run
    pythonpath: str | None  # what goes on their PYTHONPATH (the no-pip site directory)
    interpreter: Interpreter  # what they find installed (for the framework check)
    notes: tuple[str, ...]  # lines for the job log


def prepare_pool(
    sources: Sequence[Path],
    *,
    index: int,
    job_dir: Path,
    settings: Settings,
    base: Interpreter,
    always_pip: bool = False,
    stop: Stop = _never,
    track: Track = _untracked,
) -> PoolPython:
    """Install the packages of one pool (real paths, checked) as the module doc says.

    ``index`` numbers the pool's ``site-<n>`` and ``logs/pip-<n>.log``; ``base`` is
    :func:`probe` of ``settings.python``; ``always_pip`` installs with pip even what needs no pip
    (to compare the two). Raises PackageError (a package is refused), InstallError (a requirement
    is refused, or pip failed), EnvironmentProblem, or Interrupted as soon as ``stop()`` is true
    while pip runs. ``track`` is told about each pip process (see :data:`Track`).
    """
    limits = packages.Limits(max_bytes=settings.max_unpacked_mb * 1024 * 1024)
    with packages.opened(sources, job_dir, roots=settings.allow_roots, limits=limits) as found:
        decls = [(pkg, declared(pkg)) for pkg in found]
        # Every requirement declared is checked here, before pip (or anything) reads it.
        for pkg, decl in decls:
            _check_references(pkg, decl, settings.allow_roots)
        reasons = _pip_reasons(decls, base) or (["asked to use pip"] if always_pip else [])
        if not reasons:
            site = job_dir / f"site-{index}"
            shutil.rmtree(site, ignore_errors=True)
            try:
                packages.install_opened(found, site, limits=limits)
            except BaseException:
                shutil.rmtree(site, ignore_errors=True)
                raise
            no_pip = _no_pip_notes(decls, site, base)
            return PoolPython(settings.python, str(site), base, tuple(map(_log_line, no_pip)))
        staged = job_dir / f"pip-input-{index}"
        shutil.rmtree(staged, ignore_errors=True)
        try:
            copies = [
                packages.copy_for_pip(pkg, staged / str(i), limits=limits)
                for i, pkg in enumerate(found)
            ]
            request = _PipRequest(
                copies=tuple(copies),
                roots=tuple(settings.allow_roots),
                log=job_dir / "logs" / f"pip-{index}.log",
                stop=stop,
                track=track,
            )
            env = _ensure_env(request, base=base, settings=settings)
        finally:
            shutil.rmtree(staged, ignore_errors=True)
    notes = [f"pip is needed: {'; '.join(reasons)}", env.note]
    return PoolPython(str(env.python), None, env.interpreter, tuple(map(_log_line, notes)))


def _check_references(
    pkg: packages.OpenedPackage, decl: Declared | None, roots: Sequence[Path]
) -> None:
    """InstallError for a direct reference among ``pkg``'s declared requirements (whatever its
    marker), or among what its build installs first (see :mod:`emulator.requirements`)."""
    shown = decl.shown(pkg.source.name) if decl is not None else pkg.source.name
    checked = [("build requirement ", text) for text in build_requirements(pkg)]
    checked += [("", text) for text in (decl.requirements if decl is not None else ())]
    for what, text in checked:
        try:
            req = parse_requirement(text)
            if req is not None:
                check_reference(req, text, roots)
        except RequirementError as exc:
            raise InstallError(f"package {shown}: {what}{exc}") from None


def _log_line(text: str) -> str:
    # Names and requirements come from the package: one line each, printable, bounded.
    text = _CONTROL.sub("?", text.replace("\n", " ").replace("\t", " "))
    return text if len(text) <= _MAX_NOTE_CHARS else text[:_MAX_NOTE_CHARS] + "..."


def _pip_reasons(
    decls: Sequence[tuple[packages.OpenedPackage, Declared | None]], base: Interpreter
) -> list[str]:
    reasons = []
    for pkg, decl in decls:
        if decl is None:
            reasons.append(
                f"{pkg.source.name} computes its requirements or its build in code "
                "that only pip runs"
            )
            continue
        missing = unmet(decl, base)
        if missing:
            reasons.append(
                f"{decl.shown(pkg.source.name)} requires {', '.join(missing)}, "
                f"not installed for {base.executable}"
            )
    return reasons


def _no_pip_notes(
    decls: Sequence[tuple[packages.OpenedPackage, Declared | None]], site: Path, base: Interpreter
) -> tuple[str, ...]:
    shown = ", ".join(d.shown(p.source.name) if d else p.source.name for p, d in decls)
    met = sorted({m for _, d in decls if d for m in _met(d, base)})
    line = f"installed {shown} into {site} without pip (none of its code run)"
    if met:
        line += f"; what it requires is installed for {base.executable}: {', '.join(met)}"
    return (line,)


@dataclass(frozen=True)
class _Env:
    path: Path
    python: Path
    interpreter: Interpreter
    note: str


def env_key(copies: Sequence[Path], base: Interpreter) -> str:
    """The cache key of an environment holding ``copies`` on top of ``base``."""
    digest = hashlib.sha256()

    def feed(*parts: str | bytes) -> None:
        for part in parts:
            data = part.encode() if isinstance(part, str) else part
            digest.update(len(data).to_bytes(8, "big") + data)

    pip = base.has("pip")
    feed(_KEY_VERSION, os.path.realpath(base.executable), base.version, base.prefix)
    feed("pip", pip.version if pip else "none", *base.site_dirs)
    for name in sorted(base.distributions):
        feed(name, base.distributions[name].version)
    for copy in copies:
        feed("package", copy.name)
        _feed_tree(copy, feed)
    return digest.hexdigest()[:32]


def _feed_tree(path: Path, feed: Callable[..., None]) -> None:
    if path.is_file():
        feed("file", _file_digest(path))
        return
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        rel = os.path.relpath(dirpath, path)
        feed("dir", rel)
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            executable = os.stat(full).st_mode & 0o111
            feed("file", os.path.join(rel, name), str(bool(executable)), _file_digest(Path(full)))


def _file_digest(path: Path) -> bytes:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1024 * 1024):
            digest.update(chunk)
    return digest.digest()


@dataclass(frozen=True)
class _PipRequest:
    """What one pool asks pip for, and how its pip runs are watched."""

    copies: tuple[Path, ...]  # checked copies of the packages
    roots: tuple[Path, ...]  # the allowed roots (a message says whether a path leads out of them)
    log: Path  # pip's output
    stop: Stop
    track: Track


def _ensure_env(request: _PipRequest, *, base: Interpreter, settings: Settings) -> _Env:
    """The published environment for ``request.copies``: reused if built before, else built now."""
    if base.has("pip") is None:
        raise EnvironmentProblem(
            f"pip is not installed for {base.executable}, and installing packages with their "
            "dependencies needs it: install pip for that interpreter."
        )
    key = env_key(request.copies, base)
    envs = settings.state_dir / ENVS_DIR
    envs.mkdir(parents=True, exist_ok=True)
    published = envs / key
    lock_timeout = settings.pip_timeout_seconds + _VENV_TIMEOUT
    with _locked(envs / f".{key}.lock", lock_timeout, request.stop):
        found = _load(published)
        if found is not None:
            return replace(
                found,
                note=f"reusing the environment {published}, built before for the same packages: "
                + _installed_text(found.interpreter, published),
            )
        _remove_unpublished(envs, key, published)
        build = Path(tempfile.mkdtemp(prefix=f".build-{key}-", dir=envs))
        started = time.monotonic()
        try:
            interp = _build(build, request, base=base, settings=settings)
            (build / _ENV_INFO).write_text(json.dumps(_probe_json(interp)))
            link = envs / f".link-{key}-{os.getpid()}-{time.monotonic_ns()}"
            os.symlink(build.name, link)
            os.replace(link, published)
        except BaseException:
            shutil.rmtree(build, ignore_errors=True)
            raise
    seconds = time.monotonic() - started
    interp = replace(interp, executable=str(published / "bin" / "python"))
    note = (
        f"pip installed into the environment {published} in {seconds:.1f}s "
        f"(pip's output: {request.log}): {_installed_text(interp, build)}"
    )
    return _Env(published, published / "bin" / "python", interp, note)


@contextlib.contextmanager
def _locked(path: Path, timeout: float, stop: Stop = _never) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if stop():
                    raise Interrupted(
                        "given up while another job built the same environment"
                    ) from None
                if time.monotonic() > deadline:
                    raise InstallError(
                        f"another job kept building the same environment for more than {timeout:g}s"
                    ) from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)  # releases the lock


def _load(published: Path) -> _Env | None:
    try:
        data = json.loads((published / _ENV_INFO).read_text())
        python = published / "bin" / "python"
        interp = _parse_probe(str(python), data)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return _Env(published, python, interp, "")


def _remove_unpublished(envs: Path, key: str, published: Path) -> None:
    # Under the key's lock, with no readable environment published for the key: what a crash (or
    # a removed info file) left behind goes, the link included, before the key is built again.
    if published.is_symlink():
        published.unlink()
    elif published.exists():
        shutil.rmtree(published, ignore_errors=True)
    for entry in envs.glob(f".build-{key}-*"):
        shutil.rmtree(entry, ignore_errors=True)
    for entry in envs.glob(f".link-{key}-*"):
        with contextlib.suppress(OSError):
            entry.unlink()


def _installed_text(interp: Interpreter, env_dir: Path) -> str:
    root = os.path.realpath(env_dir)
    names = sorted(
        (
            f"{d.name}=={d.version}"
            for d in interp.distributions.values()
            if _under(d.location, root)
        ),
        key=str.lower,
    )
    return ", ".join(names) or "nothing new (everything was installed already)"


def _under(location: str, root: str) -> bool:
    real = os.path.realpath(location)
    return real == root or real.startswith(root + os.sep)


def _build(
    build: Path, request: _PipRequest, *, base: Interpreter, settings: Settings
) -> Interpreter:
    """Create the venv and pip-install into it, in two runs: the packages alone (``--no-deps``),
    then what pip's build of them says they require, once checked, and what that requires in
    turn from the index. So pip never follows a direct reference a package's build declares."""
    _create_venv(build, base, settings.python)
    python = build / "bin" / "python"
    request.log.parent.mkdir(parents=True, exist_ok=True)
    pip = _Pip(python, build, request, settings.pip_timeout_seconds)
    pip.install(["--no-deps", *map(str, request.copies)])
    wanted, pins = _dependencies(_site_packages(build), request)
    if wanted:
        # The packages stay as installed: a dependency wanting another version of one is a
        # conflict, as in a single pip run, not a reason to fetch it from the index.
        constraints = build / _PINS_FILE
        constraints.write_text("".join(f"{pin}\n" for pin in pins))
        try:
            pip.install(["--constraint", str(constraints), *wanted])
        finally:
            constraints.unlink(missing_ok=True)
    return probe(str(python), cwd=build)


def _site_packages(env: Path) -> Path:
    sites = list(env.glob("lib/python*/site-packages"))
    if len(sites) != 1:
        raise EnvironmentProblem(f"The venv {env} has no single lib/python*/site-packages")
    return sites[0]


def _dependencies(site: Path, request: _PipRequest) -> tuple[list[str], list[str]]:
    """(the requirements of the distributions in ``site``, checked; ``name===version`` of each)."""
    dists = [_installed_metadata(info) for info in sorted(site.glob("*.dist-info"))]
    wanted = [_checked(text, dist, request) for dist in dists for text in dist.requirements]
    if sum(map(len, wanted)) > _MAX_REQUIREMENT_CHARS:
        # They are pip's arguments, and the system limits those (E2BIG would fail the job as
        # though this machine could not run pip).
        raise InstallError(
            f"the packages require more than {_MAX_REQUIREMENT_CHARS // 1024} KB of requirements"
        )
    pins = [
        f"{canonicalize_name(d.name)}==={d.version}"
        for d in dists
        if d.name and d.version and _PIN_VERSION.fullmatch(d.version)
    ]
    return list(dict.fromkeys(wanted)), pins


def _installed_metadata(info: Path) -> Declared:
    try:
        with open(info / "METADATA", "rb") as f:
            data = f.read(packages.MAX_METADATA_BYTES + 1)
    except OSError as exc:
        raise InstallError(f"pip installed {info.name} without readable metadata: {exc}") from None
    try:
        if len(data) > packages.MAX_METADATA_BYTES:
            raise _PipDecides
        return _core_metadata(data, trust_dynamic=True)
    except _PipDecides:
        raise InstallError(f"pip installed {info.name} with metadata no one can read") from None


def _checked(text: str, dist: Declared, request: _PipRequest) -> str:
    """Requirement ``text`` of installed ``dist``, as the second pip run may be given it."""
    try:
        req = parse_requirement(text)
        if req is None:
            raise RequirementError(f"{printable(text)!r} is not a valid requirement")
        check_reference(req, text, request.roots)
    except RequirementError as exc:
        raise InstallError(f"package {dist.shown('?')} (as pip built it): {exc}") from None
    return str(req)


def _create_venv(build: Path, base: Interpreter, python: str) -> None:
    try:
        out = subprocess.run(
            [python, "-m", "venv", "--without-pip", "--clear", str(build)],
            env=_interpreter_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_VENV_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentProblem(f"Creating a venv with {python} failed: {exc}") from None
    if out.returncode != 0:
        raise EnvironmentProblem(
            f"Creating a venv with {python} failed (exit status {out.returncode}): "
            + pip_error_summary(out.stderr + out.stdout, max_lines=4)
        )
    # After the venv's own directory, the interpreter's: its framework, found as in the image.
    lines = [f"import site; site.addsitedir({d!r})\n" for d in base.site_dirs]
    (_site_packages(build) / _BASE_PTH).write_text("".join(lines))


def pip_env() -> dict[str, str]:
    """The environment pip runs with: the user's pip configuration, nothing of the job's."""
    env = {k: os.environ[k] for k in _PIP_ENV if k in os.environ}
    env.update(
        (k, v) for k, v in os.environ.items() if k.startswith("PIP_") and k not in _PIP_REDIRECTS
    )
    return env


class _Pip:
    """The pip runs of one build: into one log, within one pip timeout, each one tracked."""

    def __init__(self, python: Path, cwd: Path, request: _PipRequest, timeout: float) -> None:
        self.command = [
            str(python),
            "-m",
            "pip",
            "install",
            "--no-input",
            "--disable-pip-version-check",
            "--progress-bar",
            "off",
            "--no-warn-script-location",
        ]
        self.cwd = cwd
        self.request = request
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.runs = 0

    def install(self, args: Sequence[str]) -> None:
        """Run ``pip install <args>``; InstallError when it fails or runs out of time."""
        cmd = [*self.command, *args]
        log = self.request.log
        with open(log, "ab" if self.runs else "wb") as out:
            self.runs += 1
            out.write(f"$ {' '.join(cmd)}\n".encode())
            out.flush()
            try:
                proc = subprocess.Popen(
                    cmd,
                    cwd=self.cwd,
                    env=pip_env(),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its build subprocesses are stopped with it
                )
            except OSError as exc:
                raise EnvironmentProblem(f"pip could not be started: {exc}") from None
            try:
                self.request.track(proc.pid)
                rc = self._wait(proc)
            except BaseException:
                if proc.returncode is None:  # not stopped by _wait: stopped here, once
                    _kill_group(proc)
                raise
            finally:
                self.request.track(None)
        if rc != 0:
            raise InstallError(
                f"pip install exited with status {rc}:\n{pip_error_summary(_tail(log))}"
            )

    def _wait(self, proc: subprocess.Popen[bytes]) -> int:
        while True:
            try:
                # Short waits: a cancelled job must not sit out a long install.
                left = max(self.deadline - time.monotonic(), 0)
                return proc.wait(timeout=min(_STOP_POLL_SECONDS, left))
            except subprocess.TimeoutExpired:
                if self.request.stop():
                    _kill_group(proc)
                    raise Interrupted("pip install was stopped: the job was cancelled") from None
                if time.monotonic() < self.deadline:
                    continue
            _kill_group(proc)
            raise InstallError(
                f"pip install did not finish within {self.timeout:g}s (the emulator's "
                f"--pip-timeout); its last lines:\n{pip_error_summary(_tail(self.request.log))}"
            ) from None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _tail(path: Path) -> str:
    with open(path, "rb") as f:
        f.seek(max(0, os.fstat(f.fileno()).st_size - _PIP_TAIL_BYTES))
        return f.read().decode(errors="replace")


def pip_error_summary(output: str, *, max_lines: int = 12, max_chars: int = 1500) -> str:
    """pip's last meaningful lines: from its first error line among the last ``max_lines``
    non-empty ones (notices dropped), at most ``max_chars`` characters (the end kept)."""
    lines = [
        _CONTROL.sub("?", raw).rstrip()
        for raw in output.splitlines()
        if raw.strip() and not raw.lstrip().startswith("[notice]")
    ]
    window = lines[-max_lines:]
    first_error = next(
        (i for i, line in enumerate(window) if line.lstrip().lower().startswith("error")), 0
    )
    text = "\n".join(window[first_error:])
    return text if len(text) <= max_chars else "..." + text[-max_chars:]


# -- the framework the image names ---------------------------------------------------------------

# Catalog framework name -> (how users call it, the distributions that provide it).
_FRAMEWORKS = {
    "tensorflow": (
        "TensorFlow",
        ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tf-nightly"),
    ),
    "pytorch": ("PyTorch", ("torch",)),
    "scikit-learn": ("scikit-learn", ("scikit-learn",)),
    "xgboost": ("XGBoost", ("xgboost", "xgboost-cpu")),
}
# Prebuilt image names: vertex-ai/training/<fw>-<cpu|gpu|tpu|xla>.<major>-<minor>[.py310]:<tag>
_IMAGE_NAME = re.compile(r"(tf|pytorch|sklearn|xgboost)-(?:cpu|gpu|tpu|xla)\.(\d{1,3})-(\d{1,3})\b")
_IMAGE_FRAMEWORK = {"tf": "tensorflow", "pytorch": "pytorch", "sklearn": "scikit-learn"}


def image_framework(uri: str) -> tuple[str, str] | None:
    """(framework, ``major.minor``) a prebuilt training image provides, or None for other images.

    Known images are looked up in the catalog data (``training_images.csv``, read by
    :mod:`emulator.hardware`); newer ones are read from Google's naming scheme.
    """
    path = uri.split("/", 1)[1] if "/" in uri else uri  # without the registry host
    if ":" not in path.rsplit("/", 1)[-1]:
        path += ":latest"
    for image in _catalog_images():
        if image.image_path == path:
            return image.framework, image.framework_version
    parent, _, name = path.rpartition("/")
    match = _IMAGE_NAME.match(name)
    if match is None or not parent.endswith("/training"):
        return None
    framework = _IMAGE_FRAMEWORK.get(match[1], match[1])
    return framework, f"{int(match[2])}.{int(match[3])}"


def _catalog_images() -> tuple[TrainingImage, ...]:
    # The catalog helps here but is not needed: without it, image names are read by their scheme.
    return hardware().training_images


def framework_warning(uri: str, interp: Interpreter) -> str | None:
    """A warning when ``interp`` lacks the framework image ``uri`` provides, or has another
    major.minor version of it; None when they agree or the image is not a prebuilt one."""
    found = image_framework(uri)
    if found is None or found[0] not in _FRAMEWORKS:
        return None
    framework, wanted = found
    shown, dists = _FRAMEWORKS[framework]
    have = next((d for d in map(interp.has, dists) if d is not None), None)
    if have is None:
        return _log_line(
            f"WARNING: the executor image {uri} provides {shown} {wanted}, but {shown} is not "
            f"installed for {interp.executable}, which runs this job here: importing it fails "
            f"here, not on Vertex AI. Install {shown} {wanted} for that interpreter to run the "
            "job as Vertex AI does."
        )
    try:
        release = Version(have.version).release
    except InvalidVersion:
        release = ()
    if ".".join(map(str, release[:2])) != wanted:
        return _log_line(
            f"WARNING: the executor image {uri} provides {shown} {wanted}, but "
            f"{have.name} {have.version} is installed for {interp.executable}, which runs this "
            f"job here: it may behave differently than on Vertex AI."
        )
    return None
