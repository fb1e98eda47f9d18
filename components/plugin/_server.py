"""The plugin's gRPC server: the SDK's, less the tracebacks.

``pulumi.provider.experimental.server.ProviderServicer`` answers any exception of an operation
with the exception's text followed by its Python traceback, which the engine prints to the
user. ``CleanServicer`` answers with the message alone: the SDK re-raises inside its ``except``
block, so the original exception is the re-raised one's ``__context__``; its text (already
redacted by the provider, ``GpuTrainingProvider._guarded``) is the gRPC status's details.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
from pulumi.provider.experimental.server import ProviderServicer
from pulumi.runtime._grpc_settings import _GRPC_CHANNEL_OPTIONS
from pulumi.runtime.proto import provider_pb2_grpc

from ..lifecycle._engine_watch import watch_engine
from ..lifecycle._progress import set_line_sink
from ._log import EngineLog
from ._provider import GpuTrainingProvider
from ._schema import VERSION

__all__ = ["CleanServicer", "main", "message_of"]


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

    async def serve() -> None:
        server = grpc.aio.server(options=_GRPC_CHANNEL_OPTIONS)
        provider = GpuTrainingProvider(known.engine)
        if known.engine:  # the core's lines to the engine: a plugin's stderr is a debug message
            set_line_sink(EngineLog(known.engine).line)
        servicer = CleanServicer(args, VERSION, provider, known.engine)
        provider_pb2_grpc.add_ResourceProviderServicer_to_server(servicer, server)
        port = server.add_insecure_port(address="127.0.0.1:0")
        await server.start()
        sys.stdout.write(f"{port}\n")
        sys.stdout.flush()
        await server.wait_for_termination()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())
