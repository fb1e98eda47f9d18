"""pulumi-gcp ``AiCustomJob`` resources in Pulumi Python and TypeScript programs, read as the
CustomJob each creates (issue 44, item 9), never run: Python with ``ast``, TypeScript with a
bounded reader of object literals. A computed value is named in one line."""

from __future__ import annotations

import io
import random
import time
from pathlib import Path

import pytest
import yaml

from components import load_spec_file, validate
from components._errors import SpecError, SpecFormatError
from components.cli._cli import main
from components.formats.load import load_jobs
from components.formats.pulumi_programs import MAX_TOKENS
from components.formats.python_sdk import MAX_VALUES

IMAGE = "us-docker.pkg.dev/my-project/trainers/bert:7"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


PYTHON_ARGS = f'''"""A Pulumi program: input classes."""
import pulumi
import pulumi_gcp as gcp

config = pulumi.Config()
IMAGE = "{IMAGE}"
MACHINE = "n1-standard-8"
bucket = gcp.storage.Bucket("runs", location="US")

job = gcp.vertex.AiCustomJob(
    "bert",
    display_name="bert-" + "finetune",
    location="us-central1",
    project="my-project",
    labels={{"team": "nlp", "cost_center": "ml_research", "stack": pulumi.get_stack()}},
    job_spec=gcp.vertex.AiCustomJobJobSpecArgs(
        worker_pool_specs=[
            gcp.vertex.AiCustomJobJobSpecWorkerPoolSpecArgs(
                machine_spec=gcp.vertex.AiCustomJobJobSpecWorkerPoolSpecMachineSpecArgs(
                    machine_type=MACHINE,
                    accelerator_type="NVIDIA_TESLA_T4",
                    accelerator_count=1,
                ),
                replica_count=1,
                disk_spec=gcp.vertex.AiCustomJobJobSpecWorkerPoolSpecDiskSpecArgs(
                    boot_disk_type="pd-ssd", boot_disk_size_gb=200
                ),
                container_spec=gcp.vertex.AiCustomJobJobSpecWorkerPoolSpecContainerSpecArgs(
                    image_uri=IMAGE,
                    args=["--epochs", "3", config.require("lr")],
                    env=[gcp.vertex.AiCustomJobJobSpecWorkerPoolSpecContainerSpecEnvArgs(
                        name="MODE", value="train")],
                ),
            ),
            gcp.vertex.AiCustomJobJobSpecWorkerPoolSpecArgs(
                machine_spec=gcp.vertex.AiCustomJobJobSpecWorkerPoolSpecMachineSpecArgs(
                    machine_type=MACHINE, accelerator_type="NVIDIA_TESLA_T4", accelerator_count=1
                ),
                replica_count=2,
                container_spec=gcp.vertex.AiCustomJobJobSpecWorkerPoolSpecContainerSpecArgs(
                    image_uri=IMAGE
                ),
            ),
        ],
        scheduling=gcp.vertex.AiCustomJobJobSpecSchedulingArgs(timeout="7200s"),
        base_output_directory=gcp.vertex.AiCustomJobJobSpecBaseOutputDirectoryArgs(
            output_uri_prefix=bucket.url.apply(lambda url: f"{{url}}/out"),
        ),
        service_account="trainer@my-project.iam.gserviceaccount.com",
    ),
    opts=pulumi.ResourceOptions(depends_on=[bucket]),
)
pulumi.export("job", job.name)
'''

PYTHON_DICTS = f'''import pulumi
from pulumi_gcp import vertex

job = vertex.AiCustomJob("bert", display_name="bert-finetune", location="us-central1",
    project="my-project", labels={{"team": "nlp", "cost_center": "ml_research"}},
    job_spec={{
        "worker_pool_specs": [
            {{
                "machine_spec": {{"machine_type": "n1-standard-8",
                                 "accelerator_type": "NVIDIA_TESLA_T4", "accelerator_count": 1}},
                "replica_count": 1,
                "disk_spec": {{"boot_disk_type": "pd-ssd", "boot_disk_size_gb": 200}},
                "container_spec": {{"image_uri": "{IMAGE}", "args": ["--epochs", "3", "x"],
                                   "env": [{{"name": "MODE", "value": "train"}}]}},
            }},
            {{
                "machine_spec": {{"machine_type": "n1-standard-8",
                                 "accelerator_type": "NVIDIA_TESLA_T4", "accelerator_count": 1}},
                "replica_count": 2,
                "container_spec": {{"image_uri": "{IMAGE}"}},
            }},
        ],
        "scheduling": {{"timeout": "7200s"}},
        "service_account": "trainer@my-project.iam.gserviceaccount.com",
    }})
'''

TYPESCRIPT = f"""import * as pulumi from "@pulumi/pulumi";
import * as gcp from "@pulumi/gcp";

const config = new pulumi.Config();
const image = '{IMAGE}';
const machineSpec = {{
    machineType: "n1-standard-8",
    acceleratorType: "NVIDIA_TESLA_T4",
    acceleratorCount: 1,
}};
const bucket = new gcp.storage.Bucket("runs", {{ location: "US" }});

/* The training job: two pools. */
const job = new gcp.vertex.AiCustomJob("bert", {{
    displayName: `bert-finetune`, // a template without ${{}} is a string
    location: "us-central1",
    project: "my-project",
    labels: {{ team: "nlp", "cost_center": 'ml_research', }},
    jobSpec: {{
        workerPoolSpecs: [
            {{
                machineSpec,
                replicaCount: 1,
                diskSpec: {{ bootDiskType: "pd-ssd", bootDiskSizeGb: 2_00 }},
                containerSpec: {{
                    imageUri: image,
                    args: ["--epochs", "3", config.require("lr")],
                    env: [{{ name: "MODE", value: "train" }}],
                }},
            }},
            {{ machineSpec: machineSpec, replicaCount: 2, containerSpec: {{ imageUri: image }} }},
        ],
        scheduling: {{ timeout: "7200s" }},
        baseOutputDirectory: {{ outputUriPrefix: pulumi.interpolate`${{bucket.url}}/out` }},
        serviceAccount: "trainer@my-project.iam.gserviceaccount.com",
    }},
}}, {{ dependsOn: [bucket] }});

export const jobName = job.name;
"""


def _job_of(path: Path) -> dict[str, object]:
    loaded = load_spec_file(path, env={})
    assert loaded.format == "pulumi-program"
    return loaded.spec.model_dump(mode="json", exclude_none=True)


def test_a_python_program_of_input_classes_is_read_as_the_job_it_creates(
    tmp_path: Path,
) -> None:
    loaded = load_spec_file(write(tmp_path, "__main__.py", PYTHON_ARGS), env={})
    spec = loaded.spec
    assert spec.display_name == "bert-finetune" and spec.region == "us-central1"
    assert spec.labels == {"team": "nlp", "cost_center": "ml_research"}  # keys are data
    chief, workers = spec.worker_pool_specs
    assert chief.machine_spec is not None and chief.machine_spec.machine_type == "n1-standard-8"
    assert chief.machine_spec.accelerator_count == 1
    assert chief.disk_spec is not None and chief.disk_spec.boot_disk_size_gb == 200
    assert chief.container_spec is not None and chief.container_spec.image_uri == IMAGE
    assert chief.container_spec.args == ["--epochs", "3", "config.require('lr')"]
    assert [(e.name, e.value) for e in chief.container_spec.env] == [("MODE", "train")]
    assert workers.replicas == 2
    assert spec.scheduling is not None and spec.scheduling.timeout is not None
    assert spec.service_account == "trainer@my-project.iam.gserviceaccount.com"
    notes = "\n".join(loaded.notes)
    assert "line 10: AiCustomJob bert" in notes
    assert "the Pulumi config value 'lr'" in notes and "kept as written" in notes
    assert "base_output_directory.output_uri_prefix is computed by the program" in notes
    assert "a Pulumi Output" in notes and "left out" in notes
    assert (
        "labels.stack is computed by the program (line 15: a call to pulumi.get_stack())" in notes
    )
    assert validate(spec) == []


def test_the_dict_form_and_the_typescript_program_read_as_the_same_job(tmp_path: Path) -> None:
    classes = _job_of(write(tmp_path, "args.py", PYTHON_ARGS))
    dicts = _job_of(write(tmp_path, "dicts.py", PYTHON_DICTS))
    typescript = _job_of(write(tmp_path, "index.ts", TYPESCRIPT))
    javascript = _job_of(write(tmp_path, "index.js", TYPESCRIPT))
    module = _job_of(write(tmp_path, "index.mts", TYPESCRIPT))
    # Statements ended by line breaks alone, as `semi: false` formatters write them.
    unended = TYPESCRIPT.replace(";\n", "\n").replace("}, { dependsOn: [bucket] })", "})")
    assert ";" not in unended
    no_semicolons = _job_of(write(tmp_path, "unended.ts", unended))
    assert typescript == javascript == module == no_semicolons
    # The computed parts differ only where each program computes: the third argument, and
    # the output directory the Python and TypeScript programs take from the bucket.
    for job in (classes, dicts, typescript):
        job["workerPoolSpecs"][0]["containerSpec"]["args"][2] = "x"  # type: ignore[index]
    assert classes == dicts == typescript
    assert "baseOutputDirectory" not in str(typescript)


@pytest.mark.parametrize(
    ("imports", "construct"),
    [
        ("from pulumi_gcp.vertex import AiCustomJob, AiCustomJobArgs", "AiCustomJob"),
        (
            "import pulumi_gcp.vertex as v\nfrom pulumi_gcp.vertex import AiCustomJobArgs",
            "v.AiCustomJob",
        ),
    ],
)
def test_one_args_object_and_other_import_forms(
    tmp_path: Path, imports: str, construct: str
) -> None:
    text = f"""{imports}
{construct}("j", args=AiCustomJobArgs(display_name="j", location="europe-west4",
    job_spec={{"worker_pool_specs": [{{"machine_spec": {{"machine_type": "g2-standard-8",
        "accelerator_type": "NVIDIA_L4", "accelerator_count": 1}}, "replica_count": 1,
        "container_spec": {{"image_uri": "{IMAGE}"}}}}]}}))
"""
    spec = load_spec_file(write(tmp_path, "main.py", text), env={}).spec
    assert spec.region == "europe-west4"
    pool = spec.worker_pool_specs[0]
    assert pool.machine_spec is not None and pool.machine_spec.accelerator_type == "NVIDIA_L4"


_TS_ARGS = f"""{{
    displayName: "j",
    location: "europe-west4",
    jobSpec: {{ workerPoolSpecs: [{{ replicaCount: 1,
        machineSpec: {{ machineType: "g2-standard-8", acceleratorType: "NVIDIA_L4",
                       acceleratorCount: 0x1 }},
        containerSpec: {{ imageUri: "{IMAGE}", args: ["--note=it\\'s \\u0041"] }} }}] }},
}}"""


@pytest.mark.parametrize(
    "program",
    [
        'import { vertex } from "@pulumi/gcp";\nnew vertex.AiCustomJob("j", ARGS);\n',
        'import { vertex as v } from "@pulumi/gcp";\nnew v.AiCustomJob("j", ARGS as const);\n',
        'import { AiCustomJob } from "@pulumi/gcp/vertex";\nnew AiCustomJob(`j`, ARGS);\n',
        'const gcp = require("@pulumi/gcp");\nconst job = new gcp.vertex.AiCustomJob("j", ARGS)\n',
        'import gcp = require("@pulumi/gcp");\n'
        "const args: gcp.vertex.AiCustomJobArgs = ARGS;\n"
        'new gcp.vertex.AiCustomJob("j", args, { protect: true });\n',
    ],
)
def test_typescript_import_forms_and_a_declared_args_object(tmp_path: Path, program: str) -> None:
    loaded = load_spec_file(write(tmp_path, "index.ts", program.replace("ARGS", _TS_ARGS)), env={})
    assert loaded.spec.region == "europe-west4"
    pool = loaded.spec.worker_pool_specs[0]
    assert pool.machine_spec is not None and pool.machine_spec.accelerator_count == 1
    assert pool.container_spec is not None and pool.container_spec.args == ["--note=it's A"]


@pytest.mark.parametrize(
    ("name", "old", "new", "expected"),
    [
        (
            "__main__.py",
            "accelerator_count=1,\n                ),\n                replica_count=1",
            'accelerator_count=config.require_int("gpus"),\n                ),\n'
            "                replica_count=1",
            "line 22: job_spec.worker_pool_specs[0].machine_spec.accelerator_count is computed "
            "by the program (the Pulumi config value 'gpus', set with `pulumi config set`",
        ),
        (
            "__main__.py",
            "MACHINE = ",
            "for MACHINE in []: pass\nOTHER = ",
            "machine_spec.machine_type is computed by the program (MACHINE, set by the code as "
            "it runs",
        ),
        (
            "__main__.py",
            "image_uri=IMAGE\n",
            "image_uri=bucket.name\n",
            "worker_pool_specs[1].container_spec.image_uri is computed by the program (an output "
            "of the resource bucket (gcp.storage.Bucket), known only once Pulumi creates it)",
        ),
        (
            "index.ts",
            'acceleratorType: "NVIDIA_TESLA_T4"',
            "acceleratorType: `NVIDIA_${gpu}`",
            "line 8: jobSpec.workerPoolSpecs[0].machineSpec.acceleratorType is computed by the "
            "program (a template string with ${...}",
        ),
        (
            "index.ts",
            "replicaCount: 2",
            'replicaCount: config.requireNumber("workers")',
            "line 31: jobSpec.workerPoolSpecs[1].replicaCount is computed by the program (the "
            "Pulumi config value 'workers'",
        ),
        (
            "index.ts",
            "const image = ",
            "let image = ",
            "containerSpec.imageUri is computed by the program (image, a variable this reader "
            "does not evaluate)",
        ),
        (
            "index.ts",
            'machineType: "n1-standard-8"',
            "machineType: process.env.MACHINE",
            "line 7: jobSpec.workerPoolSpecs[0].machineSpec.machineType is computed by the program "
            "(the environment variable MACHINE, read as the program runs)",
        ),
        (
            "index.ts",
            "bootDiskSizeGb: 2_00",
            "bootDiskSizeGb: Math.max(100, 200)",
            "diskSpec.bootDiskSizeGb is computed by the program (a call to Math.max())",
        ),
    ],
)
def test_a_computed_value_is_named_in_one_line(
    tmp_path: Path, name: str, old: str, new: str, expected: str
) -> None:
    base = PYTHON_ARGS if name.endswith(".py") else TYPESCRIPT
    assert old in base
    path = write(tmp_path, name, base.replace(old, new, 1))
    with pytest.raises(SpecFormatError) as info:
        load_spec_file(path, env={})
    message = str(info.value)
    assert expected in message and "\n" not in message
    assert message.startswith(f"{path}: line ") and message.endswith("give it as a literal")
    code, _out, err = run("validate", str(path))
    assert code == 2 and expected in err and "Traceback" not in err


@pytest.mark.parametrize(("name", "text"), [("__main__.py", PYTHON_ARGS), ("index.ts", TYPESCRIPT)])
def test_a_bad_gpu_count_is_reported_with_its_path(tmp_path: Path, name: str, text: str) -> None:
    bad = text.replace("accelerator_count=1", "accelerator_count=3", 1)
    bad = bad.replace("acceleratorCount: 1", "acceleratorCount: 3", 1)
    code, out, err = run("validate", str(write(tmp_path, name, bad)))
    assert code == 1
    assert (
        "workerPoolSpecs[0].machineSpec.acceleratorCount: 3 x NVIDIA_TESLA_T4 is not allowed "
        "on n1-standard-8" in out
    )
    assert ": line 10: AiCustomJob bert ==" in err or ": line 14: AiCustomJob bert ==" in err


def test_each_resource_of_a_program_is_a_job_of_its_own(tmp_path: Path) -> None:
    bad_pool = (
        '                machineSpec: { machineType: "n1-standard-8", '
        'acceleratorType: "NVIDIA_TESLA_T4", acceleratorCount: 3 },\n'
    )
    second = TYPESCRIPT.replace('AiCustomJob("bert"', 'AiCustomJob("bert-big"', 1)
    second = second.replace("                machineSpec,\n", bad_pool, 1)
    body = second.split("/* The training job: two pools. */", 1)[1]
    program = TYPESCRIPT + body.replace("const job =", "const big =").replace("export", "//")
    path = write(tmp_path, "index.ts", program)
    jobs = load_jobs(path, env={})
    assert [job.name for job in jobs] == [
        "line 14: AiCustomJob bert",
        "line 41: AiCustomJob bert-big",
    ]
    assert all(job.loaded is not None for job in jobs)
    with pytest.raises(SpecFormatError, match="holds 2 jobs"):
        load_spec_file(path, env={})
    code, out, err = run("validate", str(path))
    assert code == 1 and err.count("== ") == 2
    assert out.count("acceleratorCount: 3 x NVIDIA_TESLA_T4") == 1
    code, out, _err = run(
        "convert", str(write(tmp_path, "two.py", PYTHON_DICTS + PYTHON_DICTS.split("\n", 2)[2]))
    )
    assert code == 0
    documents = [d for d in yaml.safe_load_all(out) if d]
    assert len(documents) == 2 and all("workerPoolSpecs" in d for d in documents)


def test_the_python_program_is_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = f"open({str(marker)!r}, 'w').close()\n" + PYTHON_DICTS
    assert load_spec_file(write(tmp_path, "main.py", text), env={}).spec.display_name
    assert not marker.exists()


def test_a_program_without_ai_custom_job_is_read_as_before(tmp_path: Path) -> None:
    sdk = f"""from google.cloud import aiplatform
import pulumi_gcp as gcp
bucket = gcp.storage.Bucket("runs")
aiplatform.CustomJob(display_name="sdk", worker_pool_specs=[{{"machine_spec":
    {{"machine_type": "n1-standard-4"}}, "replica_count": 1,
    "container_spec": {{"image_uri": "{IMAGE}"}}}}])
"""
    loaded = load_spec_file(write(tmp_path, "sdk.py", sdk), env={})
    assert loaded.format == "python-sdk" and loaded.spec.display_name == "sdk"
    bucket_only = 'import pulumi_gcp as gcp\ngcp.storage.Bucket("runs", location="US")\n'
    code, _out, err = run("validate", str(write(tmp_path, "bucket.py", bucket_only)))
    assert code == 2 and "no Vertex AI SDK job found" in err and "gcp.vertex.AiCustomJob" in err
    typescript = 'import * as gcp from "@pulumi/gcp";\nnew gcp.storage.Bucket("b", {});\n'
    code, _out, err = run("validate", str(write(tmp_path, "index.ts", typescript)))
    assert code == 2 and "no pulumi-gcp AiCustomJob found" in err
    assert len(err.strip().splitlines()) == 1


def _typescript_bomb() -> str:
    lines = ['import * as gcp from "@pulumi/gcp";', 'const a0 = "x";']
    lines += [f"const a{i} = [{', '.join([f'a{i - 1}'] * 10)}];" for i in range(1, 8)]
    return (
        "\n".join(lines)
        + '\nnew gcp.vertex.AiCustomJob("j", {displayName: "j", jobSpec: {workerPoolSpecs: a7}});\n'
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'import * as gcp from "@pulumi/gcp";\nconst x = "open\n',
            "line 2: a string that is not closed",
        ),
        (
            'import * as gcp from "@pulumi/gcp";\nnew gcp.vertex.AiCustomJob("j", {jobSpec: '
            + "[" * 40
            + "]" * 40
            + "});\n",
            "nested deeper than 32 levels",
        ),
        (
            'import * as gcp from "@pulumi/gcp";\nnew gcp.vertex.AiCustomJob("j", {jobSpec: {',
            "not closed",
        ),
        ("x;" * (MAX_TOKENS // 2 + 10), f"more than {MAX_TOKENS:,} tokens"),
        (_typescript_bomb(), f"expand to more than {MAX_VALUES:,} items"),
        (
            'import * as gcp from "@pulumi/gcp";\nconst re = /["\'`]/g;\nnew gcp.vertex.AiCustomJob("j", args);\n',
            "AiCustomJob's arguments are not an object literal (args, a variable",
        ),
        ("\x00\xff{[(`", "a string that is not closed"),
    ],
)
def test_hostile_typescript_is_one_clear_line_quickly(
    tmp_path: Path, text: str, expected: str
) -> None:
    started = time.monotonic()
    code, _out, err = run("validate", str(write(tmp_path, "index.ts", text)))
    assert time.monotonic() - started < 10
    assert code == 2 and expected in err
    assert "Traceback" not in err
    assert len([line for line in err.splitlines() if not line.startswith("==")]) == 1


def _mutations(text: str, count: int, seed: int) -> list[str]:
    """``text`` with a character deleted, doubled or replaced by a bracket, quote or operator
    at random places: broken programs of every shape the readers meet."""
    rng = random.Random(seed)
    pieces = [*"{}[](),:;'\"`$/*\\.=+-!?<>\n", "${", "...", "/*", "//", "0x", "1e999"]
    found = []
    for _ in range(count):
        at = rng.randrange(len(text))
        choice = rng.randrange(3)
        if choice == 0:
            found.append(text[:at] + text[at + 1 :])
        elif choice == 1:
            found.append(text[:at] + text[at] * rng.randrange(2, 50) + text[at + 1 :])
        else:
            found.append(text[:at] + rng.choice(pieces) + text[at + 1 :])
    return found


@pytest.mark.parametrize(("name", "text"), [("index.ts", TYPESCRIPT), ("__main__.py", PYTHON_ARGS)])
def test_broken_programs_are_read_or_refused_in_one_line(
    tmp_path: Path, name: str, text: str
) -> None:
    """Every mutation is a job, a job's error or the file's one-line error; never an
    exception of another kind."""
    started = time.monotonic()
    outcomes = {"read": 0, "job error": 0, "refused": 0}
    for index, mutated in enumerate(_mutations(text, 300, seed=len(name))):
        path = write(tmp_path, f"{index}-{name}", mutated)
        try:
            jobs = load_jobs(path, env={})
        except SpecError as exc:
            assert "\n" not in str(exc) and str(path) in str(exc)
            outcomes["refused"] += 1
            continue
        for job in jobs:
            outcomes["read" if job.loaded is not None else "job error"] += 1
    assert time.monotonic() - started < 60
    assert all(outcomes.values()), outcomes  # each way out is taken


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ('vertex.AiCustomJob("j", **settings)', "AiCustomJob(**...) takes its arguments from a"),
        ('vertex.AiCustomJob("j", args=make_args())', "AiCustomJob's args are computed by the"),
        (
            'vertex.AiCustomJob("j", display_name="j")',
            "AiCustomJob j has no job spec: give job_spec=",
        ),
        (
            'vertex.AiCustomJob("j", job_spec=vertex.AiCustomJobJobSpecArgs(*pools))',
            "job_spec is computed by the program (AiCustomJobJobSpecArgs(...) given its fields by "
            "position or from **)",
        ),
    ],
)
def test_python_arguments_that_cannot_be_read_are_named(
    tmp_path: Path, call: str, expected: str
) -> None:
    text = f"from pulumi_gcp import vertex\n{call}\n"
    (job,) = load_jobs(write(tmp_path, "__main__.py", text), env={})
    assert job.name in ("line 2: AiCustomJob", "line 2: AiCustomJob j")
    assert job.error is not None and expected in str(job.error)
    assert str(job.error).startswith(f"{tmp_path / '__main__.py'}: line 2: ")
