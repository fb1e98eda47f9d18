"""Property-based tests: validation never raises; conversion to the API round-trips."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components import (
    JobSpec,
    SpecError,
    Violation,
    spec_from_document,
    validate,
    validate_document,
)
from components.vertex.convert import from_custom_job, to_custom_job
from tests.spec.strategies import anything, convertible_spec, job_document

MANY = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check_violations(violations: list[Violation]) -> None:
    for violation in violations:
        assert violation.path and violation.reason
        assert violation.rule != "internal", str(violation)


@MANY
@given(job_document)
def test_validate_document_never_raises_on_random_specs(document: dict[str, Any]) -> None:
    _check_violations(validate_document(document))


@settings(max_examples=1000, deadline=None)
@given(anything)
def test_validate_document_never_raises_on_random_data(data: Any) -> None:
    _check_violations(validate_document(data))


@settings(max_examples=1000, deadline=None)
@given(st.one_of(job_document, anything).map(lambda d: yaml.safe_dump(d)), st.integers(0, 200))
def test_random_yaml_text_is_a_clean_error_or_a_result(text: str, cut: int) -> None:
    # Truncated YAML is the usual malformed input.
    for candidate in (text, text[:cut]):
        try:
            document = yaml.safe_load(candidate)
            loaded = spec_from_document(document)
        except yaml.YAMLError:
            continue
        except SpecError as exc:
            assert str(exc)
            continue
        _check_violations(validate(loaded.spec))


@settings(max_examples=300, deadline=None)
@given(convertible_spec())
def test_custom_job_round_trip_is_lossless(document: dict[str, Any]) -> None:
    spec = JobSpec.parse(document)
    job = to_custom_job(spec)
    assert from_custom_job(job) == spec
    # ...and the other way: CustomJob → spec → CustomJob.
    assert to_custom_job(from_custom_job(job)) == job


@settings(max_examples=300, deadline=None)
@given(convertible_spec())
def test_document_round_trip(document: dict[str, Any]) -> None:
    spec = JobSpec.parse(document)
    assert JobSpec.parse(spec.to_document()) == spec
