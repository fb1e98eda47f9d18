"""The plugin's committed schema is the one the v1 types give, and says what the issue asks."""

from __future__ import annotations

import json
from typing import Any

from components.plugin._schema import (
    SCHEMA_FILE,
    TRAINING_JOB_TOKEN,
    TUNING_JOB_TOKEN,
    build_schema,
    render_schema,
)


def _committed() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return loaded


def test_committed_schema_is_current() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render_schema(build_schema()), (
        "components/plugin/schema.json is stale: run `make provider-schema`"
    )


def test_training_job_follows_the_v1_rest_shape_with_v1_descriptions() -> None:
    schema = _committed()
    job = schema["resources"][TRAINING_JOB_TOKEN]
    inputs = job["inputProperties"]
    assert {"displayName", "labels", "jobSpec", "encryptionSpec"} <= set(inputs)
    assert inputs["displayName"]["description"].startswith(
        "Required. The display name of the CustomJob."
    )
    assert inputs["jobSpec"]["$ref"] == "#/types/gpu-training:vertex:CustomJobSpec"
    spec = schema["types"]["gpu-training:vertex:CustomJobSpec"]["properties"]
    pool = spec["workerPoolSpecs"]["items"]["$ref"].rsplit("/", 1)[-1]
    machine = schema["types"][pool]["properties"]["machineSpec"]["$ref"].rsplit("/", 1)[-1]
    assert schema["types"][machine]["properties"]["acceleratorCount"]["type"] == "integer"
    # Output-only fields of the API are outputs here, never inputs.
    assert "state" not in inputs and "createTime" not in inputs and "name" not in inputs
    assert {"state", "name", "createTime", "hourlyCostUsd", "maxCostUsd"} <= set(job["properties"])
    # The knobs, and which inputs replace the job.
    assert {"waitFor", "waitTimeout", "triggers", "exclusiveGpus", "keepRecordOnDelete"} <= set(
        inputs
    )
    assert inputs["jobSpec"]["willReplaceOnChanges"] is True
    assert "willReplaceOnChanges" not in inputs["waitFor"]
    # No bookkeeping anywhere in the resource.
    text = json.dumps(job)
    for hidden in ("held", "runKey", "run_key", "identity", "runHash"):
        assert hidden not in text


def test_tuning_job_has_its_study_trial_spec_and_best_trial() -> None:
    job = _committed()["resources"][TUNING_JOB_TOKEN]
    assert {"studySpec", "trialJobSpec", "maxTrialCount", "parallelTrialCount"} <= set(
        job["inputProperties"]
    )
    assert {"bestTrial", "trialCounts", "bestTrialModelDir"} <= set(job["properties"])


def test_provider_configuration_is_the_training_settings() -> None:
    config = _committed()["config"]["variables"]
    assert set(config) == {
        "project",
        "region",
        "endpoint",
        "cancelTimeout",
        "retryDeadline",
        "maxConcurrentOperations",
        "quota",
        "runKey",
        "emulatorStateDir",
        "catalogOverlay",
        "deleteRecords",
        "livePrices",
    }
    assert config["endpoint"]["secret"] is True
