"""The OpenAI embedding model, over the ``openai`` package's embeddings API."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import openai
from openai.types import CreateEmbeddingResponse

from chatmem._telemetry import ENABLED as TELEMETRY
from chatmem._telemetry import active as tracing_active
from chatmem._telemetry import genai
from chatmem._urls import redact_url
from chatmem.exceptions import ChatModelResponseError, ConfigurationError
from chatmem.openai._async.client import AsyncOpenAIClientOwner
from chatmem.openai._payloads import map_error

__all__ = ["AsyncOpenAIEmbeddingModel"]

DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"


class AsyncOpenAIEmbeddingModel(AsyncOpenAIClientOwner):
    """An embedding model served by OpenAI or any OpenAI-compatible server (``base_url``).

    Texts are sent in batches of ``batch_size`` per request. Provider errors are raised as
    the chat model's errors are (:class:`~chatmem.ChatModelHTTPError` and friends).

    Example:
        ```python
        async with AsyncOpenAIEmbeddingModel(model="text-embedding-3-small") as model:
            vectors = await model.embed(["My name is James Bond", "What is my name?"])
            store = AsyncInMemoryVectorStore(model)
        ```

    Args:
        model: The embedding model name.
        dimensions: Ask for vectors of this length (models that support it); otherwise the
            length is learned by embedding a probe text once.
        api_key: The API key; ``OPENAI_API_KEY`` by default. With a ``base_url`` and no
            key, a placeholder is sent (local servers ignore it).
        base_url: The API root, such as ``http://127.0.0.1:11434/v1``.
        timeout: Seconds to wait for an answer (per attempt).
        max_retries: Retries on connection errors, 408, 409, 429 and 5xx (with backoff).
        batch_size: Most texts per request.
        default_headers: Headers sent with every request.
        client: An existing ``openai`` client to use (not closed by this model).
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_EMBEDDING_MODEL,
        dimensions: int | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        batch_size: int = 512,
        default_headers: Mapping[str, str] | None = None,
        client: openai.AsyncOpenAI | None = None,
    ) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigurationError(f"batch_size must be at least 1, got {batch_size!r}")
        if dimensions is not None and (not isinstance(dimensions, int) or dimensions < 1):
            raise ConfigurationError(f"dimensions must be a positive int, got {dimensions!r}")
        self.model = model
        """The embedding model name."""
        self.batch_size = batch_size
        """Most texts per request."""
        self._requested_dimensions = dimensions
        self._dimensions = dimensions
        super().__init__(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
            client=client,
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self.model!r}, "
            f"base_url={redact_url(self.client.base_url)!r})"
        )

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed a batch of texts, one request per ``batch_size`` texts.

        Args:
            texts: The texts; an empty sequence sends no request.

        Raises:
            ChatModelError: If the provider fails or answers with the wrong number of vectors.
        """
        texts = list(texts)
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors += await self._request(texts[start : start + self.batch_size])
        if vectors and self._dimensions is None:
            self._dimensions = len(vectors[0])
        return vectors

    async def dimensions(self) -> int:
        """Return the vector length: as configured, else learned from one probe request."""
        if self._dimensions is None:
            await self.embed(["dimension probe"])
        assert self._dimensions is not None
        return self._dimensions

    async def _request(self, batch: list[str]) -> list[list[float]]:
        if not TELEMETRY or not tracing_active():
            return _vectors(await self._create(batch), batch)
        call = genai.embedding_call(self, self.model, self.provider_name)
        with genai.running(call):
            response = await self._create(batch)
            vectors = _vectors(response, batch)
            usage = getattr(response, "usage", None)
            genai.finish_embedding(
                call,
                input_tokens=getattr(usage, "prompt_tokens", None),
                response_model=getattr(response, "model", None),
                dimensions=len(vectors[0]) if vectors else 0,
            )
        return vectors

    async def _create(self, batch: list[str]) -> CreateEmbeddingResponse:
        dimensions = self._requested_dimensions
        create = self.client.embeddings.create
        try:
            # Only send "dimensions" when asked: older models and servers reject it.
            if dimensions is None:
                return await create(model=self.model, input=batch, encoding_format="float")
            return await create(
                model=self.model, input=batch, encoding_format="float", dimensions=dimensions
            )
        except Exception as exc:
            mapped = map_error(exc)
            if mapped is None:
                raise
            raise mapped from exc


def _vectors(response: CreateEmbeddingResponse, batch: list[str]) -> list[list[float]]:
    data = sorted(response.data, key=lambda item: item.index)
    if len(data) != len(batch):
        raise ChatModelResponseError(
            f"asked for {len(batch)} embeddings, the provider returned {len(data)}"
        )
    return [list(item.embedding) for item in data]
