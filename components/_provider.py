"""The dynamic provider behind ``components.training_job.TrainingJob``.

The class lives in an importable module so that ``pulumi.dynamic`` pickles it BY REFERENCE:
the ``__provider`` property holds a module and class name, not code. A change to this file
therefore changes no resource's inputs (and causes no diff); the provider process imports
the current code. ``__getstate__`` keeps the pickle empty even for a configured instance: the
provider holds no client, socket or secret, and makes a client per operation.

``check`` and ``diff`` run on every preview and never import the Vertex client library.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

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

from components._engine_watch import watch_engine
from components._identity import IDENTITY_LABEL, RUN_LABEL, identity_label, run_hash
from components._job_inputs import (
    DEFAULT_WAIT_TIMEOUT,
    ENV_VALUES,
    EXCLUSIVE_GPUS,
    HIDDEN_INPUTS,
    IDENTITY,
    KEEP_RECORD,
    PROJECT,
    REGION,
    RUN_KEY,
    SPEC,
    STATUS,
    STATUS_FIELDS,
    TRIGGERS,
    WAIT_FOR,
    WAIT_TIMEOUT,
    check_inputs,
    decode_spec,
    diff_inputs,
    merge_env,
    status_of,
)
from components._jobs import (
    TERMINAL_STATES,
    JobOperationError,
    RetryPolicy,
    WaitFailed,
    aiplatform,
    cancel_and_wait,
    delete_record,
    find_adoptable,
    get_job,
    is_not_found,
    job_client,
    job_outputs,
    redact,
    state_name,
    submit_or_adopt,
    wait_for_state,
    with_retries,
)
from components._pricing import cost_outputs
from components._settings import DEFAULT_CANCEL_TIMEOUT, Endpoint, ProviderSettings

PROVIDER_KEY = "__provider"

# Inside the provider process: end it when the engine that started it is gone.
watch_engine()
_JOB_NAME = re.compile(r"^projects/([^/]+)/locations/([^/]+)/customJobs/([^/]+)$")

__all__ = ["DEFAULT_CANCEL_TIMEOUT", "PROVIDER_KEY", "TrainingJobProvider"]


def _outputs(props: dict[str, Any]) -> dict[str, Any]:
    """``props`` without what never goes to the state's outputs (provider, run key, status)."""
    return {
        k: v
        for k, v in props.items()
        if k != PROVIDER_KEY and k not in HIDDEN_INPUTS and k not in STATUS_FIELDS
    }


def _without_plain_run_hash(status: dict[str, Any], props: dict[str, Any]) -> dict[str, Any]:
    """``status`` without a ``run_hash`` written before run hashes were keyed.

    That hash is unkeyed over the env values: anyone reading the state could test guesses of
    them. It is recognised by recomputing it, and dropped from the state on the next refresh.
    """
    if not status.get("run_hash") or not isinstance(props.get(SPEC), str | dict):
        return status
    try:
        document = merge_env(decode_spec(props[SPEC]), props.get(ENV_VALUES) or {})
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


class TrainingJobProvider(ResourceProvider):
    """CRUD for a Vertex AI CustomJob (or the local emulator's)."""

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
        """Read ``training:endpoint`` and the timeouts from the stack configuration."""
        self._settings = ProviderSettings.read(req.config.get)

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

    # -- preview path -----------------------------------------------------------------------

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        """Validate the inputs: one failure per violation, at its property path."""
        outcome = check_inputs(news, target=self.endpoint.target)
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
        inputs = {k: v for k, v in props.items() if k != PROVIDER_KEY}
        project, region = str(inputs[PROJECT]), str(inputs[REGION])
        secrets = inputs.get(ENV_VALUES) or {}
        document = merge_env(decode_spec(inputs[SPEC]), secrets)
        triggers, key = inputs.get(TRIGGERS), inputs.get(RUN_KEY)
        run = run_hash(
            document,
            project=project,
            region=region,
            triggers=triggers,
            key=key if isinstance(key, str) else None,
        )
        # A job submitted by a release that did not key the hash is still this run's job.
        earlier_runs = (run_hash(document, project=project, region=region, triggers=triggers),)
        identity = str(
            inputs.get(IDENTITY)
            or identity_label(project, region, str(document.get("displayName", "")))
        )
        custom_job = self._custom_job(document, identity, run)
        parent = f"projects/{project}/locations/{region}"
        endpoint = self.endpoint
        with job_client(endpoint, region) as client, _credentials_scrubbed(endpoint, secrets):
            try:
                submission = submit_or_adopt(
                    client,
                    parent,
                    custom_job,
                    identity=identity,
                    run=run,
                    earlier_runs=earlier_runs,
                    policy=self.policy,
                )
            except Exception as exc:
                message = self._submit_failed(client, parent, identity, (run, *earlier_runs), exc)
                raise JobOperationError(redact(endpoint.scrub(message), secrets)) from None
            job = submission.job
            try:
                wait_for = str(inputs.get(WAIT_FOR) or "submitted")
                if wait_for != "submitted":
                    timeout = float(inputs.get(WAIT_TIMEOUT) or DEFAULT_WAIT_TIMEOUT)
                    job = wait_for_state(client, job, wait_for, timeout=timeout, policy=self.policy)
            except BaseException as exc:
                # Pulumi records nothing for a failed create, so the job must not live on.
                message = self._cancel_after_failure(client, job.name, exc)
                if isinstance(exc, Exception):
                    raise JobOperationError(redact(endpoint.scrub(message), secrets)) from None
                raise
            outs = {
                **_outputs(inputs),
                STATUS: {
                    **job_outputs(job, endpoint, project=project, region=region),
                    "run_hash": run,
                    "adopted": submission.adopted,
                    **cost_outputs(document, region),
                },
            }
        return CreateResult(str(job.name), outs)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """Refresh state and times; a job deleted out of band leaves the stack."""
        project, region = self._place(id_, props)
        endpoint = self.endpoint
        with job_client(endpoint, region) as client, _credentials_scrubbed(endpoint, {}):
            try:
                job = get_job(client, id_, self.policy)
            except Exception as exc:
                if is_not_found(exc):
                    # An empty id tells the engine the resource is gone (outs must be a dict).
                    return ReadResult("", {})
                raise
        outs = _outputs(props)
        outs[STATUS] = {
            **_without_plain_run_hash(status_of(props), props),
            **job_outputs(job, endpoint, project=project, region=region),
        }
        return ReadResult(id_, outs)

    def update(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> UpdateResult:
        """Only provider-only settings change here (diff replaces everything else): no API call."""
        outs = _outputs(_news)
        outs[STATUS] = _without_plain_run_hash(status_of(_olds), _olds)
        return UpdateResult(outs)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Cancel an active job, wait for it to stop, then delete its record unless kept."""
        _, region = self._place(_id, _props)
        endpoint = self.endpoint
        with job_client(endpoint, region) as client, _credentials_scrubbed(endpoint, {}):
            job = cancel_and_wait(client, _id, timeout=self.cancel_timeout, policy=self.policy)
            if job is None:
                return  # already gone: nothing to do
            state = state_name(job)
            if state not in TERMINAL_STATES:
                raise JobOperationError(
                    f"job {_id} is still {state} {self.cancel_timeout:g}s after it was cancelled; "
                    "it stays in the stack: run the command again once it has stopped"
                )
            if not _props.get(KEEP_RECORD):
                delete_record(client, _id, timeout=120.0, policy=self.policy)

    # -- helpers ----------------------------------------------------------------------------

    @staticmethod
    def _custom_job(document: dict[str, Any], identity: str, run: str) -> Any:
        from components._spec import JobSpec

        aiplatform()  # first import here, with the library's version warnings silenced

        labels = dict(document.get("labels") or {})
        labels[IDENTITY_LABEL] = identity
        labels[RUN_LABEL] = run
        spec = JobSpec.parse({**document, "labels": labels})
        return spec.to_custom_job()

    @staticmethod
    def _place(job_name: str, props: dict[str, Any]) -> tuple[str, str]:
        match = _JOB_NAME.match(job_name)
        if match:
            return match.group(1), match.group(2)
        return str(props.get(PROJECT, "")), str(props.get(REGION, ""))

    def _submit_failed(
        self, client: Any, parent: str, identity: str, runs: tuple[str, ...], exc: Exception
    ) -> str:
        """The error text for a create that gave up; cancels a job that got through anyway."""
        message = f"could not submit the training job to {parent}: {exc}"
        try:
            stray = with_retries(
                lambda: find_adoptable(
                    client, parent, identity=identity, run=runs[0], earlier_runs=runs[1:]
                ),
                self.policy,
                what="looking for a job that got through",
            )
        except Exception:
            return (
                message
                + " (could not check whether a job was started; run `pulumi up` again: it adopts such a job)"
            )
        if stray is None:
            return message + "; no job was started"
        return message + "; " + self._cancel_after_failure(client, stray.name, None)

    def _cancel_after_failure(self, client: Any, name: str, exc: BaseException | None) -> str:
        what = str(exc) if exc is not None else "the submission failed"
        if isinstance(exc, WaitFailed) and not exc.timed_out:
            return f"{what}; nothing to cancel (its record is kept for its logs)"
        try:
            job = cancel_and_wait(client, name, timeout=self.cancel_timeout, policy=self.policy)
        except Exception as cancel_exc:
            return (
                f"{what}; cancelling job {name} FAILED ({type(cancel_exc).__name__}): "
                f"cancel it by hand, it is not in the stack"
            )
        if job is None:
            return f"{what}; job {name} no longer exists"
        return f"{what}; job {name} was cancelled (now {state_name(job)})"
