"""The PR comment (components/review.py) for hyperparameter tuning jobs, without the engine.

The previews are written here in the shape ``pulumi preview --json`` prints (engine v3.259,
as ``tests/e2e/test_review.py`` records it): steps with ``oldState``/``newState`` inputs, the
spec as JSON text, or the streamed events of ``PULUMI_ENABLE_STREAMING_JSON_PREVIEW``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from components import load_catalog
from components.lifecycle._wire import TRAINING_JOB_TYPE, TUNING_JOB_TYPE, encode_spec
from components.review import parse_preview, render_markdown
from tests.spec.tuning_helpers import config as sweep_config

STACK, PROJECT = "dev", "gpu-training"

# us-central1 on-demand prices of the catalog (components/catalog/prices.csv).
N1_STANDARD_4 = 0.21849885
T4 = 0.4025
TRIAL = N1_STANDARD_4 + 2 * T4  # n1-standard-4 with 2 x T4: $1.02/h


def urn(type_: str, name: str) -> str:
    return f"urn:pulumi:{STACK}::{PROJECT}::{type_}::{name}"


def sweep(
    machine: str = "n1-standard-4",
    *,
    parallel: int = 3,
    trials: int = 12,
    timeout: str = "14h",
    strategy: str | None = None,
) -> dict[str, Any]:
    """The CIFAR-10 sweep of ``tuning_helpers``: 2 x T4 per trial."""
    document = sweep_config()
    document.update(maxTrialCount=trials, parallelTrialCount=parallel)
    trial = document["trialJobSpec"]
    trial["workerPoolSpecs"][0]["machineSpec"].update(machineType=machine, acceleratorCount=2)
    trial["scheduling"] = {"timeout": timeout, **({"strategy": strategy} if strategy else {})}
    return document


def state(type_: str, document: dict[str, Any], **knobs: Any) -> dict[str, Any]:
    inputs = {"spec": encode_spec(document), "project": "vision-ml", "region": "us-central1"}
    return {"type": type_, "inputs": {**inputs, **knobs}}


def step(
    op: str,
    name: str,
    old: dict[str, Any] | None = None,
    new: dict[str, Any] | None = None,
    type_: str = TUNING_JOB_TYPE,
    reasons: tuple[str, ...] = (),
) -> dict[str, Any]:
    found: dict[str, Any] = {"op": op, "urn": urn(type_, name)}
    if old is not None:
        found["oldState"] = state(type_, old)
    if new is not None:
        found["newState"] = state(type_, new)
    if reasons:
        found["replaceReasons"] = list(reasons)
    return found


def preview(*steps: dict[str, Any]) -> str:
    stack = {"op": "same", "urn": urn("pulumi:pulumi:Stack", f"{PROJECT}-{STACK}")}
    return json.dumps({"steps": [stack, *steps], "diagnostics": [], "changeSummary": {}})


def row(markdown: str, job: str) -> str:
    [found] = [
        line for line in markdown.splitlines() if line.startswith("|") and f"`{job}`" in line
    ]
    return found


TUNING_HEADER = (
    "| | Tuning job | Trials | Machines per trial | GPUs per trial | Region "
    "| Cost per hour, all trials at once | At most, all trials |"
)


def test_a_new_sweep_shows_trials_hardware_per_trial_price_and_ceiling() -> None:
    markdown = render_markdown(preview(step("create", "sweep", new=sweep())))
    assert TUNING_HEADER in markdown
    assert "| | Job | Machines |" not in markdown  # no training job, no training table
    # 3 x $1.02/h at once; 12 trials x 14 h x $1.02/h at most.
    assert row(markdown, "sweep") == (
        "| 🟢 create | `sweep` | 12 (3 at once) | n1-standard-4 | 2 x NVIDIA_TESLA_T4 "
        f"| us-central1 | ${3 * TRIAL:,.2f}/h | ${12 * 14 * TRIAL:,.2f} (12 x 14 h) |"
    )
    assert "| $3.07/h | $171.95 (12 x 14 h) |" in row(markdown, "sweep")
    assert "**1 to create**" in markdown
    assert "**Hourly cost change: +$3.07/h**" in markdown


def test_more_parallel_trials_replace_the_job_and_raise_the_hourly_cost() -> None:
    text = preview(
        step("replace", "sweep", old=sweep(), new=sweep(parallel=4), reasons=("spec",)),
    )
    markdown = render_markdown(text)
    assert row(markdown, "sweep") == (
        "| 🔁 replace | `sweep` | 12 (3 at once) → 12 (4 at once) | n1-standard-4 "
        "| 2 x NVIDIA_TESLA_T4 | us-central1 | $3.07/h → $4.09/h (+$1.02/h) "
        "| $171.95 (12 x 14 h) |"
    )
    assert "**Hourly cost change: +$1.02/h**" in markdown
    assert "**`sweep`** — replace: a new job starts, then the old one is cancelled" in markdown
    assert "- `spec.parallelTrialCount`: `3` → `4` (forces replacement)" in markdown
    [job] = parse_preview(text).jobs
    assert job.tuning and job.op == "replace"
    old, new = job.tuning_spec("old"), job.tuning_spec("new")
    assert old is not None and new is not None
    assert (old.parallel_trial_count, new.parallel_trial_count) == (3, 4)


def test_more_trials_and_a_longer_timeout_raise_the_ceiling_only() -> None:
    changed = sweep(trials=24, timeout="1d")
    markdown = render_markdown(
        preview(step("replace", "sweep", old=sweep(), new=changed, reasons=("spec",)))
    )
    assert row(markdown, "sweep").endswith(
        f"| $3.07/h | $171.95 (12 x 14 h) → ${24 * 24 * TRIAL:,.2f} (24 x 24 h) |"
    )
    assert "**Hourly cost change: +$0.00/h**" in markdown


def test_a_deleted_sweep_subtracts_all_its_parallel_trials() -> None:
    markdown = render_markdown(preview(step("delete", "old-sweep", old=sweep(parallel=2))))
    assert row(markdown, "old-sweep").startswith("| 🔴 delete | `old-sweep` | 12 (2 at once) |")
    assert row(markdown, "old-sweep").endswith("| $2.05/h | $171.95 (12 x 14 h) |")
    assert "**Hourly cost change: -$2.05/h**" in markdown


def test_an_unknown_price_is_unknown_and_named() -> None:
    # n1 machines are not offered in us-south1 (the catalog's price row says why).
    big = step("create", "big-sweep", new=sweep("n1-standard-8"))
    big["newState"]["inputs"]["region"] = "us-south1"
    markdown = render_markdown(preview(step("create", "sweep", new=sweep()), big))
    assert row(markdown, "big-sweep").endswith(
        "| n1-standard-8 | 2 x NVIDIA_TESLA_T4 | us-south1 | unknown | unknown |"
    )
    assert (
        "**Hourly cost change: +$3.07/h** (jobs with known prices; unknown for `big-sweep`)"
        in markdown
    )
    assert "Prices not in the catalog: n1-standard-8 in us-south1 (the source lists no" in markdown


def test_spot_trials_are_marked_with_their_price_sources() -> None:
    markdown = render_markdown(preview(step("create", "sweep", new=sweep(strategy="SPOT"))))
    prices = load_catalog().prices
    spot = [
        prices[("us-central1", kind, name)].spot_usd
        for kind, name in (("machine", "n1-standard-4"), ("accelerator", "NVIDIA_TESLA_T4"))
    ]
    assert spot[0] is not None and spot[1] is not None
    trial = spot[0] + 2 * spot[1]
    assert row(markdown, "sweep").endswith(
        f"| ${3 * trial:,.2f}/h (spot) | ${12 * 14 * trial:,.2f} (12 x 14 h) |"
    )
    # A Spot price is derived from Compute Engine's, its uplift not checked: said so.
    assert "Price sources: sweep: derived, unverified (spot)." in markdown
    assert (
        f"Ceiling change (timeouts x $/h; tuning jobs: trials x trial ceiling): "
        f"+${12 * 14 * trial:,.2f}\n" in markdown
    )


def test_training_and_tuning_jobs_side_by_side_sum_into_one_cost_change() -> None:
    training = {
        "displayName": "t4",
        "workerPoolSpecs": [
            {
                "machineSpec": {
                    "machineType": "n1-standard-4",
                    "acceleratorType": "NVIDIA_TESLA_T4",
                    "acceleratorCount": 1,
                },
                "replicaCount": 1,
                "containerSpec": {"imageUri": "img"},
            }
        ],
    }
    markdown = render_markdown(
        preview(
            step("create", "t4", new=training, type_=TRAINING_JOB_TYPE),
            step("create", "sweep", new=sweep()),
        )
    )
    # The training table as before, the tuning table after it.
    training_header = "| | Job | Machines | GPUs | Region | Cost per hour | At most |"
    assert markdown.index(training_header) < markdown.index(TUNING_HEADER)
    # No timeout: Vertex's default of 7 days is the ceiling.
    assert row(markdown, "t4") == (
        f"| 🟢 create | `t4` | n1-standard-4 | 1 x NVIDIA_TESLA_T4 | us-central1 "
        f"| ${N1_STANDARD_4 + T4:,.2f}/h | ${168 * (N1_STANDARD_4 + T4):,.2f} (168 h) |"
    )
    ceiling = 168 * (N1_STANDARD_4 + T4) + 12 * 14 * TRIAL
    assert f"trial ceiling): +${ceiling:,.2f}\n" in markdown
    assert "Price sources: sweep: Vertex price; t4: Vertex price." in markdown
    assert "**2 to create**" in markdown
    # $0.62/h + 3 x $1.02/h
    assert f"{N1_STANDARD_4 + T4 + 3 * TRIAL:,.2f}" == "3.69"
    assert "**Hourly cost change: +$3.69/h**" in markdown


def test_streamed_preview_puts_policy_violations_under_the_tuning_job() -> None:
    new = state(TUNING_JOB_TYPE, sweep())
    events = [
        {"preludeEvent": {"config": {}}},
        {
            "resourcePreEvent": {
                "metadata": {"op": "create", "urn": urn(TUNING_JOB_TYPE, "sweep"), **_meta(new)}
            }
        },
        {
            "policyEvent": {
                "resourceUrn": urn(TUNING_JOB_TYPE, "sweep"),
                "message": "max-gpus-per-job\ntuning job 'sweep' holds 6 accelerators at once "
                "(3 trials at once x 2); the limit is 4",
                "policyName": "max-gpus-per-job",
                "enforcementLevel": "mandatory",
            }
        },
        {"diagnosticEvent": {"message": "error: preview failed\n", "severity": "error"}},
    ]
    markdown = render_markdown("\n".join(json.dumps(e) for e in events))
    assert (
        "- `sweep`: [mandatory] max-gpus-per-job: tuning job 'sweep' holds 6 accelerators at "
        "once (3 trials at once x 2); the limit is 4" in markdown
    )
    assert row(markdown, "sweep").startswith("| 🟢 create | `sweep` | 12 (3 at once) |")


def _meta(new: dict[str, Any]) -> dict[str, Any]:
    return {"type": new["type"], "new": {"type": new["type"], "inputs": new["inputs"]}}


@pytest.mark.parametrize("spec", ["04da6b54-80e4-46f7-96ec-b56ff0331ba9", "{not json"])
def test_a_spec_not_known_at_preview_shows_question_marks(spec: str) -> None:
    raw = {
        "op": "create",
        "urn": urn(TUNING_JOB_TYPE, "later"),
        "newState": {
            "type": TUNING_JOB_TYPE,
            "inputs": {"spec": spec, "project": "vision-ml", "region": "us-central1"},
        },
    }
    markdown = render_markdown(json.dumps({"steps": [raw]}))
    assert row(markdown, "later") == (
        "| 🟢 create | `later` | ? | ? | ? | us-central1 | unknown | unknown |"
    )


def test_a_streamed_preview_shows_a_changed_secret_as_secret_not_its_envelope() -> None:
    """The events of a streamed preview carry a secret as the engine's envelope (a signature
    and the ciphertext), where the single document says ``[secret]``."""
    envelope = {
        "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
        "ciphertext": "v1:ZmFrZS1ub25jZQ==:c29tZS1jaXBoZXJ0ZXh0LXRoYXQtaXMtbG9uZw==",
    }
    changed = {**envelope, "ciphertext": envelope["ciphertext"].replace("c29t", "b3Ro")}
    old = state(TUNING_JOB_TYPE, sweep(), env_values=envelope)
    new = state(TUNING_JOB_TYPE, sweep(), env_values=changed)
    meta = {
        "op": "replace",
        "urn": urn(TUNING_JOB_TYPE, "sweep"),
        "type": TUNING_JOB_TYPE,
        "old": old,
        "new": new,
        "keys": ["env_values"],
    }
    markdown = render_markdown(json.dumps({"resourcePreEvent": {"metadata": meta}}))
    assert "ciphertext" not in markdown and "v1:" not in markdown
    assert "`env_values`: [secret] → [secret] (forces replacement)" in markdown
