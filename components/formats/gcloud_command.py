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
``gcloud [beta|alpha] ai hp-tuning-jobs create``                ``tuning_command``
==============================================================  =========================

A hyperparameter tuning job (``hp-tuning-jobs create``, or a legacy submission whose
``--config`` holds ``trainingInput.hyperparameters``) is read as the tuning job it is
(``LoadedSpec.tuning``); ``load_spec_file`` hands it over only to a caller that asks for one.

Any other gcloud command is "not a job submission" (the error says which forms are
understood). A note says which line was read.

A Windows batch file (``.bat``, ``.cmd``, or text starting ``@echo off``) is read as cmd.exe
reads it (``components.formats.batch``), its gcloud command then as a script's.

A Makefile (``Makefile``, ``GNUmakefile``, ``*.mk``, or text with ``NAME ?= value`` lines or
rules with tab-indented recipes) is read too, never run: its variables (``NAME = value``,
``:=``, ``?=``, ``+=``; the environment's where it sets none) are expanded in the recipes as
make expands them (``$(NAME)``, ``${NAME}``, ``$$`` is ``$``, ``$@`` the target), each recipe
line is then read as a script of its own (make runs each in a shell of its own), and
``$(shell cmd)`` is a value computed by running something, like the shell's ``$(cmd)``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .._errors import SpecError, SpecFormatError, SpecInvalidError
from ..rules._catalog import Catalog
from ..rules._spec import JobSpec
from ..rules._tuning_spec import TuningJobSpec
from ..rules._violations import Violation
from .ai_platform_command import read_submit_training
from .batch import is_batch_file, read_batch_submission
from .custom_jobs_command import read_custom_job_create
from .legacy_config import LegacyConversionError
from .result import FileJob, LoadedSpec
from .script import (
    MARK,
    MAX_EXPANDED_CHARS,
    LoopJobs,
    LoopPins,
    ScriptCommand,
    find_submission,
    find_submission_in,
    loop_runs,
    parse_marked,
    unresolved_message,
)
from .text import clipped
from .tuning_command import read_hp_tuning_create

__all__ = ["is_gcloud_command", "is_makefile", "read_gcloud_command", "read_loop_jobs"]

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

    A ``#!`` first line, a ``.sh``/``.bash`` name, a Makefile (``is_makefile``), a first line
    starting with ``gcloud``, an assignment (``NAME=value``) or a shell builtin (``export``,
    ``set``...); or a line starting with ``gcloud`` in a file whose first line is not YAML-like
    (``key:``).
    """
    if text.startswith("#!") or (path is not None and path.suffix in _SCRIPT_SUFFIXES):
        return True
    if is_batch_file(text, path):
        return True
    if is_makefile(text, path):
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


def is_makefile(text: str, path: Path | None = None) -> bool:
    """True for a Makefile: named ``Makefile``/``GNUmakefile``/``*.mk``, or (not a ``#!`` or
    ``.sh`` script) naming gcloud and holding a Make assignment (``NAME ?= x``, ``NAME := x``,
    ``NAME = x``) or a rule followed by a tab-indented recipe line."""
    if text.startswith("#!") or (path is not None and path.suffix in _SCRIPT_SUFFIXES):
        return False
    if path is not None and (path.name in _MAKEFILE_NAMES or path.suffix == ".mk"):
        return True
    if "gcloud" not in text:
        return False
    if _MAKE_ONLY_ASSIGNMENT.search(text):
        return True
    return any(
        _MAKE_TARGETS.match(m.group(1)) and m.group(1).split()[0] not in _SHELL_WORDS
        for m in _LINE_BEFORE_RECIPE.finditer(text)
    )


def read_gcloud_command(
    path: Path,
    text: str,
    env: Mapping[str, str],
    catalog: Catalog,
    region: str | None = None,
    *,
    from_document: Callable[..., LoadedSpec],
    pins: LoopPins | None = None,
) -> LoadedSpec:
    """The spec (or tuning job) of the file's one job submission; ``SpecFormatError`` when
    there is none, or several; ``SpecInvalidError`` for bad values; ``LoopJobs`` when loops
    over known values run it more than once (``read_loop_jobs`` reads each run).

    ``region`` (``--region`` of the CLI) overrides a legacy job's region and image registry.
    ``from_document`` reads a REST call's body (``formats.load.spec_from_document``, passed
    in: load reads scripts through this module). ``pins``: the run of each loop to read."""
    if is_batch_file(text, path):
        found = read_batch_submission(text, env, path.parent, pins=pins)
    elif is_makefile(text, path):
        found = _makefile_submission(text, env, path.parent, pins)
    else:
        found = find_submission(text, env, path.parent, pins=pins)
    form = found.invocation.form
    try:
        if found.rest is not None:
            loaded = _read_rest_call(found, path, catalog, region, from_document)
        elif form == "legacy-training":
            loaded = read_submit_training(found, path, catalog, region)
        elif form == "hp-tuning":
            loaded = read_hp_tuning_create(found, path)
        else:
            loaded = read_custom_job_create(found, path, catalog)
    except (SpecFormatError, SpecInvalidError) as exc:
        raise _in_script_terms(exc, found) from None
    loaded.notes[:0] = found.notes
    return _settle_unknowns(loaded, found) if found.unknowns else loaded


def read_loop_jobs(
    path: Path,
    text: str,
    env: Mapping[str, str],
    catalog: Catalog,
    region: str | None,
    jobs: LoopJobs,
    *,
    from_document: Callable[..., LoadedSpec],
) -> list[FileJob]:
    """One job per run of the loops ``jobs`` names (``read_gcloud_command`` raised it), each
    read with the loops' variables as that run sets them and named by it (``line 2: for
    LR=0.01``): what was read or why not; ``SpecFormatError`` over ``MAX_LOOP_JOBS`` runs."""
    found: list[FileJob] = []
    for name, pins in loop_runs(jobs):
        try:
            loaded = read_gcloud_command(
                path, text, env, catalog, region, from_document=from_document, pins=pins
            )
        except SpecError as exc:
            found.append(FileJob(name, error=exc))
            continue
        found.append(FileJob(name, loaded))
    return found


_REST_FIELDS = {"customJobs": "customJob", "hyperparameterTuningJobs": "hyperparameterTuningJob"}


def _read_rest_call(
    found: ScriptCommand,
    path: Path,
    catalog: Catalog,
    region: str | None,
    spec_from_document: Callable[..., LoadedSpec],
) -> LoadedSpec:
    """The job a ``curl`` POST creates: its body (a ``CustomJob`` or
    ``HyperparameterTuningJob``), in the project and region its URL names."""
    call = found.rest
    assert call is not None
    if call.host_region and call.host_region != call.region:
        raise SpecFormatError(
            f"line {found.line}: the URL's host is {call.host_region}-aiplatform.googleapis.com "
            f"but its location is {call.region}: Vertex AI refuses a location other than its "
            "endpoint's; make them agree"
        )
    if call.body_kind == "inline":
        origin = f"the body of the POST at line {found.line} ({call.option})"
        document = parse_marked(call.body, origin)
        note = f"read the job from the body given inline ({call.option})"
    else:
        value = "-" if call.body_kind == "stdin" else call.body
        config = found.read_config(value, path.parent, flag=call.option)
        document, note = config.document, config.note
    if not isinstance(document, dict):
        raise SpecFormatError(
            f"line {found.line}: the body of the POST must be a JSON object (the job), got "
            f"{type(document).__name__}"
        )
    field = _REST_FIELDS[call.collection]
    request = {"parent": f"projects/{call.project}/locations/{call.region}", field: document}
    loaded = spec_from_document(
        request, f"{path}: the body of the POST", catalog=catalog, region=region, tuning=True
    )
    place = f"project {call.project} and region {call.region} from the URL"
    loaded.notes = [place if n.startswith("project and region taken") else n for n in loaded.notes]
    loaded.notes.insert(0, note)
    return dataclasses.replace(loaded, format="gcloud-command")


def _in_script_terms(exc: SpecFormatError | SpecInvalidError, found: ScriptCommand) -> Exception:
    """A reader's error, said of the script: a value it computes named by its variable, the
    line of the command, and where bash ended the command early."""
    mark = MARK.search(str(exc)) or _SHOWN_MARK.search(str(exc))
    if mark is not None:
        unknown = found.unknowns[int(mark.group(1))]
        return SpecFormatError(_with_cautions(unresolved_message(found.line, unknown), found))
    if isinstance(exc, SpecInvalidError):
        if not found.cautions:
            return exc
        extra = [
            Violation(*caution.split(": ", 1), rule="schema", severity="warning")
            for caution in found.cautions
        ]
        if isinstance(exc, LegacyConversionError):
            return LegacyConversionError([*exc.violations, *extra], exc.conversion)
        return SpecInvalidError([*exc.violations, *extra])
    message = str(exc) if str(exc).startswith("line ") else f"line {found.line}: {exc}"
    return SpecFormatError(_with_cautions(message, found))


def _with_cautions(message: str, found: ScriptCommand) -> str:
    return message + "".join(f" (note: {caution})" for caution in found.cautions)


def _settle_unknowns(loaded: LoadedSpec, found: ScriptCommand) -> LoadedSpec:
    """Values the script computes, kept where the validator checks no more than their shape
    (``_KEPT``; ``ScriptCommand.keep``); anywhere else an error naming the variable. A tuning
    job's are settled in its trial job (``trialJobSpec.``) as in a custom job."""
    tuning = loaded.tuning
    document = tuning.to_document() if tuning is not None else loaded.spec.to_document()
    for where, value in _strings(document, ""):
        # A computed bucket is never kept: the bucket's name is checked whole.
        bucket = value[len("gs://") :].split("/", 1)[0] if value.startswith("gs://") else ""
        for mark in MARK.finditer(value):
            unknown = found.unknowns[int(mark.group(1))]
            in_bucket = mark.group() in bucket
            if not unknown.keepable or _kept_kind(where) is None or in_bucket:
                what = f"the job's {MARK.sub('…', where)}" + (" (its bucket)" if in_bucket else "")
                raise SpecFormatError(unresolved_message(found.line, unknown, what))

    def settled(where: str, value: Any) -> Any:
        if isinstance(value, str):
            kind = _kept_kind(where)
            return found.keep(value, *kind) if kind is not None else value
        if isinstance(value, dict):
            return {k: settled(f"{where}.{k}" if where else str(k), v) for k, v in value.items()}
        if isinstance(value, list):
            return [settled(f"{where}[{i}]", v) for i, v in enumerate(value)]
        return value

    document = settled("", document)
    notes = [found.readable(note) for note in loaded.notes] + found.kept_notes()
    if tuning is None:
        return dataclasses.replace(loaded, spec=JobSpec.parse(document), notes=notes)
    tuning = TuningJobSpec.parse(document)
    return dataclasses.replace(loaded, spec=tuning.trial_job(), tuning=tuning, notes=notes)


_SHOWN_MARK = re.compile(r"\\x01(\d+)\\x01")
"""A ``MARK`` as ``repr`` shows it in a message."""
_KEPT: list[tuple[re.Pattern[str], Literal["text", "id"], str]] = [
    (re.compile(r"^displayName$"), "text", "name"),
    (re.compile(r"^baseOutputDirectory$"), "text", "output directory"),
    (re.compile(r"^workerPoolSpecs\[\d+\]\.\w+\.args\[\d+\]$"), "text", "trainer arguments"),
    (re.compile(r"^project$"), "id", "project"),
    (re.compile(r"^serviceAccount$"), "id", "service account"),
]
"""Where a computed value may stand: the validator checks only the shape of these (a URI's
scheme and bucket, a name's length); ``id`` ones are checked whole, so a computed part is
checked as ``CHECKED_AS``. Never an image or a package URI: kept as written, ``$(...)`` would be
the image pulled or the package fetched (the job fails at its start), so a computed one is an
error naming its variable, as an unset one is."""


def _kept_kind(where: str) -> tuple[Literal["text", "id"], str] | None:
    """How a computed value at ``where`` is kept (a tuning job's trial job fields as a custom
    job's), or None where it is not."""
    where = where.removeprefix("trialJobSpec.")
    return next(((kind, label) for pattern, kind, label in _KEPT if pattern.match(where)), None)


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


# --- Makefiles ---------------------------------------------------------------------------

_MAKEFILE_NAMES = frozenset({"Makefile", "makefile", "GNUmakefile"})
_MAKE_NAME = r"[A-Za-z_][A-Za-z0-9_.-]*"
_MAKE_ASSIGNMENT = re.compile(
    rf"^(?:(?:export|override|private)\s+)*({_MAKE_NAME})\s*(:::=|::=|:=|\?=|\+=|!=|=)\s*(.*)$"
)
_MAKE_ONLY_ASSIGNMENT = re.compile(
    rf"^(?:(?:export|override)\s+)?{_MAKE_NAME}(?:\s*(?:::?=|:::=|\?=|!=)|\s+\+?=\s)", re.MULTILINE
)
"""Assignments bash never writes (``NAME ?= x``, ``NAME := x``, ``NAME = x``)."""
_MAKE_RULE = re.compile(r"^([^\s:#=][^:#=]*?)\s*::?(?!=)\s*(.*)$")
_MAKE_TARGETS = re.compile(r"^[\w./%$(){}-]+(?:[ \t]+[\w./%$(){}-]+)*[ \t]*::?(?!=)")
"""A rule line's targets, as a Makefile writes them (no quotes, no shell syntax)."""
_LINE_BEFORE_RECIPE = re.compile(r"^([^\t\n#][^\n]*)\n\t\S", re.MULTILINE)
_MAKE_CONDITIONALS = frozenset({"ifeq", "ifneq", "ifdef", "ifndef"})
_MAKE_MAX_DEPTH = 16
_MAKE_MAX_GCLOUD_RECIPES = 1000
_SUBMITS = re.compile(r"jobs\s+submit\s+training|custom-jobs\s+create|hp-tuning-jobs\s+create")


@dataclass
class _Make:
    """A Makefile's variables, and make's expansion of ``$(NAME)`` in a recipe."""

    env: Mapping[str, str]
    values: dict[str, tuple[str, bool]] = field(default_factory=dict)
    """Each variable's value and whether it is recursive (``=``: expanded where used)."""
    unknown: dict[str, str] = field(default_factory=dict)
    """Variables whose value is not read here, and why."""
    exported: set[str] = field(default_factory=set)
    notes: dict[str, None] = field(default_factory=dict)
    used: int = 0

    def assign(self, match: re.Match[str], line: int, conditional: bool) -> None:
        name, op, raw = match.group(1), match.group(2), match.group(3).strip()
        if match.group().lstrip().startswith("export"):
            self.exported.add(name)
        if len(self.values) >= 4096 and name not in self.values:
            raise SpecFormatError(f"line {line}: the Makefile sets more than 4096 variables")
        if conditional:
            self.unknown[name] = f"is set under ifeq/ifdef (line {line}), which is not evaluated"
            return
        self.unknown.pop(name, None)
        if op == "?=" and (name in self.values or name in self.env):
            return
        try:
            self.settle(name, op, raw, line)
        except _MakeUnknown as exc:
            # `FLAGS := $(EXTRA) -q` with EXTRA set under ifdef: FLAGS is unknown too, an
            # error only where a recipe uses it.
            self.values.pop(name, None)
            self.unknown[name] = f"is set from {exc.reference} (line {line}), which {exc.why}"

    def settle(self, name: str, op: str, raw: str, line: int) -> None:
        """Apply ``NAME op raw`` (``?=`` already decided): ``:=`` expands now, ``=`` later."""
        if op == "!=":
            self.values[name] = (f"$({self.expand(raw, line)})", False)
        elif op == "+=" and name in self.values:
            old, recursive = self.values[name]
            addition = raw if recursive else self.expand(raw, line)
            self.values[name] = (f"{old} {addition}".strip(), recursive)
        elif op in (":=", "::=", ":::="):
            self.values[name] = (self.expand(raw, line), False)
        else:
            self.values[name] = (raw, True)

    def expand(self, text: str, line: int, target: str = "", depth: int = 0) -> str:
        """``text`` as make expands it, for the shell: ``$(NAME)`` its value, ``$$`` a ``$``."""
        if depth > _MAKE_MAX_DEPTH:
            raise SpecFormatError(
                f"line {line}: Make variables nest more than {_MAKE_MAX_DEPTH} deep"
            )
        out: list[str] = []
        index = 0
        while (dollar := text.find("$", index)) >= 0:
            out.append(text[index:dollar])
            following = text[dollar + 1 : dollar + 2]
            index = dollar + 2
            if following in ("(", "{"):
                end = _make_close(text, dollar + 1)
                if end < 0:
                    raise SpecFormatError(
                        f"line {line}: a ${following} in the Makefile is never closed"
                    )
                out.append(self.reference(text[dollar + 2 : end], line, target, depth))
                index = end + 1
            elif following == "$":
                out.append("$")
            elif following:
                out.append(self.variable(following, line, target, depth))
            else:
                out.append("$")
        out.append(text[index:])
        result = "".join(out)
        self.used += len(result)
        if self.used > MAX_EXPANDED_CHARS:
            raise SpecFormatError(
                f"the Makefile's variables expand to more than {MAX_EXPANDED_CHARS} characters"
            )
        return result

    def reference(self, inner: str, line: int, target: str, depth: int) -> str:
        """``$(NAME)``, or a function: ``$(shell cmd)`` and any other one (``$(notdir x)``)
        are values make computes, handed to the shell as ``$(...)`` (computed there too)."""
        if re.fullmatch(_MAKE_NAME, inner):
            return self.variable(inner, line, target, depth)
        function, _, arguments = inner.partition(" ")
        if function == "shell":
            inner = arguments
        return f"$({self.expand(inner, line, target, depth + 1)})"

    def variable(self, name: str, line: int, target: str, depth: int) -> str:
        if name == "@":
            return target
        if name == "CURDIR" and name not in self.values:
            self.notes["$(CURDIR) is read as the Makefile's directory"] = None
            return "."
        if name in self.unknown and name not in self.env:
            raise _MakeUnknown(f"$({name})", self.unknown[name], line)
        if name in self.values:
            value, recursive = self.values[name]
            return self.expand(value, line, target, depth + 1) if recursive else value
        if name in self.env:
            return self.env[name]
        return f"${{{name}}}"  # make expands it to nothing; the shell reader names it


class _MakeUnknown(SpecFormatError):
    """A Make variable whose value is not read here (set under ifeq/ifdef...) was used."""

    def __init__(self, reference: str, why: str, line: int) -> None:
        name = reference[2:-1]
        super().__init__(f"line {line}: {reference} {why}; set {name} in the environment")
        self.reference = reference
        self.why = why


def _make_close(text: str, start: int) -> int:
    """The index closing the ``(`` or ``{`` at ``start``, or -1."""
    opener = text[start]
    closer = ")" if opener == "(" else "}"
    depth = 0
    for index in range(start, len(text)):
        char = text[index]
        if char == opener:
            depth += 1
        elif char == closer:
            depth -= 1
            if depth == 0:
                return index
    return -1


@dataclass
class _Recipe:
    line: int
    target: str
    text: str


def _makefile_recipes(text: str, make: _Make) -> list[_Recipe]:
    """The recipe lines of a Makefile (their ``\\`` continuations kept, as make hands them
    to the shell), its assignments applied to ``make``."""
    lines = text.replace("\r\n", "\n").split("\n")
    recipes: list[_Recipe] = []
    target: str | None = None
    conditional = 0
    index = 0
    while index < len(lines):
        number = index + 1
        if lines[index].startswith("\t") and target is not None:
            parts = [lines[index][1:]]
            while parts[-1].endswith("\\") and index + 1 < len(lines):
                index += 1
                parts.append(lines[index].removeprefix("\t"))
            recipes.append(_Recipe(number, target, "\n".join(parts).lstrip("@-+ \t")))
            index += 1
            continue
        logical = lines[index]
        while logical.endswith("\\") and index + 1 < len(lines):
            index += 1
            logical = logical[:-1] + " " + lines[index].strip()
        index += 1
        statement = re.sub(r"(?<!\\)#.*", "", logical).strip()
        word = statement.split(maxsplit=1)[0] if statement else ""
        if not word:
            continue
        if word in _MAKE_CONDITIONALS or word in ("else", "endif", "define", "endef"):
            conditional = _make_block(word, statement, conditional, number, make)
            target = None if word in ("define", "endef") else target
            continue
        if word in ("include", "-include", "sinclude"):
            make.notes[f"line {number}: `{clipped(statement)}` is not read"] = None
            continue
        target = _make_statement(statement, number, conditional > 0, make, recipes)
    return recipes


def _make_block(word: str, statement: str, conditional: int, line: int, make: _Make) -> int:
    """``ifeq``/``ifdef``... blocks (not evaluated: what they set is unknown) and ``define``."""
    if word in _MAKE_CONDITIONALS:
        return conditional + 1
    if word == "endif":
        return max(0, conditional - 1)
    if word == "define":
        name = statement.split()[1] if len(statement.split()) > 1 else ""
        make.unknown[name] = f"is a multi-line `define` (line {line}), which is not read"
        return conditional + 1
    if word == "endef":
        return max(0, conditional - 1)
    return conditional


def _make_statement(
    statement: str, line: int, conditional: bool, make: _Make, recipes: list[_Recipe]
) -> str | None:
    """An assignment, ``export NAME``, or a rule (its target starts a recipe); the target
    whose recipe follows, if any."""
    assignment = _MAKE_ASSIGNMENT.match(statement)
    if assignment is not None:
        make.assign(assignment, line, conditional)
        return None
    words = statement.split()
    if words[0] in ("export", "unexport"):
        if words[0] == "export":
            make.exported.update(words[1:])
        return None
    rule = _MAKE_RULE.match(statement)
    if rule is None:
        return None
    target = rule.group(1).split()[0]
    rest = rule.group(2)
    inner = _MAKE_ASSIGNMENT.match(rest)
    if inner is not None:  # a target-specific variable: read as the Makefile's own
        make.assign(inner, line, conditional)
        return None
    if ";" in rest:
        recipes.append(_Recipe(line, target, rest.split(";", 1)[1].strip()))
    return target


def _makefile_submission(
    text: str, env: Mapping[str, str], directory: Path, pins: LoopPins | None = None
) -> ScriptCommand:
    """The one job submission of a Makefile's recipes, Make variables expanded."""
    make = _Make(env)
    recipes = _makefile_recipes(text, make)
    scripts: list[tuple[int, str]] = []
    targets: dict[int, str] = {}
    for recipe in recipes:
        if "gcloud" not in recipe.text and "$" not in recipe.text:
            continue
        try:
            expanded = make.expand(recipe.text, recipe.line, recipe.target)
        except SpecFormatError:
            if _SUBMITS.search(recipe.text):
                raise
            continue
        if "gcloud" in expanded:
            if len(scripts) >= _MAKE_MAX_GCLOUD_RECIPES:
                raise SpecFormatError(
                    f"refused: the Makefile has more than {_MAKE_MAX_GCLOUD_RECIPES} recipe "
                    "lines naming gcloud"
                )
            scripts.append((recipe.line, expanded))
            targets[recipe.line] = recipe.target
    shell_env = dict(env)
    for name in make.exported:
        if name in make.values and name not in make.unknown:
            try:
                shell_env[name] = make.variable(name, 0, "", 0)
            except SpecFormatError:
                continue
    found = find_submission_in(scripts, shell_env, directory, pins=pins)
    start = max((line for line in targets if line <= found.line), default=found.line)
    found.notes[1:1] = [
        f"read as a Makefile: the recipe of `{clipped(targets.get(start, '?'))}` (line {start}), "
        "Make variables expanded; each recipe line runs in a shell of its own",
        *make.notes,
    ]
    return found
