"""The chat model protocol: what a ChatClient needs from a model provider."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from chatmem.model import ChatResponse, Prompt

__all__ = ["AsyncChatModel"]


@runtime_checkable
class AsyncChatModel(Protocol):
    """A chat model: answers a prompt whole or as a stream of chunks.

    Implementations raise :class:`~chatmem.ChatModelError` (or a subclass) when the provider
    fails, never the provider SDK's own exceptions. A model may name its provider in a
    ``provider_name`` attribute (OpenTelemetry's ``gen_ai.provider.name``, such as
    ``"anthropic"``): spans and metrics report it, and ``"unknown"`` for a model without one.
    """

    async def call(self, prompt: Prompt) -> ChatResponse:
        """Answer a prompt.

        Args:
            prompt: The messages, options and tool definitions.
        """
        ...

    def stream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        """Answer a prompt as a stream of chunks (text pieces; tool calls whole).

        Args:
            prompt: The messages, options and tool definitions.
        """
        ...
