"""Spans and metrics of GenAI operations: the ChatClient call, model requests, embeddings.

Names and attributes follow the OpenTelemetry GenAI conventions: ``chat {model}`` spans with
``gen_ai.operation.name``, ``gen_ai.provider.name``, ``gen_ai.request.model``, the response
model, finish reasons and token usage; ``embeddings {model}`` spans; and the
``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration`` histograms, recorded
per model request.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from chatmem._telemetry import activate, mark_error, record_duration, settings
from chatmem._telemetry.content import messages_json, output_json
from chatmem.advisor import ChatClientRequest, ChatClientResponse, aggregate_client_responses
from chatmem.model import aggregate_chunks

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from chatmem.model import ChatResponse, Prompt

try:
    from opentelemetry import context as _context
    from opentelemetry import trace as _trace
    from opentelemetry.trace import SpanKind
except ImportError:  # only called when chatmem._telemetry.ENABLED
    pass

__all__ = [
    "ModelCall",
    "activate",
    "chat_span",
    "embedding_call",
    "end_chat_stream",
    "finish_embedding",
    "model_call",
    "record_chat_response",
    "running",
]

_CONVERSATION_ID = "chat_memory_conversation_id"  # chatmem.memory.CONVERSATION_ID, no import cycle


def _server(model: object) -> dict[str, Any]:
    base_url = getattr(model, "base_url", None)
    if not isinstance(base_url, str):
        return {}
    parts = urlsplit(base_url)
    found: dict[str, Any] = {}
    if parts.hostname:
        found["server.address"] = parts.hostname
    if parts.port:
        found["server.port"] = parts.port
    return found


def _request_model(prompt: Prompt, model: object) -> str | None:
    if prompt.options.model:
        return prompt.options.model
    defaults = getattr(model, "options", None)
    name = getattr(defaults, "model", None)
    return name if isinstance(name, str) else None


def _gen_ai_start(prompt: Prompt, model: object, conversation_id: object) -> dict[str, Any]:
    options = prompt.options
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": getattr(model, "provider_name", None) or "unknown",
    }
    request_model = _request_model(prompt, model)
    if request_model:
        attributes["gen_ai.request.model"] = request_model
    if isinstance(conversation_id, str):
        attributes["gen_ai.conversation.id"] = conversation_id
    for name, value in (
        ("gen_ai.request.temperature", options.temperature),
        ("gen_ai.request.max_tokens", options.max_tokens),
        ("gen_ai.request.top_p", options.top_p),
        ("gen_ai.request.frequency_penalty", options.frequency_penalty),
        ("gen_ai.request.presence_penalty", options.presence_penalty),
        ("gen_ai.request.seed", options.seed),
        ("gen_ai.request.stop_sequences", list(options.stop) if options.stop else None),
    ):
        if value is not None:
            attributes[name] = value
    attributes.update(_server(model))
    return attributes


def _name(operation: str, target: str | None) -> str:
    return f"{operation} {target}" if target else operation


def chat_span(request: ChatClientRequest, model: object) -> Span:
    """Start the span of one ChatClient call (``chat {model}``), not yet current."""
    attributes = _gen_ai_start(request.prompt, model, request.context.get(_CONVERSATION_ID))
    span: Span = settings.tracer.start_span(
        _name("chat", attributes.get("gen_ai.request.model")), attributes=attributes
    )
    if settings.capture_content and span.is_recording():
        span.set_attribute("gen_ai.input.messages", messages_json(request.prompt.messages))
    return span


class ModelCall:
    """One model request (a round of the tool loop, or an embeddings request) being timed.

    Its span is not current until :func:`running` makes it so; :meth:`finish` or the error
    path of :func:`running` records the response attributes and the two GenAI metrics.
    """

    __slots__ = ("attributes", "span", "started")

    def __init__(self, span: Span, attributes: dict[str, Any]) -> None:
        self.span = span
        """The span."""
        self.attributes = {k: attributes[k] for k in _METRIC_KEYS if k in attributes}
        """The attributes the metrics carry."""
        self.started = time.perf_counter_ns()
        """When the request started (perf counter, ns)."""

    def finish(self, response: ChatResponse) -> None:
        """Record a complete response: attributes on the span, duration and token usage."""
        record_chat_response(self.span, response)
        usage = response.usage
        if usage is None:
            self.record(response.model, None, None)
        else:
            self.record(response.model, usage.input_tokens, usage.output_tokens)

    def finish_chunks(self, span: Span, chunks: list[ChatResponse]) -> None:
        """Record a model stream that ended normally (``traced_stream``'s ``on_end``)."""
        self.finish(aggregate_chunks(chunks))

    def fail(self, span: Span, exc: BaseException) -> None:
        """Record a failed model request (``traced_stream``'s ``on_error``)."""
        self.record(None, None, None, mark_error(span, exc))

    def record(
        self,
        response_model: str | None,
        input_tokens: int | None,
        output_tokens: int | None,
        error: str | None = None,
    ) -> None:
        """Record the duration and token usage metrics."""
        attributes = dict(self.attributes)
        if response_model:
            attributes["gen_ai.response.model"] = response_model
        if error:
            attributes["error.type"] = error
        record_duration(settings.operation_duration, self.started, attributes)
        histogram = settings.token_usage
        if histogram is None:
            return
        if input_tokens is not None:
            histogram.record(input_tokens, {**attributes, "gen_ai.token.type": "input"})
        if output_tokens is not None:
            histogram.record(output_tokens, {**attributes, "gen_ai.token.type": "output"})


_METRIC_KEYS = (
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "server.address",
    "server.port",
)


@contextmanager
def running(call: ModelCall) -> Iterator[ModelCall]:
    """Make a model call's span current for the block; a failure is recorded, then raised."""
    token = _context.attach(_trace.set_span_in_context(call.span))
    try:
        yield call
    except Exception as exc:
        call.fail(call.span, exc)
        raise
    finally:
        _context.detach(token)
        call.span.end()


def model_call(prompt: Prompt, model: object, conversation_id: object) -> ModelCall:
    """Start a model request's span (``chat {model}``, kind CLIENT), not yet current."""
    attributes = _gen_ai_start(prompt, model, conversation_id)
    span: Span = settings.tracer.start_span(
        _name("chat", attributes.get("gen_ai.request.model")),
        kind=SpanKind.CLIENT,
        attributes=attributes,
    )
    if settings.capture_content and span.is_recording():
        span.set_attribute("gen_ai.input.messages", messages_json(prompt.messages))
    return ModelCall(span, attributes)


def end_chat_stream(span: Span, chunks: list[ChatClientResponse]) -> None:
    """Record a ChatClient stream that ended normally (``traced_stream``'s ``on_end``)."""
    if span.is_recording():
        record_chat_response(span, aggregate_client_responses(chunks, {}).chat_response)


def record_chat_response(span: Span, response: ChatResponse) -> None:
    """Set the response attributes of a chat span (recording spans only)."""
    if not span.is_recording():
        return
    if response.model:
        span.set_attribute("gen_ai.response.model", response.model)
    finish = [g.finish_reason for g in response.generations if g.finish_reason]
    if finish:
        span.set_attribute("gen_ai.response.finish_reasons", finish)
    response_id = response.metadata.get("id")
    if isinstance(response_id, str):
        span.set_attribute("gen_ai.response.id", response_id)
    usage = response.usage
    if usage is not None:
        span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
        for name, count in (
            ("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens),
            ("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens),
            ("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens),
        ):
            if count:
                span.set_attribute(name, count)
    if settings.capture_content:
        messages = list(response.exchange) or [g.message for g in response.generations]
        span.set_attribute("gen_ai.output.messages", output_json(messages, response))


# -- embeddings ------------------------------------------------------------------------------


def embedding_call(model: object, model_name: str, provider: str) -> ModelCall:
    """Start an embeddings request's span (``embeddings {model}``), not yet current."""
    attributes = {
        "gen_ai.operation.name": "embeddings",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model_name,
        **_server(model),
    }
    span: Span = settings.tracer.start_span(
        f"embeddings {model_name}", kind=SpanKind.CLIENT, attributes=attributes
    )
    return ModelCall(span, attributes)


def finish_embedding(
    call: ModelCall, *, input_tokens: int | None, response_model: str | None, dimensions: int
) -> None:
    """Record a complete embeddings response: attributes and metrics."""
    span = call.span
    if span.is_recording():
        if input_tokens is not None:
            span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
        if response_model:
            span.set_attribute("gen_ai.response.model", response_model)
        span.set_attribute("gen_ai.embeddings.dimension.count", dimensions)
    call.record(response_model, input_tokens, None)
