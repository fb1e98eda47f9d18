"""The ``gpu-training`` Pulumi resource provider plugin: the job resources for every language.

``pulumi-resource-gpu-training`` serves ``gpu-training:vertex:TrainingJob`` and
``gpu-training:vertex:HyperparameterTuningJob`` (schema: ``schema.json``, the v1 REST shape) on
the lifecycle core the dynamic provider uses (``components._provider``). docs/provider.md,
"The provider plugin", says how to install and use it.
"""

from __future__ import annotations

__all__ = ["main"]


def main() -> None:
    """The plugin executable's entry point (imports the SDK's server only when run)."""
    from ._server import main as serve

    serve()
