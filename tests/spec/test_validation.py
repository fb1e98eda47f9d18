"""One test per validation rule: the path, the reason and the suggestion."""

from __future__ import annotations

from pathlib import Path

import pytest

from components import Catalog, JobSpec, SpecInvalidError, Violation, load_catalog_from, validate
from components.rules._catalog import Accelerator, MachineType, Region, Zone
from tests.spec.helpers import pool, spec


def by_path(violations: list[Violation], path: str) -> Violation:
    matches = [v for v in violations if v.path == path]
    assert matches, f"no violation at {path}; got {[str(v) for v in violations]}"
    return matches[0]


def test_valid_spec_has_no_violations() -> None:
    assert validate(spec(pool("n1-standard-8", "NVIDIA_TESLA_T4", 1)), region="us-central1") == []


def test_unknown_machine_type_suggests_nearest() -> None:
    v = by_path(validate(spec(pool("n1-highmem-9"))), "workerPoolSpecs[0].machineSpec.machineType")
    assert "unknown machine type" in v.reason
    assert v.suggestion is not None and "n1-highmem-8" in v.suggestion


def test_unknown_accelerator_suggests_api_spelling_of_gcloud_name() -> None:
    v = by_path(
        validate(spec(pool("n1-standard-8", "nvidia-tesla-t4", 1))),
        "workerPoolSpecs[0].machineSpec.acceleratorType",
    )
    assert v.suggestion == "the API spells it NVIDIA_TESLA_T4"
    typo = by_path(
        validate(spec(pool("n1-standard-8", "NVIDIA_TESLA_T5", 1))),
        "workerPoolSpecs[0].machineSpec.acceleratorType",
    )
    assert typo.suggestion is not None and "NVIDIA_TESLA_T4" in typo.suggestion


@pytest.mark.parametrize(
    ("accelerator", "count", "missing"),
    [("NVIDIA_TESLA_T4", 0, "acceleratorCount"), (None, 2, "acceleratorType")],
)
def test_type_and_count_go_together(accelerator: str | None, count: int, missing: str) -> None:
    v = by_path(
        validate(spec(pool("n1-standard-8", accelerator, count))),
        f"workerPoolSpecs[0].machineSpec.{missing}",
    )
    assert "together" in v.reason


def test_a100_cannot_attach_to_n1() -> None:
    v = by_path(
        validate(spec(pool("n1-standard-8", "NVIDIA_TESLA_A100", 1))),
        "workerPoolSpecs[0].machineSpec.acceleratorType",
    )
    assert "cannot be attached to n1-standard-8" in v.reason
    assert v.suggestion is not None and "a2-highgpu-1g" in v.suggestion


def test_fixed_gpu_machine_needs_its_accelerator() -> None:
    v = by_path(
        validate(spec(pool("a2-highgpu-2g"))), "workerPoolSpecs[0].machineSpec.acceleratorType"
    )
    assert v.suggestion == "set acceleratorType: NVIDIA_TESLA_A100 and acceleratorCount: 2"
    wrong = by_path(
        validate(spec(pool("g2-standard-8", "NVIDIA_L4", 8))),
        "workerPoolSpecs[0].machineSpec.acceleratorCount",
    )
    assert wrong.suggestion == "allowed counts of NVIDIA_L4 on g2-standard-8: 1"


def test_retired_k80_names_replacement() -> None:
    v = by_path(
        validate(spec(pool("n1-standard-8", "NVIDIA_TESLA_K80", 2))),
        "workerPoolSpecs[0].machineSpec.acceleratorType",
    )
    assert v.rule == "retired"
    assert "retired on 2024-05-01" in v.reason
    assert v.suggestion == "use NVIDIA_TESLA_T4; allowed counts on n1-standard-8: 1, 2, 4"


def test_host_limits_from_data_with_tiny_catalog() -> None:
    # A catalog that allows 4 x P100 on a 96-vCPU n1 machine still fails on the host limit.
    catalog = Catalog(
        machine_types={
            "n1-big": MachineType("n1-big", "n1", 96, 360),
            "n1-ok": MachineType("n1-ok", "n1", 64, 57.6),
        },
        accelerators={"P": Accelerator("P")},
        attachable_counts={("n1-big", "P"): (4,), ("n1-ok", "P"): (4,)},
        host_limits={
            ("P", 4): __import__("components.rules._catalog", fromlist=["HostLimit"]).HostLimit(
                "P", 4, 64, 208
            )
        },
    )
    v = by_path(
        validate(spec(pool("n1-big", "P", 4)), catalog=catalog),
        "workerPoolSpecs[0].machineSpec.machineType",
    )
    assert v.rule == "host-limits"
    assert "at most 64 vCPUs and 208 GB" in v.reason
    assert v.suggestion == "with 4 x P use one of n1-ok"


def test_chief_runs_exactly_one_replica() -> None:
    v = by_path(validate(spec(pool(replicas=3))), "workerPoolSpecs[0].replicaCount")
    assert "exactly 1" in v.reason


def test_pools_need_chief_and_no_trailing_placeholder() -> None:
    violations = validate(spec({}, pool()))
    assert by_path(violations, "workerPoolSpecs[0]").rule == "pools"
    trailing = validate(spec(pool(), pool(replicas=2), {}))
    assert "trailing" in (by_path(trailing, "workerPoolSpecs[2]").suggestion or "")
    # An empty middle pool is a placeholder (no parameter servers, but evaluators).
    assert validate(spec(pool(), pool(replicas=2), {}, pool())) == []


def test_too_many_pools_and_no_pools() -> None:
    assert by_path(validate(spec(*(pool() for _ in range(5)))), "workerPoolSpecs").rule == "pools"
    assert (
        by_path(validate(JobSpec.parse({"workerPoolSpecs": []})), "workerPoolSpecs").rule == "pools"
    )


def test_exactly_one_trainer() -> None:
    both = pool(containerSpec={"imageUri": "img"})
    assert "not both" in by_path(validate(spec(both)), "workerPoolSpecs[0]").reason
    neither = pool()
    del neither["pythonPackageSpec"]
    assert "exactly one" in by_path(validate(spec(neither)), "workerPoolSpecs[0]").reason


def test_python_package_fields() -> None:
    bad = pool(pythonPackageSpec={"packageUris": [], "pythonModule": "trainer/task.py"})
    violations = validate(spec(bad))
    by_path(violations, "workerPoolSpecs[0].pythonPackageSpec.executorImageUri")
    by_path(violations, "workerPoolSpecs[0].pythonPackageSpec.packageUris")
    assert (
        "not a Python module"
        in by_path(violations, "workerPoolSpecs[0].pythonPackageSpec.pythonModule").reason
    )


def test_local_package_paths_depend_on_target() -> None:
    local = pool(
        pythonPackageSpec={
            "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest",
            "packageUris": ["./examples/trainer"],
            "pythonModule": "trainer.task",
        }
    )
    vertex = by_path(validate(spec(local)), "workerPoolSpecs[0].pythonPackageSpec.packageUris[0]")
    assert vertex.severity == "warning"
    assert validate(spec(local), target="local") == []
    http = pool(
        pythonPackageSpec={
            "executorImageUri": "img",
            "packageUris": ["http://x/y.tgz"],
            "pythonModule": "m",
        }
    )
    assert (
        by_path(
            validate(spec(http)), "workerPoolSpecs[0].pythonPackageSpec.packageUris[0]"
        ).severity
        == "error"
    )


def test_env_names_and_values_never_echoed() -> None:
    secret = "s3cr3t-value-do-not-print"
    bad = pool()
    bad["pythonPackageSpec"]["env"] = [
        {"name": "1BAD", "value": secret},
        {"name": "A", "value": secret},
        {"name": "A", "value": "x"},
    ]
    violations = validate(spec(bad))
    assert (
        "not a valid variable name"
        in by_path(violations, "workerPoolSpecs[0].pythonPackageSpec.env[0].name").reason
    )
    assert (
        "set twice"
        in by_path(violations, "workerPoolSpecs[0].pythonPackageSpec.env[2].name").reason
    )
    assert all(secret not in str(v) for v in violations)


def test_an_empty_env_value_is_refused_as_vertex_refuses_it() -> None:
    """EnvVar.value is REQUIRED in v1 (Vertex: "Required field is not set"), in both task kinds,
    whether the variables come as a list or as a mapping with a null value."""
    package = pool()
    package["pythonPackageSpec"]["env"] = [{"name": "SET", "value": "1"}, {"name": "EMPTY"}]
    found = by_path(validate(spec(package)), "workerPoolSpecs[0].pythonPackageSpec.env[1].value")
    assert found.severity == "error" and "EMPTY has no value" in found.reason
    container = {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": 1,
        "containerSpec": {"imageUri": "gcr.io/p/trainer:1", "env": {"A": "x", "B": None}},
    }
    found = by_path(validate(spec(container)), "workerPoolSpecs[0].containerSpec.env[1].value")
    assert "B has no value" in found.reason
    assert not [v for v in validate(spec(pool())) if v.path.endswith(".value")]


def test_labels() -> None:
    violations = validate(spec(labels={"Team": "ml", "ok": "Has Space", "x" * 65: "v"}))
    assert "lowercase letter" in by_path(violations, "labels.Team").reason
    assert by_path(violations, "labels.ok").suggestion == "e.g. 'has-space'"
    by_path(violations, "labels." + "x" * 65)
    many = validate(spec(labels={f"k{i}": "v" for i in range(65)}))
    assert "at most 64" in by_path(many, "labels").reason
    assert validate(spec(labels={"team": "ml", "cost-center": "1234"})) == []


def test_display_name_length() -> None:
    assert "at most 128" in by_path(validate(spec(displayName="x" * 129)), "displayName").reason


def test_scheduling_rules() -> None:
    v = validate(spec(scheduling={"maxWaitDuration": "1h", "strategy": "SPOT"}))
    assert "FLEX_START" in by_path(v, "scheduling.maxWaitDuration").reason
    assert validate(spec(scheduling={"maxWaitDuration": "1h", "strategy": "FLEX_START"})) == []
    typo = by_path(validate(spec(scheduling={"strategy": "SPOTT"})), "scheduling.strategy")
    assert typo.suggestion == "did you mean SPOT?"
    assert (
        "longer than zero"
        in by_path(validate(spec(scheduling={"timeout": "0s"})), "scheduling.timeout").reason
    )


def test_references_and_region_bound_resources() -> None:
    violations = validate(
        spec(
            serviceAccount="not an email",
            network="default",
            tensorboard="projects/p/locations/europe-west4/tensorboards/1",
            encryptionSpec={"kmsKeyName": "projects/p/locations/us-east1/keyRings/r/cryptoKeys/k"},
            baseOutputDirectory="/tmp/out",
        ),
        region="us-central1",
    )
    by_path(violations, "serviceAccount")
    by_path(violations, "network")
    assert "europe-west4" in by_path(violations, "tensorboard").reason
    assert "us-east1" in by_path(violations, "encryptionSpec.kmsKeyName").reason
    assert by_path(violations, "baseOutputDirectory").severity == "error"


def test_disk_rules() -> None:
    v = validate(spec(pool(diskSpec={"bootDiskType": "pd-sdd", "bootDiskSizeGb": 50})))
    assert (
        by_path(v, "workerPoolSpecs[0].diskSpec.bootDiskType").suggestion == "did you mean pd-ssd?"
    )
    assert "outside 100-64000" in by_path(v, "workerPoolSpecs[0].diskSpec.bootDiskSizeGb").reason


def test_region_without_the_gpu() -> None:
    v = by_path(
        validate(spec(pool("n1-standard-8", "NVIDIA_TESLA_T4", 1)), region="asia-northeast2"),
        "workerPoolSpecs[0].machineSpec.acceleratorType",
    )
    assert (
        v.reason == "NVIDIA_TESLA_T4 is not offered in asia-northeast2; asia-northeast2 has no GPUs"
    )
    # Nearest first: the same geography, then the longest shared name prefix.
    assert v.suggestion is not None and v.suggestion.startswith(
        "NVIDIA_TESLA_T4 is offered in asia-northeast1, asia-northeast3"
    )


def test_unknown_region_suggests_nearest() -> None:
    v = by_path(validate(spec(), region="us-central2"), "region")
    assert v.suggestion is not None and "us-central1" in v.suggestion


def test_region_from_spec_is_used() -> None:
    job = spec(pool("n1-standard-8", "NVIDIA_TESLA_T4", 1), region="asia-northeast2")
    assert any(v.rule == "region" for v in validate(job))
    assert not any(v.rule == "region" for v in validate(job, region="us-central1"))


def test_tiny_catalog_from_directory(tmp_path: Path) -> None:
    files = {
        "machine_types.csv": "machine_type,family,vcpus,memory_gb,fixed_accelerator_type,fixed_accelerator_count,source\nm1,n1,4,15,,,t\n",
        "accelerators.csv": "accelerator_type,kind,gcloud_name,memory_gb,lifecycle,retired_on,replacement,source\nG,gpu,g,16,GA,,,t\n",
        "attachable_counts.csv": "machine_type,accelerator_type,counts,source\nm1,G,1 2,t\n",
        "n1_host_limits.csv": "accelerator_type,accelerator_count,max_vcpus,max_memory_gb,source\n",
        "legacy_machine_types.csv": "legacy_type,machine_type,accelerator_type,accelerator_count,source\n",
        "scale_tiers.csv": "scale_tier,master_type,worker_type,worker_count,parameter_server_type,parameter_server_count,source\n",
        "regions.csv": "region,geography,source\nr1,Europe,t\nr2,Europe,t\n",
        "zones.csv": "zone,region,accelerator_type,source\nr1-a,r1,G,t\n",
        "training_images.csv": "runtime_version,python_version,accelerator,image_path,source\n",
        "prices.csv": "region,resource_kind,name,on_demand_usd_per_hour,spot_usd_per_hour,as_of,source\nr1,machine,m1,0.5,,2026-11,t\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    catalog = load_catalog_from(tmp_path)
    assert validate(spec(pool("m1", "G", 2)), catalog=catalog, region="r1") == []
    assert (
        by_path(
            validate(spec(pool("m1", "G", 4)), catalog=catalog),
            "workerPoolSpecs[0].machineSpec.acceleratorCount",
        ).suggestion
        == "allowed counts of G on m1: 1, 2"
    )
    r2 = by_path(
        validate(spec(pool("m1", "G", 1)), catalog=catalog, region="r2"),
        "workerPoolSpecs[0].machineSpec.acceleratorType",
    )
    assert r2.suggestion == "G is offered in r1"


def test_zone_rule_with_tiny_catalog() -> None:
    catalog = Catalog(
        machine_types={"m": MachineType("m", "n1", 4, 15)},
        accelerators={"A": Accelerator("A"), "B": Accelerator("B")},
        attachable_counts={("m", "A"): (1,), ("m", "B"): (1,)},
        regions={"r": Region("r"), "s": Region("s")},
        zones={
            "r-a": Zone("r-a", "r", frozenset({"A"})),
            "r-b": Zone("r-b", "r", frozenset({"B"})),
            "s-a": Zone("s-a", "s", frozenset({"A", "B"})),
        },
    )
    job = spec(pool("m", "A", 1), pool("m", "B", 1, replicas=2))
    [zone] = [v for v in validate(job, catalog=catalog, region="r") if v.rule == "zone"]
    assert zone.suggestion == "use one GPU type, or a region where one zone has them all: s"
    assert validate(job, catalog=catalog, region="s") == []


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"displayName": "a\x00b"}, "displayName"),
        ({"labels": {"team": "m\x00l"}}, "labels.team"),
        (
            {
                "workerPoolSpecs": [
                    {"pythonPackageSpec": {"packageUris": ["gs://bkt/p\x00.tar.gz"]}}
                ]
            },
            "workerPoolSpecs[0].pythonPackageSpec.packageUris[0]",
        ),
        (
            {"workerPoolSpecs": [{"containerSpec": {"imageUri": "i", "env": {"A": "x\x00"}}}]},
            "workerPoolSpecs[0].containerSpec.env[0].value",
        ),
        ({"baseOutputDirectory": "gs://bkt/o\x00ut"}, "baseOutputDirectory"),
    ],
)
def test_nul_bytes_are_refused_at_their_field(document, path):
    with pytest.raises(SpecInvalidError) as info:
        JobSpec.parse(document)
    assert [(v.path, v.reason) for v in info.value.violations] == [
        (path, "must not contain NUL bytes")
    ]


def test_a_package_runs_only_on_a_prebuilt_executor_image() -> None:
    def image_violations(uri: str) -> list[str]:
        package = {"executorImageUri": uri, "packageUris": ["gs://bkt/t.tgz"], "pythonModule": "t"}
        found = validate(spec(pool(pythonPackageSpec=package)), region="us-central1")
        return [v.reason + " / " + (v.suggestion or "") for v in found if "executorImage" in v.path]

    assert image_violations("us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest") == []
    (custom,) = image_violations("gcr.io/my-project/trainer:1")
    assert "not one of Vertex AI's prebuilt training images" in custom
    assert "prebuilt executor image" in custom and "containerSpec" in custom
    (legacy,) = image_violations("gcr.io/cloud-ml-public/training/pytorch-cpu.1-4")
    assert "us-docker.pkg.dev/vertex-ai/training/pytorch-cpu.1-4:latest" in legacy
    (untagged,) = image_violations("us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310")
    assert "tf-cpu.2-17.py310:latest" in untagged


# --- issue 35: what would make a job fail late or train nothing ---------------------------

_TRAINING = "us-docker.pkg.dev/vertex-ai/training/"


def _with_image(image: str, machine: str, accelerator: str | None, count: int) -> JobSpec:
    chosen = pool(machine, accelerator, count)
    chosen["pythonPackageSpec"]["executorImageUri"] = _TRAINING + image
    return spec(chosen)


@pytest.mark.parametrize(
    ("image", "machine", "accelerator", "count", "severity", "suggested"),
    [
        # A CPU build on paid GPUs (or a TPU): they would sit idle. An error.
        (
            "tf-cpu.2-17.py310:latest",
            "n1-standard-8",
            "NVIDIA_TESLA_T4",
            4,
            "error",
            "tf-gpu.2-17.py310",
        ),
        (
            "pytorch-xla.2-4.py310:latest",
            "a2-highgpu-1g",
            "NVIDIA_TESLA_A100",
            1,
            "error",
            "pytorch-gpu.2-4.py310",
        ),
        # A GPU build where there is no GPU: it runs, on the CPU. A warning.
        ("tf-gpu.2-17.py310:latest", "n1-standard-8", None, 0, "warning", "tf-cpu.2-17.py310"),
        ("xgboost-gpu.2-1:latest", "n1-highmem-8", None, 0, "warning", "xgboost-cpu.2-1"),
    ],
)
def test_a_prebuilt_image_built_for_other_hardware_than_the_pool_is_named(
    image: str,
    machine: str,
    accelerator: str | None,
    count: int,
    severity: str,
    suggested: str,
) -> None:
    found = validate(_with_image(image, machine, accelerator, count), region="us-central1")
    v = by_path(found, "workerPoolSpecs[0].pythonPackageSpec.executorImageUri")
    assert v.severity == severity
    assert ("CPU image" if "cpu" in image or "xla" in image else "GPU image") in v.reason
    assert v.suggestion is not None and f"{_TRAINING}{suggested}:latest" in v.suggestion


def test_an_image_for_the_pools_hardware_passes_and_a_container_image_is_judged_too() -> None:
    # pytorch-gpu.1-13 is listed for CPU and GPU alike in Google's table: both pass.
    for accelerator, count in (("NVIDIA_TESLA_T4", 1), (None, 0)):
        on = _with_image("pytorch-gpu.1-13.py310:latest", "n1-standard-8", accelerator, count)
        assert validate(on, region="us-central1") == []
    container = pool("n1-standard-8", "NVIDIA_TESLA_T4", 2)
    del container["pythonPackageSpec"]
    container["containerSpec"] = {"imageUri": _TRAINING + "tf-cpu.2-17.py310:latest"}
    v = by_path(validate(spec(container)), "workerPoolSpecs[0].containerSpec.imageUri")
    assert v.severity == "error" and "tf-gpu.2-17.py310" in (v.suggestion or "")


@pytest.mark.parametrize(
    ("bucket", "says"),
    [
        ("b", "1 characters long"),
        ("ab", "2 characters long"),
        ("a" * 64, "64 characters long"),
        ("My-Bucket", "lowercase"),
        ("has space", "lowercase"),
        ("-starts-with-dash", "start and end"),
        ("ends-with-dot.", "start and end"),
        ("192.168.5.4", "IP address"),
        ("goog-data", '"goog"'),
        ("my-google-data", '"google"'),
        ("my-g00gle-data", '"google"'),
        (("a" * 64) + ".example.com", "dot-separated part"),
        ("a." * 112 + "a", "225 characters long"),
    ],
)
def test_every_gs_uri_bucket_follows_cloud_storage_naming(bucket: str, says: str) -> None:
    job = spec(
        pool(
            pythonPackageSpec={
                "executorImageUri": _TRAINING + "tf-cpu.2-17.py310:latest",
                "packageUris": [f"gs://{bucket}/t.tar.gz"],
                "pythonModule": "trainer.task",
            }
        ),
        baseOutputDirectory=f"gs://{bucket}/j",
    )
    found = validate(job)
    for path in ("baseOutputDirectory", "workerPoolSpecs[0].pythonPackageSpec.packageUris[0]"):
        v = by_path(found, path)
        assert v.severity == "error" and "not a valid Cloud Storage bucket name" in v.reason
        assert says in v.reason


@pytest.mark.parametrize(
    "bucket", ["abc", "my_bucket-1", "a" * 63, "data.example.com", ("a" * 63 + ".") * 3 + "abc"]
)
def test_valid_bucket_names_pass(bucket: str) -> None:
    assert validate(spec(pool(), baseOutputDirectory=f"gs://{bucket}/j")) == []


def test_the_bucket_rules_cite_their_public_source() -> None:
    import components.rules._validation as module

    assert len(module.BUCKET_NAME_RULES) == 6
    assert "cloud.google.com/storage/docs/buckets#naming" in Path(module.__file__).read_text()
    assert module.bucket_name_problem("\x00" * 10) is not None  # hostile text: a reason


def test_a_local_trainer_path_that_does_not_exist_is_refused_naming_the_field(
    tmp_path: Path,
) -> None:
    (tmp_path / "trainer").mkdir()
    for uri, there in (
        ("./trainer", True),
        (str(tmp_path / "trainer"), True),
        ("./nope", False),
        (f"file://{tmp_path}/nope.tar.gz", False),
        ("x" * 5000, False),  # too long for a file name: said missing, never a traceback
    ):
        job = spec(
            pool(
                pythonPackageSpec={
                    "executorImageUri": _TRAINING + "tf-cpu.2-17.py310:latest",
                    "packageUris": [uri],
                    "pythonModule": "trainer.task",
                }
            )
        )
        found = validate(job, target="local", base=tmp_path)
        if there:
            assert found == []
        else:
            v = by_path(found, "workerPoolSpecs[0].pythonPackageSpec.packageUris[0]")
            assert v.severity == "error" and "does not exist" in v.reason


def test_the_cli_reads_a_relative_trainer_path_from_the_spec_files_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from components.cli._cli import main

    (tmp_path / "trainer").mkdir()
    job = tmp_path / "job.yaml"
    body = (
        "workerPoolSpecs:\n- machineSpec: {machineType: n1-standard-4}\n  replicaCount: 1\n"
        "  pythonPackageSpec:\n    executorImageUri: "
        + _TRAINING
        + "tf-cpu.2-17.py310:latest\n    packageUris: [%s]\n    pythonModule: trainer.task\n"
    )
    job.write_text(body % "./trainer")
    assert main(["validate", str(job), "--target", "local"]) == 0
    job.write_text(body % "./trainer-gone")
    assert main(["validate", str(job), "--target", "local"]) == 1
    assert "packageUris[0]: './trainer-gone' does not exist" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("custom", "suggested"),
    [
        ("n1-custom-4-204800", "n1-highmem-32"),  # 4 vCPUs, 200 GB: memory decides
        ("custom-6-20480", "n1-standard-8"),  # no family: N1; 6 vCPUs, 20 GB
        ("n2-custom-8-16384", "n2-standard-8"),
        ("n1-custom-96-10240000-ext", "no predefined n1 type"),
    ],
)
def test_a_custom_machine_type_gets_the_smallest_predefined_type_that_holds_it(
    custom: str, suggested: str
) -> None:
    v = by_path(validate(spec(pool(custom))), "workerPoolSpecs[0].machineSpec.machineType")
    assert "custom machine type" in v.reason and "predefined" in v.reason
    assert v.suggestion is not None and suggested in v.suggestion
