"""The provider's stack settings, read and checked in one place.

``training:endpoint`` (where the Vertex AI API is), ``training:emulatorStateDir`` (the local
emulator whose state is there, at whatever port it runs), ``training:cancelTimeout``,
``training:retryDeadline`` and ``training:maxConcurrentOperations`` are read by the program
(to fail ``pulumi preview`` early, naming the key) and by the provider process
(``configure``): both go through ``ProviderSettings``. Nothing here imports ``pulumi`` or the
Vertex client.

A URL may carry credentials (``http://user:token@host``, set as a secret): ``public_url``
is the only form that may be shown, logged or written to outputs.
"""

from __future__ import annotations

import json
import math
import os
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .._errors import TrainingJobError
from ..costs._quota import QUOTA_KEY, QUOTA_MODES
from ..rules._validation import Target

__all__ = [
    "CATALOG_OVERLAY_KEY",
    "CONTINUE_LAST_RUN_KEY",
    "DEFAULT_CANCEL_TIMEOUT",
    "DEFAULT_MAX_CONCURRENT_OPERATIONS",
    "DEFAULT_RETRY_DEADLINE",
    "DELETE_RECORDS_KEY",
    "DYNAMIC_DOOR",
    "EMULATOR_STATE_DIR_KEY",
    "ENDPOINT_KEY",
    "LIVE_PRICES_KEY",
    "PLUGIN_DOOR",
    "PROJECT_ENV",
    "REGION_ENV",
    "Door",
    "Endpoint",
    "PlaceSources",
    "ProviderSettings",
    "SettingError",
    "count_setting",
    "credentials_project",
    "duration_seconds",
    "emulator_endpoint",
    "emulator_health",
    "environment_text",
    "flag_setting",
    "parse_endpoint",
    "path_setting",
    "public_url",
    "quota_setting",
    "read_place",
    "running_emulator",
    "same_dir",
    "seconds_setting",
    "target_for_endpoint",
]

ENDPOINT_KEY = "training:endpoint"
EMULATOR_STATE_DIR_KEY = "training:emulatorStateDir"
CANCEL_TIMEOUT_KEY = "training:cancelTimeout"
RETRY_DEADLINE_KEY = "training:retryDeadline"
MAX_CONCURRENT_OPERATIONS_KEY = "training:maxConcurrentOperations"
CATALOG_OVERLAY_KEY = "training:catalogOverlay"
DELETE_RECORDS_KEY = "training:deleteRecords"
CONTINUE_LAST_RUN_KEY = "training:continueLastRun"
LIVE_PRICES_KEY = "training:livePrices"
"""A folder of catalog CSV rows over the packaged catalog (``components.rules._catalog``)."""

DEFAULT_CANCEL_TIMEOUT = 600.0
"""Seconds ``delete`` (and a failed create) wait for a cancelled job to stop."""
DEFAULT_RETRY_DEADLINE = 120.0
"""Seconds an API call is retried on transient errors."""
MAX_SETTING_SECONDS = 7 * 86400.0
DEFAULT_MAX_CONCURRENT_OPERATIONS = 32
"""Operations (create, read, delete...) one provider process serves at once."""
CONCURRENT_OPERATIONS_RANGE = (4, 256)
"""4: what Pulumi's dynamic provider host serves without us; 256: threads and connections
stay a modest cost (each waiting operation holds one of each)."""

_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


class SettingError(TrainingJobError, ValueError):
    """A stack setting is malformed: ``key`` (``training:cancelTimeout``) and what is wrong with
    it (``reason``); the message is ``key: reason``."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


def public_url(url: str) -> str:
    """``url`` without user name and password: the form that may be shown or stored.

    Done on the text, so that it holds for URLs too malformed to parse.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority = rest[:cut]
    if "@" not in authority:
        return url
    return f"{scheme}://{authority.rsplit('@', 1)[1]}{rest[cut:]}"


def parse_endpoint(value: Any, key: str = ENDPOINT_KEY) -> str | None:
    """``training:endpoint`` checked: None (Vertex AI) or ``http(s)://HOST[:PORT]``.

    Raises ``SettingError`` naming the key; the message never shows credentials.
    """
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise SettingError(key, "expected a URL like http://127.0.0.1:8642")
    shown = public_url(value)
    if not value.startswith(("http://", "https://")):
        raise SettingError(key, f"expected http(s)://HOST:PORT, got {shown!r}")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise SettingError(key, f"{shown!r} is not a valid URL ({exc})") from None
    if not parts.hostname:
        raise SettingError(key, f"{shown!r} names no host")
    if port == 0:
        raise SettingError(key, f"port 0 in {shown!r} is not a port to connect to")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise SettingError(
            key, f"{shown!r} has a path, query or fragment; give only http(s)://HOST:PORT"
        )
    return value


def emulator_health(endpoint: str) -> dict[str, Any] | None:
    """The emulator's health answer at ``endpoint``, or None when none answers there."""
    try:
        with urllib.request.urlopen(f"{endpoint}/emulator/v1/health", timeout=2) as reply:
            data = json.loads(reply.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def running_emulator(state_dir: Path) -> str | None:
    """The endpoint of the emulator serving ``state_dir`` (its ``server.json``), if one runs.

    The emulator writes where it listens into its state dir; the health answer must name the
    same state dir, so an endpoint another emulator took over since is not mistaken for it.
    """
    try:
        info = json.loads((state_dir / "server.json").read_text())
        endpoint = str(info["endpoint"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    answer = emulator_health(endpoint)
    if answer is not None and same_dir(answer.get("stateDir"), state_dir):
        return endpoint
    return None


def same_dir(named: object, state_dir: Path) -> bool:
    """Whether ``named`` (an emulator's ``stateDir`` answer) is ``state_dir``."""
    return isinstance(named, str) and Path(named).resolve() == state_dir.resolve()


def emulator_endpoint(value: Any, key: str = EMULATOR_STATE_DIR_KEY) -> str:
    """``training:emulatorStateDir`` → the endpoint of the emulator running with that state
    dir (relative: to the working directory, the project's). Raises ``SettingError`` when
    none runs: a stack that names its emulator never talks to another one in its place."""
    if not isinstance(value, str) or not value or "\0" in value:
        raise SettingError(key, f"expected a directory, got {value!r}")
    state_dir = Path(value).absolute()
    endpoint = running_emulator(state_dir)
    if endpoint is None:
        raise SettingError(
            key,
            f"no emulator runs with its state in {state_dir} (start "
            "it: scripts/local-stack emulator, or make up); the stack's training:endpoint is "
            "not used in its place",
        )
    return endpoint


def target_for_endpoint(endpoint: str | None) -> Target:
    """``local`` for the emulator on this machine, ``vertex`` for everything else."""
    if endpoint and endpoint.startswith("http://"):
        try:
            host = urlsplit(endpoint).hostname or ""
        except ValueError:
            return "vertex"
        if host in _LOCAL_HOSTS or host.startswith("127."):
            return "local"
    return "vertex"


DURATION_FORMS = "a duration like '30s', '10m', '2h' or a number of seconds"


def duration_seconds(value: Any) -> float:
    """Seconds of a duration setting, in every form each of them takes: a number, numeric text
    (``"600"``, ``"1e3"``) or text with a unit (``"30s"``, ``"10m"``, ``"2h"``, ``"1d"``).

    Raises ``ValueError`` (its message meant for the user) for anything else. The bounds are
    each setting's own.
    """
    from ..rules._spec import parse_duration

    if isinstance(value, bool):
        raise ValueError(f"expected {DURATION_FORMS}, not {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        pass
    try:
        parsed = parse_duration(value)
    except ValueError:
        parsed = None
    if parsed is None or isinstance(parsed, str | int | float):
        shown = repr(value) if len(repr(value)) <= 64 else f"{repr(value)[:60]}..."
        raise ValueError(f"expected {DURATION_FORMS}, got {shown}")
    return float(parsed.total_seconds())


def seconds_setting(value: Any, key: str, default: float) -> float:
    """A duration setting (``duration_seconds``): finite, above zero, at most 7 days; unset →
    ``default``."""
    if value is None or value == "":
        return default
    try:
        number = duration_seconds(value)
    except ValueError as exc:
        raise SettingError(key, str(exc)) from None
    if not math.isfinite(number):
        raise SettingError(key, f"expected a finite number of seconds, got {value!r}")
    if number <= 0:
        raise SettingError(key, "must be greater than zero")
    if number > MAX_SETTING_SECONDS:
        raise SettingError(key, f"at most {MAX_SETTING_SECONDS:g} seconds (7 days)")
    return number


def flag_setting(value: Any, key: str) -> bool:
    """A true/false setting (false when unset); raises ``SettingError`` naming ``key``."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise SettingError(key, f"expected true or false, got {value!r}")


def path_setting(value: Any, key: str) -> str | None:
    """A path setting: text without NUL bytes; unset (or empty) → None."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or "\0" in value:
        raise SettingError(key, f"expected a path, got {value!r}")
    return value


def count_setting(value: Any, key: str, default: int, bounds: tuple[int, int]) -> int:
    """A whole number within ``bounds`` (inclusive); unset → ``default``."""
    low, high = bounds
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().lstrip("+").isdigit():
        number = int(value.strip())
    else:
        number = None
    if number is None:
        raise SettingError(key, f"expected a whole number from {low} to {high}, got {value!r}")
    if not low <= number <= high:
        raise SettingError(key, f"must be from {low} to {high}, got {number}")
    return number


@dataclass(frozen=True)
class Endpoint:
    """Where the Vertex AI API is: an explicit endpoint or ``{region}-aiplatform.googleapis.com``."""

    url: str | None = None

    def api_endpoint(self, region: str) -> str:
        return self.url.rstrip("/") if self.url else f"{region}-aiplatform.googleapis.com"

    @property
    def anonymous(self) -> bool:
        # Never send Application Default Credentials over plain HTTP: an http:// endpoint is
        # the local emulator (or a test double), which wants no credentials anyway.
        return bool(self.url) and str(self.url).startswith("http://")

    @property
    def target(self) -> Target:
        return target_for_endpoint(self.url)

    def scrub(self, text: str) -> str:
        """``text`` with this endpoint's credentials (if its URL has any) taken out."""
        if not self.url or "@" not in self.url:
            return text
        public = public_url(self.url)
        userinfo = self.url.split("://", 1)[-1].rsplit("@", 1)[0]
        return text.replace(self.url, public).replace(userinfo + "@", "")

    def console_url(self, job_name: str, project: str, region: str) -> str:
        """Where a person looks at the job (never with the endpoint's credentials)."""
        job_id = job_name.rsplit("/", 1)[-1]
        if self.url:
            return f"{public_url(self.url).rstrip('/')}/v1/{job_name}"
        return (
            f"https://console.cloud.google.com/vertex-ai/locations/{region}"
            f"/training/{job_id}/cpu?project={project}"
        )


def quota_setting(value: Any, key: str = QUOTA_KEY) -> str:
    """``training:quota`` (``gpu-training:quota``): ``error`` (unset), ``warn`` or ``off``."""
    if value is None or value == "":
        return "error"
    if value not in QUOTA_MODES:
        raise SettingError(key, f"{value!r} is not one of {', '.join(QUOTA_MODES)}")
    return str(value)


PROJECT_ENV = ("GOOGLE_PROJECT", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT")
"""Where pulumi-gcp reads the project when ``gcp:project`` is unset, in its order."""
REGION_ENV = ("GOOGLE_REGION", "GCLOUD_REGION", "CLOUDSDK_COMPUTE_REGION")
"""Where pulumi-gcp reads the region when ``gcp:region`` is unset, in its order."""


@dataclass(frozen=True)
class PlaceSources:
    """Where a door looks for a job's project and region, in order; an unset one's error
    names exactly these."""

    argument: str = "pass {key}="
    config: str = "gcp:{key}"
    spec: str | None = None
    """Then the job's spec (the dynamic door's ``project``/``region`` of a spec file)."""
    environment: bool = False
    """Then ``PROJECT_ENV``/``REGION_ENV``, as pulumi-gcp."""
    credentials: bool = False
    """Then the project of the Application Default Credentials (never for an http://
    endpoint: the emulator's stacks send no credentials)."""

    def reading(self, endpoint: Endpoint) -> PlaceSources:
        """These sources as they are read with ``endpoint``: an http:// one (the emulator)
        reads no credentials, so its errors do not offer them."""
        return replace(self, credentials=False) if endpoint.anonymous else self

    def unset_reason(self, key: str) -> str:
        """Why ``project`` or ``region`` is missing: ``is not set: pass project= or ...``."""
        where = [
            self.argument.format(key=key),
            f"set {self.config.format(key=key)} in the stack configuration",
        ]
        if self.spec is not None:
            where.append(self.spec.format(key=key))
        if self.environment:
            where.append(environment_text(key))
        if self.credentials and key == "project":
            where.append("use credentials that name a default project")
        return f"is not set: {', '.join(where[:-1])} or {where[-1]}"

    def from_environment(self, key: str, environ: Mapping[str, str]) -> tuple[str, str] | None:
        """(variable, value) of ``key`` (``project``, ``region``) in ``environ``: the first
        of ``PROJECT_ENV``/``REGION_ENV`` set, in pulumi-gcp's order; None when none is (or
        this door reads no environment). The one lookup every reader of a place shares."""
        if not self.environment:
            return None
        return next(((name, environ[name]) for name in _variables(key) if environ.get(name)), None)


def _variables(key: str) -> tuple[str, ...]:
    """The environment variables pulumi-gcp reads ``key`` (``project``, ``region``) from."""
    return PROJECT_ENV if key == "project" else REGION_ENV


def environment_text(key: str) -> str:
    """``set GOOGLE_REGION, GCLOUD_REGION or CLOUDSDK_COMPUTE_REGION in the environment``:
    how an unset ``key``'s error offers the environment."""
    names = _variables(key)
    return f"set {', '.join(names[:-1])} or {names[-1]} in the environment"


@dataclass(frozen=True)
class Door:
    """How a front door names the settings: its namespace (``training``, ``gpu-training``) and
    where its jobs' project and region come from."""

    namespace: str
    place: PlaceSources

    def key(self, key: str) -> str:
        """``training:endpoint`` (the dynamic door's key) as this door names it."""
        return f"{self.namespace}:{key.split(':', 1)[-1]}"


DYNAMIC_DOOR = Door("training", PlaceSources(spec="set {key} in the job's spec", environment=True))
"""The dynamic resources: ``training:*``; a job's project and region from its arguments, then
``gcp:project``/``gcp:region``, the spec's own (``components.dynamic._job_resource``) and the
environment pulumi-gcp reads."""
PLUGIN_DOOR = Door(
    "gpu-training",
    PlaceSources(
        "set the {key} property", "gpu-training:{key}", environment=True, credentials=True
    ),
)
"""The provider plugin: ``gpu-training:*``; a job's project and region from its properties,
then the provider's configuration, the environment pulumi-gcp reads and the credentials."""


def read_place(
    door: Door,
    get: Callable[[str], Any],
    endpoint: Endpoint,
    environ: Mapping[str, str] | None = None,
    default_project: Callable[[], str | None] | None = None,
) -> tuple[str | None, str | None]:
    """The default project and region of ``door``'s jobs (None where no source sets one):
    ``get(door's config key)``, then (as ``door.place`` says) the environment, then
    ``default_project()`` (the credentials', ``credentials_project``). Raises ``SettingError``
    for a configured value that is not text.

    A door whose jobs' specs carry a place (``door.place.spec``: the dynamic door) reads the
    spec between the two itself (``components.dynamic._job_resource``), with the same
    ``PlaceSources.from_environment``."""
    environ = os.environ if environ is None else environ
    place = door.place.reading(endpoint)
    found: list[str | None] = []
    for key in ("project", "region"):
        full = place.config.format(key=key)
        value = get(full)
        if value is not None and not isinstance(value, str):
            raise SettingError(full, "must be a string")
        if not value and (variable := place.from_environment(key, environ)) is not None:
            value = variable[1]
        found.append(value or None)
    project, region = found
    if project is None and place.credentials:
        project = (default_project or credentials_project)()
    return project, region


def credentials_project() -> str | None:
    """The project of the Application Default Credentials, or None (none found)."""
    try:
        import google.auth
        from google.auth.exceptions import GoogleAuthError

        _, project = google.auth.default()
    except (ImportError, GoogleAuthError, OSError, ValueError):
        return None
    return project or None


@dataclass(frozen=True)
class ProviderSettings:
    """Everything the provider reads from the stack configuration."""

    endpoint: Endpoint = field(default_factory=Endpoint)
    cancel_timeout: float = DEFAULT_CANCEL_TIMEOUT
    retry_deadline: float = DEFAULT_RETRY_DEADLINE
    max_concurrent_operations: int = DEFAULT_MAX_CONCURRENT_OPERATIONS
    catalog_overlay: str | None = None
    """``training:catalogOverlay`` as written (relative to the project directory)."""
    delete_records: bool = False
    """``training:deleteRecords``: a delete removes every job's record (kept by default)."""
    continue_last_run: bool = False
    """``training:continueLastRun``: every new run writes into its last run's directory."""
    quota: str = "error"
    """``training:quota``: a quota shortfall at preview fails it (error), warns, or is not
    looked for (off)."""
    live_prices: bool = True
    """``training:livePrices`` (``gpu-training:livePrices``): prices from Vertex's live billing
    SKUs where readable (``components.core._billing_cli.priced_from``); false: the snapshot."""
    door: Door = DYNAMIC_DOOR
    """Which front door read these: its key names and where its jobs' place comes from."""

    @property
    def place(self) -> PlaceSources:
        """Where this door's jobs' project and region come from with these settings' endpoint
        (``PlaceSources.reading``): what an unset one's error names."""
        return self.door.place.reading(self.endpoint)

    @classmethod
    def read(cls, get: Callable[[str], Any], door: Door = DYNAMIC_DOOR) -> ProviderSettings:
        """Settings from ``get(full key)``, each key as ``door`` names it (``training:endpoint``,
        ``gpu-training:endpoint``); raises ``SettingError`` naming the bad key.

        With ``training:emulatorStateDir``, the endpoint is that emulator's, wherever it runs
        now (``training:endpoint`` is checked, then not used).
        """
        key = door.key
        endpoint = parse_endpoint(get(key(ENDPOINT_KEY)), key(ENDPOINT_KEY))
        state_dir = get(key(EMULATOR_STATE_DIR_KEY))
        if state_dir is not None:
            endpoint = emulator_endpoint(state_dir, key(EMULATOR_STATE_DIR_KEY))
        cancel, retry = key(CANCEL_TIMEOUT_KEY), key(RETRY_DEADLINE_KEY)
        concurrent, overlay = key(MAX_CONCURRENT_OPERATIONS_KEY), key(CATALOG_OVERLAY_KEY)
        deletes, continues = key(DELETE_RECORDS_KEY), key(CONTINUE_LAST_RUN_KEY)
        live = key(LIVE_PRICES_KEY)
        return cls(
            endpoint=Endpoint(endpoint),
            cancel_timeout=seconds_setting(get(cancel), cancel, DEFAULT_CANCEL_TIMEOUT),
            retry_deadline=seconds_setting(get(retry), retry, DEFAULT_RETRY_DEADLINE),
            max_concurrent_operations=count_setting(
                get(concurrent),
                concurrent,
                DEFAULT_MAX_CONCURRENT_OPERATIONS,
                CONCURRENT_OPERATIONS_RANGE,
            ),
            catalog_overlay=path_setting(get(overlay), overlay),
            delete_records=flag_setting(get(deletes), deletes),
            continue_last_run=flag_setting(get(continues), continues),
            quota=quota_setting(get(key(QUOTA_KEY)), key(QUOTA_KEY)),
            live_prices=get(live) is None or flag_setting(get(live), live),
            door=door,
        )
