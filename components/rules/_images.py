"""Which image a Python package job may run on: Vertex AI's prebuilt training images only.

Vertex AI runs a ``pythonPackageSpec`` on one of its prebuilt training images
(``executorImageUri``; catalog ``training_images.csv``); any other image is refused. An image
name of an earlier registry (AI Platform Training's PyTorch images under
``gcr.io/cloud-ml-public/training/``, Vertex AI's first ``gcr.io/cloud-aiplatform/training/``)
or a prebuilt image without its ``:latest`` tag has a successor: the catalog's image of the
same name (``pytorch-cpu.1-4``), under the registry host of the job's region. What is past
its end of availability is said in a note.

This module reads only the catalog, so the validator and the format readers share it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Literal

from ._catalog import Catalog, TrainingImage
from ._spec import WorkerPoolSpec

__all__ = [
    "LEGACY_IMAGE_PREFIXES",
    "ExecutorImage",
    "executor_image",
    "image_for_hardware",
    "registry_uri",
    "settled_pools",
]

LEGACY_IMAGE_PREFIXES = (
    "gcr.io/cloud-ml-public/training/",
    "gcr.io/cloud-aiplatform/training/",
    "us.gcr.io/cloud-aiplatform/training/",
    "eu.gcr.io/cloud-aiplatform/training/",
    "asia.gcr.io/cloud-aiplatform/training/",
)
"""Registries of earlier prebuilt training images: AI Platform Training's PyTorch images
(``gcr.io/cloud-ml-public/training/pytorch-gpu.1-4``, "the PyTorch image provided by AI
Platform Training" in Google's AI Platform samples) and Vertex AI's first home of its
prebuilt images (``gcr.io/cloud-aiplatform/training/pytorch-gpu.1-7``); each image's name
lives on under ``vertex-ai/training/`` (catalog README)."""

# The registry host nearest to a region's geography (catalog regions.csv); others use us-.
_GEOGRAPHY_REGISTRY = {
    "Americas": "us-docker.pkg.dev",
    "Europe": "europe-docker.pkg.dev",
    "Asia-Pacific": "asia-docker.pkg.dev",
}
_COMPUTED = ("$", "`")


@dataclass(frozen=True)
class ExecutorImage:
    """What an ``executorImageUri`` is: a ``prebuilt`` image of the catalog (``image``), an
    earlier or untagged name of one (``legacy``, with its ``successor`` URI), ``named`` (not
    in the catalog, but named as Google names its prebuilt images: newer than the catalog, so
    checked by name only), or ``custom`` (any other image, which Vertex AI refuses for a
    Python package); ``unknown`` for a value a script computes (only its shape is known)."""

    kind: Literal["prebuilt", "legacy", "named", "custom", "unknown"]
    image: TrainingImage | None = None
    successor: str | None = None

    def lifecycle(self, today: date | None = None) -> str | None:
        """A sentence when the prebuilt image is past its end of availability, else None."""
        image = self.image
        if image is None or not image.end_of_availability:
            return None
        if (today or date.today()).isoformat() < image.end_of_availability:
            return None
        return (
            f"{image.image_path} reached its end of availability on "
            f"{image.end_of_availability} (end of patch and support {image.end_of_support}): "
            "Vertex AI may refuse new jobs with it; move the trainer to a newer image"
        )


_GOOGLE_NAMED = re.compile(
    r"(?:us|europe|asia)-docker\.pkg\.dev/vertex-ai/training/"
    r"(?:tf|pytorch|scikit-learn|sklearn|xgboost)-(?:cpu|gpu|tpu|xla)"
    r"\.\d{1,3}-\d{1,3}(?:\.(?:py|cp)\d{2,3})?:latest"
)
"""Google's naming of its prebuilt training images (``pytorch-gpu.2-6.py312:latest``, under
the three regional registries): what an image newer than the catalog's is checked against."""


def registry_uri(catalog: Catalog, image: TrainingImage, region: str | None) -> str:
    """The image's URI under the registry host of the region's geography."""
    known = catalog.regions.get(region) if region else None
    wanted = _GEOGRAPHY_REGISTRY.get(known.geography if known else "", "us-docker.pkg.dev")
    host = wanted if wanted in image.registries else image.registries[0]
    return f"{host}/{image.image_path}"


def _name(path: str) -> str:
    """``vertex-ai/training/tf-cpu.2-15.py310:latest`` → ``tf-cpu.2-15.py310``."""
    last = path.rsplit("/", 1)[-1]
    return last.split("@", 1)[0].split(":", 1)[0]


def executor_image(catalog: Catalog, uri: str, region: str | None = None) -> ExecutorImage:
    """What ``uri`` is as a Python package job's executor image (see ``ExecutorImage``)."""
    uri = uri.strip()
    if any(mark in uri for mark in _COMPUTED):
        return ExecutorImage("unknown")
    host, _, path = uri.partition("/")
    for image in catalog.training_images:
        if path == image.image_path and host in image.registries:
            return ExecutorImage("prebuilt", image)
    name = _name(path)
    legacy = any(uri.startswith(prefix) for prefix in LEGACY_IMAGE_PREFIXES)
    untagged = host in _GEOGRAPHY_REGISTRY.values() and path.startswith("vertex-ai/training/")
    if legacy or untagged:
        for image in catalog.training_images:
            if _name(image.image_path) == name:
                place = (
                    registry_uri(catalog, image, region) if legacy else f"{host}/{image.image_path}"
                )
                return ExecutorImage("legacy", image, place)
    named = _GOOGLE_NAMED.fullmatch(uri)
    if named is not None:
        return ExecutorImage("named")
    return ExecutorImage("custom")


def settled_pools(
    pools: list[WorkerPoolSpec], catalog: Catalog, region: str | None, today: date | None = None
) -> tuple[list[WorkerPoolSpec], list[str]]:
    """The pools with each earlier executor image name replaced by its successor, and notes
    saying so and naming any prebuilt image past its end of availability (once each)."""
    notes: dict[str, None] = {}
    settled: list[WorkerPoolSpec] = []
    for index, pool in enumerate(pools):
        package = pool.python_package_spec
        uri = package.executor_image_uri if package is not None else None
        if package is None or not uri:
            settled.append(pool)
            continue
        found = executor_image(catalog, uri, region)
        if found.kind == "legacy" and found.successor is not None:
            notes[
                f"workerPoolSpecs[{index}].pythonPackageSpec.executorImageUri: {uri.strip()} is "
                f"an earlier name of a prebuilt training image; Vertex AI's is {found.successor}"
            ] = None
            package = package.model_copy(update={"executor_image_uri": found.successor})
            pool = pool.model_copy(update={"python_package_spec": package})
        late = found.lifecycle(today)
        if late is not None:
            notes[late] = None
        settled.append(pool)
    return settled, list(notes)


def image_for_hardware(
    catalog: Catalog, image: TrainingImage, accelerator: str
) -> TrainingImage | None:
    """The catalog's image built for ``accelerator`` (``cpu``, ``gpu``, ``tpu``) nearest to
    ``image``: the same framework, version and Python (``tf-cpu.2-17`` → ``tf-gpu.2-17``),
    else that framework's newest for ``accelerator``; None when the framework has none."""
    same = [
        i
        for i in catalog.training_images
        if i.framework == image.framework and i.accelerator == accelerator
    ]
    twins = [
        i
        for i in same
        if (i.framework_version, i.python_version)
        == (image.framework_version, image.python_version)
    ]
    if twins:
        return twins[0]
    return max(same, key=lambda i: (i.end_of_availability or "", i.image_path), default=None)
