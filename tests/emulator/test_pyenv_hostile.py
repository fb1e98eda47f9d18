"""What a package may make pip do (``emulator.pyenv``), and pip left running by a crash.

* A requirement that is a direct reference (a URL, a VCS URL, a ``file:`` path), declared in any of
  the places a package declares requirements, fails the install before pip reaches it, and pip
  cannot follow one from what it builds either. A local package another one needs is listed in
  ``package_uris`` beside it and required by name.
* Metadata that cannot be read in bounded time and memory (pyproject.toml nested too deeply, a
  requirement whose marker is) is an install error, never the emulator's internal error.
* pip and its build processes never outlive a crash of the service: the next start kills them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.cloud.aiplatform_v1 import types as aip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator import packages, procs, pyenv
from emulator.config import Settings
from emulator.store import Store
from emulator.testing import EmulatorProcess, running_emulator, wait_for_state

from .conftest import EXECUTE_ARGS, PARENT, TERMINAL, S, make_job, trainer_pool, unique
from .test_list_index import old_database
from .test_pyenv import prepare, silent_index, write_wheel

# -- layout: packages under an allowed root, a dependency outside it ---------------------------


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Settings, Path, Path]:
    """(settings allowing only ``allowed/``, that directory, a project ``dep`` outside it)."""
    allowed = tmp_path / "allowed"
    (allowed / "state").mkdir(parents=True)
    outside = write_project(tmp_path / "outside", "dep")
    return Settings(state_dir=allowed / "state", allow_roots=[allowed]), allowed, outside


def write_project(folder: Path, name: str, *, setup_args: str = "") -> Path:
    """A setuptools project ``<folder>/<name>`` with one package of that name."""
    project = folder / name
    (project / name).mkdir(parents=True)
    (project / name / "__init__.py").write_text("")
    (project / name / "main.py").write_text("print('ok')\n")
    (project / "setup.py").write_text(
        "from setuptools import setup\n"
        f"setup(name={name!r}, version='1.0', packages=[{name!r}]{setup_args})\n"
    )
    return project


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def trainer_declaring(folder: Path, how: str, requirement: str) -> Path:
    """A package ``usesdep`` declaring ``requirement`` in the way ``how`` names."""
    if how == "wheel":
        return write_wheel(folder, "usesdep", requires=(requirement,))
    project = folder / "usesdep"
    (project / "usesdep").mkdir(parents=True)
    (project / "usesdep" / "__init__.py").write_text("")
    files = {
        "pyproject": (
            "pyproject.toml",
            f"[project]\nname = 'usesdep'\nversion = '1'\ndependencies = [{requirement!r}]\n",
        ),
        "setup.py": (
            "setup.py",
            "from setuptools import setup\n"
            f"setup(name='usesdep', version='1', install_requires=[{requirement!r}])\n",
        ),
        "setup.cfg": (
            "setup.cfg",
            "[metadata]\nname = usesdep\nversion = 1\n"
            f"[options]\ninstall_requires =\n    {requirement}\n",
        ),
        "build-system": (
            "pyproject.toml",
            "[build-system]\n"
            f"requires = ['setuptools', {requirement!r}]\n"
            "build-backend = 'setuptools.build_meta'\n",
        ),
        "computed": (
            "setup.py",
            "from setuptools import setup\n"
            "setup(name='usesdep', version='1', packages=['usesdep'],\n"
            f"      install_requires=[r for r in [{requirement!r}]])\n",
        ),
    }
    name, text = files[how]
    (project / name).write_text(text)
    if how == "setup.cfg":
        (project / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    return project


DECLARED_WAYS = ["wheel", "pyproject", "setup.py", "setup.cfg", "build-system"]


@pytest.mark.parametrize("how", DECLARED_WAYS)
def test_a_path_outside_the_roots_is_refused_before_pip_runs(
    roots: tuple[Settings, Path, Path], how: str
) -> None:
    settings, allowed, outside = roots
    before = listing(outside)
    package = trainer_declaring(allowed / "pkgs", how, f"dep @ {outside.as_uri()}")
    with pytest.raises(pyenv.InstallError) as refused:
        prepare(package, settings)
    message = str(refused.value)
    assert f"dep @ {outside.as_uri()}" in message
    assert "outside the directories this emulator may read" in message
    assert listing(outside) == before  # pip wrote no build/ or *.egg-info there
    assert not (settings.state_dir / "jobs" / "1" / "logs" / "pip-0.log").exists()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{port}/dep-1.0-py3-none-any.whl",
        "https://127.0.0.1:{port}/dep-1.0.tar.gz",
        "git+http://127.0.0.1:{port}/dep.git",
    ],
)
@pytest.mark.parametrize("how", ["wheel", "pyproject"])
def test_a_url_requirement_is_never_fetched(
    roots: tuple[Settings, Path, Path], how: str, url: str
) -> None:
    settings, allowed, _ = roots
    with silent_index() as (index, fetched):
        port = index.split(":")[2].split("/")[0]
        requirement = f"dep @ {url.format(port=port)}"
        package = trainer_declaring(allowed / "pkgs", how, requirement)
        # Were it fetched, the stop would end pip (Interrupted), not refuse the requirement.
        with pytest.raises(pyenv.InstallError, match="direct reference") as refused:
            prepare(package, settings, stop=fetched.is_set)
        assert not fetched.is_set()
    assert requirement in str(refused.value)


@pytest.mark.parametrize("target", ["outside", "url"])
def test_a_reference_that_only_the_build_declares_is_not_followed(
    roots: tuple[Settings, Path, Path], target: str
) -> None:
    # setup.py computes install_requires: only pip's build can tell them, and pip is not let
    # follow what it finds there.
    settings, allowed, outside = roots
    before = listing(outside)
    with silent_index() as (index, fetched):
        where = (
            outside.as_uri()
            if target == "outside"
            else index.rsplit("/", 1)[0] + "/dep-1.0-py3-none-any.whl"
        )
        package = trainer_declaring(allowed / "pkgs", "computed", f"dep @ {where}")
        with pytest.raises(pyenv.InstallError, match="direct reference") as refused:
            prepare(package, settings, stop=fetched.is_set)
        assert not fetched.is_set()
    assert f"dep @ {where}" in str(refused.value)
    assert "usesdep" in str(refused.value)
    assert listing(outside) == before


@pytest.fixture
def offline_wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip installs ``localdep`` 1.0.0 from a wheel directory, and nothing from the index."""
    wheels = tmp_path / "wheels"
    write_wheel(wheels, "localdep", version="1.0.0")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    return wheels


def test_every_pip_run_is_reported_until_it_has_ended(
    roots: tuple[Settings, Path, Path], offline_wheels: Path
) -> None:
    settings, allowed, _ = roots
    wheel = write_wheel(allowed / "pkgs", "usesdep", requires=("localdep==1.0.0",))
    reported: list[tuple[int | None, bool]] = []

    def track(pid: int | None) -> None:
        reported.append((pid, pid is not None and procs.start_ticks(pid) is not None))

    done = prepare(wheel, settings, track=track)
    assert done.interpreter.has("localdep") is not None
    # Two runs (the package alone, then what it requires), each reported alive, then ended.
    assert [alive for _, alive in reported] == [True, False, True, False]
    assert [pid is None for pid, _ in reported] == [False, True, False, True]
    pip_log = (settings.state_dir / "jobs" / "1" / "logs" / "pip-0.log").read_text()
    assert "--no-deps" in pip_log and "localdep==1.0.0" in pip_log


def test_a_file_reference_inside_the_roots_is_refused_too(
    roots: tuple[Settings, Path, Path],
) -> None:
    # pip would read, build and write into the directory itself (symlinks and all), unchecked.
    settings, allowed, _ = roots
    local = write_project(allowed / "src", "localdep")
    before = listing(local)
    wheel = write_wheel(allowed / "pkgs", "usesdep", requires=(f"localdep @ {local.as_uri()}",))
    with pytest.raises(pyenv.InstallError, match="list that package in the pool's package_uris"):
        prepare(wheel, settings)
    assert listing(local) == before


def test_a_local_package_listed_beside_is_required_by_name(
    roots: tuple[Settings, Path, Path], offline_wheels: Path
) -> None:
    settings, allowed, _ = roots
    local = write_wheel(allowed / "src", "mylib", version="1.0")
    wheel = write_wheel(allowed / "pkgs", "usesdep", requires=("mylib==1.0", "localdep"))
    done = pyenv.prepare_pool(
        [wheel, local],
        index=0,
        job_dir=settings.state_dir / "jobs" / "1",
        settings=settings,
        base=pyenv.probe(settings.python),
    )
    assert done.interpreter.has("mylib") is not None  # the copy pip built from package_uris
    assert done.interpreter.has("localdep") is not None  # from the index (the wheel directory)


# -- metadata that cannot be read in bounded time and memory -----------------------------------

DEEP = 5000


def opened(files: dict[str, bytes | None], kind: str = "directory") -> packages.OpenedPackage:
    here = Path("/nonexistent/deep-pkg")
    return packages.OpenedPackage(here, kind, here, None, (), files)


@pytest.mark.parametrize(
    "pyproject",
    [
        "a = " + "[" * DEEP + "]" * DEEP,  # arrays
        "a = " + "{b = " * DEEP + "1" + "}" * DEEP,  # inline tables
        "[project]\nname = 'p'\ndependencies = " + "[" * DEEP + "]" * DEEP,
        # dotted keys: tomllib's memory grows with the square of their length (10,000 parts:
        # 400 MB), so a 1 MB file of them would exhaust the machine's
        "a" + ".a" * 2000 + " = 1",
        "[" + "a." * 2000 + "a]\n",
    ],
    ids=["arrays", "inline-tables", "dependencies", "dotted-key", "dotted-table"],
)
def test_a_pyproject_too_deep_to_read_is_an_install_error(pyproject: str) -> None:
    with pytest.raises(pyenv.InstallError, match=r"deep-pkg: its pyproject.toml could not be read"):
        pyenv.declared(opened({"pyproject.toml": pyproject.encode()}))


@pytest.mark.parametrize(
    ("files", "why"),
    [
        ({"pyproject.toml": b"[project]\nname = '\xff'\n"}, "not UTF-8"),
        ({"pyproject.toml": b"not = [toml\n"}, "not valid TOML"),
    ],
)
def test_a_pyproject_pip_cannot_read_either_is_an_install_error(
    files: dict[str, bytes | None], why: str
) -> None:
    with pytest.raises(pyenv.InstallError, match=rf"its pyproject.toml could not be read.*{why}"):
        pyenv.declared(opened(files))


DEEP_MARKER = "x; " + "(" * DEEP + "python_version > '3'" + ")" * DEEP


@pytest.mark.parametrize(
    "files",
    [
        {"METADATA": f"Metadata-Version: 2.1\nName: w\nRequires-Dist: {DEEP_MARKER}\n".encode()},
        {"pyproject.toml": f"[project]\nname = 'p'\ndependencies = [{DEEP_MARKER!r}]\n".encode()},
    ],
    ids=["wheel", "pyproject"],
)
def test_a_requirement_too_deep_to_read_is_an_install_error(
    tmp_path: Path, files: dict[str, bytes | None]
) -> None:
    kind = "wheel" if "METADATA" in files else "directory"
    settings = Settings(state_dir=tmp_path / "state", allow_roots=[tmp_path])
    with pytest.raises(pyenv.InstallError, match=r"could not be read.*nested too deeply"):
        decl = pyenv.declared(opened(files, kind))
        assert decl is not None
        pyenv.unmet(decl, pyenv.probe(settings.python))


@pytest.mark.parametrize(
    "files",
    [
        {"setup.py": ("setup(install_requires=" + "[" * DEEP + "]" * DEEP + ")").encode()},
        {"setup.py": ("x = " + "-" * 100_000 + "1\n").encode()},  # the parser's own stack
        {"setup.py": b"# -*- coding: latin-1 -*-\nsetup(name='\xe9')\n"},  # Python runs it
        {"setup.cfg": b"[options]\ninstall_requires = \xff\n"},
        {"setup.cfg": b"[options\n"},
        {"PKG-INFO": b"Metadata-Version: 2.2\nName: \xff\xfe\n" + b" \n" * 100_000},
    ],
)
def test_build_files_only_pip_can_read_leave_it_to_pip(files: dict[str, bytes | None]) -> None:
    # A setup.py may be read by another Python than the service's, and setup.cfg only matters to
    # setuptools: pip (its build) decides, and its failure is the job's install error.
    found = pyenv.declared(opened(files, "sdist"))
    assert found is None or isinstance(found, pyenv.Declared)


TOML_PIECES = st.sampled_from(
    ["[", "]", "{", "}", ".", "=", ",", "a", "1", '"', "'", "#", "\n", " "]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["pyproject.toml", "setup.py", "setup.cfg", "PKG-INFO"]),
    st.one_of(st.binary(max_size=300), st.lists(TOML_PIECES, max_size=300).map("".join)),
)
def test_whatever_a_metadata_file_holds_the_answer_is_metadata_or_an_install_error(
    name: str, data: bytes | str
) -> None:
    files: dict[str, bytes | None] = {name: data.encode() if isinstance(data, str) else data}
    for reading in (pyenv.declared, pyenv.build_requirements):
        with contextlib.suppress(pyenv.InstallError):
            reading(opened(files, "sdist"))


# -- through the service -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def service_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile-packages")


@pytest.fixture(scope="module")
def service(service_root: Path) -> Iterator[EmulatorProcess]:
    with running_emulator(*EXECUTE_ARGS, "--allow-root", str(service_root / "allowed")) as emu:
        yield emu


def run_package(emu: EmulatorProcess, package: Path) -> aip.CustomJob:
    pool = trainer_pool(package_uris=[str(package)])
    pool.python_package_spec.python_module = "usesdep.main"
    client = emu.client()
    created = client.create_custom_job(
        parent=PARENT, custom_job=make_job("hostile", pools=[pool], labels={"t": unique()})
    )
    done: aip.CustomJob = wait_for_state(client, created.name, TERMINAL, timeout=240)
    return done


@pytest.fixture(scope="module", autouse=True)
def _allowed_dir(service_root: Path) -> None:
    (service_root / "allowed").mkdir(exist_ok=True)


def test_the_job_fails_with_the_install_error_naming_the_requirement(
    service: EmulatorProcess, service_root: Path
) -> None:
    outside = write_project(service_root / unique(), "dep")
    before = listing(outside)
    requirement = f"dep @ {outside.as_uri()}"
    package = trainer_declaring(service_root / "allowed" / unique(), "pyproject", requirement)
    done = run_package(service, package)
    assert done.state == S.JOB_STATE_FAILED
    assert done.error.code == 3, done.error
    assert done.error.message.startswith("Installing the packages of worker pool 0 failed: ")
    assert requirement in done.error.message
    assert listing(outside) == before


def test_a_deep_pyproject_fails_the_job_with_an_install_error(
    service: EmulatorProcess, service_root: Path
) -> None:
    project = service_root / "allowed" / unique() / "usesdep"
    (project / "usesdep").mkdir(parents=True)
    (project / "usesdep" / "__init__.py").write_text("")
    (project / "pyproject.toml").write_text("a = " + "[" * DEEP + "]" * DEEP + "\n")
    done = run_package(service, project)
    assert done.state == S.JOB_STATE_FAILED
    assert done.error.code == 3, done.error
    assert "its pyproject.toml could not be read" in done.error.message
    assert "nested too deeply" in done.error.message


# -- pip left running by a crash -----------------------------------------------------------------


def process_group(leader: int) -> dict[int, int]:
    """{pid: start ticks} of every process in the process group ``leader`` leads."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            ticks = procs.start_ticks(int(entry.name))
            if int(fields[2]) == leader and ticks is not None:
                found[int(entry.name)] = ticks
    return found


def pip_processes(state_dir: Path) -> dict[int, int]:
    """{pid: start ticks} of the pip installs a service with ``state_dir`` runs, and their
    build processes (pip leads a process group of its own)."""
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if argv[0].startswith(str(state_dir).encode()) and argv[1:4] == [
                b"-m",
                b"pip",
                b"install",
            ]:
                found.update(process_group(int(entry.name)))
    return found


def alive(processes: dict[int, int]) -> dict[int, int]:
    return {pid: t for pid, t in processes.items() if procs.is_same_process(pid, t)}


@pytest.fixture
def hanging_index(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, threading.Event]]:
    """The service's pip reads a package index that never answers."""
    with silent_index() as (index, called):
        monkeypatch.delenv("PIP_NO_INDEX", raising=False)
        monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
        monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
        monkeypatch.setenv("PIP_INDEX_URL", index)
        yield index, called


def test_a_restart_kills_the_pip_install_a_crash_left_running(
    tmp_path: Path, hanging_index: tuple[str, threading.Event]
) -> None:
    _, called = hanging_index
    wheel = write_wheel(tmp_path / "pkgs", "usesdep", requires=("localdep==1.0.0",))
    pool = trainer_pool(package_uris=[str(wheel)])
    pool.python_package_spec.python_module = "usesdep.main"
    left: dict[int, int] = {}
    with running_emulator(*EXECUTE_ARGS, "--allow-root", str(tmp_path)) as emu:
        client = emu.client()
        created = client.create_custom_job(
            parent=PARENT, custom_job=make_job("crash", pools=[pool], labels={"t": unique()})
        )
        try:
            deadline = time.monotonic() + 120
            while not (called.is_set() and (left := pip_processes(emu.state_dir))):
                assert time.monotonic() < deadline, "pip never asked the index"
                time.sleep(0.1)
            emu.crash()
            assert alive(left) == left  # a crash leaves pip running
            emu.restart()
            deadline = time.monotonic() + 10
            while alive(left) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert alive(left) == {}, "pip of the crashed run still runs after the restart"
            client = emu.client()
            job = client.get_custom_job(name=created.name)
            assert job.state in (S.JOB_STATE_QUEUED, S.JOB_STATE_PENDING)  # started again
            client.cancel_custom_job(name=created.name)
            done = wait_for_state(client, created.name, TERMINAL, timeout=60)
            assert done.state == S.JOB_STATE_CANCELLED
            store = Store(emu.state_dir, readonly=True)
            assert store.install_processes() == []  # the cancelled install's record is gone
            store.close()
        finally:
            for pid in alive(left):
                procs.signal_group(os.getpgid(pid), signal.SIGKILL)


def test_a_database_from_before_install_records_is_upgraded(tmp_path: Path) -> None:
    old_database(tmp_path)
    readonly = Store(tmp_path, readonly=True)  # the CLI on an old database: nothing recorded
    assert readonly.install_processes() == []
    readonly.close()
    store = Store(tmp_path)
    store.put_install_process("1", 4242, 17)
    assert store.install_processes() == [("1", 4242, 17)]
    store.clear_install_process("1")
    assert store.install_processes() == []
    store.close()
    with sqlite3.connect(tmp_path / "emulator.db") as db:
        assert db.execute("SELECT count(*) FROM jobs").fetchone() == (6,)
