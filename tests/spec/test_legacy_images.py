"""The prebuilt training images (``training_images.csv``) and how one is chosen."""

from __future__ import annotations

import copy
import pickle
import re
from datetime import date
from pathlib import Path

import pytest

from components._errors import CatalogError
from components.formats.bounded_yaml import SourceFloat, load_documents
from components.formats.legacy_images import (
    accelerator_kind,
    choose_image,
    parse_version,
    version_text,
)
from components.rules._catalog import CATALOG_DIR, TrainingImage, load_catalog, load_catalog_from

CATALOG = load_catalog()
IMAGES = CATALOG.training_images
# The naming Google uses for each framework's images (tf-gpu.2-11.py310, sklearn-cpu.1-6...).
PREFIXES = {
    ("tensorflow", "cpu"): ("tf-cpu.",),
    ("tensorflow", "gpu"): ("tf-gpu.",),
    ("tensorflow", "tpu"): ("tf-tpu.",),
    ("pytorch", "cpu"): ("pytorch-xla.", "pytorch-cpu.", "pytorch-gpu."),
    ("pytorch", "gpu"): ("pytorch-gpu.",),
    ("pytorch", "tpu"): ("pytorch-tpu.",),
    ("scikit-learn", "cpu"): ("sklearn-cpu.", "scikit-learn-cpu."),
    ("scikit-learn", "gpu"): ("sklearn-gpu.",),
    ("xgboost", "cpu"): ("xgboost-cpu.",),
    ("xgboost", "gpu"): ("xgboost-gpu.",),
}


@pytest.mark.parametrize("image", IMAGES, ids=lambda i: i.image_path)
def test_each_row_is_named_as_its_framework_version_and_accelerator(image: TrainingImage) -> None:
    name = image.image_path.removeprefix("vertex-ai/training/")
    assert name.startswith(PREFIXES[(image.framework, image.accelerator)])
    assert name.endswith(":latest")  # Vertex AI refuses these images without the tag
    assert name.split(".", 1)[1].startswith(image.framework_version.replace(".", "-"))
    assert image.registries == ("us-docker.pkg.dev", "europe-docker.pkg.dev", "asia-docker.pkg.dev")
    assert image.end_of_support and image.end_of_availability
    assert image.end_of_support <= image.end_of_availability
    assert image.source.startswith("https://cloud.google.com/vertex-ai/docs/training/")


def test_rows_are_unique() -> None:
    keys = [(i.framework, i.framework_version, i.python_version, i.accelerator) for i in IMAGES]
    assert len(keys) == len(set(keys))


def _versions(framework: str, accelerator: str) -> set[str]:
    return {
        i.framework_version
        for i in IMAGES
        if i.framework == framework and i.accelerator == accelerator
    }


def test_tensorflow_versions_of_the_legacy_runtimes() -> None:
    # AI Platform runtimes 1.15 and 2.1-2.11 that have a Vertex AI image; Google published
    # none for TensorFlow 2.10 (read 2026-11), so it must stay missing, not be invented.
    legacy = {"1.15", *(f"2.{minor}" for minor in range(1, 12) if minor != 10)}
    for accelerator in ("cpu", "gpu"):
        assert legacy | {"2.12", "2.13", "2.14", "2.15", "2.16", "2.17"} == _versions(
            "tensorflow", accelerator
        )
    assert _versions("tensorflow", "tpu") == {"2.12", "2.15"}
    assert "2.10" not in {i.framework_version for i in IMAGES if i.framework == "tensorflow"}


def test_every_framework_has_cpu_images_and_python_3_7_images_are_listed() -> None:
    for framework in ("tensorflow", "pytorch", "scikit-learn", "xgboost"):
        assert _versions(framework, "cpu"), framework
    py37 = {
        i.framework_version
        for i in IMAGES
        if i.framework == "tensorflow" and i.python_version == "3.7"
    }
    assert {"2.1", "2.8", "2.9", "2.11", "1.15"} <= py37


def test_a_row_with_a_bad_accelerator_or_date_is_refused(tmp_path: Path) -> None:
    for csv in CATALOG_DIR.glob("*.csv"):
        (tmp_path / csv.name).write_text(csv.read_text())
    path = tmp_path / "training_images.csv"
    header, first, *_ = path.read_text().splitlines()
    path.write_text(f"{header}\n{first.replace(',cpu,', ',npu,', 1)}\n")
    with pytest.raises(CatalogError, match=r"training_images\.csv:2: accelerator"):
        load_catalog_from(tmp_path)
    path.write_text(f"{header}\n{first.replace('2025-07-11', '11 Jul 2025', 1)}\n")
    with pytest.raises(CatalogError, match="YYYY-MM-DD"):
        load_catalog_from(tmp_path)


# --- choosing -----------------------------------------------------------------------------


def test_the_python_version_picks_between_images_of_one_version() -> None:
    py37 = choose_image(CATALOG, version="2.9", python="3.7", accelerator="gpu", region=None)
    py310 = choose_image(CATALOG, version="2.9", python="3.10", accelerator="gpu", region=None)
    newest = choose_image(CATALOG, version="2.9", python=None, accelerator="gpu", region=None)
    assert py37.uri == "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-9:latest"
    assert py310.uri == newest.uri == "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-9.py310:latest"
    assert any("also published: Python 3.7" in n for n in newest.notes)


@pytest.mark.parametrize(
    ("today", "says"),
    [
        (date(2023, 1, 1), None),
        (date(2024, 1, 1), "is deprecated: end of patch and support was 2023-09-01"),
        (date(2026, 11, 1), "reached its end of availability on 2024-09-01"),
    ],
)
def test_the_lifecycle_of_the_chosen_image_is_noted(today: date, says: str | None) -> None:
    choice = choose_image(
        CATALOG, version="2.1", python="3.7", accelerator="cpu", region=None, today=today
    )
    assert choice.uri == "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-1:latest"
    lifecycle = [n for n in choice.notes if "end of" in n]
    if says is None:
        assert lifecycle == []
    else:
        assert len(lifecycle) == 1 and says in lifecycle[0]


def test_other_frameworks_are_chosen_by_name() -> None:
    sklearn = choose_image(
        CATALOG,
        framework="scikit-learn",
        version="1.0",
        python=None,
        accelerator="cpu",
        region="europe-west1",
    )
    assert sklearn.uri == "europe-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest"
    missing = choose_image(
        CATALOG, framework="xgboost", version="1.1", python=None, accelerator="tpu", region=None
    )
    assert missing.uri is None and missing.problem is not None
    assert "publishes no XGBoost TPU training image" in (missing.problem.suggestion or "")


def test_accelerator_kind_of_a_pool() -> None:
    assert accelerator_kind(CATALOG, {"machineType": "n1-standard-8"}) == "cpu"
    gpu = {
        "machineType": "n1-standard-8",
        "acceleratorType": "NVIDIA_TESLA_T4",
        "acceleratorCount": 1,
    }
    assert accelerator_kind(CATALOG, gpu) == "gpu"
    tpu = {"machineType": "cloud-tpu", "acceleratorType": "TPU_V2", "acceleratorCount": 8}
    assert accelerator_kind(CATALOG, tpu) == "tpu"
    assert accelerator_kind(CATALOG, {"machineType": "ct5lp-hightpu-4t"}) == "tpu"


# --- versions as written ------------------------------------------------------------------


def test_yaml_floats_keep_their_text() -> None:
    (document,) = load_documents("runtime: 2.10\npython: 3.10\nother: [1.50, .inf]\ncount: 2\n")
    runtime = document["runtime"]
    assert isinstance(runtime, SourceFloat) and runtime == 2.1 and runtime.text == "2.10"
    assert version_text(runtime) == "2.10" and version_text(document["python"]) == "3.10"
    assert [f.text for f in document["other"]] == ["1.50", ".inf"]
    assert type(document["count"]) is int
    for copied in (pickle.loads(pickle.dumps(runtime)), copy.deepcopy(runtime)):
        assert isinstance(copied, SourceFloat) and copied.text == "2.10" and copied == 2.1
    assert repr(runtime) == "2.1"  # a float in every other way


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("2.10", (2, 10)),
        ("1.15", (1, 15)),
        ("2", (2,)),
        ("2.x", None),
        ("", None),
        ("9" * 50, None),
    ],
)
def test_parse_version(text: str, parsed: tuple[int, ...] | None) -> None:
    assert parse_version(text) == parsed


def test_no_image_path_names_a_registry_host() -> None:
    assert not any(re.match(r"[a-z-]+\.pkg\.dev/", i.image_path) for i in IMAGES)
