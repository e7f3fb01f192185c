"""ChatmemSession against the OpenAI Agents SDK's Session protocol, item by item.

The SDK's own session tests are written against its SQLite session's internals; these are
the protocol's behaviours (limits, order, pop, clear, exact items) on the integration
backends, and what each item is stored as.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from agents.memory import Session, SessionSettings

from chatmem import (
    AssistantMessage,
    AsyncInMemoryChatMemoryRepository,
    AsyncMessageWindowChatMemory,
    ConfigurationError,
    InMemoryChatMemoryRepository,
    ProviderItem,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.backend import Position, StoredMessage
from chatmem.interop import ConversionError
from chatmem.interop.openai_agents import OPAQUE_PROVIDER, ChatmemSession
from chatmem.interop.openai_responses import METADATA_KEY, to_responses
from chatmem.messages import CHAT_MESSAGE_TYPES, MessageType, ReasoningPart, ToolCall
from chatmem.sessions import REWOUND_EVENT, AsyncSessions, rewound_message
from tests.support import integration_backends
from tests.support.integration_backends import new_conversation_id

async_repository = integration_backends.async_repository

USER = {"role": "user", "content": "Weather in Paris?"}
REASONING = {
    "type": "reasoning",
    "id": "rs_a1",
    "summary": [{"type": "summary_text", "text": "Look it up."}],
    "encrypted_content": "gAAAAB-opaque+/=",
}
CALL = {
    "arguments": '{"city": "Paris"}',
    "call_id": "call_paris",
    "name": "weather",
    "type": "function_call",
    "id": "fc_a2",
    "status": "completed",
}
OUTPUT = {"type": "function_call_output", "call_id": "call_paris", "output": "sunny, 21 C"}
ANSWER = {
    "type": "message",
    "id": "msg_a3",
    "role": "assistant",
    "status": "completed",
    "content": [
        {"type": "output_text", "text": "Sunny in Paris.", "annotations": [], "logprobs": []}
    ],
}
COMPACTION = {"type": "compaction", "id": "cmp_a4", "encrypted_content": "cmp-opaque"}
DEVELOPER = {"role": "developer", "content": "Answer in one line."}
IMAGE = {
    "type": "message",
    "role": "user",
    "content": [
        {"type": "input_text", "text": "And this?"},
        {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "high"},
    ],
}
# A type this chatmem knows nothing of, as a later SDK or API may add.
UNKNOWN = {"type": "web_search_call", "id": "ws_a5", "status": "completed", "action": {"q": "x"}}
ITEMS = [USER, REASONING, CALL, OUTPUT, ANSWER, COMPACTION, DEVELOPER, IMAGE, UNKNOWN]


def said(n: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"message {i}"} for i in range(n)]


@pytest.fixture
async def session(async_repository: Any) -> Any:
    opened = ChatmemSession(new_conversation_id(), async_repository)
    yield opened
    await opened.clear_session()


async def chat_messages(session: ChatmemSession) -> list[StoredMessage]:
    return await session.repository.find_history(
        session.session_id, types=sorted(CHAT_MESSAGE_TYPES), limit=1000
    )


# -- the protocol ---------------------------------------------------------------------------


def test_it_is_the_sdk_session_protocol() -> None:
    session = ChatmemSession("c", AsyncInMemoryChatMemoryRepository())
    assert isinstance(session, Session)
    assert session.session_id == "c"
    assert session.session_settings == SessionSettings()


async def test_every_kind_of_item_comes_back_equal(session: ChatmemSession) -> None:
    added = copy.deepcopy(ITEMS)
    await session.add_items(added)
    assert await session.get_items() == ITEMS
    assert await session.get_items(3) == ITEMS[-3:]
    added[0]["content"] = "changed after adding"
    assert (await session.get_items())[0] == USER  # the session kept its own copy


async def test_order_holds_across_batches(session: ChatmemSession) -> None:
    await session.add_items(said(3))
    await session.add_items([])
    await session.add_items(said(5)[3:])
    assert await session.get_items() == said(5)


async def test_limit_is_the_newest_items_oldest_first(session: ChatmemSession) -> None:
    assert await session.get_items() == []
    assert await session.get_items(3) == []
    await session.add_items(said(6))
    assert await session.get_items(2) == said(6)[4:]
    assert await session.get_items(1) == said(6)[5:]
    assert await session.get_items(100) == said(6)
    assert await session.get_items(0) == []
    assert await session.get_items(-1) == said(6)  # as the SDK's SQLite session


async def test_the_settings_limit_is_the_default(async_repository: Any) -> None:
    conversation = new_conversation_id()
    session = ChatmemSession(
        conversation, async_repository, session_settings=SessionSettings(limit=2)
    )
    from_dict = ChatmemSession(conversation, async_repository, session_settings={"limit": 3})
    assert from_dict.session_settings == SessionSettings(limit=3)
    await session.add_items(said(5))
    assert await session.get_items() == said(5)[3:]
    assert await session.get_items(4) == said(5)[1:]
    assert await from_dict.get_items() == said(5)[2:]
    await session.clear_session()


async def test_items_with_ids_are_stored_once(session: ChatmemSession) -> None:
    await session.add_items([USER, REASONING, CALL])
    await session.add_items([REASONING, CALL, OUTPUT])  # a retried batch
    await session.add_items([USER])  # no id: a new message each time
    assert await session.get_items() == [USER, REASONING, CALL, OUTPUT, USER]


async def test_the_sdk_placeholder_id_names_no_message(session: ChatmemSession) -> None:
    # Items of providers without item ids all carry the SDK's placeholder.
    first = {**ANSWER, "id": "__fake_id__"}
    second = {**first, "content": [{"type": "output_text", "text": "Again.", "annotations": []}]}
    await session.add_items([first, second])
    assert await session.get_items() == [first, second]


async def test_pop_takes_back_the_newest_item(session: ChatmemSession) -> None:
    assert await session.pop_item() is None
    await session.add_items([USER, REASONING, ANSWER])
    assert await session.pop_item() == ANSWER
    assert await session.get_items() == [USER, REASONING]
    assert await session.pop_item() == REASONING
    assert await session.pop_item() == USER
    assert await session.pop_item() is None
    assert await session.get_items() == []
    await session.add_items([OUTPUT | {"call_id": "late"}])
    assert await session.get_items() == [OUTPUT | {"call_id": "late"}]


async def test_a_popped_item_stays_in_the_history_as_rewound(session: ChatmemSession) -> None:
    await session.add_items([USER, ANSWER])
    await session.pop_item()
    history = await AsyncSessions(session.repository).read_history(
        session.session_id, event_types=[REWOUND_EVENT]
    )
    (event,) = history.entries
    rewound = rewound_message(event)
    assert rewound is not None
    assert rewound.message.id == "msg_a3"
    assert isinstance(rewound.message, AssistantMessage)
    assert rewound.message.text == "Sunny in Paris."


async def test_a_popped_item_added_again_is_stored_again(session: ChatmemSession) -> None:
    await session.add_items([USER, ANSWER])
    assert await session.pop_item() == ANSWER
    await session.add_items([ANSWER])
    assert await session.get_items() == [USER, ANSWER]


async def test_popped_items_restored_with_others_keep_the_batch_order(
    session: ChatmemSession,
) -> None:
    await session.add_items([USER, REASONING, ANSWER])
    assert await session.pop_item() == ANSWER
    assert await session.pop_item() == REASONING
    later = {"role": "user", "content": "Later"}
    await session.add_items([REASONING, later, ANSWER])
    assert await session.get_items() == [USER, REASONING, later, ANSWER]
    await session.add_items([REASONING, ANSWER])  # a retry of what is there: stored once
    assert await session.get_items() == [USER, REASONING, later, ANSWER]


async def test_clear_deletes_the_session_only(async_repository: Any) -> None:
    mine = ChatmemSession(new_conversation_id(), async_repository)
    other = ChatmemSession(new_conversation_id(), async_repository)
    await mine.add_items([USER, ANSWER])
    await other.add_items([DEVELOPER])
    await mine.clear_session()
    assert await mine.get_items() == []
    assert await mine.pop_item() is None
    assert await other.get_items() == [DEVELOPER]
    await mine.add_items([USER])
    assert await mine.get_items() == [USER]
    await mine.clear_session()
    await other.clear_session()


# -- what is stored -------------------------------------------------------------------------


async def test_each_item_is_one_chatmem_message(session: ChatmemSession) -> None:
    await session.add_items(ITEMS)
    stored = [s.message for s in await chat_messages(session)]
    assert len(stored) == len(ITEMS)
    user, reasoning, call, output, answer, compaction, developer, image, unknown = stored
    assert isinstance(user, UserMessage)
    assert user.text == "Weather in Paris?"
    assert isinstance(reasoning, AssistantMessage)
    assert reasoning.id == "rs_a1"
    assert reasoning.reasoning == [
        ReasoningPart(
            text="Look it up.", signature="gAAAAB-opaque+/=", id="rs_a1", provider="openai"
        )
    ]
    assert isinstance(call, AssistantMessage)
    assert call.tool_calls == [
        ToolCall(id="call_paris", name="weather", arguments=CALL["arguments"])
    ]
    assert isinstance(output, ToolResponseMessage)
    assert [(r.id, r.name, r.response_data) for r in output.responses] == [
        ("call_paris", "weather", "sunny, 21 C")
    ]
    assert isinstance(answer, AssistantMessage)
    assert answer.text == "Sunny in Paris."
    for message, item in ((compaction, COMPACTION), (developer, DEVELOPER), (unknown, UNKNOWN)):
        assert isinstance(message, AssistantMessage)
        assert message.provider_items == [
            ProviderItem(provider="openai", type=item.get("type", "message"), data=item)
        ]
    assert isinstance(image, UserMessage)
    assert image.text == "And this?"
    assert [m.url for m in image.media] == ["https://example.com/a.png"]


async def test_an_item_is_kept_verbatim_only_where_its_message_differs(
    session: ChatmemSession,
) -> None:
    await session.add_items([REASONING, OUTPUT | {"call_id": "x"}, COMPACTION, CALL, USER])
    stash = [s.message.metadata.get(METADATA_KEY, {}) for s in await chat_messages(session)]
    kept = ["item" in s for s in stash]  # type: ignore[operator]
    # The status field and the missing "type" of the SDK's user item are what differ.
    assert kept == [False, False, False, True, True]


async def test_other_chatmem_readers_read_the_conversation(session: ChatmemSession) -> None:
    await session.add_items([USER, REASONING, CALL, OUTPUT, ANSWER])
    memory = AsyncMessageWindowChatMemory(session.repository, max_messages=10)
    window = await memory.get(session.session_id)
    assert [m.type for m in window] == [
        MessageType.USER,
        MessageType.ASSISTANT,
        MessageType.ASSISTANT,
        MessageType.TOOL,
        MessageType.ASSISTANT,
    ]
    sent = to_responses(window, lossy=True)
    assert [item.get("type") for item in sent] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "message",
    ]
    found = await session.repository.find_history(session.session_id, text="sunny in")
    assert [s.message.id for s in found] == ["msg_a3"]


async def test_a_tool_output_added_later_is_named_after_its_call(
    session: ChatmemSession,
) -> None:
    second = CALL | {"id": "fc_b", "call_id": "call_b", "name": "forecast"}
    await session.add_items([USER, CALL, second])
    await session.add_items(said(3))
    await session.add_items([OUTPUT, OUTPUT | {"call_id": "call_b"}, OUTPUT | {"call_id": "nope"}])
    *_, first, later, unknown = [s.message for s in await chat_messages(session)]
    names = [m.responses[0].name for m in (first, later, unknown)]  # type: ignore[union-attr]
    assert names == ["weather", "forecast", ""]
    assert (await session.get_items(3))[-1] == OUTPUT | {"call_id": "nope"}


async def test_messages_of_other_writers_read_as_their_items(session: ChatmemSession) -> None:
    thought = ReasoningPart(text="Check.", signature="sig", id="rs_x", provider="openai")
    turn = AssistantMessage(
        "Let me look.",
        reasoning=[thought],
        tool_calls=[ToolCall(id="call_x", name="weather", arguments="{}")],
    )
    await session.repository.append(session.session_id, [UserMessage("Hi"), turn])
    items = await session.get_items()
    assert [item["type"] for item in items] == ["message", "reasoning", "message", "function_call"]
    assert await session.get_items(2) == items[-2:]


async def test_a_dict_that_is_no_responses_item_is_kept_and_sent_nowhere(
    session: ChatmemSession,
) -> None:
    envelope = {"__enc__": 1, "v": 1, "payload": "gAAAA-ciphertext"}  # as EncryptedSession's
    await session.add_items([USER, envelope])
    assert await session.get_items() == [USER, envelope]
    stored = [s.message for s in await chat_messages(session)]
    assert stored[1].provider_items[0].provider == OPAQUE_PROVIDER  # type: ignore[union-attr]
    sent = to_responses(stored, lossy=True)
    assert sent[0] == {"type": "message", "role": "user", "content": "Weather in Paris?"}
    assert all("payload" not in item for item in sent)  # no model is sent the envelope
    with pytest.raises(ConversionError):
        await session.add_items(["text"])  # type: ignore[list-item]


def test_a_sync_repository_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="not a session log"):
        ChatmemSession("c", InMemoryChatMemoryRepository())  # type: ignore[arg-type]


# -- bounded reads --------------------------------------------------------------------------


class CountingRepository(AsyncInMemoryChatMemoryRepository):
    """The in-memory repository, recording which reads the session makes."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[tuple[str, int]] = []

    async def find_recent(
        self, conversation_id: str, limit: int, *, before: Position | None = None
    ) -> list[StoredMessage]:
        self.reads.append(("find_recent", limit))
        return await super().find_recent(conversation_id, limit, before=before)

    async def find_history(self, conversation_id: str, **filters: Any) -> list[StoredMessage]:
        self.reads.append(("find_history", filters.get("limit", 100)))
        return await super().find_history(conversation_id, **filters)


async def test_a_limited_read_reads_only_the_newest_messages() -> None:
    repository = CountingRepository()
    session = ChatmemSession("long", repository)
    await session.add_items(said(1200))
    repository.reads.clear()
    assert await session.get_items(5) == said(1200)[-5:]
    assert repository.reads == [("find_recent", 5)]
    repository.reads.clear()
    assert await session.get_items() == said(1200)
    assert repository.reads == [("find_history", 500)] * 3  # page by page


async def test_adding_reads_nothing_unless_an_output_lacks_its_call() -> None:
    repository = CountingRepository()
    session = ChatmemSession("adds", repository)
    await session.add_items([USER, CALL, OUTPUT])
    assert repository.reads == []
    await session.add_items([OUTPUT | {"call_id": "elsewhere"}])
    assert repository.reads == [("find_recent", 100)]
