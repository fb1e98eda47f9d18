"""Write ``tests/unit_seconds.csv``: the seconds each unit of work (``tests/conftest.py``) took in a
run of the suite, read from that run's JUnit XML (``pytest --junitxml=FILE``).

    .venv/bin/python scripts/unit_seconds.py FILE.xml [--out tests/unit_seconds.csv]

``make test`` hands the units out longest first from this table, so a long unit never starts
last and sets the end of the run. A unit the table lacks (a new test) is expected to take the
median of its kind (``conftest.expected_seconds``); refresh the table after a suite's times change.
"""

from __future__ import annotations

import argparse
import csv
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.conftest import UNIT_SECONDS, work_unit  # noqa: E402  (the repo's root on the path)


def node_id(classname: str, name: str, root: Path = REPO) -> str:
    """The pytest node id of a JUnit test case: ``tests.e2e.test_x.TestY`` names the file
    ``tests/e2e/test_x.py`` and its class ``TestY``."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        path = "/".join(parts[:cut]) + ".py"
        if (root / path).is_file():
            return "::".join([path, *parts[cut:], name])
    return "::".join(["/".join(parts) + ".py", name])


def unit_seconds(junit: Path, root: Path = REPO) -> dict[str, float]:
    """Each unit's seconds in ``junit``: the sum of its test cases' times."""
    seconds: dict[str, float] = defaultdict(float)
    for case in ET.parse(junit).iter("testcase"):
        nodeid = node_id(case.get("classname", ""), case.get("name", ""), root)
        seconds[work_unit(nodeid)] += float(case.get("time") or 0)
    return dict(seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("junit", type=Path, help="a JUnit XML report of a run of the suite")
    parser.add_argument("--out", type=Path, default=UNIT_SECONDS)
    args = parser.parse_args(argv)
    try:
        seconds = unit_seconds(args.junit)
    except (OSError, ET.ParseError) as error:
        print(f"unit_seconds: {args.junit}: {error}", file=sys.stderr)
        return 2
    with args.out.open("w", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["unit", "seconds"])
        for unit in sorted(seconds):
            writer.writerow([unit, f"{seconds[unit]:.1f}"])
    print(f"{args.out}: {len(seconds)} units, {sum(seconds.values()):.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
