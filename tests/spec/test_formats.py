"""The three input formats: Vertex YAML, legacy config.yaml and legacy gcloud commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from components import JobSpec, SpecFormatError, SpecInvalidError, load_spec_file, validate
from components.formats.legacy_config import LegacyConversionError
from components.rules._catalog import load_catalog
from tests.spec.helpers import pool

DATA = Path(__file__).parent / "data"
ENV = {
    "JOB_NAME": "census_20240101_120000",
    "APP_PACKAGE_PATH": "gs://staging/trainer-0.1.tar.gz",
    "MAIN_APP_MODULE": "trainer.task",
    "JOB_DIR": "gs://census-out/job",
}


def test_seed001_config_with_t4_converts() -> None:
    loaded = load_spec_file(DATA / "seed001_config_t4.yaml")
    assert loaded.format == "legacy-config"
    pools = loaded.spec.worker_pool_specs
    assert [p.replicas for p in pools] == [1, 9, 3]
    for chief_or_worker in pools[:2]:
        assert chief_or_worker.machine_spec is not None
        assert chief_or_worker.machine_spec.model_dump(by_alias=False, exclude_none=True) == {
            "machine_type": "n1-highcpu-16",
            "accelerator_type": "NVIDIA_TESLA_T4",
            "accelerator_count": 4,
        }
    assert (
        pools[2].machine_spec is not None and pools[2].machine_spec.machine_type == "n1-highmem-8"
    )
    assert pools[2].machine_spec.accelerator_type is None
    hardware = [
        v for v in validate(loaded.spec, region="us-central1") if v.rule not in ("trainer",)
    ]
    assert (
        hardware == []
    )  # only the trainer (given by gcloud flags) is missing from config.yaml alone


def test_seed001_legacy_k80_config_names_retired_gpu_in_its_own_terms() -> None:
    # The converter refuses the K80 types itself (issue 12), at the fields that name them,
    # and still validates the rest (this config alone has no trainer).
    with pytest.raises(LegacyConversionError) as info:
        load_spec_file(DATA / "seed001_config_legacy_k80.yaml")
    retired = [v for v in info.value.violations if v.rule == "retired"]
    assert [(v.path, v.reason) for v in retired] == [
        (
            "trainingInput.masterType",
            "complex_model_m_gpu runs on 4 x NVIDIA_TESLA_K80, retired on 2024-05-01",
        ),
        (
            "trainingInput.workerType",
            "complex_model_m_gpu runs on 4 x NVIDIA_TESLA_K80, retired on 2024-05-01",
        ),
    ]
    assert retired[1].suggestion == (
        "use workerType: n1-standard-16 with workerConfig.acceleratorConfig "
        "{type: NVIDIA_TESLA_T4, count: 4}"
    )
    assert not any("acceleratorType" in v.path for v in info.value.violations)
    assert {v.rule for v in info.value.violations} == {"retired", "trainer"}
    conversion = info.value.conversion  # converted anyway, to price what it asks for
    assert conversion is not None
    chief, workers, ps = conversion.spec.worker_pool_specs
    assert chief.machine_spec is not None and ps.machine_spec is not None
    assert (
        chief.machine_spec.machine_type,
        chief.machine_spec.accelerator_type,
        chief.machine_spec.accelerator_count,
    ) == ("n1-standard-16", "NVIDIA_TESLA_K80", 4)
    assert workers.replicas == 9 and ps.replicas == 3
    assert ps.machine_spec.machine_type == "n1-highmem-8"
    assert any("complex_model_m_gpu is n1-standard-16" in n for n in conversion.notes)


def test_seed001_flag_command_converts_to_valid_spec() -> None:
    loaded = load_spec_file(DATA / "seed001_submit_flags.sh", env=ENV)
    spec = loaded.spec
    assert loaded.format == "gcloud-command"
    assert spec.display_name == "census_20240101_120000"
    assert spec.region == "us-central1"
    assert spec.base_output_directory == "gs://census-out/job"
    chief = spec.worker_pool_specs[0]
    assert chief.python_package_spec is not None
    assert chief.python_package_spec.package_uris == ["gs://staging/trainer-0.1.tar.gz"]
    assert chief.python_package_spec.python_module == "trainer.task"
    assert chief.python_package_spec.args == [
        "--job-dir=gs://census-out/job",
        "--user_arg_1",
        "value_1",
        "--user_arg_n",
        "value_n",
    ]
    assert (
        chief.python_package_spec.executor_image_uri
        == "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-15.py310:latest"
    )
    ps = spec.worker_pool_specs[2].python_package_spec
    assert (
        ps is not None and ps.executor_image_uri is not None and "tf-cpu" in ps.executor_image_uri
    )
    assert validate(spec) == []


def test_flags_override_config_file_relative_to_command_file() -> None:
    loaded = load_spec_file(DATA / "seed001_submit_config.sh", env=ENV)
    pools = loaded.spec.worker_pool_specs
    assert pools[1].replicas == 2  # --worker-count 2 beats workerCount: 9
    assert (
        pools[1].machine_spec is not None and pools[1].machine_spec.accelerator_count == 4
    )  # from the file
    package = pools[0].python_package_spec
    assert package is not None and package.args[-2:] == [
        "--epochs",
        "$NOT_EXPANDED",
    ]  # single quotes


def test_unset_variable_is_named(tmp_path: Path) -> None:
    with pytest.raises(SpecFormatError, match=r"\$APP_PACKAGE_PATH is not set"):
        load_spec_file(DATA / "seed001_submit_flags.sh", env={"JOB_NAME": "j"})


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (
            "gcloud ai-platform jobs submit training j --master-acelerator count=1",
            "did you mean --master-accelerator",
        ),
        (
            "gcloud ai-platform jobs submit training j --worker-count nine",
            "--worker-count must be a whole number",
        ),
        ("gcloud ai-platform jobs submit training j --master-accelerator 4", "KEY=VALUE"),
        ("gcloud compute instances create x", "only `gcloud ai-platform jobs submit training`"),
        ("gcloud ai-platform jobs submit training --region us-central1", "exactly one job name"),
        ("gcloud ai-platform jobs submit training j --region", "--region needs a value"),
        ("gcloud ai-platform jobs submit training 'j", "cannot split"),
    ],
)
def test_bad_commands_name_the_problem(tmp_path: Path, command: str, message: str) -> None:
    path = tmp_path / "submit.sh"
    path.write_text(command + "\n")
    with pytest.raises(SpecFormatError, match=message):
        load_spec_file(path, env={})


def test_whole_custom_job_yaml() -> None:
    loaded = load_spec_file(DATA / "custom_job.yaml")
    assert loaded.format == "custom-job"
    assert loaded.spec.display_name == "census-training"
    assert loaded.spec.scheduling is not None and loaded.spec.scheduling.timeout is not None
    assert loaded.spec.scheduling.timeout.total_seconds() == 3600
    assert validate(loaded.spec, region="us-central1") == []


def test_camel_and_snake_case_give_the_same_spec() -> None:
    camel = JobSpec.parse(
        {
            "displayName": "j",
            "workerPoolSpecs": [pool()],
            "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/o"},
        }
    )
    snake = JobSpec.parse(
        {
            "display_name": "j",
            "worker_pool_specs": [
                {
                    "machine_spec": {"machine_type": "n1-standard-8"},
                    "replica_count": 1,
                    "python_package_spec": {
                        "executor_image_uri": "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest",
                        "package_uris": ["gs://bucket/trainer-0.1.tar.gz"],
                        "python_module": "trainer.task",
                    },
                }
            ],
            "base_output_directory": "gs://bkt/o",
        }
    )
    assert camel == snake


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("workerPoolSpecs: [", "not valid YAML at line"),
        ("- a\n- b\n", "expected a mapping"),
        ("name: x\n", "unknown format"),
        ("a: 1\n---\nb: 2\n", "one YAML document"),
        ("", "found 0"),
    ],
)
def test_malformed_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    with pytest.raises(SpecFormatError, match=message):
        load_spec_file(path)


def test_unknown_format_names_every_form_it_knows(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("name: x\n")
    with pytest.raises(SpecFormatError) as info:
        load_spec_file(path, tuning=True)
    for key in ("workerPoolSpecs", "jobSpec", "customJob", "trainingInput", "studySpec"):
        assert key in str(info.value)
    assert "hyperparameterTuningJob (CreateHyperparameterTuningJobRequest)" in str(info.value)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(SpecFormatError, match="no such file"):
        load_spec_file(tmp_path / "nope.yaml")
    with pytest.raises(SpecFormatError, match="is a directory"):
        load_spec_file(tmp_path)


def test_bad_field_types_are_violations_with_paths(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "workerPoolSpecs:\n  - machineSpec: {machineType: n1-standard-8, acceleratorCount: many}\n    replicaCout: 1\n"
    )
    with pytest.raises(SpecInvalidError) as info:
        load_spec_file(path)
    paths = {v.path: v for v in info.value.violations}
    assert (
        paths["workerPoolSpecs[0].machineSpec.acceleratorCount"].reason == "must be a whole number"
    )
    assert paths["workerPoolSpecs[0].replicaCout"].suggestion == "did you mean replicaCount?"


def _legacy(name: str) -> str:
    return load_catalog().legacy_machine_types[name].machine_type


@pytest.mark.parametrize(
    ("tier", "pools"),
    [
        ("BASIC", [(_legacy("standard"), None, 1)]),
        (
            "STANDARD_1",
            [
                (_legacy("complex_model_s"), None, 1),
                (_legacy("complex_model_s"), None, 4),
                (_legacy("standard"), None, 1),
            ],
        ),
    ],
)
def test_scale_tiers(tmp_path: Path, tier: str, pools: list[tuple[str, str | None, int]]) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        f"trainingInput:\n  scaleTier: {tier}\n  runtimeVersion: '2.15'\n  packageUris: [gs://bkt/t.tgz]\n  pythonModule: trainer.task\n  region: europe-west4\n"
    )
    spec = load_spec_file(path).spec
    got = [
        (p.machine_spec.machine_type, p.machine_spec.accelerator_type, p.replicas)
        for p in spec.worker_pool_specs
        if p.machine_spec
    ]
    assert got == pools
    assert spec.worker_pool_specs[0].python_package_spec is not None
    image = spec.worker_pool_specs[0].python_package_spec.executor_image_uri or ""
    assert image.startswith("europe-docker.pkg.dev/")  # the registry follows the job's region


def test_legacy_unknown_runtime_and_custom_tier_conflict(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "trainingInput:\n  scaleTier: BASIC\n  masterType: n1-standard-8\n  runtimeVersion: '1.0'\n  workerCount: x\n"
    )
    with pytest.raises(SpecInvalidError) as info:
        load_spec_file(path)
    paths = {v.path for v in info.value.violations}
    assert {
        "trainingInput.scaleTier",
        "trainingInput.runtimeVersion",
        "trainingInput.workerCount",
    } <= paths


def test_list_and_mapping_defaults_are_never_shared_between_specs():
    pool = {"machineSpec": {"machineType": "n1-standard-4"}, "containerSpec": {"imageUri": "x"}}
    first = JobSpec.parse({"workerPoolSpecs": [pool]})
    second = JobSpec.parse({"workerPoolSpecs": [pool]})
    first.labels["team"] = "a"
    container = first.worker_pool_specs[0].container_spec
    assert container is not None
    container.args.append("--x")
    assert second.labels == {}
    assert second.worker_pool_specs[0].container_spec is not None
    assert second.worker_pool_specs[0].container_spec.args == []


def test_an_earlier_executor_image_name_is_read_as_vertex_ais(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "region: europe-west4\nworkerPoolSpecs:\n- machineSpec: {machineType: n1-standard-4}\n"
        "  replicaCount: 1\n  pythonPackageSpec:\n"
        "    executorImageUri: gcr.io/cloud-aiplatform/training/tf-cpu.2-17.py310:latest\n"
        "    packageUris: [gs://bkt/t.tgz]\n    pythonModule: trainer.task\n"
    )
    loaded = load_spec_file(path)
    package = loaded.spec.worker_pool_specs[0].python_package_spec
    assert package is not None
    assert package.executor_image_uri == (
        "europe-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest"
    )
    assert any("earlier name of a prebuilt training image" in n for n in loaded.notes)
    assert validate(loaded.spec) == []
