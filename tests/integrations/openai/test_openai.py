"""OpenAIChatModel through the real openai client against the local validating test server."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pydantic import BaseModel

from chatmem import (
    CONVERSATION_ID,
    AssistantMessage,
    AsyncChatClient,
    AsyncMessageWindowChatMemory,
    ChatClient,
    ChatModelConnectionError,
    ChatModelError,
    ChatModelHTTPError,
    ChatModelTimeoutError,
    ChatOptions,
    ChatResponse,
    Media,
    Message,
    MessageWindowChatMemory,
    MissingConversationIdError,
    Prompt,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    decode_message,
    encode_message,
    tool,
)
from chatmem.openai import AsyncOpenAIChatModel, OpenAIChatModel
from chatmem.testing import OpenAITestServer, ScriptedCompletion
from chatmem.testing.openai_server import ServerReply, validate_chat_messages
from chatmem_advisors import AsyncMessageChatMemoryAdvisor, MessageChatMemoryAdvisor
from chatmem_repositories import create_repository

CID = {CONVERSATION_ID: "007"}
T = TypeVar("T")


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as running:
        yield running
    assert running.rejected == [], "the server rejected a request as the real API would"


@pytest.fixture
def model(server: OpenAITestServer) -> Iterator[OpenAIChatModel]:
    with OpenAIChatModel(
        model="test-model", base_url=server.base_url, api_key="test", max_retries=0, timeout=5
    ) as opened:
        yield opened


@pytest.fixture
async def amodel(server: OpenAITestServer) -> AsyncIterator[AsyncOpenAIChatModel]:
    async with AsyncOpenAIChatModel(
        model="test-model", base_url=server.base_url, api_key="test", max_retries=0, timeout=5
    ) as opened:
        yield opened


def roles(body: dict[str, Any]) -> list[str]:
    return [m["role"] for m in body["messages"]]


def contents(body: dict[str, Any]) -> list[Any]:
    return [m.get("content") for m in body["messages"]]


def memory_client(model: OpenAIChatModel, memory: MessageWindowChatMemory) -> ChatClient:
    return (
        ChatClient.builder(model)
        .default_system("You are a helpful assistant.")
        .default_advisors(MessageChatMemoryAdvisor(memory))
        .build()
    )


# -- James Bond: sync, async, streaming, SQLite across a restart -------------------------------


def assert_second_request_has_turn_one(server: OpenAITestServer) -> None:
    second = server.chat_requests[1]
    assert roles(second) == ["system", "user", "assistant", "user"]
    assert contents(second)[1:] == ["My name is James Bond", "Hello, Mr Bond.", "What is my name?"]


def test_james_bond_sync(server: OpenAITestServer, model: OpenAIChatModel) -> None:
    server.reply_text("Hello, Mr Bond.", "You are James Bond.")
    client = memory_client(model, MessageWindowChatMemory())
    client.prompt().user("My name is James Bond").advisors(
        lambda a: a.param(CONVERSATION_ID, "007")
    ).call().content()
    assert client.prompt().user("What is my name?").advisors(CID).call().content() == (
        "You are James Bond."
    )
    assert_second_request_has_turn_one(server)


def test_james_bond_sync_stream(server: OpenAITestServer, model: OpenAIChatModel) -> None:
    server.reply_text("Hello, Mr Bond.", "You are James Bond.")
    client = memory_client(model, MessageWindowChatMemory())
    first = list(client.prompt("My name is James Bond").advisors(CID).stream().content())
    assert first == ["Hello,", " Mr", " Bond."]
    assert "".join(client.prompt("What is my name?").advisors(CID).stream().content()) == (
        "You are James Bond."
    )
    assert_second_request_has_turn_one(server)
    assert server.chat_requests[0]["stream"] is True
    assert server.chat_requests[0]["stream_options"] == {"include_usage": True}


def test_each_stored_answer_carries_its_token_usage(
    server: OpenAITestServer, model: OpenAIChatModel
) -> None:
    server.reply_text("Hello, Mr Bond.", "You are James Bond.")
    memory = MessageWindowChatMemory()
    client = memory_client(model, memory)
    client.prompt("My name is James Bond").advisors(CID).call().content()
    "".join(client.prompt("What is my name?").advisors(CID).stream().content())
    answers = [m for m in memory.get("007") if isinstance(m, AssistantMessage)]
    # The test server reports 10 prompt and 5 completion tokens per answer, streamed or not.
    assert [(a.usage.input_tokens, a.usage.output_tokens) for a in answers if a.usage] == [
        (10, 5),
        (10, 5),
    ]


async def test_james_bond_async_call_and_stream(
    server: OpenAITestServer, amodel: AsyncOpenAIChatModel
) -> None:
    server.reply_text("Hello, Mr Bond.", "You are James Bond.")
    memory = AsyncMessageWindowChatMemory()
    client = (
        AsyncChatClient.builder(amodel)
        .default_system("You are a helpful assistant.")
        .default_advisors(AsyncMessageChatMemoryAdvisor(memory))
        .build()
    )
    await client.prompt("My name is James Bond").advisors(CID).call().content()
    spec = client.prompt("What is my name?").advisors(CID).stream()
    assert "".join([p async for p in spec.content()]) == "You are James Bond."
    assert_second_request_has_turn_one(server)


class Sqlite3Repository:
    """Spring AI's four methods over a SQLite file (stdlib), as a third party would write it."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS m (cid TEXT, pos INTEGER, data TEXT)")
        self._lock = threading.Lock()

    def find_conversation_ids(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT DISTINCT cid FROM m")]

    def find_by_conversation_id(self, conversation_id: str) -> list[Message]:
        with self._lock:
            rows = self._db.execute(
                "SELECT data FROM m WHERE cid = ? ORDER BY pos", (conversation_id,)
            ).fetchall()
        return [decode_message(r[0]) for r in rows]

    def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        with self._lock, self._db:
            self._db.execute("DELETE FROM m WHERE cid = ?", (conversation_id,))
            self._db.executemany(
                "INSERT INTO m VALUES (?, ?, ?)",
                [(conversation_id, i, encode_message(m)) for i, m in enumerate(messages)],
            )

    def delete_by_conversation_id(self, conversation_id: str) -> None:
        with self._lock, self._db:
            self._db.execute("DELETE FROM m WHERE cid = ?", (conversation_id,))

    def close(self) -> None:
        self._db.close()


def _open_repository(kind: str, path: Path) -> Any:
    if kind == "sqlite3-four-methods":
        return Sqlite3Repository(path)
    # The SQL backend is part of the test environment: an error opening it is a failure.
    return create_repository(f"sqlite:///{path}")


@pytest.mark.parametrize("kind", ["sqlite3-four-methods", "chatmem-sql-backend"])
def test_james_bond_sqlite_file_across_a_restart(
    server: OpenAITestServer, model: OpenAIChatModel, tmp_path: Path, kind: str
) -> None:
    server.reply_text("Hello, Mr Bond.", "You are James Bond.")
    path = tmp_path / "chat.db"
    repository = _open_repository(kind, path)
    try:
        client = memory_client(model, MessageWindowChatMemory(repository))
        client.prompt("My name is James Bond").advisors(CID).call().content()
    finally:
        repository.close()
    # A new process would build everything again from the same file.
    repository = _open_repository(kind, path)
    try:
        client = memory_client(model, MessageWindowChatMemory(repository))
        client.prompt("What is my name?").advisors(CID).call().content()
        assert_second_request_has_turn_one(server)
        stored = repository.find_by_conversation_id("007")
        assert [m.type.value for m in stored] == ["user", "assistant"] * 2
    finally:
        repository.close()


# -- no conversation id, no request -----------------------------------------------------------


def test_missing_conversation_id_sends_nothing(
    server: OpenAITestServer, model: OpenAIChatModel
) -> None:
    client = memory_client(model, MessageWindowChatMemory())
    with pytest.raises(MissingConversationIdError):
        client.prompt("My name is James Bond").call().content()
    with pytest.raises(MissingConversationIdError):
        list(client.prompt("My name is James Bond").stream().content())
    assert server.requests == []


async def test_missing_conversation_id_sends_nothing_async(
    server: OpenAITestServer, amodel: AsyncOpenAIChatModel
) -> None:
    memory = AsyncMessageWindowChatMemory()
    client = AsyncChatClient.builder(amodel).default_advisors(AsyncMessageChatMemoryAdvisor(memory))
    with pytest.raises(MissingConversationIdError):
        await client.build().prompt("hi").advisors({CONVERSATION_ID: ""}).call().content()
    assert server.requests == []


# -- a tool-using conversation under a tight window --------------------------------------------


@tool
def get_weather(city: str) -> str:
    """Current weather.

    Args:
        city: The city.
    """
    return json.dumps({"city": city, "sky": "sunny"})


@tool
def get_time(city: str) -> str:
    """Local time in a city."""
    return f"12:00 in {city}"


def script_tool_turns(server: OpenAITestServer) -> None:
    server.reply_tool_calls(("call_1", "get_weather", '{"city": "London"}'))
    server.reply_text("Sunny in London.")
    server.reply_tool_calls(
        ("call_2", "get_weather", '{"city": "Paris"}'), ("call_3", "get_time", '{"city": "Paris"}')
    )
    server.reply_tool_calls(("call_4", "get_time", '{"city": "Rome"}'))
    server.reply_text("Paris is sunny at noon; Rome too.")
    server.reply_text("You asked about London, Paris and Rome.")
    server.reply_tool_calls(("call_5", "get_weather", '{"city": "Oslo"}'))
    server.reply_text("Sunny in Oslo.")


def assert_tool_history(stored: list[Message]) -> None:
    calls = [c.id for m in stored if isinstance(m, AssistantMessage) for c in m.tool_calls]
    answered = [r.id for m in stored if isinstance(m, ToolResponseMessage) for r in m.responses]
    assert calls == ["call_1", "call_2", "call_3", "call_4", "call_5"]
    assert answered == calls


def test_tool_conversation_with_max_messages_4(
    server: OpenAITestServer, model: OpenAIChatModel
) -> None:
    script_tool_turns(server)
    memory = MessageWindowChatMemory(max_messages=4)
    client = (
        ChatClient.builder(model)
        .default_advisors(MessageChatMemoryAdvisor(memory))
        .default_tools(get_weather, get_time)
        .build()
    )
    ask = client.prompt
    assert ask("Weather in London?").advisors(CID).call().content() == "Sunny in London."
    text = "".join(ask("Paris and Rome?").advisors(CID).stream().content())
    assert text == "Paris is sunny at noon; Rome too."
    assert ask("What did I ask?").advisors(CID).call().content().startswith("You asked")
    assert ask("Oslo?").advisors(CID).call().content() == "Sunny in Oslo."
    assert len(server.chat_requests) == 8
    assert all(r.accepted for r in server.requests)
    # Every request was at most the window plus this turn's new messages.
    assert roles(server.chat_requests[1])[:2] == ["user", "assistant"]
    assert_tool_history(memory.repository.find_by_conversation_id("007"))  # type: ignore[attr-defined]
    window = memory.get("007")
    assert len(window) <= 4


async def test_tool_conversation_with_max_messages_4_async(
    server: OpenAITestServer, amodel: AsyncOpenAIChatModel
) -> None:
    script_tool_turns(server)
    memory = AsyncMessageWindowChatMemory(max_messages=4)
    client = (
        AsyncChatClient.builder(amodel)
        .default_advisors(AsyncMessageChatMemoryAdvisor(memory))
        .default_tools(get_weather, get_time)
        .build()
    )
    await client.prompt("Weather in London?").advisors(CID).call().content()
    spec = client.prompt("Paris and Rome?").advisors(CID).stream()
    assert "".join([p async for p in spec.content()]).startswith("Paris")
    await client.prompt("What did I ask?").advisors(CID).call().content()
    await client.prompt("Oslo?").advisors(CID).call().content()
    assert all(r.accepted for r in server.requests)
    history = await memory.repository.find_by_conversation_id("007")  # type: ignore[attr-defined]
    assert_tool_history(history)


# -- failures: nothing half-written is stored --------------------------------------------------


def test_model_failure_mid_call_stores_nothing(
    server: OpenAITestServer, model: OpenAIChatModel
) -> None:
    memory = MessageWindowChatMemory()
    client = memory_client(model, memory)
    server.reply_text("Hello, Mr Bond.")
    client.prompt("My name is James Bond").advisors(CID).call().content()
    before = memory.get("007")
    # A tool round succeeds, then the model call after it fails: the whole turn is dropped.
    server.reply_tool_calls(("call_1", "get_weather", '{"city": "Rome"}'))
    server.reply_error(500, "the model crashed")
    with pytest.raises(ChatModelHTTPError) as info:
        client.prompt("Weather?").tools(get_weather).advisors(CID).call().content()
    assert info.value.status_code == 500
    assert info.value.body == {
        "message": "the model crashed",
        "type": "server_error",
        "param": None,
        "code": None,
    }
    assert memory.get("007") == before
    # Error mid-stream.
    server.reply(ScriptedCompletion(text="one two three four", fail_after_chunks=2))
    with pytest.raises(ChatModelError, match="mid-stream"):
        list(client.prompt("Weather?").advisors(CID).stream().content())
    assert memory.get("007") == before


def test_stream_stopped_early_stores_nothing(
    server: OpenAITestServer, model: OpenAIChatModel
) -> None:
    memory = MessageWindowChatMemory()
    client = memory_client(model, memory)
    server.reply_text("a b c d e f g h", chunk_delay=0.02)
    stream = client.prompt("Count").advisors(CID).stream().content()
    assert next(stream) == "a"
    stream.close()
    assert memory.get("007") == []
    assert len(server.chat_requests) == 1


async def test_async_stream_cancelled_stores_nothing(
    server: OpenAITestServer, amodel: AsyncOpenAIChatModel
) -> None:
    memory = AsyncMessageWindowChatMemory()
    client = AsyncChatClient.builder(amodel).default_advisors(AsyncMessageChatMemoryAdvisor(memory))
    server.reply_text("a b c d e f g h", chunk_delay=0.05)
    got_one = asyncio.Event()

    async def consume() -> None:
        spec = client.build().prompt("Count").advisors(CID).stream()
        async with aclosing(spec.content()) as stream:
            async for _ in stream:
                got_one.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(got_one.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await memory.get("007") == []


# -- a stream cut short: no finish reason, no [DONE] --------------------------------------------

CITIES_ASKED: list[str] = []


@tool
def book_trip(city: str) -> str:
    """Book a trip (a side effect a half-received call must never cause).

    Args:
        city: The destination.
    """
    CITIES_ASKED.append(city)
    return f"booked {city}"


# Role chunk, tool-call head, then '{"city"': the call is cut mid-arguments.
CUT_TOOL_CALL = ScriptedCompletion(
    tool_calls=[("call_1", "book_trip", '{"city": "Rome"}')], truncate_after=3
)
# Every argument chunk came, only the finish reason did not: more calls could have followed.
UNFINISHED_TOOL_CALL = dataclasses.replace(CUT_TOOL_CALL, truncate_after=5)


def test_stream_cut_short_raises_and_stores_nothing_of_the_turn(
    server: OpenAITestServer, model: OpenAIChatModel
) -> None:
    memory = MessageWindowChatMemory()
    client = memory_client(model, memory)
    server.reply_text("Hello, Mr Bond.")
    client.prompt("My name is James Bond").advisors(CID).call().content()
    before = memory.get("007")
    assert len(before) == 2
    # Text cut after two words: the pieces already received reach the reader, then the error.
    server.reply(ScriptedCompletion(text="one two three four", truncate_after=3))
    received: list[str] = []
    with pytest.raises(ChatModelConnectionError, match="finish"):
        received.extend(client.prompt("Count").advisors(CID).stream().content())
    assert received == ["one", " two"]
    # As for any failed turn, not even the user message is stored.
    assert memory.get("007") == before
    # A tool call of a cut stream is never run, and nothing of the turn is stored.
    CITIES_ASKED.clear()
    for script in (CUT_TOOL_CALL, UNFINISHED_TOOL_CALL):
        server.reply(script)
        with pytest.raises(ChatModelConnectionError):
            list(client.prompt("Book Rome").tools(book_trip).advisors(CID).stream().content())
    assert CITIES_ASKED == []
    assert memory.get("007") == before
    assert len(server.chat_requests) == 4  # no request carried a half-received call


async def drain(stream: AsyncIterator[T], into: list[T]) -> None:
    async with aclosing(stream) as items:
        async for item in items:
            into.append(item)


async def test_async_stream_cut_short_raises_and_stores_nothing_of_the_turn(
    server: OpenAITestServer, amodel: AsyncOpenAIChatModel
) -> None:
    memory = AsyncMessageWindowChatMemory()
    client = (
        AsyncChatClient.builder(amodel)
        .default_advisors(AsyncMessageChatMemoryAdvisor(memory))
        .default_tools(book_trip)
        .build()
    )
    CITIES_ASKED.clear()
    server.reply(ScriptedCompletion(text="one two three", truncate_after=2), CUT_TOOL_CALL)
    for question in ("Count", "Book Rome"):
        with pytest.raises(ChatModelConnectionError):
            await drain(client.prompt(question).advisors(CID).stream().content(), [])
    assert CITIES_ASKED == []
    assert await memory.get("007") == []
    # The model alone raises too, after yielding what it received.
    server.reply(ScriptedCompletion(text="one two", truncate_after=2))
    chunks: list[ChatResponse] = []
    with pytest.raises(ChatModelConnectionError):
        await drain(amodel.stream(Prompt([UserMessage("hi")])), chunks)
    assert "".join(c.text for c in chunks) == "one"


def _events_route(events: list[dict[str, Any] | str]) -> Any:
    def route(server: OpenAITestServer, body: dict[str, Any]) -> ServerReply:
        return ServerReply(events=iter(events))

    return route


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [choice],
    }


def test_stream_cut_after_the_finish_reason_is_a_complete_answer(
    server: OpenAITestServer, model: OpenAIChatModel
) -> None:
    # Only the usage chunk and [DONE] are missing: the answer itself was finished.
    events: list[dict[str, Any] | str] = [
        _chunk({"role": "assistant", "content": "All"}),
        _chunk({"content": " done."}),
        _chunk({}, "stop"),
    ]
    server.add_route("POST", "/v1/chat/completions", _events_route(events))
    memory = MessageWindowChatMemory()
    client = memory_client(model, memory)
    assert "".join(client.prompt("Finish?").advisors(CID).stream().content()) == "All done."
    assert [getattr(m, "text", None) for m in memory.get("007")] == ["Finish?", "All done."]


def _completion_route(message: dict[str, Any], finish: dict[str, Any]) -> Any:
    def route(server: OpenAITestServer, body: dict[str, Any]) -> ServerReply:
        choice = {"index": 0, "message": message, **finish}
        completion = {"id": "c", "object": "chat.completion", "created": 0, "model": "m"}
        return ServerReply(body={**completion, "choices": [choice]})

    return route


@pytest.mark.parametrize("finish", [{}, {"finish_reason": None}])
def test_call_without_a_finish_reason_is_taken_whole(
    server: OpenAITestServer, model: OpenAIChatModel, finish: dict[str, Any]
) -> None:
    # A JSON body is complete by construction (a cut one does not parse); some compatible
    # servers leave the reason out, so the answer is used as it is.
    message = {"role": "assistant", "content": "Complete."}
    server.add_route("POST", "/v1/chat/completions", _completion_route(message, finish))
    response = model.call(Prompt([UserMessage("hi")]))
    assert response.text == "Complete."
    assert response.finish_reason is None


# -- concurrency --------------------------------------------------------------------------------


def echo_users(body: dict[str, Any]) -> ScriptedCompletion:
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    return ScriptedCompletion(text="|".join(users))


def test_concurrent_conversations_threads(server: OpenAITestServer, model: OpenAIChatModel) -> None:
    server.respond = echo_users
    memory = MessageWindowChatMemory(max_messages=100)
    client = memory_client(model, memory)
    failures: list[BaseException] = []

    def run(name: str) -> None:
        try:
            for turn in range(6):
                spec = client.prompt(f"{name}-{turn}").advisors({CONVERSATION_ID: name})
                text = spec.call().content() if turn % 2 else "".join(spec.stream().content())
                assert text.split("|") == [f"{name}-{i}" for i in range(turn + 1)]
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in ("m", "q", "r", "x")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


async def test_concurrent_conversations_tasks(
    server: OpenAITestServer, amodel: AsyncOpenAIChatModel
) -> None:
    server.respond = echo_users
    memory = AsyncMessageWindowChatMemory(max_messages=100)
    client = AsyncChatClient.builder(amodel).default_advisors(AsyncMessageChatMemoryAdvisor(memory))
    built = client.build()

    async def run(name: str) -> None:
        for turn in range(6):
            spec = built.prompt(f"{name}-{turn}").advisors({CONVERSATION_ID: name})
            if turn % 2:
                text = await spec.call().content()
            else:
                text = "".join([p async for p in spec.stream().content()])
            assert text.split("|") == [f"{name}-{i}" for i in range(turn + 1)]

    await asyncio.gather(*(run(n) for n in ("m", "q", "r", "x")))


# -- the wire format ----------------------------------------------------------------------------


class Person(BaseModel):
    name: str
    age: int


def test_payload_media_options_usage_and_structured_output(
    server: OpenAITestServer, model: OpenAIChatModel
) -> None:
    server.reply_text("A cat.", '{"name": "James", "age": 40}')
    client = ChatClient.builder(model).default_options(temperature=0.2, max_tokens=50).build()
    image = Media(mime_type="image/png", data=b"\x89PNG")
    audio = Media(mime_type="audio/wav", data=b"RIFF")
    link = Media(mime_type="image/jpeg", url="https://example.invalid/cat.jpg")
    response = (
        client.prompt()
        .user("What is this?", media=[image, audio, link])
        .options(stop=("END",), seed=7)
        .call()
        .chat_response()
    )
    body = server.chat_requests[0]
    parts = body["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "input_audio", "image_url"]
    assert parts[1]["image_url"]["url"] == "data:image/png;base64,iVBORw=="
    assert parts[2]["input_audio"] == {"data": "UklGRg==", "format": "wav"}
    assert parts[3]["image_url"]["url"] == "https://example.invalid/cat.jpg"
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("test-model", 0.2, 50)
    assert (body["stop"], body["seed"]) == (["END"], 7)
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (10, 5)
    assert (response.finish_reason, response.model) == ("stop", "test-model")
    person = client.prompt("Who?").options(model="other").call().entity(Person)
    assert person == Person(name="James", age=40)
    second = server.chat_requests[1]
    assert second["model"] == "other"
    assert second["response_format"]["type"] == "json_schema"
    assert second["response_format"]["json_schema"]["name"] == "Person"
    assert second["response_format"]["json_schema"]["schema"]["required"] == ["name", "age"]


def test_tool_definitions_and_tool_messages_on_the_wire(
    server: OpenAITestServer, model: OpenAIChatModel
) -> None:
    server.reply_tool_calls(("call_9", "get_weather", '{"city": "Nice"}'), text="Checking.")
    server.reply_text("Sunny.")
    client = ChatClient.builder(model).default_tools(get_weather).build()
    chunks = list(client.prompt("Weather?").stream().chat_response())
    first, second = server.chat_requests
    assert first["tools"][0]["function"]["name"] == "get_weather"
    assert first["tools"][0]["function"]["parameters"]["required"] == ["city"]
    assistant, tool_message = second["messages"][1:3]
    assert assistant["content"] == "Checking."
    assert assistant["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city": "Nice"}',
    }
    assert tool_message == {
        "role": "tool",
        "tool_call_id": "call_9",
        "content": '{"city": "Nice", "sky": "sunny"}',
    }
    # Assembled from 7-character argument deltas.
    exchange = chunks[-1].exchange
    assert isinstance(exchange[0], AssistantMessage)
    assert exchange[0].tool_calls == [
        ToolCall(id="call_9", name="get_weather", arguments='{"city": "Nice"}')
    ]


def test_invalid_sequence_is_rejected_like_the_real_api() -> None:
    orphan = ToolResponseMessage(responses=[ToolResponse(id="x", name="t", response_data="1")])
    with (
        OpenAITestServer() as strict,
        OpenAIChatModel(base_url=strict.base_url, max_retries=0, timeout=5) as local,
    ):
        with pytest.raises(ChatModelHTTPError) as info:
            local.call(Prompt([UserMessage("hi"), orphan]))
        assert len(strict.rejected) == 1
    assert info.value.status_code == 400
    assert isinstance(info.value.body, dict)
    assert "tool" in str(info.value.body["message"])


def test_timeout_is_bounded_and_connection_errors_are_mapped(server: OpenAITestServer) -> None:
    server.reply(ScriptedCompletion(text="late", delay=2.0))
    with OpenAIChatModel(base_url=server.base_url, max_retries=0, timeout=0.3) as slow:
        started = time.monotonic()
        with pytest.raises(ChatModelTimeoutError):
            slow.call(Prompt([UserMessage("hi")]))
        assert time.monotonic() - started < 1.5
    with OpenAITestServer() as gone:
        url = gone.base_url
    with OpenAIChatModel(base_url=url, max_retries=0, timeout=2) as dead:
        with pytest.raises(ChatModelConnectionError):
            dead.call(Prompt([UserMessage("hi")]))
        with pytest.raises(ChatModelConnectionError):
            list(dead.stream(Prompt([UserMessage("hi")])))


async def test_async_errors_are_mapped(server: OpenAITestServer) -> None:
    server.reply_error(429, "slow down")
    async with AsyncOpenAIChatModel(base_url=server.base_url, max_retries=0) as model:
        with pytest.raises(ChatModelHTTPError) as info:
            await model.call(Prompt([UserMessage("hi")], ChatOptions(model="m")))
    assert info.value.status_code == 429


@pytest.mark.parametrize(
    ("messages", "ok"),
    [
        ([{"role": "user", "content": "hi"}], True),
        ([], False),
        ([{"role": "wizard", "content": "hi"}], False),
        ([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "a"}], False),
        (
            [
                {"role": "assistant", "content": None, "tool_calls": [{"id": "a"}, {"id": "b"}]},
                {"role": "tool", "tool_call_id": "a", "content": "1"},
                {"role": "tool", "tool_call_id": "b", "content": "2"},
                {"role": "user", "content": "next"},
            ],
            True,
        ),
        (
            [
                {"role": "assistant", "content": None, "tool_calls": [{"id": "a"}, {"id": "b"}]},
                {"role": "tool", "tool_call_id": "a", "content": "1"},
                {"role": "user", "content": "next"},
            ],
            False,
        ),
        (
            [
                {"role": "assistant", "content": None, "tool_calls": [{"id": "a"}]},
                {"role": "tool", "tool_call_id": "a", "content": "1"},
                {"role": "user", "content": "next"},
                {"role": "tool", "tool_call_id": "a", "content": "again"},
            ],
            False,
        ),
    ],
)
def test_server_validation_rules(messages: list[dict[str, Any]], ok: bool) -> None:
    assert (validate_chat_messages(messages) is None) is ok


def test_system_message_conversion(server: OpenAITestServer, model: OpenAIChatModel) -> None:
    server.reply_text("ok")
    model.call(Prompt([SystemMessage("rules"), UserMessage("hi"), AssistantMessage("")]))
    assert server.chat_requests[0]["messages"][0] == {"role": "system", "content": "rules"}
    assert server.chat_requests[0]["messages"][2] == {"role": "assistant", "content": ""}
