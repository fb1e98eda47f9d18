"""Everything an execute-mode job needs before its replicas start, and what each one runs.

:func:`prepare_launch` checks what the job asks for (a Docker daemon for container pools), shares
out the GPUs the driver granted the job among its replicas, installs each pool's packages (:mod:`emulator.pyenv`: into the job's ``site-<n>``, or with pip and their dependencies into a cached environment), creates the output directories,
gives each replica of an autopackaged pool (gcloud's ``local-package-path``) the working directory
gcloud's image would have (:mod:`emulator.autopackage`), and builds every replica's command line
and environment (for a hyperparameter tuning trial, with
the trial's variables and a metric file per replica). A problem the job caused is a
:class:`JobFailure` carrying the google.rpc code the job fails with.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import autopackage, cluster, errors, packages, paths, pyenv
from .config import Settings

__all__ = ["JobFailure", "Launch", "prepare_launch"]

# Variables passed through from the service's environment; everything else a replica sees is set
# by Vertex rules or by the job. OPENBLAS_* are kept because some hosts need them for numpy.
_PASSTHROUGH_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


class JobFailure(Exception):
    """The job cannot run as asked: it fails with google.rpc ``code`` and ``message``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Launch:
    """What starting a job's replicas takes: where each sits, and what it runs with."""

    plans: list[cluster.ReplicaPlan]
    envs: dict[str, dict[str, str]] = field(default_factory=dict)  # by replica name
    commands: dict[str, list[str]] = field(default_factory=dict)  # by replica name


@dataclass
class _Job:
    """The job being prepared, and what every step reads about it."""

    job: Any
    job_id: str
    job_dir: Path
    settings: Settings
    project: str
    region: str
    pools: list[Any]
    trial: cluster.TrialContext | None
    stop: pyenv.Stop
    track: pyenv.Track


def split_name(name: str) -> tuple[str, str, str]:
    """(project, location, id) of ``projects/P/locations/L/customJobs/ID``."""
    parts = name.split("/")
    return parts[1], parts[3], parts[5]


def docker_problem() -> str | None:
    """Why container jobs cannot run here, or None when a Docker daemon answers."""
    exe = shutil.which("docker")
    if exe is None:
        return "the docker command is not installed"
    try:
        out = subprocess.run([exe, "info"], capture_output=True, text=True, timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`docker info` did not answer ({type(exc).__name__})"
    if out.returncode != 0:
        lines = [ln for ln in (out.stderr or out.stdout).splitlines() if ln.strip()]
        reason = lines[-1].strip() if lines else f"exit status {out.returncode}"
        return f"`docker info` failed: {reason}"
    return None


def prepare_launch(
    job: Any,
    *,
    job_id: str,
    job_dir: Path,
    settings: Settings,
    gpu_devices: Sequence[int] = (),
    trial: cluster.TrialContext | None = None,
    stop: pyenv.Stop = lambda: False,
    track: pyenv.Track = lambda pid: None,
) -> Launch:
    """Check, install and plan everything job ``job_id`` needs to start (see module doc).

    ``stop`` is asked while packages install: when it turns true (the job was cancelled) the
    install is given up at once with :class:`emulator.pyenv.Interrupted`. ``track`` is told the
    pid of each pip process as it starts, and None when it has ended (:data:`emulator.pyenv.Track`).
    """
    # The project of the job's name is its number (emulator.names): CLOUD_ML_PROJECT_ID holds
    # the number on Vertex AI too (googleapis/python-aiplatform#852).
    project, region, _ = split_name(job.name)
    pools = list(job.job_spec.worker_pool_specs)
    ctx = _Job(job, job_id, job_dir, settings, project, region, pools, trial, stop, track)
    (job_dir / "logs").mkdir(parents=True, exist_ok=True)
    _check_docker(ctx)
    plans = cluster.plan_replicas(job)
    if settings.gpus == "auto":
        # gpu_devices: what the driver granted this job, held by it alone until it ends.
        problem = cluster.assign_gpus(job, plans, gpu_devices)
        if problem is not None:
            raise JobFailure(errors.RPC_RESOURCE_EXHAUSTED, problem)
    sites = _install_packages(ctx)
    _populate_workdirs(ctx, plans)
    output_dir = _prepare_output_dir(ctx)
    launch = Launch(plans)
    for plan in plans:
        if trial is not None:
            trial.metric_file(plan.name).parent.mkdir(parents=True, exist_ok=True)
        env, cmd = _replica_command(ctx, plan, plans, sites, output_dir)
        launch.envs[plan.name] = env
        launch.commands[plan.name] = cmd
    return launch


def _check_docker(ctx: _Job) -> None:
    if any(p.WhichOneof("task") == "container_spec" for p in ctx.pools):
        problem = docker_problem()
        if problem is not None:
            raise JobFailure(
                errors.RPC_FAILED_PRECONDITION,
                "Container jobs need a running Docker daemon and none answered here "
                f"({problem}). Start Docker, or use python_package_spec.",
            )


def _install_packages(ctx: _Job) -> dict[tuple[str, ...], pyenv.PoolPython]:
    """How each distinct list of package URIs runs (:mod:`emulator.pyenv`), by that list.

    What was installed, and any framework warning, goes to the log of each replica of the pool.
    """
    pythons: dict[tuple[str, ...], pyenv.PoolPython] = {}
    base: pyenv.Interpreter | None = None
    for i, pool in enumerate(ctx.pools):
        if pool.WhichOneof("task") != "python_package_spec":
            continue
        pps = pool.python_package_spec
        uris = _pool_key(pps)
        if uris not in pythons:
            try:
                # Checked again here, right before reading: the file system may have changed
                # since the create (a symlink planted after it).
                sources = [
                    paths.resolve_package(u, ctx.settings.state_dir, ctx.settings.allow_roots)
                    for u in pps.package_uris
                ]
                sources = _autopackage_sources(ctx, pps, sources, len(pythons))
                base = base or pyenv.probe(ctx.settings.python, cwd=ctx.job_dir)
                pythons[uris] = pyenv.prepare_pool(
                    sources,
                    index=len(pythons),
                    job_dir=ctx.job_dir,
                    settings=ctx.settings,
                    base=base,
                    stop=ctx.stop,
                    track=ctx.track,
                )
            except (
                paths.PackageError,
                pyenv.InstallError,
                autopackage.BuildError,
                OSError,
            ) as exc:
                message = f"Installing the packages of worker pool {i} failed: {exc}"
                _log_to_pool(ctx, i, [message])
                raise JobFailure(errors.RPC_INVALID_ARGUMENT, message) from None
            except pyenv.EnvironmentProblem as exc:
                _log_to_pool(ctx, i, [str(exc)])
                raise JobFailure(errors.RPC_FAILED_PRECONDITION, str(exc)) from None
        setup = pythons[uris]
        warning = pyenv.framework_warning(pps.executor_image_uri, setup.interpreter)
        _log_to_pool(ctx, i, [*setup.notes, *([warning] if warning else [])])
    return pythons


def _pool_key(pps: Any) -> tuple[str, ...]:
    """What a pool's environment depends on: its packages, and an autopackaged pool's build
    (its requirements are installed with them)."""
    build = [v.value for v in pps.env if v.name == autopackage.ENV]
    return (*pps.package_uris, *build)


def _autopackage_sources(ctx: _Job, pps: Any, sources: list[Path], index: int) -> list[Path]:
    """What an autopackaged pool installs (:mod:`emulator.autopackage`), as gcloud's image
    does: the package directory only when it has a setup.py (its code runs from the working
    directory), the extra packages, and the requirements as one more package."""
    build = autopackage.build_of(pps.env)
    if build is None or not sources:
        return sources
    installed = sources if build.setup_py else sources[1:]
    project = autopackage.requirements_project(
        build,
        sources[0],
        ctx.job_dir / f"autopackage-requirements-{index}",
        ctx.settings.allow_roots,
    )
    return [*installed, *([project] if project is not None else [])]


def _populate_workdirs(ctx: _Job, plans: list[cluster.ReplicaPlan]) -> None:
    """Each replica of an autopackaged pool starts in a working directory holding what
    gcloud's image holds (from one checked copy of the package directory per pool)."""
    limits = packages.Limits(max_bytes=ctx.settings.max_unpacked_mb * 1024 * 1024)
    copies: dict[int, tuple[autopackage.Build, Path]] = {}
    for plan in plans:
        pool = ctx.pools[plan.pool]
        if pool.WhichOneof("task") != "python_package_spec":
            continue
        pps = pool.python_package_spec
        try:
            build = autopackage.build_of(pps.env)
            if build is None or not pps.package_uris:
                continue
            if plan.pool not in copies:
                source = paths.resolve_package(
                    pps.package_uris[0], ctx.settings.state_dir, ctx.settings.allow_roots
                )
                staged = ctx.job_dir / f"autopackage-{plan.pool}"
                shutil.rmtree(staged, ignore_errors=True)
                with packages.opened(
                    [source], ctx.job_dir, roots=ctx.settings.allow_roots, limits=limits
                ) as (found, *_):
                    copies[plan.pool] = (build, packages.copy_for_pip(found, staged, limits=limits))
            build, checked = copies[plan.pool]
            autopackage.populate(build, checked, ctx.job_dir / "work" / plan.name)
        except (paths.PackageError, autopackage.BuildError, OSError) as exc:
            message = f"Preparing worker pool {plan.pool} as gcloud's image would failed: {exc}"
            _log_to_pool(ctx, plan.pool, [message])
            raise JobFailure(errors.RPC_INVALID_ARGUMENT, message) from None


def _log_to_pool(ctx: _Job, pool_index: int, lines: list[str]) -> None:
    # Before the replicas start: their logs are appended to when they do.
    text = "".join(f"[emulator] {line}\n" for line in lines).encode(errors="replace")
    for replica in range(max(ctx.pools[pool_index].replica_count, 1)):
        log_path = ctx.job_dir / "logs" / f"workerpool{pool_index}-{replica}.log"
        with open(log_path, "ab") as log:
            log.write(text)


def _prepare_output_dir(ctx: _Job) -> str | None:
    prefix = ctx.job.job_spec.base_output_directory.output_uri_prefix
    if not prefix:
        return None
    try:
        return str(paths.prepare_output_dir(prefix, ctx.settings.state_dir))
    except (paths.PackageError, OSError) as exc:
        raise JobFailure(
            errors.RPC_INVALID_ARGUMENT,
            f"base_output_directory.output_uri_prefix {prefix}: {exc}",
        ) from None


def _replica_command(
    ctx: _Job,
    plan: cluster.ReplicaPlan,
    plans: list[cluster.ReplicaPlan],
    sites: dict[tuple[str, ...], pyenv.PoolPython],
    output_dir: str | None,
) -> tuple[dict[str, str], list[str]]:
    """(environment, command line) of one replica."""
    pool = ctx.pools[plan.pool]
    env = {k: os.environ[k] for k in _PASSTHROUGH_ENV if k in os.environ}
    env.update(
        cluster.replica_env(
            ctx.job,
            job_id=ctx.job_id,
            project=ctx.project,
            region=ctx.region,
            plans=plans,
            me=plan,
            output_dir=output_dir,
            gpu_mode=ctx.settings.gpus,
            trial=ctx.trial,
        )
    )
    if pool.WhichOneof("task") == "python_package_spec":
        pps = pool.python_package_spec
        env.update({v.name: v.value for v in pps.env if v.name != autopackage.ENV})
        python = sites[_pool_key(pps)]
        # The no-pip path adds only the job's own site dir; the interpreter's site-packages
        # (numpy) comes with the interpreter, as it does with a pip-built environment's Python.
        if python.pythonpath is not None:
            env["PYTHONPATH"] = python.pythonpath
        env["PYTHONUNBUFFERED"] = "1"
        build = autopackage.build_of(pps.env)
        if build is not None:
            # gcloud's image runs the module or script in its working directory, which is on
            # sys.path for `python -m` (its code is not installed: no setup.py is needed).
            return env, autopackage.command(build, python.python, pps.args)
        # PYTHONSAFEPATH keeps the working dir off sys.path.
        env["PYTHONSAFEPATH"] = "1"
        return env, [python.python, "-m", pps.python_module, *pps.args]
    cs = pool.container_spec
    env.update({v.name: v.value for v in cs.env})
    mounts = [output_dir] if output_dir is not None else []
    if ctx.trial is not None:
        mounts.append(str(ctx.trial.metric_file(plan.name).parent))
    return env, _docker_command(ctx.job_id, plan, cs, env, mounts)


def _docker_command(
    job_id: str, plan: cluster.ReplicaPlan, cs: Any, env: dict[str, str], mounts: list[str]
) -> list[str]:
    name = f"vertex-emulator-{job_id}-{plan.name}"
    cmd = ["docker", "run", "--rm", "--name", name, "--network", "host"]
    # `-e NAME` without a value makes docker read the value from its own environment, so no
    # secret appears on a command line (visible to every user in `ps`).
    for key in env:
        if key not in _PASSTHROUGH_ENV:
            cmd += ["-e", key]
    for mount in mounts:
        if ":" in mount or "," in mount:
            # `-v SRC:DST` splits at ':'; the create check sees only the URI, not where an
            # in-root symlink made it point.
            raise JobFailure(
                errors.RPC_INVALID_ARGUMENT,
                f"The directory {mount} holds ':' or ',', which docker -v cannot mount.",
            )
        cmd += ["-v", f"{mount}:{mount}"]
    if plan.gpus:
        cmd += ["--gpus", "device=" + ",".join(map(str, plan.gpus))]
    if cs.command:
        # One argument, so that a command starting with '-' cannot read as a docker flag.
        cmd += [f"--entrypoint={cs.command[0]}", cs.image_uri, *cs.command[1:], *cs.args]
    else:
        cmd += [cs.image_uri, *cs.args]
    return cmd
