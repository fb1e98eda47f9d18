"""Settings of a running service and the fault-injection knobs."""

from __future__ import annotations

import random
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_MAX_UNPACKED_MB",
    "DEFAULT_PIP_TIMEOUT_SECONDS",
    "DROP_MODES",
    "GPU_MODES",
    "MODES",
    "Faults",
    "Settings",
]

MODES = ("execute", "simulate")
GPU_MODES = ("auto", "ignore")
DROP_MODES = ("close", "503")
DEFAULT_MAX_UNPACKED_MB = 512
# A cold install of a framework-sized dependency tree takes minutes; a hung index must not hang a job.
DEFAULT_PIP_TIMEOUT_SECONDS = 900.0


@dataclass
class Settings:
    """How the service runs jobs. See ``python -m emulator serve --help`` for each knob."""

    state_dir: Path
    mode: str = "execute"
    gpus: str = "auto"
    # With gpus="auto": the GPU device ids to share (``--gpus 0,1``); None detects them.
    gpu_devices: tuple[int, ...] | None = None
    allow_roots: list[Path] = field(default_factory=list)
    grace_seconds: float = 5.0
    max_running_jobs: int = 4
    simulate_queued_seconds: float = 0.2
    simulate_pending_seconds: float = 0.5
    simulate_run_seconds: float = 5.0
    simulate_cancel_seconds: float = 0.2
    python: str = sys.executable
    # The most one package (archive or directory) may unpack or copy into a job, in MiB.
    max_unpacked_mb: int = DEFAULT_MAX_UNPACKED_MB
    # How long pip may take to install one pool's packages and dependencies (emulator.pyenv).
    pip_timeout_seconds: float = DEFAULT_PIP_TIMEOUT_SECONDS
    # Training quota limits set at serve time: (metric, region or None for all, limit).
    quota_limits: tuple[tuple[str, str | None, int], ...] = ()
    # ``--no-capacity GPU@REGION``: (accelerator type, region) pairs whose jobs go PENDING, then
    # FAILED with RESOURCE_EXHAUSTED, as Vertex's do when a region has no machines (emulator.capacity).
    no_capacity: tuple[tuple[str, str], ...] = ()
    # How long such a job stays PENDING before it fails.
    no_capacity_seconds: float = 1.0
    # ``--no-capacity-at-create``: such a job is refused at create (429 RESOURCE_EXHAUSTED,
    # the same message) instead, and never stored.
    no_capacity_at_create: bool = False
    # ``--billing-snapshot FILE``: the SKUs the Cloud Billing Catalog API serves (emulator.billing;
    # None: the catalog's billing_skus.csv).
    billing_snapshot: Path | None = None
    # ``--billing-account-prices FILE``: the caller's billing account prices (Cloud Billing API
    # v1beta, emulator.billing): a JSON file ``{"discountPercent": N}`` (read again when it
    # changes); while it does not exist the caller may not read them (403). None: 403 always.
    billing_account_prices: Path | None = None
    # ``--project-number ID=NUMBER``: the number a project ID's jobs are named with
    # (emulator.names; the others get a number derived from their ID).
    project_numbers: dict[str, str] = field(default_factory=dict)


@dataclass
class _FaultValues:
    unavailable_rate: float = 0.0
    rate_limit_rate: float = 0.0
    conflict_rate: float = 0.0
    latency_ms: float = 0.0
    drop_create: int = 0
    drop_mode: str = "close"


_RATES = ("unavailable_rate", "rate_limit_rate", "conflict_rate")


class Faults:
    """Fault injection, off by default; changed by CLI flags or ``POST /emulator/v1/faults``.

    * ``unavailable_rate`` / ``rate_limit_rate`` / ``conflict_rate``: fraction (0-1) of API
      requests answered 503 UNAVAILABLE / 429 RESOURCE_EXHAUSTED / 409 ABORTED;
    * ``latency_ms``: added to every API request;
    * ``drop_create``: the next N creates store the job and then lose the response, either by
      closing the connection (``drop_mode="close"``) or by answering 503 (``drop_mode="503"``).
    """

    def __init__(self, seed: int | None = None) -> None:
        self._values = _FaultValues()
        self._lock = threading.Lock()
        self._rng = random.Random(seed)

    def update(self, patch: dict[str, Any]) -> dict[str, Any]:
        """Apply the given fields (validated; ValueError names the bad field); return all."""
        if not isinstance(patch, dict):
            raise ValueError("faults: expected a JSON object")
        with self._lock:
            new = _FaultValues(**vars(self._values))
            for key, value in patch.items():
                if key == "seed":
                    if not isinstance(value, int) or isinstance(value, bool):
                        raise ValueError("faults.seed: expected an integer")
                    self._rng.seed(value)
                elif key in _RATES or key == "latency_ms":
                    if isinstance(value, bool) or not isinstance(value, int | float):
                        raise ValueError(f"faults.{key}: expected a number")
                    if key in _RATES and not 0.0 <= value <= 1.0:
                        raise ValueError(f"faults.{key}: expected a fraction between 0 and 1")
                    if key == "latency_ms" and not 0 <= value <= 60_000:
                        raise ValueError("faults.latency_ms: expected 0 to 60000")
                    setattr(new, key, float(value))
                elif key == "drop_create":
                    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                        raise ValueError("faults.drop_create: expected a non-negative integer")
                    new.drop_create = value
                elif key == "drop_mode":
                    if value not in DROP_MODES:
                        raise ValueError(f"faults.drop_mode: expected one of {list(DROP_MODES)}")
                    new.drop_mode = value
                else:
                    raise ValueError(f"faults.{key}: unknown fault")
            self._values = new
            return dict(vars(new))

    def snapshot(self) -> dict[str, Any]:
        """Current values."""
        with self._lock:
            return dict(vars(self._values))

    def roll_error(self) -> tuple[int, str] | None:
        """(http code, status) of an injected error for this request, or None."""
        with self._lock:
            v = self._values
            for rate, answer in (
                (v.unavailable_rate, (503, "UNAVAILABLE")),
                (v.rate_limit_rate, (429, "RESOURCE_EXHAUSTED")),
                (v.conflict_rate, (409, "ABORTED")),
            ):
                if rate and self._rng.random() < rate:
                    return answer
        return None

    def latency_seconds(self) -> float:
        """Latency to add to this request."""
        with self._lock:
            return self._values.latency_ms / 1000.0

    def take_drop(self) -> str | None:
        """If this create's response must be lost, consume one and return the drop mode."""
        with self._lock:
            if self._values.drop_create > 0:
                self._values.drop_create -= 1
                return self._values.drop_mode
        return None
