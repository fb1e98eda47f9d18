"""A team's own Pulumi project, outside this checkout and without ``training:jobs``: its
``__main__.py`` declares a ``TrainingJob`` (then a ``HyperparameterTuningJob``) from its own
trainer folder, and ``pulumi up`` against the emulator shows the jobs' cost and quota lines and
runs them to success.

The project is a user's: the package is the wheel ``make dist`` builds (``gpu_training``),
installed into a fresh virtualenv of its own next to pulumi-gcp 9.x (a version this repo does
not pin), and the project has a ``components/`` folder of its own, which the package's name
must leave alone. The emulator's working directory is the checkout, not the project: a
relative package path that reached it unresolved would name a folder that is not there.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emulator.testing import running_emulator
from tests.e2e._engine import REPO, Workspace, local_config

# The module's virtualenv (``wheel_venv``: a wheel build and a full pip install at the pins) is
# made during the first test's setup; on a loaded two-core machine running pytest's workers
# beside it, that alone took over the project's 600 s. Each pulumi command keeps its own bound.
pytestmark = pytest.mark.timeout(1800)

TRAINING_MAIN = """\
import pulumi

from components.naming import job_name
from gpu_training import TrainingJob

job = TrainingJob(
    job_name("train"),
    spec={
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "n1-standard-4"},
                "replicaCount": 1,
                "pythonPackageSpec": {
                    "executorImageUri": (
                        "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest"
                    ),
                    # Relative to this program's directory.
                    "packageUris": ["trainer"],
                    "pythonModule": "trainer.task",
                    "args": ["--epochs", "1", "--steps-per-epoch", "2", "--samples", "32"],
                },
            }
        ],
        "baseOutputDirectory": {"outputUriPrefix": "gs://local-training/jobs/train"},
        "scheduling": {"timeout": "600s"},
    },
    wait_for="succeeded",
    wait_timeout="5m",
)
pulumi.export("state", job.state)
pulumi.export("job_name", job.job_name)
"""

TUNING_MAIN = """\
import pulumi

from components.naming import job_name
from gpu_training import HyperparameterTuningJob

tune = HyperparameterTuningJob(
    job_name("tune"),
    spec={
        "maxTrialCount": 2,
        "parallelTrialCount": 1,
        "studySpec": {
            "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
            "parameters": [
                {
                    "parameterId": "learning_rate",
                    "discreteValueSpec": {"values": [0.01, 0.1]},
                }
            ],
            "algorithm": "GRID_SEARCH",
        },
        "trialJobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": 1,
                    # No packageUris: trainer_source fills it in.
                    "pythonPackageSpec": {
                        "executorImageUri": (
                            "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest"
                        ),
                        "pythonModule": "trainer.task",
                        "args": ["--epochs", "1", "--steps-per-epoch", "2", "--samples", "32"],
                    },
                }
            ],
            "scheduling": {"timeout": "600s"},
        },
    },
    trainer_source="trainer",
    wait_for="succeeded",
    wait_timeout="5m",
)
pulumi.export("state", tune.state)
pulumi.export("job_name", tune.job_name)
pulumi.export("trial_counts", tune.trial_counts)
"""


USER_GCP = "pulumi-gcp==9.37.1"
"""The user's own pulumi-gcp: 9.x, where this repo pins 10.x."""

OWN_COMPONENTS = {
    "components/__init__.py": '"""The team\'s own components (a common layout)."""\n',
    "components/naming.py": "def job_name(base: str) -> str:\n    return base\n",
}
"""A ``components/`` package of the project's own: ``import components`` must find it."""


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the package's wheel, the runtime set at this repo's pins and the
    user's own pulumi-gcp 9.x (not the ``[gcp]`` extra's pin)."""
    work = tmp_path_factory.mktemp("wheel")
    python = [sys.executable, "-m", "pip"]
    quiet = ["--quiet", "--disable-pip-version-check"]
    subprocess.run([*python, "wheel", *quiet, "--no-deps", "-w", str(work), str(REPO)], check=True)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pins = [
        line
        for line in (REPO / "constraints.txt").read_text().splitlines()
        if not line.lower().startswith(("pulumi_gcp", "pulumi-gcp"))
    ]
    (work / "pins.txt").write_text("\n".join(pins) + "\n")
    wheel = next(work.glob("gpu_training-*.whl"))
    install = [str(venv / "bin" / "python"), "-m", "pip", "install", *quiet]
    subprocess.run([*install, str(wheel), USER_GCP, "-c", str(work / "pins.txt")], check=True)
    return venv


@pytest.fixture
def emulator_of(tmp_path: Path) -> Iterator[Any]:
    """The emulator, started in the checkout, allowed to read the project's trainer."""
    project = tmp_path / "project"
    project.mkdir()
    with running_emulator(
        "--gpus", "ignore", "--allow-root", str(project), state_dir=tmp_path / "emulator", cwd=REPO
    ) as emu:
        yield emu


def _up(tmp_path: Path, bin_dir: Path, main: str, endpoint: str, name: str, venv: Path) -> Any:
    """``pulumi up`` of a project of one's own with ``main``: its cost and quota lines are
    shown and its job ``name`` succeeds; returns the stack outputs and the project dir."""
    (tmp_path / "project").rmdir()  # made for the emulator to allow it: own_project fills it
    ws = Workspace.own_project(tmp_path, bin_dir, main, venv=venv, files=OWN_COMPONENTS)
    try:
        config = local_config(endpoint, [])
        config.pop("training:jobs")
        ws.init_stack(config)
        up = ws.pulumi("up", "--yes", "--skip-preview").output
        assert "estimated cost per job:" in up and f"{name}: $" in up, up
        assert f"{name}: custom_model_training_cpus: need 4, limit" in up, up
        outputs = ws.pulumi("stack", "output", "--json").json()
        assert outputs["state"] == "JOB_STATE_SUCCEEDED", up
        return outputs, ws.project
    finally:
        assert ws.kill_strays() == []


def test_the_wheel_installs_next_to_a_user_s_own_pulumi_gcp_and_components(
    wheel_venv: Path,
) -> None:
    python = str(wheel_venv / "bin" / "python")
    script = (
        "import importlib.metadata as m, gpu_training, pulumi_gcp;"
        "print(m.version('pulumi-gcp'), gpu_training.__file__)"
    )
    done = subprocess.run([python, "-c", script], capture_output=True, text=True, check=True)
    version, installed = done.stdout.split()
    assert version.startswith("9."), version
    assert Path(installed).is_relative_to(wheel_venv), installed


def test_a_training_job_of_one_s_own_project_says_its_cost_and_quota_and_succeeds(
    tmp_path: Path, pulumi_bin_dir: Path, emulator_of: Any, wheel_venv: Path
) -> None:
    outputs, project = _up(
        tmp_path, pulumi_bin_dir, TRAINING_MAIN, emulator_of.endpoint, "train", wheel_venv
    )
    job = emulator_of.client().get_custom_job(name=outputs["job_name"])
    package = job.job_spec.worker_pool_specs[0].python_package_spec
    assert list(package.package_uris) == [str(project / "trainer")]


def test_a_tuning_job_of_one_s_own_project_says_its_cost_and_quota_and_succeeds(
    tmp_path: Path, pulumi_bin_dir: Path, emulator_of: Any, wheel_venv: Path
) -> None:
    outputs, project = _up(
        tmp_path, pulumi_bin_dir, TUNING_MAIN, emulator_of.endpoint, "tune", wheel_venv
    )
    assert outputs["trial_counts"]["SUCCEEDED"] == 2
    job = emulator_of.client().get_hyperparameter_tuning_job(name=outputs["job_name"])
    package = job.trial_job_spec.worker_pool_specs[0].python_package_spec
    assert list(package.package_uris) == [str(project / "trainer")]
