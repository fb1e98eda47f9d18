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
from components.formats.gcloud_command import is_gcloud_command
from components.formats.script import find_submission
from components.formats.shell import Part, Word, expand_word, split_commands

LEGACY_TAIL = (
    " --region us-central1 --runtime-version 2.11 --python-version 3.10"
    " --module-name trainer.task --package-path gs://b/trainer-0.1.tar.gz"
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
            "B=gs://b/d/\nN=f.tar.gz\n",
            "${B%/} ${N%%.*} ${N%.*} ${N##*.} ${N#*.} ${#N} ${N^^}",
            ["gs://b/d", "f", "f.tar", "gz", "tar.gz", "8", "F.TAR.GZ"],
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
            "TAG=$(git rev-parse --short HEAD)\n"
            "gcloud ai custom-jobs create --region=us-central1 --display-name=d"
            " --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/i:$TAG\n",
            r"line 2: the job's workerPoolSpecs\[0\]\.containerSpec\.imageUri needs a value the "
            r"script computes: `\$\(git rev-parse --short HEAD\)` \(line 1\) would have to run "
            r"to set \$TAG; set TAG in the environment",
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
            "ARGS=(--epochs 5\n  --lr 0.1)\n"
            "gcloud ai-platform jobs submit training j" + LEGACY_TAIL + ' -- "${ARGS[@]}"\n',
            r"pythonPackageSpec\.args\[0\] needs .*\$\{ARGS\.\.\.\} would have to be evaluated",
        ),
        (
            "ARGS=(--epochs 5)\n"
            "gcloud ai-platform jobs submit training j" + LEGACY_TAIL + " -- $ARGS\n",
            r"the array \(--epochs 5\) \(line 1\) would have to be expanded .* to set \$ARGS",
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
    with pytest.raises(SpecFormatError, match="set CLOUDSDK_CORE_PROJECT or PROJECT_ID in the env"):
        load_spec_file(path, env={})
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
    started = time.perf_counter()
    with pytest.raises(SpecFormatError, match=message):
        load_spec_file(path, env={})
    assert time.perf_counter() - started < 2.0


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
    started = time.perf_counter()
    with pytest.raises(SpecFormatError) as info:
        load_spec_file(path, env={})
    assert time.perf_counter() - started < 2.0
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
  --args=^:^--epochs=5:--data=gs://b/d --labels=team=ml
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
