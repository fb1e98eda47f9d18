"""Jupyter notebooks read directly (issue 44, item 4): ``!gcloud`` lines with IPython's
``{expr}``/``$name`` from the Python code, ``%%bash`` cells, ``%%writefile`` configs used by a
later cell, ``%env``, and Vertex AI SDK calls in the code cells; each job named by its cell.
Nothing in a notebook is ever run, and a hostile one is refused in one line."""

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
from components.formats.load import load_jobs
from components.formats.notebook import MAX_CELLS, MAX_NOTEBOOK_BYTES
from tests.spec.helpers import present

IMAGE = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
CONFIG = """workerPoolSpecs:
  - machineSpec:
      machineType: n1-standard-8
      acceleratorType: NVIDIA_TESLA_T4
      acceleratorCount: 1
    replicaCount: 1
    containerSpec:
      imageUri: gcr.io/my-project/train:1
"""


def cell(source: str, kind: str = "code") -> dict[str, Any]:
    made: dict[str, Any] = {"cell_type": kind, "metadata": {}, "source": source.splitlines(True)}
    if kind == "code":
        made |= {"outputs": [], "execution_count": None}
    return made


def notebook(tmp_path: Path, *cells: dict[str, Any], name: str = "train.ipynb") -> Path:
    path = tmp_path / name
    document = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": list(cells)}
    path.write_text(json.dumps(document, indent=1))
    return path


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


SETUP = cell('PROJECT_ID = "my-project"\nREGION = "europe-west4"\nJOB = "nb-t4"\n')


def test_a_config_written_by_one_cell_is_read_by_the_next(tmp_path: Path) -> None:
    path = notebook(
        tmp_path,
        cell("# Training on Vertex AI", "markdown"),
        SETUP,
        cell(f"%%writefile job_config.yaml\n{CONFIG}"),
        cell(
            "!gcloud config set project {PROJECT_ID}\n"
            "!gcloud ai custom-jobs create --region=$REGION --display-name={JOB} \\\n"
            "    --config=job_config.yaml\n"
        ),
    )
    loaded = load_spec_file(path)
    assert loaded.format == "notebook"
    spec = loaded.spec
    assert (spec.display_name, spec.region, spec.project) == ("nb-t4", "europe-west4", "my-project")
    pool = present(spec.worker_pool_specs[0].machine_spec)
    assert (pool.machine_type, pool.accelerator_type) == ("n1-standard-8", "NVIDIA_TESLA_T4")
    assert any("cell 4, line 2" in n for n in loaded.notes)
    assert any("written by the heredoc at cell 3, line 1" in n for n in loaded.notes)
    assert not (tmp_path / "job_config.yaml").exists()  # read from the cell, never written


def test_bash_cells_python_sdk_and_bang_lines_are_each_a_named_job(tmp_path: Path) -> None:
    path = notebook(
        tmp_path,
        SETUP,
        cell(
            "%%bash\nREGION=us-central1\ngcloud ai custom-jobs create --region=$REGION "
            "--display-name=from-bash --worker-pool-spec=machine-type=n1-standard-4,"
            "replica-count=1,accelerator-type=NVIDIA_TESLA_V100,accelerator-count=3,"
            "container-image-uri=gcr.io/p/t:1\n"
        ),
        cell(
            "from google.cloud import aiplatform\n"
            "aiplatform.init(project=PROJECT_ID, location=REGION)\n"
            f'job = aiplatform.CustomJob.from_local_script("from-sdk", "task.py", "{IMAGE}",\n'
            '    machine_type="g2-standard-8", accelerator_type="NVIDIA_L4", accelerator_count=1)\n'
            "job.run()\n"
        ),
    )
    jobs = load_jobs(path)
    assert [j.name for j in jobs] == [
        "cell 2, line 3: a %%bash cell",
        "cell 3, line 3: CustomJob.from_local_script from-sdk",
    ]
    bash, sdk = (j.loaded for j in jobs)
    assert bash is not None and sdk is not None
    assert bash.spec.region == "us-central1"  # the cell's own variable, not the Python one
    assert sdk.spec.region == "europe-west4"
    assert present(sdk.spec.worker_pool_specs[0].machine_spec).accelerator_type == "NVIDIA_L4"
    with pytest.raises(SpecFormatError, match="holds 2 jobs"):
        load_spec_file(path)
    code, out, err = run("validate", str(path))
    assert code == 1  # 3 x V100 on n1-standard-4
    assert "acceleratorCount: 3 x NVIDIA_TESLA_V100" in out
    assert "== " in err and "cell 3, line 3: CustomJob.from_local_script from-sdk ==" in err
    assert f"{path}: valid (notebook)" in err


def test_a_computed_python_value_in_a_bang_line_is_named(tmp_path: Path) -> None:
    path = notebook(
        tmp_path,
        cell(
            "import subprocess\nREGION = subprocess.check_output(['gcloud', 'config', 'get', 'ai/region'])\n"
        ),
        cell(
            "!gcloud ai custom-jobs create --region={REGION} --display-name=x "
            "--worker-pool-spec=machine-type=n1-standard-4,replica-count=1,"
            "container-image-uri=gcr.io/p/t:1\n"
        ),
    )
    (job,) = load_jobs(path)
    assert job.error is not None
    message = str(job.error)
    assert message.startswith("cell 2, line 1: ")
    assert "{REGION} (a Python value the notebook computes" in message
    assert "a call to subprocess.check_output()" in message


def test_env_magic_and_invalid_python_cells(tmp_path: Path) -> None:
    path = notebook(
        tmp_path,
        cell("%env TRAIN_REGION=us-east1\ndef (:\n"),
        cell(
            "!gcloud ai custom-jobs create --region=$TRAIN_REGION --display-name=x "
            "--worker-pool-spec=machine-type=n1-standard-4,replica-count=1,"
            "container-image-uri=gcr.io/p/t:1\n"
        ),
    )
    loaded = load_spec_file(path, env={})
    assert loaded.spec.region == "us-east1"
    assert any(n.startswith("cell 1 is not valid Python (line 2") for n in loaded.notes)


def test_convert_to_plugin_yaml_names_the_plugin_resource(tmp_path: Path) -> None:
    path = notebook(
        tmp_path,
        SETUP,
        cell(f"%%writefile job_config.yaml\n{CONFIG}"),
        cell(
            "!gcloud ai custom-jobs create --region=$REGION --display-name={JOB} --config=job_config.yaml"
        ),
    )
    code, out, err = run("convert", "--to", "plugin-yaml", str(path))
    assert code == 0, err
    program = yaml.safe_load(out)
    assert program["runtime"] == "yaml"
    resource = program["resources"]["nb-t4"]
    assert resource["type"] == "gpu-training:vertex:TrainingJob"
    properties = resource["properties"]
    assert (properties["displayName"], properties["region"]) == ("nb-t4", "europe-west4")
    pool = properties["jobSpec"]["workerPoolSpecs"][0]
    assert pool["machineSpec"]["acceleratorType"] == "NVIDIA_TESLA_T4"


def _cells_text(count: int) -> str:
    return json.dumps({"nbformat": 4, "cells": [cell("x = 1\n")] * count})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{not json", "not a notebook: not valid JSON"),
        ('{"nbformat": 4, "cells": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ('{"nbformat": 3, "worksheets": []}', "an nbformat 3 notebook (worksheets) is not read"),
        ('{"nbformat": 4, "cells": {}}', "expected a JSON object with cells"),
        (
            '{"nbformat": 4, "cells": [{"cell_type": "code", "source": 7}]}',
            "cell 1: source must be",
        ),
        (_cells_text(MAX_CELLS + 1), f"more than {MAX_CELLS:,} cells"),
        (
            json.dumps({"nbformat": 4, "cells": [cell("x = 1\n" * 200_000)]}),
            "the cells' code is more than",
        ),
        (
            json.dumps({"nbformat": 4, "cells": [cell("print(1)\n"), cell("# notes", "markdown")]}),
            "the notebook submits no Vertex AI job",
        ),
    ],
)
def test_hostile_or_empty_notebooks_are_one_clear_line(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "bad.ipynb"
    path.write_text(text)
    code, _out, err = run("validate", str(path))
    assert code == 2
    assert expected in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_notebook_past_the_size_bound_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.ipynb"
    with path.open("wb") as handle:
        handle.truncate(MAX_NOTEBOOK_BYTES + 1)
    code, _, err = run("validate", str(path))
    assert code == 2
    assert "huge.ipynb" in err and "Traceback" not in err


def test_deeply_nested_python_in_a_cell_is_left_out_with_a_note(tmp_path: Path) -> None:
    path = notebook(
        tmp_path,
        cell("x = " + "(" * 3000 + ")" * 3000 + "\n"),
        cell("y = " + "1+" * 5000 + "1\n"),
        cell(
            "!gcloud ai custom-jobs create --region=us-central1 --display-name=x "
            "--worker-pool-spec=machine-type=n1-standard-4,replica-count=1,"
            "container-image-uri=gcr.io/p/t:1\n"
        ),
    )
    loaded = load_spec_file(path)
    assert loaded.spec.display_name == "x"
    assert any(n.startswith("cell 1") for n in loaded.notes)
    assert any(n.startswith("cell 2: refused: Python nested deeper") for n in loaded.notes)


def _submission(index: int, extra: str = "") -> dict[str, Any]:
    return cell(
        f"!gcloud ai custom-jobs create --region=us-central1 --display-name=j{index} "
        "--worker-pool-spec=machine-type=n1-standard-4,replica-count=1,"
        f"container-image-uri=gcr.io/p/t:1{extra}\n"
    )


def test_submissions_and_the_text_they_read_are_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from components.formats import notebook as module

    monkeypatch.setattr(module, "MAX_SUBMISSIONS", 2)
    path = notebook(tmp_path, *(_submission(i) for i in range(3)))
    with pytest.raises(SpecFormatError, match="refused: 3 job submissions, more than 2"):
        load_jobs(path)
    monkeypatch.setattr(module, "MAX_READ_CHARS", 3 * len(CONFIG))
    written = cell(f"%%writefile job.yaml\n{CONFIG}")
    path = notebook(tmp_path, written, *(_submission(i, " --config=job.yaml") for i in range(2)))
    with pytest.raises(SpecFormatError, match="its submissions read more than"):
        load_jobs(path)
    # A written file goes only with the submissions that name it.
    path = notebook(tmp_path, written, *(_submission(i) for i in range(2)))
    assert [j.loaded.spec.display_name for j in load_jobs(path) if j.loaded] == ["j0", "j1"]


def test_convert_to_plugin_yaml_of_several_jobs_is_one_program(tmp_path: Path) -> None:
    path = notebook(
        tmp_path, _submission(1), _submission(2), _submission(3, ",accelerator-count=2")
    )
    code, out, err = run("convert", "--to", "plugin-yaml", str(path))
    assert code == 2, err  # the third job names a count without a type: unreadable
    program = yaml.safe_load(out)
    assert list(program["resources"]) == ["j1", "j2"]
    assert {r["type"] for r in program["resources"].values()} == {"gpu-training:vertex:TrainingJob"}
    assert program["outputs"]["j2-state"] == "${j2.state}"
    assert "cell 3, line 1" in err
