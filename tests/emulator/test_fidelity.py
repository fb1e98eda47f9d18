"""Behaviours the emulator shares with Vertex AI, through the real ``aiplatform_v1`` client.

Names by project number (GET, cancel, delete and list by project ID or number alike), the 7-day
default of ``scheduling.timeout``, ``webAccessUris`` per replica, and ``maxWaitDuration`` of a
FLEX_START job. Vertex's side of each is in docs/emulator.md's fidelity table, with its source.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.api_core import exceptions as gexc
from google.cloud.aiplatform_v1 import types as aip
from google.protobuf import duration_pb2

from emulator import names, protos
from emulator.cli import main
from emulator.driver import (
    DEFAULT_MAX_WAIT_SECONDS,
    DEFAULT_TIMEOUT_SECONDS,
    max_wait_seconds,
    timeout_seconds,
)
from emulator.store import Store
from emulator.testing import EmulatorProcess, running_emulator, wait_for_state

from .conftest import (
    NUMBERED_PARENT,
    PARENT,
    PROJECT,
    REGION,
    SIMULATE_ARGS,
    TERMINAL,
    S,
    job_id,
    make_job,
    trainer_pool,
    unique,
)

HANG = {"emulator-outcome": "hang"}
T4 = aip.AcceleratorType.NVIDIA_TESLA_T4
WEB_URI = re.compile(
    r"https://[0-9a-f]{16}-dot-us-central1\.aiplatform-training\.googleusercontent\.com"
)


def _by_project(name: str, project: str) -> str:
    return names.with_project(name, project)


# -- names carry the project number ----------------------------------------------------------


def test_a_job_created_by_project_id_is_named_by_number(sim: EmulatorProcess) -> None:
    client = sim.client()
    created = client.create_custom_job(parent=PARENT, custom_job=make_job(labels=HANG))
    number = names.derived_number(PROJECT)
    assert number.isdigit() and len(number) == 12
    assert created.name == f"{NUMBERED_PARENT}/customJobs/{job_id(created)}"
    # GET by the ID form and by the number form: the same job, named by number.
    by_id = client.get_custom_job(name=_by_project(created.name, PROJECT))
    by_number = client.get_custom_job(name=created.name)
    assert by_id.name == by_number.name == created.name
    # Lists by either parent hold it, and page tokens do not depend on the form.
    label = {"t": unique()}
    for _ in range(2):
        client.create_custom_job(parent=NUMBERED_PARENT, custom_job=make_job(labels=label))
    for parent in (PARENT, NUMBERED_PARENT):
        page = client.list_custom_jobs(
            request={"parent": parent, "filter": f"labels.t={label['t']}", "page_size": 1}
        )
        assert len(list(page)) == 2
    # Cancel by ID, delete by number.
    client.cancel_custom_job(name=_by_project(created.name, PROJECT))
    done = wait_for_state(client, created.name, TERMINAL, timeout=10)
    assert done.state == S.JOB_STATE_CANCELLED
    operation = client.delete_custom_job(name=created.name)
    assert operation.operation.name.startswith(f"{NUMBERED_PARENT}/operations/")
    operation.result(timeout=10)  # type: ignore[no-untyped-call]
    with pytest.raises(gexc.NotFound):
        client.get_custom_job(name=_by_project(created.name, PROJECT))


def test_another_project_does_not_see_the_job(sim: EmulatorProcess) -> None:
    client = sim.client()
    created = client.create_custom_job(parent=PARENT, custom_job=make_job())
    for other in ("other-project", "999999999999"):
        with pytest.raises(gexc.NotFound) as caught:
            client.get_custom_job(name=_by_project(created.name, other))
        assert other in caught.value.message


def test_tuning_jobs_and_their_trials_are_named_by_number(sim: EmulatorProcess) -> None:
    client = sim.client()
    ps = aip.StudySpec.ParameterSpec
    tuning = aip.HyperparameterTuningJob(
        display_name="numbered",
        max_trial_count=1,
        parallel_trial_count=1,
        study_spec=aip.StudySpec(
            metrics=[aip.StudySpec.MetricSpec(metric_id="loss", goal="MINIMIZE")],
            parameters=[
                ps(
                    parameter_id="lr",
                    double_value_spec=ps.DoubleValueSpec(min_value=0.1, max_value=0.2),
                )
            ],
        ),
        trial_job_spec=make_job().job_spec,
    )
    created = client.create_hyperparameter_tuning_job(
        parent=PARENT, hyperparameter_tuning_job=tuning
    )
    assert created.name.startswith(f"{NUMBERED_PARENT}/hyperparameterTuningJobs/")
    done = wait_for_state(client, _by_project(created.name, PROJECT), TERMINAL, timeout=30)
    assert done.trials and done.trials[0].custom_job.startswith(f"{NUMBERED_PARENT}/customJobs/")


def test_a_configured_project_number_names_the_jobs(tmp_path: Path) -> None:
    args = (*SIMULATE_ARGS, "--project-number", f"{PROJECT}=123456789012")
    with running_emulator(*args, state_dir=tmp_path / "state") as emu:
        client = emu.client()
        created = client.create_custom_job(parent=PARENT, custom_job=make_job())
        assert created.name.startswith(f"projects/123456789012/locations/{REGION}/customJobs/")
        assert client.get_custom_job(name=_by_project(created.name, PROJECT)).name == created.name


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        (["my-project"], "expected ID=NUMBER"),
        (["my-project=12a"], "expected ID=NUMBER"),
        (["My_Project=12"], "expected ID=NUMBER"),
        (["my-project=1", "my-project=2"], "my-project is given two numbers"),
        (["my-project=1", "your-project=1"], "1 is given to my-project already"),
    ],
)
def test_bad_project_number_flags_are_refused(specs: list[str], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        names.parse_project_numbers(specs)
    assert message in str(caught.value)


def test_project_numbers() -> None:
    numbers = names.ProjectNumbers({"my-project": "42"})
    assert numbers.number("my-project") == "42"
    assert numbers.number("123") == "123"  # a number stays itself
    assert numbers.number("other-project") == names.derived_number("other-project")
    assert names.derived_number("other-project") != names.derived_number("other-projects")
    assert numbers.canonical("projects/my-project/locations/l/customJobs/1") == (
        "projects/42/locations/l/customJobs/1"
    )
    assert numbers.canonical("not/a/name") == "not/a/name"


def test_a_state_written_with_project_ids_is_renamed_on_start(tmp_path: Path) -> None:
    """Jobs stored before names carried numbers: found by either form after a restart."""
    state = tmp_path / "state"
    old_name = f"{PARENT}/customJobs/1234567890123456789"
    job = make_job("old")._pb
    job.name = old_name
    protos.set_state(job, S.JOB_STATE_SUCCEEDED)
    tuning = protos.new_job_pb(protos.TUNING_JOB)
    tuning.name = f"{PARENT}/hyperparameterTuningJobs/1234567890123456788"
    tuning.display_name = "old tuning"
    tuning.trials.add(id="1", custom_job=old_name)
    protos.set_state(tuning, S.JOB_STATE_SUCCEEDED)
    store = Store.open(state)
    try:
        store.insert_job("1234567890123456789", PARENT, job)
        store.insert_job("1234567890123456788", PARENT, tuning)
    finally:
        store.close()
    with running_emulator(*SIMULATE_ARGS, state_dir=state) as emu:
        client = emu.client()
        numbered = _by_project(old_name, names.derived_number(PROJECT))
        assert client.get_custom_job(name=old_name).name == numbered
        assert [j.name for j in client.list_custom_jobs(parent=PARENT)] == [numbered]
        renamed = client.get_hyperparameter_tuning_job(name=tuning.name)
        assert renamed.name == _by_project(tuning.name, names.derived_number(PROJECT))
        assert [t.custom_job for t in renamed.trials] == [numbered]
        client.delete_custom_job(name=old_name).result(timeout=10)  # type: ignore[no-untyped-call]
    reopened = Store.open(state)
    try:
        assert reopened.project_ids() == {names.derived_number(PROJECT): PROJECT}
    finally:
        reopened.close()


# -- scheduling.timeout -----------------------------------------------------------------------


def test_an_unset_timeout_is_seven_days_and_is_not_written_into_the_job(
    sim: EmulatorProcess,
) -> None:
    assert DEFAULT_TIMEOUT_SECONDS == 7 * 24 * 3600
    assert timeout_seconds(make_job()._pb) == DEFAULT_TIMEOUT_SECONDS
    assert timeout_seconds(make_job(timeout_seconds=30)._pb) == 30
    created = sim.client().create_custom_job(parent=PARENT, custom_job=make_job())
    assert "timeout" not in created.job_spec.scheduling


# -- web access -------------------------------------------------------------------------------


def _web_job(enabled: bool) -> aip.CustomJob:
    job = make_job(
        "web",
        pools=[trainer_pool(), trainer_pool(replicas=2)],
        labels={**HANG, "t": unique()},
    )
    job.job_spec.enable_web_access = enabled
    return job


def test_web_access_uris_per_replica_once_running(sim: EmulatorProcess) -> None:
    client = sim.client()
    created = client.create_custom_job(parent=PARENT, custom_job=_web_job(True))
    assert not created.web_access_uris  # QUEUED: nothing runs yet
    running = wait_for_state(client, created.name, (S.JOB_STATE_RUNNING,), timeout=10)
    uris = dict(running.web_access_uris)
    assert set(uris) == {"workerpool0-0", "workerpool1-0", "workerpool1-1"}
    assert all(WEB_URI.fullmatch(uri) for uri in uris.values())
    assert len(set(uris.values())) == 3
    assert dict(client.get_custom_job(name=created.name).web_access_uris) == uris
    client.cancel_custom_job(name=created.name)


def test_no_web_access_uris_without_enable_web_access(sim: EmulatorProcess) -> None:
    client = sim.client()
    created = client.create_custom_job(parent=PARENT, custom_job=_web_job(False))
    running = wait_for_state(client, created.name, (S.JOB_STATE_RUNNING,), timeout=10)
    assert not running.web_access_uris
    client.cancel_custom_job(name=created.name)


# -- scheduling.strategy and maxWaitDuration ---------------------------------------------------


Strategy = aip.Scheduling.Strategy


def _scheduled(strategy: int, wait: float | None, *, gpus: int = 0) -> aip.CustomJob:
    accelerator = (T4, gpus) if gpus else None
    job = make_job(pools=[trainer_pool(accelerator=accelerator)])
    job.job_spec.scheduling.strategy = Strategy(strategy)
    if wait is not None:
        job.job_spec.scheduling.max_wait_duration = duration_pb2.Duration(seconds=int(wait))
    return job


@pytest.mark.parametrize(
    ("strategy", "wait", "limit"),
    [
        (Strategy.FLEX_START, None, DEFAULT_MAX_WAIT_SECONDS),
        (Strategy.FLEX_START, 60, 60.0),
        (Strategy.FLEX_START, 0, None),  # 0: wait as long as it takes
        (Strategy.STANDARD, 60, None),  # only FLEX_START waits for a limited time
        (Strategy.SPOT, 60, None),
    ],
)
def test_max_wait_applies_to_flex_start_only(
    strategy: int, wait: float | None, limit: float | None
) -> None:
    assert max_wait_seconds(_scheduled(strategy, wait)._pb) == limit


LONG_RUN = ["--epochs", "1", "--steps-per-epoch", "2000", "--step-sleep", "0.05"]
SHORT_RUN = ["--epochs", "1", "--steps-per-epoch", "5"]


@pytest.fixture(scope="module")
def one_gpu() -> Iterator[EmulatorProcess]:
    """An execute-mode server sharing one (fake) GPU device among jobs."""
    with running_emulator("--gpus", "0", "--grace-seconds", "1", "--log-level", "warning") as emu:
        yield emu


def test_a_flex_start_job_fails_after_its_max_wait(one_gpu: EmulatorProcess) -> None:
    client = one_gpu.client()
    holder = client.create_custom_job(
        parent=PARENT,
        custom_job=make_job(pools=[trainer_pool(args=LONG_RUN, accelerator=(T4, 1))]),
    )
    wait_for_state(client, holder.name, (S.JOB_STATE_RUNNING,), timeout=60)
    flex = _scheduled(Strategy.FLEX_START, 1, gpus=1)
    standard = _scheduled(Strategy.STANDARD, 1, gpus=1)
    waiting = client.create_custom_job(parent=PARENT, custom_job=flex)
    patient = client.create_custom_job(parent=PARENT, custom_job=standard)
    started = time.monotonic()
    failed = wait_for_state(client, waiting.name, TERMINAL, timeout=30)
    assert failed.state == S.JOB_STATE_FAILED
    assert failed.error.code == 8  # RESOURCE_EXHAUSTED
    assert "max_wait_duration" in failed.error.message
    assert time.monotonic() - started < 20
    # The STANDARD job waits as long as it takes: still QUEUED behind the holder.
    assert client.get_custom_job(name=patient.name).state == S.JOB_STATE_QUEUED
    for job in (holder, patient):
        client.cancel_custom_job(name=job.name)
    for job in (holder, patient):
        wait_for_state(client, job.name, TERMINAL, timeout=30)


# -- list filters: the examples of the v1 reference ------------------------------------------


def test_the_documented_filter_examples(sim: EmulatorProcess) -> None:
    """Each example of ``ListCustomJobsRequest.filter`` in the v1 reference selects what it says
    (scoped to this test's jobs with a leading ``labels.t=... AND``: OR binds tighter, AIP-160;
    label keys in lowercase, as v1 labels must be: the reference's ``keyA`` would be refused)."""
    client = sim.client()
    scope = unique()
    specs = {
        "a": ("my_job", {"key_a": "value_a"}),
        "b": ("my_job_2", {"key_b": "anything"}),
        "c": ("other", {"emulator-outcome": "fail"}),
        "d": ("my_job_3", HANG),
    }
    jobs = {
        key: client.create_custom_job(
            parent=PARENT, custom_job=make_job(display, labels={"t": scope, **labels})
        )
        for key, (display, labels) in specs.items()
    }
    for key in "abc":
        wait_for_state(client, jobs[key].name, TERMINAL, timeout=30)
    wait_for_state(client, jobs["d"].name, (S.JOB_STATE_RUNNING,), timeout=30)
    by_name = {job.name: key for key, job in jobs.items()}

    def listed(expression: str) -> set[str]:
        found = client.list_custom_jobs(
            request={"parent": PARENT, "filter": f"labels.t={scope} AND {expression}"}
        )
        return {by_name[job.name] for job in found}

    assert listed('state="JOB_STATE_SUCCEEDED" AND display_name:"my_job_*"') == {"b"}
    assert listed('state!="JOB_STATE_FAILED" OR display_name="my_job"') == {"a", "b", "d"}
    assert listed('NOT display_name="my_job"') == {"b", "c", "d"}
    assert listed('create_time>"2021-05-18T00:00:00Z"') == {"a", "b", "c", "d"}
    assert listed("labels.key_a=value_a") == {"a"}
    assert listed("labels.key_b:*") == {"b"}
    client.cancel_custom_job(name=jobs["d"].name)


def test_replicas_get_the_project_number(one_gpu: EmulatorProcess) -> None:
    """``CLOUD_ML_PROJECT_ID`` holds the project number on Vertex AI (see emulator/names.py)."""
    client = one_gpu.client()
    out = f"gs://fidelity/{unique()}"
    created = client.create_custom_job(
        parent=PARENT, custom_job=make_job(pools=[trainer_pool(args=SHORT_RUN)], output=out)
    )
    done = wait_for_state(client, created.name, TERMINAL, timeout=60)
    assert done.state == S.JOB_STATE_SUCCEEDED, done.error.message
    role = one_gpu.state_dir / "gcs" / out.removeprefix("gs://") / "replicas" / "chief-0.json"
    assert json.loads(role.read_text())["project"] == names.derived_number(PROJECT)


def test_serve_refuses_a_bad_project_number_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["serve", "--project-number", "my-project", "--state-dir", str(tmp_path), "--port", "0"]
    assert main(args) == 2
    assert "--project-number 'my-project': expected ID=NUMBER" in capsys.readouterr().err
