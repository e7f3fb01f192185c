"""Conversations stored by other libraries, read by kind and URL: what ``chatmem migrate`` reads.

A team switching to chatmem has conversations its previous library stored. Each *source kind*
names one such layout and the function that reads it (imported only when used, so a kind
needs only its own driver):

| kind | what wrote it | options |
| --- | --- | --- |
| `langchain-postgres` | langchain-postgres `PostgresChatMessageHistory` | `table` |
| `langchain-sql` | langchain-community `SQLChatMessageHistory` | `table` |
| `langchain-redis` | langchain-community `RedisChatMessageHistory` | `prefix` |
| `llama-index-sql` | llama-index-core `SQLAlchemyChatStore` (`Memory`) | `table` |
| `llama-index-simple` | llama-index-core `SimpleChatStore.persist` (a file) | none |
| `llama-index-postgres` | llama-index-storage-chat-store-postgres | `table`, `schema` |
| `llama-index-redis` | llama-index-storage-chat-store-redis | `prefix` |
| `spring-ai-jdbc` | Spring AI `JdbcChatMemoryRepository` | `table` |
| `spring-ai-cassandra` | Spring AI `CassandraChatMemoryRepository` | `keyspace`, `table` |
| `spring-ai-mongodb` | Spring AI `MongoChatMemoryRepository` | `collection` |
| `spring-ai-neo4j` | Spring AI `Neo4jChatMemoryRepository` | the reader's own keywords |

:func:`read_source` yields one :class:`ImportedConversation` per stored session;
:func:`import_conversations` appends them to a chatmem repository, skipping conversations it
already holds whole, so a migration is resumed or repeated by running it again. Each
message gets its source's id or, where the source stored none, one derived from where it is
stored. What a source lost before it reached chatmem (Spring AI's JDBC table keeps no tool
calls, for example) is counted in :attr:`ImportReport.left_out` and described by
:attr:`SourceKind.loses`.

Example:
    ```python
    import sqlite3
    import tempfile
    from contextlib import closing
    from pathlib import Path

    from chatmem import InMemoryChatMemoryRepository
    from chatmem_cli.importers.sources import import_conversations, read_source

    # A table as LangChain's SQLChatMessageHistory writes it.
    path = Path(tempfile.mkdtemp()) / "langchain.db"
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE message_store (id INTEGER PRIMARY KEY, session_id, message)")
        db.execute(
            "INSERT INTO message_store (session_id, message) VALUES (?, ?)",
            ("s1", '{"type": "human", "data": {"content": "Hi", "type": "human"}}'),
        )
    repository = InMemoryChatMemoryRepository()
    report = import_conversations(
        read_source("langchain-sql", f"sqlite:///{path}", table="message_store"), repository
    )
    assert (report.conversations, report.messages_stored) == (1, 1)
    again = import_conversations(read_source("langchain-sql", f"sqlite:///{path}"), repository)
    assert again.messages_stored == 0
    ```
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast
from urllib.parse import unquote, urlsplit

from chatmem_cli.importers._conversations import (
    ImportedConversation,
    ImportReport,
    SourceError,
    import_conversations,
)

__all__ = [
    "SOURCES",
    "ImportReport",
    "ImportedConversation",
    "SourceError",
    "SourceKind",
    "import_conversations",
    "read_source",
    "source_function",
]


@dataclass(frozen=True)
class SourceKind:
    """One layout another library stores conversations in, and where its reader lives."""

    name: str
    """The kind, as ``chatmem migrate --from`` takes it."""
    module: str
    """The module holding the reader (imported only when the kind is read)."""
    function: str
    """The reader's name in that module; it takes the URL first, then keyword options."""
    url: str
    """What the URL (or path) names, for help texts."""
    options: Mapping[str, str] = field(default_factory=dict)
    """Option names (``table``, ``prefix``, ...) and the reader's keyword each one sets."""
    loses: str = ""
    """What the source does not keep, so chatmem cannot get it back."""


def _kind(
    name: str, module: str, function: str, url: str, loses: str, **options: str
) -> SourceKind:
    return SourceKind(
        name, f"chatmem_cli.importers.{module}", function, url, MappingProxyType(options), loses
    )


_NO_TIME = "message times (messages get the import time)"
SOURCES: Mapping[str, SourceKind] = MappingProxyType(
    {
        kind.name: kind
        for kind in (
            _kind(
                "langchain-postgres",
                "langchain",
                "langchain_postgres_conversations",
                "PostgreSQL URL",
                "nothing chatmem holds (ids, times and tool calls are kept)",
                table="table_name",
            ),
            _kind(
                "langchain-sql",
                "langchain",
                "langchain_sql_conversations",
                "SQLAlchemy URL",
                _NO_TIME,
                table="table_name",
            ),
            _kind(
                "langchain-redis",
                "langchain",
                "langchain_redis_conversations",
                "Redis URL",
                _NO_TIME,
                prefix="key_prefix",
            ),
            _kind(
                "llama-index-sql",
                "llama_index",
                "llama_index_sql_conversations",
                "SQLAlchemy URL",
                "message ids (derived from the row)",
                table="table_name",
            ),
            _kind(
                "llama-index-simple",
                "llama_index",
                "llama_index_simple_conversations",
                "path of the JSON file",
                f"message ids (derived from the place), {_NO_TIME}",
            ),
            _kind(
                "llama-index-postgres",
                "llama_index",
                "llama_index_postgres_conversations",
                "PostgreSQL URL",
                f"message ids (derived from the place), {_NO_TIME}",
                table="table_name",
                schema="schema_name",
            ),
            _kind(
                "llama-index-redis",
                "llama_index",
                "llama_index_redis_conversations",
                "Redis URL",
                f"message ids (derived from the place), {_NO_TIME}",
                prefix="key_prefix",
            ),
            _kind(
                "spring-ai-jdbc",
                "spring_ai",
                "spring_ai_jdbc_conversations",
                "SQLAlchemy URL",
                "tool calls and results (left out and counted), media, metadata, message ids",
                table="table_name",
            ),
            _kind(
                "spring-ai-cassandra",
                "spring_ai",
                "spring_ai_cassandra_conversations",
                "Cassandra URL",
                "tool calls and results (left out and counted), media, metadata, message ids",
                keyspace="keyspace",
                table="table_name",
            ),
            _kind(
                "spring-ai-mongodb",
                "spring_ai",
                "spring_ai_mongodb_conversations",
                "MongoDB URL",
                "tool calls and results (left out and counted), media, message ids, "
                "message times (the last save's)",
                collection="collection_name",
            ),
            _kind(
                "spring-ai-neo4j",
                "spring_ai",
                "spring_ai_neo4j_conversations",
                "Neo4j URL",
                f"message ids, {_NO_TIME}",
            ),
        )
    }
)
"""Every source kind by name."""


def _lookup(kind: str) -> SourceKind:
    try:
        return SOURCES[kind]
    except KeyError:
        known = ", ".join(SOURCES)
        raise SourceError(f"unknown source kind {kind!r}; the kinds are: {known}") from None


def source_function(kind: str) -> Callable[..., Iterator[ImportedConversation]]:
    """Import and return the reader of a source kind.

    Args:
        kind: A name of :data:`SOURCES`.

    Raises:
        SourceError: If the kind is unknown, its module needs a package that is not installed
            (the message names the ``pip install`` line), or this chatmem has no such reader.
    """
    source = _lookup(kind)
    try:
        module = importlib.import_module(source.module)
    except ImportError as exc:
        raise SourceError(f"source kind {kind!r} cannot be read here: {exc}") from exc
    function = getattr(module, source.function, None)
    if not callable(function):
        raise SourceError(
            f"source kind {kind!r} needs {source.module}.{source.function}, which this "
            "installation of chatmem does not have (upgrade chatmem)"
        )
    return cast("Callable[..., Iterator[ImportedConversation]]", function)


def _check_location(kind: str, url: str) -> None:
    """Refuse a missing file before a driver creates an empty one in its place."""
    if kind == "llama-index-simple":
        if not Path(url).is_file():
            raise SourceError(f"{kind}: no such file: {url}")
        return
    # Only an SQLite URL is split here: a server URL may list several hosts, which urlsplit
    # refuses on some Pythons when one is bracketed (its driver reads the list itself).
    if url.partition(":")[0].partition("+")[0].lower() != "sqlite":
        return
    parts = urlsplit(url)
    if parts.path not in ("", "/"):
        path = Path(unquote(parts.path[1:]))
        if str(path) != ":memory:" and not path.is_file():
            raise SourceError(f"{kind}: no such SQLite file: {path}")


def read_source(kind: str, url: str, **options: Any) -> Iterator[ImportedConversation]:
    """Read every conversation a source holds, one at a time.

    Args:
        kind: A name of :data:`SOURCES`, such as ``"langchain-redis"``.
        url: Where the source is: a database URL, or a file's path for
            ``llama-index-simple`` (see :attr:`SourceKind.url`).
        **options: The kind's options by their short names (``table``, ``prefix``,
            ``schema``, ``keyspace``, ``collection``; see :attr:`SourceKind.options`) or by
            the reader's own keyword names. ``None`` values are left out.

    Returns:
        The conversations, for :func:`import_conversations`. Nothing is read before the
        first one is asked for.

    Raises:
        SourceError: If the kind is unknown or cannot be read here, an option is not one the
            kind takes, or a SQLite file or JSON file is missing.
    """
    source = _lookup(kind)
    function = source_function(kind)
    parameters = list(inspect.signature(function).parameters)[1:]
    keywords: dict[str, Any] = {}
    for name, value in options.items():
        if value is None:
            continue
        keyword = source.options.get(name, name)
        if keyword not in parameters:
            own = [p for p in parameters if p not in source.options.values()]
            accepted = [*source.options, *own]
            raise SourceError(
                f"source kind {kind!r} takes no option {name!r}; it takes: "
                + (", ".join(accepted) or "none")
            )
        keywords[keyword] = value
    _check_location(kind, url)
    return function(url, **keywords)
