"""Conversion between ``TuningJobSpec`` and ``google.cloud.aiplatform_v1.HyperparameterTuningJob``.

The only module that imports the client library's types for tuning jobs. The trial's
``CustomJobSpec`` goes through ``components.vertex.convert``, as a custom job's does.
"""

from __future__ import annotations

from typing import Any

from google.cloud.aiplatform_v1 import types as aiplatform_v1  # the types, not the clients

from .._errors import SpecInvalidError
from ..lifecycle._wire import parse_tuning_job_name
from ..rules._tuning_spec import (
    ConditionalParameterSpec,
    ParameterSpec,
    StudySpec,
    StudyStoppingConfig,
    StudyTimeConstraint,
    TrialJobSpec,
    TuningJobSpec,
)
from ..rules._tuning_validation import validate_tuning
from ..rules._validation import Target
from ..rules._violations import Violation
from .convert import (
    _camel_keys,
    _enum_name,
    custom_job_spec_document,
    from_custom_job,
    to_custom_job,
)

__all__ = [
    "from_tuning_job",
    "parse_tuning_job_name",
    "to_tuning_job",
    "tuning_job_document",
    "validate_tuning_job",
]

_Study = aiplatform_v1.StudySpec
_Parameter = aiplatform_v1.StudySpec.ParameterSpec
_Conditional = _Parameter.ConditionalParameterSpec


# --- spec → proto -----------------------------------------------------------------------


def _enum(kind: Any, name: str | None) -> Any:
    """The enum member of a name (0, unspecified, for None): an unknown name raises
    ``AttributeError``, so callers validate first."""
    return getattr(kind, name) if name else 0


def _value_spec_to_proto(parameter: ParameterSpec, proto: Any) -> None:
    for attribute, kind in (
        ("double_value_spec", _Parameter.DoubleValueSpec),
        ("integer_value_spec", _Parameter.IntegerValueSpec),
        ("categorical_value_spec", _Parameter.CategoricalValueSpec),
        ("discrete_value_spec", _Parameter.DiscreteValueSpec),
    ):
        spec = getattr(parameter, attribute)
        if spec is not None:
            fields = {k: v for k, v in spec.model_dump(by_alias=False).items() if v is not None}
            setattr(proto, attribute, kind(**fields))


def _parameter_to_proto(parameter: ParameterSpec) -> Any:
    proto = _Parameter(
        parameter_id=parameter.parameter_id or "",
        scale_type=_enum(_Parameter.ScaleType, parameter.scale_type),
        conditional_parameter_specs=[
            _conditional_to_proto(c) for c in parameter.conditional_parameter_specs
        ],
    )
    _value_spec_to_proto(parameter, proto)
    return proto


def _conditional_to_proto(conditional: ConditionalParameterSpec) -> Any:
    proto = _Conditional()
    for attribute, kind in (
        ("parent_discrete_values", _Conditional.DiscreteValueCondition),
        ("parent_int_values", _Conditional.IntValueCondition),
        ("parent_categorical_values", _Conditional.CategoricalValueCondition),
    ):
        condition = getattr(conditional, attribute)
        if condition is not None:
            setattr(proto, attribute, kind(values=condition.values))
    if conditional.parameter_spec is not None:
        proto.parameter_spec = _parameter_to_proto(conditional.parameter_spec)
    return proto


def _time_constraint_to_proto(constraint: StudyTimeConstraint) -> Any:
    proto = aiplatform_v1.StudyTimeConstraint()
    if constraint.max_duration is not None:
        proto.max_duration = constraint.max_duration
    if constraint.end_time is not None:
        proto.end_time = constraint.end_time
    return proto


def _stopping_config_to_proto(config: StudyStoppingConfig) -> Any:
    proto = _Study.StudyStoppingConfig()
    for name in (
        "should_stop_asap",
        "min_num_trials",
        "max_num_trials",
        "max_num_trials_no_progress",
        "max_duration_no_progress",
    ):
        value = getattr(config, name)
        if value is not None:
            setattr(proto, name, value)
    for name in ("minimum_runtime_constraint", "maximum_runtime_constraint"):
        constraint = getattr(config, name)
        if constraint is not None:
            setattr(proto, name, _time_constraint_to_proto(constraint))
    return proto


def _study_to_proto(study: StudySpec) -> Any:
    proto = _Study(
        metrics=[
            _Study.MetricSpec(
                metric_id=m.metric_id or "",
                goal=_enum(_Study.MetricSpec.GoalType, m.goal),
                safety_config=_Study.MetricSpec.SafetyMetricConfig(
                    **m.safety_config.model_dump(by_alias=False, exclude_none=True)
                )
                if m.safety_config is not None
                else None,
            )
            for m in study.metrics
        ],
        parameters=[_parameter_to_proto(p) for p in study.parameters],
        algorithm=_enum(_Study.Algorithm, study.algorithm),
        observation_noise=_enum(_Study.ObservationNoise, study.observation_noise),
        measurement_selection_type=_enum(
            _Study.MeasurementSelectionType, study.measurement_selection_type
        ),
    )
    for attribute, kind in (
        ("decay_curve_stopping_spec", _Study.DecayCurveAutomatedStoppingSpec),
        ("median_automated_stopping_spec", _Study.MedianAutomatedStoppingSpec),
        ("convex_automated_stopping_spec", _Study.ConvexAutomatedStoppingSpec),
    ):
        stopping = getattr(study, attribute)
        if stopping is not None:
            setattr(
                proto, attribute, kind(**stopping.model_dump(by_alias=False, exclude_none=True))
            )
    if study.study_stopping_config is not None:
        proto.study_stopping_config = _stopping_config_to_proto(study.study_stopping_config)
    return proto


def to_tuning_job(spec: TuningJobSpec) -> Any:
    """Build the ``HyperparameterTuningJob`` that Vertex AI receives for this spec.

    Raises ``AttributeError`` for an enum name the API does not know (a goal, scale type,
    accelerator...), so callers validate first.
    """
    job = aiplatform_v1.HyperparameterTuningJob(
        display_name=spec.display_name or "",
        study_spec=_study_to_proto(spec.study_spec),
        max_trial_count=spec.max_trial_count,
        parallel_trial_count=spec.parallel_trial_count,
        max_failed_trial_count=spec.max_failed_trial_count,
        trial_job_spec=to_custom_job(spec.trial_job()).job_spec,
        labels=spec.labels,
    )
    if spec.encryption_spec is not None:
        job.encryption_spec = aiplatform_v1.EncryptionSpec(
            kms_key_name=spec.encryption_spec.kms_key_name
        )
    return job


# --- proto → spec -----------------------------------------------------------------------


def _optional(message: Any, field: str) -> Any:
    """A field with presence (proto3 ``optional``, a message, a wrapper): None when unset."""
    return getattr(message, field) if field in message else None


def _value_specs_from_proto(proto: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for attribute in ("double_value_spec", "integer_value_spec"):
        if attribute in proto:
            spec = getattr(proto, attribute)
            found[attribute] = dict(
                min_value=spec.min_value,
                max_value=spec.max_value,
                default_value=_optional(spec, "default_value"),
            )
    for attribute in ("categorical_value_spec", "discrete_value_spec"):
        if attribute in proto:
            spec = getattr(proto, attribute)
            found[attribute] = dict(
                values=list(spec.values), default_value=_optional(spec, "default_value")
            )
    return found


def _parameter_from_proto(proto: Any) -> dict[str, Any]:
    return dict(
        parameter_id=proto.parameter_id or None,
        scale_type=_enum_name(proto.scale_type),
        conditional_parameter_specs=[
            _conditional_from_proto(c) for c in proto.conditional_parameter_specs
        ],
        **_value_specs_from_proto(proto),
    )


def _conditional_from_proto(proto: Any) -> dict[str, Any]:
    found: dict[str, Any] = {
        attribute: dict(values=list(getattr(proto, attribute).values))
        for attribute in (
            "parent_discrete_values",
            "parent_int_values",
            "parent_categorical_values",
        )
        if attribute in proto
    }
    if "parameter_spec" in proto:
        found["parameter_spec"] = _parameter_from_proto(proto.parameter_spec)
    return found


def _metric_from_proto(proto: Any) -> dict[str, Any]:
    safety = _optional(proto, "safety_config")
    return dict(
        metric_id=proto.metric_id or None,
        goal=_enum_name(proto.goal),
        safety_config=None
        if safety is None
        else dict(
            safety_threshold=safety.safety_threshold,
            desired_min_safe_trials_fraction=_optional(safety, "desired_min_safe_trials_fraction"),
        ),
    )


def _time_constraint_from_proto(proto: Any) -> dict[str, Any] | None:
    if proto is None:
        return None
    return dict(
        max_duration=_optional(proto, "max_duration"), end_time=_optional(proto, "end_time")
    )


def _stopping_config_from_proto(proto: Any) -> dict[str, Any] | None:
    if proto is None:
        return None
    found = {
        name: _optional(proto, name)
        for name in (
            "should_stop_asap",
            "min_num_trials",
            "max_num_trials",
            "max_num_trials_no_progress",
            "max_duration_no_progress",
        )
    }
    for name in ("minimum_runtime_constraint", "maximum_runtime_constraint"):
        found[name] = _time_constraint_from_proto(_optional(proto, name))
    return found


def _stopping_from_proto(proto: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for attribute in ("decay_curve_stopping_spec", "median_automated_stopping_spec"):
        if attribute in proto:
            found[attribute] = dict(
                use_elapsed_duration=getattr(proto, attribute).use_elapsed_duration
            )
    convex = _optional(proto, "convex_automated_stopping_spec")
    if convex is not None:
        found["convex_automated_stopping_spec"] = dict(
            max_step_count=convex.max_step_count,
            min_step_count=convex.min_step_count,
            min_measurement_count=convex.min_measurement_count,
            learning_rate_parameter_name=convex.learning_rate_parameter_name or None,
            use_elapsed_duration=convex.use_elapsed_duration,
            update_all_stopped_trials=_optional(convex, "update_all_stopped_trials"),
        )
    return found


def _study_from_proto(proto: Any) -> dict[str, Any]:
    return dict(
        metrics=[_metric_from_proto(m) for m in proto.metrics],
        parameters=[_parameter_from_proto(p) for p in proto.parameters],
        algorithm=_enum_name(proto.algorithm),
        observation_noise=_enum_name(proto.observation_noise),
        measurement_selection_type=_enum_name(proto.measurement_selection_type),
        study_stopping_config=_stopping_config_from_proto(
            _optional(proto, "study_stopping_config")
        ),
        **_stopping_from_proto(proto),
    )


def _trial_from_proto(job: Any) -> dict[str, Any]:
    """The trial's ``CustomJobSpec`` read as a custom job's is: paths under trialJobSpec."""
    try:
        trial = from_custom_job(aiplatform_v1.CustomJob(job_spec=job.trial_job_spec))
    except SpecInvalidError as exc:
        raise SpecInvalidError(
            [_under("trialJobSpec", violation) for violation in exc.violations]
        ) from None
    return {name: getattr(trial, name) for name in TrialJobSpec.model_fields}


def _under(prefix: str, violation: Violation) -> Violation:
    return Violation(
        f"{prefix}.{violation.path}",
        violation.reason,
        violation.suggestion,
        rule=violation.rule,
        severity=violation.severity,
    )


def from_tuning_job(
    job: Any, *, project: str | None = None, region: str | None = None
) -> TuningJobSpec:
    """Read a ``HyperparameterTuningJob`` back into a spec (output-only fields are not part of
    a spec). Project and region default to the job name's. Raises ``SpecInvalidError`` for a
    job no spec can hold (e.g. a NUL byte in a field)."""
    place = parse_tuning_job_name(job.name or "")
    if place is not None:
        project, region = project or place[0], region or place[1]
    document = dict(
        project=project,
        region=region,
        display_name=job.display_name or None,
        labels=dict(job.labels),
        study_spec=_study_from_proto(job.study_spec),
        max_trial_count=job.max_trial_count,
        parallel_trial_count=job.parallel_trial_count,
        max_failed_trial_count=job.max_failed_trial_count,
        trial_job_spec=_trial_from_proto(job),
        encryption_spec=(
            dict(kms_key_name=job.encryption_spec.kms_key_name)
            if "encryption_spec" in job and job.encryption_spec.kms_key_name
            else None
        ),
    )
    # camelCase, as any document: a field no spec holds is named by its whole path.
    return TuningJobSpec.parse(_camel_keys(document))


def tuning_job_document(spec: TuningJobSpec) -> dict[str, Any]:
    """The job as the camelCase YAML ``gcloud ai hp-tuning-jobs create --config`` reads: a
    ``HyperparameterTuningJob`` (displayName, maxTrialCount, parallelTrialCount, studySpec,
    trialJobSpec...), without project and region, which gcloud takes as flags.

    Raises ``AttributeError`` where ``to_tuning_job`` does (validate first).
    """
    to_tuning_job(spec)
    document = {k: v for k, v in spec.to_document().items() if k not in ("project", "region")}
    trial = custom_job_spec_document(spec.trial_job())
    if trial or "trialJobSpec" in document:
        document["trialJobSpec"] = trial
    return document


def validate_tuning_job(
    job: Any, *, project: str, region: str, target: Target = "local"
) -> list[Violation]:
    """The project's validator on a ``HyperparameterTuningJob`` as a client sent it.

    A job no spec can hold gives the reasons of ``from_tuning_job`` as violations.
    """
    try:
        spec = from_tuning_job(job, project=project, region=region)
    except SpecInvalidError as exc:
        return list(exc.violations)
    return validate_tuning(spec, region=region, target=target)
