"""OpenTelemetry traces and metrics: the switches, and helpers for your own advisors and logs.

chatmem instruments itself when ``opentelemetry-api`` is installed (``pip install
"chatmem[otel]"``) and sends spans and metrics to the global tracer and meter providers
that your application configures with the OpenTelemetry SDK. Without the API nothing is
instrumented and nothing is paid; with the API but no SDK every span is a no-op.

Spans follow the OpenTelemetry GenAI conventions (``chat {model}``, ``execute_tool
{name}``, ``embeddings {model}``) and the database conventions for repository and vector
store calls; see the observability page of the documentation for the whole tree.

Message content (prompts, answers, tool arguments and results) is never recorded unless you
opt in, with :func:`configure` (``capture_content=True``) or the environment variable
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``.

Example:
    ```python
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from chatmem import CONVERSATION_ID, ChatClient, MessageWindowChatMemory
    from chatmem.telemetry import configure
    from chatmem.testing import ScriptedChatModel
    from chatmem_advisors import MessageChatMemoryAdvisor

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    configure(tracer_provider=provider)  # or trace.set_tracer_provider(provider)

    memory = MessageWindowChatMemory()
    client = (
        ChatClient.builder(ScriptedChatModel(["Hello, Mr Bond."]))
        .default_advisors(MessageChatMemoryAdvisor(memory))
        .build()
    )
    client.prompt("My name is James Bond").advisors({CONVERSATION_ID: "007"}).call().content()
    print(sorted(span.name for span in exporter.get_finished_spans()))
    configure()  # back to the global providers
    ```
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from chatmem import _telemetry
from chatmem._telemetry import CAPTURE_CONTENT_ENV, ENABLED
from chatmem._telemetry.db import collection_of, db_span

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import Span, TracerProvider

__all__ = [
    "AVAILABLE",
    "CAPTURE_CONTENT_ENV",
    "capture_content",
    "configure",
    "log_extra",
    "store_operation",
]

AVAILABLE = ENABLED
"""Whether ``opentelemetry-api`` is installed, so chatmem is instrumented."""

_CONVERSATION_ID = "chat_memory_conversation_id"  # chatmem.memory.CONVERSATION_ID


def configure(
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: bool | None = None,
) -> None:
    """Choose the providers chatmem reports to and whether message content is recorded.

    Without providers, chatmem uses the global ones (``trace.set_tracer_provider``), even
    those set after this call. Calling it again with no provider goes back to the globals.

    Args:
        tracer_provider: A tracer provider for chatmem's spans only.
        meter_provider: A meter provider for chatmem's metrics only.
        capture_content: Record prompts, answers, tool arguments and results on spans
            (``gen_ai.input.messages``, ``gen_ai.output.messages``,
            ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``). ``None`` keeps
            the current choice, which starts from ``CAPTURE_CONTENT_ENV``.
    """
    _telemetry.configure(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture_content,
    )


def capture_content() -> bool:
    """Return whether message content is recorded on spans."""
    return _telemetry.settings.capture_content


def log_extra(context: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The ``extra`` of a log record: conversation id and the current trace and span ids.

    ``logger.info("...", extra=log_extra(request.context))`` puts ``conversation_id``,
    ``trace_id`` and ``span_id`` (lowercase hex, as OpenTelemetry prints them) on the record;
    each is left out when unknown (no conversation in the context, no current span).

    Args:
        context: A request's or response's context, holding the conversation id.
    """
    extra: dict[str, str] = {}
    conversation_id = context.get(_CONVERSATION_ID) if context else None
    if isinstance(conversation_id, str):
        extra["conversation_id"] = conversation_id
    ids = _telemetry.current_ids()
    if ids is not None:
        extra["trace_id"], extra["span_id"] = ids
    return extra


@contextmanager
def store_operation(
    store: object,
    operation: str,
    *,
    collection: str | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> Iterator[Span | None]:
    """Run a block as one database operation: a span and a ``db.client.operation.duration``.

    For advisors and repositories of your own. The span is named ``{operation}
    {collection}`` and carries ``db.system.name`` (the store's ``db_system``, else
    ``other``), ``db.operation.name`` and ``db.collection.name`` (the store's
    ``db_collection_name``, else ``collection``); never put statement text or stored data
    in ``attributes``. Yields the span, or ``None`` without ``opentelemetry-api``.

    Args:
        store: The repository or vector store called.
        operation: The operation, such as ``similarity_search``.
        collection: The collection name when the store reports none.
        attributes: More span attributes.
    """
    if not ENABLED or not _telemetry.active():
        yield None
        return
    name = collection_of(store, collection or "chat_memory")
    with db_span(store, operation, name, attributes) as span:
        yield span
