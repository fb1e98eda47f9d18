"""Errors in the shape Google APIs use, so ``google.api_core`` raises the matching exception."""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "RPC_CANCELLED",
    "RPC_DEADLINE_EXCEEDED",
    "RPC_FAILED_PRECONDITION",
    "RPC_INTERNAL",
    "RPC_INVALID_ARGUMENT",
    "RPC_RESOURCE_EXHAUSTED",
    "RPC_UNAVAILABLE",
    "ApiError",
    "failed_precondition",
    "internal",
    "invalid_argument",
    "not_found",
    "unavailable",
]

# google.rpc.Code values used by the service (job.error.code and operation errors).
RPC_CANCELLED = 1
RPC_INVALID_ARGUMENT = 3
RPC_DEADLINE_EXCEEDED = 4
RPC_NOT_FOUND = 5
RPC_RESOURCE_EXHAUSTED = 8
RPC_FAILED_PRECONDITION = 9
RPC_INTERNAL = 13
RPC_UNAVAILABLE = 14


class ApiError(Exception):
    """An error answered as ``{"error": {"code", "message", "status"}}`` with HTTP ``http_code``.

    The REST client picks the exception class from the HTTP code (400 → ``BadRequest``, whose
    gRPC-flavoured subclass is ``InvalidArgument``; 404 → ``NotFound``; 409 → ``Conflict``;
    429 → ``TooManyRequests``; 503 → ``ServiceUnavailable``).
    """

    def __init__(self, http_code: int, status: str, message: str) -> None:
        super().__init__(message)
        self.http_code = http_code
        self.status = status
        self.message = message

    def body(self) -> bytes:
        """The JSON body of the error response."""
        payload: dict[str, Any] = {
            "error": {"code": self.http_code, "message": self.message, "status": self.status}
        }
        return json.dumps(payload).encode()


def invalid_argument(message: str) -> ApiError:
    """400 INVALID_ARGUMENT: the request itself is wrong."""
    return ApiError(400, "INVALID_ARGUMENT", message)


def failed_precondition(message: str) -> ApiError:
    """400 FAILED_PRECONDITION: the request is valid but not in the resource's current state."""
    return ApiError(400, "FAILED_PRECONDITION", message)


def not_found(message: str) -> ApiError:
    """404 NOT_FOUND."""
    return ApiError(404, "NOT_FOUND", message)


def already_exists(message: str) -> ApiError:
    """409 ALREADY_EXISTS."""
    return ApiError(409, "ALREADY_EXISTS", message)


def aborted(message: str) -> ApiError:
    """409 ABORTED: a concurrency conflict; retrying may succeed."""
    return ApiError(409, "ABORTED", message)


def resource_exhausted(message: str) -> ApiError:
    """429 RESOURCE_EXHAUSTED."""
    return ApiError(429, "RESOURCE_EXHAUSTED", message)


def unavailable(message: str) -> ApiError:
    """503 UNAVAILABLE."""
    return ApiError(503, "UNAVAILABLE", message)


def internal(message: str) -> ApiError:
    """500 INTERNAL."""
    return ApiError(500, "INTERNAL", message)
