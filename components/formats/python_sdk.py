"""Vertex AI SDK calls in Python (a ``.py`` file, a notebook's code cells) → the jobs they run.

The code is parsed with ``ast`` and never executed. What is read (the signatures and defaults
of google-cloud-aiplatform's ``jobs.py``, ``training_jobs.py``, ``hyperparameter_tuning.py``
and ``utils/worker_spec_utils.py``, read 2026-12 in release 1.x):

- ``aiplatform.CustomJob(display_name, worker_pool_specs=[{...}], base_output_dir=, labels=,
  project=, location=)``: the pools as dict literals, snake_case or camelCase;
- ``CustomJob.from_local_script(display_name, script_path, container_uri, args=,
  environment_variables=, replica_count=1, machine_type="n1-standard-4",
  accelerator_type="ACCELERATOR_TYPE_UNSPECIFIED", accelerator_count=0, boot_disk_type=
  "pd-ssd", boot_disk_size_gb=100, reduction_server_*=, tpu_topology=, ...)``: the SDK's
  chief-and-workers pools (one chief replica, ``replica_count - 1`` workers);
- ``CustomTrainingJob(display_name, script_path, container_uri)``,
  ``CustomContainerTrainingJob(display_name, container_uri, command=)`` and
  ``CustomPythonPackageTrainingJob(display_name, python_package_gcs_uri, python_module_name,
  container_uri)``, each ``.run(...)``/``.submit(...)`` with the machine arguments above: one
  job per run;
- ``HyperparameterTuningJob(display_name, custom_job=, metric_spec=, parameter_spec=,
  max_trial_count=, parallel_trial_count=, max_failed_trial_count=0, search_algorithm=None,
  measurement_selection="best")`` with ``hpt.DoubleParameterSpec``/``IntegerParameterSpec``/
  ``CategoricalParameterSpec``/``DiscreteParameterSpec``; the ``CustomJob`` it tunes is its
  trials' job, not a job of its own;
- ``aiplatform.init(project=, location=)``: the project and region of the calls after it.

A job's ``.run(service_account=, network=, timeout=, restart_job_on_worker_restart=,
enable_web_access=)`` adds those. Names: ``from google.cloud import aiplatform [as X]``,
``import google.cloud.aiplatform as X``, ``from google.cloud.aiplatform import CustomJob``,
``from google.cloud.aiplatform import hyperparameter_tuning as hpt``.

Values: literals, and names of simple constants (assigned once, at the top level, to a value
read here: ``MACHINE = "a2-highgpu-1g"``; f-strings and ``+`` of such). Anything else is a
value the code computes (a call, a parameter, a loop variable, a name assigned several times):
the job's display name, trainer arguments and environment values keep its text, with a note;
anywhere else it is one error naming the argument and its line.

Bounds: the text is ``MAX_SPEC_BYTES`` at most (``text.read_text``); a tree of more than
``MAX_NODES`` nodes, a value nested deeper than ``MAX_DEPTH`` (a constant nesting where it is
used), or values that expand past ``MAX_VALUES``, is refused; Python's own
parser refuses deeper nesting than it can hold (said as such, never a traceback).
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic.alias_generators import to_camel

from .._errors import SpecError, SpecFormatError
from ..rules._catalog import Catalog
from .result import FileJob, Format, LoadedSpec
from .text import clipped

__all__ = [
    "KEPT_PATH",
    "MAX_DEPTH",
    "MAX_JOBS",
    "MAX_NODES",
    "MAX_TREE_DEPTH",
    "MAX_VALUES",
    "CodeReader",
    "Computed",
    "SdkJob",
    "loaded_sdk_job",
    "parse_python",
    "read_python_jobs",
    "value_reader",
]

MAX_NODES = 200_000
MAX_DEPTH = 32
MAX_TREE_DEPTH = 200
"""Real code nests a few dozen syntax levels; the readers walk the tree recursively."""
MAX_JOBS = 100
MAX_VALUES = 200_000
"""Values read in all (constants count each time they are used): ``A1 = [A0, A0]``,
``A2 = [A1, A1]``... is a small tree that would expand without end."""

Where = Callable[[int], str]
"""How a line is named in messages: ``line 12``, or ``cell 4, line 2`` in a notebook."""

_SDK_MODULE = "google.cloud.aiplatform"
_TUNING_MODULE = f"{_SDK_MODULE}.hyperparameter_tuning"
_TRAINING_JOBS = frozenset(
    {"CustomTrainingJob", "CustomContainerTrainingJob", "CustomPythonPackageTrainingJob"}
)
_PARAMETER_SPECS = {
    "DoubleParameterSpec": ("doubleValueSpec", ("min", "max", "scale")),
    "IntegerParameterSpec": ("integerValueSpec", ("min", "max", "scale")),
    "CategoricalParameterSpec": ("categoricalValueSpec", ("values",)),
    "DiscreteParameterSpec": ("discreteValueSpec", ("values", "scale")),
}
_SCALES = {"linear": "UNIT_LINEAR_SCALE", "log": "UNIT_LOG_SCALE"}
_SCALES |= {"reverse_log": "UNIT_REVERSE_LOG_SCALE", "unspecified": "SCALE_TYPE_UNSPECIFIED"}
_ALGORITHMS = {"random": "RANDOM_SEARCH", "grid": "GRID_SEARCH"}
_MEASUREMENTS = {"best": "BEST_MEASUREMENT", "last": "LAST_MEASUREMENT"}
_PREBUILT = ("docker.pkg.dev/vertex-ai/", "gcr.io/cloud-aiplatform/")
"""Where ``from_local_script`` takes the image to be a prebuilt one (a Python package spec),
as the SDK tests it; any other image gets a container spec that installs the package."""
_SDK_MODULE_ROOT = "aiplatform_custom_trainer_script"

# Each constructor's positional parameters, in the SDK's order (keywords are read by name).
_POSITIONAL = {
    "CustomJob": ("display_name", "worker_pool_specs", "base_output_dir"),
    "CustomJob.from_local_script": ("display_name", "script_path", "container_uri"),
    "CustomTrainingJob": ("display_name", "script_path", "container_uri", "requirements"),
    "CustomContainerTrainingJob": ("display_name", "container_uri", "command"),
    "CustomPythonPackageTrainingJob": (
        "display_name",
        "python_package_gcs_uri",
        "python_module_name",
        "container_uri",
    ),
    "HyperparameterTuningJob": (
        "display_name",
        "custom_job",
        "metric_spec",
        "parameter_spec",
        "max_trial_count",
        "parallel_trial_count",
    ),
    "init": ("project", "location"),
    "run": (),
}
_MACHINE_DEFAULTS: dict[str, Any] = {
    "replica_count": 1,
    "machine_type": "n1-standard-4",
    "accelerator_type": "ACCELERATOR_TYPE_UNSPECIFIED",
    "accelerator_count": 0,
    "boot_disk_type": "pd-ssd",
    "boot_disk_size_gb": 100,
    "reduction_server_replica_count": 0,
}
KEPT_PATH = re.compile(
    r"(?:^|\.)(?:display_name|displayName|args|environment_variables|env)(?:\[|\.|$)"
)
"""Where a computed value keeps its text: fields whose shape alone the validator checks (a
display name, trainer arguments, environment values; in a pool dict too)."""
_LEFT_OUT = frozenset(
    {
        "project",
        "location",
        "base_output_dir",
        "aiplatform.init(project=)",
        "aiplatform.init(location=)",
    }
)
"""Where a computed value is left out, with a note: the stack's project and region, and the
output directory the stack chooses, stand in for it (samples compute their project)."""
_MUTATORS = frozenset({"append", "extend", "insert", "update", "setdefault", "pop", "clear"})
_MUTATORS |= {"remove", "popitem"}


@dataclass(frozen=True)
class Computed:
    """A value the code computes: what it is (``a call to f()``) and its line."""

    what: str
    line: int
    text: str


@dataclass
class _Parameter:
    kind: str
    arguments: dict[str, Any]
    line: int


@dataclass
class _Object:
    """An SDK object the code constructs: its class, arguments and the runs it gets."""

    kind: str
    arguments: dict[str, Any]
    line: int
    place: dict[str, Any]
    runs: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    tuned: bool = False
    error: str | None = None


@dataclass
class SdkJob:
    """One job the code runs: a name for messages, its line, and its document (a
    ``CustomJob`` or ``HyperparameterTuningJob`` in the API's camelCase)."""

    name: str
    line: int
    kind: Literal["custom-job", "hyperparameter-tuning-job"]
    document: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    """Why the job cannot be read (``document`` is then empty)."""


def read_python_jobs(
    source: str | ast.Module,
    origin: str,
    where: Where = lambda n: f"line {n}",
    env: Mapping[str, str] | None = None,
) -> list[SdkJob]:
    """Every job the Python code runs through the Vertex AI SDK, in source order; raises
    ``SpecFormatError`` (one line, naming where) for what cannot be read. ``env``: the
    environment ``os.environ.get("NAME", default)`` and ``os.getenv`` read (none: the
    defaults)."""
    tree = parse_python(source, origin, where) if isinstance(source, str) else source
    reader = CodeReader(tree, origin, where, env or {})
    reader.visit(tree)
    return reader.jobs()


def value_reader(module: ast.Module, origin: str, where: Where) -> CodeReader:
    """The reader of the module's values (its constants, imports and SDK objects, as they
    stand at its end), for text that uses them: a notebook's ``!`` lines."""
    reader = CodeReader(module, origin, where)
    reader.visit(module)
    return reader


def parse_python(text: str, origin: str, where: Where = lambda n: f"line {n}") -> ast.Module:
    """``text`` parsed (never run), within ``MAX_NODES``; ``SpecFormatError`` otherwise."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        line = where(exc.lineno or 0)
        raise SpecFormatError(f"{origin}: {line}: not valid Python: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        # Python's parser refuses (or runs out on) nesting deeper than it can hold.
        what = "nested too deeply for Python's parser" if not isinstance(exc, ValueError) else exc
        raise SpecFormatError(f"{origin}: refused: {what}") from None
    check_size(tree, origin)
    return tree


def check_size(tree: ast.AST, origin: str) -> None:
    """Refuse a tree of more than ``MAX_NODES`` nodes, or nested deeper than
    ``MAX_TREE_DEPTH`` (``1+1+...`` parses, then any recursive walk of it overflows); walked
    without recursion."""
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise SpecFormatError(f"{origin}: refused: more than {MAX_NODES:,} Python syntax nodes")
        if depth > MAX_TREE_DEPTH:
            line = getattr(node, "lineno", 0)
            raise SpecFormatError(
                f"{origin}: refused: Python nested deeper than {MAX_TREE_DEPTH} levels "
                f"(line {line})"
            )
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


class CodeReader(ast.NodeVisitor):
    """One pass over the code in source order: imports, constants, SDK calls (the reader of
    values ``pulumi_programs`` extends for pulumi-gcp's input classes)."""

    def __init__(
        self, tree: ast.Module, origin: str, where: Where, env: Mapping[str, str] | None = None
    ) -> None:
        self.origin = origin
        self.where = where
        self.env = env or {}
        self.environment_notes: dict[str, None] = {}
        self.aliases: dict[str, str] = {}
        self.constants, self.unknown = _constants(tree)
        self.resolving: set[str] = set()
        self.place: dict[str, Any] = {}
        self.objects: list[_Object] = []
        self.named: dict[str, _Object] = {}
        self.by_call: dict[int, _Object] = {}
        self.notes: list[str] = []
        self.values_read = 0

    # --- names -------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == "os":
                self.aliases[alias.asname or "os"] = "os"
            if alias.name == _SDK_MODULE or alias.name.startswith(f"{_SDK_MODULE}."):
                if alias.asname:
                    self.aliases[alias.asname] = alias.name
                else:  # `import google.cloud.aiplatform`: used as the dotted name
                    self.aliases["google"] = "google"

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if full in _ENVIRONMENT_READS or full == "os.environ":
                self.aliases[alias.asname or alias.name] = full
            if full == _SDK_MODULE or full.startswith(f"{_SDK_MODULE}."):
                self.aliases[alias.asname or alias.name] = full

    def full_name(self, node: ast.AST) -> str | None:
        """The dotted name ``node`` stands for when it is (in) the SDK's module or ``os``,
        or None."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            inner = self.full_name(node.value)
            return f"{inner}.{node.attr}" if inner else None
        return None

    def qualified(self, node: ast.AST) -> str | None:
        """The SDK name a call's function stands for (``CustomJob.from_local_script``,
        ``DoubleParameterSpec``, ``init``), or None."""
        full = self.full_name(node)
        if full is None or not (full == _SDK_MODULE or full.startswith(f"{_SDK_MODULE}.")):
            return None
        name = full[len(_SDK_MODULE) :].lstrip(".")
        for prefix in ("hyperparameter_tuning.", "jobs.", "training_jobs.", "aiplatform."):
            name = name.removeprefix(prefix)
        return name

    # --- values ------------------------------------------------------------------------

    def value(self, node: ast.AST | None, depth: int = 0) -> Any:
        """A literal's value, a constant's, or ``Computed``."""
        if node is None:
            return None
        self.count(node, depth)
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(item, depth + 1) for item in node.elts]
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for key, item in zip(node.keys, node.values, strict=True):
                if key is None:
                    return self.computed(node, "a dict unpacked with **")
                name = self.value(key, depth + 1)
                if isinstance(name, Computed):
                    return name
                out[name] = self.value(item, depth + 1)
            return out
        if isinstance(node, ast.Name):
            return self.name(node, depth)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.value(node.operand, depth + 1)
            return -inner if isinstance(inner, (int, float)) else self.computed(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left, depth + 1), self.value(node.right, depth + 1)
            if isinstance(left, str) and isinstance(right, str):
                return left + right
            inner = next((v for v in (left, right) if isinstance(v, Computed)), None)
            return self.computed(node, inner.what if inner is not None else None)
        if isinstance(node, ast.JoinedStr):
            return self.fstring(node, depth)
        if isinstance(node, ast.Attribute):
            # aip.gapic.AcceleratorType.NVIDIA_TESLA_T4: the enum's name is its value.
            if isinstance(node.value, ast.Attribute) and node.value.attr.endswith("Type"):
                return node.attr
            if node.attr == "name":  # TRAIN_GPU.name, TRAIN_GPU being such an enum
                inner = self.value(node.value, depth + 1)
                if isinstance(inner, str):
                    return inner
            return self.computed(node, f"the attribute {clipped(ast.unparse(node))}")
        if _reads_environment(node, self.full_name):
            return self.environment(node, depth)
        if isinstance(node, ast.Call):
            kind = self.qualified(node.func)
            if kind is not None and kind in _PARAMETER_SPECS:
                arguments = self.arguments(node, _PARAMETER_SPECS[kind][1])
                return _Parameter(kind, arguments, line)
            found = self.by_call.get(id(node))
            if found is not None:
                return found
            return self.computed(node, f"a call to {clipped(ast.unparse(node.func))}()")
        return self.computed(node)

    def count(self, node: ast.AST, depth: int) -> None:
        """One more value read, at ``depth``: refused past ``MAX_DEPTH`` or ``MAX_VALUES``."""
        line = getattr(node, "lineno", 0)
        if depth > MAX_DEPTH:
            raise self.error(line, f"a value nested deeper than {MAX_DEPTH} levels")
        self.values_read += 1
        if self.values_read > MAX_VALUES:
            raise self.error(
                line, f"refused: the code's values expand to more than {MAX_VALUES:,} items"
            )

    def environment(self, node: ast.AST, depth: int) -> Any:
        """``os.environ.get("NAME", default)``, ``os.getenv``, ``os.environ["NAME"]``: the
        environment's value of NAME, else its default (with a note), else ``Computed``
        naming the variable."""
        name_node: ast.AST | None = node.slice if isinstance(node, ast.Subscript) else None
        default: ast.AST | None = None
        if isinstance(node, ast.Call):
            name_node = node.args[0] if node.args else None
            default = node.args[1] if len(node.args) > 1 else None
            named = (k.value for k in node.keywords if k.arg in ("default", "value"))
            default = next(named, default)
        name = self.value(name_node, depth + 1)
        if not isinstance(name, str):
            return self.computed(node, "an environment variable whose name the code computes")
        line = self.where(getattr(node, "lineno", 0))
        if name in self.env:
            self.environment_notes[f"{line}: {name} read from the environment"] = None
            return self.env[name]
        if default is None:
            return self.computed(
                node, f"the environment variable {name}, which is not set (set {name})"
            )
        value = self.value(default, depth + 1)
        if not isinstance(value, Computed):
            self.environment_notes[
                f"{line}: {name} is not set in the environment: its default "
                f"{clipped(str(value))!r} is used"
            ] = None
        return value

    def fstring(self, node: ast.JoinedStr, depth: int) -> Any:
        parts: list[str] = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
                continue
            assert isinstance(part, ast.FormattedValue)
            inner = self.value(part.value, depth + 1)
            if isinstance(inner, Computed):
                nested = inner.what.startswith("an f-string")
                return self.computed(node, inner.what if nested else f"an f-string of {inner.what}")
            if part.format_spec is not None or part.conversion not in (-1, ord("s")):
                return self.computed(node, "an f-string with a format")
            parts.append(str(inner))
        return "".join(parts)

    def name(self, node: ast.Name, depth: int = 0) -> Any:
        if node.id in self.named:
            return self.named[node.id]
        if node.id in self.constants and node.id not in self.resolving:
            self.resolving.add(node.id)
            try:  # a constant's value nests where it is used: one depth bound for both
                return self.value(self.constants[node.id], depth + 1)
            finally:
                self.resolving.discard(node.id)
        why = self.unknown.get(node.id, "a name not assigned in this code")
        return self.computed(node, f"{node.id}, {why}")

    def computed(self, node: ast.AST, what: str | None = None) -> Computed:
        text = clipped(ast.unparse(node))
        return Computed(what or f"the expression {text}", getattr(node, "lineno", 0), text)

    def arguments(self, call: ast.Call, positional: tuple[str, ...]) -> dict[str, Any]:
        """A call's arguments by name (positional ones by the SDK's order)."""
        found: dict[str, Any] = {}
        for index, argument in enumerate(call.args):
            if isinstance(argument, ast.Starred) or index >= len(positional):
                raise self.error(
                    call.lineno,
                    f"{ast.unparse(call.func)}() is given its arguments "
                    "by position past the documented ones: give them by name",
                )
            found[positional[index]] = self.value(argument)
        for keyword in call.keywords:
            if keyword.arg is None:
                raise self.error(
                    call.lineno,
                    f"{ast.unparse(call.func)}(**...) takes its "
                    "arguments from a computed mapping: give them by name",
                )
            found[keyword.arg] = self.value(keyword.value)
        return found

    def error(self, line: int, message: str) -> SpecFormatError:
        return SpecFormatError(f"{self.origin}: {self.where(line)}: {message}")

    # --- calls ---------------------------------------------------------------------------

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        made = self.by_call.get(id(node.value))
        if made is not None and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.named[node.targets[0].id] = made

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)  # arguments first: an inline CustomJob(...) of a tuning job
        kind = self.qualified(node.func)
        if kind == "init":
            arguments = self.arguments(node, _POSITIONAL["init"])
            for key, name in (("project", "project"), ("location", "region")):
                if key in arguments:
                    self.place[name] = (arguments[key], node.lineno)
            return
        if kind is not None and kind in _POSITIONAL and kind != "run":
            try:
                arguments, error = self.arguments(node, _POSITIONAL[kind]), None
            except SpecFormatError as exc:  # this job's; the file's other jobs are read
                arguments, error = {}, str(exc)
            made = _Object(kind, arguments, node.lineno, dict(self.place), error=error)
            if len(self.objects) >= MAX_JOBS:
                raise self.error(node.lineno, f"refused: more than {MAX_JOBS} Vertex AI jobs")
            self.objects.append(made)
            self.by_call[id(node)] = made
            return
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("run", "submit"):
            target = (
                self.value(func.value) if isinstance(func.value, (ast.Name, ast.Call)) else None
            )
            if isinstance(target, _Object):
                try:
                    target.runs.append((node.lineno, self.arguments(node, ())))
                except SpecFormatError as exc:
                    target.error = str(exc)

    # --- jobs ----------------------------------------------------------------------------

    def jobs(self) -> list[SdkJob]:
        for made in self.objects:
            tuned = made.arguments.get("custom_job")
            if made.kind == "HyperparameterTuningJob" and isinstance(tuned, _Object):
                tuned.tuned = True
        found: list[SdkJob] = []
        for made in self.objects:
            if made.tuned and not made.runs:  # only the trials' job of a tuning job
                continue
            if made.kind in _TRAINING_JOBS:
                if not made.runs:
                    self.notes.append(
                        f"{self.where(made.line)}: {made.kind} is constructed but never run: "
                        "its machines are given to run(), so it is not read"
                    )
                found.extend(self.job(made, run) for run in made.runs)
            else:
                found.append(self.job(made, made.runs[-1] if made.runs else None))
        return found

    def job(self, made: _Object, run: tuple[int, dict[str, Any]] | None) -> SdkJob:
        """The job of one constructor (and run); a job that cannot be read carries its
        error, so the other jobs of the file are still judged."""
        kind: Literal["custom-job", "hyperparameter-tuning-job"] = (
            "hyperparameter-tuning-job" if made.kind == "HyperparameterTuningJob" else "custom-job"
        )
        # A training job is one job per run(); any other is its constructor's.
        line = run[0] if run is not None and made.kind in _TRAINING_JOBS else made.line
        name = f"{self.where(line)}: {made.kind}"
        display = made.arguments.get("display_name")
        if isinstance(display, str) and display:
            name += f" {clipped(display)}"
        if made.error is not None:
            return SdkJob(name, made.line, kind, {}, error=made.error)
        builder = _Job(self, made, run)
        try:
            document = builder.document()
        except SpecFormatError as exc:
            return SdkJob(name, made.line, kind, {}, error=str(exc))
        notes = [f"read from {name} (the Vertex AI SDK, read as code, never run)"]
        notes += list(dict.fromkeys(builder.notes))  # once each, in order
        notes += list(self.environment_notes)
        return SdkJob(name, made.line, kind, document, notes)


_ENVIRONMENT_READS = frozenset({"os.environ.get", "os.getenv"})
"""The calls that read an environment variable (``os.environ["NAME"]`` is read too)."""


def _reads_environment(node: ast.AST, full_name: Callable[[ast.AST], str | None]) -> bool:
    """Whether ``node`` reads an environment variable (``os.environ["NAME"]`` or a call of
    ``_ENVIRONMENT_READS``), ``full_name`` naming what a name stands for."""
    if isinstance(node, ast.Subscript):
        return full_name(node.value) == "os.environ"
    return isinstance(node, ast.Call) and full_name(node.func) in _ENVIRONMENT_READS


def _constants(tree: ast.Module) -> tuple[dict[str, ast.expr], dict[str, str]]:
    """Names assigned once, at the top level, to an expression (each read where used), and
    why every other assigned name is not a constant."""
    counts: dict[str, int] = {}
    unknown: dict[str, str] = {}
    changed: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            base = _base_name(node)
            if base is not None:  # `pools[0]["replica_count"] = 2`: no longer its literal
                changed.setdefault(base, f"changed by the code (line {node.lineno})")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATORS
        ):
            base = _base_name(node.func.value)
            if base is not None:
                what = f"{base}.{node.func.attr}(...)"
                changed.setdefault(base, f"changed by the code (line {node.lineno}: {what})")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for argument in ast.walk(node.args):
                if isinstance(argument, ast.arg):
                    owner = getattr(node, "name", "a lambda")
                    unknown[argument.arg] = f"a parameter of {owner} (line {node.lineno})"
    constants: dict[str, ast.expr] = {}
    for statement in _top_level(tree.body):
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        for target, assigned in _pairs(targets, value):
            if counts.get(target.id, 0) == 1:
                constants[target.id] = assigned
            else:
                unknown[target.id] = f"assigned {counts[target.id]} times"
    for name, why in changed.items():
        if constants.pop(name, None) is not None:
            unknown[name] = why
    for name in counts:
        if name not in constants and name not in unknown:
            unknown[name] = "set by the code as it runs (a loop, a function, a with)"
    return constants, unknown


def _pairs(targets: list[ast.expr], value: ast.expr | None) -> Iterator[tuple[ast.Name, ast.expr]]:
    """Each name an assignment sets and the expression it gets: ``A = x``, and ``A, B = x, y``
    (the SDK samples' ``TRAIN_GPU, TRAIN_NGPU = (AcceleratorType.NVIDIA_TESLA_T4, 1)``)."""
    if value is None:
        return
    for target in targets:
        if isinstance(target, ast.Name):
            yield target, value
        elif (
            isinstance(target, (ast.Tuple, ast.List))
            and isinstance(value, (ast.Tuple, ast.List))
            and len(target.elts) == len(value.elts)
        ):
            for inner, item in zip(target.elts, value.elts, strict=True):
                if isinstance(inner, ast.Name) and not isinstance(item, ast.Starred):
                    yield inner, item


def _base_name(node: ast.expr) -> str | None:
    """The name at the root of ``a[0]["b"].c``, or None."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The module's statements, and those of a top-level ``if __name__ == "__main__":``."""
    for statement in body:
        if isinstance(statement, ast.If) and "__name__" in ast.unparse(statement.test):
            yield from statement.body
        else:
            yield statement


class _Job:
    """The document of one SDK job, its notes, and errors naming computed arguments."""

    def __init__(
        self, reader: CodeReader, made: _Object, run: tuple[int, dict[str, Any]] | None
    ) -> None:
        self.reader = reader
        self.made = made
        self.run_line, self.run = run if run is not None else (made.line, {})
        self.notes: list[str] = []

    def literal(self, name: str, value: Any, line: int | None = None) -> Any:
        """``value`` with no computed part, or an error naming the argument (a kept field:
        its text, with a note)."""
        found = next(_computed_in(value, name), None)
        if found is None:
            return value
        path, computed = found
        if name in _LEFT_OUT:
            self.notes.append(
                f"{path} is computed by the code ({self.reader.where(computed.line)}: "
                f"{computed.what}): left out, so the stack's "
                + ("output directory" if "output" in name else "project or region")
                + " applies"
            )
            return None
        if KEPT_PATH.search(path):
            self.notes.append(
                f"{path} is computed by the code ({self.reader.where(computed.line)}: "
                f"{computed.what}): kept as written ({computed.text})"
            )
            return _kept(value)
        raise self.reader.error(
            computed.line or line or self.made.line,
            f"{path} is computed by the code ({computed.what}): give it as a literal",
        )

    def get(self, name: str, default: Any = None) -> Any:
        """An argument of the run (machine arguments) or else of the constructor."""
        if name in self.run:
            return self.literal(name, self.run[name], self.run_line)
        if name in self.made.arguments:
            return self.literal(name, self.made.arguments[name], self.made.line)
        return default

    def document(self) -> dict[str, Any]:
        kind = self.made.kind
        if kind == "HyperparameterTuningJob":
            return self.tuning()
        if kind == "CustomJob":
            pools = self.get("worker_pool_specs")
            if not isinstance(pools, list) or not all(isinstance(p, dict) for p in pools):
                raise self.reader.error(
                    self.made.line, "CustomJob's worker_pool_specs must be a list of dicts"
                )
            job_spec: dict[str, Any] = {"workerPoolSpecs": [_camel(p) for p in pools]}
        else:
            job_spec = {"workerPoolSpecs": self.pools()}
        output = self.get("base_output_dir")
        if output is not None:
            job_spec["baseOutputDirectory"] = {"outputUriPrefix": output}
        job_spec.update(self.run_settings())
        document: dict[str, Any] = {"jobSpec": job_spec}
        self.common(document)
        return document

    def common(self, document: dict[str, Any]) -> None:
        display = self.get("display_name")
        if display is not None:
            document["displayName"] = display
        labels = self.get("labels")
        if labels is not None:
            document["labels"] = labels
        for key, name in (("project", "project"), ("location", "region")):
            value = self.get(key)
            if value is None and name in self.made.place:
                value, line = self.made.place[name]
                value = self.literal(f"aiplatform.init({key}=)", value, line)
                if value is not None:
                    where = self.reader.where(line)
                    self.notes.append(f"{name} {value} from aiplatform.init ({where})")
            if value is not None:
                document[name] = value

    def run_settings(self) -> dict[str, Any]:
        """What ``run()`` adds to the job's spec."""
        settings: dict[str, Any] = {}
        for key, field_name in (("service_account", "serviceAccount"), ("network", "network")):
            value = self.get(key)
            if value is not None:
                settings[field_name] = value
        scheduling: dict[str, Any] = {}
        timeout = self.get("timeout")
        if timeout is not None:
            scheduling["timeout"] = f"{timeout}s"
        if self.get("restart_job_on_worker_restart"):
            scheduling["restartJobOnWorkerRestart"] = True
        if scheduling:
            settings["scheduling"] = scheduling
        if self.get("enable_web_access"):
            settings["enableWebAccess"] = True
        return settings

    def pools(self) -> list[dict[str, Any]]:
        """The SDK's chief-and-workers pools (``_DistributedTrainingSpec.chief_worker_pool``)."""
        machine = {key: self.get(key, default) for key, default in _MACHINE_DEFAULTS.items()}
        count = machine["replica_count"]
        if not isinstance(count, int) or isinstance(count, bool):
            raise self.reader.error(
                self.run_line, f"replica_count must be a whole number, got {count!r}"
            )
        spec: dict[str, Any] = {"machineType": machine["machine_type"]}
        accelerator, gpus = machine["accelerator_type"], machine["accelerator_count"]
        if accelerator not in (None, "ACCELERATOR_TYPE_UNSPECIFIED") and gpus:
            spec |= {"acceleratorType": accelerator, "acceleratorCount": gpus}
        elif accelerator not in (None, "ACCELERATOR_TYPE_UNSPECIFIED"):
            self.notes.append(
                f"warning: accelerator_type={accelerator} with accelerator_count={gpus!r} "
                "(the default is 0): the SDK leaves the accelerator out, so the job runs "
                "without it; give accelerator_count"
            )
        elif gpus:
            self.notes.append(
                f"warning: accelerator_count={gpus} without accelerator_type: the SDK leaves "
                "the accelerator out, so the job runs without it; give accelerator_type"
            )
        topology = self.get("tpu_topology")
        if topology is not None:
            spec["tpuTopology"] = topology
        disk = {
            "bootDiskType": machine["boot_disk_type"],
            "bootDiskSizeGb": machine["boot_disk_size_gb"],
        }
        software = self.software()
        pool = {"machineSpec": spec, "replicaCount": 1, "diskSpec": disk, **software}
        pools: list[dict[str, Any]] = [pool] if count > 0 else []
        if count > 1:
            pools.append({**pool, "replicaCount": count - 1})
        servers = machine["reduction_server_replica_count"]
        if isinstance(servers, int) and servers > 0 and pools:
            if len(pools) == 1:
                pools.append({})
            pools.append(
                {
                    "machineSpec": {
                        "machineType": self.get("reduction_server_machine_type", "n1-highcpu-16")
                    },
                    "replicaCount": servers,
                    "diskSpec": disk,
                    "containerSpec": {"imageUri": self.get("reduction_server_container_uri")},
                }
            )
        return pools

    def software(self) -> dict[str, Any]:
        kind = self.made.kind
        args = self.get("args")
        env = self.get("environment_variables")
        env_list = (
            [{"name": k, "value": v} for k, v in env.items()] if isinstance(env, dict) else None
        )
        image = self.get("container_uri")
        extras: dict[str, Any] = {}
        if args is not None:
            extras["args"] = [str(a) for a in args] if isinstance(args, list) else args
        if env_list is not None:
            extras["env"] = env_list
        if kind == "CustomContainerTrainingJob":
            container = {"imageUri": image, **extras}
            command = self.get("command")
            if command is not None:
                container["command"] = command
            self.notes.append(
                f"{kind} runs its CustomJob through a training pipeline: read as that "
                "CustomJob (a model upload it may do is not part of it)"
            )
            return {"containerSpec": container}
        if kind == "CustomPythonPackageTrainingJob":
            uris = self.get("python_package_gcs_uri")
            return {
                "pythonPackageSpec": {
                    "executorImageUri": image,
                    "packageUris": uris if isinstance(uris, list) else [uris],
                    "pythonModule": self.get("python_module_name"),
                    **extras,
                }
            }
        return self._script_software(kind, image, extras, env_list)

    def _script_software(
        self, kind: str, image: Any, extras: dict[str, Any], env_list: list[Any] | None
    ) -> dict[str, Any]:
        """A script job's software: a local package of its folder, or the SDK's own command."""
        script = self.get("script_path")
        if not isinstance(script, str) or not script:
            raise self.reader.error(self.made.line, f"{kind}: script_path must be a path")
        folder, _, file_name = script.rpartition("/")
        stem = file_name.removesuffix(".py")
        prebuilt = isinstance(image, str) and any(p in image for p in _PREBUILT)
        if kind == "CustomTrainingJob" or prebuilt:
            self.notes.append(
                f"script_path={script}: the SDK packages it (as {_SDK_MODULE_ROOT}.{stem}) and "
                "stages it in the staging bucket; read as a local package of its folder "
                f"running {stem}, which TrainingJob packages and stages the same way"
            )
            return {
                "pythonPackageSpec": {
                    "executorImageUri": image,
                    "packageUris": [folder or "."],
                    "pythonModule": stem,
                    **extras,
                }
            }
        # Not a prebuilt image: the SDK installs the staged package in it and runs it.
        command = f"pip3 install -q --user STAGED_PACKAGE && python3 -m {_SDK_MODULE_ROOT}.{stem}"
        self.notes.append(
            f"container_uri={image} is not a prebuilt training image: the SDK runs "
            f"`{command}` in it (STAGED_PACKAGE: script_path={script} packaged into the "
            "staging bucket)"
        )
        container = {"imageUri": image, "command": ["sh", "-c", command]}
        if env_list is not None:
            container["env"] = env_list
        return {"containerSpec": container}

    def tuning(self) -> dict[str, Any]:
        tuned = self.made.arguments.get("custom_job")
        if not isinstance(tuned, _Object):
            what = tuned.what if isinstance(tuned, Computed) else repr(tuned)
            raise self.reader.error(
                self.made.line,
                f"HyperparameterTuningJob's custom_job is not a CustomJob read here ({what}): "
                "give it a CustomJob(...) or CustomJob.from_local_script(...) of this code",
            )
        trial = _Job(self.reader, tuned, None)
        trial_spec = trial.document()
        self.notes.extend(trial.notes)
        document: dict[str, Any] = {"trialJobSpec": trial_spec["jobSpec"]}
        for key in ("max_trial_count", "parallel_trial_count", "max_failed_trial_count"):
            value = self.get(key)
            if value is not None:
                document[to_camel(key)] = value
        study: dict[str, Any] = {"metrics": self.metrics(), "parameters": self.parameters()}
        algorithm = self.get("search_algorithm")
        if algorithm is not None:
            study["algorithm"] = _ALGORITHMS.get(str(algorithm), algorithm)
        selection = self.get("measurement_selection", "best")
        if selection is not None:
            study["measurementSelectionType"] = _MEASUREMENTS.get(str(selection), selection)
        document["studySpec"] = study
        self.common(document)
        return document

    def metrics(self) -> list[dict[str, Any]]:
        metrics = self.get("metric_spec")
        if not isinstance(metrics, dict):
            raise self.reader.error(self.made.line, "metric_spec must be a dict of metric: goal")
        return [{"metricId": k, "goal": str(v).upper()} for k, v in metrics.items()]

    def parameters(self) -> list[dict[str, Any]]:
        specs = self.made.arguments.get("parameter_spec")
        if not isinstance(specs, dict):
            raise self.reader.error(self.made.line, "parameter_spec must be a dict of name: spec")
        found = []
        for name, spec in specs.items():
            where = f"parameter_spec[{name!r}]"
            if not isinstance(spec, _Parameter):
                what = spec.what if isinstance(spec, Computed) else type(spec).__name__
                raise self.reader.error(
                    self.made.line, f"{where} is not an hpt.*ParameterSpec(...) ({what})"
                )
            key, fields = _PARAMETER_SPECS[spec.kind]
            arguments = {
                k: self.literal(f"{where}.{k}", v, spec.line) for k, v in spec.arguments.items()
            }
            if "conditional_parameter_spec" in arguments:
                raise self.reader.error(spec.line, f"{where}: conditional parameters are not read")
            value: dict[str, Any] = {}
            for argument in fields:
                if argument == "scale" or argument not in arguments:
                    continue
                value[
                    "minValue"
                    if argument == "min"
                    else "maxValue"
                    if argument == "max"
                    else "values"
                ] = arguments[argument]
            parameter: dict[str, Any] = {"parameterId": name, key: value}
            if "scale" in arguments:
                parameter["scaleType"] = _SCALES.get(str(arguments["scale"]), arguments["scale"])
            found.append(parameter)
        return found


def _computed_in(value: Any, path: str) -> Iterator[tuple[str, Computed]]:
    """Each computed part of ``value``, with its path (``worker_pool_specs[0].replica_count``)."""
    if isinstance(value, Computed):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _computed_in(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _computed_in(item, f"{path}[{index}]")


def _kept(value: Any) -> Any:
    if isinstance(value, Computed):
        return value.text
    if isinstance(value, dict):
        return {k: _kept(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_kept(v) for v in value]
    return value


def _camel(value: Any) -> Any:
    """A pool dict in the API's camelCase (snake_case keys renamed; env lists kept)."""
    if isinstance(value, dict):
        return {
            to_camel(k) if isinstance(k, str) and "_" in k else k: _camel(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def loaded_sdk_job(
    sdk: SdkJob,
    origin: str,
    catalog: Catalog,
    region: str | None,
    from_document: Callable[..., LoadedSpec],
    fmt: Format = "python-sdk",
) -> FileJob:
    """An SDK job read as the document it is (``from_document``:
    ``formats.load.spec_from_document``, passed in: load reads Python through here)."""
    if sdk.error is not None:
        return FileJob(sdk.name, error=SpecFormatError(sdk.error))
    try:
        loaded = from_document(
            sdk.document, f"{origin}: {sdk.name}", catalog=catalog, region=region, tuning=True
        )
    except SpecError as exc:
        return FileJob(sdk.name, error=exc)
    loaded.notes[:0] = sdk.notes
    return FileJob(sdk.name, loaded=dataclasses.replace(loaded, format=fmt))
