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

With ``NOOP_CLIENT=api`` (and ``NOOP_ENDPOINT``, the API's address) it also makes the one API
call each operation needs and nothing else (the bench's "API floor"): a create submits the
job its properties describe (``create_custom_job``, no look-up first, no check, no labels of
its own), a read gets it, a delete cancels it (without waiting for it to stop). What is left
between the real plugin and this floor is what the plugin's checks, notes and guarantees cost.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

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
from components.plugin._values import plain_map, wrap_map  # noqa: E402

PARENT = "projects/local-training/locations/us-central1"
"""Where the API floor submits (the bench's project and region)."""

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
    """Answers at once; keeps nothing (with ``NOOP_CLIENT=api``: one API call per operation)."""

    def __init__(self) -> None:
        self._client: Any = None
        # As many threads as the real plugin's (components.plugin._provider._WORKERS).
        self._pool = ThreadPoolExecutor(max_workers=256, thread_name_prefix="operation")

    async def configure(self, request: ConfigureRequest) -> ConfigureResponse:
        if os.environ.get("NOOP_CLIENT"):
            from google.auth.credentials import AnonymousCredentials

            from components.vertex._library import job_service  # its cheapest import

            calls = os.environ["NOOP_CLIENT"] == "api"
            client = job_service().JobServiceClient(
                transport="rest",
                credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
                client_options={
                    "api_endpoint": os.environ["NOOP_ENDPOINT"] if calls else "http://127.0.0.1:1"
                },
            )
            self._client = client if calls else None
        return await super().configure(request)

    async def _call(self, method: str, **kwargs: Any) -> Any:
        call = getattr(self._client, method)
        return await asyncio.get_running_loop().run_in_executor(
            self._pool, lambda: call(**kwargs, retry=None, timeout=30.0)
        )

    async def _submit(self, request: CreateRequest) -> str:
        from components.vertex._library import types_only

        props = plain_map(request.properties)
        body = {"displayName": request.urn.rsplit("::", 1)[-1], "jobSpec": props["jobSpec"]}
        job = types_only().CustomJob.from_json(json.dumps(body), ignore_unknown_fields=True)
        created = await self._call("create_custom_job", parent=PARENT, custom_job=job)
        return str(created.name)

    async def get_schema(self, request: GetSchemaRequest) -> GetSchemaResponse:
        text = SCHEMA_FILE.read_text(encoding="utf-8")
        return GetSchemaResponse(
            schema=text.replace('"gpu-training', '"noop').replace(
                "#/types/gpu-training:", "#/types/noop:"
            )
        )

    async def create(self, request: CreateRequest) -> CreateResponse:
        if self._client is not None and not request.preview:
            name = await self._submit(request)
        else:
            name = f"projects/p/locations/r/customJobs/{uuid.uuid4().int % 10**19}"
        outputs = wrap_map({**OUTPUTS, "name": name})
        return CreateResponse(resource_id=name, properties={**request.properties, **outputs})

    async def read(self, request: ReadRequest) -> ReadResponse:
        if self._client is not None:
            await self._call("get_custom_job", name=request.resource_id)
        return ReadResponse(request.resource_id, request.properties, request.inputs)

    async def delete(self, request: DeleteRequest) -> None:
        if self._client is not None:
            await self._call("cancel_custom_job", name=request.resource_id)


if __name__ == "__main__":
    main(sys.argv[1:], "0.2.0", NoopProvider())
