"""The input formats a job spec can come in, each read into the same ``LoadedSpec``.

============================================  ============================================  =================
format                                        recognised by                                 reader
============================================  ============================================  =================
``custom-job-spec``                           top-level ``workerPoolSpecs``                 ``load``
``custom-job``                                top-level ``jobSpec`` (a whole CustomJob)     ``load``
``create-custom-job-request``                 top-level ``customJob`` (+ ``parent``)        ``load``
``legacy-config``                             top-level ``trainingInput``                   ``legacy_config``
                                              (with ``hyperparameters``: a tuning job)      (``legacy_tuning``)
``hyperparameter-tuning-job``                 top-level ``studySpec``, ``trialJobSpec``,    ``tuning``
                                              ``maxTrialCount`` or ``parallelTrialCount``
``create-hyperparameter-tuning-job-request``  top-level ``hyperparameterTuningJob``         ``tuning``
``gcloud-command``                            a shell script or command line: ``#!``,       ``gcloud_command``
                                              ``.sh``, or a first line that is a command
                                              (``gcloud``, ``NAME=value``, ``export``...);
                                              a Makefile; a ``.bat``/``.cmd`` batch file    (``batch``)
``notebook``                                  ``.ipynb``, or JSON with ``nbformat`` and     ``notebook``
                                              ``cells``: each job its cells submit
``python-sdk``                                ``.py``: each Vertex AI SDK job (``ast``)     ``python_sdk``
``pulumi-program``                            ``.py`` importing ``pulumi_gcp``, ``.ts``,    ``pulumi_programs``
                                              ``.js``: each pulumi-gcp ``AiCustomJob``
============================================  ============================================  =================

Terraform ``google_vertex_ai_custom_job`` resources (``.tf``) and a Pulumi YAML program's
``AiCustomJob`` resources are read as the ``custom-job`` each creates (``migration``).

A notebook, a Python file, a Pulumi program (Python, TypeScript, YAML) or a Terraform file may
hold several jobs (a Pulumi program or Terraform file: a job per resource), and so may a script
whose one submission is inside loops over known values (a job per run): ``load.load_jobs``
gives each, named (``FileJob``); ``load_spec_file`` takes one of them only when it is the
file's one job.

A file holds a custom job or a hyperparameter tuning job (``LoadedSpec.kind``): a tuning job
is read only when the caller asks for one (``load_spec_file(path, tuning=True)``, then
``LoadedSpec.tuning`` is its ``TuningJobSpec``); otherwise it raises ``TuningJobFileError``,
never a single job that would run one trial without its hyperparameters.

A ``gcloud-command`` file is read as bash reads it, never run (``shell``, ``script``); its
one job submission goes to ``ai_platform_command`` (``gcloud ai-platform|ml-engine jobs
submit training``), ``custom_jobs_command`` (``gcloud ai custom-jobs create``) or
``tuning_command`` (``gcloud ai hp-tuning-jobs create``), all using gcloud's flag conventions
(``gcloud_flags``); a ``curl`` POST to Vertex AI's ``customJobs`` or
``hyperparameterTuningJobs`` URL is read from its body (``gcloud_command``).

gcloud's autopackaging (``local-package-path``) is modelled in ``autopackage``: how the
local stack runs such a pool, and the image ``convert`` says Vertex AI needs.

``load.load_spec_file`` tells them apart and calls the reader; ``text`` and ``bounded_yaml``
read a file's text and document within bounds; ``request`` reads the job of a create request.
"""

from .load import detect_format, load_spec_file, spec_from_document
from .result import Format, Kind, LoadedSpec, TuningJobFileError
from .tuning import tuning_from_document

__all__ = [
    "Format",
    "Kind",
    "LoadedSpec",
    "TuningJobFileError",
    "detect_format",
    "load_spec_file",
    "spec_from_document",
    "tuning_from_document",
]
