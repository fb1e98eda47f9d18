"""Local Vertex AI training service: the CustomJob and HyperparameterTuningJob REST API of
``aiplatform_v1``, backed by SQLite and real local processes.

Start it with ``python -m emulator serve`` and point ``emulator.client.job_service_client`` (or any
``JobServiceClient`` built the same way) at the endpoint it prints.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
