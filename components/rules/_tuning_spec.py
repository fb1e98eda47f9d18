"""The tuning job spec model: a typed mirror of Vertex AI ``HyperparameterTuningJob`` (v1).

Same conventions as ``components.rules._spec``: snake_case names of ``google.cloud.aiplatform_v1``,
camelCase accepted as well, unknown fields refused, gcloud's one-value-for-a-list reading.
Enum values stay strings (``*_UNSPECIFIED`` reads as unset): ``validate_tuning`` says what is
wrong with a misspelt one. The trial spec is a ``CustomJobSpec``; the project, region, display
name, labels and encryption key belong to the tuning job and reach each trial's job from it
(``TuningJobSpec.trial_job``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from .._errors import SpecInvalidError
from ._spec import (
    CustomJobSpec,
    Duration,
    EncryptionSpec,
    Int32,
    Int64,
    JobSpec,
    Objects,
    Text,
    Texts,
    _label_values,
    _Model,
    _one_text_is_a_list,
    violations_from_pydantic,
)

__all__ = [
    "ALGORITHMS",
    "GOALS",
    "MEASUREMENT_SELECTION_TYPES",
    "OBSERVATION_NOISES",
    "SCALE_TYPES",
    "TUNING_JOB_OUTPUT_ONLY",
    "CategoricalValueCondition",
    "CategoricalValueSpec",
    "ConditionalParameterSpec",
    "ConvexAutomatedStoppingSpec",
    "DecayCurveAutomatedStoppingSpec",
    "DiscreteValueCondition",
    "DiscreteValueSpec",
    "DoubleValueSpec",
    "IntValueCondition",
    "IntegerValueSpec",
    "MedianAutomatedStoppingSpec",
    "MetricSpec",
    "ParameterSpec",
    "SafetyMetricConfig",
    "StudySpec",
    "StudyStoppingConfig",
    "StudyTimeConstraint",
    "TrialJobSpec",
    "TuningJobSpec",
    "output_only_fields",
]

GOALS = ("MAXIMIZE", "MINIMIZE")
"""``MetricSpec.GoalType`` names (``GOAL_TYPE_UNSPECIFIED`` is read as unset)."""
SCALE_TYPES = ("UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE")
"""``ParameterSpec.ScaleType`` names (``SCALE_TYPE_UNSPECIFIED`` is read as unset)."""
ALGORITHMS = ("ALGORITHM_UNSPECIFIED", "GRID_SEARCH", "RANDOM_SEARCH")
"""``StudySpec.Algorithm`` names; unspecified is Vertex AI's default (Bayesian optimisation)."""
MEASUREMENT_SELECTION_TYPES = ("LAST_MEASUREMENT", "BEST_MEASUREMENT")
OBSERVATION_NOISES = ("LOW", "HIGH")

TUNING_JOB_OUTPUT_ONLY = (
    "name",
    "trials",
    "state",
    "create_time",
    "start_time",
    "end_time",
    "update_time",
    "error",
    "satisfies_pzs",
    "satisfies_pzi",
)
"""Fields of ``HyperparameterTuningJob`` the API sets and returns: never part of a spec."""
_OUTPUT_ONLY = frozenset(TUNING_JOB_OUTPUT_ONLY) | {to_camel(n) for n in TUNING_JOB_OUTPUT_ONLY}


def output_only_fields(document: Any) -> list[str]:
    """The output-only keys of a tuning job document, in its order (``TuningJobSpec`` ignores
    them: a format reader notes them)."""
    if not isinstance(document, dict):
        return []
    return [key for key in document if key in _OUTPUT_ONLY]


def _unset(*names: str) -> BeforeValidator:
    """An enum field whose unspecified value (or an empty string) means unset."""
    return BeforeValidator(lambda value: None if value in ("", *names) else value)


def _utc(value: datetime) -> datetime:
    # The API's timestamps are UTC; a time written without a zone is read as UTC.
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


Double = Annotated[float, Field(allow_inf_nan=False)]
"""A proto ``double`` as a spec holds it: a finite number."""
Doubles = Annotated[list[Double], BeforeValidator(_one_text_is_a_list)]
Int64s = Annotated[list[Int64], BeforeValidator(_one_text_is_a_list)]
Timestamp = Annotated[datetime, AfterValidator(_utc)]
Labels = Annotated[dict[Text, Text], BeforeValidator(_label_values)]


# --- metrics ----------------------------------------------------------------------------


class SafetyMetricConfig(_Model):
    """Makes a metric a safety metric (safe search): a threshold, not an objective."""

    safety_threshold: Double = 0.0
    desired_min_safe_trials_fraction: Double | None = None


class MetricSpec(_Model):
    """A metric the trials report (``cloudml-hypertune``) and the study optimises."""

    metric_id: Text | None = None
    goal: Annotated[Text | None, _unset("GOAL_TYPE_UNSPECIFIED")] = None
    safety_config: SafetyMetricConfig | None = None


# --- parameters -------------------------------------------------------------------------


class DoubleValueSpec(_Model):
    min_value: Double | None = None
    max_value: Double | None = None
    default_value: Double | None = None


class IntegerValueSpec(_Model):
    min_value: Int64 | None = None
    max_value: Int64 | None = None
    default_value: Int64 | None = None


class CategoricalValueSpec(_Model):
    values: Texts = Field(default_factory=list)
    default_value: Text | None = None


class DiscreteValueSpec(_Model):
    values: Doubles = Field(default_factory=list)
    default_value: Double | None = None


class DiscreteValueCondition(_Model):
    values: Doubles = Field(default_factory=list)


class IntValueCondition(_Model):
    values: Int64s = Field(default_factory=list)


class CategoricalValueCondition(_Model):
    values: Texts = Field(default_factory=list)


class ConditionalParameterSpec(_Model):
    """A parameter tuned only when its parent parameter takes one of the given values."""

    parent_discrete_values: DiscreteValueCondition | None = None
    parent_int_values: IntValueCondition | None = None
    parent_categorical_values: CategoricalValueCondition | None = None
    parameter_spec: ParameterSpec | None = None


class ParameterSpec(_Model):
    """A hyperparameter: its id (the trainer's ``--<id>=<value>`` flag) and one value spec."""

    parameter_id: Text | None = None
    double_value_spec: DoubleValueSpec | None = None
    integer_value_spec: IntegerValueSpec | None = None
    categorical_value_spec: CategoricalValueSpec | None = None
    discrete_value_spec: DiscreteValueSpec | None = None
    scale_type: Annotated[Text | None, _unset("SCALE_TYPE_UNSPECIFIED")] = None
    conditional_parameter_specs: Objects[ConditionalParameterSpec] = Field(default_factory=list)


ConditionalParameterSpec.model_rebuild()


# --- stopping ---------------------------------------------------------------------------


class DecayCurveAutomatedStoppingSpec(_Model):
    use_elapsed_duration: bool = False


class MedianAutomatedStoppingSpec(_Model):
    use_elapsed_duration: bool = False


class ConvexAutomatedStoppingSpec(_Model):
    max_step_count: Int64 = 0
    min_step_count: Int64 = 0
    min_measurement_count: Int64 = 0
    learning_rate_parameter_name: Text | None = None
    use_elapsed_duration: bool = False
    update_all_stopped_trials: bool | None = None


class StudyTimeConstraint(_Model):
    """One of a duration since the study was created or a time (UTC)."""

    max_duration: Duration | None = None
    end_time: Timestamp | None = None


class StudyStoppingConfig(_Model):
    should_stop_asap: bool | None = None
    minimum_runtime_constraint: StudyTimeConstraint | None = None
    maximum_runtime_constraint: StudyTimeConstraint | None = None
    min_num_trials: Int32 | None = None
    max_num_trials: Int32 | None = None
    max_num_trials_no_progress: Int32 | None = None
    max_duration_no_progress: Duration | None = None


class StudySpec(_Model):
    """What the study optimises, over which parameters, with which algorithm."""

    metrics: Objects[MetricSpec] = Field(default_factory=list)
    parameters: Objects[ParameterSpec] = Field(default_factory=list)
    algorithm: Annotated[Text | None, _unset("ALGORITHM_UNSPECIFIED")] = None
    observation_noise: Annotated[Text | None, _unset("OBSERVATION_NOISE_UNSPECIFIED")] = None
    measurement_selection_type: Annotated[
        Text | None, _unset("MEASUREMENT_SELECTION_TYPE_UNSPECIFIED")
    ] = None
    decay_curve_stopping_spec: DecayCurveAutomatedStoppingSpec | None = None
    median_automated_stopping_spec: MedianAutomatedStoppingSpec | None = None
    convex_automated_stopping_spec: ConvexAutomatedStoppingSpec | None = None
    study_stopping_config: StudyStoppingConfig | None = None


# --- the job ----------------------------------------------------------------------------


class TrialJobSpec(CustomJobSpec):
    """The ``CustomJobSpec`` every trial runs, its parameters appended to the trainer's args.

    The fields of ``JobSpec`` less those of the tuning job (project, region, display name,
    labels, encryption key)."""


class TuningJobSpec(_Model):
    """A Vertex AI hyperparameter tuning job, plus the project and region it runs in.

    A whole ``HyperparameterTuningJob`` as the API returns it is read too: its output-only
    fields (``TUNING_JOB_OUTPUT_ONLY``) are ignored."""

    project: Text | None = None
    region: Text | None = None
    display_name: Text | None = None
    labels: Labels = Field(default_factory=dict)
    study_spec: StudySpec = Field(default_factory=StudySpec)
    max_trial_count: Int32 = 0
    parallel_trial_count: Int32 = 0
    max_failed_trial_count: Int32 = 0
    trial_job_spec: TrialJobSpec = Field(default_factory=TrialJobSpec)
    encryption_spec: EncryptionSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _drop_output_only(cls, data: Any) -> Any:
        if isinstance(data, dict) and output_only_fields(data):
            return {k: v for k, v in data.items() if k not in _OUTPUT_ONLY}
        return data

    @classmethod
    def parse(cls, data: Any) -> TuningJobSpec:
        """Build a spec from a mapping; raises ``SpecInvalidError`` naming each bad field."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise SpecInvalidError(violations_from_pydantic(exc, cls)) from None

    def to_document(self) -> dict[str, Any]:
        """The spec as camelCase JSON-ready data, with unset fields left out."""
        return self.model_dump(mode="json", exclude_none=True, exclude_defaults=True)

    def trial_job(self) -> JobSpec:
        """The custom job one trial runs (before its parameters are appended to its args)."""
        fields = {name: getattr(self.trial_job_spec, name) for name in TrialJobSpec.model_fields}
        return JobSpec.model_validate(
            {
                **fields,
                "project": self.project,
                "region": self.region,
                "display_name": self.display_name,
                "labels": self.labels,
                "encryption_spec": self.encryption_spec,
            }
        )
