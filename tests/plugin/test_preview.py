"""The plugin's preview: the dynamic door's notes said on the resource (cost, quota table and
fit, placement plan, validator warnings), the outputs a create's preview already knows, and the
per-process reads (billed catalog, quota limits) made once, against the simulate-mode emulator."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pulumi.provider.experimental.property_value import PropertyValue
from pulumi.provider.experimental.provider import (
    CheckRequest,
    ConfigureRequest,
    CreateRequest,
    UpdateRequest,
)

from components.core._preview import PreviewSettings, cost_message, preview_catalog
from components.costs._pricing import cost_outputs
from components.lifecycle._settings import PLUGIN_DOOR
from components.lifecycle._wire import UNKNOWN
from components.plugin import _notes
from components.plugin._log import EngineLog
from components.plugin._notes import PreviewNotes
from components.plugin._provider import GpuTrainingProvider
from components.plugin._values import wrap_map
from components.rules._spec import JobSpec
from components.vertex import quotas
from emulator.testing import EmulatorProcess, running_emulator
from tests.e2e._plugin import training_job
from tests.plugin.conftest import run_isolated

URN = "urn:pulumi:dev::proj::gpu-training:vertex:TrainingJob::train"
PROJECT, REGION = "local-training", "us-central1"
T4_LIMIT = "custom_model_training_nvidia_t4_gpus@us-central1=1"


class RecordingLog(EngineLog):
    """The engine's Log service as a list of (severity, message, urn)."""

    def __init__(self) -> None:
        super().__init__("")
        self.sent: list[tuple[str, str, str]] = []

    def _send(self, severity: str, message: str, urn: str) -> None:
        self.sent.append((severity, message, urn))


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorProcess]:
    with running_emulator("--mode", "simulate", "--quota", T4_LIMIT) as server:
        yield server


def _provider(endpoint: str, **config: Any) -> tuple[GpuTrainingProvider, RecordingLog]:
    provider = GpuTrainingProvider()
    log = RecordingLog()
    provider._log = log  # what the engine would show
    provider._notes = PreviewNotes(log)
    settings = {"project": PROJECT, "region": REGION, "endpoint": endpoint, **config}
    configured = run_isolated(
        provider.configure(ConfigureRequest({}, wrap_map(settings), True, True))
    )
    assert configured.supports_preview  # the engine asks create/update at preview
    return provider, log


def _check(provider: GpuTrainingProvider, props: dict[str, Any], urn: str = URN) -> list[str]:
    result = run_isolated(provider.check(CheckRequest(urn, {}, wrap_map(props), b"")))
    return [f"{f.property}: {f.reason}" for f in result.failures or []]


def _said(log: RecordingLog, severity: str, urn: str = URN) -> list[str]:
    return [message for kind, message, on in log.sent if kind == severity and on == urn]


def _expected_cost_line(endpoint: str, props: dict[str, Any]) -> str:
    """The dynamic door's cost message for the same job, made here from its parts."""
    settings = PreviewSettings(PROJECT, REGION, endpoint, root=None, door=PLUGIN_DOOR)
    spec = JobSpec.parse({"displayName": "train", **props["jobSpec"], "labels": props["labels"]})
    return cost_message([("train", spec)], settings, preview_catalog(settings, lambda *_: None))


def test_check_says_the_jobs_cost_and_quota_fit_on_the_resource(emu: EmulatorProcess) -> None:
    provider, log = _provider(emu.endpoint)
    job = training_job(count=1)
    assert _check(provider, job) == []
    infos = _said(log, "info")
    costs = [m for m in infos if m.startswith("estimated cost per job:\n  train: $")]
    assert costs == [_expected_cost_line(emu.endpoint, job)]
    assert "at most $" in costs[0]  # the ceiling for the job's 10 min timeout, as a bound
    [table] = [m for m in infos if m.startswith("quota (project ")]
    assert table.splitlines()[0] == f"quota (project {PROJECT}, {REGION}; Cloud Quotas API):"
    assert "train: " in table and "need 1, limit 1: fits" in table
    assert _said(log, "warning") == []


def test_a_shortfall_fails_the_check_under_error_and_is_a_warning_under_warn(
    emu: EmulatorProcess,
) -> None:
    provider, log = _provider(emu.endpoint)
    [failure] = _check(provider, training_job(count=2))
    assert failure.startswith("jobSpec.workerPoolSpecs: quota aiplatform.googleapis.com/")
    assert "the job needs 2 at once, the project's limit is 1" in failure
    assert failure.endswith("(gpu-training:quota: warn makes this a warning)")
    assert any("need 2, limit 1: SHORT" in m for m in _said(log, "info"))

    warned, log = _provider(emu.endpoint, quota="warn")
    assert _check(warned, training_job(count=2)) == []
    [warning] = _said(log, "warning")
    assert "the job needs 2 at once, the project's limit is 1" in warning


def test_a_placed_job_says_its_placement_plan(emu: EmulatorProcess) -> None:
    provider, log = _provider(emu.endpoint)
    assert _check(provider, {**training_job(), "regions": [REGION, "us-east4"]}) == []
    [plan] = [m for m in _said(log, "info") if m.startswith("placement of train: ")]
    assert plan.splitlines()[0].startswith("placement of train: tries us-central1 first")
    assert "then us-east4: quota" in plan


def test_a_validator_warning_is_said_on_the_users_path(emu: EmulatorProcess) -> None:
    provider, log = _provider(emu.endpoint)
    job = training_job()
    container = job["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]
    container["command"] = ["python train.py"]  # one word with a blank: no shell splits it
    assert _check(provider, job) == []
    [warning] = _said(log, "warning")
    path = "jobSpec.workerPoolSpecs[0].containerSpec.command[0]"
    assert warning.startswith(f"{path}: 'python train.py' is one argument: Vertex AI runs no shell")


def _preview_create(provider: GpuTrainingProvider, props: dict[str, Any]) -> dict[str, Any]:
    request = CreateRequest(URN, wrap_map(props), 60.0, True)
    response = run_isolated(provider.create(request))
    assert response.resource_id == ""
    PropertyValue.marshal_map(response.properties)  # what the SDK's server sends must marshal
    return dict(response.properties or {})


def test_the_preview_of_a_create_returns_the_price_and_leaves_the_rest_unknown(
    emu: EmulatorProcess,
) -> None:
    provider, _ = _provider(emu.endpoint, quota="off")
    job = training_job()
    state = _preview_create(provider, job)
    document = {"displayName": "train", **job["jobSpec"], "labels": job["labels"]}
    expected = cost_outputs(document, REGION)  # as the create records it
    assert expected["hourly_cost_usd"] is not None and expected["max_cost_usd"] is not None
    assert state["hourlyCostUsd"].value == pytest.approx(expected["hourly_cost_usd"])
    assert state["maxCostUsd"].value == pytest.approx(expected["max_cost_usd"])
    assert state["region"].value == REGION and state["project"].value == PROJECT
    for unknown in ("name", "state", "jobId", "createTime", "placedRegion"):
        assert state[unknown].value == UNKNOWN, unknown
    assert (
        list(emu.client().list_custom_jobs(parent=f"projects/{PROJECT}/locations/{REGION}")) == []
    )


def test_the_preview_of_a_placed_create_knows_the_region_only_with_one_candidate(
    emu: EmulatorProcess,
) -> None:
    provider, _ = _provider(emu.endpoint, quota="off")
    one = _preview_create(provider, {**training_job(), "regions": ["us-east4"]})
    assert one["placedRegion"].value == "us-east4"
    assert one["placedCapacity"].value == "as in the spec"
    assert isinstance(one["hourlyCostUsd"].value, float)
    two = _preview_create(provider, {**training_job(), "regions": [REGION, "us-east4"]})
    for unknown in ("placedRegion", "placedCapacity"):
        assert two[unknown].value == UNKNOWN, unknown


def test_the_preview_of_a_create_with_several_candidates_gives_the_spread_of_their_prices(
    emu: EmulatorProcess,
) -> None:
    provider, _ = _provider(emu.endpoint, quota="off", livePrices=False)
    job = _h100_job()  # priced apart in the two regions (the snapshot's prices)
    regions = ["us-central1", "europe-west4"]
    state = _preview_create(provider, {**job, "regions": regions})
    priced = [cost_outputs(_document(job), region) for region in regions]
    hourly = sorted(p["hourly_cost_usd"] for p in priced)
    assert hourly[0] < hourly[1]  # else this test shows nothing
    # Where it lands is the create's to find: the price is a range, never shown as one price.
    assert state["costBasis"].value == "range"
    assert state["hourlyCostLowUsd"].value == pytest.approx(hourly[0])
    assert state["hourlyCostHighUsd"].value == pytest.approx(hourly[1])
    assert state["hourlyCostUsd"].value == pytest.approx(hourly[1])  # the most it can cost
    ceilings = sorted(p["max_cost_usd"] for p in priced)
    assert state["maxCostLowUsd"].value == pytest.approx(ceilings[0])
    assert state["maxCostHighUsd"].value == pytest.approx(ceilings[1])


def test_the_billed_catalog_and_the_quotas_are_read_once_per_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = {"catalog": 0, "quota": 0}
    real_catalog = preview_catalog

    def catalog(settings: PreviewSettings, say: Any) -> Any:
        calls["catalog"] += 1
        return real_catalog(settings, say)

    def unavailable(*_: Any, **__: Any) -> Any:
        calls["quota"] += 1
        raise quotas.QuotaUnavailable("the Vertex training quotas could not be read: down")

    monkeypatch.setattr(_notes, "preview_catalog", catalog)
    monkeypatch.setattr(quotas, "read_limits", unavailable)
    provider, log = _provider("http://127.0.0.1:9")
    for index in range(3):
        assert _check(provider, training_job(), urn=f"{URN}{index}") == []
    assert calls == {"catalog": 1, "quota": 1}
    for index in range(3):  # each job still says why its quotas were not checked
        [warning] = _said(log, "warning", f"{URN}{index}")
        assert warning.endswith(
            "the job's quotas were not checked (gpu-training:quota: off skips this)"
        )


def _h100_job() -> dict[str, Any]:
    """Eight H100s on a3-highgpu-8g in us-central1: the catalog's snapshot (a 2026-10 reading
    of Vertex's pricing page) and the billing SKUs the emulator serves disagree on its price."""
    job = training_job("a3-highgpu-8g", count=8)
    job["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorType"] = "NVIDIA_H100_80GB"
    return {**job, "waitFor": "submitted"}


def _document(job: dict[str, Any]) -> dict[str, Any]:
    return {"displayName": "train", **job["jobSpec"], "labels": job["labels"]}


def test_the_note_the_preview_and_the_create_give_one_job_one_price(
    emu: EmulatorProcess,
) -> None:
    # The rule the CLI and the dynamic door's preview use (priced_from): the billing SKUs the
    # endpoint serves over the snapshot. The create once priced from the snapshot alone.
    provider, log = _provider(emu.endpoint, quota="off")
    job = _h100_job()
    settings = PreviewSettings(PROJECT, REGION, emu.endpoint, root=None, door=PLUGIN_DOOR)
    live = cost_outputs(_document(job), REGION, preview_catalog(settings, lambda *_: None))
    snapshot = cost_outputs(_document(job), REGION)
    assert live["cost_basis"] == "price" and live["hourly_cost_usd"] is not None
    assert live["hourly_cost_usd"] != pytest.approx(snapshot["hourly_cost_usd"])
    assert _check(provider, job) == []
    [note] = [m for m in _said(log, "info") if m.startswith("estimated cost per job:")]
    assert f"train: ${live['hourly_cost_usd']:,.2f}/h on-demand" in note
    assert any(
        m.startswith("prices: ") and "Cloud Billing Catalog API" in m for _, m, _ in log.sent
    )
    planned = _preview_create(provider, job)
    created = run_isolated(provider.create(CreateRequest(URN, wrap_map(job), 60.0, False)))
    state = dict(created.properties or {})
    assert f"/locations/{REGION}/customJobs/" in str(created.resource_id)
    for outputs in (planned, state):
        assert outputs["hourlyCostUsd"].value == pytest.approx(live["hourly_cost_usd"])
        assert outputs["maxCostUsd"].value == pytest.approx(live["max_cost_usd"])
        assert outputs["costBasis"].value == "price"
        assert outputs["hourlyCostHighUsd"].value == pytest.approx(live["hourly_cost_usd"])


def test_live_prices_false_prices_the_note_preview_and_outputs_from_the_snapshot(
    emu: EmulatorProcess,
) -> None:
    provider, log = _provider(emu.endpoint, quota="off", livePrices=False)
    job = _h100_job()
    snapshot = cost_outputs(_document(job), REGION)
    assert _check(provider, job) == []
    [note] = [m for m in _said(log, "info") if m.startswith("estimated cost per job:")]
    assert f"train: ${snapshot['hourly_cost_usd']:,.2f}/h on-demand" in note
    assert not any("Cloud Billing Catalog API" in message for _, message, _ in log.sent)
    planned = _preview_create(provider, job)
    assert planned["hourlyCostUsd"].value == pytest.approx(snapshot["hourly_cost_usd"])


def test_a_bad_live_prices_setting_names_the_plugins_key() -> None:
    from components.lifecycle._settings import ProviderSettings, SettingError

    def read(value: str | None) -> ProviderSettings:
        given = {} if value is None else {"gpu-training:livePrices": value}
        return ProviderSettings.read(lambda key: given.get(key), PLUGIN_DOOR)

    with pytest.raises(SettingError, match=r"^gpu-training:livePrices: expected true or false"):
        read("yes")
    assert not read("false").live_prices
    assert read(None).live_prices and read("true").live_prices


def test_an_update_of_a_knob_and_its_preview_keep_the_job_and_its_status(
    emu: EmulatorProcess,
) -> None:
    # A knob changes in place (no API call): the preview of the update is the update itself,
    # the same job, its price and state as the create recorded them, the new knob's value.
    provider, _ = _provider(emu.endpoint, quota="off", livePrices=False)
    job = {**training_job(), "waitFor": "submitted"}
    created = run_isolated(provider.create(CreateRequest(URN, wrap_map(job), 60.0, False)))
    olds = dict(created.properties or {})
    parent = f"projects/{PROJECT}/locations/{REGION}"
    before = list(emu.client().list_custom_jobs(parent=parent))
    news = wrap_map({**job, "keepRecordOnDelete": True, "waitTimeout": "2h"})
    for preview in (True, False):
        request = UpdateRequest(URN, str(created.resource_id), olds, news, 60.0, [], preview)
        updated = dict(run_isolated(provider.update(request)).properties or {})
        PropertyValue.marshal_map(updated)
        assert updated["keepRecordOnDelete"].value is True
        assert updated["waitTimeout"].value == "2h"
        for kept in ("name", "jobId", "hourlyCostUsd", "maxCostUsd", "costBasis", "state"):
            assert updated[kept].value == olds[kept].value, kept
        assert updated["hourlyCostUsd"].value != UNKNOWN
    after = list(emu.client().list_custom_jobs(parent=parent))
    assert [j.name for j in after] == [j.name for j in before]  # nothing submitted
    assert [j.state for j in after] == [j.state for j in before]  # nothing cancelled
