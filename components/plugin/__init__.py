"""The ``gpu-training`` Pulumi resource provider plugin: the job resources for every language.

``pulumi-resource-gpu-training`` serves ``gpu-training:vertex:TrainingJob`` and
``gpu-training:vertex:HyperparameterTuningJob`` (schema: ``schema.json``, the v1 REST shape) on
the lifecycle core the dynamic provider uses too (``components.core``). docs/plugin.md
says how to install and use it.

One message type, two files: ``pulumi.provider.experimental`` (any of its modules) imports
``pulumi.runtime.proto.status_pb2``, which registers ``google.rpc.Status`` from a file of its own
(``google/protobuf/status.proto``); the Vertex client registers the same type from
``google/rpc/status.proto``, and protobuf refuses the second (``duplicate symbol
'google.rpc.Status'``): the plugin's first API call failed. Importing this package first makes
the SDK's module the client's (the same message, field for field), so each is registered once.
It is one of the two changes the plugin's process makes to code not its own, beside the core's
import of the client library's job service alone (``components/vertex/_library.py``):
docs/patches.md lists both; ``tests/test_patches.py`` fails when upstream makes this one
unneeded.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def _share_status_type() -> None:
    try:
        from google.rpc import status_pb2
    except ImportError:  # no Vertex client here (the policy pack's virtualenv): no conflict
        return
    sys.modules.setdefault("pulumi.runtime.proto.status_pb2", status_pb2)


_share_status_type()


def main() -> None:
    """The plugin executable's entry point (imports the SDK's server only when run)."""
    from ._server import main as serve

    serve()
