"""The stack's last checkpoint, read from its backend as a user would: ``pulumi stack export``.

Both doors read it where the engine tells them nothing: the provider plugin for the jobs the
stack holds (``components.plugin._stack_state``), and the dynamic resources' run key for the
creates a killed ``pulumi up`` left pending (``pending_creates``, ``components._run_key``). The
command runs in the provider's working directory (the engine starts providers in the program's
directory) with its environment (the engine's: ``PULUMI_BACKEND_URL``, ``PULUMI_HOME``...),
without ``--show-secrets`` unless asked: nothing is decrypted, and stdin is closed, so it never
waits on a passphrase prompt.

What a killed ``pulumi up`` leaves: the engine records a create before it calls the provider
(``pending_operations``, type ``creating``, with the resource's checked inputs) and removes it
once the create's answer is in the state. A kill in between leaves the record, and the engine
keeps it across later commands (``pulumi destroy`` included) until ``pulumi refresh
--clear-pending-creates`` drops it. Nothing here imports ``pulumi``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from typing import Any, NamedTuple

from .._errors import TrainingJobError

__all__ = [
    "EXPORT_TIMEOUT",
    "PendingCreate",
    "StateUnreadable",
    "pending_creates",
    "read_deployment",
    "stack_of",
]

EXPORT_TIMEOUT = 120.0
"""Seconds ``pulumi stack export`` may take (a loaded machine, a remote backend)."""


class StateUnreadable(TrainingJobError):
    """The stack's state could not be read from its backend."""


def stack_of(urn: str) -> str:
    """The stack of ``urn:pulumi:STACK::PROJECT::TYPE::NAME``."""
    return urn.split("::", 1)[0].rsplit(":", 1)[-1]


def read_deployment(
    stack: str, timeout: float = EXPORT_TIMEOUT, *, show_secrets: bool = False
) -> Mapping[str, Any]:
    """The ``deployment`` of the last checkpoint of ``stack`` (its secrets decrypted with
    ``show_secrets``: the stack's secrets provider must then be usable without a prompt);
    raises ``StateUnreadable`` with the reason."""
    pulumi = shutil.which("pulumi")
    if pulumi is None:
        raise StateUnreadable("`pulumi` is not on PATH")
    env = {**os.environ, "PULUMI_SKIP_UPDATE_CHECK": "true"}
    command = [pulumi, "stack", "export", "--stack", stack]
    try:
        done = subprocess.run(
            [*command, "--show-secrets"] if show_secrets else command,
            capture_output=True,
            stdin=subprocess.DEVNULL,  # never a passphrase prompt
            env=env,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StateUnreadable(f"`pulumi stack export` did not run: {exc}") from None
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        raise StateUnreadable(
            f"`pulumi stack export` failed: {reason[-1] if reason else done.returncode}"
        )
    try:
        deployment = json.loads(done.stdout).get("deployment") or {}
    except (ValueError, AttributeError):
        raise StateUnreadable("`pulumi stack export` printed no deployment") from None
    if not isinstance(deployment, Mapping):
        raise StateUnreadable("`pulumi stack export` printed no deployment")
    return deployment


class PendingCreate(NamedTuple):
    """A create the engine recorded and never saw answered: the resource it was for."""

    urn: str
    type_token: str
    inputs: Mapping[str, Any]


def pending_creates(deployment: Mapping[str, Any], tokens: frozenset[str]) -> list[PendingCreate]:
    """The pending creates in ``deployment`` of resources whose type is in ``tokens`` (a
    child's type is ``PARENT$TYPE``), once per resource, in the checkpoint's order."""
    found: dict[str, PendingCreate] = {}
    for operation in deployment.get("pending_operations") or ():
        if not isinstance(operation, Mapping) or operation.get("type") != "creating":
            continue
        resource = operation.get("resource")
        if not isinstance(resource, Mapping):
            continue
        urn, kind = resource.get("urn"), str(resource.get("type", "")).rsplit("$", 1)[-1]
        inputs = resource.get("inputs")
        if isinstance(urn, str) and kind in tokens and isinstance(inputs, Mapping):
            found.setdefault(urn, PendingCreate(urn, kind, inputs))
    return list(found.values())
