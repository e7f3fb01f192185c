"""What :class:`~chatmem.testing.OpenAITestServer` speaks on ``POST /v1/responses``.

OpenAI's Responses API, as far as chat models use it: scripted output items (reasoning,
assistant messages, function calls, compaction), whole or as an SSE stream of the API's event
types, token usage, HTTP errors in OpenAI's error shape, an ``error`` event mid-stream and a
stream cut short. Requests are checked the way the API checks them in stateless use: every
function call answered, reasoning items sent back with the encrypted content this server
issued (byte for byte), and no item ids when ``store`` is false.

Example:
    ```python
    with OpenAITestServer() as server:
        call = function_call_item("call_1", "weather", "{}")
        server.reply_response(ScriptedResponse([reasoning_item("Look it up."), call]))
        model = OpenAIResponsesChatModel(base_url=server.base_url, api_key="test")
        ...
        server.responses_requests[0]["input"]
    ```
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ScriptedResponse",
    "compaction_item",
    "function_call_item",
    "message_item",
    "reasoning_item",
    "response_body",
    "response_events",
    "validate_responses_input",
]

_numbers = itertools.count(1)


def _next_id(prefix: str) -> str:
    return f"{prefix}_{next(_numbers):04d}"


def reasoning_item(*summary: str, encrypted_content: str | None = None) -> dict[str, Any]:
    """A ``reasoning`` output item with a new id and, by default, new encrypted content.

    Args:
        *summary: The summary parts' texts.
        encrypted_content: The opaque reasoning; a unique value by default.
    """
    item_id = _next_id("rs")
    return {
        "type": "reasoning",
        "id": item_id,
        "summary": [{"type": "summary_text", "text": text} for text in summary],
        "encrypted_content": encrypted_content or f"gAAAAB{item_id}-opaque+/=",
    }


def message_item(text: str) -> dict[str, Any]:
    """An assistant ``message`` output item.

    Args:
        text: The answer text.
    """
    return {
        "type": "message",
        "id": _next_id("msg"),
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def function_call_item(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """A ``function_call`` output item.

    Args:
        call_id: The id the tool result answers.
        name: The tool's name.
        arguments: The arguments, as JSON text.
    """
    return {
        "type": "function_call",
        "id": _next_id("fc"),
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def compaction_item() -> dict[str, Any]:
    """A ``compaction`` output item (opaque, replayed verbatim)."""
    item_id = _next_id("cmp")
    return {"type": "compaction", "id": item_id, "encrypted_content": f"cmp-{item_id}-opaque"}


@dataclass(frozen=True)
class ScriptedResponse:
    """One scripted answer of the responses route."""

    output: Sequence[Mapping[str, Any]] = ()
    """The output items, in order (see :func:`reasoning_item` and its siblings)."""
    status: int = 200
    """An HTTP error status to answer with instead (with ``error_message``)."""
    error_message: str = "scripted error"
    """The error message of an error answer."""
    incomplete_reason: str | None = None
    """Answer ``status: incomplete`` with this reason (``max_output_tokens``, ...)."""
    delay: float = 0.0
    """Seconds to wait before answering."""
    chunk_delay: float = 0.0
    """Seconds to wait between streamed events."""
    fail_after_events: int | None = None
    """In a stream, send an ``error`` event after that many events."""
    truncate_after: int | None = None
    """In a stream, end the response after that many events, as a dropped connection
    would: no ``response.completed``."""
    usage: Mapping[str, int] = field(
        default_factory=lambda: {"input": 20, "output": 12, "reasoning": 8, "cached": 4}
    )
    """Tokens reported: ``input``, ``output``, ``reasoning`` (of output), ``cached`` (of
    input)."""


def _usage(script: ScriptedResponse) -> dict[str, Any]:
    usage = script.usage
    return {
        "input_tokens": usage.get("input", 0),
        "input_tokens_details": {"cached_tokens": usage.get("cached", 0)},
        "output_tokens": usage.get("output", 0),
        "output_tokens_details": {"reasoning_tokens": usage.get("reasoning", 0)},
        "total_tokens": usage.get("input", 0) + usage.get("output", 0),
    }


def response_body(
    script: ScriptedResponse, request: Mapping[str, Any], response_id: str
) -> dict[str, Any]:
    """The ``Response`` object a scripted answer stands for.

    Args:
        script: The scripted answer.
        request: The request body.
        response_id: The response's id.
    """
    incomplete = script.incomplete_reason
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "model": str(request.get("model")),
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "error": None,
        "output": [dict(item) for item in script.output],
        "usage": _usage(script),
        "store": bool(request.get("store", True)),
        "parallel_tool_calls": True,
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools", []),
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)] or [""]


def _item_events(index: int, item: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    kind = item.get("type")
    opening: dict[str, Any] = {**item}
    if kind == "reasoning":
        opening = {**item, "summary": []}
        opening.pop("encrypted_content", None)  # final only in the done event
    elif kind == "message":
        opening = {**item, "content": [], "status": "in_progress"}
    elif kind == "function_call":
        opening = {**item, "arguments": "", "status": "in_progress"}
    yield {"type": "response.output_item.added", "output_index": index, "item": opening}
    where = {"item_id": item.get("id"), "output_index": index}
    if kind == "reasoning":
        for number, part in enumerate(item.get("summary", [])):
            for piece in _pieces(part["text"], 5):
                yield {
                    "type": "response.reasoning_summary_text.delta",
                    **where,
                    "summary_index": number,
                    "delta": piece,
                }
            yield {
                "type": "response.reasoning_summary_text.done",
                **where,
                "summary_index": number,
                "text": part["text"],
            }
    elif kind == "message":
        for number, part in enumerate(item.get("content", [])):
            text = part.get("text", "")
            words = text.split(" ")
            for position, word in enumerate(words):
                delta = word if position == 0 else " " + word
                yield {
                    "type": "response.output_text.delta",
                    **where,
                    "content_index": number,
                    "delta": delta,
                }
            yield {
                "type": "response.output_text.done",
                **where,
                "content_index": number,
                "text": text,
            }
    elif kind == "function_call":
        arguments = str(item.get("arguments", ""))
        for piece in _pieces(arguments, 7):
            yield {"type": "response.function_call_arguments.delta", **where, "delta": piece}
        yield {"type": "response.function_call_arguments.done", **where, "arguments": arguments}
    yield {"type": "response.output_item.done", "output_index": index, "item": dict(item)}


def response_events(
    script: ScriptedResponse, request: Mapping[str, Any], response_id: str
) -> Iterator[dict[str, Any]]:
    """The SSE events of a streamed scripted answer, numbered as the API numbers them.

    Args:
        script: The scripted answer.
        request: The request body.
        response_id: The response's id.
    """
    whole = response_body(script, request, response_id)
    started = {**whole, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
    ]
    for index, item in enumerate(script.output):
        events.extend(_item_events(index, item))
    final = "response.incomplete" if script.incomplete_reason else "response.completed"
    events.append({"type": final, "response": whole})
    for number, event in enumerate(events):
        if script.truncate_after is not None and number == script.truncate_after:
            return
        if script.fail_after_events is not None and number == script.fail_after_events:
            yield {
                "type": "error",
                "code": "server_error",
                "message": "scripted failure mid-stream",
                "param": None,
                "sequence_number": number,
            }
            return
        yield {**event, "sequence_number": number}


def _reasoning_problem(
    items: list[Any], index: int, store: bool, issued: Mapping[str, str]
) -> str | None:
    content = items[index].get("encrypted_content")
    if content is None and not store:
        return f"Reasoning item input[{index}] has no encrypted_content"
    if content is not None and content not in issued:
        return f"The encrypted content of reasoning item input[{index}] could not be verified."
    following = items[index + 1] if index + 1 < len(items) else None
    if (
        not isinstance(following, dict)
        or following.get("type", "message") not in ("reasoning", "function_call", "message")
        or following.get("role", "assistant") != "assistant"
    ):
        return (
            f"Item input[{index}] of type 'reasoning' was provided without its required "
            "following item."
        )
    return None


def validate_responses_input(
    items: object, *, store: bool, issued: Mapping[str, str]
) -> str | None:
    """Check a request's ``input`` the way the Responses API does in stateless use.

    Args:
        items: The request's ``input`` value.
        store: The request's ``store`` value.
        issued: Encrypted reasoning this server handed out -> the reasoning item's id.

    Returns:
        ``None`` if it is valid, else the error message the API would give.
    """
    if isinstance(items, str):
        return None
    if not isinstance(items, list) or not items:
        return "'input' must be a string or a non-empty array"
    calls: set[str] = set()
    answered: set[str] = set()
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            return f"Invalid type for 'input[{index}]': expected an object"
        kind = item.get("type", "message")
        if not store and item.get("id") is not None and kind != "compaction":
            return (
                f"Item with id '{item['id']}' not found. Items are not persisted when `store` "
                "is set to false. Try again with `store` set to true, or remove this item "
                "from your input."
            )
        problem = None
        if kind == "reasoning":
            problem = _reasoning_problem(items, index, store, issued)
        elif kind == "function_call":
            calls.add(str(item.get("call_id")))
        elif kind == "function_call_output":
            answered.add(call_id := str(item.get("call_id")))
            if call_id not in calls:
                problem = f"No tool call found for function call output with call_id {call_id}."
        if problem:
            return problem
    missing = sorted(calls - answered)
    if missing:
        return f"No tool output found for function call {missing[0]}."
    return None
