"""A file holding a gcloud job submission (often a shell script) → spec.

The file is read as bash reads a script (``components.formats.shell``), its simple variable
assignments applied and nothing ever run (``components.formats.script``); its one job
submission is then read by the reader of its form:

==============================================================  =========================
command                                                         reader
==============================================================  =========================
``gcloud [beta|alpha] ai-platform jobs submit training JOB``    ``ai_platform_command``
``gcloud [beta|alpha] ml-engine jobs submit training JOB``      ``ai_platform_command``
``gcloud [beta|alpha] ai custom-jobs create``                   ``custom_jobs_command``
``gcloud [beta|alpha] ai hp-tuning-jobs create``                refused: a tuning job
==============================================================  =========================

Any other gcloud command is "not a job submission" (the error says which forms are
understood). A note says which line was read.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from components._catalog import Catalog
from components._errors import SpecFormatError, SpecInvalidError
from components._spec import JobSpec
from components.formats.ai_platform_command import read_submit_training
from components.formats.custom_jobs_command import read_custom_job_create
from components.formats.gcloud_flags import TUNING
from components.formats.result import LoadedSpec
from components.formats.script import MARK, ScriptCommand, find_submission, unresolved_message
from components.formats.text import clipped

__all__ = ["is_gcloud_command", "read_gcloud_command"]

_SCRIPT_SUFFIXES = frozenset({".sh", ".bash"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELL_WORDS = frozenset(
    {"export", "readonly", "declare", "typeset", "set", "unset", "source", ".", "cd", "echo"}
    | {"printf", "if", "for", "while", "function", "trap", "shopt", "gcloud"}
)
_YAML_START = re.compile(r"""^(?:[-{\[%]|---|[\w."'/ -]+\s*:(?:\s|$))""")
_GCLOUD_LINE = re.compile(r"^\s*(?:\S*/)?gcloud(?:\s|$)", re.MULTILINE)


def is_gcloud_command(text: str, path: Path | None = None) -> bool:
    """True when the file is a shell script or command line rather than a YAML document.

    A ``#!`` first line, a ``.sh``/``.bash`` name, a first line starting with ``gcloud``, an
    assignment (``NAME=value``) or a shell builtin (``export``, ``set``...); or a line
    starting with ``gcloud`` in a file whose first line is not YAML-like (``key:``).
    """
    if text.startswith("#!") or (path is not None and path.suffix in _SCRIPT_SUFFIXES):
        return True
    first = next(
        (
            line.strip()
            for line in text.splitlines()
            if line.strip() and not line.strip().startswith("#")
        ),
        "",
    )
    if not first:
        return False
    word = first.split()[0]
    if word.rsplit("/", 1)[-1] in _SHELL_WORDS or _ASSIGNMENT.match(first):
        return True
    return not _YAML_START.match(first) and _GCLOUD_LINE.search(text) is not None


def read_gcloud_command(
    path: Path, text: str, env: Mapping[str, str], catalog: Catalog, region: str | None = None
) -> LoadedSpec:
    """The spec of the file's one job submission; ``SpecFormatError`` when there is none,
    several, or a hyperparameter tuning job; ``SpecInvalidError`` for bad values.

    ``region`` (``--region`` of the CLI) overrides a legacy job's region and image registry."""
    found = find_submission(text, env, path.parent)
    form = found.invocation.form
    if form == "hp-tuning":
        raise SpecFormatError(
            f"line {found.line}: `{found.invocation.name}` submits a hyperparameter tuning "
            f"job: {TUNING}"
        )
    try:
        if form == "legacy-training":
            loaded = read_submit_training(found, path, catalog, region)
        else:
            loaded = read_custom_job_create(found, path, catalog)
    except (SpecFormatError, SpecInvalidError) as exc:
        mark = MARK.search(str(exc)) or _SHOWN_MARK.search(str(exc))
        if mark is not None:
            unknown = found.unknowns[int(mark.group(1))]
            raise SpecFormatError(unresolved_message(found.line, unknown)) from None
        if isinstance(exc, SpecInvalidError):
            raise
        raise SpecFormatError(f"line {found.line}: {exc}") from None
    loaded.notes[:0] = found.notes
    return _settle_unknowns(loaded, found) if found.unknowns else loaded


def _settle_unknowns(loaded: LoadedSpec, found: ScriptCommand) -> LoadedSpec:
    """Values the script computes, kept as written where their text does not change what is
    validated (``_KEPT_AS_WRITTEN``); anywhere else an error naming the variable."""
    document = loaded.spec.to_document()
    kept_in: dict[int, dict[str, None]] = {}
    for where, value in _strings(document, ""):
        for mark in MARK.finditer(value):
            unknown = found.unknowns[int(mark.group(1))]
            kept = _KEPT_AS_WRITTEN.match(where) if unknown.keepable else None
            if kept is None:
                what = f"the job's {MARK.sub('…', where)}"
                raise SpecFormatError(unresolved_message(found.line, unknown, what))
            label = _LABELS.get(kept.group(1), "trainer arguments")
            kept_in.setdefault(int(mark.group(1)), {})[label] = None
    notes = [
        f"{found.unknowns[index].message}: kept as written ({clipped(found.unknowns[index].text)}) "
        f"in the job's {', '.join(labels)}"
        for index, labels in kept_in.items()
    ]

    def readable(text: str) -> str:
        return MARK.sub(lambda m: found.unknowns[int(m.group(1))].text, text)

    spec = JobSpec.parse(_mapped(document, readable))
    written = [readable(note) for note in loaded.notes]
    return dataclasses.replace(loaded, spec=spec, notes=written + notes)


_SHOWN_MARK = re.compile(r"\\x01(\d+)\\x01")
"""A ``MARK`` as ``repr`` shows it in a message."""
_KEPT_AS_WRITTEN = re.compile(
    r"^(displayName|baseOutputDirectory|workerPoolSpecs\[\d+\]\.\w+\.args\[\d+\])$"
)
_LABELS = {"displayName": "name", "baseOutputDirectory": "output directory"}


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every text of a spec document (keys too), with its path."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, inner in value.items():
            inner_where = f"{where}.{key}" if where else str(key)
            yield inner_where, str(key)
            yield from _strings(inner, inner_where)
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _strings(inner, f"{where}[{index}]")


def _mapped(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {change(str(k)): _mapped(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_mapped(v, change) for v in value]
    return value
