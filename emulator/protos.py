"""Conversions between the library's job / Operation protos and JSON, and the kinds of job.

All JSON of jobs goes through ``google.protobuf.json_format`` on the library's own message types,
so the wire format is whatever the real client expects (camelCase names, int64 as strings, enums
as names or integers depending on ``$alt``). A :class:`Kind` names one REST collection of jobs
(``customJobs``, ``hyperparameterTuningJobs``) and the message type stored for it; both kinds
share state, times, labels and error, so everything else here serves both.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from google.cloud.aiplatform_v1 import types as aip
from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor

from . import errors

__all__ = [
    "CUSTOM_JOB",
    "KINDS",
    "STATE_NUMBERS",
    "TERMINAL_STATES",
    "TUNING_JOB",
    "JobState",
    "Kind",
    "delete_operation_json",
    "dump_job",
    "is_terminal",
    "json_integer",
    "kind_of",
    "load_job",
    "new_job_pb",
    "now_ts",
    "parse_job",
    "query_integer",
    "set_error",
    "set_state",
    "state_name",
    "to_dict",
    "ts_seconds",
]

JobState = aip.JobState

TERMINAL_STATES = frozenset(
    {
        JobState.JOB_STATE_SUCCEEDED,
        JobState.JOB_STATE_FAILED,
        JobState.JOB_STATE_CANCELLED,
        JobState.JOB_STATE_EXPIRED,
        JobState.JOB_STATE_PARTIALLY_SUCCEEDED,
    }
)

# "JOB_STATE_RUNNING" -> 3, for every state the library knows.
STATE_NUMBERS: dict[str, int] = {name: int(v) for name, v in JobState.__members__.items()}

_TOO_DEEP = "Invalid JSON payload received. The JSON is nested too deeply."


@dataclass(frozen=True)
class Kind:
    """One REST collection of jobs and the message type stored for it."""

    collection: str  # the path segment and the list response's field: "customJobs"
    type_name: str  # the message's name, as Vertex's messages say it: "CustomJob"
    pb: Any  # the raw protobuf message class


CUSTOM_JOB = Kind("customJobs", "CustomJob", type(aip.CustomJob.pb(aip.CustomJob())))
TUNING_JOB = Kind(
    "hyperparameterTuningJobs",
    "HyperparameterTuningJob",
    type(aip.HyperparameterTuningJob.pb(aip.HyperparameterTuningJob())),
)
# By collection, which is also what the store keeps in a job's row.
KINDS: dict[str, Kind] = {k.collection: k for k in (CUSTOM_JOB, TUNING_JOB)}


def kind_of(job: Any) -> Kind:
    """The kind of a raw job message."""
    return next(k for k in KINDS.values() if isinstance(job, k.pb))


def new_job_pb(kind: Kind = CUSTOM_JOB) -> Any:
    """An empty raw protobuf message of ``kind`` (a ``google.cloud.aiplatform.v1.CustomJob``)."""
    return kind.pb()


_JSON_INTEGER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", re.ASCII)
_INTEGER_TYPES = frozenset(
    {
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED32,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED32,
        FieldDescriptor.TYPE_SFIXED64,
    }
)


def json_integer(value: Any) -> int | None:
    """A proto3 JSON integer (int32, int64...): a JSON number, or a string of one, with no
    fraction; None for anything else.

    Python's ``int()`` (and the protobuf runtime, which calls it) also reads ``"٣"`` (a digit
    of another script), ``"3_000"`` and, in a string, no spaces but otherwise anything
    ``int`` takes; the API reads decimal ASCII digits only (exponent forms included, as the
    proto3 JSON mapping says).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if not isinstance(value, str) or len(value) > 64 or not _JSON_INTEGER.fullmatch(value):
        return None
    number = Decimal(value)
    if number.adjusted() > 20 or number != number.to_integral_value():
        return None  # past any int64 (checked before an exponent of 1e999999999 is worked out)
    return int(number)


_QUERY_INTEGER = re.compile(r"-?[0-9]{1,4000}", re.ASCII)


def query_integer(text: str) -> int | None:
    """An integer in a query parameter (``pageSize``): ASCII decimal digits, nothing else
    (``int()`` also takes ``"٣"``, ``"3_0"`` and spaces around); None otherwise."""
    return int(text) if _QUERY_INTEGER.fullmatch(text) else None


def _integer_problem(data: Any, descriptor: Any, path: str) -> str | None:
    """The first integer field of ``data`` (JSON of a ``descriptor`` message) holding a string
    that is no integer, as ``path.field: 'value'``; None when there is none."""
    if not isinstance(data, dict):
        return None
    fields = {**descriptor.fields_by_camelcase_name, **descriptor.fields_by_name}
    for key, value in data.items():
        field = fields.get(key)
        if field is None:
            continue  # ParseDict names it
        target = field
        items: list[Any] = value if isinstance(value, list) else [value]
        message = field.message_type
        if message is not None and message.GetOptions().map_entry:
            target = message.fields_by_name["value"]
            items = list(value.values()) if isinstance(value, dict) else []
            message = target.message_type
        for item in items:
            if target.type in _INTEGER_TYPES and isinstance(item, str):
                if json_integer(item) is None:
                    return f"{path}{key}: {item[:40]!r}"
            elif message is not None and not message.full_name.startswith("google.protobuf."):
                found = _integer_problem(item, message, f"{path}{key}.")
                if found:
                    return found
    return None


def parse_job(text: str | bytes, kind: Kind = CUSTOM_JOB) -> Any:
    """Parse job JSON as sent by a client; unknown fields are an INVALID_ARGUMENT.

    So is JSON nested deeper than Python's recursion limit (about 1000 levels; a CustomJob needs
    fewer than 10): RecursionError is not a ValueError and would otherwise be a 500.
    """
    try:
        data = json.loads(text or b"{}")
    except ValueError as exc:
        raise errors.invalid_argument(f"Invalid JSON payload received. {exc}") from None
    except RecursionError:
        raise errors.invalid_argument(_TOO_DEEP) from None
    if not isinstance(data, dict):
        raise errors.invalid_argument(
            f"Invalid JSON payload received. Expected a {kind.type_name} object."
        )
    try:
        # JSON may escape half a surrogate pair (\ud800), which no UTF-8 string can hold; the
        # protobuf runtime fails on such a string with a SystemError, so refuse it first.
        json.dumps(data, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise errors.invalid_argument(
            "Invalid JSON payload received. A string holds an unpaired surrogate (\\ud800 to "
            "\\udfff), which is not valid Unicode."
        ) from None
    except RecursionError:
        raise errors.invalid_argument(_TOO_DEEP) from None
    msg = new_job_pb(kind)
    try:
        problem = _integer_problem(data, msg.DESCRIPTOR, "")
    except RecursionError:
        raise errors.invalid_argument(_TOO_DEEP) from None
    if problem:
        raise errors.invalid_argument(
            f"Invalid JSON payload received. {problem} is not an integer (decimal digits)."
        )
    try:
        json_format.ParseDict(data, msg, ignore_unknown_fields=False)
    except json_format.ParseError as exc:
        raise errors.invalid_argument(f"Invalid JSON payload received. {exc}") from None
    except RecursionError:
        raise errors.invalid_argument(_TOO_DEEP) from None
    except Exception as exc:
        # The protobuf runtime on a payload it did not expect (a string where a message belongs,
        # say) may raise anything; it is still the payload that is wrong.
        raise errors.invalid_argument(
            f"Invalid JSON payload received. It does not fit a {kind.type_name} "
            f"({type(exc).__name__})."
        ) from None
    return msg


def load_job(text: str, kind: Kind = CUSTOM_JOB) -> Any:
    """Parse job JSON written by this service (trusted, so no error mapping)."""
    msg = new_job_pb(kind)
    json_format.Parse(text, msg)
    return msg


def dump_job(job: Any) -> str:
    """Serialize a job for storage (enum names, compact)."""
    text: str = json_format.MessageToJson(job, indent=None)
    return text


def to_dict(msg: Any, *, int_enums: bool) -> dict[str, Any]:
    """A message as the JSON object the REST client expects."""
    result: dict[str, Any] = json_format.MessageToDict(msg, use_integers_for_enums=int_enums)
    return result


def state_name(state: int) -> str:
    """``JOB_STATE_RUNNING`` for 3, and so on."""
    name: str = JobState(state).name
    return name


def now_ts(field: Any, at: float | None = None) -> None:
    """Set a ``google.protobuf.Timestamp`` field to ``at`` (default: now)."""
    t = time.time() if at is None else at
    field.seconds = int(t)
    field.nanos = int((t - int(t)) * 1e9)


def ts_seconds(field: Any) -> float:
    """A Timestamp as float seconds since the epoch."""
    return float(field.seconds) + float(field.nanos) / 1e9


def set_state(job: Any, state: int, *, at: float | None = None) -> None:
    """Move ``job`` to ``state`` and keep the output-only times consistent with it."""
    t = time.time() if at is None else at
    job.state = state
    now_ts(job.update_time, t)
    if state == JobState.JOB_STATE_RUNNING and not job.HasField("start_time"):
        now_ts(job.start_time, t)
    if state in TERMINAL_STATES:
        now_ts(job.end_time, t)


def set_error(job: Any, code: int, message: str) -> None:
    """Fill ``job.error`` (a google.rpc.Status)."""
    job.error.code = code
    job.error.message = message


def is_terminal(state: int) -> bool:
    """True when a job in ``state`` will never change again."""
    return state in TERMINAL_STATES


def delete_operation_json(name: str, *, done: bool, created: float) -> str:
    """A ``google.longrunning.Operation`` for deleting a job (any kind), as JSON.

    Metadata is a ``DeleteOperationMetadata``; a done operation carries an ``Empty`` response,
    which is what ``JobServiceClient.delete_custom_job(...).result()`` unpacks.
    """
    from google.longrunning import operations_pb2
    from google.protobuf import empty_pb2

    meta = aip.DeleteOperationMetadata.pb(aip.DeleteOperationMetadata())
    now_ts(meta.generic_metadata.create_time, created)
    now_ts(meta.generic_metadata.update_time)
    op = operations_pb2.Operation(name=name, done=done)
    op.metadata.Pack(meta)
    if done:
        op.response.Pack(empty_pb2.Empty())
    result: str = json_format.MessageToJson(op, indent=None)
    return result
