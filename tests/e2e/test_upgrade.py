"""A stack written by an earlier release keeps working: no diff, the same provider, same hashes.

``tests/e2e/data/state-before-layout`` is a real state (``pulumi stack export``) written by
the release before the module layout changed (made with ``tests/e2e/upgrade_fixture.py``).
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import dill
import yaml

from components._provider import TrainingJobProvider
from tests.e2e._engine import Workspace

DATA = Path(__file__).parent / "data" / "state-before-layout"
JOB_TYPE = "pulumi-python:dynamic/vertex:TrainingJob"


def _state() -> dict[str, Any]:
    state: dict[str, Any] = json.loads((DATA / "state.json").read_text())
    return state


def _load(ws: Workspace) -> None:
    for spec in ("upgrade-with-env.yaml", "upgrade-legacy.yaml"):
        shutil.copy(DATA / spec, ws.project / "stacks" / "jobs" / spec)
    config = json.loads((DATA / "config.json").read_text())
    salt = (DATA / "encryptionsalt").read_text().strip()
    ws.stack_file.write_text(
        yaml.safe_dump({"config": config, "encryptionsalt": salt}, sort_keys=False)
    )
    ws.pulumi("stack", "init", ws.stack)
    state_file = ws.base / "state.json"
    state_file.write_text((DATA / "state.json").read_text())
    ws.pulumi("stack", "import", "--file", str(state_file))


def test_state_from_before_previews_unchanged(ws: Workspace) -> None:
    ws.passphrase = "e2e-passphrase-only-for-tests"  # the passphrase the fixture was made with
    _load(ws)
    preview = ws.preview_json()
    # The stack, the run key and the two jobs (the default provider is not counted).
    assert preview["changeSummary"] == {"same": 4}, [
        (s["urn"].rsplit("::", 1)[-1], s["op"]) for s in preview["steps"]
    ]
    diff = ws.pulumi("preview", "--diff").output
    assert "4 unchanged" in diff


def test_pickled_provider_from_before_loads_and_checks() -> None:
    """``__provider`` pickles TrainingJobProvider by reference: it must import from there."""
    jobs = [r for r in _state()["deployment"]["resources"] if r["type"] == JOB_TYPE]
    assert len(jobs) == 2
    for job in jobs:
        blob = job["inputs"]["__provider"]
        provider = dill.loads(base64.b64decode(blob))
        assert type(provider) is TrainingJobProvider
        inputs = {k: v for k, v in job["inputs"].items() if k not in ("env_values", "run_key")}
        checked = provider.check({}, inputs)
        assert checked.failures == []
        # diff of the state's outputs against the same inputs: no change.
        outputs = {k: v for k, v in job["outputs"].items() if k != "env_values"}
        result = provider.diff(job["id"], outputs, checked.inputs)
        assert result.changes is False, result
