"""What both OpenAI models share: the ``openai`` client they own (or were given) and close."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Self

import openai

from chatmem.exceptions import ConfigurationError

__all__ = ["AsyncOpenAIClientOwner"]


class AsyncOpenAIClientOwner:
    """Creates, holds and closes the ``openai`` client of a model; a context manager.

    Args:
        api_key: The API key; ``OPENAI_API_KEY`` by default. With a ``base_url`` and no
            key, a placeholder is sent (local servers ignore it).
        base_url: The API root, such as ``http://127.0.0.1:11434/v1``.
        timeout: Seconds to wait for an answer (per attempt).
        max_retries: Retries on connection errors, 408, 409, 429 and 5xx (with backoff).
        default_headers: Headers sent with every request.
        client: An existing ``openai`` client to use (not closed by this model).

    Raises:
        ConfigurationError: If ``timeout`` is not positive or no API key is found.
    """

    provider_name = "openai"
    """The ``gen_ai.provider.name`` of this model's spans and metrics."""

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None,
        timeout: float,
        max_retries: int,
        default_headers: Mapping[str, str] | None,
        client: openai.AsyncOpenAI | None,
    ) -> None:
        if not timeout or timeout <= 0:
            raise ConfigurationError(f"timeout must be a positive number, got {timeout!r}")
        self._owns_client = client is None
        if client is None:
            key = api_key or os.environ.get("OPENAI_API_KEY")
            if key is None and base_url is not None:
                key = "unused"
            if key is None:
                raise ConfigurationError("no OpenAI API key: pass api_key= or set OPENAI_API_KEY")
            client = openai.AsyncOpenAI(
                api_key=key,
                base_url=base_url,
                timeout=timeout,
                max_retries=max_retries,
                default_headers=dict(default_headers) if default_headers else None,
            )
        self.client = client
        """The ``openai`` client in use."""

    @property
    def base_url(self) -> str:
        """The API root requests go to."""
        return str(self.client.base_url)

    async def aclose(self) -> None:
        """Close the HTTP client, if this model created it."""
        if self._owns_client:
            await self.client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
