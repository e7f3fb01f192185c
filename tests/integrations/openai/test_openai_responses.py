"""The OpenAI Responses API model over real HTTP, against the test server's /v1/responses."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy

from chatmem import (
    AssistantMessage,
    AsyncChatClient,
    AsyncMessageWindowChatMemory,
    ChatClient,
    ChatModelConnectionError,
    ChatModelHTTPError,
    ConfigurationError,
    MessageWindowChatMemory,
    ReasoningPart,
    TokenUsage,
    UserMessage,
)
from chatmem.memory import CONVERSATION_ID
from chatmem.model import ChatOptions, Prompt
from chatmem.openai import AsyncOpenAIResponsesChatModel, OpenAIResponsesChatModel
from chatmem.testing import OpenAITestServer, ScriptedResponse
from chatmem.testing.responses_protocol import (
    compaction_item,
    function_call_item,
    message_item,
    reasoning_item,
)
from chatmem.tools import tool
from chatmem_advisors import AsyncMessageChatMemoryAdvisor, MessageChatMemoryAdvisor
from chatmem_repositories import create_async_repository, create_repository
from tests.support.backends import backend_url
from tests.support.integration_backends import new_conversation_id

FORECASTS = {"Paris": "sunny, 21 C", "London": "rain, 14 C"}


@tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return FORECASTS[city]


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as running:
        yield running
    assert running.rejected == [], "the server rejected a request as the real API would"


@pytest.fixture
def model(server: OpenAITestServer) -> Iterator[OpenAIResponsesChatModel]:
    with OpenAIResponsesChatModel(
        model="gpt-5-mini", base_url=server.base_url, api_key="test", max_retries=0, timeout=5
    ) as opened:
        yield opened


@pytest.fixture
async def amodel(server: OpenAITestServer) -> AsyncIterator[AsyncOpenAIResponsesChatModel]:
    async with AsyncOpenAIResponsesChatModel(
        model="gpt-5-mini", base_url=server.base_url, api_key="test", max_retries=0, timeout=5
    ) as opened:
        yield opened


def script_tool_loop(server: OpenAITestServer) -> list[dict[str, Any]]:
    """Three model turns: reason and call, reason and call again, reason and answer."""
    first = reasoning_item("The user wants two cities.", "Start with Paris.")
    second = reasoning_item("Paris is done; now London.")
    third = reasoning_item()  # no summary, only the encrypted content
    server.reply_response(
        ScriptedResponse([first, function_call_item("call_paris", "weather", '{"city": "Paris"}')]),
        ScriptedResponse(
            [second, function_call_item("call_london", "weather", '{"city": "London"}')]
        ),
        ScriptedResponse([third, message_item("Paris is sunny, London rainy.")]),
    )
    return [first, second, third]


def sent(item: dict[str, Any]) -> tuple[Any, ...]:
    """An input item in brief: its type and what identifies it."""
    kind = item.get("type", "message")
    if kind == "reasoning":
        return (kind, item["encrypted_content"])
    if kind in ("function_call", "function_call_output"):
        return (kind, item["call_id"])
    return (kind, item["role"])


def assert_loop_requests(server: OpenAITestServer, reasoning: list[dict[str, Any]]) -> None:
    requests = server.responses_requests[-3:]
    for body in requests:
        assert body["store"] is False
        assert body["include"] == ["reasoning.encrypted_content"]
        assert "previous_response_id" not in body
        assert [t["name"] for t in body["tools"]] == ["weather"]
    r1, r2, _ = (r["encrypted_content"] for r in reasoning)
    assert [sent(i) for i in requests[0]["input"]][-1] == ("message", "user")
    assert [sent(i) for i in requests[1]["input"]][-4:] == [
        ("message", "user"),
        ("reasoning", r1),
        ("function_call", "call_paris"),
        ("function_call_output", "call_paris"),
    ]
    assert [sent(i) for i in requests[2]["input"]][-7:] == [
        ("message", "user"),
        ("reasoning", r1),
        ("function_call", "call_paris"),
        ("function_call_output", "call_paris"),
        ("reasoning", r2),
        ("function_call", "call_london"),
        ("function_call_output", "call_london"),
    ]
    # Sent back as the provider returned them, without ids (store=false).
    returned = requests[2]["input"][-6]
    assert returned == {
        "type": "reasoning",
        "summary": reasoning[0]["summary"],
        "encrypted_content": r1,
    }
    assert not [i for i in requests[2]["input"] if "id" in i]


def stored_rows(url: str, conversation_id: str) -> list[dict[str, Any]]:
    """The message rows as the SQL backend stored them (the JSON body of each)."""
    # The driver's URL: without the options chatmem reads (initialize_schema, ...).
    driver_url = sqlalchemy.make_url(url).difference_update_query(["initialize_schema"])
    engine = sqlalchemy.create_engine(driver_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sqlalchemy.text(
                    "SELECT type, body FROM chatmem_messages WHERE conversation_id = :c "
                    "ORDER BY position"
                ),
                {"c": conversation_id},
            ).all()
    finally:
        engine.dispose()
    return [{"type": kind, **json.loads(body)} for kind, body in rows]


def assert_stored_turn(rows: list[dict[str, Any]], reasoning: list[dict[str, Any]]) -> None:
    assert [r["type"] for r in rows] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    answers = [rows[1], rows[3], rows[5]]
    for row, item in zip(answers, reasoning, strict=True):
        [part] = row["reasoning"]
        assert part["signature"] == item["encrypted_content"]
        assert part["provider"] == "openai"
        assert part["model"] == "gpt-5-mini"
        assert row["usage"] == {
            "input_tokens": 20,
            "output_tokens": 12,
            "reasoning_tokens": 8,
            "cache_read_tokens": 4,
            "cache_write_tokens": 0,
        }
    assert rows[1]["reasoning"][0]["details"]["summary"] == reasoning[0]["summary"]
    assert rows[3]["reasoning"][0]["text"] == "Paris is done; now London."
    assert [c["id"] for c in rows[1]["tool_calls"]] == ["call_paris"]
    assert rows[5]["text"] == "Paris is sunny, London rainy."


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize("streaming", [False, True], ids=["call", "stream"])
def test_three_turn_tool_loop_with_reasoning_on_sql(
    server: OpenAITestServer,
    model: OpenAIResponsesChatModel,
    tmp_path: Path,
    backend: str,
    streaming: bool,
) -> None:
    url = backend_url(backend, tmp_path)
    conversation_id = new_conversation_id()
    reasoning = script_tool_loop(server)
    with create_repository(url) as repository:
        client = (
            ChatClient.builder(model)
            .default_advisors(MessageChatMemoryAdvisor(MessageWindowChatMemory(repository)))
            .default_tools(weather)
            .build()
        )
        request = client.prompt("Weather in Paris, then London?").advisors(
            {CONVERSATION_ID: conversation_id}
        )
        answer = "".join(request.stream().content()) if streaming else request.call().content()
        assert answer == "Paris is sunny, London rainy."
        assert_loop_requests(server, reasoning)
        stored = repository.find_by_conversation_id(conversation_id)
    assert_stored_turn(stored_rows(url, conversation_id), reasoning)
    # The stored answer reads back with its reasoning parts in order.
    assert [len(m.reasoning) for m in stored if isinstance(m, AssistantMessage)] == [1, 1, 1]

    # The next question: the whole stored turn goes back, read from the database.
    server.reply_response(ScriptedResponse([message_item("You asked about the weather.")]))
    with create_repository(url) as repository:
        client = (
            ChatClient.builder(model)
            .default_advisors(MessageChatMemoryAdvisor(MessageWindowChatMemory(repository)))
            .build()
        )
        client.prompt("What did I ask?").advisors(
            {CONVERSATION_ID: conversation_id}
        ).call().content()
    fourth = server.responses_requests[-1]["input"]
    assert [i["encrypted_content"] for i in fourth if i.get("type") == "reasoning"] == [
        r["encrypted_content"] for r in reasoning
    ]


async def test_async_tool_loop_streamed_with_memory(
    server: OpenAITestServer, amodel: AsyncOpenAIResponsesChatModel, tmp_path: Path
) -> None:
    reasoning = script_tool_loop(server)
    async with create_async_repository(backend_url("sqlite", tmp_path)) as repository:
        client = (
            AsyncChatClient.builder(amodel)
            .default_advisors(
                AsyncMessageChatMemoryAdvisor(AsyncMessageWindowChatMemory(repository))
            )
            .default_tools(weather)
            .build()
        )
        pieces = [
            piece
            async for piece in client.prompt("Weather in Paris, then London?")
            .advisors({CONVERSATION_ID: "007"})
            .stream()
            .content()
        ]
        assert pieces == ["Paris", " is", " sunny,", " London", " rainy."]
        stored = await repository.find_by_conversation_id("007")
    assert_loop_requests(server, reasoning)
    assert [m.type.value for m in stored] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]


def test_stream_cut_short_stores_nothing(
    server: OpenAITestServer, model: OpenAIResponsesChatModel
) -> None:
    memory = MessageWindowChatMemory()
    client = ChatClient.builder(model).default_advisors(MessageChatMemoryAdvisor(memory)).build()
    output = [reasoning_item("Thinking."), message_item("A long answer that never ends")]
    # Cut after the reasoning item and two words of the answer: no response.completed.
    server.reply_response(ScriptedResponse(output, truncate_after=10))
    received: list[str] = []
    pieces = client.prompt("Hi").advisors({CONVERSATION_ID: "007"}).stream().content()
    with pytest.raises(ChatModelConnectionError, match=r"no response\.completed"):
        received.extend(pieces)
    assert received == ["A", " long"]
    assert memory.get("007") == []


def test_a_tool_loop_cut_short_in_its_second_round_stores_nothing(
    server: OpenAITestServer, model: OpenAIResponsesChatModel
) -> None:
    memory = MessageWindowChatMemory()
    client = (
        ChatClient.builder(model)
        .default_advisors(MessageChatMemoryAdvisor(memory))
        .default_tools(weather)
        .build()
    )
    call = function_call_item("call_paris", "weather", '{"city": "Paris"}')
    server.reply_response(
        ScriptedResponse([reasoning_item("Paris first."), call]),
        ScriptedResponse([reasoning_item("Done."), message_item("Sunny.")], truncate_after=6),
    )
    pieces = client.prompt("Weather in Paris?").advisors({CONVERSATION_ID: "007"}).stream()
    with pytest.raises(ChatModelConnectionError):
        "".join(pieces.content())
    assert len(server.responses_requests) == 2  # the tool ran, the second round was cut
    assert memory.get("007") == []


def test_error_event_mid_stream_stores_nothing(
    server: OpenAITestServer, model: OpenAIResponsesChatModel
) -> None:
    memory = MessageWindowChatMemory()
    client = ChatClient.builder(model).default_advisors(MessageChatMemoryAdvisor(memory)).build()
    server.reply_response(ScriptedResponse([message_item("Never finished")], fail_after_events=4))
    with pytest.raises(Exception, match="scripted failure mid-stream") as raised:
        "".join(client.prompt("Hi").advisors({CONVERSATION_ID: "007"}).stream().content())
    assert type(raised.value).__name__ == "ChatModelResponseError"
    assert memory.get("007") == []


def test_a_refused_request_is_a_typed_error_and_stores_nothing(
    server: OpenAITestServer, model: OpenAIResponsesChatModel
) -> None:
    memory = MessageWindowChatMemory()
    client = ChatClient.builder(model).default_advisors(MessageChatMemoryAdvisor(memory)).build()
    server.reply_response(ScriptedResponse(status=429, error_message="Rate limit reached"))
    with pytest.raises(ChatModelHTTPError) as raised:
        client.prompt("Hi").advisors({CONVERSATION_ID: "007"}).call().content()
    assert raised.value.status_code == 429
    assert raised.value.body["message"] == "Rate limit reached"  # type: ignore[index]
    assert memory.get("007") == []


def test_reasoning_changed_by_one_byte_is_refused(
    server: OpenAITestServer, model: OpenAIResponsesChatModel
) -> None:
    item = reasoning_item("Think.")
    server.reply_response(ScriptedResponse([item, message_item("Hi.")]))
    answer = model.call(Prompt([UserMessage("Hi")])).generations[0].message
    part = answer.reasoning[0]
    follow_up = [UserMessage("Hi"), answer, UserMessage("Again")]
    tampered = answer.model_copy(
        update={"reasoning": [part.model_copy(update={"signature": part.signature + "x"})]}
    )
    server.reply_response(ScriptedResponse([message_item("Hello again.")]))
    assert model.call(Prompt(follow_up)).text == "Hello again."
    with pytest.raises(ChatModelHTTPError, match="could not be verified") as raised:
        model.call(Prompt([UserMessage("Hi"), tampered, UserMessage("Again")]))
    assert raised.value.status_code == 400
    server.requests.pop()  # the rejection was the point


def test_reasoning_of_another_provider_is_left_out(
    server: OpenAITestServer, model: OpenAIResponsesChatModel
) -> None:
    thinking = ReasoningPart(text="Claude thought.", signature="EqQB", provider="anthropic")
    earlier = AssistantMessage("Hello from Claude.", reasoning=[thinking])
    server.reply_response(ScriptedResponse([message_item("Hello from GPT.")]))
    model.call(Prompt([UserMessage("Hi"), earlier, UserMessage("Again")]))
    assert server.responses_requests[0]["input"] == [
        {"type": "message", "role": "user", "content": "Hi"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Hello from Claude.", "annotations": []}],
        },
        {"type": "message", "role": "user", "content": "Again"},
    ]


def test_whole_answer_keeps_order_usage_and_finish_reason(
    server: OpenAITestServer, model: OpenAIResponsesChatModel
) -> None:
    compacted = compaction_item()
    calls = [
        reasoning_item("One."),
        function_call_item("call_a", "weather", '{"city": "Paris"}'),
        reasoning_item("Two."),
        function_call_item("call_b", "weather", '{"city": "London"}'),
    ]
    server.reply_response(ScriptedResponse([compacted, *calls]))
    response = model.call(Prompt([UserMessage("Weather?")]))
    message = response.generations[0].message
    assert response.finish_reason == "tool_calls"
    assert [p.index for p in message.reasoning] == [1, 3]
    assert message.provider_items[0].data == compacted
    assert message.provider_items[0].index == 0
    assert message.usage == TokenUsage(
        input_tokens=20, output_tokens=12, reasoning_tokens=8, cache_read_tokens=4
    )
    assert response.usage is not None
    assert response.usage.input_tokens == 20
    assert response.metadata["id"].startswith("resp_")


def test_incomplete_answer_finishes_with_length(
    server: OpenAITestServer, model: OpenAIResponsesChatModel
) -> None:
    server.reply_response(
        ScriptedResponse([message_item("Cut")], incomplete_reason="max_output_tokens"),
        ScriptedResponse([message_item("Cut")], incomplete_reason="max_output_tokens"),
    )
    prompt = Prompt([UserMessage("Hi")], ChatOptions(max_tokens=3))
    assert model.call(prompt).finish_reason == "length"
    assert server.responses_requests[0]["max_output_tokens"] == 3
    chunks = list(model.stream(prompt))
    assert chunks[-1].finish_reason == "length"


def test_options_the_api_does_not_take_are_refused(model: OpenAIResponsesChatModel) -> None:
    with pytest.raises(ConfigurationError, match="takes no stop, seed option"):
        model.call(Prompt([UserMessage("Hi")], ChatOptions(stop=("x",), seed=1)))


def test_store_true_sends_item_ids_and_reasoning_config(server: OpenAITestServer) -> None:
    with OpenAIResponsesChatModel(
        model="gpt-5",
        base_url=server.base_url,
        api_key="test",
        store=True,
        reasoning={"effort": "low", "summary": "auto"},
        max_retries=0,
    ) as stored_model:
        server.reply_response(ScriptedResponse([reasoning_item("x"), message_item("Hi.")]))
        answer = stored_model.call(Prompt([UserMessage("Hi")])).generations[0].message
        server.reply_response(ScriptedResponse([message_item("Again.")]))
        stored_model.call(Prompt([UserMessage("Hi"), answer, UserMessage("Again")]))
    body = server.responses_requests[1]
    assert body["store"] is True
    assert "include" not in body
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert [i.get("id", "")[:3] for i in body["input"]] == ["", "rs_", "msg", ""]


def test_aggregated_stream_keeps_what_its_chunks_carry_beyond_text() -> None:
    from chatmem.messages import ProviderItem
    from chatmem.model import ChatResponse, Generation, aggregate_chunks

    thought = ReasoningPart(text="Hmm.", signature="gAAA", provider="openai", index=1)
    item = ProviderItem(provider="openai", type="compaction", data={"type": "compaction"})
    usage = TokenUsage(input_tokens=5, output_tokens=3)
    last = AssistantMessage(
        "",
        reasoning=[thought],
        provider_items=[item],
        usage=usage,
        metadata={"openai_responses": {"message_id": "msg_1"}},
    )
    chunks = [
        ChatResponse([Generation(AssistantMessage("Hello"))]),
        ChatResponse([Generation(AssistantMessage(", Mr Bond."))]),
        ChatResponse([Generation(last, "stop")]),
    ]
    answer = aggregate_chunks(chunks).generations[0].message
    assert answer.text == "Hello, Mr Bond."
    assert (answer.reasoning, answer.provider_items, answer.usage) == ([thought], [item], usage)
    assert answer.metadata == {"openai_responses": {"message_id": "msg_1"}}
    plain = aggregate_chunks(chunks[:2]).generations[0].message
    assert (plain.reasoning, plain.provider_items, plain.usage, plain.metadata) == (
        [],
        [],
        None,
        {},
    )


def test_options_reach_the_request(
    server: OpenAITestServer, model: OpenAIResponsesChatModel
) -> None:
    server.reply_response(ScriptedResponse([message_item("ok")]))
    options = ChatOptions(
        temperature=0.2,
        top_p=0.9,
        tool_choice={"type": "function", "function": {"name": "weather"}},
        parallel_tool_calls=False,
        response_format={"name": "answer", "schema": {"type": "object"}, "strict": True},
        extra={"service_tier": "flex"},
    )
    tools = [weather.definition]
    model.call(Prompt([UserMessage("Hi")], options, tools))
    body = server.responses_requests[0]
    assert (body["temperature"], body["top_p"], body["service_tier"]) == (0.2, 0.9, "flex")
    assert body["tool_choice"] == {"type": "function", "name": "weather"}
    assert body["parallel_tool_calls"] is False
    assert body["tools"][0]["name"] == "weather"
    assert body["tools"][0]["parameters"]["properties"]["city"]["type"] == "string"
    assert body["text"] == {
        "format": {
            "type": "json_schema",
            "name": "answer",
            "schema": {"type": "object"},
            "strict": True,
        }
    }


async def test_async_call_keeps_reasoning(
    server: OpenAITestServer, amodel: AsyncOpenAIResponsesChatModel
) -> None:
    item = reasoning_item("Say hello.")
    server.reply_response(ScriptedResponse([item, message_item("Hello, Mr Bond.")]))
    response = await amodel.call(Prompt([UserMessage("My name is James Bond")]))
    message = response.generations[0].message
    assert message.text == "Hello, Mr Bond."
    assert message.reasoning[0].signature == item["encrypted_content"]
    assert response.finish_reason == "stop"
