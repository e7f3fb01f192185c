"""AnthropicChatModel through the real anthropic client against the local Anthropic-protocol
test server: a tool loop with thinking over three turns with memory, cut streams, refusals,
prompt caching, stop reasons and usage."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from chatmem import (
    CONVERSATION_ID,
    AssistantMessage,
    AsyncChatClient,
    AsyncMessageWindowChatMemory,
    ChatClient,
    ChatModelConnectionError,
    ChatModelHTTPError,
    ChatOptions,
    Message,
    MessageWindowChatMemory,
    ReasoningPart,
    TokenUsage,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from chatmem.anthropic import AnthropicChatModel, AsyncAnthropicChatModel
from chatmem.anthropic._payloads import INTERLEAVED_THINKING_BETA, finish_reason
from chatmem.testing import AnthropicTestServer, ScriptedMessage
from chatmem_advisors import AsyncMessageChatMemoryAdvisor, MessageChatMemoryAdvisor
from chatmem_repositories import create_async_repository, create_repository
from tests.support.backends import backend_url
from tests.support.integration_backends import new_conversation_id

SYSTEM = "You are a helpful assistant."
BREAKPOINT = {"type": "ephemeral"}


@tool
def weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city.
    """
    return {"Nice": "sunny, 24 C", "Paris": "rain, 12 C"}[city]


@tool
def local_time(city: str) -> str:
    """The local time in a city.

    Args:
        city: The city.
    """
    return f"10:00 in {city}"


@pytest.fixture
def server() -> Iterator[AnthropicTestServer]:
    with AnthropicTestServer() as running:
        yield running


def new_model(server: AnthropicTestServer, **settings: Any) -> AnthropicChatModel:
    return AnthropicChatModel(
        model="claude-test", base_url=server.base_url, api_key="test", max_retries=0, **settings
    )


def new_async_model(server: AnthropicTestServer, **settings: Any) -> AsyncAnthropicChatModel:
    return AsyncAnthropicChatModel(
        model="claude-test", base_url=server.base_url, api_key="test", max_retries=0, **settings
    )


def thinking_model(server: AnthropicTestServer) -> AnthropicChatModel:
    return new_model(server, thinking_budget=1024, interleaved_thinking=True)


def memory_client(model: Any, memory: Any, chat_client: Any = ChatClient) -> Any:
    advisor = (
        MessageChatMemoryAdvisor(memory)
        if chat_client is ChatClient
        else AsyncMessageChatMemoryAdvisor(memory)
    )
    return chat_client.builder(model).default_system(SYSTEM).default_advisors(advisor).build()


# -- the three-turn tool loop with thinking --------------------------------------------------

WEB_SEARCH = [
    {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "web_search",
        "input": {"query": "Paris weather"},
    },
    {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [{"type": "web_search_result", "url": "https://example.com", "title": None}],
    },
]

# Five answers over three turns: a tool round in each of the first two turns. The second
# turn's first answer interleaves thinking, a server tool's blocks, a redacted block and two
# tool calls: all of it must come back in that order.
THREE_TURNS = [
    ScriptedMessage.tool_use(
        ("toolu_1", "weather", {"city": "Nice"}),
        thinking="The user wants the weather in Nice: call the tool.",
        text="Let me check.",
    ),
    ScriptedMessage.text("It is sunny in Nice.", thinking="Sunny, 24 C: say so."),
    ScriptedMessage(
        [
            {"type": "thinking", "thinking": "Paris: search, then weather and time."},
            *WEB_SEARCH,
            {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Paris"}},
            {"type": "redacted_thinking"},
            {"type": "tool_use", "id": "toolu_3", "name": "local_time", "input": {"city": "Paris"}},
        ]
    ),
    ScriptedMessage.text("Rain in Paris; it is 10:00 there.", thinking="Rain, 12 C, 10:00."),
    ScriptedMessage.text("Goodbye, Mr Bond.", thinking="A farewell."),
]
TURNS = ["Weather in Nice?", "And in Paris, with the time there?", "Thanks, goodbye."]


def run_three_turns(client: Any, cid: str, streamed: bool) -> list[str]:
    answers = []
    for text in TURNS:
        spec = client.prompt(text).tools(weather, local_time).advisors({CONVERSATION_ID: cid})
        if streamed:
            answers.append("".join(spec.stream().content()))
        else:
            answers.append(spec.call().content())
    return answers


def assistant_turns(body: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [m["content"] for m in body["messages"] if m["role"] == "assistant"]


def assert_requests_carried_every_block_back(server: AnthropicTestServer) -> None:
    """Each request carries every earlier answer, block for block, as the server sent it."""
    assert server.rejected == [], [r.error for r in server.rejected]
    requests, responses = server.message_requests, server.responses
    assert len(requests) == len(responses) == 5
    # Request k carries the answers of requests 1..k-1 (none is its last message, so none
    # has a cache breakpoint): signatures, redacted data and provider blocks byte for byte,
    # in their original order.
    for number, body in enumerate(requests):
        assert assistant_turns(body) == [r["content"] for r in responses[:number]]
        assert body["system"] == [{"type": "text", "text": SYSTEM, "cache_control": BREAKPOINT}]
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
        assert body["messages"][-1]["content"][-1]["cache_control"] == BREAKPOINT
        marked = [b for m in body["messages"] for b in m["content"] if "cache_control" in b]
        assert len(marked) == 1  # the last message only
    blocks = [b["type"] for b in assistant_turns(requests[3])[2]]
    assert blocks == [
        "thinking",
        "server_tool_use",
        "web_search_tool_result",
        "tool_use",
        "redacted_thinking",
        "tool_use",
    ]
    headers = [r.headers.get("anthropic-beta") for r in server.requests]
    assert headers == [INTERLEAVED_THINKING_BETA] * 5


def assert_stored_turns(messages: list[Message], server: AnthropicTestServer) -> None:
    types = [type(m).__name__ for m in messages]
    assert types == [
        "UserMessage",
        "AssistantMessage",
        "ToolResponseMessage",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolResponseMessage",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    answers = [m for m in messages if isinstance(m, AssistantMessage)]
    for answer, response in zip(answers, server.responses, strict=True):
        thinking = [b for b in response["content"] if "thinking" in b["type"]]
        assert [(p.text, p.signature, p.redacted) for p in answer.reasoning] == [
            (b.get("thinking", ""), b.get("signature") or b.get("data"), "data" in b)
            for b in thinking
        ]
        assert {(p.provider, p.model) for p in answer.reasoning} == {("anthropic", "claude-test")}
        usage = response["usage"]
        assert answer.usage == TokenUsage(
            input_tokens=usage["input_tokens"]
            + usage["cache_read_input_tokens"]
            + usage["cache_creation_input_tokens"],
            output_tokens=usage["output_tokens"],
            cache_read_tokens=usage["cache_read_input_tokens"],
            cache_write_tokens=usage["cache_creation_input_tokens"],
        )
    interleaved = answers[2]
    assert [p.index for p in interleaved.reasoning] == [0, 4]
    assert [(i.type, i.index, i.data) for i in interleaved.provider_items] == [
        ("server_tool_use", 1, WEB_SEARCH[0]),
        ("web_search_tool_result", 2, WEB_SEARCH[1]),
    ]
    assert [c.id for c in interleaved.tool_calls] == ["toolu_2", "toolu_3"]
    assert all(p.index is None for a in answers[:2] + answers[3:] for p in a.reasoning)
    # From the second request on, the conversation so far is read from the prompt cache.
    assert [a.usage.cache_read_tokens > 0 for a in answers if a.usage] == [
        False,
        True,
        True,
        True,
        True,
    ]


@pytest.mark.parametrize("streamed", [False, True], ids=["call", "stream"])
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_three_turn_tool_loop_with_thinking_and_memory(
    server: AnthropicTestServer, tmp_path: Path, backend: str, streamed: bool
) -> None:
    repository = create_repository(backend_url(backend, tmp_path))
    cid = new_conversation_id()
    try:
        server.reply(*THREE_TURNS)
        memory = MessageWindowChatMemory(repository, max_messages=50)
        with thinking_model(server) as model:
            answers = run_three_turns(memory_client(model, memory), cid, streamed)
        # A stream hands the reader the text of every round; a call, the final answer's.
        first = "Let me check.It is sunny in Nice." if streamed else "It is sunny in Nice."
        assert answers == [first, "Rain in Paris; it is 10:00 there.", "Goodbye, Mr Bond."]
        assert_requests_carried_every_block_back(server)
        assert_stored_turns(repository.find_by_conversation_id(cid), server)
        if backend == "sqlite":
            assert_raw_rows(tmp_path / "chat.db", cid, server)
    finally:
        repository.close()


def assert_raw_rows(path: Path, cid: str, server: AnthropicTestServer) -> None:
    # The stored JSON itself holds each signature and redacted block's data, byte for byte.
    # closing(): a sqlite3 connection's own context manager commits but does not close it.
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute(
            "SELECT type, body FROM chatmem_messages WHERE conversation_id = ? ORDER BY position",
            (cid,),
        ).fetchall()
    stored = [json.loads(body) for kind, body in rows if kind == "assistant"]
    for row, response in zip(stored, server.responses, strict=True):
        sent = [
            b.get("signature") or b.get("data")
            for b in response["content"]
            if "thinking" in b["type"]
        ]
        assert [p["signature"] for p in row["reasoning"]] == sent


async def test_async_three_turn_tool_loop_streamed_and_called(
    server: AnthropicTestServer, tmp_path: Path
) -> None:
    repository = create_async_repository(backend_url("sqlite", tmp_path))
    cid = new_conversation_id()
    server.reply(*THREE_TURNS)
    memory = AsyncMessageWindowChatMemory(repository, max_messages=50)
    async with new_async_model(server, thinking_budget=1024, interleaved_thinking=True) as model:
        client = memory_client(model, memory, AsyncChatClient)
        for number, text in enumerate(TURNS):
            spec = client.prompt(text).tools(weather, local_time).advisors({CONVERSATION_ID: cid})
            if number % 2:
                assert [p async for p in spec.stream().content()]
            else:
                assert await spec.call().content()
    assert_requests_carried_every_block_back(server)
    assert_stored_turns(await repository.find_by_conversation_id(cid), server)
    await repository.aclose()


# -- what is stored, what is refused -----------------------------------------------------------


def test_a_stream_cut_short_stores_nothing(server: AnthropicTestServer) -> None:
    memory = MessageWindowChatMemory()
    with thinking_model(server) as model:
        client = memory_client(model, memory)
        server.reply_text("Hello, Mr Bond.", thinking="A greeting.")
        client.prompt("My name is James Bond").advisors({CONVERSATION_ID: "007"}).call().content()
        before = memory.get("007")
        # Cut inside the answer's text: the pieces already received reach the reader, then
        # the error; nothing of the turn is stored, not even the user message.
        server.reply(
            ScriptedMessage(
                [
                    {"type": "thinking", "thinking": "Count."},
                    {"type": "text", "text": "one two three"},
                ],
                truncate_after=8,  # after the text's first delta
            )
        )
        received: list[str] = []
        spec = client.prompt("Count").advisors({CONVERSATION_ID: "007"}).stream()
        with pytest.raises(ChatModelConnectionError, match="message_stop"):
            received.extend(spec.content())
        assert "".join(received) == "one two "
        assert memory.get("007") == before
        # Cut before a tool call's arguments are complete: the tool never runs.
        asked: list[str] = []

        @tool
        def book(city: str) -> str:
            """Book a trip.

            Args:
                city: The destination.
            """
            asked.append(city)
            return "booked"

        call = ScriptedMessage.tool_use(("toolu_9", "book", {"city": "Rome"}), thinking="Book.")
        server.reply(ScriptedMessage(call.blocks, truncate_after=9))
        with pytest.raises(ChatModelConnectionError):
            list(
                client.prompt("Book Rome")
                .tools(book)
                .advisors({CONVERSATION_ID: "007"})
                .stream()
                .content()
            )
        assert asked == []
        assert memory.get("007") == before


def test_an_error_event_mid_stream_is_a_typed_error_and_stores_nothing(
    server: AnthropicTestServer,
) -> None:
    memory = MessageWindowChatMemory()
    with thinking_model(server) as model:
        client = memory_client(model, memory)
        server.reply(ScriptedMessage(ScriptedMessage.text("Hi there.").blocks, fail_after_events=4))
        with pytest.raises(ChatModelHTTPError) as raised:
            list(client.prompt("Hi").advisors({CONVERSATION_ID: "007"}).stream().content())
        assert raised.value.body == {
            "type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"},
        }
    assert memory.get("007") == []


@pytest.mark.parametrize(
    ("status", "kind"),
    [(400, "invalid_request_error"), (429, "rate_limit_error"), (529, "overloaded_error")],
)
def test_refused_requests_are_typed_errors(
    server: AnthropicTestServer, status: int, kind: str
) -> None:
    memory = MessageWindowChatMemory()
    server.reply_error(status, "no")
    with new_model(server) as model, pytest.raises(ChatModelHTTPError) as raised:
        memory_client(model, memory).prompt("Hi").advisors({CONVERSATION_ID: "7"}).call().content()
    assert raised.value.status_code == status
    assert raised.value.body == {"type": "error", "error": {"type": kind, "message": "no"}}
    assert memory.get("7") == []


def test_a_thinking_block_changed_in_storage_is_refused_by_the_provider(
    server: AnthropicTestServer,
) -> None:
    # The server checks signatures as Anthropic does: one byte off and the request is refused.
    memory = MessageWindowChatMemory()
    server.reply(THREE_TURNS[0], THREE_TURNS[1])
    with thinking_model(server) as model:
        client = memory_client(model, memory)
        client.prompt(TURNS[0]).tools(weather).advisors({CONVERSATION_ID: "7"}).call().content()
        stored = memory.get("7")
        answer = stored[1]
        assert isinstance(answer, AssistantMessage)
        part = answer.reasoning[0]
        assert part.signature is not None
        forged = part.model_copy(update={"signature": part.signature[:-2] + "A="})
        memory.clear("7")
        memory.add(
            "7", [*stored[:1], answer.model_copy(update={"reasoning": [forged]}), *stored[2:]]
        )
        with pytest.raises(ChatModelHTTPError, match="signature") as raised:
            client.prompt("Again?").advisors({CONVERSATION_ID: "7"}).call().content()
    assert raised.value.status_code == 400
    assert (
        server.rejected[-1].error == "messages.1.content.0: Invalid `signature` in `thinking` block"
    )


def test_reasoning_of_another_provider_is_left_out(server: AnthropicTestServer) -> None:
    memory = MessageWindowChatMemory()
    foreign = ReasoningPart(text="From elsewhere.", signature="gAAAA", provider="openai", id="rs_1")
    memory.add("7", [UserMessage("Hi"), AssistantMessage("Hello.", reasoning=[foreign])])
    server.reply_text("Still here.")
    with new_model(server) as model:
        memory_client(model, memory).prompt("Bye").advisors({CONVERSATION_ID: "7"}).call().content()
    assert server.message_requests[0]["messages"][1] == {"role": "assistant", "content": "Hello."}
    assert server.rejected == []


# -- caching, options, stop reasons, telemetry ---------------------------------------------------


def test_prompt_caching_can_be_turned_off(server: AnthropicTestServer) -> None:
    server.reply_text("One.", "Two.")
    with new_model(server, prompt_caching=False) as model:
        client = memory_client(model, MessageWindowChatMemory())
        for text in ("a", "b"):
            client.prompt(text).advisors({CONVERSATION_ID: "7"}).call().content()
    for body in server.message_requests:
        assert body["system"] == SYSTEM
        assert "cache_control" not in json.dumps(body)
    assert [r["usage"]["cache_read_input_tokens"] for r in server.responses] == [0, 0]


def test_options_map_to_the_messages_api(server: AnthropicTestServer) -> None:
    server.reply_text("Fine.")
    options = ChatOptions(
        temperature=0.3,
        top_p=0.9,
        stop=("END",),
        max_tokens=300,
        tool_choice="required",
        parallel_tool_calls=False,
        seed=7,
        extra={"metadata": {"user_id": "007"}},
    )
    with new_model(server, options=options) as model:
        ChatClient.create(model).prompt("Hi").tools(weather).call().content()
    body = server.message_requests[0]
    assert (body["model"], body["max_tokens"], body["temperature"], body["top_p"]) == (
        "claude-test",
        300,
        0.3,
        0.9,
    )
    assert body["stop_sequences"] == ["END"]
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert body["tools"][0]["name"] == "weather"
    assert body["tools"][0]["input_schema"]["properties"]["city"]["type"] == "string"
    assert body["metadata"] == {"user_id": "007"}
    assert "seed" not in body
    assert "thinking" not in body


@pytest.mark.parametrize(
    ("stop", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("tool_use", "tool_calls"),
        ("max_tokens", "length"),
        ("refusal", "content_filter"),
        ("pause_turn", "pause_turn"),
    ],
)
def test_stop_reasons_map_to_finish_reasons(stop: str, finish: str) -> None:
    assert finish_reason(stop) == finish


@pytest.mark.parametrize("streamed", [False, True], ids=["call", "stream"])
def test_a_stop_reason_arrives_as_the_finish_reason(
    server: AnthropicTestServer, streamed: bool
) -> None:
    server.reply(ScriptedMessage(ScriptedMessage.text("Cut").blocks, stop_reason="max_tokens"))
    with new_model(server) as model:
        spec = ChatClient.create(model).prompt("Hi")
        if streamed:
            response = list(spec.stream().chat_response())[-1]
        else:
            response = spec.call().chat_response()
    assert response.finish_reason == "length"


def test_spans_name_the_provider(server: AnthropicTestServer) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from chatmem.telemetry import configure

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    configure(tracer_provider=provider, capture_content=False)
    try:
        server.reply_text("Hello.")
        with new_model(server) as model:
            ChatClient.create(model).prompt("Hi").call().content()
    finally:
        configure(capture_content=False)
        provider.shutdown()
    spans = exporter.get_finished_spans()
    assert {s.attributes["gen_ai.provider.name"] for s in spans if s.attributes} == {"anthropic"}
    model_span = next(s for s in spans if s.kind.name == "CLIENT")
    assert model_span.attributes is not None
    usage = server.responses[0]["usage"]
    assert (
        model_span.attributes["gen_ai.usage.cache_creation.input_tokens"]
        == usage["cache_creation_input_tokens"]
    )


def test_tool_results_answer_their_calls_on_the_wire(server: AnthropicTestServer) -> None:
    server.reply(THREE_TURNS[0], THREE_TURNS[1])
    with new_model(server, thinking_budget=1024) as model:
        response = ChatClient.create(model).prompt("Weather?").tools(weather).call().chat_response()
    second = server.message_requests[1]["messages"]
    assert second[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "sunny, 24 C",
        "cache_control": BREAKPOINT,
    }
    assert isinstance(response.exchange[1], ToolResponseMessage)
    assert response.usage is not None
    assert response.usage.output_tokens == 10  # summed over the two rounds


def test_an_entity_is_asked_for_with_structured_output(server: AnthropicTestServer) -> None:
    from pydantic import BaseModel

    class Agent(BaseModel):
        name: str
        number: str

    server.reply_text('{"name": "James Bond", "number": "007"}')
    with new_model(server) as model:
        agent = ChatClient.create(model).prompt("Who?").call().entity(Agent)
    assert agent == Agent(name="James Bond", number="007")
    output = server.message_requests[0]["output_config"]["format"]
    assert output["type"] == "json_schema"
    assert output["schema"]["properties"]["number"] == {"title": "Number", "type": "string"}


def test_a_model_needs_a_key_or_a_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    from chatmem import ConfigurationError

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        AnthropicChatModel()
    with pytest.raises(ConfigurationError, match="timeout"):
        AnthropicChatModel(api_key="k", timeout=0)
    with AnthropicChatModel(base_url="http://user:secret@127.0.0.1:9") as model:
        assert "secret" not in repr(model)
        assert model.provider_name == "anthropic"
