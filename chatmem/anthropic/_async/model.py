"""The Anthropic chat model, over the ``anthropic`` package's Messages API."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from typing import Any, Self

import anthropic

from chatmem._urls import redact_url
from chatmem.anthropic._payloads import (
    AnthropicSettings,
    StreamAssembler,
    from_message,
    map_error,
    request_kwargs,
)
from chatmem.exceptions import ConfigurationError
from chatmem.model import ChatOptions, ChatResponse, Prompt

__all__ = ["AsyncAnthropicChatModel"]

DEFAULT_MODEL = "claude-sonnet-4-5"


class AsyncAnthropicChatModel:
    """A chat model served by Anthropic's Messages API, with thinking and prompt caching.

    Thinking comes back as :class:`~chatmem.ReasoningPart` s of the answer (text and
    signature, or a redacted block's data), other blocks the API returns as
    :class:`~chatmem.ProviderItem` s, both in their order among the text and tool calls; they
    are stored with the answer and sent back unchanged, so a tool loop with thinking goes on
    and a conversation continues with its reasoning. Reasoning parts of other providers are
    left out of the request. The answer's :class:`~chatmem.TokenUsage` counts the tokens read
    from and written to the prompt cache.

    Provider errors are raised as :class:`~chatmem.ChatModelHTTPError` (status code and the
    Anthropic error body), :class:`~chatmem.model.ChatModelTimeoutError` or
    :class:`~chatmem.model.ChatModelConnectionError`. Stop reasons become the client's finish
    reasons: ``end_turn`` and ``stop_sequence`` -> ``stop``, ``tool_use`` -> ``tool_calls``,
    ``max_tokens`` -> ``length``, ``refusal`` -> ``content_filter``; others pass through.

    Example:
        ```python
        async with AsyncAnthropicChatModel(thinking_budget=2048) as model:
            client = AsyncChatClient.builder(model).build()
            print(await client.prompt("Hello").call().content())
        ```

    Args:
        model: The model name, used when a request's options name none.
        api_key: The API key; ``ANTHROPIC_API_KEY`` by default. With a ``base_url`` and no
            key, a placeholder is sent (test servers ignore it).
        base_url: The API root; ``ANTHROPIC_BASE_URL`` or Anthropic's by default.
        timeout: Seconds to wait for an answer (per attempt), so a dead server fails fast.
        max_retries: Retries on connection errors, 408, 409, 429 and 5xx (with backoff).
        options: Default options for every request. ``max_tokens`` defaults to 4096 (plus
            the thinking budget); ``extra`` fields are sent in the body as they are, and win
            (``{"thinking": {"type": "disabled"}}`` turns thinking off for one request).
        thinking_budget: Tokens the model may think before answering (extended thinking, at
            least 1024); None sends no ``thinking`` parameter.
        interleaved_thinking: Let the model think between tool calls too (sends the
            ``interleaved-thinking-2025-05-14`` beta header).
        prompt_caching: Place ``cache_control`` breakpoints on the system prompt and on the
            last message, so the next request of the conversation (the next tool round or
            turn) reads what they cover from Anthropic's cache; False places none.
        default_headers: Headers sent with every request.
        client: An existing ``anthropic`` client to use (not closed by this model).

    Raises:
        ConfigurationError: If ``timeout`` is not positive or no API key is found.
    """

    provider_name = "anthropic"
    """The ``gen_ai.provider.name`` of this model's spans and metrics, and the provider whose
    reasoning parts it sends back."""

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        options: ChatOptions | None = None,
        thinking_budget: int | None = None,
        interleaved_thinking: bool = False,
        prompt_caching: bool = True,
        default_headers: Mapping[str, str] | None = None,
        client: anthropic.AsyncAnthropic | None = None,
    ) -> None:
        if not timeout or timeout <= 0:
            raise ConfigurationError(f"timeout must be a positive number, got {timeout!r}")
        self._owns_client = client is None
        if client is None:
            key = api_key or os.environ.get("ANTHROPIC_API_KEY")
            if key is None and (base_url or os.environ.get("ANTHROPIC_BASE_URL")):
                key = "unused"
            if key is None:
                raise ConfigurationError(
                    "no Anthropic API key: pass api_key= or set ANTHROPIC_API_KEY"
                )
            client = anthropic.AsyncAnthropic(
                api_key=key,
                base_url=base_url,
                timeout=timeout,
                max_retries=max_retries,
                default_headers=dict(default_headers) if default_headers else None,
            )
        self.client = client
        """The ``anthropic`` client in use."""
        self.options = ChatOptions(model=model).merge(options)
        """Default options; a request's options win."""
        self.settings = AnthropicSettings(
            thinking_budget=thinking_budget,
            interleaved_thinking=interleaved_thinking,
            prompt_caching=prompt_caching,
        )
        """Thinking and caching, sent with every request."""

    def __repr__(self) -> str:
        base_url = redact_url(self.base_url)
        return f"{type(self).__name__}(model={self.options.model!r}, base_url={base_url!r})"

    @property
    def base_url(self) -> str:
        """The API root requests go to."""
        return str(self.client.base_url)

    async def call(self, prompt: Prompt) -> ChatResponse:
        """Send a prompt and return the whole answer.

        Args:
            prompt: The prompt.

        Raises:
            ChatModelError: If the provider fails (see the class docs for the subclasses).
        """
        kwargs = request_kwargs(prompt, self.options, self.settings)
        try:
            # The raw JSON, not the SDK's objects: blocks the SDK does not know are kept
            # exactly as they came, to be sent back verbatim.
            raw = await self.client.messages.with_raw_response.create(**kwargs)
            body: Any = raw.http_response.json()
        except Exception as exc:
            mapped = map_error(exc)
            if mapped is None:
                raise
            raise mapped from exc
        return from_message(body)

    async def stream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        """Send a prompt and yield the answer as it arrives.

        Text comes in pieces; the tool calls, the reasoning parts (thinking with its
        signature), provider items and usage come whole in the last chunk, with the finish
        reason.

        Args:
            prompt: The prompt.

        Raises:
            ChatModelError: If the provider fails, before or during the stream (an ``error``
                event is raised as :class:`~chatmem.ChatModelHTTPError`).
            ChatModelConnectionError: If the stream ends without ``message_stop`` (it was cut
                off): raised after the text received so far; the tool calls and reasoning
                of an unfinished answer are never yielded.
        """
        kwargs: dict[str, Any] = request_kwargs(prompt, self.options, self.settings)
        kwargs["stream"] = True
        assembler = StreamAssembler()
        try:
            stream = await self.client.messages.create(**kwargs)
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

    async def aclose(self) -> None:
        """Close the HTTP client, if this model created it."""
        if self._owns_client:
            await self.client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
