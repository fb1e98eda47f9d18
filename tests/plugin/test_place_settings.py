"""One settings reader for both doors (``components.lifecycle._settings``): the plugin's jobs'
project and region from its configuration, then the environment pulumi-gcp reads, then the
credentials' project (never for an http:// endpoint); an unset one's error names the sources
that door read (the credentials only where they are read); the quota mode parsed in one
place."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi.provider.experimental.provider import CheckRequest, ConfigureRequest

from components.lifecycle._settings import (
    DYNAMIC_DOOR,
    PLUGIN_DOOR,
    Endpoint,
    ProviderSettings,
    SettingError,
    quota_setting,
    read_place,
)
from components.plugin._provider import GpuTrainingProvider
from components.plugin._values import wrap_map
from tests.e2e._plugin import training_job
from tests.plugin.conftest import run_isolated

URN = "urn:pulumi:dev::proj::gpu-training:vertex:TrainingJob::train"
GOOGLE = Endpoint()
EMULATOR = Endpoint("http://127.0.0.1:1")


def _place(
    config: dict[str, Any],
    environ: dict[str, str],
    endpoint: Endpoint = GOOGLE,
    credentials: str | None = None,
) -> tuple[str | None, str | None]:
    return read_place(PLUGIN_DOOR, config.get, endpoint, environ, lambda: credentials)


def test_configuration_then_environment_in_pulumi_gcps_order_then_credentials() -> None:
    env = {"GCLOUD_PROJECT": "third", "GOOGLE_CLOUD_PROJECT": "second", "GCLOUD_REGION": "r2"}
    assert _place({"gpu-training:project": "cfg", "gpu-training:region": "r"}, env) == ("cfg", "r")
    assert _place({}, env) == ("second", "r2")
    assert _place({}, {**env, "GOOGLE_PROJECT": "first", "GOOGLE_REGION": "r1"}) == ("first", "r1")
    assert _place({}, {"CLOUDSDK_CORE_PROJECT": "", "CLOUDSDK_COMPUTE_REGION": "r3"}) == (
        None,
        "r3",
    )
    assert _place({}, {}, credentials="adc") == ("adc", None)


def test_the_credentials_are_never_asked_for_an_http_endpoint_or_once_a_project_is_set() -> None:
    def never() -> str | None:
        raise AssertionError("the credentials were read")

    nothing: dict[str, Any] = {}
    assert read_place(PLUGIN_DOOR, nothing.get, EMULATOR, {}, never) == (None, None)
    assert read_place(PLUGIN_DOOR, nothing.get, GOOGLE, {"GOOGLE_PROJECT": "p"}, never)[0] == "p"
    # The dynamic door reads gcp:project, then the same environment; never the credentials.
    gcp = {"gcp:project": "g", "gpu-training:project": "x"}
    assert read_place(DYNAMIC_DOOR, gcp.get, GOOGLE, {"GOOGLE_REGION": "r"}, never) == ("g", "r")
    assert read_place(DYNAMIC_DOOR, nothing.get, GOOGLE, {}, never) == (None, None)


def test_a_configured_project_that_is_not_text_names_the_plugins_key() -> None:
    with pytest.raises(SettingError, match=r"^gpu-training:project: must be a string"):
        read_place(PLUGIN_DOOR, {"gpu-training:project": 3}.get, GOOGLE, {})


def test_an_unset_project_or_region_names_the_sources_each_door_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("GOOGLE_PROJECT", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    for name in ("CLOUDSDK_CORE_PROJECT", "GOOGLE_REGION", "GCLOUD_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("CLOUDSDK_COMPUTE_REGION", raising=False)
    provider = GpuTrainingProvider()
    config = {"endpoint": "http://127.0.0.1:1"}  # no credentials read for the emulator
    run_isolated(provider.configure(ConfigureRequest({}, wrap_map(config), True, True)))
    response = run_isolated(provider.check(CheckRequest(URN, {}, wrap_map(training_job()), b"")))
    failures = {f.property: f.reason for f in response.failures or []}
    # The emulator's endpoint is http://: no credentials were read, none are offered.
    assert failures == {
        "project": "is not set: set the project property, set gpu-training:project in the "
        "stack configuration or set GOOGLE_PROJECT, GOOGLE_CLOUD_PROJECT, GCLOUD_PROJECT or "
        "CLOUDSDK_CORE_PROJECT in the environment",
        "region": "is not set: set the region property, set gpu-training:region in the stack "
        "configuration or set GOOGLE_REGION, GCLOUD_REGION or CLOUDSDK_COMPUTE_REGION in the "
        "environment",
    }
    assert DYNAMIC_DOOR.place.unset_reason("project") == (
        "is not set: pass project=, set gcp:project in the stack configuration, set project "
        "in the job's spec or set GOOGLE_PROJECT, GOOGLE_CLOUD_PROJECT, GCLOUD_PROJECT or "
        "CLOUDSDK_CORE_PROJECT in the environment"
    )


def test_the_credentials_are_offered_only_where_they_are_read() -> None:
    credentials = "or use credentials that name a default project"
    assert PLUGIN_DOOR.place.reading(GOOGLE).unset_reason("project").endswith(credentials)
    assert credentials not in PLUGIN_DOOR.place.reading(EMULATOR).unset_reason("project")
    assert "credentials" not in PLUGIN_DOOR.place.reading(GOOGLE).unset_reason("region")
    unset: dict[str, Any] = {}
    google = ProviderSettings.read(unset.get, PLUGIN_DOOR)
    emulator = ProviderSettings.read(
        {"gpu-training:endpoint": "http://127.0.0.1:1"}.get, PLUGIN_DOOR
    )
    assert google.place.credentials and not emulator.place.credentials
    # An https:// endpoint is not the emulator: the credentials are read and offered.
    remote = ProviderSettings.read(
        {"gpu-training:endpoint": "https://vertex.example"}.get, PLUGIN_DOOR
    )
    assert remote.place.unset_reason("project").endswith(credentials)


def test_the_quota_mode_is_parsed_once_for_every_door() -> None:
    assert quota_setting(None) == "error" and quota_setting("warn") == "warn"
    with pytest.raises(SettingError, match=r"^training:quota: 'loud' is not one of error, warn"):
        ProviderSettings.read({"training:quota": "loud"}.get)
    plugin = {"gpu-training:quota": "loud"}
    with pytest.raises(SettingError, match=r"^gpu-training:quota: 'loud' is not one of"):
        ProviderSettings.read(plugin.get, PLUGIN_DOOR)
    assert ProviderSettings.read({"gpu-training:quota": "off"}.get, PLUGIN_DOOR).quota == "off"
