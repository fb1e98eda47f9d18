"""HyperparameterTuningJobs through the real aiplatform_v1 REST client: trials really run.

Simulate mode for the API and the scheduling (trials last ``emulator-run-ms``), execute mode for
trials that run a trainer and report their metric with ``cloudml-hypertune``.
"""

from __future__ import annotations

import json
import random
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud.aiplatform_v1 import types as aip

from emulator import protos
from emulator.testing import EmulatorProcess, running_emulator, wait_for_state

from .conftest import (
    NUMBERED_PARENT,
    PARENT,
    SIMULATE_ARGS,
    TERMINAL,
    S,
    make_job,
    raw_http,
    trainer_pool,
    unique,
)
from .test_fuzz import HOSTILE, SEED, assert_not_5xx, encode, paths, replaced

PS = aip.StudySpec.ParameterSpec
Cond = PS.ConditionalParameterSpec
T = aip.Trial.State
TUNING = f"/v1/{PARENT}/hyperparameterTuningJobs"


# -- builders ------------------------------------------------------------------------------------


def double(pid: str, low: float, high: float, scale: str = "SCALE_TYPE_UNSPECIFIED") -> PS:
    value_spec = PS.DoubleValueSpec(min_value=low, max_value=high)
    return PS(parameter_id=pid, double_value_spec=value_spec, scale_type=scale)


def integer(pid: str, low: int, high: int, scale: str = "SCALE_TYPE_UNSPECIFIED") -> PS:
    value_spec = PS.IntegerValueSpec(min_value=low, max_value=high)
    return PS(parameter_id=pid, integer_value_spec=value_spec, scale_type=scale)


def categorical(pid: str, values: Sequence[str], children: Sequence[Cond] = ()) -> PS:
    return PS(
        parameter_id=pid,
        categorical_value_spec=PS.CategoricalValueSpec(values=list(values)),
        conditional_parameter_specs=list(children),
    )


def discrete(pid: str, values: Sequence[float]) -> PS:
    return PS(parameter_id=pid, discrete_value_spec=PS.DiscreteValueSpec(values=list(values)))


def when_categorical(values: Sequence[str], spec: PS) -> Cond:
    return Cond(
        parent_categorical_values=Cond.CategoricalValueCondition(values=list(values)),
        parameter_spec=spec,
    )


def tuning_job(
    display_name: str = "tune",
    *,
    parameters: Sequence[PS] = (),
    algorithm: str = "ALGORITHM_UNSPECIFIED",
    max_trials: int = 4,
    parallel: int = 2,
    max_failed: int = 0,
    labels: dict[str, str] | None = None,
    pools: Sequence[aip.WorkerPoolSpec] | None = None,
    output: str | None = None,
    goal: str = "MINIMIZE",
    selection: str = "MEASUREMENT_SELECTION_TYPE_UNSPECIFIED",
) -> aip.HyperparameterTuningJob:
    """A tuning job; by default the example trainer's learning rate on a log scale."""
    study = aip.StudySpec(
        metrics=[aip.StudySpec.MetricSpec(metric_id="loss", goal=goal)],
        parameters=list(parameters or [double("learning_rate", 0.001, 0.1, "UNIT_LOG_SCALE")]),
        algorithm=algorithm,
        measurement_selection_type=selection,
    )
    trial_spec = make_job(pools=pools, output=output).job_spec
    return aip.HyperparameterTuningJob(
        display_name=display_name,
        study_spec=study,
        max_trial_count=max_trials,
        parallel_trial_count=parallel,
        max_failed_trial_count=max_failed,
        trial_job_spec=trial_spec,
        labels=labels or {},
    )


def fast(**labels: str) -> dict[str, str]:
    """Labels that make each simulated trial last 50 ms (trials inherit the job's labels)."""
    return {"emulator-run-ms": "50", "run": unique(), **labels}


def run(emu: EmulatorProcess, job: aip.HyperparameterTuningJob, timeout: float = 30) -> Any:
    client = emu.client()
    created = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=job)
    return wait_for_state(client, created.name, TERMINAL, timeout=timeout)


def cancel_when_running(emu: EmulatorProcess, job: aip.HyperparameterTuningJob) -> Any:
    """Create the job, cancel it once its first trials' CustomJobs run; the job as it ends."""
    client = emu.client()
    created = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=job)
    running = wait_for_state(client, created.name, [S.JOB_STATE_RUNNING], timeout=10)
    for trial in running.trials:
        wait_for_state(client, trial.custom_job, [S.JOB_STATE_RUNNING], timeout=10)
    client.cancel_hyperparameter_tuning_job(name=created.name)
    return wait_for_state(client, created.name, TERMINAL, timeout=20)


def params(trial: aip.Trial) -> dict[str, Any]:
    return {p.parameter_id: p.value for p in trial.parameters}


def max_overlap(trials: Sequence[aip.Trial]) -> int:
    """The most trials running at one moment, from their recorded start and end times."""
    events = sorted(
        [(t.start_time.timestamp(), 1) for t in trials]
        + [(t.end_time.timestamp(), -1) for t in trials]
    )
    running = most = 0
    for _, change in events:  # at equal times an end (-1) sorts before a start
        running += change
        most = max(most, running)
    return most


# -- the API, in simulate mode -------------------------------------------------------------------


def test_create_runs_trials_and_get_returns_them(sim: EmulatorProcess) -> None:
    client = sim.client()
    job = tuning_job("lifecycle", max_trials=5, parallel=2, labels=fast())
    created = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=job)
    assert created.name.startswith(f"{NUMBERED_PARENT}/hyperparameterTuningJobs/")
    assert created.state == S.JOB_STATE_QUEUED
    assert not created.trials
    done = wait_for_state(client, created.name, TERMINAL, timeout=30)
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error
    assert done.create_time <= done.start_time <= done.end_time <= done.update_time
    assert [t.id for t in done.trials] == ["1", "2", "3", "4", "5"]
    for trial in done.trials:
        assert trial.state == T.SUCCEEDED
        assert 0.001 <= params(trial)["learning_rate"] <= 0.1
        assert [m.metric_id for m in trial.final_measurement.metrics] == ["loss"]
        assert trial.start_time <= trial.end_time
        cj = client.get_custom_job(name=trial.custom_job)
        assert cj.state == S.JOB_STATE_SUCCEEDED
        assert cj.labels == job.labels
        args = list(cj.job_spec.worker_pool_specs[0].python_package_spec.args)
        assert args[:2] == ["--epochs", "1"]
        assert args[2:] == [f"--learning_rate={params(trial)['learning_rate']!r}"]
    assert max_overlap(done.trials) <= 2
    # The spec round-trips, output-only fields are the service's.
    assert done.study_spec.parameters[0].scale_type == PS.ScaleType.UNIT_LOG_SCALE
    assert done.max_trial_count == 5 and done.parallel_trial_count == 2


def test_parallelism_is_never_exceeded(sim: EmulatorProcess) -> None:
    done = run(sim, tuning_job(max_trials=9, parallel=3, labels=fast()))
    assert done.state == S.JOB_STATE_SUCCEEDED
    assert len(done.trials) == 9
    assert max_overlap(done.trials) == 3
    # Later trials start only as earlier ones end.
    ends = sorted(t.end_time.timestamp() for t in done.trials)
    starts = sorted(t.start_time.timestamp() for t in done.trials)
    assert all(start >= ends[i] for i, start in enumerate(starts[3:]))


def test_grid_search_covers_every_combination_in_order(sim: EmulatorProcess) -> None:
    momentum = discrete("momentum", [0.5, 0.9])
    job = tuning_job(
        algorithm="GRID_SEARCH",
        parameters=[
            categorical("optimizer", ["sgd", "adam"], [when_categorical(["sgd"], momentum)]),
            integer("layers", 1, 2),
        ],
        max_trials=20,
        parallel=3,
        labels=fast(),
    )
    done = run(sim, job)
    assert done.state == S.JOB_STATE_SUCCEEDED
    assert [params(t) for t in done.trials] == [
        {"optimizer": "sgd", "momentum": 0.5, "layers": 1},
        {"optimizer": "sgd", "momentum": 0.5, "layers": 2},
        {"optimizer": "sgd", "momentum": 0.9, "layers": 1},
        {"optimizer": "sgd", "momentum": 0.9, "layers": 2},
        {"optimizer": "adam", "layers": 1},
        {"optimizer": "adam", "layers": 2},
    ]
    last = sim.client().get_custom_job(name=done.trials[-1].custom_job)
    assert list(last.job_spec.worker_pool_specs[0].python_package_spec.args)[2:] == [
        "--optimizer=adam",
        "--layers=2",
    ]


def test_random_search_stays_in_the_feasible_space(sim: EmulatorProcess) -> None:
    job = tuning_job(
        algorithm="RANDOM_SEARCH",
        parameters=[
            double("lr", 1e-5, 1e-1, "UNIT_LOG_SCALE"),
            integer("units", 8, 512, "UNIT_REVERSE_LOG_SCALE"),
            discrete("batch", [16, 32, 64]),
        ],
        max_trials=12,
        parallel=12,
        labels=fast(),
    )
    done = run(sim, job)
    values = [params(t) for t in done.trials]
    assert len(values) == 12
    assert all(1e-5 <= v["lr"] <= 1e-1 for v in values)
    assert all(v["units"] == int(v["units"]) and 8 <= v["units"] <= 512 for v in values)
    assert {v["batch"] for v in values} <= {16, 32, 64}
    assert len({v["lr"] for v in values}) == 12


def test_conditional_parameters_only_when_the_parent_matches(sim: EmulatorProcess) -> None:
    job = tuning_job(
        parameters=[
            categorical(
                "optimizer",
                ["sgd", "adam"],
                [when_categorical(["sgd"], double("momentum", 0.1, 0.9))],
            ),
            double("learning_rate", 0.001, 0.1),
        ],
        max_trials=12,
        parallel=4,
        labels=fast(),
    )
    done = run(sim, job)
    assert len(done.trials) == 12
    for trial in done.trials:
        values = params(trial)
        assert ("momentum" in values) == (values["optimizer"] == "sgd"), values


def test_max_failed_trials_fails_the_job(sim: EmulatorProcess) -> None:
    job = tuning_job(
        max_trials=5, parallel=1, max_failed=2, labels=fast(**{"emulator-outcome": "fail"})
    )
    done = run(sim, job)
    assert done.state == S.JOB_STATE_FAILED
    assert [t.state for t in done.trials] == [T.INFEASIBLE, T.INFEASIBLE]
    assert "Simulated failure" in done.trials[0].infeasible_reason
    assert "max_failed_trial_count (2)" in done.error.message
    assert done.error.code == 3


def test_every_trial_failing_fails_the_job_without_a_limit(sim: EmulatorProcess) -> None:
    job = tuning_job(max_trials=3, parallel=3, labels=fast(**{"emulator-outcome": "fail"}))
    done = run(sim, job)
    assert done.state == S.JOB_STATE_FAILED
    assert len(done.trials) == 3
    assert "All 3 trials failed" in done.error.message


def test_cancel_cancels_running_trials(sim: EmulatorProcess) -> None:
    client = sim.client()
    job = tuning_job(max_trials=6, parallel=2, labels=fast(**{"emulator-outcome": "hang"}))
    done = cancel_when_running(sim, job)
    assert done.state == S.JOB_STATE_CANCELLED
    assert done.error.code == 1
    assert len(done.trials) == 2
    for trial in done.trials:
        assert trial.state == T.INFEASIBLE
        assert "stopped" in trial.infeasible_reason
        assert client.get_custom_job(name=trial.custom_job).state == S.JOB_STATE_CANCELLED
    with pytest.raises(gexc.BadRequest, match="already in state JOB_STATE_CANCELLED"):
        client.cancel_hyperparameter_tuning_job(name=done.name)


def test_list_filters_and_pages(sim: EmulatorProcess) -> None:
    client = sim.client()
    tag = unique()
    names = [
        client.create_hyperparameter_tuning_job(
            parent=PARENT,
            hyperparameter_tuning_job=tuning_job(f"list-{i}", labels=fast(tag=tag, n=str(i))),
        ).name
        for i in range(3)
    ]

    def listed(expr: str, size: int = 0) -> list[list[str]]:
        pager = client.list_hyperparameter_tuning_jobs(
            request={"parent": PARENT, "filter": expr, "page_size": size}
        )
        return [[j.name for j in page.hyperparameter_tuning_jobs] for page in pager.pages]

    assert listed(f"labels.tag={tag}", 2) == [names[:2], names[2:]]
    assert listed(f'labels.tag={tag} AND display_name="list-1"') == [[names[1]]]
    assert listed(f"labels.tag={tag} AND labels.n!=0") == [names[1:]]
    for name in names:
        wait_for_state(client, name, TERMINAL, timeout=30)
    assert listed(f"labels.tag={tag} AND state=JOB_STATE_SUCCEEDED") == [names]
    # Tuning jobs are not custom jobs (their trials' jobs are).
    custom = client.list_custom_jobs(request={"parent": PARENT, "filter": f"labels.tag={tag}"})
    assert len(list(custom)) == 3 * 4
    assert all("/customJobs/" in j.name for j in custom)


def test_page_tokens_are_bound_to_their_collection(sim: EmulatorProcess) -> None:
    client = sim.client()
    tag = unique()
    for _ in range(2):
        client.create_custom_job(parent=PARENT, custom_job=make_job(labels={"tag": tag}))
    page = client.list_custom_jobs(
        request={"parent": PARENT, "filter": f"labels.tag={tag}", "page_size": 1}
    )
    token = page.next_page_token
    assert token
    status, payload = raw_http(sim, "GET", f"{TUNING}?filter=labels.tag%3D{tag}&pageToken={token}")
    assert status == 400 and "pageToken" in payload["error"]["message"]


def test_jobs_of_one_kind_are_not_found_as_the_other(sim: EmulatorProcess) -> None:
    client = sim.client()
    custom = client.create_custom_job(parent=PARENT, custom_job=make_job())
    tuning = client.create_hyperparameter_tuning_job(
        parent=PARENT, hyperparameter_tuning_job=tuning_job(labels=fast())
    )
    with pytest.raises(gexc.NotFound, match="HyperparameterTuningJob"):
        client.get_hyperparameter_tuning_job(
            name=custom.name.replace("customJobs", "hyperparameterTuningJobs")
        )
    with pytest.raises(gexc.NotFound, match="CustomJob"):
        client.get_custom_job(name=tuning.name.replace("hyperparameterTuningJobs", "customJobs"))


def test_delete_takes_the_trials_jobs_with_it(sim: EmulatorProcess) -> None:
    client = sim.client()
    created = client.create_hyperparameter_tuning_job(
        parent=PARENT, hyperparameter_tuning_job=tuning_job(labels=fast())
    )
    with pytest.raises(gexc.BadRequest, match="cancel it"):
        client.delete_hyperparameter_tuning_job(name=created.name)
    done = wait_for_state(client, created.name, TERMINAL, timeout=30)
    operation = client.delete_hyperparameter_tuning_job(name=created.name)
    assert "/operations/" in operation.operation.name
    operation.result(timeout=10)  # type: ignore[no-untyped-call]
    with pytest.raises(gexc.NotFound):
        client.get_hyperparameter_tuning_job(name=created.name)
    for trial in done.trials:
        with pytest.raises(gexc.NotFound):
            client.get_custom_job(name=trial.custom_job)


def test_output_only_fields_from_the_client_are_ignored(sim: EmulatorProcess) -> None:
    job = tuning_job(labels=fast())
    job.name = "projects/x/locations/y/hyperparameterTuningJobs/1"
    job.state = aip.JobState(S.JOB_STATE_SUCCEEDED)
    job.trials = [aip.Trial(id="99", state=T.SUCCEEDED)]
    job.error = {"code": 5, "message": "no"}
    created = sim.client().create_hyperparameter_tuning_job(
        parent=PARENT, hyperparameter_tuning_job=job
    )
    assert created.name.startswith(NUMBERED_PARENT)
    assert created.state == S.JOB_STATE_QUEUED
    assert not created.trials and not created.error.message


def _set(job: aip.HyperparameterTuningJob, **fields: Any) -> aip.HyperparameterTuningJob:
    for name, value in fields.items():
        setattr(job, name, value)
    return job


def _condition_on_a_double() -> aip.HyperparameterTuningJob:
    parent = double("lr", 0.1, 0.2)
    parent.conditional_parameter_specs = [when_categorical(["a"], integer("n", 1, 2))]
    return tuning_job(parameters=[parent])


@pytest.mark.parametrize(
    ("build", "mentions"),
    [
        (lambda: _set(tuning_job(), max_trial_count=0), "max_trial_count"),
        (lambda: _set(tuning_job(), parallel_trial_count=0), "parallel_trial_count"),
        (lambda: _set(tuning_job(), max_trial_count=5000), "between 1 and 1000"),
        (lambda: _set(tuning_job(), display_name=""), "Field: display_name; Message: Required"),
        (lambda: tuning_job(parameters=[double("lr", 0.0, 1.0, "UNIT_LOG_SCALE")]), "log scale"),
        (lambda: tuning_job(parameters=[double("lr", 2.0, 1.0)]), "greater than max_value"),
        (lambda: tuning_job(parameters=[discrete("b", [64, 32])]), "increasing order"),
        (lambda: tuning_job(parameters=[categorical("c", [])]), "1 to 1000 values"),
        (lambda: tuning_job(parameters=[integer("a", 1, 2), integer("a", 3, 4)]), "duplicate"),
        (lambda: tuning_job(parameters=[double("learning rate", 0.1, 0.2)]), "whitespace"),
        (lambda: tuning_job(parameters=[PS(parameter_id="x")]), "Exactly one of"),
        (lambda: tuning_job(algorithm="GRID_SEARCH"), "GRID_SEARCH takes only"),
        (_condition_on_a_double, "DOUBLE parameter cannot have conditional"),
        (
            lambda: tuning_job(
                parameters=[categorical("c", ["a"], [when_categorical(["z"], integer("n", 1, 2))])]
            ),
            "'z' is not a value",
        ),
        (lambda: tuning_job(goal="GOAL_TYPE_UNSPECIFIED"), "MAXIMIZE or MINIMIZE"),
        (
            lambda: _set(tuning_job(), study_spec=aip.StudySpec(parameters=[double("a", 0, 1)])),
            "At least one metric",
        ),
        (
            lambda: tuning_job(pools=[trainer_pool(replicas=2)]),
            "Field: trial_job_spec.worker_pool_specs[0].replica_count;",
        ),
        (
            lambda: tuning_job(pools=[trainer_pool(package_uris=["/etc"])]),
            "trial_job_spec.worker_pool_specs[0].python_package_spec.package_uris[0]",
        ),
        (lambda: tuning_job(output="s3://bucket/x"), "trial_job_spec.base_output_directory"),
    ],
)
def test_invalid_tuning_jobs_are_400(sim: EmulatorProcess, build: Any, mentions: str) -> None:
    with pytest.raises(gexc.BadRequest) as info:
        sim.client().create_hyperparameter_tuning_job(
            parent=PARENT, hyperparameter_tuning_job=build()
        )
    assert mentions in str(info.value)


@pytest.mark.parametrize(
    "body",
    [
        b"[]",
        b'{"studySpec": "x"}',
        b'{"maxTrialCount": "many"}',
        b'{"unknownField": 1}',
        b'{"studySpec": {"parameters": [{"parameterId": "a", "doubleValueSpec": {"minValue": "Infinity", "maxValue": 1}}]}}',
        b'{"studySpec": {"algorithm": 99}}',
        b'{"studySpec": {"parameters": [{"scaleType": 77}]}}',
        b'{"displayName": "\\ud800"}',
        b'{"studySpec": {"parameters": ['
        + b'{"conditionalParameterSpecs": [{"parameterSpec": ' * 40
        + b"{}"
        + b"}]}" * 40
        + b"]}}",
    ],
)
def test_hostile_bodies_are_400(sim: EmulatorProcess, body: bytes) -> None:
    status, payload = raw_http(sim, "POST", TUNING, body)
    assert status == 400, payload
    assert payload["error"]["status"] == "INVALID_ARGUMENT"


def _fuzz_base() -> dict[str, Any]:
    momentum = discrete("momentum", [0.5, 0.9])
    job = tuning_job(
        "fuzz",
        parameters=[
            categorical("optimizer", ["sgd", "adam"], [when_categorical(["sgd"], momentum)]),
            integer("layers", 1, 3, "UNIT_LOG_SCALE"),
            double("lr", 0.001, 0.1, "UNIT_REVERSE_LOG_SCALE"),
        ],
        max_trials=2,
        parallel=2,
        max_failed=1,
        labels={"emulator-run-ms": "1"},
        output="gs://fuzz-bucket/tune",
    )
    return protos.to_dict(aip.HyperparameterTuningJob.pb(job), int_enums=False)


def test_fuzz_every_field_of_a_tuning_job(sim: EmulatorProcess) -> None:
    rng = random.Random(SEED + 10)
    base = _fuzz_base()
    accepted = []
    for path in paths(base):
        for value in rng.sample(HOSTILE, 4):
            status, payload = raw_http(sim, "POST", TUNING, encode(replaced(base, path, value)))
            assert_not_5xx(status, f"{path} = {value!r:.60}", payload)
            if status == 200:
                accepted.append(payload["name"])
    assert len(accepted) > 10
    client = sim.client()
    for name in accepted:
        done = wait_for_state(client, name, TERMINAL, timeout=30)
        assert done.error.code != 13, (name, done.error.message)
        assert all("internal error" not in t.infeasible_reason for t in done.trials)


def test_tuning_jobs_survive_a_crash_of_the_service(tmp_path: Path) -> None:
    with running_emulator(*SIMULATE_ARGS, state_dir=tmp_path / "state") as emu:
        client = emu.client()
        job = tuning_job(max_trials=4, parallel=2, labels={"emulator-run-ms": "800"})
        created = client.create_hyperparameter_tuning_job(
            parent=PARENT, hyperparameter_tuning_job=job
        )
        running = wait_for_state(client, created.name, [S.JOB_STATE_RUNNING], timeout=10)
        for trial in running.trials:
            wait_for_state(client, trial.custom_job, [S.JOB_STATE_RUNNING], timeout=10)
        emu.crash()
        emu.restart()
        done = wait_for_state(emu.client(), created.name, TERMINAL, timeout=30)
    assert done.state == S.JOB_STATE_SUCCEEDED
    assert [t.state for t in done.trials] == [T.INFEASIBLE, T.INFEASIBLE, T.SUCCEEDED, T.SUCCEEDED]
    assert "service stopped while the job was running" in done.trials[0].infeasible_reason


# -- trials that run a trainer (execute mode) ----------------------------------------------------

TINY_TRAINER = """
import argparse, json, os, sys, time
import hypertune

parser = argparse.ArgumentParser()
parser.add_argument("--x", default="good")
parser.add_argument("--sleep", type=float, default=0.0)
parser.add_argument("--reports", default="3,1,2")
args = parser.parse_args()
if args.x == "bad":
    sys.exit(7)
out = os.environ.get("AIP_MODEL_DIR") or "."
os.makedirs(out, exist_ok=True)
keys = ("CLOUD_ML_TRIAL_ID", "CLOUD_ML_HP_METRIC_TAG", "CLOUD_ML_HP_METRIC_FILE", "AIP_MODEL_DIR",
        "AIP_CHECKPOINT_DIR", "AIP_TENSORBOARD_LOG_DIR", "CLUSTER_SPEC", "TF_CONFIG")
with open(os.path.join(out, "seen.json"), "w") as fh:
    json.dump({"env": {k: os.environ.get(k) for k in keys}, "argv": sys.argv[1:]}, fh)
reporter = hypertune.HyperTune()
for step, value in enumerate(filter(None, args.reports.split(",")), start=1):
    reporter.report_hyperparameter_tuning_metric(
        hyperparameter_metric_tag=os.environ["CLOUD_ML_HP_METRIC_TAG"],
        metric_value=float(value),
        global_step=step * 10,
    )
time.sleep(args.sleep)
"""


@pytest.fixture(scope="module")
def tiny(execute: EmulatorProcess) -> str:
    """A trainer package (under the state dir, an allowed root) that reports a metric."""
    root = execute.state_dir / "packages" / "tiny"
    (root / "tiny").mkdir(parents=True, exist_ok=True)
    (root / "tiny" / "__init__.py").write_text("")
    (root / "tiny" / "task.py").write_text(textwrap.dedent(TINY_TRAINER))
    return str(root)


def tiny_pool(package: str, *args: str) -> aip.WorkerPoolSpec:
    pool = trainer_pool(package_uris=[package], args=list(args))
    pool.python_package_spec.python_module = "tiny.task"
    return pool


def _gcs(emu: EmulatorProcess, uri: str) -> Path:
    return emu.state_dir / "gcs" / uri.removeprefix("gs://")


@pytest.mark.parametrize(
    ("selection", "value", "step"),
    [
        ("LAST_MEASUREMENT", 2.0, 30),
        ("BEST_MEASUREMENT", 1.0, 20),
        ("MEASUREMENT_SELECTION_TYPE_UNSPECIFIED", 2.0, 30),
    ],
)
def test_trials_report_through_hypertune(
    execute: EmulatorProcess, tiny: str, selection: str, value: float, step: int
) -> None:
    output = f"gs://tuning/{unique()}"
    job = tuning_job(
        parameters=[categorical("x", ["good", "fine"])],
        algorithm="GRID_SEARCH",
        pools=[tiny_pool(tiny, "--reports=3,1,2")],
        output=output,
        selection=selection,
        labels={"run": unique()},
    )
    done = run(execute, job)
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error
    assert len(done.trials) == 2
    for trial in done.trials:
        assert trial.state == T.SUCCEEDED
        assert trial.final_measurement.step_count == step
        assert [(m.metric_id, m.value) for m in trial.final_measurement.metrics] == [
            ("loss", value)
        ]
        seen = json.loads((_gcs(execute, output) / trial.id / "model" / "seen.json").read_text())
        env = seen["env"]
        assert seen["argv"][-1] == f"--x={params(trial)['x']}"
        assert env["CLOUD_ML_TRIAL_ID"] == trial.id
        assert env["CLOUD_ML_HP_METRIC_TAG"] == "loss"
        assert env["CLOUD_ML_HP_METRIC_FILE"].endswith("/hypertune/workerpool0-0/output.metrics")
        assert env["AIP_MODEL_DIR"] == f"{_gcs(execute, output)}/{trial.id}/model/"
        assert env["AIP_CHECKPOINT_DIR"].endswith(f"/{trial.id}/checkpoints/")
        assert env["AIP_TENSORBOARD_LOG_DIR"].endswith(f"/{trial.id}/logs/")
        assert json.loads(env["CLUSTER_SPEC"])["task"]["trial"] == trial.id
        assert json.loads(env["TF_CONFIG"])["task"]["trial"] == trial.id


def test_example_trainer_is_tuned_for_real(execute: EmulatorProcess) -> None:
    output = f"gs://tuning/{unique()}"
    job = tuning_job(
        parameters=[discrete("learning_rate", [0.01, 0.05]), discrete("batch_size", [16, 64])],
        algorithm="GRID_SEARCH",
        pools=[trainer_pool(args=["--epochs", "2", "--steps-per-epoch", "5"])],
        output=output,
        max_trials=4,
        parallel=2,
        labels={"run": unique()},
    )
    done = run(execute, job)
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error
    assert max_overlap(done.trials) <= 2
    for trial in done.trials:
        metrics = json.loads(
            (_gcs(execute, output) / trial.id / "model" / "metrics.json").read_text()
        )
        assert trial.final_measurement.step_count == metrics["steps"] == 10
        assert trial.final_measurement.metrics[0].value == pytest.approx(metrics["loss"])
        replica = json.loads(
            (_gcs(execute, output) / trial.id / "replicas" / "chief-0.json").read_text()
        )
        assert replica["trial_id"] == trial.id
    losses = {params(t)["learning_rate"]: t.final_measurement.metrics[0].value for t in done.trials}
    assert losses[0.05] < losses[0.01]  # the larger step converges further in 10 steps


def test_a_trial_without_its_metric_is_infeasible(execute: EmulatorProcess, tiny: str) -> None:
    job = tuning_job(
        parameters=[categorical("x", ["good"])],
        algorithm="GRID_SEARCH",
        pools=[tiny_pool(tiny, "--reports=")],
        labels={"run": unique()},
    )
    done = run(execute, job)
    assert done.state == S.JOB_STATE_FAILED
    assert "no value for the metric 'loss'" in done.trials[0].infeasible_reason


def test_max_failed_trials_stops_the_running_ones(execute: EmulatorProcess, tiny: str) -> None:
    job = tuning_job(
        parameters=[categorical("x", ["bad", "good", "fine", "okay"])],
        algorithm="GRID_SEARCH",
        pools=[tiny_pool(tiny, "--sleep=30")],
        max_trials=4,
        parallel=2,
        max_failed=1,
        labels={"run": unique()},
    )
    done = run(execute, job)
    assert done.state == S.JOB_STATE_FAILED
    assert [t.state for t in done.trials] == [T.INFEASIBLE, T.INFEASIBLE]
    assert "non-zero status of 7" in done.trials[0].infeasible_reason
    assert "stopped" in done.trials[1].infeasible_reason
    assert "max_failed_trial_count (1)" in done.error.message
    stopped = execute.client().get_custom_job(name=done.trials[1].custom_job)
    assert stopped.state == S.JOB_STATE_CANCELLED


def test_cancel_stops_the_trials_processes(execute: EmulatorProcess, tiny: str) -> None:
    job = tuning_job(
        parameters=[categorical("x", ["good", "fine", "okay"])],
        algorithm="GRID_SEARCH",
        pools=[tiny_pool(tiny, "--sleep=30")],
        parallel=2,
        labels={"run": unique()},
    )
    done = cancel_when_running(execute, job)
    assert done.state == S.JOB_STATE_CANCELLED
    assert len(done.trials) == 2
    for trial in done.trials:
        job_id = trial.custom_job.rsplit("/", 1)[1]
        assert [r["state"] for r in execute.replicas(job_id)] == ["cancelled"]
