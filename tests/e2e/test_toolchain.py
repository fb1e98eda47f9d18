"""The real Pulumi engine runs a Python dynamic provider and a Python policy pack offline.

A tiny project in a tmp dir (its provider in an importable module beside __main__.py, with
check/diff/create/update/read/delete and configure) goes through stack init, preview, up,
refresh, a replacing change, destroy and stack rm, with the CLI built by scripts/install-pulumi,
a file:// backend and no network. A pulumi-policy pack then vets the same program.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DYNAMIC_TYPE = "pulumi-python:dynamic:Resource"

PROVIDER_MODULE = '''
"""A dynamic provider that keeps one JSON file per resource in a directory."""

import json
import os
import uuid

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    ConfigureRequest,
    CreateResult,
    DiffResult,
    ReadResult,
    Resource,
    ResourceProvider,
    UpdateResult,
)


class GreetingProvider(ResourceProvider):
    prefix = "Hello"

    def configure(self, req: ConfigureRequest) -> None:
        # The engine passes the whole stack config, namespaced; get() adds the project's.
        self.prefix = req.config.get("prefix") or "Hello"

    def check(self, olds, news):
        failures = [] if news.get("who") else [CheckFailure("who", "must not be empty")]
        return CheckResult(news, failures)

    def diff(self, id, olds, news):
        replaces = [k for k in ("who", "directory") if olds.get(k) != news.get(k)]
        updates = [k for k in ("punctuation",) if olds.get(k) != news.get(k)]
        return DiffResult(changes=bool(replaces or updates), replaces=replaces,
                          delete_before_replace=False)

    def _write(self, path, props):
        outs = {k: v for k, v in props.items() if not k.startswith("__")}
        outs["message"] = f"{self.prefix}, {props['who']}{props['punctuation']}"
        outs["path"] = path
        with open(path, "w", encoding="utf-8") as f:
            json.dump(outs, f)
        return outs

    def create(self, props):
        rid = f"{props['who']}-{uuid.uuid4().hex[:8]}"
        return CreateResult(rid, self._write(os.path.join(props["directory"], rid + ".json"), props))

    def update(self, id, olds, news):
        return UpdateResult(self._write(olds["path"], news))

    def read(self, id, props):
        path = props.get("path") or os.path.join(props["directory"], id + ".json")
        if not os.path.exists(path):
            return ReadResult(None, {})  # deleted outside Pulumi: refresh drops it
        with open(path, encoding="utf-8") as f:
            return ReadResult(id, {**props, **json.load(f)})

    def delete(self, id, props):
        if os.path.exists(props["path"]):
            os.remove(props["path"])


class Greeting(Resource):
    message: pulumi.Output[str]
    path: pulumi.Output[str]

    def __init__(self, name, who, directory, punctuation="!", opts=None):
        props = {"who": who, "directory": directory, "punctuation": punctuation,
                 "message": None, "path": None}
        super().__init__(GreetingProvider(), name, props, opts)
'''

MAIN = """
import os

import pulumi
from greeting_provider import Greeting

config = pulumi.Config()
directory = config.require("directory")
os.makedirs(directory, exist_ok=True)
greeting = Greeting("greeting", who=config.require("who"), directory=directory,
                    punctuation=config.get("punctuation") or "!")
pulumi.export("message", greeting.message)
pulumi.export("path", greeting.path)
"""

POLICY_PACK = """
from pulumi_policy import EnforcementLevel, PolicyPack, ResourceValidationPolicy


def no_forbidden(args, report_violation):
    if args.resource_type == "pulumi-python:dynamic:Resource" and args.props["who"] == "forbidden":
        report_violation("greeting 'forbidden' is not allowed")


PolicyPack(
    name="smoke-policies",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=[ResourceValidationPolicy(name="no-forbidden", description="No forbidden greetings",
                                       validate=no_forbidden)],
)
"""


def _venv() -> Path:
    """The virtualenv whose `pulumi` package the program uses: this one, else the repo's."""
    return Path(sys.prefix) if sys.prefix != sys.base_prefix else REPO / ".venv"


class Stack:
    """Runs the pulumi CLI on the project with offline settings."""

    def __init__(self, project: Path, env: dict[str, str]) -> None:
        self.project = project
        self.env = env

    def _run(self, args: tuple[str, ...], expect_failure: bool) -> subprocess.CompletedProcess[str]:
        cmd = ["pulumi", "--non-interactive", "--color", "never", *args]
        proc = subprocess.run(
            cmd,
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if (proc.returncode != 0) != expect_failure:
            pytest.fail(
                f"{' '.join(cmd)} exited {proc.returncode}\n"
                f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}",
                pytrace=False,
            )
        return proc

    def run(self, *args: str, expect_failure: bool = False) -> str:
        """stdout and stderr of a pulumi command that must succeed (or must fail)."""
        proc = self._run(args, expect_failure)
        return proc.stdout + proc.stderr

    def json(self, *args: str) -> Any:
        return json.loads(self._run(args, expect_failure=False).stdout)

    def resources(self) -> list[dict[str, Any]]:
        deployment = self.json("stack", "export")["deployment"]
        return list(deployment.get("resources") or [])

    def greetings(self) -> list[dict[str, Any]]:
        return [r for r in self.resources() if r["type"] == DYNAMIC_TYPE]


@pytest.fixture
def stack(pulumi_bin_dir: Path, tmp_path: Path) -> Stack:
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text(
        textwrap.dedent(
            f"""\
            name: toolchain-smoke
            runtime:
              name: python
              options:
                toolchain: pip
                virtualenv: {_venv()}
            """
        )
    )
    (project / "greeting_provider.py").write_text(PROVIDER_MODULE)
    (project / "__main__.py").write_text(MAIN)
    (tmp_path / "state").mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PULUMI_", "PYTHON")) and k != "VIRTUAL_ENV"
    }
    env.update(
        PATH=f"{pulumi_bin_dir}{os.pathsep}{env.get('PATH', '')}",
        PULUMI_HOME=str(tmp_path / "home"),
        PULUMI_BACKEND_URL=(tmp_path / "state").as_uri(),
        PULUMI_CONFIG_PASSPHRASE="e2e-only",
        PULUMI_SKIP_UPDATE_CHECK="true",
        PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION="true",
    )
    return Stack(project, env)


def test_dynamic_provider_lifecycle(stack: Stack, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert stack.run("version").strip().startswith("v3.")
    stack.run("stack", "init", "dev")
    stack.run("config", "set", "directory", str(out))
    stack.run("config", "set", "who", "world")
    stack.run("config", "set", "prefix", "Howdy")

    preview = stack.json("preview", "--json")
    ops = {step["urn"].rsplit("::", 1)[-1]: step["op"] for step in preview["steps"]}
    assert ops == {"toolchain-smoke-dev": "create", "greeting": "create"}

    stack.run("up", "--yes", "--skip-preview")
    outputs = stack.json("stack", "output", "--json")
    # "Howdy" reached the provider through configure(), from the stack config.
    assert outputs["message"] == "Howdy, world!"
    first = Path(outputs["path"])
    assert json.loads(first.read_text())["message"] == "Howdy, world!"
    [resource] = stack.greetings()
    assert resource["id"].startswith("world-")
    assert resource["outputs"]["message"] == "Howdy, world!"
    assert resource["inputs"]["who"] == "world"

    # read() finds the same file: refresh changes nothing and the program is in sync.
    stack.run("refresh", "--yes", "--skip-preview")
    stack.run("preview", "--expect-no-changes")

    # punctuation is an in-place update, who forces a replacement.
    stack.run("config", "set", "punctuation", "?")
    stack.run("config", "set", "who", "team")
    preview = stack.json("preview", "--json")
    [step] = [s for s in preview["steps"] if s["urn"].endswith("::greeting")]
    assert step["op"] == "replace"
    assert step["replaceReasons"] == ["who"]
    assert step["oldState"]["inputs"]["who"] == "world"
    assert step["newState"]["inputs"]["who"] == "team"
    assert preview["changeSummary"] == {"replace": 1, "same": 1}

    stack.run("up", "--yes", "--skip-preview")
    outputs = stack.json("stack", "output", "--json")
    assert outputs["message"] == "Howdy, team?"
    assert not first.exists(), "delete() of the replaced resource did not run"
    assert Path(outputs["path"]).is_file()
    [resource] = stack.greetings()
    assert resource["id"].startswith("team-")

    stack.run("destroy", "--yes", "--skip-preview")
    assert stack.resources() == []
    assert list(out.iterdir()) == []
    stack.run("stack", "rm", "--yes")


def test_python_policy_pack(stack: Stack, tmp_path: Path) -> None:
    """`--policy-pack` runs a pulumi-policy pack through the language host's RunPlugin."""
    pack = tmp_path / "policy"
    pack.mkdir()
    # A policy pack runs in a virtualenv of its own (pulumi-policy is not in the program's).
    venv = REPO / "policy" / ".venv"
    (pack / "PulumiPolicy.yaml").write_text(
        f"runtime:\n  name: python\n  options:\n    virtualenv: {venv}\n"
    )
    (pack / "__main__.py").write_text(POLICY_PACK)
    stack.run("stack", "init", "policy")
    stack.run("config", "set", "directory", str(tmp_path / "out"))

    stack.run("config", "set", "who", "forbidden")
    report = stack.run("preview", "--policy-pack", str(pack), expect_failure=True)
    assert "no-forbidden" in report
    assert "greeting 'forbidden' is not allowed" in report

    stack.run("config", "set", "who", "allowed")
    stack.run("preview", "--policy-pack", str(pack))
    stack.run("stack", "rm", "--yes")
