"""A provider plugin that does nothing, with the gpu-training plugin's schema: the floor for
``bench/plugin_scale.py``.

Its package is ``noop`` (tokens ``noop:vertex:TrainingJob``...), its resources take the same
inputs as the real plugin's and answer a create, read, diff or delete at once, echoing the inputs
with a fixed set of outputs of the real resource's shape: what any provider plugin on the SDK's
``pulumi.provider.experimental`` server costs the engine.

Run as ``python bench/noop_plugin.py ENGINE_ADDRESS`` (the bench links it as
``pulumi-resource-noop``). With ``NOOP_CLIENT=1`` in its environment, ``configure`` also imports
Vertex AI's job service client (the library's job service alone, ``components.vertex._library``)
and makes one, and nothing more: what any provider plugin that calls Vertex AI through ``google-cloud-aiplatform``
pays before its first operation, whatever it does then (the bench's "client floor").
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# First: google.rpc.Status registered once, as in the real plugin (components/plugin/__init__.py).
import components.plugin  # noqa: E402,F401

# isort: split

from pulumi.provider.experimental.provider import (  # noqa: E402
    ConfigureRequest,
    ConfigureResponse,
    CreateRequest,
    CreateResponse,
    DeleteRequest,
    GetSchemaRequest,
    GetSchemaResponse,
    Provider,
    ReadRequest,
    ReadResponse,
)
from pulumi.provider.experimental.server import main  # noqa: E402

from components.plugin._schema import SCHEMA_FILE  # noqa: E402
from components.plugin._values import wrap_map  # noqa: E402

OUTPUTS: dict[str, object] = {
    "state": "JOB_STATE_RUNNING",
    "jobId": "1234567890123456789",
    "consoleUrl": "http://127.0.0.1:8642/v1/projects/p/locations/r/customJobs/1234567890123456789",
    "createTime": "2026-11-27T10:00:00.000000Z",
    "startTime": "2026-11-27T10:00:01.000000Z",
    "endTime": "",
    "errorMessage": "",
    "modelDir": "",
    "adopted": False,
    "hourlyCostUsd": 0.62,
    "maxCostUsd": 0.1,
    "project": "local-training",
    "region": "us-central1",
}


class NoopProvider(Provider):
    """Answers at once; keeps nothing."""

    async def configure(self, request: ConfigureRequest) -> ConfigureResponse:
        if os.environ.get("NOOP_CLIENT"):
            from google.auth.credentials import AnonymousCredentials

            from components.vertex._library import job_service  # its cheapest import

            job_service().JobServiceClient(
                transport="rest",
                credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
                client_options={"api_endpoint": "http://127.0.0.1:1"},
            )
        return await super().configure(request)

    async def get_schema(self, request: GetSchemaRequest) -> GetSchemaResponse:
        text = SCHEMA_FILE.read_text(encoding="utf-8")
        return GetSchemaResponse(
            schema=text.replace('"gpu-training', '"noop').replace(
                "#/types/gpu-training:", "#/types/noop:"
            )
        )

    async def create(self, request: CreateRequest) -> CreateResponse:
        name = f"projects/p/locations/r/customJobs/{uuid.uuid4().int % 10**19}"
        outputs = wrap_map({**OUTPUTS, "name": name})
        return CreateResponse(resource_id=name, properties={**request.properties, **outputs})

    async def read(self, request: ReadRequest) -> ReadResponse:
        return ReadResponse(request.resource_id, request.properties, request.inputs)

    async def delete(self, request: DeleteRequest) -> None:
        return None


if __name__ == "__main__":
    main(sys.argv[1:], "0.2.0", NoopProvider())
