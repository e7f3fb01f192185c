"""``telemetry``: what OpenTelemetry instrumentation costs per turn, API only against SDK (pyperf).

A turn is ``ChatClient.prompt(text).call().content()`` with MessageChatMemoryAdvisor over
MessageWindowChatMemory (in-memory repository, window of 20) and a scripted model. ``API only``:
the API is installed and no SDK is set up, so every span is a no-op. ``SDK``: a TracerProvider
with a SimpleSpanProcessor into an InMemorySpanExporter and a MeterProvider with an
InMemoryMetricReader, set up just before its case in the process that runs it, so every span is
recorded and exported and every histogram point aggregated.
"""

from __future__ import annotations

from typing import Any

from benchmarks._micro import bench
from benchmarks.harness import Run, scenario
from benchmarks.scenarios.client import ANSWER, QUESTION, _Discard
from chatmem import CONVERSATION_ID, ChatClient, MessageWindowChatMemory
from chatmem.telemetry import configure
from chatmem.testing import ScriptedChatModel
from chatmem_advisors import MessageChatMemoryAdvisor


def _install_sdk() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    configure(
        tracer_provider=provider,
        meter_provider=MeterProvider(metric_readers=[InMemoryMetricReader()]),
    )


def _turn() -> Any:
    model = ScriptedChatModel(respond=lambda _: ANSWER)
    model.prompts = _Discard()
    memory = MessageWindowChatMemory(max_messages=20)
    client = ChatClient.builder(model).default_advisors(MessageChatMemoryAdvisor(memory)).build()
    count = iter(range(1 << 62))

    def turn() -> str:
        params = {CONVERSATION_ID: f"c{next(count) % 50}"}
        return client.prompt(QUESTION).advisors(params).call().content() or ""

    return turn


@scenario("telemetry", backends=None, micro=True)
def telemetry(run: Run) -> None:
    """A turn with the OpenTelemetry API only (no-op spans) against the SDK recording (pyperf)."""
    turn = _turn()
    try:
        bench(run, {"API only": turn, "SDK": turn}, before={"SDK": _install_sdk})
    finally:
        configure()  # back to the global providers (a no-op API)
