"""The emulator stands on its own: it imports nothing of the project it stands in for.

Its checks are its own code; hardware facts come from the catalog CSVs read as data
(:mod:`emulator.hardware`); env values are redacted by :mod:`emulator.redaction`. So a rule the
project's validator gets wrong is not wrong in the emulator by construction.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from google.cloud.aiplatform_v1 import types as aip
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator import fieldbehavior, hardware, redaction

EMULATOR_DIR = Path(hardware.__file__).resolve().parent
REPO = EMULATOR_DIR.parent


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in ``path``, at any depth (functions included)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.extend((node.lineno, node.module) for _ in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.append((node.lineno, str(node.args[0].value)))
    return found


def test_the_walk_finds_imports_at_any_depth(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os\n"
        "def f():\n"
        "    from components.rules._spec import X\n"
        "    import components.vertex.api as api\n"
        "    importlib.import_module('components.rules._catalog')\n"
    )
    assert [m for _, m in _imported_modules(sample)] == [
        "os",
        "components.rules._spec",
        "components.vertex.api",
        "components.rules._catalog",
    ]


def test_no_emulator_module_imports_components() -> None:
    modules = sorted(EMULATOR_DIR.rglob("*.py"))
    assert len(modules) > 20
    offending = [
        f"{path.relative_to(REPO)}:{line}: {module}"
        for path in modules
        for line, module in _imported_modules(path)
        if module == "components" or module.startswith("components.")
    ]
    assert offending == []


def test_serving_loads_no_components_module() -> None:
    code = (
        "import json, sys\n"
        "import emulator.server, emulator.cli, emulator.testing, emulator.client\n"
        "from emulator import _validation, pyenv\n"
        "pyenv.image_framework('us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'components')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == []


# -- the emulator's own redaction ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        ("token s3cr3t-value here", ["s3cr3t-value"], "token <redacted> here"),
        # the repr form of a value with a newline, the JSON form of one with a tab
        ("input_value='two\\nlines!'", ["two\nlines!"], "input_value='<redacted>'"),
        ('{"v": "tab\\tsecret"}', ["tab\tsecret"], '{"v": "<redacted>"}'),
        # each line of a multi-line value, wherever it is printed
        (
            "first AAAAAAAAAA\nmiddle\nBBBBBBBBBB end",
            ["AAAAAAAAAA\nBBBBBBBBBB"],
            "first <redacted>\nmiddle\n<redacted> end",
        ),
        # short values: only where they make up a whole line
        ("job 1234 ran\n12\n", ["12"], "job 1234 ran\n<redacted>\n"),
        ("nothing to hide", ["", None], "nothing to hide"),
        # the longer value first: no tail of it is left behind
        ("abcdefghij", ["abcdef", "abcdefghij"], "<redacted>"),
    ],
)
def test_redaction(text: str, values: list[str | None], expected: str) -> None:
    assert redaction.redact(text, values) == expected


# -- field behaviours from the client's types -------------------------------------------------


def test_field_behaviours_are_read_from_the_client_types() -> None:
    job = fieldbehavior.behaviours(aip.CustomJob)
    assert fieldbehavior.OUTPUT_ONLY in job["state"]
    assert fieldbehavior.OUTPUT_ONLY in job["web_access_uris"]
    assert fieldbehavior.REQUIRED in job["display_name"]
    assert "labels" not in job
    machine = fieldbehavior.behaviours(aip.MachineSpec)
    assert fieldbehavior.IMMUTABLE in machine["machine_type"]
    assert {fieldbehavior.OPTIONAL, fieldbehavior.IMMUTABLE} <= machine["reservation_affinity"]
    tuning = fieldbehavior.behaviours(aip.HyperparameterTuningJob)
    assert fieldbehavior.OUTPUT_ONLY in tuning["trials"]
    assert fieldbehavior.REQUIRED in tuning["study_spec"]


def test_missing_required_names_each_field_at_any_depth() -> None:
    job = aip.CustomJob(
        job_spec=aip.CustomJobSpec(
            worker_pool_specs=[
                aip.WorkerPoolSpec(container_spec=aip.ContainerSpec(env=[aip.EnvVar(value="v")])),
                aip.WorkerPoolSpec(),
            ]
        )
    )
    found = fieldbehavior.missing_required(aip.CustomJob.pb(job), aip.CustomJob)
    assert [path for path, _ in found] == [
        "display_name",
        "job_spec.worker_pool_specs[0].container_spec.image_uri",
        "job_spec.worker_pool_specs[0].container_spec.env[0].name",
    ]


def test_output_only_fields_are_cleared_at_any_depth() -> None:
    job = aip.HyperparameterTuningJob(
        display_name="t",
        state=aip.JobState.JOB_STATE_RUNNING,
        trials=[aip.Trial(id="1")],
        trial_job_spec=aip.CustomJobSpec(worker_pool_specs=[aip.WorkerPoolSpec(replica_count=1)]),
    )
    pb = aip.HyperparameterTuningJob.pb(job)
    fieldbehavior.clear_output_only(pb, aip.HyperparameterTuningJob)
    assert pb.state == 0 and len(pb.trials) == 0
    assert pb.display_name == "t" and pb.trial_job_spec.worker_pool_specs[0].replica_count == 1


# -- hardware facts as data ------------------------------------------------------------------


def test_hardware_facts_come_from_the_catalog_csvs() -> None:
    facts = hardware.hardware()
    assert "n1-standard-8" in facts.training_machine_types
    assert "n1-highcpu-8" in facts.other_machine_types
    assert facts.attachable[("n1-standard-8", "NVIDIA_TESLA_T4")] == frozenset({1, 2, 4})
    assert facts.accelerators["NVIDIA_TESLA_K80"].retired
    assert not facts.accelerators["NVIDIA_L4"].retired


def test_without_the_catalog_nothing_is_known(tmp_path: Path) -> None:
    facts = hardware._read(tmp_path)
    assert not facts.known
    assert facts.attachable == {} and facts.training_images == ()


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(st.text(st.sampled_from("ab1\n\r\t'\" é"), max_size=12), max_size=3),
    filler=st.lists(st.text(st.sampled_from("ab1\n '\"x"), max_size=10), max_size=4),
)
def test_the_emulator_redacts_as_the_provider_does(values: list[str], filler: list[str]) -> None:
    """The emulator keeps its own copy of the redaction rules (it may not import the provider's):
    on any text quoting the values, in any form, both take out the same."""
    from components._redaction import redact as provider_redact

    quoted = [form for v in values for form in (v, repr(v), json.dumps(v))]
    text = "|".join(
        x for pair in zip(filler + [""] * len(quoted), quoted, strict=False) for x in pair
    )
    assert redaction.redact(text, values) == provider_redact(text, values)
