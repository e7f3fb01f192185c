"""LangChain4j parity of the window memories: per-conversation sizes, set() and the
system-message position option."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from chatmem import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    CharacterTokenEstimator,
    ConfigurationError,
    Message,
    MessageWindowChatMemory,
    SystemMessage,
    TokenWindowChatMemory,
    UserMessage,
)


class FourMethodRepository:
    """A third-party repository with only Spring AI's four methods."""

    def __init__(self) -> None:
        self.data: dict[str, list[Message]] = {}

    def find_conversation_ids(self) -> list[str]:
        return list(self.data)

    def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        return list(self.data.get(conversation_id, []))

    def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        self.data[conversation_id] = list(messages)

    def delete_by_conversation_id(self, conversation_id: str) -> None:
        self.data.pop(conversation_id, None)


def texts(messages: Sequence[Message]) -> list[str]:
    return [m.text or "" for m in messages]  # type: ignore[union-attr]


def dialogue(memory: MessageWindowChatMemory | TokenWindowChatMemory, cid: str, n: int) -> None:
    for i in range(n):
        memory.add(cid, [UserMessage(f"q{i}"), AssistantMessage(f"a{i}")])


def test_max_messages_may_be_a_function_of_the_conversation_id() -> None:
    memory = MessageWindowChatMemory(max_messages=lambda cid: 10 if cid.startswith("gold:") else 4)
    dialogue(memory, "gold:1", 10)
    dialogue(memory, "free:1", 10)
    assert len(memory.get("gold:1")) == 10
    assert texts(memory.get("free:1")) == ["q8", "a8", "q9", "a9"]


def test_max_tokens_may_be_a_function_of_the_conversation_id() -> None:
    memory = TokenWindowChatMemory(
        max_tokens=lambda cid: 1000 if cid == "big" else 3,
        token_estimator=CharacterTokenEstimator(),
    )
    dialogue(memory, "big", 5)
    dialogue(memory, "small", 5)
    assert len(memory.get("big")) == 10
    assert len(memory.get("small")) < 10


def test_a_size_function_returning_nonsense_is_a_configuration_error() -> None:
    memory = MessageWindowChatMemory(max_messages=lambda cid: 0)
    memory.add("c", UserMessage("hi"))
    with pytest.raises(ConfigurationError, match="'c'"):
        memory.get("c")
    with pytest.raises(ConfigurationError):
        MessageWindowChatMemory(max_messages=True)


def test_set_replaces_the_conversation() -> None:
    memory = MessageWindowChatMemory(max_messages=10)
    dialogue(memory, "c", 3)
    memory.set("c", [SystemMessage("be brief"), UserMessage("only"), AssistantMessage("this")])
    assert texts(memory.get("c")) == ["be brief", "only", "this"]
    assert texts(memory.repository.find_by_conversation_id("c")) == ["be brief", "only", "this"]
    memory.add("c", UserMessage("next"))
    assert texts(memory.get("c"))[-1] == "next"
    memory.set("c", [])
    assert memory.get("c") == []


def test_set_with_evict_stores_only_the_window() -> None:
    memory = MessageWindowChatMemory(max_messages=3, evict=True)
    history: list[Message] = [SystemMessage("s")]
    for i in range(5):
        history += [UserMessage(f"q{i}"), AssistantMessage(f"a{i}")]
    memory.set("c", history)
    assert texts(memory.repository.find_by_conversation_id("c")) == ["s", "q4", "a4"]


@pytest.mark.parametrize("repository", [None, FourMethodRepository()])
def test_system_message_position_option(repository: FourMethodRepository | None) -> None:
    first = MessageWindowChatMemory(repository, max_messages=10)  # type: ignore[arg-type]
    first.add("c", [SystemMessage("old"), UserMessage("hi"), AssistantMessage("hello")])
    first.add("c", [SystemMessage("new"), UserMessage("again")])
    # Default (today's rule): the current system message comes first.
    assert texts(first.get("c")) == ["new", "hi", "hello", "again"]
    # LangChain4j's default: a replacing system message takes the newest position.
    at_position = MessageWindowChatMemory(
        first.repository, max_messages=10, always_keep_system_message_first=False
    )
    assert texts(at_position.get("c")) == ["hi", "hello", "new", "again"]
    # Once what was stored before it leaves the window, it is first again.
    small = MessageWindowChatMemory(
        first.repository, max_messages=2, always_keep_system_message_first=False
    )
    assert texts(small.get("c")) == ["new", "again"]


async def test_async_twin_has_the_same_options() -> None:
    memory = AsyncMessageWindowChatMemory(
        max_messages=lambda cid: 3, always_keep_system_message_first=False
    )
    await memory.add("c", [UserMessage("q0"), AssistantMessage("a0"), UserMessage("q1")])
    await memory.set("c", [UserMessage("x"), SystemMessage("s"), AssistantMessage("y")])
    assert texts(await memory.get("c")) == ["x", "s", "y"]
