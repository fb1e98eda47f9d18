"""The PR comment (components/review.py) for the provider plugin's resources, without the engine.

Previews written in the shape ``pulumi preview --json`` prints for a plugin program (recorded by
``tests/e2e/test_plugin_review.py``): REST-shaped inputs (``jobSpec``, ``trialJobSpec``), the
step's ``provider`` reference, the stack's ``config`` carrying ``gpu-training:region`` (a default
provider has no step of its own), an explicit provider's own step with its inputs.
"""

from __future__ import annotations

import json
from typing import Any

from components.review import parse_preview, render_markdown
from tests.policy.test_rest_shaped_jobs import _job_spec
from tests.policy.test_tuning_review import N1_STANDARD_4, T4, row, sweep

STACK, PROJECT = "dev", "yaml-ml"
TRAINING = "gpu-training:vertex:TrainingJob"
TUNING = "gpu-training:vertex:HyperparameterTuningJob"
PROVIDER = "pulumi:providers:gpu-training"
CONFIG = {"gpu-training:project": "ml-project", "gpu-training:region": "us-central1"}


def urn(type_: str, name: str) -> str:
    return f"urn:pulumi:{STACK}::{PROJECT}::{type_}::{name}"


def reference(provider: str) -> str:
    """How a step names its provider: ``URN::ID``."""
    return f"{urn(PROVIDER, provider)}::04da6b54-80e4-46f7-96ec-b56ff0331ba9"


def _t4_job(count: int = 1) -> dict[str, Any]:
    spec = _job_spec(count)
    spec["workerPoolSpecs"][0]["machineSpec"].update(
        machineType="n1-standard-4", acceleratorType="NVIDIA_TESLA_T4"
    )
    spec["scheduling"] = {"timeout": "600s"}
    return {"labels": {"team": "ml"}, "jobSpec": spec}


def create(
    name: str,
    inputs: dict[str, Any],
    *,
    type_: str = TRAINING,
    provider: str = "default",
    outputs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    state: dict[str, Any] = {"type": type_, "inputs": inputs, "provider": reference(provider)}
    if outputs is not None:
        state["outputs"] = outputs
    return {
        "op": "create",
        "urn": urn(type_, name),
        "provider": state["provider"],
        "newState": state,
    }


def preview(*steps: dict[str, Any], config: dict[str, Any] | None = None) -> str:
    stack = {"op": "create", "urn": urn("pulumi:pulumi:Stack", f"{PROJECT}-{STACK}")}
    document = {"config": CONFIG if config is None else config, "steps": [stack, *steps]}
    return json.dumps({**document, "diagnostics": [], "changeSummary": {}})


def test_a_plugin_job_shows_its_machines_gpus_and_price_in_the_stack_s_region() -> None:
    markdown = render_markdown(preview(create("job", _t4_job(2))))
    assert row(markdown, "job") == (
        f"| 🟢 create | `job` | n1-standard-4 | 2 x NVIDIA_TESLA_T4 | us-central1 "
        f"| ${N1_STANDARD_4 + 2 * T4:,.2f}/h | ${(N1_STANDARD_4 + 2 * T4) / 6:,.2f} (10 min) |"
    )
    # No region anywhere: the price is unknown, not guessed.
    unplaced = render_markdown(preview(create("job", _t4_job()), config={}))
    assert "| 1 x NVIDIA_TESLA_T4 | ? | unknown |" in row(unplaced, "job")


def test_an_explicit_provider_s_region_and_the_job_s_own_come_first() -> None:
    eu = {
        "op": "create",
        "urn": urn(PROVIDER, "eu"),
        "newState": {"type": PROVIDER, "inputs": {"region": "europe-west4"}},
    }
    [job] = parse_preview(preview(eu, create("job", _t4_job(), provider="eu"))).jobs
    assert job.region == "europe-west4"
    # An explicit provider without a region does not read the stack's key.
    bare = {**eu, "urn": urn(PROVIDER, "bare"), "newState": {"type": PROVIDER, "inputs": {}}}
    [job] = parse_preview(preview(bare, create("job", _t4_job(), provider="bare"))).jobs
    assert job.region is None
    own = create("job", {**_t4_job(), "region": "us-east1"})
    assert parse_preview(preview(own)).jobs[0].region == "us-east1"


def test_a_plugin_tuning_job_is_priced_from_its_trial_job_spec() -> None:
    markdown = render_markdown(preview(create("sweep", sweep(), type_=TUNING)))
    trial = N1_STANDARD_4 + 2 * T4
    assert row(markdown, "sweep").startswith(
        f"| 🟢 create | `sweep` | 12 (3 at once) | n1-standard-4 | 2 x NVIDIA_TESLA_T4 "
        f"| us-central1 | ${3 * trial:,.2f}/h |"
    )


def test_the_price_the_plugin_s_preview_returns_stands_over_the_catalog_s() -> None:
    outputs = {"hourlyCostUsd": 1.5, "maxCostUsd": 0.25}
    markdown = render_markdown(preview(create("job", _t4_job(), outputs=outputs)))
    assert "| us-central1 | $1.50/h | $0.25 |" in row(markdown, "job")
    # Unknown at preview (the engine's sentinel): the catalog's estimate from the spec.
    unknown = {"hourlyCostUsd": "04da6b54-80e4-46f7-96ec-b56ff0331ba9"}
    markdown = render_markdown(preview(create("job", _t4_job(), outputs=unknown)))
    assert f"| ${N1_STANDARD_4 + T4:,.2f}/h |" in row(markdown, "job")


def test_a_streamed_preview_takes_the_price_from_the_create_s_outputs_event() -> None:
    # `pulumi preview --json` with streaming: the plugin's preview of a create (supports_preview)
    # reaches the stream as a resOutputsEvent after the step's resourcePreEvent (the single
    # document keeps the pre-event's state alone, without outputs).
    step = create("job", _t4_job())
    meta = {"op": "create", "urn": step["urn"], "type": TRAINING, "new": step["newState"]}
    outputs = {**step["newState"], "outputs": {"hourlyCostUsd": 1.5, "maxCostUsd": 0.25}}
    events = [
        {"preludeEvent": {"config": CONFIG}},
        {"resourcePreEvent": {"metadata": meta}},
        {"resOutputsEvent": {"metadata": {**meta, "new": outputs}}},
    ]
    markdown = render_markdown("\n".join(json.dumps(e) for e in events))
    assert "| us-central1 | $1.50/h | $0.25 |" in row(markdown, "job")
    # Without the outputs event: the catalog's estimate from the spec.
    alone = render_markdown("\n".join(json.dumps(e) for e in events[:2]))
    assert f"| ${N1_STANDARD_4 + T4:,.2f}/h |" in row(alone, "job")


def test_a_plugin_job_s_replace_shows_both_sides_and_the_changed_rest_path() -> None:
    def state(count: int) -> dict[str, Any]:
        return {"type": TRAINING, "inputs": _t4_job(count)}

    replace = {
        "op": "replace",
        "urn": urn(TRAINING, "job"),
        "provider": reference("default"),
        "oldState": state(1),
        "newState": state(2),
        "replaceReasons": ["jobSpec"],
    }
    markdown = render_markdown(preview(replace))
    assert row(markdown, "job").startswith(
        "| 🔁 replace | `job` | n1-standard-4 | 1 x NVIDIA_TESLA_T4 → 2 x NVIDIA_TESLA_T4 "
        f"| us-central1 | ${N1_STANDARD_4 + T4:,.2f}/h → ${N1_STANDARD_4 + 2 * T4:,.2f}/h "
        f"(+${T4:,.2f}/h) |"
    )
    assert (
        "- `jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount`: `1` → `2` "
        "(forces replacement)" in markdown
    )


def test_a_plugin_job_with_several_candidates_is_priced_as_the_dynamic_resources_are() -> None:
    # Its preview's outputs are the spread of every attempt's price and no placed region: the
    # comment shows where it is expected to run and its ceiling at its dearest attempt, the
    # row the same job gets without outputs (and as a training:jobs entry).
    regions = ["us-central1", "us-east4", "europe-west4"]
    job = {**_t4_job(), "regions": regions}
    spread = {
        "costBasis": "range",
        "hourlyCostUsd": 9.0,
        "hourlyCostLowUsd": 0.1,
        "hourlyCostHighUsd": 9.0,
        "placedRegion": "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
    }
    with_outputs = row(render_markdown(preview(create("job", job, outputs=spread))), "job")
    without = row(render_markdown(preview(create("job", job))), "job")
    assert with_outputs == without and "$9.00/h" not in with_outputs and "up to" in without
    # Once placed (one candidate, or the state of a running job), the door's price stands.
    placed = {"hourlyCostUsd": 1.5, "maxCostUsd": 0.25, "placedRegion": "us-east4"}
    line = row(render_markdown(preview(create("job", job, outputs=placed))), "job")
    assert "$1.50/h" in line
