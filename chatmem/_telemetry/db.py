"""Spans and the ``db.client.operation.duration`` metric of repository and vector store calls.

Attributes follow the OpenTelemetry database conventions: ``db.system.name`` (what the store's
``db_system`` says), ``db.operation.name`` (the chatmem method, such as ``append``) and
``db.collection.name`` (a configured name; never statement text or stored data).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from chatmem._telemetry import mark_error, record_duration, settings

if TYPE_CHECKING:
    from opentelemetry.trace import Span

try:
    from opentelemetry import context as _context
    from opentelemetry import trace as _trace
    from opentelemetry.trace import SpanKind
except ImportError:  # only called when chatmem._telemetry.ENABLED
    pass

__all__ = ["collection_of", "db_span", "db_system_of"]

_DEFAULT_COLLECTION = "chat_memory"


def db_system_of(store: object) -> str:
    """The ``db.system.name`` of a repository or vector store (``other`` if it says none)."""
    system = getattr(store, "db_system", None)
    return system if isinstance(system, str) and system else "other"


def collection_of(store: object, default: str = _DEFAULT_COLLECTION) -> str:
    """The configured collection/table name a store reports, else a fixed logical name.

    Only a name fixed by configuration is used, never anything built from stored data.
    """
    name = getattr(store, "db_collection_name", None)
    return name if isinstance(name, str) and name else default


@contextmanager
def db_span(
    store: object, operation: str, collection: str, extra: Mapping[str, Any] | None = None
) -> Iterator[Span]:
    """A current span and a duration measurement around one store operation."""
    system = db_system_of(store)
    attributes = {
        "db.system.name": system,
        "db.operation.name": operation,
        "db.collection.name": collection,
    }
    span: Span = settings.tracer.start_span(
        f"{operation} {collection}",
        kind=SpanKind.CLIENT,
        attributes={**attributes, **extra} if extra else attributes,
    )
    started = time.perf_counter_ns()
    token = _context.attach(_trace.set_span_in_context(span))
    try:
        yield span
    except Exception as exc:
        attributes["error.type"] = mark_error(span, exc)
        raise
    finally:
        _context.detach(token)
        # A store may learn what it talks to on its first connection (MariaDB or MySQL).
        now = db_system_of(store)
        if now != system:
            attributes["db.system.name"] = now
            span.set_attribute("db.system.name", now)
        span.end()
        record_duration(settings.db_duration, started, attributes)
