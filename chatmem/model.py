"""What a chat model is sent and what it answers: prompts, options, responses. No I/O.

A :class:`Prompt` (messages, options, tool definitions) goes in; a :class:`ChatResponse`
(generations, usage, finish reason and every message the exchange produced) comes out. The
model protocols themselves are :class:`~chatmem.AsyncChatModel` and :class:`~chatmem.ChatModel`.

Streaming models yield :class:`ChatResponse` *chunks*: each carries a piece of the answer text;
tool calls arrive whole in the chunk where they complete. :func:`aggregate_chunks` folds a
stream back into one response.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from chatmem.exceptions import ChatModelConnectionError, ChatModelTimeoutError
from chatmem.messages import (
    AssistantMessage,
    Message,
    ProviderItem,
    ReasoningPart,
    TokenUsage,
    ToolCall,
)

__all__ = [
    "ChatModelConnectionError",
    "ChatModelTimeoutError",
    "ChatOptions",
    "ChatResponse",
    "Generation",
    "Prompt",
    "ToolDefinition",
    "aggregate_chunks",
    "combine_usage",
]


@dataclass(frozen=True, slots=True)
class ChatOptions:
    """Model options; ``None`` means "the model's default".

    Options merge field by field: :meth:`merge` keeps this object's values and overrides the
    ones set in the other (client defaults, then per-request options).
    """

    model: str | None = None
    """The model name, such as ``gpt-4o-mini``."""
    temperature: float | None = None
    """Sampling temperature."""
    max_tokens: int | None = None
    """Upper bound on the tokens generated."""
    top_p: float | None = None
    """Nucleus sampling mass."""
    frequency_penalty: float | None = None
    """Penalty on repeated tokens."""
    presence_penalty: float | None = None
    """Penalty on tokens already present."""
    stop: tuple[str, ...] | None = None
    """Sequences that end generation."""
    seed: int | None = None
    """Seed for providers that support reproducible sampling."""
    tool_choice: str | Mapping[str, JsonValue] | None = None
    """``"auto"``, ``"none"``, ``"required"`` or a provider-specific choice."""
    parallel_tool_calls: bool | None = None
    """Whether the model may call several tools at once."""
    response_format: Mapping[str, JsonValue] | None = None
    """Structured output: ``{"name": ..., "schema": {...}}`` (a JSON schema)."""
    extra: Mapping[str, JsonValue] = field(default_factory=dict)
    """Provider-specific fields sent as they are."""

    def merge(self, other: ChatOptions | None) -> ChatOptions:
        """Return these options overridden by the fields ``other`` sets.

        Args:
            other: Options whose non-``None`` fields win; ``extra`` dicts are merged.
        """
        if other is None:
            return self
        names = _OPTION_FIELDS if type(other) is ChatOptions else _field_names(other)
        changes: dict[str, Any] = {
            name: value for name in names if (value := getattr(other, name)) is not None
        }
        if other.extra:
            changes["extra"] = {**self.extra, **other.extra}
        return dataclasses.replace(self, **changes) if changes else self


def _field_names(options: ChatOptions) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(options) if f.name != "extra")


_OPTION_FIELDS = _field_names(ChatOptions())


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """What the model is told about a tool: its name, description and argument schema."""

    name: str
    """The tool's name, unique within a request."""
    description: str
    """What the tool does, for the model."""
    parameters: Mapping[str, JsonValue]
    """JSON schema of the arguments object."""


@dataclass(frozen=True, slots=True)
class Prompt:
    """A request to a chat model."""

    messages: Sequence[Message]
    """The conversation to answer, oldest first; a system message, if any, comes first."""
    options: ChatOptions = field(default_factory=ChatOptions)
    """Model options for this request."""
    tools: Sequence[ToolDefinition] = ()
    """Tools the model may call."""

    def with_messages(self, messages: Sequence[Message]) -> Prompt:
        """Return a copy of this prompt with other messages.

        Args:
            messages: The new messages.
        """
        return Prompt(messages, self.options, self.tools)


def combine_usage(total: TokenUsage | None, usage: TokenUsage | None) -> TokenUsage | None:
    """Add up the token usage of two model calls (a tool loop's rounds).

    Args:
        total: The usage so far, or ``None``.
        usage: One more call's usage, or ``None`` if it was not reported.

    Example:
        ```python
        from chatmem import TokenUsage
        from chatmem.model import combine_usage

        both = combine_usage(TokenUsage(input_tokens=10), TokenUsage(input_tokens=5))
        assert both == TokenUsage(input_tokens=15)
        ```
    """
    if usage is None:
        return total
    if total is None:
        return usage
    return TokenUsage(
        input_tokens=total.input_tokens + usage.input_tokens,
        output_tokens=total.output_tokens + usage.output_tokens,
        reasoning_tokens=total.reasoning_tokens + usage.reasoning_tokens,
        cache_read_tokens=total.cache_read_tokens + usage.cache_read_tokens,
        cache_write_tokens=total.cache_write_tokens + usage.cache_write_tokens,
    )


@dataclass(frozen=True, slots=True)
class Generation:
    """One answer of the model."""

    message: AssistantMessage
    """The answer (text, tool calls or both); a text fragment in a stream chunk."""
    finish_reason: str | None = None
    """Why generation stopped: ``stop``, ``tool_calls``, ``length``...; ``None`` mid-stream."""


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """A model's response, or one chunk of a streamed response."""

    generations: Sequence[Generation] = ()
    """The answers; usually one."""
    usage: TokenUsage | None = None
    """Token usage, where the provider reports it (summed over a tool loop)."""
    model: str | None = None
    """The model that answered, as the provider names it."""
    exchange: Sequence[Message] = ()
    """Every message the exchange produced, in order: assistant tool calls, tool responses
    and the final answer. Filled by the chat client; empty on a bare model response and on
    every stream chunk except the last one."""
    metadata: Mapping[str, JsonValue] = field(default_factory=dict)
    """Provider details such as the response id."""

    @property
    def result(self) -> Generation | None:
        """The first generation, or ``None`` if there is none."""
        return self.generations[0] if self.generations else None

    @property
    def text(self) -> str:
        """The first generation's text (empty if there is none)."""
        return self.generations[0].message.text if self.generations else ""

    @property
    def finish_reason(self) -> str | None:
        """The first generation's finish reason."""
        return self.generations[0].finish_reason if self.generations else None

    def with_text(self, text: str) -> ChatResponse:
        """Return a copy whose answer (the first generation) has other text.

        The answer keeps its id, tool calls and metadata. The same message in
        :attr:`exchange` (the final answer) changes too, so a memory advisor that stores the
        exchange after this one stores the new text.

        Args:
            text: The new answer text.

        Example:
            ```python
            from chatmem import AssistantMessage, ChatResponse, Generation

            response = ChatResponse([Generation(AssistantMessage("Hello, Mr Bond."))])
            assert response.with_text("Good evening, 007.").text == "Good evening, 007."
            ```
        """
        if not self.generations:
            return dataclasses.replace(self, generations=[Generation(AssistantMessage(text))])
        first = self.generations[0]
        message = first.message.model_copy(update={"text": text})
        exchange = [message if m.id == first.message.id else m for m in self.exchange]
        generations = [dataclasses.replace(first, message=message), *self.generations[1:]]
        return dataclasses.replace(self, generations=generations, exchange=exchange)


def aggregate_chunks(chunks: Iterable[ChatResponse]) -> ChatResponse:
    """Fold streamed chunks into one response.

    Text is concatenated; tool calls, reasoning parts and provider items are collected in
    order; the answer's own usage is the last one a chunk's message carried, and its metadata
    what the chunks' messages carried (a provider's item ids, for one). The last finish
    reason, model and metadata win, the chunks' usages are summed and the last non-empty
    ``exchange`` is kept.

    Args:
        chunks: The chunks, in the order they were streamed.
    """
    text: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[ReasoningPart] = []
    items: list[ProviderItem] = []
    message_usage: TokenUsage | None = None
    message_metadata: dict[str, JsonValue] = {}
    finish: str | None = None
    usage: TokenUsage | None = None
    model: str | None = None
    exchange: Sequence[Message] = ()
    metadata: Mapping[str, JsonValue] = {}
    for chunk in chunks:
        if chunk.generations:
            generation = chunk.generations[0]
            piece = generation.message
            text.append(piece.text)
            calls.extend(piece.tool_calls)
            reasoning.extend(piece.reasoning)
            items.extend(piece.provider_items)
            message_usage = piece.usage or message_usage
            if piece.metadata:
                message_metadata.update(piece.metadata)
            finish = generation.finish_reason or finish
        usage = combine_usage(usage, chunk.usage)
        model = chunk.model or model
        exchange = chunk.exchange or exchange
        metadata = chunk.metadata or metadata
    message = AssistantMessage(
        "".join(text),
        tool_calls=calls,
        reasoning=reasoning,
        provider_items=items,
        usage=message_usage,
        metadata=message_metadata,
    )
    return ChatResponse([Generation(message, finish)], usage, model, exchange, metadata)
