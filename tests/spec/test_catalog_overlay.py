"""Issue 34: nothing in the packaged catalog blocks what Google added after it.

A catalog overlay (``training:catalogOverlay``, ``--catalog-overlay DIR``) adds rows to or
replaces rows of the packaged catalog; a prebuilt image newer than the catalog is accepted,
checked by name only; image suggestions never cross CPU/GPU; a job taken over keeps an image
the catalog does not know.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest

from components import CatalogError, load_catalog, validate
from components.cli._cli import main
from components.config import ConfigError, load_catalog_overlay
from components.lifecycle._check import check_inputs
from components.rules._catalog import CATALOG_DIR, load_catalog_from
from tests.spec.catalog_fixtures import packaged_catalog  # noqa: F401 (a fixture)
from tests.spec.helpers import pool, spec

MACHINE_HEADER = (
    "machine_type,family,vcpus,memory_gb,fixed_accelerator_type,fixed_accelerator_count,source"
)
NEW_MACHINE = "n9-standard-8,n9,8,32,,,https://example.invalid/n9 (read 2026-11)"
NEWER_IMAGE = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-6.py312:latest"


pytestmark = pytest.mark.usefixtures("packaged_catalog")


def _overlay(tmp_path: Path, **files: str) -> Path:
    directory = tmp_path / "overlay"
    directory.mkdir()
    for name, text in files.items():
        (directory / f"{name}.csv").write_text(text)
    return directory


def _machine_overlay(tmp_path: Path) -> Path:
    return _overlay(tmp_path, machine_types=f"{MACHINE_HEADER}\n{NEW_MACHINE}\n")


def _cpu_pool(machine: str) -> dict[str, Any]:
    doc = pool(machine)
    doc["pythonPackageSpec"]["executorImageUri"] = (
        "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest"
    )
    return doc


# --- rows that add or replace ----------------------------------------------------------------


def test_an_overlay_row_adds_a_machine_type(tmp_path: Path) -> None:
    job = spec(_cpu_pool("n9-standard-8"))
    [refused] = validate(job)
    assert refused.rule == "machine"
    catalog = load_catalog_from(CATALOG_DIR, _machine_overlay(tmp_path))
    added = catalog.machine_types["n9-standard-8"]
    assert (added.vcpus, added.memory_gb, added.training) == (8, 32, True)
    assert validate(job, catalog=catalog) == []
    # The packaged rows stay.
    assert len(catalog.machine_types) == len(load_catalog().machine_types) + 1


def test_an_overlay_row_adds_a_gpu_region_and_replaces_one(tmp_path: Path) -> None:
    rows = (
        "region,accelerator_type,training,as_of,source\n"
        # New: the page had no H200 in asia-east1.
        "asia-east1,NVIDIA_H200_141GB,yes,2026-12-01,my account team (2026-12)\n"
        # Replaces the packaged row that says prediction only.
        "asia-east1,NVIDIA_L4,yes,2026-12-01,my account team (2026-12)\n"
    )
    catalog = load_catalog_from(CATALOG_DIR, _overlay(tmp_path, training_regions=rows))
    assert catalog.training_offers[("asia-east1", "NVIDIA_L4")].training
    for job in (
        spec(pool("a3-ultragpu-8g", "NVIDIA_H200_141GB", 8)),
        spec(pool("g2-standard-8", "NVIDIA_L4", 1)),
    ):
        packaged = validate(job, region="asia-east1")
        assert [v.rule for v in packaged if v.rule == "region"] == ["region"]
        overlaid = validate(job, catalog=catalog, region="asia-east1")
        assert [v for v in overlaid if v.rule == "region"] == []
    l4 = spec(pool("g2-standard-8", "NVIDIA_L4", 1))
    assert validate(l4, catalog=catalog, region="asia-east1") == []


def test_an_overlay_adds_a_prebuilt_image_row(tmp_path: Path) -> None:
    header = (CATALOG_DIR / "training_images.csv").read_text().splitlines()[0]
    row = (
        "pytorch,2.6,3.12,gpu,vertex-ai/training/pytorch-gpu.2-6.py312:latest,"
        "us-docker.pkg.dev,2027-01-01,2028-01-01,my own check (2026-12)"
    )
    catalog = load_catalog_from(
        CATALOG_DIR, _overlay(tmp_path, training_images=f"{header}\n{row}\n")
    )
    doc = pool("g2-standard-8", "NVIDIA_L4", 1)
    doc["pythonPackageSpec"]["executorImageUri"] = NEWER_IMAGE
    assert validate(spec(doc), catalog=catalog) == []


# --- clear errors: file, row and field -------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "says"),
    [
        (
            {"machine_types": f"{MACHINE_HEADER},colour\n{NEW_MACHINE},red\n"},
            r"machine_types\.csv:1: column 8 of the header is not a column of machine_types\.csv",
        ),
        (
            {"machine_types": f"{MACHINE_HEADER}\nn9-standard-8,n9,eight,32,,,src\n"},
            r"machine_types\.csv:2: column 'vcpus' must be a number$",
        ),
        (
            {"machine_types": f"{MACHINE_HEADER}\nn9-standard-8,n9,8,32,,x,src\n"},
            r"machine_types\.csv:2: column 'fixed_accelerator_count' must be a whole number",
        ),
        (
            {"machine_types": "machine_type,family,vcpus,source\nn9-standard-8,n9,8,src\n"},
            r"machine_types\.csv:1: column 'memory_gb' is missing",
        ),
        (
            {"machine_types": f"{MACHINE_HEADER}\n,n9,8,32,,,src\n"},
            r"machine_types\.csv:2: machine_type is empty",
        ),
        (
            {"machine_types": f"{MACHINE_HEADER}\nn9-standard-8,n9,8,32,,,\n"},
            r"machine_types\.csv:2: every row needs a source",
        ),
        (
            {
                "training_regions": "region,accelerator_type,training,as_of,source\n"
                "asia-east1,NVIDIA_L4,maybe,2026-12-01,src\n"
            },
            r"training_regions\.csv:2: column 'training' must be yes or no",
        ),
        (
            {
                "training_regions": "region,accelerator_type,training,as_of,source\n"
                "mars-north1,NVIDIA_L4,yes,2026-12-01,src\n"
            },
            r"training_regions\.csv: unknown region mars-north1",
        ),
        ({"gpus": "a,b\n1,2\n"}, r"gpus\.csv: not a catalog file"),
    ],
)
def test_a_bad_overlay_names_file_row_and_field(
    tmp_path: Path, files: dict[str, str], says: str
) -> None:
    with pytest.raises(CatalogError, match=says):
        load_catalog_from(CATALOG_DIR, _overlay(tmp_path, **files))


def test_an_overlay_that_is_no_folder_or_too_large_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="not a directory"):
        load_catalog_from(CATALOG_DIR, tmp_path / "missing")
    big = _overlay(tmp_path, machine_types=MACHINE_HEADER + "\n" + "x" * (1024 * 1024 + 1))
    with pytest.raises(CatalogError, match=r"larger than 1,048,576 bytes; not a catalog overlay"):
        load_catalog_from(CATALOG_DIR, big)


def test_an_overlay_file_that_is_a_fifo_or_a_device_is_refused_unread(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "machine_types.csv")  # opened for reading, it would block forever
    with pytest.raises(CatalogError, match=r"machine_types\.csv: is a FIFO"):
        load_catalog_from(CATALOG_DIR, fifo)
    device = tmp_path / "device"
    device.mkdir()
    (device / "zones.csv").symlink_to("/dev/zero")  # reads forever
    with pytest.raises(CatalogError, match=r"zones\.csv: links out of the overlay folder"):
        load_catalog_from(CATALOG_DIR, device)
    os.mkfifo(device / "regions.csv")
    with pytest.raises(CatalogError, match=r"regions\.csv: is a FIFO"):
        load_catalog_from(CATALOG_DIR, device)


# --- the stack setting and the CLI flag ------------------------------------------------------


def test_the_stack_setting_puts_the_overlay_over_load_catalog(tmp_path: Path) -> None:
    overlay = _machine_overlay(tmp_path)
    assert "n9-standard-8" not in load_catalog().machine_types
    assert load_catalog_overlay("overlay", tmp_path) == overlay
    assert "n9-standard-8" in load_catalog().machine_types
    assert validate(spec(_cpu_pool("n9-standard-8"))) == []
    # Unset: the packaged catalog again.
    assert load_catalog_overlay(None, tmp_path) is None
    assert "n9-standard-8" not in load_catalog().machine_types


def test_a_bad_stack_setting_names_the_key_and_the_row(tmp_path: Path) -> None:
    _overlay(tmp_path, machine_types=f"{MACHINE_HEADER}\nn9-standard-8,n9,eight,32,,,src\n")
    with pytest.raises(ConfigError, match=r"training:catalogOverlay: .*machine_types\.csv:2"):
        load_catalog_overlay("overlay", tmp_path)
    with pytest.raises(ConfigError, match="training:catalogOverlay: nowhere is not a directory"):
        load_catalog_overlay("nowhere", tmp_path)


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_the_cli_flag_on_validate_catalog_and_estimate(tmp_path: Path) -> None:
    overlay = str(_machine_overlay(tmp_path))
    job = tmp_path / "job.yaml"
    job.write_text(
        "workerPoolSpecs:\n"
        "- machineSpec: {machineType: n9-standard-8}\n"
        "  replicaCount: 1\n"
        "  containerSpec: {imageUri: us-docker.pkg.dev/p/r/i:1}\n"
    )
    assert _cli("validate", str(job))[0] == 1
    code, out, _ = _cli("validate", str(job), "--catalog-overlay", overlay)
    assert code == 0, out
    # The flag is per command: the next one without it reads the packaged catalog.
    assert _cli("validate", str(job))[0] == 1
    code, out, err = _cli(
        "estimate", str(job), "--region", "us-central1", "--catalog-overlay", overlay
    )
    assert code != 2, err
    assert "n9-standard-8" in out + err


def test_the_cli_flag_names_a_bad_row(tmp_path: Path) -> None:
    bad = _overlay(tmp_path, machine_types=f"{MACHINE_HEADER}\nn9-standard-8,n9,eight,32,,,src\n")
    job = tmp_path / "job.yaml"
    job.write_text("workerPoolSpecs: []\n")
    code, _, err = _cli("validate", str(job), "--catalog-overlay", str(bad))
    assert code == 2
    assert "error: --catalog-overlay:" in err and "machine_types.csv:2: column 'vcpus'" in err
    assert "Traceback" not in err


# --- prebuilt images newer than the catalog, and suggestions by hardware ----------------------


def _with_image(doc: dict[str, Any], uri: str) -> dict[str, Any]:
    doc["pythonPackageSpec"]["executorImageUri"] = uri
    return doc


@pytest.mark.parametrize(
    "uri",
    [
        NEWER_IMAGE,
        "europe-docker.pkg.dev/vertex-ai/training/tf-gpu.2-19.py312:latest",
        "asia-docker.pkg.dev/vertex-ai/training/xgboost-cpu.3-0:latest",
    ],
)
def test_a_newer_prebuilt_image_is_accepted_checked_by_name_only(uri: str) -> None:
    assert all(i.image_path not in uri for i in load_catalog().training_images)
    found = validate(spec(_with_image(pool("g2-standard-8", "NVIDIA_L4", 1), uri)))
    [note] = found
    assert note.severity == "warning" and note.rule == "trainer"
    assert note.path == "workerPoolSpecs[0].pythonPackageSpec.executorImageUri"
    assert "checked by name only" in note.reason


@pytest.mark.parametrize(
    "uri",
    [
        "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-6.py312",  # no :latest
        "us-docker.pkg.dev/vertex-ai/training/torch-gpu.2-6.py312:latest",  # not a framework
        "gcr.io/my-project/pytorch-gpu.2-6.py312:latest",  # not Google's registry
        "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-6.py312:latest-evil",
    ],
)
def test_only_googles_naming_passes_by_name(uri: str) -> None:
    [refused] = validate(spec(_with_image(pool("g2-standard-8", "NVIDIA_L4", 1), uri)))
    assert refused.severity == "error" and refused.rule == "trainer"


def test_an_untagged_newer_image_is_told_to_add_latest() -> None:
    uri = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-6.py312"
    [refused] = validate(spec(_with_image(pool("g2-standard-8", "NVIDIA_L4", 1), uri)))
    assert refused.suggestion is not None
    assert refused.suggestion.startswith(f"add its :latest tag ({uri}:latest)")


@pytest.mark.parametrize(
    ("doc", "hardware"),
    [
        (pool("g2-standard-8", "NVIDIA_L4", 1), "gpu"),
        (pool("n1-standard-8", "NVIDIA_TESLA_T4", 1), "gpu"),
        (pool("a3-highgpu-8g", "NVIDIA_H100_80GB", 8), "gpu"),
        (pool("ct5lp-hightpu-4t"), "tpu"),
        (pool("n1-standard-8"), "cpu"),
    ],
)
def test_image_suggestions_never_cross_cpu_and_gpu(doc: dict[str, Any], hardware: str) -> None:
    catalog = load_catalog()
    [refused] = [
        v
        for v in validate(spec(_with_image(doc, "gcr.io/my-project/trainer:1")))
        if v.rule == "trainer"
    ]
    assert refused.suggestion is not None
    suggested = refused.suggestion.split("(e.g. ", 1)[1].split(")", 1)[0]
    path = suggested.split("/", 1)[1]
    kinds = {i.accelerator for i in catalog.training_images if i.image_path == path}
    assert hardware in kinds, (suggested, kinds)
    if hardware == "gpu":
        assert "-cpu." not in suggested


# --- a job taken over keeps its image --------------------------------------------------------


def _inputs(uri: str, **extra: Any) -> dict[str, Any]:
    document = spec(_with_image(pool("n1-standard-8"), uri)).to_document()
    return {
        "spec": document,
        "project": "my-project",
        "region": "us-central1",
        **extra,
    }


def test_an_imported_job_whose_image_the_catalog_lacks_is_taken_over() -> None:
    uri = "gcr.io/my-project/trainer:1"
    submitted = check_inputs(_inputs(uri), target="vertex")
    assert [f[0] for f in submitted.failures] == [
        "workerPoolSpecs[0].pythonPackageSpec.executorImageUri"
    ]
    existing = "projects/my-project/locations/us-central1/customJobs/123"
    taken = check_inputs(_inputs(uri, existing_job=existing), target="vertex")
    assert taken.failures == []
    [note] = taken.warnings
    assert note.path == "workerPoolSpecs[0].pythonPackageSpec.executorImageUri"
    assert "taken over as it is" in note.reason


# --- issue 42: numbers that are no numbers, and control characters ---------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400", "NaN", "1e7", "-1"])
@pytest.mark.parametrize("column", ["vcpus", "memory_gb"])
def test_a_non_finite_or_out_of_range_number_names_file_row_and_field(
    tmp_path: Path, value: str, column: str
) -> None:
    cells = {"vcpus": "8", "memory_gb": "32", column: value}
    row = f"n9-standard-8,n9,{cells['vcpus']},{cells['memory_gb']},,,src"
    overlay = _overlay(tmp_path, machine_types=f"{MACHINE_HEADER}\n{row}\n")
    with pytest.raises(CatalogError, match=rf"machine_types\.csv:2: column '{column}'"):
        load_catalog_from(CATALOG_DIR, overlay)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "n1_host_limits",
            "accelerator_type,accelerator_count,max_vcpus,max_memory_gb,source\n"
            "NVIDIA_TESLA_T4,1,8,inf,src\n",
        ),
        (
            "attachable_counts",
            "machine_type,accelerator_type,counts,source\n"
            "n1-standard-8,NVIDIA_TESLA_T4,1 99999999999,src\n",
        ),
        (
            "prices",
            "region,resource_kind,name,on_demand_usd_per_hour,spot_usd_per_hour,as_of,"
            "source\nus-central1,accelerator,NVIDIA_TESLA_T4,nan,,2026-12-01,src\n",
        ),
    ],
)
def test_a_non_finite_number_in_any_file_is_a_catalog_error(
    tmp_path: Path, name: str, text: str
) -> None:
    with pytest.raises(CatalogError, match=rf"{name}\.csv:2: column '\w+'"):
        load_catalog_from(CATALOG_DIR, _overlay(tmp_path, **{name: text}))


@pytest.mark.parametrize("name", ["n9-\x1b[2J\x1b[31mred", "n9-\u202eabc", "n9\x07bell"])
def test_a_control_character_in_a_cell_is_refused_and_never_printed(
    tmp_path: Path, name: str
) -> None:
    overlay = _overlay(tmp_path, machine_types=f"{MACHINE_HEADER}\n{name},n9,8,32,,,src\n")
    with pytest.raises(CatalogError, match=r"machine_types\.csv:2: column 'machine_type' holds U+"):
        load_catalog_from(CATALOG_DIR, overlay)
    job = tmp_path / "job.yaml"
    job.write_text("workerPoolSpecs: []\n")
    code, out, err = _cli("validate", str(job), "--catalog-overlay", str(overlay))
    assert code == 2 and "machine_types.csv:2" in err
    assert not any(ch in out + err for ch in "\x1b\u202e\x07")


@pytest.mark.parametrize("command", ["validate", "estimate", "prices"])
def test_the_cli_names_the_row_of_a_non_finite_number_without_a_traceback(
    tmp_path: Path, command: str
) -> None:
    overlay = _overlay(tmp_path, machine_types=f"{MACHINE_HEADER}\nn9-standard-8,n9,1e400,32,,,s\n")
    job = tmp_path / "job.yaml"
    job.write_text("workerPoolSpecs: []\n")
    argv = {"validate": [str(job)], "estimate": [str(job)], "prices": ["--gpu", "T4"]}[command]
    code, _, err = _cli(command, *argv, "--catalog-overlay", str(overlay))
    assert code == 2, err
    assert "machine_types.csv:2: column 'vcpus' must be a number from 0 to 1,000,000" in err
    assert "Traceback" not in err
