"""Worker pools as the tests' job documents write them (REST shape, camelCase)."""

from __future__ import annotations

from typing import Any

__all__ = ["on_one_t4"]

T4 = "NVIDIA_TESLA_T4"


def on_one_t4(pool: dict[str, Any]) -> dict[str, Any]:
    """``pool`` on n1-standard-4 with one T4, its prebuilt image the GPU build (a CPU image on
    GPUs is refused before launch); changed in place and returned."""
    pool["machineSpec"] = {
        "machineType": "n1-standard-4",
        "acceleratorType": T4,
        "acceleratorCount": 1,
    }
    package = pool["pythonPackageSpec"]
    package["executorImageUri"] = package["executorImageUri"].replace("-cpu.", "-gpu.")
    return pool
