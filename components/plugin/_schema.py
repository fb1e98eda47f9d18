"""The provider's Pulumi package schema, generated from the Vertex AI v1 API's own types.

``build_schema()`` walks the proto-plus messages of ``google.cloud.aiplatform_v1`` (``CustomJob``,
``HyperparameterTuningJob`` and every message they hold), so each property has the v1 REST
name (``displayName``, ``jobSpec.workerPoolSpecs[…]``, ``studySpec``, ``trialJobSpec``...), the
v1 type and the v1 description (the ``Attributes:`` section of each type's docstring), as
pulumi-gcp's ``vertex.AiCustomJob`` has them: a job moves between the two by changing its type.
Fields the API marks "Output only." are left out of the inputs. Our own knobs (``waitFor``,
``waitTimeout``...) and outputs (``state``, times, ``bestTrial``, cost) are added by hand here.

``schema.json`` beside this file is its output, committed (``scripts/gen-provider-schema``
writes it; ``tests/plugin/test_schema.py`` fails when it is stale): the provider reads that
file, and never imports the Vertex client library to answer ``GetSchema``.
"""

from __future__ import annotations

import enum
import json
import re
from pathlib import Path
from typing import Any

__all__ = [
    "PACKAGE",
    "SCHEMA_FILE",
    "TRAINING_JOB_TOKEN",
    "TUNING_JOB_TOKEN",
    "build_schema",
    "load_schema",
    "render_schema",
]

PACKAGE = "gpu-training"
MODULE = "vertex"
TRAINING_JOB_TOKEN = f"{PACKAGE}:{MODULE}:TrainingJob"
TUNING_JOB_TOKEN = f"{PACKAGE}:{MODULE}:HyperparameterTuningJob"
SCHEMA_FILE = Path(__file__).with_name("schema.json")
# The one version (components/VERSION: the package, the schema, the SDKs, the release artifacts).
VERSION = (Path(__file__).resolve().parents[1] / "VERSION").read_text(encoding="utf-8").strip()
# Where a published release's plugin archive is found (docs/release.md): the engine's github://
# form, an asset pulumi-resource-gpu-training-v<VERSION>-<os>-<arch>.tar.gz of the release
# v<VERSION> of github.com/gpu-training/pulumi-gpu-training (the Go SDK's module path).
PLUGIN_DOWNLOAD_URL = "github://api.github.com/gpu-training/pulumi-gpu-training"

_WELL_KNOWN = {
    "Duration": (
        "string",
        'A duration in seconds with up to nine fractional digits, ending with "s" ("3600s").',
    ),
    "Timestamp": ("string", "A timestamp in RFC 3339 UTC form."),
    "FieldMask": ("string", "Comma-separated field paths."),
}


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _attribute_docs(message: type) -> dict[str, str]:
    """``{field name: description}`` from the ``Attributes:`` section of a type's docstring."""
    doc = message.__doc__ or ""
    _, found, section = doc.partition("Attributes:")
    if not found:
        return {}
    docs: dict[str, list[str]] = {}
    current: str | None = None
    for line in section.splitlines():
        header = re.match(r"^    (\w+) \(.*\):\s*$", line)
        if header:
            current = header.group(1)
            docs[current] = []
        elif current is not None and line.startswith("        "):
            docs[current].append(line.strip())
        elif line.strip() and not line.startswith(" "):
            break
    return {name: _clean(" ".join(lines)) for name, lines in docs.items()}


_ONEOF_NOTE = re.compile(
    r"This message has `oneof`_ fields.*?(?:\.\. _oneof: \S+|$)|\.\. _oneof: \S+", re.S
)


def _clean(text: str) -> str:
    # reStructuredText literals (``x``) as Markdown code (`x`): Pulumi descriptions are Markdown;
    # proto-plus's note on oneofs becomes one plain sentence.
    text = re.sub(r"``([^`]*)``", r"`\1`", text)
    text = _ONEOF_NOTE.sub("", text)
    text = re.sub(r"This field is a member of `oneof`_ `(\w+)`\.", r"One of the `\1` group.", text)
    return " ".join(text.split())


def _summary(message: type) -> str:
    doc = message.__doc__ or ""
    return _clean(" ".join(doc.partition("Attributes:")[0].split()))


class _Walker:
    """Turns proto-plus messages into schema object types, each once."""

    def __init__(self) -> None:
        self.types: dict[str, dict[str, Any]] = {}

    def token(self, message: type) -> str:
        qualified = message.__qualname__.replace(".", "")
        return f"{PACKAGE}:{MODULE}:{qualified}"

    def properties(self, message: type, *, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
        docs = _attribute_docs(message)
        props: dict[str, Any] = {}
        for name, field in message.meta.fields.items():  # type: ignore[attr-defined]
            description = docs.get(name, "")
            if name in skip or description.startswith("Output only"):
                continue
            spec = self.field_type(field)
            if spec is None:
                continue
            if description:
                spec["description"] = description
            props[_camel(name)] = spec
        return props

    def field_type(self, field: Any) -> dict[str, Any] | None:
        message = field.message
        if field.enum is not None:
            values = ", ".join(f"`{v.name}`" for v in field.enum if isinstance(v, enum.Enum))
            inner: dict[str, Any] = {"type": "string"}
            if values:
                inner["description"] = f"One of {values}."
        elif message is not None:
            name = getattr(message, "__name__", "")
            if field.repeated and name.endswith("Entry"):
                value_field = message.meta.fields["value"]
                value = self.field_type(value_field) or {"$ref": "pulumi.json#/Any"}
                return {"type": "object", "additionalProperties": value}
            if name in _WELL_KNOWN:
                inner = {"type": _WELL_KNOWN[name][0]}
            elif not hasattr(message, "meta"):  # Struct, Value, Any: free-form
                inner = {"$ref": "pulumi.json#/Any"}
            else:
                inner = {"$ref": f"#/types/{self.object_type(message)}"}
        else:
            inner = {"type": _scalar(field.proto_type)}
        if field.repeated:
            return {"type": "array", "items": inner}
        return inner

    def object_type(self, message: type) -> str:
        token = self.token(message)
        if token not in self.types:
            self.types[token] = {}  # placeholder: recursive messages refer to themselves
            self.types[token] = {
                "type": "object",
                "description": _summary(message),
                "properties": self.properties(message),
            }
        return token


def _scalar(proto_type: int) -> str:
    # google.protobuf FieldDescriptor types: 1 double, 2 float, 8 bool, 9 string, 12 bytes;
    # 3, 4, 5, 6, 7, 13, 15, 16, 17, 18 integers. The REST API writes 64-bit integers as JSON
    # text; counts are written as numbers in programs (pulumi-gcp types them as numbers too).
    if proto_type in (1, 2):
        return "number"
    if proto_type == 8:
        return "boolean"
    if proto_type in (3, 4, 5, 6, 7, 13, 15, 16, 17, 18):
        return "integer"
    return "string"


_KNOBS: dict[str, dict[str, Any]] = {
    "project": {
        "type": "string",
        "description": "The Google Cloud project the job runs in; default: the provider's `project`.",
    },
    "region": {
        "type": "string",
        "description": "The Vertex AI region the job runs in; default: the provider's `region`.",
    },
    "waitFor": {
        "type": "string",
        "description": "What a create waits for: `submitted` (default), `running` or `succeeded`. "
        "A change updates the resource without an API call.",
    },
    "waitTimeout": {
        "type": "string",
        "description": 'How long a create waits (seconds, or "30s", "10m", "2h"; default 1 hour). '
        "A wait that times out cancels the job.",
    },
    "triggers": {
        "type": "array",
        "items": {"$ref": "pulumi.json#/Any"},
        "description": "Any change starts a new run (replaces the job).",
    },
    "exclusiveGpus": {
        "type": "boolean",
        "description": "When true, a replacement cancels the old job before it starts the new one.",
    },
    "keepRecordOnDelete": {
        "type": "boolean",
        "description": "When true, delete cancels the job but keeps its record.",
    },
    "deleteRecordOnDelete": {
        "type": "boolean",
        "description": "When true, a delete (destroy, the end of a replace) deletes the job's "
        "record after cancelling it (by default the record outlives the resource; "
        "`keepRecordOnDelete` keeps it whatever this says).",
    },
    "continueLastRun": {
        "type": "boolean",
        "description": "Where the output directory is the provider's to choose, a new run writes "
        "into the directory of the run it replaces instead of one of its own (as "
        "`TrainingJob(continue_last_run=)`; a job whose spec names its output directory writes "
        "there either way).",
    },
    "regions": {
        "type": "array",
        "items": {"$ref": "pulumi.json#/Any"},
        "description": "Candidate regions, in order, instead of one `region`: each a region or "
        '`{"region": R, "capacity": [...]}`. The job runs in the first that takes it (a quota '
        "or capacity refusal moves it to the next; never two attempts at once); `region` is "
        "then the first candidate. A change is an update while the job runs in a region the "
        "new list still names.",
    },
    "capacity": {
        "type": "array",
        "items": {"type": "string"},
        "description": "With `regions`: the capacity kinds a candidate without its own accepts, "
        "in order (`on-demand`, `spot`, `flex-start`, `reservation`, `reservation:NAME`); "
        "none: the spec's own.",
    },
}

_REPLACING = ("project", "region", "triggers")
"""Knobs whose change is a new job (with every property of the job itself)."""

_JOB_OUTPUTS: dict[str, dict[str, Any]] = {
    "name": {"type": "string", "description": "The job's resource name (the resource's ID)."},
    "jobId": {"type": "string", "description": "The job's ID, the last part of its name."},
    "state": {"type": "string", "description": "The job's state, as last read (`JOB_STATE_...`)."},
    "consoleUrl": {"type": "string", "description": "The job's page in the Google Cloud console."},
    "createTime": {"type": "string", "description": "When the job was created."},
    "startTime": {"type": "string", "description": "When the job first ran."},
    "endTime": {"type": "string", "description": "When the job ended."},
    "errorMessage": {"type": "string", "description": "Why the job failed, if it did."},
    "adopted": {
        "type": "boolean",
        "description": "Whether the create took over a job that was already running.",
    },
    "hourlyCostUsd": {
        "type": "number",
        "description": "The job's price per hour, in USD: the catalog's cells added, a bound "
        "among them as it is (`costBasis` says what the figure is).",
    },
    "maxCostUsd": {
        "type": "number",
        "description": "The job's price if it runs to its timeout, as `hourlyCostUsd`.",
    },
    "costBasis": {
        "type": "string",
        "description": "What the cost figures are: `price`; `at most` (an upper end only: "
        "on-demand standing in for an unknown Spot or flex-start rate), `at least` (a lower "
        "end only: a rate without Vertex's fee), `range` (both ends known, apart) or `unknown`.",
    },
    "hourlyCostLowUsd": {
        "type": "number",
        "description": "The least the job costs per hour, where known (a price: the price).",
    },
    "hourlyCostHighUsd": {
        "type": "number",
        "description": "The most the job costs per hour, where known (a price: the price).",
    },
    "maxCostLowUsd": {
        "type": "number",
        "description": "The lower end of `maxCostUsd`, where known.",
    },
    "maxCostHighUsd": {
        "type": "number",
        "description": "The upper end of `maxCostUsd`, where known.",
    },
    "placedRegion": {
        "type": "string",
        "description": "With `regions`: the candidate region the job runs in.",
    },
    "placedCapacity": {
        "type": "string",
        "description": "With `regions`: the capacity kind it runs on (`as in the spec`: the spec's).",
    },
    "placementAttempts": {
        "type": "array",
        "items": {"$ref": "pulumi.json#/Any"},
        "description": "With `regions`: each attempt (`region`, `capacity`, `jobName`, "
        "`stoppedBy`: what moved the job on, null for the one that took it).",
    },
}
_TRAINING_OUTPUTS: dict[str, dict[str, Any]] = {
    "modelDir": {"type": "string", "description": "`<baseOutputDirectory>/model/`."},
    "webAccessUris": {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": "Interactive shell URIs, by worker pool and replica.",
    },
}
_TUNING_OUTPUTS: dict[str, dict[str, Any]] = {
    "trialCounts": {
        "type": "object",
        "additionalProperties": {"type": "integer"},
        "description": "The trials by state (`SUCCEEDED`, `ACTIVE`, `INFEASIBLE`...).",
    },
    "bestTrial": {
        "$ref": "pulumi.json#/Any",
        "description": "The succeeded trial best for the study's first metric: `id`, "
        "`parameters`, `metricId`, `value`; null while none has succeeded.",
    },
    "bestTrialModelDir": {
        "type": "string",
        "description": "`<trialJobSpec.baseOutputDirectory>/<best trial id>/model/`.",
    },
    "trialHourlyCostUsd": {
        "type": "number",
        "description": "One trial's price per hour (of the job's `costBasis`).",
    },
}

_CONFIG: dict[str, dict[str, Any]] = {
    "project": {"type": "string", "description": "The default project of the jobs."},
    "region": {"type": "string", "description": "The default region of the jobs."},
    "endpoint": {
        "type": "string",
        "secret": True,
        "description": "`http(s)://HOST[:PORT]` of a Vertex AI API other than Google's (the local "
        "emulator); it may carry credentials.",
    },
    "cancelTimeout": {
        "type": "string",
        "description": "How long delete waits for a cancelled job to stop (default 600s).",
    },
    "retryDeadline": {
        "type": "string",
        "description": "How long transient API errors are retried (default 120s).",
    },
    "maxConcurrentOperations": {
        "type": "integer",
        "description": "HTTP connections the provider keeps to the API (4 to 256, default 32).",
    },
    "quota": {
        "type": "string",
        "description": "Vertex training quotas at check (preview): `error` (default: a job whose "
        "accelerators exceed the project's limit in its region fails its check), `warn` or `off`.",
    },
    "emulatorStateDir": {
        "type": "string",
        "description": "The local emulator by its state directory (relative to the project "
        "directory), wherever it runs now; `endpoint` is then checked, not used.",
    },
    "catalogOverlay": {
        "type": "string",
        "description": "A folder of catalog CSV files (relative to the project directory) whose "
        "rows are put over the packaged catalog the jobs are checked against, as "
        "`training:catalogOverlay`.",
    },
    "livePrices": {
        "type": "boolean",
        "description": "Price jobs (the preview's notes, the cost outputs) from Vertex AI's "
        "live billing SKUs where Google credentials can read them (default true); false: the "
        "catalog's shipped snapshot.",
    },
    "deleteRecords": {
        "type": "boolean",
        "description": "A delete removes the job's record too (default false: the record, with "
        "its logs, times and metrics, is kept).",
    },
    "runKey": {
        "type": "string",
        "secret": True,
        "description": "A secret that keys the run hash labelled on each job (default: none, "
        "the unkeyed hash).",
    },
}


def _resource(
    message: type,
    walker: _Walker,
    outputs: dict[str, dict[str, Any]],
    required: list[str],
) -> dict[str, Any]:
    inputs = {**walker.properties(message), **_KNOBS}
    for key in _REPLACING:
        inputs[key] = {**inputs[key], "willReplaceOnChanges": True}
    for key, spec in inputs.items():
        if key not in _KNOBS:
            inputs[key] = {**spec, "willReplaceOnChanges": True}
    properties = {**inputs, **outputs}
    return {
        "description": _summary(message),
        "inputProperties": inputs,
        "requiredInputs": required,
        "properties": properties,
        "required": sorted(["name", "state", *required]),
    }


def build_schema() -> dict[str, Any]:
    """The schema, from the v1 types (imports ``google.cloud.aiplatform_v1``)."""
    from ..vertex.v1_types import job_message_types

    custom_job, tuning_job = job_message_types()
    walker = _Walker()
    training = _resource(
        custom_job,
        walker,
        {**_JOB_OUTPUTS, **_TRAINING_OUTPUTS},
        ["jobSpec"],
    )
    tuning = _resource(
        tuning_job,
        walker,
        {**_JOB_OUTPUTS, **_TUNING_OUTPUTS},
        ["maxTrialCount", "parallelTrialCount", "studySpec", "trialJobSpec"],
    )
    return {
        "name": PACKAGE,
        "displayName": "GPU training on Vertex AI",
        "version": VERSION,
        "description": "Vertex AI CustomJobs and HyperparameterTuningJobs, checked before they "
        "run (machine, GPUs, region, image, cost, quota) and never started twice.",
        "keywords": ["pulumi", "vertex", "gpu", "training", "category/cloud"],
        "publisher": "gpu-training",
        "pluginDownloadURL": PLUGIN_DOWNLOAD_URL,
        "config": {"variables": _CONFIG},
        "provider": {"description": "The gpu-training provider.", "inputProperties": _CONFIG},
        "resources": {TRAINING_JOB_TOKEN: training, TUNING_JOB_TOKEN: tuning},
        "types": dict(sorted(walker.types.items())),
        # Each SDK carries the schema's version (its package metadata, pulumi-plugin.json), so a
        # program asks the engine for the plugin of that version, not 0.0.0.
        "language": {
            "python": {"packageName": "pulumi_gpu_training", "respectSchemaVersion": True},
            "nodejs": {"packageName": "@gpu-training/pulumi", "respectSchemaVersion": True},
            "go": {
                "importBasePath": "github.com/gpu-training/pulumi-gpu-training/sdk/go/gputraining",
                "respectSchemaVersion": True,
            },
        },
    }


def render_schema(schema: dict[str, Any]) -> str:
    """The schema file's text: stable, so a regeneration changes nothing unless a type did."""
    return json.dumps(schema, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def load_schema() -> str:
    """The committed schema's text (what ``GetSchema`` answers)."""
    return SCHEMA_FILE.read_text(encoding="utf-8")
