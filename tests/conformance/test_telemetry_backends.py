"""Repository spans on every backend: db.system.name from the repository, operations, no content.

One memory-backed turn per backend, sync and async, against the real test servers.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from chatmem import (
    CONVERSATION_ID,
    AsyncChatClient,
    AsyncMessageWindowChatMemory,
    ChatClient,
    MessageWindowChatMemory,
)
from chatmem.telemetry import configure
from chatmem.testing import AsyncScriptedChatModel, ScriptedChatModel
from chatmem_advisors import AsyncMessageChatMemoryAdvisor, MessageChatMemoryAdvisor
from chatmem_repositories import create_async_repository, create_repository
from tests.support.backends import backend_url

# The backend, and the db.system.name values the conventions allow for it.
SYSTEMS = {
    "sqlite": {"sqlite"},
    "postgresql": {"postgresql"},
    "mariadb": {"mariadb", "mysql"},
    "redis": {"redis"},
    "mongodb": {"mongodb"},
    "cassandra": {"cassandra"},
    "neo4j": {"neo4j"},
}
SECRET = "my passport number is 0071234"


def options_of(name: str) -> dict[str, Any]:
    return {"create_keyspace": True} if name == "cassandra" else {}


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    configure(tracer_provider=provider, meter_provider=MeterProvider(), capture_content=False)
    yield exporter
    configure()
    provider.shutdown()


def check(exporter: InMemorySpanExporter, backend: str, repository: Any) -> None:
    db_spans: list[ReadableSpan] = [
        s for s in exporter.get_finished_spans() if "db.system.name" in (s.attributes or {})
    ]
    operations = [(s.attributes or {})["db.operation.name"] for s in db_spans]
    # A memory's read is one combined window read or a system message read then the window.
    assert operations[-1] == "append"
    assert set(operations[:-1]) <= {"find_window", "find_system_message", "find_recent"}
    system = getattr(repository, "db_system", None)
    assert system in SYSTEMS[backend]
    for span in db_spans:
        attributes = dict(span.attributes or {})
        assert span.kind == SpanKind.CLIENT
        assert attributes["db.system.name"] == system
        assert span.name == f"{attributes['db.operation.name']} {attributes['db.collection.name']}"
        assert SECRET not in json.dumps([str(v) for v in attributes.values()])
        assert span.parent is not None


@pytest.mark.parametrize("backend", sorted(SYSTEMS))
def test_repository_spans_sync(backend: str, tmp_path: Path, spans: InMemorySpanExporter) -> None:
    with create_repository(backend_url(backend, tmp_path), **options_of(backend)) as repository:
        memory = MessageWindowChatMemory(repository)
        client = (
            ChatClient.builder(ScriptedChatModel(["Noted."]))
            .default_advisors(MessageChatMemoryAdvisor(memory))
            .build()
        )
        cid = f"otel-{uuid.uuid4().hex}"
        assert client.prompt(SECRET).advisors({CONVERSATION_ID: cid}).call().content() == "Noted."
        check(spans, backend, repository)
        memory.clear(cid)


@pytest.mark.parametrize("backend", sorted(SYSTEMS))
async def test_repository_spans_async(
    backend: str, tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    repository = create_async_repository(backend_url(backend, tmp_path), **options_of(backend))
    async with repository:
        memory = AsyncMessageWindowChatMemory(repository)
        client = (
            AsyncChatClient.builder(AsyncScriptedChatModel(["Noted."]))
            .default_advisors(AsyncMessageChatMemoryAdvisor(memory))
            .build()
        )
        cid = f"otel-{uuid.uuid4().hex}"
        answer = await client.prompt(SECRET).advisors({CONVERSATION_ID: cid}).call().content()
        assert answer == "Noted."
        check(spans, backend, repository)
        await memory.clear(cid)


def test_repository_duration_metric_by_backend_and_operation(tmp_path: Path) -> None:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    configure(tracer_provider=TracerProvider(), meter_provider=meters)
    try:
        with create_repository(backend_url("sqlite", tmp_path)) as repository:
            memory = MessageWindowChatMemory(repository)
            memory.add("c1", [])
            client = ChatClient.builder(ScriptedChatModel(["a", "b"]))
            client = client.default_advisors(MessageChatMemoryAdvisor(memory)).build()
            for _ in range(2):
                client.prompt("hi").advisors({CONVERSATION_ID: "c1"}).call().content()
    finally:
        configure()
    data = reader.get_metrics_data()
    assert data is not None
    points = [
        p
        for r in data.resource_metrics
        for s in r.scope_metrics
        for m in s.metrics
        if m.name == "db.client.operation.duration"
        for p in m.data.data_points
        if isinstance(p, HistogramDataPoint)
    ]
    counts = {
        (p.attributes["db.system.name"], p.attributes["db.operation.name"]): p.count for p in points
    }
    assert counts[("sqlite", "append")] == 2
    assert sum(c for (_, op), c in counts.items() if op != "append") >= 2
    meters.shutdown()
