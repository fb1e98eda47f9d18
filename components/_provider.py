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

from components._identity import IDENTITY_LABEL, RUN_LABEL, identity_label, run_hash
from components._job_inputs import (
    DEFAULT_WAIT_TIMEOUT,
    ENV_VALUES,
    EXCLUSIVE_GPUS,
    IDENTITY,
    KEEP_RECORD,
    PROJECT,
    REGION,
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
    target_for_endpoint,
)
from components._jobs import (
    TERMINAL_STATES,
    Endpoint,
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

PROVIDER_KEY = "__provider"
_JOB_NAME = re.compile(r"^projects/([^/]+)/locations/([^/]+)/customJobs/([^/]+)$")

DEFAULT_CANCEL_TIMEOUT = 600.0
"""Seconds ``delete`` (and a failed create) wait for a cancelled job to stop."""


def _float_config(value: Any, key: str, default: float) -> float:
    if value in (None, ""):
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{key}: expected a number of seconds, got {value!r}") from None
    if number <= 0:
        raise ValueError(f"{key}: must be greater than zero")
    return number


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
        config = req.config
        endpoint = config.get("training:endpoint")
        if endpoint is not None and not isinstance(endpoint, str):
            raise ValueError("training:endpoint: expected a URL like http://127.0.0.1:8642")
        self._endpoint = endpoint or None
        self._cancel_timeout = _float_config(
            config.get("training:cancelTimeout"), "training:cancelTimeout", DEFAULT_CANCEL_TIMEOUT
        )
        retry_deadline = _float_config(
            config.get("training:retryDeadline"), "training:retryDeadline", RetryPolicy.deadline
        )
        self._policy = RetryPolicy(deadline=retry_deadline)

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(getattr(self, "_endpoint", None))

    @property
    def policy(self) -> RetryPolicy:
        policy: RetryPolicy = getattr(self, "_policy", RetryPolicy())
        return policy

    @property
    def cancel_timeout(self) -> float:
        return float(getattr(self, "_cancel_timeout", DEFAULT_CANCEL_TIMEOUT))

    # -- preview path -----------------------------------------------------------------------

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        """Validate the inputs: one failure per violation, at its property path."""
        outcome = check_inputs(news, target=target_for_endpoint(self.endpoint.url))
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
        run = run_hash(document, project=project, region=region, triggers=inputs.get(TRIGGERS))
        identity = str(
            inputs.get(IDENTITY)
            or identity_label(project, region, str(document.get("displayName", "")))
        )
        custom_job = self._custom_job(document, identity, run)
        parent = f"projects/{project}/locations/{region}"
        endpoint = self.endpoint
        with job_client(endpoint, region) as client:
            try:
                submission = submit_or_adopt(
                    client, parent, custom_job, identity=identity, run=run, policy=self.policy
                )
            except Exception as exc:
                raise JobOperationError(
                    redact(self._submit_failed(client, parent, identity, run, exc), secrets)
                ) from None
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
                    raise JobOperationError(redact(message, secrets)) from None
                raise
            outs = {
                **inputs,
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
        with job_client(self.endpoint, region) as client:
            try:
                job = get_job(client, id_, self.policy)
            except Exception as exc:
                if is_not_found(exc):
                    # An empty id tells the engine the resource is gone (outs must be a dict).
                    return ReadResult("", {})
                raise
        outs = {k: v for k, v in props.items() if k != PROVIDER_KEY and k not in STATUS_FIELDS}
        outs[STATUS] = {
            **status_of(props),
            **job_outputs(job, self.endpoint, project=project, region=region),
        }
        return ReadResult(id_, outs)

    def update(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> UpdateResult:
        """Only provider-only settings change here (diff replaces everything else): no API call."""
        outs = {k: v for k, v in _news.items() if k != PROVIDER_KEY}
        outs[STATUS] = status_of(_olds)
        return UpdateResult(outs)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Cancel an active job, wait for it to stop, then delete its record unless kept."""
        _, region = self._place(_id, _props)
        with job_client(self.endpoint, region) as client:
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
        self, client: Any, parent: str, identity: str, run: str, exc: Exception
    ) -> str:
        """The error text for a create that gave up; cancels a job that got through anyway."""
        message = f"could not submit the training job to {parent}: {exc}"
        try:
            stray = with_retries(
                lambda: find_adoptable(client, parent, identity=identity, run=run),
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
