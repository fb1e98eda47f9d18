"""Command line: ``python -m emulator serve|stop|jobs|logs|maintenance``.

Whatever goes wrong outside the program (a state dir that cannot be used, a disk that is full, a
server that answers something else than the emulator would) is one line on stderr and exit
status 1, never a traceback; and what a server or a job's name put in that line has its control
characters escaped, so that it cannot drive the terminal.
"""

from __future__ import annotations

import argparse
import http.client
import json
import logging
import os
import re
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from . import capacity, config, gpus, hardware, names, quotas

__all__ = ["build_parser", "main", "wait_ready"]

DEFAULT_PORT = 8642
# A job as the commands take it: its id, or its full resource name (any kind of job: the service
# says whether it is one of its CustomJobs).
_JOB_ID = re.compile(r"[0-9]{1,19}")
_JOB_NAME = re.compile(r"projects/[^/]+/locations/[^/]+/[A-Za-z]+/(?P<id>[0-9]{1,19})")
# The most of a maintenance answer read, and shown when it is not the emulator's.
_MAX_ANSWER = 1024 * 1024
_SHOWN = 120

if TYPE_CHECKING:
    # argparse's subparsers action is generic only for type checkers.
    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]

    from .store import StateUnavailable, Store


def _state_dir(arg: str | None) -> Path:
    return (Path(arg) if arg else Path.cwd() / ".local" / "emulator").resolve()


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError("expected a fraction between 0 and 1")
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value


def _gpus(text: str) -> tuple[str, tuple[int, ...] | None]:
    try:
        return gpus.parse_gpus_flag(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _positive_seconds(text: str) -> float:
    value = float(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError("expected a number of seconds above 0")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(prog="python -m emulator", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_serve(sub)
    _add_stop(sub)
    _add_jobs(sub)
    _add_logs(sub)
    _add_maintenance(sub)
    return parser


# The flags of `serve`, in groups; the order they are added in is the order `--help` lists them.


def _add_serve(sub: Subparsers) -> None:
    serve = sub.add_parser("serve", help="run the service")
    _add_service_flags(serve)
    _add_limit_flags(serve)
    _add_billing_flags(serve)
    _add_simulate_flags(serve)
    _add_fault_flags(serve)
    _add_process_flags(serve)


def _add_service_flags(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="0 picks a free port")
    serve.add_argument(
        "--free-port-if-taken",
        action="store_true",
        help="when --port is taken, listen on a free port instead (server.json, and --daemon's "
        "output, name it)",
    )
    serve.add_argument("--state-dir", help="default: ./.local/emulator")
    serve.add_argument("--mode", choices=config.MODES, default="execute")
    serve.add_argument(
        "--gpus",
        type=_gpus,
        default="auto",
        metavar="auto|ignore|IDS",
        help="auto: share the GPUs nvidia-smi lists among jobs, each replica its own, jobs waiting "
        "in QUEUED for free ones and failing if they want more than exist; IDS (e.g. 0,1,3): "
        "share exactly these device ids instead (not checked against nvidia-smi); "
        "ignore: run GPU jobs on the CPU",
    )
    serve.add_argument(
        "--project-number",
        action="append",
        default=[],
        metavar="ID=NUMBER",
        help="the project number that names the jobs of project ID (repeatable); Vertex AI names "
        "jobs by number, and so does the emulator: by default a 12-digit number derived from the ID",
    )
    serve.add_argument(
        "--allow-root",
        action="append",
        default=[],
        metavar="DIR",
        help="another directory packages may be read from (repeatable)",
    )
    serve.add_argument(
        "--catalog-overlay",
        type=Path,
        default=None,
        metavar="DIR",
        help="a folder of catalog rows (the columns of components/catalog's files) put over the "
        "catalog, as a stack's training:catalogOverlay is: a machine type, accelerator count or "
        "image it adds is accepted; read again when a file in it changes",
    )


def _add_billing_flags(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--billing-snapshot",
        type=Path,
        default=None,
        metavar="CSV",
        help="the SKUs the Cloud Billing Catalog API serves (columns of "
        "components/catalog/billing_skus.csv, which is the default); read again when it changes",
    )
    serve.add_argument(
        "--billing-account-prices",
        type=Path,
        default=None,
        metavar="JSON",
        help='the billing account prices the Cloud Billing API v1beta serves: {"discountPercent": '
        "N} off the snapshot's list prices; while the file does not exist (and without this "
        "flag) the caller may not read them (403 PERMISSION_DENIED)",
    )


def _add_limit_flags(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--grace-seconds",
        type=_non_negative,
        default=5.0,
        help="time between SIGTERM and SIGKILL when stopping a replica",
    )
    serve.add_argument("--max-running-jobs", type=int, default=4)
    serve.add_argument(
        "--quota",
        action="append",
        default=[],
        metavar="METRIC[@REGION]=N",
        help="a Vertex training quota limit for every project, e.g. "
        "custom_model_training_nvidia_t4_gpus@us-central1=4 (repeatable; -1: unlimited; default "
        f"{quotas.DEFAULT_GPU_LIMIT} GPUs and {quotas.DEFAULT_CPU_LIMIT} vCPUs per metric and "
        "region); quota preferences change them while the service runs",
    )
    serve.add_argument(
        "--no-capacity",
        action="append",
        default=[],
        metavar="GPU@REGION",
        help="a region without capacity for a GPU, e.g. NVIDIA_TESLA_T4@us-central1 "
        "(repeatable): a job that asks for it there goes PENDING, then FAILED with "
        "RESOURCE_EXHAUSTED 'Resources are insufficient in region: ...', as on Vertex AI",
    )
    serve.add_argument(
        "--no-capacity-at-create",
        action="store_true",
        help="with --no-capacity: refuse such a job at create instead (429 RESOURCE_EXHAUSTED, "
        "the same message; nothing is stored)",
    )
    serve.add_argument(
        "--max-unpacked-mb",
        type=_positive_int,
        default=config.DEFAULT_MAX_UNPACKED_MB,
        metavar="MB",
        help="the most one package (wheel, sdist, zip or directory) may unpack or copy into a job "
        f"(default {config.DEFAULT_MAX_UNPACKED_MB}); archive headers are checked before anything "
        "is extracted",
    )
    serve.add_argument(
        "--pip-timeout",
        type=_positive_seconds,
        default=config.DEFAULT_PIP_TIMEOUT_SECONDS,
        metavar="SECONDS",
        help="how long pip may take to install a pool's packages with their dependencies "
        f"(default {config.DEFAULT_PIP_TIMEOUT_SECONDS:g}); a job whose install takes longer "
        "fails with code 3",
    )


def _add_simulate_flags(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--simulate-queued-seconds", type=_non_negative, default=0.2)
    serve.add_argument("--simulate-pending-seconds", type=_non_negative, default=0.5)
    serve.add_argument("--simulate-run-seconds", type=_non_negative, default=5.0)
    serve.add_argument("--simulate-cancel-seconds", type=_non_negative, default=0.2)


def _add_fault_flags(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--fault-unavailable-rate", type=_fraction, default=0.0)
    serve.add_argument("--fault-rate-limit-rate", type=_fraction, default=0.0)
    serve.add_argument("--fault-conflict-rate", type=_fraction, default=0.0)
    serve.add_argument("--fault-latency-ms", type=_non_negative, default=0.0)
    serve.add_argument(
        "--fault-drop-create",
        type=_count,
        default=0,
        metavar="N",
        help="lose the response of the next N creates (the jobs are stored)",
    )
    serve.add_argument("--fault-drop-mode", choices=config.DROP_MODES, default="close")
    serve.add_argument("--fault-seed", type=int, default=None)


def _add_process_flags(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    serve.add_argument("--daemon", action="store_true", help="start in the background and return")
    serve.add_argument("--pid-file", help="write the server's pid here")
    serve.add_argument(
        "--log-file", help="with --daemon: where the server logs (default <state-dir>/server.log)"
    )


def _add_stop(sub: Subparsers) -> None:
    stop = sub.add_parser("stop", help="stop a service started with --daemon (or any serve)")
    stop.add_argument("--state-dir")
    stop.add_argument("--pid-file")
    stop.add_argument("--timeout", type=float, default=30.0)


def _add_jobs(sub: Subparsers) -> None:
    jobs = sub.add_parser("jobs", help="table of the jobs in a state dir")
    jobs.add_argument("--state-dir")


def _add_logs(sub: Subparsers) -> None:
    logs = sub.add_parser("logs", help="print a job's replica logs")
    logs.add_argument("job", help="job id or full resource name")
    logs.add_argument("--replica", help="e.g. workerpool0-0 (default: all)")
    logs.add_argument("--state-dir")


def _add_maintenance(sub: Subparsers) -> None:
    drill = sub.add_parser(
        "maintenance",
        help="host maintenance drill: kill a replica of a running job and restart it",
        description="Simulate a Compute Engine host maintenance event on one replica of a running "
        "job: its process group is stopped (SIGTERM, SIGKILL after the grace period) and started "
        "again with the same environment, so the trainer must resume from its checkpoint. With "
        "scheduling.restart_job_on_worker_restart, every replica of the job is restarted.",
    )
    drill.add_argument("job", help="job id or full resource name")
    drill.add_argument(
        "--replica", default="workerpool0-0", help="the replica hit (default workerpool0-0)"
    )
    where = drill.add_mutually_exclusive_group()
    where.add_argument(
        "--state-dir", help="the running emulator's state dir (default ./.local/emulator)"
    )
    where.add_argument("--endpoint", help="the emulator's URL, e.g. http://127.0.0.1:8642")


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m emulator``."""
    warnings.filterwarnings("ignore", category=FutureWarning)
    args_list = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(args_list)
    if args.command == "serve":
        return _serve(args, args_list)
    if args.command == "stop":
        return _stop(args)
    if args.command == "jobs":
        return _jobs(args)
    if args.command == "maintenance":
        return _maintenance(args)
    return _logs(args)


class _FlagError(Exception):
    """A flag value argparse could not check; ``serve`` prints it and exits 2."""


def _serve(args: argparse.Namespace, argv: list[str]) -> int:
    state_dir = _state_dir(args.state_dir)
    if args.daemon:
        return _daemonize(args, argv, state_dir)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    try:
        settings = _settings(args, state_dir)
        faults = _faults(args)
    except _FlagError as exc:
        print(exc, file=sys.stderr)
        return 2
    # Imported late: loading the aiplatform protos takes a second or two, and flag errors above
    # should come back at once.
    from .server import Service
    from .store import StateUnavailable

    try:
        service = Service(
            settings,
            faults,
            host=args.host,
            port=args.port,
            free_port_if_taken=args.free_port_if_taken,
        )
    except StateUnavailable as problem:
        print(_state_problem(state_dir, problem), file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"cannot listen on {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1
    if args.pid_file:
        try:
            Path(args.pid_file).write_text(f"{os.getpid()}\n")
        except OSError as exc:
            service.close()
            print(f"cannot write the pid file {args.pid_file}: {exc.strerror}", file=sys.stderr)
            return 1
    try:
        service.serve()
    except StateUnavailable as problem:
        print(_state_problem(state_dir, problem), file=sys.stderr)
        return 1
    return 0


def _state_problem(state_dir: Path, problem: StateUnavailable) -> str:
    """The one line saying that the state dir cannot be used, and why."""
    said = _terminal_safe(problem.reason if problem.path == state_dir else str(problem))
    if problem.disk_full:
        return f"the emulator's disk is full: cannot write its state in {state_dir} ({said})"
    return f"cannot use the emulator's state in {state_dir}: {said}"


def _make_state_dir(state_dir: Path) -> str | None:
    """None once ``state_dir`` exists as a directory (made if need be); else why it cannot."""
    try:
        if state_dir.exists() and not state_dir.is_dir():
            return f"cannot use the emulator's state in {state_dir}: not a directory"
        state_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot use the emulator's state in {state_dir}: {exc.strerror or exc}"
    return None


def _settings(args: argparse.Namespace, state_dir: Path) -> config.Settings:
    """The service's settings from the ``serve`` flags; _FlagError names a bad one."""
    if args.max_running_jobs < 1:
        raise _FlagError("--max-running-jobs: must be at least 1")
    roots = [state_dir, Path.cwd().resolve()]
    for root in args.allow_root:
        path = Path(root).resolve()
        if not path.is_dir():
            raise _FlagError(f"--allow-root: {root} is not a directory")
        roots.append(path)
    try:
        project_numbers = names.parse_project_numbers(args.project_number)
    except ValueError as exc:
        raise _FlagError(str(exc)) from None
    if args.catalog_overlay is not None:
        overlay = args.catalog_overlay.resolve()
        if not overlay.is_dir():
            raise _FlagError(f"--catalog-overlay: {args.catalog_overlay} is not a directory")
        # Read by emulator.hardware and emulator.quotas wherever they look a fact up.
        os.environ[hardware.OVERLAY_ENV] = str(overlay)
    return config.Settings(
        state_dir=state_dir,
        mode=args.mode,
        gpus=args.gpus[0],
        gpu_devices=args.gpus[1],
        allow_roots=roots,
        grace_seconds=args.grace_seconds,
        max_running_jobs=args.max_running_jobs,
        simulate_queued_seconds=args.simulate_queued_seconds,
        simulate_pending_seconds=args.simulate_pending_seconds,
        simulate_run_seconds=args.simulate_run_seconds,
        simulate_cancel_seconds=args.simulate_cancel_seconds,
        max_unpacked_mb=args.max_unpacked_mb,
        pip_timeout_seconds=args.pip_timeout,
        quota_limits=_quota_limits(args.quota),
        no_capacity=_no_capacity(args.no_capacity),
        no_capacity_at_create=args.no_capacity_at_create,
        project_numbers=project_numbers,
        billing_snapshot=args.billing_snapshot,
        billing_account_prices=args.billing_account_prices,
    )


def _quota_limits(flags: list[str]) -> tuple[tuple[str, str | None, int], ...]:
    """The ``--quota`` flags as limits; _FlagError names a bad one."""
    table = quotas.load_table()
    try:
        return tuple(quotas.parse_limit(flag, table) for flag in flags)
    except ValueError as exc:
        raise _FlagError(str(exc)) from None


def _no_capacity(flags: list[str]) -> tuple[tuple[str, str], ...]:
    """The ``--no-capacity`` flags as (GPU, region) pairs; _FlagError names a bad one."""
    table = quotas.load_table()
    try:
        return tuple(capacity.parse_gap(flag, table) for flag in flags)
    except ValueError as exc:
        raise _FlagError(str(exc)) from None


def _faults(args: argparse.Namespace) -> config.Faults:
    """Fault injection as the ``--fault-*`` flags set it; _FlagError if a value is refused."""
    faults = config.Faults(args.fault_seed)
    try:
        faults.update(
            {
                "unavailable_rate": args.fault_unavailable_rate,
                "rate_limit_rate": args.fault_rate_limit_rate,
                "conflict_rate": args.fault_conflict_rate,
                "latency_ms": args.fault_latency_ms,
                "drop_create": args.fault_drop_create,
                "drop_mode": args.fault_drop_mode,
            }
        )
    except ValueError as exc:  # argparse types already check ranges; kept as a last guard
        raise _FlagError(f"fault flags: {exc}") from None
    return faults


def _daemonize(args: argparse.Namespace, argv: list[str], state_dir: Path) -> int:
    problem = _make_state_dir(state_dir)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 1
    log_file = Path(args.log_file) if args.log_file else state_dir / "server.log"
    child_args = [a for a in argv if a != "--daemon"]
    if "--state-dir" not in child_args and not any(
        a.startswith("--state-dir=") for a in child_args
    ):
        child_args += ["--state-dir", str(state_dir)]
    pid_file = Path(args.pid_file) if args.pid_file else state_dir / "emulator.pid"
    if "--pid-file" not in child_args and not any(a.startswith("--pid-file=") for a in child_args):
        child_args += ["--pid-file", str(pid_file)]
    try:
        with open(log_file, "ab") as out:
            logged_before = out.tell()
            proc = subprocess.Popen(
                [sys.executable, "-m", __package__ or "emulator", *child_args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
    except OSError as exc:
        print(f"cannot write the emulator's log {log_file}: {exc.strerror}", file=sys.stderr)
        return 1
    info = wait_ready(state_dir, proc.pid, timeout=30.0, alive=lambda: proc.poll() is None)
    if info is None:
        if proc.poll() is None:
            proc.kill()
        print(_why_not_started(log_file, logged_before), file=sys.stderr)
        return 1
    print(f"emulator running (pid {proc.pid}) at {info['endpoint']}; logs: {log_file}")
    return 0


def _why_not_started(log_file: Path, logged_before: int) -> str:
    """What the server that did not start wrote: its one line of error, or where to read more."""
    try:
        with open(log_file, "rb") as log:
            log.seek(logged_before)
            output = log.read(64 * 1024).decode(errors="replace")
    except OSError:
        output = ""
    lines = [line for line in output.splitlines() if line.strip()]
    if len(lines) == 1:
        return f"the emulator did not start: {_terminal_safe(lines[0])}"
    tail = "\n".join(_terminal_safe(line) for line in lines[-20:])
    return f"the emulator did not start; see {log_file}" + (f"\n{tail}" if tail else "")


def wait_ready(
    state_dir: Path, pid: int, *, timeout: float, alive: Callable[[], bool] | None = None
) -> dict[str, object] | None:
    """Wait until the server with ``pid`` wrote ``server.json`` and answers its health check."""
    deadline = time.monotonic() + timeout
    server_file = state_dir / "server.json"
    while time.monotonic() < deadline:
        if alive is not None and not alive():
            return None
        try:
            info: dict[str, object] = json.loads(server_file.read_text())
        except (OSError, ValueError):
            info = {}
        if info.get("pid") == pid:
            try:
                with urllib.request.urlopen(
                    f"{info['endpoint']}/emulator/v1/health", timeout=2
                ) as r:
                    if json.loads(r.read()).get("pid") == pid:
                        return info
            except OSError:
                pass
        time.sleep(0.1)
    return None


def _stop(args: argparse.Namespace) -> int:
    state_dir = _state_dir(args.state_dir)
    pid: int | None = None
    source = ""
    try:
        if args.pid_file:
            source = args.pid_file
            pid = int(Path(args.pid_file).read_text().strip())
        else:
            source = str(state_dir / "server.json")
            pid = int(json.loads((state_dir / "server.json").read_text())["pid"])
    except (OSError, ValueError, KeyError):
        print(f"no running emulator found ({source} is missing or unreadable)", file=sys.stderr)
        return 1
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        print(f"emulator pid {pid} is not running")
        return 0
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            print(f"emulator pid {pid} stopped")
            return 0
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    print(f"emulator pid {pid} did not stop in {args.timeout:g}s and was killed", file=sys.stderr)
    return 1


def _with_store(state_dir: Path, read: Callable[[Store], int]) -> int:
    """``read(store)`` on the state dir's database, opened read-only; a database that cannot be
    read is one line and status 1."""
    from .store import DB_NAME, StateUnavailable, Store

    if not os.path.exists(state_dir / DB_NAME):
        print(f"no emulator state in {state_dir}", file=sys.stderr)
        return 1
    try:
        store = Store.open(state_dir, readonly=True)
        try:
            return read(store)
        finally:
            store.close()
    except StateUnavailable as problem:
        print(_state_problem(state_dir, problem), file=sys.stderr)
    except sqlite3.Error as exc:  # an SQLite database, but not the emulator's
        print(
            f"cannot read the emulator's database in {state_dir}: {_terminal_safe(str(exc))}",
            file=sys.stderr,
        )
    return 1


def _jobs(args: argparse.Namespace) -> int:
    return _with_store(_state_dir(args.state_dir), _print_jobs)


def _print_jobs(store: Store) -> int:
    from . import protos

    rows = [("ID", "STATE", "DISPLAY NAME", "CREATED (UTC)", "ERROR")]
    for job_id, job in store.all_jobs():
        created = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(job.create_time.seconds))
        error = job.error.message[:60] if job.error.message else ""
        rows.append(
            (
                job_id,
                protos.state_name(job.state).removeprefix("JOB_STATE_"),
                _terminal_safe(job.display_name),
                created,
                _terminal_safe(error),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0


def _terminal_safe(text: str) -> str:
    # Display names come from API clients: escape sequences in them must not reach the terminal.
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def _job_reference(text: str) -> tuple[str, str | None] | None:
    """(id, full name or None) of a job given by its id or its resource name; None: neither."""
    trimmed = text.rstrip("/")
    if _JOB_ID.fullmatch(trimmed):
        return trimmed, None
    named = _JOB_NAME.fullmatch(trimmed)
    return (named["id"], trimmed) if named else None


def _not_a_job(text: str) -> str:
    return (
        f"{_terminal_safe(text)}: not a job id, nor a job name like "
        "projects/PROJECT/locations/LOCATION/customJobs/ID"
    )


def _no_such_job(name: str) -> str:
    """What the REST API answers for a job name that is not a job's (the kind from the name)."""
    kinds = {"customJobs": "CustomJob", "hyperparameterTuningJobs": "HyperparameterTuningJob"}
    kind = kinds.get(name.split("/")[-2], "job")
    return f'The {kind} "{_terminal_safe(name)}" does not exist.'


def _logs(args: argparse.Namespace) -> int:
    state_dir = _state_dir(args.state_dir)
    job = _job_reference(args.job)
    if job is None:
        print(_not_a_job(args.job), file=sys.stderr)
        return 1
    return _with_store(state_dir, lambda store: _print_logs(store, state_dir, *job, args.replica))


def _print_logs(
    store: Store, state_dir: Path, job_id: str, name: str | None, replica: str | None
) -> int:
    if name is not None:
        # A job of another project or location with the same id is not this one; the project
        # may be named by ID or by number (the service named the job by number).
        known = {project_id: number for number, project_id in store.project_ids().items()}
        numbers = names.ProjectNumbers(known)
        stored = store.get_job(job_id)
        if stored is None or numbers.canonical(stored.name) != numbers.canonical(name):
            print(_no_such_job(name), file=sys.stderr)
            return 1
    logs = [(r.replica, r.log_path) for r in store.replicas(job_id)]
    if not logs:
        logs = _logs_before_start(state_dir, job_id)
    if replica:
        logs = [(r, path) for r, path in logs if r == replica]
    if not logs:
        what = f"replica {_terminal_safe(replica)} of job {job_id}" if replica else f"job {job_id}"
        print(f"no logs for {what}", file=sys.stderr)
        return 1
    for shown, log_path in logs:
        if not replica:
            print(f"==> {shown} ({log_path}) <==")
        try:
            # Only the regular file the service wrote: never through a symlink, never a FIFO
            # (a plain open would wait for a writer forever).
            fd = os.open(log_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            with open(fd, "rb") as log:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    print(f"cannot read {log_path}: not a regular file", file=sys.stderr)
                    return 1
                sys.stdout.flush()
                shutil.copyfileobj(log, sys.stdout.buffer)
                sys.stdout.buffer.flush()
        except OSError as exc:
            print(f"cannot read {log_path}: {exc.strerror}", file=sys.stderr)
            return 1
    return 0


def _logs_before_start(state_dir: Path, job_id: str) -> list[tuple[str, str]]:
    """(replica, log path) of a job that failed before its replicas started (a failed package
    install): its replicas' log files hold only what the emulator wrote about it."""
    if not job_id.isdigit():
        return []
    folder = state_dir / "jobs" / job_id / "logs"
    return [(p.stem, str(p)) for p in sorted(folder.glob("workerpool*-*.log"))]


def _running_endpoint(state_dir: Path) -> str | None:
    """The endpoint of the emulator serving ``state_dir``, if it runs and answers."""
    try:
        info = json.loads((state_dir / "server.json").read_text())
        endpoint, pid = str(info["endpoint"]), info["pid"]
        with urllib.request.urlopen(f"{endpoint}/emulator/v1/health", timeout=5) as resp:
            answering = json.loads(resp.read()).get("pid") == pid
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return endpoint if answering else None


def _admin_post(url: str, body: dict[str, object]) -> tuple[int, bytes]:
    """POST JSON to an admin route: (HTTP status, the answer's first bytes). OSError or
    http.client.HTTPException if unreachable."""
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        # A maintenance event waits for the replica to stop (up to the grace period) and start.
        with urllib.request.urlopen(req, timeout=300) as resp:
            return resp.status, resp.read(_MAX_ANSWER + 1)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(_MAX_ANSWER + 1)


_NOT_JSON = object()


def _decoded(raw: bytes) -> Any:
    """The JSON value of an answer; _NOT_JSON when it is not JSON (or is nested too deeply)."""
    if len(raw) > _MAX_ANSWER:
        return _NOT_JSON
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _shown(raw: bytes) -> str:
    """The start of an answer, fit to print on one line."""
    text = _terminal_safe(raw[:_SHOWN].decode(errors="replace"))
    return (text + "...") if len(raw) > _SHOWN else text or "(empty)"


def _http_url(text: str) -> bool:
    """An http(s) URL with a host (urllib would also open file:// and ftp:// URLs)."""
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError:  # e.g. a bad IPv6 address
        return False
    printable = _terminal_safe(text) == text
    return parts.scheme in ("http", "https") and bool(parts.netloc) and printable


def _endpoint(args: argparse.Namespace) -> str | None:
    """The URL of the emulator the drill goes to (said on stderr when there is none)."""
    if args.endpoint:
        if not _http_url(args.endpoint):
            print(
                f"--endpoint: expected an http:// or https:// URL, not "
                f"{_terminal_safe(args.endpoint)}",
                file=sys.stderr,
            )
            return None
        return str(args.endpoint).rstrip("/")
    state_dir = _state_dir(args.state_dir)
    found = _running_endpoint(state_dir)
    if found is None:
        print(
            f"no running emulator found for {state_dir} (its server.json is missing or the "
            "server does not answer): start one with `python -m emulator serve`, or name "
            "it with --endpoint",
            file=sys.stderr,
        )
    return found


def _maintenance(args: argparse.Namespace) -> int:
    job = _job_reference(args.job)
    if job is None:
        print(_not_a_job(args.job), file=sys.stderr)
        return 1
    job_id, name = job
    endpoint = _endpoint(args)
    if endpoint is None:
        return 1
    body: dict[str, object] = {"replica": args.replica}
    if name is not None:
        body["name"] = name  # the service refuses a name that is not the job's
    try:
        status, raw = _admin_post(f"{endpoint}/emulator/v1/jobs/{job_id}:maintenance", body)
    except (OSError, http.client.HTTPException) as exc:
        print(
            f"cannot reach the emulator at {endpoint}: {_terminal_safe(str(exc))}", file=sys.stderr
        )
        return 1
    answer = _decoded(raw)
    if status != 200:
        print(
            f"maintenance of job {job_id} refused: {_refusal(status, answer, raw)}", file=sys.stderr
        )
        return 1
    problem = _not_a_maintenance_answer(answer)
    if problem is not None:
        print(
            f"maintenance of job {job_id}: {endpoint} did not answer as the emulator does "
            f"({problem}): {_shown(raw)}",
            file=sys.stderr,
        )
        return 1
    _print_maintenance(job_id, args.replica, answer)
    return 0


def _refusal(status: int, answer: Any, raw: bytes) -> str:
    """Why the service refused: its error's message, or what it answered."""
    error = answer.get("error") if isinstance(answer, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if isinstance(message, str) and message:
        return _terminal_safe(message[:500])
    return f"HTTP {status}: {_shown(raw)}"


def _json_kind(value: Any) -> str:
    if value is _NOT_JSON:
        return "not JSON"
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    return "JSON " + names.get(type(value), "null" if value is None else "a number")


def _count_or_null(value: Any) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool))


def _replica_record(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("replica"), str)
        and _count_or_null(value.get("pid", "missing"))
        and _count_or_null(value.get("restarts", "missing"))
        and isinstance(value.get("logPath"), str)
    )


def _not_a_maintenance_answer(answer: Any) -> str | None:
    """What keeps ``answer`` from being the emulator's account of a maintenance event, or None."""
    if not isinstance(answer, dict):
        return _json_kind(answer)
    for key in ("previousPid", "previousExitCode"):
        if not _count_or_null(answer.get(key, "missing")):
            return f"{key}: expected a number"
    if not isinstance(answer.get("jobRestarted", False), bool):
        return "jobRestarted: expected true or false"
    restarted = answer.get("restartedReplicas")
    if not isinstance(restarted, list) or not restarted:
        return "restartedReplicas: expected the replicas restarted"
    if not all(_replica_record(r) for r in restarted):
        return "restartedReplicas: expected replica records"
    return None


def _print_maintenance(job_id: str, replica: str, answer: dict[str, Any]) -> None:
    """What a maintenance event did (``answer`` checked by _not_a_maintenance_answer)."""
    print(f"job {job_id}: host maintenance event on {_terminal_safe(replica)}")
    print(
        f"  stopped its process {answer['previousPid']} (exit status {answer['previousExitCode']})"
    )
    if answer.get("jobRestarted"):
        print("  scheduling.restart_job_on_worker_restart is set: the whole job was restarted")
    for r in answer["restartedReplicas"]:
        print(
            f"  restarted {_terminal_safe(r['replica'])}: pid {r['pid']}, "
            f"restarts {r['restarts']}, log {_terminal_safe(r['logPath'])}"
        )
