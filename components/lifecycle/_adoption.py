"""When a create takes over a job instead of submitting one: the adoption rules, in one place.

A GPU job must never be started twice for one run, never be left running unknown to the stack,
and never be killed by an ordinary operation. Creating a job is the one API call that is not
idempotent; these rules make a create safe to repeat.

1. **Identity.** Every job the provider submits carries two labels (``MANAGED_LABELS``):
   ``pulumi_resource``, the resource's identity (``identity_label``: a hash of the Pulumi
   project, the stack, the resource name and, for every kind but ``TrainingJob``, its type
   token, so a TrainingJob and a tuning job of the same name never take each other's jobs),
   and ``pulumi_run``, the run's hash (``run_hash``: an HMAC, keyed with the stack's run key
   (``components._run_key``), of everything that defines the run: the spec with its env values,
   project, region and triggers). The program computes the identity (the provider never sees a
   URN) and passes it as the ``identity`` input. That hash is of names only: two stacks of
   the same project, stack and resource names (two teams, each on its own backend) would share
   it. So the label a job carries is that identity keyed with the **stack instance**
   (``instance_identity``): ``instance_of`` a random secret the stack keeps in its state, made
   on its first ``up`` (the dynamic resources' run key, ``components._run_key``; the plugin's
   ``stackKey``, kept in its provider's state, ``components.plugin._provider``). Only a hash of
   the secret reaches labels and outputs (``status.instance``). A stack instance never lists,
   adopts, names or cancels another's jobs: its identity label is another value.
2. **What may be adopted.** A job of the resource's kind (its own collection, ``customJobs`` or
   ``hyperparameterTuningJobs``) with this identity and this run's hash, that is active and not
   being cancelled, or that succeeded within ``ADOPT_FINISHED_WITHIN``. Failed, cancelled and
   expired jobs are never adopted: a new ``pulumi up`` after them is a request to run again.
   The newest such job wins.
3. **Never a job the stack holds.** The program reads the jobs the stack's last checkpoint
   holds for the resource (``components.dynamic._stack_state``) and passes them as ``held_jobs``; they
   are never adopted. That is what a replace with the same run hash (``pulumi up --replace``,
   ``--target-replace``, a tainted resource, ``replaceOnChanges`` on a setting) would otherwise
   take over, right before the engine deletes (cancels) the replaced job: a replace always
   starts a new job. The provider plugin has no program: it reads them from the stack's
   backend only when a look-up finds an active job of the identity (``RunLabels.read_held``,
   ``components.plugin._stack_state``). Should neither know them (the state could not be
   read), a delete
   never cancels a job that a create of the same identity adopted in the same provider
   process (``adopted_here``): the replacement keeps the running job rather than lose it.
4. **When.** Before every attempt to submit (so a lost response, a 503 after the job was
   stored, never starts a second job), and so on the next ``pulumi up`` after a create that
   did not reach the state: a crash or kill, an API that could not be reached while waiting
   (the job is left running), Ctrl-C or ``pulumi cancel`` while waiting (likewise). Only a job
   that ended badly or an expired ``waitTimeout`` makes a create cancel its job. One look-up
   is known to find nothing, and is not made: a first attempt's, for an identity keyed with a
   stack instance whose key this process drew (``record_new_instance``: a new stack's first
   ``up``). No job can carry that identity but the ones this process submits, and every
   later look-up of the identity lists it (``record_submission``, asked at each look-up). The
   engine records the key in the checkpoint before any create uses it, so the next process
   reads it from the state and looks as before; a process that serves several commands
   forgets the mark once the key comes back from the state (``forget_new_instance``).
5. **Other runs.** Active jobs of the identity that are neither held nor this run's (left by a
   failed create whose spec was then changed) are reported (``Lookup.strays``), never
   cancelled: the provider cannot tell whether someone still wants them.
6. **Import.** A job named by ``existing_job`` (``training:jobs[].existingJob``, written by
   ``python -m components import``) is taken over when the stack does not hold it yet and its
   spec is the resource's (``import_differences``); a job that differs is refused, naming the
   fields. Once held, ``existing_job`` is ignored: a later change of the spec starts a new job.
   **One job, one owner**: a job whose identity label names another resource (of this stack
   or another) is refused too, naming its holder (``holder_text``: the ``pulumi_owner`` label
   where the job has one), unless the entry says ``takeOverHeldJob: true``
   (``take_over_held_job``); such a takeover is recorded in ``status.taken_over_from``. A
   delete never cancels an imported job whose identity label names another resource unless
   the takeover was recorded so (``foreign_holder``): it leaves the stack, the job runs on
   for its holder.
7. **Destroy.** A delete that ends no replace (no create of the identity ran in this
   process, ``created_here``) cancels every active job of the identity besides its own: a
   killed ``pulumi up --replace`` (or a killed create of other inputs) left them outside the
   state, and a destroy ends every job of the resource. A delete that ends a replace leaves
   them: the stack holds the replacement's job, and its create named the others (rule 5).
   A job whose create never answered (a killed first ``up`` of the resource) has no
   resource to delete: the dynamic resources' run key, deleted last, ends every active job of
   the stack instance that a create the engine recorded as pending names
   (``components._run_key``); the plugin is called by no command then.
   The plugin's ``pulumi import`` refuses a job held elsewhere as rule 6 does
   (``held_elsewhere``), and every delete of a job that names another holder (rule 6) leaves it.
8. **Older states.** A resource whose state has no ``status.instance`` (written before the
   stack instance counted) keeps matching as before, on the identity of names alone: its
   refresh and destroy list that identity, and a replace of it whose held job carries that
   label submits with it too (``_provider``), so a state written before this release never
   sees a diff and never loses sight of its jobs. A plugin stack whose provider state has no
   ``stackKey`` is such a state throughout. Jobs labelled with the unkeyed run hash (before the run key) are adopted
   too (``RunLabels.earlier_runs``); a ``status.run_hash`` that is that unkeyed hash is dropped
   on the next refresh or update (``without_plain_run_hash``). A tuning job's identity took its
   type token in this release: a stack that holds one sees its ``identity`` updated once (no
   API call).

Nothing here imports ``pulumi`` or the Vertex client.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from ._wire import (
    ENV_VALUES,
    IDENTITY_LABEL,
    MANAGED_LABELS,
    OWNER_LABEL,
    PROJECT,
    REGION,
    RUN_LABEL,
    SPEC,
    TRAINING_JOB_TYPE,
    TRIGGERS,
    canonical_json,
    decode_spec,
)

__all__ = [
    "ADOPTABLE_ACTIVE",
    "ADOPTABLE_SUCCEEDED",
    "ADOPT_FINISHED_WITHIN",
    "Lookup",
    "RunLabels",
    "adopted_here",
    "created_here",
    "find_adoptable",
    "foreign_holder",
    "forget_new_instance",
    "held_elsewhere",
    "holder_text",
    "identity_filter",
    "identity_label",
    "import_differences",
    "instance_identity",
    "instance_of",
    "job_id",
    "owner_label_value",
    "record_adopted",
    "record_create",
    "record_new_instance",
    "record_submission",
    "run_directory",
    "run_hash",
    "state_unreadable",
    "unseen_identity",
    "without_managed_labels",
    "without_plain_run_hash",
]

# 24 hex digits (96 bits): collisions between a stack's resources are out of reach, and the
# value fits the label rules (lowercase letters, digits, '-', '_'; at most 63 characters).
_HASH_CHARS = 24

ADOPTABLE_ACTIVE = frozenset(
    {
        "JOB_STATE_QUEUED",
        "JOB_STATE_PENDING",
        "JOB_STATE_RUNNING",
        "JOB_STATE_UPDATING",
        "JOB_STATE_PAUSED",
    }
)
"""Active states a job may be adopted in; one being cancelled (``CANCELLING``) was given up on."""
ADOPTABLE_SUCCEEDED = frozenset({"JOB_STATE_SUCCEEDED", "JOB_STATE_PARTIALLY_SUCCEEDED"})
ADOPT_FINISHED_WITHIN = timedelta(hours=24)
"""A succeeded job with the same identity and run hash that ended this recently is adopted."""


# -- identity and run --------------------------------------------------------------------------


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_HASH_CHARS]


def identity_label(project: str, stack: str, name: str, type_token: str = TRAINING_JOB_TYPE) -> str:
    """The label value naming one resource of one stack of one Pulumi project.

    A ``TrainingJob``'s leaves its type out (the value stacks written before types were
    counted carry); every other kind's includes it.
    """
    # The separator cannot occur in names Pulumi accepts for projects and stacks; NUL keeps
    # ("a/b", "c") and ("a", "b/c") apart whatever the resource name holds.
    parts = (
        (project, stack, name)
        if type_token == TRAINING_JOB_TYPE
        else (type_token, project, stack, name)
    )
    return _digest("\0".join(parts))


def instance_of(key: str) -> str:
    """The public part of a stack instance's secret ``key``: what labels and outputs carry
    (the secret cannot be recovered from it, and it keys nothing)."""
    return _digest("pulumi stack instance\0" + key)


def instance_identity(identity: str, instance: str | None) -> str:
    """The identity label of the resource ``identity`` (``identity_label``) in the stack
    instance ``instance`` (``instance_of``); without one (a state written before instances
    counted), ``identity`` itself."""
    if not instance:
        return identity
    return _digest(identity + "\0" + instance)


_LABEL_TEXT = re.compile(r"[^a-z0-9_-]+")


def owner_label_value(owner: str) -> str:
    """The ``pulumi_owner`` label of ``owner`` (``project/stack/resource``): label characters
    (lowercase letters, digits, ``_``, ``-``), the parts joined by ``--``, at most 63."""
    parts = [_LABEL_TEXT.sub("_", part.lower()) for part in owner.split("/", 2)]
    return "--".join(parts)[:63]


def foreign_holder(labels: Mapping[str, Any], identity: Any) -> str | None:
    """The identity label of ``labels`` (a job's) when it names another resource than
    ``identity``; None for a job of this resource or one no stack submitted."""
    holder = labels.get(IDENTITY_LABEL)
    if isinstance(holder, str) and holder and holder != identity:
        return holder
    return None


def holder_text(labels: Mapping[str, Any]) -> str:
    """Who holds a job, as its labels say: the project, stack and resource where the job
    carries ``pulumi_owner``, else only the identity hash."""
    owner = labels.get(OWNER_LABEL)
    named = (
        f"project--stack--resource {owner} ({OWNER_LABEL} label), "
        if isinstance(owner, str) and owner
        else ""
    )
    return f"{named}identity {labels.get(IDENTITY_LABEL)} ({IDENTITY_LABEL} label)"


def held_elsewhere(what: str, labels: Mapping[str, Any], identity: Any, remedy: str) -> str | None:
    """The refusal of ``what`` (a take-over of a job with ``labels``) when the job's identity
    label names another resource than ``identity``; None when it may be taken. One check for
    every door that takes a running job: ``existingJob`` (the dynamic resources) and
    ``pulumi import`` (the plugin)."""
    if foreign_holder(labels, identity) is None:
        return None
    return (
        f"{what} is held by another resource (of this stack or another): "
        f"{holder_text(labels)}; nothing was changed. One job has one owner: {remedy}"
    )


def run_hash(
    document: Mapping[str, Any],
    *,
    project: str,
    region: str,
    triggers: Any,
    key: str | None = None,
) -> str:
    """The label value of one run: equal inputs, equal hash; any change, a new hash.

    ``document`` is the full job spec including env values: a changed secret is a new run.
    With the stack's run key the hash is an HMAC: a reader of the label or of the state cannot
    test guesses of an env value without the key (labels reach places a job's spec does not,
    such as billing exports). Without a key it is the plain hash that states written before
    the key existed carry.
    """
    payload = canonical_json(
        {"spec": document, "project": project, "region": region, "triggers": triggers}
    ).encode("utf-8")
    if key is None:
        return hashlib.sha256(payload).hexdigest()[:_HASH_CHARS]
    return hmac.new(key.encode("utf-8"), payload, hashlib.sha256).hexdigest()[:_HASH_CHARS]


RUNS_DIRECTORY = "runs"
"""Where a run of its own writes, under the output directory the project chose."""


def run_directory(root: str, run: str, now: datetime | None = None) -> str:
    """``<root>/runs/<UTC time>-<run hash[:8]>-<6 random hex>``: one new job's directory.

    New for each submission, not only for each run hash: a forced replace (``--replace``) of
    the same inputs is a new run too, and must not find the replaced job's checkpoints (the
    random part keeps two submissions of one second apart). A restart or maintenance event
    reruns the same job, with its own directory; a create that adopts its run's job after a
    crash keeps the directory that job was submitted with. Time first, so the runs list in
    the order they started.
    """
    when = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    return f"{root.rstrip('/')}/{RUNS_DIRECTORY}/{when}-{run[:8]}-{secrets.token_hex(3)}"


@dataclass(frozen=True)
class RunLabels:
    """The labels one create looks for and submits with, and the jobs it must not take."""

    identity: str
    run: str
    earlier_runs: tuple[str, ...] = ()
    """The same run's hashes as an earlier release computed them (the unkeyed hash)."""
    held: frozenset[str] = frozenset()
    """Ids of the jobs the stack holds for this resource (``held_jobs``)."""
    earlier_identity: str | None = None
    """The identity of names alone, where ``identity`` is it keyed with the stack instance and
    the instance comes from the run key (the dynamic resources): a job of it is this run's
    only with this run's hash (keyed: it is this stack's; unkeyed: a release before run keys,
    rule 8), and is never reported as another run (it may be another stack's)."""
    read_held: Callable[[], Iterable[str]] | None = field(default=None, compare=False)
    """Where a front door without a program reads the held jobs' names, once, only when a
    look-up finds an active job of the identity (``with_state``); None: ``held`` is all."""
    instance: str | None = None
    """The stack instance ``identity`` is keyed with (None: an identity of names alone). A
    look-up does not list ``identity`` while ``unseen_identity`` says no job carries it (rule
    4), asked at the look-up: a submission of this process makes the next one list it."""

    @property
    def runs(self) -> tuple[str, ...]:
        return (self.run, *(r for r in self.earlier_runs if r != self.run))

    def with_state(self) -> RunLabels:
        """These labels with the jobs ``read_held`` names added to ``held`` (read now, once)."""
        if self.read_held is None:
            return self
        return replace(self, held=self.held | _held_ids(self.read_held()), read_held=None)

    @classmethod
    def of(
        cls,
        document: Mapping[str, Any],
        *,
        project: str,
        region: str,
        triggers: Any,
        identity: str,
        key: str | None,
        held: Iterable[str] = (),
        read_held: Callable[[], Iterable[str]] | None = None,
        earlier_identity: str | None = None,
        instance: str | None = None,
    ) -> RunLabels:
        """The labels of a run of ``document`` (the spec with its env values)."""

        def hashed(with_key: str | None) -> str:
            return run_hash(
                document, project=project, region=region, triggers=triggers, key=with_key
            )

        return cls(
            identity=identity,
            run=hashed(key),
            earlier_runs=(hashed(None),),
            held=_held_ids(held),
            read_held=read_held,
            earlier_identity=earlier_identity if earlier_identity != identity else None,
            instance=instance,
        )


def _held_ids(names: Iterable[Any]) -> frozenset[str]:
    """The ids of the ``held_jobs`` input's names (anything else in it is ignored)."""
    return frozenset(job_id(n) for n in names if isinstance(n, str) and n)


def job_id(name: str) -> str:
    """The id of a job's resource name (its last segment): the same whether the name carries
    the project's id or its number, as Vertex AI returns it."""
    return name.rsplit("/", 1)[-1]


def identity_filter(identity: str) -> str:
    """The list filter for every job of one identity.

    Only documented syntax: one label equality. The v1 reference of ``customJobs.list`` and
    ``hyperparameterTuningJobs.list``
    (cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.customJobs/list),
    and the comment of ``ListCustomJobsRequest.filter`` / ``ListHyperparameterTuningJobsRequest
    .filter`` in googleapis ``google/cloud/aiplatform/v1/job_service.proto`` (as shipped in
    google-cloud-aiplatform's ``aiplatform_v1/types/job_service.py``; both read 2026-11-25),
    list the fields ``display_name``, ``state``, ``create_time`` and ``labels``, with label
    equality ``labels.key=value`` and key presence ``labels.key:*``, and ``AND`` / ``OR`` /
    ``NOT`` in their examples, values quoted in most. Parentheses appear in none of them (they
    come only from AIP-160, which the comment does not name), so the runs of the identity are
    told apart here, from the labels of the jobs listed, not with an ``OR`` of run labels.
    """
    return f'labels.{IDENTITY_LABEL}="{identity}"'


# -- what may be adopted -------------------------------------------------------------------------


def _timestamp(value: Any) -> datetime | None:
    if isinstance(value, datetime) and value.year > 1970:
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return None


def _adoptable(job: Any, now: datetime) -> bool:
    state = str(job.state.name)
    if state in ADOPTABLE_ACTIVE:
        return True
    if state in ADOPTABLE_SUCCEEDED:
        ended = _timestamp(job.end_time) or _timestamp(job.update_time)
        return ended is not None and now - ended <= ADOPT_FINISHED_WITHIN
    return False


@dataclass
class Lookup:
    """What a look-up of one identity's jobs found."""

    adoptable: Any | None = None
    """The job this run may take over (the newest), or None."""
    strays: list[Any] = field(default_factory=list)
    """Active jobs of the identity that are neither held nor this run's."""


def find_adoptable(jobs: Iterable[Any], labels: RunLabels, now: datetime | None = None) -> Lookup:
    """Apply the rules to ``jobs`` (the listing of the identity, in any order)."""
    now = now or datetime.now(UTC)
    runs = labels.runs
    found = Lookup()
    for job in jobs:
        # Filtering again costs nothing and guards against a service that ignores filters.
        identity = job.labels.get(IDENTITY_LABEL)
        if job_id(job.name) in labels.held:
            continue
        earlier = labels.earlier_identity is not None and identity == labels.earlier_identity
        if identity != labels.identity and not earlier:
            continue
        if earlier and job.labels.get(RUN_LABEL) not in runs:
            continue  # another run, maybe another stack's: not this stack's to name
        if job.labels.get(RUN_LABEL) not in runs:
            if str(job.state.name) in ADOPTABLE_ACTIVE:
                found.strays.append(job)
            continue
        if not _adoptable(job, now):
            continue
        best = found.adoptable
        if best is None or (_timestamp(job.create_time) or now) > (
            _timestamp(best.create_time) or now
        ):
            found.adoptable = job
    return found


# -- in this process ---------------------------------------------------------------------------

_adopted: dict[str, str] = {}
_created: set[str] = set()
_new_instances: set[str] = set()
_submitted: set[str] = set()
_adopted_lock = threading.Lock()


def record_new_instance(instance: str) -> None:
    """Remember that this process drew the key of the stack instance ``instance``: no job
    carries an identity keyed with it but the ones this process submits (rule 4)."""
    with _adopted_lock:
        _new_instances.add(instance)


def forget_new_instance(instance: str | None) -> None:
    """``instance`` came back from the stack's state: other processes may have read its key
    since (a provider process that serves several commands, ``PULUMI_DEBUG_PROVIDERS``), so
    jobs of it may exist that this one did not submit."""
    with _adopted_lock:
        if instance is not None:
            _new_instances.discard(instance)


def record_submission(identity: str) -> None:
    """Remember that this process sends (or sent) a job labelled ``identity`` to the API:
    whatever its answer, a job of it may now exist."""
    with _adopted_lock:
        _submitted.add(identity)


def unseen_identity(instance: str | None, identity: str) -> bool:
    """True when no job carries the identity label ``identity``, keyed with ``instance``
    (rule 4): this process drew the instance's key, has not seen it come back from the state
    (``forget_new_instance``) and submitted no job of the identity yet."""
    with _adopted_lock:
        return instance in _new_instances and identity not in _submitted


def record_create(identity: str) -> None:
    """Remember that a create of ``identity`` ran in this process: a delete of the same
    identity is then the end of a replace, whose new job the stack now holds."""
    with _adopted_lock:
        _created.add(identity)


def created_here(identity: Any) -> bool:
    """True when a create of ``identity`` ran in this process (``record_create``)."""
    with _adopted_lock:
        return isinstance(identity, str) and identity in _created


def record_adopted(name: str, identity: str) -> None:
    """Remember that a create of ``identity`` took over the job ``name`` in this process."""
    with _adopted_lock:
        _adopted[job_id(name)] = identity


def state_unreadable(reason: object) -> str:
    """The warning of a door that could not read which jobs its stack holds (rule 3 then
    holds none): what that changes for a replace."""
    return (
        f"could not read the stack's state ({reason}); a replace of a job with unchanged "
        "inputs (pulumi up --replace) keeps its running job instead of starting a new one"
    )


def adopted_here(name: str, identity: Any) -> bool:
    """True when a create of ``identity`` took over the job ``name`` in this process: the
    resource being deleted is the one that create replaces, and the job is the replacement's."""
    with _adopted_lock:
        return isinstance(identity, str) and _adopted.get(job_id(name)) == identity


# -- import --------------------------------------------------------------------------------------


_PROVIDER_LABELS = (*MANAGED_LABELS, OWNER_LABEL)


def without_managed_labels(document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` (a job's spec) without the labels only the provider sets."""
    labels = document.get("labels")
    if not isinstance(labels, Mapping) or not any(k in labels for k in _PROVIDER_LABELS):
        return dict(document)
    kept = {k: v for k, v in labels.items() if k not in _PROVIDER_LABELS}
    result = {k: v for k, v in document.items() if k != "labels"}
    if kept:
        result["labels"] = kept
    return result


def import_differences(job: Any, resource: Any, path: str = "") -> list[str]:
    """Where ``job`` (an existing job's spec document) and ``resource`` (the resource's spec
    document, env values in) differ: the camelCase paths of the differing values, at most 20.

    Both documents come from the same spec model (``to_document``), so equal jobs give equal
    documents; the labels only the provider sets are not compared.
    """
    if path == "":
        job, resource = without_managed_labels(job), without_managed_labels(resource)
    found: list[str] = []
    if isinstance(job, Mapping) and isinstance(resource, Mapping):
        for key in sorted(set(job) | set(resource)):
            inner = f"{path}.{key}" if path else str(key)
            found += import_differences(job.get(key), resource.get(key), inner)
    elif isinstance(job, list) and isinstance(resource, list) and len(job) == len(resource):
        for index, (left, right) in enumerate(zip(job, resource, strict=True)):
            found += import_differences(left, right, f"{path}[{index}]")
    elif job != resource:
        found.append(path or "(spec)")
    return found[:20]


# -- older states --------------------------------------------------------------------------------


def without_plain_run_hash(
    status: dict[str, Any], props: Mapping[str, Any], merge_env: Any
) -> dict[str, Any]:
    """``status`` without a ``run_hash`` written before run hashes were keyed.

    That hash is unkeyed over the env values: anyone reading the state could test guesses of
    them. It is recognised by recomputing it (``merge_env(spec, env values)`` gives the full
    spec), and dropped from the state on the next refresh or update.
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
