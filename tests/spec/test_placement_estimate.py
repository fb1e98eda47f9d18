"""``python -m components estimate FILE --regions R1,R2 [--capacity K,...]``: each attempt's
price, the expected one (the first the catalog allows) and the worst case (the most expensive
allowed attempt) of a placed job (``components.core._placement``)."""

from __future__ import annotations

import io
from pathlib import Path

from components.cli._cli import main

JOB = """\
workerPoolSpecs:
  - machineSpec: {machineType: n1-standard-4, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}
    replicaCount: 1
    containerSpec: {imageUri: us-docker.pkg.dev/p/r/i:1}
"""


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_expected_is_the_first_allowed_attempt_and_worst_the_dearest(tmp_path: Path) -> None:
    job = tmp_path / "t4.yaml"
    job.write_text(JOB)
    code, out, err = run(
        "estimate",
        str(job),
        "--regions",
        "us-south1,us-central1,europe-west4",
        "--capacity",
        "spot,on-demand",
    )
    assert code == 0, err
    assert "us-south1 (spot)" in out and "is not offered in us-south1" in out
    assert "expected (first allowed, us-central1 (spot))" in out
    prices = {
        line.split("  ")[0].strip(): line.split()[2]
        for line in out.splitlines()
        if line.startswith(("us-central1", "europe-west4"))
    }
    dearest = max(prices.values(), key=float)
    assert f"worst case (most expensive candidate): $/h {dearest}" in out
    assert (
        f"expected (first allowed, us-central1 (spot)): $/h {prices['us-central1 (spot)']}" in out
    )


def test_a_bad_capacity_kind_is_named(tmp_path: Path) -> None:
    job = tmp_path / "t4.yaml"
    job.write_text(JOB)
    code, _, err = run("estimate", str(job), "--regions", "us-central1", "--capacity", "cheap")
    assert code == 2
    assert "--capacity[0]: 'cheap' is not one of" in err
    assert "Traceback" not in err


def test_prices_for_candidate_regions_give_the_expected_and_the_worst_case() -> None:
    code, out, err = run("prices", "--gpu", "T4", "--regions", "us-east4,us-central1")
    assert code == 0, err
    table, summary = out.split("placement across the candidates, in order:")
    rows = [line.split() for line in table.splitlines()[1:] if line.strip()]
    assert {row[3] for row in rows} == {"us-east4", "us-central1"}
    one = {row[3]: float(row[4]) for row in rows if row[1] == "1" and row[2] == "n1-standard-4"}
    [line] = [x for x in summary.splitlines() if x.split()[1:3] == ["1", "n1-standard-4"]]
    assert f"{one['us-east4']:.4f} (us-east4)" in line  # the first candidate: expected
    dearest = max(one, key=lambda region: one[region])
    assert line.rstrip().endswith(f"{one[dearest]:.4f} ({dearest})")


def test_prices_refuse_an_unknown_candidate_region() -> None:
    code, _, err = run("prices", "--gpu", "T4", "--regions", "us-central1,mars-1")
    assert code == 2
    assert "--regions: unknown region 'mars-1'" in err
