"""Labels of CustomJobs and HyperparameterTuningJobs, as v1 defines them.

Sources: the v1 ``CustomJob.labels`` and ``HyperparameterTuningJob.labels`` docs ("Label keys and
values can be no longer than 64 characters (Unicode codepoints), can only contain lowercase
letters, numeric characters, underscores and dashes. International characters are allowed.")
and the labels requirements they link (https://goo.gl/xmQnxf: at most 64 labels, keys start
with a lowercase letter or an international character, values may be empty).
"""

from __future__ import annotations

import pytest
from google.api_core import exceptions as gexc

from emulator.testing import EmulatorProcess
from tests.emulator.conftest import PARENT, make_job
from tests.emulator.test_tuning import tuning_job

ACCEPTED = [
    {"k" * 64: "v" * 64},  # 64 code points each
    {"équipe": "données", "チーム": "研究", "команда": "ml-2", "टीम": "मॉडल"},
    {"é" * 64: "ü" * 64},  # 64 code points, 128 bytes of UTF-8 each
    {"empty-value": ""},
    {"k_1-a": "0_starts-with-a-digit"},
    {f"label{i}": str(i) for i in range(64)},
]

REFUSED = [
    ({"k" * 65: "v"}, "no longer than 64"),
    ({"key": "v" * 65}, "no longer than 64"),
    ({"Team": "x"}, "must start with a lowercase letter"),
    ({"1st": "x"}, "must start with a lowercase letter"),
    ({"team": "Research"}, "label values"),
    ({"team.name": "x"}, "must start with a lowercase letter"),
    ({"team": "a b"}, "label values"),
    ({f"label{i}": str(i) for i in range(65)}, "At most 64 labels"),
]


@pytest.mark.parametrize("labels", ACCEPTED, ids=range(len(ACCEPTED)))
def test_labels_v1_allows_are_accepted(sim: EmulatorProcess, labels: dict[str, str]) -> None:
    created = sim.client().create_custom_job(
        parent=PARENT, custom_job=make_job("labels", labels=labels)
    )
    assert dict(created.labels) == labels
    got = sim.client().get_custom_job(name=created.name)
    assert dict(got.labels) == labels


@pytest.mark.parametrize(("labels", "says"), REFUSED, ids=range(len(REFUSED)))
def test_labels_v1_forbids_are_refused(
    sim: EmulatorProcess, labels: dict[str, str], says: str
) -> None:
    with pytest.raises(gexc.BadRequest) as info:
        sim.client().create_custom_job(parent=PARENT, custom_job=make_job("labels", labels=labels))
    assert "Field: labels; Message: " in info.value.message
    assert says in info.value.message


def test_tuning_jobs_follow_the_same_label_rules(sim: EmulatorProcess) -> None:
    client = sim.client()
    created = client.create_hyperparameter_tuning_job(
        parent=PARENT, hyperparameter_tuning_job=tuning_job(labels={"チーム": "k" * 64})
    )
    assert dict(created.labels) == {"チーム": "k" * 64}
    with pytest.raises(gexc.BadRequest, match="no longer than 64"):
        client.create_hyperparameter_tuning_job(
            parent=PARENT, hyperparameter_tuning_job=tuning_job(labels={"k": "v" * 65})
        )
