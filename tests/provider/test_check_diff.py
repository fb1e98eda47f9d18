"""check and diff: validation failures with property paths, replace decisions, no client import."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pulumi.output import UNKNOWN

from components._provider import TrainingJobProvider
from components.lifecycle._check import check_inputs
from components.lifecycle._wire import decode_spec, encode_spec
from components.training_job import prepare_spec
from tests.provider.conftest import REPO, configured, job_inputs

DEV_SPEC = REPO / "stacks" / "jobs" / "dev-t4-spot.yaml"


def _dev_inputs(region: str = "us-central1") -> dict[str, Any]:
    prepared = prepare_spec(DEV_SPEC)
    spec = prepared.spec
    spec["workerPoolSpecs"][0]["pythonPackageSpec"]["packageUris"] = ["gs://bkt/trainer.tar.gz"]
    return {
        **job_inputs(),
        "spec": spec,
        "env_values": {},
        "region": region,
        "project": "my-project",
    }


def test_valid_local_inputs_pass_and_come_back_normalised():
    provider = configured("http://127.0.0.1:9")
    inputs = job_inputs()
    inputs["spec"]["workerPoolSpecs"][0]["replicaCount"] = 1.0  # the engine sends numbers as floats
    result = provider.check({}, inputs)
    assert result.failures == []
    assert json.loads(result.inputs["spec"])["workerPoolSpecs"][0]["replicaCount"] == 1
    assert "__provider" not in result.inputs


def test_spec_travels_as_canonical_json_text_whatever_form_comes_in():
    provider = configured("http://127.0.0.1:9")
    inputs = job_inputs()
    document = inputs["spec"]
    from_mapping = provider.check({}, inputs).inputs["spec"]
    assert isinstance(from_mapping, str)
    assert from_mapping == json.dumps(
        json.loads(from_mapping), sort_keys=True, separators=(",", ":")
    )
    assert json.loads(from_mapping)["workerPoolSpecs"] == document["workerPoolSpecs"]
    from_text = provider.check({}, {**inputs, "spec": from_mapping}).inputs["spec"]
    assert from_text == from_mapping
    reordered = json.dumps(dict(reversed(list(json.loads(from_mapping).items()))))
    assert provider.check({}, {**inputs, "spec": reordered}).inputs["spec"] == from_mapping


def test_check_puts_back_the_inputs_a_program_leaves_out_at_their_defaults():
    inputs = job_inputs()
    for key in (
        "triggers",
        "wait_timeout",
        "wait_for",
        "exclusive_gpus",
        "keep_record_on_delete",
    ):
        inputs.pop(key)
    checked = TrainingJobProvider().check({}, inputs).inputs
    assert checked["wait_for"] == "submitted"
    assert checked["exclusive_gpus"] is False and checked["keep_record_on_delete"] is False
    full = TrainingJobProvider().check({}, job_inputs(identity=inputs["identity"])).inputs
    assert TrainingJobProvider().diff("id", full, checked).changes is False


def test_spec_text_that_is_not_a_json_object_fails_at_spec():
    for text in ("workerPoolSpecs: []", "[1, 2]", "{not json"):
        failures = TrainingJobProvider().check({}, {**job_inputs(), "spec": text}).failures
        assert [f.property for f in failures] == ["spec"], text
        assert "JSON text of a mapping" in failures[0].reason


def test_state_written_before_the_json_text_form_gives_no_diff():
    inputs = job_inputs()
    olds = _outs(inputs)
    olds_nested = {**olds, "spec": decode_spec(olds["spec"])}  # how earlier releases stored it
    assert isinstance(olds_nested["spec"], dict)
    news = TrainingJobProvider().check({}, inputs).inputs
    diff = TrainingJobProvider().diff("id", olds_nested, news)
    assert diff.changes is False


def test_gpu_not_offered_in_region_is_one_failure_at_its_path_with_suggestion():
    provider = TrainingJobProvider()  # unconfigured: Vertex rules
    result = provider.check({}, _dev_inputs(region="me-central2"))
    assert [f.property for f in result.failures] == [
        "workerPoolSpecs[0].machineSpec.acceleratorType"
    ]
    reason = result.failures[0].reason
    assert "NVIDIA_TESLA_T4 is not offered in me-central2" in reason
    assert "is offered in" in reason  # the suggestion is part of the reason


def test_every_violation_is_its_own_failure():
    inputs = _dev_inputs()
    machine = inputs["spec"]["workerPoolSpecs"][0]["machineSpec"]
    machine["acceleratorCount"] = 3
    inputs["spec"]["scheduling"]["strategy"] = "SPOTT"
    failures = TrainingJobProvider().check({}, inputs).failures
    paths = sorted(f.property for f in failures)
    assert paths == ["scheduling.strategy", "workerPoolSpecs[0].machineSpec.acceleratorCount"]
    strategy = next(f for f in failures if f.property == "scheduling.strategy")
    assert "did you mean SPOT?" in strategy.reason


def test_schema_errors_name_the_field():
    inputs = _dev_inputs()
    inputs["spec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorCount"] = "four"
    inputs["spec"]["workerPoolSpecs"][0]["colour"] = "red"
    failures = {f.property: f.reason for f in TrainingJobProvider().check({}, inputs).failures}
    assert failures["workerPoolSpecs[0].machineSpec.acceleratorCount"] == "must be a whole number"
    assert "workerPoolSpecs[0].colour" in failures


def test_local_paths_fail_for_vertex_only_as_warnings_and_pass_locally():
    inputs = job_inputs()
    assert configured("http://127.0.0.1:8642").check({}, inputs).failures == []
    outcome = check_inputs(inputs, target="vertex")
    assert outcome.failures == []
    assert [w.path for w in outcome.warnings] == [
        "workerPoolSpecs[0].pythonPackageSpec.packageUris[0]"
    ]
    # A non-gs output directory is an error on Vertex.
    inputs["spec"]["baseOutputDirectory"] = "/tmp/out"
    assert [f.property for f in TrainingJobProvider().check({}, inputs).failures] == [
        "baseOutputDirectory"
    ]


def test_a_local_trainer_path_that_is_gone_fails_the_local_stacks_check_naming_the_field(
    tmp_path,
):
    inputs = job_inputs()
    package = inputs["spec"]["workerPoolSpecs"][0]["pythonPackageSpec"]
    package["packageUris"] = [str(tmp_path / "trainer-moved-away")]
    failures = configured("http://127.0.0.1:8642").check({}, inputs).failures
    assert [(f.property, f.reason) for f in failures] == [
        (
            "workerPoolSpecs[0].pythonPackageSpec.packageUris[0]",
            f"'{tmp_path / 'trainer-moved-away'}' does not exist (give the path of the "
            "trainer's package directory or archive (relative to the spec file))",
        )
    ]


def test_knobs_are_checked():
    inputs = job_inputs(wait_for="finished", wait_timeout="soon", exclusive_gpus="yes")
    inputs["project"] = None
    failures = {f.property for f in TrainingJobProvider().check({}, inputs).failures}
    assert failures == {"wait_for", "wait_timeout", "exclusive_gpus", "project"}


def test_wait_timeout_text_is_normalised_to_seconds():
    result = TrainingJobProvider().check({}, job_inputs(wait_timeout="90m"))
    assert result.failures == []
    assert result.inputs["wait_timeout"] == 5400


def test_unknown_values_at_preview_are_tolerated_then_validated_once_known():
    inputs = _dev_inputs(region="me-central2")
    inputs["spec"]["workerPoolSpecs"][0]["pythonPackageSpec"]["packageUris"] = [UNKNOWN]
    inputs["spec"]["serviceAccount"] = UNKNOWN
    # Unknown package and service account: still the region problem, nothing about them.
    failures = TrainingJobProvider().check({}, inputs).failures
    assert [f.property for f in failures] == ["workerPoolSpecs[0].machineSpec.acceleratorType"]
    # Unknown region: region rules wait; unknown spec: everything waits.
    inputs["region"] = UNKNOWN
    assert TrainingJobProvider().check({}, inputs).failures == []
    assert TrainingJobProvider().check({}, {**inputs, "spec": UNKNOWN}).failures == []
    # Once known, a bad value is reported.
    inputs["region"] = "us-central1"
    inputs["spec"]["workerPoolSpecs"][0]["pythonPackageSpec"]["packageUris"] = ["ftp://x/y"]
    inputs["spec"]["serviceAccount"] = "not an account"
    found = {f.property for f in TrainingJobProvider().check({}, inputs).failures}
    assert found == {"workerPoolSpecs[0].pythonPackageSpec.packageUris[0]", "serviceAccount"}


def test_failures_never_contain_env_values():
    inputs = job_inputs(env={"API_TOKEN": "hunter2-secret", "bad-name": "hunter3-secret"})
    failures = TrainingJobProvider().check({}, inputs).failures
    assert [f.property for f in failures] == ["workerPoolSpecs[0].pythonPackageSpec.env[1].name"]
    assert all("hunter" not in f.reason for f in failures)


def _outs(inputs: dict[str, Any]) -> dict[str, Any]:
    """What create stores: the inputs (checked) plus outputs."""
    checked = TrainingJobProvider().check({}, inputs).inputs
    return {
        **checked,
        "job_name": "projects/p/locations/r/customJobs/1",
        "state": "JOB_STATE_RUNNING",
    }


def test_no_change_means_no_diff_even_with_a_new_provider_blob():
    inputs = job_inputs()
    olds = {**_outs(inputs), "__provider": "old-code"}
    news = {**TrainingJobProvider().check({}, inputs).inputs, "__provider": "new-code"}
    diff = TrainingJobProvider().diff("id", olds, news)
    assert diff.changes is False
    assert diff.replaces == []


def _with_arg(text: str, arg: str) -> str:
    document = json.loads(text)
    document["workerPoolSpecs"][0]["pythonPackageSpec"]["args"].append(arg)
    return encode_spec(document)


def test_job_changes_replace_naming_the_properties():
    inputs = job_inputs()
    olds = _outs(inputs)
    provider = TrainingJobProvider()
    cases: dict[str, Callable[[dict[str, Any]], object]] = {
        "spec": lambda n: n.update(spec=_with_arg(n["spec"], "--x")),
        "triggers": lambda n: n.update(triggers=["data-v2"]),
        "region": lambda n: n.update(region="us-east1"),
        "env_values": lambda n: n["env_values"].update(
            {"workerPoolSpecs[0].pythonPackageSpec.env[0].value": "changed"}
        ),
    }
    for prop, change in cases.items():
        news = provider.check({}, job_inputs(identity=inputs["identity"])).inputs
        change(news)
        diff = provider.diff("id", olds, news)
        assert diff.changes is True, prop
        assert diff.replaces == [prop], prop
        assert diff.delete_before_replace is False  # create the new job first by default


def test_blanks_at_the_ends_of_arguments_in_an_older_state_are_no_change():
    """States written when arguments lost their blanks (a block scalar's trailing newline) keep
    their job on upgrade; an argument that really changes still replaces it."""
    provider = TrainingJobProvider()
    inputs = job_inputs()
    news = provider.check({}, job_inputs(identity=inputs["identity"])).inputs
    news["spec"] = _with_arg(news["spec"], "python train.py --epochs 3\n")
    assert "--epochs 3\\n" in news["spec"]  # the new spec keeps the newline
    olds = {**_outs(inputs), "spec": _with_arg(_outs(inputs)["spec"], "python train.py --epochs 3")}
    assert provider.diff("id", olds, news).replaces == []
    olds["spec"] = _with_arg(_outs(inputs)["spec"], "python train.py --epochs 4")
    assert provider.diff("id", olds, news).replaces == ["spec"]


def test_exclusive_gpus_deletes_before_replacing():
    inputs = job_inputs()
    olds = _outs(inputs)
    news = (
        TrainingJobProvider()
        .check({}, {**inputs, "triggers": ["v2"], "exclusive_gpus": True})
        .inputs
    )
    diff = TrainingJobProvider().diff("id", olds, news)
    assert diff.replaces == ["triggers"]
    assert diff.delete_before_replace is True


def test_provider_only_knobs_update_without_replacing():
    inputs = job_inputs()
    olds = _outs(inputs)
    for knob, value in [
        ("wait_for", "succeeded"),
        ("wait_timeout", 30),
        ("keep_record_on_delete", True),
        ("exclusive_gpus", True),
        ("identity", "renamed"),
    ]:
        news = TrainingJobProvider().check({}, {**inputs, knob: value}).inputs
        diff = TrainingJobProvider().diff("id", olds, news)
        assert diff.changes is True, knob
        assert diff.replaces == [], knob


def test_unknown_new_value_is_a_replace():
    inputs = job_inputs()
    olds = _outs(inputs)
    assert TrainingJobProvider().diff("id", olds, {**olds, "spec": UNKNOWN}).replaces == ["spec"]
    nested = {**decode_spec(olds["spec"]), "serviceAccount": UNKNOWN}  # a mapping input
    assert TrainingJobProvider().diff("id", olds, {**olds, "spec": nested}).replaces == ["spec"]


@settings(max_examples=60, deadline=None)
@given(
    old=st.lists(st.one_of(st.text(max_size=8), st.integers(-5, 5)), max_size=3),
    new=st.lists(st.one_of(st.text(max_size=8), st.integers(-5, 5)), max_size=3),
)
def test_triggers_replace_exactly_when_they_differ(old, new):
    inputs = job_inputs(name="fixed")
    olds = {**inputs, "triggers": old}
    news = {**inputs, "triggers": new}
    diff = TrainingJobProvider().diff("id", olds, news)
    assert (diff.replaces == ["triggers"]) == (old != new and bool(old or new))


def test_check_and_diff_never_import_the_vertex_client():
    script = textwrap.dedent(
        """
        import sys
        from components._provider import TrainingJobProvider
        from components.training_job import prepare_spec
        prepared = prepare_spec("stacks/jobs/local-trainer.yaml")
        news = {"spec": prepared.spec, "env_values": prepared.env_values, "project": "p-123456",
                "region": "us-central1", "identity": "x", "__provider": "blob"}
        p = TrainingJobProvider()
        inputs = p.check({}, news).inputs
        p.diff("id", inputs, inputs)
        loaded = [m for m in sys.modules if m.startswith("google.cloud.aiplatform")]
        print(loaded)
        assert not loaded, loaded
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
