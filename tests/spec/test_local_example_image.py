"""The local stack's example jobs (``stacks/jobs/local-*.yaml``) run on a current prebuilt image
whenever the catalog lists one (issue 43 item 6: no end-of-availability note on the first
``make up``). Checked on 2026-11-25, Google lists no training image before its end of
availability (``components/catalog/README.md``), so until newer rows are added from a public
source the note is the truth, and this test asserts it is said."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from components import load_catalog
from components.formats.load import load_spec_file
from components.rules._images import executor_image

STACKS = Path(__file__).resolve().parents[2] / "stacks"
EXAMPLES = ["jobs/local-trainer.yaml", "jobs/local-tuning.yaml"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_local_example_uses_a_current_image_when_the_catalog_has_one(name: str) -> None:
    loaded = load_spec_file(STACKS / name, tuning=True)
    job = loaded.tuning.trial_job_spec if loaded.tuning is not None else loaded.spec
    [package] = [p.python_package_spec for p in job.worker_pool_specs if p.python_package_spec]
    catalog = load_catalog()
    assert package is not None and package.executor_image_uri
    found = executor_image(catalog, package.executor_image_uri, "us-central1")
    assert found.kind == "prebuilt" and found.image is not None  # a name Vertex takes
    today = date.today().isoformat()
    current = [
        image
        for image in catalog.training_images
        if image.accelerator == found.image.accelerator
        and (image.end_of_availability is None or image.end_of_availability > today)
    ]
    late = [note for note in loaded.notes if "end of availability" in note]
    if current:
        assert found.image in current, f"move the example to one of {current[:3]}"
        assert late == []
    else:
        # No current image: the reader says so, and names this one's date.
        assert late and f"on {found.image.end_of_availability} " in late[0]
