"""Stable identities for training jobs, carried in job labels
(``components._wire.IDENTITY_LABEL`` and ``RUN_LABEL``).

The provider never sees a resource's URN, so the program hashes what makes the URN unique
(project, stack, resource name) into a label value and passes it as a hidden input. Together
with a hash of everything that defines a run, that label lets ``create`` find a job it
submitted earlier whose result was never recorded (a crash or a lost response) and adopt it
instead of starting a second GPU job.

Nothing here imports ``pulumi`` or the Vertex client: it runs on the preview path.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

from components._wire import canonical_json

__all__ = ["identity_label", "run_hash"]

# 24 hex digits (96 bits): collisions between a stack's resources are out of reach, and the
# value fits the label rules (lowercase letters, digits, '-', '_'; at most 63 characters).
_HASH_CHARS = 24


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_HASH_CHARS]


def identity_label(project: str, stack: str, name: str) -> str:
    """The label value naming one resource of one stack of one Pulumi project."""
    # The separator cannot occur in names Pulumi accepts for projects and stacks; NUL keeps
    # ("a/b", "c") and ("a", "b/c") apart whatever the resource name holds.
    return _digest("\0".join((project, stack, name)))


def run_hash(
    document: Mapping[str, Any],
    *,
    project: str,
    region: str,
    triggers: Any,
    key: str | None = None,
) -> str:
    """The label value of one run: equal inputs, equal hash; any change, a new hash.

    ``document`` is the full job spec including env values: a changed secret is a new run.
    With the stack's run key (``components._run_key``) the hash is an HMAC: a reader of the
    label or of the state cannot test guesses of an env value without the key (labels reach
    places a job's spec does not, such as billing exports). Without a key it is the plain
    hash that states written before the key existed carry.
    """
    payload = canonical_json(
        {"spec": document, "project": project, "region": region, "triggers": triggers}
    ).encode("utf-8")
    if key is None:
        return hashlib.sha256(payload).hexdigest()[:_HASH_CHARS]
    return hmac.new(key.encode("utf-8"), payload, hashlib.sha256).hexdigest()[:_HASH_CHARS]
