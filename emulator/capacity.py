"""Regions without capacity for a GPU: ``serve --no-capacity GPU@REGION``.

Vertex AI can accept a job its quota allows and still not find the machines for it: the job
goes PENDING, then FAILED with google.rpc code 8 (``RESOURCE_EXHAUSTED``) and the message
``Resources are insufficient in region: R. Please try a different region.`` The emulator does
the same to a CustomJob (or a tuning job, whose trials would all fail so) that asks for such a
GPU in such a region, so a stack can rehearse moving a job to its next candidate region
(``components.core._placement``). A job that is cancelled before it fails ends CANCELLED.

Nothing here imports the project's ``components`` package.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .quotas import MetricTable

if TYPE_CHECKING:
    from .protos import Kind

__all__ = ["INSUFFICIENT", "Capacity", "job_accelerators", "parse_gap"]

INSUFFICIENT = "Resources are insufficient in region: {region}. Please try a different region."
"""Vertex AI's message for a job that found no machines (its region filled in)."""
_GAP = re.compile(r"(?P<gpu>[A-Z0-9_]{1,63})@(?P<region>[a-z0-9-]{1,63})")


def parse_gap(text: str, table: MetricTable) -> tuple[str, str]:
    """``--no-capacity NVIDIA_TESLA_T4@us-central1`` → (accelerator type, region).

    Raises ValueError naming the flag and what is wrong.
    """
    m = _GAP.fullmatch(text.strip())
    if m is None:
        raise ValueError(
            f"--no-capacity {text[:80]!r}: expected GPU@REGION, e.g. NVIDIA_TESLA_T4@us-central1"
        )
    known = sorted({acc for acc, _ in table.by_resource if not acc.startswith("cpu:")})
    if known and m["gpu"] not in known:
        raise ValueError(
            f"--no-capacity {text[:80]!r}: unknown accelerator {m['gpu']!r} "
            f"(known: {', '.join(known[:6])}, ...)"
        )
    if table.regions and m["region"] not in table.regions:
        raise ValueError(f"--no-capacity {text[:80]!r}: unknown region {m['region']!r}")
    return m["gpu"], m["region"]


def job_accelerators(job: Any, kind: Kind, table: MetricTable) -> set[str]:
    """The accelerator types a job's machines carry (a tuning job's: its trials')."""
    from google.cloud import aiplatform_v1 as aip

    from . import tuning
    from .protos import TUNING_JOB

    spec = tuning.custom_job_view(job).job_spec if kind is TUNING_JOB else job.job_spec
    found: set[str] = set()
    for pool in spec.worker_pool_specs:
        machine = pool.machine_spec
        if machine.accelerator_type:
            try:
                name = aip.AcceleratorType(machine.accelerator_type).name
            except ValueError:
                continue
            if machine.accelerator_count > 0:
                found.add(name)
        else:
            _, _, fixed, count = table.machines.get(machine.machine_type, ("", 0, "", 0))
            if fixed and count > 0:
                found.add(fixed)
    return found


class Capacity:
    """Which GPUs have no capacity in which regions (set when the service starts)."""

    def __init__(
        self, gaps: Iterable[tuple[str, str]] = (), table: MetricTable | None = None
    ) -> None:
        self.gaps = frozenset(gaps)
        self._table = table

    def lacking(self, job: Any, kind: Kind, region: str) -> str | None:
        """The message the job fails with when a GPU it asks for has no capacity in
        ``region``; None when it can get its machines."""
        if not self.gaps:
            return None
        from .quotas import load_table

        table = self._table or load_table()
        if any((gpu, region) in self.gaps for gpu in job_accelerators(job, kind, table)):
            return INSUFFICIENT.format(region=region)
        return None
