"""Warnings the engine shows: the plugin logs through the engine's ``Log`` service.

A plugin's stderr is a debug message to the engine (only the dynamic provider's host is shown
at the default verbosity, ``docs/dynamic.md`` "Progress lines and profiling"), so a warning the
user must see (the stack's state could not be read, a quota is short under ``quota: warn``) goes to
the engine's address, which the engine passes the plugin as its first argument. Without one
(a test calling the provider directly) the line goes to stderr. The plugin's process sends the
core's own lines (progress of a wait, a job left running or not in the stack) the same way,
as info messages of the stack (``EngineLog.line``, ``components.plugin._server``), as the
engine shows the dynamic provider host's stderr.
"""

from __future__ import annotations

import threading

from ..lifecycle._progress import stderr_line

__all__ = ["EngineLog"]

_LOG_TIMEOUT = 30.0


class EngineLog:
    """Log messages to the engine at ``address`` (``host:port``; empty: stderr)."""

    def __init__(self, address: str = "") -> None:
        self._address = address
        self._stub: object | None = None
        self._lock = threading.Lock()

    def warn(self, message: str, urn: str = "") -> None:
        """A warning on ``urn``'s resource (the stack's where empty); never raises."""
        self._send("warning", message, urn)

    def info(self, message: str, urn: str = "") -> None:
        """An info message on ``urn``'s resource; never raises."""
        self._send("info", message, urn)

    def line(self, text: str) -> None:
        """One of the core's lines (``components.lifecycle._progress.write_line``: progress
        of a wait, a job left running, a stray): an info message of the stack; raises when
        the engine cannot be reached (``write_line`` then writes it to stderr)."""
        if not self._address:
            raise ConnectionError("no engine to log to")
        self._log("info", text, "")

    def _send(self, severity: str, message: str, urn: str) -> None:
        if self._address:
            try:
                self._log(severity, message, urn)
                return
            except Exception:  # the engine is gone or refuses: the line goes to stderr
                pass
        stderr_line(f"{severity}: {message}")

    def _log(self, severity: str, message: str, urn: str) -> None:
        import grpc  # type: ignore[import-untyped]
        from pulumi.runtime.proto import engine_pb2, engine_pb2_grpc

        with self._lock:
            if self._stub is None:
                self._stub = engine_pb2_grpc.EngineStub(grpc.insecure_channel(self._address))
            stub = self._stub
        level = engine_pb2.WARNING if severity == "warning" else engine_pb2.INFO
        request = engine_pb2.LogRequest(severity=level, message=message, urn=urn)
        stub.Log(request, timeout=_LOG_TIMEOUT)  # type: ignore[attr-defined]
