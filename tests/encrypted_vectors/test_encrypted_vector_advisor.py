"""The vector memory advisor over encrypted memory and an encrypted vector store, end to end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chatmem import (
    CONVERSATION_ID,
    InMemoryChatMemoryRepository,
    MessageWindowChatMemory,
    scoped_conversation_id,
)
from chatmem.client import ChatClient
from chatmem.encryption import EncryptedLog, EncryptedVectorStore, StaticKeyProvider, generate_key
from chatmem.openai import OpenAIChatModel
from chatmem.testing import OpenAITestServer, ScriptedCompletion
from chatmem.testing.vectors import HashingEmbeddingModel
from chatmem.vector_store import InMemoryVectorStore
from chatmem_advisors import MessageChatMemoryAdvisor, VectorStoreChatMemoryAdvisor

FACT = "My favourite colour is teal"
QUESTION = "What is my favourite colour?"


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as running:
        running.respond = lambda body: ScriptedCompletion(text="Noted.")
        yield running


def last_system_prompt(server: OpenAITestServer) -> str:
    messages = server.chat_requests[-1]["messages"]
    return "\n".join(str(m["content"]) for m in messages if m["role"] == "system")


def test_recall_through_encrypted_stores_and_shredding(server: OpenAITestServer) -> None:
    log = EncryptedLog(
        InMemoryChatMemoryRepository(), StaticKeyProvider.from_text(f"k1:{generate_key()}")
    )
    memory = MessageWindowChatMemory(log, max_messages=2)
    inner = InMemoryVectorStore(HashingEmbeddingModel())
    advisor = VectorStoreChatMemoryAdvisor(EncryptedVectorStore(inner, log), top_k=3)
    with OpenAIChatModel(model="m", base_url=server.base_url, max_retries=0, timeout=5) as model:
        client = (
            ChatClient.builder(model)
            .default_advisors(MessageChatMemoryAdvisor(memory), advisor)
            .build()
        )
        context = {CONVERSATION_ID: scoped_conversation_id("ann", "trip")}
        client.prompt().user(FACT).advisors(context).call().content()
        for turn in range(4):
            client.prompt().user(f"Tell me about rivers {turn}").advisors(context).call().content()
        client.prompt().user(QUESTION).advisors(context).call().content()
        window = [m for m in server.chat_requests[-1]["messages"] if m["role"] != "system"]
        assert FACT not in repr(window)  # out of the window...
        assert FACT in last_system_prompt(server)  # ...recalled from the vector store
        assert FACT not in repr(inner._documents)  # the store holds it sealed

        log.delete_by_conversation_id(context[CONVERSATION_ID])
        client.prompt().user(QUESTION).advisors(context).call().content()
        assert FACT not in last_system_prompt(server)  # shredded with its conversation
    # What the shredded conversation left in the store is deleted by the advisor's filter.
    assert advisor.clear(context[CONVERSATION_ID]) == 2 * 7
