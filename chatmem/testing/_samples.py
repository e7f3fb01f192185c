"""Messages that exercise every field the codec must round-trip (no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chatmem.messages import (
    AssistantMessage,
    Media,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)

__all__ = ["HOSTILE_CONVERSATION_IDS", "every_kind_of_message", "tool_turn"]

HOSTILE_CONVERSATION_IDS: tuple[str, ...] = (
    "'; DROP TABLE chat_memory_messages; --",
    '" OR 1=1 --',
    "x' OR 'a'='a",
    "conv'); DELETE FROM messages WHERE ('1'='1",
    "MATCH (n) DETACH DELETE n",
    "}) MATCH (n) DETACH DELETE n //",
    "*",
    "conv:*",
    "[a-z]*",
    "?",
    '{"$ne": null}',
    '{"$gt": ""}',
    "$where",
    "a.b.c",
    "%",
    "_",
    "\\",
    "\\x00",
    "{hash}",
    "{user}:conv",
    "../../etc/passwd",
    "ünïcödé 🎉 中文 العربية",
    " leading and trailing ",
    "x" * 512,
    "x" * 10_000,
    "nul\x00inside",
    "line\nbreak",
    "",
)
"""Conversation ids a repository must reject cleanly or store verbatim without side effects."""


def every_kind_of_message(base_time: datetime | None = None) -> list[Message]:
    """Return one message of each kind with every optional field set, oldest first."""
    t = base_time or datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    return [
        SystemMessage("You are terse. «Quotes» and emoji 🙂 survive.", created_at=t),
        UserMessage(
            "What's in these?",
            created_at=t + timedelta(seconds=1),
            media=[
                Media(mime_type="image/png", data=bytes(range(256)), name="bytes.png"),
                Media(mime_type="image/jpeg", url="https://example.com/a.jpg"),
            ],
            metadata={"nested": {"list": [1, 2.5, None, True, "x"], "empty": {}}, "n": -1},
        ),
        AssistantMessage(
            "",
            created_at=t + timedelta(seconds=2),
            tool_calls=[
                ToolCall(id="call_1", name="lookup", arguments='{"q": "a b",  "n": 1.50}'),
                ToolCall(id="call_2", name="weather", arguments="{}"),
            ],
            metadata={"model": "gpt-x", "usage": {"prompt": 10, "completion": 2}},
        ),
        ToolResponseMessage(
            created_at=t + timedelta(seconds=3),
            responses=[
                ToolResponse(id="call_1", name="lookup", response_data='{"hits": ["ü"]}'),
                ToolResponse(id="call_2", name="weather", response_data="sunny\n\tand warm"),
            ],
        ),
        AssistantMessage(
            "It's sunny. ☀️ Ünïcödé, 'quotes', \"double\", back\\slash.",
            created_at=t + timedelta(seconds=4),
        ),
        UserMessage("", created_at=t + timedelta(seconds=5)),
    ]


def tool_turn(question: str, answer: str, call_id: str) -> list[Message]:
    """Return a user question, a tool call, its response and the final answer."""
    return [
        UserMessage(question),
        AssistantMessage(tool_calls=[ToolCall(id=call_id, name="search", arguments="{}")]),
        ToolResponseMessage(responses=[ToolResponse(id=call_id, name="search", response_data="r")]),
        AssistantMessage(answer),
    ]
