"""Hypothesis strategies: random job specs (valid-looking or not) and raw documents."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import strategies as st

from components import load_catalog

_catalog = load_catalog()
MACHINES = [*sorted(_catalog.machine_types), "n1-standard-7", "", "a2-highgpu-3g"]
ACCELERATORS = [*sorted(_catalog.accelerators), "nvidia-tesla-t4", "NVIDIA_TESLA_T5"]
# The accelerator types the v1 API has a value for (TPU v6e and v5p are named by machine type).
API_ACCELERATORS = sorted(name for name, a in _catalog.accelerators.items() if a.api_enum)
REGIONS = [*sorted(_catalog.regions), "us-central2", "mars-north1"]
# Any text a spec accepts: the model refuses NUL bytes (tested on their own in test_validation).
text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12)
names = st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True)

env = st.lists(st.fixed_dictionaries({"name": st.one_of(names, text), "value": text}), max_size=3)
machine_spec = st.fixed_dictionaries(
    {"machineType": st.sampled_from(MACHINES)},
    optional={
        "acceleratorType": st.sampled_from(ACCELERATORS),
        "acceleratorCount": st.sampled_from([0, 1, 2, 3, 4, 8, 16, -1]),
        "tpuTopology": st.sampled_from(["2x2", "4x4"]),
    },
)
package = st.fixed_dictionaries(
    {},
    optional={
        "executorImageUri": st.sampled_from(
            ["us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest", ""]
        ),
        "packageUris": st.lists(
            st.sampled_from(["gs://bkt/t.tgz", "./local", "http://x/y", "gs://"]), max_size=2
        ),
        "pythonModule": st.sampled_from(["trainer.task", "bad module", ""]),
        "args": st.lists(text, max_size=3),
        "env": env,
    },
)
container = st.fixed_dictionaries(
    {}, optional={"imageUri": text, "command": st.lists(text, max_size=2), "env": env}
)
worker_pool: st.SearchStrategy[dict[str, Any]] = st.one_of(
    st.just({}),
    st.fixed_dictionaries(
        {},
        optional={
            "machineSpec": machine_spec,
            "replicaCount": st.integers(min_value=-1, max_value=20),
            "diskSpec": st.fixed_dictionaries(
                {},
                optional={
                    "bootDiskType": st.sampled_from(["pd-ssd", "pd-sdd"]),
                    "bootDiskSizeGb": st.integers(0, 70000),
                },
            ),
            "pythonPackageSpec": package,
            "containerSpec": container,
        },
    ),
)
scheduling = st.fixed_dictionaries(
    {},
    optional={
        "timeout": st.sampled_from(["3600s", "2h", "0s", "1d"]),
        "strategy": st.sampled_from(["STANDARD", "SPOT", "FLEX_START", "SPOTT"]),
        "maxWaitDuration": st.sampled_from(["600s", "1h"]),
        "restartJobOnWorkerRestart": st.booleans(),
        "disableRetries": st.booleans(),
    },
)
job_document = st.fixed_dictionaries(
    {"workerPoolSpecs": st.lists(worker_pool, max_size=5)},
    optional={
        "displayName": text,
        "labels": st.dictionaries(st.one_of(names, text), st.one_of(names, text), max_size=4),
        "region": st.sampled_from(REGIONS),
        "scheduling": scheduling,
        "serviceAccount": st.sampled_from(["sa@p.iam.gserviceaccount.com", "nope"]),
        "network": st.sampled_from(["projects/1/global/networks/n", "default"]),
        "baseOutputDirectory": st.sampled_from(["gs://bkt/o", "/tmp/x"]),
        "enableWebAccess": st.booleans(),
    },
)

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), text)
anything: st.SearchStrategy[Any] = st.recursive(
    json_leaf,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(text, children, max_size=4),
    max_leaves=20,
)


@st.composite
def convertible_spec(draw: st.DrawFn) -> dict[str, Any]:
    """A spec every field of which survives conversion to the API types (enums known)."""
    pools: list[dict[str, Any]] = []
    for index in range(draw(st.integers(1, 4))):
        if 0 < index < 3 and draw(st.booleans()):
            pools.append({})
            continue
        machine: dict[str, Any] = {
            "machineType": draw(st.sampled_from(sorted(_catalog.machine_types)))
        }
        if draw(st.booleans()):
            machine["acceleratorType"] = draw(st.sampled_from(API_ACCELERATORS))
            machine["acceleratorCount"] = draw(st.integers(1, 16))
        trainer = draw(st.sampled_from(["pythonPackageSpec", "containerSpec"]))
        body: dict[str, Any] = (
            {
                "executorImageUri": "img",
                "packageUris": draw(st.lists(names, min_size=1, max_size=2)),
                "pythonModule": "trainer.task",
                "args": draw(st.lists(text, max_size=2)),
            }
            if trainer == "pythonPackageSpec"
            else {
                "imageUri": draw(names),
                "command": draw(st.lists(text, max_size=2)),
                "args": draw(st.lists(text, max_size=2)),
            }
        )
        body["env"] = [
            {"name": n, "value": draw(text)} for n in draw(st.lists(names, max_size=2, unique=True))
        ]
        p: dict[str, Any] = {
            "machineSpec": machine,
            "replicaCount": 1 if index == 0 else draw(st.integers(1, 9)),
            trainer: body,
        }
        if draw(st.booleans()):
            p["diskSpec"] = {
                "bootDiskType": "pd-standard",
                "bootDiskSizeGb": draw(st.integers(100, 2000)),
            }
        pools.append(p)
    if not pools[-1]:
        pools.pop()
    document: dict[str, Any] = {
        "displayName": draw(names),
        "workerPoolSpecs": pools,
        "labels": draw(st.dictionaries(names, names, max_size=3)),
    }
    if draw(st.booleans()):
        document["scheduling"] = {
            "timeout": timedelta(seconds=draw(st.integers(1, 10**6))),
            "strategy": draw(st.sampled_from(["STANDARD", "SPOT", "FLEX_START"])),
            "restartJobOnWorkerRestart": draw(st.booleans()),
            "disableRetries": draw(st.booleans()),
        }
    for key, value in (
        ("serviceAccount", "sa@p.iam.gserviceaccount.com"),
        ("baseOutputDirectory", "gs://bkt/o"),
        ("network", "projects/1/global/networks/n"),
        ("tensorboard", "projects/p/locations/us-central1/tensorboards/1"),
    ):
        if draw(st.booleans()):
            document[key] = value
    if draw(st.booleans()):
        document["encryptionSpec"] = {
            "kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"
        }
    document["enableWebAccess"] = draw(st.booleans())
    return document
