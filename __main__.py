"""Pulumi entry point: everything happens in ``components.program`` (see its docstring)."""

from components.program import run

run()
