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
    "field_violations",
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
    """An error answered as ``{"error": {"code", "message", "status", "details"}}`` with HTTP
    ``http_code`` (``details`` only when there are some: ``google.rpc`` messages in their JSON
    form, each with its ``@type``).

    The REST client picks the exception class from the HTTP code (400 → ``BadRequest``, whose
    gRPC-flavoured subclass is ``InvalidArgument``; 404 → ``NotFound``; 409 → ``Conflict``;
    429 → ``TooManyRequests``; 503 → ``ServiceUnavailable``).
    """

    def __init__(
        self,
        http_code: int,
        status: str,
        message: str,
        details: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(message)
        self.http_code = http_code
        self.status = status
        self.message = message
        self.details = details or []

    def body(self) -> bytes:
        """The JSON body of the error response."""
        error: dict[str, Any] = {
            "code": self.http_code,
            "message": self.message,
            "status": self.status,
        }
        if self.details:
            error["details"] = self.details
        return json.dumps({"error": error}).encode()


def invalid_argument(message: str) -> ApiError:
    """400 INVALID_ARGUMENT: the request itself is wrong."""
    return ApiError(400, "INVALID_ARGUMENT", message)


BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest"


def field_violations(found: list[tuple[str, str]]) -> ApiError:
    r"""400 INVALID_ARGUMENT listing ``(field, description)`` pairs the way Vertex AI does.

    Vertex AI's create answers a job that breaks its rules with one message listing every
    violation, ``List of found errors:\t1.Field: <field>; Message: <description>\t2.Field: ...``,
    and a ``google.rpc.BadRequest`` detail with one ``fieldViolations`` entry per violation.
    Real answers quoted in public issues (field paths relative to the job, tab separators):

    * https://github.com/PrefectHQ/prefect/issues/5940 (2022-06): ``400 List of found
      errors:\t1.Field: job_spec.worker_pool_specs[0].container_spec.env[6].value; Message: Env
      vars cannot contain ...\t [field_violations { field: "job_spec.worker_pool_specs[0]...``;
    * https://github.com/prefect-archive/prefect-gcp/issues/175 (2023-04): ``List of found
      errors:\t1.Field: job_spec.worker_pool_specs[0].machine_spec.accelerator_type; Message:
      Both `accelerator_type` and `accelerator_count` should be specified or none.\t``;
    * the ``@type``/``fieldViolations`` JSON shape of the detail in a REST answer:
      https://github.com/GoogleCloudPlatform/magic-modules/pull/15513 (2026-04, a Vertex AI
      PipelineJob create).
    """
    listed = "".join(
        f"{i}.Field: {path}; Message: {text}\t" for i, (path, text) in enumerate(found, 1)
    )
    details = [
        {
            "@type": BAD_REQUEST_TYPE,
            "fieldViolations": [{"field": path, "description": text} for path, text in found],
        }
    ]
    return ApiError(400, "INVALID_ARGUMENT", f"List of found errors:\t{listed}", details)


def failed_precondition(message: str) -> ApiError:
    """400 FAILED_PRECONDITION: the request is valid but not in the resource's current state."""
    return ApiError(400, "FAILED_PRECONDITION", message)


def permission_denied(message: str) -> ApiError:
    """403 PERMISSION_DENIED: the caller may not do or read this."""
    return ApiError(403, "PERMISSION_DENIED", message)


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
