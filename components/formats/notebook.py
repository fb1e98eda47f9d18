"""A Jupyter notebook (``.ipynb``, nbformat 4) → the jobs its cells submit; nothing is run.

The notebook is JSON, read within bounds (``MAX_NOTEBOOK_BYTES``, ``MAX_CELLS``, the code of
its cells ``MAX_SPEC_BYTES`` in all; outputs are never read). Its code cells are read as
Jupyter runs them, in order:

- ``!cmd`` lines (and ``VAR = !cmd``, ``\\`` continuations joined): each runs in a shell of
  its own, after IPython fills in ``{expr}`` and ``$name`` from the Python code (its simple
  constants, ``components.formats.python_sdk``; a computed one is named as such). A line that
  submits a job (``gcloud ai custom-jobs create``, ``... jobs submit training``,
  ``hp-tuning-jobs create``, a ``curl`` POST to ``customJobs``) is read by the script reader
  (``components.formats.gcloud_command``), as a script;
- ``%%bash`` / ``%%sh`` / ``%%script bash`` cells: a shell script each, read the same way;
- ``%%writefile [-a] PATH`` cells: the file as later cells read it (``--config=PATH``);
- ``%env NAME=VALUE``: the environment of later shell lines and cells;
- ``gcloud config set project|ai/region`` lines: the defaults of later submissions;
- the Python code (the other lines of every code cell, one module as the kernel runs it):
  Vertex AI SDK calls (``components.formats.python_sdk``).

Each job is named by its cell (``cell 4, line 2``: the cell's place among all cells, from 1;
the line within the cell), as are the notes and errors of reading it. A cell that is not
valid Python is left out with a note; a job that cannot be read is one error, the others are
still read.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import posixpath
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import SpecError, SpecFormatError
from .._files import FileReadError, read_text_capped
from ..rules._catalog import Catalog
from .gcloud_command import read_gcloud_command, read_loop_jobs
from .python_sdk import Computed, check_size, loaded_sdk_job, read_python_jobs, value_reader
from .result import FileJob, LoadedSpec
from .script import LoopJobs
from .text import MAX_SPEC_BYTES

__all__ = [
    "MAX_CELLS",
    "MAX_NOTEBOOK_BYTES",
    "is_notebook",
    "read_notebook",
    "read_notebook_text",
]

MAX_NOTEBOOK_BYTES = 16 << 20
"""Notebooks carry their outputs (images as base64): larger than a spec file, still bounded."""
MAX_CELLS = 5_000
MAX_SUBMISSIONS = 100
MAX_READ_CHARS = 4 * MAX_SPEC_BYTES
"""What all the submissions of a notebook read, each with the cells before it that it needs."""

_SUBMITS = re.compile(
    r"jobs\s+submit\s+training|custom-jobs\s+create|hp-tuning-jobs\s+create"
    r"|/(?:customJobs|hyperparameterTuningJobs)\b"
)
_SHELL_MAGICS = re.compile(r"^%%(?:bash|sh|script\s+(?:ba)?sh)\b")
_WRITEFILE = re.compile(r"^%%writefile(?:\s+(-a|--append))?\s+(\S.*?)\s*$")
_BANG = re.compile(r"^(\s*)(?:([\w.\[\]'\"]+)\s*=\s*)?!!?(.*)$")
_ENV = re.compile(r"^\s*%env\s+([A-Za-z_]\w*)(?:\s*=\s*|\s+)(.*?)\s*$")
_CONFIG_SET = re.compile(r"^\s*(?:\S*/)?gcloud\s+config\s+set\s+(?:project|ai/region)\b")
_BRACES = re.compile(r"(?<![{$]){([^{}\n]+)}(?!})")
_DOLLAR = re.compile(r"(?<!\$)\$([A-Za-z_]\w*)")
_HEREDOC_END = "__NOTEBOOK_CELL_EOF__"
_COMPUTED_SHELL = re.compile(
    r"`?\$\(ipython (\d+)\)`?(?: \(line \d+\))?(?: would have to run)?"
    r"(?:; write the value in the script)?"
)
_LINE = re.compile(r"\bline (\d+)\b")

Spec = Callable[..., LoadedSpec]


def is_notebook(text: str, path: Path | None = None) -> bool:
    """An ``.ipynb`` file, or JSON text with ``cells`` and ``nbformat`` at its top."""
    if path is not None and path.suffix == ".ipynb":
        return True
    head = text.lstrip()[:4096]
    return head.startswith("{") and '"nbformat"' in text[: 1 << 16] and '"cells"' in text


def read_notebook_text(path: Path) -> str:
    """The notebook's text: a regular UTF-8 file of at most ``MAX_NOTEBOOK_BYTES``."""
    try:
        return read_text_capped(path, MAX_NOTEBOOK_BYTES, what="notebook")
    except FileReadError as exc:
        raise SpecFormatError(str(exc)) from None


@dataclass
class _Cell:
    number: int
    kind: str
    lines: list[str]


@dataclass
class _Shell:
    """A shell chunk: a ``!`` line or a shell cell, its text and the (cell, line) of each of
    its lines."""

    text: str
    origins: list[tuple[int, int]]
    submits: bool
    what: str
    computed: dict[str, str] = field(default_factory=dict)
    """What each ``$(ipython N)`` in ``text`` stands for: ``{expr}`` and why it is computed."""


@dataclass
class _Notebook:
    cells: list[_Cell]
    python: list[tuple[int, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_notebook(
    path: Path,
    text: str,
    env: Mapping[str, str],
    catalog: Catalog,
    region: str | None,
    *,
    from_document: Spec,
) -> list[FileJob]:
    """Every job the notebook submits, in cell order; ``SpecFormatError`` when the notebook
    cannot be read or submits none. ``from_document`` reads a job document
    (``formats.load.spec_from_document``, passed in: load reads notebooks through here)."""
    notebook = _cells(text, str(path))
    module, where = _python_module(notebook, str(path))
    reader_values = _PythonValues(module, str(path), where)
    jobs: list[FileJob] = []
    for sdk in read_python_jobs(module, str(path), where, env):
        jobs.append(loaded_sdk_job(sdk, str(path), catalog, region, from_document, "notebook"))
    jobs.extend(_shell_jobs(notebook, path, env, catalog, region, reader_values, from_document))
    if not jobs:
        raise SpecFormatError(
            f"{path}: the notebook submits no Vertex AI job: no `!gcloud ai custom-jobs create` "
            "(or `... jobs submit training`, `hp-tuning-jobs create`, a curl POST to "
            "customJobs) line or %%bash cell, and no Vertex AI SDK job (aiplatform.CustomJob, "
            "CustomJob.from_local_script, Custom*TrainingJob(...).run, HyperparameterTuningJob)"
        )
    order = {job.name: index for index, job in enumerate(jobs)}
    jobs.sort(key=lambda job: (_cell_order(job.name or ""), order[job.name]))
    for job in jobs:
        if job.loaded is not None:
            job.loaded.notes[:0] = notebook.notes
    return jobs


def _cell_order(name: str) -> tuple[int, int]:
    match = re.match(r"cell (\d+), line (\d+)", name)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def _cells(text: str, origin: str) -> _Notebook:
    """The notebook's cells (kind and source lines), within the bounds."""
    try:
        document = json.loads(text)
    except RecursionError:
        raise SpecFormatError(f"{origin}: refused: JSON nested too deeply to read") from None
    except ValueError as exc:
        raise SpecFormatError(f"{origin}: not a notebook: not valid JSON ({exc})") from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        if isinstance(document, dict) and "worksheets" in document:
            raise SpecFormatError(
                f"{origin}: an nbformat 3 notebook (worksheets) is not read: open and save it "
                "in Jupyter, which writes nbformat 4"
            )
        raise SpecFormatError(f"{origin}: not a notebook: expected a JSON object with cells")
    cells = document["cells"]
    if len(cells) > MAX_CELLS:
        raise SpecFormatError(f"{origin}: refused: more than {MAX_CELLS:,} cells")
    found: list[_Cell] = []
    total = 0
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            raise SpecFormatError(f"{origin}: cell {number}: expected a JSON object")
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise SpecFormatError(f"{origin}: cell {number}: source must be text or lines")
        total += len(source)
        if total > MAX_SPEC_BYTES:
            raise SpecFormatError(
                f"{origin}: refused: the cells' code is more than {MAX_SPEC_BYTES:,} characters"
            )
        found.append(_Cell(number, str(cell.get("cell_type", "")), source.splitlines()))
    return _Notebook(found)


def _python_module(notebook: _Notebook, origin: str) -> tuple[ast.Module, Callable[[int], str]]:
    """The Python of every code cell as one module (the kernel's one namespace), magics and
    shell lines as ``pass``, and how a line of it is named (``cell 4, line 2``)."""
    body: list[ast.stmt] = []
    origins: list[tuple[int, int]] = []
    for cell in notebook.cells:
        if cell.kind != "code" or not cell.lines or cell.lines[0].startswith("%%"):
            continue
        code = "\n".join(_as_python(cell.lines))
        try:
            tree = ast.parse(code)
        except SyntaxError as exc:
            notebook.notes.append(
                f"cell {cell.number} is not valid Python (line {exc.lineno}: {exc.msg}): "
                "its Python is not read"
            )
            continue
        except (RecursionError, MemoryError, ValueError):
            notebook.notes.append(f"cell {cell.number}: nested too deeply for Python, not read")
            continue
        try:
            check_size(tree, f"cell {cell.number}")
        except SpecFormatError as exc:
            notebook.notes.append(f"{exc}: its Python is not read")
            continue
        ast.increment_lineno(tree, len(origins))
        body.extend(tree.body)
        origins.extend((cell.number, n) for n in range(1, len(cell.lines) + 1))
    module = ast.Module(body=body, type_ignores=[])
    check_size(module, origin)

    def where(line: int) -> str:
        if 1 <= line <= len(origins):
            number, within = origins[line - 1]
            return f"cell {number}, line {within}"
        return f"line {line}"

    return module, where


def _as_python(lines: list[str]) -> Iterator[str]:
    """A cell's lines with IPython's own syntax (``!cmd``, ``%magic``) as ``pass``, one line
    for one, so line numbers stay the cell's."""
    continued = False
    for line in lines:
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        match = _BANG.match(line)
        if continued:  # a `\` continuation of a `!` line or magic: part of it
            yield ""
        elif match is not None and match.group(2):
            yield f"{indent}{match.group(2)} = None"
        elif stripped.startswith(("!", "%")) or match is not None:
            yield f"{indent}pass"
        else:
            yield line
            continue
        continued = line.endswith("\\")


class _PythonValues:
    """IPython's ``{expr}`` and ``$name`` in a ``!`` line, from the notebook's Python."""

    def __init__(self, module: ast.Module, origin: str, where: Callable[[int], str]) -> None:
        self.reader = value_reader(module, origin, where)  # as the SDK calls' values

    def text(self, expression: str) -> str | Computed | None:
        """The text IPython puts in place of ``expression``, ``Computed``, or None when it is
        no Python expression (IPython leaves it as written)."""
        try:
            node = ast.parse(expression.strip(), mode="eval").body
        except (SyntaxError, RecursionError, MemoryError, ValueError):
            return None
        value = self.reader.value(node)
        if isinstance(value, Computed):
            return value
        return value if isinstance(value, str) else json.dumps(value)

    def is_name(self, name: str) -> bool:
        return name in self.reader.constants or name in self.reader.unknown


def _expand(line: str, values: _PythonValues, computed: dict[str, str]) -> str:
    """A ``!`` line as IPython hands it to the shell: ``{expr}`` and ``$name`` of Python
    names filled in; a computed one as ``$(ipython N)``, what it stands for in ``computed``
    (the script reader says the command needs it; ``_computed_text`` says why)."""

    def mark(shown: str, found: Computed) -> str:
        key = str(len(computed))
        computed[key] = f"{shown} (a Python value the notebook computes: {found.what})"
        return f"$(ipython {key})"

    def braces(match: re.Match[str]) -> str:
        found = values.text(match.group(1))
        if found is None:
            return match.group()
        return mark(match.group(), found) if isinstance(found, Computed) else found

    def dollar(match: re.Match[str]) -> str:
        name = match.group(1)
        if not values.is_name(name):
            return match.group()  # not a Python name: the shell's
        found = values.text(name)
        if isinstance(found, Computed):
            return mark(match.group(), found)
        return found if found is not None else match.group()

    return _DOLLAR.sub(dollar, _BRACES.sub(braces, line)).replace("$$", "$")


def _shell_chunks(notebook: _Notebook, values: _PythonValues) -> Iterator[_Shell | _Write | _Env]:
    """The notebook's shell lines, shell cells, written files and ``%env`` settings, in order."""
    for cell in notebook.cells:
        if cell.kind != "code" or not cell.lines:
            continue
        first = cell.lines[0].strip()
        write = _WRITEFILE.match(first)
        if write is not None:
            yield _Write(
                write.group(2).strip("'\""), cell.lines[1:], cell.number, bool(write.group(1))
            )
            continue
        if _SHELL_MAGICS.match(first):
            text = "\n".join(cell.lines[1:])
            origins = [(cell.number, n) for n in range(2, len(cell.lines) + 1)]
            yield _Shell(text, origins, bool(_SUBMITS.search(text)), f"a {first.split()[0]} cell")
            continue
        if first.startswith("%%"):
            if "gcloud" in "\n".join(cell.lines):
                notebook.notes.append(f"cell {cell.number}: a {first.split()[0]} cell is not read")
            continue
        yield from _cell_lines(cell, values)


def _cell_lines(cell: _Cell, values: _PythonValues) -> Iterator[_Shell | _Env]:
    index = 0
    while index < len(cell.lines):
        line = cell.lines[index]
        start = index
        index += 1
        env = _ENV.match(line)
        if env is not None:
            yield _Env(env.group(1), env.group(2))
            continue
        match = _BANG.match(line)
        if match is None:
            continue
        command = match.group(3)
        while command.endswith("\\") and index < len(cell.lines):
            command = command[:-1] + " " + cell.lines[index].strip()
            index += 1
        computed: dict[str, str] = {}
        text = _expand(command, values, computed)
        what = "!" + " ".join(text.split()[:4])
        submits = bool(_SUBMITS.search(text))
        yield _Shell(text, [(cell.number, start + 1)], submits, what, computed)


@dataclass
class _Write:
    path: str
    lines: list[str]
    cell: int
    append: bool


@dataclass
class _Env:
    name: str
    value: str


def _shell_jobs(
    notebook: _Notebook,
    path: Path,
    env: Mapping[str, str],
    catalog: Catalog,
    region: str | None,
    values: _PythonValues,
    from_document: Spec,
) -> Iterator[FileJob]:
    """One job per submitting shell chunk, read with what the cells before it set."""
    environment = dict(env)
    prelude: list[tuple[str, list[tuple[int, int]]]] = []
    written: dict[str, int] = {}
    files: list[str | None] = []
    """The file each part of ``prelude`` writes (None: a ``gcloud config set`` line)."""
    chunks = list(_shell_chunks(notebook, values))
    submissions = sum(1 for c in chunks if isinstance(c, _Shell) and c.submits)
    if submissions > MAX_SUBMISSIONS:
        raise SpecFormatError(
            f"{path}: refused: {submissions} job submissions, more than {MAX_SUBMISSIONS}"
        )
    budget = MAX_READ_CHARS
    for chunk in chunks:
        if isinstance(chunk, _Env):
            environment[chunk.name] = chunk.value
        elif isinstance(chunk, _Write):
            prelude.append(_heredoc(chunk, written))
            files.append(posixpath.basename(chunk.path))
        elif chunk.submits:
            # A written file goes with a submission that names it, no other: each submission
            # is read on its own, so the cells' text is not read again for every one.
            named = [
                part
                for part, name in zip(prelude, files, strict=True)
                if name is None or name in chunk.text
            ]
            budget -= sum(len(text) for text, _ in named) + len(chunk.text)
            if budget < 0:
                raise SpecFormatError(
                    f"{path}: refused: its submissions read more than {MAX_READ_CHARS:,} "
                    "characters of cell text in all (a large %%writefile named by many)"
                )
            yield from _read_chunk(chunk, named, path, environment, catalog, region, from_document)
        elif any(_CONFIG_SET.match(line) for line in chunk.text.splitlines()):
            lines = [line for line in chunk.text.splitlines() if _CONFIG_SET.match(line)]
            prelude.append(("\n".join(lines), [chunk.origins[0]] * len(lines)))
            files.append(None)


def _heredoc(chunk: _Write, written: dict[str, int]) -> tuple[str, list[tuple[int, int]]]:
    """A ``%%writefile`` cell as the script reader knows a written file: a here-document."""
    operator = ">>" if chunk.append and chunk.path in written else ">"
    written[chunk.path] = chunk.cell
    quoted = "'" + chunk.path.replace("'", "'\\''") + "'"
    body = [line for line in chunk.lines if line.strip() != _HEREDOC_END]
    text = "\n".join([f"cat {operator} {quoted} <<'{_HEREDOC_END}'", *body, _HEREDOC_END])
    origins = [(chunk.cell, n) for n in range(1, len(body) + 3)]
    return text, origins


def _read_chunk(
    chunk: _Shell,
    prelude: list[tuple[str, list[tuple[int, int]]]],
    path: Path,
    env: Mapping[str, str],
    catalog: Catalog,
    region: str | None,
    from_document: Spec,
) -> list[FileJob]:
    """The job of one submitting chunk, its errors and notes said in the notebook's cells; one
    per run of the loops over known values around its submission (``read_loop_jobs``), each
    named by its run after the chunk's name."""
    origins: list[tuple[int, int]] = []
    texts: list[str] = []
    for text, places in [*prelude, (chunk.text, chunk.origins)]:
        texts.append(text)
        count = text.count("\n") + 1
        origins.extend((places + [places[-1]] * count)[:count] if places else [(0, 0)] * count)
    lines = chunk.text.split("\n")
    first = next((i for i, text in enumerate(lines) if _SUBMITS.search(text)), 0)
    cell, line = chunk.origins[min(first, len(chunk.origins) - 1)]
    name = f"cell {cell}, line {line}: {chunk.what}"
    script = "\n".join(texts)
    stand_in = path.with_name(f"{path.stem}.cell-{cell}.sh")

    def said(message: str) -> str:
        message = message.replace(str(stand_in), str(path))
        message = _COMPUTED_SHELL.sub(
            lambda m: chunk.computed.get(m.group(1), m.group()) + _GIVE_LITERAL, message
        )
        return _LINE.sub(lambda m: _cell_line(origins, int(m.group(1))), message)

    try:
        read = [
            FileJob(
                None,
                read_gcloud_command(
                    stand_in, script, env, catalog, region, from_document=from_document
                ),
            )
        ]
    except LoopJobs as loops:
        try:
            read = read_loop_jobs(
                stand_in, script, env, catalog, region, loops, from_document=from_document
            )
        except SpecFormatError as exc:
            return [FileJob(name, error=SpecFormatError(said(str(exc))))]
    except SpecFormatError as exc:
        return [FileJob(name, error=SpecFormatError(said(str(exc))))]
    except SpecError as exc:
        return [FileJob(name, error=exc)]
    return [_in_cells(job, name, said) for job in read]


def _in_cells(job: FileJob, name: str, said: Callable[[str], str]) -> FileJob:
    """A job of a chunk, named and said in the notebook's cells (a run of a loop: after the
    chunk's name, ``cell 2, line 3: a %%bash cell (cell 2, line 2: for LR=0.01)``)."""
    if job.name is not None:
        name = f"{name} ({said(job.name)})"
    if isinstance(job.error, SpecFormatError):
        return FileJob(name, error=SpecFormatError(said(str(job.error))))
    if job.loaded is None:
        return FileJob(name, error=job.error)
    job.loaded.notes = [said(note) for note in job.loaded.notes]
    return FileJob(name, loaded=dataclasses.replace(job.loaded, format="notebook"))


_GIVE_LITERAL = "; give it as a literal or a constant of the notebook"


def _cell_line(origins: list[tuple[int, int]], line: int) -> str:
    if 1 <= line <= len(origins) and origins[line - 1][0]:
        cell, within = origins[line - 1]
        return f"cell {cell}, line {within}"
    return f"line {line}"
