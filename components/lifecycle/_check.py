"""What the provider's ``check`` and ``diff`` decide about a job resource's inputs.

``check_inputs`` validates and normalises (the job spec through the validator, the knobs by
type); ``diff_inputs`` says which properties changed and so whether the job is replaced. Both
run on every preview: nothing here imports ``pulumi`` or the Vertex client.

A ``TrainingJob`` and a ``HyperparameterTuningJob`` share every input and every rule here; what
differs is the spec (``SpecKind``: its model, its validator, where its env values sit):
``CUSTOM_JOB_SPEC`` or ``TUNING_JOB_SPEC``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

from .._errors import SpecError
from ..rules._spec import MAX_DURATION_SECONDS, JobSpec
from ..rules._tuning_spec import TuningJobSpec
from ..rules._tuning_validation import validate_tuning
from ..rules._validation import MAX_LABELS, Target, validate
from ..rules._violations import Violation
from ._settings import DYNAMIC_DOOR, PlaceSources, duration_seconds
from ._wire import (
    CONTINUE_LAST_RUN,
    DELETE_RECORD,
    ENV_VALUES,
    EXCLUSIVE_GPUS,
    EXISTING_JOB,
    HELD_INSTANCE,
    HELD_JOBS,
    IDENTITY,
    INPUT_DEFAULTS,
    INSTANCE,
    JOB_PROPERTIES,
    KEEP_RECORD,
    KNOB_PROPERTIES,
    MANAGED_LABELS,
    OUTPUT_ROOT,
    OWNER,
    PROJECT,
    PROVIDER_KEY,
    REGION,
    RUN_KEY,
    SPEC,
    TAKE_OVER_HELD_JOB,
    TRIAL_JOB_SPEC,
    WAIT_FOR,
    WAIT_FOR_VALUES,
    WAIT_TIMEOUT,
    contains_unknown,
    decode_spec,
    encode_spec,
    is_unknown,
    merge_env,
    parse_job_name,
    parse_tuning_job_name,
    split_env,
)

__all__ = [
    "CUSTOM_JOB_SPEC",
    "TUNING_JOB_SPEC",
    "CheckOutcome",
    "Failure",
    "SpecKind",
    "check_inputs",
    "diff_inputs",
    "wait_timeout_seconds",
]


class Failure(NamedTuple):
    """One reason a check fails: the property path, what is wrong, and what to change where
    the validator knows (apart from ``reason``: ``rules._violations.problem_text`` words both
    as users see them)."""

    path: str
    reason: str
    suggestion: str | None = None


M = TypeVar("M", JobSpec, TuningJobSpec)


@dataclass(frozen=True)
class SpecKind(Generic[M]):
    """One kind of job spec, as ``check`` reads it."""

    what: str
    """``job spec``: for messages."""
    model: type[M]
    """``JobSpec``: its ``parse`` raises ``SpecError`` naming each bad field."""
    validate: Callable[[M, str | None, Target], list[Violation]]
    """``(spec, region, target)`` → every violation."""
    parse_name: Callable[[str], tuple[str, str, str] | None] = parse_job_name
    """(project, region, id) of a job's resource name of this kind, or None."""
    collection: str = "customJobs"
    """The last collection of such a name (for messages)."""
    pools_under: str | None = None
    """The field holding the custom job spec that has the worker pools (and so the env vars,
    ``components.lifecycle._wire.split_env``): a tuning job's ``trialJobSpec``; None: the top level."""

    def split_env(self, document: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        return split_env(document, under=self.pools_under)

    def merge_env(
        self, spec: Mapping[str, Any], values: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        return merge_env(spec, values, under=self.pools_under)


CUSTOM_JOB_SPEC = SpecKind[JobSpec](
    "job spec", JobSpec, lambda spec, region, target: validate(spec, region=region, target=target)
)
"""A ``TrainingJob``'s spec: a CustomJob."""
TUNING_JOB_SPEC = SpecKind[TuningJobSpec](
    "tuning job spec",
    TuningJobSpec,
    lambda spec, region, target: validate_tuning(spec, region=region, target=target),
    parse_name=parse_tuning_job_name,
    collection="hyperparameterTuningJobs",
    pools_under=TRIAL_JOB_SPEC,
)
"""A ``HyperparameterTuningJob``'s spec: env values under ``trialJobSpec``."""


@dataclass
class CheckOutcome:
    """What ``check`` found: the inputs to use, the failures, and warnings to show."""

    inputs: dict[str, Any]
    failures: list[Failure] = field(default_factory=list)
    warnings: list[Violation] = field(default_factory=list)


def wait_timeout_seconds(value: Any) -> float | None:
    """``wait_timeout`` as seconds, in the forms every duration setting takes
    (``components.lifecycle._settings.duration_seconds``: numbers, ``"600"``, ``"90m"``...).

    Raises ``ValueError`` with a message meant for the user.
    """
    if value is None:
        return None
    seconds = duration_seconds(value)
    if not math.isfinite(seconds) or seconds > MAX_DURATION_SECONDS:
        raise ValueError(f"must be a finite duration of at most {MAX_DURATION_SECONDS:,} seconds")
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


def _affected(path: str, unknown: list[str], roots: tuple[str, ...] = ("",)) -> bool:
    # A violation next to (or under) a value that is not known yet may be caused by the
    # stand-in used for it; it is checked again once the value is known. A value at the top of
    # a job spec (``roots``: the document, a tuning job's trialJobSpec) has the whole job next
    # to it: only its own violations wait.
    for hole in unknown:
        scope = _parent(hole)
        scope = hole if scope in roots else scope
        if path == scope or path.startswith((scope + ".", scope + "[")):
            return True
    return False


def _failure(violation: Violation) -> Failure:
    return Failure(violation.path, violation.reason, violation.suggestion)


def check_inputs(
    news: Mapping[str, Any],
    *,
    target: Target,
    parsed: JobSpec | TuningJobSpec | None = None,
    kind: SpecKind[Any] = CUSTOM_JOB_SPEC,
    place: PlaceSources = DYNAMIC_DOOR.place,
) -> CheckOutcome:
    """Validate and normalise a job resource's inputs (its spec of ``kind``); never raises.

    ``place``: where the front door looked for the project and region (an unset one's failure
    names those sources).

    Failures are ``Failure(path, reason, suggestion)``: spec violations carry the validator's
    camelCase path (``workerPoolSpecs[1].machineSpec.acceleratorCount``) and its suggestion;
    other inputs their own name.
    ``parsed`` is the spec already parsed by the caller (the program), with env values and
    nothing unknown: it is validated as it is, and ``spec`` is then not put in canonical form.
    """
    inputs = {k: v for k, v in news.items() if k != PROVIDER_KEY}
    failures = [
        *_place_failures(inputs, place),
        *_knob_failures(inputs),
        *_existing_job_failures(inputs, kind),
    ]
    imported = isinstance(inputs.get(EXISTING_JOB), str)
    if parsed is not None:
        spec_failures, warnings = _parsed_failures(kind, parsed, inputs, target, imported)
        labels: Any = parsed.labels
    else:
        spec_failures, warnings = _spec_failures(kind, inputs, target, imported)
        document = decode_spec(inputs.get(SPEC))
        labels = document.get("labels") if isinstance(document, Mapping) else None
    failures += spec_failures + list(_managed_label_failures(labels, imported=imported))
    return CheckOutcome(inputs, failures, warnings)


def _managed_label_failures(labels: Any, *, imported: bool) -> Iterator[Failure]:
    """The labels the provider adds to every job it submits (``MANAGED_LABELS``) are Vertex AI
    labels too: they count towards its limit, and their keys are the provider's.

    A job taken over (``existing_job``) is checked the same way: it is not submitted, but any
    change of it is a replace that submits one, which Vertex AI would refuse (with
    ``exclusiveGpus`` only after the running job was cancelled).
    """
    if not isinstance(labels, Mapping):
        return
    for key in MANAGED_LABELS:
        if key in labels:
            yield Failure(
                f"labels.{key}",
                "is a label the provider sets on every job it submits (the resource's identity "
                "and its run); choose another key",
            )
    count = len(labels)
    if MAX_LABELS - len(MANAGED_LABELS) < count <= MAX_LABELS:
        taken = (
            " (a job taken over with existingJob too: its replacement could not be submitted)"
            if imported
            else ""
        )
        yield Failure(
            "labels",
            f"has {count} labels; the provider adds {len(MANAGED_LABELS)} to every job "
            f"({', '.join(MANAGED_LABELS)}) and Vertex AI allows {MAX_LABELS} in all: at most "
            f"{MAX_LABELS - len(MANAGED_LABELS)} of your own{taken}",
        )


def _existing_job_failures(inputs: Mapping[str, Any], kind: SpecKind[Any]) -> Iterator[Failure]:
    value = inputs.get(EXISTING_JOB)
    if value is None or is_unknown(value):
        return
    parsed = kind.parse_name(value) if isinstance(value, str) else None
    if parsed is None:
        yield Failure(
            EXISTING_JOB,
            f"expected the resource name of the job to take over, "
            f"projects/PROJECT/locations/REGION/{kind.collection}/ID, got {value!r}",
        )
        return
    project, region = inputs.get(PROJECT), inputs.get(REGION)
    if isinstance(region, str) and region and parsed[1] != region:
        yield Failure(
            EXISTING_JOB, f"names a job in {parsed[1]}, but the resource runs in {region}"
        )
    # Vertex AI names jobs by the project's number: only a project id can be compared.
    if isinstance(project, str) and not parsed[0].isdigit() and parsed[0] != project:
        yield Failure(
            EXISTING_JOB, f"names a job of project {parsed[0]}, but the resource's is {project}"
        )


def _place_failures(inputs: Mapping[str, Any], place: PlaceSources) -> Iterator[Failure]:
    for key in (PROJECT, REGION):
        value = inputs.get(key)
        if value is None:
            yield Failure(key, place.unset_reason(key))
        elif not is_unknown(value) and (not isinstance(value, str) or not value):
            yield Failure(key, "must be a non-empty string")


def _knob_failures(inputs: dict[str, Any]) -> Iterator[Failure]:
    """Checks the provider-only inputs, and puts back the defaults a program leaves out."""
    wait_for = inputs.get(WAIT_FOR)
    if wait_for is None:
        inputs[WAIT_FOR] = "submitted"
    elif not is_unknown(wait_for) and wait_for not in WAIT_FOR_VALUES:
        yield Failure(WAIT_FOR, f"{wait_for!r} is not one of {', '.join(WAIT_FOR_VALUES)}")
    timeout = inputs.get(WAIT_TIMEOUT)
    if timeout is not None and not is_unknown(timeout):
        try:
            inputs[WAIT_TIMEOUT] = wait_timeout_seconds(timeout)
        except ValueError as exc:
            yield Failure(WAIT_TIMEOUT, str(exc))
    for flag in (EXCLUSIVE_GPUS, KEEP_RECORD, DELETE_RECORD, CONTINUE_LAST_RUN):
        value = inputs.get(flag)
        if value is None:
            # Settings newer than the states that hold every input stay out when unset, so a
            # running job's recorded inputs do not change on upgrade (diff reads them false).
            if flag in (EXCLUSIVE_GPUS, KEEP_RECORD):
                inputs[flag] = False
        elif not is_unknown(value) and not isinstance(value, bool):
            yield Failure(flag, "must be true or false")
    for text_key in (IDENTITY, RUN_KEY, INSTANCE, HELD_INSTANCE, OWNER, OUTPUT_ROOT):
        value = inputs.get(text_key)
        if value is not None and not is_unknown(value) and not isinstance(value, str):
            yield Failure(text_key, "must be a string")
    take_over = inputs.get(TAKE_OVER_HELD_JOB)
    if take_over is not None and not is_unknown(take_over) and not isinstance(take_over, bool):
        yield Failure(TAKE_OVER_HELD_JOB, "must be true or false")
    held = inputs.get(HELD_JOBS)
    if (
        held is not None
        and not is_unknown(held)
        and not (isinstance(held, list) and all(isinstance(name, str) for name in held))
    ):
        yield Failure(HELD_JOBS, "must be a list of job names")


def _parsed_failures(
    kind: SpecKind[Any],
    parsed: Any,
    inputs: Mapping[str, Any],
    target: Target,
    imported: bool = False,
) -> tuple[list[Failure], list[Violation]]:
    project, region = inputs.get(PROJECT), inputs.get(REGION)
    place = {
        "project": project if isinstance(project, str) else None,
        "region": region if isinstance(region, str) else None,
    }
    found = kind.validate(parsed.model_copy(update=place), place["region"], target)
    return _split(_taken_over(found) if imported else found)


def _taken_over(found: list[Violation]) -> list[Violation]:
    """A job taken over (``existing_job``) runs already and is never submitted: an executor
    image the catalog does not know (newer, older, or its own) is a note, not a refusal."""
    return [
        dataclasses.replace(
            v,
            reason=f"{v.reason} (the job runs already: it is taken over as it is)",
            severity="warning",
        )
        if v.severity == "error" and v.rule == "trainer" and v.path.endswith(".executorImageUri")
        else v
        for v in found
    ]


def _split(found: list[Violation]) -> tuple[list[Failure], list[Violation]]:
    """(errors as failures, warnings)."""
    failures = [_failure(v) for v in found if v.severity == "error"]
    return failures, [v for v in found if v.severity == "warning"]


def _spec_failures(
    kind: SpecKind[Any], inputs: dict[str, Any], target: Target, imported: bool = False
) -> tuple[list[Failure], list[Violation]]:
    """Failures and warnings of the spec; a fully known spec is put back in canonical form."""
    spec, env_values = decode_spec(inputs.get(SPEC)), inputs.get(ENV_VALUES)
    if spec is None:
        required = f"is required: a {kind.what} (mapping, {kind.model.__name__} or spec file)"
        return [Failure(SPEC, required)], []
    if is_unknown(spec):
        return [], []  # validated once known
    if not isinstance(spec, Mapping):
        shown = f"must be a {kind.what} (JSON text of a mapping), not {_shown_type(spec)}"
        return [Failure(SPEC, shown)], []
    if (
        env_values is not None
        and not is_unknown(env_values)
        and not isinstance(env_values, Mapping)
    ):
        return [Failure(ENV_VALUES, "must be a mapping of env value paths to values")], []
    project, region = inputs.get(PROJECT), inputs.get(REGION)
    failures, warnings, canonical = _check_spec(
        kind,
        spec,
        env_values if isinstance(env_values, Mapping) else None,
        project=project if isinstance(project, str) else None,
        region=region if isinstance(region, str) else None,
        target=target,
        imported=imported,
    )
    if canonical is not None:
        inputs[SPEC] = encode_spec(canonical)
    return failures, warnings


def _shown_type(value: Any) -> str:
    return "text that is not a JSON object" if isinstance(value, str) else type(value).__name__


def _check_spec(
    kind: SpecKind[Any],
    spec: Mapping[str, Any],
    env_values: Mapping[str, Any] | None,
    *,
    project: str | None,
    region: str | None,
    target: Target,
    imported: bool = False,
) -> tuple[list[Failure], list[Violation], dict[str, Any] | None]:
    """(failures, warnings, canonical spec or None when parts are unknown)."""
    try:
        document = kind.merge_env(spec, {k: v for k, v in (env_values or {}).items()})
    except ValueError as exc:
        return [Failure(ENV_VALUES, str(exc))], [], None
    holes = list(_unknown_paths(document))
    roots = ("", kind.pools_under or "")
    if project is not None and "project" in document and document["project"] != project:
        return (
            [Failure("project", "the spec names another project than the resource's project")],
            [],
            None,
        )
    known = _without_unknowns(document)
    known.pop("project", None)
    known.pop("region", None)
    try:
        parsed = kind.model.parse(known)
    except SpecError as exc:
        violations = list(getattr(exc, "violations", ())) or [
            Violation("(spec)", str(exc), rule="schema")
        ]
        failures = [_failure(v) for v in violations if not _affected(v.path, holes, roots)]
        return failures, [], None
    with_place = parsed.model_copy(update={"project": project, "region": region})
    found = kind.validate(with_place, region, target)
    if imported:
        found = _taken_over(found)
    failures, warnings = _split([v for v in found if not _affected(v.path, holes, roots)])
    canonical = None
    if not holes:
        canonical, _ = kind.split_env(parsed.to_document())
    return failures, warnings, canonical


def diff_inputs(olds: Mapping[str, Any], news: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(job properties that changed, provider-only properties that changed).

    ``olds`` are the resource's old outputs, which repeat every input. An unknown new value
    counts as a change: Pulumi cannot promise the job stays the same.
    """
    olds = {**olds, SPEC: _blank_ends_aside(decode_spec(olds.get(SPEC)))}
    news = {**news, SPEC: _blank_ends_aside(decode_spec(news.get(SPEC)))}
    replaces = [k for k in JOB_PROPERTIES if _changed(olds.get(k), news.get(k))]
    # A setting that is absent (a state from before it existed, or left unset) is its default.
    knobs = [
        k
        for k in KNOB_PROPERTIES
        if _changed(olds.get(k, INPUT_DEFAULTS.get(k)), news.get(k, INPUT_DEFAULTS.get(k)))
    ]
    return replaces, knobs


_ARGUMENT_LISTS = frozenset({"command", "args"})


def _blank_ends_aside(value: Any) -> Any:
    """``value`` with the blanks at the ends of every command word and argument removed.

    Specs checked before commands and arguments kept their blanks (a YAML block scalar's
    trailing newline) hold them stripped: comparing without the ends keeps an upgrade from
    replacing a running job for a newline. The job the next create submits keeps them.
    """
    if isinstance(value, dict):
        return {
            key: (
                [v.strip() if isinstance(v, str) else v for v in item]
                if key in _ARGUMENT_LISTS and isinstance(item, list)
                else _blank_ends_aside(item)
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_blank_ends_aside(item) for item in value]
    return value


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
