"""TPU jobs in the forms Vertex AI's configure-compute page documents, and two verdicts that
must agree with ``validate`` (issue 44, items 6 and 7).

v5e (``ct5lp-hightpu-*``), v6e (``ct6e-standard-*``) and v5p (``ct5p-hightpu-4t``) jobs name
their TPUs by machine type and ``tpuTopology``, with no accelerator fields; v6e and v5p have no
``AcceleratorType`` value at all. Machine types, topologies and regions are read from the
catalog, never restated here.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import JobSpec, load_spec_file, validate
from components._errors import SpecFormatError
from components.cli._cli import main
from components.rules._catalog import load_catalog, training_regions

CATALOG = load_catalog()
IMAGE = "us-docker.pkg.dev/my-project/trainers/jax-tpu:1"


def _job(machine_spec: dict[str, Any], region: str = "us-central1") -> JobSpec:
    return JobSpec.model_validate(
        {
            "displayName": "tpu-job",
            "region": region,
            "workerPoolSpecs": [
                {
                    "machineSpec": machine_spec,
                    "replicaCount": 1,
                    "containerSpec": {"imageUri": IMAGE},
                }
            ],
        }
    )


def _errors(spec: JobSpec) -> list[str]:
    return [str(v) for v in validate(spec) if v.severity == "error"]


def _tpu_machines(accelerator: str) -> list[str]:
    return sorted(
        m.name for m in CATALOG.machine_types.values() if m.fixed_accelerator == accelerator
    )


@pytest.mark.parametrize("accelerator", ["TPU_V5_LITEPOD", "TPU_V6E", "TPU_V5P"])
def test_each_documented_machine_and_topology_is_accepted_without_accelerator_fields(
    accelerator: str,
) -> None:
    machines = _tpu_machines(accelerator)
    assert machines, accelerator
    region = training_regions(CATALOG, accelerator)
    for machine in machines:
        for topology in CATALOG.tpu_topologies[machine]:
            spec = _job(
                {"machineType": machine, "tpuTopology": topology},
                region[0] if region else "us-central1",
            )
            assert _errors(spec) == [], (machine, topology)


def test_a_v5e_job_as_google_documents_it() -> None:
    """Today's refusals ("only applies to TPU accelerators", "set acceleratorType") are gone."""
    text = (
        "displayName: v5e\nregion: us-central1\nworkerPoolSpecs:\n"
        "- machineSpec: {machineType: ct5lp-hightpu-4t, tpuTopology: 4x4}\n"
        f"  replicaCount: 1\n  containerSpec: {{imageUri: '{IMAGE}'}}\n"
    )
    spec = JobSpec.model_validate(yaml.safe_load(text))
    assert validate(spec) == []


def test_a_topology_the_machine_does_not_come_in_names_those_it_does() -> None:
    (error,) = _errors(_job({"machineType": "ct6e-standard-4t", "tpuTopology": "3x3"}))
    assert "tpuTopology" in error and "'3x3' is not a topology of ct6e-standard-4t" in error
    for topology in CATALOG.tpu_topologies["ct6e-standard-4t"]:
        assert topology in error


def test_a_topology_on_a_gpu_machine_is_still_refused() -> None:
    (error,) = _errors(_job({"machineType": "n1-standard-8", "tpuTopology": "2x2"}))
    assert error.startswith("workerPoolSpecs[0].machineSpec.tpuTopology: only applies to TPU")


def test_tpu_v6e_as_an_accelerator_type_is_refused_with_the_machine_form() -> None:
    spec = _job(
        {"machineType": "ct6e-standard-4t", "acceleratorType": "TPU_V6E", "acceleratorCount": 4}
    )
    (error,) = _errors(spec)
    assert "TPU_V6E is no acceleratorType of Vertex AI's API" in error
    assert "remove acceleratorType and acceleratorCount" in error
    for machine in _tpu_machines("TPU_V6E"):
        assert machine in error


@pytest.mark.parametrize(
    ("written", "wanted", "never"),
    [
        ("TPU_V6", "ct6e-standard-4t", "TPU_V3"),
        ("tpu-v6", "ct6e-standard-4t", "TPU_V2"),
        ("TPU_V5", "TPU_V5_LITEPOD", "TPU_V3"),
        ("TPU_V5", "ct5p-hightpu-4t", "TPU_V2"),
        ("TPU_V4", "TPU_V4_POD", "TPU_V5"),
    ],
)
def test_a_tpu_typo_suggests_its_own_generation(written: str, wanted: str, never: str) -> None:
    spec = _job({"machineType": "cloud-tpu", "acceleratorType": written, "acceleratorCount": 8})
    (error,) = [e for e in _errors(spec) if "acceleratorType" in e]
    assert wanted in error and never not in error


def test_a_v5e_job_where_vertex_offers_v5e_for_prediction_only_is_refused() -> None:
    offers = CATALOG.training_offers
    (region, _), *_ = [k for k, o in offers.items() if k[1] == "TPU_V5_LITEPOD" and not o.training]
    spec = _job({"machineType": "ct5lp-hightpu-4t", "tpuTopology": "2x2"}, region)
    (error,) = _errors(spec)
    assert error.startswith("workerPoolSpecs[0].machineSpec.machineType:")
    assert "prediction only" in error
    for offered in training_regions(CATALOG, "TPU_V5_LITEPOD")[:3]:
        assert offered in error


def test_a_tpu_machine_job_takes_one_pool() -> None:
    pool = {
        "machineSpec": {"machineType": "ct6e-standard-8t", "tpuTopology": "2x4"},
        "replicaCount": 1,
        "containerSpec": {"imageUri": IMAGE},
    }
    spec = JobSpec.model_validate(
        {"displayName": "j", "region": "us-central1", "workerPoolSpecs": [pool, pool]}
    )
    assert any("runs on one TPU VM" in e and "machineType" in e for e in _errors(spec))


# --- item 7: verdicts that must agree -----------------------------------------------------


def test_estimate_refuses_a_gpu_machine_without_its_gpus_as_validate_does(tmp_path: Path) -> None:
    config = tmp_path / "job.yaml"
    config.write_text(
        "displayName: a2\nregion: us-central1\nworkerPoolSpecs:\n"
        "- machineSpec: {machineType: a2-highgpu-8g}\n"
        f"  replicaCount: 1\n  containerSpec: {{imageUri: '{IMAGE}'}}\n"
    )
    out, err = io.StringIO(), io.StringIO()
    code = main(["estimate", str(config)], out, err)
    validate_out, validate_err = io.StringIO(), io.StringIO()
    validate_code = main(["validate", str(config)], validate_out, validate_err)
    assert code == validate_code != 0
    assert "total $/h" not in out.getvalue()
    fixed = CATALOG.machine_types["a2-highgpu-8g"]
    assert (
        f"a2-highgpu-8g comes with {fixed.fixed_accelerator_count} {fixed.fixed_accelerator}"
        in err.getvalue()
    )


def test_a_legacy_package_path_on_cloud_storage_is_refused_naming_packages(tmp_path: Path) -> None:
    script = tmp_path / "submit.sh"
    script.write_text(
        "gcloud ai-platform jobs submit training job1 --region=us-central1 \\\n"
        "  --runtime-version=2.11 --python-version=3.7 --module-name=trainer.task \\\n"
        "  --package-path=gs://my-bucket/code/trainer/ --scale-tier=BASIC\n"
    )
    with pytest.raises(SpecFormatError) as info:
        load_spec_file(script, env={})
    message = str(info.value)
    assert "--package-path gs://my-bucket/code/trainer/" in message
    assert "local folder" in message and "--packages" in message


# --- item 8: a pool named for what it runs; a warning at the field it is about -------------


def test_a_reduction_server_pool_is_priced_as_reduction_servers() -> None:
    from components.costs._pricing import estimate

    def pool(machine: str, image: str, replicas: int = 1) -> dict[str, Any]:
        return {
            "machineSpec": {"machineType": machine},
            "replicaCount": replicas,
            "containerSpec": {"imageUri": image},
        }

    spec = JobSpec.model_validate(
        {
            "displayName": "rs",
            "region": "us-central1",
            "workerPoolSpecs": [
                pool("n1-standard-8", IMAGE),
                pool("n1-standard-8", IMAGE, 2),
                pool(
                    "n1-highcpu-16",
                    "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest",
                    4,
                ),
            ],
        }
    )
    roles = [p.role for p in estimate(spec, CATALOG, region="us-central1").pools]
    assert roles == ["chief", "workers", "reduction servers"]
    plain = spec.model_copy(deep=True)
    container = plain.worker_pool_specs[2].container_spec
    assert container is not None
    container.image_uri = IMAGE
    assert estimate(plain, CATALOG, region="us-central1").pools[2].role == "parameter servers"


def test_the_autopackaging_warning_is_at_the_package_not_its_env(tmp_path: Path) -> None:
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "task.py").write_text("print('hi')\n")
    script = tmp_path / "submit.sh"
    script.write_text(
        "gcloud ai custom-jobs create --region=us-central1 --display-name=auto \\\n"
        "  --worker-pool-spec=machine-type=n1-standard-8,replica-count=1,"
        "executor-image-uri=us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-12.py310:latest,"
        "local-package-path=trainer,python-module=trainer.task\n"
    )
    spec = load_spec_file(script, env={}).spec
    (warning,) = [v for v in validate(spec) if "local-package-path" in v.reason]
    assert warning.path == "workerPoolSpecs[0].pythonPackageSpec"
    assert warning.severity == "warning"
