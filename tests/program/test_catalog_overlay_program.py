"""``training:catalogOverlay`` in a stack (issue 34): the program checks every job against
the packaged catalog with the overlay's rows over it, and a bad overlay stops it naming the
key, file, row and field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from components._files import READ_ROOTS_ENV
from components.config import ConfigError
from components.training_job import TrainingJobInputError
from tests.program.harness import JOB_TYPE, REPO, run_stack
from tests.spec.catalog_fixtures import packaged_catalog  # noqa: F401 (a fixture)

HEADER = "region,accelerator_type,training,as_of,source\n"


pytestmark = pytest.mark.usefixtures("packaged_catalog")


@pytest.fixture(autouse=True)
def _tmp_path_is_a_read_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """These stacks name files in tmp_path, outside the project: the person running allows it
    (``GPU_TRAINING_READ_ROOTS``, components._files)."""
    monkeypatch.setenv(READ_ROOTS_ENV, str(tmp_path))


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


def test_a_job_taken_over_keeps_an_image_the_catalog_lacks(tmp_path: Path) -> None:
    """What ``python -m components import`` wrote for a job that runs on an image the catalog
    does not know: taken over with a warning; the same file as a new job is refused."""
    document = yaml.safe_load((REPO / "stacks/jobs/dev-t4-spot.yaml").read_text())
    package = document["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]
    package["packageUris"] = ["gs://bkt/t.tar.gz"]
    package["executorImageUri"] = "gcr.io/team/old-trainer:2019"
    spec_file = tmp_path / "imported.yaml"
    spec_file.write_text(yaml.safe_dump(document))
    existing = "projects/gpu-training-dev/locations/us-central1/customJobs/42"
    entry = {"name": "t4-spot", "spec": str(spec_file)}
    with pytest.raises(TrainingJobInputError, match="executorImageUri"):
        run_stack("dev", {"training:jobs": [entry]})
    run = run_stack("dev", {"training:jobs": [{**entry, "existingJob": existing}]})
    [job] = run.by_type(JOB_TYPE)
    assert job.inputs["existing_job"] == existing
