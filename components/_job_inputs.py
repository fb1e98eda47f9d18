"""The TrainingJob property bag: names, normalisation, secrets split, validation, diff.

Shared by the program side (``components.training_job``) and the dynamic provider
(``components._provider``). It imports neither ``pulumi`` nor the Vertex client, so the
preview path (``check``/``diff``) stays fast: values Pulumi leaves unknown at preview are
recognised by their type name, not by importing the SDK.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal, get_args

from components._errors import SpecError
from components._spec import JobSpec, parse_duration
from components._validation import Target, validate
from components._violations import Violation

WaitFor = Literal["submitted", "running", "succeeded"]
WAIT_FOR_VALUES: tuple[str, ...] = get_args(WaitFor)

# --- property names ----------------------------------------------------------------------

SPEC = "spec"
ENV_VALUES = "env_values"
PROJECT = "project"
REGION = "region"
TRIGGERS = "triggers"
WAIT_FOR = "wait_for"
WAIT_TIMEOUT = "wait_timeout"
EXCLUSIVE_GPUS = "exclusive_gpus"
KEEP_RECORD = "keep_record_on_delete"
IDENTITY = "identity"
RUN_KEY = "run_key"

JOB_PROPERTIES = (SPEC, ENV_VALUES, PROJECT, REGION, TRIGGERS)
"""A change of any of these is a different job: replace."""

KNOB_PROPERTIES = (WAIT_FOR, WAIT_TIMEOUT, EXCLUSIVE_GPUS, KEEP_RECORD, IDENTITY)
"""Provider-only settings: a change is an update without any API call.

``identity`` is here because renaming a stack or aliasing a resource does not change the job
that already runs; only ``create`` uses it.
"""

HIDDEN_INPUTS = (RUN_KEY,)
"""Inputs only ``create`` reads, never compared by ``diff`` and never written to outputs.

``run_key`` (the stack's secret, ``components._run_key``) keys the run hash of a new job; a
new key changes nothing about a job that already runs.
"""

INPUT_PROPERTIES = JOB_PROPERTIES + KNOB_PROPERTIES

INPUT_DEFAULTS: dict[str, Any] = {
    ENV_VALUES: None,
    TRIGGERS: None,
    WAIT_TIMEOUT: None,
    WAIT_FOR: "submitted",
    EXCLUSIVE_GPUS: False,
    KEEP_RECORD: False,
}
"""Inputs a program leaves out when they have these values: every property costs every job
(see ``STATUS_FIELDS``), and ``check`` puts the defaults back, so the state, ``diff`` and the
preview show them all the same."""


def is_default_input(key: str, value: Any) -> bool:
    """True when ``value`` is ``key``'s default (an Output or another type never is)."""
    if key not in INPUT_DEFAULTS:
        return False
    default = INPUT_DEFAULTS[key]
    return value is default or (type(value) is type(default) and value == default)


STATUS = "status"

STATUS_FIELDS = (
    "job_name",
    "job_id",
    "state",
    "console_url",
    "create_time",
    "start_time",
    "end_time",
    "error_message",
    "model_dir",
    "web_access_uris",
    "run_hash",
    "adopted",
    "hourly_cost_usd",
    "max_cost_usd",
)
"""What the one output ``status`` holds: the job as Vertex last reported it, and its price.

One property rather than fourteen: the SDK makes an Output (an asyncio task) per property of
every resource and waits on all of them, so each property costs every job of a stack (a
preview of 200 jobs took about 14% less time with them folded into one). ``TrainingJob``
still offers each field as an attribute (``job.state``).
"""

OUTPUT_PROPERTIES = (STATUS,)
"""The outputs beyond the inputs (which every output state repeats)."""


def status_of(outputs: Mapping[str, Any]) -> dict[str, Any]:
    """The ``status`` in a resource's outputs.

    States written before ``status`` existed had its fields at the top level; they are read
    from there.
    """
    status = outputs.get(STATUS)
    if isinstance(status, Mapping):
        return dict(status)
    return {key: outputs[key] for key in STATUS_FIELDS if key in outputs}


DEFAULT_WAIT_TIMEOUT = 3600.0
"""Seconds ``create`` waits for ``running``/``succeeded`` when no ``wait_timeout`` is given."""

_UNKNOWN_SENTINEL = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # pulumi.runtime.rpc.UNKNOWN
_ENV_PATH = re.compile(
    r"^workerPoolSpecs\[(\d+)\]\.(pythonPackageSpec|containerSpec)\.env\[(\d+)\]\.value$"
)


def is_unknown(value: Any) -> bool:
    """True for a value Pulumi has not computed yet (preview)."""
    if isinstance(value, str):
        return value == _UNKNOWN_SENTINEL
    kind = type(value)
    return kind.__name__ == "Unknown" and kind.__module__.startswith("pulumi")


def contains_unknown(value: Any) -> bool:
    """True when ``value`` or anything nested in it is unknown."""
    if is_unknown(value):
        return True
    if isinstance(value, Mapping):
        return any(contains_unknown(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(contains_unknown(v) for v in value)
    return False


# --- the spec's wire form: one JSON text ---------------------------------------------------


def encode_spec(document: Mapping[str, Any]) -> str:
    """``spec`` as the resource carries it: canonical JSON text (sorted keys, no spaces).

    One string rather than a tree of values: the SDK and the engine move a nested property
    value by value (a preview of 200 no-op resources carrying the nested spec took about
    0.25 s longer than with the same spec as text), while the CLI still shows the text
    decoded (``spec: (json) {...}``), with a nested diff. Sorted keys make the text a function
    of the content, so a new release never changes a job's text.
    """
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def decode_spec(value: Any) -> Any:
    """The document in a ``spec`` property: JSON text decoded, a mapping (older states) as is.

    Anything else (unknown, None, text that is not a JSON object) is returned unchanged, for
    the caller to report.
    """
    if isinstance(value, str) and value.startswith("{"):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        if isinstance(decoded, dict):
            return decoded
    return value


# --- env values: kept out of the spec so they can be a secret of their own ---------------


def copy_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a JSON-shaped document whose dicts and lists can be changed freely.

    Other values (text, numbers, Outputs) are shared, not copied: several times faster than
    ``copy.deepcopy``, which a program with many jobs calls several times per job.
    """
    return {key: _copy_value(value) for key, value in document.items()}


def _copy_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy_value(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_copy_value(inner) for inner in value]
    return value


def env_path(pool: int, kind: str, index: int) -> str:
    """``workerPoolSpecs[0].pythonPackageSpec.env[1].value``: where an env value sits."""
    return f"workerPoolSpecs[{pool}].{kind}.env[{index}].value"


def split_env(document: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the spec with env values removed, ``{env value path: value}``).

    The names stay in the spec, so a preview shows which variables a job gets; the values
    travel in a separate input that is marked secret.
    """
    spec = copy_document(document)
    values: dict[str, Any] = {}
    for i, pool in enumerate(spec.get("workerPoolSpecs") or []):
        if not isinstance(pool, dict):
            continue
        for kind in ("pythonPackageSpec", "containerSpec"):
            task = pool.get(kind)
            if not isinstance(task, dict) or not isinstance(task.get("env"), list):
                continue
            for j, var in enumerate(task["env"]):
                if isinstance(var, dict) and "value" in var:
                    values[env_path(i, kind, j)] = var.pop("value")
    return spec, values


def merge_env(spec: Mapping[str, Any], values: Mapping[str, Any] | None) -> dict[str, Any]:
    """The full spec: ``spec`` with the values of ``split_env`` put back.

    Raises ``ValueError`` naming a path that does not lead to an env var of the spec.
    """
    document = copy_document(spec)
    for path, value in (values or {}).items():
        match = _ENV_PATH.match(path)
        try:
            if match is None:
                raise LookupError
            pool, kind, index = int(match.group(1)), match.group(2), int(match.group(3))
            var = document["workerPoolSpecs"][pool][kind]["env"][index]
            if not isinstance(var, dict):
                raise LookupError
        except (LookupError, TypeError):
            raise ValueError(f"{path} is not an env var of the spec") from None
        var["value"] = value
    return document


# --- inputs ------------------------------------------------------------------------------


@dataclass
class CheckOutcome:
    """What ``check`` found: the inputs to use, the failures, and warnings to show."""

    inputs: dict[str, Any]
    failures: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[Violation] = field(default_factory=list)


def wait_timeout_seconds(value: Any) -> float | None:
    """``wait_timeout`` as seconds; accepts numbers and ``"90m"``-style text.

    Raises ``ValueError`` with a message meant for the user.
    """
    if value is None:
        return None
    try:
        parsed = parse_duration(value)
    except ValueError:
        raise ValueError("must be a duration like '30m', '2h' or a number of seconds") from None
    if not isinstance(parsed, timedelta):
        raise ValueError("must be a duration like '30m', '2h' or a number of seconds")
    seconds = parsed.total_seconds()
    if seconds <= 0:
        raise ValueError("must be longer than zero")
    return seconds


def _unknown_paths(value: Any, path: str = "") -> Iterator[str]:
    if is_unknown(value):
        yield path
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            yield from _unknown_paths(inner, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list | tuple):
        for index, inner in enumerate(value):
            yield from _unknown_paths(inner, f"{path}[{index}]")


def _without_unknowns(value: Any) -> Any:
    """A copy with unknowns left out of mappings and replaced in lists (positions matter)."""
    if isinstance(value, Mapping):
        return {k: _without_unknowns(v) for k, v in value.items() if not is_unknown(v)}
    if isinstance(value, list | tuple):
        return ["unknown" if is_unknown(v) else _without_unknowns(v) for v in value]
    return value


def _parent(path: str) -> str:
    """``a.b[1].c`` → ``a.b[1]``; ``a.b[1]`` → ``a.b``; ``a`` → ``""``."""
    cut = max(path.rfind("."), path.rfind("["))
    return path[:cut] if cut > 0 else ""


def _affected(path: str, unknown: list[str]) -> bool:
    # A violation next to (or under) a value that is not known yet may be caused by the
    # stand-in used for it; it is checked again once the value is known.
    for hole in unknown:
        scope = _parent(hole) or hole
        if path == scope or path.startswith((scope + ".", scope + "[")):
            return True
    return False


def _reason(violation: Violation) -> str:
    return (
        f"{violation.reason} ({violation.suggestion})" if violation.suggestion else violation.reason
    )


def check_inputs(news: Mapping[str, Any], *, target: Target) -> CheckOutcome:
    """Validate and normalise a TrainingJob's inputs; never raises.

    Failures are ``(property path, reason)``: spec violations carry the validator's camelCase
    path (``workerPoolSpecs[1].machineSpec.acceleratorCount``); other inputs their own name.
    """
    inputs = {k: v for k, v in news.items() if k != "__provider"}
    failures: list[tuple[str, str]] = []

    project, region = inputs.get(PROJECT), inputs.get(REGION)
    for key, value in ((PROJECT, project), (REGION, region)):
        if value is None:
            failures.append(
                (key, f"is not set: pass {key}= or set gcp:{key} in the stack configuration")
            )
        elif not is_unknown(value) and (not isinstance(value, str) or not value):
            failures.append((key, "must be a non-empty string"))

    wait_for = inputs.get(WAIT_FOR)
    if wait_for is None:
        inputs[WAIT_FOR] = "submitted"
    elif not is_unknown(wait_for) and wait_for not in WAIT_FOR_VALUES:
        failures.append((WAIT_FOR, f"{wait_for!r} is not one of {', '.join(WAIT_FOR_VALUES)}"))
    timeout = inputs.get(WAIT_TIMEOUT)
    if timeout is not None and not is_unknown(timeout):
        try:
            inputs[WAIT_TIMEOUT] = wait_timeout_seconds(timeout)
        except ValueError as exc:
            failures.append((WAIT_TIMEOUT, str(exc)))
    for flag in (EXCLUSIVE_GPUS, KEEP_RECORD):
        value = inputs.get(flag)
        if value is None:
            inputs[flag] = False
        elif not is_unknown(value) and not isinstance(value, bool):
            failures.append((flag, "must be true or false"))
    for text_key in (IDENTITY, RUN_KEY):
        value = inputs.get(text_key)
        if value is not None and not is_unknown(value) and not isinstance(value, str):
            failures.append((text_key, "must be a string"))

    spec = decode_spec(inputs.get(SPEC))
    env_values = inputs.get(ENV_VALUES)
    warnings: list[Violation] = []
    if spec is None:
        failures.append((SPEC, "is required: a job spec (mapping, JobSpec or spec file)"))
    elif is_unknown(spec):
        pass  # validated once known
    elif not isinstance(spec, Mapping):
        failures.append(
            (SPEC, f"must be a job spec (JSON text of a mapping), not {_shown_type(spec)}")
        )
    elif (
        env_values is not None
        and not is_unknown(env_values)
        and not isinstance(env_values, Mapping)
    ):
        failures.append((ENV_VALUES, "must be a mapping of env value paths to values"))
    else:
        spec_failures, warnings, canonical = _check_spec(
            spec,
            env_values if isinstance(env_values, Mapping) else None,
            project=project if isinstance(project, str) else None,
            region=region if isinstance(region, str) else None,
            target=target,
        )
        failures.extend(spec_failures)
        if canonical is not None:
            inputs[SPEC] = encode_spec(canonical)
    return CheckOutcome(inputs, failures, warnings)


def _shown_type(value: Any) -> str:
    return "text that is not a JSON object" if isinstance(value, str) else type(value).__name__


def _check_spec(
    spec: Mapping[str, Any],
    env_values: Mapping[str, Any] | None,
    *,
    project: str | None,
    region: str | None,
    target: Target,
) -> tuple[list[tuple[str, str]], list[Violation], dict[str, Any] | None]:
    """(failures, warnings, canonical spec or None when parts are unknown)."""
    try:
        document = merge_env(spec, {k: v for k, v in (env_values or {}).items()})
    except ValueError as exc:
        return [(ENV_VALUES, str(exc))], [], None
    holes = list(_unknown_paths(document))
    if project is not None and "project" in document and document["project"] != project:
        return [("project", "the spec names another project than the resource's project")], [], None
    known = _without_unknowns(document)
    known.pop("project", None)
    known.pop("region", None)
    try:
        parsed = JobSpec.parse(known)
    except SpecError as exc:
        violations = list(getattr(exc, "violations", ())) or [Violation("(spec)", str(exc))]
        return [(v.path, _reason(v)) for v in violations if not _affected(v.path, holes)], [], None
    with_place = parsed.model_copy(update={"project": project, "region": region})
    found = validate(with_place, region=region, target=target)
    found = [v for v in found if not _affected(v.path, holes)]
    failures = [(v.path, _reason(v)) for v in found if v.severity == "error"]
    warnings = [v for v in found if v.severity == "warning"]
    canonical = None
    if not holes:
        canonical, _ = split_env(parsed.to_document())
    return failures, warnings, canonical


def diff_inputs(olds: Mapping[str, Any], news: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(job properties that changed, provider-only properties that changed).

    ``olds`` are the resource's old outputs, which repeat every input. An unknown new value
    counts as a change: Pulumi cannot promise the job stays the same.
    """
    olds = {**olds, SPEC: decode_spec(olds.get(SPEC))}
    news = {**news, SPEC: decode_spec(news.get(SPEC))}
    replaces = [k for k in JOB_PROPERTIES if _changed(olds.get(k), news.get(k))]
    knobs = [k for k in KNOB_PROPERTIES if _changed(olds.get(k), news.get(k))]
    return replaces, knobs


def _changed(old: Any, new: Any) -> bool:
    if contains_unknown(new):
        return True
    return bool(_normal(old) != _normal(new))


def _normal(value: Any) -> Any:
    # Empty collections and absent values mean the same job; numbers come back as floats
    # from the engine (1 == 1.0 already holds in Python).
    if value in ({}, [], None):
        return None
    return value
