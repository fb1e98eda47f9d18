"""The one result type every input format's reader gives: ``LoadedSpec``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from components._spec import JobSpec

__all__ = ["Format", "LoadedSpec"]

Format = Literal[
    "custom-job",
    "custom-job-spec",
    "create-custom-job-request",
    "legacy-config",
    "gcloud-command",
]


@dataclass
class LoadedSpec:
    """A spec read from a file, the format it was in, and notes on what was assumed."""

    spec: JobSpec
    format: Format
    notes: list[str] = field(default_factory=list)
    scale_tier: str | None = None
    """The legacy scale tier the cluster came from (None for CUSTOM): it has its own price."""
