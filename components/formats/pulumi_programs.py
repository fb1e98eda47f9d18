"""pulumi-gcp ``AiCustomJob`` resources constructed in a Pulumi Python or TypeScript program,
read as the ``CustomJob`` each creates (a Pulumi YAML program's: ``migration``).

Neither program is run, imported or evaluated:

- Python (``.py``) is parsed with ``ast`` and read as ``python_sdk`` reads the Vertex AI SDK
  (its literals, its top-level constants, its naming of what the code computes):
  ``gcp.vertex.AiCustomJob("name", display_name=, location=, project=, labels=,
  job_spec=gcp.vertex.AiCustomJobJobSpecArgs(worker_pool_specs=[...]))``, each ``...Args(...)``
  read as the mapping of its keywords, or the dict form (``job_spec={"worker_pool_specs":
  [...]}``), or one ``AiCustomJobArgs(...)`` (``args=``); with ``import pulumi_gcp as gcp``,
  ``from pulumi_gcp import vertex`` or ``from pulumi_gcp.vertex import AiCustomJob``.
- TypeScript or JavaScript (``.ts``, ``.js``, ``.mts``...) is read by a small tokenizer and
  a reader of object literals: ``new gcp.vertex.AiCustomJob("name", { displayName: ...,
  jobSpec: { workerPoolSpecs: [...] } })``, with ``import * as gcp from "@pulumi/gcp"``, ``import {
  vertex } from "@pulumi/gcp"`` or ``require("@pulumi/gcp")``. Values: strings in any quotes
  (a template without ``${}``), numbers, booleans, ``null``/``undefined``, arrays, objects
  (comments and trailing commas allowed), and names of top-level ``const``s of such values.

snake_case fields become the API's camelCase (a label's key is kept as written). A value the
program computes (a variable, a call, a template with ``${}``, ``config.require(...)``, another
resource's output, an ``Output``) is named as such: in a display name, trainer arguments or
environment values its text is kept, with a note; in a label, the project, location, output
directory, service account, network, encryption key or Tensorboard it is left out, with a note
(the stack's own applies; programs take these from the stack, config or another resource);
anywhere else it is one error line naming the field and its line.

Each ``AiCustomJob`` is a job of its own, named by its line and resource name
(``load.load_jobs``). Bounds: the text is ``MAX_SPEC_BYTES`` (``text.read_text``);
``MAX_TOKENS`` tokens of TypeScript (Python: ``python_sdk.MAX_NODES`` syntax nodes); values
nested deeper than ``MAX_DEPTH`` or expanding past ``MAX_VALUES`` are refused; ``MAX_JOBS``
resources at most. Every step is linear in the text, so the time is bounded with it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from pydantic.alias_generators import to_camel

from .._errors import SpecFormatError
from .migration import RESOURCE, as_custom_job
from .python_sdk import (
    KEPT_PATH,
    MAX_DEPTH,
    MAX_JOBS,
    MAX_VALUES,
    CodeReader,
    Computed,
    SdkJob,
    Where,
)
from .text import clipped

__all__ = [
    "MAX_TOKENS",
    "RESOURCE",
    "constructs_ai_custom_job",
    "read_python_programs",
    "read_typescript_program",
]

MAX_TOKENS = 200_000
"""More tokens than a program declaring a few jobs has; a larger file is refused, not read."""

_LEFT_OUT = frozenset(
    {
        "project",
        "location",
        "baseOutputDirectory",
        "serviceAccount",
        "network",
        "encryptionSpec",
        "tensorboard",
        "experiment",
        "experimentRun",
    }
)
"""Fields (camelCase) where a computed value is left out, with a note: programs take them
from config or another resource (a bucket's URL, a service account's email), and the stack
has its own."""
_CONFIG_READS = re.compile(r"^(?:require|get)(?:_?[A-Za-z]*)$")
"""The methods of a ``pulumi.Config``: ``require``, ``get_int``, ``requireNumber``..."""


# --- what both languages share ---------------------------------------------------------------


def _job(
    origin: str,
    where: Where,
    line: int,
    resource_name: Any,
    arguments: dict[str, Any],
    language: str,
) -> SdkJob:
    """The ``CustomJob`` of one ``AiCustomJob(resource_name, arguments)`` constructed at
    ``line``; a computed value anywhere the validator needs a literal is the job's error."""
    title = resource_name.text if isinstance(resource_name, Computed) else resource_name
    name = f"{where(line)}: {RESOURCE} {clipped(str(title))}"
    notes = [f"read from {name} (a pulumi-gcp resource of a Pulumi {language} program, never run)"]
    if isinstance(resource_name, Computed):
        notes.append(f"the resource name is computed by the program ({resource_name.what})")
    try:
        settled = _settled(arguments, "", origin, where, notes)
        if not isinstance(settled.get("jobSpec", settled.get("job_spec")), dict):
            raise SpecFormatError(
                f"{origin}: {where(line)}: {RESOURCE} {title} has no job spec: give "
                + ("job_spec=" if language == "Python" else "jobSpec:")
                + " with its worker pools"
            )
        document = as_custom_job(settled, f"{RESOURCE} {title}", notes)
    except SpecFormatError as exc:
        return SdkJob(name, line, "custom-job", {}, error=str(exc))
    return SdkJob(name, line, "custom-job", document, notes)


def _settled(value: Any, path: str, origin: str, where: Where, notes: list[str]) -> Any:
    """``value`` with each computed part kept as its text, left out (None) or refused."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            settled = _settled(item, f"{path}.{key}" if path else str(key), origin, where, notes)
            if settled is not None:
                out[key] = settled
        return out
    if isinstance(value, list):
        items = (_settled(v, f"{path}[{i}]", origin, where, notes) for i, v in enumerate(value))
        return [item for item in items if item is not None]
    if not isinstance(value, Computed):
        return value
    fields = {to_camel(part) for part in re.split(r"[.\[\]]+", path) if part}
    said = f"{path} is computed by the program ({where(value.line)}: {value.what})"
    if path.startswith("labels") or fields & _LEFT_OUT:
        notes.append(f"{said}: left out, so the stack's own applies")
        return None
    if KEPT_PATH.search(path):
        notes.append(f"{said}: kept as written ({value.text})")
        return value.text
    raise SpecFormatError(
        f"{origin}: {where(value.line)}: {path} is computed by the program ({value.what}): "
        "give it as a literal"
    )


def _output(resource: str, kind: str) -> str:
    return f"an output of the resource {resource} ({kind}), known only once Pulumi creates it"


def _config(key: Any) -> str:
    named = f" {key!r}" if isinstance(key, str) else ""
    return f"the Pulumi config value{named}, set with `pulumi config set` and read as Pulumi runs"


_OUTPUT = "a Pulumi Output, known only as Pulumi runs"


# --- Python ----------------------------------------------------------------------------------

_PYTHON_MODULES = frozenset({"pulumi", "pulumi_gcp"})
_GCP_VERTEX = "pulumi_gcp.vertex"


def constructs_ai_custom_job(tree: ast.Module) -> bool:
    """Whether a Python program imports pulumi-gcp and calls ``AiCustomJob`` (by any name)."""
    imports = any(
        (
            isinstance(node, ast.Import)
            and any(a.name.split(".")[0] == "pulumi_gcp" for a in node.names)
        )
        or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pulumi_gcp")
        for node in ast.walk(tree)
    )
    return imports and any(
        isinstance(node, ast.Call) and RESOURCE in ast.unparse(node.func) for node in ast.walk(tree)
    )


def read_python_programs(
    tree: ast.Module, origin: str, where: Where = lambda n: f"line {n}"
) -> list[SdkJob]:
    """Every ``AiCustomJob`` the parsed Python program constructs, in source order."""
    reader = _PythonProgram(tree, origin, where)
    reader.visit(tree)
    return [reader.resource(call) for call in reader.calls]


class _PythonProgram(CodeReader):
    """``python_sdk``'s reader of values, knowing pulumi-gcp's ``...Args`` classes, config
    reads, resources' outputs and ``Output``s."""

    def __init__(self, tree: ast.Module, origin: str, where: Where) -> None:
        super().__init__(tree, origin, where)
        self.calls: list[ast.Call] = []

    def visit_Import(self, node: ast.Import) -> None:
        super().visit_Import(node)
        for alias in node.names:
            root = alias.name.split(".")[0]
            if root in _PYTHON_MODULES:  # `import pulumi_gcp.vertex` binds pulumi_gcp
                self.aliases[alias.asname or root] = alias.name if alias.asname else root

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        super().visit_ImportFrom(node)
        module = node.module or ""
        if module.split(".")[0] in _PYTHON_MODULES:
            for alias in node.names:
                self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        if self.vertex_class(node.func) == RESOURCE:
            if len(self.calls) >= MAX_JOBS:
                raise self.error(node.lineno, f"refused: more than {MAX_JOBS} {RESOURCE}s")
            self.calls.append(node)

    def vertex_class(self, node: ast.AST) -> str | None:
        """The class of pulumi-gcp's ``vertex`` module ``node`` names, or None."""
        full = self.full_name(node)
        if full is None or not full.startswith(f"{_GCP_VERTEX}."):
            return None
        return full.rsplit(".", 1)[1]

    def resource(self, call: ast.Call) -> SdkJob:
        """The job of one ``AiCustomJob(...)`` call."""
        try:
            name, arguments = self.resource_arguments(call)
        except SpecFormatError as exc:
            return SdkJob(
                f"{self.where(call.lineno)}: {RESOURCE}",
                call.lineno,
                "custom-job",
                {},
                error=str(exc),
            )
        return _job(self.origin, self.where, call.lineno, name, arguments, "Python")

    def resource_arguments(self, call: ast.Call) -> tuple[Any, dict[str, Any]]:
        """The resource's name and its arguments (those of an ``AiCustomJobArgs`` too)."""
        if any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > 2:
            raise self.error(
                call.lineno, f"{RESOURCE}() is given more than (name, args) by position"
            )
        keywords: dict[str, ast.expr] = {}
        for keyword in call.keywords:
            if keyword.arg is None:
                raise self.error(
                    call.lineno,
                    f"{RESOURCE}(**...) takes its arguments from a computed mapping: give them by name",
                )
            keywords[keyword.arg] = keyword.value
        name_node = call.args[0] if call.args else keywords.pop("resource_name", None)
        keywords.pop("resource_name", None)
        keywords.pop("opts", None)  # resource options: dependencies, a provider; no job field
        args_node = keywords.pop("args", call.args[1] if len(call.args) > 1 else None)
        arguments: dict[str, Any] = {}
        if args_node is not None:
            given = self.value(args_node)
            if isinstance(given, dict):  # AiCustomJobArgs(...); else it was the options
                arguments.update(given)
            elif not keywords and not _is_options(args_node, self.full_name):
                what = given.what if isinstance(given, Computed) else type(given).__name__
                raise self.error(
                    call.lineno, f"{RESOURCE}'s args are computed by the program ({what})"
                )
        arguments.update({key: self.value(node) for key, node in keywords.items()})
        return self.value(name_node), arguments

    def value(self, node: ast.AST | None, depth: int = 0) -> Any:
        if isinstance(node, ast.Call):
            kind = self.vertex_class(node.func)
            if (
                kind is not None
                and kind.startswith(RESOURCE)
                and kind.endswith(("Args", "ArgsDict"))
            ):
                self.count(node, depth)
                return self.args_value(node, kind, depth)
        what = self.pulumi_value(node) if node is not None else None
        if node is not None and what is not None:
            self.count(node, depth)
            return self.computed(node, what)
        return super().value(node, depth)

    def args_value(self, call: ast.Call, kind: str, depth: int) -> Any:
        """A ``...Args(field=...)`` input class as the mapping of its fields."""
        if call.args or any(k.arg is None for k in call.keywords):
            return self.computed(call, f"{kind}(...) given its fields by position or from **")
        return {k.arg: self.value(k.value, depth + 1) for k in call.keywords if k.arg}

    def pulumi_value(self, node: ast.AST) -> str | None:
        """What a value only a running Pulumi program has is (a config value, an output, an
        ``Output``), or None for any other expression."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = node.func.value
            if _CONFIG_READS.match(node.func.attr) and self.is_config(receiver):
                key = self.value(node.args[0]) if node.args else None
                return _config(key)
            if node.func.attr == "apply" or (self.full_name(node.func) or "").startswith(
                "pulumi.Output."
            ):
                return f"{_OUTPUT} ({clipped(ast.unparse(node.func))}(...))"
        base = node
        while isinstance(base, (ast.Attribute, ast.Subscript, ast.Call)):
            base = base.func if isinstance(base, ast.Call) else base.value
        if isinstance(base, ast.Name):  # `bucket.url`, `bucket`: a resource the program makes
            made = self.constants.get(base.id)
            kind = self.full_name(made.func) if isinstance(made, ast.Call) else None
            if kind is not None and kind.startswith("pulumi_gcp.") and not kind.endswith("Args"):
                return _output(base.id, kind.removeprefix("pulumi_"))
        return None

    def is_config(self, node: ast.AST) -> bool:
        """``pulumi.Config(...)``, or a top-level name assigned one."""
        if isinstance(node, ast.Name) and node.id in self.constants:
            node = self.constants[node.id]
        return isinstance(node, ast.Call) and self.full_name(node.func) == "pulumi.Config"


def _is_options(node: ast.AST, full_name: Callable[[ast.AST], str | None]) -> bool:
    """``pulumi.ResourceOptions(...)``: the second positional argument when it is not args."""
    return isinstance(node, ast.Call) and full_name(node.func) == "pulumi.ResourceOptions"


# --- TypeScript ------------------------------------------------------------------------------


class _Token(NamedTuple):
    """One token: its kind (``string``, ``template``, ``number``, ``name``, ``regex`` or
    ``punct``), text, line, whether a line break comes before it (where a statement may end
    without ``;``) and where it starts in the text."""

    kind: str
    text: str
    line: int
    newline: bool
    offset: int


_TOKEN = re.compile(
    r"""(?P<space>[ \t\r\f\v\ufeff\u00a0]+)
    |(?P<newline>\n)
    |(?P<comment>//[^\n]*|/\*(?:[^*]|\*(?!/))*(?:\*/|\Z))
    |(?P<string>"(?:\\[\s\S]|[^"\\\n])*"|'(?:\\[\s\S]|[^'\\\n])*')
    |(?P<template>`(?:\\[\s\S]|[^`\\])*`)
    |(?P<number>(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+
        |(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?)n?)
    |(?P<name>[A-Za-z_$][\w$]*)
    |(?P<punct>=>|\.\.\.|\?\.|[=!]==?|&&|\|\||\?\?|[^\s])
    """,
    re.VERBOSE,
)
_REGEX = re.compile(r"/(?:\\.|\[(?:\\.|[^\]\\\n])*\]|[^/\\\n\[])+/[A-Za-z]*")
_KEYWORDS_BEFORE_VALUE = frozenset(
    {"return", "typeof", "case", "in", "of", "new", "delete", "void"}
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_ESCAPE = re.compile(r"\\(u\{[0-9a-fA-F]+\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|\r?\n|[\s\S])")
_CLOSERS = {"(": ")", "[": "]", "{": "}"}
_ENDS = frozenset({",", ")", "]", "}", ";"})
_WORDS = {"true": True, "false": False, "null": None, "undefined": None}
_GCP = "@pulumi/gcp"
_MAX_NAME_PARTS = 8
"""A dotted name is read this far (``gcp.vertex.AiCustomJob`` has 3): ``new a.new.a...``
would read the rest of the chain again at each ``new``."""
_MAX_TYPE_TOKENS = 200
"""A declaration's type annotation, and an import's names, are read this far."""


def _tokens(text: str, origin: str) -> list[_Token]:
    """The program's tokens, comments left out; ``SpecFormatError`` past ``MAX_TOKENS``."""
    tokens: list[_Token] = []
    position, line, newline = 0, 1, False
    while position < len(text):
        previous = tokens[-1] if tokens else None
        if (
            text[position] == "/"
            and not text.startswith(("//", "/*"), position)
            and (
                previous is None
                or (previous.kind == "punct" and previous.text not in (")", "]", "}"))
                or (previous.kind == "name" and previous.text in _KEYWORDS_BEFORE_VALUE)
            )
        ):
            regex = _REGEX.match(text, position)
            if regex is not None:  # a regex literal: its quotes are not strings
                tokens.append(_Token("regex", regex.group(), line, newline, position))
                position, newline = regex.end(), False
                continue
        match = _TOKEN.match(text, position)
        assert match is not None  # the last alternative takes any character
        kind = match.lastgroup or "punct"
        piece = match.group()
        if kind == "newline":
            newline = True
        elif kind == "comment":
            newline = newline or "\n" in piece
        elif kind != "space":
            if kind == "punct" and piece in "\"'`":
                raise SpecFormatError(f"{origin}: line {line}: a string that is not closed")
            tokens.append(_Token(kind, piece, line, newline, position))
            newline = False
            if len(tokens) > MAX_TOKENS:
                raise SpecFormatError(f"{origin}: refused: more than {MAX_TOKENS:,} tokens")
        line += piece.count("\n")
        position = match.end()
    return tokens


def _string(token: _Token) -> str:
    """A string or template literal's text, its escapes decoded as JavaScript does."""
    body = token.text[1:-1]

    def decode(match: re.Match[str]) -> str:
        escape = match.group(1)
        if escape[0] == "u":
            return chr(int(escape[1:].strip("{}"), 16))
        if escape[0] == "x":
            return chr(int(escape[1:], 16))
        if escape[0] in "\r\n":
            return ""  # a line continuation
        return _ESCAPES.get(escape, escape)

    try:
        return _ESCAPE.sub(decode, body)
    except (ValueError, OverflowError):  # \u{110000} and beyond
        return body


def _number(text: str) -> int | float:
    digits = text.replace("_", "").removesuffix("n")
    if digits[:2].lower() in ("0x", "0b", "0o"):
        return int(digits, 0)
    value = float(digits)
    return int(value) if value.is_integer() and not re.search(r"[.eE]", digits) else value


def read_typescript_program(text: str, origin: str) -> list[SdkJob]:
    """Every ``AiCustomJob`` a TypeScript (or JavaScript) program constructs, in source order;
    ``SpecFormatError`` when the text is refused."""
    program = _TypeScriptProgram(text, _tokens(text, origin), origin)
    return program.jobs()


class _TypeScriptProgram:
    """The program's imports, its top-level ``const``s and its ``new AiCustomJob(...)``s."""

    def __init__(self, source: str, tokens: list[_Token], origin: str) -> None:
        self.source = source
        self.tokens = tokens
        self.origin = origin
        self.aliases: dict[str, str] = {}
        """A name → the module path it stands for (``gcp`` → ``@pulumi/gcp``)."""
        self.constants: dict[str, int] = {}
        """A top-level ``const`` declared once → where its value starts."""
        self.resolving: set[str] = set()
        self.values_read = 0
        self.scan()

    def where(self, line: int) -> str:
        return f"line {line}"

    def error(self, line: int, message: str) -> SpecFormatError:
        return SpecFormatError(f"{self.origin}: line {line}: {message}")

    def text(self, index: int) -> str:
        return self.tokens[index].text if index < len(self.tokens) else ""

    def scan(self) -> None:
        """Imports and top-level constants, in one pass that tracks bracket depth (each token
        is read once: a type annotation or an import's names are passed over)."""
        declared: dict[str, int] = {}
        depth = 0
        tokens = self.tokens
        index = 0
        while index < len(tokens):
            token, after = tokens[index], index + 1
            if token.kind == "punct" and token.text in ("(", "[", "{"):
                depth += 1
            elif token.kind == "punct" and token.text in (")", "]", "}"):
                depth = max(0, depth - 1)
            elif token.text in ("const", "let", "var") and token.kind == "name":
                name = self.text(index + 1)
                declared[name] = declared.get(name, 0) + 1
                start, after = self.initializer(index + 2)
                if token.text == "const" and depth == 0 and start is not None:
                    self.constants[name] = start
                if self.text(index + 2) == "=" and self.text(index + 3) == "require":
                    module = self.module_at(index + 5)
                    if module is not None:
                        self.aliases[name] = module
                after = max(after, index + 1)
            elif token.text == "import" and token.kind == "name" and depth == 0:
                after = self.read_import(index)
            index = after
        for name, count in declared.items():
            if count > 1:
                self.constants.pop(name, None)

    def initializer(self, index: int) -> tuple[int | None, int]:
        """Where a declaration's value starts, past a type annotation (None: it has none),
        and where the reading stopped."""
        if self.text(index) == ":":  # `const args: gcp.vertex.AiCustomJobArgs = {...}`
            depth, stop = 0, min(len(self.tokens), index + _MAX_TYPE_TOKENS)
            while index < stop:
                piece = self.text(index)
                if piece in ("(", "[", "{", "<"):
                    depth += 1
                elif piece in (")", "]", "}", ">"):
                    depth -= 1
                elif piece in ("=", ";") and depth <= 0:
                    break
                index += 1
        return (index + 1 if self.text(index) == "=" else None), index

    def module_at(self, index: int) -> str | None:
        token = self.tokens[index] if index < len(self.tokens) else None
        if token is None or token.kind != "string":
            return None
        module = _string(token)
        return module.replace("/", ".").replace("@pulumi.", "@pulumi/")

    def read_import(self, index: int) -> int:
        """``import * as X from "M"``, ``import { a, b as c } from "M"``, ``import X =
        require("M")``; where its names end."""
        end = index + 1
        while (
            end < len(self.tokens)
            and end - index < _MAX_TYPE_TOKENS
            and self.text(end) not in ("from", ";", "=")
        ):
            end += 1
        if self.text(end) == "=" and self.text(end + 1) == "require":
            module = self.module_at(end + 3)
            if module is not None:
                self.aliases[self.text(index + 1)] = module
            return end
        module = self.module_at(end + 1) if self.text(end) == "from" else None
        if module is None:
            return end
        names = [self.text(i) for i in range(index + 1, end)]
        if names[:2] == ["*", "as"] and len(names) > 2:
            self.aliases[names[2]] = module
            return end
        if "{" in names:
            inner = names[names.index("{") + 1 : names.index("}") if "}" in names else len(names)]
            pieces = " ".join(inner).split(",")
            for piece in pieces:
                words = piece.split()
                if words and words[0] != "type":
                    self.aliases[words[-1]] = f"{module}.{words[0]}"
        elif names and names[0] not in ("type", "{"):
            self.aliases[names[0]] = module  # a default import: the module itself
        return end

    def dotted(self, index: int) -> tuple[str, int]:
        """The dotted name starting at ``index`` (``gcp.vertex.AiCustomJob``) and its end."""
        parts = [self.text(index)]
        index += 1
        while (
            len(parts) < _MAX_NAME_PARTS
            and self.text(index) == "."
            and index + 1 < len(self.tokens)
            and self.tokens[index + 1].kind == "name"
        ):
            parts.append(self.text(index + 1))
            index += 2
        return ".".join(parts), index

    def full_name(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        module = self.aliases.get(head)
        if module is None:
            return dotted
        return f"{module}.{rest}" if rest else module

    def jobs(self) -> list[SdkJob]:
        found: list[SdkJob] = []
        for index, token in enumerate(self.tokens):
            if token.kind != "name" or token.text != "new":
                continue
            if index + 1 >= len(self.tokens) or self.tokens[index + 1].kind != "name":
                continue
            dotted, after = self.dotted(index + 1)
            if self.full_name(dotted) != f"{_GCP}.vertex.{RESOURCE}" or self.text(after) != "(":
                continue
            if len(found) >= MAX_JOBS:
                raise self.error(token.line, f"refused: more than {MAX_JOBS} {RESOURCE}s")
            found.append(self.resource(token.line, after + 1))
        return found

    def resource(self, line: int, index: int) -> SdkJob:
        """The job of ``new AiCustomJob(name, args, opts)``, its arguments at ``index``."""
        try:
            name, index = self.value(index, 0)
            if self.text(index) != ",":
                raise self.error(line, f"{RESOURCE} is given no arguments after its name")
            arguments, _ = self.value(index + 1, 0)
        except SpecFormatError as exc:
            return SdkJob(f"line {line}: {RESOURCE}", line, "custom-job", {}, error=str(exc))
        if not isinstance(arguments, dict):
            what = arguments.what if isinstance(arguments, Computed) else type(arguments).__name__
            error = f"{self.origin}: line {line}: {RESOURCE}'s arguments are not an object literal ({what})"
            return SdkJob(f"line {line}: {RESOURCE}", line, "custom-job", {}, error=error)
        return _job(self.origin, self.where, line, name, arguments, "TypeScript")

    # --- values -------------------------------------------------------------------------

    def value(self, index: int, depth: int) -> tuple[Any, int]:
        """The value of the expression at ``index`` and the index past it: a literal, or
        ``Computed`` naming what the expression is."""
        token = self.tokens[index] if index < len(self.tokens) else None
        if token is None:
            raise SpecFormatError(f"{self.origin}: the program ends inside {RESOURCE}(...)")
        if depth > MAX_DEPTH:
            raise self.error(token.line, f"a value nested deeper than {MAX_DEPTH} levels")
        self.values_read += 1
        if self.values_read > MAX_VALUES:
            raise self.error(
                token.line, f"refused: the values expand to more than {MAX_VALUES:,} items"
            )
        value, end = self.primary(index, depth)
        while self.text(end) in ("as", "satisfies") and not self.tokens[end].newline:
            end = self.skip(end + 1, types=True)  # a type assertion: the value is unchanged
        if self.ends(end):
            return value, end
        # The expression goes on (`a + b`, `x.y`, `f(...)`): computed, named by its shape.
        end = self.skip(index)
        return self.computed(index, end), end

    def ends(self, index: int) -> bool:
        """Whether an expression ends before the token at ``index``: a ``,``, ``;`` or closer,
        or a word on a new line (a statement ended without ``;``, as JavaScript reads it)."""
        if index >= len(self.tokens):
            return True
        token = self.tokens[index]
        return token.text in _ENDS if token.kind == "punct" else token.newline

    def skip(self, index: int, types: bool = False) -> int:
        """The end of the expression at ``index``: the first ``,``/``;``/closer outside brackets."""
        depth = 0
        while index < len(self.tokens):
            piece, kind = self.text(index), self.tokens[index].kind
            if kind == "punct":
                if depth == 0 and piece in _ENDS:
                    return index
                if piece in _CLOSERS or (types and piece == "<"):
                    depth += 1
                elif piece in ")]}" or (types and piece == ">"):
                    depth -= 1
            index += 1
        return index

    def primary(self, index: int, depth: int) -> tuple[Any, int]:
        token = self.tokens[index]
        if token.kind == "string":
            return _string(token), index + 1
        if token.kind == "template":
            if "${" in token.text:
                return self.computed(index, index + 1), index + 1
            return _string(token), index + 1
        if token.kind == "number":
            return _number(token.text), index + 1
        if (
            token.text == "-"
            and index + 1 < len(self.tokens)
            and self.tokens[index + 1].kind == "number"
        ):
            return -_number(self.tokens[index + 1].text), index + 2
        if token.kind == "name" and token.text in _WORDS:
            return _WORDS[token.text], index + 1
        if token.text == "{":
            return self.object(index + 1, depth)
        if token.text == "[":
            return self.array(index + 1, depth)
        if (
            token.kind == "name"
            and token.text in self.constants
            and token.text not in self.resolving
        ) and (self.ends(index + 1) or self.text(index + 1) in ("as", "satisfies")):
            return self.constant(token.text, depth), index + 1
        return self.computed(index, self.skip(index)), self.skip(index)

    def constant(self, name: str, depth: int) -> Any:
        self.resolving.add(name)
        try:  # a constant's value nests where it is used: one depth bound for both
            value, _ = self.value(self.constants[name], depth + 1)
        finally:
            self.resolving.discard(name)
        return value

    def object(self, index: int, depth: int) -> tuple[Any, int]:
        out: dict[str, Any] = {}
        start = index - 1
        while self.text(index) != "}":
            token = self.tokens[index] if index < len(self.tokens) else None
            if token is None:
                raise SpecFormatError(f"{self.origin}: an object literal is not closed")
            if token.text == "...":
                end = self.skip_to_close(start)
                return self.computed(start, end, "an object spread (...)"), end
            if token.kind in ("name", "number"):
                key = token.text
            elif token.kind == "string":
                key = _string(token)
            else:
                end = self.skip_to_close(start)
                return self.computed(start, end, "an object with computed keys"), end
            index += 1
            if self.text(index) in (",", "}"):  # `{ jobSpec }`: the constant of that name
                item, _ = self.primary(index - 1, depth + 1) if token.kind == "name" else (None, 0)
            elif self.text(index) == ":":
                item, index = self.value(index + 1, depth + 1)
            else:
                end = self.skip_to_close(start)
                return self.computed(start, end, "an object with methods or accessors"), end
            out[key] = item
            index = self.past_item(index, "}", "an object literal")
        return out, index + 1

    def array(self, index: int, depth: int) -> tuple[Any, int]:
        items: list[Any] = []
        start = index - 1
        while self.text(index) != "]":
            if index >= len(self.tokens):
                raise SpecFormatError(f"{self.origin}: an array literal is not closed")
            if self.text(index) == "...":
                end = self.skip_to_close(start)
                return self.computed(start, end, "an array spread (...)"), end
            if self.text(index) == ",":  # a hole
                index += 1
                continue
            item, index = self.value(index, depth + 1)
            items.append(item)
            index = self.past_item(index, "]", "an array literal")
        return items, index + 1

    def past_item(self, index: int, closer: str, what: str) -> int:
        """Past the ``,`` after an item of ``what``, or at its ``closer``."""
        if self.text(index) == ",":
            return index + 1
        if self.text(index) != closer:
            line = self.tokens[min(index, len(self.tokens) - 1)].line
            raise self.error(line, f"expected , or {closer} in {what}")
        return index

    def skip_to_close(self, opener: int) -> int:
        """The index past the bracket that closes the one at ``opener``."""
        depth = 0
        for index in range(opener, len(self.tokens)):
            if self.tokens[index].kind != "punct":
                continue
            piece = self.text(index)
            depth += piece in _CLOSERS
            depth -= piece in (")", "]", "}")
            if depth == 0:
                return index + 1
        return len(self.tokens)

    def computed(self, start: int, end: int, what: str | None = None) -> Computed:
        """``Computed`` for the tokens ``start:end``, named by what they are."""
        first, last = self.tokens[start], self.tokens[max(start, min(end, len(self.tokens)) - 1)]
        text = clipped(" ".join(self.source[first.offset : last.offset + len(last.text)].split()))
        line = first.line
        return Computed(what or self.describe(start, end), line, text)

    def describe(self, start: int, end: int) -> str:
        token = self.tokens[start]
        if token.kind == "template":
            return "a template string with ${...}, filled in as the program runs"
        if token.kind != "name":
            return "an expression the program computes"
        if token.text == "new":
            dotted, _ = self.dotted(start + 1)
            return f"a new {dotted}(...)"
        dotted, after = self.dotted(start)
        head = dotted.split(".", 1)[0]
        full = self.full_name(dotted)
        parts = dotted.split(".")
        calls = self.text(after) == "("
        if calls and len(parts) > 1 and _CONFIG_READS.match(parts[-1]) and self.is_config(head):
            key_token = self.tokens[after + 1] if after + 1 < len(self.tokens) else None
            key = (
                _string(key_token) if key_token is not None and key_token.kind == "string" else None
            )
            return _config(key)
        if full.startswith("@pulumi/pulumi.") and parts[-1] in (
            "interpolate",
            "concat",
            "all",
            "output",
            "secret",
        ):
            return f"{_OUTPUT} ({dotted})"
        if any(self.text(i) == "apply" for i in range(start, min(end, start + 200))):
            return f"{_OUTPUT} (.apply)"
        resource = self.resource_kind(head)
        if resource is not None:
            return _output(head, resource)
        if calls:
            return f"a call to {dotted}()"
        if parts[:2] == ["process", "env"] and len(parts) == 3:
            return f"the environment variable {parts[2]}, read as the program runs"
        if len(parts) == 1 and self.text(after) != "(" and self.ends(after):
            if head in self.constants:
                return f"{head}, a constant whose value is not a literal"
            return f"{head}, a variable this reader does not evaluate"
        return f"the expression {dotted}"

    def is_config(self, name: str) -> bool:
        """A top-level ``const`` assigned ``new pulumi.Config(...)``."""
        start = self.constants.get(name)
        if start is None or self.text(start) != "new":
            return False
        dotted, _ = self.dotted(start + 1)
        return self.full_name(dotted) in ("@pulumi/pulumi.Config", "Config")

    def resource_kind(self, name: str) -> str | None:
        """The class of the resource a top-level ``const`` is (``gcp.storage.Bucket``), or None."""
        start = self.constants.get(name)
        if start is None or self.text(start) != "new":
            return None
        dotted, _ = self.dotted(start + 1)
        return dotted if self.full_name(dotted).startswith(_GCP) else None
