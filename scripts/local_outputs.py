"""Print what `make up` produced: each job's state, and where its model and logs are.

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
        if job.get("model_dir"):
            model = local_path(state_dir, job["model_dir"])
            files = sorted(p.name for p in model.iterdir()) if model.is_dir() else []
            print(f"  model: {model}  {files}")
        print(f"  logs:  {state_dir / 'jobs' / job_id / 'logs'}")
        print(f"         .venv/bin/python -m emulator logs {job_id}")


if __name__ == "__main__":
    main()
