"""Reading a job spec from any of the three input formats.

- a Vertex ``CustomJobSpec`` (top-level ``workerPoolSpecs``) or a whole ``CustomJob``
  (``jobSpec``), YAML or JSON, as ``gcloud ai custom-jobs create --config`` takes it;
- a legacy AI Platform ``config.yaml`` (top-level ``trainingInput``);
- a file holding a legacy ``gcloud ai-platform jobs submit training`` command.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from components._catalog import Catalog, load_catalog
from components._errors import SpecFormatError, SpecInvalidError
from components._files import FileReadError, read_text_capped
from components._gcloud import is_gcloud_command, merge_training_input, parse_gcloud_command
from components._legacy import convert_training_input
from components._spec import JobSpec
from components._violations import Violation
from components._yaml import YamlBoundsError, load_documents

Format = Literal["custom-job", "custom-job-spec", "legacy-config", "gcloud-command"]
MAX_SPEC_BYTES = 1 << 20


@dataclass
class LoadedSpec:
    """A spec read from a file, the format it was in, and notes on what was assumed."""

    spec: JobSpec
    format: Format
    notes: list[str] = field(default_factory=list)
    scale_tier: str | None = None


def read_text(path: Path, *, what: str = "spec file") -> str:
    """The text of a spec file: a regular UTF-8 file of at most ``MAX_SPEC_BYTES``."""
    try:
        return read_text_capped(path, MAX_SPEC_BYTES, what=what)
    except FileReadError as exc:
        raise SpecFormatError(str(exc)) from None


def parse_document(text: str, origin: str) -> Any:
    """Parse YAML (JSON is YAML too); raises ``SpecFormatError`` with the line of the error."""
    try:
        documents = load_documents(text)
    except YamlBoundsError as exc:
        raise SpecFormatError(f"{origin}: refused: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise SpecFormatError(f"{origin}: not valid YAML{where}: {problem}") from None
    except (ValueError, RecursionError) as exc:
        raise SpecFormatError(f"{origin}: not valid YAML: {exc}") from None
    if len(documents) != 1:
        raise SpecFormatError(f"{origin}: expected one YAML document, found {len(documents)}")
    return documents[0]


def detect_format(document: Any, origin: str) -> Format:
    if not isinstance(document, dict):
        raise SpecFormatError(
            f"{origin}: expected a mapping at the top level, got {type(document).__name__}"
        )
    if "trainingInput" in document:
        return "legacy-config"
    if "jobSpec" in document or "job_spec" in document:
        return "custom-job"
    if "workerPoolSpecs" in document or "worker_pool_specs" in document:
        return "custom-job-spec"
    raise SpecFormatError(
        f"{origin}: unknown format: expected workerPoolSpecs (CustomJobSpec), jobSpec (CustomJob) "
        "or trainingInput (legacy config.yaml) at the top level"
    )


def spec_from_document(
    document: Any, origin: str = "(spec)", *, catalog: Catalog | None = None
) -> LoadedSpec:
    """A spec from parsed data in any of the YAML formats; raises ``SpecError``."""
    kind = detect_format(document, origin)
    if kind == "legacy-config":
        if not isinstance(document.get("jobId"), str | None):
            raise SpecInvalidError([Violation("jobId", "must be text", rule="legacy")])
        conversion = convert_training_input(
            document["trainingInput"],
            display_name=document.get("jobId"),
            labels=document.get("labels"),
            catalog=catalog,
        )
        return LoadedSpec(conversion.spec, kind, conversion.notes, conversion.scale_tier)
    return LoadedSpec(JobSpec.parse(document), kind)


def load_spec_file(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    catalog: Catalog | None = None,
) -> LoadedSpec:
    """Read a spec file in any of the three formats; raises ``SpecError`` subclasses.

    ``SpecFormatError``: unreadable or in no known format. ``SpecInvalidError``: the
    file was read but fields are malformed (each named in ``violations``).
    """
    path = Path(path)
    text = read_text(path)
    catalog = catalog or load_catalog()
    if is_gcloud_command(text):
        return _from_gcloud(path, text, os.environ if env is None else env, catalog)
    return spec_from_document(parse_document(text, str(path)), str(path), catalog=catalog)


def _from_gcloud(path: Path, text: str, env: Mapping[str, str], catalog: Catalog) -> LoadedSpec:
    command = parse_gcloud_command(text, env, catalog)
    from_config: dict[str, Any] = {}
    notes: list[str] = []
    if command.config_path is not None:
        config_path = command.config_path
        if not config_path.is_absolute():
            config_path = path.parent / config_path
        document = parse_document(read_text(config_path, what="--config file"), str(config_path))
        if not isinstance(document, dict) or not isinstance(document.get("trainingInput"), dict):
            raise SpecFormatError(f"{config_path}: --config must hold a trainingInput mapping")
        from_config = document["trainingInput"]
        notes.append(f"read --config {config_path}; flags override its values")
    training_input = merge_training_input(from_config, command.training_input)
    if command.staging_bucket:
        notes.append(
            f"--staging-bucket {command.staging_bucket}: package staging is done by the TrainingJob resource"
        )
    conversion = convert_training_input(
        training_input,
        display_name=command.job_name,
        labels=command.labels,
        project=command.project,
        catalog=catalog,
    )
    spec = conversion.spec
    if command.enable_web_access:
        spec = spec.model_copy(update={"enable_web_access": True})
    return LoadedSpec(spec, "gcloud-command", notes + conversion.notes, conversion.scale_tier)
