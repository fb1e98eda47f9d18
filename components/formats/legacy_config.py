"""AI Platform Training ``trainingInput`` (legacy ``config.yaml``) → ``JobSpec``.

AI Platform Training is retired; Vertex AI ``CustomJob`` replaces it. Pool order is the
same: 0 master (chief), 1 workers, 2 parameter servers, 3 evaluators. Legacy machine
types and scale tiers map to today's machine types through the catalog
(``legacy_machine_types.csv``, ``scale_tiers.csv``); a runtime version maps to a
prebuilt Vertex training image (``training_images.csv``, chosen by ``legacy_images``), a
pool's own image with a package runs the package in that image.

A TPU job is the exception to the pool order: AI Platform's master drove a Cloud TPU worker
(``cloud_tpu``, ``BASIC_TPU``) over the network, while Vertex AI runs a TPU job on one TPU
VM as its only pool (``cloud-tpu``, replicaCount 1), so the master is dropped with a note
and the TPU VM runs the trainer; ``acceleratorConfig`` on ``cloud_tpu`` picks TPU v2 or v3.

A ``hyperparameters`` block makes the job a hyperparameter tuning job: with ``tuning=True``
the block becomes the study of a ``TuningJobSpec`` (``legacy_tuning``) and the rest of
``trainingInput`` the job each trial runs; otherwise it is refused at
``trainingInput.hyperparameters``, never dropped to run a single trial.

Problems are said in the input's terms (``trainingInput.scaleTier: BASIC_GPU runs on 1 x
NVIDIA_TESLA_K80, ...``) and raised together: when the rest of the job is whole, it is
validated too, so that no problem hides another.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from .._errors import SpecError, SpecInvalidError
from ..rules._catalog import (
    Catalog,
    LegacyMachineType,
    accepted_accelerators,
    allowed_counts,
    load_catalog,
    resolve_accelerator,
)
from ..rules._images import executor_image
from ..rules._spec import JobSpec
from ..rules._tuning_spec import TuningJobSpec
from ..rules._tuning_validation import validate_tuning
from ..rules._validation import validate
from ..rules._violations import Rule, Violation, did_you_mean, errors_only
from .bounded_yaml import SourceFloat
from .legacy_images import (
    accelerator_kind,
    choose_image,
    other_frameworks_hint,
    version_text,
)
from .legacy_tuning import (
    LEGACY_TUNING_RENAMES,
    LegacyStudy,
    convert_hyperparameters,
    tuning_document,
    tuning_summary,
)
from .result import Format, LoadedSpec, in_input_terms
from .text import clipped

__all__ = [
    "DEFAULT_RUNTIME_VERSION",
    "LegacyConversion",
    "LegacyConversionError",
    "convert_training_input",
    "read_legacy_config",
    "training_image",
]

DEFAULT_RUNTIME_VERSION = "1.0"
"""Used when a legacy config names no runtimeVersion: AI Platform's documented default ("If
not set, AI Platform uses the default stable version, 1.0": ``TrainingInput.runtimeVersion``
of the ml v1 API reference, as of its 2019-06 revision; later revisions require it or
``masterConfig.imageUri``). Vertex AI has no image for TensorFlow 1.0, so such a job gets the
nearest versions that have one (catalog README, ``training_images.csv``)."""

_ROLES = (
    ("master", "masterType"),
    ("worker", "workerType"),
    ("parameterServer", "parameterServerType"),
    ("evaluator", "evaluatorType"),
)
# The shape of each trainingInput field: checked before anything is converted, so a list
# where a name belongs is a violation naming the field, never a crash (or a huge str()).
_TEXT = "text"
_NUMBER = "number"  # a whole number, or text holding one ("4")
_VERSION = "version"  # text or a number: YAML reads `runtimeVersion: 2.11` as a float
_FLAG = "flag"
_MAPPING = "mapping"
_TEXT_LIST = "list of text"
_SCALAR_LIST = "list of values"  # args: YAML reads `--epochs, 10` as text and a number

_FIELD_KINDS: dict[str, str] = {
    "scaleTier": _TEXT,
    "masterType": _TEXT,
    "masterConfig": _MAPPING,
    "workerType": _TEXT,
    "workerConfig": _MAPPING,
    "workerCount": _NUMBER,
    "parameterServerType": _TEXT,
    "parameterServerConfig": _MAPPING,
    "parameterServerCount": _NUMBER,
    "evaluatorType": _TEXT,
    "evaluatorConfig": _MAPPING,
    "evaluatorCount": _NUMBER,
    "packageUris": _TEXT_LIST,
    "pythonModule": _TEXT,
    "args": _SCALAR_LIST,
    "region": _TEXT,
    "jobDir": _TEXT,
    "runtimeVersion": _VERSION,
    "pythonVersion": _VERSION,
    "scheduling": _MAPPING,
    "serviceAccount": _TEXT,
    "network": _TEXT,
    "encryptionConfig": _MAPPING,
    "enableWebAccess": _FLAG,
    "useChiefInTfConfig": _FLAG,
    "hyperparameters": _MAPPING,
}
_CONFIG_FIELD_KINDS: dict[str, str] = {
    "acceleratorConfig": _MAPPING,
    "imageUri": _TEXT,
    "containerCommand": _TEXT_LIST,
    "containerArgs": _SCALAR_LIST,
    "diskConfig": _MAPPING,
    "tpuTfVersion": _VERSION,
}
_ACCELERATOR_FIELD_KINDS: dict[str, str] = {"count": _NUMBER, "type": _TEXT}
_DISK_FIELD_KINDS: dict[str, str] = {"bootDiskSizeGb": _NUMBER, "bootDiskType": _TEXT}
_NESTED_KINDS: dict[str, dict[str, str]] = {
    **dict.fromkeys(
        ("masterConfig", "workerConfig", "parameterServerConfig", "evaluatorConfig"),
        _CONFIG_FIELD_KINDS,
    ),
    "acceleratorConfig": _ACCELERATOR_FIELD_KINDS,
    "diskConfig": _DISK_FIELD_KINDS,
    "encryptionConfig": {"kmsKeyName": _TEXT},
}
_SCALARS = (str, int, float)


def _fits(value: Any, kind: str) -> bool:
    if value is None:
        return True  # absent and null mean the same here
    if kind == _TEXT:
        return isinstance(value, str)
    if kind == _NUMBER:
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, str) and value.strip().lstrip("+").isdigit() and len(value) < 20
        )
    if kind == _VERSION:
        return isinstance(value, _SCALARS) and not isinstance(value, bool)
    if kind == _FLAG:
        return isinstance(value, bool)
    if kind == _MAPPING:
        return isinstance(value, dict)
    if kind == _TEXT_LIST:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, list) and all(
        isinstance(v, _SCALARS) and not isinstance(v, bool) for v in value
    )


def _shape_violations(mapping: dict[Any, Any], kinds: dict[str, str], path: str) -> list[Violation]:
    """One violation per field of ``mapping`` that is unknown or of the wrong kind."""
    found: list[Violation] = []
    for key, value in mapping.items():
        where = f"{path}.{key}"
        kind = kinds.get(key) if isinstance(key, str) else None
        if kind is None:
            found.append(
                Violation(
                    where,
                    f"is not a {path.rsplit('.', 1)[-1]} field this converter knows",
                    did_you_mean(str(key), kinds),
                    rule="legacy",
                )
            )
        elif not _fits(value, kind):
            found.append(Violation(where, f"must be {_KIND_WORDS[kind]}", rule="legacy"))
        elif isinstance(value, dict) and key in _NESTED_KINDS:
            found.extend(_shape_violations(value, _NESTED_KINDS[key], where))
    return found


_KIND_WORDS = {
    _TEXT: "text",
    _NUMBER: "a whole number",
    _VERSION: "a version like 2.11",
    _FLAG: "true or false",
    _MAPPING: "a mapping",
    _TEXT_LIST: "a list of text",
    _SCALAR_LIST: "a list of text or numbers",
}


@dataclass
class LegacyConversion:
    """The spec converted from a legacy config, and notes on what was assumed."""

    spec: JobSpec
    """The custom job; for a tuning job, the one each trial runs."""
    notes: list[str] = field(default_factory=list)
    scale_tier: str | None = None
    """The legacy scale tier the cluster came from (None for CUSTOM): it has its own price."""
    tuning: TuningJobSpec | None = None
    """The tuning job, when ``trainingInput.hyperparameters`` was converted (``tuning=True``)."""

    def loaded(self, format: Format, notes: list[str] | None = None) -> LoadedSpec:
        """The conversion as a ``LoadedSpec`` of ``format``, ``notes`` before its own; a tuning
        job's violations are said in the legacy terms (``LEGACY_TUNING_RENAMES``)."""
        every = [*(notes or []), *self.notes]
        if self.tuning is None:
            return LoadedSpec(self.spec, format, every, self.scale_tier)
        return LoadedSpec.of_tuning(
            self.tuning, format, every, scale_tier=self.scale_tier, renames=LEGACY_TUNING_RENAMES
        )


class LegacyConversionError(SpecInvalidError):
    """The legacy job has problems (``violations``, in the input's terms where it can).

    ``conversion`` is the job converted anyway when the problems leave it whole (a retired
    GPU, a runtime version without an image, a refused tuning block): enough to price what it
    asks for, never to submit. None otherwise.
    """

    def __init__(
        self, violations: list[Violation], conversion: LegacyConversion | None = None
    ) -> None:
        super().__init__(violations)
        self.conversion = conversion


def training_image(
    catalog: Catalog,
    runtime_version: str,
    python_version: str | None,
    gpu: bool,
    region: str | None,
) -> str | None:
    """The prebuilt TensorFlow training image for a legacy runtime version, or None."""
    choice = choose_image(
        catalog,
        version=runtime_version,
        python=python_version,
        accelerator="gpu" if gpu else "cpu",
        region=region,
    )
    return choice.uri


def convert_training_input(
    training_input: Any,
    *,
    display_name: str | None = None,
    labels: dict[str, str] | None = None,
    project: str | None = None,
    catalog: Catalog | None = None,
    region: str | None = None,
    tuning: bool = False,
) -> LegacyConversion:
    """Convert a ``trainingInput`` mapping; raises ``SpecInvalidError`` naming every problem
    (a ``LegacyConversionError`` once the mapping could be read).

    ``region`` overrides ``trainingInput.region`` (the job's region and its image registry).
    A ``hyperparameters`` block is converted with ``tuning=True`` (``LegacyConversion.tuning``
    is then the tuning job, ``spec`` its trial's job); without it, it is refused.
    """
    if not isinstance(training_input, dict):
        raise SpecInvalidError([Violation("trainingInput", "must be a mapping", rule="legacy")])
    # Fields of the wrong shape are reported and left out, so the rest is still converted
    # (and checked) without ever touching them.
    shape = _shape_violations(training_input, _FIELD_KINDS, "trainingInput")
    misshapen = {v.path.split(".")[1] for v in shape}
    ti = {k: v for k, v in training_input.items() if v is not None and k not in misshapen}
    converter = _Converter(ti, catalog or load_catalog(), region or ti.get("region"))
    study = converter.hyperparameters(tuning)
    tier_name = converter.expand_scale_tier()
    pools = converter.pools()
    converter.check_retired(pools, tier_name)
    document = _present(converter.document(pools, display_name, labels, project))
    notes = list(dict.fromkeys(converter.notes))
    tier = None if tier_name == "CUSTOM" else tier_name
    if shape or converter.problems:
        whole = converter.whole(document, study, notes, tier) if not shape else None
        raise LegacyConversionError(converter.all_problems(shape, whole), whole)
    return _build(document, study, notes, tier)


def _build(
    document: dict[str, Any], study: LegacyStudy | None, notes: list[str], tier: str | None
) -> LegacyConversion:
    """The conversion of a whole job; raises ``SpecInvalidError`` for fields no spec holds."""
    if study is None:
        return LegacyConversion(JobSpec.parse(document), notes, tier)
    tuning = TuningJobSpec.parse(tuning_document(document, study.fields))
    return LegacyConversion(tuning.trial_job(), notes, tier, tuning)


def _present(document: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in document.items() if v is not None}


_PATH_CUTS = re.compile(r"[.\[]")


def _prefixes(path: str) -> Iterator[str]:
    """``a.b[1].c`` → ``a``, ``a.b``, ``a.b[1]`` (every path strictly above it)."""
    for cut in _PATH_CUTS.finditer(path):
        if cut.start() > 0:
            yield path[: cut.start()]


def _said_paths(said: list[str]) -> tuple[set[str], set[str]]:
    """(the paths said, and every path above one of them): set lookups, so that thousands of
    problems (a hostile list of 5,000 params) are matched in linear time."""
    above = {prefix for path in said for prefix in _prefixes(path)}
    return set(said), above


def _field_said(path: str, said: tuple[set[str], set[str]]) -> bool:
    """Whether a problem of a tuning field, or of a field inside or around it, is said."""
    if not path.startswith("trainingInput.hyperparameters"):
        return False
    exact, above = said
    return path in exact or path in above or any(p in exact for p in _prefixes(path))


def _unique(violations: list[Violation]) -> list[Violation]:
    """One violation per problem: the same one found for several pools is said once."""
    return list(dict.fromkeys(violations))


_TIER_SETS = (
    "masterType",
    "workerType",
    "parameterServerType",
    "workerCount",
    "parameterServerCount",
)


@dataclass
class _Converter:
    """One conversion: the (well-shaped) trainingInput, and what it found on the way."""

    ti: dict[str, Any]
    catalog: Catalog
    region: str | None = None
    problems: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    complete: bool = True
    """False once a problem leaves the cluster or trainer unknown (then nothing is validated)."""
    image_problem: bool = False
    prebuilt_used: bool = False
    accelerator_from_config: set[str] = field(default_factory=set)
    retired: set[str] = field(default_factory=set)
    """The retired accelerator types the job names."""

    def problem(
        self, path: str, reason: str, suggestion: str | None = None, *, rule: Rule = "legacy"
    ) -> None:
        self.problems.append(Violation(path, reason, suggestion, rule=rule))
        self.complete = False

    def finding(self, violation: Violation) -> None:
        """A problem that leaves the rest of the job whole (it is still validated)."""
        self.problems.append(violation)

    def whole(
        self,
        document: dict[str, Any],
        study: LegacyStudy | None,
        notes: list[str],
        tier: str | None,
    ) -> LegacyConversion | None:
        """The job despite the problems, when they leave the cluster and trainer whole."""
        if not self.complete:
            return None
        try:
            return _build(document, study, notes, tier)
        except SpecError:
            return None

    def all_problems(
        self, shape: list[Violation], whole: LegacyConversion | None
    ) -> list[Violation]:
        """Shape problems, the converter's, and (when the job is whole) validation's."""
        reported = {v.path for v in shape}
        found = [*shape, *(v for v in self.problems if v.path not in reported)]
        if whole is not None:
            # What validation finds besides the converter's problems, so none hides another.
            said = _said_paths([v.path for v in found])
            found += [
                v
                for v in self.validation(whole)
                if not self.said_already(v) and not _field_said(v.path, said)
            ]
        return _unique(found)

    def validation(self, whole: LegacyConversion) -> list[Violation]:
        """Validation's errors in the job (a tuning job's study in the legacy terms)."""
        if whole.tuning is None:
            return errors_only(validate(whole.spec, catalog=self.catalog, region=self.region))
        found = validate_tuning(whole.tuning, catalog=self.catalog, region=self.region)
        return in_input_terms(errors_only(found), LEGACY_TUNING_RENAMES)

    def said_already(self, violation: Violation) -> bool:
        """Validation's view of a problem the converter reported in the input's terms."""
        if violation.rule == "retired" or any(n in violation.reason for n in self.retired):
            return True  # check_retired said it (and the GPU is to be replaced anyway)
        return self.image_problem and violation.path.endswith(".executorImageUri")

    def hyperparameters(self, tuning: bool) -> LegacyStudy | None:
        """The study of a tuning job (``tuning``); refused otherwise: one custom job would
        silently run a single trial."""
        block = self.ti.get("hyperparameters")
        if block is None:
            return None
        if not block:
            self.notes.append("trainingInput.hyperparameters is empty: nothing to tune")
            return None
        if not tuning:
            self.finding(
                Violation(
                    "trainingInput.hyperparameters",
                    f"this is a hyperparameter tuning job ({tuning_summary(block)}); as one "
                    "custom job it would run a single trial without its hyperparameters",
                    "run it as a Vertex AI HyperparameterTuningJob (`gcloud ai hp-tuning-jobs "
                    "create`, or the HyperparameterTuningJob resource)",
                    rule="legacy",
                )
            )
            return None
        study = convert_hyperparameters(block)
        self.notes.extend(study.notes)
        self.problems.extend(study.problems)
        self.tuning_notes()
        return study

    def tuning_notes(self) -> None:
        """What changes for the trials' job when it becomes a Vertex AI trial job."""
        scheduling = self.ti.get("scheduling")
        if isinstance(scheduling, dict) and scheduling.get("maxRunningTime"):
            self.notes.append(
                "scheduling.maxRunningTime limited the whole tuning job on AI Platform; on "
                "Vertex AI it is each trial's timeout (trialJobSpec.scheduling.timeout), so the "
                "job can run up to maxTrials / maxParallelTrials times as long"
            )
        if self.ti.get("jobDir"):
            self.notes.append(
                "every trial gets the same --job-dir: a trainer that writes there keeps its "
                "trials apart by adding the trial id (env CLOUD_ML_TRIAL_ID)"
            )

    def expand_scale_tier(self) -> str:
        """Fill the cluster in from the scale tier (not CUSTOM); returns the tier's name."""
        ti = self.ti
        tier_name = str(ti.get("scaleTier", "BASIC")).upper()
        if tier_name == "CUSTOM":
            if "masterType" not in ti:
                path = "trainingInput.masterType"
                self.problem(path, "is required with scaleTier CUSTOM", "e.g. n1-standard-8")
            return tier_name
        tier = self.catalog.scale_tiers.get(tier_name)
        if tier is None:
            choices = [*self.catalog.scale_tiers, "CUSTOM"]
            reason = f"unknown scale tier {clipped(tier_name)!r}"
            self.problem("trainingInput.scaleTier", reason, did_you_mean(tier_name, choices))
            return tier_name
        conflicting = [k for k in _TIER_SETS if k in ti]
        if conflicting:
            self.problem(
                "trainingInput.scaleTier",
                f"{tier_name} sets the cluster itself; {', '.join(conflicting)} need scaleTier CUSTOM",
                "set scaleTier: CUSTOM",
            )
        ti["masterType"] = tier.master_type
        if tier.worker_type:
            ti["workerType"], ti["workerCount"] = tier.worker_type, tier.worker_count
        if tier.parameter_server_type:
            ti["parameterServerType"] = tier.parameter_server_type
            ti["parameterServerCount"] = tier.parameter_server_count
        self.notes.append(f"scale tier {tier_name} expanded from scale_tiers.csv ({tier.source})")
        return tier_name

    def trainer_args(self) -> list[str]:
        args = [str(a) for a in self.ti.get("args") or []]
        job_dir = self.ti.get("jobDir")
        if job_dir:
            # The legacy service passed --job-dir to the trainer as well (seeds 000/001).
            args = [f"--job-dir={job_dir}", *args]
        return args

    def pools(self) -> list[dict[str, Any]]:
        """Pool 0 master, 1 workers, 2 parameter servers, 3 evaluators; empty middle pools kept."""
        args = self.trainer_args()
        tpu_role = _tpu_vm_role(self.ti, self.catalog)
        if tpu_role is not None:
            pools = [self.tpu_vm_pool(*tpu_role, args)]
        else:
            pools = [
                self.role_pool(index, role, type_key, args)
                for index, (role, type_key) in enumerate(_ROLES)
            ]
        while pools and not pools[-1]:
            pools.pop()
        if self.prebuilt_used:
            self.notes.append(self.framework_note("tpu" if tpu_role else "cpu"))
        return pools

    def tpu_vm_pool(self, index: int, role: str, type_key: str, args: list[str]) -> dict[str, Any]:
        """A TPU job: the TPU role's machine becomes the job's only pool (one TPU VM).

        AI Platform ran the trainer on the master, a separate VM driving a Cloud TPU
        worker over the network; Vertex AI runs a TPU job on one TPU VM that is both, in a
        single worker pool with one replica (``configure-compute#tpu``): a master beside a
        ``cloud_tpu`` worker is dropped, and any other pool is a problem.
        """
        ti = self.ti
        name = str(ti[type_key])
        count = 1 if index == 0 else _count(ti, f"{role}Count", self)
        if count > 1:
            self.problem(
                f"trainingInput.{role}Count",
                f"{count} x {name}: Vertex AI runs a TPU job on a single TPU VM "
                "(one worker pool, replicaCount 1)",
                f"set {role}Count: 1",
            )
        for other_index, (other, other_key) in enumerate(_ROLES):
            if other_index in (0, index) or not _count(ti, f"{other}Count", self):
                continue
            self.problem(
                f"trainingInput.{other}Count",
                f"Vertex AI runs a TPU job in a single worker pool: {other} replicas cannot "
                f"run beside the {name} {role}",
                f"remove {other_key} and {other}Count",
            )
        if index > 0:
            self.notes.append(_master_dropped(ti, type_key, name))
        pool = self.machine_pool(role, name, 1)
        self.add_trainer(index, role, pool, args)
        return pool

    def role_pool(self, index: int, role: str, type_key: str, args: list[str]) -> dict[str, Any]:
        ti = self.ti
        count = 1 if index == 0 else _count(ti, f"{role}Count", self)
        machine_name = ti.get(type_key)
        if index > 0 and count == 0:
            return {}
        if machine_name is None:
            if index > 0:
                self.problem(
                    f"trainingInput.{type_key}",
                    f"is required when {role}Count is {count}",
                    f"e.g. {ti.get('masterType', 'n1-standard-8')}",
                )
            return {}
        pool = self.machine_pool(role, str(machine_name), count)
        self.add_trainer(index, role, pool, args)
        return pool

    def add_trainer(self, index: int, role: str, pool: dict[str, Any], args: list[str]) -> None:
        """A package in a prebuilt image, a package in the pool's image, or the image alone."""
        ti = self.ti
        config = ti.get(f"{role}Config") or {}
        image_uri = config.get("imageUri")
        if image_uri is None and index > 0:
            # pools inherit the master's container
            image_uri = (ti.get("masterConfig") or {}).get("imageUri")
        has_package = bool(ti.get("packageUris") or ti.get("pythonModule"))
        if image_uri and has_package:
            # The legacy service ran the package inside the image given (item 3 of issue 12);
            # Vertex AI runs a package only on a prebuilt image (components.rules._images).
            image_uri = self.executor(role if config.get("imageUri") else "master", str(image_uri))
            self.notes.append(
                f"{role}: the package runs in the image {role}Config.imageUri gives "
                "(pythonPackageSpec.executorImageUri)"
            )
            if config.get("containerCommand"):
                self.problem(
                    f"trainingInput.{role}Config.containerCommand",
                    "runs the image's own command, but packageUris/pythonModule run a package in it",
                    "remove containerCommand to run the package, or packageUris and "
                    "pythonModule to run the container",
                )
            package_args = [str(a) for a in config.get("containerArgs") or []] or args
            pool["pythonPackageSpec"] = self.python_package(str(image_uri), package_args)
        elif image_uri:
            pool["containerSpec"] = _container(image_uri, config, args)
        else:
            kind = accelerator_kind(self.catalog, pool["machineSpec"])
            pool["pythonPackageSpec"] = self.python_package(self.prebuilt(role, kind), args)

    def executor(self, owner: str, uri: str) -> str:
        """The image a package runs on: a prebuilt one as given, an earlier name of one as
        Vertex AI names it (with a note); any other image is a problem at ``owner``'s
        imageUri, naming the two ways out."""
        found = executor_image(self.catalog, uri, self.region)
        if found.kind == "legacy" and found.successor is not None:
            self.notes.append(
                f"{owner}Config.imageUri {clipped(uri)} is an earlier name of a prebuilt "
                f"training image; Vertex AI's is {found.successor}"
            )
            return found.successor
        if found.kind == "custom":
            self.image_problem = True
            self.finding(
                Violation(
                    f"trainingInput.{owner}Config.imageUri",
                    f"{clipped(uri)} is not one of Vertex AI's prebuilt training images, and "
                    "Vertex AI runs a Python package (packageUris, pythonModule) only on one",
                    "use a prebuilt image (set runtimeVersion and drop imageUri, or set a "
                    "prebuilt image's URI), or build the package into your image and drop "
                    "packageUris/pythonModule: it then runs as a container (containerSpec)",
                    rule="legacy",
                )
            )
        return uri

    def prebuilt(self, role: str, kind: str) -> str:
        """The prebuilt image for the job's runtime version on a pool of ``kind`` ('' if none)."""
        ti = self.ti
        value, path = ti.get("runtimeVersion"), "trainingInput.runtimeVersion"
        tpu_version = (ti.get(f"{role}Config") or {}).get("tpuTfVersion")
        if kind == "tpu" and tpu_version not in (None, ""):
            value, path = tpu_version, f"trainingInput.{role}Config.tpuTfVersion"
        defaulted = value in (None, "")
        if defaulted:
            self.notes.append(
                f"no runtimeVersion: AI Platform's default was {DEFAULT_RUNTIME_VERSION} "
                "(set runtimeVersion to the version the trainer was written for)"
            )
            value = DEFAULT_RUNTIME_VERSION
        elif isinstance(value, float) and not isinstance(value, SourceFloat):
            self.notes.append(
                f"{path.rsplit('.', 1)[-1]} was given as the number {value!r}: "
                "write versions as text ('2.10' is not 2.1)"
            )
        python = ti.get("pythonVersion")
        choice = choose_image(
            self.catalog,
            version=version_text(value),
            python=None if python in (None, "") else version_text(python),
            accelerator=kind,
            region=self.region,
            version_path=path,
            # Every pool inherits the master's image, but for a TPU pool's own.
            image_field=f"{role if kind == 'tpu' else 'master'}Config.imageUri",
        )
        self.notes.extend(choice.notes)
        if choice.problem is not None:
            self.image_problem = True
            problem = choice.problem
            if defaulted:
                # The user wrote no version: say where the one refused came from.
                problem = replace(
                    problem,
                    reason=f"runtimeVersion is not set, so AI Platform's default "
                    f"{DEFAULT_RUNTIME_VERSION} applies: {problem.reason}",
                )
            self.finding(problem)
        else:
            self.prebuilt_used = True
        return choice.uri or ""

    def framework_note(self, kind: str) -> str:
        runtime = self.ti.get("runtimeVersion")
        version = DEFAULT_RUNTIME_VERSION if runtime in (None, "") else version_text(runtime)
        return (
            f"runtime version {clipped(version)} bundled TensorFlow, scikit-learn and XGBoost, "
            "and a legacy job does not say which one it uses: it runs in the prebuilt "
            "TensorFlow image; " + other_frameworks_hint(self.catalog, kind, self.region)
        )

    def python_package(self, image: str, args: list[str]) -> dict[str, Any]:
        ti = self.ti
        package: dict[str, Any] = {"executorImageUri": image, "args": args}
        if ti.get("packageUris"):
            package["packageUris"] = [str(u) for u in ti["packageUris"]]
        if ti.get("pythonModule"):
            package["pythonModule"] = str(ti["pythonModule"])
        return package

    def machine_pool(self, role: str, machine_name: str, count: int) -> dict[str, Any]:
        """The pool's machine spec (legacy type or Compute Engine type), count and disk."""
        machine: dict[str, Any] = {"machineType": machine_name}
        legacy = self.catalog.legacy_machine_types.get(machine_name)
        if legacy is not None:
            machine = {"machineType": legacy.machine_type}
            if legacy.accelerator:
                machine["acceleratorType"] = legacy.accelerator
                machine["acceleratorCount"] = legacy.accelerator_count
        config = self.ti.get(f"{role}Config") or {}
        accel = config.get("acceleratorConfig")
        if accel is not None:
            self.accelerator_config(role, machine_name, accel, machine)
        if legacy is not None:
            # A TPU's acceleratorConfig picks its version; a GPU type's is refused above.
            tpu = _is_tpu_machine(self.catalog, machine_name) and machine.get("acceleratorType")
            shown = machine if tpu else {}
            what = (
                f" with {shown.get('acceleratorCount', legacy.accelerator_count)} x "
                f"{shown.get('acceleratorType', legacy.accelerator)}"
                if legacy.accelerator
                else ""
            )
            self.notes.append(
                f"{role}: legacy machine type {machine_name} is {legacy.machine_type}{what}"
            )
        pool: dict[str, Any] = {"machineSpec": machine, "replicaCount": count}
        disk = _disk_spec(config.get("diskConfig") or {})
        if disk:
            pool["diskSpec"] = disk
        return pool

    def accelerator_config(
        self, role: str, machine_name: str, accel: dict[str, Any], machine: dict[str, Any]
    ) -> None:
        legacy = self.catalog.legacy_machine_types.get(machine_name)
        if legacy is not None and _is_tpu_machine(self.catalog, machine_name):
            self.tpu_version(role, legacy, accel, machine)
            return
        if legacy is not None and legacy.accelerator:
            self.problem(
                f"trainingInput.{role}Config.acceleratorConfig",
                f"{machine_name} already includes {legacy.accelerator_count} x {legacy.accelerator}",
                f"use a Compute Engine machine type such as {legacy.machine_type} with acceleratorConfig",
            )
        if accel.get("type") is not None:
            machine["acceleratorType"] = accel["type"]
            self.accelerator_from_config.add(role)
        if accel.get("count") is not None:
            machine["acceleratorCount"] = int(accel["count"])

    def tpu_version(
        self, role: str, legacy: LegacyMachineType, accel: dict[str, Any], machine: dict[str, Any]
    ) -> None:
        """``cloud_tpu``'s acceleratorConfig picks the TPU version (TPU_V2 or TPU_V3, 8 cores).

        The choices are the legacy row's count of each TPU type its machine takes.
        """
        choices = [
            (name, legacy.accelerator_count)
            for name in accepted_accelerators(self.catalog, legacy.machine_type)
            if legacy.accelerator_count in allowed_counts(self.catalog, legacy.machine_type, name)
        ]
        written = accel.get("type")
        name = resolve_accelerator(self.catalog, str(written)) if written is not None else None
        count = int(accel["count"]) if accel.get("count") is not None else None
        if (name, count) in choices:
            machine["acceleratorType"], machine["acceleratorCount"] = name, count
            return
        allowed = " or ".join(_accelerator_text(n, c) for n, c in choices)
        given = _accelerator_text(clipped(str(written)) if written is not None else None, count)
        default = (legacy.accelerator, legacy.accelerator_count)
        others = " or ".join(_accelerator_text(*c) for c in choices if c != default)
        fix = next((c for c in choices if c[0] == name and c != default), None)
        field_name = f"{role}Config.acceleratorConfig"
        alone = f"{legacy.name}'s default {_accelerator_text(*default)}"
        self.problem(
            f"trainingInput.{field_name}",
            f"{legacy.name} takes {allowed}, not {given}",
            f"set {field_name}: {_accelerator_text(*fix)}, or remove it for {alone}"
            if fix
            else f"remove {field_name} for {alone}"
            + (f", or set it to {others}" if others else ""),
        )

    def check_retired(self, pools: list[dict[str, Any]], tier_name: str) -> None:
        """A retired GPU (the K80 of BASIC_GPU, standard_gpu, ...) said in the input's terms."""
        retired: list[tuple[int, str, str]] = []
        for index, (role, type_key) in enumerate(_ROLES):
            machine = pools[index].get("machineSpec", {}) if index < len(pools) else {}
            accelerator = self.catalog.accelerators.get(str(machine.get("acceleratorType")))
            if accelerator is not None and accelerator.retired:
                retired.append((index, role, type_key))
                self.retired.add(accelerator.name)
        from_tier = [r for r in retired if r[1] not in self.accelerator_from_config]
        tier = self.catalog.scale_tiers.get(tier_name)
        if tier is not None and from_tier:
            self.finding(_retired_tier(tier.name, pools, from_tier, self.catalog))
        for index, role, type_key in retired:
            if tier is None or role in self.accelerator_from_config:
                self.finding(self.retired_role(pools[index], role, type_key))

    def retired_role(self, pool: dict[str, Any], role: str, type_key: str) -> Violation:
        machine = pool["machineSpec"]
        accelerator = self.catalog.accelerators[machine["acceleratorType"]]
        count = int(machine.get("acceleratorCount") or 0)
        retired_on = f"retired on {accelerator.retired_on}" if accelerator.retired_on else "retired"
        replacement = _replacement_config(self.catalog, machine, accelerator.replacement)
        if role in self.accelerator_from_config:
            return Violation(
                f"trainingInput.{role}Config.acceleratorConfig.type",
                f"{accelerator.name} was {retired_on}; Vertex AI no longer offers it",
                f"use {role}Config.acceleratorConfig {replacement}" if replacement else None,
                rule="retired",
            )
        legacy_name = self.ti.get(type_key)
        suggestion = (
            f"use {type_key}: {machine['machineType']} with {role}Config.acceleratorConfig "
            f"{replacement}"
            if replacement
            else None
        )
        return Violation(
            f"trainingInput.{type_key}",
            f"{legacy_name} runs on {count} x {accelerator.name}, {retired_on}",
            suggestion,
            rule="retired",
        )

    def document(
        self,
        pools: list[dict[str, Any]],
        display_name: str | None,
        labels: dict[str, str] | None,
        project: str | None,
    ) -> dict[str, Any]:
        """The CustomJob document (None values are left out by the caller)."""
        ti = self.ti
        document: dict[str, Any] = {
            "workerPoolSpecs": pools,
            "displayName": display_name,
            "labels": labels or {},
            "project": project,
            "region": self.region,
        }
        if ti.get("jobDir"):
            document["baseOutputDirectory"] = ti["jobDir"]
        for key in ("serviceAccount", "network", "scheduling"):
            if ti.get(key) is not None:
                document[key] = _legacy_scheduling(ti[key]) if key == "scheduling" else ti[key]
        if isinstance(ti.get("encryptionConfig"), dict) and ti["encryptionConfig"].get(
            "kmsKeyName"
        ):
            document["encryptionSpec"] = {"kmsKeyName": ti["encryptionConfig"]["kmsKeyName"]}
        if ti.get("enableWebAccess"):
            document["enableWebAccess"] = True
        return document


def _replacement_config(
    catalog: Catalog, machine: dict[str, Any], replacement: str | None
) -> str | None:
    """``{type: NVIDIA_TESLA_T4, count: 1}``: the replacement GPU, as many as fit the machine."""
    if not replacement:
        return None
    count = int(machine.get("acceleratorCount") or 1)
    counts = allowed_counts(catalog, str(machine.get("machineType")), replacement)
    if counts:
        fitting = [c for c in counts if c <= count]
        count = fitting[-1] if fitting else counts[0]
    return f"{{type: {replacement}, count: {count}}}"


def _retired_tier(
    tier: str, pools: list[dict[str, Any]], retired: list[tuple[int, str, str]], catalog: Catalog
) -> Violation:
    """BASIC_GPU runs on 1 x NVIDIA_TESLA_K80: the tier's cluster, written as CUSTOM."""
    first = pools[retired[0][0]]["machineSpec"]
    accelerator = catalog.accelerators[first["acceleratorType"]]
    roles = [role for _, role, _ in retired]
    on = "" if roles == ["master"] else f" its {', '.join(roles)}"
    retired_on = f"retired on {accelerator.retired_on}" if accelerator.retired_on else "retired"
    parts = ["scaleTier: CUSTOM"]
    for index, (role, type_key) in enumerate(_ROLES[: len(pools)]):
        machine = pools[index].get("machineSpec")
        if not machine:
            continue
        parts.append(f"{type_key}: {machine['machineType']}")
        if index > 0:
            parts.append(f"{role}Count: {pools[index]['replicaCount']}")
        replacement = _replacement_config(catalog, machine, accelerator.replacement)
        if role in roles and replacement:
            parts.append(f"{role}Config: {{acceleratorConfig: {replacement}}}")
    return Violation(
        "trainingInput.scaleTier",
        f"{tier} runs{on} on {first.get('acceleratorCount')} x {accelerator.name}, {retired_on}",
        "use " + ", ".join(parts) if accelerator.replacement else None,
        rule="retired",
    )


def _disk_spec(disk_config: dict[str, Any]) -> dict[str, Any]:
    return {
        vertex: value
        for legacy_key, vertex in (
            ("bootDiskSizeGb", "bootDiskSizeGb"),
            ("bootDiskType", "bootDiskType"),
        )
        if (value := disk_config.get(legacy_key))
    }


def _container(image_uri: str, config: dict[str, Any], args: list[str]) -> dict[str, Any]:
    container: dict[str, Any] = {"imageUri": image_uri, "args": args}
    if config.get("containerCommand"):
        container["command"] = config["containerCommand"]
    if config.get("containerArgs"):
        container["args"] = [str(a) for a in config["containerArgs"]]
    return container


def _legacy_scheduling(value: Any) -> Any:
    # Legacy scheduling had maxRunningTime / maxWaitTime; Vertex has timeout.
    if isinstance(value, dict) and "maxRunningTime" in value:
        return {"timeout": value["maxRunningTime"]}
    return value


def _is_tpu_machine(catalog: Catalog, name: str) -> bool:
    """Whether a legacy or Compute Engine machine type name is a TPU VM (``cloud_tpu``)."""
    legacy = catalog.legacy_machine_types.get(name)
    machine = catalog.machine_types.get(legacy.machine_type if legacy else name)
    return machine is not None and machine.family == "tpu"


def _tpu_vm_role(ti: dict[str, Any], catalog: Catalog) -> tuple[int, str, str] | None:
    """The first role (index, role, type field) of the job that runs on a TPU, if any."""
    for index, (role, type_key) in enumerate(_ROLES):
        name = ti.get(type_key)
        if name is None or not _is_tpu_machine(catalog, str(name)):
            continue
        try:
            present = index == 0 or int(ti.get(f"{role}Count", 0)) > 0
        except (TypeError, ValueError):
            present = False
        if present:
            return index, role, type_key
    return None


def _master_dropped(ti: dict[str, Any], type_key: str, name: str) -> str:
    """The note saying why the legacy master of a TPU job has no pool on Vertex AI."""
    master = clipped(str(ti.get("masterType")))
    config = ti.get("masterConfig") or {}
    lost = [f"masterConfig.{k}" for k in config if k != "imageUri"]
    return (
        f"masterType {master} is dropped: on AI Platform the master VM ran the trainer and "
        f"drove the {type_key} {name} (a Cloud TPU) over the network; Vertex AI runs a TPU "
        "job on one TPU VM that is both (workerPoolSpecs[0], replicaCount 1, its only pool), "
        "so the trainer runs on the TPU VM"
        + (f" ({', '.join(lost)} dropped with the master)" if lost else "")
    )


def _accelerator_text(name: str | None, count: int | None) -> str:
    """``{type: TPU_V3, count: 8}``; a missing field is left out."""
    parts = [f"type: {name}" if name is not None else "", f"count: {count}" if count else ""]
    return "{" + ", ".join(p for p in parts if p) + "}"


def _count(ti: dict[str, Any], key: str, converter: _Converter) -> int:
    value = ti.get(key, 0)
    try:
        count = int(value)
    except (TypeError, ValueError):
        converter.problem(f"trainingInput.{key}", "must be a whole number")
        return 0
    if count < 0:
        converter.problem(f"trainingInput.{key}", "must not be negative")
        return 0
    return count


def read_legacy_config(
    document: dict[str, Any],
    *,
    catalog: Catalog | None = None,
    region: str | None = None,
    tuning: bool = False,
) -> LoadedSpec:
    """The spec of a legacy ``config.yaml``: ``trainingInput``, ``jobId`` and ``labels``.

    ``region`` overrides ``trainingInput.region``; ``tuning`` reads a ``hyperparameters``
    block as a tuning job (``LoadedSpec.tuning``) instead of refusing it.
    """
    if not isinstance(document.get("jobId"), str | None):
        raise SpecInvalidError([Violation("jobId", "must be text", rule="legacy")])
    conversion = convert_training_input(
        document["trainingInput"],
        display_name=document.get("jobId"),
        labels=document.get("labels"),
        catalog=catalog,
        region=region,
        tuning=tuning,
    )
    return conversion.loaded("legacy-config")
