"""Jobs written for Terraform (``google_vertex_ai_custom_job``) and pulumi-gcp (``AiCustomJob`` in
a Pulumi YAML program), read by ``validate``/``convert`` as the CustomJob they create (issue 44,
item 9). References are data, never evaluated: each is named in a note and left out."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from components import load_spec_file, validate
from components._errors import SpecFormatError
from components.cli._cli import main

IMAGE = "us-docker.pkg.dev/my-project/trainers/bert:7"

TERRAFORM = """
variable "image" { type = string }
locals { gpu = "NVIDIA_TESLA_T4" }

resource "google_vertex_ai_custom_job" "bert" {
  display_name = "bert-finetune"
  location     = "us-central1"
  project      = "my-project"
  labels       = { team = "nlp", cost_center = "ml_research" }

  job_spec {
    worker_pool_specs {
      machine_spec {
        machine_type      = "n1-standard-8"
        accelerator_type  = "NVIDIA_TESLA_T4"
        accelerator_count = 1
      }
      replica_count = 1
      container_spec {
        image_uri = "IMAGE"
        args      = ["--epochs", "3"]
        env {
          name  = "MODE"
          value = "train"
        }
      }
      disk_spec {
        boot_disk_type    = "pd-ssd"
        boot_disk_size_gb = 200
      }
    }
    worker_pool_specs {
      machine_spec {
        machine_type      = "n1-standard-8"
        accelerator_type  = "NVIDIA_TESLA_T4"
        accelerator_count = 1
      }
      replica_count = 2
      container_spec {
        image_uri = "IMAGE"
      }
    }
    scheduling {
      timeout = "7200s"
    }
  }
}
""".replace("IMAGE", IMAGE)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_terraform_custom_job_is_read_as_the_job_it_creates(tmp_path: Path) -> None:
    loaded = load_spec_file(_write(tmp_path, "main.tf", TERRAFORM), env={})
    spec = loaded.spec
    assert spec.display_name == "bert-finetune" and spec.region == "us-central1"
    assert spec.labels == {"team": "nlp", "cost_center": "ml_research"}  # keys are data
    chief, workers = spec.worker_pool_specs
    assert chief.machine_spec is not None and chief.machine_spec.accelerator_count == 1
    assert chief.container_spec is not None and chief.container_spec.args == ["--epochs", "3"]
    assert [(e.name, e.value) for e in chief.container_spec.env] == [("MODE", "train")]
    assert chief.disk_spec is not None and chief.disk_spec.boot_disk_size_gb == 200
    assert workers.replicas == 2
    assert validate(spec) == []
    out, err = io.StringIO(), io.StringIO()
    assert main(["convert", str(tmp_path / "main.tf")], out, err) == 0
    converted = yaml.safe_load(out.getvalue())
    assert "workerPoolSpecs" in str(converted)


def test_terraform_references_are_named_and_the_validator_says_what_is_missing(
    tmp_path: Path,
) -> None:
    text = TERRAFORM.replace(
        '"NVIDIA_TESLA_T4"\n        accelerator_count = 1\n      }\n      replica_count = 1',
        "local.gpu\n        accelerator_count = 1\n      }\n      replica_count = 1",
        1,
    )
    text = text.replace('location     = "us-central1"', "location     = var.region")
    loaded = load_spec_file(_write(tmp_path, "job.tf", text), env={})
    notes = " ".join(loaded.notes)
    assert "location = var.region: a Terraform input variable" in notes
    assert "accelerator_type = local.gpu: a Terraform local value" in notes
    assert loaded.spec.region is None
    problems = [str(v) for v in validate(loaded.spec)]
    assert any("workerPoolSpecs[0].machineSpec.acceleratorType" in p for p in problems)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('resource "google_storage_bucket" "b" { name = "x" }\n', "found 0"),
        (
            TERRAFORM + TERRAFORM.replace('"bert"', '"bert2"'),
            "holds 2 jobs (google_vertex_ai_custom_job.bert; google_vertex_ai_custom_job.bert2)",
        ),
        ('resource "google_vertex_ai_custom_job" "x" {\n', "not readable as Terraform"),
    ],
)
def test_a_terraform_file_that_is_not_one_job_gets_one_line(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(SpecFormatError) as info:
        load_spec_file(_write(tmp_path, "x.tf", text), env={})
    assert message in str(info.value) and "\n" not in str(info.value)


def test_deep_terraform_nesting_is_refused(tmp_path: Path) -> None:
    deep = "labels = " + "{ a = " * 40 + '"x"' + " }" * 40
    text = f'resource "google_vertex_ai_custom_job" "x" {{\n  {deep}\n}}\n'
    with pytest.raises(SpecFormatError) as info:
        load_spec_file(_write(tmp_path, "deep.tf", text), env={})
    assert "nested deeper than" in str(info.value)


PULUMI = f"""
name: training
runtime: yaml
config:
  gcp:project: my-project
resources:
  bucket:
    type: gcp:storage:Bucket
    properties:
      location: US
  job:
    type: gcp:vertex/aiCustomJob:AiCustomJob
    properties:
      displayName: pulumi-job
      location: us-central1
      jobSpec:
        baseOutputDirectory:
          outputUriPrefix: gs://${{bucket.name}}/out
        workerPoolSpecs:
          - machineSpec:
              machineType: g2-standard-8
            replicaCount: 1
            containerSpec:
              imageUri: {IMAGE}
"""


def test_a_pulumi_yaml_ai_custom_job_is_read_with_every_problem(tmp_path: Path) -> None:
    loaded = load_spec_file(_write(tmp_path, "Pulumi.yaml", PULUMI), env={})
    assert loaded.spec.display_name == "pulumi-job" and loaded.spec.region == "us-central1"
    notes = " ".join(loaded.notes)
    assert "${bucket.name}" in notes and "Pulumi interpolation" in notes
    (problem,) = [str(v) for v in validate(loaded.spec) if v.severity == "error"]
    assert "g2-standard-8 comes with 1 NVIDIA_L4" in problem
