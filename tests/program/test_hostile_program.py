"""The program (what `pulumi preview` runs) on hostile spec files: a clear error, never a crash.

The loaders themselves are fuzzed through the CLI (tests/spec/test_hostile_input.py); these are
the paths only the program takes: the stack's spec paths, local package paths resolved against
the spec file, the trainer digest of a local package directory.
"""

from __future__ import annotations

import os
from pathlib import Path

import pulumi
import pytest

from tests.program.harness import JOB_TYPE, StackRun, run_stack

PYTHON_POOL = (
    "workerPoolSpecs:\n- machineSpec: {machineType: n1-standard-4}\n  pythonPackageSpec:\n"
    "    executorImageUri: us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest\n"
    "    pythonModule: trainer.task\n"
)


def _files(tmp: Path) -> dict[str, tuple[str, str]]:
    """Case name → (spec path, a phrase the error must hold)."""
    bomb = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    bomb += [
        f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}" if i > 1 else "*a"] * 9) + "]"
        for i in range(1, 9)
    ]
    cases = {
        "alias-bomb": ("\n".join(bomb) + "\ntrainingInput:\n  args: *a8\n", "expands to more than"),
        "deep": ("[" * 40_000, "nested deeper than 64 levels"),
        "nul-package": (PYTHON_POOL + '    packageUris: ["a\\0b"]\n', "must not contain NUL bytes"),
        "loop-package": (PYTHON_POOL + "    packageUris: [loop]\n", "cannot be resolved"),
        "list-region": (
            "trainingInput:\n  region: [us-central1]\n",
            "trainingInput.region: must be text",
        ),
        "huge-timeout": (
            PYTHON_POOL + "scheduling: {timeout: 99999999999999999999s}\n",
            "scheduling.timeout: a duration of at most",
        ),
        "huge-count": (
            "workerPoolSpecs:\n- machineSpec: {machineType: n1-standard-4}\n"
            "  replicaCount: 100000000000000000000000\n  containerSpec: {imageUri: gcr.io/p/i}\n",
            "replicaCount: must be at most",
        ),
        "random-bytes": ("\x7f\x01ELF\x00\x00", "not valid YAML"),
        "huge-legacy-bound": (
            "trainingInput:\n  scaleTier: BASIC\n  region: us-central1\n"
            "  runtimeVersion: '2.11'\n  pythonVersion: '3.7'\n  pythonModule: trainer.task\n"
            "  packageUris: [gs://bkt/t.tar.gz]\n  hyperparameters:\n    goal: MINIMIZE\n"
            "    hyperparameterMetricTag: loss\n    maxTrials: 2\n    maxParallelTrials: 1\n"
            "    params:\n    - {parameterName: lr, type: DOUBLE, minValue: 0.001, maxValue: "
            + "9" * 400
            + "}\n",
            "params[0].maxValue: must be a number",
        ),
        "huge-integer-timeout": (
            PYTHON_POOL + f"scheduling: {{timeout: {'9' * 400}}}\n",
            "scheduling.timeout",
        ),
    }
    (tmp / "loop").symlink_to(tmp / "loop")
    found: dict[str, tuple[str, str]] = {}
    for name, (text, phrase) in cases.items():
        path = tmp / f"{name}.yaml"
        path.write_text(text)
        found[name] = (str(path), phrase)
    fifo = tmp / "fifo.yaml"
    os.mkfifo(fifo)
    (tmp / "dir.yaml").mkdir()
    found["fifo"] = (str(fifo), "is not a regular file, not a spec file")
    found["directory"] = (str(tmp / "dir.yaml"), "is a directory, not a spec file")
    found["device"] = ("/dev/zero", "is not a regular file, not a spec file")
    return found


@pytest.mark.parametrize(
    "case",
    [
        "alias-bomb",
        "deep",
        "nul-package",
        "loop-package",
        "list-region",
        "huge-timeout",
        "huge-count",
        "random-bytes",
        "huge-legacy-bound",
        "huge-integer-timeout",
        "fifo",
        "directory",
        "device",
    ],
)
def test_hostile_spec_fails_the_program_with_a_clear_message(case, tmp_path):
    spec, phrase = _files(tmp_path)[case]
    record = StackRun()
    with pytest.raises(pulumi.RunError) as info:  # printed without a traceback by pulumi
        run_stack("local", {"training:jobs": [{"name": "x", "spec": spec}]}, record=record)
    assert phrase in str(info.value)
    assert record.by_type(JOB_TYPE) == []
