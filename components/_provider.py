"""The dynamic providers of the job resources: the core's lifecycle behind ``pulumi.dynamic``.

``JobProvider`` translates the dynamic provider host's calls (``check``, ``diff``, ``create``,
``read``, ``update``, ``delete``) into the core's (``components.core._jobs.JobCore``) and its
typed answers (``components.core._results``) into ``pulumi.dynamic``'s; ``configure`` reads the
``training:`` settings and applies the host's patches (``components.dynamic._host``: its pool of
four operations, its Cancel, its tracebacks; docs/patches.md). ``TrainingJobProvider``
(``components.training_job.TrainingJob``) is it for a CustomJob,
``components._tuning_provider.TuningJobProvider`` for a HyperparameterTuningJob.

Each class lives in an importable module so that ``pulumi.dynamic`` pickles it BY REFERENCE:
the ``__provider`` property holds a module and class name, not code. A change to this file
therefore changes no resource's inputs (and causes no diff); the provider process imports
the current code. ``__getstate__`` keeps the pickle empty even for a configured instance: the
provider holds no client, socket or secret on ``self`` (its core is made in the provider
process, on first use).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    ConfigureRequest,
    CreateResult,
    DiffResult,
    ReadResult,
    ResourceProvider,
    UpdateResult,
)

from .core._jobs import TRAINING_JOB, JobCore, JobResourceKind
from .dynamic._host import (
    install_cancel_handler,
    install_error_handlers,
    message_on_failure,
    widen_host_pool,
)
from .lifecycle._engine_watch import watch_engine
from .lifecycle._settings import Endpoint, ProviderSettings

# Inside the provider process: end it when the engine that started it is gone.
watch_engine()

__all__ = [
    "TRAINING_JOB",
    "JobProvider",
    "JobResourceKind",
    "TrainingJobProvider",
]


class JobProvider(ResourceProvider):
    """The dynamic provider of one kind of job (``kind``): a client of the core."""

    kind: ClassVar[JobResourceKind]

    # Nothing secret is captured in the pickled provider (it is empty), so only mark it
    # secret if Pulumi finds a secret Output in it.
    serialize_as_secret_always = False

    def __init__(self) -> None:
        super().__init__()

    def __getstate__(self) -> dict[str, Any]:
        # Configuration comes from configure() in the provider process, never from the pickle.
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @property
    def core(self) -> JobCore:
        """This provider's lifecycle (made on first use, with the default settings until
        ``configure``)."""
        core: JobCore | None = self.__dict__.get("_core")
        if core is None:
            core = self.__dict__["_core"] = JobCore(self.kind)
        return core

    @message_on_failure
    def configure(self, req: ConfigureRequest) -> None:
        """Read the ``training:`` settings; let the host serve that many operations at once,
        and let the engine's Cancel stop the waits."""
        install_error_handlers()  # first: a bad setting fails this call with its message
        self.use_settings(ProviderSettings.read(req.config.get))
        # The host calls this in one of its worker threads, before the first operation.
        widen_host_pool(self.settings.max_concurrent_operations)
        install_cancel_handler()
        install_error_handlers(self.endpoint.scrub)

    def use_settings(self, settings: ProviderSettings) -> None:
        """Work with ``settings`` (``JobCore.use_settings``), no host patch."""
        self.core.use_settings(settings)

    @property
    def settings(self) -> ProviderSettings:
        return self.core.settings

    @property
    def endpoint(self) -> Endpoint:
        return self.core.endpoint

    @message_on_failure
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        """Validate the inputs: one failure per problem, at its property path."""
        checked = self.core.check(news)
        failures = [CheckFailure(p.path, p.text) for p in checked.problems]
        return CheckResult(checked.inputs, failures)

    @message_on_failure
    def diff(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> DiffResult:
        """Any change of the job replaces it; provider-only settings update in place."""
        diff = self.core.diff(_olds, _news)
        if diff.replaces:
            return DiffResult(
                changes=True,
                replaces=diff.replaced_paths,
                delete_before_replace=diff.delete_before_replace,
            )
        return DiffResult(changes=diff.changes, replaces=[])

    @message_on_failure
    def create(
        self, props: dict[str, Any], read_held: Callable[[], Iterable[str]] | None = None
    ) -> CreateResult:
        """Submit the job (or adopt it, or take over the one the inputs name), maybe wait."""
        created = self.core.create(props, read_held)
        return CreateResult(created.id, created.outputs)

    @message_on_failure
    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """Refresh state and times; a job deleted out of band leaves the stack."""
        found = self.core.read(id_, props)
        return ReadResult(found.id, found.outputs)

    @message_on_failure
    def update(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> UpdateResult:
        """Only provider-only settings change here (diff replaces everything else)."""
        return UpdateResult(self.core.update(_id, _olds, _news).outputs)

    @message_on_failure
    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Cancel an active job, wait for it to stop, then delete its record unless kept."""
        self.core.delete(_id, _props)


class TrainingJobProvider(JobProvider):
    """CRUD for a Vertex AI CustomJob (or the local emulator's).

    Existing stacks name this class (module and name) in every TrainingJob's ``__provider``.
    """

    kind = TRAINING_JOB
