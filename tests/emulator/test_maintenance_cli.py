"""``python -m emulator maintenance`` and ``logs``: what they accept as a job, what they print.

Issue 27: pointed at a server that answers odd JSON (a list, a string, an object without the
expected fields, invalid JSON, HTML, escape sequences), ``maintenance --endpoint`` printed a
traceback and raw escape sequences; and a job name of another project or location ran the drill on
the local job of that id. Now an odd answer is a clear error with control characters escaped, and
a job named in another project or location is not found, as the REST API answers.
"""

from __future__ import annotations

import json
import threading
import unicodedata
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from emulator import protos
from emulator.cli import main
from emulator.store import Replica, Store
from emulator.testing import EmulatorProcess, wait_for_state

from .conftest import PARENT, PROJECT, REGION, S, make_job, raw_http

ESC = "\x1b"


class _Answer:
    status = 200
    body = b"{}"
    content_type = "application/json"


class _Handler(BaseHTTPRequestHandler):
    answer = _Answer()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(self.answer.status)
        self.send_header("Content-Type", self.answer.content_type)
        self.send_header("Content-Length", str(len(self.answer.body)))
        self.end_headers()
        self.wfile.write(self.answer.body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def odd_server() -> Iterator[tuple[str, _Answer]]:
    """An HTTP server answering whatever the test puts in its answer."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Handler.answer
    server.shutdown()
    server.server_close()


def _controls(text: str) -> list[str]:
    """The control and format characters of ``text`` other than newlines."""
    return [ch for ch in text if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf")]


_REPLICA = {"replica": "workerpool0-0", "pid": 20, "restarts": 1, "logPath": "/x/w.log"}
ODD_ANSWERS = {
    "list": (200, b"[1, 2]", "application/json"),
    "string": (200, b'"\\u001b[2Jcleared"', "application/json"),
    "number": (200, b"42", "application/json"),
    "null": (200, b"null", "application/json"),
    "object-without-fields": (200, b'{"hello": "world"}', "application/json"),
    "empty-object": (200, b"{}", "application/json"),
    "pid-not-a-number": (
        200,
        json.dumps({"previousPid": "\x1b]0;owned\x07", "restartedReplicas": [_REPLICA]}).encode(),
        "application/json",
    ),
    "replicas-not-objects": (
        200,
        json.dumps({"previousPid": 10, "restartedReplicas": ["\x1b[31mred", 3]}).encode(),
        "application/json",
    ),
    "invalid-json": (200, b'{"previousPid": 10,', "application/json"),
    "html": (200, b"<html><body><h1>It works!</h1></body></html>", "text/html"),
    "raw-escapes": (200, b"\x1b[31m\x1b]0;title\x07\x9b2J", "text/plain"),
    "not-utf8": (200, b'{"previousPid": "\xff\xfe"}', "application/json"),
    "deeply-nested": (200, b"[" * 100_000 + b"]" * 100_000, "application/json"),
    "error-html": (500, b"<html><body>Internal Server Error</body></html>", "text/html"),
    "error-list": (500, b'["\\u001b[31m"]', "application/json"),
    "error-escapes": (
        404,
        json.dumps({"error": {"message": "\x1b[31mno\x1b[0m \u202eob", "code": 404}}).encode(),
        "application/json",
    ),
    "error-message-object": (400, b'{"error": {"message": {"a": [1]}}}', "application/json"),
    "redirect-nowhere": (302, b"", "text/plain"),
}


@pytest.mark.parametrize("answer", ODD_ANSWERS.values(), ids=ODD_ANSWERS.keys())
def test_odd_answers_are_a_clear_error(
    odd_server: tuple[str, _Answer],
    answer: tuple[int, bytes, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    endpoint, served = odd_server
    served.status, served.body, served.content_type = answer
    assert main(["maintenance", "123", "--endpoint", endpoint]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert err.startswith("maintenance of job 123"), err
    assert _controls(err) == []
    assert len(err) < 1000


def test_a_well_formed_answer_is_printed_without_control_characters(
    odd_server: tuple[str, _Answer], capsys: pytest.CaptureFixture[str]
) -> None:
    endpoint, served = odd_server
    replica = {**_REPLICA, "replica": "workerpool0-0\x1b[2J", "logPath": "/x/\x1b]0;t\x07.log"}
    served.status, served.content_type = 200, "application/json"
    served.body = json.dumps(
        {
            "previousPid": 10,
            "previousExitCode": -15,
            "jobRestarted": False,
            "restartedReplicas": [replica],
        }
    ).encode()
    assert (
        main(["maintenance", "123", "--replica", "workerpool0-0\x1b[1m", "--endpoint", endpoint])
        == 0
    )
    out, err = capsys.readouterr()
    assert "stopped its process 10 (exit status -15)" in out
    assert "restarted workerpool0-0\\x1b[2J: pid 20, restarts 1, log /x/\\x1b]0;t\\x07.log" in out
    assert _controls(out + err) == []


@pytest.mark.parametrize(
    "endpoint", ["file:///etc/passwd", "ftp://127.0.0.1/", "127.0.0.1:8642", "http://\x1b[31m/"]
)
def test_an_endpoint_that_is_not_an_http_url(
    endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["maintenance", "123", "--endpoint", endpoint]) == 1
    err = capsys.readouterr().err
    assert "--endpoint" in err
    assert _controls(err) == []


# -- which job a name designates -----------------------------------------------------------------


def _hanging_job(sim: EmulatorProcess) -> str:
    client = sim.client()
    job = make_job("drill-target", labels={"emulator-outcome": "hang"})
    created = client.create_custom_job(parent=PARENT, custom_job=job)
    wait_for_state(client, created.name, [S.JOB_STATE_RUNNING], timeout=10)
    return str(created.name)


def test_a_name_in_another_project_or_location_is_not_found(
    sim: EmulatorProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    name = _hanging_job(sim)
    number = name.rsplit("/", 1)[1]
    for kind, other in (
        ("CustomJob", f"projects/other/locations/{REGION}/customJobs/{number}"),
        ("CustomJob", f"projects/{PROJECT}/locations/europe-west4/customJobs/{number}"),
        (
            "HyperparameterTuningJob",
            f"projects/{PROJECT}/locations/{REGION}/hyperparameterTuningJobs/{number}",
        ),
    ):
        assert main(["maintenance", other, "--endpoint", sim.endpoint]) == 1
        err = capsys.readouterr().err
        assert f'The {kind} "{other}" does not exist.' in err, err
    # The job's own name, and its bare id, reach the job (a simulate-mode emulator has no process
    # to kill: that refusal says the job was found).
    for found in (name, number, f"{name}/"):
        assert main(["maintenance", found, "--endpoint", sim.endpoint]) == 1
        assert "--mode simulate" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text",
    [
        "customJobs/123",
        "projects/p/locations/l/customJobs",
        "projects/p/locations/l/customJobs/123/extra",
        "projects//locations/l/customJobs/123",
        "locations/l/projects/p/customJobs/123",
        "12\x1b[31m3",
    ],
)
def test_a_job_that_is_neither_an_id_nor_a_name(
    text: str, sim: EmulatorProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["maintenance", text, "--endpoint", sim.endpoint]) == 1
    err = capsys.readouterr().err
    assert "not a job id" in err, err
    assert _controls(err) == []


def test_the_admin_route_checks_the_name_it_is_given(sim: EmulatorProcess) -> None:
    name = _hanging_job(sim)
    number = name.rsplit("/", 1)[1]
    other = f"projects/other/locations/{REGION}/customJobs/{number}"
    path = f"/emulator/v1/jobs/{number}:maintenance"
    status, answer = raw_http(sim, "POST", path, json.dumps({"name": other}).encode())
    assert status == 404, answer
    assert answer["error"]["message"] == f'The CustomJob "{other}" does not exist.'
    status, answer = raw_http(sim, "POST", path, json.dumps({"name": 5}).encode())
    assert status == 400, answer
    status, answer = raw_http(sim, "POST", path, json.dumps({"name": name}).encode())
    assert (status, answer["error"]["status"]) == (400, "FAILED_PRECONDITION")


def test_logs_of_a_name_in_another_project_are_not_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store(tmp_path)
    job = protos.new_job_pb()
    number = store.new_job_id()
    job.name = f"{PARENT}/customJobs/{number}"
    store.insert_job(number, PARENT, job)
    log = tmp_path / "jobs" / number / "logs" / "workerpool0-0.log"
    log.parent.mkdir(parents=True)
    log.write_text("the job's own log\n")
    store.put_replica(Replica(number, "workerpool0-0", 0, 0, 1, 1, "succeeded", 0, 0, 1, str(log)))
    store.close()
    state = ["--state-dir", str(tmp_path)]
    other = f"projects/other/locations/{REGION}/customJobs/{number}"
    assert main(["logs", other, *state]) == 1
    assert f'The CustomJob "{other}" does not exist.' in capsys.readouterr().err
    for found in (job.name, number):
        assert main(["logs", found, *state]) == 0
        assert "the job's own log" in capsys.readouterr().out
    assert main(["logs", "projects/p/customJobs/1", *state]) == 1
    assert "not a job id" in capsys.readouterr().err
