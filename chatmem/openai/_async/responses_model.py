"""The OpenAI Responses API chat model, over the ``openai`` package's ``responses`` API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import openai
from pydantic import JsonValue

from chatmem._urls import redact_url
from chatmem.model import ChatOptions, ChatResponse, Prompt
from chatmem.openai._async.client import AsyncOpenAIClientOwner
from chatmem.openai._payloads import map_error
from chatmem.openai._responses_payloads import (
    ResponsesStreamAssembler,
    from_response,
    responses_request,
)

__all__ = ["AsyncOpenAIResponsesChatModel"]

DEFAULT_MODEL = "gpt-5-mini"


class AsyncOpenAIResponsesChatModel(AsyncOpenAIClientOwner):
    """A chat model served by OpenAI's Responses API, for reasoning models.

    Stateless by default (``store=False``): every request carries the whole conversation
    that chatmem holds, never a ``previous_response_id``, and asks for the reasoning in
    encrypted form (``include=["reasoning.encrypted_content"]``). The answer's reasoning
    items become :class:`~chatmem.messages.ReasoningPart` s (summary, encrypted content, id)
    on the assistant message, in their order among its text and tool calls, with the
    :class:`~chatmem.messages.TokenUsage`; stored with the message, they go back unchanged
    in the next request, so the model keeps its reasoning across a tool loop. Reasoning of
    another provider in the conversation is left out. Provider errors are raised as for
    :class:`AsyncOpenAIChatModel`.

    Example:
        ```python
        async with AsyncOpenAIResponsesChatModel(
            model="gpt-5-mini", reasoning={"effort": "low", "summary": "auto"}
        ) as model:
            client = AsyncChatClient.builder(model).build()
            print(await client.prompt("Hello").call().content())
        ```

    Args:
        model: The model name, used when a request's options name none.
        api_key: The API key; ``OPENAI_API_KEY`` by default. With a ``base_url`` and no
            key, a placeholder is sent (local servers ignore it).
        base_url: The API root, such as ``http://127.0.0.1:8000/v1``.
        timeout: Seconds to wait for an answer (per attempt), so a dead server fails fast.
        max_retries: Retries on connection errors, 408, 409, 429 and 5xx (with backoff).
        options: Default options for every request (``stop``, ``seed`` and the penalties
            are not taken by this API).
        reasoning: The ``reasoning`` configuration sent with every request, such as
            ``{"effort": "low", "summary": "auto"}``.
        store: Let the provider store responses (and send item ids); chatmem still sends
            the whole conversation.
        default_headers: Headers sent with every request.
        client: An existing ``openai`` client to use (not closed by this model).
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
        options: ChatOptions | None = None,
        reasoning: Mapping[str, JsonValue] | None = None,
        store: bool = False,
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
        self.reasoning = dict(reasoning) if reasoning is not None else None
        """The ``reasoning`` configuration sent with every request."""
        self.store = store
        """Whether the provider stores responses."""

    def __repr__(self) -> str:
        base_url = redact_url(self.base_url)
        return f"{type(self).__name__}(model={self.options.model!r}, base_url={base_url!r})"

    def _request(self, prompt: Prompt) -> dict[str, Any]:
        return responses_request(prompt, self.options, store=self.store, reasoning=self.reasoning)

    async def call(self, prompt: Prompt) -> ChatResponse:
        """Send a prompt and return the whole answer.

        Args:
            prompt: The prompt.

        Raises:
            ChatModelError: If the provider fails (see the class docs for the subclasses).
        """
        kwargs = self._request(prompt)
        try:
            response = await self.client.responses.create(**kwargs)
        except Exception as exc:
            mapped = map_error(exc)
            if mapped is None:
                raise
            raise mapped from exc
        return from_response(response)

    async def stream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        """Send a prompt and yield the answer as it arrives.

        Text comes in pieces; reasoning parts and tool calls come whole, in the last chunk,
        with the finish reason and the token usage.

        Args:
            prompt: The prompt.

        Raises:
            ChatModelError: If the provider fails, before or during the stream.
            ChatModelConnectionError: If the stream ends before ``response.completed`` (it
                was cut off): raised after the text received so far; reasoning and tool
                calls are never yielded.
        """
        kwargs = self._request(prompt)
        kwargs["stream"] = True
        assembler = ResponsesStreamAssembler()
        try:
            stream = await self.client.responses.create(**kwargs)
            async with stream:
                async for event in stream:
                    # An async generator cannot "yield from"; the generated sync twin could.
                    for piece in assembler.feed(event):  # noqa: UP028, RUF100
                        yield piece
        except Exception as exc:
            mapped = map_error(exc)
            if mapped is None:
                raise
            raise mapped from exc
        assembler.finish()
