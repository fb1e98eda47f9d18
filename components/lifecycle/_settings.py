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
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .._errors import TrainingJobError
from ..rules._validation import Target

__all__ = [
    "CATALOG_OVERLAY_KEY",
    "CONTINUE_LAST_RUN_KEY",
    "DEFAULT_CANCEL_TIMEOUT",
    "DEFAULT_MAX_CONCURRENT_OPERATIONS",
    "DEFAULT_RETRY_DEADLINE",
    "DELETE_RECORDS_KEY",
    "EMULATOR_STATE_DIR_KEY",
    "ENDPOINT_KEY",
    "Endpoint",
    "ProviderSettings",
    "SettingError",
    "count_setting",
    "duration_seconds",
    "emulator_endpoint",
    "emulator_health",
    "flag_setting",
    "parse_endpoint",
    "path_setting",
    "public_url",
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
    """A stack setting is malformed; the message names the key."""


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


def parse_endpoint(value: Any) -> str | None:
    """``training:endpoint`` checked: None (Vertex AI) or ``http(s)://HOST[:PORT]``.

    Raises ``SettingError`` naming the key; the message never shows credentials.
    """
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise SettingError(f"{ENDPOINT_KEY}: expected a URL like http://127.0.0.1:8642")
    shown = public_url(value)
    if not value.startswith(("http://", "https://")):
        raise SettingError(f"{ENDPOINT_KEY}: expected http(s)://HOST:PORT, got {shown!r}")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise SettingError(f"{ENDPOINT_KEY}: {shown!r} is not a valid URL ({exc})") from None
    if not parts.hostname:
        raise SettingError(f"{ENDPOINT_KEY}: {shown!r} names no host")
    if port == 0:
        raise SettingError(f"{ENDPOINT_KEY}: port 0 in {shown!r} is not a port to connect to")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise SettingError(
            f"{ENDPOINT_KEY}: {shown!r} has a path, query or fragment; give only http(s)://HOST:PORT"
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


def emulator_endpoint(value: Any) -> str:
    """``training:emulatorStateDir`` → the endpoint of the emulator running with that state
    dir (relative: to the working directory, the project's). Raises ``SettingError`` when
    none runs: a stack that names its emulator never talks to another one in its place."""
    if not isinstance(value, str) or not value or "\0" in value:
        raise SettingError(f"{EMULATOR_STATE_DIR_KEY}: expected a directory, got {value!r}")
    state_dir = Path(value).absolute()
    endpoint = running_emulator(state_dir)
    if endpoint is None:
        raise SettingError(
            f"{EMULATOR_STATE_DIR_KEY}: no emulator runs with its state in {state_dir} (start "
            "it: scripts/local-stack emulator, or make up); the stack's training:endpoint is "
            "not used in its place"
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
        raise SettingError(f"{key}: {exc}") from None
    if not math.isfinite(number):
        raise SettingError(f"{key}: expected a finite number of seconds, got {value!r}")
    if number <= 0:
        raise SettingError(f"{key}: must be greater than zero")
    if number > MAX_SETTING_SECONDS:
        raise SettingError(f"{key}: at most {MAX_SETTING_SECONDS:g} seconds (7 days)")
    return number


def flag_setting(value: Any, key: str) -> bool:
    """A true/false setting (false when unset); raises ``SettingError`` naming ``key``."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise SettingError(f"{key}: expected true or false, got {value!r}")


def path_setting(value: Any, key: str) -> str | None:
    """A path setting: text without NUL bytes; unset (or empty) → None."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or "\0" in value:
        raise SettingError(f"{key}: expected a path, got {value!r}")
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
        raise SettingError(f"{key}: expected a whole number from {low} to {high}, got {value!r}")
    if not low <= number <= high:
        raise SettingError(f"{key}: must be from {low} to {high}, got {number}")
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

    @classmethod
    def read(cls, get: Callable[[str], Any]) -> ProviderSettings:
        """Settings from ``get(full key)``; raises ``SettingError`` naming the bad key.

        With ``training:emulatorStateDir``, the endpoint is that emulator's, wherever it runs
        now (``training:endpoint`` is checked, then not used).
        """
        endpoint = parse_endpoint(get(ENDPOINT_KEY))
        state_dir = get(EMULATOR_STATE_DIR_KEY)
        if state_dir is not None:
            endpoint = emulator_endpoint(state_dir)
        return cls(
            endpoint=Endpoint(endpoint),
            cancel_timeout=seconds_setting(
                get(CANCEL_TIMEOUT_KEY), CANCEL_TIMEOUT_KEY, DEFAULT_CANCEL_TIMEOUT
            ),
            retry_deadline=seconds_setting(
                get(RETRY_DEADLINE_KEY), RETRY_DEADLINE_KEY, DEFAULT_RETRY_DEADLINE
            ),
            max_concurrent_operations=count_setting(
                get(MAX_CONCURRENT_OPERATIONS_KEY),
                MAX_CONCURRENT_OPERATIONS_KEY,
                DEFAULT_MAX_CONCURRENT_OPERATIONS,
                CONCURRENT_OPERATIONS_RANGE,
            ),
            catalog_overlay=path_setting(get(CATALOG_OVERLAY_KEY), CATALOG_OVERLAY_KEY),
            delete_records=flag_setting(get(DELETE_RECORDS_KEY), DELETE_RECORDS_KEY),
            continue_last_run=flag_setting(get(CONTINUE_LAST_RUN_KEY), CONTINUE_LAST_RUN_KEY),
        )
