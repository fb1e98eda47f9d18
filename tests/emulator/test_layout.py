"""The emulator's code layout: one Runner with a driver per mode; ``__all__`` in every module."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from emulator import driver, execute, runner, simulate

EMULATOR_DIR = Path(runner.__file__).resolve().parent
MODULES = sorted(EMULATOR_DIR.glob("*.py"))
# Functions at most 60 lines long: tests/test_layout.py checks components/ and emulator/ alike.
NO_ALL = {"__main__.py"}


def test_modules_are_found() -> None:
    assert {"runner.py", "execute.py", "simulate.py", "paths.py"} <= {p.name for p in MODULES}


def _runner_class() -> ast.ClassDef:
    tree = ast.parse(inspect.getsource(runner))
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Runner")


def test_runner_does_not_branch_on_the_mode() -> None:
    """The mode picks a driver once, in the constructor; no other method looks at it."""
    drivers = {"SimulateDriver", "ExecuteDriver"}
    for method in _runner_class().body:
        if not isinstance(method, ast.FunctionDef):
            continue
        for node in ast.walk(method):
            if isinstance(node, ast.Name):
                assert node.id not in drivers, f"Runner.{method.name} names {node.id}"
            if isinstance(node, ast.Attribute) and node.attr == "mode":
                assert method.name == "__init__", f"Runner.{method.name} reads the mode"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id != "isinstance", f"Runner.{method.name} tests a type"


def test_both_drivers_implement_the_driver_interface() -> None:
    wanted = {
        name
        for name, member in vars(driver.Driver).items()
        if callable(member) and not name.startswith("_")
    }
    assert wanted == {"submit", "cancel", "maintenance", "shutdown"}
    for cls in (execute.ExecuteDriver, simulate.SimulateDriver):
        for name in wanted:
            theirs = inspect.signature(getattr(cls, name))
            ours = inspect.signature(getattr(driver.Driver, name))
            assert list(theirs.parameters) == list(ours.parameters), f"{cls.__name__}.{name}"


def test_each_mode_has_a_driver() -> None:
    from emulator.config import MODES

    assert set(runner._DRIVERS) == set(MODES)


@pytest.mark.parametrize("path", [p for p in MODULES if p.name not in NO_ALL], ids=lambda p: p.name)
def test_every_module_declares_all_and_defines_what_it_lists(path: Path) -> None:
    module = importlib.import_module(f"emulator.{path.stem}")
    listed = getattr(module, "__all__", None)
    assert isinstance(listed, list), f"{path.name} has no __all__"
    assert len(set(listed)) == len(listed)
    assert [name for name in listed if not hasattr(module, name)] == []
