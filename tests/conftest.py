"""How the suite is shared out between pytest-xdist workers (`make test`: ``-n``, loadgroup).

With ``--dist loadgroup`` every test belongs to the xdist group of its file unless it (or its
module, through ``pytestmark``) names one with ``@pytest.mark.xdist_group(...)``. So, for every
test file, old or new, without anything to declare:

- a file's tests run in one worker, in the file's order: a module-scoped fixture (an emulator,
  a built SDK, a virtualenv) is set up once, not once per worker that happens to get one of
  its tests, and tests that rely on running after each other in their file still do;
- different files run side by side: the end-to-end tests mostly wait on the engine's
  subprocesses, so a few of them in parallel fit even on two cores.

A test that must not run beside another (two that time the same thing under load) names a
shared group. Without xdist (a plain ``pytest``) the markers change nothing.
"""

from __future__ import annotations

import pytest


def file_group(item: pytest.Item) -> str:
    """The default xdist group of ``item``: its file, relative to the rootdir."""
    return item.nodeid.split("::", 1)[0]


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist registers the marker too; this keeps --strict-markers happy without it.
    config.addinivalue_line("markers", "xdist_group(name): run in one xdist worker with its group")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # tryfirst: xdist turns the markers into the group suffix of each node id in its own
    # hook of this name, which must see them.
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(file_group(item)))
