"""The input formats a job spec can come in, each read into the same ``LoadedSpec``.

=============================  ============================================  =====================
format                         recognised by                                 reader
=============================  ============================================  =====================
``custom-job-spec``            top-level ``workerPoolSpecs``                 ``load`` (the model)
``custom-job``                 top-level ``jobSpec`` (a whole CustomJob)     ``load`` (the model)
``create-custom-job-request``  top-level ``customJob`` (+ ``parent``)        ``load`` (the model)
``legacy-config``              top-level ``trainingInput``                   ``legacy_config``
``gcloud-command``             a shell script or command line: ``#!``,       ``gcloud_command``
                               ``.sh``, or a first line that is a command
                               (``gcloud``, ``NAME=value``, ``export``...)
=============================  ============================================  =====================

A ``gcloud-command`` file is read as bash reads it, never run (``shell``, ``script``); its
one job submission goes to ``ai_platform_command`` (``gcloud ai-platform|ml-engine jobs
submit training``) or ``custom_jobs_command`` (``gcloud ai custom-jobs create``), both using
gcloud's flag conventions (``gcloud_flags``); a hyperparameter tuning job is refused.

``load.load_spec_file`` tells them apart and calls the reader; ``text`` and ``bounded_yaml``
read a file's text and document within bounds.
"""

from components.formats.load import detect_format, load_spec_file, spec_from_document
from components.formats.result import Format, LoadedSpec

__all__ = ["Format", "LoadedSpec", "detect_format", "load_spec_file", "spec_from_document"]
