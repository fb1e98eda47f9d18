"""The stack's run key: a random secret that keys every TrainingJob's run hash.

A run hash (``components.lifecycle._adoption.run_hash``) covers a job's env values, so that a changed
secret is a new run. Unkeyed, it let anyone who reads the state (or a job's labels, which
reach billing exports) test guesses of an env value offline. Keyed with this secret, it
cannot be recomputed without the key.

The key is made once per stack by a tiny dynamic resource (``RunKey``, type
``pulumi-python:dynamic/vertex:RunKey``) and kept in the state as a Pulumi secret, so a
``pulumi up`` that was killed after submitting a job computes the same run hash the next time
and adopts the job. It needs no cloud API: create draws 32 random bytes, nothing else calls
out. If it is ever lost, a new key is drawn; running jobs are not touched (the key is only
read when a job is created).

It is also the stack instance's secret: a hash of it keys each new job's identity label
(``components.lifecycle._adoption.instance_identity``, rule 1), so two stacks of the same
names on two backends never take each other's jobs. Every stack written since the key exists
has one, so no state gains a property on upgrade; a destroy deletes it, and the stack made
again is a new instance (an identical ``up`` starts a new job).

It is also what ends the jobs a killed ``pulumi up`` left outside the state. A job whose create
never answered (the engine killed once it was submitted) has no resource for a destroy to
delete; the engine only recorded the create as pending (``components.lifecycle._checkpoint``).
Every job resource depends on the key, so the key's delete comes last in a destroy (and in an
``up`` that drops every job): it reads the stack's checkpoint, and cancels, and waits for, each
active job of this instance that a pending create names (``JobCore.jobs_of_killed_create``). A
refresh (the key's read) names them instead. Nothing else about the key changes: it has no new
input or output, so every stack keeps its key without a diff.
"""

from __future__ import annotations

import secrets
from typing import Any

import pulumi
import pulumi.dynamic
from pulumi.dynamic import ConfigureRequest, CreateResult, DiffResult, ReadResult, ResourceProvider

from .dynamic._host import install_error_handlers, message_on_failure, request_urn
from .lifecycle._engine_watch import watch_engine
from .lifecycle._progress import write_line

__all__ = ["KEY", "RUN_KEY_RESOURCE_NAME", "RunKey", "RunKeyProvider", "stack_run_key"]

KEY = "key"

# Inside the provider process: end it when the engine that started it is gone.
watch_engine()
RUN_KEY_RESOURCE_NAME = "training-run-key"


class RunKeyProvider(ResourceProvider):
    """Draws the key on create; the key never changes afterwards."""

    serialize_as_secret_always = False

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def create(self, props: dict[str, Any]) -> CreateResult:
        """A new key: 256 random bits as hex text. No job carries its instance yet, so the
        job creates of this process need not look for one of it (``_adoption`` rule 4)."""
        from .lifecycle._adoption import instance_of, record_new_instance

        key = secrets.token_hex(32)
        record_new_instance(instance_of(key))
        return CreateResult(RUN_KEY_RESOURCE_NAME, {KEY: key})

    def diff(self, _id: str, olds: dict[str, Any], _news: dict[str, Any]) -> DiffResult:
        """Nothing about the key is an input: it never changes."""
        _came_back(olds)
        return DiffResult(changes=False)

    @message_on_failure
    def configure(self, req: ConfigureRequest) -> None:
        """Read the ``training:`` settings: where the jobs of a killed create are listed."""
        from .lifecycle._settings import ProviderSettings

        install_error_handlers()  # first: a bad setting fails this call with its message
        settings = ProviderSettings.read(req.config.get)
        self.__dict__["_settings"] = settings
        install_error_handlers(settings.endpoint.scrub)

    @message_on_failure
    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """The key lives only in the state: refresh keeps it, and names the jobs a killed
        ``pulumi up`` left outside the state (a refresh never fails for them)."""
        from .vertex.api import JobOperationError

        _came_back(props)
        try:
            self._jobs_of_killed_creates(props, end=False)
        except JobOperationError as exc:
            write_line(str(exc))
        return ReadResult(id_, props)

    @message_on_failure
    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """Cancel, and wait for, every active job of this stack instance that a create the
        engine never saw answered submitted; fails (the key stays) when one cannot be ended."""
        self._jobs_of_killed_creates(props, end=True)

    def _jobs_of_killed_creates(self, props: dict[str, Any], *, end: bool) -> None:
        from .core._jobs import TRAINING_JOB, JobCore
        from .core._tuning import TUNING_JOB
        from .lifecycle._adoption import instance_of
        from .lifecycle._checkpoint import (
            StateUnreadable,
            pending_creates,
            read_deployment,
            stack_of,
        )
        from .lifecycle._wire import TRAINING_JOB_TYPE, TUNING_JOB_TYPE

        key, urn = props.get(KEY), request_urn()
        if not isinstance(key, str) or not key or urn is None:
            return  # called outside the engine (a test): there is no stack to read
        kinds = {TRAINING_JOB_TYPE: TRAINING_JOB, TUNING_JOB_TYPE: TUNING_JOB}
        try:
            pending = pending_creates(read_deployment(stack_of(urn)), frozenset(kinds))
        except StateUnreadable as exc:
            write_line(
                f"the jobs a killed `pulumi up` may have left outside the stack were not looked "
                f"for: its state could not be read ({exc})"
            )
            return
        settings = self.__dict__.get("_settings")
        for create in pending:
            core = JobCore(kinds[create.type_token], settings)
            core.jobs_of_killed_create(create.urn, create.inputs, instance_of(key), end=end)


def _came_back(props: dict[str, Any]) -> None:
    """The key is in the stack's state, where other processes may have read it: the job
    creates of this process look for their jobs again (``_adoption`` rule 4)."""
    from .lifecycle._adoption import forget_new_instance, instance_of

    key = props.get(KEY)
    if isinstance(key, str) and key:
        forget_new_instance(instance_of(key))


class RunKey(pulumi.dynamic.Resource, module="vertex", name="RunKey"):
    """The stack's run key (``key`` is a secret Output)."""

    key: pulumi.Output[str]

    def __init__(self, resource_name: str, opts: pulumi.ResourceOptions | None = None) -> None:
        opts = pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(additional_secret_outputs=[KEY])
        )
        super().__init__(RunKeyProvider(), resource_name, {KEY: None}, opts)


# One RunKey per program run, and one secret Output of its key that every job shares. The run
# is told apart by its resource monitor (the engine's connection, or a test's mock): unit tests
# run many programs in one process.
_keys: dict[int, tuple[Any, pulumi.Output[str]]] = {}


def stack_run_key() -> pulumi.Output[str]:
    """The run key of the stack being deployed (its resource is declared on first use)."""
    from pulumi.runtime import settings

    monitor = settings.SETTINGS.monitor
    found = _keys.get(id(monitor))
    if found is None or found[0] is not monitor:
        # Secret by itself, not only because the engine marks the output secret.
        key: pulumi.Output[str] = pulumi.Output.secret(RunKey(RUN_KEY_RESOURCE_NAME).key)
        found = _keys[id(monitor)] = (monitor, key)
    return found[1]
