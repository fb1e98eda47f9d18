"""``gpu-training:quota``: a job's Vertex training quotas at check, as the stack setting says.

The dynamic resources check the quotas in their program, stack-wide, before any resource is
registered (``components.lifecycle._job_preview.quota_problem``, ``training:quota``). The
plugin has no program and sees one resource at a time: its ``check`` holds each job alone
against the project's limits in the job's region (the same catalog metrics, the same Cloud
Quotas read, cached per process, ``components.vertex.quotas``); the sum of a stack's jobs is
the policy pack's ``quota-fits``. A job with candidate ``regions`` fits when one attempt fits
(its region, its capacity kind). ``error`` (the default): a shortfall is a check failure on
the job's pools; ``warn``: a warning; ``off``: not read. Quotas that cannot be read are a
warning, never a failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..lifecycle._settings import Endpoint
from ..lifecycle._wire import PLACEMENT, PROJECT, REGION, SPEC, contains_unknown, decode_spec
from ._shape import Shape

__all__ = ["QuotaVerdict", "job_quota"]

QuotaVerdict = tuple[list[str], str | None]
"""(one message per shortfall, why the quotas were not checked or None)."""


def job_quota(
    shape: Shape,
    name: str,
    inputs: Mapping[str, Any],
    endpoint: Endpoint,
    retry_deadline: float,
) -> QuotaVerdict:
    """``inputs`` (the core's, valid) of the job ``name`` against its project's limits, read
    within ``retry_deadline`` seconds (``gpu-training:retryDeadline``)."""
    from ..costs._quota import job_needs, load_quota_metrics
    from ..rules._catalog import load_catalog
    from ..vertex import quotas

    project, region, spec = inputs.get(PROJECT), inputs.get(REGION), inputs.get(SPEC)
    if not (isinstance(project, str) and project and isinstance(region, str) and region):
        return [], None  # not known yet (a preview of a value from another resource)
    if contains_unknown(project) or contains_unknown(region) or contains_unknown(spec):
        return [], None
    try:
        parsed = shape.spec.model.parse(decode_spec(spec))
    except Exception:  # the check said why already
        return [], None
    catalog = load_catalog()
    metrics = load_quota_metrics()
    if not job_needs(name, parsed, catalog, metrics)[0]:
        return [], None  # no quota the catalog knows: nothing to read
    try:
        limits = quotas.read_limits(endpoint, project, retry_deadline=retry_deadline)
    except quotas.QuotaUnavailable as exc:
        return [], f"{exc}; the job's quotas were not checked (gpu-training:quota: off skips this)"
    placement = inputs.get(PLACEMENT)
    if not placement:
        return _shortfalls(name, parsed, project, region, limits, catalog, metrics), None
    # Candidate regions (components.lifecycle._placement): the job fits when one attempt fits;
    # otherwise every attempt's shortfall is named.
    from ..lifecycle._placement import attempts_of, parse_placement, placed_specs

    attempts = attempts_of(parse_placement(placement)[0])
    found: list[str] = []
    for attempt, spec_there in placed_specs(parsed, attempts, under=shape.spec.pools_under):
        problems = _shortfalls(name, spec_there, project, attempt.region, limits, catalog, metrics)
        if not problems:
            return [], None
        found += [f"{attempt.shown}: {p}" for p in problems]
    return found, None


def _shortfalls(
    name: str,
    parsed: Any,
    project: str,
    region: str,
    limits: Any,
    catalog: Any,
    metrics: Any,
) -> list[str]:
    """The job's shortfalls in ``region`` (none: it fits, or it needs no quota the catalog
    knows)."""
    from ..costs._quota import compare, job_needs

    needs, unchecked = job_needs(name, parsed, catalog, metrics)
    if not needs:
        return []
    report = compare(project, region, needs, limits, catalog, unchecked)
    return [p.replace("the stack's jobs need", "the job needs", 1) for p in report.problems(limits)]
