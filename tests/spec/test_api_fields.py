"""The spec model against the whole Vertex AI v1 CustomJob API, and the forms users hand over.

Newer v1 fields (persistent resources, PSC interface, experiments, NFS and Lustre mounts, MIG
partitions, reservations) round-trip YAML -> JobSpec -> proto -> JobSpec; a whole CustomJob as
``gcloud ai custom-jobs describe`` prints it and a CreateCustomJobRequest body are read; single
values stand for lists as gcloud's YAML decoder reads them.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from components import JobSpec, SpecFormatError, SpecInvalidError, TuningJobSpec, load_spec_file
from components.formats import spec_from_document
from components.lifecycle._wire import encode_spec
from components.review import render_markdown
from components.rules import _spec as spec_module
from tests.spec.helpers import pool

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    from google.cloud import aiplatform_v1

    from components.vertex.convert import custom_job_spec_document, from_custom_job, to_custom_job

FULL_YAML = """\
displayName: llm-finetune
labels:
  team: research
jobSpec:
  persistentResourceId: h100-pool
  protectedArtifactLocationId: us-central1
  experiment: projects/my-project/locations/us-central1/metadataStores/default/contexts/llm
  experimentRun: llm-run-7
  models:
    - projects/my-project/locations/us-central1/models/base-llm
  pscInterfaceConfig:
    networkAttachment: projects/my-project/regions/us-central1/networkAttachments/train-na
    dnsPeeringConfigs:
      - domain: corp.example.com.
        targetProject: shared-vpc-host
        targetNetwork: corp-net
  workerPoolSpecs:
    - machineSpec:
        machineType: a3-highgpu-1g
        acceleratorType: NVIDIA_H100_80GB
        acceleratorCount: 1
        gpuPartitionSize: 1g.10gb
        reservationAffinity:
          reservationAffinityType: SPECIFIC_RESERVATION
          key: compute.googleapis.com/reservation-name
          values:
            - projects/my-project/zones/us-central1-a/reservations/h100-res
      replicaCount: 1
      diskSpec:
        bootDiskType: hyperdisk-balanced
        bootDiskSizeGb: 200
      nfsMounts:
        - server: 10.20.0.2
          path: /datasets
          mountPoint: datasets
      lustreMounts:
        - instanceIp: 10.20.0.9
          volumeHandle: my-project/us-central1-a/lustre-1
          filesystem: lfs
          mountPoint: scratch
      containerSpec:
        imageUri: us-central1-docker.pkg.dev/my-project/train/llm:3
        args: ["--epochs=3"]
  scheduling:
    strategy: FLEX_START
    maxWaitDuration: 1800s
"""


def _full() -> JobSpec:
    return JobSpec.parse(yaml.safe_load(FULL_YAML))


# --- the model mirrors the API --------------------------------------------------------------

_OUTPUT_ONLY = {
    "name",
    "state",
    "create_time",
    "start_time",
    "end_time",
    "update_time",
    "error",
    "web_access_uris",
    "satisfies_pzs",
    "satisfies_pzi",
}


@pytest.mark.parametrize(
    ("model", "proto", "left_out"),
    [
        (spec_module.JobSpec, aiplatform_v1.CustomJob, _OUTPUT_ONLY | {"job_spec"}),
        (spec_module.JobSpec, aiplatform_v1.CustomJobSpec, set()),
        (spec_module.WorkerPoolSpec, aiplatform_v1.WorkerPoolSpec, set()),
        (spec_module.MachineSpec, aiplatform_v1.MachineSpec, set()),
        (spec_module.ReservationAffinity, aiplatform_v1.ReservationAffinity, set()),
        (spec_module.DiskSpec, aiplatform_v1.DiskSpec, set()),
        (spec_module.NfsMount, aiplatform_v1.NfsMount, set()),
        (spec_module.LustreMount, aiplatform_v1.LustreMount, set()),
        (spec_module.PythonPackageSpec, aiplatform_v1.PythonPackageSpec, set()),
        (spec_module.ContainerSpec, aiplatform_v1.ContainerSpec, set()),
        (spec_module.EnvVar, aiplatform_v1.EnvVar, set()),
        (spec_module.Scheduling, aiplatform_v1.Scheduling, set()),
        (spec_module.PscInterfaceConfig, aiplatform_v1.PscInterfaceConfig, set()),
        (spec_module.DnsPeeringConfig, aiplatform_v1.DnsPeeringConfig, set()),
        (spec_module.EncryptionSpec, aiplatform_v1.EncryptionSpec, set()),
    ],
)
def test_every_field_of_the_pinned_client_is_in_the_model(
    model: type[BaseModel], proto: Any, left_out: set[str]
) -> None:
    fields = set(proto.meta.fields) - left_out
    assert fields - set(model.model_fields) == set()


def test_strategy_and_reservation_names_are_the_clients() -> None:
    assert set(spec_module.RESERVATION_AFFINITY_TYPES) == set(
        aiplatform_v1.ReservationAffinity.Type.__members__
    ) - {"TYPE_UNSPECIFIED"}
    for strategy in ("ON_DEMAND", "LOW_COST", "STANDARD", "SPOT", "FLEX_START"):
        spec = JobSpec.parse({"workerPoolSpecs": [pool()], "scheduling": {"strategy": strategy}})
        assert to_custom_job(spec).job_spec.scheduling.strategy.name == strategy
        assert from_custom_job(to_custom_job(spec)).scheduling == spec.scheduling


# --- new fields round-trip ------------------------------------------------------------------


def test_full_yaml_round_trips_through_the_proto() -> None:
    spec = _full()
    job = to_custom_job(spec)
    machine = job.job_spec.worker_pool_specs[0].machine_spec
    assert machine.gpu_partition_size == "1g.10gb"
    assert machine.reservation_affinity.reservation_affinity_type.name == "SPECIFIC_RESERVATION"
    assert list(machine.reservation_affinity.values) == [
        "projects/my-project/zones/us-central1-a/reservations/h100-res"
    ]
    assert job.job_spec.persistent_resource_id == "h100-pool"
    assert job.job_spec.worker_pool_specs[0].lustre_mounts[0].volume_handle == (
        "my-project/us-central1-a/lustre-1"
    )
    assert job.job_spec.psc_interface_config.dns_peering_configs[0].target_network == "corp-net"
    back = from_custom_job(
        aiplatform_v1.CustomJob.deserialize(aiplatform_v1.CustomJob.serialize(job))
    )
    assert back == spec
    assert back.to_document() == spec.to_document()


def test_validate_custom_job_checks_a_job_as_a_client_sent_it() -> None:
    """``validate_custom_job``: the project's rules on a CustomJob message (e.g. one read back
    from the API), its place given apart."""
    from components.vertex.convert import to_custom_job, validate_custom_job

    job = to_custom_job(_full())
    assert validate_custom_job(job, project="my-project", region="us-central1") == []
    job.job_spec.worker_pool_specs[0].machine_spec.accelerator_count = 3
    found = validate_custom_job(job, project="my-project", region="us-central1")
    assert found and {v.path for v in found} == {"workerPoolSpecs[0].machineSpec.acceleratorCount"}


def test_convert_document_carries_the_new_fields_and_reads_back() -> None:
    spec = _full()
    document = custom_job_spec_document(spec)
    assert document["persistentResourceId"] == "h100-pool"
    assert document["experimentRun"] == "llm-run-7"
    assert document["models"] == ["projects/my-project/locations/us-central1/models/base-llm"]
    assert document["pscInterfaceConfig"]["networkAttachment"].endswith("/train-na")
    chief = document["workerPoolSpecs"][0]
    assert chief["machineSpec"]["gpuPartitionSize"] == "1g.10gb"
    assert chief["machineSpec"]["reservationAffinity"]["key"] == (
        "compute.googleapis.com/reservation-name"
    )
    assert chief["nfsMounts"] == [
        {"server": "10.20.0.2", "path": "/datasets", "mountPoint": "datasets"}
    ]
    assert chief["lustreMounts"][0]["mountPoint"] == "scratch"
    # What `convert` prints is a CustomJobSpec that reads back to the same job.
    reread = JobSpec.parse(
        {"displayName": "llm-finetune", "labels": {"team": "research"}, **document}
    )
    assert reread == spec


@pytest.mark.parametrize(
    ("where", "fragment", "attribute", "expected"),
    [
        ("job", {"persistentResourceId": "pr-1"}, "persistent_resource_id", "pr-1"),
        ("job", {"protectedArtifactLocationId": "eu"}, "protected_artifact_location_id", "eu"),
        ("job", {"experiment": "exp"}, "experiment", "exp"),
        ("job", {"experimentRun": "run"}, "experiment_run", "run"),
        ("job", {"models": ["m1", "m2"]}, "models", ["m1", "m2"]),
        ("machine", {"gpuPartitionSize": "3g.40gb"}, "gpu_partition_size", "3g.40gb"),
        (
            "machine",
            {"reservationAffinity": {"reservationAffinityType": "ANY_RESERVATION"}},
            "reservation_affinity",
            spec_module.ReservationAffinity(reservation_affinity_type="ANY_RESERVATION"),
        ),
        (
            "machine",
            {"reservationAffinity": {"reservationAffinityType": "NO_RESERVATION"}},
            "reservation_affinity",
            spec_module.ReservationAffinity(reservation_affinity_type="NO_RESERVATION"),
        ),
        (
            "pool",
            {"nfsMounts": [{"server": "s", "path": "/p", "mountPoint": "m"}]},
            "nfs_mounts",
            [spec_module.NfsMount(server="s", path="/p", mount_point="m")],
        ),
    ],
)
def test_each_new_field_round_trips_alone(
    where: str, fragment: dict[str, Any], attribute: str, expected: Any
) -> None:
    chief = pool("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1)
    document: dict[str, Any] = {"displayName": "one-field", "workerPoolSpecs": [chief]}
    {"job": document, "pool": chief, "machine": chief["machineSpec"]}[where].update(fragment)
    spec = JobSpec.parse(yaml.safe_load(yaml.safe_dump(document)))
    back = from_custom_job(to_custom_job(spec))
    holder: Any = {
        "job": back,
        "pool": back.worker_pool_specs[0],
        "machine": back.worker_pool_specs[0].machine_spec,
    }[where]
    assert getattr(holder, attribute) == expected
    assert back.to_document() == spec.to_document()
    (key,) = fragment
    assert f'"{key}"' in json.dumps(spec.to_document())


# --- compatibility: unset new fields change nothing -----------------------------------------

_NEW_KEYS = {
    "persistentResourceId",
    "pscInterfaceConfig",
    "protectedArtifactLocationId",
    "experiment",
    "experimentRun",
    "models",
    "nfsMounts",
    "lustreMounts",
    "gpuPartitionSize",
    "reservationAffinity",
}


def test_specs_without_new_fields_give_the_documents_they_gave_before() -> None:
    document: dict[str, Any] = {
        "displayName": "old",
        "labels": {"team": "ml"},
        "workerPoolSpecs": [pool("n1-standard-8", "NVIDIA_TESLA_T4", 1)],
        "scheduling": {"timeout": "3600s", "strategy": "SPOT"},
    }
    spec = JobSpec.parse(document)
    # The exact document of before these fields existed, as every hash and the state see it
    # (canonical JSON: sorted keys).
    assert json.dumps(spec.to_document(), sort_keys=True) == json.dumps(
        {
            "displayName": "old",
            "labels": {"team": "ml"},
            "workerPoolSpecs": [
                {
                    "machineSpec": {
                        "machineType": "n1-standard-8",
                        "acceleratorType": "NVIDIA_TESLA_T4",
                        "acceleratorCount": 1,
                    },
                    "replicaCount": 1,
                    "pythonPackageSpec": document["workerPoolSpecs"][0]["pythonPackageSpec"],
                }
            ],
            "scheduling": {"timeout": "3600s", "strategy": "SPOT"},
        },
        sort_keys=True,
    )
    text = json.dumps(custom_job_spec_document(spec))
    assert not any(f'"{key}"' in text for key in _NEW_KEYS)
    proto = to_custom_job(spec)
    assert "reservation_affinity" not in proto.job_spec.worker_pool_specs[0].machine_spec
    assert "psc_interface_config" not in proto.job_spec


def test_stack_job_files_emit_no_new_keys() -> None:
    root = Path(__file__).resolve().parents[2] / "stacks" / "jobs"
    files = sorted(p for p in root.glob("*.yaml"))
    assert files
    for path in files:
        document = yaml.safe_load(path.read_text())
        if isinstance(document, dict) and "studySpec" in document:  # a tuning job: its trials'
            spec = TuningJobSpec.parse(document).trial_job()
        else:
            spec = load_spec_file(path).spec
        text = json.dumps(spec.to_document())
        assert not any(f'"{key}"' in text for key in _NEW_KEYS), path.name


# --- reservation affinity types -------------------------------------------------------------


def _with_affinity(affinity: dict[str, Any]) -> dict[str, Any]:
    chief = pool("a3-highgpu-8g", "NVIDIA_H100_80GB", 8)
    chief["machineSpec"]["reservationAffinity"] = affinity
    return {"workerPoolSpecs": [chief]}


def test_unknown_reservation_affinity_type_is_a_schema_violation() -> None:
    with pytest.raises(SpecInvalidError) as caught:
        JobSpec.parse(_with_affinity({"reservationAffinityType": "SPECIFIC_RESERVATON"}))
    (violation,) = caught.value.violations
    assert violation.path == (
        "workerPoolSpecs[0].machineSpec.reservationAffinity.reservationAffinityType"
    )
    assert violation.rule == "schema"
    assert "NO_RESERVATION, ANY_RESERVATION, SPECIFIC_RESERVATION" in violation.reason
    assert violation.suggestion == "did you mean SPECIFIC_RESERVATION?"


def test_reservation_affinity_type_names_are_exact() -> None:
    with pytest.raises(SpecInvalidError, match="did you mean ANY_RESERVATION"):
        JobSpec.parse(_with_affinity({"reservationAffinityType": "any_reservation"}))


def test_unspecified_reservation_affinity_type_is_unset() -> None:
    spec = JobSpec.parse(_with_affinity({"reservationAffinityType": "TYPE_UNSPECIFIED"}))
    machine = spec.worker_pool_specs[0].machine_spec
    assert machine is not None and machine.reservation_affinity is not None
    assert machine.reservation_affinity.reservation_affinity_type is None
    assert "reservationAffinity" not in json.dumps(custom_job_spec_document(spec))


@pytest.mark.parametrize(
    ("mount", "path"),
    [
        ({"server": "10.0.0.2", "path": "/x"}, "workerPoolSpecs[0].nfsMounts[0].mountPoint"),
        (
            {"server": " ", "path": "/x", "mountPoint": "m"},
            "workerPoolSpecs[0].nfsMounts[0].server",
        ),
    ],
)
def test_nfs_mount_fields_are_required(mount: dict[str, str], path: str) -> None:
    chief = pool()
    chief["nfsMounts"] = [mount]
    with pytest.raises(SpecInvalidError) as caught:
        JobSpec.parse({"workerPoolSpecs": [chief]})
    assert [v.path for v in caught.value.violations] == [path]


def test_a_pool_with_only_mounts_is_not_a_placeholder() -> None:
    spec = JobSpec.parse(
        {
            "workerPoolSpecs": [
                pool(),
                {"nfsMounts": [{"server": "s", "path": "/p", "mountPoint": "m"}]},
            ]
        }
    )
    assert not spec.worker_pool_specs[1].is_placeholder


# --- gcloud's forgiving YAML: one value for a list ------------------------------------------

# (model, field): a single value written for it, and the one-element list it stands for.
_SINGLE_VALUES: dict[tuple[str, str], tuple[Any, list[Any]]] = {
    ("JobSpec", "worker_pool_specs"): (pool(), [pool()]),
    ("JobSpec", "reserved_ip_ranges"): ("a-range", ["a-range"]),
    ("JobSpec", "models"): ("m", ["m"]),
    ("WorkerPoolSpec", "nfs_mounts"): (
        {"server": "s", "path": "/p", "mountPoint": "m"},
        [{"server": "s", "path": "/p", "mountPoint": "m"}],
    ),
    ("WorkerPoolSpec", "lustre_mounts"): (
        {"instanceIp": "i", "volumeHandle": "v", "filesystem": "f", "mountPoint": "m"},
        [{"instanceIp": "i", "volumeHandle": "v", "filesystem": "f", "mountPoint": "m"}],
    ),
    ("PythonPackageSpec", "package_uris"): ("gs://bkt/x.tar.gz", ["gs://bkt/x.tar.gz"]),
    ("PythonPackageSpec", "args"): ("--epochs=3", ["--epochs=3"]),
    ("PythonPackageSpec", "env"): ({"name": "A", "value": "1"}, [{"name": "A", "value": "1"}]),
    ("ContainerSpec", "command"): ("python", ["python"]),
    ("ContainerSpec", "args"): ("--epochs=3", ["--epochs=3"]),
    ("ContainerSpec", "env"): ({"name": "A", "value": "1"}, [{"name": "A", "value": "1"}]),
    ("ReservationAffinity", "values"): ("projects/p/reservations/r", ["projects/p/reservations/r"]),
    ("PscInterfaceConfig", "dns_peering_configs"): (
        {"domain": "d.", "targetProject": "p", "targetNetwork": "n"},
        [{"domain": "d.", "targetProject": "p", "targetNetwork": "n"}],
    ),
}


def _list_fields_of_every_model() -> set[tuple[str, str]]:
    models = [
        value
        for value in vars(spec_module).values()
        if isinstance(value, type)
        and issubclass(value, BaseModel)
        and value.__module__ == (spec_module.__name__)
    ]
    found = set()
    for value in models:
        # A base's fields are counted once, under the model that a document is read into
        # (CustomJobSpec's under JobSpec).
        if not any(other is not value and issubclass(other, value) for other in models):
            for name, info in value.model_fields.items():
                if getattr(info.annotation, "__origin__", None) is list:
                    found.add((value.__name__, name))
    return found


def test_the_single_value_table_covers_every_list_field() -> None:
    assert _list_fields_of_every_model() == set(_SINGLE_VALUES)


def _document_with(model: str, field: str, value: Any) -> tuple[dict[str, Any], Any]:
    """A job document with ``value`` at ``model.field`` and a function reading it back."""
    chief = pool()
    document: dict[str, Any] = {"workerPoolSpecs": [chief]}
    camel = to_camel(field)
    if model == "JobSpec":
        document[camel] = value
        return document, lambda s: getattr(s, field)
    if model == "WorkerPoolSpec":
        chief[camel] = value
        return document, lambda s: getattr(s.worker_pool_specs[0], field)
    if model == "PythonPackageSpec":
        chief["pythonPackageSpec"][camel] = value
        return document, lambda s: getattr(s.worker_pool_specs[0].python_package_spec, field)
    if model == "ContainerSpec":
        del chief["pythonPackageSpec"]
        chief["containerSpec"] = {"imageUri": "us-docker.pkg.dev/p/r/i:1", camel: value}
        return document, lambda s: getattr(s.worker_pool_specs[0].container_spec, field)
    if model == "ReservationAffinity":
        chief["machineSpec"]["reservationAffinity"] = {
            "reservationAffinityType": "SPECIFIC_RESERVATION",
            camel: value,
        }
        return document, lambda s: getattr(
            s.worker_pool_specs[0].machine_spec.reservation_affinity, field
        )
    document["pscInterfaceConfig"] = {camel: value}
    return document, lambda s: getattr(s.psc_interface_config, field)


@pytest.mark.parametrize(("model", "field"), sorted(_SINGLE_VALUES))
def test_a_single_value_stands_for_a_list_of_one(model: str, field: str) -> None:
    single, as_list = _SINGLE_VALUES[(model, field)]
    document, read = _document_with(model, field, single)
    from_single = JobSpec.parse(document)
    document, _ = _document_with(model, field, as_list)
    assert from_single == JobSpec.parse(document)
    assert len(read(from_single)) == 1


@pytest.mark.parametrize(
    ("model", "field"),
    sorted(key for key, (single, _) in _SINGLE_VALUES.items() if isinstance(single, str)),
)
def test_a_mapping_where_texts_belong_is_refused_at_its_path(model: str, field: str) -> None:
    document, _ = _document_with(model, field, {"oops": "a mapping"})
    with pytest.raises(SpecInvalidError) as caught:
        JobSpec.parse(document)
    (violation,) = caught.value.violations
    assert violation.path.endswith(to_camel(field))
    assert violation.reason == "must be a list"


def test_env_as_a_mapping_of_names_is_still_many_variables() -> None:
    chief = pool()
    chief["pythonPackageSpec"]["env"] = {"EPOCHS": 3, "MODE": "fast"}
    spec = JobSpec.parse({"workerPoolSpecs": [chief]})
    package = spec.worker_pool_specs[0].python_package_spec
    assert package is not None
    assert [(e.name, e.value) for e in package.env] == [("EPOCHS", "3"), ("MODE", "fast")]


GCLOUD_CONFIG = """\
# gcloud ai custom-jobs create --region=us-central1 --display-name=single --config=config.yaml
workerPoolSpecs:
  machineSpec:
    machineType: n1-standard-8
    acceleratorType: NVIDIA_TESLA_T4
    acceleratorCount: 1
  replicaCount: 1
  pythonPackageSpec:
    executorImageUri: us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-15.py310:latest
    packageUris: gs://my-bucket/trainer-0.1.tar.gz
    pythonModule: trainer.task
    args: --epochs=3
reservedIpRanges: training-range
"""


def test_gcloud_config_with_a_single_mapping_of_worker_pool_specs(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(GCLOUD_CONFIG)
    loaded = load_spec_file(path)
    assert loaded.format == "custom-job-spec"
    (chief,) = loaded.spec.worker_pool_specs
    assert chief.python_package_spec is not None
    assert chief.python_package_spec.package_uris == ["gs://my-bucket/trainer-0.1.tar.gz"]
    assert chief.python_package_spec.args == ["--epochs=3"]
    assert loaded.spec.reserved_ip_ranges == ["training-range"]
    document = custom_job_spec_document(loaded.spec)
    assert isinstance(document["workerPoolSpecs"], list)
    assert document["workerPoolSpecs"][0]["pythonPackageSpec"]["args"] == ["--epochs=3"]


def test_a_misspelled_single_pool_names_the_field_in_it() -> None:
    with pytest.raises(SpecInvalidError) as caught:
        JobSpec.parse({"workerPoolSpecs": {"machinSpec": {"machineType": "n1-standard-4"}}})
    (violation,) = caught.value.violations
    assert violation.path == "workerPoolSpecs[0].machinSpec"
    assert violation.suggestion == "did you mean machineSpec?"


# --- a whole CustomJob as the API returns it ------------------------------------------------

DESCRIBED = """\
{
  "createTime": "2025-03-04T10:11:12.345678Z",
  "displayName": "census-training",
  "encryptionSpec": {
    "kmsKeyName": "projects/my-project/locations/us-central1/keyRings/kr/cryptoKeys/k"
  },
  "endTime": "2025-03-04T11:02:03.456789Z",
  "error": {"code": 3, "message": "The replica workerpool0-0 exited with a non-zero status of 1."},
  "jobSpec": {
    "baseOutputDirectory": {"outputUriPrefix": "gs://census-out/job"},
    "scheduling": {"timeout": "86400s", "strategy": "SPOT"},
    "workerPoolSpecs": [
      {
        "diskSpec": {"bootDiskSizeGb": 100, "bootDiskType": "pd-ssd"},
        "machineSpec": {
          "acceleratorCount": 1,
          "acceleratorType": "NVIDIA_TESLA_T4",
          "machineType": "n1-standard-8",
          "reservationAffinity": {"reservationAffinityType": "NO_RESERVATION"}
        },
        "pythonPackageSpec": {
          "args": ["--epochs=3"],
          "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-15.py310:latest",
          "packageUris": ["gs://census-out/trainer-0.1.tar.gz"],
          "pythonModule": "trainer.task"
        },
        "replicaCount": "1"
      }
    ]
  },
  "labels": {"team": "ml"},
  "name": "projects/123456789012/locations/us-central1/customJobs/4657480366600910896",
  "satisfiesPzi": false,
  "satisfiesPzs": false,
  "startTime": "2025-03-04T10:15:00.000001Z",
  "state": "JOB_STATE_FAILED",
  "updateTime": "2025-03-04T11:02:04.000002Z",
  "webAccessUris": {"workerpool0-0": "https://abc-dot-us-central1.aiplatform-training.google.com"}
}
"""


def test_described_custom_job_is_read_with_output_only_fields_ignored(tmp_path: Path) -> None:
    path = tmp_path / "described.json"
    path.write_text(DESCRIBED)
    loaded = load_spec_file(path)
    assert loaded.format == "custom-job"
    assert loaded.notes[0] == (
        "output-only fields ignored: createTime, endTime, error, name, satisfiesPzi, "
        "satisfiesPzs, startTime, state, updateTime, webAccessUris"
    )
    # the rest: its TensorFlow 2.15 image is past its end of availability (catalog)
    assert all("end of availability" in note for note in loaded.notes[1:])
    spec = loaded.spec
    assert spec.display_name == "census-training"
    assert spec.labels == {"team": "ml"}
    assert spec.kms_key_name is not None and spec.kms_key_name.endswith("/cryptoKeys/k")
    assert spec.project is None and spec.region is None  # the name is output-only, not a target
    (chief,) = spec.worker_pool_specs
    assert chief.replica_count == 1
    assert chief.machine_spec is not None and chief.machine_spec.reservation_affinity is not None
    assert chief.machine_spec.reservation_affinity.reservation_affinity_type == "NO_RESERVATION"
    job = to_custom_job(spec)
    assert job.job_spec.base_output_directory.output_uri_prefix == "gs://census-out/job"


def test_custom_job_without_output_only_fields_has_no_note() -> None:
    document = {"displayName": "x", "jobSpec": {"workerPoolSpecs": [pool()]}}
    loaded = spec_from_document(document)
    assert loaded.format == "custom-job" and loaded.notes == []


@pytest.mark.parametrize(
    ("document", "path"),
    [
        # Output-only fields are ignored where the API puts them, nowhere else.
        ({"jobSpec": {"workerPoolSpecs": [pool()], "state": "JOB_STATE_QUEUED"}}, "state"),
        ({"workerPoolSpecs": [pool()], "createTime": "2025-01-01T00:00:00Z"}, "createTime"),
        ({"workerPoolSpecs": [{**pool(), "name": "x"}]}, "workerPoolSpecs[0].name"),
    ],
)
def test_output_only_fields_elsewhere_are_refused(document: dict[str, Any], path: str) -> None:
    with pytest.raises(SpecInvalidError) as caught:
        spec_from_document(document)
    assert path in [v.path for v in caught.value.violations]


# --- a CreateCustomJobRequest body ----------------------------------------------------------


def _request(**job_fields: Any) -> dict[str, Any]:
    return {
        "parent": "projects/my-project/locations/europe-west4",
        "customJob": {
            "displayName": "from-request",
            "jobSpec": {"workerPoolSpecs": [pool()]},
            **job_fields,
        },
    }


def test_request_body_gives_project_and_region_from_parent() -> None:
    loaded = spec_from_document(_request())
    assert loaded.format == "create-custom-job-request"
    assert (loaded.spec.project, loaded.spec.region) == ("my-project", "europe-west4")
    assert loaded.spec.display_name == "from-request"
    assert loaded.notes == ["project and region taken from parent: my-project, europe-west4"]


def test_request_body_in_snake_case_and_with_output_only_fields() -> None:
    request = _request(state="JOB_STATE_RUNNING", createTime="2025-01-01T00:00:00Z")
    loaded = spec_from_document({"parent": request["parent"], "custom_job": request["customJob"]})
    assert loaded.spec.region == "europe-west4"
    assert "output-only fields ignored: state, createTime" in loaded.notes


def test_request_body_agreeing_with_explicit_place_is_fine() -> None:
    loaded = spec_from_document(_request(project="my-project", region="europe-west4"))
    assert (loaded.spec.project, loaded.spec.region) == ("my-project", "europe-west4")


def test_request_body_conflicts_name_the_field() -> None:
    with pytest.raises(SpecInvalidError) as caught:
        spec_from_document(_request(project="other-project", region="us-central1"))
    paths = {v.path: v for v in caught.value.violations}
    assert set(paths) == {"customJob.project", "customJob.region"}
    assert "'other-project'" in paths["customJob.project"].reason
    assert "'my-project'" in paths["customJob.project"].reason
    assert paths["customJob.region"].rule == "region"


def test_request_body_conflict_inside_job_spec_is_found() -> None:
    request = _request()
    request["customJob"]["jobSpec"]["region"] = "us-east1"
    with pytest.raises(SpecInvalidError) as caught:
        spec_from_document(request)
    assert [v.path for v in caught.value.violations] == ["customJob.region"]


@pytest.mark.parametrize(
    ("request_body", "path", "says"),
    [
        ({"parent": "my-project/us-central1", "customJob": {"jobSpec": {}}}, "parent", "projects/"),
        ({"parent": 7, "customJob": {"jobSpec": {}}}, "parent", "projects/"),
        ({"customJob": "a job"}, "customJob", "mapping"),
        ({"parnt": "projects/p/locations/l", "customJob": {}}, "parnt", "did you mean parent?"),
    ],
)
def test_malformed_request_bodies_are_violations(
    request_body: dict[str, Any], path: str, says: str
) -> None:
    with pytest.raises(SpecInvalidError) as caught:
        spec_from_document(request_body)
    assert path in [v.path for v in caught.value.violations]
    assert says in str(caught.value)


def test_request_body_file_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "request.yaml"
    path.write_text(yaml.safe_dump(_request()))
    assert load_spec_file(path).format == "create-custom-job-request"
    path.write_text(yaml.safe_dump({"parent": "projects/p/locations/l"}))
    with pytest.raises(SpecFormatError, match="customJob"):
        load_spec_file(path)


# --- from_custom_job names bad fields by their whole path -----------------------------------


def test_a_proto_no_spec_holds_is_named_by_its_whole_path() -> None:
    job = to_custom_job(_full())
    job.job_spec.worker_pool_specs[0].lustre_mounts[0].filesystem = ""
    with pytest.raises(SpecInvalidError) as caught:
        from_custom_job(job)
    assert [v.path for v in caught.value.violations] == [
        "workerPoolSpecs[0].lustreMounts[0].filesystem"
    ]


def test_label_keys_read_from_a_proto_stay_as_written() -> None:
    job = to_custom_job(JobSpec.parse({"workerPoolSpecs": [pool()]}))
    job.labels["cost_center"] = "r_and_d"
    assert from_custom_job(job).labels == {"cost_center": "r_and_d"}


# --- the pull-request comment shows where the machines come from ----------------------------


def _preview(document: dict[str, Any]) -> str:
    step = {
        "op": "create",
        "urn": "urn:pulumi:dev::training::pulumi-python:dynamic:TrainingJob::train",
        "newState": {
            "type": "pulumi-python:dynamic:TrainingJob",
            "inputs": {"spec": encode_spec(document), "region": "us-central1"},
        },
    }
    return json.dumps({"steps": [step]})


@pytest.mark.parametrize(
    ("extra", "shown"),
    [
        ({"persistentResourceId": "h100-pool"}, "persistent resource h100-pool"),
        ({"scheduling": {"strategy": "FLEX_START"}}, "FLEX_START"),
        (
            {
                "machine": {
                    "reservationAffinity": {
                        "reservationAffinityType": "SPECIFIC_RESERVATION",
                        "key": "compute.googleapis.com/reservation-name",
                        "values": ["projects/p/zones/us-central1-a/reservations/h100-res"],
                    }
                }
            },
            "reservation h100-res",
        ),
        (
            {"machine": {"reservationAffinity": {"reservationAffinityType": "ANY_RESERVATION"}}},
            "any reservation",
        ),
    ],
)
def test_review_shows_the_capacity_of_a_job(extra: dict[str, Any], shown: str) -> None:
    chief = pool("a3-highgpu-8g", "NVIDIA_H100_80GB", 8)
    extra = dict(extra)
    chief["machineSpec"].update(extra.pop("machine", {}))
    markdown = render_markdown(_preview({"workerPoolSpecs": [chief], **extra}))
    (row,) = [line for line in markdown.splitlines() if "`train`" in line]
    assert f"a3-highgpu-8g ({shown})" in row


def test_review_of_a_plain_job_has_no_capacity_note() -> None:
    markdown = render_markdown(_preview({"workerPoolSpecs": [pool("n1-standard-8")]}))
    (row,) = [line for line in markdown.splitlines() if "`train`" in line]
    assert "| n1-standard-8 |" in row
