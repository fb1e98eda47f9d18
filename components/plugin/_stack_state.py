"""The jobs the stack holds, for a plugin that has no program to ask.

A create never adopts a job the stack holds (``components.lifecycle._adoption``, rule 3). The
dynamic resources learn those jobs from their program (``components.dynamic._stack_state``:
the engine's ``readStackResourceOutputs`` invoke); a resource plugin has no resource monitor,
and for a replace the engine decides by itself (``pulumi up --replace``, ``--target-replace``,
a tainted resource) it calls ``check`` without the old resource, never ``diff``, and
``create`` with the new inputs only: to the plugin it is a new resource whose job already
runs, as after a killed ``up``. So the plugin asks the backend, as a user would:
``pulumi stack export --stack STACK`` (no ``--show-secrets``: nothing is decrypted), run in
the plugin's working directory (the engine starts it in the program's directory) with its
environment (the engine's: ``PULUMI_BACKEND_URL``, ``PULUMI_HOME``...). During an update the
backend's checkpoint is current: it holds the resource being replaced, never the replacement.

Only when a create's look-up finds an active job of the resource's identity
(``RunLabels.read_held``): a first ``up`` runs no export. If the state cannot be read (no
``pulumi`` on ``PATH``, a backend that refuses), nothing is held: a warning says so, and the
core's guard keeps the running job in a replace (``adopted_here``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ..lifecycle._adoption import instance_of, state_unreadable
from ..lifecycle._checkpoint import EXPORT_TIMEOUT, StateUnreadable, read_deployment, stack_of

__all__ = [
    "EXPORT_TIMEOUT",
    "StateCache",
    "StateUnreadable",
    "held_by_urn",
    "held_reader",
    "read_resources",
    "stack_instance",
]


def _name_of(urn: str) -> str:
    """The resource name of ``urn:pulumi:STACK::PROJECT::TYPE::NAME``."""
    return urn.rsplit("::", 1)[-1]


def read_resources(
    urn: str, timeout: float = EXPORT_TIMEOUT, *, show_secrets: bool = False
) -> list[Mapping[str, Any]]:
    """The resources of the last checkpoint of the stack ``urn`` belongs to (their secrets
    decrypted with ``show_secrets``: the stack's secrets provider must then be usable without
    a prompt); raises ``StateUnreadable`` with the reason."""
    deployment = read_deployment(stack_of(urn), timeout, show_secrets=show_secrets)
    resources = deployment.get("resources") or []
    if not isinstance(resources, list):
        raise StateUnreadable("`pulumi stack export` printed no deployment")
    return [r for r in resources if isinstance(r, Mapping)]


class StateCache:
    """``read(urn)`` once per stack for the life of the provider process (one ``pulumi``
    command): a replace of 200 jobs runs one export, not 200. The checkpoint read at the first
    need holds every resource the command started with, the ones it replaces included; what
    the command adds since (new jobs) is never held by another create of the same command."""

    def __init__(self, read: Callable[[str], list[Mapping[str, Any]]]) -> None:
        self._read = read
        self._lock = threading.Lock()
        self._stacks: dict[str, list[Mapping[str, Any]]] = {}

    def __call__(self, urn: str) -> list[Mapping[str, Any]]:
        stack = stack_of(urn)
        with self._lock:  # the creates that need it wait for the one read
            if stack not in self._stacks:
                self._stacks[stack] = self._read(urn)  # an error is not kept: the next asks again
            return self._stacks[stack]


def held_by_urn(resources: list[Mapping[str, Any]], tokens: frozenset[str]) -> dict[str, list[str]]:
    """``{urn: [job name, ...]}`` of the resources of a type in ``tokens`` (a child's type is
    ``PARENT$TYPE``) that hold a job, one resource pending deletion included."""
    found: dict[str, list[str]] = {}
    for resource in resources:
        kind = str(resource.get("type", "")).rsplit("$", 1)[-1]
        job, urn = resource.get("id"), resource.get("urn")
        if kind in tokens and isinstance(job, str) and job and isinstance(urn, str):
            found.setdefault(urn, []).append(job)
    return found


def held_reader(
    urn: str,
    identity_of: Callable[[str], str | None],
    tokens: frozenset[str],
    warn: Callable[[str], None],
    read: Callable[[str], list[Mapping[str, Any]]] = read_resources,
) -> Callable[[], list[str]]:
    """What ``RunLabels.read_held`` calls for the resource ``urn``: the names of the jobs the
    stack holds for the resources whose identity (``identity_of(urn)``) is ``urn``'s (the
    state is read on the first call only)."""

    answer: list[list[str]] = []  # read once, however often asked

    def held() -> list[str]:
        if answer:
            return list(answer[0])
        try:
            resources = read(urn)
        except StateUnreadable as exc:
            warn(state_unreadable(exc))
            resources = []
        identity = identity_of(urn)
        answer.append(
            [
                job
                for other, jobs in held_by_urn(resources, tokens).items()
                if identity_of(other) == identity
                for job in jobs
            ]
        )
        return list(answer[0])

    return held


PROVIDER_TYPE = "pulumi:providers:gpu-training"


def stack_instance(
    urn: str,
    key_input: str,
    instance_input: str,
    read: Callable[..., list[Mapping[str, Any]]] = read_resources,
) -> tuple[bool, str | None]:
    """For a new provider ``urn`` (no state of its own: a first ``up``, or a provider the
    engine names anew, as a default provider at each new version or download URL), the stack
    instance of the gpu-training provider it succeeds in the stack's checkpoint: the one of
    the same name (a provider being replaced), else, for a default provider, the earlier
    default ones. Answers (found, instance): (False, None) when there is none to succeed, (True, None) for one made before
    keys (its stack keeps matching on names alone). The instance is read from
    ``instance_input`` (plain), else from ``key_input`` (a secret: read decrypted, only then);
    raises ``StateUnreadable``."""
    name = _name_of(urn)
    earlier = [
        r for r in read(urn) if r.get("type") == PROVIDER_TYPE and isinstance(r.get("urn"), str)
    ]
    same = [r for r in earlier if _name_of(r["urn"]) == name]
    if not same and name.startswith("default"):
        same = [r for r in earlier if _name_of(r["urn"]).startswith("default")]
    if not same:
        return False, None
    found = {_instance_in(r, key_input, instance_input) for r in same}
    if _SECRET in found:
        by_urn = {r.get("urn"): r for r in read(urn, show_secrets=True)}
        found = {
            _instance_in(by_urn.get(r["urn"], r), key_input, instance_input, decrypted=True)
            for r in same
        }
    if len(found) != 1 or _SECRET in found:
        names = ", ".join(sorted(_name_of(r["urn"]) for r in same))
        raise StateUnreadable(
            f"the stack's earlier gpu-training providers ({names}) do not name one stack instance"
        )
    return True, found.pop()


_SECRET = "\0secret"
"""``_instance_in``'s answer for a provider whose instance only its secret key gives."""


def _instance_in(
    resource: Mapping[str, Any], key_input: str, instance_input: str, *, decrypted: bool = False
) -> str | None:
    inputs = resource.get("inputs")
    inputs = inputs if isinstance(inputs, Mapping) else {}
    instance = inputs.get(instance_input)
    if isinstance(instance, str) and instance:
        return instance
    key = inputs.get(key_input)
    if key is None:
        return None
    if isinstance(key, Mapping):  # a secret as `stack export` writes it
        plain = key.get("plaintext")
        if not decrypted or not isinstance(plain, str):
            return _SECRET
        try:
            key = json.loads(plain)
        except ValueError:
            return _SECRET
    return instance_of(key) if isinstance(key, str) and key else None
