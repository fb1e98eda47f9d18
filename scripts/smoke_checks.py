"""What the installed package gives a user's own Pulumi project (``scripts/smoke-runtime``).

Run by a virtualenv that holds the package's wheel, from a directory outside the checkout, so
every import is the installed package's (``gpu_training``, ``gpu_training_emulator``). Mode
``pinned``: the runtime set alone, at this repo's pins; ``lowest`` and ``newest``: with the
extras ``[gcp,emulator]``, at either end of the ranges. Exits non-zero with the failed check's
message.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path


def main(repo: Path, mode: str) -> None:
    import gpu_training

    installed = Path(gpu_training.__file__).resolve()
    assert repo not in installed.parents, f"gpu_training came from the checkout: {installed}"
    # The folders' own names are free for a user's project: the package never imports them.
    for own in ("components", "emulator"):
        assert importlib.util.find_spec(own) is None, f"{own} is importable: it is a user's name"
    # No test tool or policy pack in a user's runtime; the extras only where asked for.
    absent = ["pytest", "mypy", "hypothesis", "pulumi_policy"]
    if mode == "pinned":
        absent += ["numpy", "optuna", "hypertune", "pulumi_gcp"]
    for name in absent:
        assert importlib.util.find_spec(name) is None, f"{name} is installed with the runtime"
    for name in ("TrainingJob", "HyperparameterTuningJob", "TrainingInfra"):
        assert name in gpu_training.__all__, f"gpu_training does not export {name}"

    # The CLI, with the catalog data inside the wheel: the prod job (a legacy gcloud command
    # and its config.yaml, A100s in europe-west4).
    job = repo / "stacks" / "jobs" / "prod-a100.gcloud.sh"
    for cli in (
        [sys.executable, "-m", "gpu_training"],
        [str(Path(sys.executable).parent / "gpu-training")],
    ):
        command = [*cli, "validate", str(job), "--region", "europe-west4"]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert done.returncode == 0, (
            f"{command}: exit {done.returncode}: {done.stdout}{done.stderr}"
        )
    assert (installed.parent / "catalog" / "machine_types.csv").is_file()

    # The provider as the engine loads it (pickled by reference), and its check.
    import base64

    import dill
    from gpu_training._provider import TrainingJobProvider
    from gpu_training.training_job import prepare_spec
    from pulumi.dynamic import ConfigureRequest
    from pulumi.dynamic.config import Config
    from pulumi.dynamic.dynamic import serialize_provider

    blob = serialize_provider(TrainingJobProvider())
    provider = dill.loads(base64.b64decode(blob))
    assert type(provider) is TrainingJobProvider
    endpoint = "http://127.0.0.1:8642"
    provider.configure(ConfigureRequest(Config({"training:endpoint": endpoint}, "smoke")))
    prepared = prepare_spec(repo / "stacks" / "jobs" / "local-trainer.yaml")
    inputs = {
        "spec": prepared.spec,
        "env_values": prepared.env_values,
        "project": "local-training",
        "region": "us-central1",
    }
    failures = provider.check({}, inputs).failures
    assert failures == [], [(f.property, f.reason) for f in failures]

    # The client library's job service, as refresh and destroy import it.
    from gpu_training.lifecycle._settings import Endpoint
    from gpu_training.vertex.api import job_service_client

    client = job_service_client(Endpoint(endpoint), "us-central1")
    assert type(client).__name__ == "JobServiceClient"
    if mode != "pinned":
        _extras(client)
    print(f"smoke-runtime ({mode}): ok on Python {sys.version.split()[0]} ({installed.parent})")


def _extras(client: object) -> None:
    """``[gcp]``: TrainingInfra imports pulumi-gcp; ``[emulator]``: the local Vertex as a command,
    serving the real client (its catalog found in the installed package)."""
    import gpu_training.infra

    assert gpu_training.infra.TrainingInfra.__name__ == "TrainingInfra"
    emulator = Path(sys.executable).parent / "gpu-training-emulator"
    done = subprocess.run([str(emulator), "--help"], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "serve" in done.stdout, done.stdout + done.stderr
    from gpu_training_emulator import hardware
    from gpu_training_emulator.client import job_service_client as emulator_client
    from gpu_training_emulator.testing import running_emulator

    assert "gpu_training" in str(hardware.catalog_dir()), hardware.catalog_dir()
    with running_emulator("--mode", "simulate", cwd=Path.cwd()) as emu:
        jobs = list(
            emulator_client(emu.endpoint).list_custom_jobs(
                parent="projects/local-training/locations/us-central1"
            )
        )
        assert jobs == [], jobs


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve(), sys.argv[2] if len(sys.argv) > 2 else "pinned")
