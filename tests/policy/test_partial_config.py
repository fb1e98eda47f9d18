"""What the pack's rules do with the configuration CrossGuard hands them, and where a plugin
job's project and region come from when its inputs set none.

CrossGuard runs every policy of the pack: one the config file does not name gets an empty
configuration. Such a rule is off, never judged with empty values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from components import load_catalog
from components.lifecycle._wire import UNKNOWN_VALUES
from components.policies import (
    JOB_RULES,
    max_cost_per_job,
    max_cost_per_stack,
    plugin_defaults,
    quota_fits,
)
from components.policies import allowed_accelerators as accelerators_rule
from components.policies import job_from_props as from_props
from tests.policy.test_rest_shaped_jobs import _job_spec

PLUGIN = "gpu-training:vertex:TrainingJob"
PLUGIN_TUNING = "gpu-training:vertex:HyperparameterTuningJob"
DYNAMIC = "pulumi-python:dynamic/vertex:TrainingJob"
PROVIDER = "pulumi:providers:gpu-training"
STACK = {"gpu-training:project": "stack-project", "gpu-training:region": "us-central1"}


@dataclass(frozen=True)
class Provider:
    """A provider as ``pulumi_policy`` hands it to a policy (``PolicyProviderResource``)."""

    name: str
    props: dict[str, Any] = field(default_factory=dict)
    resource_type: str = PROVIDER


def _props() -> dict[str, Any]:
    """A plugin TrainingJob without project or region, breaking every rule dev.json sets."""
    return {
        "labels": {"team": "ml"},
        "jobSpec": _job_spec(),
    }


def test_a_rule_the_config_does_not_set_is_off() -> None:
    catalog = load_catalog()
    job = from_props("big", PLUGIN, _props(), {"region": "us-central1", "project": "p"})
    assert job is not None
    for rule in JOB_RULES:
        assert rule.check(job, {}, catalog) == [], rule.name
    assert max_cost_per_stack([job], {}, catalog) == []
    assert quota_fits([job], {}, catalog) == []
    # Set, each is judged: the config that sets one rule leaves the others as they were.
    assert max_cost_per_job(job, {"maxUsdPerHour": 0.1}, catalog)[0].startswith("job 'big' costs $")
    # An empty list is a CPU-only stack, said so; the rule left out is not.
    assert accelerators_rule(job, {"allowedAccelerators": []}, catalog) == [
        "job 'big' uses NVIDIA_TESLA_A100; this stack allows no accelerators"
    ]


def test_spot_required_runs_when_enabled() -> None:
    catalog = load_catalog()
    job = from_props("big", PLUGIN, _props(), {"region": "us-central1"})
    assert job is not None
    [spot] = [rule for rule in JOB_RULES if rule.name == "spot-required"]
    assert spot.check(job, {"enabled": True}, catalog) == [
        "job 'big' runs STANDARD; this stack requires scheduling.strategy: SPOT"
    ]
    assert spot.check(job, {"enabled": False}, catalog) == []


def test_the_default_provider_takes_the_stack_configuration() -> None:
    defaults = plugin_defaults(PLUGIN, Provider("default_0_1_0"), STACK)
    assert defaults == {"project": "stack-project", "region": "us-central1"}
    job = from_props("big", PLUGIN, _props(), defaults)
    assert job is not None and (job.project, job.region) == ("stack-project", "us-central1")
    # Priced where it runs: the $0.1/h limit is checked, not "cannot check (no region)".
    [message] = max_cost_per_job(job, {"maxUsdPerHour": 0.1}, load_catalog())
    assert message.startswith("job 'big' costs $") and "the limit is $0.1/h per job" in message
    # Not known (no provider handed over): the stack's too.
    assert plugin_defaults(PLUGIN_TUNING, None, STACK) == defaults


def test_a_provider_s_own_inputs_come_first_and_an_explicit_one_reads_no_stack_key() -> None:
    eu = Provider("eu", {"region": "europe-west4", "project": "eu-project"})
    assert plugin_defaults(PLUGIN, eu, STACK) == {"project": "eu-project", "region": "europe-west4"}
    assert plugin_defaults(PLUGIN, Provider("bare"), STACK) == {}
    half = Provider("default", {"region": "us-east1"})
    assert plugin_defaults(PLUGIN, half, STACK) == {
        "project": "stack-project",
        "region": "us-east1",
    }
    # The job's own inputs win over its provider's.
    job = from_props("big", PLUGIN, {**_props(), "region": "us-west1"}, {"region": "us-east1"})
    assert job is not None and job.region == "us-west1"


@pytest.mark.parametrize("value", ["[secret]", *sorted(UNKNOWN_VALUES)])
def test_secret_and_unknown_provider_values_are_no_region(value: str) -> None:
    assert plugin_defaults(PLUGIN, Provider("default", {"region": value}), {}) == {}


def test_jobs_of_other_doors_take_no_plugin_defaults() -> None:
    assert (
        plugin_defaults(
            DYNAMIC, Provider("default", resource_type="pulumi:providers:pulumi-python"), STACK
        )
        == {}
    )
    assert (
        plugin_defaults(PLUGIN, Provider("default", resource_type="pulumi:providers:gcp"), STACK)
        == {}
    )


def test_a_plugin_job_s_candidate_regions_are_judged_each() -> None:
    from components.policies import allowed_regions, job_from_props

    props = {**_props(), "regions": ["us-central1", {"region": "europe-west4"}]}
    job = job_from_props("placed", PLUGIN, props, {"region": "us-central1", "project": "p"})
    assert job is not None
    assert [a.region for a in job.placement] == ["us-central1", "europe-west4"]
    assert allowed_regions(job, {"allowedRegions": ["us-central1"]}, load_catalog()) == [
        "job 'placed' runs in europe-west4; this stack allows us-central1"
    ]
    # Regions unknown at preview: judged once known (the core checks them then).
    unknown = {**_props(), "regions": "04da6b54-80e4-46f7-96ec-b56ff0331ba9"}
    later = job_from_props("placed", PLUGIN, unknown, {"region": "us-central1", "project": "p"})
    assert later is not None and later.placement == ()
