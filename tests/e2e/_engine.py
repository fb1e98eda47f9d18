"""Helpers for end-to-end tests (and ``bench/preview.py``) that drive the real Pulumi CLI.

A :class:`Workspace` is a copy of the project (``Pulumi.yaml``, ``__main__.py``,
``components/``, ``examples/``, ``policy/``, ``stacks/jobs/``) in a temporary directory, with
``.venv`` linked to this virtualenv, its own ``file://`` backend and ``PULUMI_HOME`` beside it,
and the offline settings of docs/pulumi-toolchain.md. Stack files are generated
(:meth:`Workspace.init_stack`), so ``training:endpoint`` can point at a per-test emulator
started with :func:`emulator_for` (which allows package paths under the workspace).

:meth:`Workspace.own_project` is instead a Pulumi project of a user's own, outside the checkout:
its own ``Pulumi.yaml`` and ``__main__.py`` (which declare the resources themselves), a copy of
the example trainer, and the checkout on ``PYTHONPATH`` for the package.

Nothing here imports pytest: a failed command raises :class:`PulumiCommandError` (an
``AssertionError``, so pytest reports it as a test failure with the command's output).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

REPO = Path(__file__).resolve().parents[2]
INSTALL_PULUMI = REPO / "scripts" / "install-pulumi"
PROJECT_NAME = "gpu-training"
TRAINING_JOB_TYPE = "pulumi-python:dynamic/vertex:TrainingJob"
GCP_PROJECT = "local-training"
GCP_REGION = "us-central1"
PARENT = f"projects/{GCP_PROJECT}/locations/{GCP_REGION}"
COMMAND_TIMEOUT = 300.0
"""Seconds any one pulumi command may take before the test fails."""

# What a workspace copies from the repository (Pulumi.* stack files are generated instead).
_PROJECT_ITEMS = ("Pulumi.yaml", "__main__.py", "components", "examples", "policy", "stacks/jobs")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist", ".venv")

SIMULATE = ("--mode", "simulate", "--simulate-queued-seconds", "0.1")
"""Emulator arguments: no process runs, jobs only move through their states on timers."""

SLOW_START = (*SIMULATE, "--simulate-queued-seconds", "3", "--simulate-pending-seconds", "1")
"""A job stays QUEUED/PENDING for a few seconds, so a killed `up` is still waiting for it to
run when it dies (with ``HANG_LABELS`` it then keeps RUNNING until it is cancelled)."""

HANG_LABELS = {"emulator-outcome": "hang"}
"""Job labels that keep a simulated job RUNNING until it is cancelled."""

T = TypeVar("T")


class PulumiCommandError(AssertionError):
    """A pulumi command ended other than expected; the message carries its output."""


@dataclass(frozen=True)
class Result:
    """What a finished pulumi command printed."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def json(self) -> Any:
        return json.loads(self.stdout)


def venv_dir() -> Path:
    """The virtualenv the program and the provider use: this interpreter's, else the repo's."""
    return Path(sys.prefix) if sys.prefix != sys.base_prefix else REPO / ".venv"


def install_pulumi() -> Path:
    """The bin dir of the pinned engine, from scripts/install-pulumi (fast when cached)."""
    proc = subprocess.run(
        [str(INSTALL_PULUMI)], stdout=subprocess.PIPE, text=True, check=False, timeout=3600
    )
    if proc.returncode != 0:
        raise RuntimeError(f"scripts/install-pulumi failed with exit code {proc.returncode}")
    return Path(proc.stdout.strip().splitlines()[-1])


def offline_env(bin_dir: Path, home: Path, backend: Path, passphrase: str) -> dict[str, str]:
    """The environment for the CLI: this machine's, minus PULUMI_*/PYTHON* and the project and
    region variables pulumi-gcp reads (the plugin, the policy pack and the PR comment read
    them: a developer's shell must not change a test's result), plus offline settings."""
    from components.lifecycle._settings import PROJECT_ENV, REGION_ENV

    place = {*PROJECT_ENV, *REGION_ENV}
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PULUMI_", "PYTHON")) and k != "VIRTUAL_ENV" and k not in place
    }
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        PULUMI_HOME=str(home),
        PULUMI_BACKEND_URL=backend.as_uri(),
        PULUMI_CONFIG_PASSPHRASE=passphrase,
        PULUMI_SKIP_UPDATE_CHECK="true",
        PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION="true",
    )
    return env


def job_spec(props: Mapping[str, Any]) -> Any:
    """The spec document in a TrainingJob's inputs or outputs (JSON text in the state)."""
    text = props["spec"]
    if not isinstance(text, str):
        raise PulumiCommandError(f"spec should be JSON text in the state, not {text!r}")
    return json.loads(text)


def job_entry(name: str, spec: str, **settings: Any) -> dict[str, Any]:
    """One ``training:jobs`` entry: ``job_entry("a", "stacks/jobs/a.yaml", waitFor="running")``."""
    return {"name": name, "spec": spec, **settings}


def local_config(endpoint: str, jobs: Sequence[Mapping[str, Any]], **extra: Any) -> dict[str, Any]:
    """A local-stack configuration (the emulator at ``endpoint``) with these jobs."""
    config: dict[str, Any] = {
        "gcp:project": GCP_PROJECT,
        "gcp:region": GCP_REGION,
        "training:endpoint": endpoint,
        # Keep failures quick: the emulator answers at once or not at all.
        "training:retryDeadline": 20,
        "training:cancelTimeout": 60,
        "training:jobs": [dict(j) for j in jobs],
    }
    config.update(extra)
    return config


def python_job(
    display_name: str | None = None,
    *,
    machine_type: str = "n1-standard-4",
    accelerator: str | None = None,
    accelerator_count: int = 0,
    replicas: int = 1,
    args: Sequence[str] = ("--epochs", "1", "--steps-per-epoch", "2", "--samples", "32"),
    env: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    spot: bool = False,
    timeout: str = "600s",
) -> dict[str, Any]:
    """A CustomJobSpec document running the example trainer (paths relative to stacks/jobs/)."""
    machine: dict[str, Any] = {"machineType": machine_type}
    if accelerator is not None:
        machine.update(acceleratorType=accelerator, acceleratorCount=accelerator_count)
    package: dict[str, Any] = {
        # The build for the pool's hardware: a CPU image on GPUs is refused before launch.
        "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/"
        f"tf-{'gpu' if accelerator else 'cpu'}.2-15.py310:latest",
        "packageUris": ["../../examples/trainer"],
        "pythonModule": "trainer.task",
        "args": list(args),
    }
    if env:
        package["env"] = [{"name": k, "value": v} for k, v in env.items()]
    document: dict[str, Any] = {
        "workerPoolSpecs": [
            {"machineSpec": machine, "replicaCount": replicas, "pythonPackageSpec": package}
        ],
        "scheduling": {"timeout": timeout, **({"strategy": "SPOT"} if spot else {})},
    }
    if display_name is not None:
        document["displayName"] = display_name
    if labels:
        document["labels"] = dict(labels)
    return document


class Workspace:
    """A copy of the project with its own backend, PULUMI_HOME and one current stack.

    ``init_stack`` selects the stack (in this workspace's own PULUMI_HOME), so commands need no
    ``--stack``.
    """

    def __init__(self, base: Path, bin_dir: Path, *, stack: str = "e2e") -> None:
        self.base = base
        self.project = base / "project"
        self.stack_dir = self.project / "stacks"
        """Where ``Pulumi.<stack>.yaml`` is (the project's ``stackConfigDir``)."""
        self.backend = base / "backend"
        self.home = base / "pulumi-home"
        self.stack = stack
        self.passphrase = "e2e-passphrase-only-for-tests"
        self.env = offline_env(bin_dir, self.home, self.backend, self.passphrase)
        self.bin_dir = bin_dir

    @classmethod
    def create(cls, base: Path, bin_dir: Path, *, stack: str = "e2e") -> Workspace:
        """Copy the project under ``base/project`` and prepare the backend dirs."""
        ws = cls(base, bin_dir, stack=stack)
        ws.project.mkdir(parents=True)
        for item in _PROJECT_ITEMS:
            source, target = REPO / item, ws.project / item
            if source.is_dir():
                shutil.copytree(source, target, ignore=_IGNORE)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
        # Pulumi.yaml names ".venv" relative to the project, policy/PulumiPolicy.yaml its own.
        (ws.project / ".venv").symlink_to(venv_dir(), target_is_directory=True)
        (ws.project / "policy" / ".venv").symlink_to(
            REPO / "policy" / ".venv", target_is_directory=True
        )
        ws.backend.mkdir()
        ws.home.mkdir()
        return ws

    @classmethod
    def own_project(
        cls,
        base: Path,
        bin_dir: Path,
        main: str,
        *,
        name: str = "my-training",
        stack: str = "dev",
        venv: Path | None = None,
        files: Mapping[str, str] | None = None,
    ) -> Workspace:
        """A user's own Pulumi project under ``base/project``: ``Pulumi.yaml`` (python, the
        ``.venv`` beside it), ``__main__.py`` holding ``main``, ``files`` (relative path →
        text: the project's own modules) and ``trainer/`` (a copy of examples/trainer); stack
        files beside ``Pulumi.yaml``. Nothing of the checkout is copied: ``.venv`` is ``venv``
        (one with the package's wheel installed), else this virtualenv with the checkout on
        ``PYTHONPATH``."""
        ws = cls(base, bin_dir, stack=stack)
        ws.stack_dir = ws.project
        ws.project.mkdir(parents=True)
        (ws.project / "Pulumi.yaml").write_text(
            yaml.safe_dump(
                {
                    "name": name,
                    "runtime": {
                        "name": "python",
                        "options": {"toolchain": "pip", "virtualenv": ".venv"},
                    },
                },
                sort_keys=False,
            )
        )
        (ws.project / "__main__.py").write_text(main)
        for relative, text in (files or {}).items():
            (ws.project / relative).parent.mkdir(parents=True, exist_ok=True)
            (ws.project / relative).write_text(text)
        shutil.copytree(REPO / "examples" / "trainer", ws.project / "trainer", ignore=_IGNORE)
        (ws.project / ".venv").symlink_to(venv or venv_dir(), target_is_directory=True)
        if venv is None:
            ws.env["PYTHONPATH"] = str(REPO)
        ws.backend.mkdir()
        ws.home.mkdir()
        return ws

    # -- files --------------------------------------------------------------------------------

    @property
    def stack_file(self) -> Path:
        return self.stack_dir / f"Pulumi.{self.stack}.yaml"

    def write_job(self, name: str, document: Mapping[str, Any]) -> str:
        """Write ``stacks/jobs/<name>.yaml``; returns the path to put in ``training:jobs``."""
        path = self.project / "stacks" / "jobs" / f"{name}.yaml"
        path.write_text(yaml.safe_dump(dict(document), sort_keys=False))
        return f"stacks/jobs/{name}.yaml"

    def write_config(self, config: Mapping[str, Any]) -> None:
        """(Re)write the stack file's config, keeping the salt ``stack init`` added."""
        salt = None
        if self.stack_file.exists():
            salt = (yaml.safe_load(self.stack_file.read_text()) or {}).get("encryptionsalt")
        content: dict[str, Any] = {"config": dict(config)}
        if salt:
            content["encryptionsalt"] = salt
        self.stack_file.write_text(yaml.safe_dump(content, sort_keys=False))

    def init_stack(self, config: Mapping[str, Any]) -> None:
        """Write the stack file, then ``pulumi stack init`` (which adds the secrets salt)."""
        self.write_config(config)
        self.pulumi("stack", "init", self.stack)

    # -- commands -----------------------------------------------------------------------------

    def _command(self, args: Sequence[str]) -> list[str]:
        return ["pulumi", "--non-interactive", "--color", "never", *args]

    def pulumi(
        self,
        *args: str,
        expect_failure: bool = False,
        timeout: float = COMMAND_TIMEOUT,
        env: Mapping[str, str] | None = None,
    ) -> Result:
        """Run a pulumi command in the project on the current stack; check its exit status."""
        cmd = self._command(args)
        try:
            proc = subprocess.run(
                cmd,
                cwd=self.project,
                env={**self.env, **(env or {})},
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired as exc:
            raise PulumiCommandError(
                f"{' '.join(cmd)} did not finish within {timeout:g}s\n"
                f"--- output\n{_text(exc.stdout)}{_text(exc.stderr)}"
            ) from None
        result = Result(tuple(args), proc.returncode, proc.stdout, proc.stderr)
        if (proc.returncode != 0) != expect_failure:
            expected = "fail" if expect_failure else "succeed"
            raise PulumiCommandError(
                f"{' '.join(cmd)} exited {proc.returncode} (expected to {expected})\n"
                f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
            )
        return result

    def spawn(self, *args: str, log: Path) -> subprocess.Popen[bytes]:
        """Start a pulumi command in its own process group (for :func:`kill_group`)."""
        with open(log, "wb") as out:
            return subprocess.Popen(
                self._command(args),
                cwd=self.project,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def preview_json(self, *args: str) -> Any:
        """``pulumi preview --json`` (must succeed), parsed."""
        return self.pulumi("preview", "--json", *args).json()

    def up(self, *args: str) -> Result:
        return self.pulumi("up", "--yes", "--skip-preview", *args)

    # -- state --------------------------------------------------------------------------------

    def export(self, *, show_secrets: bool = False) -> dict[str, Any]:
        """``pulumi stack export``: the deployment (checkpoint) of the current stack."""
        args = ["stack", "export", "--stack", self.stack]
        if show_secrets:
            args.append("--show-secrets")
        exported: dict[str, Any] = self.pulumi(*args).json()
        deployment: dict[str, Any] = exported["deployment"]
        return deployment

    def resources(self, type_: str | None = None) -> list[dict[str, Any]]:
        deployment = self.export()
        return [
            r for r in deployment.get("resources") or [] if type_ is None or r.get("type") == type_
        ]

    def training_jobs(self) -> dict[str, dict[str, Any]]:
        """TrainingJob resources in the state by resource name."""
        return {r["urn"].rsplit("::", 1)[-1]: r for r in self.resources(TRAINING_JOB_TYPE)}

    def backend_files(self) -> list[Path]:
        """Every file the file:// backend wrote (checkpoints, backups, history, locks)."""
        return sorted(p for p in self.backend.rglob("*") if p.is_file())

    def checkpoint_file(self) -> Path:
        return self.backend / ".pulumi" / "stacks" / PROJECT_NAME / f"{self.stack}.json"

    def stray_processes(self) -> list[int]:
        """Pulumi processes (CLI, language host, providers) still running in the project dir."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                cwd = os.readlink(entry / "cwd")
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"pulumi" in cmdline and Path(cwd) == self.project:
                found.append(int(entry.name))
        return found

    def kill_strays(self) -> list[int]:
        """SIGKILL the process groups of :meth:`stray_processes`; returns the pids found.

        The engine starts each plugin in a process group of its own, so killing the CLI's
        group leaves e.g. the dynamic provider (``python -m pulumi.dynamic``) running.
        """
        pids = self.stray_processes()
        own = os.getpgrp()
        for pid in pids:
            with suppress(ProcessLookupError):
                group = os.getpgid(pid)
                if group != own:
                    os.killpg(group, signal.SIGKILL)
                else:
                    os.kill(pid, signal.SIGKILL)
        return pids


def _text(value: str | bytes | None) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def kill_group(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to the whole process group of ``proc`` (CLI, language host, providers)."""
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    with suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)


def wait_until(condition: Callable[[], T | None], *, timeout: float, what: str) -> T:
    """Poll ``condition`` until it returns something truthy; that value is returned."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.1)


def kill_replace_once_submitted(ws: Workspace, client: Any, old: str, urn: str, log: Path) -> str:
    """``pulumi up --replace urn`` killed (its whole process group, SIGKILL) once it has
    submitted a job (one the emulator did not hold before, ``old`` among them), while it still
    runs: that new job's name."""
    known = {j.name for j in list_jobs(client)} | {old}
    up = ws.spawn("up", "--yes", "--skip-preview", "--replace", urn, log=log)
    try:
        [new] = wait_until(
            lambda: [j.name for j in list_jobs(client) if j.name not in known],
            timeout=120,
            what="the replacement's job",
        )
        assert up.poll() is None, "pulumi up --replace ended before it could be killed"
    finally:
        kill_group(up)
    return str(new)


def assert_refresh_names_the_job_left(ws: Workspace, new: str) -> None:
    """After a killed ``up --replace`` (``kill_replace_once_submitted``): the stack's lock
    removed, a refresh that clears the pending create names ``new``, active outside the stack,
    and the command that takes it over."""
    ws.pulumi("cancel", "--yes")
    refreshed = ws.pulumi("refresh", "--yes", "--skip-preview", "--clear-pending-creates").output
    assert new in refreshed and "not in the stack" in refreshed, refreshed
    assert "`pulumi up --replace <this resource's URN>` takes it over" in refreshed


def stack_resource(ws: Workspace, type_: str, name: str) -> dict[str, Any]:
    """What the state holds of the resource ``name`` of ``type_``: its id, inputs and outputs,
    secrets in plain text (the engine encrypts them anew, and may drop empty
    ``propertyDependencies``, whenever it writes the state)."""
    [resource] = [
        r
        for r in ws.export(show_secrets=True).get("resources") or []
        if r["type"] == type_ and r["urn"].rsplit("::", 1)[-1] == name
    ]
    return {key: resource.get(key) for key in ("id", "inputs", "outputs")}


def fails_while_unreachable(ws: Workspace, emu: Any, command: str, type_: str, name: str) -> str:
    """``pulumi <command> --yes`` (``refresh``, ``destroy``) while every API call fails: it must
    fail with the provider's message only (no traceback) and leave the resource ``name`` of
    ``type_`` in the state as it was. Answers its output."""
    before = stack_resource(ws, type_, name)
    emu.set_faults(unavailable_rate=1.0)
    try:
        out = ws.pulumi(command, "--yes", "--skip-preview", expect_failure=True).output
    finally:
        emu.clear_faults()
    assert "Traceback" not in out and 'File "' not in out, out
    after = stack_resource(ws, type_, name)
    assert after == before, f"pulumi {command} changed the resource in the stack:\n{out}"
    return out


@contextmanager
def emulator_for(ws: Workspace, *args: str) -> Iterator[Any]:
    """A per-test emulator (``running_emulator``) on a free port, allowed to read the workspace.

    Its state dir is ``<base>/emulator`` (kept for the test to inspect: the model, logs).
    """
    from emulator.testing import running_emulator

    with running_emulator(*args, state_dir=ws.base / "emulator", cwd=ws.project) as emu:
        yield emu


def list_jobs(client: Any, parent: str = PARENT) -> list[Any]:
    """Every CustomJob the emulator holds under ``parent`` (through the real REST client)."""
    return list(client.list_custom_jobs(parent=parent))
