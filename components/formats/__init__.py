"""The input formats a job spec can come in, each read into the same ``LoadedSpec``.

=====================  ==========================================  =========================
format                 recognised by                               reader
=====================  ==========================================  =========================
``custom-job-spec``    top-level ``workerPoolSpecs``               ``load`` (the spec model)
``custom-job``         top-level ``jobSpec`` (a whole CustomJob)   ``load`` (the spec model)
``legacy-config``      top-level ``trainingInput``                 ``legacy_config``
``gcloud-command``     the file's first word is ``gcloud``         ``gcloud_command``
=====================  ==========================================  =========================

``load.load_spec_file`` tells them apart and calls the reader; ``text`` and ``bounded_yaml``
read a file's text and document within bounds.
"""

from components.formats.load import detect_format, load_spec_file, spec_from_document
from components.formats.result import Format, LoadedSpec

__all__ = ["Format", "LoadedSpec", "detect_format", "load_spec_file", "spec_from_document"]
