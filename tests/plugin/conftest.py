"""The plugin's package first: it keeps the SDK and the Vertex client from registering
``google.rpc.Status`` twice (``components.plugin``)."""

import components.plugin  # noqa: F401
