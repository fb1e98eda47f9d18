"""A plugin job on a default provider whose project and region come from the environment
pulumi-gcp reads (``GOOGLE_PROJECT``... ``GOOGLE_REGION``...; the plugin's ``read_place``):
the policy pack and the PR comment take them from there too, after the stack's
``gpu-training:*``, in the same order (``PlaceSources.from_environment``), from the
environment their caller hands them. An explicit provider uses its own inputs, then the environment, as the plugin does."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from components import load_catalog
from components.lifecycle._settings import PROJECT_ENV, REGION_ENV
from components.plugin._shape import provider_defaults
from components.policies import job_from_props, max_cost_per_job, plugin_defaults
from components.review import main, parse_preview, render_markdown
from tests.policy.test_partial_config import PLUGIN, Provider, _props
from tests.policy.test_plugin_review import PROVIDER, _t4_job, create, preview, urn
from tests.policy.test_tuning_review import N1_STANDARD_4, T4, row

ENV = {"GCLOUD_REGION": "us-west1", "GOOGLE_REGION": "us-central1", "GCLOUD_PROJECT": "env-p"}
STACK = {"gpu-training:project": "stack-project", "gpu-training:region": "europe-west4"}


def test_a_default_provider_falls_back_to_the_environment_in_pulumi_gcp_s_order() -> None:
    expected = {"project": "env-p", "region": "us-central1"}
    assert provider_defaults("default", None, {}, ENV) == expected
    assert provider_defaults(None, None, {}, {"CLOUDSDK_COMPUTE_REGION": "us-east4"}) == {
        "region": "us-east4"
    }
    # The stack's configuration comes first, the provider's own inputs before it.
    assert provider_defaults("default_1_2_3", None, STACK, ENV) == {
        "project": "stack-project",
        "region": "europe-west4",
    }
    own = provider_defaults("default", {"region": "us-east1"}, {}, ENV)
    assert own == {"project": "env-p", "region": "us-east1"}
    # An explicit provider: its own inputs, not the stack's keys, then the environment, as
    # the plugin configures it; no environment: nothing.
    assert provider_defaults("eu", {}, STACK, ENV) == {"project": "env-p", "region": "us-central1"}
    assert provider_defaults("eu", {"region": "us-east1"}, STACK, ENV)["region"] == "us-east1"
    assert provider_defaults("eu", {}, STACK) == {}
    assert provider_defaults("default", None, {}) == {}


def test_the_policy_prices_a_job_whose_region_is_the_environment_s() -> None:
    defaults = plugin_defaults(PLUGIN, Provider("default_0_1_0"), {}, ENV)
    job = job_from_props("big", PLUGIN, _props(), defaults)
    assert job is not None and (job.project, job.region) == ("env-p", "us-central1")
    [message] = max_cost_per_job(job, {"maxUsdPerHour": 0.1}, load_catalog())
    assert message.startswith("job 'big' costs $") and "no region" not in message
    assert plugin_defaults(PLUGIN, Provider("eu"), {}, ENV)["region"] == "us-central1"
    assert plugin_defaults(PLUGIN, None, {}) == {}


def test_the_review_row_shows_the_environment_s_region_and_price() -> None:
    text = preview(create("job", _t4_job(2)), config={})
    assert row(render_markdown(text, environ=ENV), "job") == (
        f"| 🟢 create | `job` | n1-standard-4 | 2 x NVIDIA_TESLA_T4 | us-central1 "
        f"| ${N1_STANDARD_4 + 2 * T4:,.2f}/h | ${(N1_STANDARD_4 + 2 * T4) / 6:,.2f} (10 min) |"
    )
    assert "| ? | unknown |" in row(render_markdown(text), "job")
    # An explicit provider without a region runs its jobs in the environment's, as the plugin.
    bare = {"op": "create", "urn": urn(PROVIDER, "bare"), "newState": {"type": PROVIDER}}
    explicit = preview(bare, create("job", _t4_job(), provider="bare"), config={})
    assert parse_preview(explicit, ENV).jobs[0].region == "us-central1"
    assert parse_preview(explicit).jobs[0].region is None


def test_the_command_reads_the_environment_the_preview_ran_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (*PROJECT_ENV, *REGION_ENV):
        monkeypatch.delenv(name, raising=False)
    saved = tmp_path / "preview.json"
    saved.write_text(preview(create("job", _t4_job()), config={}))
    out = io.StringIO()
    monkeypatch.setenv("GCLOUD_REGION", "us-central1")
    assert main([str(saved)], out) == 0
    assert "| 1 x NVIDIA_TESLA_T4 | us-central1 | $" in row(out.getvalue(), "job")
