"""One adapter per front door, for the running-job table's suite (``test_running_job_table.py``).

A :class:`Door` writes a program of jobs (the dynamic resources: ``training:jobs`` entries in
the stack's configuration, each with a spec file; the plugin: a Pulumi YAML program of
``gpu-training:vertex:*`` resources), sets the provider's settings, and reads back what the
state holds of a job (its id, ``adopted``, ``state``). The tests speak only of a job ``train``
(or ``tune``, a HyperparameterTuningJob), its knobs (``waitFor``, ``exclusiveGpus``...) and the
settings both doors share (``retryDeadline``, ``cancelTimeout``, ``deleteRecords``,
``maxConcurrentOperations``), and so run every row through both doors unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from components.lifecycle._wire import TUNING_JOB_TYPE
from tests.e2e._engine import (
    GCP_PROJECT,
    GCP_REGION,
    HANG_LABELS,
    REPO,
    TRAINING_JOB_TYPE,
    Workspace,
    job_entry,
    local_config,
    python_job,
    wait_until,
)
from tests.e2e._plugin import (
    IMAGE,
    SECRET,
    TOKEN,
    end_plugin_workspace,
    plugin_processes,
    plugin_workspace,
    training_job,
    write_yaml_program,
)

PLUGIN_TUNING_TOKEN = "gpu-training:vertex:HyperparameterTuningJob"
DEFAULT_SETTINGS: dict[str, Any] = {"retryDeadline": "20", "cancelTimeout": "60"}
"""Keep failures quick: the emulator answers at once or not at all."""


class Door:
    """What a row test needs of a front door. ``write`` declares the jobs (by resource name:
    their knobs), ``init`` the stack; after ``init``, ``write`` changes the program in place."""

    name: str
    training_type: str
    tuning_type: str
    project_name: str
    spec_replace_reasons: tuple[str, ...]
    """``replaceReasons`` of a replace after an edit of the job's machine type."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.endpoint: str | None = None
        self.settings: dict[str, Any] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.tuning = False

    # -- the program and the stack ------------------------------------------------------------

    def write(
        self,
        *names: str,
        tuning: bool = False,
        labels: Mapping[str, str] = HANG_LABELS,
        machine_type: str = "n1-standard-4",
        **knobs: Any,
    ) -> None:
        """The jobs ``names`` (default ``train``; a tuning job ``tune``), each labelled
        ``labels`` (default: runs until cancelled) with ``knobs`` as its settings."""
        self.tuning = tuning
        chosen = names or (("tune",) if tuning else ("train",))
        self.jobs = {
            name: {"labels": dict(labels), "machine_type": machine_type, "knobs": knobs}
            for name in chosen
        }
        self._write()

    def add(self, name: str, *, labels: Mapping[str, str] = HANG_LABELS, **knobs: Any) -> None:
        """One more job ``name`` beside those ``write`` declared (of the same kind)."""
        self.jobs[name] = {"labels": dict(labels), "machine_type": "n1-standard-4", "knobs": knobs}
        self._write()

    def init(self, endpoint: str, **settings: Any) -> None:
        """The stack, pointed at the emulator at ``endpoint``, with ``settings`` over the
        defaults (``retryDeadline: 20``, ``cancelTimeout: 60``)."""
        self.endpoint = endpoint
        self.settings = {**DEFAULT_SETTINGS, **settings}
        self._write()
        self.ws.pulumi("stack", "init", self.ws.stack)

    def _write(self) -> None:
        raise NotImplementedError

    # -- what the state holds -----------------------------------------------------------------

    @property
    def job_type(self) -> str:
        """The resource type of the jobs ``write`` declared."""
        return self.tuning_type if self.tuning else self.training_type

    def urn(self, name: str | None = None) -> str:
        """The URN of the job ``name`` (default: the first ``write`` declared)."""
        return f"urn:pulumi:{self.ws.stack}::{self.project_name}::{self.job_type}::{name or self._first}"

    @property
    def _first(self) -> str:
        return next(iter(self.jobs))

    def resources(self) -> dict[str, dict[str, Any]]:
        """The state's resources of ``job_type``, by name."""
        return {
            r["urn"].rsplit("::", 1)[-1]: r
            for r in self.ws.export().get("resources") or []
            if r["type"] == self.job_type
        }

    def held(self, name: str | None = None) -> str:
        """The name of the job the state holds for the resource ``name``."""
        return str(self.resources()[name or self._first]["id"])

    def status(self, resource: Mapping[str, Any]) -> Mapping[str, Any]:
        """The job's status outputs (``adopted``, ``state``...) of a resource of the state."""
        raise NotImplementedError

    def adopted(self, name: str | None = None) -> bool:
        return bool(self.status(self.resources()[name or self._first])["adopted"])

    # -- processes ------------------------------------------------------------------------------

    def wait_for_providers_to_end(self) -> None:
        """After the CLI's group was killed: the provider ends by itself (it notices its engine
        is gone); what else is left (a language host that does not) is killed, as a crash would."""
        raise NotImplementedError

    def end(self) -> None:
        """Fail the test if a pulumi process outlived it."""
        assert self.ws.kill_strays() == [], "pulumi processes outlived the test"


class DynamicDoor(Door):
    """The Python dynamic resources: ``training:jobs`` entries of the project's own program."""

    name = "dynamic"
    training_type = TRAINING_JOB_TYPE
    tuning_type = TUNING_JOB_TYPE
    project_name = "gpu-training"
    spec_replace_reasons = ("spec",)

    def _write(self) -> None:
        entries = []
        for name, job in self.jobs.items():
            if self.tuning:
                document: dict[str, Any] = yaml.safe_load(
                    (REPO / "stacks/jobs/local-tuning.yaml").read_text()
                )
                document["labels"] = job["labels"]
            else:
                document = python_job(name, labels=job["labels"], machine_type=job["machine_type"])
            entries.append(job_entry(name, self.ws.write_job(name, document), **job["knobs"]))
        if self.endpoint is None:
            return
        settings = {f"training:{key}": value for key, value in self.settings.items()}
        self.ws.write_config(local_config(self.endpoint, entries, **settings))

    def status(self, resource: Mapping[str, Any]) -> Mapping[str, Any]:
        status: Mapping[str, Any] = resource["outputs"]["status"]
        return status

    def wait_for_providers_to_end(self) -> None:
        # The dynamic provider and the Python language host both watch their engine.
        wait_until(
            lambda: not self.ws.stray_processes(),
            timeout=15,
            what="the plugins to end by themselves",
        )


class PluginDoor(Door):
    """The provider plugin, driven from a Pulumi YAML program."""

    name = "plugin"
    training_type = TOKEN
    tuning_type = PLUGIN_TUNING_TOKEN
    project_name = "plugin-yaml"
    spec_replace_reasons = ("jobSpec",)

    def _write(self) -> None:
        resources = {}
        for name, job in self.jobs.items():
            properties = training_job(job["machine_type"], secret={"fn::secret": SECRET})
            properties["labels"] = dict(job["labels"])  # as many labels as the dynamic door's
            if self.tuning:
                properties = _plugin_tuning_job(properties, job["labels"])
            resources[name] = {"type": self.job_type, "properties": {**properties, **job["knobs"]}}
        write_yaml_program(self.ws, resources)
        if self.endpoint is None:
            return
        self.ws.write_config(
            {
                "gpu-training:endpoint": self.endpoint,
                "gpu-training:project": GCP_PROJECT,
                "gpu-training:region": GCP_REGION,
                **{f"gpu-training:{key}": value for key, value in self.settings.items()},
            }
        )

    def status(self, resource: Mapping[str, Any]) -> Mapping[str, Any]:
        outputs: Mapping[str, Any] = resource["outputs"]
        return outputs

    def wait_for_providers_to_end(self) -> None:
        wait_until(
            lambda: not plugin_processes(self.ws), timeout=15, what="the plugin to end by itself"
        )
        self.ws.kill_strays()  # pulumi-language-yaml does not watch for its engine

    def end(self) -> None:
        end_plugin_workspace(self.ws)


def _plugin_tuning_job(training: dict[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
    """A HyperparameterTuningJob's properties whose trials run ``training``'s spec (on a CPU
    machine: two trials at once need no GPU quota)."""
    trial = training["jobSpec"]
    trial["workerPoolSpecs"][0]["machineSpec"] = {"machineType": "n1-standard-4"}
    trial["workerPoolSpecs"][0]["containerSpec"]["imageUri"] = IMAGE
    return {
        "labels": dict(labels),
        "studySpec": {
            "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
            "parameters": [{"parameterId": "lr", "discreteValueSpec": {"values": [0.01, 0.1]}}],
            "algorithm": "GRID_SEARCH",
        },
        "maxTrialCount": 2,
        "parallelTrialCount": 1,
        "trialJobSpec": trial,
    }


DOORS = ("dynamic", "plugin")


def open_door(door: str, bin_dir: Path, base: Path) -> Door:
    """The adapter of ``door`` over a fresh workspace under ``base``."""
    if door == "dynamic":
        return DynamicDoor(Workspace.create(base, bin_dir))
    if door == "plugin":
        return PluginDoor(plugin_workspace(bin_dir, base))
    raise ValueError(f"door: {door!r} is neither of {DOORS}")
