"""Messages that exercise every field the codec must round-trip (no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chatmem.messages import (
    AssistantMessage,
    Media,
    Message,
    ProviderItem,
    ReasoningPart,
    SystemMessage,
    TokenUsage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)

__all__ = [
    "HOSTILE_CONVERSATION_IDS",
    "PREVIOUS_CODEC_RECORD",
    "every_kind_of_message",
    "reasoning_turns",
    "tool_turn",
]

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


# A signature as long as a real encrypted reasoning payload, with every base64 character.
_ENCRYPTED = "gAAAAABo" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789+/" * 320 + "=="


def reasoning_turns(base_time: datetime | None = None) -> list[Message]:
    """Return a conversation of reasoning models beside messages without reasoning.

    Anthropic interleaved thinking (a thinking block, text, a redacted block, two tool calls,
    with their order in ``index``) and token usage with cache counts; an OpenAI Responses
    answer with an encrypted reasoning item whose ``details`` hold several summary parts, and a
    compaction item; a reasoning part of unknown provider; usage alone, all zero; and plain
    messages shaped as before any of these fields existed. Oldest first.
    """
    t = base_time or datetime(2026, 2, 3, 4, 5, 6, 789012, tzinfo=UTC)
    return [
        SystemMessage("Think, then answer.", created_at=t),
        UserMessage("Weather in Paris and in Rome?", created_at=t + timedelta(seconds=1)),
        AssistantMessage(
            "Let me check both cities.",
            created_at=t + timedelta(seconds=2),
            tool_calls=[
                ToolCall(id="toolu_01", name="weather", arguments='{"city": "Paris"}'),
                ToolCall(id="toolu_02", name="weather", arguments='{"city": "Rome"}'),
            ],
            reasoning=[
                ReasoningPart(
                    text="Two cities: call the tool twice.\n«Paris», 'Rome', \"quotes\" \\ 🙂",
                    signature="EqQBCkgIARABGAIiQL2x/+Sig==",
                    provider="anthropic",
                    model="claude-sonnet-4-5",
                    index=0,
                ),
                ReasoningPart(
                    signature="EmwKAhgBEgy3va3pzix/LafPsn4a" + "x" * 512,
                    redacted=True,
                    provider="anthropic",
                    model="claude-sonnet-4-5",
                    index=2,
                ),
            ],
            usage=TokenUsage(
                input_tokens=2100,
                output_tokens=320,
                cache_read_tokens=1800,
                cache_write_tokens=250,
            ),
            metadata={"model": "claude-sonnet-4-5"},
        ),
        ToolResponseMessage(
            created_at=t + timedelta(seconds=3),
            responses=[
                ToolResponse(id="toolu_01", name="weather", response_data='{"sky": "sun"}'),
                ToolResponse(id="toolu_02", name="weather", response_data='{"sky": "rain"}'),
            ],
        ),
        AssistantMessage(
            "Sunny in Paris ☀️, rain in Rome.",
            created_at=t + timedelta(seconds=4),
            reasoning=[
                ReasoningPart(
                    text="Summarise both results.",
                    signature=_ENCRYPTED,
                    id="rs_0a1b2c",
                    provider="openai",
                    model="gpt-5",
                    index=0,
                    details={
                        "summary": [
                            {"type": "summary_text", "text": "Summarise both results."},
                            {"type": "summary_text", "text": "Ünïcode, second part."},
                        ],
                        "status": None,
                        "numbers": [1, 2.5, -3, True, False],
                        "nested": {"empty": {}, "list": []},
                    },
                )
            ],
            provider_items=[
                ProviderItem(
                    provider="openai",
                    type="compaction",
                    data={"type": "compaction", "id": "cmp_01", "encrypted_content": _ENCRYPTED},
                    model="gpt-5",
                    index=2,
                )
            ],
            usage=TokenUsage(input_tokens=900, output_tokens=150, reasoning_tokens=96),
        ),
        UserMessage("And tomorrow?", created_at=t + timedelta(seconds=5)),
        AssistantMessage(
            "No forecast yet.",
            created_at=t + timedelta(seconds=6),
            reasoning=[ReasoningPart(text="A thought from a framework that names no provider.")],
            usage=TokenUsage(),
        ),
        UserMessage("Thanks!", created_at=t + timedelta(seconds=7)),
        AssistantMessage(
            "You're welcome.",
            created_at=t + timedelta(seconds=8),
            usage=TokenUsage(input_tokens=12, output_tokens=4),
        ),
        AssistantMessage("A plain answer, as stored before.", created_at=t + timedelta(seconds=9)),
    ]


PREVIOUS_CODEC_RECORD = (
    '{"id":"01900000-0000-7000-8000-000000000001","created_at":"2024-06-01T12:00:00.000001Z",'
    '"metadata":{"k":[1,"ü"]},"type":"assistant","text":"stored before reasoning parts",'
    '"tool_calls":[{"id":"call_1","name":"lookup","arguments":"{}"}],"media":[],"v":1}'
)
"""An assistant message exactly as the codec wrote it before reasoning parts, provider items and
token usage existed: it reads back equal, and encodes to the same text."""
