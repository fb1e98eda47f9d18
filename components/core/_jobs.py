"""A job's whole life, for every door: check, diff, create, read, update, delete.

``JobCore`` is the lifecycle (check, diff, create with submit-or-adopt and wait, read, update,
delete); a ``JobResourceKind`` says what differs between kinds of job: the spec and its
validator, the API calls, the job object sent, the outputs and the prices. ``TRAINING_JOB`` is
it for a CustomJob, ``components.core._tuning.TUNING_JOB`` for a HyperparameterTuningJob. The
answers are the typed ones of ``components.core._results``; no Pulumi type is used here. The
dynamic provider (``components._provider``) and the provider plugin
(``components.plugin._provider``) are its two clients.

A core holds no client, socket or secret on ``self``: the API client is the process's
(``components.vertex.api.shared_client``), made on the first API call, and its settings
(``use_settings``) are the door's. Many operations run at once, in threads; nothing here holds a
lock across an API call. While a create or a delete waits for a job, progress lines go to
stderr, which the engine shows (``components.lifecycle._progress``).

``check`` and ``diff`` run on every preview and never import the Vertex client library.

What may happen to a running job, and when, is ``components.lifecycle._adoption``'s (adoption, held
jobs, imports) and this class's: a create cancels its job only when the job's wait timed out
(``waitTimeout``); a job that ended badly has nothing to cancel; an API that cannot be reached,
the engine's Cancel (Ctrl-C, ``pulumi cancel``) or a stopping provider process leave the job
running, for the next ``pulumi up`` to adopt, and say so. A read or a delete that cannot
reach the API fails and leaves the job in the stack as it was. docs/rules.md has the table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .._redaction import redact
from ..costs._pricing import cost_outputs
from ..lifecycle._adoption import (
    ADOPTABLE_ACTIVE,
    RunLabels,
    adopted_here,
    created_here,
    foreign_holder,
    held_elsewhere,
    holder_text,
    identity_label,
    import_differences,
    instance_identity,
    instance_of,
    job_id,
    owner_label_value,
    record_adopted,
    record_create,
    run_directory,
    without_plain_run_hash,
)
from ..lifecycle._check import (
    CUSTOM_JOB_SPEC,
    CheckOutcome,
    SpecKind,
    check_inputs,
    diff_inputs,
)
from ..lifecycle._interrupt import Interrupted, cancel_operations, interrupted
from ..lifecycle._lock_watch import watch_lock
from ..lifecycle._profile import profiled
from ..lifecycle._progress import WaitProgress, local_chief_log, write_line
from ..lifecycle._settings import Endpoint, ProviderSettings, public_url
from ..lifecycle._wire import (
    CONTINUE_LAST_RUN,
    DEFAULT_WAIT_TIMEOUT,
    DELETE_RECORD,
    ENV_VALUES,
    EXCLUSIVE_GPUS,
    EXISTING_JOB,
    HELD_INSTANCE,
    HELD_JOBS,
    HIDDEN_INPUTS,
    IDENTITY,
    IDENTITY_LABEL,
    INSTANCE,
    KEEP_RECORD,
    OUTPUT_ROOT,
    OWNER,
    OWNER_LABEL,
    PLACEMENT,
    PROJECT,
    PROVIDER_KEY,
    REGION,
    RUN_KEY,
    RUN_LABEL,
    SPEC,
    STATUS,
    STATUS_FIELDS,
    TAKE_OVER_HELD_JOB,
    TRIGGERS,
    WAIT_FOR,
    WAIT_TIMEOUT,
    decode_spec,
    parse_job_name,
    status_of,
)
from ..rules._catalog import Catalog
from ..rules._spec import JobSpec
from ..rules._validation import MAX_LABELS
from ..vertex._library import types_only
from ..vertex.api import (
    CUSTOM_JOB,
    TERMINAL_STATES,
    ApiUnreachable,
    CapacityLost,
    JobApi,
    JobKind,
    JobOperationError,
    RetryPolicy,
    Submission,
    WaitFailed,
    is_not_found,
    job_api,
    job_document,
    job_outputs,
    quota_refusal,
    state_name,
)
from ._results import Checked, Diff, Replace, State

__all__ = [
    "REPLACE_REASONS",
    "TRAINING_JOB",
    "JobCore",
    "JobResourceKind",
    "cancel_operations",
]

CANCEL_QUIET_SECONDS = 2.0
"""A cancelled job that stops sooner prints no progress (a destroy of many jobs stays quiet)."""


@dataclass(frozen=True)
class JobResourceKind:
    """What one kind of job does its own way; the lifecycle is ``JobCore``'s."""

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
    costs: Callable[[Mapping[str, Any], str, Catalog | None], Mapping[str, Any]]
    """``(document, region, catalog)`` → the ``status`` fields of its price (``catalog``
    None: the catalog's snapshot)."""
    parse_name: Callable[[str], tuple[str, str, str] | None]
    """(project, region, id) of the job's resource name."""
    read_spec: Callable[[dict[str, Any]], Any]
    """A job as the API shows it (``job_document``) → its spec model (``JobSpec``...)."""
    gcloud_group: str
    """``custom-jobs``: the ``gcloud ai`` command group of the job's kind (for messages)."""


def _custom_job(document: dict[str, Any]) -> Any:
    # The message types alone, without the library's clients and its version warnings: the
    # job is sent on the job service's client (the whole library costs 0.25 s more of CPU).
    types_only()
    from ..vertex.convert import to_custom_job

    return to_custom_job(JobSpec.parse(document))


def _described_custom_job(document: dict[str, Any]) -> JobSpec:
    from ..formats import spec_from_document

    return spec_from_document(document, "(existing job)").spec


TRAINING_JOB = JobResourceKind(
    what="training job",
    spec=CUSTOM_JOB_SPEC,
    api=CUSTOM_JOB,
    build=_custom_job,
    outputs=job_outputs,
    costs=cost_outputs,
    parse_name=parse_job_name,
    read_spec=_described_custom_job,
    gcloud_group="custom-jobs",
)
"""A ``TrainingJob``: a CustomJob."""


REPLACE_REASONS = {
    SPEC: "the job's spec changed: a Vertex AI job cannot be changed once submitted",
    PROJECT: "a job cannot move to another project",
    REGION: "a job cannot move to another region",
    TRIGGERS: "a trigger changed: a new run is asked for",
    PLACEMENT: "the candidate regions changed",
}
"""Why a changed input replaces the job (``Diff.replaces``); any other: it changed."""


def _replace_reason(path: str) -> str:
    return REPLACE_REASONS.get(path, f"{path} changed: the job is submitted anew")


def _outputs(props: dict[str, Any]) -> dict[str, Any]:
    """``props`` without what never goes to the state's outputs (provider, run key, status)."""
    return {
        k: v
        for k, v in props.items()
        if k != PROVIDER_KEY and k not in HIDDEN_INPUTS and k not in STATUS_FIELDS
    }


@contextmanager
def _credentials_scrubbed(endpoint: Endpoint, secrets: dict[str, Any]) -> Iterator[None]:
    """Errors leave with the endpoint's credentials and env values taken out of their text."""
    try:
        yield
    except Exception as exc:
        text = redact(endpoint.scrub(str(exc)), secrets.values())
        if text == str(exc):
            raise
        raise JobOperationError(text) from None


class JobCore:
    """The lifecycle of one kind of Vertex AI job (or the local emulator's): ``kind`` says which."""

    def __init__(self, kind: JobResourceKind, settings: ProviderSettings | None = None) -> None:
        self.kind = kind
        if settings is not None:
            self.use_settings(settings)

    def use_settings(self, settings: ProviderSettings) -> None:
        """Work with ``settings`` (the door read them: ``ProviderSettings.read``): nothing else
        changes but the catalog overlay they name."""
        self._settings = settings
        if settings.catalog_overlay:
            # The program checked the jobs against the overlaid catalog; `check` here must too.
            # The engine starts the provider in the program's directory, which a relative
            # overlay path is relative to (as the program reads it).
            from .._errors import CatalogError
            from .._files import outside_read_roots
            from ..lifecycle._settings import CATALOG_OVERLAY_KEY, SettingError
            from ..rules._catalog import use_catalog_overlay

            overlay = Path.cwd() / settings.catalog_overlay
            outside = outside_read_roots(overlay, Path.cwd())
            if outside:  # the program refused it already; a provider run alone must too
                raise SettingError(settings.door.key(CATALOG_OVERLAY_KEY), str(outside))
            try:
                use_catalog_overlay(overlay)
            except CatalogError as exc:  # names the file, row and field
                raise SettingError(settings.door.key(CATALOG_OVERLAY_KEY), str(exc)) from None

    def use_pricing(self, catalog_for: Callable[[str], Catalog]) -> None:
        """Price each created job from ``catalog_for(project)``: the provider plugin's billed
        catalog, the one its preview notes and outputs price with (``priced_from``), so one job
        has one price. Without it, the catalog's snapshot."""
        self._catalog_for = catalog_for

    def costs(self, document: Mapping[str, Any], region: str, project: str) -> Mapping[str, Any]:
        """The ``status`` fields of the price of a job of ``project`` in ``region``."""
        catalog_for: Callable[[str], Catalog] | None = getattr(self, "_catalog_for", None)
        return self.kind.costs(document, region, catalog_for(project) if catalog_for else None)

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
        return lambda text: redact(endpoint.scrub(text), secrets.values())

    # -- preview path -----------------------------------------------------------------------

    def check(self, news: dict[str, Any]) -> Checked:
        """Validate the inputs: the inputs to use, one problem per violation at its property
        path, and the validator's warnings (the plugin shows those on the resource; the
        dynamic door's program does)."""
        return Checked.of(self.check_outcome(news))

    def check_outcome(self, news: dict[str, Any]) -> CheckOutcome:
        """What ``check`` finds, in ``components.lifecycle._check``'s terms."""
        if news.get(PLACEMENT) is not None:  # candidate regions: components.core._placement
            from ._placement import check_placed

            outcome, _ = check_placed(
                news,
                target=self.endpoint.target,
                kind=self.kind.spec,
                place=self.settings.place,
            )
            return outcome
        return check_inputs(
            news,
            target=self.endpoint.target,
            kind=self.kind.spec,
            place=self.settings.place,
        )

    def diff(self, _olds: dict[str, Any], _news: dict[str, Any]) -> Diff:
        """Any change of the job replaces it; provider-only settings update in place."""
        replaces, knobs = diff_inputs(_olds, _news)
        if _news.get(PLACEMENT) or _olds.get(PLACEMENT):
            from ._placement import placement_replaces

            moved = [
                k for k in (REGION, PLACEMENT) if k in replaces or _olds.get(k) != _news.get(k)
            ]
            replaces = placement_replaces(_olds, _news, replaces)
            knobs += [k for k in moved if k not in replaces]
        if replaces:
            return Diff(
                changes=True,
                replaces=tuple(Replace(k, _replace_reason(k)) for k in replaces),
                delete_before_replace=self.stops_before_replace(_news),
            )
        return Diff(changes=bool(knobs))

    def stops_before_replace(self, news: Mapping[str, Any]) -> bool:
        """Whether a replace cancels (and waits for) the old job before the new one starts:
        with ``exclusive_gpus``, and with ``continue_last_run`` (or
        ``training:continueLastRun``), whose new job writes into the old one's directory."""
        return (
            news.get(EXCLUSIVE_GPUS) is True
            or news.get(CONTINUE_LAST_RUN) is True
            or self.settings.continue_last_run
        )

    # -- API path ---------------------------------------------------------------------------

    def create(
        self, props: dict[str, Any], read_held: Callable[[], Iterable[str]] | None = None
    ) -> State:
        """Submit the job (or adopt the one this run already started, or take over the
        existing job the inputs name), then maybe wait. ``read_held``: where a caller without
        the ``held_jobs`` input (the provider plugin) reads the jobs the stack holds, when an
        active job of the resource is found (``RunLabels.read_held``)."""
        return profiled(lambda: self._create(props, read_held))

    def _create(
        self, props: dict[str, Any], read_held: Callable[[], Iterable[str]] | None = None
    ) -> State:
        inputs = {k: v for k, v in props.items() if k != PROVIDER_KEY}
        kind = self.kind
        run = _Run.of(inputs, kind.spec, read_held)
        # A delete of this identity in this process ends a replace: it leaves the other jobs.
        record_create(run.resource)
        endpoint = self.endpoint
        run = self._in_held_instance(run)
        if HELD_JOBS in inputs and self.stops_before_replace(inputs):
            self._stop_held(run, inputs)
        if run.placement:
            return self._create_placed(run, inputs)
        with self._job_api(run.region) as api, _credentials_scrubbed(endpoint, run.secrets):
            taken_from = None
            if run.existing_job:
                submission = self._take_over(api, run, run.existing_job)
                taken_from = foreign_holder(submission.job.labels, run.labels.identity)
            else:
                submission = self._submit(api, run, self._output_directory(api, run))
            if submission.adopted:
                record_adopted(str(submission.job.name), run.resource)
                run = _as_adopted(run, submission.job)
            self._report_strays(run, submission.strays)
            job = self._wait(api, run, submission.job, inputs)
            status = {
                **kind.outputs(job, endpoint, project=run.project, region=run.region),
                "run_hash": run.labels.run,
                "adopted": submission.adopted,
                **self.costs(run.document, run.region, run.project),
                # The user's leave to take it from its holder: this stack may now cancel it.
                **({"taken_over_from": taken_from} if taken_from else {}),
                **_instance_status(run),
            }
        return State(str(job.name), {**_outputs(inputs), STATUS: status})

    def _in_held_instance(self, run: _Run) -> _Run:
        """``run`` labelled as the job the stack holds for the resource is (a replace), where
        that job carries the identity of names alone: a state written before the stack
        instance counted keeps that identity (``_adoption`` rule 8), so its refresh and
        destroy, which list only it, still find every job of the resource."""
        if run.instance is None or not run.held_names or run.held_instance == run.instance:
            return run  # the state says the held jobs carry this instance's identity
        with self._job_api(run.region) as api:
            for name in run.held_names:
                try:
                    labels = api.get(name).labels
                except Exception:  # gone or unreadable: says nothing of the resource's labels
                    continue
                if labels.get(IDENTITY_LABEL) == run.resource:
                    legacy = replace(
                        run.labels, identity=run.resource, earlier_identity=None, instance=None
                    )
                    return replace(run, labels=legacy, instance=None)
        return run

    def _stop_held(self, run: _Run, inputs: dict[str, Any]) -> None:
        """``exclusive_gpus`` or ``continue_last_run`` in a replace of the dynamic resources
        (the plugin stops them itself, ``GpuTrainingProvider._stop_held``): the active jobs
        the stack holds for the resource (``held_jobs``) are cancelled, and waited for, before
        the new job is submitted. A forced replace (``--replace``) is created first (the
        program asks no ``delete_before_replace``), so the old resource stays in the state,
        read by a refresh, until its delete; a replace ``diff`` decided was deleted first and
        finds them stopped."""
        why = EXCLUSIVE_GPUS if inputs.get(EXCLUSIVE_GPUS) is True else CONTINUE_LAST_RUN
        with self._job_api(run.region) as api:
            for name in run.held_names:
                try:
                    active = state_name(api.get(name)) not in TERMINAL_STATES
                except Exception:  # gone or unreadable: the delete below says which
                    active = True
                if not active:
                    continue
                write_line(
                    f"{run.display_name}: {why}: cancelling job {name}, held by the resource "
                    "this one replaces, before the new job is submitted"
                )
                self.delete(name, {**inputs, IDENTITY: run.resource})

    def _create_placed(self, run: _Run, inputs: dict[str, Any]) -> State:
        """A job with candidate regions: the first that takes it (``components.core._placement``)."""
        from ._placement import PlacementFailed, place

        with _credentials_scrubbed(self.endpoint, run.secrets):
            try:
                job, placed = place(self, run, inputs)
            except PlacementFailed as exc:
                raise JobOperationError(str(exc)) from None
            except Interrupted as exc:  # between attempts, or looking for this run's job
                raise JobOperationError(
                    f"placing the {self.kind.what} was interrupted: {exc.reason}; a job that got "
                    "through is adopted by the next `pulumi up`"
                ) from None
            region = str(placed["placed_region"])
            status = {
                **self.kind.outputs(job, self.endpoint, project=run.project, region=region),
                "run_hash": run.labels.run,
                **placed,
                **_instance_status(run),
            }
        return State(str(job.name), {**_outputs(inputs), STATUS: status})

    def write_placement(self, run: _Run, text: str) -> None:
        """A progress line of a placed job's create (redacted)."""
        write_line(self._scrubber(run.secrets)(f"{run.display_name}: placement: {text}"))

    def _stop_attempt(self, api: JobApi, run: _Run, name: str) -> None:
        """Cancel a failed attempt and wait for its end: the next attempt starts only once
        this one can no longer run (a kill between two never leaves two jobs)."""
        job = api.cancel_and_wait(
            name, timeout=self.cancel_timeout, observe=self._cancel_progress(run.secrets)
        )
        if job is not None and state_name(job) not in TERMINAL_STATES:
            raise JobOperationError(
                f"job {name} failed for capacity but is still {state_name(job)} "
                f"{self.cancel_timeout:g}s after it was cancelled; no other region was tried "
                f"(two jobs must not run): {self._cancel_hint(name, run.region)}"
            )

    def _submit(self, api: JobApi, run: _Run, directory: str | None) -> Submission:
        reason = interrupted()
        if reason is not None:
            raise JobOperationError(f"nothing was submitted to {run.parent}: {reason}")
        try:
            return api.submit_or_adopt(
                run.parent, lambda: self._api_job(run, directory), run.labels
            )
        except Interrupted as exc:
            raise JobOperationError(
                f"submitting the {self.kind.what} to {run.parent} was interrupted: {exc.reason}; "
                "if it got through, the next `pulumi up` adopts it"
            ) from None
        except Exception as exc:
            refused = quota_refusal(exc)
            if run.placement:
                from ..vertex.api import capacity_refusal

                if refused or capacity_refusal(exc):
                    raise  # the next candidate's turn (components.core._placement)
            if refused:
                raise JobOperationError(self._quota_refused(api, run, refused)) from None
            # The message may quote the job: _credentials_scrubbed redacts it on the way out.
            raise JobOperationError(self._submit_failed(api, run, exc)) from None

    def _quota_refused(self, api: JobApi, run: _Run, metrics: list[str]) -> str:
        """Vertex refused the job for quota: the job's need, what the active jobs hold and the
        project's limit for each metric it named, and how to request more (the limits and the
        jobs read best-effort)."""
        from ..costs._quota import refusal_message
        from ..rules._catalog import load_catalog
        from ..vertex.quotas import QuotaUnavailable, read_limits

        try:
            limits = read_limits(
                self.endpoint, run.project, retry_deadline=self.settings.retry_deadline
            )
        except QuotaUnavailable:
            limits = None
        in_use = _active_needs(api, run.parent)
        try:
            spec = self.kind.spec.model.parse(run.document)
        except Exception:  # the API took the spec; a model that cannot read it: no need shown
            return f"Vertex AI refused the job for quota in {run.region}: {', '.join(metrics)}"
        return refusal_message(
            run.display_name or "the job",
            spec,
            run.project,
            run.region,
            metrics,
            limits,
            load_catalog(),
            in_use,
        )

    def _take_over(self, api: JobApi, run: _Run, name: str) -> Submission:
        """The existing job ``name`` (``existing_job``), if its spec is the resource's."""
        what = f"existingJob {name}"
        try:
            job = api.get(name)
        except Exception as exc:
            if is_not_found(exc):
                raise JobOperationError(f"{what}: there is no such {self.kind.api.noun}") from None
            raise JobOperationError(f"{what}: could not read it: {exc}") from None
        refused = held_elsewhere(
            what,
            job.labels,
            run.labels.identity,
            "to take it over anyway, first drop it from its holder's stack without cancelling "
            "it (`pulumi state delete <its URN>` there: Vertex AI cannot relabel a job, so "
            "its holder's destroy would cancel it), then set takeOverHeldJob: true on this "
            "training:jobs entry",
        )
        if refused is not None and not run.take_over_held_job:
            raise JobOperationError(refused)
        try:
            existing = self.kind.read_spec(job_document(job)).to_document()
            expected = self.kind.spec.model.parse(run.document).to_document()
        except Exception as exc:  # a spec the models cannot read: say so, never a traceback
            raise JobOperationError(f"{what}: its spec could not be read: {exc}") from None
        for place in ("project", "region"):
            existing.pop(place, None)
            expected.pop(place, None)
        differences = import_differences(existing, expected)
        if differences:
            raise JobOperationError(
                f"{what} is not the job this resource describes (they differ at "
                f"{', '.join(differences)}); nothing was changed. Write its spec with `python -m "
                f"components import {name}`, or remove existingJob to start a new job"
            )
        return Submission(job, adopted=True, attempts=0)

    def _report_strays(self, run: _Run, strays: list[Any]) -> None:
        """Say which other runs of this resource still run outside the stack (never cancelled)."""
        for job in strays:
            write_line(
                self._scrubber(run.secrets)(
                    f"{run.display_name}: job {job.name} ({state_name(job)}), an earlier run of "
                    "this resource that never reached the stack, is still active; it is not "
                    f"touched: {self._cancel_hint(str(job.name), run.region)} if it is not wanted"
                )
            )

    def _wait(
        self,
        api: JobApi,
        run: _Run,
        job: Any,
        inputs: dict[str, Any],
        *,
        capacity_failover: bool = False,
    ) -> Any:
        wait_for = str(inputs.get(WAIT_FOR) or "submitted")
        if wait_for == "submitted":
            return job
        timeout = float(inputs.get(WAIT_TIMEOUT) or DEFAULT_WAIT_TIMEOUT)
        if run.owner:  # `pulumi cancel` on a file:// backend removes only the stack's lock
            project, stack = run.owner.split("/", 2)[:2]
            watch_lock(project, stack)
        progress = WaitProgress(
            f"waitFor: {wait_for}",
            scrub=self._scrubber(run.secrets),
            chief_log=local_chief_log(self.endpoint),
        )
        # Pulumi records nothing for a failed create: each error says what became of the job.
        try:
            return api.wait_for_state(job, wait_for, timeout=timeout, observe=progress.observe)
        except WaitFailed as exc:
            if capacity_failover and not exc.timed_out:
                from ..vertex.api import insufficient_resources

                if insufficient_resources(exc.job):
                    raise CapacityLost(exc.job, str(exc)) from None
            if not exc.timed_out:
                message = f"{exc}; nothing to cancel (its record is kept for its logs)"
            else:  # the one wait that cancels: waitTimeout is the user's limit for the job
                message = self._cancel_after_timeout(api, job.name, exc, run)
        except Interrupted as exc:
            message = self._left_running(job, run, f"stopped waiting for it: {exc.reason}")
        except Exception as exc:
            if is_not_found(exc):
                message = f"job {job.name} no longer exists (it was deleted during the wait)"
            else:
                message = self._left_running(
                    job, run, f"could not read it while waiting for it to be {wait_for}: {exc}"
                )
        raise JobOperationError(message) from None  # redacted by _credentials_scrubbed

    def _left_running(self, job: Any, run: _Run, why: str) -> str:
        return (
            f"job {job.name}: {why}. The job is left running, and is not in the stack yet: the "
            "next `pulumi up` with the same job adopts it (to stop it instead: "
            f"{self._cancel_hint(str(job.name), run.region)})"
        )

    def _cancel_hint(self, name: str, region: str) -> str:
        """How a person cancels the job ``name``."""
        url = self.endpoint.url
        if url:
            return f"POST {public_url(url).rstrip('/')}/v1/{name}:cancel"
        project = name.split("/")[1] if name.startswith("projects/") else ""
        place = f" --project={project}" if project else ""
        return f"gcloud ai {self.kind.gcloud_group} cancel {job_id(name)} --region={region}{place}"

    def read(self, id_: str, props: dict[str, Any]) -> State:
        """Refresh state and times; a job deleted out of band leaves the stack."""
        return profiled(lambda: self._read(id_, props))

    def _read(self, id_: str, props: dict[str, Any]) -> State:
        project, region = self._place(id_, props)
        endpoint = self.endpoint
        with self._job_api(region) as api, _credentials_scrubbed(endpoint, _secrets(props)):
            try:
                job = api.current(f"projects/{project}/locations/{region}", id_)
            except Exception as exc:
                if is_not_found(exc):
                    # An empty id tells the engine the resource is gone (outs must be a dict).
                    return State("", {})
                if isinstance(exc, ApiUnreachable | Interrupted):
                    raise JobOperationError(
                        f"could not refresh job {id_}: {exc}; the stack keeps what it last knew"
                    ) from None
                raise
            # Whatever the held job's state: with exclusiveGpus, a killed replace leaves the
            # held job cancelled and its replacement running outside the stack.
            self._report_left_behind(api, id_, props, project, region)
        outs = _outputs(props)
        outs[STATUS] = {
            **without_plain_run_hash(status_of(props), props, self.kind.spec.merge_env),
            **self.kind.outputs(job, endpoint, project=project, region=region),
        }
        return State(id_, outs)

    def _report_left_behind(
        self, api: JobApi, name: str, props: Mapping[str, Any], project: str, region: str
    ) -> None:
        """Say which other active jobs of this resource run outside the stack, and how to end
        with one: the job a killed ``pulumi up --replace`` (or a killed create of another
        spec) submitted is labelled for this resource, but the state never got it.

        Nothing is cancelled here: a refresh cannot tell such a job from the replacement of a
        job whose delete failed, which the state holds under the same identity.
        """
        identity, run = _label_identity(props), status_of(props).get("run_hash")
        if identity is None:
            return
        held, parent = frozenset({job_id(name)}), f"projects/{project}/locations/{region}"
        try:
            if not api.lists_active_others(parent, identity, held):
                return  # the usual case: nothing to say, and no run hash to work out
            if not run:  # the provider plugin keeps no run hash in its state: the inputs give it
                run = _Run.of(dict(props), self.kind.spec).labels.run
            found = api.active_look_up(
                parent, RunLabels(identity=identity, run=str(run or ""), held=held)
            )
        except Exception:  # best effort (the refresh itself succeeded), or unreadable inputs
            return
        scrub = self._scrubber(_secrets(props))
        if found.adoptable is not None and state_name(found.adoptable) in ADOPTABLE_ACTIVE:
            left = found.adoptable
            write_line(
                scrub(
                    f"job {left.name} ({state_name(left)}), this resource's job with the same "
                    f"inputs as {name}, is active and not in the stack: a replace that was killed "
                    "after submitting it left it. `pulumi up --replace <this resource's URN>` "
                    f"takes it over (adopted: true) and cancels {name}; `pulumi destroy` cancels "
                    f"both; to keep {name} instead: {self._cancel_hint(str(left.name), region)}"
                )
            )
        for stray in found.strays:
            write_line(
                scrub(
                    f"job {stray.name} ({state_name(stray)}), a run of this resource with other "
                    "inputs, is active and not in the stack: the next `pulumi up` with those "
                    "inputs takes it over, `pulumi destroy` cancels it; otherwise: "
                    f"{self._cancel_hint(str(stray.name), region)}"
                )
            )

    def update(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> State:
        """Only provider-only settings change here (diff replaces everything else): no API call."""
        outs = _outputs(_news)
        outs[STATUS] = without_plain_run_hash(status_of(_olds), _olds, self.kind.spec.merge_env)
        return State(_id, outs)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Cancel an active job, wait for it to stop, then delete its record unless kept."""
        profiled(lambda: self._delete(_id, _props))

    def _delete(self, _id: str, _props: dict[str, Any]) -> None:
        if adopted_here(_id, _props.get(IDENTITY)):
            write_line(
                f"job {_id} is not cancelled: the resource that replaces this one took it over "
                "(the stack's state could not be read to tell the two apart), so it keeps running"
            )
            return
        project, region = self._place(_id, _props)
        endpoint = self.endpoint
        secrets = _secrets(_props)
        with self._job_api(region) as api, _credentials_scrubbed(endpoint, secrets):
            parent = f"projects/{project}/locations/{region}"
            if self._held_elsewhere(api, _id, _props, parent):
                return
            active = self._active_jobs(api, _id, parent)
            self._end_job(api, _id, _props, secrets)
            self._end_left_behind(api, _id, _props, active)

    def _end_job(
        self, api: JobApi, name: str, props: Mapping[str, Any], secrets: Mapping[str, Any]
    ) -> None:
        """Cancel ``name``, wait for it to stop, delete its record if asked; a job already
        gone is success. Fails, leaving the resource in the stack, when it does not stop."""
        try:
            job = api.cancel_and_wait(
                name, timeout=self.cancel_timeout, observe=self._cancel_progress(secrets)
            )
        except (ApiUnreachable, Interrupted) as exc:
            raise JobOperationError(
                f"job {name} was not deleted: {exc}; it stays in the stack: run the command again"
            ) from None
        if job is None:
            return  # already gone: nothing to do
        state = state_name(job)
        if state not in TERMINAL_STATES:
            raise JobOperationError(
                f"job {name} is still {state} {self.cancel_timeout:g}s after it was cancelled; "
                "it stays in the stack: run the command again once it has stopped"
            )
        if self._deletes_record(props):
            api.delete_record(name, timeout=120.0)

    def _active_jobs(self, api: JobApi, name: str, parent: str) -> tuple[Any, Any] | None:
        """The region's active jobs of Pulumi resources (``JobApi.active_jobs``) for a delete
        of ``name``; None where the API refuses to list them (a role that may not list)."""
        try:
            return api.active_jobs(parent)
        except (ApiUnreachable, Interrupted) as exc:
            raise JobOperationError(
                f"job {name} was not deleted: {exc}; it stays in the stack: run the command again"
            ) from None
        except Exception as exc:
            write_line(
                f"job {name}: the active jobs of {parent} could not be listed ({exc}): a job of "
                "this resource left outside the stack (by a killed `pulumi up`) is not looked for"
            )
            return None

    def _end_left_behind(
        self,
        api: JobApi,
        name: str,
        props: Mapping[str, Any],
        active: tuple[Any, Any] | None,
    ) -> None:
        """Cancel the resource's other active jobs, which the stack does not hold: a killed
        ``pulumi up --replace`` (or a killed create of other inputs) left them, and a destroy
        must end every job of the resource. Not in a replace (a create of the identity ran in
        this process): the stack holds the replacement's job, and the create named the others.
        """
        identity = _label_identity(props)
        if active is None or identity is None or created_here(props.get(IDENTITY)):
            return
        for job in active[1].get(identity, ()):
            left = str(job.name)
            if job_id(left) == job_id(name):
                continue
            write_line(
                self._scrubber(_secrets(props))(
                    f"job {left} ({state_name(job)}), of the same resource as {name} but not in "
                    "the stack (a killed `pulumi up` left it), is cancelled too"
                )
            )
            self._end_job(api, left, props, _secrets(props))

    def jobs_of_killed_create(
        self, resource: str, inputs: Mapping[str, Any], instance: str | None, *, end: bool
    ) -> list[str]:
        """The active jobs that a create the engine never saw answered (``inputs``: the
        checked inputs it recorded for ``resource``, a URN) submitted for its resource in the
        stack instance ``instance``: a ``pulumi up`` killed after submitting left them, and
        the stack holds no resource for them. With ``end`` (a destroy) each is cancelled and
        waited for, as a delete ends its job; otherwise (a refresh) each is only named, with
        what ends or keeps it. Their names; raises ``JobOperationError`` when a region cannot
        be listed or a job does not stop (the caller then stays in the stack)."""
        identity = _label_identity({**inputs, INSTANCE: instance})
        project = inputs.get(PROJECT)
        if identity is None or not isinstance(project, str) or not project:
            return []
        regions = [inputs.get(REGION)]
        regions += [c.get("region") for c in inputs.get(PLACEMENT) or () if isinstance(c, Mapping)]
        secrets = _secrets(inputs)
        scrub = self._scrubber(secrets)
        name = resource.rsplit("::", 1)[-1]
        found: list[str] = []
        for region in dict.fromkeys(r for r in regions if isinstance(r, str) and r):
            parent = f"projects/{project}/locations/{region}"
            with self._job_api(region) as api, _credentials_scrubbed(self.endpoint, secrets):
                try:
                    # Listed now: the deletes before this one cancelled jobs of the listing they read.
                    jobs = api.active_jobs(parent, max_age=0.0)[1].get(identity, [])
                except Exception as exc:
                    raise JobOperationError(
                        f"the jobs a killed `pulumi up` left for {name} could not be listed in "
                        f"{parent}: {exc}; run the command again"
                    ) from None
                for job in jobs:
                    left = str(job.name)
                    found.append(left)
                    what = (
                        f"job {left} ({state_name(job)}) of {name}, submitted by a `pulumi up` "
                        "that was killed before the stack recorded it"
                    )
                    if end:
                        write_line(scrub(f"{what}, is cancelled"))
                        self._end_job(api, left, inputs, secrets)
                        continue
                    write_line(
                        scrub(
                            f"{what}, is active and not in the stack: `pulumi up` takes it over "
                            "(adopted: true); `pulumi destroy` cancels it while the state "
                            "records that create (until `pulumi refresh "
                            "--clear-pending-creates`); otherwise: "
                            f"{self._cancel_hint(left, region)}"
                        )
                    )
        return found

    def _deletes_record(self, props: Mapping[str, Any]) -> bool:
        """Whether a delete removes the job's record after cancelling it: only when asked
        (``delete_record_on_delete``, ``training:deleteRecords``), never with
        ``keep_record_on_delete``. By default a run's logs, times and metrics outlive it."""
        if props.get(KEEP_RECORD) is True:
            return False
        return props.get(DELETE_RECORD) is True or self.settings.delete_records

    def _held_elsewhere(
        self, api: JobApi, name: str, props: Mapping[str, Any], parent: str
    ) -> bool:
        """True (and says so) when ``name`` is held by another resource, which the user did
        not take it from explicitly (a job taken over with ``existing_job``, or imported
        before imports were checked): the delete leaves it running for its holder and drops
        it from this stack only.

        Read as a refresh reads (``JobApi.current``): from the region's shared listing of
        active jobs, which the look-up of jobs left behind reads anyway, else alone.
        """
        try:
            job = api.current(parent, name)
        except Exception as exc:
            if is_not_found(exc):
                return False  # the cancel path says it is gone
            raise JobOperationError(
                f"job {name} was not deleted: could not read who holds it: {exc}; it stays in "
                "the stack: run the command again"
            ) from None
        holder = foreign_holder(job.labels, _label_identity(props))
        if holder is None or status_of(props).get("taken_over_from") == holder:
            return False
        # A job of this resource whose identity was written by an earlier release (a tuning
        # job's identity gained its type token) names another identity but no other owner:
        # only a job taken over (existing_job), or one whose owner label names another
        # resource, is another's.
        existing = props.get(EXISTING_JOB)
        taken = isinstance(existing, str) and job_id(existing) == job_id(name)
        owner_label = job.labels.get(OWNER_LABEL)
        owner = props.get(OWNER)
        ours = isinstance(owner, str) and owner_label == owner_label_value(owner)
        if ours or not (taken or owner_label):
            return False
        write_line(
            f"job {name} is not cancelled: it is held by another resource "
            f"({holder_text(job.labels)}), not by this one; it is only dropped from this stack "
            "and keeps running for its holder"
        )
        return True

    # -- helpers ----------------------------------------------------------------------------

    def _api_job(self, run: _Run, directory: str | None = None) -> Any:
        """The job to submit: the spec with the identity and run labels added, the owner's
        label for people where the labels leave room for it, and the run's own output
        ``directory`` where one was chosen (``_output_directory``)."""
        labels = dict(run.document.get("labels") or {})
        labels[IDENTITY_LABEL] = run.labels.identity
        labels[RUN_LABEL] = run.labels.run
        if run.owner and OWNER_LABEL not in labels and len(labels) < MAX_LABELS:
            labels[OWNER_LABEL] = owner_label_value(run.owner)
        document = {**run.document, "labels": labels}
        if directory is not None:
            under = self.kind.spec.pools_under
            if under is None:
                document["baseOutputDirectory"] = directory
            else:
                document[under] = {**document[under], "baseOutputDirectory": directory}
        return self.kind.build(document)

    def _output_directory(self, api: JobApi, run: _Run) -> str | None:
        """The output directory a new job of ``run`` writes, when it is not the spec's own.

        Only where the project chose the directory (``output_root``, the user wrote none) and
        the spec still names it: a run of its own, ``<root>/runs/<run id>`` (``run_directory``),
        so a replacement never resumes the checkpoints of the run it replaces; with
        ``continue_last_run`` (or ``training:continueLastRun``), the directory of the job the
        stack holds (the run being replaced), or the root where it holds none. A job adopted
        instead (the same run, after a crash) keeps the directory it was submitted with. The
        spec and the run hash never change: a running job's inputs stay as they are.
        """
        root = run.output_root
        if root is None:
            return None
        under = self.kind.spec.pools_under
        target = run.document.get(under) if under else run.document
        written = target.get("baseOutputDirectory") if isinstance(target, Mapping) else None
        if not isinstance(written, str) or written.rstrip("/") != root.rstrip("/"):
            return None  # the user's own directory: kept as written
        if run.continue_last_run or self.settings.continue_last_run:
            return self._last_run_directory(api, run)
        return run_directory(root, run.labels.run)

    def _last_run_directory(self, api: JobApi, run: _Run) -> str | None:
        """The output directory of the job the stack holds for the resource (the run a
        replace ends), or None (the spec's) when it holds none or it cannot be read.

        Refused (nothing submitted) while that job is still active: two jobs would write
        the same checkpoints at once. A replace with ``continue_last_run`` is delete before
        replace (``diff``, the program's resource option, the plugin's create), so the old
        job has stopped by now; this guards whatever replace still reaches here with it
        running (a forced ``--replace`` of a stack whose ``training:continueLastRun`` the
        program could not read, an old job that ignored its cancel)."""
        for name in run.held_names:
            try:
                job = api.get(name)
            except Exception:  # gone or unreadable: nothing to continue from
                continue
            status = self.kind.outputs(job, self.endpoint, project=run.project, region=run.region)
            if not status.get("output_dir"):
                continue
            if state_name(job) not in TERMINAL_STATES:
                raise JobOperationError(
                    f"continueLastRun: job {name}, the run this one continues, is still "
                    f"{state_name(job)} and writes into {status['output_dir']}; nothing was "
                    "submitted (two jobs must not write one directory at once). Set "
                    "exclusiveGpus: true (the old job is cancelled and stopped first), or stop "
                    f"it ({self._cancel_hint(name, run.region)}) and run the command again"
                )
            return str(status["output_dir"])
        return None

    def _place(self, job_name: str, props: dict[str, Any]) -> tuple[str, str]:
        parsed = self.kind.parse_name(job_name)
        if parsed is not None:
            return parsed[0], parsed[1]
        return str(props.get(PROJECT, "")), str(props.get(REGION, ""))

    def _submit_failed(self, api: JobApi, run: _Run, exc: Exception) -> str:
        """The error text for a create that gave up: whether a job got through anyway.

        Such a job is left running (the API may have been unreachable, which says nothing
        about the job): it is this run's, and the next ``pulumi up`` adopts it.
        """
        message = f"could not submit the {self.kind.what} to {run.parent}: {exc}"
        try:
            # Never the job the stack holds (labels that read it late read it now).
            labels = run.labels.with_state()
            found = api.retried(
                "looking for a job that got through", lambda: api.look_up(run.parent, labels)
            )
        except Exception:
            return (
                message + " (could not check whether a job got through; if one did, the next "
                "`pulumi up` adopts it)"
            )
        if found.adoptable is None:
            return message + "; no job was started"
        return message + "; " + self._left_running(found.adoptable, run, "it got through")

    def _cancel_progress(self, secrets: Mapping[str, Any]) -> Callable[[Any], None]:
        """Progress of a wait for a cancelled job; silent unless it takes a few seconds."""
        return WaitProgress(
            "cancelled: waiting for it to stop",
            scrub=self._scrubber(secrets),
            chief_log=local_chief_log(self.endpoint),
            quiet_for=CANCEL_QUIET_SECONDS,
        ).observe

    def _cancel_after_timeout(self, api: JobApi, name: str, exc: WaitFailed, run: _Run) -> str:
        try:
            job = api.cancel_and_wait(
                name, timeout=self.cancel_timeout, observe=self._cancel_progress(run.secrets)
            )
        except Interrupted as stop:
            return f"{exc}; job {name} was cancelled, then the wait for it to stop ended: {stop.reason}"
        except Exception as cancel_exc:
            return (
                f"{exc}; cancelling job {name} FAILED ({type(cancel_exc).__name__}: {cancel_exc}): "
                f"it is still running and not in the stack: {self._cancel_hint(name, run.region)}"
            )
        if job is None:
            return f"{exc}; job {name} no longer exists"
        return f"{exc}; job {name} was cancelled (now {state_name(job)})"


IN_USE_SCAN = 1000
"""At most this many jobs of each kind are read to tell what a quota refusal's quota holds."""


def _active_needs(api: JobApi, parent: str) -> list[Any] | None:
    """What the active jobs (custom and tuning) in ``parent`` hold (``components.costs._quota.Need``
    of each), for a quota refusal's message; None when they cannot be listed. One listing of
    each kind, at most ``IN_USE_SCAN`` jobs each; a job whose spec cannot be read is skipped."""
    from ..costs._quota import job_needs, load_quota_metrics
    from ..formats import spec_from_document
    from ..rules._catalog import load_catalog
    from ..vertex.api import TUNING_JOB

    catalog, table = load_catalog(), load_quota_metrics()
    found: list[Any] = []
    try:
        for kind in (CUSTOM_JOB, TUNING_JOB):
            listing = kind.list(api.client, {"parent": parent, "page_size": 100})
            for index, job in enumerate(listing):
                if index >= IN_USE_SCAN:
                    break
                if state_name(job) not in ADOPTABLE_ACTIVE:
                    continue
                try:
                    loaded = spec_from_document(
                        job_document(job), str(job.name), tuning=kind is TUNING_JOB
                    )
                except Exception:  # a spec the models cannot read: its need is not known
                    continue
                spec = loaded.tuning if loaded.tuning is not None else loaded.spec
                label = f"{job_id(str(job.name))} ({job.display_name})"
                found += job_needs(label, spec, catalog, table)[0]
    except Exception:  # best effort: the message says it is not known
        return None
    return found


def _label_identity(props: Mapping[str, Any]) -> str | None:
    """The identity label of the jobs of the resource whose inputs or outputs are ``props``:
    its ``identity`` keyed with its stack instance (the ``instance`` input the plugin passes,
    else the ``status.instance`` its create wrote), or alone for a state that has none."""
    identity = props.get(IDENTITY)
    if not isinstance(identity, str) or not identity:
        return None
    instance = props[INSTANCE] if INSTANCE in props else status_of(props).get("instance")
    return instance_identity(identity, instance if isinstance(instance, str) else None)


def _as_adopted(run: _Run, job: Any) -> _Run:
    """``run`` as the job it adopted is labelled: one an earlier release submitted under the
    identity of names alone keeps the resource on it (no ``status.instance``), so its
    refresh and destroy list the label its job carries."""
    if run.instance is not None and job.labels.get(IDENTITY_LABEL) == run.resource:
        return replace(run, instance=None)
    return run


def _instance_status(run: _Run) -> dict[str, Any]:
    """The ``status`` field that names a created job's stack instance (none for a state
    written before instances counted: it keeps matching on names alone)."""
    return {"instance": run.instance} if run.instance else {}


def _secrets(props: Mapping[str, Any]) -> dict[str, Any]:
    """The env values in a resource's inputs or outputs, for redaction."""
    values = props.get(ENV_VALUES)
    return dict(values) if isinstance(values, Mapping) else {}


@dataclass(frozen=True)
class _Run:
    """What one create submits: the full spec (env values merged back) and the run's labels."""

    project: str
    region: str
    document: dict[str, Any]
    secrets: dict[str, Any]
    labels: RunLabels
    existing_job: str | None
    """The job to take over (``existing_job``), unless the stack holds it already."""
    take_over_held_job: bool = False
    """The user's leave to take over an ``existing_job`` another resource holds."""
    owner: str | None = None
    """``project/stack/resource`` (``owner``), for the ``pulumi_owner`` label."""
    placement: list[Any] | None = None
    """The candidate regions of a placed job (``components.core._placement``), or None."""
    output_root: str | None = None
    """The output directory the project chose (``output_root``), or None."""
    continue_last_run: bool = False
    """``continue_last_run``: a new run writes into the held job's directory."""
    held_names: tuple[str, ...] = ()
    """The names of the jobs the stack holds for the resource (``held_jobs``)."""
    resource: str = ""
    """The resource's identity of names (the ``identity`` input); ``labels.identity`` is it
    keyed with ``instance``."""
    instance: str | None = None
    """The stack instance (``instance_of`` its key), or None: the identity of names alone."""
    held_instance: str | None = None
    """The ``status.instance`` the state records for the held jobs (``held_instance``)."""

    @property
    def parent(self) -> str:
        return f"projects/{self.project}/locations/{self.region}"

    @property
    def display_name(self) -> str:
        return str(self.document.get("displayName") or "")

    @classmethod
    def of(
        cls,
        inputs: dict[str, Any],
        spec: SpecKind[Any],
        read_held: Callable[[], Iterable[str]] | None = None,
    ) -> _Run:
        project, region = str(inputs[PROJECT]), str(inputs[REGION])
        secrets = _secrets(inputs)
        document = spec.merge_env(decode_spec(inputs[SPEC]), secrets)
        key = inputs.get(RUN_KEY)
        identity = inputs.get(IDENTITY) or identity_label(
            project, region, str(document.get("displayName", ""))
        )
        held = inputs.get(HELD_JOBS)
        placement = inputs.get(PLACEMENT)
        if placement:
            from ._placement import run_region

            hashed_region = run_region(region, placement)
        else:
            hashed_region = region
        instance = _instance_input(inputs)
        held_instance = _held_instance(inputs)
        labels = RunLabels.of(
            document,
            project=project,
            region=hashed_region,
            triggers=inputs.get(TRIGGERS),
            identity=instance_identity(str(identity), instance),
            # The dynamic resources' stacks are older than instances: their jobs of names alone
            # with this run's hash are theirs (a plugin stack with a key is newer than them).
            earlier_identity=str(identity) if _older(inputs, instance, held_instance) else None,
            instance=instance,
            key=key if isinstance(key, str) else None,
            held=held if isinstance(held, list) else (),
            read_held=read_held,
        )
        existing = inputs.get(EXISTING_JOB)
        take_over = isinstance(existing, str) and existing and job_id(existing) not in labels.held
        return cls(
            project=project,
            region=region,
            document=document,
            secrets=secrets,
            labels=labels,
            existing_job=existing if take_over else None,
            take_over_held_job=inputs.get(TAKE_OVER_HELD_JOB) is True,
            owner=owner if isinstance(owner := inputs.get(OWNER), str) and owner else None,
            placement=list(placement) if isinstance(placement, list) and placement else None,
            output_root=root if isinstance(root := inputs.get(OUTPUT_ROOT), str) and root else None,
            continue_last_run=inputs.get(CONTINUE_LAST_RUN) is True,
            held_names=tuple(n for n in held if isinstance(n, str) and n)
            if isinstance(held, list)
            else (),
            resource=str(identity),
            instance=instance,
            held_instance=held_instance,
        )


def _held_instance(inputs: Mapping[str, Any]) -> str | None:
    """The ``status.instance`` the state records for the resource's held jobs, or None."""
    recorded = inputs.get(HELD_INSTANCE)
    return recorded if isinstance(recorded, str) and recorded else None


def _older(inputs: Mapping[str, Any], instance: str | None, held_instance: str | None) -> bool:
    """Whether the identity of names alone is listed too: for a dynamic resource's stack from
    before instances, unless its state records this instance for the resource's jobs (those
    were submitted keyed, and so is every later run of it: one list call, not two)."""
    return INSTANCE not in inputs and (instance is None or held_instance != instance)


def _instance_input(inputs: Mapping[str, Any]) -> str | None:
    """A create's stack instance: the ``instance`` input where one is given (the plugin's:
    None for a stack whose provider holds no key), else the one of the run key (the dynamic
    resources': every stack has one, its ``RunKey``)."""
    if INSTANCE in inputs:
        given = inputs[INSTANCE]
        return given if isinstance(given, str) and given else None
    key = inputs.get(RUN_KEY)
    return instance_of(key) if isinstance(key, str) and key else None
