"""Hostile requests against the HTTP front end: every one gets a 4xx naming what is wrong.

Each case here was a 500 (or worse) once: deep JSON (RecursionError), deep filters, page tokens
holding integers SQLite cannot bind, control characters that only failed when the job ran.
"""

from __future__ import annotations

import base64
import json
import socket
import time
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud.aiplatform_v1 import types as aip

from emulator import protos
from emulator.server import BODY_TIMEOUT_SECONDS
from emulator.testing import EmulatorProcess

from .conftest import PARENT, job_id, make_job, raw_http, trainer_pool

JOBS = f"/v1/{PARENT}/customJobs"
DEEP = 100_000


def deep_list(depth: int = DEEP) -> bytes:
    return b"[" * depth + b"]" * depth


def deep_object(depth: int = DEEP) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


def assert_400(status: int, payload: object, *mentions: str) -> None:
    assert status == 400, payload
    assert isinstance(payload, dict)
    error = payload["error"]
    assert error["code"] == 400
    assert error["status"] in ("INVALID_ARGUMENT", "FAILED_PRECONDITION")
    for text in mentions:
        assert text in error["message"], error["message"]


# -- deep JSON ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        deep_list(),
        deep_object(),
        b'{"displayName": "x", "labels": ' + deep_object() + b"}",
        b'{"displayName": "x", "jobSpec": {"workerPoolSpecs": ' + deep_list() + b"}}",
    ],
    ids=["list", "object", "labels", "pools"],
)
def test_deeply_nested_create_body_is_400(sim: EmulatorProcess, body: bytes) -> None:
    status, payload = raw_http(sim, "POST", JOBS, body)
    assert_400(status, payload, "Invalid JSON payload", "nested")


@pytest.mark.parametrize("body", [deep_list(), deep_object()], ids=["list", "object"])
def test_deeply_nested_admin_bodies_are_400(sim: EmulatorProcess, body: bytes) -> None:
    status, payload = raw_http(sim, "POST", "/emulator/v1/faults", body)
    assert_400(status, payload, "nested")
    created = sim.client().create_custom_job(parent=PARENT, custom_job=make_job("maint"))
    status, payload = raw_http(
        sim, "POST", f"/emulator/v1/jobs/{job_id(created)}:maintenance", body
    )
    assert_400(status, payload, "nested")


# -- filters -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expr",
    [
        "(" * 2000 + "labels.a=b" + ")" * 2000,
        "NOT " * 2000 + "labels.a=b",
        "-(" * 1000 + "labels.a=b" + ")" * 1000,
        "(" * 2000,
    ],
    ids=["parentheses", "not", "minus", "unclosed"],
)
def test_deeply_nested_filter_is_400(sim: EmulatorProcess, expr: str) -> None:
    with pytest.raises(gexc.BadRequest, match=r"filter: .*nest") as info:
        list(sim.client().list_custom_jobs(request={"parent": PARENT, "filter": expr}))
    assert info.value.code == 400


def test_moderately_nested_filter_still_works(sim: EmulatorProcess) -> None:
    expr = "(" * 20 + "labels.nobody=here" + ")" * 20
    assert list(sim.client().list_custom_jobs(request={"parent": PARENT, "filter": expr})) == []


def test_very_long_filter_is_400(sim: EmulatorProcess) -> None:
    expr = " OR ".join(f"labels.k{i}=v" for i in range(3000))
    status, payload = raw_http(sim, "GET", f"{JOBS}?filter={expr.replace(' ', '%20')}")
    assert_400(status, payload, "filter", "characters")


@pytest.mark.parametrize(
    "expr",
    ['create_time>"0001-01-01T00:00:00+14:00"', 'end_time<"9999-12-31T23:59:59-14:00"'],
)
def test_extreme_timestamps_in_filters_are_not_500(sim: EmulatorProcess, expr: str) -> None:
    list(sim.client().list_custom_jobs(request={"parent": PARENT, "filter": expr}))


# -- page tokens and sizes ---------------------------------------------------------------------


def token(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode()


@pytest.mark.parametrize(
    "page_token",
    [
        token({"after": 2**70, "filter": ""}),
        token({"after": -(2**70), "filter": ""}),
        token({"after": 5, "filter": ""}),  # well formed, but this service never issued it
        token({"after": "5", "filter": ""}),
        token({"after": True, "filter": ""}),
        token({"after": 1e308, "filter": ""}),
        base64.urlsafe_b64encode(b'{"after": Infinity, "filter": ""}').decode(),
        base64.urlsafe_b64encode(b'{"after": NaN, "filter": ""}').decode(),
        token([1, 2]),
        token("after"),
        base64.urlsafe_b64encode(deep_list(20_000)).decode(),
        base64.urlsafe_b64encode(b"\xff\xfe\x00").decode(),
        "%%%",
        "A" * 5000,
        "a.b.c",
    ],
)
def test_page_tokens_not_issued_here_are_400(sim: EmulatorProcess, page_token: str) -> None:
    with pytest.raises(gexc.BadRequest, match="pageToken") as info:
        list(sim.client().list_custom_jobs(request={"parent": PARENT, "page_token": page_token}))
    assert info.value.code == 400


def test_page_token_is_bound_to_its_parent_and_filter(sim: EmulatorProcess) -> None:
    client = sim.client()
    for i in range(3):
        client.create_custom_job(parent=PARENT, custom_job=make_job(f"tok-{i}"))
    page = client.list_custom_jobs(request={"parent": PARENT, "page_size": 1})
    issued = next(iter(page.pages)).next_page_token
    assert issued
    other = PARENT.replace("us-central1", "europe-west4")
    with pytest.raises(gexc.BadRequest, match="pageToken"):
        list(client.list_custom_jobs(request={"parent": other, "page_token": issued}))
    with pytest.raises(gexc.BadRequest, match="pageToken"):
        list(
            client.list_custom_jobs(
                request={"parent": PARENT, "page_token": issued, "filter": "labels.a:*"}
            )
        )
    # A token survives the caller changing its page size, as on Vertex.
    rest = list(client.list_custom_jobs(request={"parent": PARENT, "page_token": issued}))
    assert rest


@pytest.mark.parametrize(
    ("size", "status"),
    [
        ("9" * 100, 200),
        (str(10**30), 200),
        ("9" * 5000, 400),
        ("-5", 400),
        ("1e3", 400),
        ("0x10", 400),
        ("", 200),
    ],
)
def test_page_sizes(sim: EmulatorProcess, size: str, status: int) -> None:
    got, payload = raw_http(sim, "GET", f"{JOBS}?pageSize={size}")
    assert got == status, payload
    if status == 400:
        assert_400(got, payload, "pageSize")


# -- bodies, lengths, methods, paths -----------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"\xff\xfe\xfa",
        '{"displayName": "é"}'.encode("latin-1"),
        b"\x00" * 64,
        b'{"displayName": "\\ud800"}',
        b"",
    ],
)
def test_undecodable_create_bodies_are_400(sim: EmulatorProcess, body: bytes) -> None:
    status, payload = raw_http(sim, "POST", JOBS, body)
    assert status == 400, payload


def read_all(s: socket.socket) -> str:
    """Everything the server sends until it closes the connection."""
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    return data.decode(errors="replace")


def test_content_length_longer_than_the_body(sim: EmulatorProcess) -> None:
    # The client announces 1000 bytes, sends 10 and half-closes: the server must not wait for
    # the rest forever, and must not answer 500.
    with socket.create_connection(("127.0.0.1", sim.port), timeout=30) as s:
        s.sendall(
            f"POST {JOBS} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n".encode()
            + b'{"display'
        )
        s.shutdown(socket.SHUT_WR)
        answer = read_all(s)
    assert answer.startswith("HTTP/1.1 400"), answer
    assert "Content-Length" in answer


def test_body_that_never_comes_times_out_with_400(sim: EmulatorProcess) -> None:
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", sim.port), timeout=BODY_TIMEOUT_SECONDS + 30) as s:
        s.sendall(f"POST {JOBS} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{{".encode())
        answer = read_all(s)
    assert answer.startswith("HTTP/1.1 400"), answer
    assert "request body" in answer
    assert time.monotonic() - started < BODY_TIMEOUT_SECONDS + 20


@pytest.mark.parametrize(
    ("headers", "mentions"),
    [
        ({"Content-Length": "-1"}, "Content-Length"),
        ({"Content-Length": "abc"}, "Content-Length"),
        ({"Content-Length": str(10**30)}, "request body"),
        ({"Transfer-Encoding": "chunked"}, "Transfer-Encoding"),
    ],
)
def test_bad_length_headers_are_400(
    sim: EmulatorProcess, headers: dict[str, str], mentions: str
) -> None:
    with socket.create_connection(("127.0.0.1", sim.port), timeout=30) as s:
        lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        s.sendall(f"POST {JOBS} HTTP/1.1\r\nHost: x\r\n{lines}\r\n".encode())
        answer = read_all(s)
    assert answer.startswith("HTTP/1.1 400"), answer
    assert mentions in answer


@pytest.mark.parametrize("method", ["HEAD", "OPTIONS", "TRACE", "FROB", "CONNECT"])
def test_unknown_methods_are_4xx(sim: EmulatorProcess, method: str) -> None:
    status, _ = raw_http(sim, method, JOBS)
    assert 400 <= status < 500


@pytest.mark.parametrize(
    "path",
    [
        "/v1/projects/%00/locations/us-central1/customJobs",
        "/v1/projects/p%0Aq/locations/us-central1/customJobs",
        "/v1/projects/p/locations/%1B%5B31m/customJobs",
        "/v1/projects/" + "p" * 300 + "/locations/us-central1/customJobs",
        "/v1/projects/../locations/us-central1/customJobs",
        "/v1/projects/%2E%2E/locations/us-central1/customJobs",
    ],
)
def test_odd_project_or_location_is_400(sim: EmulatorProcess, path: str) -> None:
    body = json.dumps({"displayName": "x"}).encode()
    status, payload = raw_http(sim, "POST", path, body)
    assert_400(status, payload)
    assert "project" in payload["error"]["message"] or "location" in payload["error"]["message"]
    status, payload = raw_http(sim, "GET", path)
    assert_400(status, payload)


@pytest.mark.parametrize(
    "path",
    [
        "/v1/projects/p/locations/l/customJobs/%00",
        "/v1/projects/p/locations/l/customJobs/123%0A",
        "/v1/projects/p/locations/l/customJobs/" + "9" * 5000,
        "/v1/projects/p/locations/l/operations/%FF%FE",
        "/ui/projects/p/locations/l/operations/..",
        "/emulator/v1/jobs/%00:maintenance",
        "/emulator/v1/jobs/123%0A/replicas",
        "/%00",
        "//",
        "/v1/" + "x/" * 10_000,
    ],
)
def test_odd_paths_are_4xx(sim: EmulatorProcess, path: str) -> None:
    for method in ("GET", "POST", "DELETE"):
        status, _ = raw_http(sim, method, path, b"{}")
        assert 400 <= status < 500, (method, path, status)


def test_request_line_too_long_is_4xx_json(sim: EmulatorProcess) -> None:
    status, payload = raw_http(sim, "GET", "/v1/" + "x" * 70_000)
    assert 400 <= status < 500
    assert isinstance(payload, dict) and payload["error"]["code"] == status


# -- fields that reach a path or a process -----------------------------------------------------


def hostile_create(sim: EmulatorProcess, job_json: dict[str, Any]) -> tuple[int, Any]:
    return raw_http(sim, "POST", JOBS, json.dumps(job_json).encode())


def base_job() -> dict[str, Any]:
    """A valid CustomJob as the JSON a client sends."""
    job = make_job("fields", output="gs://b-ok/run")
    return protos.to_dict(aip.CustomJob.pb(job), int_enums=False)


def pps(job: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = job["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]
    return result


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda j: pps(j).update(packageUris=["/work/x\x00y"]), "package_uris[0]"),
        (lambda j: pps(j).update(packageUris=["gs://b-ok/pkg\x00.tar.gz"]), "package_uris[0]"),
        (lambda j: pps(j).update(packageUris=["gs://b-ok/a%00b"]), "package_uris[0]"),
        (lambda j: pps(j).update(packageUris=["gs://b-ok/a\nb"]), "package_uris[0]"),
        (
            lambda j: j["jobSpec"].update(
                baseOutputDirectory={"outputUriPrefix": "gs://b-ok/\x00"}
            ),
            "output_uri_prefix",
        ),
        (
            lambda j: j["jobSpec"].update(
                baseOutputDirectory={"outputUriPrefix": "gs://b-ok/r\x1b[2Jun"}
            ),
            "output_uri_prefix",
        ),
        (
            lambda j: j["jobSpec"].update(
                baseOutputDirectory={"outputUriPrefix": "gs://b-ok/" + "x" * 300}
            ),
            "output_uri_prefix",
        ),
        (lambda j: pps(j).update(args=["--epochs", "1\x00"]), "args[1]"),
        (lambda j: pps(j).update(pythonModule="trainer.task\x00"), "python_module"),
        (lambda j: pps(j).update(pythonModule="-c"), "python_module"),
        (lambda j: pps(j).update(pythonModule="../trainer"), "python_module"),
        (lambda j: pps(j).update(env=[{"name": "K", "value": "v\x00"}]), "env[0].value"),
        (lambda j: pps(j).update(env=[{"name": "K\n", "value": "long-value"}]), "env[0].name"),
        (lambda j: j.update(displayName="x" * 129), "display_name"),
        (
            lambda j: j["jobSpec"]["workerPoolSpecs"][0]["machineSpec"].update(
                acceleratorType=999, acceleratorCount=1
            ),
            "accelerator_type",
        ),
        (lambda j: j.update(labels={"run": "a\n"}), "labels"),
        (lambda j: j.update(labels={"emulator-run-ms": "5\n"}), "labels"),
    ],
)
def test_strings_that_reach_paths_or_processes_are_checked_at_create(
    sim: EmulatorProcess, change, field: str
) -> None:
    job = base_job()
    change(job)
    status, payload = hostile_create(sim, job)
    assert_400(status, payload, field)
    assert "\x00" not in payload["error"]["message"]


@pytest.mark.parametrize(
    ("image", "command"),
    [("--privileged", []), ("busybox latest", []), ("busybox\x00", []), ("busybox", ["a\x00"])],
)
def test_container_fields_are_checked_at_create(
    sim: EmulatorProcess, image: str, command: list[str]
) -> None:
    job = base_job()
    job["jobSpec"]["workerPoolSpecs"][0] = {
        "replicaCount": "1",
        "machineSpec": {"machineType": "n1-standard-4"},
        "containerSpec": {"imageUri": image, "command": command},
    }
    status, payload = hostile_create(sim, job)
    assert_400(status, payload, "container_spec")


def test_env_values_are_not_echoed_by_the_new_checks(sim: EmulatorProcess) -> None:
    secret = "s3cr3t\x00value"
    pool = trainer_pool(env={"TOKEN": secret})
    with pytest.raises(gexc.BadRequest, match=r"env\[0\]\.value") as info:
        sim.client().create_custom_job(parent=PARENT, custom_job=make_job("env", pools=[pool]))
    assert "s3cr3t" not in str(info.value)


def test_too_many_labels_are_400(sim: EmulatorProcess) -> None:
    job = base_job()
    job["labels"] = {f"k{i}": "v" for i in range(65)}
    status, payload = hostile_create(sim, job)
    assert_400(status, payload, "At most 64 labels")


def test_colon_in_output_path_of_container_jobs_is_400(sim: EmulatorProcess) -> None:
    job = base_job()
    job["jobSpec"]["workerPoolSpecs"][0] = {
        "replicaCount": "1",
        "machineSpec": {"machineType": "n1-standard-4"},
        "containerSpec": {"imageUri": "busybox:latest"},
    }
    job["jobSpec"]["baseOutputDirectory"] = {"outputUriPrefix": "gs://b-ok/run:/etc"}
    status, payload = hostile_create(sim, job)
    assert_400(status, payload, "output_uri_prefix", "docker -v")


def test_redaction_covers_the_escaped_forms_validators_quote() -> None:
    from emulator._validation import redact

    secret = "line1\nline2\x00'q'"
    message = f"bad input_value={secret!r} json={json.dumps(secret)} raw={secret}"
    redacted = redact(message, [secret])
    assert "line1" not in redacted
    assert redacted.count("<redacted>") == 3
