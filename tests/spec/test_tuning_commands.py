"""Tuning jobs submitted by command lines, read as the tuning jobs they are.

``gcloud ai hp-tuning-jobs create --config`` (``formats.tuning_command``) is read as gcloud
builds its job (``api_lib/ai/hp_tuning_jobs/client.py``): the flags over the config, a count
neither sets sent as 1. A legacy ``gcloud ai-platform jobs submit training`` whose config holds
``trainingInput.hyperparameters`` becomes the Vertex tuning job it would be. Neither is ever
handed over as a single custom job.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from components import SpecFormatError, SpecInvalidError, TuningJobSpec, load_spec_file
from components.cli._cli import main
from components.formats import LoadedSpec, TuningJobFileError
from components.formats.tuning_command import parse_hp_tuning_create
from tests.spec.test_gcloud_commands import written

IMAGE = "gcr.io/p/trainer:v3"
STUDY = (
    "studySpec:\n  metrics:\n  - {metricId: loss, goal: MINIMIZE}\n  parameters:\n"
    "  - parameterId: lr\n    doubleValueSpec: {minValue: 0.0001, maxValue: 0.1}\n"
    "    scaleType: UNIT_LOG_SCALE\n  - parameterId: batch_size\n"
    "    discreteValueSpec: {values: [16, 32, 64]}\n"
)
TRIAL = (
    "trialJobSpec:\n  workerPoolSpecs:\n  - machineSpec:\n      machineType: n1-standard-8\n"
    "      acceleratorType: NVIDIA_TESLA_T4\n      acceleratorCount: 1\n    replicaCount: 1\n"
    f"    containerSpec:\n      imageUri: {IMAGE}\n"
)
CONFIG = STUDY + TRIAL
CREATE = (
    "gcloud ai hp-tuning-jobs create --region=us-central1 --display-name=lr-search "
    "--config=hpt.yaml"
)
LEGACY_HP = (
    "trainingInput:\n  scaleTier: BASIC\n  hyperparameters:\n    goal: MAXIMIZE\n"
    "    hyperparameterMetricTag: accuracy\n    maxTrials: 12\n    maxParallelTrials: 3\n"
    "    params:\n    - parameterName: learning_rate\n      type: DOUBLE\n"
    "      minValue: 0.0001\n      maxValue: 0.1\n      scaleType: UNIT_LOG_SCALE\n"
)
LEGACY = (
    "gcloud ai-platform jobs submit training census_hpt --region us-central1 "
    "--module-name trainer.task --packages gs://bkt/trainer-0.1.tar.gz "
    "--runtime-version 2.11 --python-version 3.7 --job-dir gs://bkt/census"
)


def loaded(tmp_path: Path, script: str, **files: str) -> LoadedSpec:
    return load_spec_file(written(tmp_path, script, files), env={}, tuning=True)


def single_job(tmp_path: Path, script: str, **files: str) -> LoadedSpec:
    """What a caller asking for a single custom job gets."""
    return load_spec_file(written(tmp_path, script, files), env={})


def tuning_of(tmp_path: Path, script: str, **files: str) -> tuple[TuningJobSpec, list[str]]:
    result = loaded(tmp_path, script, **files)
    assert result.kind == "hyperparameter-tuning-job" and result.tuning is not None
    assert result.format == "gcloud-command"
    return result.tuning, result.notes


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


# --- gcloud ai hp-tuning-jobs create ------------------------------------------------------


@pytest.mark.parametrize("track", ["", "beta ", "alpha "])
def test_create_reads_the_study_and_the_trial_job(tmp_path: Path, track: str) -> None:
    script = (
        f"gcloud {track}ai hp-tuning-jobs create --region=us-central1 --display-name=lr-search"
        " --max-trial-count=12 --parallel-trial-count=3 --config=hpt.yaml\n"
    )
    tuning, notes = tuning_of(tmp_path, script, hpt__yaml=CONFIG)
    assert (tuning.display_name, tuning.region) == ("lr-search", "us-central1")
    assert (tuning.max_trial_count, tuning.parallel_trial_count) == (12, 3)
    study = tuning.study_spec
    assert [m.metric_id for m in study.metrics] == ["loss"]
    assert [p.parameter_id for p in study.parameters] == ["lr", "batch_size"]
    assert study.parameters[1].discrete_value_spec is not None
    assert study.parameters[1].discrete_value_spec.values == [16, 32, 64]
    (pool,) = tuning.trial_job_spec.worker_pool_specs
    assert pool.container_spec is not None and pool.container_spec.image_uri == IMAGE
    assert (
        notes[0] == f"read the gcloud command at line 1 (`gcloud {track}ai hp-tuning-jobs create`)"
    )
    assert f"read --config {tmp_path / 'hpt.yaml'}; flags override its values" in notes
    assert not any("not set" in note for note in notes)


def test_a_count_neither_the_config_nor_a_flag_sets_is_one(tmp_path: Path) -> None:
    tuning, notes = tuning_of(tmp_path, CREATE + "\n", hpt__yaml=CONFIG)
    assert (tuning.max_trial_count, tuning.parallel_trial_count) == (1, 1)
    assert any(n.startswith("maxTrialCount not set") and "--max-trial-count" in n for n in notes)
    assert any(n.startswith("parallelTrialCount not set") for n in notes)


def test_flags_override_the_config_as_gcloud_does(tmp_path: Path) -> None:
    config = (
        "displayName: from-config\nmaxTrialCount: 40\nparallelTrialCount: 4\n"
        "maxFailedTrialCount: 5\nlabels: {team: vision, env: dev}\n"
        + STUDY
        + "  algorithm: RANDOM_SEARCH\n"
        + TRIAL
        + "  serviceAccount: config-sa@p.iam.gserviceaccount.com\n"
    )
    script = (
        "gcloud beta ai hp-tuning-jobs create --project=p --region=europe-west4 \\\n"
        "  --display-name=override --parallel-trial-count=8 --algorithm=grid-search \\\n"
        "  --labels=env=prod --service-account=sa@p.iam.gserviceaccount.com \\\n"
        "  --network=projects/123/global/networks/vpc --enable-web-access \\\n"
        "  --enable-dashboard-access --kms-key=k --kms-keyring=r --kms-location=europe-west4 \\\n"
        "  --config=hpt.yaml\n"
    )
    tuning, _ = tuning_of(tmp_path, script, hpt__yaml=config)
    assert (tuning.project, tuning.region, tuning.display_name) == ("p", "europe-west4", "override")
    assert (tuning.max_trial_count, tuning.parallel_trial_count) == (40, 8)
    assert tuning.max_failed_trial_count == 5  # only the config sets it
    assert tuning.labels == {"env": "prod"}  # --labels replaces the config's labels
    assert tuning.study_spec.algorithm == "GRID_SEARCH"
    trial = tuning.trial_job_spec
    assert trial.service_account == "sa@p.iam.gserviceaccount.com"
    assert trial.network == "projects/123/global/networks/vpc"
    assert trial.enable_web_access and trial.enable_dashboard_access
    assert tuning.encryption_spec is not None
    assert tuning.encryption_spec.kms_key_name == (
        "projects/p/locations/europe-west4/keyRings/r/cryptoKeys/k"
    )


def test_a_zero_count_flag_keeps_the_config_value(tmp_path: Path) -> None:
    tuning, notes = tuning_of(
        tmp_path, CREATE + " --max-trial-count=0\n", hpt__yaml="maxTrialCount: 6\n" + CONFIG
    )
    assert tuning.max_trial_count == 6
    assert any(n.startswith("--max-trial-count=0 is not used") for n in notes)


@pytest.mark.parametrize("written", ["RANDOM_SEARCH", "random-search", "Random-Search"])
def test_algorithm_choices_read_as_the_api_names_them(tmp_path: Path, written: str) -> None:
    tuning, _ = tuning_of(tmp_path, f"{CREATE} --algorithm={written}\n", hpt__yaml=CONFIG)
    assert tuning.study_spec.algorithm == "RANDOM_SEARCH"


def test_project_and_region_from_gcloud_config_set(tmp_path: Path) -> None:
    script = (
        "gcloud config set project my-proj\ngcloud config set ai/region asia-east1\n"
        "gcloud ai hp-tuning-jobs create --display-name=t --config=hpt.yaml\n"
    )
    tuning, notes = tuning_of(tmp_path, script, hpt__yaml=CONFIG)
    assert (tuning.project, tuning.region) == ("my-proj", "asia-east1")
    assert "project from `gcloud config set` in the script" in notes


def test_a_heredoc_config_with_computed_values(tmp_path: Path) -> None:
    script = (
        "#!/bin/bash\nset -e\nTAG=$(git rev-parse --short HEAD)\nMACHINE=n1-highmem-8\n"
        "cat > hpt.yaml <<EOF\n"
        + STUDY
        + "trialJobSpec:\n  workerPoolSpecs:\n  - machineSpec: {machineType: $MACHINE}\n"
        "    replicaCount: 1\n    containerSpec: {imageUri: 'gcr.io/p/trainer:$TAG'}\n"
        "EOF\n"
        f"{CREATE} --max-trial-count=4\n"
    )
    stale = "studySpec: {}\ntrialJobSpec: {}\n"  # a file on disk: never what the command reads
    # A computed image tag is never kept as written (it would be the image pulled).
    with pytest.raises(SpecFormatError, match=r"imageUri needs a value .*set TAG in the env"):
        tuning_of(tmp_path, script, hpt__yaml=stale)
    path = tmp_path / "submit.sh"
    result = load_spec_file(path, env={"TAG": "abc123"}, tuning=True)
    tuning, notes = result.tuning, result.notes
    assert tuning is not None
    (pool,) = tuning.trial_job_spec.worker_pool_specs
    assert pool.machine_spec is not None and pool.machine_spec.machine_type == "n1-highmem-8"
    assert pool.container_spec is not None
    assert pool.container_spec.image_uri == "gcr.io/p/trainer:abc123"
    assert [p.parameter_id for p in tuning.study_spec.parameters] == ["lr", "batch_size"]
    assert "--config hpt.yaml: written by the heredoc at line 5; flags override its values" in notes


def test_a_computed_value_where_the_validator_checks_it_whole_is_refused(tmp_path: Path) -> None:
    script = f"METRIC=$(cat metric.txt)\n{CREATE} --algorithm=$METRIC\n"
    with pytest.raises(SpecFormatError, match=r"\$METRIC"):
        loaded(tmp_path, script, hpt__yaml=CONFIG)


def test_a_makefile_recipe(tmp_path: Path) -> None:
    (tmp_path / "hpt.yaml").write_text(CONFIG)
    path = tmp_path / "Makefile"
    path.write_text(
        "REGION ?= us-central1\nTRIALS := 20\n\ntune:\n"
        "\tgcloud ai hp-tuning-jobs create --region=$(REGION) --display-name=$@ \\\n"
        "\t  --max-trial-count=$(TRIALS) --parallel-trial-count=5 --config=hpt.yaml\n"
    )
    result = load_spec_file(path, env={}, tuning=True)
    assert result.tuning is not None
    assert (result.tuning.display_name, result.tuning.max_trial_count) == ("tune", 20)


def test_never_handed_over_as_a_single_job(tmp_path: Path) -> None:
    with pytest.raises(TuningJobFileError, match="not a single custom job"):
        single_job(tmp_path, CREATE + "\n", hpt__yaml=CONFIG)


# --- what gcloud refuses, said in the command's terms -------------------------------------


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            "--max-trials-count=4",
            "unknown flag --max-trials-count .*did you mean --max-trial-count",
        ),
        ("--parallel-trials=2", "did you mean --parallel-trial-count"),
        ("--service-acount=sa", "did you mean --service-account"),
        ("--worker-pool-spec=machine-type=n1", "unknown flag --worker-pool-spec"),
        ("--max-failed-trial-count=3", "no --max-failed-trial-count flag .*maxFailedTrialCount"),
        ("--algorithm=bayesian", "unknown algorithm 'bayesian' .*grid-search"),
        ("--algorithm=grid_serch", "did you mean grid-search"),
        ("--max-trial-count=ten", "--max-trial-count must be a whole number, got 'ten'"),
        ("--labels=team", "--labels: expected KEY=VALUE"),
        ("--kms-key=k", "--kms-key: the encryption key is not fully specified"),
        ("extra", "takes no arguments, got 'extra'"),
    ],
)
def test_flags_gcloud_refuses(tmp_path: Path, flags: str, message: str) -> None:
    with pytest.raises(SpecFormatError, match=message) as info:
        loaded(tmp_path, f"{CREATE} {flags}\n", hpt__yaml=CONFIG)
    assert str(info.value).startswith("line 1: ")


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("--region=us-central1 --config=hpt.yaml", "--display-name is required"),
        ("--region=us-central1 --display-name=t", "--config is required"),
    ],
)
def test_required_flags(command: str, message: str) -> None:
    with pytest.raises(SpecFormatError, match=message):
        parse_hp_tuning_create(command.split())


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("trainingInput: {scaleTier: BASIC}\n", "legacy trainingInput.*ai-platform jobs submit"),
        ("workerPoolSpecs: []\n", "a CustomJobSpec: .*under trialJobSpec"),
        ("jobSpec: {}\n", "a CustomJob: .*trialJobSpec"),
        ("hyperparameterTuningJob: {}\n", "CreateHyperparameterTuningJobRequest"),
        ("study_spec: {}\ntrial_job_spec: {}\n", "camelCase fields only.*'study_spec'"),
        ("- a\n", "must hold a HyperparameterTuningJob mapping"),
    ],
)
def test_config_must_be_a_tuning_job(tmp_path: Path, config: str, message: str) -> None:
    with pytest.raises(SpecFormatError, match=message):
        loaded(tmp_path, CREATE + "\n", hpt__yaml=config)


def test_a_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(SpecFormatError, match=r"hpt\.yaml"):
        loaded(tmp_path, CREATE + "\n")


def test_a_bad_value_is_said_at_its_flag(tmp_path: Path) -> None:
    with pytest.raises(SpecInvalidError) as info:
        loaded(tmp_path, f"{CREATE} --max-trial-count=99999999999\n", hpt__yaml=CONFIG)
    assert [v.path for v in info.value.violations] == ["--max-trial-count"]


def report(path: Path) -> tuple[int, dict[str, Any]]:
    code, out, _ = cli("validate", str(path), "--json")
    return code, json.loads(out)


def test_validation_says_flag_values_at_their_flags(tmp_path: Path) -> None:
    (tmp_path / "hpt.yaml").write_text(CONFIG)
    path = tmp_path / "tune.sh"
    path.write_text(
        f"{CREATE} --max-trial-count=4 --parallel-trial-count=8 --algorithm=grid-search\n"
    )
    code, result = report(path)
    assert code == 1 and result["kind"] == "hyperparameter-tuning-job"
    paths = {v["path"] for v in result["violations"] if v["severity"] == "error"}
    assert paths == {"--parallel-trial-count", "studySpec.parameters[0].doubleValueSpec"}


def test_custom_jobs_create_cannot_run_a_tuning_config(tmp_path: Path) -> None:
    script = (
        "gcloud ai custom-jobs create --region=us-central1 --display-name=x --config=hpt.yaml\n"
    )
    with pytest.raises(SpecFormatError) as info:
        loaded(tmp_path, script, hpt__yaml=CONFIG)
    message = str(info.value)
    assert "holds a hyperparameter tuning job (studySpec)" in message
    assert "`gcloud ai custom-jobs create` cannot run a tuning job" in message
    assert "gcloud ai hp-tuning-jobs create --config" in message


# --- legacy submissions of HyperTune jobs -------------------------------------------------


def test_legacy_submit_with_hyperparameters_is_a_tuning_job(tmp_path: Path) -> None:
    tuning, notes = tuning_of(tmp_path, f"{LEGACY} --config hp.yaml\n", hp__yaml=LEGACY_HP)
    assert (tuning.display_name, tuning.region) == ("census_hpt", "us-central1")
    assert (tuning.max_trial_count, tuning.parallel_trial_count) == (12, 3)
    (metric,) = tuning.study_spec.metrics
    assert (metric.metric_id, metric.goal) == ("accuracy", "MAXIMIZE")
    (parameter,) = tuning.study_spec.parameters
    assert parameter.parameter_id == "learning_rate" and parameter.double_value_spec is not None
    assert parameter.scale_type == "UNIT_LOG_SCALE"
    pool = tuning.trial_job_spec.worker_pool_specs[0]
    assert pool.python_package_spec is not None
    assert pool.python_package_spec.python_module == "trainer.task"
    assert any("each trial must report 'accuracy'" in note for note in notes)
    assert f"read --config {tmp_path / 'hp.yaml'}; flags override its values" in notes


def test_legacy_flags_still_override_and_enable_web_access_reaches_every_trial(
    tmp_path: Path,
) -> None:
    script = f"{LEGACY} --config hp.yaml --scale-tier custom --master-machine-type n1-highmem-8 --enable-web-access\n"
    tuning, _ = tuning_of(tmp_path, script, hp__yaml=LEGACY_HP)
    pool = tuning.trial_job_spec.worker_pool_specs[0]
    assert pool.machine_spec is not None and pool.machine_spec.machine_type == "n1-highmem-8"
    assert tuning.trial_job_spec.enable_web_access


def test_legacy_heredoc_hyperparameters(tmp_path: Path) -> None:
    script = f"cat > hp.yaml <<EOF\n{LEGACY_HP}EOF\n{LEGACY} --config hp.yaml\n"
    tuning, notes = tuning_of(tmp_path, script, hp__yaml="trainingInput: {scaleTier: BASIC}\n")
    assert tuning.max_trial_count == 12
    assert "--config hp.yaml: written by the heredoc at line 1; flags override its values" in notes


def test_legacy_problems_in_the_terms_of_the_command(tmp_path: Path) -> None:
    broken = LEGACY_HP.replace("goal: MAXIMIZE", "goal: MAXIMISE")
    with pytest.raises(SpecInvalidError) as info:
        loaded(tmp_path, f"{LEGACY} --config hp.yaml --runtime-version 2.10\n", hp__yaml=broken)
    paths = {v.path for v in info.value.violations}
    assert {"--runtime-version", "trainingInput.hyperparameters.goal"} <= paths


def test_a_legacy_flag_problem_is_said_at_the_flag(tmp_path: Path) -> None:
    with pytest.raises(SpecInvalidError) as info:
        loaded(tmp_path, f"{LEGACY} --config hp.yaml --scale-tier basic-gpux\n", hp__yaml=LEGACY_HP)
    assert [v.path for v in info.value.violations] == ["--scale-tier"]


def test_legacy_tuning_is_never_a_single_job(tmp_path: Path) -> None:
    with pytest.raises(TuningJobFileError):
        single_job(tmp_path, f"{LEGACY} --config hp.yaml\n", hp__yaml=LEGACY_HP)


# --- the CLI, end to end ------------------------------------------------------------------


def test_validate_convert_and_estimate_a_tuning_command(tmp_path: Path) -> None:
    (tmp_path / "hpt.yaml").write_text(CONFIG)
    path = tmp_path / "tune.sh"
    path.write_text(f"#!/bin/bash\n{CREATE} --max-trial-count=10 --parallel-trial-count=2\n")
    code, result = report(path)
    assert (code, result["kind"], result["valid"]) == (0, "hyperparameter-tuning-job", True)
    code, out, err = cli("convert", str(path))
    assert code == 0, err
    assert "maxTrialCount: 10" in out and "studySpec:" in out and "trialJobSpec:" in out
    code, out, err = cli("estimate", str(path))
    assert code == 0, err
    assert "hyperparameter tuning job: one trial runs" in out
    assert "2 trials at once" in out and "10 trials (maxTrialCount)" in out
