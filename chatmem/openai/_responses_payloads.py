"""Conversion between chatmem prompts and Responses API requests, responses and events. No I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import JsonValue

from chatmem.exceptions import ChatModelResponseError, ConfigurationError
from chatmem.interop.openai_responses import from_responses, to_responses
from chatmem.messages import AssistantMessage, TokenUsage
from chatmem.model import (
    ChatModelConnectionError,
    ChatOptions,
    ChatResponse,
    Generation,
    Prompt,
    ToolDefinition,
)

__all__ = [
    "ResponsesStreamAssembler",
    "from_response",
    "responses_request",
    "to_responses_tools",
]

# Options of the Chat Completions API that the Responses API does not take.
_NOT_IN_RESPONSES = ("stop", "seed", "frequency_penalty", "presence_penalty")

_INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}


def to_responses_tools(tools: Sequence[ToolDefinition]) -> list[dict[str, Any]]:
    """Convert tool definitions to the Responses API ``tools`` array (function tools).

    Args:
        tools: The definitions.
    """
    return [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": dict(t.parameters),
            "strict": False,
        }
        for t in tools
    ]


def _text_format(spec: Mapping[str, Any]) -> dict[str, Any]:
    schema = {"type": "json_schema", "name": spec.get("name", "response")}
    schema["schema"] = spec.get("schema", {})
    if "strict" in spec:
        schema["strict"] = spec["strict"]
    return {"format": schema}


def _tool_choice(choice: str | Mapping[str, JsonValue]) -> str | dict[str, JsonValue]:
    # A function named the Chat Completions way ({"type": "function", "function": {"name":
    # ...}}) is named the Responses way ({"type": "function", "name": ...}).
    if isinstance(choice, str):
        return choice
    function = choice.get("function")
    if choice.get("type") == "function" and isinstance(function, Mapping) and "name" in function:
        return {"type": "function", "name": function["name"]}
    return dict(choice)


def responses_request(
    prompt: Prompt,
    defaults: ChatOptions,
    *,
    store: bool,
    reasoning: Mapping[str, JsonValue] | None,
) -> dict[str, Any]:
    """Build the keyword arguments of ``responses.create`` for a prompt.

    Stateless unless ``store``: the whole conversation goes in ``input`` (chatmem holds it,
    no ``previous_response_id``), reasoning items come back encrypted and go back as they
    came, without item ids (nothing was stored to look them up in).

    Args:
        prompt: The prompt.
        defaults: The model's default options; the prompt's options win.
        store: Whether the provider stores the response.
        reasoning: The ``reasoning`` configuration (effort, summary), if any.

    Raises:
        ConfigurationError: If an option the Responses API does not take is set.
    """
    options = defaults.merge(prompt.options)
    unsupported = [name for name in _NOT_IN_RESPONSES if getattr(options, name) is not None]
    if unsupported:
        raise ConfigurationError(
            f"the OpenAI Responses API takes no {', '.join(unsupported)} option"
        )
    kwargs: dict[str, Any] = {
        "model": options.model,
        "input": to_responses(prompt.messages, lossy=True, item_ids=store),
        "store": store,
    }
    if not store:
        kwargs["include"] = ["reasoning.encrypted_content"]
    if reasoning is not None:
        kwargs["reasoning"] = dict(reasoning)
    for name in ("temperature", "top_p"):
        if (value := getattr(options, name)) is not None:
            kwargs[name] = value
    if options.max_tokens is not None:
        kwargs["max_output_tokens"] = options.max_tokens
    if prompt.tools:
        kwargs["tools"] = to_responses_tools(prompt.tools)
        if options.tool_choice is not None:
            kwargs["tool_choice"] = _tool_choice(options.tool_choice)
        if options.parallel_tool_calls is not None:
            kwargs["parallel_tool_calls"] = options.parallel_tool_calls
    if options.response_format is not None:
        kwargs["text"] = _text_format(options.response_format)
    if options.extra:
        kwargs["extra_body"] = dict(options.extra)
    return kwargs


def _get(value: Any, name: str) -> Any:
    # SDK objects and dicts alike (an SDK built before a field existed keeps it as an extra).
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def token_usage(usage: Any) -> TokenUsage | None:
    """Convert a response's ``usage`` to a :class:`~chatmem.messages.TokenUsage`.

    Args:
        usage: The SDK's ``ResponseUsage``, or ``None``.
    """
    if usage is None:
        return None
    return TokenUsage(
        input_tokens=int(_get(usage, "input_tokens") or 0),
        output_tokens=int(_get(usage, "output_tokens") or 0),
        reasoning_tokens=int(_get(_get(usage, "output_tokens_details"), "reasoning_tokens") or 0),
        cache_read_tokens=int(_get(_get(usage, "input_tokens_details"), "cached_tokens") or 0),
    )


def _finish_reason(response: Any, message: AssistantMessage) -> str:
    status = _get(response, "status")
    if status in ("failed", "cancelled"):
        error = _get(response, "error")
        detail = _get(error, "message") or status
        raise ChatModelResponseError(f"the provider's response {status}: {detail}")
    if status == "incomplete":
        reason = _get(_get(response, "incomplete_details"), "reason")
        return _INCOMPLETE_REASONS.get(str(reason), str(reason or "incomplete"))
    return "tool_calls" if message.tool_calls else "stop"


def _answer(output: Sequence[Any], model: str | None, usage: TokenUsage | None) -> AssistantMessage:
    messages = from_responses(output, model=model, lossy=True)
    if len(messages) > 1 or (messages and not isinstance(messages[0], AssistantMessage)):
        raise ChatModelResponseError("the provider's output is not one assistant turn")
    message = messages[0] if messages else AssistantMessage("")
    assert isinstance(message, AssistantMessage)
    return message.model_copy(update={"usage": usage}) if usage is not None else message


def from_response(response: Any) -> ChatResponse:
    """Convert a Responses API ``Response`` to a chatmem response.

    The output items become one assistant message: text, tool calls, reasoning parts and
    provider items in their order, with the token usage.

    Args:
        response: The SDK's response object.

    Raises:
        ChatModelResponseError: If the response failed or its output is not one turn.
    """
    model = _get(response, "model")
    usage = token_usage(_get(response, "usage"))
    message = _answer(_get(response, "output") or [], model, usage)
    generation = Generation(message, _finish_reason(response, message))
    metadata: dict[str, JsonValue] = {"id": _get(response, "id")}
    return ChatResponse([generation], usage, model, (), metadata)


class ResponsesStreamAssembler:
    """Turns Responses API stream events into chatmem stream chunks.

    Text deltas pass through as they come. Every other item (reasoning, function calls,
    compaction) is taken whole from its ``response.output_item.done`` event and emitted,
    in the provider's order, in the last chunk with the finish reason and token usage, once
    ``response.completed`` (or ``response.incomplete``) has come. A stream that ends before
    that was cut off: :meth:`finish` raises.
    """

    def __init__(self) -> None:
        self._items: dict[int, Any] = {}
        self._text: list[str] = []
        self._model: str | None = None
        self._id: str | None = None
        self._finished = False

    def feed(self, event: Any) -> list[ChatResponse]:
        """Take one SDK stream event and return the chatmem chunks it completes.

        Args:
            event: A ``ResponseStreamEvent``.

        Raises:
            ChatModelResponseError: On an ``error`` or ``response.failed`` event.
        """
        kind = _get(event, "type")
        if kind == "response.output_text.delta":
            delta = str(_get(event, "delta") or "")
            self._text.append(delta)
            if delta:
                return [ChatResponse([Generation(AssistantMessage(delta))], model=self._model)]
        elif kind in ("response.output_item.added", "response.output_item.done"):
            # The done event carries the whole item (reasoning's encrypted content is final
            # only there); the added event keeps its place if done never comes.
            self._items[int(_get(event, "output_index") or 0)] = _get(event, "item")
        elif kind in ("response.created", "response.in_progress"):
            self._started(_get(event, "response"))
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            return [self._last(_get(event, "response"))]
        elif kind == "error":
            message = _get(event, "message") or "unknown error"
            raise ChatModelResponseError(
                f"the provider failed mid-stream: {message} (code {_get(event, 'code')!r})"
            )
        return []

    def _started(self, response: Any) -> None:
        self._model = _get(response, "model") or self._model
        self._id = _get(response, "id") or self._id

    def _last(self, response: Any) -> ChatResponse:
        self._started(response)
        output = _get(response, "output") or [self._items[i] for i in sorted(self._items)]
        usage = token_usage(_get(response, "usage"))
        message = _answer(output, self._model, usage)
        finish = _finish_reason(response, message)
        self._finished = True
        # The text went out in the deltas; what they did not carry comes now.
        streamed = "".join(self._text)
        rest = message.text[len(streamed) :] if message.text.startswith(streamed) else ""
        last = message.model_copy(update={"text": rest})
        metadata: dict[str, JsonValue] = {"id": self._id}
        return ChatResponse([Generation(last, finish)], usage, self._model, (), metadata)

    def finish(self) -> None:
        """Check that the stream that just ended completed the response.

        Raises:
            ChatModelConnectionError: If no ``response.completed`` came: the connection was
                cut or the server stopped, the answer is incomplete and its reasoning and
                tool calls are never emitted. Like a body cut mid-transfer, the request can
                be retried.
        """
        if not self._finished:
            raise ChatModelConnectionError(
                "the stream ended before the provider completed the response "
                f"(no response.completed; {len(self._items)} output item(s) begun); "
                "the connection was cut or the server stopped"
            )
