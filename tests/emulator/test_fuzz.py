"""A bounded, deterministic fuzz of the HTTP front end (simulate mode, a few seconds).

Every response must be < 500, every job the service accepts must end without code 13
(INTERNAL), and the service must log no traceback.
"""

from __future__ import annotations

import base64
import copy
import json
import random
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from google.cloud.aiplatform_v1 import types as aip

from emulator import protos
from emulator.testing import EmulatorProcess

from .conftest import PARENT, TERMINAL, make_job, raw_http, trainer_pool

SEED = 20240601
JOBS = f"/v1/{PARENT}/customJobs"


# json.dumps cannot write 3000 levels itself: this marker is swapped for them in the text.
DEEP = "@@deep@@"
DEEP_TEXT = "[" * 3000 + "]" * 3000


HOSTILE: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    10**30,
    -(10**30),
    2**63,
    2**64,
    1.5,
    float("nan"),
    float("inf"),
    "NaN",
    "Infinity",
    "",
    "\x00",
    "a\x00b",
    "\n",
    "\x1b[2J",
    "\ud800",
    "x" * 10_000,
    "../../../../etc/passwd",
    "/etc/passwd",
    "gs://../x",
    "gs://evil..bucket/x",
    "file:///etc",
    "-c",
    "--privileged",
    [],
    [None],
    ["a"] * 200,
    {},
    {"a": 1},
    {"labels": {"a": "b"}},
    DEEP,
]


def base_jobs() -> list[dict[str, Any]]:
    """Valid CustomJob JSON documents covering every field the service reads."""
    python_job = make_job(
        "fuzz",
        pools=[
            trainer_pool(args=["--epochs", "1"], env={"TOKEN": "v"}),
            trainer_pool(replicas=2, accelerator=(aip.AcceleratorType.NVIDIA_TESLA_T4, 1)),
        ],
        labels={"team": "fuzz"},
        output="gs://fuzz-bucket/run",
        timeout_seconds=30,
        restart_on_worker_restart=True,
    )
    container_job = make_job("fuzz-container", output="gs://fuzz-bucket/c")
    container_job.job_spec.worker_pool_specs[0] = aip.WorkerPoolSpec(
        replica_count=1,
        machine_spec=aip.MachineSpec(machine_type="n1-standard-4"),
        container_spec=aip.ContainerSpec(
            image_uri="busybox:latest",
            command=["sh", "-c"],
            args=["true"],
            env=[{"name": "A", "value": "b"}],
        ),
    )
    return [
        protos.to_dict(aip.CustomJob.pb(job), int_enums=False)
        for job in (python_job, container_job)
    ]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into a JSON document, the root included."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from paths(child, (*prefix, i))


def replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    doc = copy.deepcopy(doc)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return doc


def encode(doc: Any) -> bytes:
    """JSON text of ``doc`` (NaN and Infinity as the literals Python writes)."""
    return json.dumps(doc, allow_nan=True).replace(json.dumps(DEEP), DEEP_TEXT).encode()


def assert_not_5xx(status: int, what: str, payload: Any) -> None:
    assert status < 500, f"{what}: {status} {payload!r:.300}"


def test_fuzz_every_field_of_a_custom_job(sim: EmulatorProcess) -> None:
    rng = random.Random(SEED)
    accepted: list[str] = []
    requests = 0
    for base in base_jobs():
        for path in paths(base):
            for value in rng.sample(HOSTILE, 6):
                doc = replaced(base, path, value)
                body = encode(doc)
                status, payload = raw_http(sim, "POST", JOBS, body)
                requests += 1
                assert_not_5xx(status, f"{path} = {value!r:.60}", payload)
                if status == 200:
                    accepted.append(payload["name"])
    # Keys replaced too: unknown or odd field names.
    for base in base_jobs():
        for path in list(paths(base))[1:]:
            if not isinstance(path[-1], str):
                continue
            key = rng.choice(["", "\x00", "x" * 5000, "displayName\x00", "__proto__", "1"])
            doc = copy.deepcopy(base)
            parent = doc
            for part in path[:-1]:
                parent = parent[part]
            parent[key] = parent.pop(path[-1])
            status, payload = raw_http(sim, "POST", JOBS, json.dumps(doc).encode())
            requests += 1
            assert_not_5xx(status, f"key {path} -> {key!r:.20}", payload)
    assert requests > 300
    assert_jobs_end_without_internal_errors(sim, accepted)


def test_fuzz_raw_bodies(sim: EmulatorProcess) -> None:
    rng = random.Random(SEED + 1)
    valid = json.dumps(base_jobs()[0]).encode()
    accepted: list[str] = []
    for i in range(150):
        if i % 3 == 0:
            body = rng.randbytes(rng.randrange(0, 2000))
        else:
            data = bytearray(valid)
            for _ in range(rng.randrange(1, 8)):
                pos = rng.randrange(len(data))
                action = rng.randrange(3)
                if action == 0:
                    data[pos] = rng.randrange(256)
                elif action == 1:
                    del data[pos]
                else:
                    data.insert(pos, rng.choice(b'{}[]",:\\0\x00\xff'))
            body = bytes(data)
        status, payload = raw_http(sim, "POST", JOBS, body)
        assert_not_5xx(status, f"body {body[:80]!r}", payload)
        if status == 200:
            accepted.append(payload["name"])
    for path in ("/emulator/v1/faults",):
        for _ in range(30):
            body = rng.randbytes(rng.randrange(0, 300))
            status, payload = raw_http(sim, "POST", path, body)
            assert_not_5xx(status, f"{path} {body[:40]!r}", payload)
    sim.clear_faults()
    assert_jobs_end_without_internal_errors(sim, accepted)


FILTER_WORDS = [
    "(",
    ")",
    "AND",
    "OR",
    "NOT",
    "-",
    "labels.team",
    "labels.",
    "labels.a.b",
    "=",
    "!=",
    ":",
    "<",
    ">=",
    '"fuzz"',
    '"',
    "\\",
    "*",
    '"*x*"',
    "state",
    "JOB_STATE_RUNNING",
    "create_time",
    "end_time",
    '"2024-01-01T00:00:00Z"',
    '"0001-01-01T00:00:00+14:00"',
    '"not a time"',
    "display_name",
    "displayName",
    "\x00",
    "é",
    "9" * 400,
]


def test_fuzz_filters_page_tokens_and_sizes(sim: EmulatorProcess) -> None:
    rng = random.Random(SEED + 2)
    for _ in range(3):
        raw_http(sim, "POST", JOBS, json.dumps(base_jobs()[0]).encode())
    for _ in range(250):
        words = [rng.choice(FILTER_WORDS) for _ in range(rng.randrange(0, 25))]
        expr = rng.choice([" ", ""]).join(words)
        status, payload = raw_http(sim, "GET", f"{JOBS}?filter={quote(expr)}")
        assert_not_5xx(status, f"filter {expr!r}", payload)
    for _ in range(150):
        kind = rng.randrange(4)
        if kind == 0:
            token = base64.urlsafe_b64encode(rng.randbytes(rng.randrange(0, 200))).decode()
        elif kind == 1:
            after: Any = rng.choice([0, 1, -1, 2**63, 2**70, 1.5, "1", None, [], {}])
            obj = {"after": after, "filter": rng.choice(["", "x", None, 5])}
            token = base64.urlsafe_b64encode(json.dumps(obj).encode()).decode()
            token += rng.choice(["", "." + "A" * 22, ".!!"])
        elif kind == 2:
            token = "".join(rng.choice("AZaz09-_=.%+/ \x00") for _ in range(rng.randrange(0, 80)))
        else:
            token = "A" * rng.randrange(1000, 9000)
        size = rng.choice(["", "1", "-1", "0", "1000000", "9" * 50, "abc", "1.5", "\x00"])
        query = f"pageToken={quote(token)}&pageSize={quote(size)}"
        status, payload = raw_http(sim, "GET", f"{JOBS}?{query}")
        assert_not_5xx(status, f"token {token[:60]!r} size {size!r}", payload)


def test_fuzz_paths_and_methods(sim: EmulatorProcess) -> None:
    rng = random.Random(SEED + 3)
    segments = [
        "v1",
        "ui",
        "projects",
        "p",
        "locations",
        "l",
        "customJobs",
        "operations",
        "1234567890123456789",
        ":cancel",
        ":wait",
        ":maintenance",
        "emulator",
        "jobs",
        "replicas",
        "faults",
        "health",
        "%00",
        "%0A",
        "%FF",
        "%2F",
        "..",
        ".",
        "",
        "x" * 300,
    ]
    for _ in range(250):
        path = "/" + "/".join(rng.choice(segments) for _ in range(rng.randrange(0, 9)))
        path = path.replace("/:", ":")
        method = rng.choice(["GET", "POST", "DELETE", "PATCH", "PUT", "HEAD", "OPTIONS"])
        body = rng.choice([None, b"", b"{}", b"[", rng.randbytes(20)])
        status, payload = raw_http(sim, method, path, body)
        assert_not_5xx(status, f"{method} {path}", payload)


def assert_jobs_end_without_internal_errors(sim: EmulatorProcess, names: list[str]) -> None:
    client = sim.client()
    deadline = time.monotonic() + 60
    for name in names:
        job = client.get_custom_job(name=name)
        while job.state not in TERMINAL:
            assert time.monotonic() < deadline, f"{name} stayed {job.state.name}"
            time.sleep(0.05)
            job = client.get_custom_job(name=name)
        assert job.error.code != 13, job.error.message
    log = sim.log_path.read_text()
    assert "Traceback" not in log, log[-3000:]
