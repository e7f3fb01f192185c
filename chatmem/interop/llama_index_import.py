"""Read conversations stored by LlamaIndex's chat stores, to import them.

Two sources, written by ``llama-index-core`` itself:

- :func:`llama_index_sql_conversations`: the table of ``SQLAlchemyChatStore``, the store
  ``Memory`` uses by default (``llama_index_memory``: ``key``, ``timestamp`` in nanoseconds,
  ``status``, ``data`` JSON), on SQLite, PostgreSQL or any database SQLAlchemy reaches; active
  and archived messages are imported together, in the store's order;
- :func:`llama_index_simple_conversations`: the JSON file ``SimpleChatStore.persist`` writes.

Each yields :class:`~chatmem.interop._importing.ImportedConversation` objects for
:func:`import_conversations`. LlamaIndex stores no message ids, so each message gets one
derived from where it is stored and importing again stores nothing new. Times: the row's
timestamp for the SQL store; the JSON file stores none, so messages get the import time.
Needs ``pip install "chatmem[llama-index]"`` (and the SQL driver for the SQL store).

Example:
    ```python
    from chatmem import InMemoryChatMemoryRepository
    from chatmem.interop import llama_index_import as source

    repository = InMemoryChatMemoryRepository()
    conversations = source.llama_index_sql_conversations("sqlite:///memory.db")
    source.import_conversations(conversations, repository)
    ```
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from itertools import groupby
from pathlib import Path
from typing import Any

from chatmem.interop._common import require
from chatmem.interop._importing import (
    ImportedConversation,
    ImportReport,
    import_conversations,
    stable_id,
)

require("llama_index.core", "llama-index")

from llama_index.core.base.llms.types import ChatMessage  # noqa: E402

from chatmem.interop.llama_index import from_llama_index  # noqa: E402

__all__ = [
    "ImportReport",
    "ImportedConversation",
    "import_conversations",
    "llama_index_simple_conversations",
    "llama_index_sql_conversations",
]


def _convert(
    source: str, session: str, rows: Sequence[tuple[Any, Any, datetime | None]]
) -> ImportedConversation:
    """Convert one key's rows (row key, message JSON, time) to chatmem messages."""
    out = []
    names: dict[str, str] = {}
    for key, data, at in rows:
        # One at a time, so each message gets the id of its own row.
        for message in from_llama_index([ChatMessage.model_validate(data)], tool_names=names):
            update: dict[str, Any] = {"id": stable_id(source, session, key)}
            if at is not None:
                update["created_at"] = at
            out.append(message.model_copy(update=update))
            names.update((c.id, c.name) for c in getattr(message, "tool_calls", []))
    return ImportedConversation(session, out)


def llama_index_sql_conversations(
    url: str, table_name: str = "llama_index_memory"
) -> Iterator[ImportedConversation]:
    """Read every key of an ``SQLAlchemyChatStore`` table.

    Args:
        url: A sync SQLAlchemy URL (``sqlite:///memory.db``, ``postgresql+psycopg://...``).
        table_name: The store's table.
    """
    sqlalchemy = require("sqlalchemy", "sql")
    engine = sqlalchemy.create_engine(url)
    table = sqlalchemy.Table(table_name, sqlalchemy.MetaData(), autoload_with=engine)
    query = sqlalchemy.select(table.c.key, table.c.id, table.c.data, table.c.timestamp).order_by(
        table.c.key, table.c.timestamp, table.c.id
    )
    try:
        with engine.connect() as connection:
            for key, group in groupby(connection.execute(query), key=lambda row: str(row[0])):
                items = [
                    (row_id, json.loads(data) if isinstance(data, str) else data, _from_ns(ns))
                    for _, row_id, data, ns in group
                ]
                yield _convert(f"llama-index-sql:{table_name}", key, items)
    finally:
        engine.dispose()


def _from_ns(nanoseconds: int) -> datetime:
    return datetime.fromtimestamp(nanoseconds / 1e9, tz=UTC)


def llama_index_simple_conversations(path: str | Path) -> Iterator[ImportedConversation]:
    """Read every key of a ``SimpleChatStore`` JSON file.

    Args:
        path: The file ``SimpleChatStore.persist`` wrote.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(data, str):  # older versions wrote the JSON as a JSON string
        data = json.loads(data)
    for key, messages in sorted(data.get("store", {}).items()):
        items = [(index, message, None) for index, message in enumerate(messages)]
        yield _convert("llama-index-simple", key, items)
