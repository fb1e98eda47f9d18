"""The plugin's package first: it keeps the SDK and the Vertex client from registering
``google.rpc.Status`` twice (``components.plugin``)."""

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import components.plugin  # noqa: F401

T = TypeVar("T")


def run_isolated(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on an event loop of its own, leaving the thread's current loop as it
    was: ``asyncio.run`` unsets it, and the program tests' Pulumi mocks (run later in the same
    process) need one."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()
