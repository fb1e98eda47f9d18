"""``training:catalogOverlay`` in a stack (issue 34): the program checks every job against
the packaged catalog with the overlay's rows over it, and a bad overlay stops it naming the
key, file, row and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.config import ConfigError
from components.training_job import TrainingJobInputError
from tests.program.harness import run_stack
from tests.spec.catalog_fixtures import packaged_catalog  # noqa: F401 (a fixture)

HEADER = "region,accelerator_type,training,as_of,source\n"


pytestmark = pytest.mark.usefixtures("packaged_catalog")


def _overlay(tmp_path: Path, rows: str) -> str:
    directory = tmp_path / "catalog"
    directory.mkdir()
    (directory / "training_regions.csv").write_text(HEADER + rows)
    return str(directory)


def test_the_stacks_overlay_decides_where_its_gpu_may_train(tmp_path: Path) -> None:
    # The dev stack: one T4 job in us-central1, which the packaged catalog offers.
    run_stack("dev")
    overlay = _overlay(tmp_path, "us-central1,NVIDIA_TESLA_T4,no,2026-12-01,test row (2026-12)\n")
    with pytest.raises(
        TrainingJobInputError, match="NVIDIA_TESLA_T4 in us-central1 for prediction"
    ):
        run_stack("dev", {"training:catalogOverlay": overlay})


def test_a_bad_overlay_stops_the_program_naming_key_file_row_and_field(tmp_path: Path) -> None:
    overlay = _overlay(tmp_path, "us-central1,NVIDIA_TESLA_T4,maybe,2026-12-01,test row\n")
    with pytest.raises(
        ConfigError,
        match=r"training:catalogOverlay: .*training_regions\.csv:2: column 'training' must be",
    ):
        run_stack("dev", {"training:catalogOverlay": overlay})
