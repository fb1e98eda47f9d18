"""The job resources' contract, in one place: what travels between program and provider.

``TrainingJob`` and ``HyperparameterTuningJob`` share it: the same inputs, labels and wire form
(a tuning job's env values sit under ``trialJobSpec``); each has its type token and ``status``.

Type tokens, property names and defaults, the ``status`` output, the job labels, the spec's
wire form (canonical JSON text, env values split out into their own secret property), the
value Pulumi sends for "not known yet", and the form of a job's resource name. The program
(``components.training_job``), the core (``components.core``), the PR renderer
(``components.review``) and the policy pack (``components.policies``) all read it from here.

It imports neither ``pulumi`` nor the Vertex client, so the preview path stays fast: values
Pulumi leaves unknown at preview are recognised by their type name, not by importing the SDK.
``training:endpoint`` and the provider's other stack settings are read in
``components.lifecycle._settings``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal, get_args

__all__ = [
    "CONTINUE_LAST_RUN",
    "COST_FIELDS",
    "DEFAULT_WAIT_TIMEOUT",
    "DELETE_RECORD",
    "ENV_VALUES",
    "EXCLUSIVE_GPUS",
    "EXISTING_JOB",
    "HELD_INSTANCE",
    "HELD_JOBS",
    "HIDDEN_INPUTS",
    "IDENTITY",
    "IDENTITY_LABEL",
    "INPUT_DEFAULTS",
    "INPUT_PROPERTIES",
    "INSTANCE",
    "JOB_PROPERTIES",
    "KEEP_RECORD",
    "KNOB_PROPERTIES",
    "MANAGED_LABELS",
    "OUTPUT_PROPERTIES",
    "OUTPUT_ROOT",
    "OWNER",
    "OWNER_LABEL",
    "PLACEMENT",
    "PROJECT",
    "PROVIDER_KEY",
    "REGION",
    "RUN_KEY",
    "RUN_KEY_TYPE",
    "RUN_LABEL",
    "SECRET_SIGNATURE",
    "SPEC",
    "STATUS",
    "STATUS_FIELDS",
    "TAKE_OVER_HELD_JOB",
    "TRAINING_JOB_TYPE",
    "TRAINING_JOB_TYPE_SUFFIX",
    "TRIAL_JOB_SPEC",
    "TRIGGERS",
    "TUNING_JOB_TYPE",
    "TUNING_JOB_TYPE_SUFFIX",
    "TUNING_STATUS_FIELDS",
    "UNKNOWN",
    "UNKNOWN_VALUES",
    "WAIT_FOR",
    "WAIT_FOR_VALUES",
    "WAIT_TIMEOUT",
    "WaitFor",
    "canonical_json",
    "contains_unknown",
    "copy_document",
    "decode_spec",
    "encode_spec",
    "env_path",
    "is_default_input",
    "is_secret_envelope",
    "is_unknown",
    "merge_env",
    "parse_job_name",
    "split_env",
    "status_of",
]

# --- type tokens and names ----------------------------------------------------------------

TRAINING_JOB_TYPE = "pulumi-python:dynamic/vertex:TrainingJob"
"""The TrainingJob's type token: every existing stack's state names it."""
TRAINING_JOB_TYPE_SUFFIX = ":TrainingJob"
"""How a TrainingJob is recognised in engine output, whatever its provider prefix."""
TUNING_JOB_TYPE = "pulumi-python:dynamic/vertex:HyperparameterTuningJob"
"""The HyperparameterTuningJob's type token."""
TUNING_JOB_TYPE_SUFFIX = ":HyperparameterTuningJob"
"""How a HyperparameterTuningJob is recognised in engine output, whatever its provider prefix."""
RUN_KEY_TYPE = "pulumi-python:dynamic/vertex:RunKey"

PROVIDER_KEY = "__provider"
"""The property the dynamic provider's pickle travels in (by reference: a module and class)."""

_JOB_NAME = re.compile(r"^projects/([^/]+)/locations/([^/]+)/customJobs/([^/]+)$")
_TUNING_JOB_NAME = re.compile(
    r"^projects/([^/]+)/locations/([^/]+)/hyperparameterTuningJobs/([^/]+)$"
)


def _parts(pattern: re.Pattern[str], name: str) -> tuple[str, str, str] | None:
    match = pattern.match(name)
    return (match.group(1), match.group(2), match.group(3)) if match else None


def parse_job_name(name: str) -> tuple[str, str, str] | None:
    """(project, region, id) of ``projects/P/locations/R/customJobs/ID``, or None."""
    return _parts(_JOB_NAME, name)


def parse_tuning_job_name(name: str) -> tuple[str, str, str] | None:
    """(project, region, id) of ``projects/P/locations/R/hyperparameterTuningJobs/ID``, or None."""
    return _parts(_TUNING_JOB_NAME, name)


# --- job labels -----------------------------------------------------------------------------

IDENTITY_LABEL = "pulumi_resource"
"""Label key: hash of (Pulumi project, stack, resource name)."""

RUN_LABEL = "pulumi_run"
"""Label key: keyed hash of the job spec, env values, project, region and triggers."""

MANAGED_LABELS = (IDENTITY_LABEL, RUN_LABEL)

OWNER_LABEL = "pulumi_owner"
"""Label key, for people: ``<project>--<stack>--<resource>`` of the resource that submitted the
job, in label characters (``owner_label_value``). Set only where the job's labels leave room
for it (it never counts against the user's 62); nothing but messages reads it: the identity
label is what decides who holds a job."""

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
DELETE_RECORD = "delete_record_on_delete"
CONTINUE_LAST_RUN = "continue_last_run"
OUTPUT_ROOT = "output_root"
IDENTITY = "identity"
RUN_KEY = "run_key"
INSTANCE = "instance"
"""The stack instance's label part (``components.lifecycle._adoption.instance_of``): a hidden
input the plugin passes (from its stack key); the dynamic resources' is derived from ``run_key``.
A create also writes it to ``status.instance``, where read and delete find it."""
HELD_JOBS = "held_jobs"
HELD_INSTANCE = "held_instance"
"""The ``status.instance`` the state records for the jobs of ``held_jobs`` (a hidden input the
program passes, from the same read of the state): where it is the create's own instance, the
resource's jobs carry the keyed identity, and the create neither reads the held jobs' labels
nor lists the identity of names alone (``components._provider``)."""
EXISTING_JOB = "existing_job"
OWNER = "owner"
TAKE_OVER_HELD_JOB = "take_over_held_job"
PLACEMENT = "placement"
"""The candidate regions (and capacity kinds) of a placed job (``components.core._placement``);
absent for a job that names one region. ``diff`` decides its replaces itself."""

JOB_PROPERTIES = (SPEC, ENV_VALUES, PROJECT, REGION, TRIGGERS)
"""A change of any of these is a different job: replace."""

KNOB_PROPERTIES = (
    WAIT_FOR,
    WAIT_TIMEOUT,
    EXCLUSIVE_GPUS,
    KEEP_RECORD,
    DELETE_RECORD,
    CONTINUE_LAST_RUN,
    IDENTITY,
    EXISTING_JOB,
)
"""Provider-only settings: a change is an update without any API call.

``identity`` is here because renaming a stack or aliasing a resource does not change the job
that already runs; only ``create`` uses it. So is ``existing_job`` (the job a create takes
over instead of submitting one, ``components.lifecycle._adoption``): once the resource holds a job,
naming another or none changes nothing.

``keep_record_on_delete`` and ``delete_record_on_delete``: a delete keeps the job's record
unless the latter (or ``training:deleteRecords``) asks for its deletion; the former, the
setting of states written when deleting was the default, keeps it whatever the rest says.
``continue_last_run``: a create writes into the directory of the run it replaces rather than
a new one (``OUTPUT_ROOT``).
"""

HIDDEN_INPUTS = (
    RUN_KEY,
    INSTANCE,
    HELD_JOBS,
    HELD_INSTANCE,
    OWNER,
    TAKE_OVER_HELD_JOB,
    OUTPUT_ROOT,
)
"""Inputs only ``create`` reads, never compared by ``diff`` and never written to outputs.

``owner`` is ``project/stack/resource`` in plain text, for the ``pulumi_owner`` label (the
identity is a hash: no one can tell from it who holds a job). ``take_over_held_job``
(``training:jobs[].takeOverHeldJob``) is the user's explicit leave to take over an
``existing_job`` whose identity label names another resource or stack
(``components.lifecycle._adoption`` rule 6).

``run_key`` (the stack's secret, ``components._run_key``) keys the run hash of a new job; a
new key changes nothing about a job that already runs. ``held_jobs``: the jobs the stack's last
checkpoint holds for the resource (``components.dynamic._stack_state``), which a create never adopts.

``output_root``: the output directory the project chose for the job (the cloud wiring's
``gs://<bucket>/jobs/<name>``), registered only where the user wrote none. While the spec's
``baseOutputDirectory`` is that root, each new run writes under ``<root>/runs/<run id>``
(``run_directory``), so a replacement never resumes the replaced run's checkpoints. It is
decided by ``create`` alone, so the spec (and the run hash) of a running job never change.
"""

INPUT_PROPERTIES = JOB_PROPERTIES + KNOB_PROPERTIES

INPUT_DEFAULTS: dict[str, Any] = {
    ENV_VALUES: None,
    TRIGGERS: None,
    WAIT_TIMEOUT: None,
    WAIT_FOR: "submitted",
    EXCLUSIVE_GPUS: False,
    KEEP_RECORD: False,
    DELETE_RECORD: False,
    CONTINUE_LAST_RUN: False,
    EXISTING_JOB: None,
    PLACEMENT: None,
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

_JOB_FIELDS = (
    "job_name",
    "job_id",
    "state",
    "console_url",
    "create_time",
    "start_time",
    "end_time",
    "error_message",
)
"""What every kind of job reports about itself (``components.vertex.api``)."""
COST_FIELDS = (
    "hourly_cost_usd",
    "max_cost_usd",
    "cost_basis",
    "hourly_cost_low_usd",
    "hourly_cost_high_usd",
    "max_cost_low_usd",
    "max_cost_high_usd",
)
"""The ``status`` fields of a job's price (``components.costs._pricing.cost_fields``): the two
figures states have always held, ``cost_basis`` (what they are: ``price``, ``at most``, ``at
least``, ``range``, ``unknown``) and the ends known of each."""
_RUN_FIELDS = ("run_hash", "adopted", *COST_FIELDS)
"""What the provider adds: the run's hash, whether it was adopted, its price (the figures and
what they are: ``components.costs._pricing.cost_fields``)."""

STATUS_FIELDS = (*_JOB_FIELDS, "output_dir", "model_dir", "web_access_uris", *_RUN_FIELDS)
"""What the one output ``status`` holds: the job as Vertex last reported it, and its price.

One property rather than fourteen: the SDK makes an Output (an asyncio task) per property of
every resource and waits on all of them, so each property costs every job of a stack (a
preview of 200 jobs took about 14% less time with them folded into one). ``TrainingJob``
still offers each field as an attribute (``job.state``).
"""

TUNING_STATUS_FIELDS = (
    *_JOB_FIELDS,
    "output_dir",
    "trial_counts",
    "best_trial",
    "best_trial_model_dir",
    *_RUN_FIELDS,
    "trial_hourly_cost_usd",
)
"""The ``status`` of a HyperparameterTuningJob: its ``STATUS_FIELDS`` less what belongs to one
job (``model_dir``, ``web_access_uris``), plus its trials: ``trial_counts`` (by trial state,
``SUCCEEDED``, ``INFEASIBLE``, ``ACTIVE``...), ``best_trial`` (``id``, ``parameters``,
``metric_id``, ``value``: the succeeded trial best for the study's first metric's goal, or
None), ``best_trial_model_dir`` (``<baseOutputDirectory>/<trial id>/model/``) and the price of
one trial (``hourly_cost_usd`` is every parallel trial at once, ``max_cost_usd`` all trials)."""

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

UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
"""What the engine sends for a value not known yet (``pulumi.runtime.rpc.UNKNOWN``)."""
UNKNOWN_VALUES = frozenset(
    {
        UNKNOWN,  # and, as the engine prints previews, by type: bool, number, array, object
        "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",
        "3eeb2bf0-c639-47a8-9e75-3b44932eb421",
        "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",
        "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",
    }
)
_ENV_PATH = re.compile(
    r"^(?:(\w+)\.)?workerPoolSpecs\[(\d+)\]\.(pythonPackageSpec|containerSpec)\.env\[(\d+)\]\.value$"
)

TRIAL_JOB_SPEC = "trialJobSpec"
"""Where a tuning job's worker pools (and so its env vars) sit: ``split_env(..., under=)``."""


SECRET_SIGNATURE = ("4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270")
"""(key, value) that marks the engine's envelope of a secret in checkpoints and in the events of
a streamed preview: ``{key: value, "ciphertext": ...}`` (or ``"plaintext"``)."""


def is_secret_envelope(value: Any) -> bool:
    """True for the engine's envelope of a secret value (``SECRET_SIGNATURE``)."""
    key, mark = SECRET_SIGNATURE
    return isinstance(value, Mapping) and value.get(key) == mark


def is_unknown(value: Any) -> bool:
    """True for a value Pulumi has not computed yet (preview)."""
    if isinstance(value, str):
        return value == UNKNOWN
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


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal data, equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def encode_spec(document: Mapping[str, Any]) -> str:
    """``spec`` as the resource carries it: canonical JSON text (sorted keys, no spaces).

    One string rather than a tree of values: the SDK and the engine move a nested property
    value by value (a preview of 200 no-op resources carrying the nested spec took about
    0.25 s longer than with the same spec as text), while the CLI still shows the text
    decoded (``spec: (json) {...}``), with a nested diff. Sorted keys make the text a function
    of the content, so a new release never changes a job's text.
    """
    return canonical_json(document)


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


def env_path(pool: int, kind: str, index: int, *, under: str | None = None) -> str:
    """``workerPoolSpecs[0].pythonPackageSpec.env[1].value``: where an env value sits.

    ``under`` names the field holding the worker pools when they are not at the top level (a
    tuning job's ``trialJobSpec``): ``trialJobSpec.workerPoolSpecs[0]...``.
    """
    prefix = f"{under}." if under else ""
    return f"{prefix}workerPoolSpecs[{pool}].{kind}.env[{index}].value"


def split_env(
    document: Mapping[str, Any], *, under: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the spec with env values removed, ``{env value path: value}``).

    The names stay in the spec, so a preview shows which variables a job gets; the values
    travel in a separate input that is marked secret. ``under``: see ``env_path``.
    """
    spec = copy_document(document)
    values: dict[str, Any] = {}
    holder = spec.get(under) if under else spec
    pools = holder.get("workerPoolSpecs") if isinstance(holder, dict) else None
    for i, pool in enumerate(pools if isinstance(pools, list) else []):
        if not isinstance(pool, dict):
            continue
        for kind in ("pythonPackageSpec", "containerSpec"):
            task = pool.get(kind)
            if not isinstance(task, dict) or not isinstance(task.get("env"), list):
                continue
            for j, var in enumerate(task["env"]):
                if isinstance(var, dict) and "value" in var:
                    values[env_path(i, kind, j, under=under)] = var.pop("value")
    return spec, values


def merge_env(
    spec: Mapping[str, Any], values: Mapping[str, Any] | None, *, under: str | None = None
) -> dict[str, Any]:
    """The full spec: ``spec`` with the values of ``split_env`` (same ``under``) put back.

    Raises ``ValueError`` naming a path that does not lead to an env var of the spec.
    """
    document = copy_document(spec)
    for path, value in (values or {}).items():
        match = _ENV_PATH.match(path)
        try:
            if match is None or match.group(1) != under:
                raise LookupError
            pool, kind, index = int(match.group(2)), match.group(3), int(match.group(4))
            holder = document[under] if under else document
            var = holder["workerPoolSpecs"][pool][kind]["env"][index]
            if not isinstance(var, dict):
                raise LookupError
        except (LookupError, TypeError):
            raise ValueError(f"{path} is not an env var of the spec") from None
        var["value"] = value
    return document
