"""``convert --to plugin-yaml`` (issue 44, item 9): the Pulumi YAML program it writes for a
Terraform or pulumi-gcp job (and any other form) declares this project's plugin resource with
properties the plugin's own ``check`` accepts, every one an input of its schema."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import yaml
from pulumi.provider.experimental.provider import CheckRequest, ConfigureRequest

from components.cli._cli import main
from components.plugin._provider import GpuTrainingProvider
from components.plugin._values import wrap_map
from tests.plugin.conftest import run_isolated

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "components/plugin/schema.json").read_text()
)
TERRAFORM = """
resource "google_vertex_ai_custom_job" "finetune" {
  display_name = "bert-finetune"
  location     = "us-central1"
  labels       = { team = "nlp" }
  job_spec {
    worker_pool_specs {
      machine_spec {
        machine_type      = "n1-standard-8"
        accelerator_type  = "NVIDIA_TESLA_T4"
        accelerator_count = 1
      }
      replica_count = 1
      container_spec {
        image_uri = "us-docker.pkg.dev/my-project/trainers/bert:7"
        args      = ["--epochs", "3"]
      }
    }
    scheduling { timeout = "3600s" }
  }
}
"""
TUNING = """
displayName: sweep
maxTrialCount: 8
parallelTrialCount: 2
studySpec:
  metrics: [{metricId: accuracy, goal: MAXIMIZE}]
  parameters:
    - parameterId: lr
      doubleValueSpec: {minValue: 0.0001, maxValue: 0.1}
      scaleType: UNIT_LOG_SCALE
trialJobSpec:
  workerPoolSpecs:
    - machineSpec: {machineType: n1-standard-8, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}
      replicaCount: 1
      containerSpec: {imageUri: us-docker.pkg.dev/my-project/trainers/bert:7}
"""


def _converted(path: Path) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    assert main(["convert", "--to", "plugin-yaml", str(path)], out, err) == 0, err.getvalue()
    program: dict[str, Any] = yaml.safe_load(out.getvalue())
    return program


def _undeclared(value: Any, schema: dict[str, Any], where: str) -> list[str]:
    """The keys of ``value`` that its schema type does not declare, at any depth."""
    ref = schema.get("$ref", "")
    if ref.startswith("#/types/"):
        schema = SCHEMA["types"][ref.removeprefix("#/types/")]
    if isinstance(value, list) and "items" in schema:
        return [
            m for i, v in enumerate(value) for m in _undeclared(v, schema["items"], f"{where}[{i}]")
        ]
    if not isinstance(value, dict) or "properties" not in schema:
        return []
    found = []
    for key, inner in value.items():
        if key not in schema["properties"]:
            found.append(f"{where}.{key}")
        else:
            found += _undeclared(inner, schema["properties"][key], f"{where}.{key}")
    return found


def _checked(token: str, properties: dict[str, Any]) -> list[Any]:
    provider = GpuTrainingProvider()
    settings = wrap_map({"project": "my-project", "region": "us-central1"})
    run_isolated(provider.configure(ConfigureRequest({}, settings, True, True)))
    urn = f"urn:pulumi:dev::proj::{token}::job"
    result = run_isolated(provider.check(CheckRequest(urn, {}, wrap_map(properties), b"")))
    return list(result.failures or [])


def test_a_terraform_job_becomes_a_training_job_the_plugin_accepts(tmp_path: Path) -> None:
    path = tmp_path / "main.tf"
    path.write_text(TERRAFORM)
    program = _converted(path)
    assert program["runtime"] == "yaml"
    ((name, resource),) = program["resources"].items()
    assert name == "bert-finetune" and resource["type"] == "gpu-training:vertex:TrainingJob"
    properties = resource["properties"]
    assert properties["labels"] == {"team": "nlp"} and properties["region"] == "us-central1"
    assert properties["jobSpec"]["scheduling"] == {"timeout": "3600s"}
    inputs = SCHEMA["resources"][resource["type"]]
    assert _undeclared(properties, {"properties": inputs["inputProperties"]}, "properties") == []
    assert _checked(resource["type"], properties) == []
    # The check judges what it is given: the same job with 3 T4s on its machine fails it.
    properties["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorCount"] = 3
    assert _checked(resource["type"], properties) != []


def test_a_tuning_job_becomes_a_tuning_resource_the_plugin_accepts(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(TUNING)
    (resource,) = _converted(path)["resources"].values()
    assert resource["type"] == "gpu-training:vertex:HyperparameterTuningJob"
    properties = resource["properties"]
    assert properties["maxTrialCount"] == 8 and properties["displayName"] == "sweep"
    inputs = SCHEMA["resources"][resource["type"]]
    assert _undeclared(properties, {"properties": inputs["inputProperties"]}, "properties") == []
    assert _checked(resource["type"], properties) == []
