"""Newer v1 CustomJob fields through the emulator and the real google-cloud-aiplatform client.

The emulator stores the job as the library's proto, so every field a client sends comes back
from ``get_custom_job``, and ``components.vertex.convert`` reads them back into a spec.
"""

from __future__ import annotations

import copy
import json
import warnings
from typing import Any

import pytest
import yaml
from google.api_core import exceptions as gexc
from google.cloud.aiplatform_v1 import types as aip

from components import JobSpec
from emulator.names import derived_number
from emulator.testing import EmulatorProcess
from tests.spec.test_api_fields import FULL_YAML

from .conftest import PARENT, PROJECT, REGION, make_job, raw_http

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    from components.vertex.convert import from_custom_job, to_custom_job


def _spec() -> JobSpec:
    document = yaml.safe_load(FULL_YAML)
    # A reservation is consumed by plain (STANDARD) scheduling; DWS FLEX_START does not use one.
    document["jobSpec"]["scheduling"] = {"strategy": "STANDARD", "timeout": "7200s"}
    return JobSpec.parse({**document, "project": PROJECT, "region": REGION})


def test_new_fields_are_stored_and_returned(sim: EmulatorProcess) -> None:
    spec = _spec()
    client = sim.client()
    created = client.create_custom_job(parent=PARENT, custom_job=to_custom_job(spec))
    got = client.get_custom_job(name=created.name)
    job_spec = got.job_spec
    assert job_spec.persistent_resource_id == "h100-pool"
    assert job_spec.protected_artifact_location_id == "us-central1"
    assert job_spec.experiment_run == "llm-run-7"
    assert list(job_spec.models) == ["projects/my-project/locations/us-central1/models/base-llm"]
    assert job_spec.psc_interface_config.dns_peering_configs[0].domain == "corp.example.com."
    assert job_spec.scheduling.strategy == aip.Scheduling.Strategy.STANDARD
    chief = job_spec.worker_pool_specs[0]
    assert chief.machine_spec.gpu_partition_size == "1g.10gb"
    affinity = chief.machine_spec.reservation_affinity
    assert affinity.reservation_affinity_type == aip.ReservationAffinity.Type.SPECIFIC_RESERVATION
    assert affinity.key == "compute.googleapis.com/reservation-name"
    assert chief.nfs_mounts[0].mount_point == "datasets"
    assert chief.lustre_mounts[0].instance_ip == "10.20.0.9"
    assert chief.disk_spec.boot_disk_type == "hyperdisk-balanced"
    # And back into the spec it was made from, with the project as Vertex names it: by number.
    assert from_custom_job(got) == spec.model_copy(update={"project": derived_number(PROJECT)})


def _raw_job(**changes: Any) -> dict[str, Any]:
    """A job as proto JSON, ``changes`` applied to its chief's machine spec and its job spec."""
    job: dict[str, Any] = json.loads(aip.CustomJob.to_json(make_job("raw-new-fields")))
    job["jobSpec"]["workerPoolSpecs"][0]["machineSpec"].update(changes.pop("machine", {}))
    job["jobSpec"].update(changes)
    return job


@pytest.mark.parametrize(
    ("job", "field"),
    [
        (
            _raw_job(machine={"reservationAffinity": {"reservationAffinityType": 9}}),
            "worker_pool_specs[0].machine_spec.reservation_affinity.reservation_affinity_type",
        ),
        (_raw_job(scheduling={"strategy": 42}), "job_spec.scheduling.strategy"),
    ],
)
def test_unknown_enum_numbers_are_refused_naming_the_field(
    sim: EmulatorProcess, job: dict[str, Any], field: str
) -> None:
    status, body = raw_http(sim, "POST", f"/v1/{PARENT}/customJobs", json.dumps(job).encode())
    assert status == 400, body
    assert field in body["error"]["message"]


def test_a_mount_without_its_server_is_refused(sim: EmulatorProcess) -> None:
    # NfsMount.server is REQUIRED in the v1 protos.
    job = to_custom_job(_spec())
    job.job_spec.worker_pool_specs[0].nfs_mounts[0].server = ""
    with pytest.raises(
        gexc.BadRequest,
        match=r"Field: job_spec\.worker_pool_specs\[0\]\.nfs_mounts\[0\]\.server; "
        "Message: Required field is not set",
    ):
        sim.client().create_custom_job(parent=PARENT, custom_job=job)


def test_output_only_satisfies_fields_from_the_client_are_cleared(sim: EmulatorProcess) -> None:
    job = copy.deepcopy(make_job("pzs"))
    job.satisfies_pzs = True
    job.satisfies_pzi = True
    created = sim.client().create_custom_job(parent=PARENT, custom_job=job)
    assert not created.satisfies_pzs and not created.satisfies_pzi
