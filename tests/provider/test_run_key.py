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
