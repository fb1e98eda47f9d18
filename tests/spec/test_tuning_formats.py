"""Every form a hyperparameter tuning job comes in, read into a ``TuningJobSpec`` (issue 13).

The forms: a legacy AI Platform ``trainingInput.hyperparameters`` (HyperTune, seed 003), the
``HyperparameterTuningJob`` ``gcloud ai hp-tuning-jobs create --config`` reads, the whole job
as the API returns it, and a ``CreateHyperparameterTuningJobRequest`` body. None of them is
ever read as a single custom job: its hyperparameters would be lost, and one trial would run.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import SpecError, SpecFormatError, SpecInvalidError, TuningJobSpec
from components.cli._cli import main
from components.formats import (
    TuningJobFileError,
    load_spec_file,
    spec_from_document,
    tuning_from_document,
)
from components.formats.legacy_config import LegacyConversionError, convert_training_input
from components.formats.legacy_tuning import DEFAULT_METRIC_TAG, LEGACY_TUNING_RENAMES
from components.formats.result import in_input_terms
from components.rules._catalog import load_catalog
from components.rules._tuning_validation import validate_tuning
from components.rules._violations import Violation, errors_only

REAL = Path(__file__).parent / "data" / "real"

# A legacy HyperTune config as seed 003's users wrote them: a census model on one T4.
HYPERTUNE = """\
jobId: census_hptuning_20200401
labels: {team: growth}
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-8
  masterConfig:
    acceleratorConfig: {count: 1, type: NVIDIA_TESLA_T4}
  region: us-central1
  runtimeVersion: "2.11"
  pythonVersion: "3.7"
  pythonModule: trainer.task
  packageUris: [gs://my-bucket/census/trainer-0.1.tar.gz]
  args: [--train-steps, 1000]
  hyperparameters:
    goal: MAXIMIZE
    hyperparameterMetricTag: accuracy
    maxTrials: 30
    maxParallelTrials: 3
    maxFailedTrials: 5
    enableTrialEarlyStopping: TRUE
    algorithm: RANDOM_SEARCH
    params:
    - parameterName: learning-rate
      type: DOUBLE
      minValue: 0.0001
      maxValue: 0.1
      scaleType: UNIT_LOG_SCALE
    - parameterName: hidden-units
      type: DISCRETE
      discreteValues: [32, 64, 128]
    - parameterName: num-layers
      type: INTEGER
      minValue: 1
      maxValue: 6
      scaleType: NONE
    - parameterName: optimizer
      type: CATEGORICAL
      categoricalValues: [adam, sgd, "0.10"]
"""

VERTEX_CONFIG = """\
displayName: cifar10-sweep
maxTrialCount: 12
parallelTrialCount: 3
labels: {team: vision}
studySpec:
  metrics:
  - {metricId: val_accuracy, goal: MAXIMIZE}
  parameters:
  - parameterId: batch_size
    discreteValueSpec: {values: [32, 64, 128]}
  - parameterId: learning_rate
    doubleValueSpec: {minValue: 0.0001, maxValue: 0.1}
    scaleType: UNIT_LOG_SCALE
trialJobSpec:
  workerPoolSpecs:
  - machineSpec: {machineType: n1-standard-4, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}
    replicaCount: 1
    containerSpec: {imageUri: gcr.io/my-project/trainer:v3}
"""


def write(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def tuning_of(path: Path) -> TuningJobSpec:
    tuning = load_spec_file(path, tuning=True).tuning
    assert tuning is not None
    return tuning


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def paths(violations: Any) -> set[str]:
    return {v.path for v in violations}


# --- legacy trainingInput.hyperparameters ---------------------------------------------------


def test_legacy_hypertune_becomes_the_same_study(tmp_path: Path) -> None:
    tuning = tuning_of(write(tmp_path, HYPERTUNE))
    study = tuning.study_spec
    (metric,) = study.metrics
    assert (metric.metric_id, metric.goal) == ("accuracy", "MAXIMIZE")
    assert (tuning.max_trial_count, tuning.parallel_trial_count) == (30, 3)
    assert tuning.max_failed_trial_count == 5
    assert study.algorithm == "RANDOM_SEARCH"
    assert study.decay_curve_stopping_spec is not None
    rate, units, layers, optimizer = study.parameters
    assert rate.parameter_id == "learning-rate" and rate.scale_type == "UNIT_LOG_SCALE"
    assert rate.double_value_spec is not None
    assert (rate.double_value_spec.min_value, rate.double_value_spec.max_value) == (0.0001, 0.1)
    assert units.discrete_value_spec is not None
    assert units.discrete_value_spec.values == [32, 64, 128]
    assert layers.integer_value_spec is not None and layers.scale_type is None  # NONE
    assert (layers.integer_value_spec.min_value, layers.integer_value_spec.max_value) == (1, 6)
    assert optimizer.categorical_value_spec is not None
    assert optimizer.categorical_value_spec.values == ["adam", "sgd", "0.10"]


def test_legacy_hypertune_keeps_the_job_as_the_trials_job(tmp_path: Path) -> None:
    loaded = load_spec_file(write(tmp_path, HYPERTUNE), tuning=True)
    tuning = loaded.tuning
    assert tuning is not None and loaded.kind == "hyperparameter-tuning-job"
    assert loaded.format == "legacy-config"
    assert (tuning.display_name, tuning.region, tuning.labels) == (
        "census_hptuning_20200401",
        "us-central1",
        {"team": "growth"},
    )
    (pool,) = tuning.trial_job_spec.worker_pool_specs
    assert pool.machine_spec is not None
    assert (pool.machine_spec.machine_type, pool.machine_spec.accelerator_type) == (
        "n1-standard-8",
        "NVIDIA_TESLA_T4",
    )
    package = pool.python_package_spec
    assert package is not None and package.python_module == "trainer.task"
    assert package.args == ["--train-steps", "1000"]
    assert loaded.spec == tuning.trial_job()
    assert any("decayCurveStoppingSpec" in note for note in loaded.notes)
    assert any("cloudml-hypertune" in note for note in loaded.notes)


def test_legacy_defaults_are_the_services_and_said(tmp_path: Path) -> None:
    text = HYPERTUNE.split("  hyperparameters:")[0] + (
        "  hyperparameters:\n    params:\n"
        "    - {parameterName: lr, type: DOUBLE, minValue: 0.01, maxValue: 0.1}\n"
    )
    loaded = load_spec_file(write(tmp_path, text), tuning=True)
    assert loaded.tuning is not None
    (metric,) = loaded.tuning.study_spec.metrics
    assert (metric.metric_id, metric.goal) == (DEFAULT_METRIC_TAG, "MAXIMIZE")
    assert (loaded.tuning.max_trial_count, loaded.tuning.parallel_trial_count) == (1, 1)
    assert loaded.tuning.max_failed_trial_count == 0
    for said in ("hyperparameterMetricTag not set", "goal not set", "maxTrials not set"):
        assert any(note.startswith(said) for note in loaded.notes), said


def test_a_tuning_job_is_never_read_as_a_single_job(tmp_path: Path) -> None:
    for name, text in (("legacy.yaml", HYPERTUNE), ("vertex.yaml", VERTEX_CONFIG)):
        path = write(tmp_path, text, name)
        with pytest.raises(TuningJobFileError, match="use HyperparameterTuningJob"):
            load_spec_file(path)
    for name in (
        "vertex_hp_tuning_described.json",
        "vertex_hp_tuning_request.json",
        "legacy_hypertune.yaml",
    ):
        with pytest.raises(SpecFormatError, match="is a hyperparameter tuning job"):
            load_spec_file(REAL / name)
        assert load_spec_file(REAL / name, tuning=True).tuning is not None


def test_the_converter_still_refuses_hyperparameters_unless_asked(tmp_path: Path) -> None:
    document = yaml.safe_load(HYPERTUNE)
    with pytest.raises(LegacyConversionError) as info:
        convert_training_input(document["trainingInput"])
    (violation,) = info.value.violations
    assert violation.path == "trainingInput.hyperparameters"
    assert violation.reason.startswith(
        "this is a hyperparameter tuning job (4 parameters (learning-rate, hidden-units, "
        "num-layers, ...), goal MAXIMIZE of 'accuracy', maxTrials 30, maxParallelTrials 3)"
    )
    conversion = convert_training_input(document["trainingInput"], tuning=True)
    assert conversion.tuning is not None and len(conversion.tuning.study_spec.parameters) == 4


def test_an_empty_tuning_block_is_a_single_job_with_a_note(tmp_path: Path) -> None:
    text = HYPERTUNE.split("  hyperparameters:")[0] + "  hyperparameters: {}\n"
    loaded = load_spec_file(write(tmp_path, text), tuning=True)
    assert loaded.tuning is None
    assert "trainingInput.hyperparameters is empty: nothing to tune" in loaded.notes


def test_resume_previous_job_is_refused_naming_the_field(tmp_path: Path) -> None:
    text = HYPERTUNE.replace(
        "    maxTrials: 30\n", "    maxTrials: 30\n    resumePreviousJobId: j1\n"
    )
    with pytest.raises(LegacyConversionError) as info:
        load_spec_file(write(tmp_path, text), tuning=True)
    (violation,) = info.value.violations
    assert violation.path == "trainingInput.hyperparameters.resumePreviousJobId"
    assert "cannot resume" in violation.reason
    conversion = info.value.conversion  # priced as written all the same
    assert conversion is not None and conversion.tuning is not None


def test_a_retired_gpu_in_a_tuning_job_is_named_and_the_job_priced_as_written(
    tmp_path: Path,
) -> None:
    text = HYPERTUNE.replace("type: NVIDIA_TESLA_T4", "type: NVIDIA_TESLA_K80")
    path = write(tmp_path, text)
    with pytest.raises(LegacyConversionError) as info:
        load_spec_file(path, tuning=True)
    assert paths(info.value.violations) == {"trainingInput.masterConfig.acceleratorConfig.type"}
    code, out, err = run("estimate", str(path))
    assert code == 0, err
    assert "priced as written" in err
    assert "3 trials at once" in out and "at most (30 trials" in out


@pytest.mark.parametrize(
    ("change", "path", "reason"),
    [
        ("    - parameterName: lr\n", ".params[4].type", "is required"),
        ("    - {parameterName: lr, type: double}\n", ".params[4].type", "did you mean"),
        (
            "    - {parameterName: lr, type: INTEGER, minValue: 0.5, maxValue: 4}\n",
            ".params[4].minValue",
            "whole number",
        ),
        (
            "    - {parameterName: lr, type: DOUBLE, minValue: 1, maxValue: 2,"
            " categoricalValues: [a]}\n",
            ".params[4].categoricalValues",
            "is for CATEGORICAL parameters; this one is DOUBLE",
        ),
        (
            "    - {parameterName: lr, type: DISCRETE, discreteValues: [1, 2], maxValue: 3}\n",
            ".params[4].maxValue",
            "is for DOUBLE and INTEGER parameters",
        ),
        ("    - {parameterName: lr, type: DOUBLE, minVal: 1}\n", ".params[4].minVal", "minValue"),
    ],
)
def test_legacy_parameters_that_cannot_convert_name_the_field(
    tmp_path: Path, change: str, path: str, reason: str
) -> None:
    with pytest.raises(LegacyConversionError) as info:
        load_spec_file(write(tmp_path, HYPERTUNE + change), tuning=True)
    found = [v for v in info.value.violations if v.path == "trainingInput.hyperparameters" + path]
    assert found, info.value.violations
    assert reason in str(found[0])


@pytest.mark.parametrize(
    ("old", "new", "path"),
    [
        ("minValue: 0.0001", "minValue: 0.5", ".params[0].minValue"),  # above maxValue
        ("maxParallelTrials: 3", "maxParallelTrials: 40", ".maxParallelTrials"),
        ("goal: MAXIMIZE", "goal: BIGGER", ".goal"),
        ("scaleType: UNIT_LOG_SCALE", "scaleType: LOG", ".params[0].scaleType"),
        (
            "discreteValues: [32, 64, 128]",
            "discreteValues: [64, 32]",
            ".params[1].discreteValues[1]",
        ),
        ("algorithm: RANDOM_SEARCH", "algorithm: GRID_SEARCH", ".params[0]"),  # DOUBLE
        (
            "hyperparameterMetricTag: accuracy",
            "hyperparameterMetricTag: val acc",
            ".hyperparameterMetricTag",
        ),
    ],
)
def test_validation_of_a_legacy_study_speaks_the_configs_terms(
    tmp_path: Path, old: str, new: str, path: str
) -> None:
    assert old in HYPERTUNE
    code, out, _ = run("validate", str(write(tmp_path, HYPERTUNE.replace(old, new))), "--json")
    report = json.loads(out)
    assert code == 1, out
    assert "trainingInput.hyperparameters" + path in {v["path"] for v in report["violations"]}
    assert not any(v["path"].startswith("studySpec") for v in report["violations"])


# Wrong types at every legacy tuning field: a violation naming the field, never a crash.
_LEGACY_FIELDS = [
    "goal",
    "hyperparameterMetricTag",
    "maxTrials",
    "maxParallelTrials",
    "maxFailedTrials",
    "enableTrialEarlyStopping",
    "algorithm",
    "params",
    "params.0",
    "params.0.parameterName",
    "params.0.type",
    "params.0.minValue",
    "params.0.maxValue",
    "params.0.scaleType",
    "params.1.discreteValues",
    "params.3.categoricalValues",
]
_WRONG = [["a", "b"], {"x": 1}, "x" * 5000, 2**80, 1e400, True, "nan"]


def _set(document: Any, dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        document = document[int(part)] if part.isdigit() else document[part]
    if last.isdigit():
        document[int(last)] = value
    else:
        document[last] = value


def _legacy_path(dotted: str) -> str:
    """``params.0.minValue`` → ``trainingInput.hyperparameters.params[0].minValue``."""
    path = "trainingInput.hyperparameters"
    for part in dotted.split("."):
        path += f"[{part}]" if part.isdigit() else f".{part}"
    return path


@pytest.mark.parametrize("field", _LEGACY_FIELDS)
def test_wrong_types_in_a_legacy_tuning_block_name_the_field(field: str) -> None:
    expected = _legacy_path(field)
    for value in _WRONG:
        document = yaml.safe_load(HYPERTUNE)
        _set(document["trainingInput"]["hyperparameters"], field, value)
        try:
            loaded = spec_from_document(document, tuning=True)
        except SpecInvalidError as exc:
            assert any(v.path.startswith(expected) for v in exc.violations), (value, exc)
            assert max(len(str(v)) for v in exc.violations) < 600
        else:  # a value of the right shape: validation says what is wrong with it, if anything
            assert loaded.tuning is not None
            found = loaded.in_input_terms(errors_only(validate_tuning(loaded.tuning)))
            assert not found or any(v.path.startswith(expected) for v in found), (value, found)


# --- Vertex AI documents ------------------------------------------------------------------


def test_vertex_config_is_read_with_gclouds_defaults(tmp_path: Path) -> None:
    tuning = tuning_of(write(tmp_path, VERTEX_CONFIG))
    (batch, rate) = tuning.study_spec.parameters
    assert batch.discrete_value_spec is not None
    assert batch.discrete_value_spec.values == [32, 64, 128]
    assert rate.scale_type == "UNIT_LOG_SCALE"
    assert (tuning.max_trial_count, tuning.parallel_trial_count) == (12, 3)
    text = "\n".join(line for line in VERTEX_CONFIG.splitlines() if "TrialCount" not in line)
    loaded = load_spec_file(write(tmp_path, text), tuning=True)
    assert loaded.tuning is not None
    assert (loaded.tuning.max_trial_count, loaded.tuning.parallel_trial_count) == (1, 1)
    assert any("--max-trial-count" in note for note in loaded.notes)


def test_a_described_job_ignores_its_output_only_fields() -> None:
    loaded = load_spec_file(REAL / "vertex_hp_tuning_described.json", tuning=True)
    assert loaded.format == "hyperparameter-tuning-job" and loaded.tuning is not None
    assert loaded.notes[0] == (
        "output-only fields ignored: name, trials, state, createTime, startTime, updateTime"
    )
    # and the trial's TensorFlow 2.15 image is past its end of availability (catalog)
    assert [n for n in loaded.notes[1:] if "end of availability" not in n] == []
    assert loaded.tuning.max_trial_count == 8
    assert loaded.tuning.trial_job_spec.base_output_directory == "gs://my-bucket/cifar10/hp"


def test_a_request_body_gives_project_and_region_from_parent() -> None:
    loaded = load_spec_file(REAL / "vertex_hp_tuning_request.json", tuning=True)
    assert loaded.format == "create-hyperparameter-tuning-job-request"
    assert loaded.tuning is not None
    assert (loaded.tuning.project, loaded.tuning.region) == ("my-project", "europe-west4")
    assert loaded.tuning.study_spec.median_automated_stopping_spec is not None
    max_depth = loaded.tuning.study_spec.parameters[0].integer_value_spec
    assert max_depth is not None and (max_depth.min_value, max_depth.max_value) == (3, 12)


@pytest.mark.parametrize(
    ("request_body", "path"),
    [
        (
            {"parent": "projects/p/locations/us-central1", "hyperparameterTuningJob": []},
            "hyperparameterTuningJob",
        ),
        ({"parent": "p/us-central1", "hyperparameterTuningJob": {}}, "parent"),
        (
            {
                "parent": "projects/p/locations/us-central1",
                "hyperparameterTuningJob": {"region": "europe-west4"},
            },
            "hyperparameterTuningJob.region",
        ),
        (
            {"hyperparameterTuningJob": {}, "hyperparameterTuningJobId": "x"},
            "hyperparameterTuningJobId",
        ),
    ],
)
def test_a_bad_request_body_names_the_field(request_body: dict[str, Any], path: str) -> None:
    with pytest.raises(SpecInvalidError) as info:
        spec_from_document(request_body, tuning=True)
    assert path in paths(info.value.violations)


def test_a_request_gets_no_gcloud_defaults() -> None:
    request = {
        "parent": "projects/p/locations/us-central1",
        "hyperparameterTuningJob": yaml.safe_load(VERTEX_CONFIG.replace("maxTrialCount: 12\n", "")),
    }
    loaded = spec_from_document(request, tuning=True)
    assert loaded.tuning is not None and loaded.tuning.max_trial_count == 0
    code, out, _ = run("validate", str(REAL / "vertex_hp_tuning_request.json"), "--json")
    assert code == 0 and json.loads(out)["kind"] == "hyperparameter-tuning-job"


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("maxTrialCount", [1], "maxTrialCount"),
        ("maxTrialCount", 2**40, "maxTrialCount"),
        ("studySpec", "x", "studySpec"),
        ("studySpec.parameters.0.doubleValueSpec", {"minValue": "low"}, "doubleValueSpec.minValue"),
        ("studySpec.metrics.0.metricId", {"a": 1}, "metricId"),
        ("trialJobSpec.workerPoolSpecs.0.replicaCount", "many", "replicaCount"),
        ("studySpec.parameters.1.scaleType", ["UNIT_LOG_SCALE"], "scaleType"),
    ],
)
def test_wrong_types_in_a_vertex_tuning_job_name_the_field(
    field: str, value: Any, path: str
) -> None:
    document = yaml.safe_load(VERTEX_CONFIG)
    _set(document, field, value)
    with pytest.raises(SpecInvalidError) as info:
        tuning_from_document(document)
    assert any(path in v.path for v in info.value.violations), info.value.violations


def test_overrides_are_set_over_the_document_as_flags_over_a_config() -> None:
    loaded = tuning_from_document(
        yaml.safe_load(VERTEX_CONFIG),
        "c.yaml",
        overrides={
            "displayName": "from-flag",
            "maxTrialCount": 20,
            "region": "us-east1",
            "trialJobSpec.serviceAccount": "sa@p.iam.gserviceaccount.com",
            "studySpec.algorithm": "RANDOM_SEARCH",
        },
    )
    tuning = loaded.tuning
    assert tuning is not None
    assert (tuning.display_name, tuning.max_trial_count, tuning.region) == (
        "from-flag",
        20,
        "us-east1",
    )
    assert tuning.trial_job_spec.service_account == "sa@p.iam.gserviceaccount.com"
    assert tuning.study_spec.algorithm == "RANDOM_SEARCH"
    assert len(tuning.study_spec.parameters) == 2  # the rest of the document is kept


def test_every_form_is_detected_and_none_is_a_custom_job() -> None:
    forms = {
        "legacy_hypertune.yaml": "legacy-config",
        "vertex_hp_tuning_config.yaml": "hyperparameter-tuning-job",
        "vertex_hp_tuning_job.yaml": "hyperparameter-tuning-job",
        "vertex_hp_tuning_described.json": "hyperparameter-tuning-job",
        "vertex_hp_tuning_request.json": "create-hyperparameter-tuning-job-request",
    }
    for name, form in forms.items():
        loaded = load_spec_file(REAL / name, tuning=True)
        assert (loaded.format, loaded.kind) == (form, "hyperparameter-tuning-job"), name
        assert loaded.tuning is not None and loaded.tuning.study_spec.parameters


def test_paths_in_input_terms() -> None:
    found = in_input_terms(
        [
            Violation(
                "studySpec.parameters[3].discreteValueSpec.values[2]", "r", rule="parameters"
            ),
            Violation("studySpec.parameters[0].doubleValueSpec.maxValue", "r", rule="parameters"),
            Violation("studySpec.parameters[1].integerValueSpec", "r", rule="parameters"),
            Violation("parallelTrialCount", "r", rule="trials"),
            Violation("trialJobSpec.workerPoolSpecs[0].machineSpec", "r", rule="machine"),
        ],
        LEGACY_TUNING_RENAMES,
    )
    assert [v.path for v in found] == [
        "trainingInput.hyperparameters.params[3].discreteValues[2]",
        "trainingInput.hyperparameters.params[0].maxValue",
        "trainingInput.hyperparameters.params[1]",
        "trainingInput.hyperparameters.maxParallelTrials",
        "trialJobSpec.workerPoolSpecs[0].machineSpec",
    ]


# --- the CLI ------------------------------------------------------------------------------


def test_validate_reports_the_kind(tmp_path: Path) -> None:
    code, out, _ = run("validate", str(write(tmp_path, HYPERTUNE)), "--json")
    report = json.loads(out)
    assert code == 0, out
    assert (report["kind"], report["format"]) == ("hyperparameter-tuning-job", "legacy-config")
    code, _, err = run("validate", str(write(tmp_path, VERTEX_CONFIG)), "--region", "us-central1")
    assert code == 0 and "valid (hyperparameter tuning job, hyperparameter-tuning-job)" in err


def test_validate_checks_the_trials_job_too(tmp_path: Path) -> None:
    text = VERTEX_CONFIG.replace("acceleratorCount: 1", "acceleratorCount: 3")
    code, out, _ = run("validate", str(write(tmp_path, text)), "--json")
    assert code == 1
    assert "trialJobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount" in {
        v["path"] for v in json.loads(out)["violations"]
    }


def test_convert_prints_the_hp_tuning_jobs_config(tmp_path: Path) -> None:
    code, out, err = run("convert", str(write(tmp_path, HYPERTUNE)))
    assert code == 0, err
    header, _, body = out.partition("\n")
    assert header == (
        "# gcloud ai hp-tuning-jobs create --region=us-central1 "
        "--display-name=census_hptuning_20200401 --max-trial-count=30 "
        "--parallel-trial-count=3 --config=THIS_FILE"
    )
    document = yaml.safe_load(body)
    assert "project" not in document and "region" not in document
    assert document["studySpec"]["parameters"][1]["discreteValueSpec"] == {"values": [32, 64, 128]}
    assert document["studySpec"]["parameters"][0]["scaleType"] == "UNIT_LOG_SCALE"
    assert document["studySpec"]["metrics"] == [{"metricId": "accuracy", "goal": "MAXIMIZE"}]
    # What convert prints reads back as the same tuning job (gcloud's --config form).
    again = tuning_from_document(document).tuning
    original = tuning_of(write(tmp_path, HYPERTUNE))
    assert again is not None
    assert again.study_spec == original.study_spec
    assert again.trial_job_spec == original.trial_job_spec


def test_convert_of_an_invalid_tuning_job_exits_1_naming_the_field(tmp_path: Path) -> None:
    text = HYPERTUNE.replace("minValue: 0.0001", "minValue: -1")
    code, out, err = run("convert", str(write(tmp_path, text)))
    assert code == 1 and out == ""
    assert "trainingInput.hyperparameters.params[0].minValue" in err


def test_estimate_prices_one_trial_the_parallel_trials_and_all_trials(tmp_path: Path) -> None:
    catalog = load_catalog()
    text = VERTEX_CONFIG.replace("    containerSpec:", "    containerSpec:", 1)
    text += "  scheduling: {timeout: 7200s}\n"
    code, out, err = run("estimate", str(write(tmp_path, text)), "--region", "us-central1")
    assert code == 0, err
    lines = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    trial = float(lines["one trial $/h"])
    assert trial > 0, "n1-standard-4 with a T4 is priced in us-central1"
    assert float(lines["3 trials at once (parallelTrialCount) $/h"]) == pytest.approx(
        3 * trial, abs=1e-3
    )
    ceiling = lines["at most (12 trials (maxTrialCount), each to its timeout 2 h)"]
    assert float(ceiling.strip("$").replace(",", "")) == pytest.approx(12 * 2 * trial, abs=0.01)
    assert catalog.regions  # the table of prices came from the catalog
    code, out, _ = run("estimate", str(write(tmp_path, text)), "--compare-regions")
    assert code == 0 and "$/H (3 AT ONCE)" in out and "MAX $ (12 TRIALS x 2 h)" in out


def test_no_input_with_hyperparameters_becomes_a_plain_job(tmp_path: Path) -> None:
    """Whatever reads a tuning file gets a tuning job, or an error: never a custom job."""
    files = [write(tmp_path, HYPERTUNE, "a.yaml"), write(tmp_path, VERTEX_CONFIG, "b.yaml")]
    files += [p for p in REAL.iterdir() if "hypertune" in p.name or "hp_tuning" in p.name]
    for path in files:
        try:
            loaded = load_spec_file(path, tuning=True)
        except SpecError:
            continue
        assert loaded.tuning is not None, path.name
        for command in ("validate", "convert"):
            _, out, err = run(command, str(path))
            assert "custom-jobs create" not in out and "(custom-job" not in err, path.name


def test_a_trials_earlier_executor_image_name_is_read_as_vertex_ais(tmp_path: Path) -> None:
    text = VERTEX_CONFIG.replace(
        "containerSpec: {imageUri: gcr.io/my-project/trainer:v3}",
        "pythonPackageSpec: {executorImageUri: gcr.io/cloud-ml-public/training/pytorch-gpu.1-13,"
        " packageUris: [gs://bkt/t.tgz], pythonModule: trainer.task}",
    )
    loaded = load_spec_file(write(tmp_path, text), tuning=True)
    assert loaded.tuning is not None
    (pool,) = loaded.tuning.trial_job_spec.worker_pool_specs
    assert pool.python_package_spec is not None
    expected = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.1-13:latest"
    assert pool.python_package_spec.executor_image_uri == expected
    trial = loaded.spec.worker_pool_specs[0].python_package_spec
    assert trial is not None and trial.executor_image_uri == expected
    assert any("earlier name of a prebuilt training image" in n for n in loaded.notes)
