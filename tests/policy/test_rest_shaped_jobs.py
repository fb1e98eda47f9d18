"""The policy pack's rules judge REST-shaped jobs as they judge the dynamic resources' specs:
the provider plugin's ``gpu-training:vertex:*`` resources and pulumi-gcp's ``AiCustomJob``
(whose plugin is not obtainable here: its inputs are given as the engine hands them over)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.policies import AI_CUSTOM_JOB_TYPE, evaluate, job_from_props

POLICY_DIR = Path(__file__).parents[2] / "policy"
DYNAMIC = "pulumi-python:dynamic/vertex:TrainingJob"
PLUGIN = "gpu-training:vertex:TrainingJob"
PLUGIN_TUNING = "gpu-training:vertex:HyperparameterTuningJob"


def _dev() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((POLICY_DIR / "dev.json").read_text())
    return loaded


def _job_spec(count: int = 8, strategy: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "workerPoolSpecs": [
            {
                "machineSpec": {
                    "machineType": "a2-highgpu-8g",
                    "acceleratorType": "NVIDIA_TESLA_A100",
                    "acceleratorCount": count,
                },
                "replicaCount": 1,
                "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/trainer:1"},
            }
        ]
    }
    if strategy:
        spec["scheduling"] = {"strategy": strategy}
    return spec


def _rest_inputs() -> dict[str, Any]:
    """A CustomJob's inputs as pulumi-gcp's AiCustomJob (and the plugin) take them."""
    return {
        "displayName": "big",
        "labels": {"team": "ml"},
        "jobSpec": _job_spec(),
        "project": "my-project",
        "region": "us-east1",
    }


def _dynamic_inputs() -> dict[str, Any]:
    """The same job as the dynamic TrainingJob carries it."""
    document = {"displayName": "big", "labels": {"team": "ml"}, **_job_spec()}
    return {"spec": json.dumps(document), "project": "my-project", "region": "us-east1"}


@pytest.mark.parametrize("resource_type", [AI_CUSTOM_JOB_TYPE, PLUGIN])
def test_rest_shaped_inputs_get_the_dynamic_resources_verdicts(resource_type: str) -> None:
    rest = job_from_props("big", resource_type, _rest_inputs())
    dynamic = job_from_props("big", DYNAMIC, _dynamic_inputs())
    assert rest is not None and dynamic is not None
    assert rest.spec == dynamic.spec and rest.region == "us-east1"
    assert rest.project == "my-project"
    verdicts = evaluate([rest], _dev())
    assert verdicts == evaluate([dynamic], _dev())
    assert verdicts["allowed-regions"] == [
        "job 'big' runs in us-east1; this stack allows us-central1"
    ]
    assert verdicts["max-gpus-per-job"] == [
        "job 'big' holds 8 accelerators at once; the limit is 4"
    ]
    assert verdicts["required-labels"] == [
        "job 'big' lacks the label(s) cost-center, required in this stack"
    ]
    assert verdicts["spot-required"] == [
        "job 'big' runs STANDARD; this stack requires scheduling.strategy: SPOT"
    ]
    assert verdicts["max-hourly-cost-per-job"][0].startswith("job 'big' costs $")


def test_a_plugin_tuning_job_counts_its_parallel_trials() -> None:
    props = {
        "displayName": "tune",
        "labels": {"team": "ml", "cost-center": "cc"},
        "studySpec": {
            "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
            "parameters": [
                {"parameterId": "lr", "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1}}
            ],
        },
        "maxTrialCount": 8,
        "parallelTrialCount": 2,
        "trialJobSpec": _job_spec(count=2, strategy="SPOT"),
        "region": "us-central1",
    }
    job = job_from_props("tune", PLUGIN_TUNING, props)
    assert job is not None and job.tuning and job.parallel_trials == 2
    assert evaluate([job], _dev())["max-gpus-per-job"] == []
    assert evaluate([job], {"max-gpus-per-job": {"maxGpus": 3}})["max-gpus-per-job"] == [
        "tuning job 'tune' holds 4 accelerators at once (2 trials at once x 2); the limit is 3"
    ]


def test_other_gcp_resources_are_not_jobs() -> None:
    assert job_from_props("b", "gcp:storage/bucket:Bucket", {"name": "b"}) is None
