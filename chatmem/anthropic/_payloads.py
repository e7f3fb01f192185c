"""Messages API requests and responses for the Anthropic chat model, both ways. No I/O."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import anthropic

from chatmem._provider_errors import map_sdk_error
from chatmem.exceptions import ChatModelError, ChatModelResponseError
from chatmem.interop.anthropic import from_anthropic, to_anthropic, usage_from_anthropic
from chatmem.messages import AssistantMessage
from chatmem.model import (
    ChatModelConnectionError,
    ChatOptions,
    ChatResponse,
    Generation,
    Prompt,
    ToolDefinition,
)

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "INTERLEAVED_THINKING_BETA",
    "AnthropicSettings",
    "StreamAssembler",
    "finish_reason",
    "from_message",
    "map_error",
    "request_kwargs",
]

DEFAULT_MAX_TOKENS = 4096
"""Tokens an answer may take when the options set no ``max_tokens`` (the API needs one); with
extended thinking, added to the thinking budget."""

INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
"""The ``anthropic-beta`` value that lets the model think between tool calls."""

_CACHE_BREAKPOINT: dict[str, Any] = {"type": "ephemeral"}

# Anthropic's stop reasons, in the client's (Chat Completions') finish reasons; others pass
# through as they are.
_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}

# Blocks that cannot carry a cache breakpoint.
_UNCACHEABLE = frozenset({"thinking", "redacted_thinking"})


class AnthropicSettings:
    """What the Anthropic model adds to every request beyond :class:`~chatmem.ChatOptions`.

    Args:
        thinking_budget: Tokens the model may think before answering (extended thinking);
            None sends no ``thinking`` parameter.
        interleaved_thinking: Let the model think between tool calls too (a beta header).
        prompt_caching: Place cache breakpoints on the system prompt and on the last message.
    """

    __slots__ = ("interleaved_thinking", "prompt_caching", "thinking_budget")

    def __init__(
        self, *, thinking_budget: int | None, interleaved_thinking: bool, prompt_caching: bool
    ) -> None:
        self.thinking_budget = thinking_budget
        self.interleaved_thinking = interleaved_thinking
        self.prompt_caching = prompt_caching


def finish_reason(stop_reason: str | None) -> str | None:
    """The client's finish reason for an Anthropic stop reason.

    Args:
        stop_reason: ``end_turn``, ``tool_use``, ``max_tokens``...; None if there is none.
    """
    if stop_reason is None:
        return None
    return _FINISH_REASONS.get(stop_reason, stop_reason)


def _tools(tools: Sequence[ToolDefinition]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
        for t in tools
    ]


def _tool_choice(choice: str | Mapping[str, Any] | None, parallel: bool | None) -> dict[str, Any]:
    if choice is None:
        out: dict[str, Any] = {"type": "auto"}
    elif isinstance(choice, str):
        out = {"type": {"required": "any"}.get(choice, choice)}
    else:
        out = dict(choice)
    if parallel is False and out["type"] != "none":
        out["disable_parallel_tool_use"] = True
    return out


def _with_breakpoint(message: dict[str, Any]) -> dict[str, Any]:
    content = message["content"]
    if isinstance(content, str):
        if not content:
            return message
        return {
            **message,
            "content": [{"type": "text", "text": content, "cache_control": _CACHE_BREAKPOINT}],
        }
    blocks = list(content)
    for position in range(len(blocks) - 1, -1, -1):
        block = blocks[position]
        if block.get("type") in _UNCACHEABLE or (
            block.get("type") == "text" and not block.get("text")
        ):
            continue
        blocks[position] = {**block, "cache_control": _CACHE_BREAKPOINT}
        return {**message, "content": blocks}
    return message


def _cached(payload: dict[str, Any]) -> dict[str, Any]:
    # Two breakpoints: the system prompt (with the tools before it, the part every request of
    # a conversation shares) and the last message. The conversation so far is the prefix of
    # the next request (the next tool round or turn only adds to it), so the next request
    # reads it from the cache, until the window drops its oldest messages and only the system
    # prompt's breakpoint still matches.
    system = payload.get("system")
    if system:
        payload["system"] = [{"type": "text", "text": system, "cache_control": _CACHE_BREAKPOINT}]
    messages = payload["messages"]
    if messages:
        messages[-1] = _with_breakpoint(messages[-1])
    return payload


def request_kwargs(
    prompt: Prompt, defaults: ChatOptions, settings: AnthropicSettings
) -> dict[str, Any]:
    """Build the keyword arguments of ``messages.create`` for a prompt.

    Reasoning parts and provider items of other providers are left out (the sending rule);
    Anthropic's are sent back unchanged, in their order. Options the API has no field for
    (penalties, seed) are not sent; ``temperature`` and ``top_p``, which the SDK no longer
    takes, are sent in the body when set.

    Args:
        prompt: The prompt.
        defaults: The model's default options; the prompt's options win.
        settings: Thinking and caching.
    """
    options = defaults.merge(prompt.options)
    # What the API can hold: message ids, times and metadata are never part of a request.
    payload = to_anthropic(prompt.messages, lossy=True)
    if settings.prompt_caching:
        payload = _cached(payload)
    budget = settings.thinking_budget
    max_tokens = options.max_tokens or DEFAULT_MAX_TOKENS + (budget or 0)
    kwargs: dict[str, Any] = {"model": options.model, "max_tokens": max_tokens, **payload}
    if budget is not None:
        kwargs["thinking"] = {"type": "enabled", "budget_tokens": budget}
    # The SDK has no parameter for the sampling options any more (newer models fix them):
    # sent in the body when set, where a model that refuses them says so.
    body: dict[str, Any] = {
        name: value
        for name in ("temperature", "top_p")
        if (value := getattr(options, name)) is not None
    }
    if options.stop is not None:
        kwargs["stop_sequences"] = list(options.stop)
    if prompt.tools:
        kwargs["tools"] = _tools(prompt.tools)
        if options.tool_choice is not None or options.parallel_tool_calls is not None:
            kwargs["tool_choice"] = _tool_choice(options.tool_choice, options.parallel_tool_calls)
    if options.response_format is not None:
        schema = dict(options.response_format).get("schema", {})
        kwargs["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    if settings.interleaved_thinking:
        kwargs["extra_headers"] = {"anthropic-beta": INTERLEAVED_THINKING_BETA}
    body.update(options.extra)
    if body:
        kwargs["extra_body"] = body
    return kwargs


def from_message(body: Mapping[str, Any]) -> ChatResponse:
    """Convert a Messages API response (its JSON) to a response.

    The answer holds the text, the tool calls, the thinking blocks as reasoning parts (with
    their signatures, in their order) and any other block as a provider item, and its
    token usage.

    Args:
        body: The response JSON.

    Raises:
        ChatModelResponseError: If it is not an assistant message.
    """
    if body.get("type") != "message" or body.get("role") != "assistant":
        raise ChatModelResponseError(f"the provider returned no assistant message: {body!r:.200}")
    model = body.get("model")
    (message,) = from_anthropic([body], model=model, lossy=True)
    assert isinstance(message, AssistantMessage)
    finish = finish_reason(body.get("stop_reason"))
    metadata = {"id": body.get("id")} if body.get("id") else {}
    return ChatResponse([Generation(message, finish)], message.usage, model, (), metadata)


def _plain(item: Any) -> dict[str, Any]:
    # An SDK event's part as the API sent it (see chatmem.interop.anthropic).
    dumped: dict[str, Any] = item.model_dump(mode="json", exclude_unset=True, warnings=False)
    return dumped


class StreamAssembler:
    """Turns Messages API stream events into chatmem stream chunks.

    Text deltas pass through as they come. Thinking, its signature and tool-call arguments
    are assembled per content block; when the message stops, one last chunk carries the
    tool calls, the reasoning parts and provider items (in their order) and the usage, with
    the finish reason. A stream is complete only once ``message_stop`` has come:
    :meth:`finish` raises otherwise, and nothing assembled so far is emitted.
    """

    def __init__(self) -> None:
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, str] = {}
        self._start: dict[str, Any] = {}
        self._usage: dict[str, Any] = {}
        self._stop_reason: str | None = None
        self._model: str | None = None
        self._finished = False

    def feed(self, event: Any) -> list[ChatResponse]:
        """Take one SDK stream event and return the chatmem chunks it completes.

        Args:
            event: A raw ``message_start``, ``content_block_*``, ``message_delta`` or
                ``message_stop`` event.
        """
        kind = event.type
        if kind == "message_start":
            self._start = _plain(event.message)
            self._model = self._start.get("model")
            self._usage = dict(self._start.get("usage") or {})
        elif kind == "content_block_start":
            self._blocks[event.index] = _plain(event.content_block)
        elif kind == "content_block_delta":
            return self._delta(event.index, _plain(event.delta))
        elif kind == "content_block_stop":
            self._close(event.index)
        elif kind == "message_delta":
            self._stop_reason = event.delta.stop_reason or self._stop_reason
            usage = {k: v for k, v in _plain(event.usage).items() if v is not None}
            self._usage.update(usage)
        elif kind == "message_stop":
            self._finished = True
            return [self._last_chunk()]
        return []

    def _delta(self, index: int, delta: dict[str, Any]) -> list[ChatResponse]:
        block = self._blocks.setdefault(index, {"type": "text", "text": ""})
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta["text"]
            message = AssistantMessage(delta["text"])
            return [ChatResponse([Generation(message)], model=self._model)]
        if kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta["thinking"]
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + delta["signature"]
        elif kind == "input_json_delta":
            self._json[index] = self._json.get(index, "") + delta["partial_json"]
        return []

    def _close(self, index: int) -> None:
        if index in self._json:
            text = self._json.pop(index)
            try:
                self._blocks[index]["input"] = json.loads(text) if text else {}
            except ValueError as exc:
                raise ChatModelResponseError(
                    f"the provider streamed tool input that is not JSON: {text[:60]!r}"
                ) from exc

    def _last_chunk(self) -> ChatResponse:
        blocks = [self._blocks[i] for i in sorted(self._blocks)]
        body = {**self._start, "content": blocks, "usage": self._usage}
        (whole,) = from_anthropic([body], model=self._model, lossy=True)
        assert isinstance(whole, AssistantMessage)
        # The text has been streamed already: the last chunk adds everything else.
        message = AssistantMessage(
            "",
            tool_calls=whole.tool_calls,
            reasoning=whole.reasoning,
            provider_items=whole.provider_items,
            usage=usage_from_anthropic(self._usage),
        )
        generation = Generation(message, finish_reason(self._stop_reason))
        metadata = {"id": self._start["id"]} if self._start.get("id") else {}
        return ChatResponse([generation], message.usage, self._model, (), metadata)

    def finish(self) -> None:
        """Check that the stream that just ended carried ``message_stop``.

        Raises:
            ChatModelConnectionError: If it did not: the connection was cut or the server
                stopped, so the answer is incomplete (a thinking block may lack its
                signature, a tool call its arguments). Like a body cut mid-transfer, the
                request can be retried.
        """
        if not self._finished:
            raise ChatModelConnectionError(
                "the stream ended before the provider finished the answer (no message_stop); "
                "the connection was cut or the server stopped"
            )


def map_error(exc: BaseException) -> ChatModelError | None:
    """Map an ``anthropic`` (or its HTTP library's) error to chatmem's ``ChatModelError`` branch.

    Args:
        exc: The error.

    Returns:
        The chatmem error to raise (``from exc``), or ``None`` if ``exc`` is not a provider
        or transport error.
    """
    return map_sdk_error(exc, anthropic, anthropic.AnthropicError)
