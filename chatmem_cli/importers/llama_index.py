"""Read conversations stored by LlamaIndex's chat stores, to import them.

Four sources: two written by ``llama-index-core`` itself, two by LlamaIndex's storage
integrations:

- :func:`llama_index_sql_conversations`: the table of ``SQLAlchemyChatStore``, the store
  ``Memory`` uses by default (``llama_index_memory``: ``key``, ``timestamp`` in nanoseconds,
  ``status``, ``data`` JSON), on SQLite, PostgreSQL or any database SQLAlchemy reaches; active
  and archived messages are imported together, in the store's order;
- :func:`llama_index_simple_conversations`: the JSON file ``SimpleChatStore.persist`` writes;
- :func:`llama_index_postgres_conversations`: the table of ``PostgresChatStore``
  (``llama-index-storage-chat-store-postgres``: one row per key, its messages in a ``JSON[]``
  or ``JSONB[]`` array), read with psycopg;
- :func:`llama_index_redis_conversations`: the lists of ``RedisChatStore``
  (``llama-index-storage-chat-store-redis``: one list per key, oldest first), read with
  redis-py.

Each yields :class:`~chatmem_cli.importers._conversations.ImportedConversation` objects for
:func:`import_conversations`. LlamaIndex stores no message ids, so each message gets one
derived from where it is stored (key and place in the list) and importing again stores
nothing new. Times: the row's timestamp for the SQL store; the JSON file, the PostgreSQL
and the Redis stores keep none, so messages get the import time. Tool calls and results are
kept by every store (``ToolCallBlock`` and the tool message's ``tool_call_id``), so nothing
is left out. Needs ``pip install "chatmem[llama-index]"`` plus the driver of the source
(``chatmem[postgresql]``, ``chatmem[redis]``, or the SQL driver for the SQL store); the
LlamaIndex storage packages themselves are not needed to read.

Example:
    ```python
    from chatmem import InMemoryChatMemoryRepository
    from chatmem_cli.importers import llama_index as source

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

from chatmem_cli.importers._connections import (
    keys_with_prefix,
    libpq_url,
    redis_client,
    require,
    sql_table,
)
from chatmem_cli.importers._conversations import (
    ImportedConversation,
    ImportReport,
    SourceError,
    import_conversations,
    stable_id,
)

require("llama_index.core", "llama-index")

from llama_index.core.base.llms.types import ChatMessage  # noqa: E402

from chatmem.interop.llama_index import from_llama_index  # noqa: E402
from chatmem.messages import Message  # noqa: E402

__all__ = [
    "ImportReport",
    "ImportedConversation",
    "import_conversations",
    "llama_index_postgres_conversations",
    "llama_index_redis_conversations",
    "llama_index_simple_conversations",
    "llama_index_sql_conversations",
]


def _convert(
    source: str, session: str, rows: Sequence[tuple[Any, Any, datetime | None]]
) -> ImportedConversation:
    """One key's rows (row key, message JSON, time), converted to chatmem messages when needed.

    A message's id is its row's, so the ids are known before converting: an import that
    finds them all stored converts nothing.
    """
    ids = [stable_id(source, session, key) for key, _, _ in rows]

    def convert() -> list[Message]:
        out: list[Message] = []
        names: dict[str, str] = {}
        for (_, data, at), message_id in zip(rows, ids, strict=True):
            # One at a time, so each message gets the id of its own row.
            for message in from_llama_index([ChatMessage.model_validate(data)], tool_names=names):
                update: dict[str, Any] = {"id": message_id}
                if at is not None:
                    update["created_at"] = at
                out.append(message.model_copy(update=update))
                names.update((c.id, c.name) for c in getattr(message, "tool_calls", []))
        return out

    return ImportedConversation.deferred(session, ids, convert)


def llama_index_sql_conversations(
    url: str, table_name: str = "llama_index_memory"
) -> Iterator[ImportedConversation]:
    """Read every key of an ``SQLAlchemyChatStore`` table.

    Args:
        url: A sync SQLAlchemy URL (``sqlite:///memory.db``, ``postgresql+psycopg://...``).
        table_name: The store's table.
    """
    sqlalchemy = require("sqlalchemy", "sql")
    engine, table = sql_table("llama-index-sql", url, table_name)
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


def _message_json(source: str, key: str, index: int, item: object) -> dict[str, Any]:
    """Parse one stored element, refusing anything that is not a LlamaIndex chat message."""
    data: object = item
    if isinstance(item, bytes | str):
        try:
            data = json.loads(item)
        except ValueError:
            data = None
    if not isinstance(data, dict) or "role" not in data:
        raise SourceError(
            f"{source}: {key!r} item {index} is not a LlamaIndex chat message "
            "(is this the store's table or key prefix?)"
        )
    return data


def llama_index_postgres_conversations(
    url: str, table_name: str = "chatstore", schema_name: str = "public"
) -> Iterator[ImportedConversation]:
    """Read every key of a ``PostgresChatStore`` table, a few rows per round trip.

    The store lower-cases both names and falls back to a legacy ``data_<table>`` table when
    that one exists; so does this reader.

    Args:
        url: A PostgreSQL URL (``postgresql://``, ``postgresql+psycopg://`` or the store's
            ``postgresql+asyncpg://``).
        table_name: The store's ``table_name``.
        schema_name: The store's ``schema_name``.

    Raises:
        SourceError: If the table is not there, or holds something that is not a chat message.
    """
    psycopg = require("psycopg", "postgresql")
    from psycopg import sql

    table, schema = table_name.lower(), schema_name.lower()
    with psycopg.connect(libpq_url(url)) as connection:
        for candidate in (f"data_{table}", table):
            qualified = sql.Identifier(schema, candidate)
            found = connection.execute(
                "SELECT to_regclass(%s)", [qualified.as_string(connection)]
            ).fetchone()
            if found is not None and found[0] is not None:
                break
        else:
            raise SourceError(
                f"llama-index-postgres: no table {schema}.{table} (nor {schema}.data_{table})"
            )
        source = f"llama-index-postgres:{schema}.{candidate}"
        query = sql.SQL("SELECT key, value FROM {} ORDER BY key").format(qualified)
        # A server-side cursor: one row holds a whole conversation.
        with connection.cursor(name="chatmem_llama_index_import") as cursor:
            cursor.itersize = 50
            cursor.execute(query)
            for key, value in cursor:
                items = [
                    (index, _message_json(source, key, index, item), None)
                    for index, item in enumerate(value or [])
                ]
                yield _convert(source, str(key), items)


def llama_index_redis_conversations(
    url: str, key_prefix: str = ""
) -> Iterator[ImportedConversation]:
    """Read every list of a ``RedisChatStore`` whose key starts with ``key_prefix``.

    ``RedisChatStore`` keeps each conversation in a list named by the key the application
    chose, with no prefix of its own: pass the prefix your keys share so other data in the
    same database is not read. The conversation id is the key without the prefix. Keys that
    are not lists are passed over; a list of something else than chat messages is an error.

    Args:
        url: A Redis URL.
        key_prefix: Only keys starting with this are read.

    Raises:
        SourceError: If a list holds something that is not a LlamaIndex chat message.
    """
    client = redis_client("llama-index-redis", url)
    source = f"llama-index-redis:{key_prefix}"
    try:
        keys = keys_with_prefix(client, key_prefix)
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            with client.pipeline(transaction=False) as pipeline:
                for key in chunk:
                    pipeline.type(key)
                types = pipeline.execute()
            for key, kind in zip(chunk, types, strict=True):
                if kind not in (b"list", "list"):
                    continue
                session = key.decode()[len(key_prefix) :]
                raw = client.lrange(key, 0, -1)
                items = [
                    (index, _message_json(source, session, index, item), None)
                    for index, item in enumerate(raw)
                ]
                yield _convert(source, session, items)
    finally:
        client.close()
