"""Shell scripts that submit a job: read as bash reads them, never run.

The scripts are written in the shapes sample repositories use: ``export BUCKET=...``,
``JOB_NAME=..._$(date ...)``, ``set -e``, ``echo``, word-split argument variables, then one
``gcloud ... submit`` command, maybe piped to ``tee`` or followed by ``stream-logs``.
"""

from __future__ import annotations

import contextlib
import random
import time
from pathlib import Path

import pytest

from components import SpecError, SpecFormatError, load_spec_file, validate
from components.formats.gcloud_command import is_gcloud_command, is_makefile
from components.formats.script import find_submission
from components.formats.shell import Part, Word, expand_word, split_commands

LEGACY_TAIL = (
    " --region us-central1 --runtime-version 2.11 --python-version 3.10"
    " --module-name trainer.task --package-path gs://bkt/trainer-0.1.tar.gz"
)


def write(tmp_path: Path, text: str, name: str = "submit.sh") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def trainer_args(path: Path, env: dict[str, str] | None = None) -> list[str]:
    spec = load_spec_file(path, env=env or {}).spec
    package = spec.worker_pool_specs[0].python_package_spec
    assert package is not None
    return package.args


SAMPLE_SCRIPT = """#!/bin/bash
# Submit the census trainer (in the style of the AI Platform samples).
set -euo pipefail

export PROJECT_ID=my-project
export BUCKET=gs://${PROJECT_ID}-ml
readonly REGION=us-central1
JOB_NAME=census_$(date +%Y%m%d_%H%M%S)
JOB_DIR=$BUCKET/jobs/$JOB_NAME
NNSIZE="32 8"
EXTRA_FLAGS="--train-steps 1000 --eval-steps 100"

echo "Submitting ${JOB_NAME}" >&2
cat > notes.txt <<END
gcloud ai custom-jobs create --display-name=not-this-one
END
gcloud ai-platform jobs submit training "$JOB_NAME" \\
  --job-dir "$JOB_DIR" \\
  --region $REGION \\
  --runtime-version 2.11 \\
  --python-version 3.10 \\
  --module-name trainer.task \\
  --package-path gs://my-project-ml/trainer-0.1.tar.gz \\
  --scale-tier CUSTOM \\
  --master-machine-type n1-standard-8 \\
  --master-accelerator count=1,type=nvidia-tesla-t4 \\
  -- \\
  --nnsize $NNSIZE \\
  --label "$NNSIZE" \\
  $EXTRA_FLAGS 2>&1 | tee submit.log

gcloud ai-platform jobs stream-logs $JOB_NAME
"""


def test_sample_script_reads_its_variables_and_its_one_submission(tmp_path: Path) -> None:
    loaded = load_spec_file(write(tmp_path, SAMPLE_SCRIPT), env={"REGION": "europe-west4"})
    spec = loaded.spec
    assert loaded.format == "gcloud-command"
    assert spec.region == "us-central1"  # the script's assignment beats the environment's
    assert spec.display_name == "census_$(date +%Y%m%d_%H%M%S)"  # kept as written
    assert spec.base_output_directory == "gs://my-project-ml/jobs/census_$(date +%Y%m%d_%H%M%S)"
    package = spec.worker_pool_specs[0].python_package_spec
    assert package is not None
    assert package.args == [
        "--job-dir=gs://my-project-ml/jobs/census_$(date +%Y%m%d_%H%M%S)",
        "--nnsize",
        "32",
        "8",
        "--label",
        "32 8",
        "--train-steps",
        "1000",
        "--eval-steps",
        "100",
    ]
    assert loaded.notes[0] == (
        "read the gcloud command at line 17 (`gcloud ai-platform jobs submit training`)"
    )
    kept = [n for n in loaded.notes if "kept as written" in n]
    assert kept and all("$JOB_NAME" in n and "line 8" in n for n in kept)
    assert "\x01" not in repr(spec.to_document()) + repr(loaded.notes)
    assert validate(spec, region="us-central1") == []


def test_environment_supplies_what_the_script_computes(tmp_path: Path) -> None:
    loaded = load_spec_file(write(tmp_path, SAMPLE_SCRIPT), env={"JOB_NAME": "census_1"})
    assert loaded.spec.display_name == "census_1"
    assert loaded.spec.base_output_directory == "gs://my-project-ml/jobs/census_1"
    assert not [n for n in loaded.notes if "kept as written" in n]


@pytest.mark.parametrize(
    ("assignments", "args", "expected"),
    [
        ('NNSIZE="32 8"\n', "--nnsize $NNSIZE", ["--nnsize", "32", "8"]),
        ('NNSIZE="32 8"\n', '--nnsize "$NNSIZE"', ["--nnsize", "32 8"]),
        ('NNSIZE="32 8"\n', "--nnsize=${NNSIZE}x", ["--nnsize=32", "8x"]),
        ('NNSIZE=" 32  8 "\n', "a${NNSIZE}b", ["a", "32", "8", "b"]),
        ("EMPTY=\n", "--a $EMPTY --b", ["--a", "--b"]),
        ("EMPTY=\n", '--a "$EMPTY" --b', ["--a", "", "--b"]),
        ("EMPTY=\n", "--a '' --b", ["--a", "", "--b"]),
        ("", "--lr ${LR:-0.01} --x ${LR-1}", ["--lr", "0.01", "--x", "1"]),
        ("LR=\n", "--lr ${LR:-0.01} --x ${LR-1}", ["--lr", "0.01", "--x"]),
        ("LR=0.5\n", "--lr ${LR:+set} ${UNSET:+no}", ["--lr", "set"]),
        ("", "${B:=7} $B", ["7", "7"]),
        ("A='$HOME \"x\"'\n", "$A", ["$HOME", '"x"']),
        ("", "--msg $'a\\tb' \"q\\\"q\" 'it'\\''s'", ["--msg", "a\tb", 'q"q', "it's"]),
        ("export A=1 B=2\ndeclare -x C=3\n", "$A$B $C", ["12", "3"]),
        (
            "B=gs://bkt/d/\nN=f.tar.gz\n",
            "${B%/} ${N%%.*} ${N%.*} ${N##*.} ${N#*.} ${#N} ${N^^}",
            ["gs://bkt/d", "f", "f.tar", "gz", "tar.gz", "8", "F.TAR.GZ"],
        ),
    ],
)
def test_bash_word_splitting_and_quoting(
    tmp_path: Path, assignments: str, args: str, expected: list[str]
) -> None:
    path = write(
        tmp_path, f"{assignments}gcloud ai-platform jobs submit training j{LEGACY_TAIL} -- {args}\n"
    )
    assert trainer_args(path) == expected


def test_a_variable_holding_several_flags_becomes_several_flags(tmp_path: Path) -> None:
    script = (
        'WORKER_CONFIG="--worker-count 2 --worker-machine-type n1-standard-8"\n'
        "gcloud ai-platform jobs submit training j --scale-tier custom"
        " --master-machine-type n1-standard-8 ${WORKER_CONFIG}" + LEGACY_TAIL + "\n"
    )
    pools = load_spec_file(write(tmp_path, script), env={}).spec.worker_pool_specs
    assert [(p.replicas, p.machine_spec and p.machine_spec.machine_type) for p in pools] == [
        (1, "n1-standard-8"),
        (2, "n1-standard-8"),
    ]


def test_script_value_wins_over_environment_and_unset_wins_over_both(tmp_path: Path) -> None:
    script = (
        "export REGION=us-east1\nREGION=europe-west4\n"
        "gcloud ai custom-jobs create --region=$REGION --display-name=d"
        " --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/i\n"
    )
    path = write(tmp_path, script)
    assert load_spec_file(path, env={"REGION": "asia-east1"}).spec.region == "europe-west4"
    path.write_text("REGION=europe-west4\nunset REGION\n" + script.split("\n", 2)[2])
    with pytest.raises(SpecFormatError, match=r"\$REGION is not set .*set REGION in the env"):
        load_spec_file(path, env={"REGION": "asia-east1"})


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (
            "MACHINE=n1-standard-$(nproc)\n"
            "gcloud ai custom-jobs create --region=us-central1 --display-name=d"
            " --worker-pool-spec=machine-type=$MACHINE,container-image-uri=gcr.io/p/i\n",
            r"line 2: the job's workerPoolSpecs\[0\]\.machineSpec\.machineType needs a value the "
            r"script computes: `\$\(nproc\)` \(line 1\) would have to run "
            r"to set \$MACHINE; set MACHINE in the environment",
        ),
        (
            "gcloud ai custom-jobs create --region=$(gcloud config get-value ai/region)"
            " --display-name=d --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=i\n",
            r"job's region needs a value the script computes: .*set CLOUDSDK_AI_REGION in the",
        ),
        (
            "gcloud ai-platform jobs submit training j --worker-count $1" + LEGACY_TAIL + "\n",
            r"the script argument \$1 would have to be given",
        ),
        (
            "gcloud ai-platform jobs submit training j --config `ls *.yaml`" + LEGACY_TAIL + "\n",
            r"`\$\(ls \*\.yaml\)` \(line 1\) would have to run",
        ),
        (
            'if [ -n "$GPU" ]; then\n  MACHINE=n1-standard-8\nelse\n  MACHINE=n1-standard-4\nfi\n'
            "gcloud ai-platform jobs submit training j --scale-tier custom"
            " --master-machine-type $MACHINE" + LEGACY_TAIL + "\n",
            r"\$MACHINE is set under a condition \(line 4\).*set MACHINE in the environment",
        ),
        (
            "cmd=(gcloud ai custom-jobs create --region=us-central1 --display-name=d\n"
            "  --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/i:"
            "$(git rev-parse HEAD))\n"
            '"${cmd[@]}"\n',
            r"imageUri needs a value the script computes: `\$\(git rev-parse HEAD\)` \(line 2\) "
            r"would have to run to set \$cmd; write the value in the script",
        ),
        (
            'if [ -n "$GPU" ]; then ARGS=(--epochs 5); fi\n'
            "gcloud ai-platform jobs submit training j" + LEGACY_TAIL + ' -- "${ARGS[@]}"\n',
            r"\$ARGS is set under a condition \(line 1\), which is not evaluated; write",
        ),
        (
            "gcloud ai-platform jobs submit training j --job-dir ${OUT:?set OUT}" + LEGACY_TAIL,
            r"environment variable \$OUT is not set \(the script requires it\)",
        ),
        (
            "gcloud ai-platform jobs submit training j --scale-tier custom"
            " --master-machine-type ${R/a/b}" + LEGACY_TAIL,
            r"\$\{R\.\.\.\} would have to be evaluated",
        ),
    ],
)
def test_what_cannot_be_known_is_an_error_naming_it(
    tmp_path: Path, script: str, message: str
) -> None:
    with pytest.raises(SpecFormatError, match=message):
        load_spec_file(write(tmp_path, script), env={})


def test_conditional_value_comes_from_the_environment_when_it_has_one(tmp_path: Path) -> None:
    script = (
        '[ -z "$MACHINE" ] && MACHINE=n1-standard-16\n'
        "gcloud ai-platform jobs submit training j --scale-tier custom"
        " --master-machine-type $MACHINE" + LEGACY_TAIL + "\n"
    )
    spec = load_spec_file(write(tmp_path, script), env={"MACHINE": "n1-highmem-8"}).spec
    machine = spec.worker_pool_specs[0].machine_spec
    assert machine is not None and machine.machine_type == "n1-highmem-8"


@pytest.mark.parametrize(
    "text",
    [
        "#!/bin/sh\necho hi\n",
        "PROJECT=p\n",
        "export PROJECT=p\n",
        "set -e\n",
        "echo 'submit'\ngcloud ai custom-jobs list\n",
        "# comment\n\n  gcloud ai custom-jobs describe x\n",
    ],
)
def test_scripts_are_read_as_scripts_never_as_yaml(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text, name="job.txt")
    assert is_gcloud_command(text, path)
    with pytest.raises(SpecFormatError) as info:
        load_spec_file(path, env={})
    assert "YAML" not in str(info.value)
    assert "job submission" in str(info.value) or "no gcloud command found" in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        "workerPoolSpecs: []\n",
        "# gcloud ai custom-jobs create ...\ntrainingInput:\n  scaleTier: BASIC\n",
        '{"jobSpec": {}}\n',
        "- a\n",
        "trainingInput:\n  args: |\n    gcloud ai custom-jobs create\n",
    ],
)
def test_yaml_documents_stay_yaml(tmp_path: Path, text: str) -> None:
    assert not is_gcloud_command(text, tmp_path / "job.yaml")


def test_other_gcloud_commands_are_named_and_not_submissions(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "gcloud config set project p\n"
        "gcloud compute instances list --filter='name:x'\n"
        "gcloud beta ai custom-jobs describe 123 --region=us-central1\n",
    )
    with pytest.raises(SpecFormatError) as info:
        load_spec_file(path, env={})
    message = str(info.value)
    assert "`gcloud config set project p` (line 1)" in message
    assert "`gcloud compute instances list` (line 2)" in message
    assert "`gcloud beta ai custom-jobs describe 123` (line 3)" in message
    assert (
        "are not job submissions; understood: only `gcloud ai-platform jobs submit training`"
        in message
    )


def test_several_submissions_are_refused_with_their_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "set -e\n"
        "gcloud ai-platform jobs submit training a" + LEGACY_TAIL + "\n"
        "# then the Vertex one\n"
        "gcloud ai custom-jobs create --display-name=b --config=c.yaml\n",
    )
    with pytest.raises(SpecFormatError, match=r"submits 2 jobs \(gcloud commands at lines 2, 4\)"):
        load_spec_file(path, env={})


def test_shell_forms_around_the_command(tmp_path: Path) -> None:
    script = (
        "cd trainer && gcloud ai custom-jobs create --region=us-central1 \\\n"
        '  --display-name="my job" `# an inline comment` \\\n'
        "  --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/i \\\n"
        "  --labels=team=ml >/dev/null 2>&1 || echo failed # trailing comment\r\n"
    )
    loaded = load_spec_file(write(tmp_path, script), env={})
    assert loaded.spec.display_name == "my job"
    assert loaded.spec.labels == {"team": "ml"}


def test_submission_captured_in_a_variable_is_found(tmp_path: Path) -> None:
    script = (
        "REGION=us-central1\n"
        "JOB_ID=$(gcloud ai custom-jobs create --region=$REGION --display-name=captured \\\n"
        "  --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/i \\\n"
        "  --format='value(name)')\n"
        'echo "started $JOB_ID"\n'
    )
    loaded = load_spec_file(write(tmp_path, script), env={})
    assert loaded.spec.display_name == "captured" and loaded.spec.region == "us-central1"
    assert loaded.notes[0].startswith("read the gcloud command at line 2")


def test_gcloud_config_set_gives_project_and_region(tmp_path: Path) -> None:
    script = (
        "gcloud config set project my-proj\n"
        "gcloud config set ai/region europe-west4\n"
        "gcloud ai custom-jobs create --display-name=d"
        " --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/i\n"
    )
    spec = load_spec_file(write(tmp_path, script), env={}).spec
    assert (spec.project, spec.region) == ("my-proj", "europe-west4")


def test_gcloud_config_get_value_reads_the_property(tmp_path: Path) -> None:
    script = (
        "PROJECT_ID=$(gcloud config get-value project 2>/dev/null)\n"
        "gcloud ai custom-jobs create --project=$PROJECT_ID --display-name=d --region=us-central1"
        " --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/$PROJECT_ID/i\n"
    )
    path = write(tmp_path, script)
    # The image would be pulled as written: an error naming what gives the value.
    with pytest.raises(SpecFormatError, match=r"imageUri needs a value .*CLOUDSDK_CORE_PROJECT"):
        load_spec_file(path, env={})
    unknown = load_spec_file(path, env={"PROJECT_ID": "p"})  # a project's shape is checked
    assert unknown.spec.project == "p"
    spec = load_spec_file(path, env={"CLOUDSDK_CORE_PROJECT": "from-env"}).spec
    container = spec.worker_pool_specs[0].container_spec
    assert spec.project == "from-env" and container is not None
    assert container.image_uri == "gcr.io/from-env/i"
    path.write_text("gcloud config set project set-here\n" + script)
    assert load_spec_file(path, env={"CLOUDSDK_CORE_PROJECT": "x"}).spec.project == "set-here"


def test_script_directory_and_sourced_files(tmp_path: Path) -> None:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "env.sh").write_text("export REGION=europe-west4\nIMAGE=gcr.io/p/i:v1\n")
    (tmp_path / "jobs" / "config.yaml").write_text(
        "workerPoolSpecs:\n- machineSpec: {machineType: n1-standard-4}\n"
        "  containerSpec: {imageUri: gcr.io/p/from-config}\n"
    )
    (tmp_path / "secret.env").write_text("REGION=us-east1\n")
    script = (
        'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"\n'
        "source ./env.sh\n"
        ". ../secret.env\n"
        "gcloud ai custom-jobs create --region=$REGION --display-name=d"
        ' --config="$HERE/config.yaml" --args=--image=$IMAGE\n'
    )
    loaded = load_spec_file(write(tmp_path / "jobs", script), env={})
    assert loaded.spec.region == "europe-west4"
    container = loaded.spec.worker_pool_specs[0].container_spec
    assert container is not None and container.image_uri == "gcr.io/p/from-config"
    assert container.args == ["--image=gcr.io/p/i:v1"]
    assert any("sourced file ../secret.env not read" in n for n in loaded.notes)
    assert any("read as the script's directory" in n for n in loaded.notes)


def test_lexer_parts_and_lines() -> None:
    commands = split_commands('A=1 # c\n\nfoo "x $A" \\\n  y; bar <<EOF\nbody\nEOF\nbaz\n')
    assert [(c.line, [w.literal() for w in c.words]) for c in commands] == [
        (1, ["A=1"]),
        (3, ["foo", None, "y"]),
        (4, ["bar"]),
        (7, ["baz"]),
    ]
    word = commands[1].words[1]
    assert [(p.kind, p.value, p.quoted) for p in word.parts] == [
        ("text", "x ", True),
        ("param", "A", True),
    ]
    assert expand_word(Word((Part("text", "~/x", False),)), lambda p: "/home/u") == ["/home/u/x"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gcloud ai custom-jobs create --display-name='x\n", "a ' quote is never closed"),
        ('gcloud ai custom-jobs create --display-name="x\n', 'a " quote is never closed'),
        ("gcloud ai custom-jobs create --display-name=$(date\n", r"a \$\( command substitution"),
        ("gcloud ai custom-jobs create --display-name=${X:-y\n", r"a \$\{ expansion is never"),
        ("gcloud ai custom-jobs create --display-name=" + "${A:-" * 40 + "\n", "nests more than"),
    ],
)
def test_malformed_scripts_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SpecFormatError, match=message):
        load_spec_file(write(tmp_path, "echo ok\n" + text), env={})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("A=xxxxxxxx\n" + "A=$A$A\n" * 60, "would hold more than"),
        ("A=" + "x" * 60_000 + "\n" + "".join(f"B{i}=$A\n" for i in range(200)), "expand to more"),
        ("".join(f"V{i}=1\n" for i in range(5000)), "more than 4096 variables"),
        ("W=" + "'a '" * 30_000 + "\ngcloud ai-platform jobs submit training $W\n", "more than"),
    ],
)
def test_expansion_is_bounded(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text + "gcloud ai custom-jobs create --display-name=d --config=c\n")
    started = time.process_time()
    with pytest.raises(SpecFormatError, match=message):
        load_spec_file(path, env={})
    # CPU seconds: bounded work, not a benchmark (wall time races on a loaded, shared machine)
    assert time.process_time() - started < 10.0


HOSTILE_SCRIPTS = {
    "many-words": "gcloud " + "a " * 500_000,
    "many-lines": "A=1\n" * 250_000,
    "many-expansions": "gcloud " + "${A:-x} " * 120_000,
    "many-substitutions": "gcloud " + "$(a) " * 200_000,
    "many-submissions": "gcloud ai custom-jobs create --display-name=a\n" * 20_000,
    "nested-substitutions": "X=$(gcloud $(gcloud $(gcloud $(gcloud x))))\n" * 20_000,
    "unclosed-parens": "X=$(" + "(" * 400_000,
    "long-word": "gcloud '" + "x" * 1_000_000 + "'",
    "heredoc-to-the-end": "cat <<E\n" + "gcloud ai custom-jobs create\n" * 30_000,
}


@pytest.mark.parametrize("name", sorted(HOSTILE_SCRIPTS))
def test_hostile_scripts_end_quickly_with_a_short_message(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, HOSTILE_SCRIPTS[name][: 1 << 20])
    started = time.process_time()
    with pytest.raises(SpecFormatError) as info:
        load_spec_file(path, env={})
    # CPU seconds: bounded work, not a benchmark (wall time races on a loaded, shared machine)
    assert time.process_time() - started < 10.0
    assert len(str(info.value)) < 1000 and "\x00" not in str(info.value)


def test_find_submission_without_a_file() -> None:
    found = find_submission("X=a\ngcloud beta ml-engine jobs submit training $X --region r\n", {})
    assert found.invocation.form == "legacy-training" and found.invocation.track == "beta"
    assert found.argv[-3:] == ["a", "--region", "r"] and found.line == 2


CREATE_SCRIPT = """#!/usr/bin/env bash
set -e
REGION=${REGION:-us-central1}
IMAGE=us-central1-docker.pkg.dev/p/r/trainer:$(git rev-parse --short HEAD)
gcloud beta ai custom-jobs create --region=$REGION --display-name="train-$(date +%s)" \\
  --worker-pool-spec=machine-type=n1-standard-8,accelerator-type=nvidia-tesla-t4,container-image-uri=$IMAGE \\
  --worker-pool-spec=machine-type=n1-standard-8,replica-count=2,container-image-uri=$IMAGE \\
  --args=^:^--epochs=5:--data=gs://bkt/d --labels=team=ml
"""


def test_mutated_scripts_fail_only_with_spec_errors(tmp_path: Path) -> None:
    rng = random.Random(20261122)
    path = tmp_path / "fuzz.sh"
    for source in (SAMPLE_SCRIPT, CREATE_SCRIPT):
        data = source.encode()
        for _ in range(150):
            mutated = bytearray(data)
            for _ in range(rng.randint(1, 6)):
                mutated[rng.randrange(len(mutated))] = rng.choice(b"$(){}\"'`\\ \n;&|<>#=,^x0")
            path.write_bytes(bytes(mutated[: rng.randint(1, len(mutated))]))
            with contextlib.suppress(SpecError):  # anything else fails the test
                load_spec_file(path, env={"IMAGE": "i"})


# --- shell idioms: assigned defaults, script arguments, required variables ---------------

CREATE_POOL = "--worker-pool-spec=machine-type=$MACHINE,container-image-uri=gcr.io/p/i"


@pytest.mark.parametrize(
    "defaults",
    [
        ': ${REGION:=us-central1}\n: "${MACHINE:=n1-standard-8}"\n',
        'echo "region ${REGION:=us-central1}, machine ${MACHINE:=n1-standard-8}" >&2\n',
        "REGION=\n: ${REGION:=us-central1} ${MACHINE=n1-standard-8}\n",
    ],
)
def test_an_assigned_default_sets_the_variable(tmp_path: Path, defaults: str) -> None:
    script = (
        f"{defaults}gcloud ai custom-jobs create --region=$REGION --display-name=d {CREATE_POOL}\n"
    )
    path = write(tmp_path, script)
    spec = load_spec_file(path, env={}).spec
    machine = spec.worker_pool_specs[0].machine_spec
    assert spec.region == "us-central1"
    assert machine is not None and machine.machine_type == "n1-standard-8"
    if "REGION=\n" not in defaults:  # set (and not empty) in the environment: kept
        assert load_spec_file(path, env={"REGION": "europe-west4"}).spec.region == "europe-west4"


def test_an_assigned_default_under_a_condition_is_not_known(tmp_path: Path) -> None:
    script = (
        '[ -n "$PROD" ] && : ${MACHINE:=n1-standard-16}\n'
        f"gcloud ai custom-jobs create --region=us-central1 --display-name=d {CREATE_POOL}\n"
    )
    with pytest.raises(SpecFormatError, match=r"\$MACHINE is set under a condition \(line 1\)"):
        load_spec_file(write(tmp_path, script), env={})


def test_a_script_argument_with_a_default_is_its_default(tmp_path: Path) -> None:
    script = (
        "REGION=${1:-us-central1}\nMACHINE=${2-n1-standard-8}\nNAME=run-$3\n"
        "gcloud ai custom-jobs create --region=$REGION --display-name=$NAME"
        f" {CREATE_POOL}\n"
    )
    loaded = load_spec_file(write(tmp_path, script), env={})
    assert loaded.spec.region == "us-central1"
    assert loaded.spec.display_name == "run-$3"  # no default: unknown, kept as written
    assert (
        "line 1: ${1:-us-central1}: the script's arguments are not known here, so its default "
        "'us-central1' is used" in loaded.notes
    )
    assert any("the script argument $3 would have to be given" in n for n in loaded.notes)
    path = write(tmp_path, script.replace("${1:-us-central1}", "$1"))
    with pytest.raises(SpecFormatError, match=r"job's region needs .* script argument \$1"):
        load_spec_file(path, env={})


@pytest.mark.parametrize(
    ("check", "env", "message"),
    [
        (': "${BUCKET:?set BUCKET first}"\n', {}, r"line 1: environment variable \$BUCKET is not"),
        ("BUCKET=b\n: ${BUCKET:?set BUCKET}\n", {}, None),
        (': "${BUCKET:?set BUCKET first}"\n', {"BUCKET": "b"}, None),
        ("BUCKET=\n: ${BUCKET?}\n", {}, None),  # set, though empty: no colon, no error
        ("BUCKET=\n: ${BUCKET:?}\n", {}, r"\$BUCKET is not set .*set BUCKET in the environment"),
    ],
)
def test_a_required_variable_must_be_set(
    tmp_path: Path, check: str, env: dict[str, str], message: str | None
) -> None:
    script = (
        f"{check}gcloud ai custom-jobs create --region=us-central1 --display-name=d"
        " --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/i\n"
    )
    path = write(tmp_path, script)
    if message is None:
        assert load_spec_file(path, env=env).spec.display_name == "d"
    else:
        with pytest.raises(SpecFormatError, match=message):
            load_spec_file(path, env=env)


def test_an_unset_variable_in_trainer_arguments_is_nothing_as_in_bash(tmp_path: Path) -> None:
    legacy = write(
        tmp_path,
        "gcloud ai-platform jobs submit training j"
        + LEGACY_TAIL
        + ' -- --data $DATA --lr=${LR} "$Q" --x\n',
    )
    loaded = load_spec_file(legacy, env={})
    package = loaded.spec.worker_pool_specs[0].python_package_spec
    assert package is not None and package.args == ["--data", "--lr=", "", "--x"]
    assert (
        "line 1: $DATA is not set: it expands to nothing in the trainer arguments, as bash does"
        in loaded.notes
    )
    create = write(
        tmp_path,
        "gcloud ai custom-jobs create --region=us-central1 --display-name=d"
        " --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/i"
        " --args=--data=$DATA,--epochs=3\n",
        name="create.sh",
    )
    container = load_spec_file(create, env={}).spec.worker_pool_specs[0].container_spec
    assert container is not None and container.args == ["--data=", "--epochs=3"]


@pytest.mark.parametrize(
    "script",
    [
        "set -euo pipefail\ngcloud ai-platform jobs submit training j"
        + LEGACY_TAIL
        + " -- $DATA\n",
        "set -o nounset\ngcloud ai-platform jobs submit training j" + LEGACY_TAIL + " -- $DATA\n",
        "gcloud ai-platform jobs submit training j --job-dir $DATA" + LEGACY_TAIL + "\n",
        "gcloud ai custom-jobs create --region=us-central1 --display-name=$DATA"
        " --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/i\n",
    ],
)
def test_an_unset_variable_elsewhere_or_under_set_u_is_an_error(
    tmp_path: Path, script: str
) -> None:
    with pytest.raises(SpecFormatError, match=r"\$DATA is not set .*set DATA in the environment"):
        load_spec_file(write(tmp_path, script), env={})


# --- where bash ends a command early ------------------------------------------------------


def test_a_comment_inside_a_continuation_ends_the_command(tmp_path: Path) -> None:
    script = (
        "gcloud ai-platform jobs submit training census \\\n"
        "  --region us-central1 --runtime-version 2.11 --python-version 3.10 \\\n"
        "  --scale-tier custom --master-machine-type n1-standard-8 \\\n"
        "  # --master-accelerator count=1,type=nvidia-tesla-t4 \\\n"
        "  --module-name trainer.task \\\n"
        "  --package-path gs://bkt/trainer-0.1.tar.gz\n"
    )
    loaded = load_spec_file(write(tmp_path, script), env={})
    cut = (
        "line 4: a comment ends the command started at line 1 (bash does not continue a line "
        "through a comment): the lines after it are not part of the command; line 5 starts "
        "with `--module-name`, which bash runs as a command of its own"
    )
    assert cut in loaded.notes
    package = loaded.spec.worker_pool_specs[0].python_package_spec
    assert package is not None and package.python_module is None  # as bash submits it
    assert "pythonModule" in str(validate(loaded.spec, region="us-central1"))


def test_an_early_end_is_said_with_the_error_it_causes(tmp_path: Path) -> None:
    create = write(
        tmp_path,
        "gcloud ai custom-jobs create --region=us-central1 --display-name=d \\\n"
        "  # the pool:\n"
        "  --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/i\n",
    )
    with pytest.raises(SpecFormatError) as info:
        load_spec_file(create, env={})
    assert str(info.value).startswith("line 1: gcloud needs --worker-pool-spec or --config")
    assert "(note: line 2: a comment ends the command started at line 1" in str(info.value)
    legacy = write(
        tmp_path,
        "gcloud ai-platform jobs submit training j --scale-tier basic-gpu" + LEGACY_TAIL + " \\\n"
        "  # --labels=team=ml \\\n  --job-dir gs://bkt/out\n",
        name="legacy.sh",
    )
    with pytest.raises(SpecError) as invalid:
        load_spec_file(legacy, env={})
    found = {v.path: v for v in getattr(invalid.value, "violations", ())}
    assert found["--scale-tier"].severity == "error"
    assert found["line 2"].severity == "warning" and "a comment ends" in found["line 2"].reason


def test_an_unquoted_semicolon_ends_the_command(tmp_path: Path) -> None:
    script = (
        "gcloud ai custom-jobs create --region=us-central1 --display-name=d"
        " --worker-pool-spec=machine-type=n1-standard-8,executor-image-uri=us-docker.pkg.dev/"
        "vertex-ai/training/tf-cpu.2-17.py310:latest,local-package-path=.,python-module=t.task,"
        "requirements=pandas;scikit-learn --labels=team=ml\n"
    )
    loaded = load_spec_file(write(tmp_path, script), env={})
    assert loaded.spec.labels == {}  # after the `;`: another command
    assert (
        "line 1: an unquoted `;` ends the command (bash reads it as a command separator): "
        "`scikit-learn --labels=team=ml` is not part of the command (if it belongs to the "
        "value before the `;`, quote that value)" in loaded.notes
    )
    quoted = write(
        tmp_path, script.replace("requirements=pandas;scikit-learn", "'requirements=a;b'")
    )
    fine = load_spec_file(quoted, env={})
    assert fine.spec.labels == {"team": "ml"} and not [n for n in fine.notes if "`;`" in n]


def test_lexer_keeps_redirections_heredoc_bodies_and_early_ends() -> None:
    text = (
        'X=1\ncat >./c.yaml <<-EOF\n\ta: $X \\$Y "q" `date`\n\tEOF\n'
        "tee f <<'E' >/dev/null 2>&1\nb: $X\nE\n"
        "cmd a \\\n  # c\n  --b\nx=a;b\n"
    )
    first, cat, tee, cmd, flag, x, b = split_commands(text)
    assert (first.line, cat.line, tee.line, cmd.line, flag.line) == (1, 2, 5, 8, 10)
    (out, heredoc) = cat.redirects
    assert (out.op, out.fd, out.target.literal(), heredoc.op) == (">", "", "./c.yaml", "<<-")
    assert heredoc.body is not None
    assert [(p.kind, p.value) for p in heredoc.body.parts] == [
        ("text", "a: "),
        ("param", "X"),
        ("text", ' $Y "q" '),
        ("command", "date"),
        ("text", "\n"),
    ]
    body = tee.redirects[0].body
    assert body is not None and body.literal() == "b: $X\n"  # quoted delimiter: no expansion
    assert [(r.op, r.fd) for r in tee.redirects[1:]] == [(">", ""), (">&", "2")]
    assert cmd.cut.startswith("line 9: a comment ends the command started at line 8")
    assert x.cut.startswith("line 11: an unquoted `;` ends the command") and not b.cut


# --- Makefiles ------------------------------------------------------------------------------

MAKEFILE = """\
# Train on Vertex AI.
PROJECT ?= my-project
REGION := us-central1
IMAGE = $(REGISTRY)/$(PROJECT)/trainer:$(TAG)
REGISTRY = us-central1-docker.pkg.dev
TAG ?= $(shell git rev-parse --short HEAD)
MACHINE = n1-standard-8
ARGS = --epochs=5
ARGS += --batch=64
export BUCKET = gs://$(PROJECT)-ml

.PHONY: local train

local:
\tpython -m trainer.task $(ARGS)

train: build
\t@echo "submitting $@ to $(REGION)"
\tgcloud ai custom-jobs create --region=$(REGION) --project=$(PROJECT) \\
\t  --display-name=$@-$$(date +%s) \\
\t  --worker-pool-spec=machine-type=${MACHINE},accelerator-type=NVIDIA_TESLA_T4,container-image-uri=$(IMAGE) \\
\t  --args=$(subst $(space),$(comma),$(ARGS))

build:
\tdocker build -t $(IMAGE) .
"""


def test_a_makefile_recipe_is_read_with_make_variables(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        MAKEFILE.replace("$(subst $(space),$(comma),$(ARGS))", "--out=$$BUCKET/o"),
        name="Makefile",
    )
    env = {"PROJECT": "env-project", "MACHINE": "n1-highmem-2"}
    with pytest.raises(SpecFormatError, match=r"imageUri needs a value the script computes"):
        load_spec_file(path, env=env)  # the image tag runs git: never kept as written
    loaded = load_spec_file(path, env={**env, "TAG": "abc123"})
    spec = loaded.spec
    assert loaded.format == "gcloud-command"
    assert (spec.project, spec.region) == ("env-project", "us-central1")  # ?= yields to env
    assert spec.display_name == "train-$(date +%s)"  # $@ is the target, $$ the shell's $
    (pool,) = spec.worker_pool_specs
    assert pool.machine_spec is not None and pool.machine_spec.machine_type == "n1-standard-8"
    assert pool.container_spec is not None
    assert pool.container_spec.image_uri == "us-central1-docker.pkg.dev/env-project/trainer:abc123"
    assert pool.container_spec.args == ["--out=gs://env-project-ml/o"]  # exported to the shell
    assert loaded.notes[:2] == [
        "read the gcloud command at line 19 (`gcloud ai custom-jobs create`)",
        "read as a Makefile: the recipe of `train` (line 19), Make variables expanded; each "
        "recipe line runs in a shell of its own",
    ]
    assert validate(spec, region="us-central1") == []


def test_a_makefile_function_is_a_value_make_computes(tmp_path: Path) -> None:
    path = write(tmp_path, MAKEFILE, name="train.mk")
    container = load_spec_file(path, env={"TAG": "v1"}).spec.worker_pool_specs[0].container_spec
    assert container is not None  # trainer arguments: kept as written
    # its arguments expanded by make (an undefined one handed on as the shell's ${NAME})
    assert container.args == ["$(subst ${space},${comma},--epochs=5 --batch=64)"]


@pytest.mark.parametrize(
    ("makefile", "env", "message"),
    [
        (
            "ifeq ($(ENV),prod)\nMACHINE = n1-standard-16\nelse\nMACHINE = n1-standard-4\nendif\n",
            {},
            r"line 8: \$\(MACHINE\) is set under ifeq/ifdef \(line 4\), which is not evaluated; "
            r"set MACHINE in the environment",
        ),
        ("", {}, r"environment variable \$MACHINE is not set .*set MACHINE in the environment"),
        ("MACHINE = $(MACHINE)x\n", {}, "Make variables nest more than 16 deep"),
        ("define MACHINE\nn1-standard-4\nendef\n", {}, r"is a multi-line `define` \(line 1\)"),
        ("ifdef GPU\nMACHINE = n1-standard-16\nendif\n", {"MACHINE": "n1-standard-4"}, None),
    ],
)
def test_a_makefile_value_not_known_is_an_error_naming_it(
    tmp_path: Path, makefile: str, env: dict[str, str], message: str | None
) -> None:
    text = (
        f"{makefile}.PHONY: train\ntrain:\n\tgcloud ai custom-jobs create --region=us-central1"
        " --display-name=d --worker-pool-spec=machine-type=$(MACHINE),container-image-uri=i\n"
    )
    path = write(tmp_path, text, name="Makefile")
    if message is None:
        machine = load_spec_file(path, env=env).spec.worker_pool_specs[0].machine_spec
        assert machine is not None and machine.machine_type == "n1-standard-4"
        return
    with pytest.raises(SpecFormatError, match=message):
        load_spec_file(path, env=env)


def test_a_makefile_is_known_by_its_text_and_holds_one_submission(tmp_path: Path) -> None:
    text = (
        "REGION ?= us-central1\n"
        "dev:\n\tgcloud ai custom-jobs create --region=$(REGION) --display-name=dev"
        " --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=i\n"
        "prod:\n\tgcloud ai custom-jobs create --region=$(REGION) --display-name=prod"
        " --worker-pool-spec=machine-type=n1-standard-8,container-image-uri=i\n"
    )
    path = write(tmp_path, text, name="jobs.txt")
    assert is_gcloud_command(text, path) and is_makefile(text, path)
    with pytest.raises(SpecFormatError, match=r"submits 2 jobs \(gcloud commands at lines 3, 5\)"):
        load_spec_file(path, env={})
    rule_only = "train:\n\tgcloud ai custom-jobs create --display-name=x --config=c.yaml\n"
    assert is_makefile(rule_only, tmp_path / "jobs.txt")
    assert not is_makefile("trainingInput:\n  scaleTier: BASIC\n", tmp_path / "c.yaml")
    assert not is_makefile("#!/bin/sh\nX ?= 1\ngcloud x\n", tmp_path / "run")
    assert not is_makefile(SAMPLE_SCRIPT, tmp_path / "run.txt")
    shell_loop = 'for r in a b; do\n\techo "Region: $r"\n\tgcloud ai custom-jobs list\ndone\n'
    assert not is_makefile(shell_loop, tmp_path / "run.txt")
    assert not is_makefile('echo "Job: x"\n\tgcloud ai custom-jobs list\n', tmp_path / "r")


HOSTILE_MAKEFILES = {
    "self-reference": "A = $(A)\nt:\n\tgcloud ai custom-jobs create --display-name=$(A)\n",
    "doubling": "A0 = xxxxxxxxxxxxxxxx\n"
    + "".join(f"A{i + 1} := $(A{i})$(A{i})\n" for i in range(40))
    + "t:\n\tgcloud ai custom-jobs create --display-name=$(A40)\n",
    "many-recipes": "t:\n" + "\tgcloud ai custom-jobs create --display-name=$(X)\n" * 30_000,
    "unclosed": "t:\n\tgcloud ai custom-jobs create " + "$(" * 300_000 + "\n",
    "nested": "t:\n\tgcloud ai custom-jobs create " + "$(X" * 30_000 + ")" * 30_000 + "\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_MAKEFILES))
def test_hostile_makefiles_end_quickly_with_a_short_message(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, HOSTILE_MAKEFILES[name][: 1 << 20], name="Makefile")
    started = time.process_time()
    with pytest.raises(SpecFormatError) as info:
        load_spec_file(path, env={})
    # CPU seconds: bounded work, not a benchmark (wall time races on a loaded, shared machine)
    assert time.process_time() - started < 10.0
    assert len(str(info.value)) < 1000


# --- issue 26: a variable as the command word, unset inside a word, paths from the root --


@pytest.mark.parametrize(
    "script",
    [
        'GCLOUD=gcloud\n"${GCLOUD}" ai-platform jobs submit training j' + LEGACY_TAIL + "\n",
        "GCLOUD=/usr/lib/google-cloud-sdk/bin/gcloud\n$GCLOUD --project p1-x ai-platform jobs"
        " submit training j" + LEGACY_TAIL + "\n",
    ],
)
def test_a_variable_naming_gcloud_is_the_command_word(tmp_path: Path, script: str) -> None:
    loaded = load_spec_file(write(tmp_path, script), env={})
    assert loaded.format == "gcloud-command"
    assert loaded.notes[0].startswith("read the gcloud command at line 2")


def test_a_variable_naming_another_program_is_not_gcloud(tmp_path: Path) -> None:
    script = 'TOOL=echo\n"$TOOL" ai-platform jobs submit training j' + LEGACY_TAIL + "\n"
    with pytest.raises(SpecFormatError, match="no gcloud command found"):
        load_spec_file(write(tmp_path, script), env={})


def test_an_unset_variable_inside_a_word_is_empty_inside_it(tmp_path: Path) -> None:
    script = (
        'ARGS="--a=1,--key=$UNSET_KEY"\n'
        "gcloud ai custom-jobs create --region=us-central1 --display-name=x"
        " --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/i:1"
        ' --args="$ARGS" --labels="$LABELS"\n'
    )
    script = 'LABELS="team=ml$ALSO_UNSET"\n' + script
    loaded = load_spec_file(write(tmp_path, script), env={})
    container = loaded.spec.worker_pool_specs[0].container_spec
    assert container is not None and container.args == ["--a=1", "--key="]
    assert loaded.spec.labels == {"team": "ml"}
    assert any("$UNSET_KEY is not set: it expands to nothing inside" in n for n in loaded.notes)


def test_an_unset_variable_alone_is_still_named(tmp_path: Path) -> None:
    script = (
        "gcloud ai custom-jobs create --region=$REGION --display-name=x"
        " --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/i:1\n"
    )
    with pytest.raises(SpecFormatError, match=r"\$REGION is not set"):
        load_spec_file(write(tmp_path, script), env={})


def test_set_u_keeps_an_unset_variable_inside_a_word_an_error(tmp_path: Path) -> None:
    script = (
        'set -u\nARGS="--key=$UNSET_KEY"\n'
        "gcloud ai custom-jobs create --region=us-central1 --display-name=x"
        " --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/i:1"
        ' --args="$ARGS"\n'
    )
    with pytest.raises(SpecFormatError, match="UNSET_KEY"):
        load_spec_file(write(tmp_path, script), env={})


def test_relative_paths_are_found_from_the_repository_root(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "job.yaml").write_text(
        "workerPoolSpecs:\n- machineSpec: {machineType: n1-standard-4}\n  replicaCount: 1\n"
        "  containerSpec: {imageUri: gcr.io/p/i:1}\n"
    )
    (tmp_path / "trainer").mkdir()
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    create = write(
        scripts,
        "gcloud ai custom-jobs create --region=us-central1 --display-name=x"
        " --config=configs/job.yaml\n",
    )
    loaded = load_spec_file(create, env={})
    assert loaded.spec.worker_pool_specs[0].machine_spec is not None
    assert any("found in" in n and "read as ../configs/job.yaml" in n for n in loaded.notes)
    legacy = write(
        scripts,
        "gcloud ai-platform jobs submit training j --region us-central1 --runtime-version 2.11"
        " --module-name trainer.task --package-path trainer\n",
        "legacy.sh",
    )
    package = load_spec_file(legacy, env={}).spec.worker_pool_specs[0].python_package_spec
    assert package is not None and package.package_uris == ["../trainer"]


def test_a_path_in_the_scripts_folder_wins_and_none_is_looked_for_past_the_root(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (tmp_path / "configs").mkdir()  # above the repository root: never read
    (tmp_path / "configs" / "job.yaml").write_text("workerPoolSpecs: []\n")
    create = write(
        root,
        "gcloud ai custom-jobs create --region=us-central1 --display-name=x"
        " --config=configs/job.yaml\n",
    )
    with pytest.raises(SpecFormatError, match=r"repo/configs/job\.yaml: no such file"):
        load_spec_file(create, env={})
    (root / "configs").mkdir()
    (root / "configs" / "job.yaml").write_text(
        "workerPoolSpecs:\n- machineSpec: {machineType: n1-standard-8}\n  replicaCount: 1\n"
        "  containerSpec: {imageUri: gcr.io/p/i:1}\n"
    )
    loaded = load_spec_file(create, env={})
    machine = loaded.spec.worker_pool_specs[0].machine_spec
    assert machine is not None and machine.machine_type == "n1-standard-8"
    assert not any("found in" in n for n in loaded.notes)  # the script's own folder


def test_an_unset_variable_as_the_command_word_is_named(tmp_path: Path) -> None:
    script = '"${GCLOUD}" ai-platform jobs submit training j' + LEGACY_TAIL + "\n"
    with pytest.raises(SpecFormatError, match=r"\$GCLOUD is not set.*set GCLOUD in the env"):
        load_spec_file(write(tmp_path, script), env={})
    loaded = load_spec_file(write(tmp_path, script), env={"GCLOUD": "/opt/sdk/bin/gcloud"})
    assert loaded.format == "gcloud-command"


# -- bash constructs scripts use to assemble and run a command (issue 35) -----------------------

CREATE_WORDS = (
    "gcloud ai custom-jobs create --region=us-central1 --display-name=arrayed\n"
    "  --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/i:1"
)


@pytest.mark.parametrize(
    "script",
    [
        # The whole command in an array, run as "${cmd[@]}".
        f"cmd=(\n  {CREATE_WORDS}\n  --args=--epochs=5\n)\n" + '"${cmd[@]}"\n',
        # Built up with +=, a flag per line, comments between.
        "cmd=(gcloud ai custom-jobs create)\n"
        "cmd+=(--region=us-central1)  # where\n"
        "cmd+=(--display-name=arrayed\n"
        "  # the one pool\n"
        "  --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/i:1)\n"
        'ARGS=(--epochs=5)\ncmd+=("--args=${ARGS[0]}")\n' + '"${cmd[@]}"\n',
        # Flags in an array spliced into a written command, values from variables read when
        # the array is assigned (bash expands an array's words then).
        'IMAGE=gcr.io/p/i:1\nFLAGS=(--region=us-central1 "--display-name=arrayed")\n'
        'POOL=(--worker-pool-spec=machine-type=n1-standard-4,container-image-uri="$IMAGE")\n'
        "IMAGE=gcr.io/p/changed-later\n"
        'POOL=("${FLAGS[@]}" "${POOL[@]}")\n'
        'gcloud ai custom-jobs create "${POOL[@]}" --args=--epochs=5\n',
        # `declare -a` / `local -a`, and an unquoted array ($FLAGS is its first element).
        "declare -a cmd=(gcloud ai custom-jobs create --region=us-central1)\n"
        "FLAGS=(--display-name=arrayed)\n"
        f"${{cmd[@]}} $FLAGS {CREATE_WORDS.split(chr(10))[1].strip()} --args=--epochs=5\n",
    ],
)
def test_a_command_built_in_a_bash_array_is_read_as_the_words_it_runs(
    tmp_path: Path, script: str
) -> None:
    loaded = load_spec_file(write(tmp_path, script), env={})
    spec = loaded.spec
    assert (spec.region, spec.display_name) == ("us-central1", "arrayed")
    container = spec.worker_pool_specs[0].container_spec
    assert container is not None
    assert container.image_uri == "gcr.io/p/i:1"
    if "--args" in script:
        assert container.args == ["--epochs=5"]


def test_an_array_that_cannot_be_known_is_an_error_naming_why(tmp_path: Path) -> None:
    appended = (
        "cmd=(gcloud ai custom-jobs create --region=us-central1 --display-name=d)\n"
        'if [ -n "$GPU" ]; then cmd+=(--worker-pool-spec=machine-type=n1-standard-8); fi\n'
        '"${cmd[@]}"\n'
    )
    with pytest.raises(SpecFormatError, match=r"\$cmd is set under a condition \(line 2\)"):
        load_spec_file(write(tmp_path, appended), env={})
    # A growing array is bounded: doubling it in a loop ends in an error, not in memory.
    doubling = "a=(x)\n" + 'a=("${a[@]}" "${a[@]}")\n' * 20 + '"${a[@]}"\n'
    started = time.process_time()
    with pytest.raises(SpecFormatError, match="more than 10000 elements"):
        load_spec_file(write(tmp_path, doubling), env={})
    assert time.process_time() - started < 5


@pytest.mark.parametrize(
    "top",
    [
        'LOG=logs/submit.log\nexec > >(tee -a "$LOG") 2>&1\n',
        "exec 3>&1 1>>submit.log 2>&1\n",
        'exec 2> >(while read -r l; do echo "[err] $l"; done)\n',
        "diff <(sort a.txt) <(sort b.txt) > /dev/null || echo differ\n",
    ],
)
def test_process_substitutions_and_exec_redirections_do_not_stop_the_reader(
    tmp_path: Path, top: str
) -> None:
    script = f"#!/bin/bash\nset -e\n{top}{CREATE_WORDS.replace(chr(10), ' ')}\n"
    spec = load_spec_file(write(tmp_path, script), env={}).spec
    assert spec.display_name == "arrayed"


def test_a_backslash_that_ends_the_file_is_dropped_as_bash_drops_it(tmp_path: Path) -> None:
    for ending in ("\\", " \\", " --args=--epochs=5\\"):
        script = CREATE_WORDS.replace("\n", " ") + ending
        container = load_spec_file(write(tmp_path, script), env={}).spec.worker_pool_specs[0]
        assert container.container_spec is not None
        assert container.container_spec.image_uri == "gcr.io/p/i:1"
        assert container.container_spec.args == (["--epochs=5"] if "args" in ending else [])


GETOPTS = """\
REGION=us-central1
MACHINE=n1-standard-4
usage() { echo "usage: $0 [-r region] [-m machine] [-g]"; exit 1; }
while getopts "r:m:g" opt; do
  case "$opt" in
    r) REGION="$OPTARG" ;;
    m) MACHINE=$OPTARG ;;
    g) GPU=1 ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
gcloud ai custom-jobs create --region=$REGION --display-name=d \\
  --worker-pool-spec=machine-type=$MACHINE,container-image-uri=gcr.io/p/i:1
"""


def test_values_set_by_getopts_are_the_scripts_defaults_with_a_note(tmp_path: Path) -> None:
    loaded = load_spec_file(write(tmp_path, GETOPTS), env={})
    pool = loaded.spec.worker_pool_specs[0]
    assert loaded.spec.region == "us-central1"
    assert pool.machine_spec is not None and pool.machine_spec.machine_type == "n1-standard-4"
    assert any(
        "$REGION is set from the script's options (getopts, line 4)" in n
        and "its default 'us-central1' is used" in n
        for n in loaded.notes
    )
    # No default before the loop: it depends on the arguments, said so.
    no_default = GETOPTS.replace("MACHINE=n1-standard-4\n", "")
    with pytest.raises(
        SpecFormatError,
        match=r"\$MACHINE is set from the script's options \(getopts, line 3\) and has no "
        r"default: it depends on the script's arguments",
    ):
        load_spec_file(write(tmp_path, no_default), env={})


CASE = """\
MODE=${1:-small}
case "$MODE" in
  tiny|small)
    MACHINE=n1-standard-4
    ;;
  big) MACHINE=n1-standard-16; GPUS=2 ;;
  *) echo "unknown mode"; exit 1 ;;
esac
gcloud ai custom-jobs create --region=us-central1 --display-name=d \\
  --worker-pool-spec=machine-type=$MACHINE,container-image-uri=gcr.io/p/i:1
"""


def test_a_case_on_a_known_word_takes_the_branch_bash_would(tmp_path: Path) -> None:
    loaded = load_spec_file(write(tmp_path, CASE), env={})
    machine = loaded.spec.worker_pool_specs[0].machine_spec
    assert machine is not None and machine.machine_type == "n1-standard-4"
    assert any("its default 'small' is used" in n for n in loaded.notes)
    big = load_spec_file(write(tmp_path, CASE.replace("${1:-small}", "big")), env={})
    machine = big.spec.worker_pool_specs[0].machine_spec
    assert machine is not None and machine.machine_type == "n1-standard-16"
    # Nothing matches and the `*)` branch exits: the machine is never set.
    with pytest.raises(SpecFormatError, match=r"\$MACHINE is not set"):
        load_spec_file(write(tmp_path, CASE.replace("${1:-small}", "huge")), env={})


def test_a_case_written_on_one_line_is_followed_too(tmp_path: Path) -> None:
    script = (
        'MODE=big; case "$MODE" in small) MACHINE=n1-standard-4 ;; big) MACHINE=n1-standard-16'
        " ;; esac\n" + CASE.split("esac\n", 1)[1]
    )
    machine = load_spec_file(write(tmp_path, script), env={}).spec.worker_pool_specs[0]
    assert machine.machine_spec is not None
    assert machine.machine_spec.machine_type == "n1-standard-16"
    first = script.replace("MODE=big", "MODE=small")
    machine = load_spec_file(write(tmp_path, first), env={}).spec.worker_pool_specs[0]
    assert machine.machine_spec is not None
    assert machine.machine_spec.machine_type == "n1-standard-4"


def test_a_case_on_the_scripts_arguments_says_the_value_depends_on_them(
    tmp_path: Path,
) -> None:
    script = CASE.replace("MODE=${1:-small}\n", "").replace('"$MODE"', '"$1"')
    with pytest.raises(
        SpecFormatError,
        match=r"\$MACHINE is set in a `case` on the script's arguments \(line 1\): it depends "
        r"on the arguments",
    ):
        load_spec_file(write(tmp_path, script), env={})
    env = load_spec_file(write(tmp_path, script), env={"MACHINE": "n1-highmem-2"}).spec
    machine = env.worker_pool_specs[0].machine_spec
    assert machine is not None and machine.machine_type == "n1-highmem-2"


@pytest.mark.parametrize(
    "script",
    [
        # One array run twice.
        f"cmd=({CREATE_WORDS})\n" + '"${cmd[@]}"\n"${cmd[@]}"\n',
        # A submission per case branch, the word not known: both are read.
        'case "$1" in\n  a) '
        + CREATE_WORDS.replace("\n", " ")
        + " ;;\n  b) "
        + CREATE_WORDS.replace("\n", " ")
        + " ;;\nesac\n",
    ],
)
def test_several_submissions_are_refused_naming_their_lines(tmp_path: Path, script: str) -> None:
    with pytest.raises(SpecFormatError, match=r"the script submits 2 jobs \(gcloud commands at"):
        load_spec_file(write(tmp_path, script), env={})


def test_a_case_on_a_known_word_reads_only_the_submission_of_its_branch(tmp_path: Path) -> None:
    script = (
        "MODE=${MODE:-train}\ncase $MODE in\n  train) "
        + CREATE_WORDS.replace("\n", " ")
        + " ;;\n  tune) gcloud ai hp-tuning-jobs create --region=us-central1 --config=x.yaml ;;"
        "\nesac\n"
    )
    assert load_spec_file(write(tmp_path, script), env={}).spec.display_name == "arrayed"
