"""Issue 44's input forms of scripts: ``read`` prompts, Makefile conditionals, REST calls
(``curl ... /customJobs``), configs from stdin or a process substitution, loops."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from components import SpecFormatError, load_spec_file

POOL = (
    "--worker-pool-spec=machine-type=$MACHINE,replica-count=1,container-image-uri=gcr.io/p/t:latest"
)


def write(tmp_path: Path, text: str, name: str = "submit.sh") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- read ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ('read -r -p "Machine type: " MACHINE', "the terminal"),
        ('read -p "Machine type: " -t 30 MACHINE', "the terminal"),
        ("read MACHINE < machine.txt", "its standard input"),
    ],
)
def test_a_variable_set_by_read_is_read_when_the_script_runs(
    tmp_path: Path, line: str, where: str
) -> None:
    path = write(
        tmp_path,
        f"#!/bin/bash\n{line}\n"
        f"gcloud ai custom-jobs create --region=us-central1 --display-name=d {POOL}\n",
    )
    with pytest.raises(SpecFormatError) as caught:
        load_spec_file(path, env={})
    message = str(caught.value)
    assert f"$MACHINE is read from {where} (`read`, line 2)" in message
    assert "not set" not in message and "set MACHINE in the environment" in message
    spec = load_spec_file(path, env={"MACHINE": "n1-standard-8"}).spec
    machine = spec.worker_pool_specs[0].machine_spec
    assert machine is not None and machine.machine_type == "n1-standard-8"


def test_a_read_prompt_the_command_does_not_use_is_no_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '#!/bin/bash\nMACHINE=n1-standard-4\nread -p "Continue? [y/N] " ANSWER\n'
        f"gcloud ai custom-jobs create --region=us-central1 --display-name=d {POOL}\n",
    )
    assert load_spec_file(path, env={}).spec.display_name == "d"


# --- Makefiles ----------------------------------------------------------------------------

MAKE_RECIPE = (
    "train:\n\tgcloud $(FLAGS) ai custom-jobs create --region=us-central1 --display-name=d"
    " --worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/t\n"
)


def test_a_make_variable_built_from_a_conditional_one_is_an_error_only_where_used(
    tmp_path: Path,
) -> None:
    conditional = "ifdef DEBUG\n  EXTRA = --verbosity=debug\nendif\nFLAGS := $(EXTRA) --quiet\n"
    unused = write(tmp_path, conditional + MAKE_RECIPE.replace("$(FLAGS) ", ""), "Makefile")
    assert load_spec_file(unused, env={}).spec.display_name == "d"
    used = write(tmp_path, conditional + MAKE_RECIPE, "train.mk")
    with pytest.raises(
        SpecFormatError,
        match=r"\$\(FLAGS\) is set from \$\(EXTRA\) \(line 4\), "
        r"which is set under ifeq/ifdef \(line 2\)",
    ):
        load_spec_file(used, env={})
    assert load_spec_file(used, env={"FLAGS": "--quiet"}).spec.display_name == "d"


# --- configs from stdin and process substitutions -----------------------------------------

CONFIG = """workerPoolSpecs:
  - machineSpec:
      machineType: $MACHINE
    replicaCount: 1
    containerSpec:
      imageUri: gcr.io/p/trainer:latest
"""
CREATE = "gcloud ai custom-jobs create --region=us-central1 --display-name=d"


def machine_of(path: Path, env: dict[str, str] | None = None) -> str:
    machine = load_spec_file(path, env=env or {}).spec.worker_pool_specs[0].machine_spec
    assert machine is not None
    return str(machine.machine_type)


@pytest.mark.parametrize(
    "script",
    [
        f"{CREATE} --config=- <<EOF\n{CONFIG}EOF\n",
        f"{CREATE} --config - <<-EOF\n\t{CONFIG.replace(chr(10), chr(10) + chr(9))}EOF\n",
        f'{CREATE} --config=/dev/stdin <<< "{CONFIG}"\n',
        f"{CREATE} --config=<(cat <<EOF\n{CONFIG}EOF\n)\n",
        f"{CREATE} --config <(cat <<EOF\n{CONFIG}EOF\n)\n",
        f'F=$(mktemp)\ncat > "$F" <<EOF\n{CONFIG}EOF\n{CREATE} --config="$F"\n',
    ],
)
def test_a_config_from_stdin_or_made_on_the_fly_is_read(tmp_path: Path, script: str) -> None:
    path = write(tmp_path, f"#!/bin/bash\nMACHINE=n1-standard-8\n{script}")
    assert machine_of(path) == "n1-standard-8"


def test_a_config_on_stdin_from_a_file_or_from_nothing(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(CONFIG.replace("$MACHINE", "n1-standard-16"))
    path = write(tmp_path, f"#!/bin/bash\n{CREATE} --config=- < job.yaml\n")
    assert machine_of(path) == "n1-standard-16"
    path = write(tmp_path, f"#!/bin/bash\ncat job.yaml | {CREATE} --config=-\n")
    with pytest.raises(
        SpecFormatError,
        match=r"--config -: the command reads it from its "
        r"standard input, and the command at line 2 is fed none",
    ):
        load_spec_file(path, env={})
    path = write(tmp_path, f"#!/bin/bash\n{CREATE} --config=<(cat job.yaml)\n")
    assert machine_of(path) == "n1-standard-16"
    path = write(tmp_path, f"#!/bin/bash\n{CREATE} --config=<(yq . job.json)\n")
    with pytest.raises(SpecFormatError, match="would have to run"):
        load_spec_file(path, env={})


# --- REST calls ---------------------------------------------------------------------------

URL = "https://us-east1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-east1"
AUTH = '-H "Authorization: Bearer $(gcloud auth print-access-token)" -H "Content-Type: application/json"'
JOB = (
    '{"displayName": "rest", "jobSpec": {"workerPoolSpecs": [{"machineSpec": {"machineType": '
    '"$MACHINE"}, "replicaCount": 1, "containerSpec": {"imageUri": "gcr.io/p/t"}}]}}'
)
TUNING = (
    '{"displayName": "hp", "maxTrialCount": 4, "parallelTrialCount": 2, "studySpec": '
    '{"metrics": [{"metricId": "acc", "goal": "MAXIMIZE"}], "parameters": [{"parameterId": '
    '"lr", "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1}}]}, "trialJobSpec": '
    '{"workerPoolSpecs": [{"machineSpec": {"machineType": "$MACHINE"}, "replicaCount": 1, '
    '"containerSpec": {"imageUri": "gcr.io/p/t"}}]}}'
)


@pytest.mark.parametrize(
    "call",
    [
        f'cat > request.json <<EOF\n{JOB}\nEOF\ncurl -X POST {AUTH} -d @request.json "{URL}/customJobs"\n',
        f"curl -sS -XPOST {AUTH} \\\n  --data-binary @- {URL}/customJobs <<EOF\n{JOB}\nEOF\n",
        f'curl {AUTH} "{URL}/customJobs" -d "{JOB.replace(chr(34), chr(92) + chr(34))}"\n',
        f'curl --request POST {AUTH} --url {URL}/customJobs --json @- <<< "$BODY"\n',
        f'curl -X POST {AUTH} {URL}/customJobs --data-raw "$BODY"\n',
    ],
)
def test_a_rest_call_creating_a_custom_job_is_read(tmp_path: Path, call: str) -> None:
    body = JOB.replace("$MACHINE", "n1-standard-8")
    path = write(tmp_path, f"#!/bin/bash\nMACHINE=n1-standard-8\nBODY='{body}'\n{call}")
    loaded = load_spec_file(path, env={})
    assert loaded.spec.region == "us-east1" and loaded.spec.project == "my-project"
    assert machine_of(path) == "n1-standard-8"
    assert any("from the URL" in note for note in loaded.notes)
    assert not any("print-access-token" in note for note in loaded.notes)


def test_a_rest_call_reads_its_body_file_and_tuning_jobs(tmp_path: Path) -> None:
    (tmp_path / "job.json").write_text(JOB.replace("$MACHINE", "n1-standard-16"))
    path = write(tmp_path, f"curl -X POST {AUTH} --data @job.json {URL}/customJobs\n")
    assert machine_of(path) == "n1-standard-16"
    path = write(
        tmp_path,
        f"#!/bin/bash\nMACHINE=n1-standard-4\ncurl -X POST {AUTH} "
        f"{URL}/hyperparameterTuningJobs -d @- <<EOF\n{TUNING}\nEOF\n",
    )
    tuning = load_spec_file(path, env={}, tuning=True).tuning
    assert tuning is not None and tuning.max_trial_count == 4
    with pytest.raises(SpecFormatError, match="hyperparameter tuning job"):
        load_spec_file(path, env={})


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (f"curl {AUTH} {URL}/customJobs\n", "`curl \\(not a POST creating a job\\)` \\(line 2\\)"),
        (f"curl -X POST {AUTH} {URL}/customJobs\n", "sends no body"),
        (
            f"curl -X POST {URL.replace('locations/us-east1', 'locations/europe-west4')}/customJobs -d @r.json\n",
            "host is us-east1-aiplatform.googleapis.com but its location is europe-west4",
        ),
        (
            f"curl -X POST {URL.replace('locations/us-east1', 'locations/$R')}/customJobs -d @r\n",
            r"environment variable \$R is not set",
        ),
        (f"curl -X POST {URL}/customJobs -d '[1, 2]'\n", "must be a JSON object"),
        (f"curl -X POST {URL}/customJobs -d '{{\"jobSpec\": {{' \n", "the body of the POST"),
        (f"curl -X POST {URL}/customJobs -d a=1 -d b=2\n", "sends 2 bodies"),
    ],
)
def test_a_rest_call_that_cannot_be_read_says_why(tmp_path: Path, call: str, message: str) -> None:
    path = write(tmp_path, f"#!/bin/bash\n{call}")
    with pytest.raises(SpecFormatError, match=message):
        load_spec_file(path, env={})


# --- loops --------------------------------------------------------------------------------

LOOP_CREATE = (
    "gcloud ai custom-jobs create --region=us-central1 --display-name=lr-$LR "
    "--worker-pool-spec=machine-type=n1-standard-4,replica-count=1,"
    "container-image-uri=gcr.io/p/t --args=--lr=$LR"
)


@pytest.mark.parametrize(
    ("loop", "message"),
    [
        (
            "for LR in 0.01 0.1; do\n  {create}\ndone\n",
            r"line 3: the `for LR in \.\.\.` loop at line 2 submits 2 jobs, one per value of "
            r"\$LR \(0\.01, 0\.1\)",
        ),
        (
            'RATES="0.1 0.2 0.3"\nfor LR in $RATES; do {create}; done\n',
            r"submits 3 jobs, one per value of \$LR \(0\.1, 0\.2, 0\.3\)",
        ),
        (
            "for B in 32 64; do\n  for LR in 0.1; do\n    {create}\n  done\ndone\n",
            r"the `for B in \.\.\.` loop at line 2 submits 2 jobs",
        ),
        (
            "for LR in $(seq 1 3); do\n  {create}\ndone\n",
            r"\$LR is the variable of the `for` loop at line 2, which submits one job per "
            r"value: its values are not known here \(`\$\(seq 1 3\)`",
        ),
        ('for LR in "$@"; do\n  {create}\ndone\n', r"the script argument \$@"),
        ("for LR in configs/*.yaml; do\n  {create}\ndone\n", r"a glob"),
        (
            "while read -r LR; do\n  {create}\ndone < rates.txt\n",
            r"\$LR is read from its standard input \(`read`, line 2\)",
        ),
    ],
)
def test_a_loop_that_submits_jobs_says_how_many_or_which_value_is_unknown(
    tmp_path: Path, loop: str, message: str
) -> None:
    path = write(tmp_path, "#!/bin/bash\n" + loop.replace("{create}", LOOP_CREATE))
    if "submits" in loop or " jobs" in message:
        with pytest.raises(SpecFormatError, match=message):
            load_spec_file(path, env={})
        return
    # Its value is kept as written in the name and arguments, with a note saying why.
    notes = load_spec_file(path, env={}).notes
    assert any(re.search(message, note) for note in notes), notes
    machine = LOOP_CREATE.replace("n1-standard-4", "$LR")
    path = write(tmp_path, "#!/bin/bash\n" + loop.replace("{create}", machine))
    with pytest.raises(SpecFormatError, match=message):
        load_spec_file(path, env={})


def test_a_loop_over_one_value_reads_its_job(tmp_path: Path) -> None:
    path = write(tmp_path, f"#!/bin/bash\nfor LR in 0.05; do\n  {LOOP_CREATE}\ndone\n")
    spec = load_spec_file(path, env={}).spec
    assert spec.display_name == "lr-0.05"
    container = spec.worker_pool_specs[0].container_spec
    assert container is not None and container.args == ["--lr=0.05"]


# --- while read ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("loop", "files", "message"),
    [
        (
            "while read LR; do\n  {create}\ndone < lrs.txt\n",
            {"lrs.txt": "0.01\n0.1\n1.0\n"},
            r"line 3: the `while read LR` loop at line 2 submits 3 jobs, one per line of "
            r"lrs\.txt \(0\.01, 0\.1, 1\.0\)",
        ),
        (
            "while read -r LR; do {create}; done <<EOF\n0.2\n0.3\nEOF\n",
            {},
            r"submits 2 jobs, one per line of the here-document at line 2 \(0\.2, 0\.3\)",
        ),
        (
            "printf '%s\\n' 0.01 0.1 | while read LR; do\n  {create}\ndone\n",
            {},
            r"submits 2 jobs, one per line of the output of `printf %s\\n 0\.01 0\.1` at line 2",
        ),
        (
            'echo -e "0.1\\n0.2" | while read LR; do {create}; done\n',
            {},
            r"submits 2 jobs",
        ),
        (
            "while read -r LR; do {create}; done < <(cat lrs.txt)\n",
            {"lrs.txt": "1\n2\n"},
            r"submits 2 jobs, one per line of lrs\.txt \(1, 2\)",
        ),
        (
            "while read LR; do {create}; done < /dev/null\n",
            {},
            r"the `while read LR` loop at line 2 never runs its body \(no line to read\), so "
            r"the script submits no job",
        ),
    ],
)
def test_a_while_read_loop_over_literal_lines_says_how_many_jobs(
    tmp_path: Path, loop: str, files: dict[str, str], message: str
) -> None:
    for name, text in files.items():
        write(tmp_path, text, name)
    path = write(tmp_path, "#!/bin/bash\n" + loop.replace("{create}", LOOP_CREATE))
    with pytest.raises(SpecFormatError, match=message):
        load_spec_file(path, env={})


@pytest.mark.parametrize(
    ("loop", "files"),
    [
        ("while read LR; do\n  {create}\ndone < one.txt\n", {"one.txt": "0.05\n"}),
        ("while read -r LR; do {create}; done <<'EOF'\n0.05\nEOF\n", {}),
        ("echo 0.05 | while read LR; do {create}; done\n", {}),
        # The last line has no newline: `read` fails on it, so the body runs once.
        ("while read LR; do {create}; done < two.txt\n", {"two.txt": "0.05\n0.9"}),
        # A file the script writes by a here-document before the loop.
        ("cat > r.txt <<EOF\n0.05\nEOF\nwhile read LR; do {create}; done < r.txt\n", {}),
    ],
)
def test_a_while_read_loop_over_one_line_reads_its_job(
    tmp_path: Path, loop: str, files: dict[str, str]
) -> None:
    for name, text in files.items():
        write(tmp_path, text, name)
    path = write(tmp_path, "#!/bin/bash\n" + loop.replace("{create}", LOOP_CREATE))
    loaded = load_spec_file(path, env={})
    assert loaded.spec.display_name == "lr-0.05"
    container = loaded.spec.worker_pool_specs[0].container_spec
    assert container is not None and container.args == ["--lr=0.05"]
    assert any("the `while read` loop reads one line of" in note for note in loaded.notes)


def test_a_while_read_loop_splits_each_line_on_ifs(tmp_path: Path) -> None:
    create = LOOP_CREATE.replace("n1-standard-4", "$MACHINE")
    text = (
        "#!/bin/bash\nwhile IFS=, read -r LR MACHINE; do\n"
        f"  {create}\ndone <<'EOF'\n0.05,n1-standard-8\nEOF\n"
    )
    spec = load_spec_file(write(tmp_path, text), env={}).spec
    machine = spec.worker_pool_specs[0].machine_spec
    assert machine is not None and machine.machine_type == "n1-standard-8"
    assert spec.display_name == "lr-0.05"


@pytest.mark.parametrize(
    ("loop", "source"),
    [
        (
            "gcloud storage ls gs://b/rates | while read LR; do\n  {create}\ndone\n",
            r"the output of `gcloud storage ls gs://b/rates` at line 2, which would have to run",
        ),
        (
            "while read LR; do {create}; done < <(jq -r '.lr[]' rates.json)\n",
            r"would have to run",
        ),
        (
            "while read LR; do {create}; done\n",
            r"\(the terminal, or what is piped into the script\)",
        ),
        ("while read LR; do {create}; done < missing.txt\n", r"missing\.txt, which cannot be read"),
    ],
)
def test_a_while_read_loop_over_input_not_known_names_it(
    tmp_path: Path, loop: str, source: str
) -> None:
    machine = LOOP_CREATE.replace("n1-standard-4", "$LR")
    path = write(tmp_path, "#!/bin/bash\n" + loop.replace("{create}", machine))
    with pytest.raises(SpecFormatError) as caught:
        load_spec_file(path, env={})
    message = str(caught.value)
    assert re.search(source, message), message
    assert "the `while read` loop submits one job per line it reads" in message
    assert "set LR in the environment" in message


def test_read_from_a_file_beside_the_script_reads_its_first_line(tmp_path: Path) -> None:
    write(tmp_path, "n1-standard-16\nignored\n", "machine.txt")
    path = write(
        tmp_path,
        "#!/bin/bash\nIFS= read -r MACHINE < machine.txt\n"
        f"gcloud ai custom-jobs create --region=us-central1 --display-name=d {POOL}\n",
    )
    machine = load_spec_file(path, env={}).spec.worker_pool_specs[0].machine_spec
    assert machine is not None and machine.machine_type == "n1-standard-16"
