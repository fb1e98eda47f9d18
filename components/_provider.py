"""The dynamic providers of the job resources: one lifecycle, one kind of job each.

``JobProvider`` is the whole lifecycle (check, diff, create with submit-or-adopt and wait,
read, update, delete); a ``JobResourceKind`` says what differs between kinds of job: the spec
and its validator, the API calls, the job object sent, the outputs and the prices.
``TrainingJobProvider`` (``components.training_job.TrainingJob``) is it for a CustomJob,
``components._tuning_provider.TuningJobProvider`` for a HyperparameterTuningJob.

Each class lives in an importable module so that ``pulumi.dynamic`` pickles it BY REFERENCE:
the ``__provider`` property holds a module and class name, not code. A change to this file
therefore changes no resource's inputs (and causes no diff); the provider process imports
the current code. ``__getstate__`` keeps the pickle empty even for a configured instance: the
provider holds no client, socket or secret on ``self``; the API client is the process's
(``components.vertex.api.shared_client``), made on the first API call.

The provider process serves many operations at once, in threads: ``configure`` lifts the
dynamic provider host's limit of four (``components._host``, ``training:maxConcurrentOperations``),
and nothing here holds a lock across an API call. While a create or a delete waits for a job,
progress lines go to stderr, which the engine shows (``components._progress``).

``check`` and ``diff`` run on every preview and never import the Vertex client library.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
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

from components._check import CUSTOM_JOB_SPEC, SpecKind, check_inputs, diff_inputs
from components._engine_watch import watch_engine
from components._host import profiled, widen_host_pool
from components._identity import identity_label, run_hash
from components._pricing import cost_outputs
from components._progress import WaitProgress, local_chief_log
from components._settings import Endpoint, ProviderSettings
from components._spec import JobSpec
from components._wire import (
    DEFAULT_WAIT_TIMEOUT,
    ENV_VALUES,
    EXCLUSIVE_GPUS,
    HIDDEN_INPUTS,
    IDENTITY,
    IDENTITY_LABEL,
    KEEP_RECORD,
    PROJECT,
    PROVIDER_KEY,
    REGION,
    RUN_KEY,
    RUN_LABEL,
    SPEC,
    STATUS,
    STATUS_FIELDS,
    TRIGGERS,
    WAIT_FOR,
    WAIT_TIMEOUT,
    decode_spec,
    parse_job_name,
    status_of,
)
from components.vertex.api import (
    CUSTOM_JOB,
    TERMINAL_STATES,
    JobApi,
    JobKind,
    JobOperationError,
    RetryPolicy,
    Submission,
    WaitFailed,
    aiplatform,
    is_not_found,
    job_api,
    job_outputs,
    redact,
    state_name,
)

# Inside the provider process: end it when the engine that started it is gone.
watch_engine()

__all__ = ["TRAINING_JOB", "JobProvider", "JobResourceKind", "TrainingJobProvider"]

CANCEL_QUIET_SECONDS = 2.0
"""A cancelled job that stops sooner prints no progress (a destroy of many jobs stays quiet)."""


@dataclass(frozen=True)
class JobResourceKind:
    """What one job resource's provider does its own way; the lifecycle is ``JobProvider``'s."""

    what: str
    """``training job``: for messages."""
    spec: SpecKind[Any]
    """The spec ``check`` validates, and where its env values sit."""
    api: JobKind
    """The API calls of the job's kind."""
    build: Callable[[dict[str, Any]], Any]
    """The full spec document (env values and the run's labels in) → the job object to create;
    the one place the client library's types are imported (create only)."""
    outputs: Callable[..., dict[str, Any]]
    """``(job, endpoint, project=, region=)`` → the ``status`` fields read from the job."""
    costs: Callable[[Mapping[str, Any], str], Mapping[str, Any]]
    """``(document, region)`` → the ``status`` fields of its price."""
    parse_name: Callable[[str], tuple[str, str, str] | None]
    """(project, region, id) of the job's resource name."""


def _custom_job(document: dict[str, Any]) -> Any:
    aiplatform()  # first import here, with the library's version warnings silenced
    from components.vertex.convert import to_custom_job

    return to_custom_job(JobSpec.parse(document))


TRAINING_JOB = JobResourceKind(
    what="training job",
    spec=CUSTOM_JOB_SPEC,
    api=CUSTOM_JOB,
    build=_custom_job,
    outputs=job_outputs,
    costs=cost_outputs,
    parse_name=parse_job_name,
)
"""A ``TrainingJob``: a CustomJob."""


def _outputs(props: dict[str, Any]) -> dict[str, Any]:
    """``props`` without what never goes to the state's outputs (provider, run key, status)."""
    return {
        k: v
        for k, v in props.items()
        if k != PROVIDER_KEY and k not in HIDDEN_INPUTS and k not in STATUS_FIELDS
    }


def _without_plain_run_hash(
    status: dict[str, Any], props: dict[str, Any], spec: SpecKind[Any]
) -> dict[str, Any]:
    """``status`` without a ``run_hash`` written before run hashes were keyed.

    That hash is unkeyed over the env values: anyone reading the state could test guesses of
    them. It is recognised by recomputing it, and dropped from the state on the next refresh.
    """
    if not status.get("run_hash") or not isinstance(props.get(SPEC), str | dict):
        return status
    try:
        document = spec.merge_env(decode_spec(props[SPEC]), props.get(ENV_VALUES) or {})
        plain = run_hash(
            document,
            project=str(props.get(PROJECT, "")),
            region=str(props.get(REGION, "")),
            triggers=props.get(TRIGGERS),
        )
    except (ValueError, TypeError, AttributeError):
        return status
    if status["run_hash"] != plain:
        return status
    return {k: v for k, v in status.items() if k != "run_hash"}


@contextmanager
def _credentials_scrubbed(endpoint: Endpoint, secrets: dict[str, Any]) -> Iterator[None]:
    """Errors leave with the endpoint's credentials and env values taken out of their text."""
    try:
        yield
    except Exception as exc:
        text = redact(endpoint.scrub(str(exc)), secrets)
        if text == str(exc):
            raise
        raise JobOperationError(text) from None


class JobProvider(ResourceProvider):
    """CRUD for one kind of Vertex AI job (or the local emulator's): ``kind`` says which."""

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

    # -- configuration ----------------------------------------------------------------------

    def configure(self, req: ConfigureRequest) -> None:
        """Read the ``training:`` settings; let the host serve that many operations at once."""
        self._settings = ProviderSettings.read(req.config.get)
        # The host calls this in one of its worker threads, before the first operation.
        widen_host_pool(self._settings.max_concurrent_operations)

    @property
    def settings(self) -> ProviderSettings:
        settings: ProviderSettings = getattr(self, "_settings", ProviderSettings())
        return settings

    @property
    def endpoint(self) -> Endpoint:
        return self.settings.endpoint

    @property
    def policy(self) -> RetryPolicy:
        return RetryPolicy(deadline=self.settings.retry_deadline)

    @property
    def cancel_timeout(self) -> float:
        return self.settings.cancel_timeout

    def _job_api(self, region: str) -> AbstractContextManager[JobApi]:
        """``job_api`` for this kind of job in ``region``, on the process's shared client."""
        return job_api(
            self.endpoint,
            region,
            self.kind.api,
            self.policy,
            connections=self.settings.max_concurrent_operations,
        )

    def _scrubber(self, secrets: Mapping[str, Any]) -> Callable[[str], str]:
        """Text → text without the endpoint's credentials and these env values."""
        endpoint = self.endpoint
        return lambda text: redact(endpoint.scrub(text), secrets)

    # -- preview path -----------------------------------------------------------------------

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        """Validate the inputs: one failure per violation, at its property path."""
        outcome = check_inputs(news, target=self.endpoint.target, kind=self.kind.spec)
        failures = [CheckFailure(prop, reason) for prop, reason in outcome.failures]
        return CheckResult(outcome.inputs, failures)

    def diff(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> DiffResult:
        """Any change of the job replaces it; provider-only settings update in place."""
        replaces, knobs = diff_inputs(_olds, _news)
        if replaces:
            return DiffResult(
                changes=True,
                replaces=replaces,
                delete_before_replace=_news.get(EXCLUSIVE_GPUS) is True,
            )
        return DiffResult(changes=bool(knobs), replaces=[])

    # -- API path ---------------------------------------------------------------------------

    def create(self, props: dict[str, Any]) -> CreateResult:
        """Submit the job (or adopt the one this run already started), then maybe wait."""
        return profiled(lambda: self._create(props))

    def _create(self, props: dict[str, Any]) -> CreateResult:
        inputs = {k: v for k, v in props.items() if k != PROVIDER_KEY}
        kind = self.kind
        run = _Run.of(inputs, kind.spec)
        api_job = self._api_job(run)
        endpoint = self.endpoint
        with self._job_api(run.region) as api, _credentials_scrubbed(endpoint, run.secrets):
            submission = self._submit(api, run, api_job)
            job = self._wait(api, run, submission.job, inputs)
            status = {
                **kind.outputs(job, endpoint, project=run.project, region=run.region),
                "run_hash": run.run,
                "adopted": submission.adopted,
                **kind.costs(run.document, run.region),
            }
        return CreateResult(str(job.name), {**_outputs(inputs), STATUS: status})

    def _submit(self, api: JobApi, run: _Run, api_job: Any) -> Submission:
        try:
            return api.submit_or_adopt(
                run.parent,
                api_job,
                identity=run.identity,
                run=run.run,
                earlier_runs=run.earlier_runs,
            )
        except Exception as exc:
            # The message may quote the job: _credentials_scrubbed redacts it on the way out.
            raise JobOperationError(self._submit_failed(api, run, exc)) from None

    def _wait(self, api: JobApi, run: _Run, job: Any, inputs: dict[str, Any]) -> Any:
        wait_for = str(inputs.get(WAIT_FOR) or "submitted")
        if wait_for == "submitted":
            return job
        timeout = float(inputs.get(WAIT_TIMEOUT) or DEFAULT_WAIT_TIMEOUT)
        progress = WaitProgress(
            f"waitFor: {wait_for}",
            scrub=self._scrubber(run.secrets),
            chief_log=local_chief_log(self.endpoint),
        )
        try:
            return api.wait_for_state(job, wait_for, timeout=timeout, observe=progress.observe)
        except BaseException as exc:
            # Pulumi records nothing for a failed create, so the job must not live on.
            message = self._cancel_after_failure(api, job.name, exc, run.secrets)
            if isinstance(exc, Exception):
                raise JobOperationError(message) from None  # redacted by _credentials_scrubbed
            raise

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """Refresh state and times; a job deleted out of band leaves the stack."""
        return profiled(lambda: self._read(id_, props))

    def _read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        project, region = self._place(id_, props)
        endpoint = self.endpoint
        with self._job_api(region) as api, _credentials_scrubbed(endpoint, {}):
            try:
                job = api.get(id_)
            except Exception as exc:
                if is_not_found(exc):
                    # An empty id tells the engine the resource is gone (outs must be a dict).
                    return ReadResult("", {})
                raise
        outs = _outputs(props)
        outs[STATUS] = {
            **_without_plain_run_hash(status_of(props), props, self.kind.spec),
            **self.kind.outputs(job, endpoint, project=project, region=region),
        }
        return ReadResult(id_, outs)

    def update(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> UpdateResult:
        """Only provider-only settings change here (diff replaces everything else): no API call."""
        outs = _outputs(_news)
        outs[STATUS] = _without_plain_run_hash(status_of(_olds), _olds, self.kind.spec)
        return UpdateResult(outs)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Cancel an active job, wait for it to stop, then delete its record unless kept."""
        profiled(lambda: self._delete(_id, _props))

    def _delete(self, _id: str, _props: dict[str, Any]) -> None:
        _, region = self._place(_id, _props)
        endpoint = self.endpoint
        secrets = dict(_props.get(ENV_VALUES) or {})
        with self._job_api(region) as api, _credentials_scrubbed(endpoint, {}):
            job = api.cancel_and_wait(
                _id, timeout=self.cancel_timeout, observe=self._cancel_progress(secrets)
            )
            if job is None:
                return  # already gone: nothing to do
            state = state_name(job)
            if state not in TERMINAL_STATES:
                raise JobOperationError(
                    f"job {_id} is still {state} {self.cancel_timeout:g}s after it was cancelled; "
                    "it stays in the stack: run the command again once it has stopped"
                )
            if not _props.get(KEEP_RECORD):
                api.delete_record(_id, timeout=120.0)

    # -- helpers ----------------------------------------------------------------------------

    def _api_job(self, run: _Run) -> Any:
        """The job to submit: the spec with the identity and run labels added."""
        labels = dict(run.document.get("labels") or {})
        labels[IDENTITY_LABEL] = run.identity
        labels[RUN_LABEL] = run.run
        return self.kind.build({**run.document, "labels": labels})

    def _place(self, job_name: str, props: dict[str, Any]) -> tuple[str, str]:
        parsed = self.kind.parse_name(job_name)
        if parsed is not None:
            return parsed[0], parsed[1]
        return str(props.get(PROJECT, "")), str(props.get(REGION, ""))

    def _submit_failed(self, api: JobApi, run: _Run, exc: Exception) -> str:
        """The error text for a create that gave up; cancels a job that got through anyway."""
        message = f"could not submit the {self.kind.what} to {run.parent}: {exc}"
        try:
            stray = api.retried(
                "looking for a job that got through",
                lambda: api.find_adoptable(
                    run.parent, identity=run.identity, run=run.run, earlier_runs=run.earlier_runs
                ),
            )
        except Exception:
            return (
                message
                + " (could not check whether a job was started; run `pulumi up` again: it adopts such a job)"
            )
        if stray is None:
            return message + "; no job was started"
        return message + "; " + self._cancel_after_failure(api, stray.name, None, run.secrets)

    def _cancel_progress(self, secrets: Mapping[str, Any]) -> Callable[[Any], None]:
        """Progress of a wait for a cancelled job; silent unless it takes a few seconds."""
        return WaitProgress(
            "cancelled: waiting for it to stop",
            scrub=self._scrubber(secrets),
            chief_log=local_chief_log(self.endpoint),
            quiet_for=CANCEL_QUIET_SECONDS,
        ).observe

    def _cancel_after_failure(
        self, api: JobApi, name: str, exc: BaseException | None, secrets: Mapping[str, Any]
    ) -> str:
        what = str(exc) if exc is not None else "the submission failed"
        if isinstance(exc, WaitFailed) and not exc.timed_out:
            return f"{what}; nothing to cancel (its record is kept for its logs)"
        try:
            job = api.cancel_and_wait(
                name, timeout=self.cancel_timeout, observe=self._cancel_progress(secrets)
            )
        except Exception as cancel_exc:
            return (
                f"{what}; cancelling job {name} FAILED ({type(cancel_exc).__name__}): "
                f"cancel it by hand, it is not in the stack"
            )
        if job is None:
            return f"{what}; job {name} no longer exists"
        return f"{what}; job {name} was cancelled (now {state_name(job)})"


@dataclass(frozen=True)
class _Run:
    """What one create submits: the full spec (env values merged back) and the run's labels."""

    project: str
    region: str
    document: dict[str, Any]
    secrets: dict[str, Any]
    identity: str
    run: str
    earlier_runs: tuple[str, ...]
    """The unkeyed hash an earlier release labelled the same run with (still adopted)."""

    @property
    def parent(self) -> str:
        return f"projects/{self.project}/locations/{self.region}"

    @classmethod
    def of(cls, inputs: dict[str, Any], spec: SpecKind[Any]) -> _Run:
        project, region = str(inputs[PROJECT]), str(inputs[REGION])
        secrets = dict(inputs.get(ENV_VALUES) or {})
        document = spec.merge_env(decode_spec(inputs[SPEC]), secrets)
        triggers, key = inputs.get(TRIGGERS), inputs.get(RUN_KEY)
        identity = inputs.get(IDENTITY) or identity_label(
            project, region, str(document.get("displayName", ""))
        )

        def hashed(key: str | None) -> str:
            return run_hash(document, project=project, region=region, triggers=triggers, key=key)

        return cls(
            project=project,
            region=region,
            document=document,
            secrets=secrets,
            identity=str(identity),
            run=hashed(key if isinstance(key, str) else None),
            earlier_runs=(hashed(None),),
        )


class TrainingJobProvider(JobProvider):
    """CRUD for a Vertex AI CustomJob (or the local emulator's).

    Existing stacks name this class (module and name) in every TrainingJob's ``__provider``.
    """

    kind = TRAINING_JOB
