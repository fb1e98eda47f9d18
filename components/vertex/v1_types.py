"""The v1 API's job message types, for the provider plugin's schema (``components.plugin._schema``).

The proto-plus classes carry each field's name, type and the API's own description (their
docstrings): the schema generator walks them. Imported only by the generator (``make
provider-schema``) and its test, never by the provider process.
"""

from __future__ import annotations

from typing import Any

__all__ = ["job_message_types"]


def job_message_types() -> tuple[Any, Any]:
    """(``CustomJob``, ``HyperparameterTuningJob``) of ``google.cloud.aiplatform_v1``."""
    from google.cloud.aiplatform_v1.types import custom_job, hyperparameter_tuning_job

    return custom_job.CustomJob, hyperparameter_tuning_job.HyperparameterTuningJob
