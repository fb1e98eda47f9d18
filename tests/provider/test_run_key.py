"""The stack's run key resource: drawn once, never changed, never shown."""

from __future__ import annotations

import base64
import re

from pulumi.dynamic.dynamic import serialize_provider

from components._run_key import KEY, RUN_KEY_RESOURCE_NAME, RunKeyProvider


def test_create_draws_a_fresh_256_bit_key():
    provider = RunKeyProvider()
    first, second = provider.create({}), provider.create({})
    assert first.outs is not None and second.outs is not None
    assert first.id == RUN_KEY_RESOURCE_NAME
    assert re.fullmatch(r"[0-9a-f]{64}", first.outs[KEY])
    assert first.outs[KEY] != second.outs[KEY]


def test_the_key_never_changes_once_drawn():
    provider = RunKeyProvider()
    created = provider.create({})
    assert created.outs is not None
    assert provider.diff(created.id, created.outs, {KEY: None}).changes is False
    read = provider.read(created.id, created.outs)
    assert read.id == created.id and read.outs == created.outs


def test_the_provider_is_pickled_by_reference():
    raw = base64.b64decode(serialize_provider(RunKeyProvider()))
    assert b"components._run_key" in raw and b"RunKeyProvider" in raw
    assert b"def " not in raw and len(raw) < 200


def test_outside_the_engine_read_and_delete_look_for_nothing(monkeypatch):
    # No engine request names a stack: no checkpoint is read (a test, a direct call).
    import components.lifecycle._checkpoint as checkpoint

    def refuse(*_args, **_kwargs):
        raise AssertionError("the checkpoint was read")

    monkeypatch.setattr(checkpoint, "read_deployment", refuse)
    provider = RunKeyProvider()
    created = provider.create({})
    assert created.outs is not None
    assert provider.read(created.id, created.outs).outs == created.outs
    provider.delete(created.id, created.outs)


def test_pending_creates_are_the_job_creates_the_engine_never_saw_answered():
    from components.lifecycle._checkpoint import pending_creates

    job = "pulumi-python:dynamic/vertex:TrainingJob"
    inputs = {"identity": "abc", "project": "p", "region": "us-central1"}
    deployment = {
        "resources": [{"urn": "urn:pulumi:s::p::pulumi:pulumi:Stack::p-s"}],
        "pending_operations": [
            {"type": "creating", "resource": {"urn": "urn:a", "type": job, "inputs": inputs}},
            # the same resource twice, another kind of operation, another type, a child's type
            {"type": "creating", "resource": {"urn": "urn:a", "type": job, "inputs": {}}},
            {"type": "deleting", "resource": {"urn": "urn:b", "type": job, "inputs": inputs}},
            {"type": "creating", "resource": {"urn": "urn:c", "type": "x:y:Z", "inputs": {}}},
            {"type": "creating", "resource": {"urn": "urn:d", "type": f"my:C${job}", "inputs": {}}},
            {"type": "creating", "resource": "not a resource"},
            "not an operation",
        ],
    }
    found = pending_creates(deployment, frozenset({job}))
    assert [(p.urn, p.inputs) for p in found] == [("urn:a", inputs), ("urn:d", {})]
    assert pending_creates({"resources": []}, frozenset({job})) == []
