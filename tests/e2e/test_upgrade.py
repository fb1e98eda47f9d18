"""A stack written by an earlier release keeps working: no diff, the same provider, same hashes.

``tests/e2e/data/state-before-layout`` is a real state (``pulumi stack export``) written by
the release before the module layout changed, ``state-before-running-jobs`` one with running
jobs (and the emulator's database that runs them) written by the release before the lifecycle
rules of issue 21 (both made with ``tests/e2e/upgrade_fixture.py``).
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import dill
import yaml

from components._provider import TrainingJobProvider
from components.lifecycle._wire import decode_spec, env_path
from tests.e2e._engine import Workspace

DATA = Path(__file__).parent / "data" / "state-before-layout"
JOB_TYPE = "pulumi-python:dynamic/vertex:TrainingJob"


def _state() -> dict[str, Any]:
    state: dict[str, Any] = json.loads((DATA / "state.json").read_text())
    return state


def _state_of(data: Path) -> list[dict[str, Any]]:
    """The job resources of a fixture's state."""
    resources = json.loads((data / "state.json").read_text())["deployment"]["resources"]
    return [
        r for r in resources if r["type"].endswith((":TrainingJob", ":HyperparameterTuningJob"))
    ]


def _load(
    ws: Workspace,
    data: Path = DATA,
    specs: tuple[str, ...] = ("upgrade-with-env.yaml", "upgrade-legacy.yaml"),
    endpoint: str | None = None,
    state: str | None = None,
) -> None:
    """Make ``ws``'s stack the fixture's: its spec files, config and state (``endpoint``: the
    emulator the config names now; ``state``: the state's text, if not the fixture's own)."""
    for spec in specs:
        shutil.copy(data / spec, ws.project / "stacks" / "jobs" / spec)
    config = json.loads((data / "config.json").read_text())
    if endpoint is not None:
        config["training:endpoint"] = endpoint
    salt = (data / "encryptionsalt").read_text().strip()
    ws.stack_file.write_text(
        yaml.safe_dump({"config": config, "encryptionsalt": salt}, sort_keys=False)
    )
    ws.pulumi("stack", "init", ws.stack)
    state_file = ws.base / "state.json"
    state_file.write_text(state if state is not None else (data / "state.json").read_text())
    ws.pulumi("stack", "import", "--file", str(state_file))


def test_state_from_before_previews_unchanged(ws: Workspace) -> None:
    ws.passphrase = "e2e-passphrase-only-for-tests"  # the passphrase the fixture was made with
    _load(ws)
    preview = ws.preview_json()
    # The stack, the run key and the two jobs (the default provider is not counted).
    assert preview["changeSummary"] == {"same": 4}, [
        (s["urn"].rsplit("::", 1)[-1], s["op"]) for s in preview["steps"]
    ]
    diff = ws.pulumi("preview", "--diff").output
    assert "4 unchanged" in diff


def _stand_in_env_values(spec: Any) -> dict[str, str]:
    """A value for every environment variable of a custom job's spec, by its env value path."""
    pools = decode_spec(spec)["workerPoolSpecs"]
    return {
        env_path(i, kind, j): "stand-in"
        for i, pool in enumerate(pools)
        for kind in ("pythonPackageSpec", "containerSpec")
        for j, _ in enumerate(pool.get(kind, {}).get("env", []))
    }


def test_pickled_provider_from_before_loads_and_checks() -> None:
    """``__provider`` pickles TrainingJobProvider by reference: it must import from there."""
    jobs = [r for r in _state()["deployment"]["resources"] if r["type"] == JOB_TYPE]
    assert len(jobs) == 2
    for job in jobs:
        blob = job["inputs"]["__provider"]
        provider = dill.loads(base64.b64decode(blob))
        assert type(provider) is TrainingJobProvider
        inputs = {k: v for k, v in job["inputs"].items() if k not in ("env_values", "run_key")}
        # The state holds the env values as ciphertext, which the engine decrypts for check:
        # stand-ins here (a variable without a value is refused, as Vertex refuses it).
        inputs["env_values"] = _stand_in_env_values(inputs["spec"])
        checked = provider.check({}, inputs)
        assert checked.failures == []
        # diff of the state's outputs against the same inputs: no change.
        outputs = {**job["outputs"], "env_values": inputs["env_values"]}
        result = provider.diff(job["id"], outputs, checked.inputs)
        assert result.changes is False, result


RUNNING = Path(__file__).parent / "data" / "state-before-running-jobs"


def _start_as_before(client: Any, data: Path, resource: dict[str, Any], spec_file: str) -> str:
    """Start, in a fresh emulator, the job a state of ``data`` holds for ``resource``: its spec
    file, and the labels the previous release submitted it with (its identity and run hash, from
    the state). Returns the new job's name (a job's id is the service's to choose)."""
    from components.formats import load_spec_file
    from components.vertex.convert import to_custom_job
    from components.vertex.tuning_convert import to_tuning_job

    loaded = load_spec_file(data / spec_file, tuning=True)
    outputs = resource["outputs"]
    labels = {"pulumi_resource": outputs["identity"], "pulumi_run": outputs["status"]["run_hash"]}
    parent = "projects/local-training/locations/us-central1"
    if loaded.tuning is not None:
        tuning = loaded.tuning.model_copy(update={"labels": {**loaded.tuning.labels, **labels}})
        created = client.create_hyperparameter_tuning_job(
            parent=parent, hyperparameter_tuning_job=to_tuning_job(tuning)
        )
    else:
        spec = loaded.spec.model_copy(update={"labels": {**loaded.spec.labels, **labels}})
        created = client.create_custom_job(parent=parent, custom_job=to_custom_job(spec))
    return str(created.name)


def test_running_jobs_from_before_refresh_replace_and_destroy(ws: Workspace) -> None:
    """``state-before-running-jobs``: the state of a TrainingJob and a tuning job that the release
    before the lifecycle rules (issue 21) started and left running. Its jobs are started again in
    this test's emulator as that release labelled them (a saved emulator database would time
    them out an hour after it was written), and the state is pointed at them. This release
    refreshes them, replaces one with ``--replace`` (a new job, the old one cancelled) and
    destroys them; the tuning job's identity takes its type once (an update, no API call).
    The state's ``keep_record_on_delete: false`` (that release's default) keeps the records of
    the replaced and destroyed jobs now (issue 35): cancelled, not deleted. The job's spec
    names its output directory, so no ``output_root`` and no new setting is registered.
    """
    from google.cloud.aiplatform_v1 import JobState

    from components.lifecycle._wire import TUNING_JOB_TYPE
    from tests.e2e._engine import emulator_for, list_jobs

    with emulator_for(ws, "--mode", "simulate") as emu:
        client = emu.client()
        before = {r["urn"].rsplit("::", 1)[-1]: r for r in _state_of(RUNNING)}
        started = {
            "train": _start_as_before(client, RUNNING, before["train"], "running-train.yaml"),
            "tune": _start_as_before(client, RUNNING, before["tune"], "running-tune.yaml"),
        }
        state = (RUNNING / "state.json").read_text()
        state_ids = {}
        for name, job in started.items():
            old_id = before[name]["id"]
            state = state.replace(old_id.rsplit("/", 1)[-1], job.rsplit("/", 1)[-1])
            state_ids[name] = old_id.rsplit("/", 1)[0] + "/" + job.rsplit("/", 1)[-1]
        ws.passphrase = "e2e-passphrase-only-for-tests"
        _load(ws, RUNNING, ("running-train.yaml", "running-tune.yaml"), emu.endpoint, state)

        preview = ws.preview_json()
        assert preview["changeSummary"] == {"same": 3, "update": 1}
        [tune_step] = [s for s in preview["steps"] if TUNING_JOB_TYPE in s["urn"]]
        olds, news = tune_step["oldState"]["inputs"], tune_step["newState"]["inputs"]
        assert olds["identity"] != news["identity"]
        assert olds["spec"] == news["spec"] and not tune_step.get("replaceReasons")

        # The tuning job's identity; and refresh reads the endpoint from the provider's
        # configuration in the state, which an `up` brings up to date.
        ws.pulumi("up", "--yes", "--skip-preview")
        after_up = {r["urn"].rsplit("::", 1)[-1]: r for r in ws.resources()}
        old_inputs, new_inputs = before["train"]["inputs"], after_up["train"]["inputs"]
        assert new_inputs["spec"] == old_inputs["spec"]
        assert new_inputs["keep_record_on_delete"] is False
        # Only the hidden inputs of earlier upgrades are new; none of issue 35's.
        assert set(new_inputs) - set(old_inputs) <= {"owner", "held_jobs"}
        ws.pulumi("refresh", "--yes", "--skip-preview")
        refreshed = {r["urn"].rsplit("::", 1)[-1]: r for r in ws.resources()}
        for name in ("train", "tune"):
            # The state names the job by project ID, as it was written; the emulator names it
            # by number (as Vertex AI does): the same job, kept under the state's id.
            assert refreshed[name]["id"] == state_ids[name]
            assert refreshed[name]["outputs"]["status"]["job_name"] == started[name]
            assert refreshed[name]["outputs"]["status"]["state"] == "JOB_STATE_RUNNING"

        urn = f"urn:pulumi:e2e::gpu-training::{JOB_TYPE}::train"
        ws.pulumi("up", "--yes", "--skip-preview", "--replace", urn)
        train = ws.training_jobs()["train"]
        assert train["id"] != started["train"]
        assert client.get_custom_job(name=train["id"]).state == JobState.JOB_STATE_RUNNING
        # The replaced run's record is kept (cancelled), for its logs, times and metrics.
        replaced = client.get_custom_job(name=started["train"])
        assert replaced.state == JobState.JOB_STATE_CANCELLED

        ws.pulumi("destroy", "--yes", "--skip-preview")
        assert ws.resources() == []
        tune = client.get_hyperparameter_tuning_job(name=started["tune"])
        assert tune.state == JobState.JOB_STATE_CANCELLED
        # Cancel what runs, keep what ran: both runs of `train` and the tuning job's trials.
        kept = {str(j.name).rsplit("/", 1)[-1]: j.state for j in list_jobs(client)}
        runs = [train["id"].rsplit("/", 1)[-1], started["train"].rsplit("/", 1)[-1]]
        assert [kept[run] for run in runs] == [JobState.JOB_STATE_CANCELLED] * 2
        assert set(kept.values()) == {JobState.JOB_STATE_CANCELLED}


PLUGIN = Path(__file__).parent / "data" / "state-plugin-before-one-suite"


def _plain(value: Any) -> Any:
    """A YAML program's value with its ``fn::secret`` markers replaced by the secret itself."""
    if isinstance(value, dict):
        if set(value) == {"fn::secret"}:
            return value["fn::secret"]
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def test_a_plugin_state_from_before_previews_unchanged_and_refreshes(
    pulumi_bin_dir: Path, tmp_path: Path
) -> None:
    """``state-plugin-before-one-suite``: the state of a running job that the provider plugin
    of the release before the one lifecycle suite wrote from a YAML program (made with
    ``upgrade_fixture.py --plugin``). Its job is started again in this test's emulator as that
    release submitted it (its labels), the state pointed at it and at the emulator's address.
    This release previews no change (``--json`` and ``--diff``), a refresh keeps the resource
    (the same job, RUNNING) and previews no change after it; destroy cancels the job."""
    from google.cloud.aiplatform_v1 import CustomJob

    from tests.e2e._engine import PARENT, SIMULATE, emulator_for
    from tests.e2e._plugin import (
        TOKEN,
        assert_no_change,
        end_plugin_workspace,
        job_states,
        plugin_jobs,
        plugin_workspace,
    )

    ws = plugin_workspace(pulumi_bin_dir, tmp_path)
    try:
        with emulator_for(ws, *SIMULATE) as emu:
            client = emu.client()
            program = (PLUGIN / "Pulumi.yaml").read_text()
            (ws.project / "Pulumi.yaml").write_text(program)
            properties = yaml.safe_load(program)["resources"]["train"]["properties"]
            labels = json.loads((PLUGIN / "job-labels.json").read_text())
            document = {"displayName": "train", "labels": labels}
            document["jobSpec"] = _plain(properties["jobSpec"])
            job = client.create_custom_job(
                parent=PARENT, custom_job=CustomJob.from_json(json.dumps(document))
            ).name

            state = (PLUGIN / "state.json").read_text()
            [before] = [r for r in _state_of(PLUGIN) if r["type"] == TOKEN]
            state = state.replace(before["id"].rsplit("/", 1)[-1], job.rsplit("/", 1)[-1])
            config = json.loads((PLUGIN / "config.json").read_text())
            state = state.replace(config["gpu-training:endpoint"], emu.endpoint)
            config["gpu-training:endpoint"] = emu.endpoint
            salt = (PLUGIN / "encryptionsalt").read_text().strip()
            ws.stack_file.write_text(
                yaml.safe_dump({"config": config, "encryptionsalt": salt}, sort_keys=False)
            )
            ws.pulumi("stack", "init", ws.stack)
            (ws.base / "state.json").write_text(state)
            ws.pulumi("stack", "import", "--file", str(ws.base / "state.json"))

            assert_no_change(ws, resources=1)
            diff = ws.pulumi("preview", "--diff").output
            assert "2 unchanged" in diff and "~ " not in diff and "+-" not in diff, diff

            ws.pulumi("refresh", "--yes", "--skip-preview")
            refreshed = plugin_jobs(ws)["train"]
            assert refreshed["id"] == job
            assert refreshed["outputs"]["state"] == "JOB_STATE_RUNNING"
            assert refreshed["outputs"]["labels"] == before["outputs"]["labels"]
            assert_no_change(ws, resources=1)
            assert job_states(client) == {job: "JOB_STATE_RUNNING"}

            ws.pulumi("destroy", "--yes", "--skip-preview")
            assert job_states(client) == {job: "JOB_STATE_CANCELLED"}
    finally:
        end_plugin_workspace(ws)
