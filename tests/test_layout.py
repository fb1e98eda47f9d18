"""The layout's promises, checked on the source: one room per concept, each contract in one place.

- only ``components/vertex/`` imports ``google.cloud.aiplatform`` (the rest stays cheap to import);
- no import cycle between modules of ``components/``;
- no function longer than 60 lines in ``components/`` or ``emulator/``;
- every module of ``components/`` declares ``__all__`` (the emulator's: tests/emulator);
- contract details (the unknown value, the type token suffix, the job name, the "did you mean"
  wording) are written in exactly one module;
- the rule table of ``components/catalog/README.md`` names exactly the ``Rule`` type's values.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from components.rules._violations import RULES

REPO = Path(__file__).resolve().parents[1]
COMPONENTS = REPO / "components"
MAX_FUNCTION_LINES = 60


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _package_of(path: Path) -> list[str]:
    """The package a module's relative imports start from (its own folder for ``__init__``)."""
    return list(path.relative_to(REPO).parent.parts)


def _all_imports(path: Path) -> set[str]:
    """Every module and ``from`` name imported anywhere in ``path`` (``google.cloud.x``).

    Relative imports are resolved to absolute names (``from ..rules import _spec`` in
    ``components/lifecycle/_check.py`` is ``components.rules._spec``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _from_module(node, path)
            if module is None:
                continue
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _from_module(node: ast.ImportFrom, path: Path, root: Path = REPO) -> str | None:
    """The absolute module a ``from`` import of ``path`` names (relative ones resolved)."""
    base = list(path.relative_to(root).parent.parts)
    if node.level:
        base = base[: len(base) - (node.level - 1)]
        return ".".join([*base, *([node.module] if node.module else [])])
    return node.module


@pytest.mark.parametrize("root", ["components", "emulator"])
def test_a_package_imports_itself_relatively(root):
    """The folders install under other names (``gpu_training``, ``gpu_training_emulator``):
    an absolute import of the folder's own name would break the installed package."""
    absolute = sorted(
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path in (REPO / root).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and node.module.split(".")[0] == root
        )
        or (
            isinstance(node, ast.Import)
            and any(alias.name.split(".")[0] == root for alias in node.names)
        )
    )
    assert absolute == []


def test_only_the_vertex_package_imports_the_client_library():
    importers = sorted(
        name
        for name, path in _modules(COMPONENTS).items()
        if any(m.startswith("google.cloud.aiplatform") for m in _all_imports(path))
    )
    assert importers, "the check would pass on any tree: some module must import the library"
    assert all(name.startswith("components.vertex.") for name in importers), importers


def test_no_import_cycle_in_components():
    """Imports inside functions count too: a lazy import is still a dependency."""
    modules = _modules(COMPONENTS)
    graph = {
        name: sorted(m for m in _all_imports(path) if m in modules and m != name)
        for name, path in modules.items()
    }
    cycles: list[list[str]] = []
    done: set[str] = set()

    def visit(node: str, trail: list[str]) -> None:
        for nxt in graph[node]:
            if nxt in trail or nxt == node:
                cycles.append([*trail[trail.index(nxt) :], node, nxt] if nxt in trail else [node])
            elif nxt not in done:
                visit(nxt, [*trail, node])
        done.add(node)

    for name in graph:
        if name not in done:
            visit(name, [])
    assert cycles == []


@pytest.mark.parametrize("root", ["components", "emulator"])
def test_no_function_is_longer_than_60_lines(root):
    long = []
    for name, path in _modules(REPO / root).items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {lines} lines")
    assert long == []


def test_every_module_declares_all_and_defines_what_it_lists():
    """(``emulator/``'s modules are checked in tests/emulator/test_layout.py.)"""
    problems = []
    for name in _modules(COMPONENTS):
        if name.endswith("__main__"):
            continue
        module = importlib.import_module(name)
        listed = getattr(module, "__all__", None)
        if not isinstance(listed, list):
            problems.append(f"{name}: no __all__")
        else:
            problems += [f"{name}: lists {n} it lacks" for n in listed if not hasattr(module, n)]
    assert problems == []


@pytest.mark.parametrize(
    ("literal", "home"),
    [
        ("04da6b54-80e4-46f7-96ec-b56ff0331ba9", "components/lifecycle/_wire.py"),
        ('":TrainingJob"', "components/lifecycle/_wire.py"),
        ("customJobs/([^/]+)", "components/lifecycle/_wire.py"),
        ("did you mean", "components/rules/_violations.py"),
        ('"training:endpoint"', "components/lifecycle/_settings.py"),
        # The emulator stands on its own (it imports nothing from components): its helper that
        # points a client at it makes that client itself.
        ("JobServiceClient(", ("components/vertex/api.py", "emulator/client.py")),
    ],
)
def test_each_contract_detail_is_written_once(literal, home):
    holders = sorted(
        str(path.relative_to(REPO))
        for root in ("components", "emulator", "policy")
        for path in (REPO / root).rglob("*.py")
        if ".venv" not in path.relative_to(REPO).parts  # policy/.venv: installed packages
        and literal in path.read_text()
    )
    assert holders == ([home] if isinstance(home, str) else list(home))


def test_the_catalog_readme_names_every_rule():
    text = (COMPONENTS / "catalog" / "README.md").read_text()
    table = text.split("## Rules and where they come from", 1)[1]
    first_cells = [row.split("|")[1] for row in table.splitlines() if row.startswith("| `")]
    named = set(re.findall(r"`([a-z-]+)`", "\n".join(first_cells)))
    assert named == set(RULES)


def test_every_error_the_package_defines_is_under_its_root_error():
    """One error tree (``components/_errors.py`` draws it): ``except TrainingJobError`` catches
    whatever the package raises on purpose, whatever else each error also is."""
    from components._errors import TrainingJobError

    defined = []
    for name in _modules(COMPONENTS):
        if name.endswith("__main__"):
            continue
        module = importlib.import_module(name)
        defined += [
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and issubclass(value, BaseException)
            and value.__module__ == module.__name__
        ]
    assert len(defined) >= 15, defined  # the walk found the package's errors
    outside = sorted(
        f"{e.__module__}.{e.__qualname__}" for e in defined if not issubclass(e, TrainingJobError)
    )
    assert outside == []
    text = (COMPONENTS / "_errors.py").read_text()
    undrawn = sorted(e.__qualname__ for e in defined if e.__qualname__ not in text)
    assert undrawn == [], "the tree in components/_errors.py names every error"


def _imported_modules(path: Path, modules: dict[str, Path], root: Path = REPO) -> dict[str, int]:
    """The modules of ``components`` that ``path`` imports (anywhere in it, lazy imports and
    ``TYPE_CHECKING`` blocks included), each with the line of its first import."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _from_module(node, path, root)
            if module is None:
                continue
            # `from . import x` imports the module x where there is one, else the package
            subs = [f"{module}.{alias.name}" for alias in node.names]
            names = [s for s in subs if s in modules] or [module]
        else:
            continue
        for name in names:
            if name in modules:
                found.setdefault(name, node.lineno)
    return found


def test_every_module_is_on_a_floor():
    from components._floors import floor_of

    unplaced = []
    for name in _modules(COMPONENTS):
        try:
            floor_of(name)
        except KeyError as exc:
            unplaced.append(str(exc))
    assert unplaced == []


def test_no_import_climbs_a_floor_or_crosses_between_doors():
    """components/_floors.py names the floors; an import goes to the same room or down."""
    from components._floors import FLOORS, floor_of

    modules = _modules(COMPONENTS)
    bad = []
    for name, path in modules.items():
        floor, room = floor_of(name)
        for target, line in _imported_modules(path, modules).items():
            to_floor, to_room = floor_of(target)
            if to_floor > floor:
                why = f"climbs to {FLOORS[to_floor].name}"
            elif to_floor == floor and to_room != room:
                why = f"crosses from the room {room} to {to_room}"
            else:
                continue
            bad.append(f"{path.relative_to(REPO)}:{line} imports {target}: {why}")
    assert bad == []


def test_the_floor_check_sees_a_lazy_climb(tmp_path):
    """The check would pass on any tree if it missed imports inside functions."""
    from components._floors import floor_of

    lazy = tmp_path / "components" / "rules" / "_probe.py"
    lazy.parent.mkdir(parents=True)
    lazy.write_text("def f():\n    from ..plugin import _provider\n")
    modules = {"components.plugin._provider": lazy, "components.rules._probe": lazy}
    found = _imported_modules(lazy, modules, root=tmp_path)
    assert found == {"components.plugin._provider": 2}
    assert floor_of("components.plugin._provider")[0] > floor_of("components.rules._probe")[0]


def test_the_core_uses_no_pulumi_type():
    """components/core/ is every door's: nothing in it imports ``pulumi`` (lazily neither)."""
    core = COMPONENTS / "core"
    importers = sorted(
        str(path.relative_to(REPO))
        for path in core.rglob("*.py")
        if any(m == "pulumi" or m.startswith("pulumi.") for m in _all_imports(path))
    )
    assert list(core.glob("*.py")), "the check would pass on any tree: the core has modules"
    assert importers == []


def test_the_wheel_lists_every_package_folder() -> None:
    """pyproject.toml names its packages one by one: a new folder of components/ must join, or
    the installed package cannot import it (the smoke runs fail, far from the cause)."""
    import tomllib

    listed = set(
        tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    names = {"components": "gpu_training", "emulator": "gpu_training_emulator"}
    folders = {
        ".".join([names[init.relative_to(REPO).parts[0]], *init.relative_to(REPO).parts[1:-1]])
        for root in names
        for init in (REPO / root).rglob("__init__.py")
    }
    assert folders - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
