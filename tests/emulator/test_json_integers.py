"""Integers in requests are what the API reads as integers: JSON numbers, or strings of ASCII
decimal digits (proto3 JSON). Python's ``int()``, which the protobuf runtime calls, also takes
``"٣"`` and ``"3_0"``; the service refuses them, in a job's body as in a page size."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from emulator.testing import EmulatorProcess, running_emulator
from tests.emulator.conftest import PARENT, SIMULATE_ARGS, raw_http

JOBS = f"/v1/{PARENT}/customJobs"
QUOTA_INFOS = "/v1/projects/p/locations/global/services/aiplatform.googleapis.com/quotaInfos"


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorProcess]:
    with running_emulator(*SIMULATE_ARGS) as server:
        yield server


def _job(replicas: object) -> bytes:
    pool = {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": replicas,
        "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/i:1"},
    }
    return json.dumps({"displayName": "ints", "jobSpec": {"workerPoolSpecs": [pool]}}).encode()


@pytest.mark.parametrize("value", ["٣", "3_0", "\uff13", "0x3"])  # Arabic-Indic, fullwidth
def test_a_job_field_holding_no_integer_is_a_400_naming_it(emu, value):
    status, answer = raw_http(emu, "POST", JOBS, _job(value))
    assert status == 400, answer
    assert "replicaCount" in answer["error"]["message"]


@pytest.mark.parametrize("value", [1, "1", "1e0", 1.0])
def test_every_form_of_an_integer_the_api_reads_is_taken(emu, value):
    status, answer = raw_http(emu, "POST", JOBS, _job(value))
    assert status == 200, answer
    assert answer["jobSpec"]["workerPoolSpecs"][0].get("replicaCount") == "1"


@pytest.mark.parametrize("path", [JOBS, QUOTA_INFOS])
@pytest.mark.parametrize("size", ["%D9%A3", "3_0", "%203%20"])  # ٣, 3_0, " 3 "
def test_a_page_size_holding_no_integer_is_a_400(emu, path, size):
    status, answer = raw_http(emu, "GET", f"{path}?pageSize={size}")
    assert status == 400, answer
    assert "pageSize" in answer["error"]["message"]
