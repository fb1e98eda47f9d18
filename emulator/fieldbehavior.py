"""Field behaviours of the v1 job messages (REQUIRED, OUTPUT_ONLY, IMMUTABLE), read from the client.

Vertex AI's protos annotate fields with ``google.api.field_behavior``. The ``aiplatform_v1``
client ships its types as proto-plus classes whose generated descriptors keep no field options,
so the annotation is read where the generator put it: the start of each field's documentation
("Required. ...", "Output only. ...", "Optional. Immutable. ..."; the googleapis convention
writes the behaviour there, AIP-203). A descriptor that does carry the extension is read first.

What the behaviours mean for a request, from ``google/api/field_behavior.proto``
(https://github.com/googleapis/googleapis/blob/master/google/api/field_behavior.proto):

* OUTPUT_ONLY: "including the field in a request does nothing (the server must ignore it and
  must not throw an error as a result of the field's presence)": :func:`clear_output_only`;
* REQUIRED: "failure to do so will cause an error (usually INVALID_ARGUMENT)":
  :func:`missing_required`. Proto3 numbers and booleans have no presence (0 is "not set" and a
  value alike), so a required number is left to the rules about its range; strings, enums
  (UNSPECIFIED), messages and repeated fields are checked.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from google.api import field_behavior_pb2
from google.protobuf.descriptor import FieldDescriptor

__all__ = ["behaviours", "clear_output_only", "missing_required"]

REQUIRED = "REQUIRED"
OUTPUT_ONLY = "OUTPUT_ONLY"
IMMUTABLE = "IMMUTABLE"
OPTIONAL = "OPTIONAL"

_WORDS = {
    "Required.": REQUIRED,
    "Output only.": OUTPUT_ONLY,
    "Immutable.": IMMUTABLE,
    "Optional.": OPTIONAL,
}
_LEADING = re.compile(r"^(?:\s*(?:" + "|".join(re.escape(w) for w in _WORDS) + r"))+")
# "    name (type):" opens a field's entry in the Attributes section of a proto-plus docstring.
_ENTRY = re.compile(r"^    (?P<name>\w+) \([^\n]*\):\n(?P<doc>(?:        [^\n]*\n?)+)", re.M)


def _from_doc(cls: Any) -> dict[str, frozenset[str]]:
    doc = getattr(cls, "__doc__", None) or ""
    _, _, attributes = doc.partition("Attributes:")
    found: dict[str, frozenset[str]] = {}
    for m in _ENTRY.finditer(attributes):
        text = " ".join(m["doc"].split())
        lead = _LEADING.match(text)
        if lead is not None:
            found[m["name"]] = frozenset(_WORDS[w] for w in _WORDS if w in lead.group())
    return found


def _from_descriptor(descriptor: Any) -> dict[str, frozenset[str]]:
    found: dict[str, frozenset[str]] = {}
    for field in descriptor.fields:
        values = field.GetOptions().Extensions[field_behavior_pb2.field_behavior]
        if values:
            found[field.name] = frozenset(field_behavior_pb2.FieldBehavior.Name(v) for v in values)
    return found


@functools.cache
def behaviours(cls: Any) -> dict[str, frozenset[str]]:
    """Field name -> its behaviours, for the proto-plus class ``cls`` (fields without: absent)."""
    pb = cls.pb() if hasattr(cls, "pb") else cls
    return _from_descriptor(pb.DESCRIPTOR) or _from_doc(cls)


def _repeated(field: Any) -> bool:
    # ``label`` is deprecated in newer protobuf releases, which have ``is_repeated``.
    flag = getattr(field, "is_repeated", None)
    return bool(flag) if flag is not None else field.label == FieldDescriptor.LABEL_REPEATED


def _child_class(cls: Any, name: str) -> Any | None:
    """The proto-plus class of message field ``name`` of ``cls`` (None: not a proto-plus one)."""
    meta = getattr(cls, "meta", None)
    field = meta.fields.get(name) if meta is not None else None
    child = getattr(field, "message", None)
    return child if child is not None and hasattr(child, "meta") else None


def _messages(pb: Any, cls: Any) -> list[tuple[str, Any, Any, int | None]]:
    """(name, message, its proto-plus class, index) of each message set in ``pb``, maps aside."""
    out: list[tuple[str, Any, Any, int | None]] = []
    for field, value in pb.ListFields():
        if field.type != FieldDescriptor.TYPE_MESSAGE or field.message_type.GetOptions().map_entry:
            continue
        child = _child_class(cls, field.name)
        if child is None:
            continue
        if _repeated(field):
            out.extend((field.name, item, child, i) for i, item in enumerate(value))
        else:
            out.append((field.name, value, child, None))
    return out


def clear_output_only(pb: Any, cls: Any) -> None:
    """Clear every OUTPUT_ONLY field of ``pb`` (a raw message of proto-plus class ``cls``),
    at any depth: the server ignores what a client sends in them."""
    marked = behaviours(cls)
    for field, _ in pb.ListFields():
        if OUTPUT_ONLY in marked.get(field.name, ()):
            pb.ClearField(field.name)
    for _, message, child, _ in _messages(pb, cls):
        clear_output_only(message, child)


def _is_set(pb: Any, field: Any) -> bool | None:
    """Whether ``field`` of ``pb`` holds a value; None where proto3 cannot tell (a number)."""
    if _repeated(field):
        return len(getattr(pb, field.name)) > 0
    if field.type == FieldDescriptor.TYPE_MESSAGE or field.containing_oneof is not None:
        return bool(pb.HasField(field.name))
    if field.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
        return len(getattr(pb, field.name)) > 0
    if field.type == FieldDescriptor.TYPE_ENUM:
        return bool(getattr(pb, field.name) != 0)
    return None


def missing_required(pb: Any, cls: Any, path: str = "") -> list[tuple[str, str]]:
    """(field path, "Required field is not set") for each REQUIRED field ``pb`` lacks, in every
    message it holds; paths like ``job_spec.worker_pool_specs[0].machine_spec``."""
    marked = behaviours(cls)
    found: list[tuple[str, str]] = []
    for field in pb.DESCRIPTOR.fields:
        if REQUIRED in marked.get(field.name, ()) and _is_set(pb, field) is False:
            found.append((f"{path}{field.name}", "Required field is not set."))
    for name, message, child, index in _messages(pb, cls):
        where = f"{path}{name}" if index is None else f"{path}{name}[{index}]"
        found.extend(missing_required(message, child, f"{where}."))
    return found
