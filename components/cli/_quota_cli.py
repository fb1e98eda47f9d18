"""``python -m components quota FILE --project P [--region R]``: the job's quota table.

The table the preview logs for a stack (``components.costs._quota``), for one job file in any
accepted form: what the job needs at once per Vertex training metric, the project's limit in
the region, and for a shortfall how to request more and where the job fits now.

Exit status: 0 the job fits (or needs no quota the catalog knows), 1 a shortfall, 2 the file
cannot be read or the quotas cannot be (no credentials, no access).
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from .._errors import SpecError
from ..costs._quota import compare, job_needs, load_quota_metrics
from ..formats import load_spec_file
from ..lifecycle._settings import Endpoint, SettingError, parse_endpoint
from ..rules._catalog import load_catalog
from ..rules._validation import project_violation

__all__ = ["DEFAULT_REGION", "add_quota_parser", "cmd_quota"]

DEFAULT_REGION = "us-central1"
"""The region of a file and flags that name none (with a note), as ``estimate`` does."""


def add_quota_parser(sub: Any) -> None:
    """The ``quota`` subcommand, on the CLI's subparsers."""
    p = sub.add_parser(
        "quota",
        help="the job's Vertex training quota needs against a project's limits (Cloud Quotas API)",
    )
    p.add_argument("file")
    p.add_argument("--project", required=True, help="the project whose quotas are read")
    p.add_argument("--region", help="where the job would run (default: the file's)")
    p.add_argument(
        "--endpoint",
        help="the API's address, e.g. http://127.0.0.1:8642 for the local emulator "
        "(default: the Cloud Quotas API, with Application Default Credentials)",
    )
    p.set_defaults(handler=cmd_quota)


def cmd_quota(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the quota table of one job file; see the module's exit statuses."""
    from ..vertex.quotas import QuotaUnavailable, read_limits

    if (bad := project_violation("--project", args.project)) is not None:
        print(f"error: {bad}", file=err)
        return 2
    try:
        endpoint = Endpoint(parse_endpoint(args.endpoint))
        loaded = load_spec_file(args.file, region=args.region, tuning=True)
    except (SettingError, SpecError) as exc:
        print(f"error: {str(exc).replace('training:endpoint', '--endpoint')}", file=err)
        return 2
    spec = loaded.tuning if loaded.tuning is not None else loaded.spec
    region = args.region or loaded.spec.region
    if region is None:
        region = DEFAULT_REGION
        print(f"note: no region given (--region or region: in the file): {region}", file=err)
    catalog = load_catalog()
    needs, unchecked = job_needs(
        loaded.spec.display_name or "job", spec, catalog, load_quota_metrics()
    )
    try:
        limits = read_limits(endpoint, args.project)
    except QuotaUnavailable as exc:
        print(f"error: {endpoint.scrub(str(exc))}", file=err)
        for need in needs:
            print(f"  needs {need.amount} of {need.metric.short} ({need.how})", file=out)
        return 2
    report = compare(args.project, region, needs, limits, catalog, unchecked)
    for line in report.table():
        print(line, file=out)
    problems = report.problems(limits)
    for problem in problems:
        print(problem, file=out)
    return 1 if problems else 0
