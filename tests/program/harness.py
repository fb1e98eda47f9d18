"""Run the Pulumi program under ``pulumi.runtime.Mocks`` and record every registration.

``run_stack("dev")`` reads ``stacks/Pulumi.dev.yaml`` (plus overrides), runs
``components.program.run`` with mocks, and returns what the resource monitor received:
type, name, inputs, parent, dependencies, property dependencies, secret outputs, and
whether each input was sent as a secret.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc

REPO = Path(__file__).resolve().parents[2]
PROJECT = "gpu-training"
JOB_TYPE = "pulumi-python:dynamic/vertex:TrainingJob"
TUNING_TYPE = "pulumi-python:dynamic/vertex:HyperparameterTuningJob"
RUN_KEY_TYPE = "pulumi-python:dynamic/vertex:RunKey"
MOCK_RUN_KEY = "5a" * 32


@dataclass
class Registration:
    type: str
    name: str
    urn: str
    inputs: dict[str, Any]
    parent: str
    dependencies: list[str]
    property_dependencies: dict[str, list[str]]
    secret_inputs: set[str]
    additional_secret_outputs: list[str]
    raw_object: str
    delete_before_replace: bool = False


JOB_FIELDS = ("job_name", "state", "wait_for", "wait_timeout", "triggers")
"""TrainingJob attributes whose resolved values ``run_stack`` records."""


@dataclass
class StackRun:
    registrations: list[Registration] = field(default_factory=list)
    program: Any = None
    job_fields: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per job: what its attributes in ``JOB_FIELDS`` resolved to."""
    exports: dict[str, Any] = field(default_factory=dict)
    """The stack outputs, resolved."""

    def by_type(self, typ: str) -> list[Registration]:
        return [r for r in self.registrations if r.type == typ]

    def one(self, typ: str) -> Registration:
        found = self.by_type(typ)
        assert len(found) == 1, f"expected one {typ}, got {[r.name for r in found]}"
        return found[0]

    def urn_of(self, typ: str) -> str:
        return self.one(typ).urn


class _Mocks(pulumi.runtime.Mocks):
    def __init__(self, stack_state: dict[str, Any] | None = None) -> None:
        self.stack_state = stack_state
        """What the engine's ``readStackResourceOutputs`` returns (None: its mock's nothing)."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        state = dict(args.inputs)
        if args.typ == "gcp:serviceaccount/account:Account":
            state["email"] = (
                f"{args.inputs['accountId']}@{args.inputs['project']}.iam.gserviceaccount.com"
            )
            state["name"] = f"projects/{args.inputs['project']}/serviceAccounts/{state['email']}"
        if args.typ == RUN_KEY_TYPE:
            state["key"] = MOCK_RUN_KEY
        if args.typ == JOB_TYPE:
            state["status"] = {
                "job_name": f"projects/p/locations/r/customJobs/{args.name}",
                "state": "JOB_STATE_QUEUED",
            }
        if args.typ == TUNING_TYPE:
            state["status"] = {
                "job_name": f"projects/p/locations/r/hyperparameterTuningJobs/{args.name}",
                "state": "JOB_STATE_QUEUED",
                "trial_counts": {"SUCCEEDED": 0},
                "best_trial": None,
            }
        return f"{args.name}-id", state

    def call(
        self, args: pulumi.runtime.MockCallArgs
    ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        if args.token == "pulumi:pulumi:readStackResourceOutputs" and self.stack_state:
            return {"name": args.args["stackName"], "outputs": self.stack_state}, []
        return {}, []


class _RecordingMonitor(pulumi_mocks.MockMonitor):
    def __init__(self, mocks: pulumi.runtime.Mocks, run: StackRun) -> None:
        super().__init__(mocks)
        self.run = run

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type != "pulumi:pulumi:Stack":
            raw = rpc.deserialize_properties(request.object, keep_unknowns=True)
            self.run.registrations.append(
                Registration(
                    type=request.type,
                    name=request.name,
                    urn=response.urn,
                    inputs={
                        k: rpc.unwrap_rpc_secret(v)
                        for k, v in rpc.deserialize_properties(request.object).items()
                    },
                    parent=request.parent,
                    dependencies=list(request.dependencies),
                    property_dependencies={
                        k: list(v.urns) for k, v in request.propertyDependencies.items()
                    },
                    secret_inputs={k for k, v in raw.items() if rpc.is_rpc_secret(v)},
                    additional_secret_outputs=list(request.additionalSecretOutputs),
                    raw_object=json.dumps(raw, default=str),
                    delete_before_replace=bool(request.deleteBeforeReplace),
                )
            )
        return response


def stack_config(stack: str, overrides: dict[str, Any] | None = None) -> dict[str, str]:
    """``stacks/Pulumi.<stack>.yaml`` as the flat string map ``set_all_config`` takes."""
    data = yaml.safe_load((REPO / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    # Under Mocks no emulator runs: the local stack's jobs name its endpoint, not its state dir
    # (tests/scripts/test_local_stack_env.py runs the stack file as it is).
    data.pop("training:emulatorStateDir", None)
    data.update(overrides or {})
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in data.items()}


def run_stack(
    stack: str,
    overrides: dict[str, Any] | None = None,
    record: StackRun | None = None,
    stack_state: dict[str, Any] | None = None,
) -> StackRun:
    """Run the program for ``stack`` under mocks; raises what the program raises.

    Pass ``record`` to see what was registered even when the program raises, and
    ``stack_state`` for what the stack's last checkpoint holds (``{urn: {"type", "outputs"}}``).
    """
    from components.program import run as run_program

    config = stack_config(stack, overrides)
    return run_program_of(run_program, config, record, stack_state, stack=stack)


def _ensure_current_loop() -> None:
    """Pulumi's mocks run on the thread's current event loop: make one where an earlier test
    left none (``asyncio.run`` unsets it when it ends) or a closed one."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            loop = asyncio.get_event_loop()
    except RuntimeError:
        loop = None
    if loop is None or loop.is_closed():
        asyncio.set_event_loop(asyncio.new_event_loop())


def run_program_of(
    declare: Callable[[], Any],
    config: dict[str, str],
    record: StackRun | None = None,
    stack_state: dict[str, Any] | None = None,
    *,
    stack: str = "dev",
) -> StackRun:
    """Run ``declare`` as a Pulumi program under mocks with the flat stack ``config``.

    ``declare`` returns what ``StackRun.program`` is to hold: anything with a ``jobs`` mapping
    of name to job resource (``components.program.Program``, or a namespace a test makes for
    the resources it declares itself).
    """
    result = StackRun() if record is None else record
    _ensure_current_loop()
    pulumi.runtime.set_all_config(config)
    pulumi.runtime.settings.ROOT.set(None)
    mocks = _Mocks(stack_state)
    monitor = _RecordingMonitor(mocks, result)
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=False, monitor=monitor)

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def program() -> Any:
        result.program = declare()
        jobs = result.program.jobs
        root = pulumi.runtime.get_root_resource()
        exports = getattr(root, "outputs", {})

        def keep(values: list[Any]) -> None:
            for i, name in enumerate(jobs):
                chunk = values[i * len(JOB_FIELDS) : (i + 1) * len(JOB_FIELDS)]
                result.job_fields[name] = dict(zip(JOB_FIELDS, chunk, strict=True))

        fields = pulumi.Output.all(
            *[getattr(job, attribute) for job in jobs.values() for attribute in JOB_FIELDS]
        )
        return pulumi.Output.all(
            fields.apply(keep),
            pulumi.Output.from_input(exports).apply(result.exports.update),
        )

    program()
    return result
