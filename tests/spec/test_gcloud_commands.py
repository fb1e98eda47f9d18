"""The gcloud job submissions users keep: ``gcloud ai custom-jobs create`` (GA, beta, alpha),
the legacy ``ai-platform``/``ml-engine jobs submit training``, and the tuning jobs, which are
never read as single jobs. Each command is read as gcloud builds its job
(``command_lib/ai/custom_jobs``); ``test_tuning_commands`` reads the tuning jobs whole."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from components import JobSpec, SpecFormatError, SpecInvalidError, load_spec_file, validate
from components.cli._cli import main
from components.formats import LoadedSpec, TuningJobFileError
from components.formats.autopackage import Autopackage
from components.formats.gcloud_flags import invocation, split_dict, split_list
from components.rules._spec import AUTOPACKAGE_ENV

IMAGE = "gcr.io/p/img:latest"
TF_GPU = "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-12.py310:latest"
CREATE = "gcloud ai custom-jobs create --region=us-central1 --display-name=x"


def load(tmp_path: Path, text: str, **files: str) -> JobSpec:
    return loaded(tmp_path, text, **files).spec


def written(tmp_path: Path, text: str, files: dict[str, str]) -> Path:
    for name, content in files.items():
        (tmp_path / name.replace("__", ".")).write_text(content)
    path = tmp_path / "submit.sh"
    path.write_text(text)
    return path


def loaded(tmp_path: Path, text: str, **files: str) -> LoadedSpec:
    return load_spec_file(written(tmp_path, text, files), env={})


def tuning_loaded(tmp_path: Path, text: str, **files: str) -> LoadedSpec:
    """What a caller asking for a tuning job too gets."""
    return load_spec_file(written(tmp_path, text, files), env={}, tuning=True)


def test_single_pool_v100_container(tmp_path: Path) -> None:
    spec = load(
        tmp_path,
        f"{CREATE} --worker-pool-spec=machine-type=n1-standard-8,replica-count=1,"
        f"accelerator-type=NVIDIA_TESLA_V100,accelerator-count=2,container-image-uri={IMAGE}\n",
    )
    assert (spec.region, spec.display_name) == ("us-central1", "x")
    (pool,) = spec.worker_pool_specs
    assert pool.machine_spec is not None
    assert (
        pool.machine_spec.machine_type,
        pool.machine_spec.accelerator_type,
        pool.machine_spec.accelerator_count,
        pool.replica_count,
    ) == ("n1-standard-8", "NVIDIA_TESLA_V100", 2, 1)
    assert pool.container_spec is not None and pool.container_spec.image_uri == IMAGE
    assert pool.python_package_spec is None
    assert validate(spec, region="us-central1") == []


def test_pools_in_flag_order_with_gcloud_defaults_and_a_skipped_pool(tmp_path: Path) -> None:
    spec = load(
        tmp_path,
        "gcloud beta ai custom-jobs create --region=europe-west4 --display-name=dist \\\n"
        "  --labels=team=vision,env=dev --labels=env=prod \\\n"
        f"  --worker-pool-spec=machine-type=n1-standard-16,accelerator-type=nvidia-tesla-t4,"
        f"executor-image-uri={TF_GPU},python-module=trainer.task \\\n"
        "  --worker-pool-spec= \\\n"
        f"  --worker-pool-spec=machine-type=n1-highmem-8,replica-count=2,"
        f"executor-image-uri={TF_GPU},python-module=trainer.task \\\n"
        "  --python-package-uris=gs://bkt/trainer-0.1.tar.gz,gs://bkt/dep.whl\n",
    )
    chief, skipped, servers = spec.worker_pool_specs
    assert chief.machine_spec is not None
    assert chief.machine_spec.accelerator_type == "NVIDIA_TESLA_T4"
    assert chief.machine_spec.accelerator_count == 1  # gcloud's default with a type
    assert chief.replica_count == 1
    assert skipped.is_placeholder
    assert servers.replica_count == 2 and servers.machine_spec is not None
    assert servers.machine_spec.accelerator_type is None
    for pool in (chief, servers):
        package = pool.python_package_spec
        assert package is not None
        assert package.package_uris == ["gs://bkt/trainer-0.1.tar.gz", "gs://bkt/dep.whl"]
        assert (package.executor_image_uri, package.python_module) == (TF_GPU, "trainer.task")
    assert spec.labels == {"team": "vision", "env": "prod"}


def test_lowercase_accelerator_is_read_with_a_note(tmp_path: Path) -> None:
    result = loaded(
        tmp_path,
        f"{CREATE} --worker-pool-spec=machine-type=n1-standard-8,"
        f"accelerator-type=nvidia-l4,container-image-uri={IMAGE}\n",
    )
    machine = result.spec.worker_pool_specs[0].machine_spec
    assert machine is not None and machine.accelerator_type == "NVIDIA_L4"
    assert any("accepts only the API name, NVIDIA_L4" in n for n in result.notes)


def test_args_and_command_go_to_every_pool_as_gcloud_does(tmp_path: Path) -> None:
    spec = load(
        tmp_path,
        f"{CREATE} --worker-pool-spec=machine-type=n1-standard-4,container-image-uri={IMAGE}"
        f" --worker-pool-spec=machine-type=n1-standard-4,executor-image-uri={TF_GPU},"
        "python-module=t.task --python-package-uris=gs://bkt/t.tgz"
        " --command=python,-m,trainer.task --args=--epochs=10 --args=^:^--lr=0.1,0.2:--x\n",
    )
    container = spec.worker_pool_specs[0].container_spec
    package = spec.worker_pool_specs[1].python_package_spec
    assert container is not None and package is not None
    assert container.command == ["python", "-m", "trainer.task"]
    assert container.args == package.args == ["--epochs=10", "--lr=0.1,0.2", "--x"]


CONFIG = """\
workerPoolSpecs:
  - machineSpec: {machineType: n1-standard-8, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}
    replicaCount: 1
    containerSpec:
      imageUri: gcr.io/p/from-config
      args: [--from-config]
serviceAccount: config-sa@p.iam.gserviceaccount.com
network: projects/1/global/networks/config-net
scheduling: {timeout: 7200s}
baseOutputDirectory: {outputUriPrefix: gs://bkt/out}
"""


def test_flags_override_the_config_file_field_by_field(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "job.yaml").write_text(CONFIG)  # relative to the command file
    spec = load(
        tmp_path,
        f"{CREATE} --config=configs/job.yaml"
        " --service-account=flag-sa@p.iam.gserviceaccount.com"
        " --enable-web-access --enable-dashboard-access --persistent-resource-id=shared"
        " --args=--from-flag\n",
    )
    assert spec.service_account == "flag-sa@p.iam.gserviceaccount.com"  # the flag wins
    assert spec.network == "projects/1/global/networks/config-net"  # no flag: the file's
    assert spec.scheduling is not None and spec.scheduling.timeout is not None
    assert spec.scheduling.timeout.total_seconds() == 7200
    assert spec.base_output_directory == "gs://bkt/out"
    assert spec.enable_web_access and spec.enable_dashboard_access
    assert spec.persistent_resource_id == "shared"
    container = spec.worker_pool_specs[0].container_spec
    assert container is not None and container.image_uri == "gcr.io/p/from-config"
    assert container.args == ["--from-flag"]
    assert (spec.display_name, spec.region) == ("x", "us-central1")


def test_worker_pool_spec_flags_replace_the_config_pools(tmp_path: Path) -> None:
    result = loaded(
        tmp_path,
        f"{CREATE} --config=job.yaml"
        f" --worker-pool-spec=machine-type=n1-highmem-4,container-image-uri={IMAGE}\n",
        job__yaml=CONFIG,
    )
    (pool,) = result.spec.worker_pool_specs
    assert pool.machine_spec is not None and pool.machine_spec.machine_type == "n1-highmem-4"
    assert pool.container_spec is not None and pool.container_spec.args == []
    assert result.spec.service_account == "config-sa@p.iam.gserviceaccount.com"
    assert any("--worker-pool-spec replaces its workerPoolSpecs" in n for n in result.notes)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("displayName: x\n" + CONFIG, r"displayName \(--display-name\)"),
        ("labels: {a: b}\n" + CONFIG, r"labels \(--labels\)"),
        ("worker_pool_specs: []\n", r"worker_pool_specs \(use camelCase\)"),
        ("trainingInput: {scaleTier: BASIC}\n", "legacy trainingInput"),
        ("studySpec: {}\ntrialJobSpec: {}\n", "hyperparameter tuning job"),
        ("- a\n", "must hold a CustomJobSpec mapping"),
    ],
)
def test_config_must_be_a_custom_job_spec(tmp_path: Path, config: str, message: str) -> None:
    with pytest.raises(SpecFormatError, match=message):
        loaded(tmp_path, f"{CREATE} --config=job.yaml\n", job__yaml=config)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ("--region=r --worker-pool-spec=machine-type=m,container-image-uri=i", "--display-name is"),
        ("--display-name=x", "--worker-pool-spec or --config"),
        (
            "--display-name=x --worker-pool-spec=machine-typo=m,container-image-uri=i",
            "unknown key 'machine-typo' .did you mean machine-type",
        ),
        (
            "--display-name=x --worker-pool-spec=machine-type=m,disk-size=200,container-image-uri=i",
            "has no disk keys: set diskSpec in the --config file",
        ),
        ("--display-name=x --worker-pool-spec=container-image-uri=i", "machine-type is required"),
        (
            "--display-name=x --worker-pool-spec=machine-type=m,accelerator-count=2,container-image-uri=i",
            "accelerator-count needs accelerator-type",
        ),
        (
            "--display-name=x --worker-pool-spec=machine-type=m,executor-image-uri=e",
            "executor-image-uri needs python-module",
        ),
        (
            "--display-name=x --worker-pool-spec=machine-type=m,container-image-uri=i,executor-image-uri=e,python-module=t",
            "exactly one of executor-image-uri, container-image-uri",
        ),
        (
            "--display-name=x --worker-pool-spec= --worker-pool-spec=machine-type=m,container-image-uri=i",
            r"--worker-pool-spec\[0\] is empty",
        ),
        (
            "--display-name=x --worker-pool-spec=machine-type=m,container-image-uri=i"
            " --worker-pool-spec=machine-type=m,local-package-path=.,executor-image-uri=e,script=a.py",
            r"--worker-pool-spec\[1\]: local-package-path is only allowed in the first pool",
        ),
        (
            "--display-name=x --worker-pool-spec=machine-type=m,container-image-uri=i,requirements=a",
            "requirements only go with local-package-path",
        ),
        (
            "--display-name=x --worker-pool-spec=machine-type=m,replica-count=two,container-image-uri=i",
            r"replica-count must be a whole number, got 'two'",
        ),
        ("--display-name=x --worker-pool-specs=machine-type=m", "did you mean --worker-pool-spec"),
        ("--display-name=x --config=c.yaml extra", "takes no arguments, got 'extra'"),
        ("--display-name=x --config=c.yaml --args=--a,1,--b,1", "refuses '1' given twice"),
        ("--display-name=x --config=c.yaml --flags-file=f.yaml", "--flags-file: flags kept in a"),
        ("--display-name=x --config=c.yaml --kms-key=k", "not fully specified"),
        ("--display-name=x --worker-pool-spec=machine-type", "expected KEY=VALUE pairs"),
    ],
)
def test_what_gcloud_refuses_is_refused_naming_the_flag(
    tmp_path: Path, flags: str, message: str
) -> None:
    with pytest.raises(SpecFormatError, match=message) as info:
        loaded(tmp_path, f"gcloud ai custom-jobs create {flags}\n", c__yaml=CONFIG)
    assert str(info.value).startswith("line 1: ")


def test_local_package_becomes_gclouds_build_in_every_pool(tmp_path: Path) -> None:
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "requirements.txt").write_text("numpy\n")
    result = loaded(
        tmp_path,
        f"{CREATE} --worker-pool-spec=machine-type=n1-standard-8,accelerator-type=NVIDIA_TESLA_T4,"
        f"executor-image-uri={TF_GPU},local-package-path=trainer,script=trainer/task.py,"
        "'requirements=pandas;scikit-learn==1.3','extra-dirs=data;conf',"
        "extra-packages=dep/foo.tar.gz \\\n"
        "  --worker-pool-spec=machine-type=n1-standard-8,replica-count=3 --args=--epochs=3\n",
    )
    chief, workers = result.spec.worker_pool_specs
    for pool in (chief, workers):
        package = pool.python_package_spec
        assert package is not None
        assert package.package_uris == ["trainer", "trainer/dep/foo.tar.gz"]
        assert (package.executor_image_uri, package.python_module) == (TF_GPU, "trainer.task")
        assert package.args == ["--epochs=3"]
        (marker,) = package.env
        build = Autopackage.from_env(TF_GPU, "trainer", marker.value)
        assert marker.name == AUTOPACKAGE_ENV and build is not None
        assert build.copied == ["trainer", "data", "conf"]  # the script's folder, extra dirs
        assert build.requirements == ("pandas", "scikit-learn==1.3")
        assert build.has_requirements_file and not build.has_setup
        assert build.entry_point == ["python3", "trainer/task.py"]  # run as a file
    assert workers.replica_count == 3
    notes = " ".join(result.notes)
    assert "requirements.txt, pandas, scikit-learn==1.3, dep/foo.tar.gz installed" in notes
    assert "runs python3 trainer/task.py there" in notes
    warnings = validate(result.spec, region="us-central1")
    assert {v.severity for v in warnings} == {"warning"}  # local paths, said so


def test_a_shell_script_entry_point_runs_with_bash_and_names_no_module(tmp_path: Path) -> None:
    result = loaded(
        tmp_path,
        f"{CREATE} --worker-pool-spec=machine-type=n1-standard-4,executor-image-uri={TF_GPU},"
        "local-package-path=.,script=run.sh\n",
    )
    package = result.spec.worker_pool_specs[0].python_package_spec
    assert package is not None and package.python_module is None
    build = Autopackage.from_env(TF_GPU, ".", package.env[0].value)
    assert build is not None and build.entry_point == ["/bin/bash", "run.sh"]
    assert build.copied == ["."]  # a top-level entry point: all of the directory
    assert any("/bin/bash run.sh" in n for n in result.notes)
    errors = [v for v in validate(result.spec, region="us-central1") if v.severity == "error"]
    assert errors == []  # gcloud's image runs the script: no module to name


def test_the_dockerfile_is_gclouds(tmp_path: Path) -> None:
    build = Autopackage(
        executor_image=TF_GPU,
        directory="src",
        module="trainer.task",
        extra_dirs=("data",),
        requirements=("pandas==2.0",),
        extra_packages=("dep/foo.whl",),
        has_setup=True,
        has_requirements_file=True,
    )
    lines = build.dockerfile().splitlines()
    assert lines[0] == f"FROM {TF_GPU}"
    assert "WORKDIR /usr/app" in lines and "ENV HOME=/home" in lines
    assert "RUN rm -rf /var/sitecustomize" in lines  # a prebuilt base, as gcloud tests it
    order = [
        'COPY ["./setup.py", "./setup.py"]',
        "RUN pip3 install --no-cache-dir .",
        'COPY ["./requirements.txt", "./requirements.txt"]',
        "RUN pip3 install --no-cache-dir -r ./requirements.txt",
        'COPY ["dep/foo.whl", "foo.whl"]',
        "RUN pip3 install --no-cache-dir foo.whl",
        "RUN pip3 install --no-cache-dir --upgrade pandas==2.0",
        'COPY ["data", "data"]',
        'COPY ["trainer", "trainer"]',
        'ENTRYPOINT ["python3", "-m", "trainer.task"]',
    ]
    assert [line for line in lines if line in order] == order
    assert build.build_commands("gcr.io/p/img:1")[0].startswith("docker build -t gcr.io/p/img:1")


def test_convert_prints_the_image_to_build_for_vertex(tmp_path: Path) -> None:
    script = tmp_path / "submit.sh"
    script.write_text(
        f"{CREATE} --worker-pool-spec=machine-type=n1-standard-4,executor-image-uri={TF_GPU},"
        "local-package-path=.,python-module=trainer.task,output-image-uri=gcr.io/p/t:1\n"
    )
    out, err = io.StringIO(), io.StringIO()
    code = main(["convert", str(script)], out=out, err=err)
    assert code == 0, err.getvalue()
    document = yaml.safe_load(out.getvalue())
    (pool,) = document["workerPoolSpecs"]
    assert "pythonPackageSpec" not in pool
    assert pool["containerSpec"] == {"imageUri": "gcr.io/p/t:1"}  # what gcloud submits
    assert f"#   FROM {TF_GPU}" in err.getvalue()
    assert "docker push gcr.io/p/t:1" in err.getvalue()
    assert AUTOPACKAGE_ENV not in out.getvalue()


def test_pools_with_one_build_on_two_executor_images_need_two_images() -> None:
    """A build is its base image too: the same directory and entry point on two executor images
    are two images to build, one per base; the same build twice is one."""
    from components.formats.autopackage import for_vertex

    def pool(image: str) -> dict[str, object]:
        build = Autopackage(image, "trainer", module="trainer.task")
        return {
            "machineSpec": {"machineType": "n1-standard-4"},
            "replicaCount": 1,
            "pythonPackageSpec": {
                "executorImageUri": image,
                "packageUris": ["trainer"],
                "env": [{"name": AUTOPACKAGE_ENV, "value": build.to_json()}],
            },
        }

    tf_cpu = TF_GPU.replace("tf-gpu", "tf-cpu")
    _, builds = for_vertex({"workerPoolSpecs": [pool(TF_GPU), pool(tf_cpu), pool(TF_GPU)]})
    assert [(b.build.executor_image, b.pools) for b in builds] == [(TF_GPU, [0, 2]), (tf_cpu, [1])]


def test_kms_key_from_its_parts_and_global_flags_before_the_group(tmp_path: Path) -> None:
    spec = load(
        tmp_path,
        "gcloud --project=proj --quiet --verbosity=debug alpha ai custom-jobs create"
        " --region=us-central1 --display-name=x --config=c.yaml"
        " --kms-key=k --kms-keyring=ring --kms-location=us-central1 --no-enable-web-access\n",
        c__yaml=CONFIG,
    )
    assert spec.project == "proj"
    assert spec.kms_key_name == "projects/proj/locations/us-central1/keyRings/ring/cryptoKeys/k"
    assert not spec.enable_web_access


def test_values_the_model_refuses_are_named_in_flag_terms(tmp_path: Path) -> None:
    with pytest.raises(SpecInvalidError) as info:
        loaded(
            tmp_path,
            f"{CREATE} --worker-pool-spec=machine-type=n1-standard-4,"
            f"accelerator-type=NVIDIA_L4,accelerator-count=99999999999,container-image-uri={IMAGE}\n",
        )
    assert [v.path for v in info.value.violations] == ["--worker-pool-spec[0] accelerator-count"]


@pytest.mark.parametrize("track", ["", "beta ", "alpha "])
def test_hp_tuning_jobs_are_never_run_as_one_job(tmp_path: Path, track: str) -> None:
    command = (
        f"gcloud {track}ai hp-tuning-jobs create --region=us-central1 --display-name=t"
        " --max-trial-count=10 --parallel-trial-count=2 --config=c.yaml\n"
    )
    files = {"c__yaml": "studySpec: {}\ntrialJobSpec: {}\n"}
    with pytest.raises(TuningJobFileError, match="hyperparameter tuning job, not a single"):
        loaded(tmp_path, command, **files)
    result = tuning_loaded(tmp_path, command, **files)
    assert result.kind == "hyperparameter-tuning-job"
    assert result.tuning is not None and result.tuning.max_trial_count == 10


LEGACY_HP = (
    "trainingInput:\n  scaleTier: BASIC\n  runtimeVersion: '2.15'\n  hyperparameters:\n    goal: MAXIMIZE\n"
    "    maxTrials: 4\n    params:\n    - {parameterName: lr, type: DOUBLE,"
    " minValue: 0.001, maxValue: 0.1}\n"
)


def test_legacy_submit_with_tuning_config_is_never_one_job(tmp_path: Path) -> None:
    command = (
        "gcloud ai-platform jobs submit training j --region us-central1 --config hp.yaml"
        " --module-name trainer.task --package-path gs://bkt/t.tgz\n"
    )
    with pytest.raises(TuningJobFileError):
        loaded(tmp_path, command, hp__yaml=LEGACY_HP)
    result = tuning_loaded(tmp_path, command, hp__yaml=LEGACY_HP)
    assert result.tuning is not None and result.tuning.max_trial_count == 4
    assert [p.parameter_id for p in result.tuning.study_spec.parameters] == ["lr"]


@pytest.mark.parametrize(
    ("flags", "path", "reason"),
    [
        ("--scale-tier basic-gpux", "--scale-tier", "unknown scale tier 'BASIC_GPUX'"),
        (
            "--scale-tier basic --master-machine-type n1-standard-8",
            "--scale-tier",
            "BASIC sets the cluster itself",
        ),
        ("--scale-tier custom", "--master-machine-type", "is required with scaleTier CUSTOM"),
        ("--scale-tier custom --master-machine-type n1-bogus-8", "", ""),
    ],
)
def test_legacy_violations_speak_of_the_flags(
    tmp_path: Path, flags: str, path: str, reason: str
) -> None:
    command = (
        f"gcloud ai-platform jobs submit training j --region us-central1 {flags}"
        " --runtime-version 2.11 --python-version 3.10 --module-name trainer.task"
        " --package-path gs://bkt/t.tgz\n"
    )
    if not path:  # a machine type is the validator's to judge, at the spec's path
        spec = load(tmp_path, command)
        paths = [v.path for v in validate(spec, region="us-central1")]
        assert "workerPoolSpecs[0].machineSpec.machineType" in paths
        return
    with pytest.raises(SpecInvalidError) as info:
        loaded(tmp_path, command)
    found = {v.path: v.reason for v in info.value.violations}
    assert path in found and reason in found[path], found
    assert not any(p.startswith("trainingInput.") for p in found)


def test_legacy_violation_of_a_config_value_keeps_the_config_path(tmp_path: Path) -> None:
    with pytest.raises(SpecInvalidError) as info:
        loaded(
            tmp_path,
            "gcloud ai-platform jobs submit training j --region us-central1 --config c.yaml"
            " --module-name trainer.task --package-path gs://bkt/t.tgz\n",
            c__yaml="trainingInput:\n  scaleTier: BASIC_GPUX\n",
        )
    assert "trainingInput.scaleTier" in {v.path for v in info.value.violations}


def test_legacy_package_path_and_word_split_user_args(tmp_path: Path) -> None:
    result = loaded(
        tmp_path,
        'ARGS="--train-steps 1000 --eval-steps 100"\n'
        "gcloud ml-engine jobs submit training census --region us-central1"
        " --runtime-version 2.11 --python-version 3.10 --module-name trainer.task"
        " --package-path trainer/ -- $ARGS\n",
    )
    package = result.spec.worker_pool_specs[0].python_package_spec
    assert package is not None and package.package_uris == ["trainer/"]
    assert package.args == ["--train-steps", "1000", "--eval-steps", "100"]
    assert any("--package-path trainer/: gcloud builds" in n for n in result.notes)


def test_gcloud_list_and_dict_syntax() -> None:
    assert split_list("--a", "a,b,") == ["a", "b"]
    assert split_list("--a", "a,,b") == ["a", "", "b"]
    assert split_list("--a", "^;^a,b;c") == ["a,b", "c"]
    assert split_list("--a", "") == []
    assert split_dict("--l", 'k="v",x = y') == {"k": "v", "x": "y"}
    with pytest.raises(SpecFormatError, match="empty"):
        split_list("--a", "^^a")
    found = invocation(["gcloud", "--account", "me", "beta", "ai", "custom-jobs", "create", "-q"])
    assert (found.form, found.track, found.args) == (
        "custom-job",
        "beta",
        ["--account", "me", "-q"],
    )
    assert invocation(["gcloud", "ai", "custom-jobs", "describe", "x"]).form == "other"


# --- a --config file the script writes itself ---------------------------------------------

LEGACY = (
    "gcloud ai-platform jobs submit training hp_1 --region us-central1 --module-name trainer.task"
    " --packages gs://bkt/t.tar.gz --runtime-version 2.11 --python-version 3.10"
)
HP_BODY = (
    "trainingInput:\n  hyperparameters:\n    goal: MAXIMIZE\n    maxTrials: 20\n    params:\n"
    "    - {parameterName: lr, type: DOUBLE, minValue: 0.0001, maxValue: 0.1}\n"
)
STALE = "trainingInput:\n  scaleTier: BASIC\n"
"""An older config committed next to the script: never what the command reads."""


def test_a_heredoc_tuning_config_is_read_not_the_stale_file(tmp_path: Path) -> None:
    script = f"cat > config.yaml <<EOF\n{HP_BODY}EOF\n{LEGACY} --config config.yaml\n"
    for files in ({"config__yaml": STALE}, {}):  # a stale file next to it, or none
        with pytest.raises(TuningJobFileError):
            loaded(tmp_path, script, **files)
        result = tuning_loaded(tmp_path, script, **files)
        assert result.tuning is not None and result.tuning.max_trial_count == 20
        (tmp_path / "config.yaml").unlink(missing_ok=True)


CUSTOM_BODY = (
    "trainingInput:\n  scaleTier: CUSTOM\n  masterType: $MACHINE\n  masterConfig:\n"
    "    acceleratorConfig: {count: 1, type: NVIDIA_TESLA_T4}\n  args: [--tag, \\$HOME]\n"
)


@pytest.mark.parametrize(
    ("writes", "config"),
    [
        ("cat > config.yaml <<EOF\n{body}EOF\n", "config.yaml"),
        ("cat <<EOF > ./config.yaml\n{body}EOF\n", "config.yaml"),
        ("cat >config.yaml <<-EOF\n{tabbed}\tEOF\n", "./config.yaml"),
        ("tee config.yaml >/dev/null <<EOF\n{body}EOF\n", "config.yaml"),
        ('CFG=config.yaml\ncat > "$CFG" <<EOF\n{body}EOF\n', "$CFG"),
        ('HERE=$(dirname "$0")\ncat > $HERE/config.yaml <<EOF\n{body}EOF\n', "$HERE/config.yaml"),
        ("cat > /tmp/job-config.yaml <<EOF\n{body}EOF\n", "/tmp/job-config.yaml"),
        ("TMP=$(mktemp)\ncat > $TMP <<EOF\n{body}EOF\n", "$TMP"),  # the same computed path
    ],
)
def test_a_config_written_by_a_heredoc_is_read_from_its_body(
    tmp_path: Path, writes: str, config: str
) -> None:
    tabbed = "".join(f"\t{line}\n" for line in CUSTOM_BODY.splitlines())
    script = "MACHINE=n1-highmem-8\n" + writes.format(body=CUSTOM_BODY, tabbed=tabbed)
    result = loaded(tmp_path, f"{script}{LEGACY} --config {config}\n", config__yaml=STALE)
    (pool,) = result.spec.worker_pool_specs
    assert pool.machine_spec is not None and pool.machine_spec.machine_type == "n1-highmem-8"
    assert pool.machine_spec.accelerator_type == "NVIDIA_TESLA_T4"
    assert pool.python_package_spec is not None
    assert pool.python_package_spec.args == ["--tag", "$HOME"]  # \$ is a $ in the body
    line = script.count("\n", 0, script.index("<<")) + 1
    assert any(
        n.startswith("--config ") and f": written by the heredoc at line {line}" in n
        for n in result.notes
    ), result.notes


def test_a_quoted_heredoc_delimiter_expands_nothing(tmp_path: Path) -> None:
    script = f"cat > config.yaml <<'EOF'\n{CUSTOM_BODY}EOF\n{LEGACY} --config config.yaml\n"
    pool = load(tmp_path, script).worker_pool_specs[0]
    assert pool.machine_spec is not None and pool.machine_spec.machine_type == "$MACHINE"
    assert pool.python_package_spec is not None
    assert pool.python_package_spec.args == ["--tag", "\\$HOME"]


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        (
            "MACHINE=$(cat machine.txt)\n",
            r"line 10: the job's workerPoolSpecs\[0\]\.machineSpec\.machineType needs a value the "
            r"script computes: `\$\(cat machine.txt\)` \(line 1\) would have to run to set "
            r"\$MACHINE; set MACHINE in the environment",
        ),
        (
            "",
            r"^line 1: environment variable \$MACHINE is not set \(the heredoc writing config.yaml"
            r" uses it\); set MACHINE in the environment$",
        ),
    ],
)
def test_what_a_heredoc_needs_is_named(tmp_path: Path, assignment: str, message: str) -> None:
    body = f"cat > config.yaml <<EOF\n{CUSTOM_BODY}EOF\n"
    script = f"{assignment}{body}{LEGACY} --config config.yaml\n"
    with pytest.raises(SpecFormatError, match=message):
        loaded(tmp_path, script, config__yaml=STALE)


def test_a_heredoc_custom_job_config_with_a_computed_image_names_its_variable(
    tmp_path: Path,
) -> None:
    # Kept as written, `$(git ...)` would be the image pulled: an error, as an unset one is.
    script = (
        "IMAGE=gcr.io/p/trainer:$(git rev-parse --short HEAD)\n"
        "cat > job.yaml <<EOF\nworkerPoolSpecs:\n- machineSpec: {machineType: n1-standard-4}\n"
        "  replicaCount: 1\n  containerSpec: {imageUri: $IMAGE}\nEOF\n"
        f"{CREATE} --config=job.yaml\n"
    )
    with pytest.raises(
        SpecFormatError,
        match=r"containerSpec\.imageUri needs a value the script computes: "
        r"`\$\(git rev-parse --short HEAD\)` .*set IMAGE in the environment",
    ):
        loaded(tmp_path, script, job__yaml=CONFIG)
    path = written(tmp_path, script, {"job__yaml": CONFIG})
    result = load_spec_file(path, env={"IMAGE": "gcr.io/p/trainer:abc123"})
    container = result.spec.worker_pool_specs[0].container_spec
    assert container is not None and container.image_uri == "gcr.io/p/trainer:abc123"
    assert result.spec.service_account is None  # nothing of the file on disk
    assert "--config job.yaml: written by the heredoc at line 2; flags override its values" in (
        result.notes
    )
    assert validate(result.spec, region="us-central1") == []


@pytest.mark.parametrize(
    "command",
    [
        f"{CREATE} --config=job.yaml",
        "gcloud ai hp-tuning-jobs create --region=us-central1 --display-name=t"
        " --max-trial-count=4 --parallel-trial-count=2 --config=job.yaml",
    ],
)
def test_a_heredoc_tuning_job_is_never_a_single_job(tmp_path: Path, command: str) -> None:
    script = f"cat > job.yaml <<EOF\nstudySpec: {{}}\ntrialJobSpec: {{}}\nEOF\n{command}\n"
    with pytest.raises(SpecFormatError, match="hyperparameter tuning job"):
        loaded(tmp_path, script, job__yaml=CONFIG)
    if "custom-jobs" in command:  # custom-jobs create cannot run it, asked for either
        with pytest.raises(SpecFormatError, match="custom-jobs create` cannot run a tuning job"):
            tuning_loaded(tmp_path, script, job__yaml=CONFIG)
    else:
        assert tuning_loaded(tmp_path, script, job__yaml=CONFIG).tuning is not None


@pytest.mark.parametrize(
    ("writes", "line", "by"),
    [
        ("echo 'trainingInput: {scaleTier: BASIC}' > config.yaml\n", 1, "`echo ... >"),
        ("python gen_config.py --tier basic > config.yaml\n", 1, "`python ... >"),
        ("gsutil cp gs://bkt/configs/config.yaml .\n", 1, "`gsutil cp`"),
        ("gsutil -m cp gs://bkt/c.yaml ./config.yaml\n", 1, "`gsutil cp`"),
        ("gcloud storage cp gs://bkt/c.yaml config.yaml\n", 1, "`gcloud storage cp`"),
        ("curl -sSfo x -o config.yaml https://example.com/c.yaml\n", 1, "`curl -o`"),
        ("envsubst < config.tmpl > config.yaml\n", 1, "`envsubst ... >"),
        ("cat > config.yaml <<EOF\nx: 1\nEOF\nsed -i 's/1/2/' config.yaml\n", 4, "`sed -i`"),
        ("cat > config.yaml <<EOF\nx: 1\nEOF\ncat >> config.yaml <<EOF\ny: 2\nEOF\n", 4, ">>"),
        ("cp templates/config.yaml .\n", 1, "`cp`"),
    ],
)
def test_a_config_written_another_way_is_refused(
    tmp_path: Path, writes: str, line: int, by: str
) -> None:
    script = f"set -e\n{writes}{LEGACY} --config config.yaml\n"
    with pytest.raises(SpecFormatError) as info:
        loaded(tmp_path, script, config__yaml=STALE)
    message = str(info.value)
    assert f"--config config.yaml: line {line + 1} writes " in message
    assert by in message
    assert "the file on disk may not be what the command reads" in message


def test_only_writes_before_the_command_count(tmp_path: Path) -> None:
    script = (
        f"cat > other.yaml <<EOF\n{HP_BODY}EOF\n{LEGACY} --config config.yaml\n"
        "echo done > config.yaml\n"
    )
    result = loaded(tmp_path, script, config__yaml=STALE)
    assert any(n.startswith("read --config ") for n in result.notes)  # the file on disk


def test_a_heredoc_written_under_a_condition_is_read_with_a_note(tmp_path: Path) -> None:
    script = (
        f"if [ ! -f config.yaml ]; then\n  cat > config.yaml <<EOF\n{HP_BODY}EOF\nfi\n"
        f"{LEGACY} --config config.yaml\n"
    )
    result = tuning_loaded(tmp_path, script, config__yaml=STALE)
    assert result.tuning is not None and result.tuning.max_trial_count == 20
    assert any("under a condition, which is not evaluated" in note for note in result.notes)


# --- computed values where only their shape is checked -----------------------------------


def test_a_computed_output_directory_does_not_hide_or_add_a_problem(tmp_path: Path) -> None:
    with pytest.raises(SpecInvalidError) as info:
        loaded(
            tmp_path,
            "JOB_DIR=gs://bkt/m_$(date +%s)\n"
            "gcloud ai-platform jobs submit training j1 --job-dir $JOB_DIR --region us-central1"
            " --scale-tier basic-gpu --module-name trainer.task --packages gs://bkt/t.tar.gz"
            " --runtime-version 2.1 --python-version 3.7\n",
        )
    assert [v.path for v in info.value.violations] == ["--scale-tier"]
    assert "K80" in info.value.violations[0].reason


PROJECT_SCRIPT = """\
PROJECT_ID=$(gcloud config list project --format "value(core.project)")
BUCKET=gs://${PROJECT_ID}-ml
"""


@pytest.mark.parametrize(
    "command",
    [
        "gcloud ai custom-jobs create --project=$PROJECT_ID --region=us-central1 --display-name=d"
        " --service-account=trainer@$PROJECT_ID.iam.gserviceaccount.com"
        " --worker-pool-spec=machine-type=n1-standard-4,executor-image-uri=us-docker.pkg.dev/vertex-ai/training/"
        "tf-cpu.2-17.py310:latest,python-module=trainer.task --python-package-uris=gs://fixed-ml/t.tar.gz",
        "gcloud ai-platform jobs submit training j --project $PROJECT_ID --region us-central1"
        " --service-account trainer@$PROJECT_ID.iam.gserviceaccount.com"
        " --master-image-uri us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest"
        " --module-name trainer.task"
        " --packages gs://fixed-ml/t.tar.gz --staging-bucket gs://fixed-ml"
        " --job-dir gs://fixed-ml/out --scale-tier basic",
    ],
)
def test_a_computed_project_is_kept_where_only_its_shape_is_checked(
    tmp_path: Path, command: str
) -> None:
    result = loaded(tmp_path, f"{PROJECT_SCRIPT}{command}\n")
    spec = result.spec
    assert spec.project == "unknown-value"
    assert spec.service_account == "trainer@unknown-value.iam.gserviceaccount.com"
    assert validate(spec, region="us-central1") == []
    notes = " ".join(result.notes)
    checked = next(n for n in result.notes if "checked as `unknown-value`" in n)
    assert "to set $PROJECT_ID" in checked and "project" in checked and "service account" in checked
    assert "\x01" not in repr(spec.to_document()) + notes


@pytest.mark.parametrize(
    ("place", "field"),
    [
        ("executor-image-uri=gcr.io/$PROJECT_ID/img:1", "executorImageUri"),
        ("executor-image-uri=gcr.io/$(gcloud config get-value project)/img:1", "executorImageUri"),
        ("executor-image-uri=gcr.io/p/img:`git rev-parse HEAD`", "executorImageUri"),
        ("executor-image-uri=gcr.io/p/img:1 --python-package-uris=$BUCKET/t.tgz", "packageUris"),
    ],
)
def test_a_computed_image_or_package_is_an_error_naming_it_never_kept_as_written(
    tmp_path: Path, place: str, field: str
) -> None:
    command = (
        f"{CREATE} --worker-pool-spec=machine-type=n1-standard-4,python-module=trainer.task,{place}"
    )
    if field == "executorImageUri":
        command += " --python-package-uris=gs://fixed-ml/t.tar.gz"
    with pytest.raises(
        SpecFormatError, match=rf"pythonPackageSpec\.{field}.* needs a value the script computes"
    ):
        loaded(tmp_path, f"{PROJECT_SCRIPT}{command}\n")


def test_a_computed_value_elsewhere_is_still_an_error(tmp_path: Path) -> None:
    with pytest.raises(SpecFormatError, match=r"the job's labels\.owner needs a value the script"):
        loaded(
            tmp_path,
            f"{PROJECT_SCRIPT}{CREATE} --labels=owner=$PROJECT_ID"
            f" --worker-pool-spec=machine-type=n1-standard-4,container-image-uri={IMAGE}\n",
        )


LEGACY_SUBMIT = (
    "gcloud ai-platform jobs submit training j --region us-central1 --module-name trainer.task"
    " --scale-tier basic"
)


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        # A legacy command's package and image: never kept as written either.
        (
            " --packages $BUCKET/t.tar.gz --job-dir gs://fixed-ml/o"
            " --runtime-version 2.11 --python-version 3.10",
            r"packageUris\[0\].* needs a value the script computes: .*set PROJECT_ID in the",
        ),
        (
            " --master-image-uri gcr.io/$PROJECT_ID/img:1 --job-dir gs://fixed-ml/o",
            r"needs a value the script computes: .*set PROJECT_ID in the environment",
        ),
        # An output directory is kept as written, but not a computed bucket: its name is
        # checked whole.
        (
            " --packages gs://fixed-ml/t.tar.gz --job-dir $BUCKET/out"
            " --runtime-version 2.11 --python-version 3.10",
            r"baseOutputDirectory \(its bucket\) needs a value the script computes: .*"
            r"set PROJECT_ID in the environment",
        ),
    ],
)
def test_a_legacy_command_never_keeps_a_computed_package_image_or_bucket(
    tmp_path: Path, flags: str, says: str
) -> None:
    with pytest.raises(SpecFormatError, match=says):
        loaded(tmp_path, f"{PROJECT_SCRIPT}{LEGACY_SUBMIT}{flags}\n")


def test_a_computed_output_path_under_a_known_bucket_is_still_kept(tmp_path: Path) -> None:
    script = (
        "RUN=run_$(date +%s)\n" + LEGACY_SUBMIT + " --packages gs://fixed-ml/t.tar.gz"
        " --runtime-version 2.11 --python-version 3.10 --job-dir gs://fixed-ml/$RUN\n"
    )
    result = loaded(tmp_path, script)
    assert result.spec.base_output_directory == "gs://fixed-ml/run_$(date +%s)"
    assert any("kept as written" in n and "output directory" in n for n in result.notes)
