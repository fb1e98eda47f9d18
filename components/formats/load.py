"""Reading a job spec, or a tuning job, from any of the input formats (see ``components.formats``)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic.alias_generators import to_camel

from .._errors import SpecError, SpecFormatError
from ..rules._catalog import Catalog, load_catalog
from ..rules._images import settled_pools
from ..rules._spec import CUSTOM_JOB_OUTPUT_ONLY, JobSpec
from .gcloud_command import is_gcloud_command, read_gcloud_command, read_loop_jobs
from .legacy_config import read_legacy_config
from .legacy_tuning import is_legacy_tuning, tuning_summary
from .migration import (
    PULUMI_TYPES,
    TERRAFORM_TYPE,
    ResourceJob,
    is_pulumi_program,
    pulumi_yaml_jobs,
    terraform_jobs,
)
from .notebook import is_notebook, read_notebook, read_notebook_text
from .pulumi_programs import (
    RESOURCE,
    constructs_ai_custom_job,
    read_python_programs,
    read_typescript_program,
)
from .python_sdk import loaded_sdk_job, parse_python, read_python_jobs
from .request import RequestShape, job_from_request
from .result import FileJob, Format, LoadedSpec, TuningJobFileError
from .script import LoopJobs
from .text import parse_document, read_text
from .tuning import tuning_format, tuning_from_document, tuning_job_summary

__all__ = [
    "detect_format",
    "holds_jobs",
    "load_jobs",
    "load_spec_file",
    "not_a_single_job",
    "spec_from_document",
    "with_prebuilt_images",
]


# What the API returns about a job, never what it is asked to run: ``describe`` prints them.
_OUTPUT_ONLY = frozenset(CUSTOM_JOB_OUTPUT_ONLY) | {to_camel(n) for n in CUSTOM_JOB_OUTPUT_ONLY}
_REQUEST = RequestShape("CreateCustomJobRequest", "customJob", "custom_job", "CustomJob")
_TUNING_FORMATS = ("hyperparameter-tuning-job", "create-hyperparameter-tuning-job-request")


def detect_format(document: Any, origin: str) -> Format:
    """Which format a parsed document is in; ``SpecFormatError`` naming what was expected."""
    if not isinstance(document, dict):
        raise SpecFormatError(
            f"{origin}: expected a mapping at the top level, got {type(document).__name__}"
        )
    tuning = tuning_format(document)
    if tuning is not None:
        return tuning
    if "trainingInput" in document:
        return "legacy-config"
    if "customJob" in document or "custom_job" in document:
        return "create-custom-job-request"
    if "jobSpec" in document or "job_spec" in document:
        return "custom-job"
    if "workerPoolSpecs" in document or "worker_pool_specs" in document:
        return "custom-job-spec"
    raise SpecFormatError(
        f"{origin}: unknown format: expected workerPoolSpecs (CustomJobSpec), jobSpec (CustomJob), "
        "customJob (CreateCustomJobRequest), trainingInput (legacy config.yaml), studySpec or "
        "trialJobSpec (HyperparameterTuningJob) or hyperparameterTuningJob "
        "(CreateHyperparameterTuningJobRequest) at the top level"
    )


def not_a_single_job(origin: str, what: str = "") -> TuningJobFileError:
    """The error for a tuning job where a single custom job was asked for."""
    return TuningJobFileError(
        f"{origin}: this file is a hyperparameter tuning job{what}, not a single custom job: "
        "use HyperparameterTuningJob for it (TrainingJob runs one CustomJob, which would run "
        "one trial without its hyperparameters)"
    )


def spec_from_document(
    document: Any,
    origin: str = "(spec)",
    *,
    catalog: Catalog | None = None,
    region: str | None = None,
    tuning: bool = False,
) -> LoadedSpec:
    """A spec from parsed data in any of the YAML formats; raises ``SpecError``.

    A whole ``CustomJob`` as the API returns it may carry its output-only fields (``name``,
    ``state``, ``createTime``...): they are ignored, with a note. A ``CreateCustomJobRequest``
    gives its project and region through ``parent``. ``region`` overrides a legacy
    config's region, which also picks its prebuilt image's registry.

    A hyperparameter tuning job (a Vertex ``HyperparameterTuningJob`` in any form, a legacy
    ``trainingInput.hyperparameters``) is read with ``tuning=True`` (``LoadedSpec.tuning``);
    without it, it raises ``TuningJobFileError``.
    """
    if is_pulumi_program(document):
        read = f"{origin}: read as a pulumi-gcp AiCustomJob resource of a Pulumi YAML program"
        return _one_job(
            [_resource_job(r, read) for r in pulumi_yaml_jobs(document, origin)], origin
        )
    kind = detect_format(document, origin)
    if kind in _TUNING_FORMATS:
        if not tuning:
            raise not_a_single_job(origin, tuning_job_summary(document))
        return tuning_from_document(document, origin)
    if kind == "legacy-config":
        training_input = document["trainingInput"]
        if not tuning and is_legacy_tuning(training_input):
            what = f" ({tuning_summary(training_input['hyperparameters'])})"
            raise not_a_single_job(origin, what)
        return read_legacy_config(document, catalog=catalog, region=region, tuning=tuning)
    notes: list[str] = []
    if kind == "create-custom-job-request":
        document = job_from_request(document, _REQUEST, notes)
    if kind != "custom-job-spec":
        ignored = [key for key in document if key in _OUTPUT_ONLY]
        if ignored:
            notes.append(f"output-only fields ignored: {', '.join(ignored)}")
            document = {k: v for k, v in document.items() if k not in _OUTPUT_ONLY}
    return LoadedSpec(JobSpec.parse(document), kind, notes)


def load_spec_file(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    catalog: Catalog | None = None,
    region: str | None = None,
    tuning: bool = False,
) -> LoadedSpec:
    """Read a spec file in any of the formats; raises ``SpecError`` subclasses.

    ``region`` (the CLI's ``--region``) overrides a legacy job's region and so its image
    registry; other formats keep what the file says (the caller checks against ``region``).

    ``tuning=True`` reads a hyperparameter tuning job too: ``LoadedSpec.tuning`` is then the
    ``TuningJobSpec`` (None for a custom job). Without it a tuning job raises
    ``TuningJobFileError`` (a ``SpecFormatError``), so that no caller runs one trial of it as
    a single job.

    ``SpecFormatError``: unreadable or in no known format. ``SpecInvalidError``: the
    file was read but fields are malformed (each named in ``violations``).
    """
    path = Path(path)
    catalog = catalog or load_catalog()
    if path.suffix in _MANY_JOBS_SUFFIXES:
        return _one_job(
            load_jobs(path, env=env, catalog=catalog, region=region, tuning=tuning), path
        )
    text = read_text(path)
    if is_notebook(text):
        jobs = _notebook_jobs(path, text, env, catalog, region, tuning)
        return _one_job(jobs, path)
    if path.suffix == ".tf":
        read = f"{path}: read as a Terraform {TERRAFORM_TYPE} resource"
        loaded = _one_job([_resource_job(r, read) for r in terraform_jobs(text, str(path))], path)
    elif is_gcloud_command(text, path):
        environment = os.environ if env is None else env
        loaded = read_gcloud_command(
            path, text, environment, catalog, region, from_document=spec_from_document
        )
    else:
        document = parse_document(text, str(path))
        loaded = spec_from_document(
            document, str(path), catalog=catalog, region=region, tuning=tuning
        )
    if loaded.tuning is not None and not tuning:
        raise not_a_single_job(str(path))
    return with_prebuilt_images(loaded, catalog, region)


def with_prebuilt_images(
    loaded: LoadedSpec, catalog: Catalog, region: str | None = None
) -> LoadedSpec:
    """``loaded`` with earlier names of prebuilt executor images replaced by Vertex AI's, and
    a note for each, or for an image past its end of availability (``components.rules._images``)."""
    tuning = loaded.tuning
    job = tuning.trial_job_spec if tuning is not None else loaded.spec
    pools, notes = settled_pools(list(job.worker_pool_specs), catalog, region or loaded.spec.region)
    # A legacy config's reader said already when its chosen image is past availability.
    notes = [n for n in notes if n not in loaded.notes]
    if not notes:
        return loaded
    if tuning is not None:
        trial = tuning.trial_job_spec.model_copy(update={"worker_pool_specs": pools})
        tuning = tuning.model_copy(update={"trial_job_spec": trial})
        return dataclasses.replace(
            loaded, spec=tuning.trial_job(), tuning=tuning, notes=[*loaded.notes, *notes]
        )
    spec = loaded.spec.model_copy(update={"worker_pool_specs": pools})
    return dataclasses.replace(loaded, spec=spec, notes=[*loaded.notes, *notes])


_PROGRAM_SUFFIXES = frozenset({".ts", ".mts", ".cts", ".js", ".mjs", ".cjs"})
"""A Pulumi TypeScript or JavaScript program: each pulumi-gcp AiCustomJob it constructs."""
_MANY_JOBS_SUFFIXES = frozenset({".ipynb", ".py"}) | _PROGRAM_SUFFIXES


def holds_jobs(path: Path) -> bool:
    """A file that may hold several jobs, each read on its own (``load_jobs``): a notebook, a
    Python file, a Pulumi TypeScript program, a Terraform file or a Pulumi YAML program (a job
    per resource), a script (shell, batch file, Makefile: one submission in loops over known
    values is a job per run)."""
    if path.suffix in _MANY_JOBS_SUFFIXES or path.suffix == ".tf":
        return True
    try:
        text = read_text(path)
    except SpecFormatError:
        return False
    if is_notebook(text):
        return False
    # Any text naming pulumi-gcp's type may be a Pulumi YAML program of several: load_jobs
    # parses it (a file of one job is handed over unnamed, as the command would read it).
    return is_gcloud_command(text, path) or any(kind in text for kind in PULUMI_TYPES)


def load_jobs(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    catalog: Catalog | None = None,
    region: str | None = None,
    tuning: bool = False,
) -> list[FileJob]:
    """Every job of a file: a notebook's (``.ipynb``) and a Python file's (``.py``: Vertex AI
    SDK calls) each with its name, and what was read or why it could not be (the others are
    still read); a script's one submission once per run of the loops over known values around
    it, each named by its run (``line 2: for LR=0.01``); a Pulumi Python or TypeScript
    program's ``AiCustomJob``s, each named by its line and resource (``line 14: AiCustomJob
    bert``); a Pulumi YAML program's or Terraform file's job resources, when there are several,
    each named by its resource (``AiCustomJob bert``, ``google_vertex_ai_custom_job.bert``);
    any other format's one job (one such resource too), unnamed (``load_spec_file``, raising
    as it does).

    ``SpecFormatError`` when the notebook or Python file cannot be read at all, or holds no
    job. ``tuning`` as for ``load_spec_file``: without it, a tuning job is an entry's error.
    """
    path = Path(path)
    catalog = catalog or load_catalog()
    if path.suffix == ".py":
        return _python_jobs(path, env, catalog, region, tuning)
    if path.suffix in _PROGRAM_SUFFIXES:
        text = read_text(path, what="Pulumi program")
        resources = read_typescript_program(text, str(path))
        if not resources:
            raise SpecFormatError(
                f"{path}: no pulumi-gcp {RESOURCE} found: expected new gcp.vertex.{RESOURCE}"
                '("name", {...}) (with @pulumi/gcp imported)'
            )
        found = [
            loaded_sdk_job(job, str(path), catalog, region, spec_from_document, "pulumi-program")
            for job in resources
        ]
        return [_settled(job, catalog, region, tuning) for job in found]
    if path.suffix == ".ipynb":
        return _notebook_jobs(path, read_notebook_text(path), env, catalog, region, tuning)
    try:
        loaded = load_spec_file(path, env=env, catalog=catalog, region=region, tuning=tuning)
    except LoopJobs as loops:
        text = read_text(path)
        environment = os.environ if env is None else env
        jobs = read_loop_jobs(
            path, text, environment, catalog, region, loops, from_document=spec_from_document
        )
        return [_settled(job, catalog, region, tuning) for job in jobs]
    except _SeveralJobs as several:  # a Pulumi YAML program's or a Terraform file's resources
        return [_settled(job, catalog, region, tuning) for job in several.jobs]
    return [FileJob(None, loaded)]


def _python_jobs(
    path: Path,
    env: Mapping[str, str] | None,
    catalog: Catalog,
    region: str | None,
    tuning: bool,
) -> list[FileJob]:
    """The jobs of a Python file, in source order: its Vertex AI SDK jobs, and in a Pulumi
    program the pulumi-gcp AiCustomJobs it constructs."""
    origin = str(path)
    tree = parse_python(read_text(path, what="Python file"), origin)
    environment = os.environ if env is None else env
    found = [
        (sdk.line, loaded_sdk_job(sdk, origin, catalog, region, spec_from_document))
        for sdk in read_python_jobs(tree, origin, env=environment)
    ]
    if constructs_ai_custom_job(tree):
        found += [
            (
                job.line,
                loaded_sdk_job(job, origin, catalog, region, spec_from_document, "pulumi-program"),
            )
            for job in read_python_programs(tree, origin)
        ]
    if not found:
        raise SpecFormatError(
            f"{path}: no Vertex AI SDK job found: expected aiplatform.CustomJob(...), "
            "CustomJob.from_local_script(...), CustomTrainingJob/CustomContainerTrainingJob/"
            "CustomPythonPackageTrainingJob(...).run(...) or HyperparameterTuningJob(...) "
            f"(with google.cloud.aiplatform imported), or a pulumi-gcp gcp.vertex.{RESOURCE}(...) "
            "(with pulumi_gcp imported)"
        )
    return [_settled(job, catalog, region, tuning) for _, job in sorted(found, key=lambda f: f[0])]


def _notebook_jobs(
    path: Path,
    text: str,
    env: Mapping[str, str] | None,
    catalog: Catalog,
    region: str | None,
    tuning: bool,
) -> list[FileJob]:
    environment = os.environ if env is None else env
    jobs = read_notebook(path, text, environment, catalog, region, from_document=spec_from_document)
    return [_settled(job, catalog, region, tuning) for job in jobs]


def _settled(job: FileJob, catalog: Catalog, region: str | None, tuning: bool) -> FileJob:
    """A job of a notebook, Python file or script as ``load_spec_file`` hands one over."""
    if job.loaded is None:
        return job
    if job.loaded.tuning is not None and not tuning:
        return FileJob(job.name, error=not_a_single_job(f"{job.name}"))
    return FileJob(job.name, loaded=with_prebuilt_images(job.loaded, catalog, region))


class _SeveralJobs(SpecFormatError):
    """The file holds several jobs (``jobs``, each read): ``load_jobs`` hands each over; a
    caller asked for one job gets this error."""

    def __init__(self, message: str, jobs: list[FileJob]) -> None:
        super().__init__(message)
        self.jobs = jobs


def _resource_job(resource: ResourceJob, read: str) -> FileJob:
    """A program's job resource as a job of the file, its notes after ``read``."""
    if resource.error is not None:
        return FileJob(resource.name, error=resource.error)
    try:
        spec = JobSpec.parse(resource.job)
    except SpecError as exc:
        return FileJob(resource.name, error=exc)
    return FileJob(resource.name, LoadedSpec(spec, "custom-job", [read, *resource.notes]))


def _one_job(jobs: list[FileJob], path: str | Path) -> LoadedSpec:
    """The one job of a file that may hold several, for a caller that takes one."""
    if len(jobs) > 1:
        names = "; ".join(str(job.name) for job in jobs[:10])
        raise _SeveralJobs(
            f"{path}: holds {len(jobs)} jobs ({names}): one job was asked for; `validate`, "
            "`convert` and `estimate` read each, and a training:jobs entry makes one job of each",
            jobs,
        )
    job = jobs[0]
    if job.error is not None:
        raise job.error
    assert job.loaded is not None
    return job.loaded
