"""Issue 44's input forms of scripts: ``read`` prompts, Makefile conditionals, REST calls
(``curl ... /customJobs``), configs from stdin or a process substitution, loops."""

from __future__ import annotations

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
