"""``python -m components``: validate, convert and explore the catalog from a shell or CI.

Exit codes: 0 valid, 1 invalid (violations printed), 2 unreadable or malformed input.
Every command reads custom jobs and hyperparameter tuning jobs alike (``LoadedSpec.kind``).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import shlex
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO, TypeVar

from .._errors import CatalogError, SpecFormatError, SpecInvalidError, TrainingJobError
from ..costs._figure import dearest
from ..costs._price_sheet import PriceSheetError, apply_prices, parse_price_setting
from ..costs._pricing import (
    Estimate,
    Figure,
    GpuOffer,
    TuningEstimate,
    capacity_word,
    compare_regions,
    concurrent_trials,
    duration_text,
    estimate,
    figure_text,
    gpu_offers,
)
from ..formats import LoadedSpec, load_spec_file
from ..formats.autopackage import IMAGE_PLACEHOLDER, VertexBuild, for_vertex
from ..formats.legacy_config import LegacyConversionError
from ..formats.load import holds_jobs, load_jobs
from ..formats.result import FileJob
from ..rules._catalog import (
    Catalog,
    combinations,
    load_catalog,
    resolve_accelerator,
    use_catalog_overlay,
)
from ..rules._spec import AUTOPACKAGE_ENV, JobSpec
from ..rules._tuning_spec import TuningJobSpec
from ..rules._tuning_validation import validate_tuning
from ..rules._validation import Target, missing_built_in_gpus, validate
from ..rules._violations import (
    Violation,
    clipped,
    did_you_mean,
    errors_only,
    terminal_safe,
)
from ._quota_cli import add_quota_parser

__all__ = [
    "build_parser",
    "cmd_catalog",
    "cmd_convert",
    "cmd_estimate",
    "cmd_import",
    "cmd_prices",
    "cmd_validate",
    "main",
]

EXIT_VALID, EXIT_INVALID, EXIT_UNREADABLE = 0, 1, 2
T = TypeVar("T")
ESTIMATE_DEFAULT_REGION = "us-central1"
"""Where ``estimate`` prices a job whose file and flags name no region (with a note): the
region gcloud's AI Platform and Vertex AI examples default to."""


_CURRENT: list[FileJob] = []
"""The job of a notebook or Python file a command runs on now (``_each_job``), read once."""


def _read(path: str, region: str | None) -> LoadedSpec:
    """The file's job: the one ``_each_job`` chose, else the file's one job."""
    if _CURRENT:
        job = _CURRENT[-1]
        if job.error is not None:
            raise job.error
        assert job.loaded is not None
        return job.loaded
    return load_spec_file(path, region=region, tuning=True)


def _run_on(
    *,
    job: FileJob,
    command: Callable[[argparse.Namespace, TextIO, TextIO], int],
    args: argparse.Namespace,
    out: TextIO,
    err: TextIO,
) -> int:
    """``command`` run on ``job``, already read (``_read`` hands it over instead of reading)."""
    _CURRENT.append(job)
    try:
        return command(args, out, err)
    finally:
        _CURRENT.pop()


def _each_job(
    command: Callable[[argparse.Namespace, TextIO, TextIO], int],
) -> Callable[[argparse.Namespace, TextIO, TextIO], int]:
    """``command`` run on each job of a notebook or Python file (named on stderr before its
    lines; ``--json``: one report with ``jobs``), else on the file; the worst exit code."""

    def each(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        region = getattr(args, "region", None)
        if not holds_jobs(Path(args.file)):
            return command(args, out, err)  # one job: read once, by the command
        try:
            jobs = load_jobs(args.file, region=region, tuning=True)
        except TrainingJobError:
            jobs = []  # the command reads the file again and reports why not, in its way
        if not jobs:
            return command(args, out, err)
        if jobs[0].name is None:  # the file's one job, read once: the command takes it
            return _run_on(job=jobs[0], command=command, args=args, out=out, err=err)
        as_json = bool(getattr(args, "json", False))
        # One program of every job's resource (each job's own is read back and merged).
        programs = command is cmd_convert and getattr(args, "to", "") == "plugin-yaml"
        codes: list[int] = []
        reports: list[object] = []
        for index, job in enumerate(jobs):
            print(f"== {args.file}: {job.name} ==", file=err)
            if command is cmd_convert and index and not programs:
                print("---", file=out)
            stream = io.StringIO() if as_json or programs else out
            codes.append(_run_on(job=job, command=command, args=args, out=stream, err=err))
            if isinstance(stream, io.StringIO) and stream.getvalue():
                text = stream.getvalue()
                reports.append({"name": job.name, **json.loads(text)} if as_json else text)
        if as_json:
            valid = all(isinstance(r, dict) and r.get("valid") for r in reports)
            json.dump({"valid": valid, "jobs": reports}, out, indent=2)
            print(file=out)
        elif programs and reports:
            _print_merged_programs([str(r) for r in reports], args.file, out)
        return max(codes)

    return each


def _load(
    path: str, out: TextIO, *, region: str | None = None, json_errors: bool = False
) -> LoadedSpec | tuple[int, list[Violation]]:
    try:
        return _read(path, region)
    except SpecInvalidError as exc:
        return EXIT_INVALID, list(exc.violations)
    except SpecFormatError as exc:
        if json_errors:
            # A CI step that parses --json output must get JSON on every exit code.
            report = {"valid": False, "error": str(exc), "violations": [], "notes": []}
            json.dump(report, out, indent=2)
            print(file=out)
        else:
            print(f"error: {exc}", file=out)
        return EXIT_UNREADABLE, []


def _load_or_report(path: str, err: TextIO, region: str | None = None) -> LoadedSpec | int:
    """The spec, or the exit code after printing why it could not be read."""
    loaded = _load(path, err, region=region)
    if isinstance(loaded, tuple):
        code, violations = loaded
        _print_violations(violations, err)
        return code
    return loaded


def _print_violations(violations: Sequence[Violation], out: TextIO) -> None:
    for violation in violations:
        print(violation, file=out)


def _table(rows: Sequence[Sequence[str]], out: TextIO) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip(), file=out)


def _check(loaded: LoadedSpec, region: str | None, target: Target, base: Path) -> list[Violation]:
    """Every violation of the job (of a tuning job: of its study and its trial's job); its
    relative local paths are read from ``base``, the file's directory, as the resources do."""
    if loaded.tuning is None:
        return validate(loaded.spec, region=region, target=target, base=base)
    found = validate_tuning(loaded.tuning, region=region, target=target, base=base)
    return loaded.in_input_terms(found)


def _what(loaded: LoadedSpec) -> str:
    """``custom-job`` or ``hyperparameter tuning job, legacy-config``: what a file held."""
    if loaded.tuning is None:
        return loaded.format
    return f"hyperparameter tuning job, {loaded.format}"


def cmd_validate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    stream = out if args.json else err
    loaded = _load(args.file, stream, region=args.region, json_errors=args.json)
    if isinstance(loaded, tuple):
        code, violations = loaded
        if args.json and code == EXIT_INVALID:
            json.dump(
                {"valid": False, "violations": [v.to_dict() for v in violations]}, out, indent=2
            )
            print(file=out)
        else:
            _print_violations(violations, out)
        return code
    region = args.region or loaded.spec.region
    violations = _check(loaded, region, args.target, Path(args.file).parent)
    errors = errors_only(violations)
    notes = [*loaded.notes, *_fragment_hint(loaded, errors)]
    if region is None:
        notes.append(
            "no region given (--region or region: in the file): region and zone checks skipped"
        )
    if args.json:
        json.dump(
            {
                "valid": not errors,
                "kind": loaded.kind,
                "format": loaded.format,
                "region": region,
                "violations": [v.to_dict() for v in violations],
                "notes": notes,
            },
            out,
            indent=2,
        )
        print(file=out)
    else:
        _print_violations(violations, out)
        for note in notes:
            print(f"note: {note}", file=err)
        if not errors:
            print(f"{args.file}: valid ({_what(loaded)})", file=err)
    return EXIT_INVALID if errors else EXIT_VALID


_TRAINER_PARTS = re.compile(
    r"^(trialJobSpec\.)?workerPoolSpecs\[\d+\](\.pythonPackageSpec\.(packageUris|pythonModule))?$"
)


def _fragment_hint(loaded: LoadedSpec, errors: Sequence[Violation]) -> list[str]:
    """A note when a config file lacks the trainer a gcloud command would add to it."""
    if loaded.format not in ("legacy-config", "custom-job-spec"):
        return []
    if not any(v.rule == "trainer" and _TRAINER_PARTS.match(v.path) for v in errors):
        return []
    flags = (
        "--package-path/--module-name"
        if loaded.format == "legacy-config"
        else "--worker-pool-spec or --python-package-uris"
    )
    return [
        f"this file names no complete trainer: if it is the --config of a gcloud command that "
        f"adds one ({flags}), validate the file holding that command instead (it reads this one)"
    ]


def _local_packages(spec: JobSpec) -> list[str]:
    """Package URIs that are paths on this machine, which ``--config`` cannot upload."""
    return sorted(
        {
            uri
            for pool in spec.worker_pool_specs
            if pool.python_package_spec is not None
            for uri in pool.python_package_spec.package_uris
            if not uri.startswith("gs://")
            and not any(e.name == AUTOPACKAGE_ENV for e in pool.python_package_spec.env)
        }
    )


def _built(violation: Violation, builds: list[VertexBuild]) -> bool:
    """A warning about a pool that ``convert`` turns into gcloud's built image."""
    return any(violation.path.startswith(f"workerPoolSpecs[{i}].") for b in builds for i in b.pools)


def _build_notes(builds: list[VertexBuild]) -> list[str]:
    """What to build before the converted job can run: gcloud's image of each autopackaged
    pool, its Dockerfile and the commands (``components.formats.autopackage``)."""
    notes = []
    for found in builds:
        build = found.build
        pools = ", ".join(str(i) for i in found.pools)
        dockerfile = "".join(f"\n#   {line}" for line in build.dockerfile().splitlines())
        commands = "".join(f"\n#   {line}" for line in build.build_commands(found.image))
        placeholder = (
            f" (replace {found.image} with the image's name, e.g. "
            "gcr.io/PROJECT/cloudai-autogenerated/NAME:TAG as gcloud names it)"
            if found.image == IMAGE_PLACEHOLDER
            else ""
        )
        notes.append(
            f"worker pool{'s' if len(found.pools) > 1 else ''} {pools} "
            f"{'run' if len(found.pools) > 1 else 'runs'} the image gcloud builds from {build.directory} "
            f"(local-package-path); Vertex AI needs it built and pushed first{placeholder}. "
            f"Save this as Dockerfile.autopackage:{dockerfile}\n# then run:{commands}"
        )
    return notes


def _command_flags(
    project: str | None, region: str | None, display_name: str | None, source: str
) -> tuple[list[str], list[str]]:
    """The ``--project``, ``--region`` and ``--display-name`` flags of a create command (gcloud
    requires a display name: the file's name when the job has none), and notes on them."""
    notes: list[str] = []
    if not display_name:
        # The file's name is the least surprising default.
        display_name = Path(source).stem or "training-job"
        notes.append(f"no display name in the file: the command uses {display_name!r}")
    flags = [f"--project={shlex.quote(project)}"] if project else []
    flags.append(f"--region={shlex.quote(region or 'REGION')}")
    if not region:
        notes.append("no region in the file: replace REGION (or pass --region to convert)")
    flags.append(f"--display-name={shlex.quote(display_name)}")
    return flags, notes


def _create_command(spec: JobSpec, source: str) -> tuple[str, list[str]]:
    """The ``gcloud ai custom-jobs create`` line for the converted file, and notes on it."""
    flags, notes = _command_flags(spec.project, spec.region, spec.display_name, source)
    if spec.labels:
        labels = ",".join(f"{k}={v}" for k, v in spec.labels.items())
        flags.append(f"--labels={shlex.quote(labels)}")
    return f"gcloud ai custom-jobs create {' '.join(flags)} --config=THIS_FILE", notes


def _tuning_command(spec: TuningJobSpec, source: str) -> tuple[str, list[str]]:
    """The ``gcloud ai hp-tuning-jobs create`` line for the converted file, and notes on it.

    The trial counts are flags too: gcloud releases before the flags defaulted to None set
    them to 1 over the config's. Labels stay in the file, which holds them."""
    flags, notes = _command_flags(spec.project, spec.region, spec.display_name, source)
    total, parallel = concurrent_trials(spec)
    flags += [f"--max-trial-count={total}", f"--parallel-trial-count={parallel}"]
    return f"gcloud ai hp-tuning-jobs create {' '.join(flags)} --config=THIS_FILE", notes


def cmd_convert(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    loaded = _load_or_report(args.file, err, args.region)
    if isinstance(loaded, int):
        return loaded
    for note in loaded.notes:
        print(f"# note: {note}", file=err)
    if loaded.tuning is not None:
        return _convert_tuning(loaded, loaded.tuning, args, out, err)
    spec = loaded.spec
    if args.region:
        spec = spec.model_copy(update={"region": args.region})
    violations = validate(spec, target="vertex")
    if errors_only(violations):
        _print_violations(violations, err)
        return EXIT_INVALID
    # Converting needs the client library's message types, not its clients (issue 26).
    from ..vertex._library import types_only

    types_only()
    from ..vertex.convert import custom_job_spec_document

    command, notes = _create_command(spec, args.file)
    try:
        document, builds = for_vertex(custom_job_spec_document(spec))
    except SpecFormatError as exc:  # a build no Dockerfile can hold
        print(f"error: {exc}", file=err)
        return EXIT_INVALID
    if args.to == "plugin-yaml":
        properties = _plugin_properties(spec.display_name, spec.to_document(), args.file)
        properties["jobSpec"] = document
        command, document = _plugin_program(properties, "custom-job", args.file)
    _print_config(
        command,
        notes + _build_notes(builds) + [str(v) for v in violations if not _built(v, builds)],
        document,
        out,
        err,
    )
    return _check_packages(spec, err)


def _convert_tuning(
    loaded: LoadedSpec, spec: TuningJobSpec, args: argparse.Namespace, out: TextIO, err: TextIO
) -> int:
    """``convert`` of a tuning job: the config ``gcloud ai hp-tuning-jobs create`` reads."""
    if args.region:
        spec = spec.model_copy(update={"region": args.region})
    violations = loaded.in_input_terms(validate_tuning(spec, target="vertex"))
    if errors_only(violations):
        _print_violations(violations, err)
        return EXIT_INVALID
    from ..vertex._library import types_only

    types_only()
    from ..vertex.tuning_convert import tuning_job_document

    try:
        document = tuning_job_document(spec)
    except (AttributeError, TypeError, ValueError) as exc:  # what validation let through
        print(f"error: the tuning job cannot be converted: {exc}", file=err)
        return EXIT_INVALID
    command, notes = _tuning_command(spec, args.file)
    if args.to == "plugin-yaml":
        properties = _plugin_properties(spec.display_name, spec.to_document(), args.file)
        properties |= {k: v for k, v in document.items() if k not in properties}
        command, document = _plugin_program(properties, "hyperparameter-tuning-job", args.file)
    _print_config(command, notes + [str(v) for v in violations], document, out, err)
    return _check_packages(spec.trial_job(), err, tuning=True)


_PLUGIN_COMMENT = (
    "Pulumi.yaml of a YAML program: `pulumi up` with the gpu-training plugin on PATH "
    "(the provider's project and region where the job names none)"
)
_PLUGIN_KEYS = ("displayName", "labels", "encryptionSpec", "project", "region")


def _plugin_properties(
    display_name: str | None, document: dict[str, object], source: str
) -> dict[str, object]:
    """The properties of a plugin resource the job's own document gives (``_PLUGIN_KEYS``);
    the display name defaults to the file's name, as the create command's does."""
    properties = {key: document[key] for key in _PLUGIN_KEYS if key in document}
    properties.setdefault("displayName", display_name or Path(source).stem or "training-job")
    return properties


def _plugin_program(
    properties: dict[str, object], kind: str, source: str
) -> tuple[str, dict[str, object]]:
    """``convert --to plugin-yaml``: the job as a Pulumi YAML program declaring this project's
    plugin resource, and the comment line that says how to run it."""
    from ..formats.migration import plugin_program

    name = str(properties.get("displayName") or Path(source).stem)
    program = plugin_program(name, kind, properties, f"converted from {Path(source).name}")
    return _PLUGIN_COMMENT, program


def _print_merged_programs(texts: list[str], source: str, out: TextIO) -> None:
    """``convert --to plugin-yaml`` of a file of several jobs: one Pulumi YAML program
    declaring each job's resource (a name taken twice gets ``-2``...), each resource's outputs
    under its name."""
    import yaml

    from ..formats.migration import plugin_program

    resources: dict[str, object] = {}
    for text in texts:
        program = yaml.safe_load(text)
        for name, resource in program["resources"].items():
            unique, number = name, 1
            while unique in resources:
                number += 1
                unique = f"{name}-{number}"
            resources[unique] = resource
    merged = plugin_program(
        Path(source).stem, "custom-job", {}, f"converted from {Path(source).name}"
    )
    merged["resources"] = resources
    merged["outputs"] = {
        f"{name}-{key}": f"${{{name}.{key}}}" for name in resources for key in ("state", "jobId")
    }
    print(f"# {_PLUGIN_COMMENT}", file=out)
    yaml.safe_dump(merged, out, sort_keys=False, allow_unicode=True)


def _import_client_library() -> None:
    from ..vertex.api import aiplatform

    aiplatform()  # imported first without the library's version warnings on stderr


def _print_config(
    command: str, notes: list[str], document: dict[str, object], out: TextIO, err: TextIO
) -> None:
    """The converted file: its create command as a comment, then the YAML; notes (and
    warnings) on stderr."""
    import yaml

    print(f"# {command}", file=out)
    for note in notes:
        print(note if note.startswith("warning: ") else f"# note: {note}", file=err)
    yaml.safe_dump(document, out, sort_keys=False, allow_unicode=True)


def _check_packages(spec: JobSpec, err: TextIO, *, tuning: bool = False) -> int:
    """``EXIT_INVALID`` (saying what to do) when package URIs are local paths."""
    local = _local_packages(spec)
    if not local:
        return EXIT_VALID
    print(
        f"error: packageUris holds local paths ({', '.join(local)}): gcloud cannot submit "
        "this file as is. Build and upload the package (`python setup.py sdist`, then copy "
        "dist/*.tar.gz to gs://BUCKET/) and put its gs:// URI in packageUris"
        + (
            ""
            if tuning
            else ", or launch the job with the TrainingJob resource, which packages and "
            "stages local trainer code"
        ),
        file=err,
    )
    return EXIT_INVALID


def cmd_catalog(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.action == "check":
        from ..core._billing_cli import cmd_catalog_check

        return cmd_catalog_check(args, out, err)
    catalog = load_catalog()
    for value, known, what in (
        (args.gpu, catalog.accelerators, "accelerator type"),
        (args.region, catalog.regions, "region"),
        (args.machine, catalog.machine_types, "machine type"),
    ):
        if value and value not in known:
            hint = did_you_mean(value, known, limit=3)
            print(f"error: unknown {what} {value!r}" + (f"; {hint}" if hint else ""), file=err)
            return EXIT_UNREADABLE
    rows = combinations(
        catalog, accelerator=args.gpu, region=args.region, machine_type=args.machine
    )
    if not rows:
        print("no combination matches", file=err)
        return EXIT_INVALID
    header = ("GPU", "MACHINE TYPE", "COUNTS", "vCPUs", "MEMORY GB", "STATUS", "REGIONS")
    table = [header]
    for row in rows:
        acc = catalog.accelerators[row.accelerator]
        status = f"retired {acc.retired_on}" if acc.retired else acc.lifecycle
        regions = args.region or (
            ", ".join(row.regions[:4])
            + (f" +{len(row.regions) - 4}" if len(row.regions) > 4 else "")
        )
        table.append(
            (
                row.accelerator,
                row.machine_type,
                ",".join(map(str, row.counts)),
                str(row.vcpus),
                f"{row.memory_gb:g}",
                status,
                regions or "-",
            )
        )
    _table(table, out)
    return EXIT_VALID


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.4f}"


def _figure_line(label: str, figure: Figure, unit: str) -> str:
    """``total $/h: 1.2345``; a figure known only as a bound says so and why:
    ``total $/h: at most $24.8900/h (NVIDIA_A100_80GB: flex-start rate unknown, ...)``."""
    if figure.is_price:
        return f"{label}: {_money(figure.high)}"
    return f"{label}: {figure_text(figure, unit=unit, digits=4)}"


def _ceiling_line(label: str, figure: Figure) -> str:
    """``at most (timeout 2 h): $1.24``; unknown, or the bound in words (no ceiling known
    under a lower bound)."""
    if figure.kind in ("price", "at_most", "range"):
        assert figure.high is not None
        return f"{label}: ${figure.high:,.2f}"
    if figure.kind == "at_least":
        return f"{label}: unknown ({figure_text(figure, unit='', why=False)}: no ceiling known)"
    return f"{label}: unknown"


def _cell(figure: Figure) -> str:
    """A table's $/h cell: the price, or the bound in words (``at most 24.8900``)."""
    if figure.is_price:
        return _money(figure.high)
    return figure_text(figure, unit="", digits=4, why=False).replace("$", "")


def _load_for_pricing(path: str, err: TextIO, region: str | None) -> LoadedSpec | int:
    """The spec to price: a legacy job that cannot run today (a retired GPU) is priced as written."""
    try:
        return _read(path, region)
    except LegacyConversionError as exc:
        if exc.conversion is None:
            _print_violations(exc.violations, err)
            return EXIT_INVALID
        for violation in exc.violations:
            print(f"warning: {violation}", file=err)
        print(
            "note: priced as written; the job cannot be submitted until the above is fixed",
            file=err,
        )
        return exc.conversion.loaded("legacy-config")
    except SpecFormatError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_UNREADABLE
    except SpecInvalidError as exc:
        _print_violations(exc.violations, err)
        return EXIT_INVALID


def cmd_estimate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    loaded = _load_for_pricing(args.file, err, args.region)
    if isinstance(loaded, int):
        return loaded
    catalog = _priced_catalog(args, err)
    if isinstance(catalog, int):
        return catalog
    # validate's verdict: Vertex AI refuses such a pool, so it has no price without its GPUs.
    unpriceable = missing_built_in_gpus(loaded.spec, catalog)
    if unpriceable:
        _print_violations(unpriceable, err)
        return EXIT_INVALID
    capacity = _capacity_flag(args)
    if args.regions:
        return _estimate_placement(args, loaded, catalog, out, err)
    if args.compare_regions:
        estimates = compare_regions(
            loaded.spec, catalog, scale_tier=loaded.scale_tier, capacity=capacity
        )
        if not estimates:
            print("no region in the catalog can run this job", file=err)
            return EXIT_INVALID
        _table(_region_rows(estimates, loaded.tuning), out)
        return EXIT_VALID
    region = args.region or loaded.spec.region
    if region is None:
        region = ESTIMATE_DEFAULT_REGION
        print(
            f"note: no region given (--region or region: in the file): priced in {region}",
            file=err,
        )
    result = estimate(
        loaded.spec, catalog, region=region, scale_tier=loaded.scale_tier, capacity=capacity
    )
    if loaded.tuning is not None:
        print("hyperparameter tuning job: one trial runs", file=out)
    _print_estimate(result, region, out)
    if loaded.tuning is None:
        print(_figure_line("total $/h", result.figure, "/h"), file=out)
        timeout = f"timeout {duration_text(result.timeout)}"
        print(_ceiling_line(f"at most ({timeout})", result.max_figure), file=out)
    else:
        _print_tuning_estimate(TuningEstimate(result, *concurrent_trials(loaded.tuning)), out)
    if result.price_labels:
        print(f"prices: {' + '.join(result.price_labels)}", file=out)
    if result.billed_as == "on_demand":
        _print_conflicts(catalog, region, [p.accelerator for p in result.pools], out)
    for missing in result.missing:
        print(f"unknown price: {missing}", file=err)
    return EXIT_VALID


def _estimate_placement(
    args: argparse.Namespace, loaded: LoadedSpec, catalog: Catalog, out: TextIO, err: TextIO
) -> int:
    """``estimate --regions``: each candidate attempt's price, the expected one (the first the
    catalog allows; quotas are not read here) and the worst case (``components.core._placement``)."""
    from ..core._placement import (
        attempts_of,
        declared_placement,
        parse_placement,
        priced_attempts,
        worst_case,
    )
    from ..lifecycle._check import CUSTOM_JOB_SPEC, TUNING_JOB_SPEC

    kind = CUSTOM_JOB_SPEC if loaded.tuning is None else TUNING_JOB_SPEC
    capacity = args.capacity.split(",") if args.capacity else None
    try:
        placement = declared_placement(args.regions.split(","), capacity)
    except ValueError as exc:
        print(f"error: --{exc}", file=err)
        return EXIT_UNREADABLE
    attempts = attempts_of(parse_placement(placement)[0])
    spec = loaded.tuning or loaded.spec
    priced = priced_attempts(spec, attempts, catalog, under=kind.pools_under)
    expected = None
    rows = [["attempt", "$/h", "catalog"]]
    runnable = []
    for attempt, placed, price in priced:
        errors = [
            v for v in kind.validate(placed, attempt.region, "vertex") if v.severity == "error"
        ]
        verdict = str(errors[0]) if errors else "allowed"
        runnable.append(not errors)
        if not errors and expected is None:
            expected = (attempt, price)
        rows.append([attempt.shown, _cell(price), verdict])
    _table(rows, out)
    if expected is None:
        print("no candidate can run this job", file=err)
        return EXIT_INVALID
    print(f"expected (first allowed, {expected[0].shown}): $/h {_stated(expected[1])}", file=out)
    allowed = [row for row, ok in zip(priced, runnable, strict=True) if ok]
    print(f"worst case (most expensive candidate): $/h {_stated(worst_case(allowed))}", file=out)
    return EXIT_VALID


def _stated(figure: Figure) -> str:
    """A figure as its table cell shows it, with why where it is not one price (``at most
    24.8900 (NVIDIA_A100_80GB: flex-start rate unknown, ...)``)."""
    why = f" ({'; '.join(figure.why)})" if figure.why and not figure.is_price else ""
    return _cell(figure) + why


def _region_rows(
    estimates: Sequence[Estimate], tuning: TuningJobSpec | None
) -> list[tuple[str, ...]]:
    """The ``--compare-regions`` table: a job's $/h and ceiling; a tuning job's per trial,
    with all its parallel trials, and the ceiling of all its trials."""
    timeout = duration_text(estimates[0].timeout)
    if tuning is None:
        rows: list[tuple[str, ...]] = [
            ("REGION", "$/H", f"MAX $ ({timeout})", "PRICES", "UNKNOWN PRICES")
        ]
        return rows + [
            (
                e.region,
                _cell(e.figure),
                _cell(e.max_figure),
                " + ".join(e.price_labels) or "-",
                ", ".join(e.missing) or "-",
            )
            for e in estimates
        ]
    total, parallel = concurrent_trials(tuning)
    rows = [
        (
            "REGION",
            "TRIAL $/H",
            f"$/H ({parallel} AT ONCE)",
            f"MAX $ ({total} TRIALS x {timeout})",
            "PRICES",
            "UNKNOWN PRICES",
        )
    ]
    for e in estimates:
        tuned = TuningEstimate(e, total, parallel)
        rows.append(
            (
                e.region,
                _cell(tuned.trial.figure),
                _cell(tuned.figure),
                _cell(tuned.max_figure),
                " + ".join(e.price_labels) or "-",
                ", ".join(e.missing) or "-",
            )
        )
    return rows


def _print_estimate(result: Estimate, region: str, out: TextIO) -> None:
    """The job's pools and their prices (a legacy scale tier's own price: one line)."""
    pricing = capacity_word(result.billed_as)
    if result.scale_tier:
        print(f"{result.scale_tier} (legacy scale tier) in {region}, {pricing}", file=out)
        return
    rows = [("POOL", "ROLE", "REPLICAS", "MACHINE", "GPUS", "$/H EACH", "$/H", "PRICES")]
    for p in result.pools:
        gpus = f"{p.accelerator_count} x {p.accelerator}" if p.accelerator else "-"
        rows.append(
            (
                str(p.index),
                p.role,
                str(p.replicas),
                p.machine_type,
                gpus,
                _cell(p.replica_figure or Figure(p.replica_usd_per_hour, p.replica_usd_per_hour)),
                _cell(p.figure),
                " + ".join(p.price_labels) or "-",
            )
        )
    _table(rows, out)
    print(f"region {region}, {pricing} prices", file=out)


def _print_tuning_estimate(result: TuningEstimate, out: TextIO) -> None:
    """One trial's $/h, every parallel trial's, and the ceiling of all trials."""
    at_once = result.parallel_trials
    print(_figure_line("one trial $/h", result.trial.figure, "/h"), file=out)
    trials = f"{at_once} trial{'' if at_once == 1 else 's'} at once (parallelTrialCount) $/h"
    print(_figure_line(trials, result.figure, "/h"), file=out)
    print(
        _ceiling_line(
            f"at most ({result.max_trials} trial{'' if result.max_trials == 1 else 's'} "
            f"(maxTrialCount), each to its timeout {duration_text(result.timeout)})",
            result.max_figure,
        ),
        file=out,
    )


def _priced_catalog(args: argparse.Namespace, err: TextIO) -> Catalog | int:
    """The catalog with ``--prices``/``--discount`` over its prices, or the exit code."""
    setting = None
    if args.prices is not None or args.discount is not None:
        value = {"sheet": args.prices, "discountPercent": args.discount or 0}
        try:
            # A sheet the user names on the command line may lie anywhere (components._files).
            setting = parse_price_setting(value, Path.cwd(), "--prices/--discount", anywhere=True)
        except PriceSheetError as exc:
            print(f"error: {exc}", file=err)
            return EXIT_UNREADABLE
    base = load_catalog()
    if args.live_prices is not False:
        from ..core._billing_cli import priced_from
        from ..lifecycle._settings import Endpoint, SettingError, parse_endpoint

        try:
            endpoint = Endpoint(parse_endpoint(args.endpoint))
        except SettingError as exc:
            print(f"error: {str(exc).replace('training:endpoint', '--endpoint')}", file=err)
            return EXIT_UNREADABLE
        base = priced_from(
            base,
            endpoint,
            args.live_prices,
            lambda text: print(f"note: {text}", file=err),
            args.project,
            say_snapshot=False,
        )
    try:
        return apply_prices(base, setting)
    except PriceSheetError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_UNREADABLE


def cmd_prices(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """What a GPU costs on each machine that takes it, by region, cheapest first."""
    catalog = _priced_catalog(args, err)
    if isinstance(catalog, int):
        return catalog
    accelerator = None
    if args.gpu:
        accelerator = resolve_accelerator(catalog, args.gpu)
        if accelerator is None:
            hint = did_you_mean(args.gpu, list(catalog.accelerators), otherwise="")
            print(f"error: unknown GPU {clipped(args.gpu)!r}; {hint}".rstrip("; "), file=err)
            return EXIT_UNREADABLE
    if args.region and args.region not in catalog.regions:
        hint = did_you_mean(args.region, list(catalog.regions), otherwise="")
        print(f"error: unknown region {clipped(args.region)!r}; {hint}".rstrip("; "), file=err)
        return EXIT_UNREADABLE
    capacity = _capacity_flag(args) or "on_demand"
    candidates = [r for r in (args.regions or "").split(",") if r]
    for region in candidates:
        if region not in catalog.regions:
            hint = did_you_mean(region, list(catalog.regions), otherwise="")
            print(
                f"error: --regions: unknown region {clipped(region)!r}; {hint}".rstrip("; "),
                file=err,
            )
            return EXIT_UNREADABLE
    offers = gpu_offers(catalog, accelerator=accelerator, region=args.region, capacity=capacity)
    if candidates:  # a placement's candidates, in their order (components.core._placement)
        offers = sorted(
            (o for o in offers if o.region in candidates),
            key=lambda o: (o.accelerator, o.machine_type, o.count, candidates.index(o.region)),
        )
    if not offers:
        print("no machine takes that GPU in that region", file=err)
        return EXIT_INVALID
    pricing = f"{capacity_word(capacity).upper()} $/H"
    rows: list[tuple[str, ...]] = [("GPU", "COUNT", "MACHINE", "REGION", pricing, "SOURCE")]
    from ..core._billing_cli import conflicting_sources

    conflicts = conflicting_sources(catalog) if capacity == "on_demand" else {}
    rows += [
        (
            o.accelerator,
            str(o.count),
            o.machine_type,
            o.region,
            _cell(_offer_figure(o)),
            _offer_source(o)
            + (
                f"; sources differ: {conflicts[key]}"
                if (key := (o.region, "accelerator", o.accelerator)) in conflicts
                else ""
            ),
        )
        for o in offers
    ]
    _table(rows, out)
    if candidates:
        _print_placement_prices(offers, pricing, out)
    return EXIT_VALID


def _print_conflicts(
    catalog: Catalog, region: str, accelerators: Sequence[str | None], out: TextIO
) -> None:
    """Where two public figures disagree on a GPU price the estimate used: which, and the other."""
    from ..core._billing_cli import conflicting_sources

    conflicts = conflicting_sources(catalog)
    for name in dict.fromkeys(a for a in accelerators if a):
        if text := conflicts.get((region, "accelerator", name)):
            print(f"sources differ: {name} in {region}: {text}", file=out)


def _offer_source(offer: GpuOffer) -> str:
    """Where an offer's price came from; why it is a bound; or why it is unknown."""
    if offer.usd_per_hour is None:
        return "; ".join(offer.missing)
    text = " + ".join(offer.price_labels)
    if offer.figure is not None and offer.figure.bounded:
        text += f" ({'; '.join(offer.figure.why)})"
    return text


def _offer_figure(offer: GpuOffer) -> Figure:
    if offer.figure is not None:
        return offer.figure
    return Figure(offer.usd_per_hour, offer.usd_per_hour)


def _print_placement_prices(offers: Sequence[GpuOffer], pricing: str, out: TextIO) -> None:
    """Per machine and GPU count, the price in the first candidate that offers it (expected)
    and in the dearest (the worst case: the job may land there), each a bound where it is one
    (``dearest``: no upper end where a candidate has none)."""
    groups: dict[tuple[str, str, int], list[GpuOffer]] = {}
    for offer in offers:  # in candidate order
        groups.setdefault((offer.accelerator, offer.machine_type, offer.count), []).append(offer)
    rows: list[tuple[str, ...]] = [
        ("GPU", "COUNT", "MACHINE", f"EXPECTED {pricing}", f"WORST CASE {pricing}")
    ]
    for (accelerator, machine, count), found in groups.items():
        figures = [_offer_figure(o) for o in found]
        worst = dearest(figures)
        # The dearest candidate: the one without an upper end, else the highest one.
        where = max(
            zip(found, figures, strict=True),
            key=lambda item: (item[1].high is None, item[1].high or item[1].low or 0.0),
        )[0].region
        rows.append(
            (
                accelerator,
                str(count),
                machine,
                f"{_cell(figures[0])} ({found[0].region})",
                "unknown" if worst.kind == "unknown" else f"{_cell(worst)} ({where})",
            )
        )
    print("placement across the candidates, in order:", file=out)
    _table(rows, out)


def _capacity_flag(args: argparse.Namespace) -> str | None:
    """``--spot`` / ``--flex-start`` as a capacity; None: the job's own."""
    return "spot" if args.spot else "flex_start" if args.flex_start else None


def _price_options(parser: argparse.ArgumentParser) -> None:
    capacity = parser.add_mutually_exclusive_group()
    capacity.add_argument("--spot", action="store_true", help="Spot prices (SPOT)")
    capacity.add_argument(
        "--flex-start",
        action="store_true",
        help="flex-start prices (FLEX_START, Dynamic Workload Scheduler)",
    )
    parser.add_argument(
        "--live-prices",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="prices from the Cloud Billing Catalog API (cached per day) over the catalog's "
        "snapshot, as the preview does; default: when Google credentials are present (or "
        "--endpoint is given); without credentials or access, the snapshot, with a note; "
        "--no-live-prices: the snapshot",
    )
    parser.add_argument(
        "--endpoint",
        help="the Billing API's address for live prices, e.g. the local emulator "
        "http://127.0.0.1:8642",
    )
    parser.add_argument(
        "--project",
        help="with live prices: price at this project's billing account's own prices where "
        "you may read them (Cloud Billing API; else the list prices, with a note)",
    )
    parser.add_argument(
        "--prices", metavar="SHEET", help="an organisation price sheet (CSV, prices.csv schema)"
    )
    parser.add_argument(
        "--discount", metavar="PERCENT", type=float, help="an organisation discount in percent"
    )


MAX_JOB_REFERENCE = 1000
"""A job's resource name is under 200 characters; a longer argument is no job."""
MAX_SHOWN_ERROR = 4000
"""The most of an error the CLI prints: an API's answer may quote a huge request."""
DEFAULT_IMPORT_TIMEOUT = 120.0


def _within(seconds: float, call: Callable[[], T]) -> T:
    """``call()``, or TimeoutError when it has not returned within ``seconds``.

    A REST call's timeout bounds each read from the socket, not the call: an endpoint that
    sends a byte a second answers forever. The call runs in a daemon thread, left behind
    when the time is up (the command ends, and the process with it).
    """
    done: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(call())
        except BaseException as exc:  # handed to the caller's thread
            failed.append(exc)

    worker = threading.Thread(target=run, name="components-import", daemon=True)
    worker.start()
    worker.join(seconds)
    if failed:
        raise failed[0]
    if not done:
        raise TimeoutError(
            f"the API gave no whole answer within {seconds:g} s (is --endpoint right? "
            "--timeout SECONDS waits longer)"
        )
    return done[0]


def cmd_import(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Write a job file that is the existing job, and print the entry that takes it over."""
    import yaml

    from ..core._importing import JobImportError, fetch_job, imported_job
    from ..lifecycle._settings import Endpoint, SettingError, parse_endpoint

    try:
        endpoint = Endpoint(parse_endpoint(args.endpoint))
    except SettingError as exc:
        print(f"error: {str(exc).replace('training:endpoint', '--endpoint')}", file=err)
        return EXIT_UNREADABLE
    if len(args.job) > MAX_JOB_REFERENCE or not args.job.isprintable():
        print(
            f"error: job: {terminal_safe(clipped(args.job, 80), 200)} is not a job's resource "
            f"name or id (at most {MAX_JOB_REFERENCE} printable characters)",
            file=err,
        )
        return EXIT_UNREADABLE
    _import_client_library()
    try:
        job, kind = _within(
            args.timeout,
            lambda: fetch_job(
                args.job, project=args.project, region=args.region, endpoint=endpoint
            ),
        )
        imported = imported_job(job, kind)
    except (JobImportError, TimeoutError) as exc:
        print(f"error: {terminal_safe(endpoint.scrub(str(exc)), MAX_SHOWN_ERROR)}", file=err)
        return EXIT_UNREADABLE
    path = Path(args.out or f"stacks/jobs/{imported.resource_name}.yaml")
    if path.exists() and not args.force:
        print(f"error: {path} exists; choose another --out, or --force to overwrite it", file=err)
        return EXIT_UNREADABLE
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (
        f"# {imported.noun} {imported.name}, as the API returned it (python -m components import)\n"
    )
    path.write_text(header + yaml.safe_dump(imported.document, sort_keys=False))
    for note in imported.notes:
        print(f"# note: {note}", file=err)
    entry = yaml.safe_dump([imported.entry(str(path))], sort_keys=False)
    print(
        f"wrote {path}: {imported.noun} {imported.name} ({imported.state})\n"
        "add this entry to training:jobs in the stack's configuration (Pulumi.<stack>.yaml):\n\n"
        + "".join(f"    {line}\n" for line in entry.splitlines())
        + "\nthe next `pulumi up` takes the job over without starting another one; a later change "
        "of the file replaces it (a new job starts, this one is cancelled)",
        file=out,
    )
    return EXIT_VALID


def _add_pricing_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``estimate`` (a job's price) and ``prices`` (a GPU's, like ``sky show-gpus``)."""
    p = sub.add_parser(
        "estimate", help="what the job (a tuning job: its trials) costs per hour and at most"
    )
    p.add_argument("file")
    p.add_argument("--region", help="region to price in (default: the file's)")
    p.add_argument(
        "--compare-regions",
        action="store_true",
        help="every region that can run it, cheapest first",
    )
    p.add_argument(
        "--regions",
        metavar="R1,R2,...",
        help="candidate regions, in order (placement): each attempt's price, the expected one "
        "and the worst case",
    )
    p.add_argument(
        "--capacity",
        metavar="KIND,...",
        help="with --regions: the capacity kinds each region accepts, in order (on-demand, spot, "
        "flex-start, reservation)",
    )
    _price_options(p)
    _overlay_option(p)
    p.set_defaults(handler=_each_job(cmd_estimate))
    p = sub.add_parser(
        "prices",
        help="what a GPU costs on each machine that takes it, by region, cheapest first, "
        "with the source of each price",
    )
    p.add_argument("--gpu", help="accelerator type or short name, e.g. T4 or NVIDIA_TESLA_T4")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--region")
    where.add_argument(
        "--regions",
        metavar="R1,R2,...",
        help="a placement's candidate regions, in order: their offers, and per machine the "
        "expected price (the first candidate) and the worst case (the dearest)",
    )
    _price_options(p)
    _overlay_option(p)
    p.set_defaults(handler=cmd_prices)


def _overlay_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--catalog-overlay",
        metavar="DIR",
        help="a folder of catalog CSV files (same schemas as components/catalog) whose rows "
        "add to or replace the packaged catalog's, as training:catalogOverlay does for a stack",
    )


def _add_import_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "import",
        help="write the job file of a job started elsewhere, and the training:jobs entry that "
        "takes it over",
    )
    p.add_argument(
        "job",
        help="projects/P/locations/R/customJobs/ID (or .../hyperparameterTuningJobs/ID), or an "
        "id with --project and --region",
    )
    p.add_argument("--project", help="with a job id: its project")
    p.add_argument("--region", help="with a job id: its region")
    p.add_argument(
        "--endpoint",
        help="the API's address, e.g. http://127.0.0.1:8642 for the local emulator "
        "(default: Vertex AI, with Application Default Credentials)",
    )
    p.add_argument("--out", help="the job file to write (default stacks/jobs/<name>.yaml)")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_IMPORT_TIMEOUT,
        metavar="SECONDS",
        help=f"give up when the API has not answered in this time (default {DEFAULT_IMPORT_TIMEOUT:g})",
    )
    p.set_defaults(handler=cmd_import)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m components", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("validate", help="validate a job or tuning job file (any format)")
    p.add_argument("file")
    p.add_argument("--region", help="region to check against (default: the file's)")
    p.add_argument("--json", action="store_true", help="print a JSON report")
    p.add_argument(
        "--target",
        choices=("vertex", "local"),
        default="vertex",
        help="local: allow local paths (emulator)",
    )
    _overlay_option(p)
    p.set_defaults(handler=_each_job(cmd_validate))
    p = sub.add_parser(
        "convert",
        help="print the equivalent Vertex CustomJobSpec YAML (a tuning job: the config of "
        "gcloud ai hp-tuning-jobs create)",
    )
    p.add_argument("file")
    p.add_argument("--region", help="region to check against (default: the file's)")
    p.add_argument(
        "--to",
        choices=("custom-job-spec", "plugin-yaml"),
        default="custom-job-spec",
        help="custom-job-spec (default): the config gcloud reads; plugin-yaml: a Pulumi YAML "
        "program declaring this project's gpu-training:vertex:TrainingJob (or "
        "HyperparameterTuningJob) resource",
    )
    _overlay_option(p)
    p.set_defaults(handler=_each_job(cmd_convert))
    _add_pricing_parsers(sub)
    p = sub.add_parser(
        "catalog",
        help="what machine types and GPUs combine, and where; `catalog check`: the catalog's "
        "prices against the live billing SKUs (exit 1 when they differ)",
    )
    p.add_argument("action", nargs="?", choices=("check",), help="check: compare prices")
    p.add_argument(
        "--endpoint", help="check: the Billing API's address (the local emulator's, for one)"
    )
    p.add_argument("--gpu", help="accelerator type, e.g. NVIDIA_TESLA_T4")
    p.add_argument("--region")
    p.add_argument("--machine", help="machine type, e.g. n1-standard-8")
    _overlay_option(p)
    p.set_defaults(handler=cmd_catalog)
    _add_import_parser(sub)
    add_quota_parser(sub)
    return parser


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the CLI; returns the exit code."""
    out, err = out or sys.stdout, err or sys.stderr
    # Client libraries warn about Python versions and deprecations on import: noise in a
    # validation report, and a FutureWarning is nothing the user of this CLI can act on.
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"google(\.|$)")
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"google(\.|$)")
    args = build_parser().parse_args(argv)
    overlay = getattr(args, "catalog_overlay", None)
    try:
        use_catalog_overlay(Path(overlay) if overlay else None)
    except CatalogError as exc:
        print(f"error: --catalog-overlay: {exc}", file=err)
        return EXIT_UNREADABLE
    try:
        code: int = args.handler(args, out, err)
    except TrainingJobError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_UNREADABLE
    except BrokenPipeError:  # `... | head` closed the pipe: not an error of ours
        return code if "code" in locals() else EXIT_VALID
    return code
