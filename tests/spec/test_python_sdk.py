"""Vertex AI SDK calls in Python files, read statically with ``ast`` and never run (issue 44,
item 4): ``CustomJob``, ``CustomJob.from_local_script``, ``Custom*TrainingJob(...).run``,
``HyperparameterTuningJob`` and ``aiplatform.init``, with the SDK's own defaults."""

from __future__ import annotations

import io
import json
import time
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from components import load_spec_file
from components._errors import SpecFormatError
from components.cli._cli import main
from components.formats.load import load_jobs
from components.formats.python_sdk import MAX_NODES, MAX_VALUES, read_python_jobs
from tests.spec.helpers import present

IMAGE = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def write(tmp_path: Path, text: str, name: str = "train.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


CUSTOM_JOB = f'''
from google.cloud import aiplatform

PROJECT = "my-project"
REGION = "europe-west4"
MACHINE = "a2-highgpu-1g"
BUCKET = f"gs://{{PROJECT}}-runs"

aiplatform.init(project=PROJECT, location=REGION, staging_bucket=BUCKET)

job = aiplatform.CustomJob(
    display_name="bert-" + "finetune",
    worker_pool_specs=[
        {{
            "machine_spec": {{
                "machine_type": MACHINE,
                "accelerator_type": aiplatform.gapic.AcceleratorType.NVIDIA_TESLA_A100,
                "accelerator_count": 1,
            }},
            "replica_count": 1,
            "container_spec": {{"image_uri": "{IMAGE}", "args": ["--epochs", "3"]}},
        }},
        {{
            "machineSpec": {{"machineType": MACHINE, "acceleratorType": "NVIDIA_TESLA_A100",
                             "acceleratorCount": 1}},
            "replicaCount": 2,
            "containerSpec": {{"imageUri": "{IMAGE}"}},
        }},
    ],
    base_output_dir=f"{{BUCKET}}/bert",
    labels={{"team": "nlp"}},
)
job.run(service_account="trainer@my-project.iam.gserviceaccount.com", timeout=3600)
'''


def test_custom_job_with_constants_in_snake_and_camel_case(tmp_path: Path) -> None:
    loaded = load_spec_file(write(tmp_path, CUSTOM_JOB))
    spec = loaded.spec
    assert loaded.format == "python-sdk"
    assert (spec.display_name, spec.project, spec.region) == (
        "bert-finetune",
        "my-project",
        "europe-west4",
    )
    assert [p.replica_count for p in spec.worker_pool_specs] == [1, 2]
    for pool in spec.worker_pool_specs:
        assert pool.machine_spec is not None
        assert (
            present(pool.machine_spec).machine_type,
            present(pool.machine_spec).accelerator_type,
        ) == (
            "a2-highgpu-1g",
            "NVIDIA_TESLA_A100",
        )
    assert present(spec.worker_pool_specs[0].container_spec).args == ["--epochs", "3"]
    assert spec.base_output_directory == "gs://my-project-runs/bert"
    assert spec.labels == {"team": "nlp"}
    assert spec.service_account == "trainer@my-project.iam.gserviceaccount.com"
    assert spec.scheduling is not None and spec.scheduling.timeout == timedelta(hours=1)
    assert any("region europe-west4 from aiplatform.init (line 9)" in n for n in loaded.notes)


def test_from_local_script_uses_the_sdk_defaults_and_chief_worker_split(tmp_path: Path) -> None:
    text = f"""
import google.cloud.aiplatform as aip
job = aip.CustomJob.from_local_script(
    "resnet", "trainer/task.py", "{IMAGE}",
    accelerator_type="NVIDIA_TESLA_T4", accelerator_count=2, replica_count=3,
    args=["--lr", 0.1], environment_variables={{"MODE": "train"}},
)
"""
    spec = load_spec_file(write(tmp_path, text)).spec
    chief, workers = spec.worker_pool_specs
    assert (chief.replica_count, workers.replica_count) == (1, 2)
    assert present(chief.machine_spec).machine_type == "n1-standard-4"  # the SDK's default
    assert (
        present(chief.machine_spec).accelerator_type,
        present(chief.machine_spec).accelerator_count,
    ) == (
        "NVIDIA_TESLA_T4",
        2,
    )
    assert (
        present(chief.disk_spec).boot_disk_type == "pd-ssd"
        and present(chief.disk_spec).boot_disk_size_gb == 100
    )
    package = present(chief.python_package_spec)
    assert package.executor_image_uri == IMAGE and package.package_uris == ["trainer"]
    assert package.python_module == "task" and package.args == ["--lr", "0.1"]
    assert [(e.name, e.value) for e in package.env] == [("MODE", "train")]


def test_an_accelerator_without_its_count_is_dropped_as_the_sdk_drops_it(tmp_path: Path) -> None:
    text = f"""
from google.cloud import aiplatform
aiplatform.CustomJob.from_local_script(display_name="t4", script_path="task.py",
    container_uri="{IMAGE}", accelerator_type="NVIDIA_TESLA_T4")
"""
    loaded = load_spec_file(write(tmp_path, text))
    assert present(loaded.spec.worker_pool_specs[0].machine_spec).accelerator_type is None
    assert any(
        "accelerator_type=NVIDIA_TESLA_T4 with accelerator_count=0" in n for n in loaded.notes
    )


def test_training_jobs_are_read_from_each_run(tmp_path: Path) -> None:
    text = """
from google.cloud.aiplatform import CustomContainerTrainingJob, CustomPythonPackageTrainingJob
GPU = "NVIDIA_L4"
job = CustomContainerTrainingJob(display_name="l4", container_uri="gcr.io/p/train:1",
                                 command=["python", "train.py"])
job.run(machine_type="g2-standard-8", accelerator_type=GPU, accelerator_count=1,
        args=["--fast"])
job.run(machine_type="g2-standard-24", accelerator_type=GPU, accelerator_count=2)
CustomPythonPackageTrainingJob("pkg", "gs://b/trainer-0.1.tar.gz", "trainer.task",
    "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest").run(replica_count=1)
never = CustomContainerTrainingJob("never", "gcr.io/p/train:1")
"""
    path = write(tmp_path, text)
    jobs = load_jobs(path)
    assert [j.name for j in jobs] == [
        "line 6: CustomContainerTrainingJob l4",
        "line 8: CustomContainerTrainingJob l4",
        "line 9: CustomPythonPackageTrainingJob pkg",
    ]
    first, second, package = (j.loaded.spec.worker_pool_specs[0] for j in jobs if j.loaded)
    assert present(first.container_spec).command == ["python", "train.py"]
    assert present(first.container_spec).args == ["--fast"]
    assert (
        present(second.machine_spec).machine_type,
        present(second.machine_spec).accelerator_count,
    ) == (
        "g2-standard-24",
        2,
    )
    assert present(package.python_package_spec).package_uris == ["gs://b/trainer-0.1.tar.gz"]
    assert present(package.python_package_spec).python_module == "trainer.task"
    with pytest.raises(SpecFormatError, match="holds 3 jobs"):
        load_spec_file(path)


def test_tuning_job_with_parameter_specs(tmp_path: Path) -> None:
    text = f"""
from google.cloud import aiplatform
from google.cloud.aiplatform import hyperparameter_tuning as hpt
trial = aiplatform.CustomJob(display_name="trial", worker_pool_specs=[{{
    "machine_spec": {{"machine_type": "n1-standard-8", "accelerator_type": "NVIDIA_TESLA_T4",
                     "accelerator_count": 1}},
    "replica_count": 1, "container_spec": {{"image_uri": "{IMAGE}"}}}}])
hp = aiplatform.HyperparameterTuningJob(
    display_name="sweep", custom_job=trial,
    metric_spec={{"accuracy": "maximize"}},
    parameter_spec={{
        "lr": hpt.DoubleParameterSpec(min=1e-4, max=1e-1, scale="log"),
        "layers": hpt.IntegerParameterSpec(min=2, max=8, scale="linear"),
        "opt": hpt.CategoricalParameterSpec(values=["adam", "sgd"]),
    }},
    max_trial_count=12, parallel_trial_count=3, search_algorithm="random",
)
hp.run()
"""
    path = write(tmp_path, text)
    with pytest.raises(SpecFormatError, match="hyperparameter tuning job"):
        load_spec_file(path)
    (job,) = load_jobs(path, tuning=True)  # the trials' CustomJob is no job of its own
    assert job.loaded is not None
    tuning = job.loaded.tuning
    assert tuning is not None
    assert (tuning.max_trial_count, tuning.parallel_trial_count) == (12, 3)
    document = tuning.to_document()
    assert document["studySpec"]["metrics"] == [{"metricId": "accuracy", "goal": "MAXIMIZE"}]
    assert document["studySpec"]["algorithm"] == "RANDOM_SEARCH"
    lr, layers, opt = document["studySpec"]["parameters"]
    assert lr["doubleValueSpec"] == {"minValue": 1e-4, "maxValue": 0.1}
    assert lr["scaleType"] == "UNIT_LOG_SCALE"
    assert layers["integerValueSpec"] == {"minValue": 2, "maxValue": 8}
    assert opt["categoricalValueSpec"] == {"values": ["adam", "sgd"]}
    trial_pool = tuning.trial_job_spec.worker_pool_specs[0]
    assert present(trial_pool.machine_spec).accelerator_type == "NVIDIA_TESLA_T4"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (
            "accelerator_count=count()",
            "line 5: accelerator_count is computed by the code (a call to count())",
        ),
        ("accelerator_count=N", "accelerator_count is computed by the code (N, assigned 2 times)"),
        (
            "accelerator_count=undefined",
            "accelerator_count is computed by the code (undefined, a name not assigned",
        ),
        (
            "machine_type=f'n1-{size}'",
            "machine_type is computed by the code (an f-string of size, a parameter of make",
        ),
    ],
)
def test_a_computed_argument_is_named_with_its_line(
    tmp_path: Path, code: str, expected: str
) -> None:
    text = f"""from google.cloud import aiplatform
N = 1
N = 2
def make(size):
    aiplatform.CustomJob.from_local_script("j", "task.py", "{IMAGE}", accelerator_type="NVIDIA_TESLA_T4", {code})
"""
    with pytest.raises(SpecFormatError) as caught:
        load_spec_file(write(tmp_path, text))
    assert expected in str(caught.value)
    assert "give it as a literal" in str(caught.value)


def test_a_computed_display_name_is_kept_with_a_note(tmp_path: Path) -> None:
    text = f"""import datetime
from google.cloud import aiplatform
STAMP = datetime.datetime.now().strftime("%Y%m%d")
aiplatform.CustomJob.from_local_script(f"job-{{STAMP}}", "task.py", "{IMAGE}")
"""
    loaded = load_spec_file(write(tmp_path, text))
    assert loaded.spec.display_name == "f'job-{STAMP}'"
    assert any("display_name is computed by the code (line 4" in n for n in loaded.notes)


def test_the_code_is_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = f"""
open({str(marker)!r}, "w").write("x")
raise SystemExit(3)
from google.cloud import aiplatform
aiplatform.CustomJob.from_local_script("j", "task.py", "{IMAGE}")
"""
    assert load_spec_file(write(tmp_path, text)).spec.display_name == "j"
    assert not marker.exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("def f(:\n", "train.py: line 1: not valid Python"),
        ("x = " + "(" * 5000 + ")" * 5000 + "\n", "train.py: "),
        ("import os\nprint(os.getcwd())\n", "no Vertex AI SDK job found"),
        ("x = [" + "0," * (MAX_NODES + 10) + "]\n", f"more than {MAX_NODES:,} Python syntax nodes"),
        ("X = " + "1+" * 5000 + "1\n", "refused: Python nested deeper than 200 levels (line 1)"),
    ],
)
def test_hostile_or_empty_python_is_one_clear_line(
    tmp_path: Path, text: str, expected: str
) -> None:
    code, _out, err = run("validate", str(write(tmp_path, text)))
    assert code == 2
    assert expected in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_value_nested_deeper_than_the_bound_is_refused(tmp_path: Path) -> None:
    deep = "[" * 40 + "]" * 40
    text = f"from google.cloud import aiplatform\naiplatform.CustomJob('j', worker_pool_specs={deep})\n"
    (job,) = load_jobs(write(tmp_path, text))
    assert job.error is not None and "nested deeper than 32 levels" in str(job.error)
    assert read_python_jobs(text, "x.py")[0].error is not None


def test_constants_that_expand_without_end_are_refused_quickly(tmp_path: Path) -> None:
    # Eight short lines, 10**7 values once each constant is read where it is used.
    lines = ["from google.cloud import aiplatform", 'A0 = "x"']
    lines += [f"A{i} = [{', '.join([f'A{i - 1}'] * 10)}]" for i in range(1, 8)]
    pool = '{"machine_spec": {"machine_type": "n1-standard-4"}, "container_spec": {"args": A7}}'
    lines.append(f"aiplatform.CustomJob('j', worker_pool_specs=[{pool}])")
    started = time.monotonic()
    (job,) = load_jobs(write(tmp_path, "\n".join(lines) + "\n"))
    assert time.monotonic() - started < 10
    assert job.error is not None
    assert f"values expand to more than {MAX_VALUES:,} items" in str(job.error)


def test_cli_judges_and_prices_each_job(tmp_path: Path) -> None:
    text = f"""
from google.cloud import aiplatform
aiplatform.init(location="us-central1")
aiplatform.CustomJob.from_local_script("ok", "task.py", "{IMAGE}", machine_type="n1-standard-8",
    accelerator_type="NVIDIA_TESLA_T4", accelerator_count=1)
aiplatform.CustomJob.from_local_script("bad", "task.py", "{IMAGE}", machine_type="n1-standard-8",
    accelerator_type="NVIDIA_TESLA_T4", accelerator_count=3)
"""
    path = write(tmp_path, text)
    code, out, err = run("validate", "--json", str(path))
    assert code == 1, err
    assert out.startswith("{"), err
    report = json.loads(out)
    assert [j["name"] for j in report["jobs"]] == [
        "line 4: CustomJob.from_local_script ok",
        "line 6: CustomJob.from_local_script bad",
    ]
    assert [j["valid"] for j in report["jobs"]] == [True, False]
    paths = [v["path"] for v in report["jobs"][1]["violations"] if v["severity"] == "error"]
    assert paths == ["workerPoolSpecs[0].machineSpec.acceleratorCount"]
    code, out, err = run("estimate", str(path))
    assert code == 0 and out.count("total $/h") == 2
    assert "== " in err and "CustomJob.from_local_script bad ==" in err


def test_convert_writes_each_job_as_one_yaml_document(tmp_path: Path) -> None:
    text = """
from google.cloud import aiplatform
for_a = aiplatform.CustomJob("a", [{"machine_spec": {"machine_type": "n1-standard-4"},
    "replica_count": 1, "container_spec": {"image_uri": "gcr.io/p/a:1"}}])
for_b = aiplatform.CustomJob("b", [{"machine_spec": {"machine_type": "n1-standard-8"},
    "replica_count": 1, "container_spec": {"image_uri": "gcr.io/p/b:1"}}])
"""
    code, out, err = run("convert", "--region", "us-central1", str(write(tmp_path, text)))
    assert code == 0, err
    documents = list(yaml.safe_load_all(out))
    assert [d["workerPoolSpecs"][0]["machineSpec"]["machineType"] for d in documents] == [
        "n1-standard-4",
        "n1-standard-8",
    ]
    assert "--display-name=a" in out and "--display-name=b" in out


SAMPLE = f"""
import os
from google.cloud import aiplatform as aip
PROJECT_ID = "[your-project-id]"
if PROJECT_ID == "[your-project-id]":
    PROJECT_ID = os.popen("gcloud config get project").read().strip()
REGION = "us-central1"
BUCKET_URI = f"gs://bucket-{{PROJECT_ID}}"
aip.init(project=PROJECT_ID, location=REGION, staging_bucket=BUCKET_URI)
TRAIN_GPU, TRAIN_NGPU = (aip.gapic.AcceleratorType.NVIDIA_TESLA_T4, 1)
EPOCHS = 20
CMDARGS = ["--epochs=" + str(EPOCHS)]
job = aip.CustomTrainingJob(display_name="cifar10", script_path="task.py",
    container_uri="{IMAGE}", model_serving_container_image_uri="{IMAGE}")
model = job.run(args=CMDARGS, machine_type="n1-standard-4", accelerator_type=TRAIN_GPU.name,
    accelerator_count=TRAIN_NGPU, base_output_dir=BUCKET_URI)
"""


def test_the_sdk_samples_forms_read_and_their_computed_project_is_left_out(
    tmp_path: Path,
) -> None:
    loaded = load_spec_file(write(tmp_path, SAMPLE))
    spec = loaded.spec
    pool = present(spec.worker_pool_specs[0].machine_spec)
    assert (pool.accelerator_type, pool.accelerator_count) == ("NVIDIA_TESLA_T4", 1)
    assert spec.project is None and spec.region == "us-central1"
    assert spec.base_output_directory is None
    assert present(spec.worker_pool_specs[0].python_package_spec).args == [
        "'--epochs=' + str(EPOCHS)"
    ]
    notes = "\n".join(loaded.notes)
    assert (
        "aiplatform.init(project=) is computed by the code (line 9: PROJECT_ID, assigned 2 times): left out"
        in notes
    )
    assert "base_output_dir is computed by the code" in notes


def test_a_constant_the_code_changes_is_no_longer_its_literal(tmp_path: Path) -> None:
    text = """from google.cloud import aiplatform
POOLS = [{"machine_spec": {"machine_type": "n1-standard-4"}, "replica_count": 1,
          "container_spec": {"image_uri": "gcr.io/p/t:1"}}]
POOLS[0]["replica_count"] = 4
aiplatform.CustomJob(display_name="d", worker_pool_specs=POOLS)
"""
    with pytest.raises(SpecFormatError) as caught:
        load_spec_file(write(tmp_path, text))
    assert (
        "line 5: worker_pool_specs is computed by the code (POOLS, changed by the code (line 4))"
        in str(caught.value)
    )


ENVIRONMENT_JOB = f'''
import os
from os import getenv
from google.cloud import aiplatform

MACHINE = os.environ.get("MACHINE", "n1-standard-4")
REGION = getenv("REGION", default="us-central1")

aiplatform.CustomJob(
    display_name=os.environ["RUN_NAME"],
    worker_pool_specs=[{{
        "machine_spec": {{"machine_type": MACHINE}},
        "replica_count": 1,
        "container_spec": {{"image_uri": "{IMAGE}"}},
    }}],
    location=REGION,
).run()
'''


def test_a_value_read_from_the_environment_is_its_value_or_its_default(tmp_path: Path) -> None:
    path = write(tmp_path, ENVIRONMENT_JOB)
    loaded = load_spec_file(path, env={"RUN_NAME": "nightly", "MACHINE": "n1-standard-16"})
    machine = loaded.spec.worker_pool_specs[0].machine_spec
    assert machine is not None and machine.machine_type == "n1-standard-16"
    assert loaded.spec.display_name == "nightly"
    assert loaded.spec.region == "us-central1"
    assert "line 6: MACHINE read from the environment" in loaded.notes
    assert any("REGION is not set in the environment: its default" in n for n in loaded.notes)
    loaded = load_spec_file(path, env={"RUN_NAME": "nightly"})
    machine = loaded.spec.worker_pool_specs[0].machine_spec
    assert machine is not None and machine.machine_type == "n1-standard-4"


def test_an_environment_variable_without_a_default_is_named_when_not_set(tmp_path: Path) -> None:
    text = ENVIRONMENT_JOB.replace('os.environ["RUN_NAME"]', '"d"').replace(
        'os.environ.get("MACHINE", "n1-standard-4")', 'os.environ.get("MACHINE")'
    )
    with pytest.raises(
        SpecFormatError, match=r"the environment variable MACHINE, which is not set"
    ):
        load_spec_file(write(tmp_path, text), env={})
