"""ChatClient, advisor chain and MessageChatMemoryAdvisor over the scripted model (sync+async)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import aclosing
from typing import Any

import pytest
from pydantic import BaseModel

from chatmem import (
    CONVERSATION_ID,
    AssistantMessage,
    AsyncBaseAdvisor,
    AsyncChatClient,
    AsyncMessageWindowChatMemory,
    BaseAdvisor,
    ChatClient,
    ChatClientRequest,
    ChatClientResponse,
    ChatModelError,
    ChatModelResponseError,
    ChatOptions,
    ConfigurationError,
    Message,
    MessageWindowChatMemory,
    MissingConversationIdError,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.client import AdvisorChain, AsyncAdvisorChain
from chatmem.testing import AsyncScriptedChatModel, ScriptedChatModel
from chatmem_advisors import (
    AsyncMessageChatMemoryAdvisor,
    AsyncSimpleLoggerAdvisor,
    MessageChatMemoryAdvisor,
    SimpleLoggerAdvisor,
)

CID = {CONVERSATION_ID: "007"}


def texts(messages: list[Message]) -> list[tuple[str, str]]:
    return [(m.type.value, getattr(m, "text", "")) for m in messages]


def bond_client(model: ScriptedChatModel, memory: MessageWindowChatMemory) -> ChatClient:
    return (
        ChatClient.builder(model)
        .default_system("You are a helpful assistant.")
        .default_advisors(MessageChatMemoryAdvisor(memory))
        .build()
    )


# -- James Bond and the memory rules ------------------------------------------------------------


def test_james_bond_sync() -> None:
    model = ScriptedChatModel(["Hello, Mr Bond.", "Your name is James Bond."])
    memory = MessageWindowChatMemory()
    client = bond_client(model, memory)
    client.prompt().user("My name is James Bond").advisors(
        lambda a: a.param(CONVERSATION_ID, "007")
    ).call().content()
    answer = client.prompt().user("What is my name?").advisors(CID).call().content()
    assert answer == "Your name is James Bond."
    assert texts(list(model.prompts[1].messages)) == [
        ("system", "You are a helpful assistant."),
        ("user", "My name is James Bond"),
        ("assistant", "Hello, Mr Bond."),
        ("user", "What is my name?"),
    ]
    # The prompt's system message is sent, not stored (as in Spring AI).
    assert [m.type.value for m in memory.get("007")] == ["user", "assistant"] * 2


async def test_james_bond_async_and_stream() -> None:
    model = AsyncScriptedChatModel(["Hello, Mr Bond.", "Your name is James Bond."])
    memory = AsyncMessageWindowChatMemory()
    client = (
        AsyncChatClient.builder(model)
        .default_system("sys")
        .default_advisors(AsyncMessageChatMemoryAdvisor(memory))
        .build()
    )
    assert await client.prompt("My name is James Bond").advisors(CID).call().content()
    pieces = [p async for p in client.prompt("What is my name?").advisors(CID).stream().content()]
    assert "".join(pieces) == "Your name is James Bond."
    assert len(pieces) == 5
    assert texts(list(model.prompts[1].messages))[1:3] == [
        ("user", "My name is James Bond"),
        ("assistant", "Hello, Mr Bond."),
    ]
    stored = await memory.get("007")
    assert texts(stored)[-1] == ("assistant", "Your name is James Bond.")


class CountingMemory(MessageWindowChatMemory):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gets = 0
        self.adds: list[list[Message]] = []

    def get(self, conversation_id: str) -> list[Message]:
        self.gets += 1
        return super().get(conversation_id)

    def add(self, conversation_id: str, messages: Any) -> None:
        self.adds.append(list(messages))
        super().add(conversation_id, messages)


def test_memory_read_once_and_turn_saved_in_one_add() -> None:
    call = ToolCall(id="c1", name="lookup", arguments="{}")
    model = ScriptedChatModel([AssistantMessage(tool_calls=[call]), "done"])
    memory = CountingMemory()

    def lookup() -> str:
        """Look something up."""
        return "found"

    client = ChatClient.builder(model).default_advisors(MessageChatMemoryAdvisor(memory)).build()
    response = client.prompt("go").tools(lookup).advisors(CID).call().chat_response()
    assert memory.gets == 1
    assert len(memory.adds) == 1
    assert [m.type.value for m in memory.adds[0]] == ["user", "assistant", "tool", "assistant"]
    assert list(response.exchange) == memory.adds[0][1:]


@pytest.mark.parametrize("bad", [None, "", "a\x00b", "x" * 600, 7])
def test_missing_or_invalid_conversation_id_raises_before_the_model(bad: object) -> None:
    model = ScriptedChatModel(["never"])
    memory = MessageWindowChatMemory()
    client = bond_client(model, memory)
    spec = client.prompt("hi")
    if bad is not None:
        spec = spec.advisors({CONVERSATION_ID: bad})
    with pytest.raises(MissingConversationIdError) as info:
        spec.call().content()
    assert isinstance(info.value, ValueError)
    assert model.prompts == []
    with pytest.raises(MissingConversationIdError):
        list(client.prompt("hi").stream().content())
    assert model.prompts == []


def test_memory_system_message_sent_only_when_prompt_has_none() -> None:
    model = ScriptedChatModel(["a", "b"])
    memory = MessageWindowChatMemory()
    memory.add("007", SystemMessage("stored rules"))
    client = ChatClient.builder(model).default_advisors(MessageChatMemoryAdvisor(memory)).build()
    client.prompt("one").advisors(CID).call().content()
    client.prompt("two").system("prompt rules").advisors(CID).call().content()
    assert texts(list(model.prompts[0].messages))[0] == ("system", "stored rules")
    sent = texts(list(model.prompts[1].messages))
    assert sent[0] == ("system", "prompt rules")
    assert ("system", "stored rules") not in sent


def test_dangling_tool_call_in_memory_is_repaired_before_sending() -> None:
    memory = MessageWindowChatMemory()
    stale = AssistantMessage(tool_calls=[ToolCall(id="x", name="t", arguments="{}")])
    memory.add("007", [UserMessage("q"), stale])
    model = ScriptedChatModel(["ok"])
    client = ChatClient.builder(model).default_advisors(MessageChatMemoryAdvisor(memory)).build()
    client.prompt("next").advisors(CID).call().content()
    assert texts(list(model.prompts[0].messages)) == [("user", "q"), ("user", "next")]


# -- failures and cancellation: a turn is stored whole or not at all ----------------------------


def test_model_failure_stores_nothing() -> None:
    model = ScriptedChatModel(["first", ChatModelError("boom"), "retried"])
    memory = MessageWindowChatMemory()
    client = bond_client(model, memory)
    client.prompt("one").advisors(CID).call().content()
    with pytest.raises(ChatModelError):
        client.prompt("two").advisors(CID).call().content()
    assert texts(memory.get("007")) == [("user", "one"), ("assistant", "first")]
    client.prompt("two").advisors(CID).call().content()  # the retry does not duplicate
    assert [t for _, t in texts(memory.get("007"))] == ["one", "first", "two", "retried"]


def test_stream_failure_and_early_stop_store_nothing() -> None:
    model = ScriptedChatModel(["a b c d", "e f g h"], fail_after_chunks=(2, ChatModelError("cut")))
    memory = MessageWindowChatMemory()
    client = bond_client(model, memory)
    with pytest.raises(ChatModelError):
        list(client.prompt("one").advisors(CID).stream().content())
    assert memory.get("007") == []
    model.fail_after_chunks = None
    stream = client.prompt("two").advisors(CID).stream().content()
    assert next(stream) == "e "
    stream.close()  # the consumer stops early
    assert memory.get("007") == []


async def test_async_stream_cancelled_stores_nothing() -> None:
    model = AsyncScriptedChatModel(["a b c d e f"], chunk_delay=0.05)
    memory = AsyncMessageWindowChatMemory()
    client = AsyncChatClient.builder(model).default_advisors(AsyncMessageChatMemoryAdvisor(memory))
    built = client.build()
    started = asyncio.Event()

    async def consume() -> None:
        async with aclosing(built.prompt("go").advisors(CID).stream().content()) as stream:
            async for _ in stream:
                started.set()

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await memory.get("007") == []


# -- concurrency --------------------------------------------------------------------------------


def _echo(prompt: Any) -> str:
    users = [m.text for m in prompt.messages if isinstance(m, UserMessage)]
    return "|".join(users)


def test_concurrent_conversations_threads() -> None:
    model = ScriptedChatModel(respond=_echo)
    memory = MessageWindowChatMemory(max_messages=100)
    client = bond_client(model, memory)
    errors: list[BaseException] = []

    def run(name: str) -> None:
        try:
            for turn in range(20):
                answer = client.prompt(f"{name}-{turn}").advisors({CONVERSATION_ID: name})
                seen = answer.call().content().split("|")
                assert seen == [f"{name}-{i}" for i in range(turn + 1)]
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in ("alice", "bob", "carol")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(memory.get("alice")) == 40


async def test_concurrent_conversations_tasks() -> None:
    model = AsyncScriptedChatModel(respond=_echo, chunk_delay=0.001)
    memory = AsyncMessageWindowChatMemory(max_messages=100)
    client = AsyncChatClient.builder(model).default_advisors(AsyncMessageChatMemoryAdvisor(memory))
    built = client.build()

    async def run(name: str) -> None:
        for turn in range(10):
            spec = built.prompt(f"{name}-{turn}").advisors({CONVERSATION_ID: name})
            text = "".join([p async for p in spec.stream().content()])
            assert text.split("|") == [f"{name}-{i}" for i in range(turn + 1)]

    await asyncio.gather(*(run(n) for n in ("alice", "bob", "carol")))
    assert len(await memory.get("bob")) == 20


# -- the advisor API ----------------------------------------------------------------------------


class Recorder(BaseAdvisor):
    def __init__(self, log: list[str], label: str, order: int) -> None:
        super().__init__(order=order, name=label)
        self.log = log

    def before(self, request: ChatClientRequest, chain: AdvisorChain) -> ChatClientRequest:
        self.log.append(f"in:{self.name}")
        return request.with_context(**{self.name: True})

    def after(self, response: ChatClientResponse, chain: AdvisorChain) -> ChatClientResponse:
        self.log.append(f"out:{self.name}")
        assert response.context[self.name] is True
        return response


def test_advisor_order_is_by_order_then_insertion_both_chains() -> None:
    log: list[str] = []
    model = ScriptedChatModel(["x", "y"])
    client = (
        ChatClient.builder(model)
        .default_advisors(Recorder(log, "late", 10), Recorder(log, "first", -5))
        .build()
    )
    client.prompt("q").advisors(Recorder(log, "tie", 10)).call().content()
    expected = ["in:first", "in:late", "in:tie", "out:tie", "out:late", "out:first"]
    assert log == expected
    log.clear()
    list(client.prompt("q").advisors(Recorder(log, "tie", 10)).stream().content())
    assert log == expected


class Rewriter(AsyncBaseAdvisor):
    async def before(
        self, request: ChatClientRequest, chain: AsyncAdvisorChain
    ) -> ChatClientRequest:
        return request.with_messages([*request.prompt.messages, UserMessage("(be brief)")])


async def test_async_base_advisor_can_rewrite_the_prompt() -> None:
    model = AsyncScriptedChatModel(["ok"])
    client = AsyncChatClient.builder(model).default_advisors(Rewriter()).build()
    assert await client.prompt("hi").call().content() == "ok"
    assert texts(list(model.prompts[0].messages)) == [("user", "hi"), ("user", "(be brief)")]


def test_logger_advisor_logs_at_debug_with_redaction(caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedChatModel(["secret answer"])
    client = ChatClient.builder(model).default_advisors(SimpleLoggerAdvisor(redact_content=True))
    caplog.set_level("DEBUG", logger="chatmem_advisors.logger")
    client.build().prompt("secret question").call().content()
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "request" in logged
    assert "response" in logged
    assert "secret" not in logged
    assert all(r.levelname == "DEBUG" for r in caplog.records)


async def test_async_logger_advisor_logs_content(caplog: pytest.LogCaptureFixture) -> None:
    model = AsyncScriptedChatModel(["the answer"])
    client = AsyncChatClient.builder(model).default_advisors(AsyncSimpleLoggerAdvisor()).build()
    caplog.set_level("DEBUG", logger="chatmem_advisors.logger")
    await client.prompt("the question").call().content()
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "the question" in logged
    assert "the answer" in logged


# -- the fluent API -----------------------------------------------------------------------------


class Person(BaseModel):
    name: str
    age: int


def test_entity_requests_a_schema_and_parses_the_answer() -> None:
    model = ScriptedChatModel(['{"name": "James", "age": 40}', "not json"])
    client = ChatClient.create(model)
    person = client.prompt("who?").call().entity(Person)
    assert person == Person(name="James", age=40)
    response_format = model.prompts[0].options.response_format
    assert response_format is not None
    assert response_format["name"] == "Person"
    with pytest.raises(ChatModelResponseError):
        client.prompt("who?").call().entity(Person)


def test_defaults_options_messages_and_user_override() -> None:
    model = ScriptedChatModel(["a"])
    client = (
        ChatClient.builder(model)
        .default_user("default question")
        .default_options(model="m1", temperature=0.5)
        .build()
    )
    response = (
        client.prompt()
        .messages(UserMessage("earlier"), [AssistantMessage("reply")])
        .options(ChatOptions(max_tokens=5), temperature=0.0)
        .call()
        .chat_response()
    )
    prompt = model.prompts[0]
    assert texts(list(prompt.messages)) == [
        ("user", "earlier"),
        ("assistant", "reply"),
        ("user", "default question"),
    ]
    assert (prompt.options.model, prompt.options.temperature, prompt.options.max_tokens) == (
        "m1",
        0.0,
        5,
    )
    assert response.usage is not None
    assert response.text == "a"


def test_bad_arguments_are_configuration_errors() -> None:
    model = ScriptedChatModel(["a"])
    client = ChatClient.create(model)
    with pytest.raises(ConfigurationError):
        client.prompt().call().content()
    with pytest.raises(ConfigurationError):
        client.prompt("x").advisors(42)
    with pytest.raises(ConfigurationError):
        client.prompt("x").options(no_such_option=1)
    with pytest.raises(ConfigurationError):
        ChatClient(AsyncScriptedChatModel())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        MessageChatMemoryAdvisor(AsyncMessageWindowChatMemory())  # type: ignore[arg-type]


def test_stream_chat_response_last_chunk_carries_the_exchange() -> None:
    model = ScriptedChatModel(["one two"])
    chunks = list(ChatClient.create(model).prompt("q").stream().chat_response())
    assert [c.text for c in chunks[:-1] if c.text] == ["one ", "two"]
    assert texts(list(chunks[-1].exchange)) == [("assistant", "one two")]


def _tool_messages(messages: list[Message]) -> Iterator[ToolResponseMessage]:
    return (m for m in messages if isinstance(m, ToolResponseMessage))
