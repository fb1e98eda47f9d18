"""Per-job Python environments (``emulator.pyenv``): dependencies installed with pip, cached, and
the framework an executor image names compared with what the replicas' interpreter has.

The emulator tests install a real distribution from the package index (through pip's own
configuration): termcolor 2.4.0, a small pure-Python one that the project's environment does not
hold. Everything else is built here: wheels written as zip files, projects as directories.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from google.cloud.aiplatform_v1 import types as aip

from emulator import cli, packages, pyenv
from emulator.config import Settings
from emulator.testing import EmulatorProcess, running_emulator, wait_for_state

from .conftest import (
    EXECUTE_ARGS,
    PARENT,
    TERMINAL,
    TRAINER_DIR,
    S,
    job_id,
    make_job,
    trainer_pool,
    unique,
)

DEPENDENCY = "termcolor==2.4.0"  # pure Python, no dependencies of its own, 8 kB
SECRET = "s3cret-token-7f1d2c"
PIP_MARK = "PIP_VERTEX_EMULATOR_TEST_MARK"  # a PIP_* setting of the service's user
CPU_IMAGE = "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest"


# -- building packages ---------------------------------------------------------------------------


def write_wheel(
    folder: Path,
    name: str,
    *,
    requires: tuple[str, ...] = (),
    main: str = "print('ok')\n",
    version: str = "0.1.0",
) -> Path:
    """A pure-Python wheel ``<name>-<version>-py3-none-any.whl`` holding ``<name>/main.py``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{name}/__init__.py", "")
        zf.writestr(f"{name}/main.py", main)
        zf.writestr(f"{info}/METADATA", metadata)
        zf.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr(f"{info}/RECORD", "")
    return path


REPORT_DEPENDENCY = """\
import importlib.metadata, sys
import termcolor
print("termcolor", importlib.metadata.version("termcolor"), "from", termcolor.__file__)
print("python", sys.executable)
"""


def package_pool(
    uri: str, *, image: str = CPU_IMAGE, env: dict[str, str] | None = None
) -> aip.WorkerPoolSpec:
    pool = trainer_pool(package_uris=[uri], env=env)
    pool.python_package_spec.python_module = Path(uri).name.split("-")[0] + ".main"
    pool.python_package_spec.executor_image_uri = image
    return pool


def run_job(emu: EmulatorProcess, pool: aip.WorkerPoolSpec, timeout: float = 240) -> aip.CustomJob:
    client = emu.client()
    created = client.create_custom_job(
        parent=PARENT, custom_job=make_job("pyenv", pools=[pool], labels={"t": unique()})
    )
    done: aip.CustomJob = wait_for_state(client, created.name, TERMINAL, timeout=timeout)
    return done


def chief_log(emu: EmulatorProcess, job: aip.CustomJob) -> str:
    return (emu.state_dir / "jobs" / job_id(job) / "logs" / "workerpool0-0.log").read_text()


def fake_interpreter(dists: dict[str, str], version: str = "3.11.7") -> pyenv.Interpreter:
    return pyenv.Interpreter(
        executable="/opt/python/bin/python",
        version=version,
        prefix="/opt/python",
        site_dirs=(),
        distributions={
            name: pyenv.Distribution(name, v, "/opt/python/site") for name, v in dists.items()
        },
        markers={"python_version": version.rsplit(".", 1)[0], "sys_platform": "linux"},
    )


# -- the emulator, end to end --------------------------------------------------------------------


@pytest.fixture(scope="module")
def allowed_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the tests put packages (the server may read them)."""
    return tmp_path_factory.mktemp("pyenv-packages")


@pytest.fixture(scope="module")
def pipenv(allowed_root: Path) -> Iterator[EmulatorProcess]:
    """An execute-mode server whose environment holds a PIP_* setting of its own."""
    os.environ[PIP_MARK] = "from-the-service"
    try:
        with running_emulator(*EXECUTE_ARGS, "--allow-root", str(allowed_root)) as emu:
            yield emu
    finally:
        del os.environ[PIP_MARK]


@pytest.fixture
def pkg_dir(allowed_root: Path) -> Path:
    """A fresh directory under the allowed root."""
    folder = allowed_root / unique()
    folder.mkdir()
    return folder


def test_the_dependency_is_not_in_the_project_environment() -> None:
    # What the next test installs must come from the index, not from the service's own venv.
    assert importlib.util.find_spec("termcolor") is None
    assert pyenv.probe(sys.executable).has("termcolor") is None


def test_dependencies_are_installed_and_the_environment_is_reused(
    pipenv: EmulatorProcess, pkg_dir: Path
) -> None:
    wheel = write_wheel(pkg_dir, "deppkg", requires=(DEPENDENCY,), main=REPORT_DEPENDENCY)
    first = run_job(pipenv, package_pool(str(wheel)))
    assert first.state == S.JOB_STATE_SUCCEEDED, first.error.message
    log = chief_log(pipenv, first)
    envs = pipenv.state_dir / pyenv.ENVS_DIR
    assert "pip is needed: deppkg==0.1.0 requires termcolor==2.4.0" in log
    assert "pip installed into the environment" in log
    assert "deppkg==0.1.0, termcolor==2.4.0" in log
    assert f"termcolor 2.4.0 from {envs}" in log  # imported from the job's environment
    (env_dir,) = [p for p in envs.iterdir() if not p.name.startswith(".")]
    assert f"python {env_dir}/bin/python" in log
    assert (pipenv.state_dir / "jobs" / job_id(first) / "logs" / "pip-0.log").exists()

    second = run_job(pipenv, package_pool(str(wheel)))
    assert second.state == S.JOB_STATE_SUCCEEDED, second.error.message
    log = chief_log(pipenv, second)
    assert f"reusing the environment {env_dir}, built before for the same packages" in log
    assert f"python {env_dir}/bin/python" in log
    assert not (pipenv.state_dir / "jobs" / job_id(second) / "logs" / "pip-0.log").exists()
    assert [p for p in envs.iterdir() if not p.name.startswith(".")] == [env_dir]


def test_an_unsatisfiable_requirement_fails_with_pips_message(
    pipenv: EmulatorProcess, pkg_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = write_wheel(pkg_dir, "badreq", requires=("no-such-dist-xyz==0.0.0",))
    done = run_job(pipenv, package_pool(str(wheel)))
    assert done.state == S.JOB_STATE_FAILED
    assert done.error.code == 3, done.error
    message = done.error.message
    assert message.startswith("Installing the packages of worker pool 0 failed: pip install")
    assert "No matching distribution found for no-such-dist-xyz==0.0.0" in message  # pip's words
    assert len(message) < 2000
    assert pipenv.replicas(job_id(done)) == []
    # `emulator logs` shows why, though no replica started.
    assert cli.main(["logs", job_id(done), "--state-dir", str(pipenv.state_dir)]) == 0
    shown = capsys.readouterr().out
    assert "No matching distribution found for no-such-dist-xyz" in shown
    # The failed build is gone: every build directory left is a published environment.
    envs = pipenv.state_dir / pyenv.ENVS_DIR
    published = {os.path.realpath(p) for p in envs.iterdir() if p.is_symlink()}
    assert {str(p) for p in envs.glob(".build-*")} == published


def test_pip_builds_a_project_without_the_jobs_secrets(
    pipenv: EmulatorProcess, pkg_dir: Path
) -> None:
    # A setup.py that computes its requirements: only pip can read it, so pip builds it (with
    # build isolation, as pip does by default). It records the environment its build ran with.
    project = pkg_dir / "envprobe"
    (project / "envprobe").mkdir(parents=True)
    (project / "envprobe" / "__init__.py").write_text("")
    (project / "envprobe" / "main.py").write_text(REPORT_DEPENDENCY)
    seen = project.parent / "seen-env.json"
    (project / "setup.py").write_text(
        "import json, os\n"
        "from setuptools import setup\n"
        f"with open({str(seen)!r}, 'w') as f:\n"
        "    json.dump(dict(os.environ), f)\n"
        f"setup(name='envprobe', version='0.2.0', packages=['envprobe'],\n"
        f"      install_requires=[r for r in [{DEPENDENCY!r}]])\n"
    )
    done = run_job(pipenv, package_pool(str(project), env={"API_TOKEN": SECRET}))
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message
    log = chief_log(pipenv, done)
    assert "envprobe computes its requirements or its build in code that only pip runs" in log
    assert "envprobe==0.2.0" in log
    assert "termcolor 2.4.0 from" in log
    build_env = json.loads(seen.read_text())
    assert build_env.get(PIP_MARK) == "from-the-service"  # the user's pip settings reach pip
    assert SECRET not in json.dumps(build_env)
    assert "API_TOKEN" not in build_env
    pip_log = pipenv.state_dir / "jobs" / job_id(done) / "logs" / "pip-0.log"
    assert SECRET not in pip_log.read_text()
    assert SECRET not in log


def test_cancelling_a_job_stops_its_pip_install(pipenv: EmulatorProcess, pkg_dir: Path) -> None:
    # A build that would take ten minutes: the job is cancelled while pip runs it.
    project = pkg_dir / "slowbuild"
    (project / "slowbuild").mkdir(parents=True)
    (project / "slowbuild" / "__init__.py").write_text("")
    started_file = project.parent / "build-started"
    (project / "setup.py").write_text(
        "import pathlib, time\n"
        "from setuptools import setup\n"
        f"pathlib.Path({str(started_file)!r}).touch()\n"
        "time.sleep(600)\n"
        "setup(name='slowbuild', version='0.1.0', packages=['slowbuild'],\n"
        "      install_requires=[r for r in []])\n"
    )
    client = pipenv.client()
    created = client.create_custom_job(
        parent=PARENT,
        custom_job=make_job("pyenv", pools=[package_pool(str(project))], labels={"t": unique()}),
    )
    deadline = time.monotonic() + 240
    while not started_file.exists():
        assert time.monotonic() < deadline, "pip never started the build"
        time.sleep(0.2)
    client.cancel_custom_job(name=created.name)
    cancelled_at = time.monotonic()
    done = wait_for_state(client, created.name, TERMINAL, timeout=60)
    assert done.state == S.JOB_STATE_CANCELLED
    assert time.monotonic() - cancelled_at < 20


def test_a_framework_the_interpreter_lacks_is_a_warning_not_a_failure(
    pipenv: EmulatorProcess,
) -> None:
    image = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
    pool = trainer_pool(args=["--epochs", "1"])
    pool.python_package_spec.executor_image_uri = image
    done = run_job(pipenv, pool, timeout=60)
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message
    log = chief_log(pipenv, done)
    assert (
        f"[emulator] WARNING: the executor image {image} provides PyTorch 2.4, but PyTorch is "
        f"not installed for {sys.executable}"
    ) in log
    # The example trainer needs nothing pip would add: no pip, no environment.
    assert "into " in log and "without pip (none of its code run)" in log
    assert "numpy==" in log
    assert "pip-0.log" not in os.listdir(pipenv.state_dir / "jobs" / job_id(done) / "logs")


# -- environments, in-process --------------------------------------------------------------------


@pytest.fixture
def offline_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A wheel directory pip reads instead of the index (as the user's PIP_* settings say)."""
    wheels = tmp_path / "wheels"
    write_wheel(wheels, "localdep", version="1.0.0")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    return wheels


def settings_for(tmp_path: Path, **changes: Any) -> Settings:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    return Settings(state_dir=state, allow_roots=[tmp_path], **changes)


def job_dir(settings: Settings, name: str) -> Path:
    path = settings.state_dir / "jobs" / name
    (path / "logs").mkdir(parents=True, exist_ok=True)
    return path


def prepare(package: Path, settings: Settings, job: str = "1", **options: Any) -> pyenv.PoolPython:
    """Pool 0 of job ``job`` prepared from ``package``, on the settings' own interpreter."""
    options.setdefault("base", pyenv.probe(settings.python))
    return pyenv.prepare_pool(
        [package], index=0, job_dir=job_dir(settings, job), settings=settings, **options
    )


def test_concurrent_jobs_build_one_environment(tmp_path: Path, offline_index: Path) -> None:
    settings = settings_for(tmp_path)
    wheel = write_wheel(tmp_path / "pkgs", "usesdep", requires=("localdep==1.0.0",))
    base = pyenv.probe(settings.python)
    results: dict[str, pyenv.PoolPython] = {}

    def build(name: str) -> None:
        results[name] = prepare(wheel, settings, name, base=base)

    threads = [threading.Thread(target=build, args=(n,)) for n in ("1", "2", "3")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert sorted(results) == ["1", "2", "3"]
    pythons = {r.python for r in results.values()}
    assert len(pythons) == 1
    notes = [n for r in results.values() for n in r.notes]
    assert sum("pip installed into the environment" in n for n in notes) == 1
    assert sum("reusing the environment" in n for n in notes) == 2
    assert all(r.interpreter.has("localdep") for r in results.values())
    envs = settings.state_dir / pyenv.ENVS_DIR
    assert len([p for p in envs.iterdir() if p.name.startswith(".build-")]) == 1


def test_a_crashed_build_is_never_used(tmp_path: Path, offline_index: Path) -> None:
    settings = settings_for(tmp_path)
    wheel = write_wheel(tmp_path / "pkgs", "usesdep", requires=("localdep==1.0.0",))
    base = pyenv.probe(settings.python)
    key = pyenv.env_key([wheel], base)
    envs = settings.state_dir / pyenv.ENVS_DIR
    envs.mkdir(parents=True)
    # What a crash mid-build leaves: a build directory, a link never renamed, a published link
    # whose environment has no description (it was never completed).
    half = envs / f".build-{key}-crashed"
    (half / "bin").mkdir(parents=True)
    (envs / f".link-{key}-1-2").symlink_to(half.name)
    (envs / key).symlink_to(half.name)
    done = prepare(wheel, settings, base=base)
    assert "pip installed into the environment" in done.notes[-1]
    assert not half.exists()
    assert not list(envs.glob(".link-*"))
    assert os.path.realpath(envs / key) != str(half)
    assert done.interpreter.has("localdep") is not None


def test_pip_is_stopped_after_its_timeout(tmp_path: Path, offline_index: Path) -> None:
    settings = settings_for(tmp_path, pip_timeout_seconds=0.05)
    wheel = write_wheel(tmp_path / "pkgs", "usesdep", requires=("localdep==1.0.0",))
    with pytest.raises(pyenv.InstallError, match=r"did not finish within 0.05s .*--pip-timeout"):
        prepare(wheel, settings)
    envs = settings.state_dir / pyenv.ENVS_DIR
    assert [p.name for p in envs.iterdir() if not p.name.endswith(".lock")] == []


@contextlib.contextmanager
def silent_index() -> Iterator[tuple[str, threading.Event]]:
    """A package index that accepts connections and never answers; the event says pip called it."""
    server = socket.create_server(("127.0.0.1", 0))
    called = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = server.accept()
                held.append(conn)
                called.set()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/simple", called
    finally:
        server.close()
        for conn in held:
            conn.close()


def test_a_stop_request_ends_pip_at_once(
    tmp_path: Path, offline_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_for(tmp_path)  # the default --pip-timeout: minutes
    wheel = write_wheel(tmp_path / "pkgs", "usesdep", requires=("localdep==1.0.0",))
    # pip must provably be running when the stop comes: it hangs on an index that never answers
    # (a fast machine finishes an offline install before a stop asked "later" arrives).
    with silent_index() as (index, pip_is_waiting), monkeypatch.context() as env:
        env.delenv("PIP_NO_INDEX")
        env.delenv("PIP_FIND_LINKS")
        env.setenv("PIP_CONFIG_FILE", os.devnull)  # no config file may say "no-index"
        env.setenv("PIP_INDEX_URL", index)
        started = time.monotonic()
        with pytest.raises(pyenv.Interrupted, match="cancelled"):
            prepare(wheel, settings, stop=pip_is_waiting.is_set)
        assert pip_is_waiting.is_set()
        assert time.monotonic() - started < 30
    envs = settings.state_dir / pyenv.ENVS_DIR
    assert [p.name for p in envs.iterdir() if not p.name.endswith(".lock")] == []
    # Nothing half-built is left for the next job: it builds the environment whole.
    done = prepare(wheel, settings, "2")
    assert done.interpreter.has("localdep") is not None


def test_an_interpreter_without_pip_is_a_precondition_problem(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    wheel = write_wheel(tmp_path / "pkgs", "usesdep", requires=("localdep==1.0.0",))
    base = pyenv.probe(settings.python)
    without_pip = replace(
        base, distributions={k: v for k, v in base.distributions.items() if k != "pip"}
    )
    with pytest.raises(pyenv.EnvironmentProblem, match="pip is not installed for"):
        prepare(wheel, settings, base=without_pip)


def test_a_hostile_package_is_refused_before_pip_sees_it(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    wheel = write_wheel(tmp_path / "pkgs", "evil", requires=("localdep==1.0.0",))
    with zipfile.ZipFile(wheel, "a") as zf:
        zf.writestr("../../escaped.py", "x = 1\n")
    job = job_dir(settings, "1")
    with pytest.raises(packages.PackageError, match=r"escaped\.py"):
        prepare(wheel, settings)
    assert not (job / "logs" / "pip-0.log").exists()
    assert not (settings.state_dir / pyenv.ENVS_DIR).exists()
    assert not list(tmp_path.rglob("escaped.py"))


def test_what_a_package_says_cannot_forge_log_lines(tmp_path: Path) -> None:
    project = tmp_path / "forger"
    (project / "forger").mkdir(parents=True)
    (project / "forger" / "__init__.py").write_text("")
    (project / "pyproject.toml").write_text(
        '[project]\nname = "forger\\n[emulator] forged line\\u001b[2J"\nversion = "1"\n'
    )
    settings = settings_for(tmp_path)
    done = prepare(project, settings)
    (note,) = done.notes
    assert "forger [emulator] forged line?[2J==1" in note
    assert "\n" not in note and "\x1b" not in note


def test_the_example_trainer_needs_no_pip(tmp_path: Path) -> None:
    settings = Settings(state_dir=tmp_path / "state", allow_roots=[TRAINER_DIR.parent])
    done = prepare(TRAINER_DIR, settings)
    assert done.python == settings.python
    assert done.pythonpath == str(settings.state_dir / "jobs" / "1" / "site-0")
    assert (Path(done.pythonpath) / "trainer" / "task.py").exists()
    assert not (settings.state_dir / pyenv.ENVS_DIR).exists()


def test_pip_env_keeps_the_users_pip_settings_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", "http://mirror.invalid/simple")
    monkeypatch.setenv("PIP_TARGET", "/somewhere/else")
    monkeypatch.setenv("SOME_SERVICE_SECRET", SECRET)
    env = pyenv.pip_env()
    assert env["PIP_INDEX_URL"] == "http://mirror.invalid/simple"
    assert "PIP_TARGET" not in env
    assert SECRET not in env.values()


# -- what packages declare -----------------------------------------------------------------------


def opened(kind: str, files: dict[str, bytes | None]) -> packages.OpenedPackage:
    here = Path("/nonexistent/pkg")
    return packages.OpenedPackage(here, kind, here, None, (), files)


SETUP = "from setuptools import setup\nsetup(name='p', version='1.0', {})\n"


@pytest.mark.parametrize(
    ("kind", "files", "requirements"),
    [
        (
            "wheel",
            {"METADATA": b"Metadata-Version: 2.1\nName: w\nRequires-Dist: a>=1\n"},
            ("a>=1",),
        ),
        ("wheel", {}, ()),  # a zip of modules, no dist-info: declares nothing
        ("directory", {}, ()),  # a plain package directory
        (
            "directory",
            {"setup.py": SETUP.format("install_requires=['numpy']").encode()},
            ("numpy",),
        ),
        ("directory", {"setup.py": SETUP.format("packages=['p']").encode()}, ()),
        ("directory", {"setup.py": b"raise SystemExit('not a build script')\n"}, ()),
        (
            "directory",
            {"pyproject.toml": b'[project]\nname = "p"\ndependencies = ["b==2"]\n'},
            ("b==2",),
        ),
        (
            "directory",
            {
                "setup.py": SETUP.format("packages=['p']").encode(),
                "setup.cfg": b"[options]\ninstall_requires =\n    c<3\n    d\n",
            },
            ("c<3", "d"),
        ),
        (
            "sdist",
            {
                "PKG-INFO": b"Metadata-Version: 2.2\nName: s\nVersion: 1\nRequires-Dist: e\n",
                "setup.py": b"from setuptools import setup\nsetup(install_requires=open('r').read())\n",
            },
            ("e",),  # 2.2 metadata is what the build produces, whatever setup.py computes
        ),
    ],
)
def test_declared_requirements_are_read_without_running_code(
    kind: str, files: dict[str, bytes | None], requirements: tuple[str, ...]
) -> None:
    found = pyenv.declared(opened(kind, files))
    assert found is not None
    assert found.requirements == requirements


@pytest.mark.parametrize(
    "files",
    [
        {"setup.py": SETUP.format("install_requires=open('requirements.txt').read()").encode()},
        {"setup.py": SETUP.format("ext_modules=[Extension('x', ['x.c'])]").encode()},
        {"setup.py": SETUP.format("cmdclass={'build_py': Custom}").encode()},
        {"setup.py": SETUP.format("**options").encode()},
        {"setup.py": b"import setuptools\nexec(open('real_setup.py').read())\n"},
        {"setup.py": b"def broken(:\n"},
        {"setup.py": None},  # too big to read
        {"pyproject.toml": b'[project]\nname = "p"\ndynamic = ["dependencies"]\n'},
        {"pyproject.toml": b'[build-system]\nbuild-backend = "maturin"\n[project]\nname = "p"\n'},
        {"pyproject.toml": b"[tool.poetry.dependencies]\npython = '^3.11'\n"},
        {"setup.cfg": b"[options]\ninstall_requires = file: requirements.txt\n"},
        {"PKG-INFO": b"Metadata-Version: 2.1\nName: old\n", "setup.py": b"import setuptools\n"},
    ],
)
def test_metadata_only_pip_can_read_means_pip(files: dict[str, bytes | None]) -> None:
    assert pyenv.declared(opened("sdist", files)) is None


def test_the_example_trainer_declares_numpy(tmp_path: Path) -> None:
    with packages.opened([TRAINER_DIR], tmp_path, roots=[TRAINER_DIR]) as (pkg,):
        found = pyenv.declared(pkg)
    assert found == pyenv.Declared("trainer", "0.1.0", ("numpy",), ">=3.11")


def test_a_wheels_metadata_is_read_from_the_checked_copy(tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path / "w", "withdeps", requires=("x>=1", "y; python_version<'3'"))
    with packages.opened([wheel], tmp_path / "job") as (pkg,):
        assert pkg.kind == "wheel"
        assert pkg.archive is not None and pkg.archive.read_bytes() == wheel.read_bytes()
        found = pyenv.declared(pkg)
        copy = packages.copy_for_pip(pkg, tmp_path / "for-pip", limits=packages.Limits())
    assert found is not None and found.requirements == ("x>=1", "y; python_version<'3'")
    assert copy.name == wheel.name and copy.read_bytes() == wheel.read_bytes()
    assert list((tmp_path / "job").iterdir()) == []  # the unpacked copy is gone


def test_requirements_are_judged_as_pip_would() -> None:
    interp = fake_interpreter({"numpy": "2.4.6", "six": "1.17.0"})
    decl = pyenv.Declared(
        "p",
        "1",
        (
            "numpy>=2",  # met
            "six",  # met
            "old; python_version < '3'",  # not for this Python
            "numpy<2",  # another version: pip would install it
            "missing-dist",
            "six[extra]",  # extras: pip decides
            "bad requirement !!",
        ),
        ">=3.12",
    )
    assert pyenv.unmet(decl, interp) == [
        "Python >=3.12 (this is 3.11.7)",
        "numpy<2",
        "missing-dist",
        "six[extra]",
        "bad requirement !!",
    ]


# -- the framework an image names ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest", ("tensorflow", "2.15")),
        (
            "europe-docker.pkg.dev/vertex-ai/training/pytorch-xla.2-4.py310:latest",
            ("pytorch", "2.4"),
        ),
        ("us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-6", ("scikit-learn", "1.6")),
        ("us-docker.pkg.dev/vertex-ai/training/xgboost-gpu.2-1:latest", ("xgboost", "2.1")),
        # newer than the catalog: read from the naming scheme
        ("us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-9.py312:latest", ("pytorch", "2.9")),
        ("us-docker.pkg.dev/my-project/images/pytorch-gpu.2-4:latest", None),
        ("gcr.io/my-project/trainer:v1", None),
    ],
)
def test_image_framework(uri: str, expected: tuple[str, str] | None) -> None:
    assert pyenv.image_framework(uri) == expected


def test_framework_warnings() -> None:
    image = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
    missing = pyenv.framework_warning(image, fake_interpreter({}))
    assert missing is not None
    assert missing.startswith("WARNING: the executor image")
    assert "PyTorch 2.4" in missing and "not installed for /opt/python/bin/python" in missing
    other = pyenv.framework_warning(image, fake_interpreter({"torch": "2.3.1"}))
    assert other is not None and "torch 2.3.1 is installed" in other
    assert pyenv.framework_warning(image, fake_interpreter({"torch": "2.4.0+cu121"})) is None
    custom = "us-docker.pkg.dev/my-project/images/trainer:latest"
    assert pyenv.framework_warning(custom, fake_interpreter({})) is None


def test_pip_error_summary_is_bounded_and_keeps_pips_errors() -> None:
    output = "\n".join(
        [f"Collecting thing{i}" for i in range(50)]
        + [
            "ERROR: Could not find a version that satisfies the requirement nope==1",
            "ERROR: No matching distribution found for nope==1",
            "",
            "[notice] A new release of pip is available",
        ]
    )
    summary = pyenv.pip_error_summary(output)
    assert summary.splitlines() == [
        "ERROR: Could not find a version that satisfies the requirement nope==1",
        "ERROR: No matching distribution found for nope==1",
    ]
    long = pyenv.pip_error_summary("ERROR: " + "x\x1b" * 5000, max_chars=300)
    assert len(long) <= 303 and "\x1b" not in long


def test_pip_timeout_flag() -> None:
    parser = cli.build_parser()
    assert parser.parse_args(["serve"]).pip_timeout == 900.0
    assert parser.parse_args(["serve", "--pip-timeout", "30"]).pip_timeout == 30.0
    for bad in ("0", "-1", "nan"):
        with pytest.raises(SystemExit):
            parser.parse_args(["serve", "--pip-timeout", bad])
