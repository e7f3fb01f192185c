"""Reasoning parts and provider items stay with their assistant message in every window."""

from __future__ import annotations

from chatmem import (
    AssistantMessage,
    InMemoryChatMemoryRepository,
    Message,
    MessageWindowChatMemory,
    ProviderItem,
    ReasoningPart,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.testing import reasoning_turns
from chatmem.window import repair_tool_sequence, select_window


def thought(text: str, index: int | None = None) -> ReasoningPart:
    return ReasoningPart(text=text, signature=f"sig-{text}", provider="openai", index=index)


def calls(*ids: str) -> list[ToolCall]:
    return [ToolCall(id=i, name="t", arguments="{}") for i in ids]


def answered(*ids: str) -> ToolResponseMessage:
    return ToolResponseMessage(
        responses=[ToolResponse(id=i, name="t", response_data=i) for i in ids]
    )


def test_a_window_keeps_or_leaves_each_reasoning_message_whole() -> None:
    history = [m for m in reasoning_turns() if m.type != "system"]
    for budget in range(1, len(history) + 1):
        window = select_window(history, budget=budget)
        # Every message in the window is the stored one, reasoning and usage included.
        assert all(any(m is stored for stored in history) for m in window)


def test_dropping_an_unanswered_call_keeps_the_reasoning_in_order() -> None:
    # OpenAI's order: reasoning, call a, reasoning, call b, compaction; only b was answered.
    interleaved = AssistantMessage(
        tool_calls=calls("a", "b"),
        reasoning=[thought("first", 0), thought("second", 2)],
        provider_items=[ProviderItem(provider="openai", type="compaction", data={}, index=4)],
    )
    history: list[Message] = [UserMessage("u"), interleaved, answered("b"), UserMessage("u2")]
    repaired = repair_tool_sequence(history)
    kept = repaired[1]
    assert isinstance(kept, AssistantMessage)
    assert [c.id for c in kept.tool_calls] == ["b"]
    # Now: reasoning, reasoning, call b, compaction.
    assert [(p.text, p.index) for p in kept.reasoning] == [("first", 0), ("second", 1)]
    assert [p.signature for p in kept.reasoning] == ["sig-first", "sig-second"]
    assert [p.index for p in kept.provider_items] == [3]
    assert repaired[2:] == history[2:]


def test_dropping_a_trailing_call_changes_no_index() -> None:
    # Anthropic's order: thinking, text, redacted thinking, call a, call b; a was answered.
    message = AssistantMessage(
        "checking",
        tool_calls=calls("a", "b"),
        reasoning=[thought("t", 0), ReasoningPart(signature="data", redacted=True, index=2)],
    )
    repaired = repair_tool_sequence([UserMessage("u"), message, answered("a"), UserMessage("u2")])
    kept = repaired[1]
    assert isinstance(kept, AssistantMessage)
    assert kept.reasoning == message.reasoning
    assert [c.id for c in kept.tool_calls] == ["a"]


def test_reasoning_without_an_index_is_kept_as_it_is() -> None:
    message = AssistantMessage("x", tool_calls=calls("a", "b"), reasoning=[thought("t")])
    repaired = repair_tool_sequence([UserMessage("u"), message, answered("b"), UserMessage("u2")])
    assert isinstance(repaired[1], AssistantMessage)
    assert repaired[1].reasoning == message.reasoning


def test_memory_returns_the_reasoning_it_stored() -> None:
    memory = MessageWindowChatMemory(InMemoryChatMemoryRepository(), max_messages=4)
    turns = reasoning_turns()
    memory.add("c", turns)
    assert memory.get("c") == [turns[0], *turns[-3:]]
