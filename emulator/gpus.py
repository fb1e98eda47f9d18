"""This machine's GPUs and running-job slots, shared by the jobs of execute mode.

:class:`Admission` hands a job what it needs to start, both at once: one of the
``--max-running-jobs`` slots and, for a GPU job, GPU devices of its own that no other running job
holds. A job that cannot have them yet waits in QUEUED, as Vertex AI keeps a job queued until the
project has the quota for it ("Understand the Vertex AI serverless training service",
https://cloud.google.com/vertex-ai/docs/training/understanding-training-service, "Queue a new
job"). Nothing is held while waiting, so waiting for GPUs never blocks a job that needs none, and
no job holds a slot while it waits for GPUs that only a slot holder could free.

The policy, first come first served:

* **GPUs** go to jobs in the order they asked. The oldest job waiting for GPUs is served first;
  a later GPU job that would fit in what is free waits behind it (no backfilling: the emulator
  cannot know how long jobs run, and letting small jobs pass could starve a big one forever).
* **Slots** go to the oldest waiting job that can start now: a job that needs no GPU is never
  held up by a GPU job waiting for devices, and a GPU job whose devices are free takes the next
  slot before any job that asked after it.

A job that wants more GPUs than the machine has could never start; the driver fails it at once
(code 8, RESOURCE_EXHAUSTED) instead of asking.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["Admission", "parse_gpus_flag"]

# The most device ids --gpus may list: far beyond any one machine, small enough to print.
MAX_DEVICES = 1024

# How often a waiting job looks at its give-up condition when nobody wakes it (a service stop).
_POLL_SECONDS = 0.1


def parse_gpus_flag(text: str) -> tuple[str, tuple[int, ...] | None]:
    """``--gpus``: ``auto``, ``ignore`` or a list of device ids such as ``0,1,3``.

    Returns (mode, device ids): ``("auto", None)`` detects the GPUs with ``nvidia-smi``,
    ``("ignore", None)`` runs GPU jobs on the CPU, ``("auto", (0, 1, 3))`` shares exactly those
    devices (not checked against ``nvidia-smi``: for tests, and for reserving a subset of the
    machine). ValueError says what is wrong with ``text``.
    """
    value = text.strip()
    if value in ("auto", "ignore"):
        return value, None
    parts = [p.strip() for p in value.split(",")]
    if not value or any(not p.isdigit() or not p.isascii() for p in parts):
        raise ValueError(
            f"expected auto, ignore, or GPU device ids separated by commas such as 0,1 "
            f"(got {text!r})"
        )
    ids = [int(p) for p in parts]
    if len(ids) > MAX_DEVICES:
        raise ValueError(f"at most {MAX_DEVICES} device ids (got {len(ids)})")
    seen: set[int] = set()
    for device in ids:
        if device in seen:
            raise ValueError(f"device {device} is listed twice")
        seen.add(device)
    return "auto", tuple(ids)


@dataclass(eq=False)  # each waiter is itself: compared by identity
class _Waiter:
    job_id: str
    gpus: int
    order: int


class Admission:
    """Running-job slots and GPU devices, handed to jobs together (thread-safe; module doc)."""

    def __init__(self, slots: int, devices: Sequence[int]) -> None:
        self.devices = tuple(devices)
        self._free_slots = max(slots, 1)
        self._free_devices = list(self.devices)
        self._held: dict[str, tuple[int, ...]] = {}  # job id -> its devices (maybe none)
        self._waiting: list[_Waiter] = []
        self._order = itertools.count()
        self._cond = threading.Condition()

    @property
    def total_devices(self) -> int:
        """How many GPUs there are to share."""
        return len(self.devices)

    def acquire(self, job_id: str, gpus: int, *, give_up: Callable[[], bool]) -> list[int] | None:
        """Wait for a slot and ``gpus`` devices; the devices, or None once ``give_up()`` is true.

        A job holds at most one grant: asking again while holding one is a bug (ValueError), and
        so is asking for more devices than exist (the caller fails such a job instead).
        """
        if gpus > len(self.devices):
            raise ValueError(f"{gpus} GPU(s) asked for, {len(self.devices)} exist")
        with self._cond:
            if job_id in self._held:
                raise ValueError(f"job {job_id} already holds a slot")
            me = _Waiter(job_id, gpus, next(self._order))
            self._waiting.append(me)
            try:
                while not give_up():
                    if self._may_start(me):
                        return self._take(me)
                    self._cond.wait(_POLL_SECONDS)
                return None
            finally:
                if me in self._waiting:
                    self._waiting.remove(me)
                # Whoever waited behind this job may be first now.
                self._cond.notify_all()

    def release(self, job_id: str) -> None:
        """Give back what ``job_id`` holds (nothing happens if it holds nothing)."""
        with self._cond:
            devices = self._held.pop(job_id, None)
            if devices is None:
                return
            self._free_slots += 1
            # Back in the order the devices were listed, so that grants are predictable.
            free = set(self._free_devices) | set(devices)
            self._free_devices = [d for d in self.devices if d in free]
            self._cond.notify_all()

    def wake(self) -> None:
        """Have every waiting job look at its give-up condition now (e.g. after a cancel)."""
        with self._cond:
            self._cond.notify_all()

    def holdings(self) -> dict[str, tuple[int, ...]]:
        """The devices of every job that holds a slot, by job id (a copy)."""
        with self._cond:
            return dict(self._held)

    # -- under the lock -------------------------------------------------------------------------

    def _startable(self, waiter: _Waiter, first_gpu_waiter: _Waiter | None) -> bool:
        """Could ``waiter`` start if a slot were free? (GPU jobs: only the oldest, if it fits.)"""
        if waiter.gpus == 0:
            return True
        return waiter is first_gpu_waiter and waiter.gpus <= len(self._free_devices)

    def _may_start(self, me: _Waiter) -> bool:
        first_gpu_waiter = next((w for w in self._waiting if w.gpus > 0), None)
        if not self._startable(me, first_gpu_waiter):
            return False
        # Older jobs that could start now have the first claim on the free slots.
        ahead = sum(
            1
            for w in itertools.takewhile(lambda w: w is not me, self._waiting)
            if self._startable(w, first_gpu_waiter)
        )
        return ahead < self._free_slots

    def _take(self, me: _Waiter) -> list[int]:
        devices = self._free_devices[: me.gpus]
        del self._free_devices[: me.gpus]
        self._free_slots -= 1
        self._held[me.job_id] = tuple(devices)
        self._waiting.remove(me)
        return devices
