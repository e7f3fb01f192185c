"""Message content as the GenAI conventions record it (only when content capture is on).

``gen_ai.input.messages`` and ``gen_ai.output.messages`` are JSON arrays of
``{"role", "parts": [...]}`` objects; a part is ``text``, ``tool_call`` or
``tool_call_response``. Media is described by type and name, never inlined.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from chatmem.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResponseMessage,
    UserMessage,
)

if TYPE_CHECKING:
    from chatmem.model import ChatResponse

__all__ = ["messages_json", "output_json"]


def _arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _parts(message: Message) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if isinstance(message, SystemMessage | UserMessage | AssistantMessage) and message.text:
        parts.append({"type": "text", "content": message.text})
    if isinstance(message, UserMessage | AssistantMessage):
        parts.extend(
            {"type": "blob", "mime_type": m.mime_type, "name": m.name} for m in message.media
        )
    if isinstance(message, AssistantMessage):
        parts.extend(
            {
                "type": "tool_call",
                "id": c.id,
                "name": c.name,
                "arguments": _arguments(c.arguments),
            }
            for c in message.tool_calls
        )
    if isinstance(message, ToolResponseMessage):
        parts.extend(
            {"type": "tool_call_response", "id": r.id, "response": r.response_data}
            for r in message.responses
        )
    return parts


def _entry(message: Message) -> dict[str, Any]:
    return {"role": message.type.value, "parts": _parts(message)}


def messages_json(messages: Sequence[Message]) -> str:
    """The ``gen_ai.input.messages`` value of a prompt's messages."""
    return json.dumps([_entry(m) for m in messages], ensure_ascii=False)


def output_json(messages: Sequence[Message], response: ChatResponse) -> str:
    """The ``gen_ai.output.messages`` value: what the exchange produced, with the finish reason.

    The final assistant message carries the response's finish reason; earlier assistant
    messages of a tool loop carry ``tool_call``.
    """
    entries = [_entry(m) for m in messages]
    assistants = [e for e in entries if e["role"] == "assistant"]
    for entry in assistants[:-1]:
        entry["finish_reason"] = "tool_call"
    if assistants:
        assistants[-1]["finish_reason"] = response.finish_reason or "stop"
    return json.dumps(entries, ensure_ascii=False)
