"""Jobs written for other tools: Terraform ``google_vertex_ai_custom_job`` resources (HCL) and
pulumi-gcp ``gcp:vertex/aiCustomJob:AiCustomJob`` resources in a Pulumi YAML program, read as the
``CustomJob`` each creates, so ``validate``/``convert`` judge them like any other job.

Each resource is a job of its own (``ResourceJob``), named by its resource name
(``AiCustomJob bert``, Terraform's address ``google_vertex_ai_custom_job.bert``), as the
Python and TypeScript program readers name theirs (``pulumi_programs``); ``load.load_jobs``
gives each, and a file of one resource reads as one job. At most ``MAX_JOBS`` resources.

Both are read as data, never evaluated: a Terraform ``var.``/``local.`` (or any other)
reference and a Pulumi ``${...}`` interpolation are named in a note and left out, so the
validator says what the job then lacks. HCL is parsed by python-hcl2 (a maintained HCL2
grammar on lark) after the text's size is bounded by ``read_text``; nesting is bounded here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic.alias_generators import to_camel

from .._errors import SpecFormatError
from .python_sdk import MAX_JOBS
from .text import clipped

__all__ = [
    "PLUGIN_TYPES",
    "PULUMI_TYPES",
    "RESOURCE",
    "TERRAFORM_TYPE",
    "ResourceJob",
    "as_custom_job",
    "is_pulumi_program",
    "plugin_program",
    "pulumi_yaml_jobs",
    "terraform_jobs",
]

TERRAFORM_TYPE = "google_vertex_ai_custom_job"
RESOURCE = "AiCustomJob"
"""pulumi-gcp's class of a custom job, in every language's program."""
PULUMI_TYPES = frozenset({"gcp:vertex/aiCustomJob:AiCustomJob", "gcp:vertex:AiCustomJob"})
PLUGIN_TYPES = {
    "custom-job": "gpu-training:vertex:TrainingJob",
    "hyperparameter-tuning-job": "gpu-training:vertex:HyperparameterTuningJob",
}
"""This project's resource types, as its plugin's schema (``components/plugin/schema.json``)
names them."""
MAX_DEPTH = 32
"""Deeper nesting than a CustomJob has (about 8 levels) is refused, not walked."""

_LIST_BLOCKS = frozenset({"worker_pool_specs", "env", "nfs_mounts", "args", "command"})
"""Terraform blocks that repeat: the API's lists. Any other block is one message."""
_REFERENCE = re.compile(r"\$\{(.+?)\}", re.DOTALL)


@dataclass
class ResourceJob:
    """One job resource of a program: its name in messages (``AiCustomJob bert``,
    ``google_vertex_ai_custom_job.bert``) and the ``CustomJob`` it creates (camelCase,
    ``location`` as ``region``) with the notes of its reading, or why it cannot be read (the
    program's other resources are still read)."""

    name: str
    job: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    error: SpecFormatError | None = None


def terraform_jobs(text: str, origin: str) -> list[ResourceJob]:
    """Each ``google_vertex_ai_custom_job`` resource of the file, in order; ``SpecFormatError``
    when the file is not HCL, holds none, or more than ``MAX_JOBS``."""
    import hcl2  # the runtime set: `convert FILE.tf` is part of the CLI (requirements.txt)

    try:
        document = hcl2.loads(text)
    except Exception as exc:  # lark's errors have no common base worth naming
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise SpecFormatError(f"{origin}: not readable as Terraform (HCL): {first}") from None
    found: list[tuple[str, Any]] = []
    for block in document.get("resource", []) if isinstance(document, dict) else []:
        for kind, named in (block or {}).items():
            if _unquote(kind) == TERRAFORM_TYPE and isinstance(named, dict):
                found.extend((_unquote(n), body) for n, body in named.items())
    _check_count(len(found), f"{TERRAFORM_TYPE} resource", origin)
    return [_terraform_job(name, body) for name, body in found]


def _terraform_job(name: str, body: Any) -> ResourceJob:
    where, title = f"{TERRAFORM_TYPE}.{name}", f"{TERRAFORM_TYPE}.{clipped(name)}"
    notes: list[str] = []
    try:
        job = as_custom_job(_hcl_value(body, where, notes, 0), where, notes)
    except SpecFormatError as exc:
        return ResourceJob(title, notes=notes, error=exc)
    return ResourceJob(title, job, notes)


def pulumi_yaml_jobs(document: dict[str, Any], origin: str) -> list[ResourceJob]:
    """Each ``AiCustomJob`` resource of a Pulumi YAML program, in order, named by its resource
    name; ``SpecFormatError`` when it declares none, or more than ``MAX_JOBS``."""
    resources = document.get("resources")
    found = [
        (str(name), resource)
        for name, resource in (resources.items() if isinstance(resources, dict) else [])
        if isinstance(resource, dict) and resource.get("type") in PULUMI_TYPES
    ]
    _check_count(len(found), "gcp:vertex/aiCustomJob:AiCustomJob resource", origin)
    return [_pulumi_job(name, resource, origin) for name, resource in found]


def _pulumi_job(name: str, resource: dict[str, Any], origin: str) -> ResourceJob:
    title = f"{RESOURCE} {clipped(name)}"
    notes: list[str] = []
    properties = resource.get("properties")
    try:
        if not isinstance(properties, dict):
            raise SpecFormatError(f"{origin}: resources.{name}.properties: expected a mapping")
        job = _pulumi_value(properties, f"resources.{name}.properties", notes, 0)
        return ResourceJob(title, as_custom_job(job, f"resources.{name}", notes), notes)
    except SpecFormatError as exc:
        return ResourceJob(title, notes=notes, error=exc)


def _check_count(count: int, what: str, origin: str) -> None:
    """A program declares at least one job resource and at most ``MAX_JOBS``, as the Python
    and TypeScript program readers take."""
    if not count:
        raise SpecFormatError(f"{origin}: expected a {what}, found 0")
    if count > MAX_JOBS:
        raise SpecFormatError(f"{origin}: refused: more than {MAX_JOBS} {what}s ({count})")


def is_pulumi_program(document: Any) -> bool:
    """A Pulumi YAML program with an ``AiCustomJob`` among its resources."""
    resources = document.get("resources") if isinstance(document, dict) else None
    return isinstance(resources, dict) and any(
        isinstance(r, dict) and r.get("type") in PULUMI_TYPES for r in resources.values()
    )


def as_custom_job(job: Any, where: str, notes: list[str]) -> dict[str, Any]:
    """The arguments of a Terraform or pulumi-gcp custom job resource (snake_case or
    camelCase) as the ``CustomJob`` it creates: camelCase, ``location`` as ``region``, the
    project and the provider's computed fields left out (a note says so for the project)."""
    if not isinstance(job, dict):
        raise SpecFormatError(f"{where}: expected a block of arguments")
    camel: dict[str, Any] = _camel(job)
    location = camel.pop("location", None)
    if isinstance(location, str):
        camel["region"] = location
    for key in ("project", "id", "name", "effectiveLabels", "pulumiLabels", "terraformLabels"):
        if camel.pop(key, None) is not None and key == "project":
            notes.append(
                f"{where}.project: the project is the stack's (gcp:project, unset: "
                "GOOGLE_PROJECT... from the environment)"
            )
    return camel


_DATA_MAPS = frozenset({"labels", "effective_labels", "effectiveLabels"})
"""Fields whose keys are the user's data (a label ``cost_center``), not field names."""


def _camel(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            to_camel(k) if "_" in k else k: v if k in _DATA_MAPS else _camel(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _too_deep(where: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise SpecFormatError(f"{where}: nested deeper than {MAX_DEPTH} levels")


def _hcl_value(value: Any, where: str, notes: list[str], depth: int) -> Any:
    """python-hcl2's tree as plain data: strings unquoted, a block (a list of one mapping)
    as that mapping unless it repeats in the API, references named and dropped (None)."""
    _too_deep(where, depth)
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key.startswith("__"):
                continue
            name = _unquote(key)
            converted = _hcl_value(item, f"{where}.{name}", notes, depth + 1)
            if isinstance(converted, list) and name not in _LIST_BLOCKS and _blocks(item):
                converted = converted[0] if len(converted) == 1 else converted
            if converted is not None:
                out[name] = converted
        return out
    if isinstance(value, list):
        items = [_hcl_value(v, f"{where}[{i}]", notes, depth + 1) for i, v in enumerate(value)]
        return [v for v in items if v is not None]
    if isinstance(value, str):
        if _REFERENCE.search(value):
            expression = " ".join(_REFERENCE.findall(value))[:120]
            notes.append(f"{where} = {expression}: {_what_reference(expression)}, left out")
            return None
        return _unquote(value)
    return value


def _blocks(item: Any) -> bool:
    return isinstance(item, list) and all(
        isinstance(b, dict) and b.get("__is_block__") for b in item
    )


def _what_reference(expression: str) -> str:
    head = expression.strip().split(".", 1)[0].split("(", 1)[0]
    return {
        "var": "a Terraform input variable, set where the module is applied",
        "local": "a Terraform local value, which this reader does not evaluate",
        "module": "another module's output",
        "data": "a data source, read when Terraform plans",
    }.get(head, "a Terraform expression, evaluated only when Terraform plans")


def _pulumi_value(value: Any, where: str, notes: list[str], depth: int) -> Any:
    _too_deep(where, depth)
    if isinstance(value, dict):
        if len(value) == 1 and next(iter(value)).startswith("fn::"):
            notes.append(f"{where}: {next(iter(value))} is a Pulumi function call, left out")
            return None
        out = {str(k): _pulumi_value(v, f"{where}.{k}", notes, depth + 1) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None}
    if isinstance(value, list):
        items = [_pulumi_value(v, f"{where}[{i}]", notes, depth + 1) for i, v in enumerate(value)]
        return [v for v in items if v is not None]
    if isinstance(value, str) and _REFERENCE.search(value):
        expression = " ".join(_REFERENCE.findall(value))[:120]
        notes.append(
            f"{where} = ${{{expression}}}: a Pulumi interpolation (a config value, variable or "
            "another resource's output), left out"
        )
        return None
    return value


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            decoded = json.loads(text)
        except ValueError:
            return text[1:-1]
        return decoded if isinstance(decoded, str) else text[1:-1]
    return text


def plugin_program(
    name: str, kind: str, properties: dict[str, Any], description: str = ""
) -> dict[str, Any]:
    """A Pulumi YAML program (``Pulumi.yaml``) declaring the job as this project's plugin
    resource (``PLUGIN_TYPES``): ``properties`` in the schema's camelCase (``displayName``,
    ``labels``, ``jobSpec`` of a custom job; ``studySpec``, ``trialJobSpec``... of a tuning
    job; ``project``, ``region``), the resource named ``name`` made a valid Pulumi name."""
    resource = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "training-job"
    program: dict[str, Any] = {"name": resource, "runtime": "yaml"}
    if description:
        program["description"] = description
    program["resources"] = {resource: {"type": PLUGIN_TYPES[kind], "properties": properties}}
    program["outputs"] = {"state": f"${{{resource}.state}}", "jobId": f"${{{resource}.jobId}}"}
    return program
