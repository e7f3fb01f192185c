"""Chat memory strategies over the in-memory repository and a four-method repository."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from chatmem import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    AsyncTokenWindowChatMemory,
    CharacterTokenEstimator,
    ConfigurationError,
    InMemoryChatMemoryRepository,
    InvalidConversationIdError,
    Message,
    MessageWindowChatMemory,
    SystemMessage,
    TiktokenTokenEstimator,
    TokenWindowChatMemory,
    UserMessage,
)
from chatmem.testing import tool_turn


def texts(messages: Sequence[Message]) -> list[str]:
    return [getattr(m, "text", "") or f"<{m.type}>" for m in messages]


class FourMethodRepository:
    """A third-party repository with only Spring AI's four methods."""

    def __init__(self) -> None:
        self.data: dict[str, list[Message]] = {}
        self.saves = 0

    def find_conversation_ids(self) -> list[str]:
        return list(self.data)

    def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        return list(self.data.get(conversation_id, []))

    def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        self.saves += 1
        self.data[conversation_id] = list(messages)

    def delete_by_conversation_id(self, conversation_id: str) -> None:
        self.data.pop(conversation_id, None)


# -- system message rules --


def test_identical_system_message_is_ignored() -> None:
    memory = MessageWindowChatMemory()
    memory.add("c", [SystemMessage("be brief"), UserMessage("hi")])
    memory.add("c", SystemMessage("be brief"))
    assert texts(memory.repository.find_by_conversation_id("c")) == ["be brief", "hi"]


def test_different_system_message_replaces_and_comes_first() -> None:
    memory = MessageWindowChatMemory()
    memory.add("c", [SystemMessage("old"), UserMessage("hi"), AssistantMessage("hello")])
    memory.add("c", [UserMessage("again"), SystemMessage("new")])
    assert texts(memory.get("c")) == ["new", "hi", "hello", "again"]
    # History keeps both; memory shows only the current one.
    assert texts(memory.repository.find_by_conversation_id("c")).count("old") == 1


def test_system_message_counts_against_max_messages() -> None:
    memory = MessageWindowChatMemory(max_messages=3)
    memory.add("c", SystemMessage("s"))
    for i in range(3):
        memory.add("c", [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
    assert texts(memory.get("c")) == ["s", "u2", "a2"]


# -- Spring AI 2.0 window behaviour and where we differ --


def test_window_keeps_newest_whole_turns() -> None:
    memory = MessageWindowChatMemory(max_messages=5)
    for i in range(4):
        memory.add("c", [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
    assert texts(memory.get("c")) == ["u2", "a2", "u3", "a3"]
    assert len(memory.repository.find_by_conversation_id("c")) == 8  # history kept


def test_oversized_turn_keeps_question_unlike_spring() -> None:
    memory = MessageWindowChatMemory(max_messages=4)
    memory.add("c", [UserMessage("old"), AssistantMessage("old answer")])
    turn = tool_turn("q", "final", "x1")[:3] + tool_turn("q", "final", "x2")[1:]
    memory.add("c", turn)  # 7 messages in one turn, budget 4
    view = memory.get("c")
    assert texts(view) == ["q", "<assistant>", "<tool>", "final"]


def test_tool_turns_are_never_broken() -> None:
    memory = MessageWindowChatMemory(max_messages=4)
    for i in range(5):
        memory.add("c", tool_turn(f"q{i}", f"a{i}", f"call{i}"))
        view = memory.get("c")
        assert texts(view) == [f"q{i}", "<assistant>", "<tool>", f"a{i}"]


def test_evict_deletes_what_left_the_window() -> None:
    memory = MessageWindowChatMemory(max_messages=3, evict=True)
    memory.add("c", SystemMessage("s"))
    for i in range(4):
        memory.add("c", [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
    assert texts(memory.repository.find_by_conversation_id("c")) == ["s", "u3", "a3"]


def test_clear_and_id_validation() -> None:
    memory = MessageWindowChatMemory()
    memory.add("c", UserMessage("x"))
    memory.clear("c")
    assert memory.get("c") == []
    with pytest.raises(InvalidConversationIdError):
        memory.add("", UserMessage("x"))
    with pytest.raises(InvalidConversationIdError):
        memory.get("a\x00")


def test_bad_configuration_is_rejected() -> None:
    with pytest.raises(ConfigurationError):
        MessageWindowChatMemory(max_messages=0)
    with pytest.raises(ConfigurationError):
        TokenWindowChatMemory(max_tokens=0)
    with pytest.raises(ConfigurationError, match="not an async"):
        AsyncMessageWindowChatMemory(InMemoryChatMemoryRepository())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="not a sync"):
        MessageWindowChatMemory(AsyncMessageWindowChatMemory().repository)  # type: ignore[arg-type]


# -- a repository with only the four methods --


def test_four_method_repository_works_by_rewrite() -> None:
    repository = FourMethodRepository()
    memory = MessageWindowChatMemory(repository, max_messages=3)  # type: ignore[arg-type]
    memory.add("c", [SystemMessage("s"), UserMessage("u1"), AssistantMessage("a1")])
    memory.add("c", [SystemMessage("s"), UserMessage("u2"), AssistantMessage("a2")])
    assert texts(memory.get("c")) == ["s", "u2", "a2"]
    assert len(repository.data["c"]) == 5
    evicting = MessageWindowChatMemory(repository, max_messages=3, evict=True)  # type: ignore[arg-type]
    evicting.add("c", [UserMessage("u3"), AssistantMessage("a3")])
    assert texts(repository.data["c"]) == ["s", "u3", "a3"]


# -- token window --


def test_token_window_fits_budget_and_counts_each_message_once() -> None:
    estimator = CharacterTokenEstimator(chars_per_token=1)
    memory = TokenWindowChatMemory(max_tokens=40, token_estimator=estimator, page_size=3)
    for i in range(20):
        memory.add("c", [UserMessage(f"user {i:02d}"), AssistantMessage(f"answer {i:02d}")])
    view = memory.get("c")
    cost = sum(estimator.estimate(m) for m in view)
    assert cost <= 40
    assert texts(view)[-2:] == ["user 19", "answer 19"]
    assert isinstance(view[0], UserMessage)
    misses = memory.token_estimator.misses
    memory.get("c")
    assert memory.token_estimator.misses == misses  # cached by message id


def test_token_window_reads_only_pages_it_needs() -> None:
    estimator = CharacterTokenEstimator(chars_per_token=1)
    memory = TokenWindowChatMemory(max_tokens=30, token_estimator=estimator, page_size=4)
    memory.add("c", [UserMessage(f"m{i}") for i in range(1000)])
    memory.add("c", [UserMessage("last"), AssistantMessage("reply")])
    memory.get("c")
    # Only a few pages were read, so only their messages were ever counted.
    assert memory.token_estimator.misses <= 12


def test_tiktoken_estimator_counts_tool_calls_results_and_media() -> None:
    estimator = TiktokenTokenEstimator()
    plain = estimator.estimate(UserMessage("hello world"))
    assert plain > 0
    turn = tool_turn("q", "a", "id")
    assert estimator.estimate(turn[1]) > estimator.estimate(AssistantMessage(""))
    assert estimator.estimate(turn[2]) > 3


# -- async twins behave the same --


async def test_async_twins_match_sync() -> None:
    memory = AsyncMessageWindowChatMemory(max_messages=3)
    await memory.add("c", SystemMessage("s"))
    for i in range(3):
        await memory.add("c", [UserMessage(f"u{i}"), AssistantMessage(f"a{i}")])
    assert texts(await memory.get("c")) == ["s", "u2", "a2"]
    tokens = AsyncTokenWindowChatMemory(
        max_tokens=25, token_estimator=CharacterTokenEstimator(chars_per_token=1)
    )
    await tokens.add("c", [UserMessage("one"), AssistantMessage("two"), UserMessage("three")])
    assert texts(await tokens.get("c"))[-1] == "three"
