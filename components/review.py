"""A pull-request comment from ``pulumi preview --json``: what happens to each training job.

::

    pulumi preview --json > preview.json
    python -m components.review preview.json > comment.md

One table row per TrainingJob that changes (create, replace, update, delete) with its
machines, GPUs, region and price per hour from the catalog (``components.costs._pricing.estimate``;
"unknown" when the catalog has no price, never a guess); a second table has one row per
HyperparameterTuningJob that changes, with its trials (in all, at once), the machines and GPUs
of one trial, its region, the price per hour of all its parallel trials and the ceiling of all
its trials (``components.costs._pricing.estimate_tuning``). A training job's row also has its
ceiling (timeout x $/h). Prices are the catalog's with the stack's organisation prices
(``training:prices``, from the preview's config) over them. Then the cost change of the whole
preview ($/h and ceiling), where each job's prices came from (``Price.label``), then per
job the properties that change (nested, e.g.
``spec.workerPoolSpecs[0].machineSpec.acceleratorCount: 1 → 2``) and which of them force a
replacement. Errors of a failed preview are quoted. Other resources are counted in one line.

Input is what the engine prints: the single document of ``pulumi preview --json``, or the
event stream of ``PULUMI_ENABLE_STREAMING_JSON_PREVIEW=true pulumi preview --json`` (one JSON
event per line), which also carries policy violations (the plain document of engine v3.259
only says ``preview failed`` when a policy pack rejects the preview). Secrets are shown as
the engine shows them, ``[secret]``; env var values never reach the preview at all.

Nothing here imports ``pulumi`` or the Vertex client.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO

from ._errors import SpecError, TrainingJobError
from .costs._figure import (
    ZERO,
    Figure,
    dearest,
    delta_text,
    figure_of_output,
    figure_text,
    with_reason,
)
from .costs._price_sheet import PriceSheetError, apply_prices, parse_price_setting
from .costs._pricing import (
    Estimate,
    TuningEstimate,
    capacity_word,
    duration_text,
    estimate,
    estimate_tuning,
)
from .lifecycle._wire import (
    EXCLUSIVE_GPUS,
    HIDDEN_INPUTS,
    IDENTITY,
    PROVIDER_KEY,
    RUN_KEY_TYPE,
    TRAINING_JOB_TYPE_SUFFIX,
    TUNING_JOB_TYPE_SUFFIX,
    UNKNOWN_VALUES,
    decode_spec,
    is_secret_envelope,
)
from .plugin._shape import (
    NO_ENVIRONMENT,
    PROVIDER_TYPE,
    TRAINING,
    TUNING,
    camel,
    candidates_of,
    provider_defaults,
)
from .rules._catalog import Catalog, load_catalog, training_regions_for
from .rules._spec import JobSpec
from .rules._tuning_spec import TuningJobSpec

__all__ = [
    "JobChange",
    "Preview",
    "PropertyChange",
    "ReviewError",
    "main",
    "parse_preview",
    "render",
    "render_markdown",
]

# Inputs a reviewer does not need: the pickled provider and the hash that identifies the
# resource in job labels (it changes only with the stack or resource name).
_HIDDEN_INPUTS = frozenset({PROVIDER_KEY, IDENTITY, *HIDDEN_INPUTS})
_SECRET = "[secret]"
_REPLACE_OPS = frozenset({"replace", "create-replacement", "delete-replaced"})
_SHOWN_OPS = ("create", "replace", "update", "delete")
_OP_LABEL = {
    "create": "🟢 create",
    "replace": "🔁 replace",
    "update": "🟡 update",
    "delete": "🔴 delete",
}
_MAX_VALUE = 80
_MAX_CHANGES = 25


class ReviewError(TrainingJobError, ValueError):
    """The input is not the JSON that ``pulumi preview --json`` prints."""


@dataclass(frozen=True)
class PropertyChange:
    """One changed input: its path, old and new value (as the engine showed them)."""

    path: str
    old: Any
    new: Any
    forces_replacement: bool
    kind: str = "update"  # add | delete | update


@dataclass
class JobChange:
    """What a preview does to one TrainingJob or (``tuning``) HyperparameterTuningJob."""

    name: str
    op: str
    old_inputs: dict[str, Any] | None
    new_inputs: dict[str, Any] | None
    replace_reasons: list[str] = field(default_factory=list)
    policy_violations: list[str] = field(default_factory=list)
    tuning: bool = False
    defaults: dict[str, str] = field(default_factory=dict)
    """A plugin job's ``project``/``region`` when its inputs set none: its provider's."""
    old_outputs: dict[str, Any] | None = None
    new_outputs: dict[str, Any] | None = None

    @property
    def region(self) -> str | None:
        for inputs in (self.new_inputs, self.old_inputs):
            region = (inputs or {}).get("region")
            if isinstance(region, str) and region not in UNKNOWN_VALUES:
                return region
        return self.defaults.get("region")

    def _document(self, which: str) -> dict[str, Any] | None:
        """The job document: the dynamic resources' ``spec``, else the plugin's REST-shaped
        inputs (``jobSpec``..., ``trialJobSpec``...) as the core reads them."""
        inputs = self.new_inputs if which == "new" else self.old_inputs
        if inputs is None:
            return None
        if "spec" not in inputs:
            return (TUNING if self.tuning else TRAINING).document(inputs)
        document = inputs["spec"]
        return dict(document) if isinstance(document, Mapping) else None

    def output(self, which: str, name: str) -> float | None:
        """A known number among the ``old`` or ``new`` outputs (``hourlyCostUsd``: the plugin
        prices a job at preview), or None."""
        outputs = (self.new_outputs if which == "new" else self.old_outputs) or {}
        value = outputs.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None  # unknown at preview, or not a figure
        return float(value)

    def output_known(self, which: str, name: str) -> bool:
        """Whether the ``old`` or ``new`` outputs carry ``name`` with a value known at preview."""
        outputs = (self.new_outputs if which == "new" else self.old_outputs) or {}
        value = outputs.get(name)
        return value is not None and not (isinstance(value, str) and value in UNKNOWN_VALUES)

    def output_figure(self, which: str, basis: str, low: str, high: str) -> Figure | None:
        """The figure the ``old`` or ``new`` outputs carry as ``basis`` and the ends ``low``
        and ``high`` (``costBasis``, ``hourlyCostLowUsd``...), or None where they carry no
        basis (``figure_of_output``)."""
        outputs = (self.new_outputs if which == "new" else self.old_outputs) or {}
        return figure_of_output(outputs.get(basis), outputs.get(low), outputs.get(high))

    def spec(self, which: str) -> JobSpec | None:
        """The custom job on the ``old`` or ``new`` side: for a tuning job, one trial's."""
        if self.tuning:
            tuning = self.tuning_spec(which)
            try:
                return None if tuning is None else tuning.trial_job()
            except (SpecError, ValueError):
                return None
        document = self._document(which)
        try:
            return None if document is None else JobSpec.parse(document)
        except SpecError:
            return None

    def tuning_spec(self, which: str) -> TuningJobSpec | None:
        """The tuning job on the ``old`` or ``new`` side (None for a TrainingJob)."""
        document = self._document(which) if self.tuning else None
        try:
            return None if document is None else TuningJobSpec.parse(document)
        except SpecError:
            return None

    def changes(self) -> list[PropertyChange]:
        """Changed inputs, nested, in input order; keys in ``replace_reasons`` force replacement."""
        if self.op not in ("replace", "update"):
            return []
        old, new = self.old_inputs or {}, self.new_inputs or {}
        found: list[PropertyChange] = []
        for key in dict.fromkeys([*old, *new]):
            if key in _HIDDEN_INPUTS:
                continue
            forces = key in self.replace_reasons
            before, after = old.get(key), new.get(key)
            if before == _SECRET and after == _SECRET:
                if forces:  # the engine knows it changed; nobody else may see the values
                    found.append(PropertyChange(key, _SECRET, _SECRET, True))
                continue
            found.extend(_diff(key, before, after, forces, key in old, key in new))
        # A property the engine names but whose shown values are equal (e.g. an unknown).
        shown = {c.path.split(".", 1)[0].split("[", 1)[0] for c in found}
        found.extend(
            PropertyChange(key, old.get(key), new.get(key), True)
            for key in self.replace_reasons
            if key not in shown and key not in _HIDDEN_INPUTS
        )
        return found


@dataclass
class Preview:
    """The parts of a preview the comment shows."""

    stack: str | None
    project: str | None
    jobs: list[JobChange]
    unchanged_jobs: int
    other_resources: dict[str, int]
    errors: list[str]
    warnings: list[str]
    stack_policy_violations: list[str]
    streamed: bool
    prices_setting: Any = None
    """The stack's ``training:prices`` as the preview's config holds it (None: not set)."""


# --- reading the engine's JSON --------------------------------------------------------------


@dataclass
class _Step:
    op: str
    urn: str
    type: str
    old_inputs: dict[str, Any] | None
    new_inputs: dict[str, Any] | None
    replace_reasons: list[str]
    provider: str = ""
    """The provider reference, ``URN::ID``."""
    old_outputs: dict[str, Any] | None = None
    new_outputs: dict[str, Any] | None = None


def _urn_parts(urn: str) -> tuple[str | None, str | None, str, str]:
    """(stack, project, type, name) of ``urn:pulumi:<stack>::<project>::<type>::<name>``."""
    parts = urn.split("::")
    if len(parts) < 4 or not parts[0].startswith("urn:pulumi:"):
        return None, None, "", urn
    return parts[0].removeprefix("urn:pulumi:"), parts[1], parts[2].rsplit("$", 1)[-1], parts[-1]


def _inputs(state: Any) -> dict[str, Any] | None:
    if not isinstance(state, Mapping):
        return None
    inputs = state.get("inputs")
    if not isinstance(inputs, Mapping):
        return {}
    found = {key: _secrets_hidden(value) for key, value in inputs.items()}
    if isinstance(
        found.get("spec"), str
    ):  # JSON text on the wire; compared and shown as the document
        found["spec"] = decode_spec(found["spec"])
    return found


def _secrets_hidden(value: Any) -> Any:
    """``value`` with every secret the engine wrote as its envelope (a streamed preview's
    events carry them so, where the single document says ``[secret]``) shown as ``[secret]``."""
    if is_secret_envelope(value):
        return _SECRET
    if isinstance(value, Mapping):
        return {key: _secrets_hidden(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_secrets_hidden(inner) for inner in value]
    return value


def _outputs(state: Any) -> dict[str, Any] | None:
    outputs = state.get("outputs") if isinstance(state, Mapping) else None
    return dict(outputs) if isinstance(outputs, Mapping) else None


def _provider_of(step: Mapping[str, Any], *states: Any) -> str:
    for holder in (step, *states):
        if isinstance(holder, Mapping) and isinstance(holder.get("provider"), str):
            return str(holder["provider"])
    return ""


def _diagnostic_text(message: Any) -> str:
    text = str(message or "").strip()
    for prefix in ("error: ", "warning: "):
        text = text.removeprefix(prefix)
    return text


def _config(config: Any) -> dict[str, Any]:
    """The stack configuration the preview carries (``training:prices``, ``gpu-training:region``...)."""
    return dict(config) if isinstance(config, Mapping) else {}


_PRICES_KEY = "training:prices"
_Loaded = tuple[list["_Step"], list[dict[str, Any]], list[Any], dict[str, Any]]


def _from_document(doc: Mapping[str, Any]) -> _Loaded:
    steps = []
    for raw in doc.get("steps") or []:
        old, new = raw.get("oldState"), raw.get("newState")
        type_ = (new or old or {}).get("type") or _urn_parts(str(raw.get("urn", "")))[2]
        steps.append(
            _Step(
                op=str(raw.get("op", "")),
                urn=str(raw.get("urn", "")),
                type=str(type_),
                old_inputs=_inputs(old),
                new_inputs=_inputs(new),
                replace_reasons=[str(k) for k in raw.get("replaceReasons") or []],
                provider=_provider_of(raw, new, old),
                old_outputs=_outputs(old),
                new_outputs=_outputs(new),
            )
        )
    diagnostics = [d for d in doc.get("diagnostics") or [] if isinstance(d, Mapping)]
    return steps, [dict(d) for d in diagnostics], [], _config(doc.get("config"))


def _from_events(events: Sequence[Mapping[str, Any]]) -> _Loaded:
    steps, diagnostics, policies = [], [], []
    config: dict[str, Any] = {}
    for event in events:
        if isinstance(event.get("preludeEvent"), Mapping):
            config = _config(event["preludeEvent"].get("config"))
        if "resourcePreEvent" in event:
            meta = event["resourcePreEvent"].get("metadata") or {}
            steps.append(
                _Step(
                    op=str(meta.get("op", "")),
                    urn=str(meta.get("urn", "")),
                    type=str(meta.get("type", "")),
                    old_inputs=_inputs(meta.get("old")),
                    new_inputs=_inputs(meta.get("new")),
                    replace_reasons=[str(k) for k in meta.get("keys") or []],
                    provider=_provider_of(meta, meta.get("new"), meta.get("old")),
                    old_outputs=_outputs(meta.get("old")),
                    new_outputs=_outputs(meta.get("new")),
                )
            )
        elif "resOutputsEvent" in event:
            # A provider that previews its creates (the plugin: supports_preview) returns the
            # outputs it knows already (hourlyCostUsd...); only the stream carries them.
            meta = event["resOutputsEvent"].get("metadata") or {}
            outputs = _outputs(meta.get("new"))
            for step in steps:
                if outputs and step.urn == meta.get("urn"):
                    step.new_outputs = outputs
        elif "diagnosticEvent" in event:
            diag = event["diagnosticEvent"]
            diagnostics.append({"message": diag.get("message"), "severity": diag.get("severity")})
        elif "policyEvent" in event:
            policies.append(dict(event["policyEvent"]))
    return steps, diagnostics, policies, config


def _load(text: str) -> tuple[list[_Step], list[dict[str, Any]], list[Any], dict[str, Any], bool]:
    text = text.strip()
    if not text:
        raise ReviewError("the preview output is empty (did `pulumi preview --json` run?)")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        doc = None
    if isinstance(doc, Mapping) and "steps" in doc:
        return (*_from_document(doc), False)
    if isinstance(doc, Mapping) and not any(k.endswith("Event") for k in doc):
        raise ReviewError("expected the output of `pulumi preview --json` (no 'steps' in it)")
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            raise ReviewError(
                f"line {number} is not JSON: expected `pulumi preview --json` output"
            ) from None
        if isinstance(event, Mapping):
            events.append(event)
    if not any(any(k.endswith("Event") for k in e) for e in events):
        raise ReviewError("expected the output of `pulumi preview --json` (no steps or events)")
    return (*_from_events(events), True)


def parse_preview(text: str, environ: Mapping[str, str] = NO_ENVIRONMENT) -> Preview:
    """Read ``pulumi preview --json`` output (a document or an event stream); ``environ``: the
    one the preview ran in (none by default), for a default provider's ``provider_defaults``."""
    steps, diagnostics, policies, config, streamed = _load(text)
    providers = _plugin_providers(steps)
    stack = project = None
    jobs: dict[str, JobChange] = {}
    unchanged = 0
    others: dict[str, int] = {}
    for step in steps:
        urn_stack, urn_project, urn_type, name = _urn_parts(step.urn)
        stack, project = stack or urn_stack, project or urn_project
        type_ = step.type or urn_type
        op = "replace" if step.op in _REPLACE_OPS else step.op
        tuning = type_.endswith(TUNING_JOB_TYPE_SUFFIX)
        if not tuning and not type_.endswith(TRAINING_JOB_TYPE_SUFFIX):
            # The stack and its run key are not something a reviewer decides on.
            if op in _SHOWN_OPS and type_ not in ("pulumi:pulumi:Stack", RUN_KEY_TYPE):
                others[op] = others.get(op, 0) + 1
            continue
        if op not in _SHOWN_OPS:
            unchanged += op == "same"
            continue
        job = jobs.get(step.urn)
        if job is None:
            job = jobs[step.urn] = JobChange(name, op, None, None, tuning=tuning)
            job.defaults = _defaults(step, providers, config, environ)
        # A replace streams as several steps; keep the fullest view of each side.
        job.old_inputs = job.old_inputs or step.old_inputs
        job.new_inputs = job.new_inputs or step.new_inputs
        job.replace_reasons = job.replace_reasons or list(step.replace_reasons)
        job.old_outputs = job.old_outputs or step.old_outputs
        job.new_outputs = job.new_outputs or step.new_outputs
    stack_violations = []
    for policy in policies:
        message = _policy_message(policy)
        job = jobs.get(str(policy.get("resourceUrn", "")))
        if job is not None:
            job.policy_violations.append(message)
        else:
            stack_violations.append(message)
    errors = [
        _diagnostic_text(d.get("message")) for d in diagnostics if d.get("severity") == "error"
    ]
    warnings = [
        _diagnostic_text(d.get("message")) for d in diagnostics if d.get("severity") == "warning"
    ]
    return Preview(
        stack=stack,
        project=project,
        jobs=sorted(jobs.values(), key=lambda j: (_SHOWN_OPS.index(j.op), j.name)),
        unchanged_jobs=unchanged,
        other_resources=others,
        errors=[e for e in dict.fromkeys(errors) if e],
        warnings=[w for w in dict.fromkeys(warnings) if w],
        stack_policy_violations=stack_violations,
        streamed=streamed,
        prices_setting=config.get(_PRICES_KEY),
    )


def _plugin_providers(steps: Sequence[_Step]) -> dict[str, dict[str, Any]]:
    """The plugin's explicit providers in the preview, by URN: their inputs (``region``...).
    A default provider has no step: the stack's configuration is its inputs."""
    return {
        step.urn: step.new_inputs or step.old_inputs or {}
        for step in steps
        if (step.type or _urn_parts(step.urn)[2]) == PROVIDER_TYPE
    }


def _defaults(
    step: _Step,
    providers: Mapping[str, dict[str, Any]],
    config: Mapping[str, Any],
    environ: Mapping[str, str],
) -> dict[str, str]:
    """A plugin job's project and region when its inputs set none (``provider_defaults``)."""
    # ``URN::ID`` (a URN is four parts joined by ``::``).
    urn = step.provider.rsplit("::", 1)[0] if step.provider.count("::") > 3 else step.provider
    if _urn_parts(urn)[2] != PROVIDER_TYPE:
        return {}
    name = _urn_parts(urn)[3]
    return provider_defaults(name, providers.get(urn), config, environ)


def _policy_message(policy: Mapping[str, Any]) -> str:
    lines = [line for line in str(policy.get("message", "")).strip().splitlines() if line]
    detail = lines[-1] if lines else ""
    level = policy.get("enforcementLevel") or "advisory"
    return f"[{level}] {policy.get('policyName', 'policy')}: {detail}"


# --- property diff --------------------------------------------------------------------------


def _is_scalar_list(value: Any) -> bool:
    return isinstance(value, list) and all(not isinstance(v, dict | list) for v in value)


def _diff(
    path: str, old: Any, new: Any, forces: bool, had: bool = True, has: bool = True
) -> Iterator[PropertyChange]:
    if old == new:
        return
    if not had or (old is None and new is not None):
        yield PropertyChange(path, None, new, forces, "add")
        return
    if not has or (new is None and old is not None):
        yield PropertyChange(path, old, None, forces, "delete")
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in dict.fromkeys([*old, *new]):
            yield from _diff(
                f"{path}.{key}", old.get(key), new.get(key), forces, key in old, key in new
            )
        return
    if (
        isinstance(old, list)
        and isinstance(new, list)
        and not (_is_scalar_list(old) and _is_scalar_list(new))
    ):
        for index in range(max(len(old), len(new))):
            yield from _diff(
                f"{path}[{index}]",
                old[index] if index < len(old) else None,
                new[index] if index < len(new) else None,
                forces,
                index < len(old),
                index < len(new),
            )
        return
    yield PropertyChange(path, old, new, forces)


def _value(value: Any) -> str:
    if isinstance(value, str) and value in UNKNOWN_VALUES:
        return "(known after apply)"
    if value == _SECRET:
        return _SECRET
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if len(text) > _MAX_VALUE:
        text = text[: _MAX_VALUE - 1] + "…"
    quoted = text.replace("`", "'")
    return f"`{quoted}`"


# --- hardware and cost ----------------------------------------------------------------------


def _gpus(spec: JobSpec | None) -> str:
    if spec is None:
        return "?"
    counts: dict[str, int] = {}
    for pool in spec.worker_pool_specs:
        machine = pool.machine_spec
        if pool.is_placeholder or machine is None or not machine.accelerator_type:
            continue
        total = pool.replicas * machine.accelerator_count
        if total:
            counts[machine.accelerator_type] = counts.get(machine.accelerator_type, 0) + total
    return ", ".join(f"{n} x {kind}" for kind, n in counts.items()) or "none"


def _machines(spec: JobSpec | None) -> str:
    if spec is None:
        return "?"
    parts = []
    for pool in spec.worker_pool_specs:
        if pool.is_placeholder or pool.machine_spec is None:
            continue
        machine = pool.machine_spec.machine_type or "?"
        parts.append(f"{pool.replicas} x {machine}" if pool.replicas != 1 else machine)
    capacity = _capacity(spec)
    return " + ".join(parts or ["?"]) + (f" ({'; '.join(capacity)})" if capacity else "")


# Capacity a reviewer should notice: SPOT is already marked next to the price.
_NOTED_STRATEGIES = frozenset({"FLEX_START", "LOW_COST"})


def _capacity(spec: JobSpec) -> list[str]:
    """Where the machines come from, when it is not plain on-demand capacity."""
    found: list[str] = []
    if spec.persistent_resource_id:
        found.append(f"persistent resource {spec.persistent_resource_id}")
    for pool in spec.worker_pool_specs:
        affinity = pool.machine_spec.reservation_affinity if pool.machine_spec else None
        if affinity is None:
            continue
        if affinity.reservation_affinity_type == "SPECIFIC_RESERVATION":
            names = [v.rsplit("/", 1)[-1] for v in affinity.values] or ["?"]
            found.append(f"reservation {', '.join(names)}")
        elif affinity.reservation_affinity_type == "ANY_RESERVATION":
            found.append("any reservation")
    strategy = spec.scheduling.strategy if spec.scheduling else None
    if strategy in _NOTED_STRATEGIES:
        found.append(str(strategy))
    return list(dict.fromkeys(found))


def _estimate(
    spec: JobSpec | None, region: str | None, catalog: Catalog, capacity: str | None = None
) -> Estimate | None:
    if spec is None or region is None:
        return None
    try:
        return estimate(spec, catalog, region=region, capacity=capacity)
    except ValueError:
        return None


def _estimate_tuning(
    spec: TuningJobSpec | None, region: str | None, catalog: Catalog, capacity: str | None = None
) -> TuningEstimate | None:
    if spec is None or region is None:
        return None
    try:
        return estimate_tuning(spec, catalog, region=region, capacity=capacity)
    except (SpecError, ValueError):
        return None


_UNKNOWN = Figure(None, None)
"""A figure with neither end known."""


@dataclass(frozen=True)
class _Placed:
    """A placed job's prices (``placement``): where it is expected to run, and the dearest
    attempt, what it costs wherever it lands. Attempts in a region that does not offer its
    machines are left out, as the policy pack leaves them."""

    expected: Estimate | TuningEstimate | None
    worst: Estimate | TuningEstimate | None
    """The attempt whose ceiling can be the highest (its trials and timeout name the ceiling)."""
    worst_where: str
    worst_hourly: Figure = _UNKNOWN
    """The dearest of the attempts' prices per hour (``dearest``: a bound stays a bound)."""
    worst_ceiling: Figure = _UNKNOWN
    """The dearest of the attempts' ceilings."""


def _placed(job: JobChange, which: str, catalog: Catalog) -> _Placed | None:
    """The prices of each attempt of a job that names several (None: one region)."""
    from .core._placement import attempts_of, parse_placement, placed_specs, priced_as
    from .lifecycle._check import CUSTOM_JOB_SPEC, TUNING_JOB_SPEC

    inputs = (job.new_inputs if which == "new" else job.old_inputs) or {}
    spec: JobSpec | TuningJobSpec | None = job.tuning_spec(which) if job.tuning else job.spec(which)
    placement = candidates_of(inputs)
    if spec is None or not placement:
        return None
    try:
        attempts = attempts_of(parse_placement(placement)[0])
        under = (TUNING_JOB_SPEC if job.tuning else CUSTOM_JOB_SPEC).pools_under
        placed_attempts = placed_specs(spec, attempts, under=under)
    except (SpecError, ValueError, TypeError):
        return None
    if len(placed_attempts) < 2:
        return None
    trial = job.spec(which)
    wanted = trial.accelerator_types if trial is not None else set()
    offering = set(training_regions_for(catalog, wanted)) if wanted else None
    found: list[tuple[str, Estimate | TuningEstimate | None]] = []
    for attempt, placed in placed_attempts:
        if offering is not None and attempt.region not in offering:
            continue  # never tried: check() skips a candidate without the job's GPUs
        capacity = priced_as(attempt.capacity)
        if job.tuning:
            found.append(
                (attempt.shown, _estimate_tuning(placed, attempt.region, catalog, capacity))
            )
        else:
            found.append((attempt.shown, _estimate(placed, attempt.region, catalog, capacity)))
    offered = [(where, result) for where, result in found if result is not None]
    if not offered:
        return _Placed(None, None, "")

    def why_unknown(figure: Figure, where: str) -> Figure:
        # An attempt with no price leaves the worst case without its upper end: say which.
        if figure.kind == "unknown" and not figure.why:
            return Figure(None, None, (f"{where}: no price",))
        return figure

    def ceiling_rank(item: tuple[str, Estimate | TuningEstimate]) -> tuple[bool, float]:
        ceiling = item[1].max_figure  # one without an upper end can cost the most
        return ceiling.high is None, ceiling.high or ceiling.low or 0.0

    where, worst = max(offered, key=ceiling_rank)
    return _Placed(
        offered[0][1],
        worst,
        where,
        dearest([why_unknown(r.figure, w) for w, r in offered]),
        dearest([why_unknown(r.max_figure, w) for w, r in offered]),
    )


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.2f}/h"


def _side(old: str, new: str) -> str:
    return new if old == new else f"{old} → {new}"


def _trials(spec: TuningJobSpec | None) -> str:
    if spec is None:
        return "?"
    return f"{spec.max_trial_count} ({spec.parallel_trial_count} at once)"


def _job_ceiling(result: Estimate, ceiling: Figure | None = None) -> str:
    """``$24.00 (1 d)``: the job for its whole timeout; a bound says so (``at most $X``)."""
    return _ceiling_text(result.max_figure if ceiling is None else ceiling, result.timeout, "")


def _ceiling(result: TuningEstimate | None, ceiling: Figure | None = None) -> str:
    """``$171.95 (12 x 14 h)``: every trial for its whole timeout."""
    if result is None:
        return "unknown"
    figure = result.max_figure if ceiling is None else ceiling
    return _ceiling_text(figure, result.timeout, f"{result.max_trials} x ")


def _ceiling_text(ceiling: Figure, timeout: timedelta, trials: str) -> str:
    if ceiling.kind == "unknown":
        return "unknown"
    return f"{figure_text(ceiling, unit='', why=False)} ({trials}{duration_text(timeout)})"


# --- rendering ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Side:
    """One side (old or new) of a job as a row shows it."""

    machines: str
    gpus: str
    hourly: float | None
    capacity: str  # "on_demand", "spot" or "flex_start": what it is priced as
    missing: tuple[str, ...]
    trials: str = ""
    ceiling: str = ""
    ceiling_figure: Figure | None = None
    """The most it can cost: timeout x $/h (a tuning job: trials x one trial's ceiling)."""
    labels: tuple[str, ...] = ()
    """Where its prices came from (``Price.label``)."""
    worst: Figure | None = None
    """A placed job: the price per hour of its dearest attempt (``worst_where``)."""
    worst_where: str = ""
    figure: Figure | None = None
    """Its price per hour as what it is known as: a bound is shown as a bound (``_figure``)."""

    @property
    def per_hour(self) -> Figure:
        """Its price per hour as a figure (``hourly`` a price where no figure is known)."""
        if self.figure is not None:
            return self.figure
        return _UNKNOWN if self.hourly is None else Figure.price(self.hourly)

    @property
    def most(self) -> Figure:
        """Its ceiling as a figure (unknown where none is known)."""
        return _UNKNOWN if self.ceiling_figure is None else self.ceiling_figure

    @property
    def cost(self) -> str:
        """Its price per hour; a placed job's dearest attempt beside it when dearer."""
        hourly = self.per_hour
        shown = "unknown" if hourly.kind == "unknown" and not hourly.why else figure_text(hourly)
        worst = self.worst
        if worst is not None and worst.kind != "unknown" and not _same(worst, hourly):
            text = figure_text(worst, why=False)
            shown += (
                f" (up to {text} in {self.worst_where})"
                if worst.is_price
                else f" (dearest attempt, {self.worst_where}: {text})"
            )
        return shown


def _same(one: Figure, other: Figure) -> bool:
    """Both ends alike (the reasons aside)."""
    return (one.low, one.high) == (other.low, other.high)


def _describe(job: JobChange, which: str, catalog: Catalog) -> _Side:
    """A job's hardware and price on one side; a tuning job's per trial, and for all trials.
    A placed job is priced where it is expected to run, its ceiling at its dearest attempt."""
    spec = job.spec(which)
    placed = _placed(job, which, catalog)
    if not job.tuning:
        result = placed.expected if placed is not None else _estimate(spec, job.region, catalog)
        if not isinstance(result, Estimate):
            return _Side(_machines(spec), _gpus(spec), None, "on_demand", (), ceiling="unknown")
        side = _Side(
            _machines(spec),
            _gpus(spec),
            result.usd_per_hour,
            result.billed_as,
            result.missing,
            ceiling=_job_ceiling(result),
            ceiling_figure=result.max_figure,
            labels=result.price_labels,
            figure=result.figure,
        )
        return _as_the_door_priced(job, which, _at_worst(side, placed))
    tuning = job.tuning_spec(which)
    found = placed.expected if placed is not None else _estimate_tuning(tuning, job.region, catalog)
    tuned = found if isinstance(found, TuningEstimate) else None
    side = _Side(
        _machines(spec),
        _gpus(spec),
        None if tuned is None else tuned.usd_per_hour,
        "on_demand" if tuned is None else tuned.billed_as,
        () if tuned is None else tuned.missing,
        _trials(tuning),
        _ceiling(tuned),
        None if tuned is None else tuned.max_figure,
        () if tuned is None else tuned.trial.price_labels,
        figure=None if tuned is None else tuned.figure,
    )
    return _as_the_door_priced(job, which, _at_worst(side, placed))


_HOURLY_OUTPUT = "hourlyCostUsd"
_CEILING_OUTPUT = "maxCostUsd"
_BASIS_OUTPUT = "costBasis"
_PLACED_OUTPUT = "placedRegion"
_ENDS = {
    _HOURLY_OUTPUT: ("hourlyCostLowUsd", "hourlyCostHighUsd"),
    _CEILING_OUTPUT: ("maxCostLowUsd", "maxCostHighUsd"),
}
"""Each cost output's ends (``components.costs._pricing.cost_fields``, camelCase)."""


def _as_the_door_priced(job: JobChange, which: str, side: _Side) -> _Side:
    """``side`` with the prices the resource's own outputs carry, where they do (the plugin
    prices a job in its preview: ``hourlyCostUsd``, ``maxCostUsd``); the catalog's estimate
    from the spec stands where they do not.

    Outputs with a ``costBasis`` say what they are: that figure stands, a bound as a bound
    (the reason the catalog gives for a bound of the same kind). Outputs without one (a
    state written before the basis) are one number each: where the catalog knows the figure
    only as a bound (or as unknown for bounds both ways) that number is the bound added into
    the prices, so the catalog's figure stands; where it is a price or has no price at all,
    the output's number is the door's price (its live or organisation prices)."""
    if side.worst_where and not job.output_known(which, _PLACED_OUTPUT):
        # Where it lands is the create's to find (its outputs give the spread of every
        # attempt's price): priced as for the dynamic resources, where it is expected to run,
        # its ceiling at its dearest attempt. Once placed, the door's price stands.
        return side
    hourly, ceiling = job.output(which, _HOURLY_OUTPUT), job.output(which, _CEILING_OUTPUT)
    hourly_figure = job.output_figure(which, _BASIS_OUTPUT, *_ENDS[_HOURLY_OUTPUT])
    ceiling_figure = job.output_figure(which, _BASIS_OUTPUT, *_ENDS[_CEILING_OUTPUT])
    if hourly_figure is not None:
        figure = with_reason(hourly_figure, side.per_hour)
        missing = side.missing if figure.kind == "unknown" else ()
        side = replace(side, hourly=hourly, missing=missing, figure=figure)
    elif hourly is not None and _a_price_or_none(side.per_hour):
        side = replace(side, hourly=hourly, missing=(), figure=Figure.price(hourly))
    if side.worst_where:
        return side  # a placed job's ceiling is its dearest attempt's
    if ceiling_figure is not None and ceiling_figure.kind != "unknown":
        figure = with_reason(ceiling_figure, side.most)
        side = replace(side, ceiling=figure_text(figure, unit="", why=False), ceiling_figure=figure)
    elif ceiling is not None and ceiling_figure is None and _a_price_or_none(side.most):
        side = replace(side, ceiling=f"${ceiling:,.2f}", ceiling_figure=Figure.price(ceiling))
    return side


def _a_price_or_none(figure: Figure) -> bool:
    return figure.is_price or (figure.kind == "unknown" and not figure.why)


def _at_worst(side: _Side, placed: _Placed | None) -> _Side:
    """``side`` with a placed job's ceiling at its dearest attempt, and that attempt's price."""
    if placed is None or placed.expected is None:
        return side
    worst = placed.worst
    if isinstance(worst, TuningEstimate):
        text = _ceiling(worst, placed.worst_ceiling)
    elif isinstance(worst, Estimate):
        text = _job_ceiling(worst, placed.worst_ceiling)
    else:
        text = "unknown"
    if placed.worst_ceiling.kind == "unknown":
        text = f"unknown ({'; '.join(placed.worst_ceiling.why) or 'an attempt has no price'})"
    return replace(
        side,
        ceiling=text if text.startswith("unknown") else f"{text} in {placed.worst_where}",
        ceiling_figure=placed.worst_ceiling,
        worst=placed.worst_hourly,
        worst_where=placed.worst_where,
    )


@dataclass
class _Row:
    job: JobChange
    machines: str
    gpus: str
    cost: str
    delta: Figure  # change of the hourly cost (a bound or range where a side is one)
    missing: list[str]
    trials: str = ""  # tuning jobs: trials in all (at once)
    ceiling: str = ""  # the most it can cost (a tuning job: all its trials)
    ceiling_delta: Figure = _UNKNOWN  # its change
    prices: str = ""  # where its prices came from


def _shown(sides: list[_Side], attribute: str) -> str:
    values = [str(getattr(side, attribute)) for side in sides]
    return values[0] if len(values) == 1 else _side(values[0], values[1])


def _change(old: _Side, new: _Side, old_figure: Figure, new_figure: Figure) -> Figure:
    """``new - old``; the same hardware at the same cells is no change, bound or not (the
    difference of two bounds of one unknown rate is zero, not unknown)."""
    alike = (old.machines, old.gpus, old.capacity) == (new.machines, new.gpus, new.capacity)
    if alike and _same(old_figure, new_figure) and old_figure.kind != "unknown":
        return ZERO
    return new_figure - old_figure


def _row(job: JobChange, catalog: Catalog) -> _Row:
    old = _describe(job, "old", catalog) if job.op != "create" else None
    new = _describe(job, "new", catalog) if job.op != "delete" else None
    sides = [side for side in (old, new) if side is not None]
    missing = [m for side in sides for m in side.missing]
    marks = [capacity_word(c) for c in dict.fromkeys(s.capacity for s in sides) if c != "on_demand"]
    spot = f" ({' / '.join(marks)})" if marks else ""
    row = _Row(job, _shown(sides, "machines"), _shown(sides, "gpus"), "", _UNKNOWN, missing)
    row.trials, row.ceiling = _shown(sides, "trials"), _shown(sides, "ceiling")
    labels = dict.fromkeys(label for side in sides for label in side.labels)
    row.prices = " + ".join(labels) + (spot if labels else "")
    if old is None or new is None:  # create, delete
        row.cost = sides[0].cost + spot
        row.delta = sides[0].per_hour if new is not None else -sides[0].per_hour
        row.ceiling_delta = sides[0].most if new is not None else -sides[0].most
        return row
    if job.op == "update":  # knobs only: the job and its price stay
        row.cost, row.delta, row.ceiling = new.cost + spot, ZERO, new.ceiling
        row.ceiling_delta = ZERO
        return row
    row.ceiling_delta = _change(old, new, old.most, new.most)
    row.delta = _change(old, new, old.per_hour, new.per_hour)
    row.cost = _side(old.cost, new.cost)
    if row.delta.kind != "unknown" and not _same(row.delta, ZERO):
        row.cost += f" ({delta_text(row.delta, why=False)})"
    row.cost += spot
    return row


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _what(job: JobChange) -> str:
    if job.op == "replace":
        inputs = job.new_inputs or {}
        if inputs.get(EXCLUSIVE_GPUS) is True or inputs.get(camel(EXCLUSIVE_GPUS)) is True:
            return "replace: the old job is cancelled first, then the new one starts"
        return "replace: a new job starts, then the old one is cancelled"
    if job.op == "update":
        return "update in place: settings of the resource only, the job keeps running"
    return job.op


_VERBS = {
    "create": "to create",
    "replace": "to replace",
    "update": "to update",
    "delete": "to delete",
}


def render(preview: Preview, catalog: Catalog | None = None, *, title: str | None = None) -> str:
    """The markdown comment for ``preview``, priced with the stack's ``training:prices``."""
    where = "/".join(p for p in (preview.project, preview.stack) if p)
    lines = [f"### {title or 'Training jobs'}" + (f" — `{where}`" if where else ""), ""]
    catalog, note = _priced(preview.prices_setting, catalog or load_catalog())
    if note:
        lines += [note, ""]
    violations = [f"`{j.name}`: {v}" for j in preview.jobs for v in j.policy_violations]
    violations += preview.stack_policy_violations
    lines += _failure_lines(preview, violations)
    if violations:
        lines += ["**🛑 Policy violations**", ""]
        lines += [f"- {_cell(v)}" for v in violations]
        lines.append("")
    if preview.jobs:
        lines += _job_lines(preview, [_row(job, catalog) for job in preview.jobs])
    else:
        lines.append(
            "No training job changes"
            + (f" ({preview.unchanged_jobs} unchanged)." if preview.unchanged_jobs else ".")
        )
    if preview.other_resources:
        others = ", ".join(f"{n} to {op}" for op, n in preview.other_resources.items())
        lines += [f"Other resources: {others}.", ""]
    if preview.warnings:
        lines += ["<details><summary>Warnings</summary>", "", "```", *preview.warnings, "```"]
        lines += ["", "</details>", ""]
    return "\n".join(lines).rstrip() + "\n"


def _priced(setting: Any, catalog: Catalog) -> tuple[Catalog, str]:
    """The catalog with the stack's organisation prices over it, and a line that says so.

    A sheet path is relative to the project directory, where CI runs this.
    """
    if setting is None or setting == _SECRET:
        return catalog, ""
    try:
        parsed = parse_price_setting(setting, Path.cwd())
        priced = apply_prices(catalog, parsed)
    except PriceSheetError as exc:
        return catalog, f"**⚠️ Shipped prices used:** {_cell(str(exc))}"
    if parsed is None:
        return catalog, ""
    parts = [f"sheet `{parsed.sheet.name}`"] if parsed.sheet else []
    if parsed.discount_percent:
        parts.append(f"{parsed.discount_percent:g}% discount on the other prices")
    return priced, f"Organisation prices (`{_PRICES_KEY}`): {', '.join(parts)}."


def _failure_lines(preview: Preview, violations: list[str]) -> list[str]:
    if not preview.errors:
        return []
    lines = ["**❌ The preview failed**", ""]
    reasons = [e for e in preview.errors if e != "preview failed"]
    if reasons:
        lines += ["```", *reasons, "```", ""]
    elif not violations and not preview.streamed:
        lines += [
            "The engine gave no reason in its JSON (a policy pack's violations, for one, "
            "are only in the event stream: run the preview with "
            "`PULUMI_ENABLE_STREAMING_JSON_PREVIEW=true`), see the CLI output.",
            "",
        ]
    return lines


def _job_lines(preview: Preview, rows: list[_Row]) -> list[str]:
    """The summary line, one table row per job, the cost change and each job's changes."""
    counts = {op: sum(j.op == op for j in preview.jobs) for op in _SHOWN_OPS}
    summary = [f"{counts[op]} {_VERBS[op]}" for op in _SHOWN_OPS if counts[op]]
    tail = f" · {preview.unchanged_jobs} unchanged" if preview.unchanged_jobs else ""
    lines = [f"**{' · '.join(summary)}**{tail}", ""]
    lines += _training_table([row for row in rows if not row.job.tuning])
    lines += _tuning_table([row for row in rows if row.job.tuning])
    known = [r.delta for r in rows if r.delta.kind != "unknown"]
    unknown = [r.job.name for r in rows if r.delta.kind == "unknown"]
    change = sum(known, ZERO)
    total = f"**Hourly cost change: {delta_text(change, why=False) if known else 'unknown'}**"
    total += _why_text(change) if known else ""
    if unknown and known:
        names = ", ".join(f"`{n}`" for n in unknown)
        total += f" (jobs with known prices; unknown for {names})"
    lines += [total, ""]
    ceilings = [r.ceiling_delta for r in rows if r.ceiling_delta.kind != "unknown"]
    if ceilings:
        ceiling = sum(ceilings, ZERO)
        lines += [
            f"Ceiling change (timeouts x $/h; tuning jobs: trials x trial ceiling): "
            f"{delta_text(ceiling, unit='', why=False)}{_why_text(ceiling)}"
            + (" (jobs with known prices)" if len(ceilings) < len(rows) else ""),
            "",
        ]
    # Names without backticks: a job's table row is the one line that quotes its name.
    sources = [f"{r.job.name}: {r.prices}" for r in rows if r.prices]
    if sources:
        lines += [f"Price sources: {_cell('; '.join(sources))}.", ""]
    missing = list(dict.fromkeys(m for r in rows for m in r.missing))
    if missing:
        lines += [f"Prices not in the catalog: {', '.join(missing)}.", ""]
    for job in preview.jobs:
        if job.op in ("replace", "update"):
            lines += _change_lines(job)
    return lines


def _why_text(change: Figure) -> str:
    """`` (why)`` after a change known only as a bound or a range, else nothing."""
    return f" ({_cell('; '.join(change.why))})" if change.why and not change.is_price else ""


def _training_table(rows: list[_Row]) -> list[str]:
    if not rows:
        return []
    lines = [
        "| | Job | Machines | GPUs | Region | Cost per hour | At most |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {_OP_LABEL[row.job.op]} | `{_cell(row.job.name)}` | {_cell(row.machines)} "
            f"| {_cell(row.gpus)} | {row.job.region or '?'} | {_cell(row.cost)} "
            f"| {_cell(row.ceiling)} |"
        )
    return [*lines, ""]


def _tuning_table(rows: list[_Row]) -> list[str]:
    """Tuning jobs: trials, one trial's hardware, all parallel trials' price, the ceiling."""
    if not rows:
        return []
    lines = [
        "| | Tuning job | Trials | Machines per trial | GPUs per trial | Region "
        "| Cost per hour, all trials at once | At most, all trials |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {_OP_LABEL[row.job.op]} | `{_cell(row.job.name)}` | {_cell(row.trials)} "
            f"| {_cell(row.machines)} | {_cell(row.gpus)} | {row.job.region or '?'} "
            f"| {_cell(row.cost)} | {_cell(row.ceiling)} |"
        )
    return [*lines, ""]


def _change_lines(job: JobChange) -> list[str]:
    changes = job.changes()
    lines = [f"**`{job.name}`** — {_what(job)}"]
    for change in changes[:_MAX_CHANGES]:
        mark = " (forces replacement)" if change.forces_replacement else ""
        if change.kind == "add":
            lines.append(f"- `{change.path}`: added {_value(change.new)}{mark}")
        elif change.kind == "delete":
            lines.append(f"- `{change.path}`: removed (was {_value(change.old)}){mark}")
        else:
            lines.append(f"- `{change.path}`: {_value(change.old)} → {_value(change.new)}{mark}")
    if len(changes) > _MAX_CHANGES:
        lines.append(f"- … and {len(changes) - _MAX_CHANGES} more")
    lines.append("")
    return lines


def render_markdown(
    text: str,
    catalog: Catalog | None = None,
    *,
    title: str | None = None,
    environ: Mapping[str, str] = NO_ENVIRONMENT,
) -> str:
    """``render(parse_preview(text, environ))``: the comment for the output of ``pulumi preview
    --json`` (``environ``: the environment it ran in, ``parse_preview``)."""
    return render(parse_preview(text, environ), catalog, title=title)


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None) -> int:
    """``python -m components.review PREVIEW_JSON [--output FILE] [--title TEXT]``."""
    parser = argparse.ArgumentParser(
        prog="python -m components.review",
        description="Markdown summary of `pulumi preview --json` for a pull request comment.",
    )
    parser.add_argument(
        "preview", help="the saved output of `pulumi preview --json`, or - for stdin"
    )
    parser.add_argument("--output", "-o", help="write the markdown here instead of stdout")
    parser.add_argument("--title", help="heading of the comment (default: Training jobs)")
    args = parser.parse_args(argv)
    out = stdout or sys.stdout
    try:
        if args.preview == "-":
            text = sys.stdin.read()
        else:
            with open(args.preview, encoding="utf-8") as handle:
                text = handle.read()
        # The comment is rendered where the preview ran (the PR's CI job): its environment
        # is the one the plugin read a default provider's GOOGLE_REGION... from.
        markdown = render_markdown(text, title=args.title, environ=os.environ)
    except (OSError, ReviewError) as exc:
        print(f"components.review: {exc}", file=sys.stderr)
        return 2
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(markdown)
    else:
        out.write(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
