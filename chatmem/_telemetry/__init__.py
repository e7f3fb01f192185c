"""OpenTelemetry spans and metrics for both twins, on the GenAI and database conventions.

``ENABLED`` is decided once, at import: without ``opentelemetry-api`` every instrumented
call site tests that one module constant and runs the plain code, so nothing else is paid.
With the API but no SDK, the spans are the API's non-recording spans and the instruments
are no-ops; attributes that take work to compute are only computed for recording spans.

The public switches (tracer and meter provider, content capture) are in
:mod:`chatmem.telemetry`.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from chatmem._version import __version__

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.metrics import Histogram, MeterProvider
    from opentelemetry.trace import Span, TracerProvider

    from chatmem.messages import ToolCall

try:
    from opentelemetry import context as _context
    from opentelemetry import metrics as _metrics
    from opentelemetry import trace as _trace
    from opentelemetry.trace import StatusCode
except ImportError:  # the otel extra is not installed: instrumentation is compiled out
    ENABLED = False
else:
    ENABLED = True

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "ENABLED",
    "STREAM_END",
    "StreamEnd",
    "activate",
    "active",
    "advisor_span",
    "async_step_in",
    "configure",
    "current_ids",
    "mark_error",
    "memory_span",
    "record_duration",
    "record_tool_result",
    "set_count",
    "settings",
    "span_context",
    "step_in",
    "tool_span",
]

T = TypeVar("T")
_ASYNC_TWIN = re.compile(r"Async[A-Z]")

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The environment variable the OpenTelemetry GenAI instrumentations read for content capture."""

# Bucket boundaries the GenAI conventions advise for these two histograms.
_TOKEN_BUCKETS = [4**i for i in range(14)]
_DURATION_BUCKETS = [0.01 * 2**i for i in range(14)]
_DB_DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0]


def _env_capture() -> bool:
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in {"1", "true", "yes"}


def _global_state() -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The API's module globals holding the global providers, or ``None`` if not found.

    Reading them costs a dict lookup; ``get_tracer_provider()`` reads the environment on
    every call while no provider is set, too slow for every span.
    """
    try:
        from opentelemetry.metrics import _internal as metrics_internal
    except ImportError:
        return None
    trace_globals, metrics_globals = vars(_trace), vars(metrics_internal)
    if "_TRACER_PROVIDER" not in trace_globals or "_METER_PROVIDER" not in metrics_globals:
        return None
    # A provider named by OTEL_PYTHON_TRACER_PROVIDER is only loaded by these getters.
    _trace.get_tracer_provider()
    _metrics.get_meter_provider()
    return trace_globals, metrics_globals


class _Settings:
    """The tracer, the instruments and the content switch in use (replaced by configure)."""

    def __init__(self) -> None:
        self.capture_content = _env_capture()
        self.live = False
        """Whether a provider is set, so spans and metrics go somewhere (never unset)."""
        self.tracer: Any = None
        self.token_usage: Histogram | None = None
        self.operation_duration: Histogram | None = None
        self.db_duration: Histogram | None = None

    def install(
        self, tracer_provider: TracerProvider | None, meter_provider: MeterProvider | None
    ) -> None:
        # With no provider given, the API's global proxies are used: they delegate to
        # whatever provider the application sets later, so import order does not matter.
        self.live = tracer_provider is not None or meter_provider is not None
        self.tracer = _trace.get_tracer("chatmem", __version__, tracer_provider)
        meter = _metrics.get_meter("chatmem", __version__, meter_provider)
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Tokens used per GenAI operation, by token type",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.operation_duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="Duration of GenAI operations (model calls and embeddings)",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self.db_duration = meter.create_histogram(
            "db.client.operation.duration",
            unit="s",
            description="Duration of chat memory repository and vector store operations",
            explicit_bucket_boundaries_advisory=_DB_DURATION_BUCKETS,
        )


settings = _Settings()
"""The live telemetry settings."""
_GLOBALS = None
if ENABLED:
    settings.install(None, None)
    _GLOBALS = _global_state()


def active() -> bool:
    """Whether to instrument now: a tracer or meter provider is set (or configured).

    With the API alone every span would be a no-op: skipping them altogether saves their
    cost. Only called when :data:`ENABLED`.
    """
    if settings.live:
        return True
    if _GLOBALS is None:  # an API version keeping its providers elsewhere: always instrument
        settings.live = True
    else:
        trace_globals, metrics_globals = _GLOBALS
        # Global providers are set once and never unset, so a True answer is kept.
        settings.live = (
            trace_globals["_TRACER_PROVIDER"] is not None
            or metrics_globals["_METER_PROVIDER"] is not None
        )
    return settings.live


def configure(
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: bool | None = None,
) -> None:
    """Replace the providers (``None``: the global ones) and, if given, the content switch."""
    if ENABLED:
        settings.install(tracer_provider, meter_provider)
    if capture_content is not None:
        settings.capture_content = capture_content


# -- errors and context ---------------------------------------------------------------------


def mark_error(span: Span, exc: BaseException) -> str:
    """Record a failure on a span: ``error.type`` (the class name), status and event."""
    error_type = type(exc).__qualname__
    span.set_attribute("error.type", error_type)
    span.set_status(StatusCode.ERROR, str(exc)[:200])
    span.record_exception(exc)
    return error_type


@contextmanager
def activate(span: Span) -> Iterator[Span]:
    """Make ``span`` current for the block; end it on leaving, marking any error."""
    token = _context.attach(_trace.set_span_in_context(span))
    try:
        yield span
    except Exception as exc:
        mark_error(span, exc)
        raise
    finally:
        _context.detach(token)
        span.end()


def span_context(span: Span) -> Context:
    """A context with ``span`` current, to attach later (see :func:`async_step_in`)."""
    return _trace.set_span_in_context(span)


class StreamEnd:
    """What :func:`async_step_in` and :func:`step_in` return once a stream is exhausted."""


STREAM_END = StreamEnd()
"""The one :class:`StreamEnd`."""


async def async_step_in(context: Context, stream: AsyncIterator[T]) -> T | StreamEnd:
    """Take a stream's next chunk with ``context`` current (the async twin of :func:`step_in`).

    A sentinel rather than ``StopAsyncIteration`` ends the stream, so the generated sync
    twin needs no exception renamed.
    """
    token = _context.attach(context)
    try:
        return await anext(stream, STREAM_END)
    finally:
        _context.detach(token)


def step_in(context: Context, stream: Iterator[T]) -> T | StreamEnd:
    """Take a stream's next chunk with ``context`` current; :data:`STREAM_END` at the end."""
    token = _context.attach(context)
    try:
        return next(stream, STREAM_END)
    finally:
        _context.detach(token)


def current_ids() -> tuple[str, str] | None:
    """The current trace and span ids as hex, or ``None`` outside a sampled span context."""
    if not ENABLED:
        return None
    context = _trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


def record_duration(
    histogram: Histogram | None, started: int, attributes: Mapping[str, Any]
) -> None:
    """Record the seconds since ``started`` (a ``perf_counter_ns`` value) in a histogram."""
    if histogram is not None:
        histogram.record((time.perf_counter_ns() - started) / 1e9, dict(attributes))


# -- tools, advisors, memory --------------------------------------------------------------------


def tool_span(call: ToolCall) -> Span:
    """Start the span of one tool execution (``execute_tool {name}``), not yet current."""
    span: Span = settings.tracer.start_span(
        f"execute_tool {call.name}",
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        },
    )
    if settings.capture_content and span.is_recording():
        span.set_attribute("gen_ai.tool.call.arguments", call.arguments)
    return span


def record_tool_result(span: Span, result: str) -> None:
    """Record a tool's result text, when content capture is on."""
    if settings.capture_content and span.is_recording():
        span.set_attribute("gen_ai.tool.call.result", result)


def advisor_span(advisor: object) -> Span:
    """Start the span of one advisor's step in the chain, not yet current.

    An async twin's name loses its ``Async`` prefix (``advisor MessageChatMemoryAdvisor``).
    """
    name = getattr(advisor, "name", None) or type(advisor).__name__
    if _ASYNC_TWIN.match(name):
        # Twins report alike, so dashboards do not depend on the client's flavor.
        name = name[5:]
    return settings.tracer.start_span(  # type: ignore[no-any-return]
        f"advisor {name}",
        attributes={
            "chatmem.advisor.name": name,
            "chatmem.advisor.order": getattr(advisor, "order", 0),
        },
    )


def memory_span(operation: str, conversation_id: str) -> Span:
    """Start the span of a chat memory ``get`` or ``add``, not yet current."""
    return settings.tracer.start_span(  # type: ignore[no-any-return]
        f"chat_memory {operation}",
        attributes={
            "chatmem.memory.operation": operation,
            "gen_ai.conversation.id": conversation_id,
        },
    )


def set_count(span: Span, name: str, items: Sequence[object] | int) -> None:
    """Set a count attribute (``len`` of a sequence), skipped for non-recording spans."""
    if span.is_recording():
        span.set_attribute(name, items if isinstance(items, int) else len(items))
