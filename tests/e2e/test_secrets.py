"""An env var value of a job spec is never in plain text in the state, its backups or the CLI output."""

from __future__ import annotations

import json
import uuid
from typing import Any

from components.lifecycle._adoption import run_hash
from tests.e2e._engine import (
    HANG_LABELS,
    SIMULATE,
    Workspace,
    emulator_for,
    job_entry,
    job_spec,
    list_jobs,
    local_config,
    python_job,
)

# The engine's marker of a secret value in a checkpoint.
SECRET_SIG = ("4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270")


def _encrypted(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get(SECRET_SIG[0]) == SECRET_SIG[1]
        and str(value.get("ciphertext", "")).startswith("v1:")
    )


def test_env_values_stay_secret(ws: Workspace) -> None:
    secret = f"e2e-SECRET-{uuid.uuid4().hex}"
    with emulator_for(ws, *SIMULATE) as emu:
        spec = ws.write_job(
            "train",
            python_job("train", labels=HANG_LABELS, env={"WANDB_API_KEY": secret, "MODE": "plain"}),
        )
        ws.init_stack(local_config(emu.endpoint, [job_entry("train", spec, waitFor="running")]))

        printed = [
            ws.pulumi("preview", "--diff").output,
            ws.pulumi("preview", "--json").output,
            ws.up().output,
            ws.pulumi("refresh", "--yes", "--skip-preview").output,
            ws.pulumi("stack", "output", "--json").output,
            ws.pulumi("stack", "export").output,  # --show-secrets=false is the default
            ws.pulumi("stack", "export", "--show-secrets=false").output,
        ]
        for text in printed:
            assert secret not in text

        # The job got the value, and the state has it: encrypted.
        [job] = list_jobs(emu.client())
        env = {e.name: e.value for e in job.job_spec.worker_pool_specs[0].python_package_spec.env}
        assert env == {"WANDB_API_KEY": secret, "MODE": "plain"}
        resource = ws.training_jobs()["train"]
        assert _encrypted(resource["inputs"]["env_values"])
        assert _encrypted(resource["outputs"]["env_values"])
        # The names stay visible (previews show which variables a job gets), the values do not.
        assert job_spec(resource["inputs"])["workerPoolSpecs"][0]["pythonPackageSpec"]["env"] == [
            {"name": "WANDB_API_KEY"},
            {"name": "MODE"},
        ]

        # The raw files of the file:// backend (checkpoint, backups, history) and PULUMI_HOME.
        files = ws.backend_files()
        home_files = [p for p in ws.home.rglob("*") if p.is_file()]
        assert ws.checkpoint_file() in files
        raw = ws.checkpoint_file().read_text()
        assert '"ciphertext"' in raw
        for path in files + home_files:
            assert secret.encode() not in path.read_bytes(), (
                f"{path} holds the secret in plain text"
            )

        # Control: the value really is in the state, so the checks above could have failed.
        shown = ws.pulumi("stack", "export", "--show-secrets").output
        assert secret in shown

        # Nor did the emulator log it.
        for log in emu.state_dir.glob("server*.log"):
            assert secret not in log.read_text(errors="replace")


def _plain_run_hash(state: dict[str, Any], env: dict[str, str]) -> str:
    """The unkeyed run hash of a job whose env values are ``env`` (a guesser's computation)."""
    document = job_spec(state["inputs"])
    for var in document["workerPoolSpecs"][0]["pythonPackageSpec"]["env"]:
        var["value"] = env[var["name"]]
    inputs = state["inputs"]
    return run_hash(
        document,
        project=inputs["project"],
        region=inputs["region"],
        triggers=inputs.get("triggers"),
    )


def test_state_reveals_nothing_that_lets_env_values_be_guessed(ws: Workspace) -> None:
    """Two jobs, equal but for an env value: a reader of the state cannot test guesses."""
    weak = {"a": "hunter2", "b": "hunter3"}
    with emulator_for(ws, *SIMULATE) as emu:
        entries = []
        for name, value in weak.items():
            spec = ws.write_job(name, python_job("same", labels=HANG_LABELS, env={"PW": value}))
            entries.append(job_entry(name, spec, waitFor="running"))
        ws.init_stack(local_config(emu.endpoint, entries))
        ws.up()

        state = ws.export()
        [key] = [r for r in state["resources"] if r["type"].endswith(":RunKey")]
        assert _encrypted(key["outputs"]["key"])  # the stack's secret, stored as ciphertext
        shown = next(
            r["outputs"]["key"]
            for r in ws.export(show_secrets=True)["resources"]
            if r["type"].endswith(":RunKey")
        )
        real_key = json.loads(shown["plaintext"]) if isinstance(shown, dict) else shown
        assert isinstance(real_key, str) and len(real_key) == 64
        raw = ws.checkpoint_file().read_text()
        assert real_key not in raw and real_key not in ws.pulumi("stack", "output", "--json").output

        jobs = ws.training_jobs()
        labels = {
            j.display_name + str(j.name): j.labels["pulumi_run"] for j in list_jobs(emu.client())
        }
        for name, value in weak.items():
            status = jobs[name]["outputs"]["status"]
            # The hash in the state (and on the job) is keyed: the right guess does not match it.
            assert status["run_hash"] in labels.values()
            assert status["run_hash"] != _plain_run_hash(jobs[name], {"PW": value})
            assert _plain_run_hash(jobs[name], {"PW": value}) not in raw
            # With the key, it is the keyed hash of exactly these inputs.
            document = job_spec(jobs[name]["inputs"])
            document["workerPoolSpecs"][0]["pythonPackageSpec"]["env"][0]["value"] = value
            inputs = jobs[name]["inputs"]
            assert status["run_hash"] == run_hash(
                document,
                project=inputs["project"],
                region=inputs["region"],
                triggers=inputs.get("triggers"),
                key=real_key,
            )
        assert (
            jobs["a"]["outputs"]["status"]["run_hash"] != jobs["b"]["outputs"]["status"]["run_hash"]
        )
        # The key itself is an input of each job only as a secret, and never an output.
        for job in jobs.values():
            assert _encrypted(job["inputs"]["run_key"])
            assert "run_key" not in job["outputs"]
