"""A Pulumi YAML program with several pulumi-gcp ``AiCustomJob`` resources, and a Terraform file
with several ``google_vertex_ai_custom_job`` resources: a job per resource, each named by its
resource name, for ``validate``, ``convert`` and ``estimate`` (issue 44, item 9), as the Python
and TypeScript program readers give theirs. A file of one resource reads as one job, as before."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import load_spec_file
from components._errors import SpecFormatError
from components.cli._cli import main
from components.formats.load import holds_jobs, load_jobs
from components.formats.python_sdk import MAX_JOBS

IMAGE = "us-docker.pkg.dev/my-project/trainers/bert:7"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def _resource(display_name: Any, machine: str, **pool: Any) -> dict[str, Any]:
    spec = {"machineType": machine, **pool}
    return {
        "type": "gcp:vertex/aiCustomJob:AiCustomJob",
        "properties": {
            "displayName": display_name,
            "location": "us-central1",
            "jobSpec": {
                "workerPoolSpecs": [
                    {"machineSpec": spec, "replicaCount": 1, "containerSpec": {"imageUri": IMAGE}}
                ]
            },
        },
    }


def _program(tmp_path: Path, resources: dict[str, Any], name: str = "Pulumi.yaml") -> Path:
    """A Pulumi YAML program of ``resources`` beside a bucket (not a job: never one)."""
    program = {
        "name": "training",
        "runtime": "yaml",
        "resources": {"bucket": {"type": "gcp:storage:Bucket"}, **resources},
    }
    path = tmp_path / name
    path.write_text(yaml.safe_dump(program, sort_keys=False))
    return path


def _machines(path: Path) -> dict[str | None, str | None]:
    found = {}
    for job in load_jobs(path, env={}):
        assert job.loaded is not None, job.error
        machine = job.loaded.spec.worker_pool_specs[0].machine_spec
        found[job.name] = machine.machine_type if machine is not None else None
    return found


def test_each_ai_custom_job_of_a_yaml_program_is_a_job_named_by_its_resource(
    tmp_path: Path,
) -> None:
    path = _program(
        tmp_path,
        {
            "small": _resource("small-run", "n1-standard-4"),
            "large": _resource("large-run", "n1-standard-8") | {"type": "gcp:vertex:AiCustomJob"},
        },
    )
    assert holds_jobs(path)
    assert _machines(path) == {
        "AiCustomJob small": "n1-standard-4",
        "AiCustomJob large": "n1-standard-8",
    }
    (first, _) = load_jobs(path, env={})
    assert first.loaded is not None and first.loaded.spec.display_name == "small-run"
    assert first.loaded.notes == [
        f"{path}: read as a pulumi-gcp AiCustomJob resource of a Pulumi YAML program"
    ]
    with pytest.raises(
        SpecFormatError, match=r"holds 2 jobs \(AiCustomJob small; AiCustomJob large\)"
    ):
        load_spec_file(path, env={})
    code, out, err = run("convert", str(path))
    assert code == 0 and err.count("== ") == 2
    documents = [d for d in yaml.safe_load_all(out) if d]
    assert [d["workerPoolSpecs"][0]["machineSpec"]["machineType"] for d in documents] == [
        "n1-standard-4",
        "n1-standard-8",
    ]
    code, out, err = run("estimate", str(path), "--no-live-prices")
    assert code == 0 and f"== {path}: AiCustomJob large ==" in err
    assert out.count("total $/h") == 2


def test_three_resources_one_invalid_each_is_judged_with_its_path(tmp_path: Path) -> None:
    path = _program(
        tmp_path,
        {
            "a": _resource("a", "n1-standard-4"),
            "b": _resource(
                "b", "n1-standard-8", acceleratorType="NVIDIA_TESLA_T4", acceleratorCount=3
            ),
            "c": _resource("c", "n1-standard-4"),
        },
    )
    code, out, err = run("validate", str(path))
    assert code == 1 and err.count("== ") == 3
    (problem,) = [line for line in out.splitlines() if "not allowed" in line]
    assert problem.startswith(
        "workerPoolSpecs[0].machineSpec.acceleratorCount: 3 x NVIDIA_TESLA_T4"
    )
    code, out, _err = run("validate", str(path), "--json")
    report = json.loads(out)
    assert [(j["name"], j["valid"]) for j in report["jobs"]] == [
        ("AiCustomJob a", True),
        ("AiCustomJob b", False),
        ("AiCustomJob c", True),
    ]
    assert report["valid"] is False


def test_an_unreadable_resource_is_its_own_error_the_others_still_read(tmp_path: Path) -> None:
    bad_count = _resource("bad", "n1-standard-4")
    bad_count["properties"]["jobSpec"]["workerPoolSpecs"][0]["replicaCount"] = "many"
    path = _program(
        tmp_path,
        {
            "good": _resource("good", "n1-standard-4"),
            "shapeless": {"type": "gcp:vertex:AiCustomJob", "properties": ["not", "a", "map"]},
            "bad": bad_count,
        },
    )
    good, shapeless, bad = load_jobs(path, env={})
    assert good.loaded is not None and good.error is None
    assert str(shapeless.error) == f"{path}: resources.shapeless.properties: expected a mapping"
    assert bad.error is not None and "workerPoolSpecs[0].replicaCount" in str(
        [str(v) for v in getattr(bad.error, "violations", ())]
    )
    code, out, err = run("validate", str(path))
    assert code == 2 and "Traceback" not in err + out
    assert f"error: {path}: resources.shapeless.properties: expected a mapping" in err + out


def test_computed_values_are_named_in_the_job_that_has_them(tmp_path: Path) -> None:
    path = _program(
        tmp_path,
        {
            "named": _resource("${config.jobName}", "n1-standard-4"),
            "invoked": _resource({"fn::invoke": {"function": "std:join"}}, "n1-standard-8"),
            "plain": _resource("plain", "n1-standard-4"),
        },
    )
    named, invoked, plain = load_jobs(path, env={})
    assert named.loaded is not None and invoked.loaded is not None and plain.loaded is not None
    assert named.loaded.spec.display_name is None and invoked.loaded.spec.display_name is None
    assert any(
        "resources.named.properties.displayName = ${config.jobName}: a Pulumi interpolation" in n
        for n in named.loaded.notes
    )
    assert any(
        "resources.invoked.properties.displayName: fn::invoke is a Pulumi function call" in n
        for n in invoked.loaded.notes
    )
    assert not any("Pulumi" in n for n in plain.loaded.notes[1:])  # the others' notes stay theirs
    assert not any("fn::" in n for n in named.loaded.notes)


def test_a_program_of_one_resource_reads_as_one_job_as_before(tmp_path: Path) -> None:
    path = _program(tmp_path, {"only": _resource("only", "n1-standard-4")})
    (job,) = load_jobs(path, env={})
    assert job.name is None and job.loaded is not None
    assert load_spec_file(path, env={}).spec.display_name == "only"
    code, _out, err = run("validate", str(path))
    assert code == 0 and "== " not in err


def test_more_resources_than_the_cap_are_refused_in_one_line(tmp_path: Path) -> None:
    many = {f"job{i}": _resource(f"job{i}", "n1-standard-4") for i in range(MAX_JOBS + 1)}
    path = _program(tmp_path, many)
    with pytest.raises(SpecFormatError) as info:
        load_jobs(path, env={})
    message = str(info.value)
    assert f"refused: more than {MAX_JOBS} gcp:vertex/aiCustomJob:AiCustomJob resources" in message
    assert "\n" not in message
    code, _out, err = run("validate", str(path))
    assert code == 2 and "refused: more than" in err and "Traceback" not in err
    many.pop(f"job{MAX_JOBS}")
    assert len(load_jobs(_program(tmp_path, many, "at-cap.yaml"), env={})) == MAX_JOBS


TERRAFORM_JOB = """
resource "google_vertex_ai_custom_job" "NAME" {
  display_name = "NAME-run"
  location     = "us-central1"
  job_spec {
    worker_pool_specs {
      machine_spec {
        machine_type = "MACHINE"
      }
      replica_count = 1
      container_spec {
        image_uri = "IMAGE"
      }
    }
  }
}
""".replace("IMAGE", IMAGE)


def _terraform(name: str, machine: str) -> str:
    return TERRAFORM_JOB.replace("NAME", name).replace("MACHINE", machine)


def test_each_terraform_custom_job_is_a_job_named_by_its_address(tmp_path: Path) -> None:
    path = tmp_path / "main.tf"
    path.write_text(
        'variable "machine" { type = string }\n'
        + _terraform("small", "n1-standard-4")
        + _terraform("large", "n1-standard-8").replace('"n1-standard-8"', "var.machine")
        + _terraform("gpu", "n1-standard-8").replace("replica_count = 1", "replica_count = 0")
    )
    assert holds_jobs(path)
    small, large, gpu = load_jobs(path, env={})
    assert small.name == "google_vertex_ai_custom_job.small"
    assert small.loaded is not None and small.loaded.spec.display_name == "small-run"
    assert large.loaded is not None and any(
        "google_vertex_ai_custom_job.large.job_spec[0].worker_pool_specs[0].machine_spec[0]"
        ".machine_type = var.machine: a Terraform input variable" in n
        for n in large.loaded.notes
    )
    assert gpu.name == "google_vertex_ai_custom_job.gpu"
    code, out, err = run("validate", str(path))
    assert code == 1 and err.count("== ") == 3
    assert "workerPoolSpecs[0].machineSpec.machineType" in out
    with pytest.raises(SpecFormatError, match="holds 3 jobs"):
        load_spec_file(path, env={})


def test_more_terraform_resources_than_the_cap_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "many.tf"
    path.write_text("".join(_terraform(f"j{i}", "n1-standard-4") for i in range(MAX_JOBS + 1)))
    with pytest.raises(SpecFormatError, match=f"refused: more than {MAX_JOBS} google_vertex"):
        load_jobs(path, env={})
