"""``pulumi cancel`` on a file:// backend: the waits notice that the stack's lock is gone.

With a file:// (DIY) backend, ``pulumi cancel`` only deletes the stack's lock file (``<backend>/.pulumi/locks/<org>/<project>/<stack>/<id>.json``; older backends
without projects: ``locks/<stack>/``): the ``pulumi up`` that holds it is not told, its waits
went on until ``waitTimeout`` (which cancels the job), and a second ``up`` could start beside
it. ``watch_lock`` closes that gap for this process: the first create that waits for its job
finds the stack's lock files (the backend from ``PULUMI_BACKEND_URL``, else the
``current`` backend of ``$PULUMI_HOME/credentials.json``) and, while any was there, a thread
checks them twice a second; once every one of them is gone, it stops every wait of the
process (``components.lifecycle._interrupt``), as the engine's Cancel does: the jobs keep running for
the next ``pulumi up`` to adopt.

Other backends (Pulumi Cloud, s3://, gs://, azblob://) are not watched, and what their
``pulumi cancel`` does to a running ``up`` is not tested here: Ctrl-C (the engine's
``Cancel``, ``components.dynamic._host``) holds on every backend.
Nothing is watched when no lock file is found (a provider driven by tests, a backend whose
layout differs): the waits then behave as before, ending on Ctrl-C or ``waitTimeout``.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from urllib.parse import unquote, urlparse

__all__ = ["POLL_SECONDS", "file_backend", "stack_locks", "watch_lock"]

POLL_SECONDS = 0.5

_lock = threading.Lock()
_watched: set[tuple[str, str]] = set()


def file_backend(environ: dict[str, str] | None = None) -> Path | None:
    """The directory of the stack's file:// backend, or None for another kind or none known."""
    env = os.environ if environ is None else environ
    url = env.get("PULUMI_BACKEND_URL")
    if not url:
        home = Path(env.get("PULUMI_HOME") or Path.home() / ".pulumi")
        try:
            current = json.loads((home / "credentials.json").read_text()).get("current")
        except (OSError, ValueError, AttributeError):
            return None
        url = current if isinstance(current, str) else None
    if not url or not url.startswith("file://"):
        return None
    parsed = urlparse(url)
    raw = parsed.netloc + parsed.path if parsed.netloc == "~" else parsed.path  # file://~/x
    return Path(os.path.expanduser(unquote(raw))) if raw else None


def stack_locks(backend: Path, project: str, stack: str) -> list[Path]:
    """The lock files of ``project``/``stack`` in the file backend ``backend``."""
    locks = backend / ".pulumi" / "locks"
    try:
        candidates = [*locks.glob(f"*/{project}/{stack}/*.json"), *locks.glob(f"{stack}/*.json")]
    except OSError:
        return []
    return [p for p in candidates if p.is_file()]


def watch_lock(project: str, stack: str) -> bool:
    """Watch the lock of ``project``/``stack`` (once per process); True when a watch runs."""
    from ._interrupt import interrupt

    with _lock:
        if (project, stack) in _watched:
            return True
        backend = file_backend()
        held = stack_locks(backend, project, stack) if backend is not None else []
        if not held:
            return False
        _watched.add((project, stack))

    def watch() -> None:
        stop = threading.Event()
        while not stop.wait(POLL_SECONDS):
            if not any(path.exists() for path in held):
                interrupt("the stack's lock was removed (pulumi cancel)")
                return

    threading.Thread(target=watch, name="stack-lock-watch", daemon=True).start()
    return True
