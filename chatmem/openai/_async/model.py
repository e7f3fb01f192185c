"""The OpenAI chat model, over the ``openai`` package's Chat Completions API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import openai

from chatmem._urls import redact_url
from chatmem.model import ChatOptions, ChatResponse, Prompt
from chatmem.openai._async.client import AsyncOpenAIClientOwner
from chatmem.openai._payloads import StreamAssembler, from_completion, map_error, request_kwargs

__all__ = ["AsyncOpenAIChatModel"]

DEFAULT_MODEL = "gpt-4o-mini"


class AsyncOpenAIChatModel(AsyncOpenAIClientOwner):
    """A chat model served by OpenAI or any OpenAI-compatible server.

    Azure OpenAI, Ollama, vLLM and llama.cpp serve the same API: point ``base_url`` at them.
    Provider errors are raised as :class:`~chatmem.ChatModelHTTPError` (status code and
    body), :class:`~chatmem.model.ChatModelTimeoutError` or
    :class:`~chatmem.model.ChatModelConnectionError`.

    Example:
        ```python
        async with AsyncOpenAIChatModel(model="gpt-4o-mini") as model:
            client = AsyncChatClient.builder(model).build()
            print(await client.prompt("Hello").call().content())
        ```

    Args:
        model: The model name, used when a request's options name none.
        api_key: The API key; ``OPENAI_API_KEY`` by default. With a ``base_url`` and no
            key, a placeholder is sent (local servers ignore it).
        base_url: The API root, such as ``http://127.0.0.1:11434/v1``.
        timeout: Seconds to wait for an answer (per attempt), so a dead server fails fast.
        max_retries: Retries on connection errors, 408, 409, 429 and 5xx (with backoff).
        options: Default options for every request.
        default_headers: Headers sent with every request.
        client: An existing ``openai`` client to use (not closed by this model).
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        options: ChatOptions | None = None,
        default_headers: Mapping[str, str] | None = None,
        client: openai.AsyncOpenAI | None = None,
    ) -> None:
        super().__init__(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
            client=client,
        )
        self.options = ChatOptions(model=model).merge(options)
        """Default options; a request's options win."""

    def __repr__(self) -> str:
        base_url = redact_url(self.base_url)
        return f"{type(self).__name__}(model={self.options.model!r}, base_url={base_url!r})"

    async def call(self, prompt: Prompt) -> ChatResponse:
        """Send a prompt and return the whole answer.

        Args:
            prompt: The prompt.

        Raises:
            ChatModelError: If the provider fails (see the class docs for the subclasses).
        """
        kwargs = request_kwargs(prompt, self.options)
        try:
            completion = await self.client.chat.completions.create(**kwargs)
        except Exception as exc:
            mapped = map_error(exc)
            if mapped is None:
                raise
            raise mapped from exc
        return from_completion(completion)

    async def stream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        """Send a prompt and yield the answer as it arrives.

        Text comes in pieces; tool calls come whole, assembled from their deltas, in the
        chunk with the finish reason; usage comes in a last chunk.

        Args:
            prompt: The prompt.

        Raises:
            ChatModelError: If the provider fails, before or during the stream.
            ChatModelConnectionError: If the stream ends without a finish reason (it was cut
                off): raised after the text received so far; a tool call still being
                received is never yielded.
        """
        kwargs: dict[str, Any] = request_kwargs(prompt, self.options)
        kwargs["stream"] = True
        kwargs["stream_options"] = {"include_usage": True}
        assembler = StreamAssembler()
        try:
            stream = await self.client.chat.completions.create(**kwargs)
            async with stream:
                async for chunk in stream:
                    # An async generator cannot "yield from"; the generated sync twin could.
                    for piece in assembler.feed(chunk):  # noqa: UP028, RUF100
                        yield piece
        except Exception as exc:
            mapped = map_error(exc)
            if mapped is None:
                raise
            raise mapped from exc
        assembler.finish()
