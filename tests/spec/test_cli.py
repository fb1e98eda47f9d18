"""``python -m components``: exit codes and output of validate, convert and catalog."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from components import JobSpec, validate
from components.cli._cli import main

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).parents[2]


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_validate_valid_file_exits_0() -> None:
    code, out, err = run("validate", str(DATA / "custom_job.yaml"), "--region", "us-central1")
    assert code == 0 and out == ""
    assert "valid (custom-job)" in err


def test_validate_invalid_prints_one_line_per_violation(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "workerPoolSpecs:\n  - machineSpec: {machineType: n1-highcpu-16, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 3}\n"
        "    replicaCount: 1\n    containerSpec: {imageUri: img}\n"
    )
    code, out, err = run("validate", str(path))
    assert code == 1
    assert out.splitlines() == [
        "workerPoolSpecs[0].machineSpec.acceleratorCount: 3 x NVIDIA_TESLA_T4 is not allowed on n1-highcpu-16 "
        "(allowed counts of NVIDIA_TESLA_T4 on n1-highcpu-16: 1, 2, 4)"
    ]
    assert "region and zone checks skipped" in err


def test_validate_json_report(tmp_path: Path) -> None:
    code, out, _ = run(
        "validate",
        str(DATA / "seed001_config_legacy_k80.yaml"),
        "--json",
        "--region",
        "us-central1",
    )
    report = json.loads(out)
    # The legacy converter refuses the K80 itself, in the config's terms (issue 12), so the
    # report is the converter's: no spec was made, and no format is named.
    assert code == 1 and report["valid"] is False
    assert {"path", "reason", "suggestion", "rule", "severity"} <= set(report["violations"][0])
    retired = [v for v in report["violations"] if v["rule"] == "retired"]
    assert [v["path"] for v in retired] == ["trainingInput.masterType", "trainingInput.workerType"]


def test_validate_json_report_names_the_kind_of_job() -> None:
    code, out, _ = run("validate", str(DATA / "custom_job.yaml"), "--json")
    report = json.loads(out)
    assert code == 0 and (report["kind"], report["format"]) == ("custom-job", "custom-job")
    # A tuning job is validated as one (tests/spec/test_tuning_formats.py has the rest).
    code, out, _ = run("validate", str(DATA / "real" / "vertex_hp_tuning_job.yaml"), "--json")
    assert code == 0 and json.loads(out)["kind"] == "hyperparameter-tuning-job"


def test_validate_schema_errors_exit_1_and_malformed_exit_2(tmp_path: Path) -> None:
    bad_type = tmp_path / "a.yaml"
    bad_type.write_text("workerPoolSpecs: [{replicaCount: lots}]\n")
    code, out, _ = run("validate", str(bad_type))
    assert code == 1 and "workerPoolSpecs[0].replicaCount: must be a whole number" in out
    malformed = tmp_path / "b.yaml"
    malformed.write_text("workerPoolSpecs: [\n")
    code, _, err = run("validate", str(malformed))
    assert code == 2 and "not valid YAML" in err
    code, _, err = run("validate", str(tmp_path / "missing.yaml"))
    assert code == 2 and "no such file" in err


def test_convert_gcloud_command_prints_valid_custom_job_spec(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in {
        "JOB_NAME": "census_1",
        "APP_PACKAGE_PATH": "gs://src-bkt/t.tgz",
        "MAIN_APP_MODULE": "trainer.task",
        "JOB_DIR": "gs://out-bkt/j",
    }.items():
        monkeypatch.setenv(name, value)
    code, out, _ = run("convert", str(DATA / "seed001_submit_flags.sh"))
    assert code == 0
    assert out.startswith(
        "# gcloud ai custom-jobs create --region=us-central1 --display-name=census_1"
    )
    document = yaml.safe_load(out)
    assert [p["replicaCount"] for p in document["workerPoolSpecs"]] == [1, 9, 3]
    assert document["workerPoolSpecs"][0]["machineSpec"] == {
        "machineType": "n1-highcpu-16",
        "acceleratorType": "NVIDIA_TESLA_T4",
        "acceleratorCount": 4,
    }
    spec = JobSpec.parse(document)  # what we print reads back as the same job
    assert validate(spec, region="us-central1") == []


def test_convert_legacy_k80_exits_1_naming_retired_gpu() -> None:
    code, out, err = run("convert", str(DATA / "seed001_config_legacy_k80.yaml"))
    assert code == 1 and out == ""
    # Said in the legacy config's terms, once per field, not once per converted pool.
    assert (
        "trainingInput.masterType: complex_model_m_gpu runs on 4 x NVIDIA_TESLA_K80, "
        "retired on 2024-05-01 (use masterType: n1-standard-16 with "
        "masterConfig.acceleratorConfig {type: NVIDIA_TESLA_T4, count: 4})"
    ) in err
    assert "machineSpec.acceleratorType" not in err


def test_catalog_filters_and_unknown_names() -> None:
    code, out, _ = run("catalog", "--gpu", "NVIDIA_TESLA_T4", "--machine", "n1-highcpu-16")
    lines = out.splitlines()
    assert code == 0 and lines[0].split()[:3] == ["GPU", "MACHINE", "TYPE"]
    assert lines[1].split()[:3] == ["NVIDIA_TESLA_T4", "n1-highcpu-16", "1,2,4"]
    code, out, _ = run("catalog", "--region", "europe-west4", "--gpu", "NVIDIA_TESLA_A100")
    assert code == 0 and {line.split()[1] for line in out.splitlines()[1:]} == {
        "a2-highgpu-1g",
        "a2-highgpu-2g",
        "a2-highgpu-4g",
        "a2-highgpu-8g",
        "a2-megagpu-16g",
    }
    code, _, err = run("catalog", "--gpu", "T4")
    assert code == 2 and "unknown accelerator type" in err


def test_module_entry_point_and_light_import_path(tmp_path: Path) -> None:
    # The validation path must not import the Vertex client library or pulumi.
    probe = (
        "import sys, components, runpy\n"
        "from components import load_spec_file, validate\n"
        f"validate(load_spec_file({str(DATA / 'custom_job.yaml')!r}).spec, region='us-central1')\n"
        "heavy = sorted(m for m in sys.modules if m.startswith(('google.cloud.aiplatform', 'pulumi')))\n"
        "print(heavy)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
    cli = subprocess.run(
        [sys.executable, "-m", "components", "validate", str(DATA / "custom_job.yaml")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0, cli.stderr


# --- CLI friction (issue 12) ----------------------------------------------------------


def test_validate_json_reports_unreadable_input_as_json(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("workerPoolSpecs: [\n")
    code, out, err = run("validate", str(path), "--json")
    report = json.loads(out)
    assert code == 2 and err == ""
    assert report["valid"] is False and report["violations"] == []
    assert "not valid YAML" in report["error"] and str(path) in report["error"]


def test_validate_json_reports_missing_file_as_json(tmp_path: Path) -> None:
    code, out, _ = run("validate", str(tmp_path / "absent.yaml"), "--json")
    assert code == 2 and json.loads(out)["valid"] is False


def test_config_fragment_hints_at_validating_the_command(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-standard-8\n"
        "  runtimeVersion: '2.11'\n  region: us-central1\n"
    )
    code, _, err = run("validate", str(path))
    assert code == 1
    assert "validate the file holding that command" in err
    assert "--package-path/--module-name" in err


def test_complete_spec_gets_no_fragment_hint() -> None:
    code, _, err = run("validate", str(DATA / "custom_job.yaml"), "--region", "us-central1")
    assert code == 0 and "--config of a gcloud command" not in err


def test_convert_header_always_has_display_name_and_region(tmp_path: Path) -> None:
    path = tmp_path / "my-job.yaml"
    spec = yaml.safe_load((DATA / "custom_job.yaml").read_text())
    spec.pop("displayName", None)
    spec.pop("region", None)
    path.write_text(yaml.safe_dump(spec))
    code, out, err = run("convert", str(path))
    header = out.splitlines()[0]
    assert code == 0, err
    assert "--display-name=my-job" in header and "--region=REGION" in header
    assert "no display name in the file" in err and "replace REGION" in err


def test_convert_refuses_local_package_paths_and_says_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "displayName: local-pkg\nregion: us-central1\nworkerPoolSpecs:\n"
        "- machineSpec: {machineType: n1-standard-8}\n  replicaCount: 1\n"
        "  pythonPackageSpec:\n"
        "    executorImageUri: us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest\n"
        "    packageUris: [dist/trainer-0.1.tar.gz]\n    pythonModule: trainer.task\n"
    )
    code, out, err = run("convert", str(path))
    assert code == 1
    assert yaml.safe_load(out)["workerPoolSpecs"][0]["pythonPackageSpec"]["packageUris"] == [
        "dist/trainer-0.1.tar.gz"
    ]
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: packageUris holds local paths (dist/trainer-0.1.tar.gz)")
    assert "gs://" in last and "TrainingJob resource" in last


@pytest.mark.parametrize("command", ["convert", "estimate"])
def test_cli_prints_no_library_warnings(command: str) -> None:
    # PYTHONWARNINGS=always shows every warning the process emits; the CLI must still
    # keep client libraries' import-time FutureWarnings out of its report.
    argv = [sys.executable, "-m", "components", command, str(DATA / "custom_job.yaml")]
    argv += ["--region", "us-central1"]
    env = {"PYTHONWARNINGS": "always", "PATH": "/usr/bin:/bin"}
    result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr


def test_cli_silences_future_warnings_raised_by_client_libraries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import warnings

    import components.cli._cli as cli

    real_validate = getattr(cli, "validate")  # noqa: B009 (not exported, patched below)

    def validate_after_a_library_warning(*args: object, **kwargs: object) -> object:
        # The warning comes from code whose module is google.*, as the client libraries' do.
        library = {"__name__": "google.api_core._python_version_support", "warnings": warnings}
        exec("warnings.warn('Python 3.11 support ends', FutureWarning)", library)
        return real_validate(*args, **kwargs)

    monkeypatch.setattr(cli, "validate", validate_after_a_library_warning)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, _ = run("validate", str(DATA / "custom_job.yaml"), "--region", "us-central1")
    assert code == 0
    assert [w for w in caught if issubclass(w.category, FutureWarning)] == []


def test_estimate_prices_a_retired_legacy_job_as_written_and_says_why(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "trainingInput:\n  scaleTier: BASIC_GPU\n  region: asia-east1\n  packageUris: [gs://bkt/t.tgz]\n"
        "  pythonModule: trainer.task\n  scheduling: {maxRunningTime: 43200s}\n"
    )
    code, out, err = run("estimate", str(path))
    assert code == 0
    assert "total $/h: 1.3578" in out and "$16.29" in out  # seed 003's BASIC_GPU price
    assert "warning: trainingInput.scaleTier: BASIC_GPU runs on 1 x NVIDIA_TESLA_K80" in err
    assert "cannot be submitted" in err


@pytest.mark.parametrize("name", ["legacy_custom_t4.yaml", "legacy_submit_script.sh"])
def test_convert_region_flag_picks_the_image_registry_of_that_region(name: str) -> None:
    # Both files say us-central1; --region moves the job, and its prebuilt image with it.
    code, out, err = run("convert", str(DATA / "real" / name), "--region", "europe-west4")
    document = yaml.safe_load(out)
    images = [p["pythonPackageSpec"]["executorImageUri"] for p in document["workerPoolSpecs"]]
    assert code in (0, 1), err  # 1: the script's package is a local path
    assert images and all(
        i.startswith("europe-docker.pkg.dev/vertex-ai/training/tf-") for i in images
    ), images
    assert "--region=europe-west4" in out.splitlines()[0]


# --- issue 26, item 4 ---------------------------------------------------------------------


def test_estimate_without_a_region_prices_in_us_central1_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "workerPoolSpecs:\n- machineSpec: {machineType: n1-standard-4}\n  replicaCount: 1\n"
        "  containerSpec: {imageUri: gcr.io/p/i:1}\n"
    )
    code, out, err = run("estimate", str(path))
    assert code == 0, err
    assert "region us-central1" in out
    assert "no region given" in err and "us-central1" in err
    path.write_text(path.read_text() + "region: europe-west4\n")
    code, out, err = run("estimate", str(path))
    assert code == 0 and "region europe-west4" in out and "no region given" not in err


def test_convert_keeps_a_block_scalars_trailing_newline(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "region: us-central1\nworkerPoolSpecs:\n- machineSpec: {machineType: n1-standard-4}\n"
        "  replicaCount: 1\n  containerSpec:\n    imageUri: gcr.io/p/i:1\n"
        "    command: [sh, -c]\n    args:\n    - |\n      echo one\n      echo two\n"
    )
    code, out, err = run("convert", str(path))
    assert code == 0, err
    document = yaml.safe_load(out)
    assert document["workerPoolSpecs"][0]["containerSpec"]["args"] == ["echo one\necho two\n"]


def test_a_command_word_holding_a_blank_gets_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "submit.sh"
    path.write_text(
        "gcloud ai custom-jobs create --region=us-central1 --display-name=x"
        " --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/i:1"
        ' --command="python src/x.py"\n'
    )
    code, out, _ = run("validate", str(path))
    assert code == 0
    assert "warning: workerPoolSpecs[0].containerSpec.command[0]" in out
    assert "is one argument" in out and "[python, src/x.py]" in out


def test_convert_imports_the_message_types_not_the_clients(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "job.yaml"
    path.write_text(
        "region: us-central1\nworkerPoolSpecs:\n- machineSpec: {machineType: n1-standard-4}\n"
        "  replicaCount: 1\n  containerSpec: {imageUri: gcr.io/p/i:1}\n"
    )
    code = (
        "import io, sys; from components.cli._cli import main; "
        "rc = main(['convert', sys.argv[1]], io.StringIO(), io.StringIO()); "
        "print(rc, sorted(m for m in sys.modules if m.endswith('_service.client')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=120,
    )
    assert done.stdout.strip() == "0 []", done.stderr[-2000:]
