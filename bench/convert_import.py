"""How long ``python -m components convert FILE`` takes, and what importing costs it.

Run: .venv/bin/python bench/convert_import.py [FILE]
Prints, side by side, the median wall time of five runs of ``convert`` as it is (the client
library's message types only, ``components.vertex._library.types_only``) and of the same
conversion with the whole client library imported first (what ``convert`` did before issue
26), and whether the client classes were imported. FILE defaults to a one-pool job spec.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
JOB = """\
region: us-central1
displayName: bench
workerPoolSpecs:
- machineSpec: {machineType: n1-standard-4}
  replicaCount: 1
  containerSpec: {imageUri: us-docker.pkg.dev/p/r/trainer:1}
"""
_RUN = (
    "import sys; {before}from components.cli._cli import main; "
    "code = main(['convert', sys.argv[1]], open('/dev/null', 'w'), open('/dev/null', 'w')); "
    "print(int('google.cloud.aiplatform_v1.services.job_service.client' in sys.modules)); "
    "sys.exit(code)"
)
_WHOLE = "from components.vertex._library import whole_library; whole_library(); "


def _median_seconds(code: str, path: str, runs: int = 5) -> tuple[float, bool]:
    times, clients = [], False
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", code, path], cwd=REPO, capture_output=True, text=True
        )
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise SystemExit(f"convert failed: {done.stderr.strip()[-400:]}")
        clients = done.stdout.strip() == "1"
    return statistics.median(times), clients


def main() -> None:
    if len(sys.argv) > 1:
        path = sys.argv[1]
    else:
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
            handle.write(JOB)
        path = handle.name
    now, now_clients = _median_seconds(_RUN.format(before=""), path)
    whole, whole_clients = _median_seconds(_RUN.format(before=_WHOLE), path)
    print(f"{'':28} {'median s':>9}  clients imported")
    print(f"{'convert (types only)':28} {now:9.2f}  {now_clients}")
    print(f"{'convert (whole library)':28} {whole:9.2f}  {whole_clients}")
    print(f"saved: {whole - now:.2f} s ({(whole - now) / whole:.0%})")


if __name__ == "__main__":
    main()
