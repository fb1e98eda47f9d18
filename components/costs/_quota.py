"""Vertex AI custom-training quotas: what a stack's jobs need at once, against the project's limits.

Vertex custom training has its own per-region quotas, apart from Compute Engine's (and often 0
in a new project): GPUs per accelerator type, on-demand and preemptible (Spot and flex-start
jobs draw on the preemptible ones), and vCPUs for some machine families. The metrics and their
quota ids are catalog data (``catalog/training_quotas.csv``, each with its source; the ones no
public source confirms say so). What a job holds while it runs:

* a custom job: per pool, replicas x accelerators on the accelerator's metric, and replicas x
  the machine's vCPUs on its family's CPU metric (where the catalog knows one);
* a tuning job: its parallel trials x what one trial holds.

The jobs of a stack run at the same time, in the stack's region: their needs add up per metric.
The limits come from the Cloud Quotas API (``components.vertex.quotas`` reads them;
``QuotaLimits`` is their plain form). Nothing here calls an API or imports a client library, so
the policy pack (its own virtualenv) uses it too.
"""

from __future__ import annotations

import csv
import functools
import json
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..rules._catalog import CATALOG_DIR, Catalog, training_regions_for
from ..rules._spec import CustomJobSpec, JobSpec
from ..rules._tuning_spec import TuningJobSpec
from ._pricing import concurrent_trials

__all__ = [
    "QUOTA_KEY",
    "QUOTA_MODES",
    "SERVICE",
    "SNAPSHOT_DIR",
    "Need",
    "QuotaLimits",
    "QuotaMetric",
    "QuotaMetrics",
    "QuotaReport",
    "QuotaRow",
    "Shortfall",
    "compare",
    "in_use_text",
    "job_needs",
    "load_quota_metrics",
    "read_snapshot",
    "refusal_message",
    "refused_metrics",
    "request_hint",
    "shortfalls_in",
    "trials_needs",
    "write_snapshot",
]

SERVICE = "aiplatform.googleapis.com"
QUOTA_KEY = "training:quota"
QUOTA_MODES = ("error", "warn", "off")
"""``training:quota``: a shortfall fails the preview (error, the default), is a warning, or the
quotas are not read at all."""
PREEMPTIBLE_STRATEGIES = frozenset({"SPOT", "FLEX_START"})
"""Strategies that draw on the preemptible metrics (flex-start: Google's DWS quota page)."""


@dataclass(frozen=True)
class QuotaMetric:
    """One row of ``training_quotas.csv``."""

    resource: str
    """An accelerator type (``NVIDIA_TESLA_T4``), or ``cpu:<family>`` (``cpu:*``: every family)."""
    preemptible: bool
    metric: str
    quota_id: str
    unit: str
    metric_confirmed: bool
    quota_id_confirmed: bool
    source: str
    read_on: str

    @property
    def short(self) -> str:
        """``custom_model_training_nvidia_t4_gpus``."""
        return self.metric.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class QuotaMetrics:
    """The catalog's training-quota metrics, by what they meter."""

    rows: tuple[QuotaMetric, ...] = ()

    @functools.cached_property
    def _by_resource(self) -> Mapping[tuple[str, bool], QuotaMetric]:
        return {(r.resource, r.preemptible): r for r in self.rows}

    def gpu(self, accelerator: str, preemptible: bool) -> QuotaMetric | None:
        return self._by_resource.get((accelerator, preemptible))

    def cpu(self, family: str, preemptible: bool) -> QuotaMetric | None:
        return self._by_resource.get((f"cpu:{family}", preemptible)) or self._by_resource.get(
            ("cpu:*", preemptible)
        )

    def by_metric(self, metric: str) -> QuotaMetric | None:
        full = metric if "/" in metric else f"{SERVICE}/{metric}"
        return next((r for r in self.rows if r.metric == full), None)


def _yes(value: str) -> bool:
    return value.strip().lower() == "yes"


@functools.cache
def load_quota_metrics(directory: Path = CATALOG_DIR) -> QuotaMetrics:
    """``training_quotas.csv`` of the catalog directory; ValueError naming a bad row."""
    path = directory / "training_quotas.csv"
    rows = []
    with path.open(newline="", encoding="utf-8") as f:
        for number, row in enumerate(csv.DictReader(f), start=2):
            capacity = row.get("capacity", "")
            if not row.get("resource") or not row.get("metric", "").startswith(f"{SERVICE}/"):
                raise ValueError(f"{path.name}:{number}: resource and {SERVICE}/ metric needed")
            if capacity not in ("on_demand", "preemptible"):
                raise ValueError(f"{path.name}:{number}: capacity {capacity!r}")
            rows.append(
                QuotaMetric(
                    resource=row["resource"],
                    preemptible=capacity == "preemptible",
                    metric=row["metric"],
                    quota_id=row.get("quota_id", ""),
                    unit=row.get("unit", ""),
                    metric_confirmed=_yes(row.get("metric_confirmed", "")),
                    quota_id_confirmed=_yes(row.get("quota_id_confirmed", "")),
                    source=row.get("source", ""),
                    read_on=row.get("read_on", ""),
                )
            )
    return QuotaMetrics(tuple(rows))


# -- needs --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Need:
    """What one job holds of one metric while it runs."""

    job: str
    metric: QuotaMetric
    amount: int
    how: str
    """``2 replicas x 4 GPUs`` (``3 parallel trials x ...`` for a tuning job)."""
    accelerators: frozenset[str] = frozenset()


def _pool_needs(
    job: str, spec: CustomJobSpec, catalog: Catalog, metrics: QuotaMetrics
) -> tuple[list[Need], list[str]]:
    strategy = spec.scheduling.strategy if spec.scheduling else None
    preemptible = strategy in PREEMPTIBLE_STRATEGIES
    needs: list[Need] = []
    unchecked: list[str] = []
    for index, pool in enumerate(spec.worker_pool_specs):
        machine_spec = pool.machine_spec
        if pool.is_placeholder or machine_spec is None:
            continue
        replicas = pool.replicas
        machine = catalog.machine_types.get(machine_spec.machine_type or "")
        accelerator = machine_spec.accelerator_type or (
            machine.fixed_accelerator if machine else None
        )
        count = machine_spec.accelerator_count or (
            machine.fixed_accelerator_count if machine and not machine_spec.accelerator_type else 0
        )
        where = f"pool {index}"
        if accelerator and count:
            metric = metrics.gpu(accelerator, preemptible)
            if metric is None:
                unchecked.append(
                    f"{job}: {where}: no Vertex training quota metric known for {accelerator}"
                )
            else:
                needs.append(
                    Need(
                        job,
                        metric,
                        replicas * count,
                        f"{replicas} x {count} {accelerator}",
                        frozenset({accelerator}),
                    )
                )
        cpu = metrics.cpu(machine.family, preemptible) if machine else None
        if machine is not None and cpu is not None:
            needs.append(
                Need(
                    job,
                    cpu,
                    replicas * machine.vcpus,
                    f"{replicas} x {machine.vcpus} vCPUs ({machine.name})",
                )
            )
    return needs, unchecked


def job_needs(
    job: str, spec: JobSpec | TuningJobSpec, catalog: Catalog, metrics: QuotaMetrics
) -> tuple[list[Need], list[str]]:
    """What ``job`` holds while it runs, one ``Need`` per metric and pool, and what could not be
    checked (an accelerator with no known metric)."""
    if isinstance(spec, TuningJobSpec):
        _, parallel = concurrent_trials(spec)
        trial, unchecked = _pool_needs(job, spec.trial_job_spec, catalog, metrics)
        return trials_needs(trial, parallel), unchecked
    return _pool_needs(job, spec, catalog, metrics)


def trials_needs(trial: list[Need], parallel: int) -> list[Need]:
    """What ``parallel`` trials hold at once, from what one trial holds (``trial``)."""
    return [
        Need(
            n.job,
            n.metric,
            n.amount * parallel,
            f"{parallel} parallel trials x {n.how}",
            n.accelerators,
        )
        for n in trial
    ]


# -- limits -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _MetricLimits:
    quota_id: str
    by_region: Mapping[str, int]
    default: int | None
    """The limit of regions not named (a dimensions info without a region), if any."""


@dataclass(frozen=True)
class QuotaLimits:
    """A project's custom-training limits per metric and region, as the Cloud Quotas API lists
    them (-1: unlimited)."""

    metrics: Mapping[str, _MetricLimits] = field(default_factory=dict)

    @classmethod
    def from_quota_infos(cls, infos: Iterable[Any]) -> QuotaLimits:
        """From ``cloudquotas_v1.QuotaInfo`` messages (or anything with their attributes).

        A region's limit is the dimensions info naming that region, else one whose applicable
        locations list it, else the one without a region (the default)."""
        metrics: dict[str, _MetricLimits] = {}
        for info in infos:
            dims = list(getattr(info, "dimensions", ()) or ())
            if dims and "region" not in dims:
                continue  # a global or zonal quota: not the per-region training limits
            by_region: dict[str, int] = {}
            default: int | None = None
            for entry in getattr(info, "dimensions_infos", ()) or ():
                value = int(entry.details.value)
                region = dict(entry.dimensions).get("region")
                if region:
                    by_region[region] = value
                    continue
                for location in entry.applicable_locations or ():
                    by_region.setdefault(str(location), value)
                default = value
            metrics.setdefault(
                str(info.metric), _MetricLimits(str(info.quota_id), by_region, default)
            )
        return cls(metrics)

    def limit(self, metric: str, region: str) -> int | None:
        """The limit, -1 for unlimited, None when the project lists no such quota."""
        found = self.metrics.get(metric)
        if found is None:
            return None
        return found.by_region.get(region, found.default)

    def quota_id(self, metric: str) -> str | None:
        found = self.metrics.get(metric)
        return found.quota_id if found else None

    def to_json(self) -> str:
        """A plain form (the policy pack reads it from the program's snapshot)."""
        return json.dumps(
            {
                name: {"quotaId": m.quota_id, "regions": dict(m.by_region), "default": m.default}
                for name, m in self.metrics.items()
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> QuotaLimits:
        """The form ``to_json`` wrote; ValueError if it is not that."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("expected an object of metrics")
        metrics = {}
        for name, m in data.items():
            if not isinstance(m, dict) or not isinstance(m.get("regions"), dict):
                raise ValueError(f"{name}: expected quotaId, regions and default")
            default = m.get("default")
            metrics[str(name)] = _MetricLimits(
                str(m.get("quotaId", "")),
                {str(r): int(v) for r, v in m["regions"].items()},
                int(default) if default is not None else None,
            )
        return cls(metrics)


# -- the comparison -------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuotaRow:
    """One metric in one region: what the stack's jobs need at once, and the limit."""

    region: str
    metric: QuotaMetric
    needs: tuple[Need, ...]
    limit: int | None

    @property
    def need(self) -> int:
        return sum(n.amount for n in self.needs)

    @property
    def fits(self) -> bool | None:
        """None when the limit is not known."""
        if self.limit is None:
            return None
        return self.limit < 0 or self.need <= self.limit


def request_hint(project: str, region: str, metric: str, quota_id: str | None, value: int) -> str:
    """How to ask for ``value`` of ``metric`` in ``region``: the gcloud command and the console."""
    qid = quota_id or "QUOTA_ID"
    return (
        f"gcloud alpha quotas preferences create --service={SERVICE} --quota-id={qid} "
        f"--preferred-value={value} --dimensions=region={region} --project={project} "
        f"--email=YOU@EXAMPLE.COM --justification='Vertex AI training'"
        f" (or https://console.cloud.google.com/iam-admin/quotas?project={project}, "
        f"filter {metric.rsplit('/', 1)[-1]})"
    )


@dataclass(frozen=True)
class QuotaReport:
    """The stack's quota table: rows per metric, what was not checked, where shortfalls fit."""

    project: str
    region: str
    rows: tuple[QuotaRow, ...]
    unchecked: tuple[str, ...] = ()
    alternatives: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Job with a shortfall → other catalog regions where it fits the current limits alone."""

    @property
    def shortfalls(self) -> list[QuotaRow]:
        return [row for row in self.rows if row.fits is False]

    def table(self) -> list[str]:
        """One line per metric: jobs, metric, need vs limit, verdict."""
        lines = [f"quota (project {self.project}, {self.region}; Cloud Quotas API):"]
        if not self.rows:
            lines.append("  no job needs a Vertex training quota the catalog knows")
        for row in self.rows:
            limit = "unknown" if row.limit is None else "unlimited" if row.limit < 0 else row.limit
            verdict = {True: "fits", False: "SHORT", None: "not listed"}[row.fits]
            jobs = ", ".join(sorted({n.job for n in row.needs}))
            unconfirmed = "" if row.metric.metric_confirmed else " (metric name unconfirmed)"
            lines.append(
                f"  {jobs}: {row.metric.short}{unconfirmed}: need {row.need}, limit {limit}: {verdict}"
            )
        lines.extend(f"  not checked: {u}" for u in self.unchecked)
        return lines

    def problems(self, limits: QuotaLimits, needed_by: str = "the stack's jobs need") -> list[str]:
        """The words of ``found`` (one message per shortfall)."""
        return [shortfall.text for shortfall in self.found(limits, needed_by)]

    def found(
        self, limits: QuotaLimits, needed_by: str = "the stack's jobs need"
    ) -> list[Shortfall]:
        """One ``Shortfall`` per metric short: jobs, metric, region, need vs limit, how to get
        more, and the regions where each job fits now. ``needed_by``: whose need it is (``the
        job needs`` where one resource is checked by itself, the plugin's)."""
        found = []
        for row in self.shortfalls:
            jobs = "; ".join(f"{n.job} ({n.how}: {n.amount})" for n in row.needs)
            quota_id = limits.quota_id(row.metric.metric) or row.metric.quota_id
            request = request_hint(self.project, self.region, row.metric.metric, quota_id, row.need)
            names = tuple(sorted({n.job for n in row.needs}))
            fits_in = {job: self.alternatives[job] for job in names if job in self.alternatives}
            where = [
                f"{job} fits now in: {', '.join(regions) or 'no catalog region'}"
                for job, regions in fits_in.items()
            ]
            text = (
                f"quota {row.metric.metric} in {self.region}: {needed_by} {row.need} "
                f"at once, the project's limit is {row.limit} [{jobs}]; request more: "
                + request
                + ("; " + "; ".join(where) if where else "")
            )
            found.append(
                Shortfall(
                    "quota",
                    names,
                    text,
                    region=self.region,
                    metric=row.metric.metric,
                    need=row.need,
                    limit=row.limit,
                    request=request,
                    fits_in=fits_in,
                )
            )
        return found


@dataclass(frozen=True)
class Shortfall:
    """One quota shortfall that a preview finds, as data.

    ``quota``: the jobs' need of one metric in one region over the project's limit (``need``,
    ``limit``; None: not known), how to ask for more (``request``: the gcloud command and the
    console) and, per job, the other catalog regions where it fits now (``fits_in``).
    ``placement``: a job with candidate regions that fits none of them now. ``text`` words it
    as every door shows it."""

    kind: Literal["quota", "placement"]
    jobs: tuple[str, ...]
    text: str
    region: str | None = None
    metric: str | None = None
    need: int | None = None
    limit: int | None = None
    request: str | None = None
    fits_in: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.text


def _fits_alone(needs: list[Need], limits: QuotaLimits, region: str) -> bool:
    return not shortfalls_in(needs, limits, region)


def shortfalls_in(needs: Iterable[Need], limits: QuotaLimits, region: str) -> list[str]:
    """Why ``needs`` (one job's) do not fit ``region``'s limits alone: ``metric: need N,
    limit L`` per metric short, or with no limit known; [] when they fit."""
    totals: dict[str, int] = {}
    for need in needs:
        totals[need.metric.metric] = totals.get(need.metric.metric, 0) + need.amount
    short = []
    for metric, amount in totals.items():
        limit = limits.limit(metric, region)
        if limit is None or (0 <= limit < amount):
            shown = "unknown" if limit is None else str(limit)
            short.append(f"{metric.rsplit('/', 1)[-1]}: need {amount}, limit {shown}")
    return short


def compare(
    project: str,
    region: str,
    needs: list[Need],
    limits: QuotaLimits,
    catalog: Catalog,
    unchecked: Iterable[str] = (),
) -> QuotaReport:
    """The stack's needs (every job at once, in ``region``) against ``limits``."""
    by_metric: dict[str, list[Need]] = {}
    for need in needs:
        by_metric.setdefault(need.metric.metric, []).append(need)
    rows = tuple(
        QuotaRow(region, group[0].metric, tuple(group), limits.limit(metric, region))
        for metric, group in by_metric.items()
    )
    alternatives: dict[str, tuple[str, ...]] = {}
    for row in rows:
        if row.fits is not False:
            continue
        for job in {n.job for n in row.needs}:
            if job in alternatives:
                continue
            mine = [n for n in needs if n.job == job]
            accelerators = frozenset().union(*(n.accelerators for n in mine))
            candidates = (
                training_regions_for(catalog, accelerators)
                if accelerators
                else sorted(catalog.regions)
            )
            alternatives[job] = tuple(
                r for r in candidates if r != region and _fits_alone(mine, limits, r)
            )
    return QuotaReport(project, region, rows, tuple(unchecked), alternatives)


def refused_metrics(message: str) -> list[str]:
    """The metrics a Vertex quota refusal names (``The following quota metrics exceed quota
    limits: aiplatform.googleapis.com/custom_model_training_cpus,...``); [] for another error."""
    if "exceed quota limits" not in message:
        return []
    return list(dict.fromkeys(re.findall(rf"{re.escape(SERVICE)}/[a-z0-9_]+", message[:4000])))


def in_use_text(metric: str, in_use: list[Need] | None) -> str:
    """``in use: 1 (train-7 1)``: what the project's active jobs hold of ``metric`` (``in_use``
    None: they could not be listed)."""
    if in_use is None:
        return "in use: not known (the active jobs could not be listed)"
    held = [n for n in in_use if n.metric.metric == metric]
    if not held:
        return "in use: 0 by the active jobs the API lists"
    shown = ", ".join(f"{n.job} {n.amount}" for n in held[:10])
    more = f", {len(held) - 10} more" if len(held) > 10 else ""
    return f"in use: {sum(n.amount for n in held)} by active jobs ({shown}{more})"


def refusal_message(
    job: str,
    spec: JobSpec | TuningJobSpec,
    project: str,
    region: str,
    metrics: list[str],
    limits: QuotaLimits | None,
    catalog: Catalog,
    in_use: list[Need] | None = None,
) -> str:
    """What a quota refusal at create means for this job: per refused metric, the job's need,
    what the project's active jobs hold of it (``in_use``, ``job_needs`` of each; None: not
    known) and the project's limit (``limits`` None: not readable), and how to request more."""
    table = load_quota_metrics()
    needs, _ = job_needs(job, spec, catalog, table)
    parts = []
    for metric in metrics:
        need = sum(n.amount for n in needs if n.metric.metric == metric)
        limit = limits.limit(metric, region) if limits is not None else None
        known = table.by_metric(metric)
        quota_id = (limits.quota_id(metric) if limits else None) or (
            known.quota_id if known else None
        )
        parts.append(
            f"{metric} in {region}: the job needs {need or 'some'}, "
            f"{in_use_text(metric, in_use)}, the project's limit is "
            f"{'unknown' if limit is None else limit}; request more: "
            + request_hint(project, region, metric, quota_id, max(need, 1))
        )
    return (
        "Vertex AI refused the job for quota (429 RESOURCE_EXHAUSTED; not retried, since waiting "
        "does not raise a limit): " + " | ".join(parts) + "; no job was started"
    )


# -- the snapshot the policy pack reads ---------------------------------------------------------

SNAPSHOT_DIR = Path(".local") / "quota"
"""Under the project directory: ``<project>.json``, the limits the last preview read. The policy
pack runs in a virtualenv without the Cloud Quotas client: it reads them from here."""
_PROJECT_FILE = re.compile(r"[a-z0-9][a-z0-9.:-]{0,99}")


def _snapshot_path(root: Path, project: str) -> Path:
    if not _PROJECT_FILE.fullmatch(project):
        raise ValueError(f"{project[:100]!r} is not a project ID")
    return root / SNAPSHOT_DIR / f"{project.replace(':', '_')}.json"


def write_snapshot(root: Path, project: str, limits: QuotaLimits, now: float) -> None:
    """Record ``limits`` as read at ``now`` (epoch seconds); OSError and ValueError pass up."""
    path = _snapshot_path(root, project)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"project": project, "readAt": now, "limits": json.loads(limits.to_json())}
    # A temporary file of its own: two previews of one project at once each replace the
    # snapshot whole, never each other's half-written file.
    with tempfile.NamedTemporaryFile(
        "w", dir=path.parent, prefix=path.stem + ".", suffix=".tmp", delete=False
    ) as tmp:
        tmp.write(json.dumps(body, sort_keys=True))
    try:
        Path(tmp.name).replace(path)
    except OSError:
        Path(tmp.name).unlink(missing_ok=True)
        raise


def read_snapshot(
    root: Path, project: str, max_age: float, now: float
) -> tuple[QuotaLimits, float]:
    """(the limits the last preview read for ``project``, their age in seconds); ValueError
    saying why there are none fit to use (none recorded, older than ``max_age``, unreadable)."""
    path = _snapshot_path(root, project)
    try:
        if path.stat().st_size > 4 * 1024 * 1024:
            raise ValueError(f"{path} is too large to be a quota snapshot")
        data = json.loads(path.read_text())
        age = now - float(data["readAt"])
        limits = QuotaLimits.from_json(json.dumps(data["limits"]))
    except FileNotFoundError:
        raise ValueError("no preview recorded its quotas") from None
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path} cannot be read ({exc})") from None
    if age > max_age:
        raise ValueError(f"the quotas were read {age / 60:.0f} min ago, more than {max_age / 60:g}")
    return limits, age
