"""The LangChain chat message history on real langchain-core, every backend, sync and async."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core import messages as lc
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.language_models.fake_chat_models import (
    FakeMessagesListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import trim_messages
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_core.tools import tool

from chatmem import ConfigurationError, InMemoryChatMemoryRepository
from chatmem.interop.langchain import ChatmemMessageHistory
from chatmem_repositories import create_async_repository, create_repository
from tests.support import integration_backends
from tests.support.backends import backend_url
from tests.support.integration_backends import new_conversation_id

repository = integration_backends.repository
async_repository = integration_backends.async_repository
other_repository = integration_backends.other_repository


@tool
def weather(city: str) -> str:
    """Return the weather in a city."""
    return f"sunny in {city}"


def tool_round(call_id: str) -> list[lc.BaseMessage]:
    call = lc.AIMessage(
        "", tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": call_id}]
    )
    result = weather.invoke(call.tool_calls[0])  # a ToolMessage, as a LangGraph tool node makes
    return [lc.HumanMessage("weather?"), call, result, lc.AIMessage("Sunny.")]


def test_is_a_langchain_history() -> None:
    assert issubclass(ChatmemMessageHistory, BaseChatMessageHistory)


def test_add_read_clear(repository: Any) -> None:
    conversation = new_conversation_id()
    history = ChatmemMessageHistory(conversation, repository)
    history.add_user_message("hi")
    history.add_ai_message("hello")
    history.add_messages(tool_round("c1"))
    assert [m.type for m in history.messages] == ["human", "ai", "human", "ai", "tool", "ai"]
    assert history.messages[4].tool_call_id == "c1"  # type: ignore[attr-defined]
    assert history.messages[4].name == "weather"
    # A second history on the same store sees the same conversation.
    assert ChatmemMessageHistory(conversation, repository).messages == history.messages
    history.clear()
    assert history.messages == []


async def test_async_add_read_clear(async_repository: Any) -> None:
    history = ChatmemMessageHistory(new_conversation_id(), async_repository)
    await history.aadd_messages([lc.HumanMessage("hi"), lc.AIMessage("hello")])
    await history.aadd_messages(tool_round("c1"))
    got = await history.aget_messages()
    assert [m.type for m in got] == ["human", "ai", "human", "ai", "tool", "ai"]
    await history.aclear()
    assert await history.aget_messages() == []
    with pytest.raises(ConfigurationError, match="only an async repository"):
        _ = history.messages


def tool_loop_batches(call_id: str) -> list[list[lc.BaseMessage]]:
    """LangChain's usual tool loop: each result arrives after its call, without a ``name``."""
    calls = [
        {"name": "weather", "args": {"city": "Paris"}, "id": call_id},
        {"name": "clock", "args": {"city": "Paris"}, "id": f"{call_id}-2"},
    ]
    return [
        [lc.HumanMessage("weather and time?"), lc.AIMessage("", tool_calls=calls)],
        [lc.ToolMessage("sunny", tool_call_id=call_id)],
        [lc.ToolMessage("noon", tool_call_id=f"{call_id}-2"), lc.AIMessage("Sunny at noon.")],
    ]


def result_names(stored: list[Any]) -> list[tuple[str, str]]:
    return [(r.id, r.name) for m in stored if m.type == "tool" for r in m.responses]


class FourMethodRepository:
    """A third-party repository with only Spring AI's four methods (no append)."""

    def __init__(self) -> None:
        self.data: dict[str, list[Any]] = {}

    def find_conversation_ids(self) -> list[str]:
        return list(self.data)

    def find_by_conversation_id(self, conversation_id: str) -> list[Any]:
        return list(self.data.get(conversation_id, []))

    def save_all(self, conversation_id: str, messages: Any) -> None:
        self.data[conversation_id] = list(messages)

    def delete_by_conversation_id(self, conversation_id: str) -> None:
        self.data.pop(conversation_id, None)


def test_tool_results_added_after_their_call_keep_the_tool_name(repository: Any) -> None:
    conversation = new_conversation_id()
    history = ChatmemMessageHistory(conversation, repository)
    for batch in tool_loop_batches("n1"):
        history.add_messages(batch)
    stored = repository.find_by_conversation_id(conversation)
    assert result_names(stored) == [("n1", "weather"), ("n1-2", "clock")]
    # LangChain gets back what it added.
    assert [m.type for m in history.messages] == ["human", "ai", "tool", "tool", "ai"]
    assert history.messages[2].name is None


def test_tool_results_keep_the_tool_name_on_a_repository_that_does_not_append() -> None:
    repository = FourMethodRepository()
    history = ChatmemMessageHistory("c", repository)
    for batch in tool_loop_batches("n1"):
        history.add_messages(batch)
    stored = repository.find_by_conversation_id("c")
    assert result_names(stored) == [("n1", "weather"), ("n1-2", "clock")]


async def test_async_tool_results_added_after_their_call_keep_the_tool_name(
    async_repository: Any,
) -> None:
    conversation = new_conversation_id()
    history = ChatmemMessageHistory(conversation, async_repository)
    for batch in tool_loop_batches("n1"):
        await history.aadd_messages(batch)
    stored = await async_repository.find_by_conversation_id(conversation)
    assert result_names(stored) == [("n1", "weather"), ("n1-2", "clock")]


def test_window_keeps_whole_turns_and_tool_pairs(repository: Any) -> None:
    conversation = new_conversation_id()
    full = ChatmemMessageHistory(conversation, repository)
    windowed = ChatmemMessageHistory(conversation, repository, max_messages=5)
    full.add_messages([lc.SystemMessage("be brief")])
    for turn in range(30):
        full.add_messages(tool_round(f"c{turn}"))
    assert len(full.messages) == 1 + 30 * 4  # the whole history stays
    window = windowed.messages
    # The system message, then the newest whole turn (4 messages): never a split tool pair.
    assert [m.type for m in window] == ["system", "human", "ai", "tool", "ai"]
    assert window[3].tool_call_id == "c29"  # type: ignore[attr-defined]


async def test_async_window(async_repository: Any) -> None:
    history = ChatmemMessageHistory(new_conversation_id(), async_repository, max_messages=3)
    for turn in range(5):
        await history.aadd_messages(tool_round(f"c{turn}"))
    # The newest turn does not fit in 3: its question and newest whole unit are kept.
    got = await history.aget_messages()
    assert [m.type for m in got] == ["human", "ai"]
    assert got[-1].content == "Sunny."


# langchain-core 1.x deprecates RunnableWithMessageHistory in favour of LangGraph persistence;
# applications still run it, so it is tested.
RWMH_DEPRECATED = pytest.mark.filterwarnings(
    "ignore:RunnableWithMessageHistory is deprecated:DeprecationWarning"
)


@RWMH_DEPRECATED
def test_runnable_with_message_history(repository: Any) -> None:
    model = GenericFakeChatModel(messages=iter(["Hello, Mr Bond.", "Your name is James Bond."]))
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are terse."), MessagesPlaceholder("history"), ("human", "{input}")]
    )
    seen: list[list[lc.BaseMessage]] = []

    def record(value: Any) -> Any:
        seen.append(value.to_messages())
        return value

    chain = RunnableWithMessageHistory(
        prompt | record | model,
        lambda session_id: ChatmemMessageHistory(session_id, repository, max_messages=20),
        input_messages_key="input",
        history_messages_key="history",
    )
    config = {"configurable": {"session_id": new_conversation_id()}}
    chain.invoke({"input": "My name is James Bond"}, config=config)
    answer = chain.invoke({"input": "What is my name?"}, config=config)
    assert answer.content == "Your name is James Bond."
    # The second call was sent the first exchange from chatmem.
    assert [m.content for m in seen[1]][1:3] == ["My name is James Bond", "Hello, Mr Bond."]


@RWMH_DEPRECATED
async def test_runnable_with_message_history_async(async_repository: Any) -> None:
    model = FakeMessagesListChatModel(responses=[lc.AIMessage("one"), lc.AIMessage("two")])
    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{input}")]
    )
    conversation = new_conversation_id()
    chain = RunnableWithMessageHistory(
        prompt | model,
        lambda session_id: ChatmemMessageHistory(session_id, async_repository),
        input_messages_key="input",
        history_messages_key="history",
    )
    config = {"configurable": {"session_id": conversation}}
    await chain.ainvoke({"input": "a"}, config=config)
    await chain.ainvoke({"input": "b"}, config=config)
    stored = await ChatmemMessageHistory(conversation, async_repository).aget_messages()
    assert [m.content for m in stored] == ["a", "one", "b", "two"]


def test_model_tool_calls_are_stored_and_trimmed(repository: Any) -> None:
    call = lc.AIMessage("", tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": "t1"}])
    model = FakeMessagesListChatModel(responses=[call, lc.AIMessage("Sunny in Oslo.")])
    history = ChatmemMessageHistory(new_conversation_id(), repository)
    history.add_messages([lc.HumanMessage("Oslo weather?")])
    first = model.invoke(history.messages)
    history.add_messages([first, weather.invoke(first.tool_calls[0])])
    history.add_messages([model.invoke(history.messages)])
    stored = history.messages
    assert stored[1].tool_calls[0]["args"] == {"city": "Oslo"}  # type: ignore[attr-defined]
    assert stored[2].content == "sunny in Oslo"
    history.add_messages(tool_round("t2"))
    trimmed = trim_messages(
        history.messages, max_tokens=5, token_counter=len, strategy="last", start_on="human"
    )
    # LangChain's trimmer works on what the history returns: the newest whole turn.
    assert [m.type for m in trimmed] == ["human", "ai", "tool", "ai"]
    assert trimmed[2].tool_call_id == trimmed[1].tool_calls[0]["id"] == "t2"  # type: ignore[attr-defined]


def test_rejects_a_window_below_one() -> None:
    with pytest.raises(ConfigurationError, match="at least 1"):
        ChatmemMessageHistory("x", InMemoryChatMemoryRepository(), max_messages=0)


def test_rejects_two_sync_repositories() -> None:
    with pytest.raises(ConfigurationError):
        ChatmemMessageHistory(
            "x", InMemoryChatMemoryRepository(), async_repository=InMemoryChatMemoryRepository()
        )


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "redis"])
async def test_sync_and_async_repositories_share_the_conversation(
    backend: str, tmp_path: Path
) -> None:
    url = backend_url(backend, tmp_path)
    sync_repo = create_repository(url)
    async_repo = create_async_repository(url)
    try:
        history = ChatmemMessageHistory(
            new_conversation_id(), sync_repo, async_repository=async_repo, max_messages=10
        )
        history.add_messages(tool_round("s1"))
        await history.aadd_messages(tool_round("a1"))
        assert [m.type for m in await history.aget_messages()] == [m.type for m in history.messages]
        assert len(history.messages) == 8
        await history.aclear()
        assert history.messages == []
    finally:
        await async_repo.aclose()
        sync_repo.close()


def test_other_backends(other_repository: Any) -> None:
    history = ChatmemMessageHistory(new_conversation_id(), other_repository, max_messages=5)
    for turn in range(3):
        history.add_messages(tool_round(f"c{turn}"))
    assert [m.type for m in history.messages] == ["human", "ai", "tool", "ai"]
    history.clear()
    assert history.messages == []
