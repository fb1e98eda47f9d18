"""Legacy ``trainingInput`` configs in the shapes Google's samples and users wrote them.

Each config is written here as a file and read the way ``validate``/``convert`` read it, so
the YAML reader (``2.10`` is a float) is part of what is tested. Expected machine types and
replacement GPUs are read from the catalog rows, never restated, so another row changes
the expectation and not the test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components import load_spec_file
from components.formats.legacy_config import LegacyConversionError, convert_training_input
from components.formats.result import LoadedSpec
from components.rules._catalog import load_catalog
from components.rules._spec import JobSpec, WorkerPoolSpec
from components.rules._violations import Violation

PACKAGE = (
    "  packageUris: [gs://my-bucket/packages/trainer-0.1.tar.gz]\n  pythonModule: trainer.task\n"
)


def _write(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _load(tmp_path: Path, text: str) -> LoadedSpec:
    return load_spec_file(_write(tmp_path, text))


def _refused(tmp_path: Path, text: str) -> LegacyConversionError:
    with pytest.raises(LegacyConversionError) as info:
        _load(tmp_path, text)
    return info.value


def _image(pool: WorkerPoolSpec) -> str:
    assert pool.python_package_spec is not None
    return pool.python_package_spec.executor_image_uri or ""


def _machine(legacy_type: str) -> str:
    return load_catalog().legacy_machine_types[legacy_type].machine_type


def _replacement(accelerator: str) -> str:
    replacement = load_catalog().accelerators[accelerator].replacement
    assert replacement is not None
    return replacement


def _by_path(violations: tuple[Violation, ...], path: str) -> list[Violation]:
    return [v for v in violations if v.path == path]


# --- Google's census sample: BASIC_GPU, runtime 2.1, Python 3.7 -------------------------

BASIC_GPU_SAMPLE = (
    "trainingInput:\n"
    "  scaleTier: BASIC_GPU\n"
    "  runtimeVersion: 2.1\n"
    "  pythonVersion: 3.7\n"
    "  region: europe-west4\n"
    "  jobDir: gs://my-bucket/census/job\n" + PACKAGE
)


def test_basic_gpu_is_refused_in_the_configs_terms_with_the_custom_replacement(
    tmp_path: Path,
) -> None:
    error = _refused(tmp_path, BASIC_GPU_SAMPLE)
    # One problem, at the field that chose the K80: not workerPoolSpecs[0].machineSpec...
    assert [(v.path, v.rule) for v in error.violations] == [("trainingInput.scaleTier", "retired")]
    (violation,) = error.violations
    assert violation.reason == "BASIC_GPU runs on 1 x NVIDIA_TESLA_K80, retired on 2024-05-01"
    assert violation.suggestion == (
        f"use scaleTier: CUSTOM, masterType: {_machine('standard_gpu')}, masterConfig: "
        f"{{acceleratorConfig: {{type: {_replacement('NVIDIA_TESLA_K80')}, count: 1}}}}"
    )
    # Converted anyway (to price it): the GPU image of runtime 2.1 from Europe's registry.
    assert error.conversion is not None and error.conversion.scale_tier == "BASIC_GPU"
    (chief,) = error.conversion.spec.worker_pool_specs
    assert _image(chief) == "europe-docker.pkg.dev/vertex-ai/training/tf-gpu.2-1:latest"


def test_standard_gpu_master_type_is_refused_at_master_type(tmp_path: Path) -> None:
    error = _refused(
        tmp_path,
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: standard_gpu\n"
        "  runtimeVersion: '2.11'\n  region: us-central1\n" + PACKAGE,
    )
    (violation,) = error.violations
    assert violation.path == "trainingInput.masterType"
    assert violation.reason == "standard_gpu runs on 1 x NVIDIA_TESLA_K80, retired on 2024-05-01"
    assert violation.suggestion == (
        f"use masterType: {_machine('standard_gpu')} with masterConfig.acceleratorConfig "
        f"{{type: {_replacement('NVIDIA_TESLA_K80')}, count: 1}}"
    )


def test_eight_k80s_become_as_many_t4s_as_the_machine_takes(tmp_path: Path) -> None:
    catalog = load_catalog()
    machine = _machine("complex_model_l_gpu")
    t4 = _replacement("NVIDIA_TESLA_K80")
    fitting = max(c for c in catalog.attachable_counts[(machine, t4)] if c <= 8)
    error = _refused(
        tmp_path,
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: complex_model_l_gpu\n"
        "  region: us-central1\n  runtimeVersion: '2.15'\n" + PACKAGE,
    )
    (violation,) = error.violations
    assert violation.reason.startswith("complex_model_l_gpu runs on 8 x NVIDIA_TESLA_K80")
    assert f"{{type: {t4}, count: {fitting}}}" in (violation.suggestion or "")
    assert fitting < 8  # 8 T4s do not fit an n1-standard-32: the suggestion must not say 8


def test_a_k80_accelerator_config_is_refused_at_its_type(tmp_path: Path) -> None:
    error = _refused(
        tmp_path,
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-standard-8\n"
        "  masterConfig:\n    acceleratorConfig: {count: 2, type: NVIDIA_TESLA_K80}\n"
        "  region: us-central1\n  runtimeVersion: '2.15'\n" + PACKAGE,
    )
    (violation,) = error.violations
    assert violation.path == "trainingInput.masterConfig.acceleratorConfig.type"
    assert violation.reason.startswith("NVIDIA_TESLA_K80 was retired on 2024-05-01")
    assert "type: NVIDIA_TESLA_T4, count: 2" in (violation.suggestion or "")


# --- CUSTOM with a Compute Engine type and acceleratorConfig ----------------------------

CUSTOM_T4 = (
    "trainingInput:\n"
    "  scaleTier: CUSTOM\n"
    "  masterType: n1-highmem-8\n"
    "  masterConfig:\n"
    "    acceleratorConfig:\n"
    "      count: 1\n"
    "      type: NVIDIA_TESLA_T4\n"
    "  runtimeVersion: '2.11'\n"
    "  pythonVersion: '3.7'\n"
    "  region: us-central1\n" + PACKAGE
)


def test_custom_t4_runs_the_runtime_and_python_it_names(tmp_path: Path) -> None:
    loaded = _load(tmp_path, CUSTOM_T4)
    (chief,) = loaded.spec.worker_pool_specs
    # Python 3.7 picks the py37 image of 2.11, not the py310 one.
    assert _image(chief) == "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-11:latest"
    notes = "\n".join(loaded.notes)
    assert "bundled TensorFlow, scikit-learn and XGBoost" in notes
    assert "masterConfig.imageUri" in notes and "sklearn-cpu" in notes
    assert "end of availability on 2024-11-15" in notes


def test_python_3_10_written_as_a_number_is_not_python_3_1(tmp_path: Path) -> None:
    loaded = _load(tmp_path, CUSTOM_T4.replace("'3.7'", "3.10"))
    assert _image(loaded.spec.worker_pool_specs[0]).endswith("/tf-gpu.2-11.py310:latest")
    assert not any("pythonVersion" in n for n in loaded.notes)  # an exact match, not 3.1


def test_a_python_minor_without_an_image_uses_the_published_one_with_a_note(
    tmp_path: Path,
) -> None:
    loaded = _load(tmp_path, CUSTOM_T4.replace("'2.11'", "'2.15'"))
    assert _image(loaded.spec.worker_pool_specs[0]).endswith("/tf-gpu.2-15.py310:latest")
    assert any("pythonVersion 3.7" in n and "Python 3.10" in n for n in loaded.notes)


def test_python_2_is_refused_at_python_version(tmp_path: Path) -> None:
    error = _refused(
        tmp_path,
        "trainingInput:\n  runtimeVersion: '1.15'\n  pythonVersion: '2.7'\n"
        "  region: us-central1\n" + PACKAGE,
    )
    (violation,) = error.violations
    assert violation.path == "trainingInput.pythonVersion"
    assert "Python 3.7, not 2.7" in violation.reason


# --- runtimeVersion as YAML reads it ----------------------------------------------------


@pytest.mark.parametrize("written", ["2.10", "'2.10'", '"2.10"'])
def test_runtime_2_10_is_2_10_however_it_is_written(tmp_path: Path, written: str) -> None:
    error = _refused(
        tmp_path,
        f"trainingInput:\n  scaleTier: STANDARD_1\n  runtimeVersion: {written}\n"
        "  region: us-central1\n" + PACKAGE,
    )
    # Three pools need an image: the missing version is said once, with its neighbours.
    (violation,) = error.violations
    assert violation.path == "trainingInput.runtimeVersion"
    assert violation.reason == "Vertex AI has no prebuilt TensorFlow training image for 2.10"
    assert "nearest versions with one: 2.9, 2.11" in (violation.suggestion or "")


def test_runtime_2_1_written_as_a_number_is_2_1(tmp_path: Path) -> None:
    loaded = _load(
        tmp_path, "trainingInput:\n  runtimeVersion: 2.1\n  region: us-central1\n" + PACKAGE
    )
    assert _image(loaded.spec.worker_pool_specs[0]).endswith("/tf-cpu.2-1:latest")


def test_a_plain_float_from_python_is_used_with_a_note() -> None:
    conversion = convert_training_input(
        {"runtimeVersion": 2.1, "packageUris": ["gs://bkt/t.tgz"], "pythonModule": "t.task"}
    )
    assert _image(conversion.spec.worker_pool_specs[0]).endswith("/tf-cpu.2-1:latest")
    assert any("write versions as text" in n for n in conversion.notes)


def test_a_runtime_problem_does_not_hide_another_violation(tmp_path: Path) -> None:
    error = _refused(
        tmp_path,
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-highcpu-16\n"
        "  masterConfig: {acceleratorConfig: {count: 3, type: NVIDIA_TESLA_T4}}\n"
        "  workerType: n1-highcpu-16\n  workerCount: 2\n"
        "  workerConfig: {acceleratorConfig: {count: 3, type: NVIDIA_TESLA_T4}}\n"
        "  runtimeVersion: 2.10\n  region: us-central1\n" + PACKAGE,
    )
    paths = [v.path for v in error.violations]
    assert paths.count("trainingInput.runtimeVersion") == 1
    assert "workerPoolSpecs[0].machineSpec.acceleratorCount" in paths
    assert "workerPoolSpecs[1].machineSpec.acceleratorCount" in paths
    assert not any(p.endswith("executorImageUri") for p in paths)  # caused by the runtime


def test_a_version_that_is_no_version_is_named_and_cut_short(tmp_path: Path) -> None:
    error = _refused(tmp_path, f"trainingInput:\n  runtimeVersion: '{'9' * 10_000}'\n" + PACKAGE)
    (violation,) = error.violations
    assert violation.path == "trainingInput.runtimeVersion"
    assert "is not a version like 2.11" in violation.reason and len(violation.reason) < 120


# --- complex_model_m with workers and parameter servers ---------------------------------

COMPLEX_MODEL = (
    "trainingInput:\n"
    "  scaleTier: CUSTOM\n"
    "  masterType: complex_model_m\n"
    "  workerType: complex_model_m\n"
    "  workerCount: 9\n"
    "  workerConfig:\n"
    "    diskConfig: {bootDiskType: pd-standard, bootDiskSizeGb: 250}\n"
    "  parameterServerType: large_model\n"
    "  parameterServerCount: 3\n"
    "  parameterServerConfig:\n"
    "    diskConfig: {bootDiskSizeGb: '120'}\n"
    "  evaluatorType: complex_model_s\n"
    "  evaluatorCount: 1\n"
    "  evaluatorConfig:\n"
    "    diskConfig: {bootDiskType: pd-ssd}\n"
    "  runtimeVersion: '2.8'\n"
    "  pythonVersion: '3.7'\n"
    "  region: asia-east1\n" + PACKAGE
)


def test_complex_model_m_with_workers_parameter_servers_and_an_evaluator(tmp_path: Path) -> None:
    spec = _load(tmp_path, COMPLEX_MODEL).spec
    got = [
        (p.machine_spec.machine_type if p.machine_spec else None, p.replicas, _image(p))
        for p in spec.worker_pool_specs
    ]
    image = "asia-docker.pkg.dev/vertex-ai/training/tf-cpu.2-8:latest"
    assert got == [
        (_machine("complex_model_m"), 1, image),
        (_machine("complex_model_m"), 9, image),
        (_machine("large_model"), 3, image),
        (_machine("complex_model_s"), 1, image),
    ]
    disks = [
        p.disk_spec.model_dump(by_alias=False, exclude_none=True) if p.disk_spec else None
        for p in spec.worker_pool_specs
    ]
    assert disks[0] is None
    assert disks[1] == {"boot_disk_type": "pd-standard", "boot_disk_size_gb": 250}
    assert disks[2] == {"boot_disk_size_gb": 120}
    assert disks[3] == {"boot_disk_type": "pd-ssd"}


def test_a_scale_tier_keeps_the_masters_disk(tmp_path: Path) -> None:
    spec = _load(
        tmp_path,
        "trainingInput:\n  scaleTier: STANDARD_1\n"
        "  masterConfig: {diskConfig: {bootDiskType: pd-standard, bootDiskSizeGb: 300}}\n"
        "  region: us-central1\n  runtimeVersion: '2.15'\n" + PACKAGE,
    ).spec
    chief = spec.worker_pool_specs[0]
    assert chief.disk_spec is not None
    assert (chief.disk_spec.boot_disk_type, chief.disk_spec.boot_disk_size_gb) == (
        "pd-standard",
        300,
    )


# --- TPUs: tests/spec/test_legacy_tpu.py -----------------------------------------------


# --- hyperparameter tuning: tests/spec/test_tuning_formats.py ---------------------------


# --- a pool's own image with the package ------------------------------------------------


def test_an_image_with_a_package_runs_the_package_in_that_image(tmp_path: Path) -> None:
    image = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.1-13.py310:latest"
    spec = _load(
        tmp_path,
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-standard-16\n"
        f"  masterConfig:\n    imageUri: {image}\n"
        "    acceleratorConfig: {count: 1, type: NVIDIA_TESLA_T4}\n"
        "  workerType: n1-standard-16\n  workerCount: 2\n"
        "  args: [--epochs, 10]\n  region: us-central1\n" + PACKAGE,
    ).spec
    for pool in spec.worker_pool_specs:
        assert pool.container_spec is None
        package = pool.python_package_spec
        assert package is not None
        assert package.executor_image_uri == image  # the workers inherit the master's
        assert package.package_uris == ["gs://my-bucket/packages/trainer-0.1.tar.gz"]
        assert package.python_module == "trainer.task"
        assert package.args == ["--epochs", "10"]


def test_an_image_without_a_package_stays_a_container(tmp_path: Path) -> None:
    spec = _load(
        tmp_path,
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-standard-8\n"
        "  masterConfig:\n    imageUri: gcr.io/my-project/trainer:v3\n"
        "    containerArgs: [--lr, 0.01]\n  region: us-central1\n",
    ).spec
    (chief,) = spec.worker_pool_specs
    assert chief.python_package_spec is None and chief.container_spec is not None
    assert chief.container_spec.image_uri == "gcr.io/my-project/trainer:v3"
    assert chief.container_spec.args == ["--lr", "0.01"]


def test_a_command_with_master_image_uri_and_a_package_runs_the_package(tmp_path: Path) -> None:
    command = _write(
        tmp_path,
        "gcloud ai-platform jobs submit training pytorch_job_1 \\\n"
        "  --region europe-west4 \\\n"
        "  --master-image-uri gcr.io/cloud-ml-public/training/pytorch-gpu.1-6 \\\n"
        "  --scale-tier CUSTOM \\\n"
        "  --master-machine-type n1-standard-8 \\\n"
        "  --master-accelerator count=1,type=nvidia-tesla-t4 \\\n"
        "  --packages gs://my-bucket/trainer-0.2.tar.gz \\\n"
        "  --module-name trainer.task\n",
        "submit.sh",
    )
    loaded = load_spec_file(command, env={})
    (chief,) = loaded.spec.worker_pool_specs
    assert chief.container_spec is None and chief.python_package_spec is not None
    # AI Platform's PyTorch image, by its Vertex AI name (the registry of the job's region)
    assert (
        chief.python_package_spec.executor_image_uri
        == "europe-docker.pkg.dev/vertex-ai/training/pytorch-gpu.1-6:latest"
    )
    assert any("earlier name of a prebuilt training image" in n for n in loaded.notes)
    assert chief.python_package_spec.python_module == "trainer.task"


def test_a_custom_image_with_a_package_is_refused_with_the_ways_out(tmp_path: Path) -> None:
    command = _write(
        tmp_path,
        "gcloud ai-platform jobs submit training j --region us-central1 \\\n"
        "  --master-image-uri gcr.io/my-project/trainer:3 --scale-tier BASIC \\\n"
        "  --package-path gs://my-bucket/t.tar.gz --module-name trainer.task\n",
        "submit.sh",
    )
    with pytest.raises(LegacyConversionError) as info:
        load_spec_file(command, env={})
    (problem,) = [v for v in info.value.violations if "imageUri" in v.path or "image" in v.path]
    assert "not one of Vertex AI's prebuilt training images" in problem.reason
    assert "prebuilt image" in (problem.suggestion or "")
    assert "container" in (problem.suggestion or "")


def test_a_container_command_with_a_package_is_a_conflict(tmp_path: Path) -> None:
    error = _refused(
        tmp_path,
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-standard-8\n"
        "  masterConfig:\n    imageUri: gcr.io/p/trainer:v1\n    containerCommand: [python, run.py]\n"
        "  region: us-central1\n" + PACKAGE,
    )
    # and the package could not run on that custom image anyway
    assert [v.path for v in error.violations] == [
        "trainingInput.masterConfig.imageUri",
        "trainingInput.masterConfig.containerCommand",
    ]


# --- the region override ----------------------------------------------------------------

TRAINING_INPUT: dict[str, Any] = {
    "scaleTier": "BASIC",
    "runtimeVersion": "2.11",
    "region": "us-central1",
    "packageUris": ["gs://bkt/t.tgz"],
    "pythonModule": "trainer.task",
}


@pytest.mark.parametrize(
    ("region", "registry"),
    [
        (None, "us-docker.pkg.dev"),
        ("europe-west4", "europe-docker.pkg.dev"),
        ("asia-northeast1", "asia-docker.pkg.dev"),
        ("southamerica-east1", "us-docker.pkg.dev"),
    ],
)
def test_the_region_override_moves_the_job_and_its_registry(
    region: str | None, registry: str
) -> None:
    conversion = convert_training_input(dict(TRAINING_INPUT), region=region)
    spec: JobSpec = conversion.spec
    assert spec.region == (region or "us-central1")
    assert _image(spec.worker_pool_specs[0]).startswith(
        registry + "/vertex-ai/training/tf-cpu.2-11"
    )


def test_no_runtime_version_is_ai_platforms_documented_default(tmp_path: Path) -> None:
    # AI Platform's default runtime was 1.0 (TensorFlow 1.0): Vertex AI has no image for it,
    # so the job gets the nearest versions that have one, never a silent 2.x image.
    error = _refused(tmp_path, "trainingInput:\n  scaleTier: BASIC\n" + PACKAGE)
    (violation,) = error.violations
    assert violation.path == "trainingInput.runtimeVersion"
    assert "TensorFlow training image for 1.0" in violation.reason
    assert violation.reason.startswith("runtimeVersion is not set, so AI Platform's default 1.0")
    assert "1.15" in (violation.suggestion or "")
    assert error.conversion is not None
    assert any("default was 1.0" in note for note in error.conversion.notes)
