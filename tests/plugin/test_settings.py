"""The plugin's provider configuration beyond the API's: ``quota`` applied at check, and the
core settings the dynamic stacks have (``catalogOverlay``, ``deleteRecords``,
``emulatorStateDir``), against the simulate-mode emulator where they reach the API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pulumi.provider.experimental.provider import (
    CheckRequest,
    ConfigureRequest,
    CreateRequest,
    DeleteRequest,
)

from components._files import READ_ROOTS_ENV
from components.lifecycle._adoption import instance_of
from components.lifecycle._settings import SettingError
from components.plugin._provider import GpuTrainingProvider
from components.plugin._values import wrap_map
from emulator.testing import EmulatorProcess, running_emulator
from tests.e2e._plugin import IMAGE, training_job
from tests.plugin.conftest import run_isolated
from tests.spec.catalog_fixtures import packaged_catalog  # noqa: F401 (a fixture)

URN = "urn:pulumi:dev::proj::gpu-training:vertex:TrainingJob::train"
PROVIDER_URN = "urn:pulumi:dev::proj::pulumi:providers:gpu-training::default"
T4_LIMIT = "custom_model_training_nvidia_t4_gpus@us-central1=1"
MACHINES = (
    "machine_type,family,vcpus,memory_gb,fixed_accelerator_type,fixed_accelerator_count,source"
)


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorProcess]:
    with running_emulator("--mode", "simulate", "--quota", T4_LIMIT) as server:
        yield server


def _provider(**config: Any) -> GpuTrainingProvider:
    provider = GpuTrainingProvider()
    settings = {"project": "local-training", "region": "us-central1", **config}
    run_isolated(provider.configure(ConfigureRequest({}, wrap_map(settings), True, True)))
    return provider


def _failures(provider: GpuTrainingProvider, props: dict[str, Any]) -> list[tuple[str, str]]:
    result = run_isolated(provider.check(CheckRequest(URN, {}, wrap_map(props), b"")))
    return [(f.property, f.reason) for f in result.failures or []]


def _config_failures(**config: Any) -> list[tuple[str, str]]:
    request = CheckRequest(PROVIDER_URN, {}, wrap_map(config), b"")
    # A stack whose checkpoint holds no earlier provider: nothing to succeed.
    provider = GpuTrainingProvider(read_state=lambda urn, show_secrets=False: [])
    result = run_isolated(provider.check_config(request))
    return [(f.property, f.reason) for f in result.failures or []]


# -- quota -------------------------------------------------------------------------------------


def test_a_job_over_the_projects_quota_fails_its_check_on_its_pools(emu: EmulatorProcess) -> None:
    failures = _failures(_provider(endpoint=emu.endpoint), training_job(count=2))
    assert [path for path, _ in failures] == ["jobSpec.workerPoolSpecs"]
    reason = failures[0][1]
    assert "quota aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus" in reason
    assert "the job needs 2 at once, the project's limit is 1" in reason
    assert "gpu-training:quota: warn makes this a warning" in reason
    assert _failures(_provider(endpoint=emu.endpoint), training_job(count=1)) == []


def test_quota_warn_is_a_warning_and_off_reads_nothing(
    emu: EmulatorProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    job = training_job(count=2)
    assert _failures(_provider(endpoint=emu.endpoint, quota="warn"), job) == []
    assert "the job needs 2 at once, the project's limit is 1" in capsys.readouterr().err
    # off: not checked, so an endpoint where nothing listens says nothing of quotas (the
    # cost note stays: the catalog's snapshot prices the job).
    assert _failures(_provider(endpoint="http://127.0.0.1:9", quota="off"), job) == []
    said = capsys.readouterr().err
    assert "quota" not in said and "estimated cost per job:\n  train: $" in said


# -- core settings -----------------------------------------------------------------------------


def test_the_core_settings_are_checked_naming_the_plugin_key() -> None:
    assert _config_failures(deleteRecords=True, catalogOverlay="stacks/catalog") == []
    assert _config_failures(deleteRecords="maybe") == [
        ("deleteRecords", "expected true or false, got 'maybe'")
    ]
    [(key, reason)] = _config_failures(emulatorStateDir="/nonexistent/emulator")
    assert key == "emulatorStateDir" and "no emulator runs with its state in" in reason


@pytest.mark.usefixtures("packaged_catalog")
def test_check_uses_the_catalog_overlay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(READ_ROOTS_ENV, str(tmp_path))  # outside the project: allowed by name
    overlay = tmp_path / "catalog"
    overlay.mkdir()
    (overlay / "machine_types.csv").write_text(
        f"{MACHINES}\nn9-standard-8,n9,8,32,,,src (2026-12)\n"
    )
    job = training_job()
    pool = job["jobSpec"]["workerPoolSpecs"][0]
    pool["machineSpec"] = {"machineType": "n9-standard-8"}
    pool["containerSpec"]["imageUri"] = IMAGE
    machine = "jobSpec.workerPoolSpecs[0].machineSpec.machineType"
    assert machine in [path for path, _ in _failures(_provider(quota="off"), job)]
    overlaid = _provider(quota="off", catalogOverlay=str(overlay))
    assert _failures(overlaid, job) == []


def test_delete_records_deletes_the_jobs_record(emu: EmulatorProcess) -> None:
    client = emu.client()
    for setting, kept in ((False, True), (True, False)):
        provider = _provider(endpoint=emu.endpoint, deleteRecords=setting, cancelTimeout="30")
        props = wrap_map({**training_job(), "waitFor": "submitted"})
        created = run_isolated(provider.create(CreateRequest(URN, props, 0, False)))
        job = str(created.resource_id)
        run_isolated(provider.delete(DeleteRequest(URN, job, created.properties, 0)))
        names = [j.name for j in client.list_custom_jobs(parent=job.rsplit("/customJobs/", 1)[0])]
        assert (job in names) is kept, setting


@pytest.mark.usefixtures("packaged_catalog")
@pytest.mark.parametrize(
    ("row", "says"),
    [
        ("n9-standard-8,n9,nan,32,,,src", "machine_types.csv:2: column 'vcpus' must be a number"),
        ("n9-\x1b[31m,n9,8,32,,,src", "machine_types.csv:2: column 'machine_type' holds U+001B"),
    ],
)
def test_a_hostile_overlay_fails_configure_naming_key_file_row_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row: str, says: str
) -> None:
    monkeypatch.setenv(READ_ROOTS_ENV, str(tmp_path))
    overlay = tmp_path / "catalog"
    overlay.mkdir()
    (overlay / "machine_types.csv").write_text(f"{MACHINES}\n{row}\n")
    with pytest.raises(SettingError) as raised:
        _provider(quota="off", catalogOverlay=str(overlay))
    text = str(raised.value)
    assert text.startswith("gpu-training:catalogOverlay: ") and says in text
    assert "\x1b" not in text


def test_an_overlay_outside_the_project_fails_configure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(READ_ROOTS_ENV, raising=False)
    (tmp_path / "catalog").mkdir()
    with pytest.raises(SettingError, match="gpu-training:catalogOverlay: lies outside the project"):
        _provider(quota="off", catalogOverlay=str(tmp_path / "catalog"))


# -- the stack instance (issue 42 item 3) --------------------------------------------------------


def _checked_config(olds: dict[str, Any], news: dict[str, Any]) -> dict[str, Any]:
    request = CheckRequest(PROVIDER_URN, wrap_map(olds), wrap_map(news), b"")
    # A stack whose checkpoint holds no earlier provider: nothing to succeed.
    provider = GpuTrainingProvider(read_state=lambda urn, show_secrets=False: [])
    result = run_isolated(provider.check_config(request))
    assert not result.failures
    return dict(result.inputs or {})


def test_a_new_provider_gets_a_secret_stack_key_its_state_then_keeps() -> None:
    made = _checked_config({}, {"quota": "off"})
    key = made["stackKey"]
    assert key.is_secret and len(str(key.value)) == 64
    # Its public part beside it, plain: what a successor reads without decrypting anything.
    assert made["stackInstance"].value == instance_of(str(key.value))
    assert not made["stackInstance"].is_secret
    assert _checked_config({}, {})["stackKey"].value != key.value  # random: each new provider
    # Every later check passes the state's key on (no diff), whatever the new inputs say.
    kept = _checked_config({"quota": "off", "stackKey": key.value}, {"stackKey": "mine"})
    assert kept["stackKey"].value == key.value and kept["stackKey"].is_secret
    # A state of the key alone (release 0.2.0) gains no plain instance: no provider diff.
    assert "stackInstance" not in kept
    # A provider whose state was written before keys: none (it keeps matching as before).
    assert "stackKey" not in _checked_config({"version": "0.1.0"}, {"version": "0.1.0"})


def test_two_stacks_of_the_same_names_never_share_a_job(emu: EmulatorProcess) -> None:
    """Two teams, each on its own backend: the same URN, spec and project, no runKey. The
    second's create neither adopts nor names the first's job; its delete cancels its own."""
    client = emu.client()
    teams = [
        _provider(endpoint=emu.endpoint, cancelTimeout="30", stackKey=key)
        for key in ("a" * 64, "b" * 64)
    ]
    job = training_job()
    job["labels"]["emulator-outcome"] = "hang"
    job["jobSpec"]["workerPoolSpecs"][0]["machineSpec"] = {"machineType": "n1-standard-4"}
    job["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["imageUri"] = IMAGE  # no GPU: no quota
    props = wrap_map({**job, "waitFor": "submitted"})
    first, second = (run_isolated(p.create(CreateRequest(URN, props, 0, False))) for p in teams)
    assert first.resource_id != second.resource_id
    assert second.properties["adopted"].value is False
    run_isolated(teams[1].delete(DeleteRequest(URN, str(second.resource_id), second.properties, 0)))
    assert client.get_custom_job(name=second.resource_id).state.name == "JOB_STATE_CANCELLED"
    active = {"JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING"}
    assert client.get_custom_job(name=first.resource_id).state.name in active
    run_isolated(teams[0].delete(DeleteRequest(URN, str(first.resource_id), first.properties, 0)))
    assert client.get_custom_job(name=first.resource_id).state.name == "JOB_STATE_CANCELLED"
