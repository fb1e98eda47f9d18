"""Every job file of the test suite that the project's validator refuses, sent to the emulator.

The emulator's checks are its own (``emulator/_validation.py``): this shows, file by file, that
they refuse what Vertex AI refuses, with Vertex AI's status (400 INVALID_ARGUMENT) and naming the
field. How each file becomes a v1 request:

* a file in a v1 shape (``CustomJobSpec``, ``CustomJob``, ``HyperparameterTuningJob``, a create
  request) is sent as written: what ``gcloud ... --config`` would send;
* a legacy ``config.yaml`` or a command line is read and converted by the project's reader
  (``components.formats``) into the v1 job it describes;
* where that reader refuses to convert a file (a retired GPU, a broken study), the request the
  file describes is written here by hand, each field's origin noted.

A file that is invalid only by a rule Vertex AI does not enforce at create, or that never becomes
a request, is listed in :data:`EXCEPTIONS` with the reason: documented, not skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from emulator.testing import EmulatorProcess
from tests.emulator.conftest import PARENT, raw_http
from tests.spec.test_real_configs import VERDICTS

DATA = Path(__file__).resolve().parents[2] / "spec" / "data"
# The seed files beside data/real/ that the validator refuses (tests/spec/test_cli.py).
SEED_INVALID = (
    "seed001_config_legacy_k80.yaml",
    "seed001_config_t4.yaml",
    "seed001_submit_config.sh",
    "seed001_submit_flags.sh",
)
INVALID = sorted(
    [f"real/{name}" for name, verdict in VERDICTS.items() if verdict.code != 0] + list(SEED_INVALID)
)

_PACKAGE = {
    "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-15.py310:latest",
    "packageUris": ["gs://my-bucket/packages/trainer-0.1.tar.gz"],
    "pythonModule": "trainer.task",
}


def _pool(machine: dict[str, Any], replicas: int = 1) -> dict[str, Any]:
    return {"machineSpec": machine, "replicaCount": replicas, "pythonPackageSpec": _PACKAGE}


# AI Platform's BASIC_GPU tier and its standard_gpu machine: n1-standard-8 with one K80
# (components/catalog/scale_tiers.csv, legacy_machine_types.csv).
_BASIC_GPU = {
    "displayName": "basic-gpu",
    "jobSpec": {
        "workerPoolSpecs": [
            _pool(
                {
                    "machineType": "n1-standard-8",
                    "acceleratorType": "NVIDIA_TESLA_K80",
                    "acceleratorCount": 1,
                }
            )
        ]
    },
}
_K80_FIELD = "job_spec.worker_pool_specs[0].machine_spec.accelerator_type"

# Hand-written requests for the files the project's reader will not convert.
REQUESTS: dict[str, tuple[str, dict[str, Any]]] = {
    "real/legacy_basic_gpu.yaml": ("customJobs", _BASIC_GPU),
    "real/legacy_basic_gpu_flag.sh": ("customJobs", _BASIC_GPU),
    # complex_model_m_gpu: n1-standard-16 with four K80 (legacy_machine_types.csv), for the
    # master and the 9 workers; large_model (n1-highmem-8) for the 3 parameter servers.
    "seed001_config_legacy_k80.yaml": (
        "customJobs",
        {
            "displayName": "seed001",
            "jobSpec": {
                "workerPoolSpecs": [
                    _pool(
                        {
                            "machineType": "n1-standard-16",
                            "acceleratorType": "NVIDIA_TESLA_K80",
                            "acceleratorCount": 4,
                        }
                    ),
                    _pool(
                        {
                            "machineType": "n1-standard-16",
                            "acceleratorType": "NVIDIA_TESLA_K80",
                            "acceleratorCount": 4,
                        },
                        9,
                    ),
                    _pool({"machineType": "n1-highmem-8"}, 3),
                ]
            },
        },
    ),
    # masterType n1-standard-8 with 3 P100 (runtime 2.4: the tf-gpu.2-4 image); the reader
    # refuses P100 past its end of support (2026-09-15), so the request is written here.
    "real/legacy_p100_three.yaml": (
        "customJobs",
        {
            "displayName": "legacy-p100-three",
            "jobSpec": {
                "workerPoolSpecs": [
                    _pool(
                        {
                            "machineType": "n1-standard-8",
                            "acceleratorType": "NVIDIA_TESLA_P100",
                            "acceleratorCount": 3,
                        }
                    )
                ]
            },
        },
    ),
    # --master-machine-type n1-standard-8, --master-accelerator count=1,type=nvidia-tesla-p100
    # (the enum NVIDIA_TESLA_P100), the PyTorch image and the packaged ./trainer.
    "real/legacy_image_and_package.sh": (
        "customJobs",
        {
            "displayName": "pytorch_job_1",
            "jobSpec": {
                "workerPoolSpecs": [
                    _pool(
                        {
                            "machineType": "n1-standard-8",
                            "acceleratorType": "NVIDIA_TESLA_P100",
                            "acceleratorCount": 1,
                        }
                    )
                ],
                "baseOutputDirectory": {"outputUriPrefix": "gs://my-bucket/pytorch_job_1"},
            },
        },
    ),
    # hyperparameters.goal MAXIMISE (no such GoalType), params[0] an INTEGER up to 128.5.
    "real/legacy_hypertune_broken.yaml": (
        "hyperparameterTuningJobs",
        {
            "displayName": "hypertune-broken",
            "maxTrialCount": 40,
            "parallelTrialCount": 8,
            "studySpec": {
                "metrics": [{"metricId": "val_acc", "goal": "MAXIMISE"}],
                "parameters": [
                    {
                        "parameterId": "batch-size",
                        "integerValueSpec": {"minValue": "16", "maxValue": 128.5},
                    }
                ],
            },
            "trialJobSpec": {"workerPoolSpecs": [_pool({"machineType": "n1-standard-8"})]},
        },
    ),
    # The heredoc's hyperparameters (goal MAXIMISE, no such GoalType) on BASIC (n1-standard-4).
    "real/legacy_hypertune_heredoc_broken.sh": (
        "hyperparameterTuningJobs",
        {
            "displayName": "census_hpt_1",
            "maxTrialCount": 12,
            "parallelTrialCount": 3,
            "studySpec": {
                "metrics": [{"metricId": "accuracy", "goal": "MAXIMISE"}],
                "parameters": [
                    {
                        "parameterId": "first-layer-size",
                        "integerValueSpec": {"minValue": "50", "maxValue": "500"},
                        "scaleType": "UNIT_LINEAR_SCALE",
                    }
                ],
            },
            "trialJobSpec": {"workerPoolSpecs": [_pool({"machineType": "n1-standard-4"})]},
        },
    ),
}

# What the 400 must name: a fieldViolations field, or words of the message.
REFUSED: dict[str, tuple[str, ...]] = {
    "real/legacy_basic_gpu.yaml": (_K80_FIELD,),
    "real/legacy_basic_gpu_flag.sh": (_K80_FIELD,),
    "seed001_config_legacy_k80.yaml": (
        _K80_FIELD,
        "job_spec.worker_pool_specs[1].machine_spec.accelerator_type",
    ),
    "real/legacy_hypertune_broken.yaml": ("MAXIMISE",),
    "real/legacy_p100_three.yaml": ("job_spec.worker_pool_specs[0].machine_spec.accelerator_type",),
    "real/legacy_image_and_package.sh": (
        "job_spec.worker_pool_specs[0].machine_spec.accelerator_type",
    ),
    "real/vertex_reservation_without_values.yaml": (
        "job_spec.worker_pool_specs[0].machine_spec.reservation_affinity",
    ),
    "real/vertex_a100_shorthand.yaml": ("NVIDIA_A100",),
    "real/vertex_gcloud_accelerator_name.yaml": ("nvidia-tesla-t4",),
    "real/vertex_n1_highcpu_8.yaml": ("job_spec.worker_pool_specs[0].machine_spec.machine_type",),
    "real/vertex_hp_tuning_grid_double.yaml": ("study_spec.parameters[0]",),
    "real/vertex_hp_tuning_heredoc_grid.sh": ("study_spec.parameters[0]",),
    "real/legacy_hypertune_heredoc_broken.sh": ("MAXIMISE",),
    "seed001_config_t4.yaml": (
        "job_spec.worker_pool_specs[0].python_package_spec.package_uris",
        "job_spec.worker_pool_specs[0].python_package_spec.python_module",
    ),
}

# Files the emulator accepts, or that never become a request, and why.
EXCEPTIONS: dict[str, str] = {
    "real/legacy_runtime_2_10_float.yaml": (
        "no v1 request exists: the project refuses runtimeVersion 2.10 because Google publishes "
        "no TensorFlow 2.10 training image to convert it to; Vertex AI never sees the legacy file"
    ),
    "real/legacy_typo_flag.sh": (
        "no request: gcloud refuses the unknown flag --runtime-versoin before calling the API"
    ),
    "real/legacy_two_jobs.sh": (
        "a project rule about files (one submission per spec file); each of its two commands "
        "is a valid job on its own"
    ),
    "real/vertex_a4_on_demand.yaml": (
        "a capacity rule of the project (a4-highgpu-8g capacity comes only from reservations, "
        "FLEX_START or Spot): Vertex AI documents no create-time refusal of on-demand STANDARD "
        "scheduling; such a job waits for or fails on capacity after the create"
    ),
    "real/vertex_a4x_flex_start.yaml": (
        "a capacity rule of the project, as vertex_a4_on_demand.yaml's: a4x-highgpu-4g (GB200) "
        "capacity comes only from reservations (Vertex AI's GB200 page); Vertex AI documents no "
        "create-time refusal of FLEX_START for it: such a job waits for or fails on capacity"
    ),
    "real/vertex_mig_two_gpus.yaml": (
        "two project rules: gpuPartitionSize on exactly one GPU (the v1 MachineSpec doc describes "
        "8 A100s partitioned into 56 instances, so Vertex AI does not refuse several) and the "
        "capacity rule of vertex_a4_on_demand.yaml (a3-highgpu-2g: FLEX_START or Spot only)"
    ),
    "seed001_submit_config.sh": (
        "invalid only without its shell variables ($JOB_NAME...); with them set it is a valid "
        "job (tests/spec/test_cli.py), so no request differs from a valid one"
    ),
    "seed001_submit_flags.sh": "as seed001_submit_config.sh: unset shell variables only",
}


def test_every_invalid_file_is_refused_or_an_exception() -> None:
    assert INVALID, "no invalid job files found"
    assert set(REFUSED) | set(EXCEPTIONS) == set(INVALID)
    assert not set(REFUSED) & set(EXCEPTIONS)
    assert set(REQUESTS) <= set(REFUSED)


def _as_request(name: str) -> tuple[str, dict[str, Any]]:
    """(collection, request body) that the file ``name`` describes."""
    if name in REQUESTS:
        return REQUESTS[name]
    from components.formats.load import detect_format, load_spec_file
    from components.formats.text import parse_document, read_text
    from components.vertex.convert import custom_job_spec_document
    from components.vertex.tuning_convert import tuning_job_document

    path = DATA / name
    if path.suffix in (".yaml", ".json"):
        document = parse_document(read_text(path), str(path))
        shape = detect_format(document, str(path))
        if shape == "custom-job-spec":
            return "customJobs", {"displayName": path.stem, "jobSpec": document}
        if shape == "custom-job":
            return "customJobs", document
        if shape == "hyperparameter-tuning-job":
            return "hyperparameterTuningJobs", {"displayName": path.stem, **document}
    loaded = load_spec_file(path, env={}, tuning=True)
    if loaded.tuning is not None:
        tuning = {"displayName": path.stem, **tuning_job_document(loaded.tuning)}
        return "hyperparameterTuningJobs", tuning
    return "customJobs", {
        "displayName": path.stem,
        "jobSpec": custom_job_spec_document(loaded.spec),
    }


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_emulator_refuses_the_file_as_vertex_does(sim: EmulatorProcess, name: str) -> None:
    collection, request = _as_request(name)
    status, body = raw_http(sim, "POST", f"/v1/{PARENT}/{collection}", json.dumps(request).encode())
    assert status == 400, (name, body)
    error = body["error"]
    assert error["status"] == "INVALID_ARGUMENT", error
    named = {
        violation["field"]
        for detail in error.get("details", [])
        for violation in detail.get("fieldViolations", [])
    }
    for mention in REFUSED[name]:
        assert mention in named or mention in error["message"], (name, error)
