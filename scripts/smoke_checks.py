"""What the runtime set alone gives a user's own Pulumi project (``scripts/smoke-runtime``).

Run by the virtualenv that holds only ``requirements.txt`` and the package's wheel, from a
directory outside the checkout, so every import is the installed package's. Exits non-zero
with the failed check's message.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path


def main(repo: Path) -> None:
    import components

    installed = Path(components.__file__).resolve()
    assert repo not in installed.parents, f"components came from the checkout: {installed}"
    # No test tool, emulator extra or policy pack in a user's runtime.
    for absent in ("pytest", "mypy", "hypothesis", "numpy", "optuna", "hypertune", "pulumi_policy"):
        assert importlib.util.find_spec(absent) is None, f"{absent} is installed with the runtime"
    assert importlib.util.find_spec("emulator") is None, "the emulator is not part of the package"

    # The CLI, with the catalog data inside the wheel: the prod job (a legacy gcloud command
    # and its config.yaml, A100s in europe-west4).
    job = repo / "stacks" / "jobs" / "prod-a100.gcloud.sh"
    cli = [sys.executable, "-m", "components", "validate", str(job), "--region", "europe-west4"]
    done = subprocess.run(cli, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"validate exited {done.returncode}: {done.stdout}{done.stderr}"
    assert (installed.parent / "catalog" / "machine_types.csv").is_file()

    # The provider as the engine loads it (pickled by reference), and its check.
    import base64

    import dill
    from pulumi.dynamic import ConfigureRequest
    from pulumi.dynamic.config import Config
    from pulumi.dynamic.dynamic import serialize_provider

    from components._provider import TrainingJobProvider
    from components.training_job import prepare_spec

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
    from components.lifecycle._settings import Endpoint
    from components.vertex.api import job_service_client

    client = job_service_client(Endpoint(endpoint), "us-central1")
    assert type(client).__name__ == "JobServiceClient"
    print(f"smoke-runtime: ok on Python {sys.version.split()[0]} ({installed.parent})")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
