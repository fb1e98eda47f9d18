"""What the stack's last checkpoint holds: the job of each job resource, by its identity.

A create never adopts a job the stack holds (``components.lifecycle._adoption``, rule 3), but the
provider cannot see the state: a replace the engine decides by itself (``pulumi up
--replace``, ``--target-replace``, a tainted resource) calls neither ``diff`` nor ``check``
with the old resource, and ``create`` gets only the new inputs. The program can: the engine's
built-in ``pulumi:pulumi:readStackResourceOutputs`` returns the outputs of every resource of a
stack from its backend (``backend.GetStackResourceOutputs`` in pkg/v3), this stack included.
The program reads it once per run (a preview or an update), before the jobs are registered,
and passes each job resource the names of the jobs the state holds for its identity (the
``held_jobs`` input, which ``diff`` ignores).

If the state cannot be read (a backend that refuses, a program run under mocks), nothing is
held: one warning says so, and the provider's own guard keeps the running job in a replace
(``components.lifecycle._adoption.adopted_here``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from ..lifecycle._adoption import state_unreadable
from ..lifecycle._wire import (
    IDENTITY,
    TRAINING_JOB_TYPE_SUFFIX,
    TUNING_JOB_TYPE_SUFFIX,
    status_of,
)

__all__ = [
    "READ_STACK_RESOURCE_OUTPUTS",
    "held_instance",
    "held_jobs",
    "held_outputs",
    "jobs_by_identity",
    "outputs_by_identity",
]

READ_STACK_RESOURCE_OUTPUTS = "pulumi:pulumi:readStackResourceOutputs"

_JOB_TYPES = (TRAINING_JOB_TYPE_SUFFIX, TUNING_JOB_TYPE_SUFFIX)

# One read per program run, told apart by its resource monitor (unit tests run many programs
# in one process), as the run key is (``components._run_key``).
_read: dict[int, tuple[Any, dict[str, list[Mapping[str, Any]]]]] = {}


def outputs_by_identity(resources: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """``{identity: [outputs, ...]}`` of the job resources in ``resources`` (the invoke's
    ``outputs``: ``{urn: {"type", "outputs"}}``) that hold a job; anything malformed is
    skipped."""
    found: dict[str, list[Mapping[str, Any]]] = {}
    for entry in resources.values():
        if not isinstance(entry, Mapping) or not str(entry.get("type", "")).endswith(_JOB_TYPES):
            continue
        outputs = entry.get("outputs")
        if not isinstance(outputs, Mapping):
            continue
        identity, name = outputs.get(IDENTITY), status_of(outputs).get("job_name")
        if isinstance(identity, str) and isinstance(name, str) and name:
            found.setdefault(identity, []).append(outputs)
    return found


def jobs_by_identity(resources: Mapping[str, Any]) -> dict[str, list[str]]:
    """``{identity: [job name, ...]}`` of the job resources in ``resources``."""
    return {
        identity: [str(status_of(outputs)["job_name"]) for outputs in held]
        for identity, held in outputs_by_identity(resources).items()
    }


def _stack_name() -> str:
    return f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}"


def _read_state() -> dict[str, list[Mapping[str, Any]]]:
    try:
        result = pulumi.runtime.invoke(READ_STACK_RESOURCE_OUTPUTS, {"stackName": _stack_name()})
    except Exception as exc:
        if "unknown stack" in str(exc):
            return {}  # a stack with no checkpoint yet holds nothing
        pulumi.log.warn(state_unreadable(exc))
        return {}
    value = result.value if isinstance(result.value, Mapping) else {}
    resources = value.get("outputs")
    return outputs_by_identity(resources) if isinstance(resources, Mapping) else {}


def held_outputs(identity: str) -> list[Mapping[str, Any]]:
    """The outputs of the job resources the stack's last checkpoint holds for ``identity``
    (the state is read once per program run)."""
    from pulumi.runtime import settings

    monitor = settings.SETTINGS.monitor
    found = _read.get(id(monitor))
    if found is None or found[0] is not monitor:
        found = _read[id(monitor)] = (monitor, _read_state())
    return list(found[1].get(identity, ()))


def held_jobs(identity: str) -> list[str]:
    """The names of the jobs the stack's last checkpoint holds for ``identity`` (sorted)."""
    return sorted(str(status_of(outputs)["job_name"]) for outputs in held_outputs(identity))


def held_instance(identity: str) -> str | None:
    """The ``status.instance`` every job resource the last checkpoint holds for ``identity``
    records, or None where one records none (a state written before instances counted, an
    adopted job of names alone) or they differ."""
    found = {status_of(outputs).get("instance") for outputs in held_outputs(identity)}
    [instance] = found if len(found) == 1 else [None]
    return instance if isinstance(instance, str) and instance else None
