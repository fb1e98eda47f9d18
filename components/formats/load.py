"""Reading a job spec from any of the input formats (see ``components.formats``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components._catalog import Catalog, load_catalog
from components._errors import SpecFormatError
from components._spec import JobSpec
from components.formats.gcloud_command import is_gcloud_command, read_gcloud_command
from components.formats.legacy_config import read_legacy_config
from components.formats.result import Format, LoadedSpec
from components.formats.text import parse_document, read_text

__all__ = ["detect_format", "load_spec_file", "spec_from_document"]


def detect_format(document: Any, origin: str) -> Format:
    """Which format a parsed document is in; ``SpecFormatError`` naming what was expected."""
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
        return read_legacy_config(document, catalog=catalog)
    return LoadedSpec(JobSpec.parse(document), kind)


def load_spec_file(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    catalog: Catalog | None = None,
) -> LoadedSpec:
    """Read a spec file in any of the formats; raises ``SpecError`` subclasses.

    ``SpecFormatError``: unreadable or in no known format. ``SpecInvalidError``: the
    file was read but fields are malformed (each named in ``violations``).
    """
    path = Path(path)
    text = read_text(path)
    catalog = catalog or load_catalog()
    if is_gcloud_command(text):
        return read_gcloud_command(path, text, os.environ if env is None else env, catalog)
    return spec_from_document(parse_document(text, str(path)), str(path), catalog=catalog)
