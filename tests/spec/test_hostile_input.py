"""Hostile and broken input to every loader: bounded in time and memory, never a traceback.

A tool that reads job files from pull requests must survive any file a contributor commits:
alias bombs, deep nesting, device files, FIFOs, NUL bytes, huge numbers, wrong types at every
field, random bytes. Every case runs through the CLI (``validate``, some ``convert`` and
``estimate``) in one child process under a 1 GiB address-space limit
(``tests/spec/hostile_driver.py``); each must exit 0, 1 or 2 with no exception, quickly.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
MEMORY_LIMIT = 1 << 30
# A case's own work (CPU seconds) is what is bounded: wall time on a loaded 2-core CI machine
# races. Wall time gets a wide bound too, so a case that blocks (a read that never ends) fails.
CASE_CPU_SECONDS = 3.0
CASE_WALL_SECONDS = 30.0
PEAK_RSS = 600 << 20

VALID_DOCUMENTS = [
    REPO / "stacks" / "jobs" / "dev-t4-spot.yaml",
    REPO / "stacks" / "jobs" / "local-trainer.yaml",
    REPO / "stacks" / "jobs" / "prod-a100-config.yaml",
    DATA / "custom_job.yaml",
    DATA / "seed001_config_legacy_k80.yaml",
    DATA / "seed001_config_t4.yaml",
    REPO / "stacks" / "jobs" / "local-tuning.yaml",
    DATA / "real" / "legacy_hypertune.yaml",
]
COMMAND_FILES = [
    DATA / "seed001_submit_flags.sh",
    DATA / "seed001_submit_config.sh",
    DATA / "real" / "legacy_submit_script.sh",
    DATA / "real" / "vertex_create_flags.sh",
    DATA / "real" / "vertex_create_multi_pool.sh",
    DATA / "real" / "vertex_hp_tuning_create.sh",
]

# Every field the loaders know, so that each is fuzzed.
LEGACY_EVERY_FIELD = {
    "jobId": "every_field",
    "labels": {"team": "ml"},
    "trainingInput": {
        "scaleTier": "CUSTOM",
        "masterType": "n1-standard-8",
        "masterConfig": {
            "acceleratorConfig": {"count": 1, "type": "NVIDIA_TESLA_T4"},
            "diskConfig": {"bootDiskSizeGb": 200, "bootDiskType": "pd-ssd"},
        },
        "workerType": "n1-standard-8",
        "workerCount": 2,
        "workerConfig": {"imageUri": "gcr.io/p/worker", "containerArgs": ["--x", 1]},
        "parameterServerType": "n1-highmem-8",
        "parameterServerCount": 1,
        "parameterServerConfig": {"containerCommand": ["python"]},
        "evaluatorType": "n1-standard-4",
        "evaluatorCount": 1,
        "evaluatorConfig": {"tpuTfVersion": "2.15"},
        "packageUris": ["gs://bkt/p.tar.gz"],
        "pythonModule": "trainer.task",
        "args": ["--epochs", 3],
        "region": "us-central1",
        "jobDir": "gs://bkt/out",
        "runtimeVersion": "2.15",
        "pythonVersion": "3.10",
        "scheduling": {"maxRunningTime": "3600s"},
        "serviceAccount": "sa@p.iam.gserviceaccount.com",
        "network": "projects/1/global/networks/n",
        "encryptionConfig": {
            "kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"
        },
        "enableWebAccess": True,
        "useChiefInTfConfig": True,
    },
}
CUSTOM_JOB_EVERY_FIELD = {
    "displayName": "every-field",
    "labels": {"team": "ml"},
    "encryptionSpec": {"kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"},
    "jobSpec": {
        "workerPoolSpecs": [
            {
                "machineSpec": {
                    "machineType": "n1-standard-8",
                    "acceleratorType": "NVIDIA_TESLA_T4",
                    "acceleratorCount": 1,
                },
                "replicaCount": 1,
                "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100},
                "pythonPackageSpec": {
                    "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-15.py310:latest",
                    "packageUris": ["gs://bkt/p.tar.gz"],
                    "pythonModule": "trainer.task",
                    "args": ["--epochs", "3"],
                    "env": [{"name": "TOKEN", "value": "v"}],
                },
            },
            {
                "machineSpec": {"machineType": "n1-standard-8"},
                "replicaCount": 2,
                "containerSpec": {
                    "imageUri": "gcr.io/p/i",
                    "command": ["python"],
                    "args": ["-m", "x"],
                    "env": {"A": "b"},
                },
            },
        ],
        "scheduling": {
            "timeout": "3600s",
            "restartJobOnWorkerRestart": True,
            "disableRetries": False,
            "strategy": "SPOT",
            "maxWaitDuration": "600s",
        },
        "serviceAccount": "sa@p.iam.gserviceaccount.com",
        "network": "projects/1/global/networks/n",
        "reservedIpRanges": ["r1"],
        "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/out"},
        "tensorboard": "projects/p/locations/us-central1/tensorboards/1",
        "enableWebAccess": True,
        "enableDashboardAccess": False,
    },
}


def _deep_list(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


HOSTILE_VALUES: list[Any] = [
    10**30,
    -(10**30),
    2**63,
    float("inf"),
    float("nan"),
    -1,
    "",
    "a\x00b",
    "9" * 10_000,
    "99999999999999999999s",
    ["us-central1"],
    {"nested": {"mapping": 1}},
    True,
    None,
    _deep_list(40),
    list(range(5_000)),
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value (mappings and lists, leaves and inner nodes alike)."""
    if prefix:
        yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value[:3]):
            yield from _paths(inner, (*prefix, index))


def _replaced(document: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(document, dict):
        return {k: (_replaced(v, rest, new) if k == head else v) for k, v in document.items()}
    return [(_replaced(v, rest, new) if i == head else v) for i, v in enumerate(document)]


def _bomb(levels: int, width: int = 9) -> str:
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, levels):
        refs = ",".join([f"*l{level - 1}"] * width)
        lines.append(f"l{level}: &l{level} [{refs}]")
    return "\n".join(lines) + "\n"


def _alias_bombs() -> Iterator[tuple[str, str]]:
    top = "*l8"
    legacy_fields = {
        "args": f"  args: {top}\n",
        "scaleTier": f"  scaleTier: {top}\n",
        "runtimeVersion": f"  runtimeVersion: {top}\n",
        "masterType": f"  scaleTier: CUSTOM\n  masterType: {top}\n",
        "packageUris": f"  packageUris: {top}\n",
        "acceleratorType": (
            "  scaleTier: CUSTOM\n  masterType: n1-standard-4\n"
            f"  masterConfig:\n    acceleratorConfig:\n      count: 1\n      type: {top}\n"
        ),
    }
    for name, field in legacy_fields.items():
        yield f"bomb-legacy-{name}", _bomb(9) + "trainingInput:\n  region: us-central1\n" + field
    yield (
        "bomb-custom-job",
        _bomb(9) + "workerPoolSpecs:\n- machineSpec: {machineType: n1-standard-4}\n"
        f"  containerSpec: {{imageUri: gcr.io/p/i, args: {top}}}\n",
    )
    yield "bomb-recursive", "trainingInput: &a\n  args: [*a]\n"
    yield "bomb-many-aliases", "a: &a x\nb: [" + ",".join(["*a"] * 5000) + "]\n"


def _deep_texts() -> Iterator[tuple[str, str]]:
    yield "deep-flow-list", "[" * 40_000
    yield "deep-flow-map", "{a: " * 40_000
    yield "deep-json", '{"workerPoolSpecs": ' + "[" * 50_000 + "]" * 50_000 + "}"
    yield "deep-block", "".join(" " * i + "a:\n" for i in range(300))
    yield "deep-block-list", "".join(" " * i + "-\n" for i in range(300))
    yield "deep-within-bounds", "trainingInput:\n  args: " + json.dumps(_deep_list(40)) + "\n"


def _random_texts(rng: random.Random) -> Iterator[tuple[str, bytes]]:
    for i in range(60):
        yield f"random-bytes-{i}", rng.randbytes(rng.randint(0, 4096))
    for i in range(20):
        yield f"random-gcloud-{i}", b"gcloud " + rng.randbytes(rng.randint(0, 512))
    for source in [*VALID_DOCUMENTS, *COMMAND_FILES]:
        data = source.read_bytes()
        for i in range(8):
            mutated = bytearray(data)
            for _ in range(rng.randint(1, 8)):
                mutated[rng.randrange(len(mutated))] = rng.randrange(256)
            yield f"flip-{source.stem}-{i}", bytes(mutated)
            yield f"cut-{source.stem}-{i}", data[: rng.randrange(len(data))]


def _hostile_scripts() -> Iterator[tuple[str, str]]:
    """Shell scripts built to blow up a reader that expands or nests without bounds."""
    submit = "gcloud ai-platform jobs submit training $J --region us-central1 --module-name t.m\n"
    doubling = "".join(f"A{i + 1}=$A{i}$A{i}\n" for i in range(40))
    yield "script-doubling-variables", f"A0=xxxxxxxxxxxxxxxx\n{doubling}J=$A40\n{submit}"
    yield "script-self-doubling", "A=x\n" + "A=$A$A\n" * 64 + "J=$A\n" + submit
    yield "script-deep-substitution", "J=" + "$(" * 20000 + ")" * 20000 + "\n" + submit
    yield "script-deep-braces", "J=" + "${X:-" * 20000 + "}" * 20000 + "\n" + submit
    yield "script-many-assignments", "".join(f"V{i}=x\n" for i in range(60000)) + submit
    yield "script-endless-heredoc", "#!/bin/bash\ncat > c.yaml <<EOF\n" + "x: 1\n" * 50000
    yield "script-many-submissions", "J=j\n" + submit * 5000
    # Arrays, process substitutions and case blocks (issue 35): bounded as the rest.
    doubled = 'a=("${a[@]}" "${a[@]}")\n' * 64
    yield "script-doubling-array", f"a=(x)\n{doubled}J=${{a[*]}}\n{submit}"
    appends = "c+=(--region us-central1)\n" * 20000
    yield (
        "script-array-appends",
        f"c=(gcloud ai-platform jobs submit training j)\n{appends}" + ('"${c[@]}"\n'),
    )
    nested = "<(" * 20000 + "x" + ")" * 20000
    yield "script-deep-process-substitution", f"cat {nested}\n{submit}"
    yield "script-many-case-branches", "case $1 in\n" + "a) J=x ;;\n" * 20000 + "esac\n" + submit
    flags = " ".join(
        f"--worker-pool-spec=machine-type=n1-standard-4,replica-count={i}" for i in range(3000)
    )
    yield (
        "custom-jobs-many-pools",
        f"gcloud ai custom-jobs create --region=us-central1 --display-name=x {flags}\n",
    )


def _command_mutations(rng: random.Random) -> Iterator[tuple[str, str]]:
    """Command files whose flag values are replaced by hostile text."""
    values = [
        "99999999999999999999",
        "-1",
        "count=99999999999999999999,type=nvidia-tesla-t4",
        "count=x,type=",
        "''",
        "$UNSET_VARIABLE_FOR_THE_TEST",
        "'unbalanced",
        "a" * 5000,
        "[us-central1]",
    ]
    for source in COMMAND_FILES:
        words = source.read_text().split()
        flag_positions = [
            i for i, w in enumerate(words[:-1]) if w.startswith("--") and "=" not in w
        ]
        for position in flag_positions:
            for value in rng.sample(values, 4):
                text = " ".join([*words[: position + 1], value, *words[position + 2 :]])
                yield f"cmd-{source.stem}-{words[position]}-{values.index(value)}", text


def _special_paths(tmp: Path) -> dict[str, str]:
    fifo = tmp / "a-fifo.yaml"
    os.mkfifo(fifo)
    (tmp / "a-directory.yaml").mkdir()
    (tmp / "to-zero.yaml").symlink_to("/dev/zero")
    (tmp / "dangling.yaml").symlink_to(tmp / "nowhere")
    (tmp / "loop.yaml").symlink_to(tmp / "loop.yaml")
    big = tmp / "big.yaml"
    big.write_bytes(b"# " + b"x" * (2 << 20) + b"\n")
    return {
        "dev-zero": "/dev/zero",
        "dev-urandom": "/dev/urandom",
        "dev-null": "/dev/null",
        "proc-mem": "/proc/self/mem",
        "fifo": str(fifo),
        "directory": str(tmp / "a-directory.yaml"),
        "symlink-to-zero": str(tmp / "to-zero.yaml"),
        "dangling": str(tmp / "dangling.yaml"),
        "symlink-loop": str(tmp / "loop.yaml"),
        "over-the-cap": str(big),
        "missing": str(tmp / "missing.yaml"),
    }


def _cases(tmp: Path) -> list[dict[str, Any]]:
    rng = random.Random(20261122)
    cases: list[dict[str, Any]] = []

    def add(case_id: str, content: str | bytes | None = None, *, path: str | None = None) -> str:
        if path is None:
            target = tmp / f"{len(cases):05d}.yaml"
            target.write_bytes(content if isinstance(content, bytes) else str(content).encode())
            path = str(target)
        cases.append({"id": case_id, "argv": ["validate", path]})
        return path

    for case_id, text in [*_alias_bombs(), *_deep_texts()]:
        add(case_id, text)
    for case_id, data in _random_texts(rng):
        add(case_id, data)
    for case_id, text in _command_mutations(rng):
        add(case_id, text)
    add("nul-in-yaml", b"workerPoolSpecs:\n- machineSpec: {machineType: n1-\x00standard-4}\n")
    add("nul-in-config-flag", b"gcloud ai-platform jobs submit training j --config a\x00b.yaml\n")
    add("not-utf8", b"displayName: \xff\xfe\n")
    for case_id, text in _hostile_scripts():
        add(case_id, text)
    for name, special in _special_paths(tmp).items():
        add(f"path-{name}", path=special)
        add(
            f"config-{name}",
            f"gcloud ai-platform jobs submit training j --region us-central1 --config {special}\n",
        )
    documents = [(s.stem, yaml.safe_load(s.read_text())) for s in VALID_DOCUMENTS]
    documents += [
        ("legacy-every-field", LEGACY_EVERY_FIELD),
        ("job-every-field", CUSTOM_JOB_EVERY_FIELD),
    ]
    for stem, document in documents:
        for path in _paths(document):
            for index, value in enumerate(HOSTILE_VALUES):
                text = yaml.safe_dump(_replaced(document, path, value), width=1 << 20)
                where = ".".join(map(str, path))
                case_path = add(f"mutate-{stem}-{where}-{index}", text)
                if index in (0, 10):  # accepted or not, conversion and pricing stay clean too
                    cases.append(
                        {"id": f"convert-{stem}-{where}-{index}", "argv": ["convert", case_path]}
                    )
                    cases.append(
                        {
                            "id": f"estimate-{stem}-{where}-{index}",
                            "argv": ["estimate", case_path, "--region", "us-central1"],
                        }
                    )
    return cases


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("hostile")
    cases = _cases(tmp)
    listing = tmp / "cases.json"
    listing.write_text(json.dumps(cases))
    proc = subprocess.run(
        [sys.executable, "-m", "tests.spec.hostile_driver", str(listing), str(MEMORY_LIMIT)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if k != "UNSET_VARIABLE_FOR_THE_TEST"},
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    started = [line["start"] for line in lines if "start" in line]
    finished = {line["id"]: line for line in lines if "id" in line}
    crashed = [case_id for case_id in started if case_id not in finished]
    assert proc.returncode == 0 and not crashed, (
        f"the driver died (rc {proc.returncode}) in case {crashed}: {proc.stderr[-3000:]}"
    )
    peak = next(line["peak_rss_bytes"] for line in lines if "peak_rss_bytes" in line)
    return {"cases": cases, "finished": finished, "peak": peak}


def test_every_case_ran(results: dict[str, Any]) -> None:
    assert len(results["finished"]) == len(results["cases"]) > 2000


def test_exit_codes_are_0_1_2_and_nothing_raises(results: dict[str, Any]) -> None:
    bad = {
        case_id: (r["code"], (r["exception"] or "")[-600:])
        for case_id, r in results["finished"].items()
        if r["exception"] is not None or r["code"] not in (0, 1, 2)
    }
    assert bad == {}


def test_no_traceback_reaches_the_user(results: dict[str, Any]) -> None:
    leaked = [
        case_id
        for case_id, r in results["finished"].items()
        if "Traceback" in r["stderr"] or "Traceback" in r["stdout"]
    ]
    assert leaked == []


def test_every_case_is_fast(results: dict[str, Any]) -> None:
    slow = {
        case_id: (round(r["cpu_seconds"], 2), round(r["seconds"], 2))
        for case_id, r in results["finished"].items()
        if r["cpu_seconds"] > CASE_CPU_SECONDS or r["seconds"] > CASE_WALL_SECONDS
    }
    assert slow == {}


def test_memory_stays_bounded(results: dict[str, Any]) -> None:
    assert results["peak"] < PEAK_RSS


def test_bombs_deep_nesting_and_special_files_are_refused_as_unreadable(
    results: dict[str, Any],
) -> None:
    finished = results["finished"]
    refused = [
        *(f"bomb-legacy-{f}" for f in ("args", "scaleTier", "runtimeVersion", "masterType")),
        "bomb-custom-job",
        "bomb-recursive",
        "bomb-many-aliases",
        "deep-flow-list",
        "deep-json",
        "deep-block",
        *(f"path-{name}" for name in ("dev-zero", "fifo", "directory", "symlink-to-zero")),
        *(f"config-{name}" for name in ("dev-zero", "fifo", "directory", "over-the-cap")),
        "nul-in-config-flag",
    ]
    assert {case_id: finished[case_id]["code"] for case_id in refused} == dict.fromkeys(refused, 2)
    assert "nested deeper than 64 levels" in finished["deep-flow-list"]["stderr"]
    assert "expands to more than" in finished["bomb-legacy-args"]["stderr"]
    assert "is a FIFO, not a --config file" in finished["config-fifo"]["stderr"]
    assert "is a device" in finished["path-dev-zero"]["stderr"]
    assert "NUL byte" in finished["nul-in-config-flag"]["stderr"]


def test_wrong_types_name_the_field(results: dict[str, Any]) -> None:
    """A list where a name belongs is a violation at that field (exit 1), not a crash."""
    region = results["finished"]["mutate-prod-a100-config-trainingInput.region-10"]
    assert region["code"] == 1
    assert "trainingInput.region: must be text" in region["stdout"]
    timeout = results["finished"]["mutate-dev-t4-spot-jobSpec.scheduling.timeout-9"]
    assert timeout["code"] == 1 and "scheduling.timeout" in timeout["stdout"]
    count = results["finished"][
        "mutate-dev-t4-spot-jobSpec.workerPoolSpecs.0.machineSpec.acceleratorCount-0"
    ]
    assert "acceleratorCount: must be at most 2147483647" in count["stdout"]


def test_hostile_scripts_end_quickly_with_short_messages(results: dict[str, Any]) -> None:
    finished = results["finished"]
    scripts = [case_id for case_id in finished if case_id.startswith("script-")]
    assert len(scripts) == 11
    # Unbounded expansions are refused; a huge `$(...)` is kept as the text it is, and the
    # job named by it is then invalid (exit 1): either way each message stays short.
    refused = [s for s in scripts if s != "script-deep-substitution"]
    assert {case_id: finished[case_id]["code"] for case_id in refused} == dict.fromkeys(refused, 2)
    assert finished["script-deep-substitution"]["code"] == 1
    longest = max(len(line) for s in scripts for line in finished[s]["stderr"].splitlines())
    assert longest < 1000


def test_the_drivers_peak_is_its_own_not_its_parents() -> None:
    # Linux's ru_maxrss of a spawned process starts at its parent's size (exec keeps the fork's
    # high-water mark): after 3,000 tests pytest is far larger than the driver ever gets.
    ballast = bytearray(300 << 20)
    for offset in range(0, len(ballast), 4096):
        ballast[offset] = 1
    code = "import tests.spec.hostile_driver as d; print(d.peak_rss_bytes())"
    answer = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    del ballast
    assert int(answer.stdout) < 200 << 20, answer.stderr
