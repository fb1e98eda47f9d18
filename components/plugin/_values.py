"""Pulumi property values (``pulumi.provider.experimental.PropertyValue``) ↔ plain data.

The lifecycle core reads plain JSON-shaped data, with a value not known yet as the engine's
UNKNOWN text (``components.lifecycle._wire.UNKNOWN``); the plugin's requests and answers carry
``PropertyValue`` trees, whose numbers are floats and whose secrets are flags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from pulumi.provider.experimental.property_value import Computed, PropertyValue

from ..lifecycle._wire import UNKNOWN

__all__ = ["plain", "plain_map", "secret_texts", "wrap", "wrap_map"]


def plain(value: PropertyValue) -> Any:
    """``value`` as plain data: whole numbers as ints (every count in the API is one)."""
    inner = value.value
    if isinstance(inner, Computed):
        return UNKNOWN
    if isinstance(inner, bool) or inner is None or isinstance(inner, str):
        return inner
    if isinstance(inner, float):
        return int(inner) if inner.is_integer() else inner
    if isinstance(inner, Mapping):
        return {k: plain(v) for k, v in inner.items()}
    if isinstance(inner, Sequence):
        return [plain(cast(PropertyValue, v)) for v in inner]
    return str(inner)  # assets, archives, resource references: not job values


def plain_map(values: Mapping[str, PropertyValue]) -> dict[str, Any]:
    return {k: plain(v) for k, v in values.items()}


def wrap(value: Any, *, secret: bool = False) -> PropertyValue:
    """Plain data as a ``PropertyValue`` (``secret`` marks the whole of it)."""
    if isinstance(value, PropertyValue):
        return value.with_secret(True) if secret else value
    if value is None or isinstance(value, bool | str):
        result = PropertyValue(value)
    elif isinstance(value, int | float):
        result = PropertyValue(float(value))
    elif isinstance(value, Mapping):
        result = PropertyValue({str(k): wrap(v) for k, v in value.items()})
    elif isinstance(value, list | tuple):
        result = PropertyValue([wrap(v) for v in value])
    else:
        result = PropertyValue(str(value))
    return result.with_secret(True) if secret else result


def wrap_map(values: Mapping[str, Any]) -> dict[str, PropertyValue]:
    return {k: wrap(v) for k, v in values.items()}


def secret_texts(value: PropertyValue) -> list[str]:
    """Every text (and number) under a secret in ``value``: what an error must never show."""
    found: list[str] = []

    def walk(item: PropertyValue, secret: bool) -> None:
        secret = secret or item.is_secret
        inner = item.value
        if isinstance(inner, Mapping):
            for child in inner.values():
                walk(child, secret)
        elif isinstance(inner, Sequence) and not isinstance(inner, str):
            for child in inner:
                walk(child, secret)
        elif secret and isinstance(inner, str | float) and not isinstance(inner, bool):
            text = str(plain(item))
            if text:
                found.append(text)

    walk(value, False)
    return found
