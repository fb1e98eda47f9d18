"""The plugin's gRPC server: the SDK's, less the tracebacks, with the provider imported on first
use.

``pulumi.provider.experimental.server.ProviderServicer`` answers any exception of an operation
with the exception's text followed by its Python traceback, which the engine prints to the
user. ``CleanServicer`` answers with the message alone: the SDK re-raises inside its ``except``
block, so the original exception is the re-raised one's ``__context__``; its text (already
redacted by the provider, ``GpuTrainingProvider._guarded``) is the gRPC status's details.

``DeferredProvider`` answers ``GetSchema`` from the schema file and imports the provider (the
lifecycle core, its models and catalog: 0.15 s of CPU) only when another call comes. The engine
starts the plugin once more in each ``pulumi up`` and ``preview`` of a YAML or other non-Python
program, for the language host to read the schema, and keeps that process to the end of the
command: it never imports the core.

``DeferredProvider`` also answers check failures in the engine's form (``engine_failures``): the
engine prints a failure that names a property as ``property P value V has a problem``, with V
the resource's top-level input named P (``pkg/resource/deploy``, ``issueCheckFailures``); a
path (``jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount``) is no such key and printed
as ``{<nil>}``, a top-level one as its whole value. Each failure goes as the path, then the
reason, in the failure's text, which the engine prints as it is.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
from pulumi.provider.experimental.provider import (
    CheckFailure,
    CheckRequest,
    CheckResponse,
    ConfigureRequest,
    ConfigureResponse,
    CreateRequest,
    CreateResponse,
    DeleteRequest,
    DiffRequest,
    DiffResponse,
    GetSchemaRequest,
    GetSchemaResponse,
    InvokeRequest,
    InvokeResponse,
    Provider,
    ReadRequest,
    ReadResponse,
    UpdateRequest,
    UpdateResponse,
)
from pulumi.provider.experimental.server import ProviderServicer
from pulumi.runtime._grpc_settings import _GRPC_CHANNEL_OPTIONS
from pulumi.runtime.proto import provider_pb2_grpc

from ..lifecycle._engine_watch import watch_engine
from ..lifecycle._interrupt import stop_waits_at_exit
from ..rules._violations import problem_text
from ._schema import VERSION, load_schema

if TYPE_CHECKING:
    from ._provider import GpuTrainingProvider

__all__ = ["CleanServicer", "DeferredProvider", "engine_failures", "main", "message_of"]


def message_of(exc: BaseException) -> str:
    """What the user sees of an operation's failure: the message, never a traceback."""
    original = exc.__context__ if exc.__context__ is not None else exc
    return str(original) or type(original).__name__


def _clean(
    method: Callable[[Any, Any, Any], Awaitable[Any]],
) -> Callable[[Any, Any, Any], Awaitable[Any]]:
    async def serve(self: Any, request: Any, context: Any) -> Any:
        try:
            return await method(self, request, context)
        except NotImplementedError:
            raise
        except Exception as exc:
            await context.abort(grpc.StatusCode.UNKNOWN, message_of(exc))

    serve.__name__ = method.__name__
    return serve


def engine_failures(response: CheckResponse) -> CheckResponse:
    """``response`` with each failure's property path at the head of its reason, and no
    property for the engine to look up (see the module's docstring)."""
    if not response.failures:
        return response
    failures = [
        CheckFailure("", problem_text(f.reason, path=f.property)) for f in response.failures
    ]
    return CheckResponse(inputs=response.inputs, failures=failures)


class CleanServicer(ProviderServicer):
    """The SDK's servicer, whose errors carry the message alone."""

    Check = _clean(ProviderServicer.Check)
    CheckConfig = _clean(ProviderServicer.CheckConfig)
    Configure = _clean(ProviderServicer.Configure)
    Diff = _clean(ProviderServicer.Diff)
    Create = _clean(ProviderServicer.Create)
    Read = _clean(ProviderServicer.Read)
    Update = _clean(ProviderServicer.Update)
    Delete = _clean(ProviderServicer.Delete)
    Invoke = _clean(ProviderServicer.Invoke)
    GetSchema = _clean(ProviderServicer.GetSchema)


class DeferredProvider(Provider):
    """``GpuTrainingProvider``, imported and made on the first call that needs it."""

    def __init__(self, engine: str = "") -> None:
        self._lock = threading.Lock()
        self._engine = engine
        self._made: GpuTrainingProvider | None = None

    @property
    def provider(self) -> GpuTrainingProvider:
        """The provider (made now if it is not yet)."""
        with self._lock:  # held across one import, before any operation
            if self._made is None:
                from ..lifecycle._progress import set_line_sink
                from ._log import EngineLog
                from ._provider import GpuTrainingProvider

                if self._engine:  # the core's lines to the engine: a plugin's stderr is debug
                    set_line_sink(EngineLog(self._engine).line)
                self._made = GpuTrainingProvider(self._engine)
            return self._made

    async def get_schema(self, request: GetSchemaRequest) -> GetSchemaResponse:
        return GetSchemaResponse(schema=load_schema())

    async def check_config(self, request: CheckRequest) -> CheckResponse:
        return engine_failures(await self.provider.check_config(request))

    async def configure(self, request: ConfigureRequest) -> ConfigureResponse:
        return await self.provider.configure(request)

    async def cancel(self) -> None:
        if self._made is not None:  # nothing runs before the provider is made
            await self._made.cancel()

    async def check(self, request: CheckRequest) -> CheckResponse:
        return engine_failures(await self.provider.check(request))

    async def diff(self, request: DiffRequest) -> DiffResponse:
        return await self.provider.diff(request)

    async def invoke(self, request: InvokeRequest) -> InvokeResponse:
        return await self.provider.invoke(request)

    async def create(self, request: CreateRequest) -> CreateResponse:
        return await self.provider.create(request)

    async def read(self, request: ReadRequest) -> ReadResponse:
        return await self.provider.read(request)

    async def update(self, request: UpdateRequest) -> UpdateResponse:
        return await self.provider.update(request)

    async def delete(self, request: DeleteRequest) -> None:
        await self.provider.delete(request)


def main(argv: list[str] | None = None) -> None:
    """``pulumi-resource-gpu-training ENGINE_ADDRESS``: serve, print the port, wait."""
    args = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description="The gpu-training Pulumi resource provider")
    parser.add_argument("engine", nargs="?", default="", help="the Pulumi engine's address")
    parser.add_argument("--logflow", action="store_true")
    parser.add_argument("--logtostderr", action="store_true")
    parser.add_argument("-v", type=int, default=0)
    known, _ = parser.parse_known_args(args)
    # A killed engine leaves this process waiting in a create: end with it, as the dynamic
    # provider does (the job is adopted by the next `pulumi up`).
    watch_engine(anywhere=True)
    # SIGINT (the engine stops a plugin with it, then SIGKILL) ends the server; the waits of
    # its operations end with it, so no worker thread keeps the process alive.
    stop_waits_at_exit()

    async def serve() -> None:
        server = grpc.aio.server(options=_GRPC_CHANNEL_OPTIONS)
        servicer = CleanServicer(args, VERSION, DeferredProvider(known.engine), known.engine)
        provider_pb2_grpc.add_ResourceProviderServicer_to_server(servicer, server)
        port = server.add_insecure_port(address="127.0.0.1:0")
        await server.start()
        sys.stdout.write(f"{port}\n")
        sys.stdout.flush()
        await server.wait_for_termination()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())
