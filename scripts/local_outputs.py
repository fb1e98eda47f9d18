"""Print what `make up` produced: each job's state, where its model and logs are, and for a
tuning job its trials and best trial.

Reads the stack's `jobs` output (JSON) on stdin; argv[1] is the emulator's state dir,
where gs://BUCKET/PATH lives as <state-dir>/gcs/BUCKET/PATH.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def local_path(state_dir: Path, uri: str) -> Path:
    return state_dir / "gcs" / uri.removeprefix("gs://") if uri.startswith("gs://") else Path(uri)


def main() -> None:
    state_dir = Path(sys.argv[1])
    jobs = json.load(sys.stdin)
    for name, job in jobs.items():
        job_id = str(job.get("job_name", "")).rsplit("/", 1)[-1]
        print(f"job {name}: {job.get('state')}  ({job.get('job_name')})")
        best = job.get("best_trial")
        if job.get("trial_counts"):
            counts = {k: v for k, v in job["trial_counts"].items() if v}
            print(f"  trials: {', '.join(f'{v} {k.lower()}' for k, v in counts.items())}")
        if isinstance(best, dict):
            parameters = ", ".join(f"{k}={v}" for k, v in (best.get("parameters") or {}).items())
            print(
                f"  best trial: {best.get('id')} ({parameters}): "
                f"{best.get('metric_id')} = {best.get('value')}"
            )
        model_uri = job.get("best_trial_model_dir") or job.get("model_dir")
        if model_uri:
            model = local_path(state_dir, model_uri)
            files = sorted(p.name for p in model.iterdir()) if model.is_dir() else []
            print(f"  model: {model}  {files}")
        if job.get("trial_counts"):
            # Each trial is a CustomJob of its own, with its own logs.
            print("  logs:  per trial: .venv/bin/python -m emulator jobs, then emulator logs ID")
            continue
        print(f"  logs:  {state_dir / 'jobs' / job_id / 'logs'}")
        print(f"         .venv/bin/python -m emulator logs {job_id}")


if __name__ == "__main__":
    main()
