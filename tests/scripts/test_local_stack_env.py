"""`eval "$(scripts/local-stack env)"` sets up a shell for running `pulumi` on the local stack by
hand, and that stack talks to this checkout's emulator wherever it runs, or to none.

A copy of the checkout (so its `.local/` is the test's) runs the script and the real engine. Its
stack file names a stale endpoint: a decoy HTTP server that counts what it is asked; the local
stack must never ask it anything.
"""

from __future__ import annotations

import http.server
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from components.lifecycle._settings import running_emulator
from tests.e2e._engine import REPO, venv_dir

_COPIED = ("Pulumi.yaml", "__main__.py", "components", "emulator", "examples", "scripts", "stacks")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".venv", ".tools")
TIMEOUT = 300


class _Decoy(http.server.BaseHTTPRequestHandler):
    asked: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.asked.append(self.path)
        self.send_error(500)

    do_POST = do_GET

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def decoy() -> Iterator[tuple[str, list[str]]]:
    """A stale endpoint: an HTTP server on a free port that records every request."""
    asked: list[str] = []
    handler = type("Decoy", (_Decoy,), {"asked": asked})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def checkout(tmp_path: Path, decoy: tuple[str, list[str]]) -> Iterator[Path]:
    """A copy of the checkout whose local stack file names the decoy as its endpoint."""
    root = tmp_path / "checkout"
    root.mkdir()
    for item in _COPIED:
        source, target = REPO / item, root / item
        if source.is_dir():
            shutil.copytree(source, target, ignore=_IGNORE)
        else:
            shutil.copy2(source, target)
    (root / ".venv").symlink_to(venv_dir(), target_is_directory=True)
    stack_file = root / "stacks" / "Pulumi.local.yaml"
    text = stack_file.read_text()
    assert "training:endpoint: http://127.0.0.1:8642" in text
    stack_file.write_text(text.replace("http://127.0.0.1:8642", decoy[0]))
    try:
        yield root
    finally:
        subprocess.run(
            [str(venv_dir() / "bin" / "python"), "-m", "emulator", "stop", "--state-dir",
             str(root / ".local" / "emulator")],
            cwd=root, capture_output=True, check=False, timeout=TIMEOUT,
        )  # fmt: skip


def _shell(checkout: Path, script: str) -> subprocess.CompletedProcess[str]:
    """``script`` in bash in the copy, with no PULUMI_* of this machine's environment."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "VIRTUAL_ENV"))}
    return subprocess.run(
        ["bash", "-c", script],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=TIMEOUT,
    )


def test_one_line_sets_up_the_shell_and_the_stack_talks_to_this_checkout_s_emulator(
    checkout: Path, decoy: tuple[str, list[str]]
) -> None:
    made = _shell(checkout, "scripts/local-stack env")
    assert made.returncode == 0, made.stderr
    exports = made.stdout  # what `eval "$(scripts/local-stack env)"` runs
    assert all(line.startswith("export ") for line in exports.splitlines()), exports
    shown = _shell(checkout, f"{exports}\nenv")
    env = dict(line.split("=", 1) for line in shown.stdout.splitlines() if "=" in line)
    assert env["PATH"].split(":")[0] == str(checkout / ".tools" / "bin")
    assert env["PULUMI_HOME"] == str(checkout / ".local" / "pulumi-home")
    assert env["PULUMI_BACKEND_URL"] == f"file://{checkout}/.local/pulumi-state"
    assert env["PULUMI_CONFIG_PASSPHRASE"] == "local-stack"
    assert env["PULUMI_SKIP_UPDATE_CHECK"] == "true"
    assert env["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] == "true"
    endpoint = running_emulator(checkout / ".local" / "emulator")
    assert endpoint is not None and endpoint != decoy[0]

    # A hand-run preview (no --stack, no --config-file) reads this checkout's emulator's quotas.
    preview = _shell(checkout, f"{exports}\npulumi preview --non-interactive")
    assert preview.returncode == 0, preview.stdout + preview.stderr
    assert "custom_model_training_cpus: need" in preview.stdout, preview.stdout
    assert "were not checked" not in preview.stdout
    # ...and `pulumi up` runs the jobs there: the provider finds the emulator the same way.
    up = _shell(checkout, f"{exports}\npulumi up --yes --skip-preview --non-interactive")
    assert up.returncode == 0, up.stdout + up.stderr
    outputs = _shell(checkout, f"{exports}\npulumi stack output jobs --json")
    assert '"JOB_STATE_SUCCEEDED"' in outputs.stdout, outputs.stdout + outputs.stderr
    assert decoy[1] == []

    # Its emulator stopped, the same shell's preview fails saying so: no fall back to the stale
    # endpoint, no quiet "unchanged".
    stop = _shell(checkout, ".venv/bin/python -m emulator stop --state-dir .local/emulator")
    assert stop.returncode == 0, stop.stderr
    failed = _shell(checkout, f"{exports}\npulumi preview --non-interactive")
    output = failed.stdout + failed.stderr
    assert failed.returncode != 0, output
    assert "training:emulatorStateDir: no emulator runs with its state in" in output
    assert str(checkout / ".local" / "emulator") in output
    # The program stopped before declaring any job (the stack itself is all there is to see).
    assert "example-trainer" not in output and "Traceback" not in output
    assert decoy[1] == []


@pytest.mark.parametrize("value", [7, "", "a\0b"])
def test_a_state_dir_that_is_no_path_is_named(value: object) -> None:
    from components.lifecycle._settings import ProviderSettings, SettingError

    with pytest.raises(SettingError, match="training:emulatorStateDir: expected a directory"):
        ProviderSettings.read({"training:emulatorStateDir": value}.get)


def test_a_state_dir_whose_emulator_is_gone_is_refused_not_replaced(tmp_path: Path) -> None:
    from components.lifecycle._settings import ProviderSettings, SettingError

    # server.json of an emulator that stopped, whose port something else may hold now.
    (tmp_path / "server.json").write_text('{"endpoint": "http://127.0.0.1:9"}')
    config = {
        "training:emulatorStateDir": str(tmp_path),
        "training:endpoint": "http://127.0.0.1:8642",
    }
    with pytest.raises(SettingError, match="no emulator runs with its state in"):
        ProviderSettings.read(config.get)
