"""Candidate regions in the stack configuration (``training:jobs[].regions``, ``capacity``):
what the program registers (the ``placement`` input, the first candidate as ``region``), what
it refuses naming the key, and that a job of one region registers as before."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.program.harness import JOB_TYPE, run_stack

SPEC = "stacks/jobs/dev-t4-spot.yaml"


def test_regions_become_the_placement_input_and_the_first_is_the_region():
    regions = ["europe-west4", {"region": "us-east4", "capacity": ["on-demand"]}]
    jobs = [{"name": "t4-spot", "spec": SPEC, "regions": regions, "capacity": ["spot"]}]
    run = run_stack("dev", {"training:jobs": jobs})
    [job] = run.by_type(JOB_TYPE)
    assert job.inputs["region"] == "europe-west4"
    assert job.inputs["placement"] == [
        {"region": "europe-west4", "capacity": ["spot"]},
        {"region": "us-east4", "capacity": ["on-demand"]},
    ]


def test_a_job_of_one_region_registers_no_placement():
    run = run_stack("dev", {"training:jobs": [{"name": "t4-spot", "spec": SPEC}]})
    [job] = run.by_type(JOB_TYPE)
    assert "placement" not in job.inputs


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"regions": "us-east4"}, "training:jobs[0].regions: expected a list of regions"),
        ({"regions": ["us-east4", "us-east4"]}, "training:jobs[0].regions[1].region: us-east4 is"),
        (
            {"regions": ["us-east4"], "capacity": ["cheap"]},
            "training:jobs[0].capacity[0]: 'cheap' is not one of",
        ),
        ({"capacity": ["spot"]}, "training:jobs[0].capacity: needs regions"),
        (
            {"regions": ["us-south1"]},
            "placement: no candidate can run this job: us-south1",
        ),
    ],
)
def test_a_bad_candidate_list_is_refused_naming_the_key(entry: dict[str, Any], message: str):
    jobs = [{"name": "t4-spot", "spec": SPEC, **entry}]
    with pytest.raises(Exception, match=re.escape(message)):
        run_stack("dev", {"training:jobs": jobs})
