"""Legacy AI Platform TPU jobs (``BASIC_TPU``, a ``cloud_tpu`` worker) converted to Vertex AI.

AI Platform ran the trainer on the master, a VM that drove a Cloud TPU worker over the
network; Vertex AI runs a TPU job on one TPU VM (``cloud-tpu`` with 8 x ``TPU_V2`` or
``TPU_V3``) that is both, as the job's only worker pool with one replica. So the master and
the ``cloud_tpu`` worker become a single pool 0, whatever way the job says "TPU", and the
``acceleratorConfig`` of a ``cloud_tpu`` worker picks the TPU version. Configs are written as
files in the shapes of Google's legacy TPU samples and read as ``validate``/``convert`` read
them. Machine and TPU names are read from the catalog's ``cloud_tpu`` row, never restated.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from components import load_spec_file, validate
from components.formats.legacy_config import LegacyConversionError
from components.formats.result import LoadedSpec
from components.rules._catalog import load_catalog
from components.rules._spec import JobSpec, WorkerPoolSpec

PACKAGE = (
    "  packageUris: [gs://my-bucket/packages/trainer-0.1.tar.gz]\n  pythonModule: trainer.task\n"
)
TF_TPU_2_12 = "us-docker.pkg.dev/vertex-ai/training/tf-tpu.2-12:latest"
CLOUD_TPU = load_catalog().legacy_machine_types["cloud_tpu"]


def _load(tmp_path: Path, text: str) -> LoadedSpec:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return load_spec_file(path)


def _refused(tmp_path: Path, text: str) -> LegacyConversionError:
    with pytest.raises(LegacyConversionError) as info:
        _load(tmp_path, text)
    return info.value


def _image(pool: WorkerPoolSpec) -> str:
    assert pool.python_package_spec is not None
    return pool.python_package_spec.executor_image_uri or ""


def _tpu_vm(spec: JobSpec) -> tuple[str | None, str | None, int, int | None]:
    """The only pool's machine type, TPU type, TPU count and replicas."""
    (pool,) = spec.worker_pool_specs
    machine = pool.machine_spec
    assert machine is not None
    return (
        machine.machine_type,
        machine.accelerator_type,
        machine.accelerator_count,
        pool.replica_count,
    )


def _custom(accelerator: str = "", runtime: str = "'2.12'") -> str:
    """Google's custom TPU sample: a CPU master and one ``cloud_tpu`` worker."""
    return (
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-highcpu-16\n"
        "  workerType: cloud_tpu\n  workerCount: 1\n"
        + (f"  workerConfig:\n    acceleratorConfig: {accelerator}\n" if accelerator else "")
        + f"  runtimeVersion: {runtime}\n  region: us-central1\n"
        + PACKAGE
    )


def _basic_tpu(runtime: str, region: str = "us-central1", python: str = "") -> str:
    return (
        f"trainingInput:\n  scaleTier: BASIC_TPU\n  runtimeVersion: {runtime}\n"
        + (f"  pythonVersion: {python}\n" if python else "")
        + f"  region: {region}\n"
        + PACKAGE
    )


# --- one TPU VM in pool 0 ---------------------------------------------------------------


def test_basic_tpu_is_one_tpu_vm_in_pool_0_with_the_tpu_image(tmp_path: Path) -> None:
    loaded = _load(tmp_path, _basic_tpu("'2.12'"))
    assert loaded.scale_tier == "BASIC_TPU"
    assert _tpu_vm(loaded.spec) == (
        CLOUD_TPU.machine_type,
        CLOUD_TPU.accelerator,
        CLOUD_TPU.accelerator_count,
        1,
    )
    (pool,) = loaded.spec.worker_pool_specs
    assert _image(pool) == TF_TPU_2_12
    # The tier's master (standard) has no pool, and the notes say why.
    dropped = [n for n in loaded.notes if n.startswith("masterType standard is dropped")]
    assert len(dropped) == 1
    assert "one TPU VM" in dropped[0] and "the trainer runs on the TPU VM" in dropped[0]
    assert validate(loaded.spec, region="us-central1") == []


def test_basic_tpu_on_2_15_takes_the_regions_registry(tmp_path: Path) -> None:
    spec = _load(tmp_path, _basic_tpu("'2.15'", region="europe-west4")).spec
    (pool,) = spec.worker_pool_specs
    assert _image(pool) == "europe-docker.pkg.dev/vertex-ai/training/tf-tpu.2-15.cp310:latest"
    assert validate(spec, region="europe-west4") == []


@pytest.mark.parametrize(
    ("runtime", "shown"),
    [("'1.15'", "1.15"), ("2.1", "2.1")],
)
def test_a_runtime_without_a_tpu_image_is_refused_naming_the_nearest(
    tmp_path: Path, runtime: str, shown: str
) -> None:
    error = _refused(tmp_path, _basic_tpu(runtime, python="'3.7'"))
    (violation,) = error.violations
    assert violation.path == "trainingInput.runtimeVersion"
    assert violation.reason == (
        f"Vertex AI has prebuilt TensorFlow {shown} training images for CPU and GPU only, "
        "none for TPU"
    )
    assert violation.suggestion == (
        "nearest versions with one: 2.12; set runtimeVersion to one of them, "
        "or set workerConfig.imageUri to an image of your own"
    )
    # Converted anyway (to price it): the TPU VM never got a CPU or GPU image instead.
    assert error.conversion is not None
    assert _tpu_vm(error.conversion.spec)[:2] == (CLOUD_TPU.machine_type, CLOUD_TPU.accelerator)
    assert _image(error.conversion.spec.worker_pool_specs[0]) == ""


def test_a_master_and_a_cloud_tpu_worker_become_one_tpu_vm(tmp_path: Path) -> None:
    loaded = _load(tmp_path, _custom())
    assert _tpu_vm(loaded.spec) == (CLOUD_TPU.machine_type, "TPU_V2", 8, 1)
    assert any(n.startswith("masterType n1-highcpu-16 is dropped") for n in loaded.notes)
    assert "n1-highcpu-16" not in loaded.spec.model_dump_json()
    assert validate(loaded.spec, region="us-central1") == []


def test_accelerator_config_on_cloud_tpu_picks_tpu_v3(tmp_path: Path) -> None:
    loaded = _load(tmp_path, _custom("{type: TPU_V3, count: 8}"))
    assert _tpu_vm(loaded.spec) == (CLOUD_TPU.machine_type, "TPU_V3", 8, 1)
    (pool,) = loaded.spec.worker_pool_specs
    assert _image(pool) == TF_TPU_2_12
    assert "worker: legacy machine type cloud_tpu is cloud-tpu with 8 x TPU_V3" in loaded.notes
    assert validate(loaded.spec, region="us-central1") == []


def test_the_same_tpu_job_said_three_ways_converts_the_same(tmp_path: Path) -> None:
    """BASIC_TPU, a cloud_tpu worker, and one with an explicit TPU_V2 acceleratorConfig."""
    documents = [
        _load(tmp_path, text).spec.model_dump(exclude_none=True)
        for text in (
            _basic_tpu("'2.12'"),
            _custom(),
            _custom("{type: TPU_V2, count: 8}"),
        )
    ]
    assert documents[0] == documents[1] == documents[2]


def test_a_cloud_tpu_worker_uses_its_tpu_tf_version(tmp_path: Path) -> None:
    spec = _load(
        tmp_path,
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-standard-8\n"
        "  workerType: cloud_tpu\n  workerCount: 1\n"
        "  workerConfig: {tpuTfVersion: '2.15'}\n"
        "  runtimeVersion: '2.12'\n  region: europe-west4\n" + PACKAGE,
    ).spec
    (pool,) = spec.worker_pool_specs
    assert _image(pool) == "europe-docker.pkg.dev/vertex-ai/training/tf-tpu.2-15.cp310:latest"


def test_the_tpu_vm_runs_the_masters_container_and_drops_its_other_settings(
    tmp_path: Path,
) -> None:
    loaded = _load(
        tmp_path,
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-highcpu-16\n"
        "  masterConfig:\n    imageUri: gcr.io/my-project/mnist-tpu:latest\n"
        "    diskConfig: {bootDiskSizeGb: 200}\n"
        "  workerType: cloud_tpu\n  workerCount: 1\n"
        "  workerConfig:\n    acceleratorConfig: {type: TPU_V3, count: 8}\n"
        "  region: us-central1\n",
    )
    (pool,) = loaded.spec.worker_pool_specs
    assert pool.container_spec is not None
    assert pool.container_spec.image_uri == "gcr.io/my-project/mnist-tpu:latest"
    assert pool.disk_spec is None  # the master's disk went with the master
    (dropped,) = [n for n in loaded.notes if n.startswith("masterType n1-highcpu-16")]
    assert dropped.endswith("(masterConfig.diskConfig dropped with the master)")


def test_a_cloud_tpu_master_is_the_tpu_vm_itself(tmp_path: Path) -> None:
    loaded = _load(
        tmp_path,
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: cloud_tpu\n"
        "  masterConfig:\n    acceleratorConfig: {type: TPU_V3, count: 8}\n"
        "  runtimeVersion: '2.15'\n  region: us-central1\n" + PACKAGE,
    )
    assert _tpu_vm(loaded.spec) == (CLOUD_TPU.machine_type, "TPU_V3", 8, 1)
    assert not any("dropped" in n for n in loaded.notes)


# --- what a TPU VM cannot be -------------------------------------------------------------


def test_four_tpu_v3_cores_are_refused_naming_what_cloud_tpu_takes(tmp_path: Path) -> None:
    error = _refused(tmp_path, _custom("{type: TPU_V3, count: 4}"))
    (violation,) = error.violations
    assert violation.path == "trainingInput.workerConfig.acceleratorConfig"
    assert violation.reason == (
        "cloud_tpu takes {type: TPU_V2, count: 8} or {type: TPU_V3, count: 8}, "
        "not {type: TPU_V3, count: 4}"
    )
    assert violation.suggestion == (
        "set workerConfig.acceleratorConfig: {type: TPU_V3, count: 8}, "
        "or remove it for cloud_tpu's default {type: TPU_V2, count: 8}"
    )
    assert error.conversion is None  # the TPU VM is unknown: nothing to price


@pytest.mark.parametrize(
    ("accelerator", "given"),
    [
        ("{type: NVIDIA_TESLA_T4, count: 8}", "{type: NVIDIA_TESLA_T4, count: 8}"),
        ("{count: 8}", "{count: 8}"),
        ("{type: TPU_V4_POD, count: 8}", "{type: TPU_V4_POD, count: 8}"),
    ],
)
def test_other_accelerators_on_cloud_tpu_are_refused(
    tmp_path: Path, accelerator: str, given: str
) -> None:
    (violation,) = _refused(tmp_path, _custom(accelerator)).violations
    assert violation.path == "trainingInput.workerConfig.acceleratorConfig"
    assert violation.reason.endswith(f", not {given}")
    assert violation.suggestion == (
        "remove workerConfig.acceleratorConfig for cloud_tpu's default "
        "{type: TPU_V2, count: 8}, or set it to {type: TPU_V3, count: 8}"
    )


def test_more_tpu_workers_or_other_pools_are_refused(tmp_path: Path) -> None:
    error = _refused(
        tmp_path,
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-highcpu-16\n"
        "  workerType: cloud_tpu\n  workerCount: 2\n"
        "  parameterServerType: standard\n  parameterServerCount: 1\n"
        "  runtimeVersion: '2.12'\n  region: us-central1\n" + PACKAGE,
    )
    assert [(v.path, v.suggestion) for v in error.violations] == [
        ("trainingInput.workerCount", "set workerCount: 1"),
        (
            "trainingInput.parameterServerCount",
            "remove parameterServerType and parameterServerCount",
        ),
    ]
    assert error.violations[0].reason == (
        "2 x cloud_tpu: Vertex AI runs a TPU job on a single TPU VM "
        "(one worker pool, replicaCount 1)"
    )
