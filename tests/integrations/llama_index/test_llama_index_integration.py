"""LlamaIndex memories on chatmem stores, every backend, with llama-index-core's mock LLMs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms import types as li
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall
from llama_index.core.memory import ChatMemoryBuffer, Memory

from chatmem.interop.llama_index import ChatmemChatStore, ChatmemDBChatStore
from chatmem_repositories import create_async_repository, create_repository
from tests.support import integration_backends
from tests.support.backends import INTEGRATION, backend_url
from tests.support.integration_backends import new_conversation_id

repository = integration_backends.repository
async_repository = integration_backends.async_repository
other_repository = integration_backends.other_repository


def tool_round(call_id: str) -> list[li.ChatMessage]:
    return [
        li.ChatMessage(role="user", content="weather?"),
        li.ChatMessage(
            role="assistant",
            blocks=[
                li.ToolCallBlock(
                    tool_call_id=call_id, tool_name="weather", tool_kwargs={"city": "Oslo"}
                )
            ],
        ),
        li.ChatMessage(role="tool", content="sunny", additional_kwargs={"tool_call_id": call_id}),
        li.ChatMessage(role="assistant", content="Sunny."),
    ]


def test_chat_engine_remembers_through_the_store(repository: Any) -> None:
    key = new_conversation_id()
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=5)
    memory = ChatMemoryBuffer.from_defaults(
        chat_store=ChatmemChatStore(repository), chat_store_key=key, llm=llm
    )
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    engine.chat("My name is James Bond")
    engine.chat("What is my name?")
    sent = [m.content for m in llm.last_chat_messages or []]
    assert "My name is James Bond" in sent  # the first exchange came back from chatmem
    stored = repository.find_by_conversation_id(key)
    assert [m.type for m in stored] == ["user", "assistant", "user", "assistant"]


def test_store_methods(repository: Any) -> None:
    store = ChatmemChatStore(repository)
    key = new_conversation_id()
    for message in tool_round("c1"):
        store.add_message(key, message)
    assert store.get_messages(key) == tool_round("c1")
    assert key in store.get_keys()
    assert store.delete_last_message(key) == tool_round("c1")[-1]
    assert store.delete_message(key, 0) == tool_round("c1")[0]
    assert [m.role.value for m in store.get_messages(key)] == ["assistant", "tool"]
    assert store.delete_message(key, 7) is None
    store.set_messages(key, tool_round("c2"))
    assert store.delete_messages(key) == tool_round("c2")
    assert store.get_messages(key) == []


@pytest.mark.parametrize("backend", INTEGRATION)
async def test_async_store_methods_and_chat_engine(backend: str, tmp_path: Path) -> None:
    url = backend_url(backend, tmp_path)
    sync_repo = create_repository(url) if backend != "memory" else None
    async_repo = create_async_repository(url)
    try:
        store = ChatmemChatStore(
            sync_repo or create_repository("memory://"), async_repository=async_repo
        )
        key = new_conversation_id()
        for message in tool_round("c1"):
            await store.async_add_message(key, message)
        assert await store.aget_messages(key) == tool_round("c1")
        llm = MockLLMWithChatMemoryOfLastCall(max_tokens=5)
        memory = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key=key, llm=llm)
        engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
        await engine.achat("and tomorrow?")
        stored = await async_repo.find_by_conversation_id(key)
        assert [m.type for m in stored][-2:] == ["user", "assistant"]
        assert stored[2].responses[0].name == "weather"  # named after its call
    finally:
        await async_repo.aclose()
        if sync_repo is not None:
            sync_repo.close()


async def test_memory_archives_into_chatmem(async_repository: Any) -> None:
    store = ChatmemDBChatStore(async_repository)
    key = new_conversation_id()
    memory = Memory.from_defaults(
        session_id=key,
        chat_store=store,
        token_limit=60,
        token_flush_size=20,
        chat_history_token_ratio=0.5,
    )
    for turn in range(6):
        await memory.aput_messages(
            [
                li.ChatMessage(role="user", content=f"question number {turn} " * 3),
                li.ChatMessage(role="assistant", content=f"answer number {turn} " * 3),
            ]
        )
    active = await store.get_messages(key)
    archived = await store.get_messages(key, status=None)
    assert 0 < len(active) < 12
    assert len(archived) == 12  # nothing lost: archived first, then active
    assert archived[-len(active) :] == active
    keys = await store.get_keys()
    assert key in keys
    assert key + ":archived" not in keys  # archives are not keys of their own
    window = await memory.aget()
    assert window[-1].content == "answer number 5 " * 3
    await store.delete_messages(key)
    assert await store.count_messages(key, status=None) == 0


def test_other_backends(other_repository: Any) -> None:
    store = ChatmemChatStore(other_repository)
    key = new_conversation_id()
    for message in tool_round("c1"):
        store.add_message(key, message)
    assert store.get_messages(key) == tool_round("c1")
    assert store.delete_last_message(key) == tool_round("c1")[-1]
    assert store.delete_messages(key) == tool_round("c1")[:-1]
