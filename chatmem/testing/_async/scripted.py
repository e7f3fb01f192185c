"""A chat model that answers from a script and records every prompt it was sent."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TypeAlias

from chatmem._twins import async_sleep
from chatmem.messages import AssistantMessage, TokenUsage, ToolCall
from chatmem.model import ChatResponse, Generation, Prompt

__all__ = ["AsyncScriptedChatModel", "ScriptedReply"]

ScriptedReply: TypeAlias = "str | AssistantMessage | ChatResponse | Exception"
"""One scripted answer: text, an assistant message (tool calls), a response or an error."""


def _response(reply: str | AssistantMessage | ChatResponse) -> ChatResponse:
    if isinstance(reply, ChatResponse):
        return reply
    message = AssistantMessage(reply) if isinstance(reply, str) else reply
    finish = "tool_calls" if message.tool_calls else "stop"
    return ChatResponse(
        [Generation(message, finish)], TokenUsage(input_tokens=1, output_tokens=1), "scripted"
    )


def _pieces(text: str) -> list[str]:
    # Word-sized chunks, whitespace kept, so a stream joins back to the exact text.
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


class AsyncScriptedChatModel:
    """Answers prompts with scripted replies, in order, and records the prompts.

    Example:
        ```python
        model = AsyncScriptedChatModel(["Hello, Mr Bond.", "Your name is James Bond."])
        client = AsyncChatClient.create(model)
        await client.prompt("Hi").call().content()
        model.prompts[0].messages
        ```

    Args:
        replies: The answers, in order. An exception is raised instead of answering; a
            :class:`~chatmem.AssistantMessage` may carry tool calls.
        respond: Answers prompts once the script is used up (default: raise).
        fail_after_chunks: In streams, raise this error after that many chunks
            (``(count, error)``).
        chunk_delay: Seconds to wait before each streamed chunk.
    """

    def __init__(
        self,
        replies: Iterable[ScriptedReply] = (),
        *,
        respond: Callable[[Prompt], ScriptedReply] | None = None,
        fail_after_chunks: tuple[int, Exception] | None = None,
        chunk_delay: float = 0.0,
    ) -> None:
        self._replies: deque[ScriptedReply] = deque(replies)
        self._respond = respond
        self.fail_after_chunks = fail_after_chunks
        """Raise an error mid-stream after that many chunks."""
        self.chunk_delay = chunk_delay
        """Seconds to wait before each streamed chunk."""
        self.prompts: list[Prompt] = []
        """Every prompt received, in order."""

    def add_replies(self, *replies: ScriptedReply) -> None:
        """Append answers to the script.

        Args:
            *replies: The answers.
        """
        self._replies.extend(replies)

    def _next(self, prompt: Prompt) -> str | AssistantMessage | ChatResponse:
        self.prompts.append(prompt)
        if self._replies:
            reply = self._replies.popleft()
        elif self._respond is not None:
            reply = self._respond(prompt)
        else:
            raise AssertionError("the scripted chat model has no reply left")
        if isinstance(reply, Exception):
            raise reply
        return reply

    async def call(self, prompt: Prompt) -> ChatResponse:
        """Record the prompt and return the next scripted answer.

        Args:
            prompt: The prompt.

        Raises:
            Exception: The scripted error, if the next reply is one.
        """
        return _response(self._next(prompt))

    async def stream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        """Record the prompt and stream the next scripted answer word by word.

        Tool calls come whole in the last chunk, with the finish reason and usage.

        Args:
            prompt: The prompt.
        """
        whole = _response(self._next(prompt))
        message = whole.result.message if whole.result else AssistantMessage("")
        pieces = _pieces(message.text)
        for index, piece in enumerate(pieces):
            if self.fail_after_chunks and index == self.fail_after_chunks[0]:
                raise self.fail_after_chunks[1]
            if self.chunk_delay:
                await async_sleep(self.chunk_delay)
            yield ChatResponse([Generation(AssistantMessage(piece))], model=whole.model)
        calls: list[ToolCall] = list(message.tool_calls)
        last = AssistantMessage("", tool_calls=calls)
        yield ChatResponse([Generation(last, whole.finish_reason)], whole.usage, whole.model)
