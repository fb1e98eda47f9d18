"""The wire protocol, through the real google-cloud-aiplatform REST client (simulate mode)."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from urllib.parse import quote

import pytest
import requests
from google.api_core import exceptions as gexc
from google.cloud.aiplatform_v1 import types as aip

from components.vertex.api import is_failed_precondition
from emulator.testing import EmulatorProcess, wait_for_state

from .conftest import NUMBERED_PARENT, PARENT, TERMINAL, S, job_id, make_job, trainer_pool, unique


def test_create_get_and_lifecycle(sim: EmulatorProcess) -> None:
    client = sim.client()
    created = client.create_custom_job(parent=PARENT, custom_job=make_job("lifecycle"))
    assert created.state == S.JOB_STATE_QUEUED
    # Named by project number, as Vertex AI names jobs (test_fidelity.py has the details).
    assert created.name.startswith(f"{NUMBERED_PARENT}/customJobs/")
    assert job_id(created).isdigit() and len(job_id(created)) >= 18
    assert created.display_name == "lifecycle"
    assert created.create_time.timestamp() > 0

    seen = set()
    deadline = time.monotonic() + 10
    job = created
    while job.state not in TERMINAL and time.monotonic() < deadline:
        seen.add(job.state)
        time.sleep(0.02)
        job = client.get_custom_job(name=created.name)
    assert job.state == S.JOB_STATE_SUCCEEDED
    assert S.JOB_STATE_RUNNING in seen
    assert job.create_time <= job.start_time <= job.end_time <= job.update_time
    assert not job.error.message
    # The spec round-trips unchanged through storage and the int enum encoding.
    pool = job.job_spec.worker_pool_specs[0]
    assert pool.python_package_spec.python_module == "trainer.task"
    assert pool.machine_spec.machine_type == "n1-standard-4"


def test_output_only_fields_from_the_client_are_ignored(sim: EmulatorProcess) -> None:
    job = make_job("output-only")
    job.name = "projects/x/locations/y/customJobs/1"
    job.state = aip.JobState(S.JOB_STATE_SUCCEEDED)
    created = sim.client().create_custom_job(parent=PARENT, custom_job=job)
    assert created.state == S.JOB_STATE_QUEUED
    assert created.name != job.name


def test_get_unknown_job_is_not_found(sim: EmulatorProcess) -> None:
    client = sim.client()
    with pytest.raises(gexc.NotFound, match="does not exist"):
        client.get_custom_job(name=f"{PARENT}/customJobs/1234567890123456789")
    created = client.create_custom_job(parent=PARENT, custom_job=make_job("elsewhere"))
    other_region = created.name.replace("us-central1", "europe-west4")
    with pytest.raises(gexc.NotFound):
        client.get_custom_job(name=other_region)


def test_list_filters(sim: EmulatorProcess) -> None:
    client = sim.client()
    run = unique()
    specs = {
        "train-a": {"run": run, "team": "vision"},
        "train-b": {"run": run, "team": "nlp"},
        "eval-c": {"run": run},
    }
    names = {}
    for display, labels in specs.items():
        job = client.create_custom_job(parent=PARENT, custom_job=make_job(display, labels=labels))
        names[display] = job.name

    def listed(expr: str) -> set[str]:
        pager = client.list_custom_jobs(request={"parent": PARENT, "filter": expr})
        return {j.display_name for j in pager}

    base = f"labels.run={run}"
    assert listed(base) == {"train-a", "train-b", "eval-c"}
    assert listed(f"{base} AND labels.team=vision") == {"train-a"}
    assert listed(f"{base} AND labels.team:*") == {"train-a", "train-b"}
    assert listed(f"{base} AND NOT labels.team:*") == {"eval-c"}
    assert listed(f'{base} AND display_name:"train-*"') == {"train-a", "train-b"}
    assert listed(f"{base} AND display_name=eval-c") == {"eval-c"}
    assert listed(f"{base} AND (labels.team=vision OR display_name=eval-c)") == {
        "train-a",
        "eval-c",
    }
    assert listed(f"{base} AND labels.team!=vision") == {"train-b", "eval-c"}

    for name in names.values():
        wait_for_state(client, name, TERMINAL, timeout=10)
    assert listed(f"{base} AND state=JOB_STATE_SUCCEEDED") == set(specs)
    assert listed(f"{base} AND state=JOB_STATE_RUNNING") == set()
    assert listed(f'{base} AND create_time>"2000-01-01T00:00:00Z"') == set(specs)
    assert listed(f'{base} AND create_time<"2000-01-01T00:00:00Z"') == set()


def test_list_pagination(sim: EmulatorProcess) -> None:
    client = sim.client()
    run = unique()
    created = [
        client.create_custom_job(
            parent=PARENT, custom_job=make_job(f"page-{i}", labels={"run": run})
        ).name
        for i in range(7)
    ]
    pager = client.list_custom_jobs(
        request={"parent": PARENT, "filter": f"labels.run={run}", "page_size": 3}
    )
    pages = [[j.name for j in page.custom_jobs] for page in pager.pages]
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [n for p in pages for n in p] == created  # creation order, nothing lost or repeated


@pytest.mark.parametrize(
    ("expr", "mentions"),
    [
        ("colour=red", "colour"),
        ("state=RUNNING", "RUNNING"),
        ("labels.team=", "value"),
        ("(labels.team=a", "end of filter"),
        ("labels.team<a", "operator"),
    ],
)
def test_bad_filter_is_invalid_argument(sim: EmulatorProcess, expr: str, mentions: str) -> None:
    with pytest.raises(gexc.BadRequest, match=mentions):
        list(sim.client().list_custom_jobs(request={"parent": PARENT, "filter": expr}))


def test_bad_page_token_is_invalid_argument(sim: EmulatorProcess) -> None:
    with pytest.raises(gexc.BadRequest, match="pageToken"):
        list(sim.client().list_custom_jobs(request={"parent": PARENT, "page_token": "garbage"}))


def test_cancel(sim: EmulatorProcess) -> None:
    client = sim.client()
    job = client.create_custom_job(
        parent=PARENT, custom_job=make_job("hang", labels={"emulator-outcome": "hang"})
    )
    wait_for_state(client, job.name, [S.JOB_STATE_RUNNING], timeout=10)
    client.cancel_custom_job(name=job.name)
    assert client.get_custom_job(name=job.name).state in (
        S.JOB_STATE_CANCELLING,
        S.JOB_STATE_CANCELLED,
    )
    done = wait_for_state(client, job.name, TERMINAL, timeout=10)
    assert done.state == S.JOB_STATE_CANCELLED
    assert done.error.code == 1
    assert done.end_time >= done.start_time
    with pytest.raises(gexc.BadRequest, match="already in state JOB_STATE_CANCELLED") as refused:
        client.cancel_custom_job(name=job.name)
    # The provider cancels before it reads: it must tell this refusal from other 400s.
    assert is_failed_precondition(refused.value)
    with pytest.raises(gexc.BadRequest) as invalid:
        list(client.list_custom_jobs(request={"parent": PARENT, "filter": "colour=red"}))
    assert not is_failed_precondition(invalid.value)


def test_simulated_failure_and_timeout(sim: EmulatorProcess) -> None:
    client = sim.client()
    failing = client.create_custom_job(
        parent=PARENT, custom_job=make_job("fails", labels={"emulator-outcome": "fail"})
    )
    hanging = client.create_custom_job(
        parent=PARENT,
        custom_job=make_job("slow", labels={"emulator-outcome": "hang"}, timeout_seconds=0.5),
    )
    failed = wait_for_state(client, failing.name, TERMINAL, timeout=10)
    assert failed.state == S.JOB_STATE_FAILED
    assert "emulator-outcome=fail" in failed.error.message
    timed_out = wait_for_state(client, hanging.name, TERMINAL, timeout=10)
    assert timed_out.state == S.JOB_STATE_FAILED
    assert timed_out.error.code == 4  # DEADLINE_EXCEEDED
    assert "scheduling.timeout" in timed_out.error.message
    assert (timed_out.end_time - timed_out.start_time).total_seconds() >= 0.5


def test_run_length_label(sim: EmulatorProcess) -> None:
    client = sim.client()
    job = client.create_custom_job(
        parent=PARENT, custom_job=make_job("long", labels={"emulator-run-ms": "1500"})
    )
    done = wait_for_state(client, job.name, TERMINAL, timeout=10)
    assert done.state == S.JOB_STATE_SUCCEEDED
    assert (done.end_time - done.start_time).total_seconds() >= 1.5
    with pytest.raises(gexc.BadRequest, match="emulator-run-ms"):
        client.create_custom_job(
            parent=PARENT, custom_job=make_job("x", labels={"emulator-run-ms": "soon"})
        )


def test_delete_returns_an_operation(sim: EmulatorProcess) -> None:
    client = sim.client()
    job = client.create_custom_job(parent=PARENT, custom_job=make_job("to-delete"))
    with pytest.raises(gexc.BadRequest, match="cancel it"):
        client.delete_custom_job(name=job.name)
    wait_for_state(client, job.name, TERMINAL, timeout=10)
    op = client.delete_custom_job(name=job.name)
    assert "/operations/" in op.operation.name
    op.result(timeout=10)  # type: ignore[no-untyped-call]
    assert op.done()  # type: ignore[no-untyped-call]
    assert op.metadata.generic_metadata.create_time.timestamp() > 0
    with pytest.raises(gexc.NotFound):
        client.get_custom_job(name=job.name)
    # The finished operation stays readable, as on Vertex.
    polled = client.get_operation(request={"name": op.operation.name})
    assert polled.done


@pytest.mark.parametrize(
    ("mutate", "mentions"),
    [
        (lambda j: setattr(j, "display_name", ""), "Field: display_name; Message: Required field"),
        (lambda j: j.job_spec.worker_pool_specs.clear(), "At least one worker pool"),
        (
            lambda j: setattr(j.job_spec.worker_pool_specs[0], "replica_count", 2),
            r"worker_pool_specs\[0\].replica_count",
        ),
        (
            lambda j: j.job_spec.worker_pool_specs[0]._pb.ClearField("python_package_spec"),
            "Exactly one of container_spec or python_package_spec",
        ),
        (
            lambda j: setattr(j.job_spec.worker_pool_specs[0].machine_spec, "accelerator_count", 2),
            "Both `accelerator_type` and `accelerator_count` should be specified or none",
        ),
        (lambda j: j.labels.update({"Team": "x"}), "label keys"),
        (
            lambda j: setattr(
                j.job_spec, "base_output_directory", aip.GcsDestination(output_uri_prefix="/tmp/x")
            ),
            "output_uri_prefix",
        ),
    ],
)
def test_vertex_rules_are_enforced(sim: EmulatorProcess, mutate, mentions: str) -> None:
    job = make_job("rules")
    mutate(job)
    # The REST client maps any HTTP 400 to BadRequest; the gRPC status is in the body.
    with pytest.raises(gexc.BadRequest, match=mentions) as info:
        sim.client().create_custom_job(parent=PARENT, custom_job=job)
    assert "INVALID_ARGUMENT" in json.dumps(info.value.response.json())


def test_accelerator_count_must_attach_to_the_machine_type(sim: EmulatorProcess) -> None:
    pool = trainer_pool(
        machine_type="n1-standard-8", accelerator=(aip.AcceleratorType.NVIDIA_TESLA_T4, 3)
    )
    with pytest.raises(
        gexc.BadRequest,
        match=r"worker_pool_specs\[0\]\.machine_spec\.accelerator_count; Message: Accelerator count 3",
    ):
        sim.client().create_custom_job(parent=PARENT, custom_job=make_job("t4x3", pools=[pool]))
    ok = trainer_pool(
        machine_type="n1-standard-8", accelerator=(aip.AcceleratorType.NVIDIA_TESLA_T4, 2)
    )
    created = sim.client().create_custom_job(parent=PARENT, custom_job=make_job("t4x2", pools=[ok]))
    assert created.state == S.JOB_STATE_QUEUED


def test_secrets_never_echoed_in_errors(sim: EmulatorProcess) -> None:
    # The env value doubles as a package path, so the "outside allowed roots" message would
    # contain it verbatim if the service did not redact env values.
    secret = "/etc/s3cr3t-token-123"
    pool = trainer_pool(package_uris=[secret], env={"API_TOKEN": secret})
    with pytest.raises(gexc.BadRequest, match="package_uris") as info:
        sim.client().create_custom_job(parent=PARENT, custom_job=make_job("secret", pools=[pool]))
    assert secret not in str(info.value)
    assert "<redacted>" in str(info.value)
    assert secret not in sim.log_path.read_text()


def test_package_outside_allowed_roots_is_rejected(sim: EmulatorProcess) -> None:
    pool = trainer_pool(package_uris=["/etc/passwd"])
    with pytest.raises(gexc.BadRequest, match=r"package_uris\[0\].*--allow-root"):
        sim.client().create_custom_job(parent=PARENT, custom_job=make_job("etc", pools=[pool]))
    pool = trainer_pool(package_uris=["https://example.invalid/pkg.tar.gz"])
    with pytest.raises(gexc.BadRequest, match=r"unsupported (URI )?scheme"):
        sim.client().create_custom_job(parent=PARENT, custom_job=make_job("http", pools=[pool]))


@pytest.fixture
def faults(sim: EmulatorProcess):
    try:
        yield sim
    finally:
        sim.clear_faults()


@pytest.mark.parametrize(
    ("fault", "exc"),
    [
        ("unavailable_rate", gexc.ServiceUnavailable),
        ("rate_limit_rate", gexc.TooManyRequests),
        ("conflict_rate", gexc.Conflict),
    ],
)
def test_injected_errors(faults: EmulatorProcess, fault: str, exc: type[Exception]) -> None:
    client = faults.client()
    faults.set_faults(**{fault: 1.0})
    with pytest.raises(exc, match="Injected fault"):
        client.get_custom_job(name=f"{PARENT}/customJobs/1234567890123456789")
    faults.set_faults(**{fault: 0.5, "seed": 7})
    outcomes = []
    for _ in range(40):
        try:
            client.get_custom_job(name=f"{PARENT}/customJobs/1234567890123456789")
        except gexc.NotFound:
            outcomes.append(True)  # reached the real handler
        except exc:
            outcomes.append(False)
    assert 5 < outcomes.count(False) < 35  # about half fail


def test_injected_latency(faults: EmulatorProcess) -> None:
    client = faults.client()
    faults.set_faults(latency_ms=300)
    started = time.perf_counter()
    with pytest.raises(gexc.NotFound):
        client.get_custom_job(name=f"{PARENT}/customJobs/1234567890123456789")
    assert time.perf_counter() - started >= 0.3


@pytest.mark.parametrize(
    ("mode", "exc"),
    [("close", requests.exceptions.ConnectionError), ("503", gexc.ServiceUnavailable)],
)
def test_dropped_create_response(faults: EmulatorProcess, mode: str, exc: type[Exception]) -> None:
    client = faults.client()
    run = unique()
    faults.set_faults(drop_create=1, drop_mode=mode)
    with pytest.raises(exc):
        client.create_custom_job(parent=PARENT, custom_job=make_job("lost", labels={"run": run}))
    stored = list(
        client.list_custom_jobs(request={"parent": PARENT, "filter": f"labels.run={run}"})
    )
    assert [j.display_name for j in stored] == ["lost"]
    # Only one response was dropped: the next create answers normally.
    again = client.create_custom_job(parent=PARENT, custom_job=make_job("kept"))
    assert again.state == S.JOB_STATE_QUEUED


def test_bad_fault_settings_name_the_field(faults: EmulatorProcess) -> None:
    with pytest.raises(RuntimeError, match=r"faults\.unavailable_rate"):
        faults.set_faults(unavailable_rate=2)
    with pytest.raises(RuntimeError, match=r"faults\.explode"):
        faults.set_faults(explode=True)


def _raw(sim: EmulatorProcess, method: str, path: str, body: bytes | None = None):
    req = urllib.request.Request(
        sim.endpoint + path, data=body, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.parametrize(
    ("body", "mentions"),
    [
        (b"{not json", "Invalid JSON payload"),
        (b'{"displayName": "x", "bogusField": 1}', "bogusField"),
        (b'{"displayName": 5}', "displayName"),
        (b"[]", "Invalid JSON payload"),
        (
            b'{"displayName": "x", "jobSpec": {"workerPoolSpecs": [{"containerSpec": '
            b'{"imageUri": "i"}, "pythonPackageSpec": {"pythonModule": "m"}}]}}',
            "oneof",
        ),
    ],
)
def test_malformed_create_gets_400_json(sim: EmulatorProcess, body: bytes, mentions: str) -> None:
    status, payload = _raw(sim, "POST", f"/v1/{PARENT}/customJobs", body)
    assert status == 400
    assert payload["error"]["code"] == 400
    assert payload["error"]["status"] == "INVALID_ARGUMENT"
    assert mentions in payload["error"]["message"]


def test_concurrent_clients_are_all_answered(sim: EmulatorProcess) -> None:
    """24 clients create, look up (the provider's adoption filter), get and cancel at once: every
    call is answered as it would be alone (no 5xx such as "database is locked"), and each look-up
    finds exactly its own job among the others'."""
    run = unique()
    body = aip.CustomJob.to_json(make_job("concurrent", labels={"run": run})).encode()
    answers: list[tuple[str, int, str]] = []
    lock = threading.Lock()

    def client(i: int) -> None:
        seen: list[tuple[str, int, str]] = []
        for round_ in range(4):
            identity = f"c{i}-{round_}"
            payload = json.loads(body)
            payload["labels"] = {"run": run, "identity": identity}
            status, created = _raw(
                sim, "POST", f"/v1/{PARENT}/customJobs", json.dumps(payload).encode()
            )
            seen.append(("create", status, ""))
            if status != 200:
                continue
            text = f'labels.identity="{identity}" AND (labels.run="{run}" OR labels.run="x")'
            status, listed = _raw(sim, "GET", f"/v1/{PARENT}/customJobs?filter={quote(text)}")
            names = [j["name"] for j in listed.get("customJobs", [])] if status == 200 else []
            seen.append(("list", status, "own job" if names == [created["name"]] else str(names)))
            status, _ = _raw(sim, "GET", f"/v1/{created['name']}")
            seen.append(("get", status, ""))
            status, answer = _raw(sim, "POST", f"/v1/{created['name']}:cancel", b"{}")
            # A job that already finished cannot be cancelled: that answer is a 400 too.
            finished = status == 400 and answer["error"]["status"] == "FAILED_PRECONDITION"
            seen.append(("cancel", 200 if finished else status, ""))
        with lock:
            answers.extend(seen)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(answers) == 24 * 4 * 4
    assert {(call, status) for call, status, _ in answers} <= {
        ("create", 200),
        ("list", 200),
        ("get", 200),
        ("cancel", 200),
    }, [a for a in answers if a[1] != 200]
    assert {note for call, _, note in answers if call == "list"} == {"own job"}


def test_unknown_route_gets_404_json(sim: EmulatorProcess) -> None:
    status, payload = _raw(sim, "GET", "/v1/projects/p/locations/l/trainingPipelines")
    assert status == 404
    assert payload["error"]["status"] == "NOT_FOUND"
    status, payload = _raw(sim, "GET", f"/v1/{PARENT}/customJobs?pageSize=abc")
    assert status == 400
    assert "pageSize" in payload["error"]["message"]
