"""The ``/v1/embeddings`` route of the OpenAI test server: deterministic hashing vectors.

Register it on a server with :func:`add_embeddings_route`. It answers like OpenAI's
embeddings API (float or base64 encoding, optional ``dimensions``) with the vectors of
:func:`chatmem.testing.vectors.hashing_embedding`, so similarity follows shared words and
retrieval through a real HTTP model can be asserted.

Example:
    ```python
    with OpenAITestServer() as server:
        add_embeddings_route(server)
        model = OpenAIEmbeddingModel(base_url=server.base_url)
    ```
"""

from __future__ import annotations

import base64
import struct
from typing import Any

from chatmem.testing._hashing import DEFAULT_HASHING_DIMENSIONS, hashing_embedding
from chatmem.testing.openai_server import OpenAITestServer, ServerReply

__all__ = ["EMBEDDINGS_PATH", "add_embeddings_route", "embeddings_route"]

EMBEDDINGS_PATH = "/v1/embeddings"
"""Where the route is registered."""


def _error(message: str) -> ServerReply:
    body = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
    return ServerReply(status=400, body=body)


def _inputs(raw: object) -> list[str] | None:
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list) and raw and all(isinstance(t, str) for t in raw):
        return list(raw)
    return None


def embeddings_route(server: OpenAITestServer, body: dict[str, Any]) -> ServerReply:
    """Answer an embeddings request with hashing vectors.

    Args:
        server: The test server.
        body: The request's JSON body.
    """
    if not body.get("model"):
        return _error("you must provide a model parameter")
    texts = _inputs(body.get("input"))
    if texts is None:
        return _error("input must be a non-empty string or array of strings")
    dimensions = body.get("dimensions", DEFAULT_HASHING_DIMENSIONS)
    if not isinstance(dimensions, int) or dimensions < 2:
        return _error("dimensions must be an integer of at least 2")
    encoding = body.get("encoding_format", "float")
    data = []
    for index, text in enumerate(texts):
        vector = hashing_embedding(text, dimensions)
        embedding: Any = vector
        if encoding == "base64":
            packed = struct.pack(f"<{len(vector)}f", *vector)
            embedding = base64.b64encode(packed).decode("ascii")
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    tokens = sum(len(t.split()) for t in texts)
    return ServerReply(
        body={
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
    )


def add_embeddings_route(server: OpenAITestServer) -> OpenAITestServer:
    """Register :func:`embeddings_route` at ``POST /v1/embeddings`` and return the server.

    Args:
        server: The test server.
    """
    server.add_route("POST", EMBEDDINGS_PATH, embeddings_route)
    return server
