"""The memory advisor re-sends a save whose outcome is unknown, and stores the turn once."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from chatmem import (
    CONVERSATION_ID,
    AsyncChatClient,
    AsyncMessageWindowChatMemory,
    ChatClient,
    MessageWindowChatMemory,
    RepositoryOutcomeUnknownError,
)
from chatmem.messages import Message
from chatmem.repository import (
    AsyncInMemoryChatMemoryRepository,
    InMemoryChatMemoryRepository,
    StoredMessage,
)
from chatmem.testing import AsyncScriptedChatModel, ScriptedChatModel
from chatmem_advisors import AsyncMessageChatMemoryAdvisor, MessageChatMemoryAdvisor


class LosesAnswers(InMemoryChatMemoryRepository):
    """Applies each append, then reports an unknown outcome for the first ``losses`` ones.

    What a connection cut after the server committed looks like to the client.
    """

    def __init__(self, losses: int) -> None:
        super().__init__()
        self.losses = losses
        self.appends = 0

    def append(self, conversation_id: str, messages: Sequence[Message]) -> list[StoredMessage]:
        self.appends += 1
        stored = super().append(conversation_id, messages)
        if self.losses:
            self.losses -= 1
            raise RepositoryOutcomeUnknownError("connection lost after the write was sent")
        return stored


class AsyncLosesAnswers(AsyncInMemoryChatMemoryRepository):
    """The async twin of :class:`LosesAnswers`."""

    def __init__(self, losses: int) -> None:
        super().__init__()
        self.losses = losses
        self.appends = 0

    async def append(
        self, conversation_id: str, messages: Sequence[Message]
    ) -> list[StoredMessage]:
        self.appends += 1
        stored = await super().append(conversation_id, messages)
        if self.losses:
            self.losses -= 1
            raise RepositoryOutcomeUnknownError("connection lost after the write was sent")
        return stored


def test_unknown_save_is_sent_again_and_stored_once() -> None:
    repository = LosesAnswers(losses=2)
    memory = MessageWindowChatMemory(repository)
    client = (
        ChatClient.builder(ScriptedChatModel(["Hello, Mr Bond."]))
        .default_advisors(MessageChatMemoryAdvisor(memory))
        .build()
    )
    answer = client.prompt().user("I am Bond").advisors({CONVERSATION_ID: "007"}).call().content()
    assert answer == "Hello, Mr Bond."
    assert repository.appends == 3
    assert [m.text for m in repository.find_by_conversation_id("007")] == [  # type: ignore[union-attr]
        "I am Bond",
        "Hello, Mr Bond.",
    ]


def test_unknown_save_past_the_attempts_is_raised() -> None:
    repository = LosesAnswers(losses=5)
    memory = MessageWindowChatMemory(repository)
    client = (
        ChatClient.builder(ScriptedChatModel(["Hello, Mr Bond."]))
        .default_advisors(MessageChatMemoryAdvisor(memory, save_attempts=2))
        .build()
    )
    with pytest.raises(RepositoryOutcomeUnknownError):
        client.prompt().user("I am Bond").advisors({CONVERSATION_ID: "007"}).call().content()
    assert repository.appends == 2
    # Applied by the first attempt, skipped by the second: still exactly once.
    assert len(repository.find_by_conversation_id("007")) == 2


async def test_async_unknown_save_is_sent_again_and_stored_once() -> None:
    repository = AsyncLosesAnswers(losses=1)
    memory = AsyncMessageWindowChatMemory(repository)
    client = (
        AsyncChatClient.builder(AsyncScriptedChatModel(["Hello, Mr Bond."]))
        .default_advisors(AsyncMessageChatMemoryAdvisor(memory))
        .build()
    )
    spec = client.prompt().user("I am Bond").advisors({CONVERSATION_ID: "007"})
    assert await spec.call().content() == "Hello, Mr Bond."
    assert repository.appends == 2
    assert len(await repository.find_by_conversation_id("007")) == 2


def test_save_attempts_must_be_positive() -> None:
    with pytest.raises(ValueError, match="save_attempts"):
        MessageChatMemoryAdvisor(MessageWindowChatMemory(), save_attempts=0)
