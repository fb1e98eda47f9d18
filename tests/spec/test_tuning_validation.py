"""Validation of tuning job specs: every rule, with the exact path it names."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components import TuningJobSpec, Violation, validate_tuning, validate_tuning_document
from components.rules._tuning_validation import MAX_DISCRETE_VALUES
from tests.spec.strategies import anything
from tests.spec.tuning_helpers import config, loose_tuning, tuning, with_parameters

LR = {"parameterId": "learning_rate", "doubleValueSpec": {"minValue": 0.0001, "maxValue": 0.1}}
LAYERS = {"parameterId": "num_layers", "integerValueSpec": {"minValue": 2, "maxValue": 8}}
OPTIMIZER = {"parameterId": "optimizer", "categoricalValueSpec": {"values": ["adam", "sgd"]}}
BATCH = {"parameterId": "batch_size", "discreteValueSpec": {"values": [32, 64, 128]}}


def _found(spec: TuningJobSpec, **kwargs: Any) -> dict[str, Violation]:
    """Violations by path (one per path in these tests)."""
    violations = validate_tuning(spec, **kwargs)
    assert all(v.rule != "internal" for v in violations), violations
    return {v.path: v for v in violations}


def _only(spec: TuningJobSpec, **kwargs: Any) -> Violation:
    (violation,) = validate_tuning(spec, **kwargs)
    return violation


def test_the_example_config_is_valid_without_a_warning():
    assert validate_tuning(tuning(), region="us-central1") == []
    assert validate_tuning(tuning(region="us-central1")) == []


def test_grid_search_refuses_a_double_parameter_and_offers_a_discrete_grid():
    spec = with_parameters(
        {**LR, "scaleType": "UNIT_LOG_SCALE"}, LAYERS, OPTIMIZER, BATCH, algorithm="GRID_SEARCH"
    )
    violation = _only(spec)
    assert violation.path == "studySpec.parameters[0].doubleValueSpec"
    assert "GRID_SEARCH" in violation.reason and "DOUBLE" in violation.reason
    assert violation.suggestion is not None
    assert "discreteValueSpec {values: [0.0001, 0.000562, 0.00316, 0.0178, 0.1]}" in (
        violation.suggestion
    )
    assert (violation.rule, violation.severity) == ("parameters", "error")


def test_grid_search_takes_integer_categorical_and_discrete_parameters():
    assert validate_tuning(with_parameters(LAYERS, OPTIMIZER, BATCH, algorithm="GRID_SEARCH")) == []


def test_grid_search_refuses_a_double_conditional_parameter_too():
    parent = {
        **OPTIMIZER,
        "conditionalParameterSpecs": [
            {
                "parentCategoricalValues": {"values": ["sgd"]},
                "parameterSpec": {
                    "parameterId": "momentum",
                    "doubleValueSpec": {"minValue": 0.5, "maxValue": 0.9},
                },
            }
        ],
    }
    violation = _only(with_parameters(parent, algorithm="GRID_SEARCH"))
    assert violation.path == (
        "studySpec.parameters[0].conditionalParameterSpecs[0].parameterSpec.doubleValueSpec"
    )
    assert violation.suggestion is not None and "0.5, 0.6, 0.7, 0.8, 0.9" in violation.suggestion


@pytest.mark.parametrize(
    ("parameter", "path"),
    [
        (
            {"parameterId": "lr", "doubleValueSpec": {"minValue": 0, "maxValue": 0.1}},
            "studySpec.parameters[0].doubleValueSpec.minValue",
        ),
        (
            {"parameterId": "units", "integerValueSpec": {"minValue": 0, "maxValue": 512}},
            "studySpec.parameters[0].integerValueSpec.minValue",
        ),
        (
            {"parameterId": "wd", "discreteValueSpec": {"values": [-1, 0.001, 0.01]}},
            "studySpec.parameters[0].discreteValueSpec.values[0]",
        ),
    ],
)
@pytest.mark.parametrize("scale", ["UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE"])
def test_log_scales_refuse_values_at_or_below_zero(parameter, path, scale):
    violation = _only(with_parameters({**parameter, "scaleType": scale}))
    assert violation.path == path
    assert violation.reason.startswith(f"{scale} needs values above 0")
    assert violation.suggestion is not None and "UNIT_LINEAR_SCALE" in violation.suggestion


def test_a_log_scale_suggests_a_positive_minimum():
    violation = _only(
        with_parameters(
            {
                "parameterId": "lr",
                "doubleValueSpec": {"minValue": 0, "maxValue": 0.1},
                "scaleType": "UNIT_LOG_SCALE",
            }
        )
    )
    assert violation.suggestion == (
        "set minValue above 0 (e.g. 0.0001) or use scaleType UNIT_LINEAR_SCALE"
    )


def test_a_linear_scale_takes_zero_and_negative_values():
    spec = with_parameters(
        {"parameterId": "shift", "doubleValueSpec": {"minValue": -1, "maxValue": 0}},
        {**BATCH, "scaleType": "UNIT_LINEAR_SCALE"},
    )
    assert validate_tuning(spec) == []


def test_a_range_upside_down_is_refused_and_an_empty_one_is_a_warning():
    found = _found(
        with_parameters(
            {"parameterId": "lr", "doubleValueSpec": {"minValue": 0.1, "maxValue": 0.001}},
            {"parameterId": "layers", "integerValueSpec": {"minValue": 4, "maxValue": 4}},
        )
    )
    upside = found["studySpec.parameters[0].doubleValueSpec.minValue"]
    assert upside.reason == "0.1 is above maxValue 0.001"
    assert upside.severity == "error"
    single = found["studySpec.parameters[1].integerValueSpec"]
    assert single.severity == "warning" and "every trial gets that value" in single.reason
    assert len(found) == 2


def test_missing_bounds_are_named():
    found = _found(with_parameters({"parameterId": "lr", "doubleValueSpec": {"maxValue": 1}}))
    assert set(found) == {"studySpec.parameters[0].doubleValueSpec.minValue"}
    assert found["studySpec.parameters[0].doubleValueSpec.minValue"].reason == "is required"


def test_exactly_one_value_spec_per_parameter():
    found = _found(
        with_parameters(
            {"parameterId": "lr"},
            {**LR, "parameterId": "wd", "integerValueSpec": {"minValue": 1, "maxValue": 2}},
        )
    )
    assert found["studySpec.parameters[0]"].reason == "has no value spec: the values to try"
    assert found["studySpec.parameters[1]"].reason.startswith(
        "has 2 value specs (doubleValueSpec, integerValueSpec)"
    )


def test_discrete_values_must_increase_without_repeats():
    unsorted = _only(
        with_parameters({"parameterId": "bs", "discreteValueSpec": {"values": [64, 32, 128]}})
    )
    assert unsorted.path == "studySpec.parameters[0].discreteValueSpec.values[1]"
    assert "must be increasing" in unsorted.reason
    assert unsorted.suggestion == "values: [32.0, 64.0, 128.0]"
    repeated = _only(
        with_parameters({"parameterId": "bs", "discreteValueSpec": {"values": [32, 64, 64]}})
    )
    assert repeated.path == "studySpec.parameters[0].discreteValueSpec.values[2]"
    assert repeated.reason == "64.0 repeats values[1]"


def test_discrete_values_are_limited_and_present():
    many = [float(i) for i in range(MAX_DISCRETE_VALUES + 1)]
    found = _found(
        with_parameters(
            {"parameterId": "a", "discreteValueSpec": {"values": many}},
            {"parameterId": "b", "discreteValueSpec": {"values": []}},
        )
    )
    assert found["studySpec.parameters[0].discreteValueSpec.values"].reason == (
        "has 1001 values; at most 1000"
    )
    assert found["studySpec.parameters[1].discreteValueSpec.values"].reason == (
        "needs at least one value"
    )


def test_categorical_values_are_present_and_unique_and_take_no_scale():
    found = _found(
        with_parameters(
            {"parameterId": "opt", "categoricalValueSpec": {"values": ["adam", "sgd", "adam"]}},
            {"parameterId": "act", "categoricalValueSpec": {}, "scaleType": "UNIT_LINEAR_SCALE"},
        )
    )
    assert found["studySpec.parameters[0].categoricalValueSpec.values[2]"].reason == (
        "'adam' is already values[0]"
    )
    assert found["studySpec.parameters[1].categoricalValueSpec.values"].reason == (
        "needs at least one value"
    )
    assert found["studySpec.parameters[1].scaleType"].reason == (
        "a CATEGORICAL parameter has no scale"
    )


@pytest.mark.parametrize(
    ("written", "suggestion"),
    [
        ("UNIT_LOG", "did you mean UNIT_LOG_SCALE?"),
        ("log", "did you mean UNIT_LOG_SCALE or UNIT_REVERSE_LOG_SCALE?"),
        ("EXPONENTIAL", "one of UNIT_LINEAR_SCALE, UNIT_LOG_SCALE, UNIT_REVERSE_LOG_SCALE"),
    ],
)
def test_an_unknown_scale_type_gets_the_nearest_names(written, suggestion):
    violation = _only(with_parameters({**LR, "scaleType": written}))
    assert violation.path == "studySpec.parameters[0].scaleType"
    assert violation.suggestion == suggestion


def test_defaults_are_checked_and_said_to_be_vizier_only():
    found = validate_tuning(
        with_parameters(
            {
                "parameterId": "lr",
                "doubleValueSpec": {"minValue": 0.1, "maxValue": 1, "defaultValue": 5},
            },
            {
                "parameterId": "opt",
                "categoricalValueSpec": {"values": ["adam", "sgd"], "defaultValue": "adamw"},
            },
            {"parameterId": "bs", "discreteValueSpec": {"values": [32, 64], "defaultValue": 48}},
        )
    )
    assert sum(v.severity == "warning" for v in found) == 3
    out = [v for v in found if v.severity == "error"]
    assert [v.path for v in out] == [
        "studySpec.parameters[0].doubleValueSpec.defaultValue",
        "studySpec.parameters[1].categoricalValueSpec.defaultValue",
    ]
    assert out[1].suggestion == "did you mean adam?"
    warnings = validate_tuning(
        with_parameters(
            {"parameterId": "bs", "discreteValueSpec": {"values": [32, 64], "defaultValue": 48}}
        )
    )
    assert [(v.path, v.severity) for v in warnings] == [
        ("studySpec.parameters[0].discreteValueSpec.defaultValue", "warning")
    ]
    assert "Vizier only" in warnings[0].reason


def test_parameter_ids_must_work_as_trainer_flags():
    found = _found(
        with_parameters(
            {**LR, "parameterId": "learning rate"},
            {**LAYERS, "parameterId": "layers=4"},
            {**OPTIMIZER, "parameterId": "model.optimizer"},
            {**BATCH, "parameterId": ""},
            {**LR, "parameterId": "dropout"},
            {**LR, "parameterId": "dropout"},
        )
    )
    whitespace = found["studySpec.parameters[0].parameterId"]
    assert whitespace.severity == "error" and whitespace.suggestion == "e.g. 'learning_rate'"
    assert found["studySpec.parameters[1].parameterId"].severity == "error"
    assert "--layers=4=VALUE" in found["studySpec.parameters[1].parameterId"].reason
    dotted = found["studySpec.parameters[2].parameterId"]
    assert dotted.severity == "warning" and "--model.optimizer=VALUE" in dotted.reason
    assert found["studySpec.parameters[3].parameterId"].reason == "is required"
    assert found["studySpec.parameters[5].parameterId"].reason == (
        "'dropout' is already studySpec.parameters[4]"
    )
    assert "studySpec.parameters[4].parameterId" not in found


def test_the_study_needs_metrics_and_parameters():
    found = _found(with_parameters(metrics=[]))
    assert set(found) == {"studySpec.metrics", "studySpec.parameters"}
    assert found["studySpec.metrics"].rule == "metrics"
    assert found["studySpec.parameters"].rule == "parameters"


def test_metric_ids_and_goals():
    spec = with_parameters(
        LR,
        metrics=[
            {"metricId": "val accuracy", "goal": "MAXIMIZE"},
            {"metricId": "loss", "goal": "MINIMISE"},
            {"metricId": "loss"},
            {"goal": "MAXIMIZE"},
        ],
    )
    found = {(v.path, v.reason) for v in validate_tuning(spec)}
    assert found == {
        (
            "studySpec.metrics[0].metricId",
            "'val accuracy' contains whitespace, which Vertex AI refuses in a metric id",
        ),
        ("studySpec.metrics[1].goal", "unknown goal 'MINIMISE'"),
        ("studySpec.metrics[2].metricId", "'loss' is already studySpec.metrics[1]"),
        ("studySpec.metrics[2].goal", "is required"),
        ("studySpec.metrics[3].metricId", "is required"),
    }


def test_safety_metrics_need_an_objective_beside_them():
    safety = {
        "metricId": "latency_ms",
        "goal": "MINIMIZE",
        "safetyConfig": {"safetyThreshold": 50, "desiredMinSafeTrialsFraction": 1.5},
    }
    found = _found(with_parameters(LR, metrics=[safety]))
    assert set(found) == {
        "studySpec.metrics",
        "studySpec.metrics[0].safetyConfig.desiredMinSafeTrialsFraction",
    }
    ok = {**safety, "safetyConfig": {"safetyThreshold": 50}}
    objective = {"metricId": "accuracy", "goal": "MAXIMIZE"}
    assert validate_tuning(with_parameters(LR, metrics=[objective, ok])) == []


# --- conditional parameters ----------------------------------------------------------------


def _child(condition: dict[str, Any] | None, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    child: dict[str, Any] = dict(condition or {})
    child["parameterSpec"] = spec or {
        "parameterId": "momentum",
        "doubleValueSpec": {"minValue": 0.5, "maxValue": 0.9},
    }
    return child


def test_conditions_match_the_parent_type_and_its_values():
    parents = [
        {
            **OPTIMIZER,
            "conditionalParameterSpecs": [
                _child({"parentCategoricalValues": {"values": ["sgd", "rmsprop"]}}),
                _child({"parentIntValues": {"values": [1]}}, {**LR, "parameterId": "beta"}),
            ],
        },
        {
            **LAYERS,
            "conditionalParameterSpecs": [
                _child({"parentIntValues": {"values": [4, 9]}}, {**LR, "parameterId": "dropout"})
            ],
        },
        {
            **BATCH,
            "conditionalParameterSpecs": [
                _child(
                    {"parentDiscreteValues": {"values": [64.00000000001, 100]}},
                    {**LR, "parameterId": "warmup"},
                )
            ],
        },
    ]
    found = _found(with_parameters(*parents))
    base = "studySpec.parameters[{}].conditionalParameterSpecs[{}]"
    assert found[base.format(0, 0) + ".parentCategoricalValues.values[1]"].reason == (
        "'rmsprop' is not a value of optimizer"
    )
    wrong = found[base.format(0, 1) + ".parentIntValues"]
    assert wrong.suggestion == "write the condition as parentCategoricalValues"
    assert found[base.format(1, 0) + ".parentIntValues.values[1]"].suggestion == (
        "num_layers takes 2 to 8"
    )
    assert found[base.format(2, 0) + ".parentDiscreteValues.values[1]"].reason == (
        "100.0 is not a value of batch_size"
    )
    assert len(found) == 4  # 64.00000000001 matches 64 within 1e-10


def test_a_double_parameter_cannot_be_a_parent():
    violation = _only(
        with_parameters(
            {
                **LR,
                "conditionalParameterSpecs": [_child({"parentDiscreteValues": {"values": [0.1]}})],
            }
        )
    )
    assert violation.path == "studySpec.parameters[0].conditionalParameterSpecs"


def test_a_conditional_parameter_needs_its_condition_and_its_spec():
    found = _found(
        with_parameters(
            {
                **OPTIMIZER,
                "conditionalParameterSpecs": [
                    _child(None),
                    {"parentCategoricalValues": {"values": ["sgd"]}},
                    _child(
                        {"parentCategoricalValues": {"values": []}}, {**LR, "parameterId": "beta"}
                    ),
                ],
            }
        )
    )
    base = "studySpec.parameters[0].conditionalParameterSpecs"
    assert found[f"{base}[0]"].reason.startswith("needs parentCategoricalValues")
    assert found[f"{base}[1].parameterSpec"].reason == "is required"
    assert found[f"{base}[2].parentCategoricalValues.values"].reason == (
        "needs at least one value of optimizer"
    )


def test_conditional_ids_are_shared_only_under_disjoint_conditions():
    momentum = {"parameterId": "momentum", "doubleValueSpec": {"minValue": 0.5, "maxValue": 0.9}}
    disjoint = {
        **OPTIMIZER,
        "categoricalValueSpec": {"values": ["adam", "sgd", "rmsprop"]},
        "conditionalParameterSpecs": [
            _child({"parentCategoricalValues": {"values": ["sgd"]}}, momentum),
            _child({"parentCategoricalValues": {"values": ["rmsprop"]}}, momentum),
        ],
    }
    assert validate_tuning(with_parameters(disjoint)) == []
    overlapping = {
        **disjoint,
        "conditionalParameterSpecs": [
            _child({"parentCategoricalValues": {"values": ["sgd"]}}, momentum),
            _child({"parentCategoricalValues": {"values": ["rmsprop", "sgd"]}}, momentum),
        ],
    }
    violation = _only(with_parameters(overlapping))
    assert violation.path == (
        "studySpec.parameters[0].conditionalParameterSpecs[1].parentCategoricalValues"
    )
    assert "'momentum' is also conditionalParameterSpecs[0] for sgd" in violation.reason


def test_a_conditional_id_must_not_be_a_top_level_one():
    parent = {
        **OPTIMIZER,
        "conditionalParameterSpecs": [_child({"parentCategoricalValues": {"values": ["sgd"]}}, LR)],
    }
    violation = _only(with_parameters(LR, parent))
    assert violation.path == (
        "studySpec.parameters[1].conditionalParameterSpecs[0].parameterSpec.parameterId"
    )


def test_nested_conditional_parameters_are_checked_at_their_depth():
    grandchild = {"parameterId": "nesterov_eps", "doubleValueSpec": {"minValue": 1, "maxValue": 0}}
    child = {
        **BATCH,
        "parameterId": "momentum_steps",
        "conditionalParameterSpecs": [
            _child({"parentDiscreteValues": {"values": [32]}}, grandchild)
        ],
    }
    parent = {
        **OPTIMIZER,
        "conditionalParameterSpecs": [
            _child({"parentCategoricalValues": {"values": ["sgd"]}}, child)
        ],
    }
    violation = _only(with_parameters(parent))
    assert violation.path == (
        "studySpec.parameters[0].conditionalParameterSpecs[0].parameterSpec"
        ".conditionalParameterSpecs[0].parameterSpec.doubleValueSpec.minValue"
    )


# --- study, trials ---------------------------------------------------------------------------


def test_study_enums_and_stopping_specs():
    found = _found(
        with_parameters(
            LR,
            algorithm="BAYESIAN",
            measurementSelectionType="LAST",
            observationNoise="HIGH",
            convexAutomatedStoppingSpec={
                "maxStepCount": 10,
                "minStepCount": 20,
                "learningRateParameterName": "learning_rat",
            },
        )
    )
    assert found["studySpec.algorithm"].reason == "unknown algorithm 'BAYESIAN'"
    assert "Bayesian" in str(found["studySpec.algorithm"].suggestion)
    assert found["studySpec.measurementSelectionType"].suggestion == (
        "did you mean LAST_MEASUREMENT?"
    )
    assert found["studySpec.observationNoise"].severity == "warning"
    assert found["studySpec"].reason.startswith("has 2 automated stopping specs")
    assert found["studySpec.convexAutomatedStoppingSpec.minStepCount"].rule == "study"
    assert found["studySpec.convexAutomatedStoppingSpec.learningRateParameterName"].suggestion == (
        "did you mean learning_rate?"
    )


def test_study_stopping_config_limits():
    found = _found(
        with_parameters(
            LR,
            studyStoppingConfig={
                "minNumTrials": 10,
                "maxNumTrials": 5,
                "maxNumTrialsNoProgress": -1,
                "maximumRuntimeConstraint": {
                    "maxDuration": "1d",
                    "endTime": "2030-01-01T00:00:00Z",
                },
                "minimumRuntimeConstraint": {},
            },
        )
    )
    assert set(found) == {
        "studySpec.studyStoppingConfig.minNumTrials",
        "studySpec.studyStoppingConfig.maxNumTrialsNoProgress",
        "studySpec.studyStoppingConfig.maximumRuntimeConstraint",
        "studySpec.studyStoppingConfig.minimumRuntimeConstraint",
    }


@pytest.mark.parametrize(
    ("counts", "path", "reason"),
    [
        ({"maxTrialCount": 0}, "maxTrialCount", "is required: the total number of trials"),
        ({"maxTrialCount": -3}, "maxTrialCount", "must be at least 1, not -3"),
        (
            {"parallelTrialCount": 0},
            "parallelTrialCount",
            "is required: how many trials run at once",
        ),
        (
            {"parallelTrialCount": 30},
            "parallelTrialCount",
            "30 trials at once, but the job runs 24 in all (maxTrialCount)",
        ),
        ({"maxFailedTrialCount": -1}, "maxFailedTrialCount", "must not be negative (-1)"),
        (
            {"maxFailedTrialCount": 25},
            "maxFailedTrialCount",
            "25 is more than the 24 trials the job runs (maxTrialCount)",
        ),
    ],
)
def test_trial_counts(counts, path, reason):
    violation = _only(tuning(**counts))
    assert (violation.path, violation.reason, violation.rule) == (path, reason, "trials")


def test_zero_failed_trials_lets_vertex_decide():
    assert validate_tuning(tuning(maxFailedTrialCount=0)) == []


# --- the trial's custom job ------------------------------------------------------------------


def test_custom_job_rules_apply_to_the_trial_under_its_path():
    document = config()
    pool = document["trialJobSpec"]["workerPoolSpecs"][0]
    pool["replicaCount"] = 2
    pool["machineSpec"]["acceleratorCount"] = 3
    document["labels"] = {"Team": "vision"}
    found = _found(TuningJobSpec.parse(document), region="us-central1")
    assert found["trialJobSpec.workerPoolSpecs[0].replicaCount"].rule == "pools"
    assert found["trialJobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount"].rule == (
        "compatibility"
    )
    assert "labels.Team" in found  # the tuning job's own labels keep their path


def test_job_level_fields_keep_their_own_paths():
    spec = tuning(
        project="Vision ML",
        encryptionSpec={"kmsKeyName": "projects/p/locations/europe-west4/keyRings/r/cryptoKeys/k"},
        displayName="",
    )
    found = _found(spec, region="us-central1")
    assert set(found) == {"project", "encryptionSpec.kmsKeyName", "displayName"}
    assert _only(tuning(region="mars-north1")).path == "region"


def test_a_trial_without_pools_is_named_under_trial_job_spec():
    document = config()
    document["trialJobSpec"] = {}
    assert _only(TuningJobSpec.parse(document)).path == "trialJobSpec.workerPoolSpecs"


def test_the_local_target_reaches_the_trial_rules():
    document = config()
    document["trialJobSpec"]["baseOutputDirectory"] = "./out"
    spec = TuningJobSpec.parse(document)
    assert _only(spec).path == "trialJobSpec.baseOutputDirectory"
    assert validate_tuning(spec, target="local") == []


def _container(command: list[str], args: list[str] | None = None) -> TuningJobSpec:
    document = config()
    container = document["trialJobSpec"]["workerPoolSpecs"][0]["containerSpec"]
    container["command"] = command
    container["args"] = args or []
    return TuningJobSpec.parse(document)


def test_a_shell_script_that_drops_the_parameters_is_a_warning():
    violation = _only(_container(["sh", "-c", "python -m trainer.task --epochs=20"]))
    assert violation.path == "trialJobSpec.workerPoolSpecs[0].containerSpec.command"
    assert (violation.rule, violation.severity) == ("trial-args", "warning")
    assert "--learning_rate=VALUE" in violation.reason
    assert violation.suggestion is not None and '"$@"' in violation.suggestion


def test_a_shell_script_that_passes_them_on_needs_an_argument_for_dollar_zero():
    spec = _container(["/bin/bash", "-euc", 'python -m trainer.task "$@"'])
    violation = _only(spec)
    assert "$0" in violation.reason and violation.severity == "warning"
    assert (
        validate_tuning(
            _container(["/bin/bash", "-euc", 'python -m trainer.task "$@"'], ["trainer"])
        )
        == []
    )


@pytest.mark.parametrize(
    ("command", "args"),
    [
        (["bash", "-o", "pipefail", "-c"], ["exec python train.py"]),
        (["sh", "-c"], ["python train.py $1"]),
    ],
)
def test_scripts_written_in_the_args_are_read_too(command, args):
    assert _only(_container(command, args)).rule == "trial-args"


@pytest.mark.parametrize(
    "command",
    [["python", "-m", "trainer.task"], ["bash", "run.sh"], ["sh", "-c"], ["bash", "--login"]],
)
def test_commands_that_get_the_parameters_are_not_warned_about(command):
    assert validate_tuning(_container(command)) == []


# --- documents and robustness ---------------------------------------------------------------


def test_a_document_is_parsed_then_validated():
    assert validate_tuning_document(config(), region="us-central1") == []
    document = config()
    document["maxTrialCount"] = "many"
    (violation,) = validate_tuning_document(document)
    assert (violation.path, violation.rule) == ("maxTrialCount", "schema")
    assert validate_tuning_document("studySpec: {}")[0].path == "(document)"


def test_a_validator_bug_is_reported_not_raised(monkeypatch):
    import components.rules._tuning_validation as module

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(module, "_trial_counts", broken)
    (violation,) = validate_tuning(tuning())
    assert violation.rule == "internal" and "RuntimeError: boom" in violation.reason


MANY = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@MANY
@given(st.one_of(loose_tuning(), anything))
def test_validation_never_raises_on_random_documents(document: Any) -> None:
    for violation in validate_tuning_document(document):
        assert violation.path and violation.reason
        assert violation.rule != "internal", str(violation)
