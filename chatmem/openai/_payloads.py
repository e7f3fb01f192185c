"""Conversion between chatmem messages and Chat Completions payloads, both ways. No I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import openai

from chatmem._provider_errors import map_sdk_error
from chatmem.exceptions import ChatModelError, ChatModelResponseError
from chatmem.interop.openai import to_openai
from chatmem.messages import (
    AssistantMessage,
    Message,
    TokenUsage,
    ToolCall,
)
from chatmem.model import (
    ChatModelConnectionError,
    ChatOptions,
    ChatResponse,
    Generation,
    Prompt,
    ToolDefinition,
)

__all__ = [
    "StreamAssembler",
    "from_completion",
    "map_error",
    "request_kwargs",
    "to_openai_messages",
    "to_openai_tools",
]


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Convert messages to the ``messages`` array (one tool message per tool response).

    Args:
        messages: The messages, oldest first.
    """
    # The model sends what the API can hold: the public converter, leaving out the rest
    # (message ids, times and metadata are never part of a request).
    return to_openai(messages, lossy=True)


def to_openai_tools(tools: Sequence[ToolDefinition]) -> list[dict[str, Any]]:
    """Convert tool definitions to the ``tools`` array.

    Args:
        tools: The definitions.
    """
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
            },
        }
        for t in tools
    ]


def _response_format(spec: Mapping[str, Any]) -> dict[str, Any]:
    schema = {"name": spec.get("name", "response"), "schema": spec.get("schema", {})}
    if "strict" in spec:
        schema["strict"] = spec["strict"]
    return {"type": "json_schema", "json_schema": schema}


def request_kwargs(prompt: Prompt, defaults: ChatOptions) -> dict[str, Any]:
    """Build the keyword arguments of ``chat.completions.create`` for a prompt.

    Args:
        prompt: The prompt.
        defaults: The model's default options; the prompt's options win.
    """
    options = defaults.merge(prompt.options)
    kwargs: dict[str, Any] = {
        "model": options.model,
        "messages": to_openai_messages(prompt.messages),
    }
    for name in ("temperature", "max_tokens", "top_p", "frequency_penalty", "presence_penalty"):
        value = getattr(options, name)
        if value is not None:
            kwargs[name] = value
    if options.stop is not None:
        kwargs["stop"] = list(options.stop)
    if options.seed is not None:
        kwargs["seed"] = options.seed
    if prompt.tools:
        kwargs["tools"] = to_openai_tools(prompt.tools)
        if options.tool_choice is not None:
            kwargs["tool_choice"] = options.tool_choice
        if options.parallel_tool_calls is not None:
            kwargs["parallel_tool_calls"] = options.parallel_tool_calls
    if options.response_format is not None:
        kwargs["response_format"] = _response_format(options.response_format)
    if options.extra:
        kwargs["extra_body"] = dict(options.extra)
    return kwargs


def _usage(usage: Any) -> TokenUsage | None:
    if usage is None:
        return None
    completion = getattr(usage, "completion_tokens_details", None)
    prompt = getattr(usage, "prompt_tokens_details", None)
    return TokenUsage(
        input_tokens=int(usage.prompt_tokens or 0),
        output_tokens=int(usage.completion_tokens or 0),
        reasoning_tokens=int(getattr(completion, "reasoning_tokens", None) or 0),
        cache_read_tokens=int(getattr(prompt, "cached_tokens", None) or 0),
    )


def from_completion(completion: Any) -> ChatResponse:
    """Convert a ``ChatCompletion`` to a response.

    Args:
        completion: The SDK's completion object.

    Raises:
        ChatModelResponseError: If it has no choices.
    """
    if not completion.choices:
        raise ChatModelResponseError("the provider returned no choices")
    generations = []
    usage = _usage(completion.usage)
    # The usage is the answer's own when there is one answer (several choices share it).
    answer_usage = usage if len(completion.choices) == 1 else None
    for choice in completion.choices:
        calls = [
            ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments or "")
            for c in (choice.message.tool_calls or [])
            if getattr(c, "function", None) is not None
        ]
        message = AssistantMessage(
            choice.message.content or "", tool_calls=calls, usage=answer_usage
        )
        generations.append(Generation(message, choice.finish_reason))
    metadata = {"id": completion.id}
    return ChatResponse(generations, usage, completion.model, (), metadata)


class StreamAssembler:
    """Turns ``ChatCompletionChunk`` objects into chatmem stream chunks.

    Text deltas pass through as they come. Tool-call deltas are assembled by index (the id
    and name arrive first, the arguments in pieces) and emitted whole with the finish reason.
    A stream is complete only once that finish reason has come: :meth:`finish` raises
    otherwise, and tool calls still being assembled are never emitted.
    """

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, str]] = {}
        self._model: str | None = None
        self._finished = False

    def feed(self, chunk: Any) -> list[ChatResponse]:
        """Take one SDK chunk and return the chatmem chunks it completes.

        Args:
            chunk: A ``ChatCompletionChunk``.
        """
        self._model = chunk.model or self._model
        out: list[ChatResponse] = []
        for choice in chunk.choices[:1]:
            delta = choice.delta
            for call in delta.tool_calls or []:
                slot = self._calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] = call.id or slot["id"]
                if call.function is not None:
                    slot["name"] = call.function.name or slot["name"]
                    slot["arguments"] += call.function.arguments or ""
            if delta.content:
                message = AssistantMessage(delta.content)
                out.append(ChatResponse([Generation(message)], model=self._model))
            if choice.finish_reason is not None:
                self._finished = True
                out.append(self._calls_chunk(choice.finish_reason))
        if chunk.usage is not None:
            # Usage comes last, after the finish reason, in a chunk of its own; it is carried
            # by an empty piece of the answer too, so the folded answer stores it.
            usage = _usage(chunk.usage)
            piece = AssistantMessage(usage=usage)
            out.append(ChatResponse([Generation(piece)], usage, self._model))
        return out

    def _calls_chunk(self, finish_reason: str) -> ChatResponse:
        calls = [
            ToolCall(id=slot["id"], name=slot["name"], arguments=slot["arguments"])
            for _, slot in sorted(self._calls.items())
        ]
        self._calls = {}
        message = AssistantMessage("", tool_calls=calls)
        return ChatResponse([Generation(message, finish_reason)], model=self._model)

    def finish(self) -> None:
        """Check that the stream that just ended carried a finish reason.

        Raises:
            ChatModelConnectionError: If it did not. The provider sends the finish reason
                before usage and ``[DONE]``, so a stream without one was cut off: the answer
                is incomplete and any tool call in it may be missing arguments. It is the
                error of a body cut mid-transfer, which the HTTP layer reports the same way,
                and like it the request can be retried.
        """
        if not self._finished:
            pending = f" with {len(self._calls)} tool call(s) unfinished" if self._calls else ""
            raise ChatModelConnectionError(
                f"the stream ended before the provider finished the answer (no finish_reason)"
                f"{pending}; the connection was cut or the server stopped"
            )


def map_error(exc: BaseException) -> ChatModelError | None:
    """Map an ``openai`` (or its HTTP library's) error to chatmem's ``ChatModelError`` branch.

    Args:
        exc: The error.

    Returns:
        The chatmem error to raise (``from exc``), or ``None`` if ``exc`` is not a provider
        or transport error.
    """
    return map_sdk_error(exc, openai, openai.OpenAIError)
