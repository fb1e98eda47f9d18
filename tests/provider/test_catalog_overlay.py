"""The provider process reads ``training:catalogOverlay`` too (issue 34): its ``check`` judges
a job against the catalog the program judged it with."""

from __future__ import annotations

from pathlib import Path

import pytest

from components._files import READ_ROOTS_ENV
from tests.provider.conftest import configured, job_inputs
from tests.spec.catalog_fixtures import packaged_catalog  # noqa: F401 (a fixture)

HEADER = "machine_type,family,vcpus,memory_gb,fixed_accelerator_type,fixed_accelerator_count,source"


pytestmark = pytest.mark.usefixtures("packaged_catalog")


@pytest.fixture(autouse=True)
def _tmp_path_is_a_read_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """These stacks name files in tmp_path, outside the project: the person running allows it
    (``GPU_TRAINING_READ_ROOTS``, components._files)."""
    monkeypatch.setenv(READ_ROOTS_ENV, str(tmp_path))


def _on(machine: str) -> dict[str, object]:
    inputs = job_inputs()
    spec = dict(inputs["spec"])
    pools = [dict(p) for p in spec["workerPoolSpecs"]]
    pools[0]["machineSpec"] = {**pools[0]["machineSpec"], "machineType": machine}
    spec["workerPoolSpecs"] = pools
    return {**inputs, "spec": spec}


def test_check_uses_the_stack_catalog_overlay(tmp_path: Path) -> None:
    overlay = tmp_path / "catalog"
    overlay.mkdir()
    (overlay / "machine_types.csv").write_text(f"{HEADER}\nn9-standard-8,n9,8,32,,,src (2026-12)\n")
    inputs = _on("n9-standard-8")
    plain = configured("http://127.0.0.1:9")
    assert [f.property for f in plain.check({}, inputs).failures] == [
        "workerPoolSpecs[0].machineSpec.machineType"
    ]
    overlaid = configured("http://127.0.0.1:9", catalogOverlay=str(overlay))
    assert overlaid.check({}, inputs).failures == []
