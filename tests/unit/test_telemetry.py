"""OpenTelemetry spans and metrics with the real SDK (in-memory exporter and metric reader).

The model is the OpenAI model talking HTTP to the local OpenAI test server; memory is the
window memory over the in-memory repository. Sync and async must give the same tree.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from chatmem import (
    CONVERSATION_ID,
    AsyncChatClient,
    AsyncMessageWindowChatMemory,
    ChatClient,
    ChatModelError,
    MessageWindowChatMemory,
    tool,
)
from chatmem.openai import AsyncOpenAIChatModel, OpenAIChatModel
from chatmem.telemetry import configure, log_extra
from chatmem.testing import OpenAITestServer
from chatmem_advisors import (
    AsyncMessageChatMemoryAdvisor,
    MessageChatMemoryAdvisor,
    SimpleLoggerAdvisor,
)

MODEL = "gpt-4o-mini"
QUESTION = "What is the weather in Paris? My code is 4711."
ANSWER = "Sunny in Paris, agent."
ARGUMENTS = '{"city": "Paris"}'
TOOL_RESULT = "sunny, 24 degrees"
CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return TOOL_RESULT


@tool(name="weather")
async def aweather(city: str) -> str:
    """The weather in a city."""
    return TOOL_RESULT


@dataclass
class Otel:
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    provider: TracerProvider

    def spans(self) -> list[ReadableSpan]:
        return sorted(self.exporter.get_finished_spans(), key=lambda s: s.start_time or 0)

    def points(self, metric: str) -> list[HistogramDataPoint]:
        data = self.reader.get_metrics_data()
        assert data is not None
        found: list[HistogramDataPoint] = []
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name == metric:
                        found += [
                            p for p in m.data.data_points if isinstance(p, HistogramDataPoint)
                        ]
        return found


@pytest.fixture
def otel() -> Iterator[Otel]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    configure(tracer_provider=provider, meter_provider=meters, capture_content=False)
    yield Otel(exporter, reader, provider)
    configure(capture_content=False)
    provider.shutdown()
    meters.shutdown()


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as running:
        yield running


def script_tool_turn(server: OpenAITestServer) -> None:
    server.reply_tool_calls(("call_1", "weather", ARGUMENTS))
    server.reply_text(ANSWER)


def tree(spans: list[ReadableSpan]) -> list[tuple[int, str, dict[str, Any]]]:
    """Depth-first (children by start time): depth, name, attributes without volatile ones."""
    by_id = {s.context.span_id: s for s in spans}
    children: dict[int | None, list[ReadableSpan]] = {}
    for s in spans:
        parent = s.parent.span_id if s.parent and s.parent.span_id in by_id else None
        children.setdefault(parent, []).append(s)
    out: list[tuple[int, str, dict[str, Any]]] = []

    def walk(parent: int | None, depth: int) -> None:
        for s in sorted(children.get(parent, []), key=lambda s: s.start_time or 0):
            attributes = {k: v for k, v in (s.attributes or {}).items() if k != "server.port"}
            out.append((depth, s.name, attributes))
            walk(s.context.span_id, depth + 1)

    walk(None, 0)
    return out


def expected_tree(db_system: str, *, streamed: bool) -> list[tuple[int, str, dict[str, Any]]]:
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": MODEL,
        "gen_ai.conversation.id": "007",
        "server.address": "127.0.0.1",
        "gen_ai.response.model": MODEL,
    }

    def db(operation: str) -> dict[str, Any]:
        return {
            "db.system.name": db_system,
            "db.operation.name": operation,
            "db.collection.name": "chat_memory",
        }

    def memory(operation: str, count: int) -> dict[str, Any]:
        return {
            "chatmem.memory.operation": operation,
            "gen_ai.conversation.id": "007",
            "chatmem.memory.message_count": count,
        }

    return [
        (
            0,
            f"chat {MODEL}",
            {
                **chat,
                "gen_ai.response.finish_reasons": ("stop",),
                "gen_ai.usage.input_tokens": 20,
                "gen_ai.usage.output_tokens": 10,
            },
        ),
        (
            1,
            "advisor MessageChatMemoryAdvisor",
            {
                "chatmem.advisor.name": "MessageChatMemoryAdvisor",
                "chatmem.advisor.order": -(2**31) + 1000,
            },
        ),
        (2, "chat_memory get", memory("get", 0)),
        (3, "find_window chat_memory", db("find_window")),
        (
            2,
            f"chat {MODEL}",
            {
                **chat,
                "gen_ai.response.finish_reasons": ("tool_calls",),
                **({} if streamed else {"gen_ai.response.id": "chatcmpl-test"}),
                "gen_ai.usage.input_tokens": 10,
                "gen_ai.usage.output_tokens": 5,
            },
        ),
        (
            2,
            "execute_tool weather",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "weather",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.type": "function",
            },
        ),
        (
            2,
            f"chat {MODEL}",
            {
                **chat,
                "gen_ai.response.finish_reasons": ("stop",),
                **({} if streamed else {"gen_ai.response.id": "chatcmpl-test"}),
                "gen_ai.usage.input_tokens": 10,
                "gen_ai.usage.output_tokens": 5,
            },
        ),
        (2, "chat_memory add", memory("add", 4)),
        (3, "append chat_memory", db("append")),
    ]


def sync_turn(server: OpenAITestServer, *, stream: bool = True) -> tuple[str, Any]:
    memory = MessageWindowChatMemory()
    with OpenAIChatModel(model=MODEL, base_url=server.base_url, max_retries=0) as model:
        client = (
            ChatClient.builder(model)
            .default_advisors(MessageChatMemoryAdvisor(memory))
            .default_tools(weather)
            .build()
        )
        spec = client.prompt(QUESTION).advisors({CONVERSATION_ID: "007"})
        text = "".join(spec.stream().content()) if stream else spec.call().content()
    return text, memory.repository


async def async_turn(server: OpenAITestServer, *, stream: bool = True) -> tuple[str, Any]:
    memory = AsyncMessageWindowChatMemory()
    async with AsyncOpenAIChatModel(model=MODEL, base_url=server.base_url) as model:
        client = (
            AsyncChatClient.builder(model)
            .default_advisors(AsyncMessageChatMemoryAdvisor(memory))
            .default_tools(aweather)
            .build()
        )
        spec = client.prompt(QUESTION).advisors({CONVERSATION_ID: "007"})
        if stream:
            text = "".join([piece async for piece in spec.stream().content()])
        else:
            text = await spec.call().content()
    return text, memory.repository


# -- the span tree -------------------------------------------------------------------------------


def test_streamed_tool_turn_span_tree_sync(otel: Otel, server: OpenAITestServer) -> None:
    script_tool_turn(server)
    text, repository = sync_turn(server)
    assert text == ANSWER
    db_system = getattr(repository, "db_system", "other")
    assert tree(otel.spans()) == expected_tree(db_system, streamed=True)
    kinds = {s.name + str(i): s.kind for i, s in enumerate(otel.spans())}
    assert [k for k in kinds.values() if k == SpanKind.CLIENT]  # model and db calls
    root = otel.spans()[0]
    assert root.kind == SpanKind.INTERNAL
    assert all(s.status.status_code != StatusCode.ERROR for s in otel.spans())


async def test_streamed_tool_turn_span_tree_async(otel: Otel, server: OpenAITestServer) -> None:
    script_tool_turn(server)
    text, repository = await async_turn(server)
    assert text == ANSWER
    assert tree(otel.spans()) == expected_tree(
        getattr(repository, "db_system", "other"), streamed=True
    )


def test_sync_and_async_give_the_same_tree_for_calls(otel: Otel, server: OpenAITestServer) -> None:
    script_tool_turn(server)
    sync_turn(server, stream=False)
    sync_spans = tree(otel.spans())
    otel.exporter.clear()
    script_tool_turn(server)
    asyncio.run(async_turn(server, stream=False))
    assert tree(otel.spans()) == sync_spans
    # A blocking call's root span carries the summed usage, like a stream's.
    assert sync_spans[0][2]["gen_ai.usage.input_tokens"] == 20
    assert sync_spans[0][2]["gen_ai.response.id"] == "chatcmpl-test"


def test_model_spans_are_clients_and_every_span_is_in_one_trace(
    otel: Otel, server: OpenAITestServer
) -> None:
    script_tool_turn(server)
    sync_turn(server)
    spans = otel.spans()
    assert len({s.context.trace_id for s in spans}) == 1
    kinds = {(s.name, s.kind) for s in spans}
    assert (f"chat {MODEL}", SpanKind.CLIENT) in kinds
    assert ("append chat_memory", SpanKind.CLIENT) in kinds
    assert ("execute_tool weather", SpanKind.INTERNAL) in kinds


# -- content ----------------------------------------------------------------------------------


def test_no_content_is_recorded_by_default(otel: Otel, server: OpenAITestServer) -> None:
    script_tool_turn(server)
    sync_turn(server)
    for span in otel.spans():
        attributes = dict(span.attributes or {})
        assert not CONTENT_KEYS & attributes.keys(), span.name
        values = json.dumps([str(v) for v in attributes.values()])
        for secret in ("4711", "Paris", "sunny", "Sunny"):
            assert secret not in values, (span.name, secret)


def test_content_is_recorded_when_switched_on(otel: Otel, server: OpenAITestServer) -> None:
    configure(tracer_provider=otel.provider, capture_content=True)
    script_tool_turn(server)
    sync_turn(server)
    by_name: dict[str, list[ReadableSpan]] = {}
    for span in otel.spans():
        by_name.setdefault(span.name, []).append(span)
    root = otel.spans()[0].attributes or {}
    assert json.loads(str(root["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
    ]
    output = json.loads(str(root["gen_ai.output.messages"]))
    assert [m["role"] for m in output] == ["assistant", "tool", "assistant"]
    assert output[0]["parts"] == [
        {"type": "tool_call", "id": "call_1", "name": "weather", "arguments": {"city": "Paris"}}
    ]
    assert output[1]["parts"] == [
        {"type": "tool_call_response", "id": "call_1", "response": TOOL_RESULT}
    ]
    assert output[2] == {
        "role": "assistant",
        "parts": [{"type": "text", "content": ANSWER}],
        "finish_reason": "stop",
    }
    tool_span = by_name["execute_tool weather"][0].attributes or {}
    assert tool_span["gen_ai.tool.call.arguments"] == ARGUMENTS
    assert tool_span["gen_ai.tool.call.result"] == TOOL_RESULT
    second_model = by_name[f"chat {MODEL}"][2].attributes or {}
    assert [m["role"] for m in json.loads(str(second_model["gen_ai.input.messages"]))] == [
        "user",
        "assistant",
        "tool",
    ]
    # Database spans never carry content, switch or not.
    for span in otel.spans():
        if "db.system.name" in (span.attributes or {}):
            assert "4711" not in json.dumps([str(v) for v in span.attributes.values()])


# -- streams ------------------------------------------------------------------------------------


def test_a_stream_span_ends_when_the_stream_ends(otel: Otel, server: OpenAITestServer) -> None:
    server.reply_text("one two three")
    with OpenAIChatModel(model=MODEL, base_url=server.base_url) as model:
        client = ChatClient.create(model)
        tracer = otel.provider.get_tracer("test")
        with tracer.start_as_current_span("consumer") as consumer:
            pieces = []
            for piece in client.prompt("count").stream().content():
                # Between chunks the consumer's own span is current, not chatmem's.
                assert trace.get_current_span() is consumer
                pieces.append(piece)
                assert not [s for s in otel.spans() if s.name == f"chat {MODEL}"]
    root = next(
        s for s in otel.spans() if s.name == f"chat {MODEL}" and s.kind == SpanKind.INTERNAL
    )
    assert root.parent is not None
    assert root.parent.span_id == consumer.get_span_context().span_id
    assert (root.attributes or {})["gen_ai.usage.output_tokens"] == 5
    assert "".join(pieces) == "one two three"


def test_an_abandoned_stream_ends_its_spans_and_saves_nothing(
    otel: Otel, server: OpenAITestServer
) -> None:
    server.reply_text("one two three four five")
    memory = MessageWindowChatMemory()
    with OpenAIChatModel(model=MODEL, base_url=server.base_url) as model:
        client = (
            ChatClient.builder(model).default_advisors(MessageChatMemoryAdvisor(memory)).build()
        )
        stream = client.prompt("count").advisors({CONVERSATION_ID: "007"}).stream().content()
        next(iter(stream))
        stream.close()  # type: ignore[attr-defined]
    assert_abandoned(otel)
    assert memory.get("007") == []


async def test_an_abandoned_async_stream_ends_its_spans_and_saves_nothing(
    otel: Otel, server: OpenAITestServer
) -> None:
    server.reply_text("one two three four five")
    memory = AsyncMessageWindowChatMemory()
    async with AsyncOpenAIChatModel(model=MODEL, base_url=server.base_url) as model:
        builder = AsyncChatClient.builder(model)
        client = builder.default_advisors(AsyncMessageChatMemoryAdvisor(memory)).build()
        stream = client.prompt("count").advisors({CONVERSATION_ID: "007"}).stream().content()
        async for _ in stream:
            break
        await stream.aclose()  # type: ignore[attr-defined]
    assert_abandoned(otel)
    assert await memory.get("007") == []


def assert_abandoned(otel: Otel) -> None:
    # Every span that started has ended (the exporter only sees ended spans); none saved.
    assert [s.name for s in otel.spans()] == [
        f"chat {MODEL}",
        "advisor MessageChatMemoryAdvisor",
        "chat_memory get",
        "find_window chat_memory",
        f"chat {MODEL}",
    ]
    for span in (otel.spans()[0], otel.spans()[1], otel.spans()[4]):
        assert (span.attributes or {})["chatmem.stream.abandoned"] is True
        assert span.status.status_code != StatusCode.ERROR


# -- errors and metrics -------------------------------------------------------------------------


def test_a_failed_model_call_marks_the_spans_and_the_duration(
    otel: Otel, server: OpenAITestServer
) -> None:
    server.reply_error(500, "boom")
    with (
        OpenAIChatModel(model=MODEL, base_url=server.base_url, max_retries=0) as model,
        pytest.raises(ChatModelError),
    ):
        ChatClient.create(model).prompt("hi").call().content()
    spans = otel.spans()
    assert [s.name for s in spans] == [f"chat {MODEL}", f"chat {MODEL}"]
    for span in spans:
        assert span.status.status_code == StatusCode.ERROR
        assert (span.attributes or {})["error.type"] == "ChatModelHTTPError"
    (point,) = otel.points("gen_ai.client.operation.duration")
    assert point.attributes["error.type"] == "ChatModelHTTPError"
    assert otel.points("gen_ai.client.token.usage") == []


def test_a_failing_tool_is_marked_and_the_turn_goes_on(otel: Otel) -> None:
    from chatmem import AssistantMessage, ToolCall
    from chatmem.testing import ScriptedChatModel

    @tool
    def broken(city: str) -> str:
        """Always fails."""
        raise RuntimeError("no weather today")

    call = ToolCall(id="c1", name="broken", arguments='{"city": "Paris"}')
    model = ScriptedChatModel([AssistantMessage("", tool_calls=[call]), "ok"])
    assert ChatClient.builder(model).default_tools(broken).build().prompt("x").call().content()
    (span,) = [s for s in otel.spans() if s.name == "execute_tool broken"]
    assert span.status.status_code == StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "RuntimeError"


def test_metrics_token_usage_and_durations(otel: Otel, server: OpenAITestServer) -> None:
    script_tool_turn(server)
    sync_turn(server, stream=False)
    usage = otel.points("gen_ai.client.token.usage")
    by_type = {p.attributes["gen_ai.token.type"]: p for p in usage}
    assert by_type["input"].sum == 20
    assert by_type["input"].count == 2
    assert by_type["output"].sum == 10
    common = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": MODEL,
        "gen_ai.response.model": MODEL,
        "server.address": "127.0.0.1",
    }
    assert {k: by_type["input"].attributes[k] for k in common} == common
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.count == 2
    assert duration.sum > 0
    assert "error.type" not in duration.attributes
    db = {p.attributes["db.operation.name"]: p for p in otel.points("db.client.operation.duration")}
    assert set(db) == {"find_window", "append"}
    assert all(p.count == 1 for p in db.values())
    assert db["append"].attributes["db.collection.name"] == "chat_memory"


# -- parenting across threads and tasks ---------------------------------------------------------


def test_threads_each_keep_their_own_trace(otel: Otel, server: OpenAITestServer) -> None:
    server.reply_text(*[f"answer {i}" for i in range(8)])
    memory = MessageWindowChatMemory()
    tracer = otel.provider.get_tracer("test")
    parents: dict[str, int] = {}
    with OpenAIChatModel(model=MODEL, base_url=server.base_url) as model:
        client = (
            ChatClient.builder(model).default_advisors(MessageChatMemoryAdvisor(memory)).build()
        )

        def worker(i: int) -> None:
            with tracer.start_as_current_span(f"request {i}") as parent:
                parents[f"c{i}"] = parent.get_span_context().trace_id
                client.prompt("hi").advisors({CONVERSATION_ID: f"c{i}"}).call().content()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert_each_conversation_in_its_own_trace(otel, parents)


async def test_tasks_each_keep_their_own_trace(otel: Otel, server: OpenAITestServer) -> None:
    server.reply_text(*[f"answer {i}" for i in range(8)])
    memory = AsyncMessageWindowChatMemory()
    tracer = otel.provider.get_tracer("test")
    parents: dict[str, int] = {}
    async with AsyncOpenAIChatModel(model=MODEL, base_url=server.base_url) as model:
        client = (
            AsyncChatClient.builder(model)
            .default_advisors(AsyncMessageChatMemoryAdvisor(memory))
            .build()
        )

        async def worker(i: int) -> None:
            with tracer.start_as_current_span(f"request {i}") as parent:
                parents[f"c{i}"] = parent.get_span_context().trace_id
                stream = client.prompt("hi").advisors({CONVERSATION_ID: f"c{i}"}).stream()
                async for _ in stream.content():
                    await asyncio.sleep(0)  # interleave the tasks mid-stream

        await asyncio.gather(*(worker(i) for i in range(8)))
    assert_each_conversation_in_its_own_trace(otel, parents)


def assert_each_conversation_in_its_own_trace(otel: Otel, parents: dict[str, int]) -> None:
    spans = otel.spans()
    by_id = {s.context.span_id: s for s in spans}
    seen = set()
    for span in spans:
        conversation = (span.attributes or {}).get("gen_ai.conversation.id")
        if conversation is None:
            continue
        seen.add(conversation)
        assert span.context.trace_id == parents[str(conversation)], span.name
    assert seen == set(parents)
    for span in spans:
        if span.name.startswith("request "):
            continue
        # Every chatmem span's parent is a span of the same trace, up to "request i".
        assert span.parent is not None, span.name
        assert span.parent.span_id in by_id, span.name
        assert by_id[span.parent.span_id].context.trace_id == span.context.trace_id


async def test_a_tool_in_a_worker_thread_runs_in_its_span(otel: Otel) -> None:
    from chatmem import AssistantMessage, ToolCall
    from chatmem.testing import AsyncScriptedChatModel

    seen: list[tuple[int, str]] = []

    @tool
    def where(city: str) -> str:
        """Records the span current in the tool, which runs in a worker thread."""
        seen.append(
            (trace.get_current_span().get_span_context().span_id, threading.current_thread().name)
        )
        return "here"

    call = ToolCall(id="c1", name="where", arguments='{"city": "Paris"}')
    model = AsyncScriptedChatModel([AssistantMessage("", tool_calls=[call]), "done"])
    client = AsyncChatClient.builder(model).default_tools(where).build()
    await client.prompt("where?").call().content()
    (tool_span,) = [s for s in otel.spans() if s.name == "execute_tool where"]
    ((span_id, thread_name),) = seen
    assert span_id == tool_span.context.span_id
    assert thread_name != threading.current_thread().name


# -- logs ----------------------------------------------------------------------------------------


def test_log_records_carry_conversation_and_trace_ids(
    otel: Otel, server: OpenAITestServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.reply_text("Hello, Mr Bond.")
    caplog.set_level(logging.DEBUG, logger="chatmem_advisors.logger")
    with OpenAIChatModel(model=MODEL, base_url=server.base_url) as model:
        client = ChatClient.builder(model).default_advisors(SimpleLoggerAdvisor()).build()
        client.prompt("Hi").advisors({CONVERSATION_ID: "007"}).call().content()
    records = [r for r in caplog.records if r.name == "chatmem_advisors.logger"]
    assert [r.getMessage().split(":")[0] for r in records] == ["request", "response"]
    root = otel.spans()[0]
    (advisor,) = [s for s in otel.spans() if s.name == "advisor SimpleLoggerAdvisor"]
    for record in records:
        assert record.__dict__["conversation_id"] == "007"
        assert record.__dict__["trace_id"] == format(root.context.trace_id, "032x")
        assert record.__dict__["span_id"] == format(advisor.context.span_id, "016x")


def test_log_extra_outside_a_span_has_only_the_conversation() -> None:
    assert log_extra({CONVERSATION_ID: "007"}) == {"conversation_id": "007"}
    assert log_extra() == {}


async def test_the_async_client_drives_the_same_logger_advisor(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from chatmem.testing import AsyncScriptedChatModel

    caplog.set_level(logging.DEBUG, logger="chatmem_advisors.logger")
    advisor = SimpleLoggerAdvisor(redact_content=True)
    client = AsyncChatClient.builder(AsyncScriptedChatModel(["Hello"])).default_advisors(advisor)
    stream = client.build().prompt("Hi").advisors({CONVERSATION_ID: "7"}).stream().content()
    assert [p async for p in stream] == ["Hello"]
    messages = [r.getMessage() for r in caplog.records if r.name == "chatmem_advisors.logger"]
    assert messages == [
        "request: [user: <2 chars>] tools=[]",
        "response: [assistant: <5 chars>] finish=stop "
        "usage=input_tokens=1 output_tokens=1 reasoning_tokens=0 cache_read_tokens=0 "
        "cache_write_tokens=0",
    ]
    assert [r.__dict__["conversation_id"] for r in caplog.records] == ["7", "7"]


# -- vector search and embeddings ----------------------------------------------------------------


def test_vector_search_and_embedding_spans(otel: Otel, server: OpenAITestServer) -> None:
    from chatmem.openai import OpenAIEmbeddingModel
    from chatmem.testing.openai_embeddings import add_embeddings_route
    from chatmem.vector_store import InMemoryVectorStore
    from chatmem_advisors import VectorStoreChatMemoryAdvisor

    add_embeddings_route(server)
    server.reply_text("Noted.")
    with (
        OpenAIChatModel(model=MODEL, base_url=server.base_url) as model,
        OpenAIEmbeddingModel(model="emb", base_url=server.base_url, dimensions=64) as embeddings,
    ):
        store = InMemoryVectorStore(embeddings)
        client = (
            ChatClient.builder(model)
            .default_advisors(VectorStoreChatMemoryAdvisor(store, top_k=3))
            .build()
        )
        client.prompt(QUESTION).advisors({CONVERSATION_ID: "007"}).call().content()
    spans = otel.spans()
    by_id = {s.context.span_id: s for s in spans}

    def parent_name(span: ReadableSpan) -> str:
        assert span.parent is not None
        return by_id[span.parent.span_id].name

    search = next(s for s in spans if s.name == "similarity_search vector_store")
    add = next(s for s in spans if s.name == "add vector_store")
    assert parent_name(search) == parent_name(add) == "advisor VectorStoreChatMemoryAdvisor"
    assert (search.attributes or {})["db.operation.name"] == "similarity_search"
    assert (search.attributes or {})["chatmem.vector.top_k"] == 3
    assert (search.attributes or {})["chatmem.vector.result_count"] == 0
    embedding_spans = [s for s in spans if s.name == "embeddings emb"]
    assert {parent_name(s) for s in embedding_spans} == {
        "similarity_search vector_store",
        "add vector_store",
    }
    attributes = dict(embedding_spans[0].attributes or {})
    assert attributes["gen_ai.operation.name"] == "embeddings"
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "emb"
    assert attributes["gen_ai.response.model"] == "emb"
    assert attributes["gen_ai.embeddings.dimension.count"] == 64
    assert attributes["gen_ai.usage.input_tokens"] > 0
    assert all(s.kind == SpanKind.CLIENT for s in [search, add, *embedding_spans])
    operations = {
        p.attributes["gen_ai.operation.name"]
        for p in otel.points("gen_ai.client.operation.duration")
    }
    assert operations == {"chat", "embeddings"}


@pytest.mark.parametrize("streaming", [False, True], ids=["call", "stream"])
def test_responses_model_spans_name_openai_and_report_usage(
    otel: Otel, server: OpenAITestServer, streaming: bool
) -> None:
    from chatmem.openai import OpenAIResponsesChatModel
    from chatmem.testing import ScriptedResponse
    from chatmem.testing.responses_protocol import (
        function_call_item,
        message_item,
        reasoning_item,
    )

    server.reply_response(
        ScriptedResponse(
            [reasoning_item("Look."), function_call_item("call_1", "weather", ARGUMENTS)]
        ),
        ScriptedResponse([reasoning_item(), message_item(ANSWER)]),
    )
    with OpenAIResponsesChatModel(
        model="gpt-5-mini", base_url=server.base_url, api_key="test", max_retries=0
    ) as model:
        request = ChatClient.builder(model).default_tools(weather).build().prompt(QUESTION)
        answer = "".join(request.stream().content()) if streaming else request.call().content()
    assert answer == ANSWER
    calls = [s for s in otel.spans() if s.name == "chat gpt-5-mini" and s.kind == SpanKind.CLIENT]
    rounds = [dict(s.attributes or {}) for s in calls if s.parent is not None]
    assert len(rounds) == 2
    for attributes in rounds:
        assert attributes["gen_ai.provider.name"] == "openai"
        assert attributes["gen_ai.usage.input_tokens"] == 20
        assert attributes["gen_ai.usage.output_tokens"] == 12
    assert [dict(r)["gen_ai.response.finish_reasons"] for r in rounds] == [
        ("tool_calls",),
        ("stop",),
    ]
