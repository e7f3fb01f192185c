"""Read conversations stored by LangChain's chat message histories, to import them.

Three sources, each read with its own driver (imported only when used):

- :func:`langchain_postgres_conversations`: the table of ``langchain_postgres``'
  ``PostgresChatMessageHistory`` (``id``, ``session_id``, ``message`` JSONB, ``created_at``);
- :func:`langchain_sql_conversations`: the table of ``langchain_community``'s
  ``SQLChatMessageHistory`` (``id``, ``session_id``, ``message`` JSON text), on any database
  SQLAlchemy reaches;
- :func:`langchain_redis_conversations`: the lists of ``langchain_community``'s
  ``RedisChatMessageHistory`` (``message_store:<session>``, newest first).

Each yields :class:`ImportedConversation` objects; :func:`import_conversations` appends them to
a chatmem repository. Every message gets its LangChain id or, when LangChain stored none, an id
derived from where it is stored (UUIDv5 of source, session and row), so importing again stores
nothing new: appends skip ids already stored. Message creation times are the row's
``created_at`` for langchain-postgres; the other two sources store no time, so messages get
the import time (what the source lost before it reached chatmem). Needs
``pip install "chatmem[langchain]"`` plus the driver of the source.

Example:
    ```python
    from chatmem import InMemoryChatMemoryRepository
    from chatmem.interop.langchain_import import import_conversations, langchain_sql_conversations

    repository = InMemoryChatMemoryRepository()
    report = import_conversations(langchain_sql_conversations("sqlite:///langchain.db"), repository)
    ```
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from itertools import groupby
from typing import Any

from chatmem.interop._common import require
from chatmem.interop._importing import (
    ImportedConversation,
    ImportReport,
    SourceError,
    import_conversations,
    stable_id,
)

require("langchain_core", "langchain")

from langchain_core.messages import messages_from_dict  # noqa: E402

from chatmem.interop.langchain import from_langchain  # noqa: E402

__all__ = [
    "ImportReport",
    "ImportedConversation",
    "import_conversations",
    "langchain_postgres_conversations",
    "langchain_redis_conversations",
    "langchain_sql_conversations",
]


def _convert(
    source: str, session: str, rows: Sequence[tuple[Any, Any, datetime | None]]
) -> ImportedConversation:
    """Convert one session's rows (row key, message dict, time) to chatmem messages."""
    originals = messages_from_dict([data for _, data, _ in rows])
    for original, (key, _, _) in zip(originals, rows, strict=True):
        if not original.id:
            original.id = stable_id(source, session, key)
    converted = from_langchain(originals)
    times = [at for _, _, at in rows]
    if len(converted) == len(rows) and all(at is not None for at in times):
        converted = [
            m.model_copy(update={"created_at": at}) for m, at in zip(converted, times, strict=True)
        ]
    return ImportedConversation(session, converted)


def langchain_postgres_conversations(
    url: str, table_name: str = "langchain_chat_history"
) -> Iterator[ImportedConversation]:
    """Read every session of a ``langchain_postgres`` chat history table.

    Args:
        url: A PostgreSQL URL (``postgresql://`` or ``postgresql+psycopg://``).
        table_name: The table ``PostgresChatMessageHistory`` wrote.
    """
    psycopg = require("psycopg", "postgresql")
    from psycopg import sql

    query = sql.SQL(
        "SELECT session_id, id, message, created_at FROM {} ORDER BY session_id, id"
    ).format(sql.Identifier(table_name))
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as connection:
        found = connection.execute("SELECT to_regclass(%s)", [f'"{table_name}"']).fetchone()
        if found is None or found[0] is None:
            raise SourceError(f"langchain-postgres: no table {table_name!r}")
        # A server-side cursor: the table is read a few thousand rows per round trip.
        with connection.cursor(name="chatmem_langchain_import") as rows:
            rows.itersize = 2000
            rows.execute(query)
            for session, group in groupby(rows, key=lambda row: str(row[0])):
                items = [(row_id, message, at) for _, row_id, message, at in group]
                yield _convert(f"langchain-postgres:{table_name}", session, items)


def langchain_sql_conversations(
    url: str, table_name: str = "message_store"
) -> Iterator[ImportedConversation]:
    """Read every session of a ``SQLChatMessageHistory`` table.

    Args:
        url: A SQLAlchemy URL.
        table_name: The table ``SQLChatMessageHistory`` wrote.
    """
    sqlalchemy = require("sqlalchemy", "sql")
    engine = sqlalchemy.create_engine(url)
    table = _reflect(sqlalchemy, engine, table_name, "langchain-sql")
    query = sqlalchemy.select(table.c.session_id, table.c.id, table.c.message).order_by(
        table.c.session_id, table.c.id
    )
    try:
        with engine.connect() as connection:
            for session, group in groupby(connection.execute(query), key=lambda row: str(row[0])):
                items = [(row_id, json.loads(message), None) for _, row_id, message in group]
                yield _convert(f"langchain-sql:{table_name}", session, items)
    finally:
        engine.dispose()


def langchain_redis_conversations(
    url: str, key_prefix: str = "message_store:"
) -> Iterator[ImportedConversation]:
    """Read every session of ``RedisChatMessageHistory`` lists.

    Args:
        url: A Redis URL.
        key_prefix: The prefix the histories used.
    """
    redis = require("redis", "redis")
    client = redis.Redis.from_url(url)
    try:
        for key in sorted(client.scan_iter(match=_glob_escape(key_prefix) + "*", count=1000)):
            session = key.decode()[len(key_prefix) :]
            # LPUSH keeps the newest first; the index counts from the oldest.
            items = [
                (index, json.loads(raw), None)
                for index, raw in enumerate(reversed(client.lrange(key, 0, -1)))
            ]
            yield _convert(f"langchain-redis:{key_prefix}", session, items)
    finally:
        client.close()


def _reflect(sqlalchemy: Any, engine: Any, table_name: str, kind: str) -> Any:
    """Reflect a source table; a missing one is a :class:`SourceError`."""
    try:
        return sqlalchemy.Table(table_name, sqlalchemy.MetaData(), autoload_with=engine)
    except sqlalchemy.exc.NoSuchTableError:
        engine.dispose()
        raise SourceError(f"{kind}: no table {table_name!r}") from None


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)
