"""Our Python language host (scripts/pulumi-wrapper) as the engine drives it: started in a
process group of its own, asked to Run a program, then stopped with SIGINT to the whole group
(sdk/go/common/resource/plugin's Kill: ``InterruptChildren``, then SIGKILL after 5 s).

A program still running at that moment (one reporting a failed step, say) must end without a
word: Python's default handler made a KeyboardInterrupt of it, and its traceback reached the
engine's output after a clear check failure."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc  # type: ignore[import-untyped]
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, resource_pb2, resource_pb2_grpc

PROGRAM = """\
import os, sys, time
from pathlib import Path

Path("pid").write_text(str(os.getpid()))
Path("path").write_text(repr(sys.path))
time.sleep(120)
"""


class _Monitor(resource_pb2_grpc.ResourceMonitorServicer):
    """What the program asks of the engine before its own code runs: no features, and the
    stack's registration."""

    def GetDeploymentInfo(self, request: object, context: object) -> object:
        return resource_pb2.DeploymentInfo()

    def SupportsFeature(self, request: object, context: object) -> object:
        return resource_pb2.SupportsFeatureResponse(hasSupport=False)

    def RegisterResource(self, request: object, context: object) -> object:
        kind, name = request.type, request.name  # type: ignore[attr-defined]
        return resource_pb2.RegisterResourceResponse(urn=f"urn:pulumi:s::p::{kind}::{name}")

    def RegisterResourceOutputs(self, request: object, context: object) -> object:
        return empty_pb2.Empty()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its dead parent) counts as gone.
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def _wait_for(what: str, ready: object, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(ready) and ready():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {seconds}s waiting for {what}")


def test_sigint_to_the_host_group_ends_a_running_program_quietly(
    pulumi_bin_dir: Path, tmp_path: Path
) -> None:
    program = tmp_path / "program"
    program.mkdir()
    (program / "__main__.py").write_text(PROGRAM)
    monitor = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    resource_pb2_grpc.add_ResourceMonitorServicer_to_server(_Monitor(), monitor)
    monitor_port = monitor.add_insecure_port("127.0.0.1:0")
    monitor.start()
    stderr_path = tmp_path / "host.stderr"
    with stderr_path.open("wb") as stderr:
        host = subprocess.Popen(
            [str(pulumi_bin_dir / "pulumi-language-python")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,  # as the engine starts a plugin: a process group of its own
        )
    try:
        assert host.stdout is not None
        port = int(host.stdout.readline())
        options = struct_pb2.Struct()
        options.update({"toolchain": "pip", "virtualenv": sys.prefix})
        request = language_pb2.RunRequest(
            project="p",
            stack="s",
            pwd=str(program),
            program=".",
            monitor_address=f"127.0.0.1:{monitor_port}",
            info=language_pb2.ProgramInfo(
                root_directory=str(program), program_directory=str(program), options=options
            ),
        )
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        outcome: list[object] = []
        run = threading.Thread(
            target=lambda: outcome.append(
                _call(language_pb2_grpc.LanguageRuntimeStub(channel), request)
            ),
            daemon=True,
        )
        run.start()
        pid_file = program / "pid"
        _wait_for("the program to start", lambda: pid_file.exists() and pid_file.read_text(), 60)
        pid = int(pid_file.read_text())
        # The launcher runs as `python FILE` would: its folder is on sys.path, after the
        # program's "." (runpy's), and the current folder is not there for a second time.
        launcher = pulumi_bin_dir / "pulumi-language-python-exec"
        path = eval((program / "path").read_text())
        assert path[0] == "." and Path(path[1]) == launcher.resolve().parent, path
        assert "" not in path, path

        os.killpg(host.pid, signal.SIGINT)
        host.wait(timeout=30)
        _wait_for("the program to end", lambda: not _alive(pid), 10)
        channel.close()
        run.join(timeout=10)
    finally:
        monitor.stop(grace=None)
        if host.poll() is None:
            os.killpg(host.pid, signal.SIGKILL)
            host.wait()
    said = stderr_path.read_text(errors="replace")
    assert "KeyboardInterrupt" not in said and "Traceback" not in said, said


def _call(stub: language_pb2_grpc.LanguageRuntimeStub, request: object) -> object:
    try:
        return stub.Run(request, timeout=120)
    except grpc.RpcError as error:  # the host went away mid-call: what this test does to it
        return error
