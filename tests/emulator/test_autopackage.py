"""gcloud's autopackaging (``local-package-path``) on the local stack: the script read by the
project's reader, the job run by the emulator as gcloud's image would run it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from components.formats import load_spec_file
from components.vertex.convert import to_custom_job
from emulator import autopackage
from emulator.testing import EmulatorProcess, running_emulator, wait_for_state
from tests.emulator.conftest import EXECUTE_ARGS, PARENT, TERMINAL, S, job_id, unique

TASK = """\
import os, pathlib, sys
print("cwd-files", sorted(os.listdir(".")))
print("config", pathlib.Path("config/params.txt").read_text().strip())
print("helper", __import__("trainer.util", fromlist=["x"]).VALUE)
print("args", sys.argv[1:])
print("home", os.environ.get("VERTEX_EMULATOR_AUTOPACKAGE", "hidden"))
"""


@pytest.fixture(scope="module")
def execute() -> object:
    with running_emulator(*EXECUTE_ARGS) as emu:
        yield emu


def _project(root: Path) -> Path:
    """A trainer as gcloud autopackages it: no setup.py, no __init__.py, data beside it."""
    (root / "trainer").mkdir(parents=True)
    (root / "trainer" / "task.py").write_text(TASK)
    (root / "trainer" / "util.py").write_text("VALUE = 42\n")
    (root / "config").mkdir()
    (root / "config" / "params.txt").write_text("lr=0.1\n")
    (root / "notes").mkdir()
    (root / "notes" / "left-out.txt").write_text("not copied by gcloud\n")
    (root / "requirements.txt").write_text("# what the trainer needs\nnumpy\n")
    return root


def test_an_autopackaged_job_runs_as_gclouds_image_would(
    execute: EmulatorProcess, tmp_path: Path
) -> None:
    bucket = unique()
    source = _project(execute.state_dir / "gcs" / bucket / "src")
    script = tmp_path / "submit.sh"
    script.write_text(
        "gcloud ai custom-jobs create --region=us-central1 --display-name=ap \\\n"
        "  --worker-pool-spec=machine-type=n1-standard-4,"
        "executor-image-uri=us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest,"
        f"local-package-path={source},python-module=trainer.task,extra-dirs=config \\\n"
        "  --args=--epochs=1\n"
    )
    loaded = load_spec_file(script, env={})
    package = loaded.spec.worker_pool_specs[0].python_package_spec
    assert package is not None and package.python_module == "trainer.task"
    job = to_custom_job(loaded.spec)
    # The TrainingJob resource hands the emulator the package directory; here as gs:// URI.
    job.job_spec.worker_pool_specs[0].python_package_spec.package_uris[:] = [f"gs://{bucket}/src"]
    client = execute.client()
    created = client.create_custom_job(parent=PARENT, custom_job=job)
    done = wait_for_state(client, created.name, TERMINAL, timeout=60)
    log = (execute.state_dir / "jobs" / job_id(created) / "logs" / "workerpool0-0.log").read_text()
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message + log
    # The working directory holds what gcloud's image holds: the module's folder, the extra
    # dir and requirements.txt; not the folders gcloud leaves out.
    assert "cwd-files ['config', 'requirements.txt', 'trainer']" in log
    assert "config lr=0.1" in log  # a relative path of the trainer's
    assert "helper 42" in log  # a namespace package imported from the working directory
    assert "args ['--epochs=1']" in log
    assert "home hidden" in log  # the build never reaches the trainer


class _Env:
    def __init__(self, name: str, value: str) -> None:
        self.name, self.value = name, value


def _build(**fields: object) -> str:
    import json

    document: dict[str, object] = {"copy": ["trainer"], "entry": "module", "target": "t.task"}
    document.update(fields)
    return json.dumps(document)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (_build(copy=["../outside"]), "not a path under the package directory"),
        (_build(copy=["/etc"]), "not a path under the package directory"),
        (_build(entry="script", target="../../run.sh"), "not a path under the package"),
        (_build(target="not a module"), "not a Python module name"),
        (_build(requirements="pandas"), "must be a list of texts"),
        ("x" * (autopackage.MAX_BUILD_CHARS + 1), "longer than"),
        ("[1, 2]", "must be a JSON object"),
    ],
)
def test_a_build_leaving_the_package_or_out_of_bounds_is_refused(value: str, message: str) -> None:
    with pytest.raises(autopackage.BuildError, match=message):
        autopackage.build_of([_Env(autopackage.ENV, value)])


def test_requirements_become_one_project_and_the_workdir_is_gclouds(tmp_path: Path) -> None:
    source = _project(tmp_path / "src")
    (source / "requirements.txt").write_text(
        "# comment\n\n-r other.txt\n--index-url http://x\nnumpy>=1  # inline\n"
    )
    found = autopackage.build_of(
        [
            _Env(
                autopackage.ENV,
                _build(copy=["trainer", "config"], requirementsTxt=True, requirements=["pyyaml"]),
            )
        ]
    )
    assert found is not None and autopackage.build_of([_Env("OTHER", "x")]) is None
    project = autopackage.requirements_project(found, source, tmp_path / "req", [tmp_path])
    assert project is not None
    text = (project / "pyproject.toml").read_text()
    assert 'dependencies = ["numpy>=1", "pyyaml"]' in text
    work = tmp_path / "work"
    autopackage.populate(found, source, work)
    assert sorted(p.name for p in work.iterdir()) == ["config", "requirements.txt", "trainer"]
    assert autopackage.command(found, "py", ["--a"]) == ["py", "-m", "t.task", "--a"]
    missing = autopackage.build_of([_Env(autopackage.ENV, _build(copy=["nowhere"]))])
    assert missing is not None
    with pytest.raises(autopackage.BuildError, match="nowhere is not in the package"):
        autopackage.populate(missing, source, tmp_path / "work2")


def _requirements_job(execute: EmulatorProcess, place: str) -> tuple[str, object]:
    """An autopackaged job (``requirementsTxt: true``) of the package ``gs://<place>/src``."""
    import json

    from google.cloud.aiplatform_v1 import CustomJob

    build = json.dumps(
        {"copy": ["trainer"], "entry": "module", "target": "trainer.task", "requirementsTxt": True}
    )
    pool = {
        "machine_spec": {"machine_type": "n1-standard-4"},
        "replica_count": 1,
        "python_package_spec": {
            "executor_image_uri": "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest",
            "package_uris": [f"gs://{place}/src"],
            "python_module": "trainer.task",
            "env": [{"name": autopackage.ENV, "value": build}],
        },
    }
    job = CustomJob(display_name="ap", job_spec={"worker_pool_specs": [pool]})
    client = execute.client()
    created = client.create_custom_job(parent=PARENT, custom_job=job)
    return created.name, wait_for_state(client, created.name, TERMINAL, timeout=60)


SECRET_LINE = "not-for-the-emulator-to-echo==1.0"


@pytest.mark.parametrize("kind", ["symlink out of the roots", "FIFO"])
def test_a_requirements_txt_out_of_the_roots_or_not_a_file_fails_the_job_without_its_text(
    execute: EmulatorProcess, tmp_path: Path, kind: str
) -> None:
    bucket = unique()
    source = _project(execute.state_dir / "gcs" / bucket / "src")
    requirements = source / "requirements.txt"
    requirements.unlink()
    if kind == "FIFO":
        os.mkfifo(requirements)  # a read would wait forever for a writer
    else:
        outside = tmp_path / "private.txt"
        outside.write_text(SECRET_LINE + "\n")
        requirements.symlink_to(outside)
    name, done = _requirements_job(execute, bucket)
    assert done.state == S.JOB_STATE_FAILED  # type: ignore[attr-defined]
    message = done.error.message  # type: ignore[attr-defined]
    assert "requirements.txt" in message
    assert ("a FIFO" if kind == "FIFO" else "leads outside") in message
    logs = execute.state_dir / "jobs" / name.rsplit("/", 1)[1] / "logs"
    shown = message + "".join(p.read_text(errors="replace") for p in logs.glob("*.log"))
    assert SECRET_LINE not in shown
