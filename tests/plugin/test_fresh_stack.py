"""The first ``pulumi up`` of a plugin stack: its provider's ``check_config`` draws the stack's
key, so the creates of that process submit without a look-up first
(``components.lifecycle._adoption`` rule 4), and a lost answer is still adopted, never
submitted twice; the next process reads the key from the state and looks again. The dynamic
resources' side: ``tests/provider/test_new_instance.py``.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from pulumi.provider.experimental.provider import CheckRequest, ConfigureRequest, CreateRequest

from components.lifecycle._adoption import instance_of
from components.plugin._provider import GpuTrainingProvider
from components.plugin._values import plain_map, wrap_map
from components.vertex import api as api_module
from emulator.testing import EmulatorProcess, running_emulator
from tests.e2e._plugin import training_job
from tests.plugin.conftest import run_isolated
from tests.provider.conftest import counted_calls


def _hanging_job() -> dict[str, Any]:
    """The e2e tests' TrainingJob, running until it is cancelled, submitted without a wait."""
    job = training_job()
    job["labels"]["emulator-outcome"] = "hang"
    return {**job, "waitFor": "submitted"}


@pytest.fixture(scope="module")
def emu() -> Any:
    with running_emulator("--mode", "simulate", "--simulate-queued-seconds", "0.05") as server:
        yield server


URN = "urn:pulumi:dev::proj::gpu-training:vertex:TrainingJob::fresh"
PROVIDER_URN = "urn:pulumi:dev::proj::pulumi:providers:gpu-training::default"


def _plugin(
    emu: EmulatorProcess, olds: dict[str, Any]
) -> tuple[GpuTrainingProvider, dict[str, Any]]:
    """A plugin provider through ``check_config`` (with the provider state ``olds``) and
    ``configure``, as the engine makes one; and the provider inputs it checked."""
    provider = GpuTrainingProvider(read_state=lambda urn, **_: [])
    settings = {
        "project": "local-training",
        "region": "us-central1",
        "endpoint": emu.endpoint,
        "retryDeadline": "20",
    }
    checked = run_isolated(
        provider.check_config(CheckRequest(PROVIDER_URN, wrap_map(olds), wrap_map(settings), b""))
    )
    assert not checked.failures and checked.inputs is not None
    run_isolated(provider.configure(ConfigureRequest({}, checked.inputs, True, True)))
    return provider, plain_map(checked.inputs)


def _plugin_lists(monkeypatch: pytest.MonkeyPatch, provider: GpuTrainingProvider) -> list[Any]:
    client = api_module.shared_client(provider._config.settings.endpoint, "us-central1")
    return counted_calls(monkeypatch, client, "list_custom_jobs")


def test_a_new_plugin_stack_submits_without_a_list_and_never_twice(emu, monkeypatch):
    provider, config = _plugin(emu, {})
    assert config["stackInstance"] == instance_of(config["stackKey"])  # drawn here
    listed = _plugin_lists(monkeypatch, provider)
    props = wrap_map(_hanging_job())
    created = run_isolated(provider.create(CreateRequest(URN, props, 0, False)))
    assert listed == []  # a new instance: no job can be this run's yet
    assert plain_map(created.properties)["adopted"] is False
    # A lost answer is adopted: the retry looks for the job the lost answer stored.
    emu.set_faults(drop_create=1, drop_mode="503")
    other = URN.replace("::fresh", "::fresh-lost")
    lost = run_isolated(provider.create(CreateRequest(other, props, 0, False)))
    assert emu.set_faults()["drop_create"] == 0
    assert plain_map(lost.properties)["adopted"] is True
    # The retry's look-up, and the one after the stack's held jobs were read (rule 3).
    assert len(listed) == 2
    # A second create of the resource in this process looks for the job the first submitted.
    listed.clear()
    again = run_isolated(provider.create(CreateRequest(URN, props, 0, False)))
    assert again.resource_id == created.resource_id and len(listed) == 2
    for name in (created.resource_id, lost.resource_id):
        emu.client().cancel_custom_job(name=name)


def test_a_key_the_state_holds_is_looked_for_before_submitting(emu, monkeypatch):
    # A key this process did not draw (read from the provider's state: the stack's first
    # `up` ran elsewhere) may label jobs that process submitted: every create looks first.
    key = secrets.token_hex(32)
    provider, config = _plugin(emu, {"stackKey": key, "stackInstance": instance_of(key)})
    assert config["stackKey"] == key
    listed = _plugin_lists(monkeypatch, provider)
    props = wrap_map(_hanging_job())
    created = run_isolated(provider.create(CreateRequest(URN, props, 0, False)))
    assert len(listed) == 1 and plain_map(created.properties)["adopted"] is False
    emu.client().cancel_custom_job(name=created.resource_id)


def test_a_key_that_came_back_from_the_state_is_looked_for_again(emu, monkeypatch):
    # One process serving several commands (PULUMI_DEBUG_PROVIDERS attaches every command to
    # it): once its key comes back as the provider's state, another process may have
    # submitted jobs of it, so the creates of this one look first.
    provider, config = _plugin(emu, {})
    state = {k: config[k] for k in ("stackKey", "stackInstance")}
    checked = run_isolated(
        provider.check_config(CheckRequest(PROVIDER_URN, wrap_map(state), wrap_map({}), b""))
    )
    assert (
        checked.inputs is not None and plain_map(checked.inputs)["stackKey"] == config["stackKey"]
    )
    listed = _plugin_lists(monkeypatch, provider)
    created = run_isolated(
        provider.create(CreateRequest(URN + "-again", wrap_map(_hanging_job()), 0, False))
    )
    assert len(listed) == 1 and plain_map(created.properties)["adopted"] is False
    emu.client().cancel_custom_job(name=created.resource_id)
