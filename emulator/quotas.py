"""The emulator's Cloud Quotas API (v1, REST) and the training quotas it enforces at create.

What the real client (``google.cloud.cloudquotas_v1``, REST transport) calls is served for the
service ``aiplatform.googleapis.com`` at the location ``global``:

* ``GET  /v1/projects/{p}/locations/global/services/aiplatform.googleapis.com/quotaInfos``
  (``pageSize``, ``pageToken``) and ``.../quotaInfos/{quotaId}``
* ``POST /v1/projects/{p}/locations/global/quotaPreferences`` (``quotaPreferenceId``),
  ``GET .../quotaPreferences`` (``pageSize``, ``pageToken``) and ``.../quotaPreferences/{id}``

The metrics are Vertex AI's custom-training quotas, read as data from the catalog
(``components/catalog/training_quotas.csv``: metric, quota id, the accelerator or machine
family it meters, on-demand or preemptible; ``machine_types.csv`` for vCPUs). Limits are per
project, metric and region: ``serve --quota METRIC[@REGION]=N`` sets them for every project,
a quota preference for its own project, and whatever is not set has a generous default
(:data:`DEFAULT_GPU_LIMIT`, :data:`DEFAULT_CPU_LIMIT`). Unlike Google's, a preference is
granted at once and in full (``grantedValue`` is the preferred value, never ``reconciling``);
preferences live as long as the service (they are not stored).

Enforcement is Vertex's: a CustomJob whose GPUs or vCPUs, added to what the project's active
jobs in the region hold, exceed a metric's limit is refused at create with 429
``RESOURCE_EXHAUSTED`` and Vertex's message (``The following quota metrics exceed quota limits:
aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus``). A tuning job holds its
parallel trials' worth from its create on (so its trials never fail for quota half-way).
Spot and flex-start jobs count against the preemptible metrics, as on Vertex.

Nothing here imports the project's ``components`` package.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import errors, hardware
from .protos import json_integer, query_integer

if TYPE_CHECKING:
    from .protos import Kind

__all__ = [
    "DEFAULT_CPU_LIMIT",
    "DEFAULT_GPU_LIMIT",
    "SERVICE",
    "Metric",
    "MetricTable",
    "Quotas",
    "job_need",
    "load_table",
    "parse_limit",
]

log = logging.getLogger("emulator.quotas")

SERVICE = "aiplatform.googleapis.com"
DEFAULT_GPU_LIMIT = 64
"""GPUs per metric, project and region where nothing else is set: generous, as the issue asks."""
DEFAULT_CPU_LIMIT = 4096
"""vCPUs per metric, project and region where nothing else is set."""
MAX_LIMIT = 10**9
MAX_PREFERENCES = 10_000
"""Preferences one service keeps, all projects together: memory stays bounded."""
MAX_PAGE_SIZE = 1000
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
_PREFERENCE_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
_LIMIT_FLAG = re.compile(
    r"(?P<metric>[A-Za-z0-9_./]{1,200}?)(?:@(?P<region>[A-Za-z0-9-]{1,63}))?=(?P<value>-?[0-9]{1,10})"
)
_SEG = r"[^/:]+"
_INFOS = re.compile(
    rf"^/v1/projects/(?P<p>{_SEG})/locations/(?P<l>{_SEG})/services/(?P<s>{_SEG})"
    rf"/quotaInfos(?:/(?P<id>{_SEG}))?$"
)
_PREFERENCES = re.compile(
    rf"^/v1/projects/(?P<p>{_SEG})/locations/(?P<l>{_SEG})/quotaPreferences(?:/(?P<id>{_SEG}))?$"
)
_PREEMPTIBLE_STRATEGIES = frozenset({"SPOT", "FLEX_START"})


@dataclass(frozen=True)
class Metric:
    """One quota metric: ``aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus``."""

    name: str
    quota_id: str
    unit: str
    gpus: bool
    """True for an accelerator metric, False for vCPUs."""

    @property
    def short(self) -> str:
        return self.name.rsplit("/", 1)[-1]

    @property
    def default_limit(self) -> int:
        return DEFAULT_GPU_LIMIT if self.gpus else DEFAULT_CPU_LIMIT


@dataclass(frozen=True)
class MetricTable:
    """The catalog's training-quota rows, by what they meter."""

    by_resource: Mapping[tuple[str, bool], Metric] = field(default_factory=dict)
    """(accelerator type or ``cpu:<family>``/``cpu:*``, preemptible) → metric."""
    machines: Mapping[str, tuple[str, int, str, int]] = field(default_factory=dict)
    """machine type → (family, vCPUs, fixed accelerator type or "", its count)."""
    regions: tuple[str, ...] = ()

    @functools.cached_property
    def metrics(self) -> tuple[Metric, ...]:
        """Each metric once, in the catalog's order (looked up on every create: kept)."""
        return tuple({m.name: m for m in self.by_resource.values()}.values())

    def find(self, name: str) -> Metric | None:
        """A metric by its name, short (``custom_model_training_cpus``) or full."""
        full = name if "/" in name else f"{SERVICE}/{name}"
        return next((m for m in self.metrics if m.name == full), None)

    def by_quota_id(self, quota_id: str) -> Metric | None:
        return next((m for m in self.metrics if m.quota_id == quota_id), None)

    def gpu(self, accelerator: str, preemptible: bool) -> Metric | None:
        return self.by_resource.get((accelerator, preemptible))

    def cpu(self, family: str, preemptible: bool) -> Metric | None:
        return self.by_resource.get((f"cpu:{family}", preemptible)) or self.by_resource.get(
            ("cpu:*", preemptible)
        )


def load_table(directory: Path | None = None) -> MetricTable:
    """The metric table from the catalog directory (``hardware.catalog_dir()`` by default),
    read once per directory.

    Without the files the table is empty: nothing is metered and nothing refused.
    """
    return _table(directory or hardware.catalog_dir(), hardware.catalog_overlay())


@functools.lru_cache(maxsize=4)
def _table(directory: Path, overlay: Path | None) -> MetricTable:
    by_resource: dict[tuple[str, bool], Metric] = {}
    for row in hardware.catalog_rows(directory, "training_quotas.csv"):
        if not row.get("resource") or not row.get("metric"):
            continue
        metric = Metric(
            name=row["metric"],
            quota_id=row.get("quota_id", ""),
            unit=row.get("unit", ""),
            gpus=not row["resource"].startswith("cpu:"),
        )
        by_resource[(row["resource"], row.get("capacity") == "preemptible")] = metric
    machines: dict[str, tuple[str, int, str, int]] = {}
    # A machine type the overlay adds is metered by its own vCPUs, as the packaged ones are.
    for row in hardware.catalog_rows(directory, "machine_types.csv", overlay):
        vcpus, fixed = row.get("vcpus", ""), row.get("fixed_accelerator_count", "")
        if row.get("machine_type") and vcpus.isdigit():
            machines[row["machine_type"]] = (
                row.get("family", ""),
                int(vcpus),
                row.get("fixed_accelerator_type", ""),
                int(fixed) if fixed.isdigit() else 0,
            )
    regions = tuple(
        sorted(
            r["region"] for r in hardware.catalog_rows(directory, "regions.csv") if r.get("region")
        )
    )
    return MetricTable(by_resource, machines, regions)


def parse_limit(text: str, table: MetricTable) -> tuple[str, str | None, int]:
    """``serve --quota METRIC[@REGION]=N`` → (metric name, region or None, N).

    ``N`` -1 is unlimited, as in the Cloud Quotas API. Raises ValueError naming what is wrong.
    """
    m = _LIMIT_FLAG.fullmatch(text.strip())
    if m is None:
        raise ValueError(
            f"--quota {text!r}: expected METRIC[@REGION]=N, e.g. "
            "custom_model_training_nvidia_t4_gpus@us-central1=4"
        )
    metric = table.find(m["metric"])
    if metric is None:
        known = ", ".join(x.short for x in table.metrics[:6])
        raise ValueError(f"--quota {text!r}: unknown metric {m['metric']!r} (known: {known}, ...)")
    value = int(m["value"])
    if value < -1 or value > MAX_LIMIT:
        raise ValueError(f"--quota {text!r}: expected -1 (unlimited) to {MAX_LIMIT}")
    return metric.name, m["region"], value


def job_need(job: Any, kind: Kind, table: MetricTable) -> dict[str, int]:
    """What a job holds while active: metric name → GPUs or vCPUs.

    A CustomJob: every pool's replicas x accelerators, and replicas x the machine's vCPUs
    where the catalog knows a CPU metric for its family. A tuning job: its parallel trials x
    what one trial holds.
    """
    # Imported here: `python -m emulator stop|jobs` read this module's flags, not jobs.
    from google.cloud import aiplatform_v1 as aip

    from . import tuning
    from .protos import CUSTOM_JOB, TUNING_JOB

    if kind is TUNING_JOB:
        trials = max(job.parallel_trial_count, 1)
        if job.max_trial_count > 0:
            trials = min(trials, job.max_trial_count)
        view = tuning.custom_job_view(job)
        return {k: v * trials for k, v in job_need(view, CUSTOM_JOB, table).items()}
    spec = job.job_spec
    strategy = aip.Scheduling.Strategy(spec.scheduling.strategy).name
    preemptible = strategy in _PREEMPTIBLE_STRATEGIES
    need: dict[str, int] = {}
    for pool in spec.worker_pool_specs:
        if pool.ByteSize() == 0:
            continue  # a placeholder pool
        replicas = max(pool.replica_count, 1)
        machine = pool.machine_spec
        family, vcpus, accelerator, count = table.machines.get(machine.machine_type, ("", 0, "", 0))
        if machine.accelerator_type:  # else the machine's own GPUs (g2, a2...), if any
            try:
                accelerator = aip.AcceleratorType(machine.accelerator_type).name
            except ValueError:
                accelerator = ""
            count = machine.accelerator_count
        metric = table.gpu(accelerator, preemptible) if accelerator and count > 0 else None
        if metric is not None:
            need[metric.name] = need.get(metric.name, 0) + replicas * count
        cpu = table.cpu(family, preemptible) if vcpus else None
        if cpu is not None:
            need[cpu.name] = need.get(cpu.name, 0) + replicas * vcpus
    return need


def _check_id(what: str, value: str) -> None:
    if not _ID.fullmatch(value):
        raise errors.invalid_argument(f"{what}: {value[:80]!r} is not a valid ID")


def _page(query: Mapping[str, str], total: int) -> tuple[int, int]:
    """(start, end) of the page ``pageSize``/``pageToken`` ask for (tokens are offsets)."""
    size_text = query.get("pageSize", "") or "100"
    token = query.get("pageToken", "") or "0"
    size = query_integer(size_text) if len(size_text) <= 9 else None
    start = query_integer(token) if len(token) <= 9 else None
    if size is None or start is None or size < 0 or start < 0:
        raise errors.invalid_argument("pageSize and pageToken: expected whole numbers")
    size = min(max(size, 1), MAX_PAGE_SIZE)
    start = min(start, total)
    return start, min(start + size, total)


class Quotas:
    """Limits (serve flags and preferences), preferences, and the check at create."""

    def __init__(
        self,
        limits: Iterable[tuple[str, str | None, int]] = (),
        table: MetricTable | None = None,
        *,
        load: Callable[[str], tuple[Any, Kind] | None] = lambda job_id: None,
        project_key: Callable[[str], str] = lambda project: project,
    ) -> None:
        """``load``: a stored job and its kind by id (for active jobs created before a restart).

        ``project_key``: one key per project whether a request names it by ID or by number (the
        service's project numbers), so a preference set by ID counts for jobs named by number.
        """
        self.table = table if table is not None else load_table()
        self._load = load
        self._project_key = project_key
        # What each active job holds, by (project, region) and job id: a job's need never
        # changes, so it is computed once (at its create, or on the first check after a
        # restart), not on every create.
        self._held: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
        # (project or None for every project, metric, region or None for every region) → limit
        self._limits: dict[tuple[str | None, str, str | None], int] = {
            (None, metric, region): value for metric, region, value in limits
        }
        self._preferences: dict[str, dict[str, Any]] = {}
        self._lock = threading.RLock()

    @property
    def admitting(self) -> threading.RLock:
        """Held across a create's check and its insert: two creates cannot both take the last
        GPUs."""
        return self._lock

    # -- limits -----------------------------------------------------------------------------

    def limit(self, project: str, metric: Metric, region: str) -> int:
        """The limit of ``metric`` for ``project`` in ``region`` (-1: unlimited)."""
        for key in (
            (project, metric.name, region),
            (project, metric.name, None),
            (None, metric.name, region),
            (None, metric.name, None),
        ):
            if key in self._limits:
                return self._limits[key]
        return metric.default_limit

    def admit(
        self,
        job_id: str,
        job: Any,
        kind: Kind,
        project: str,
        region: str,
        active: Callable[[], list[str]],
    ) -> None:
        """Refuse (429 RESOURCE_EXHAUSTED) a job that would take a metric past its limit.

        ``active``: ids of the project's active jobs in the region (trials' CustomJobs left out:
        their tuning job holds their share). Call with ``admitting`` held, then store the job.
        """
        project = self._project_key(project)
        need = job_need(job, kind, self.table)
        known = self._held.get((project, region), {})
        used: dict[str, int] = {}
        if need:
            held: dict[str, dict[str, int]] = {}
            for other in active():
                if other not in known:
                    found = self._load(other)
                    known[other] = job_need(*found, self.table) if found else {}
                held[other] = known[other]
                for name, amount in held[other].items():
                    used[name] = used.get(name, 0) + amount
            known = held  # jobs that ended no longer hold anything
        over = []
        for name, amount in need.items():
            metric = self.table.find(name)
            limit = self.limit(project, metric, region) if metric else -1
            if limit >= 0 and used.get(name, 0) + amount > limit:
                over.append((name, amount, used.get(name, 0), limit))
        if over:
            detail = "; ".join(
                f"{name.rsplit('/', 1)[-1]} in {region}: the job needs {amount}, "
                f"{in_use} in use, limit {limit}"
                for name, amount, in_use, limit in over
            )
            raise errors.resource_exhausted(
                "The following quota metrics exceed quota limits: "
                + ",".join(name for name, *_ in over)
                + f" (emulator: {detail})"
            )
        known[job_id] = need
        self._held[(project, region)] = known

    # -- the Cloud Quotas API ------------------------------------------------------------------

    def route(
        self, method: str, path: str, query: Mapping[str, str], body: bytes
    ) -> dict[str, Any] | None:
        """The answer to a Cloud Quotas request, or None when ``path`` is not one."""
        if (m := _INFOS.match(path)) is not None and method == "GET":
            project = self._checked_project(m["p"], m["l"])
            if m["s"] != SERVICE:
                raise errors.not_found(f"Service {m['s'][:80]!r} has no quotas in the emulator.")
            if m["id"] is None:
                return self._list_infos(project, query)
            return self.quota_info(project, m["id"])
        if (m := _PREFERENCES.match(path)) is not None:
            project = self._checked_project(m["p"], m["l"])
            if method == "POST" and m["id"] is None:
                return self.create_preference(project, query.get("quotaPreferenceId", ""), body)
            if method == "GET" and m["id"] is None:
                return self._list_preferences(project, query)
            if method == "GET":
                return self.get_preference(project, m["id"])
        return None

    def _checked_project(self, project: str, location: str) -> str:
        """The key of a request's project, once its parent is known to be well formed."""
        _check_id("project", project)
        if location != "global":
            raise errors.invalid_argument(
                f"location: quotas live at locations/global, not {location[:80]!r}"
            )
        return self._project_key(project)

    def quota_infos(self, project: str) -> list[dict[str, Any]]:
        """Every metric's QuotaInfo for ``project`` (REST JSON)."""
        with self._lock:
            return [self._info(project, metric) for metric in self.table.metrics]

    def _info(self, project: str, metric: Metric) -> dict[str, Any]:
        default = self.limit(project, metric, "")
        explicit = sorted(
            {
                region
                for owner, name, region in self._limits
                if region is not None and name == metric.name and owner in (None, project)
            }
        )
        infos = [
            {
                "dimensions": {"region": region},
                "details": {"value": str(self.limit(project, metric, region))},
                "applicableLocations": [region],
            }
            for region in explicit
        ]
        infos.append(
            {
                "details": {"value": str(default)},
                "applicableLocations": [r for r in self.table.regions if r not in explicit],
            }
        )
        kind = "GPUs" if metric.gpus else "CPUs"
        return {
            "name": f"projects/{project}/locations/global/services/{SERVICE}/quotaInfos/"
            f"{metric.quota_id}",
            "quotaId": metric.quota_id,
            "metric": metric.name,
            "service": SERVICE,
            "isPrecise": True,
            "containerType": "PROJECT",
            "dimensions": ["region"],
            "metricDisplayName": metric.short,
            "quotaDisplayName": f"{metric.short} ({kind} per project per region)",
            "metricUnit": "1/{project}/{region}",
            "quotaIncreaseEligibility": {"isEligible": True},
            "dimensionsInfos": infos,
            "isConcurrent": True,
        }

    def quota_info(self, project: str, quota_id: str) -> dict[str, Any]:
        metric = self.table.by_quota_id(quota_id)
        if metric is None:
            raise errors.not_found(f"QuotaInfo {quota_id[:80]!r} does not exist.")
        with self._lock:
            return self._info(project, metric)

    def _list_infos(self, project: str, query: Mapping[str, str]) -> dict[str, Any]:
        infos = self.quota_infos(project)
        start, end = _page(query, len(infos))
        answer: dict[str, Any] = {"quotaInfos": infos[start:end]}
        if end < len(infos):
            answer["nextPageToken"] = str(end)
        return answer

    def _requested(self, body: bytes) -> tuple[dict[str, Any], Metric, str | None, int]:
        """(the request's JSON, its metric, region or None, preferred value), or a 400."""
        try:
            data = json.loads(body or b"{}")
        except (ValueError, RecursionError):
            raise errors.invalid_argument("Invalid JSON payload received.") from None
        if not isinstance(data, dict):
            raise errors.invalid_argument("quota_preference: expected a JSON object")
        quota_id = data.get("quotaId")
        metric = self.table.by_quota_id(quota_id) if isinstance(quota_id, str) else None
        if metric is None:
            raise errors.invalid_argument(
                f"quota_preference.quota_id: {str(quota_id)[:80]!r} is not a quota of {SERVICE}"
            )
        if data.get("service", SERVICE) != SERVICE:
            raise errors.invalid_argument(f"quota_preference.service: expected {SERVICE}")
        dimensions = data.get("dimensions") or {}
        if not isinstance(dimensions, dict) or set(dimensions) - {"region"}:
            raise errors.invalid_argument(
                "quota_preference.dimensions: only the region dimension is supported"
            )
        region = dimensions.get("region")
        if region is not None:
            # A map<string, string>: a number here would mix into the sorted region names.
            if not isinstance(region, str):
                raise errors.invalid_argument(
                    "quota_preference.dimensions.region: expected a region name"
                )
            _check_id("quota_preference.dimensions.region", region)
        config = data.get("quotaConfig")
        if not isinstance(config, dict):
            raise errors.invalid_argument("quota_preference.quota_config: required")
        # proto3 JSON leaves out a field at its default: a preferred value of 0 comes as {}.
        value = json_integer(config.get("preferredValue", 0))
        if value is None or not -1 <= value <= MAX_LIMIT:
            raise errors.invalid_argument(
                "quota_preference.quota_config.preferred_value: expected an integer from 0 to "
                f"{MAX_LIMIT}, or -1 (unlimited)"
            )
        return data, metric, region, value

    def create_preference(self, project: str, preference_id: str, body: bytes) -> dict[str, Any]:
        """Store a preference and grant it at once: its value becomes the limit."""
        data, metric, region, value = self._requested(body)
        if preference_id and not _PREFERENCE_ID.fullmatch(preference_id):
            raise errors.invalid_argument(
                "quota_preference_id: lower-case letters, digits, - and _ (at most 63)"
            )
        with self._lock:
            if len(self._preferences) >= MAX_PREFERENCES:
                raise errors.resource_exhausted(
                    f"The emulator keeps at most {MAX_PREFERENCES} quota preferences."
                )
            prefix = f"projects/{project}/locations/global/quotaPreferences/"
            if not preference_id:  # the first free pref-N (a client may have named one so)
                number = len(self._preferences) + 1
                while f"{prefix}pref-{number}" in self._preferences:
                    number += 1
                preference_id = f"pref-{number}"
            name = prefix + preference_id
            if name in self._preferences:
                raise errors.already_exists(f"QuotaPreference {name} already exists.")
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            preference: dict[str, Any] = {
                "name": name,
                "service": SERVICE,
                "quotaId": metric.quota_id,
                "dimensions": {"region": region} if region else {},
                "quotaConfig": {
                    "preferredValue": str(value),
                    "grantedValue": str(value),
                    "stateDetail": "Granted at once by the emulator.",
                },
                "etag": f"{len(self._preferences) + 1}",
                "createTime": now,
                "updateTime": now,
                "reconciling": False,
            }
            for key in ("justification", "contactEmail"):
                if isinstance(data.get(key), str):
                    preference[key] = data[key][:1000]
            self._preferences[name] = preference
            self._limits[(project, metric.name, region)] = value
        log.info("quota preference %s: %s in %s = %d", name, metric.short, region or "*", value)
        return preference

    def get_preference(self, project: str, preference_id: str) -> dict[str, Any]:
        name = f"projects/{project}/locations/global/quotaPreferences/{preference_id}"
        with self._lock:
            found = self._preferences.get(name)
        if found is None:
            raise errors.not_found(f"QuotaPreference {name[:200]!r} does not exist.")
        return found

    def _list_preferences(self, project: str, query: Mapping[str, str]) -> dict[str, Any]:
        prefix = f"projects/{project}/locations/global/quotaPreferences/"
        with self._lock:
            mine = [p for n, p in self._preferences.items() if n.startswith(prefix)]
        start, end = _page(query, len(mine))
        answer: dict[str, Any] = {"quotaPreferences": mine[start:end]}
        if end < len(mine):
            answer["nextPageToken"] = str(end)
        return answer
