"""Provider figures: ``__provider`` size, state bytes per job, check+diff time per job.

Run: ``.venv/bin/python bench/provider.py [--jobs N]``. It serializes the provider the way
``pulumi.dynamic.Resource`` does, builds each stack job's checked inputs, creates the job on
a simulate-mode emulator (no process runs) to get the outputs the state would hold, and
times ``check`` + ``diff`` in the same process (the preview path; it must not import the
Vertex client, which is checked as well).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pulumi.dynamic.dynamic import serialize_provider  # noqa: E402

from components._provider import TrainingJobProvider  # noqa: E402
from components.lifecycle._adoption import identity_label  # noqa: E402
from components.lifecycle._wire import encode_spec  # noqa: E402
from components.training_job import prepare_spec  # noqa: E402

SPECS = {
    "local": REPO / "stacks" / "jobs" / "local-trainer.yaml",
    "dev": REPO / "stacks" / "jobs" / "dev-t4-spot.yaml",
    "prod": REPO / "stacks" / "jobs" / "prod-a100.gcloud.sh",
}
REGIONS = {"local": "us-central1", "dev": "us-central1", "prod": "europe-west4"}


def _inputs(stack: str, blob: str) -> dict[str, Any]:
    prepared = prepare_spec(SPECS[stack])
    spec = prepared.spec
    if stack != "local":  # what the infra component fills in
        for pool in spec["workerPoolSpecs"]:
            pool["pythonPackageSpec"]["packageUris"] = [
                "gs://bench-bucket/packages/0123456789abcdef/trainer-0.1.0.tar.gz"
            ]
        spec["serviceAccount"] = "vertex-train-bench@bench-project.iam.gserviceaccount.com"
        spec["baseOutputDirectory"] = f"gs://bench-bucket/jobs/{stack}"
    return {
        "spec": encode_spec(spec),  # the wire form a program sends
        "env_values": prepared.env_values,
        "project": "bench-project" if stack != "local" else "local-training",
        "region": REGIONS[stack],
        "triggers": ["data-v1"],
        "wait_for": "submitted",
        "identity": identity_label("gpu-training", "bench", stack),
        "__provider": blob,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200, help="check+diff rounds per job")
    args = parser.parse_args()

    blob = serialize_provider(TrainingJobProvider())
    print(f"__provider per resource: {len(blob)} bytes (goal <= 200)")

    provider = TrainingJobProvider()
    print(f"check+diff per job (median of {args.rounds} rounds, this process):")
    checked: dict[str, dict[str, Any]] = {}
    for stack in SPECS:
        news = _inputs(stack, blob)
        result = provider.check({}, news)
        assert not result.failures, [(f.property, f.reason) for f in result.failures]
        checked[stack] = {**result.inputs, "__provider": blob}
        olds = dict(checked[stack])
        samples = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            inputs = provider.check(olds, news).inputs
            provider.diff("id", olds, inputs)
            samples.append(time.perf_counter() - start)
        print(f"  {stack:5s} {statistics.median(samples) * 1000:7.3f} ms")
    loaded = [m for m in sys.modules if m.startswith("google.cloud.aiplatform")]
    print(f"Vertex client imported on the preview path: {'yes' if loaded else 'no'}")

    from pulumi.dynamic import ConfigureRequest
    from pulumi.dynamic.config import Config

    from emulator.testing import running_emulator

    print("state bytes per job (outputs + inputs as the engine stores them, JSON):")
    with running_emulator("--mode", "simulate") as emu:
        live = TrainingJobProvider()
        live.configure(
            ConfigureRequest(Config({"training:endpoint": emu.endpoint}, "gpu-training"))
        )
        for stack, inputs in checked.items():
            created = live.create(inputs)
            outs = {**(created.outs or {}), "__provider": blob}
            state = {"id": created.id, "inputs": inputs, "outputs": outs}
            size = len(json.dumps(state, separators=(",", ":")))
            print(f"  {stack:5s} {size:6d} bytes ({len(blob)} of them __provider, twice)")
            live.delete(created.id, outs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
