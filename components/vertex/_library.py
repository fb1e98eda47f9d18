"""Importing ``google.cloud.aiplatform_v1``: the job service alone, or the whole library.

The library's package ``__init__`` (and that of its ``types`` package) imports the client and
types of every Vertex AI service, some sixty: 0.6 s of CPU, of which the job service and the
types it uses are half. A provider process that only reads, cancels and deletes jobs (every
``pulumi refresh`` and ``destroy``) needs nothing else, and that import is on its critical
path: every operation waits for it.

``job_service()`` imports ``services.job_service`` without running the two package
``__init__`` files when the library is not imported yet. The packages are put in
``sys.modules`` unexecuted (their ``__path__`` set, so submodules import as usual), each
with a module ``__getattr__`` (PEP 562) that imports a submodule it is asked for, and for
any other name runs the package's real ``__init__`` first: code that uses the library as a
whole (``from google.cloud import aiplatform_v1; aiplatform_v1.CustomJob``) finds it whole.
The library itself announces these imports as lazy (its ``__lazy_modules__``, for the lazy
imports of Python versions to come); its ``__init__`` files only import and name things (and
the package's warns of old Pythons and dependencies, which waits until it runs). This is a
run-time change of the library's import, in both doors' processes: docs/patches.md lists it,
and ``tests/test_patches.py`` fails when either file changes.

If the library's layout ever differs (no ``services/job_service`` package), the library is
imported whole, as before.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = ["job_service", "types_only", "whole_library"]

PACKAGE = "google.cloud.aiplatform_v1"
_TYPES = f"{PACKAGE}.types"
_JOB_SERVICE = f"{PACKAGE}.services.job_service"

_lock = threading.RLock()
_unexecuted: dict[str, tuple[ModuleSpec, ModuleType]] = {}
"""Packages in ``sys.modules`` whose ``__init__`` has not run yet, by name."""


@contextmanager
def _quiet() -> Iterator[None]:
    # google.api_core warns about Python 3.11's end of life on import; in the provider
    # process that would reach every `pulumi up` as a diagnostic.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        yield


def job_service() -> ModuleType:
    """``google.cloud.aiplatform_v1.services.job_service`` (its ``JobServiceClient``)."""
    with _quiet(), _lock:
        if PACKAGE not in sys.modules:
            try:
                _defer(PACKAGE)
                _defer(_TYPES)
                return importlib.import_module(_JOB_SERVICE)
            except ImportError:
                # Run what was deferred (modules already imported stay: a proto type must
                # never be defined twice); a library without a job service then fails here.
                _execute_all()
        return importlib.import_module(_JOB_SERVICE)


def types_only() -> ModuleType:
    """``google.cloud.aiplatform_v1.types`` (every message type), without the clients of the
    library's package ``__init__`` when the library is not imported yet: what a conversion
    needs. Code that later asks the package for another name finds it whole (see above).

    The types package's ``__init__`` has run when this returns (``job_service`` leaves it
    unexecuted): a conversion in one thread never reads it while another runs it."""
    with _quiet(), _lock:
        if PACKAGE not in sys.modules:
            try:
                _defer(PACKAGE)
            except ImportError:
                _execute_all()
        types = importlib.import_module(_TYPES)
        _execute(_TYPES)
        return types


def whole_library() -> ModuleType:
    """``google.cloud.aiplatform_v1``, every name of it there."""
    with _quiet(), _lock:
        _execute_all()
        from google.cloud import aiplatform_v1

    return aiplatform_v1


def _defer(name: str) -> None:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not a package here")
    module = importlib.util.module_from_spec(spec)
    module.__dict__["__getattr__"] = partial(_missing_name, name)
    parent, _, child = name.rpartition(".")
    sys.modules[name] = module
    setattr(sys.modules[parent], child, module)
    _unexecuted[name] = (spec, module)


def _missing_name(package: str, name: str) -> Any:
    """A name an unexecuted package lacks: its submodule of that name, or run its ``__init__``."""
    if not name.startswith("__"):
        submodule = f"{package}.{name}"
        if importlib.util.find_spec(submodule) is not None:
            return importlib.import_module(submodule)
    with _quiet(), _lock:
        if package == PACKAGE:
            _execute_all()
        else:
            _execute(package)
    try:
        return vars(sys.modules[package])[name]
    except KeyError:
        raise AttributeError(f"module {package!r} has no attribute {name!r}") from None


def _execute_all() -> None:
    """Run both packages' ``__init__`` still unexecuted: ``types`` first, as the package's uses it."""
    _execute(_TYPES)
    _execute(PACKAGE)


def _execute(name: str) -> None:
    """Run an unexecuted package's real ``__init__`` (nothing if it has run)."""
    entry = _unexecuted.pop(name, None)
    if entry is None:
        return
    spec, module = entry
    hook = module.__dict__["__getattr__"]
    assert spec.loader is not None
    # The hook stays while the ``__init__`` runs: another thread that asks the package for a
    # name meanwhile waits for the lock (held here) rather than find the name missing.
    spec.loader.exec_module(module)
    if module.__dict__.get("__getattr__") is hook:
        del module.__dict__["__getattr__"]
