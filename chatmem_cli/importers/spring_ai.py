"""Read conversations stored by Spring AI's chat memory repositories, to import them.

Four sources, one per Spring AI ``ChatMemoryRepository`` (each tested on data that Spring AI's
own repository class wrote on Java):

- :func:`spring_ai_jdbc_conversations`: ``JdbcChatMemoryRepository``'s table
  (``SPRING_AI_CHAT_MEMORY``: ``conversation_id``, ``content``, ``type``, ``timestamp``),
  written by Spring AI 1.0.1 in the tests;
- :func:`spring_ai_cassandra_conversations`: ``CassandraChatMemoryRepository``'s table
  (keyspace ``springframework``, table ``ai_chat_memory``: one row per save of a conversation,
  its messages in a list of ``ai_chat_message`` values), Spring AI 1.1.2;
- :func:`spring_ai_mongodb_conversations`: ``MongoChatMemoryRepository``'s collection
  (``ai_chat_memory``: one document per message), Spring AI 1.1.2;
- :func:`spring_ai_neo4j_conversations`: ``Neo4jChatMemoryRepository``'s graph (``Session``
  and ``Message`` nodes with ``Metadata``, ``ToolCall``, ``ToolResponse`` and ``Media``
  nodes), Spring AI 1.1.2.

Maven Central serves none of the last three at 1.0.1 and no MongoDB one before 1.1.0; the
Cassandra and Neo4j repositories of Spring AI 1.0.x write the same layout as 1.1.2 (their
1.0.3 sources differ only in how they read it back).

What each one lost before it reached chatmem:

| source | tool calls and results | metadata | media | times |
| --- | --- | --- | --- | --- |
| JDBC | lost: left out and counted | lost | lost | the row's ``timestamp`` |
| Cassandra | lost: left out and counted | lost | lost | each message's, to the millisecond |
| MongoDB | lost: left out and counted | kept | lost | the last save's, to the millisecond |
| Neo4j | kept, with their ids | kept (flat values) | kept (bytes or URL) | none: the import time |

The JDBC, Cassandra and MongoDB repositories keep only each message's type and text: an
assistant message that only called tools is stored with empty text and its calls dropped,
and a tool result as a ``TOOL`` entry with no text and no call id. Neither can become a valid
chatmem message, so both are left out and counted in
:attr:`~chatmem_cli.importers._conversations.ImportedConversation.left_out` (an assistant message
whose text was empty for another reason is left out the same way). The Neo4j repository
keeps tool calls (id, name, arguments; not their ``type``, always ``function``), tool
results and media (not the media's own id); it keeps no time at all.

Message ids: none of these sources keeps one that lasts (the MongoDB and Neo4j repositories
delete and write every message again on each save, with new ids), so each message gets an id
derived from where it is stored: its place in the conversation, type and text (for
Cassandra, its stored time instead of its place, which survives Spring AI's window dropping
older messages). Importing again stores nothing new. Needs the driver of the source
(``pip install "chatmem[postgresql]"``, ``chatmem[cassandra]``, ``chatmem[mongodb]`` or
``chatmem[neo4j]``); Spring AI itself is not needed to read.

Example:
    ```python
    from chatmem import InMemoryChatMemoryRepository
    from chatmem_cli.importers import spring_ai as source

    repository = InMemoryChatMemoryRepository()
    conversations = source.spring_ai_jdbc_conversations("postgresql+psycopg://app@db/app")
    source.import_conversations(conversations, repository)
    ```
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, date, datetime, time, timedelta
from itertools import groupby
from typing import Any
from urllib.parse import parse_qsl, unquote

from pydantic import JsonValue

from chatmem.backend import redact_url, split_query, split_url
from chatmem.messages import (
    AssistantMessage,
    Media,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem_cli.importers._connections import (
    refuse_repository_options,
    require,
    source_errors,
    sql_table,
)
from chatmem_cli.importers._conversations import (
    ImportedConversation,
    ImportReport,
    SourceError,
    import_conversations,
    stable_id,
)

__all__ = [
    "ImportReport",
    "ImportedConversation",
    "SourceError",
    "import_conversations",
    "spring_ai_cassandra_conversations",
    "spring_ai_jdbc_conversations",
    "spring_ai_mongodb_conversations",
    "spring_ai_neo4j_conversations",
]

_TYPES: dict[str, type[SystemMessage | UserMessage | AssistantMessage]] = {
    "SYSTEM": SystemMessage,
    "USER": UserMessage,
    "ASSISTANT": AssistantMessage,
}


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def spring_ai_jdbc_conversations(
    url: str, table_name: str = "SPRING_AI_CHAT_MEMORY"
) -> Iterator[ImportedConversation]:
    """Read every conversation of Spring AI's JDBC chat memory table.

    Args:
        url: A SQLAlchemy URL of the database Spring AI wrote to.
        table_name: The table (Spring AI's default name unless configured otherwise).
    """
    sqlalchemy = require("sqlalchemy", "sql")
    # PostgreSQL folds the unquoted name Spring AI creates to lower case.
    engine, table = sql_table("spring-ai-jdbc", url, table_name, fold_case=True)
    columns = table.c
    query = sqlalchemy.select(
        columns.conversation_id, columns.content, columns.type, columns["timestamp"]
    ).order_by(columns.conversation_id, columns["timestamp"])
    source = f"spring-ai-jdbc:{table_name}"
    try:
        with engine.connect() as connection:
            rows = connection.execute(query)
            for conversation_id, group in groupby(rows, key=lambda row: str(row[0])):
                messages: list[Message] = []
                left_out = 0
                for index, (_, content, kind, at) in enumerate(group):
                    message_type = _TYPES.get(str(kind).upper())
                    if message_type is None or (message_type is AssistantMessage and not content):
                        left_out += 1  # a tool result, or a call whose tools Spring dropped
                        continue
                    key = f"{index}\n{kind}\n{content}"
                    messages.append(
                        message_type(
                            content,
                            id=stable_id(source, conversation_id, key),
                            created_at=_utc(at),
                        )
                    )
                yield ImportedConversation(conversation_id, messages, left_out)
    finally:
        engine.dispose()


def _text_message(
    kind: str, content: str | None, message_id: str, at: datetime, metadata: dict[str, JsonValue]
) -> Message | None:
    """Make the message a text-only source row holds, or None when it cannot be imported."""
    message_type = _TYPES.get(kind.upper())
    if message_type is None or (message_type is AssistantMessage and not content):
        return None  # a tool result, or a call whose tools Spring AI dropped
    return message_type(content or "", id=message_id, created_at=_utc(at), metadata=metadata)


# --- Cassandra -------------------------------------------------------------------------

_CQL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CASSANDRA_PAGE_TIMEOUT = timedelta(seconds=60)


def _cql_name(name: str, what: str) -> str:
    # Spring AI passes its names through the driver's CqlIdentifier.fromCql: unquoted, so
    # Cassandra folds them to lower case.
    if not _CQL_NAME.fullmatch(name):
        raise SourceError(f"spring-ai-cassandra: {what} {name!r} is not a CQL name")
    return name.lower()


def _cassandra_cluster(url: str, keyspace: str) -> Any:
    """Build (not connect) the cluster a URL names, as the cassandra repository builds its own.

    The URL is the repository's without a keyspace path (the keyspace is an argument here),
    and takes one option of its own, ``local_dc``.
    """
    from chatmem_repositories.cassandra._drivers import new_cluster
    from chatmem_repositories.cassandra._options import (
        CassandraOptions,
        ConnectionSettings,
        contact_points,
    )

    scheme, sep, _ = url.partition("://")
    if not sep or scheme.lower() != "cassandra":
        raise SourceError(
            f"spring-ai-cassandra: {redact_url(url)!r} is not a cassandra:// URL "
            "(cassandra://[user:password@]host[,host...][:port][?local_dc=NAME])"
        )
    with source_errors("spring-ai-cassandra"):
        base, query = split_query(url)
        parts = split_url(base)
        hosts, port, username, password = contact_points(parts.netloc, url)
    path = unquote(parts.path.strip("/"))
    if path and path.lower() != keyspace.lower():
        raise SourceError(
            f"spring-ai-cassandra: the URL names keyspace {path!r} but keyspace is "
            f"{keyspace!r}; Spring AI's keyspace is the keyspace argument"
        )
    for name in query:
        if name != "local_dc":
            raise SourceError(f"spring-ai-cassandra: unknown URL option {name!r} (local_dc)")
    # A page of whole conversations may take longer than one of the repository's statements.
    options = CassandraOptions(
        local_datacenter=query.get("local_dc") or None, read_timeout=_CASSANDRA_PAGE_TIMEOUT
    )
    settings = ConnectionSettings(hosts, port, keyspace, username, password)
    return new_cluster(settings, options, {})


def spring_ai_cassandra_conversations(
    url: str, keyspace: str = "springframework", table_name: str = "ai_chat_memory"
) -> Iterator[ImportedConversation]:
    """Read every conversation of Spring AI's Cassandra chat memory table.

    ``CassandraChatMemoryRepository`` writes a new row (``session_id``,
    ``message_timestamp``, ``messages``) each time it saves a conversation, holding the whole
    conversation as a list of ``ai_chat_message`` values (``msg_timestamp``, ``msg_type``,
    ``msg_content``); it reads back only the newest row. So does this reader: one row per
    conversation, its messages in the list's order. Each message keeps the time it was first
    saved (to the millisecond), which is also what its id derives from, so a conversation
    that Spring AI kept on saving (and whose window dropped older messages) imports only its
    new messages the next time. Tool calls, tool results, metadata and media are lost (see
    the module). The table's layout must be Spring AI's default one (``session_id``
    partition key, ``message_timestamp`` clustering key).

    Args:
        url: ``cassandra://[user:password@]host[,host...][:port]``, with
            ``?local_dc=NAME`` when the cluster has several datacenters; a path, if any,
            must name the same keyspace as ``keyspace``.
        keyspace: The keyspace (Spring AI's default ``springframework``).
        table_name: The table (Spring AI's default ``ai_chat_memory``).

    Raises:
        SourceError: For a malformed URL, or when the table is not there or is not Spring
            AI's layout.
    """
    require("cassandra.cluster", "cassandra")
    from cassandra.query import SimpleStatement

    keyspace, table_name = _cql_name(keyspace, "keyspace"), _cql_name(table_name, "table")
    cluster = _cassandra_cluster(url, keyspace)
    source = f"spring-ai-cassandra:{keyspace}.{table_name}"
    try:
        session = cluster.connect()
        found = cluster.metadata.keyspaces.get(keyspace)
        table = found.tables.get(table_name) if found is not None else None
        if table is None:
            raise SourceError(f"{source}: no such table")
        if not {"session_id", "messages"} <= set(table.columns):
            raise SourceError(
                f"{source}: not Spring AI's layout (no session_id or messages column)"
            )
        statement = SimpleStatement(
            f'SELECT session_id, messages FROM "{keyspace}"."{table_name}" PER PARTITION LIMIT 1',
            fetch_size=100,
        )
        for row in session.execute(statement):
            yield _cassandra_conversation(source, str(row["session_id"]), row["messages"] or [])
    finally:
        cluster.shutdown()


def _cassandra_conversation(source: str, session: str, stored: list[Any]) -> ImportedConversation:
    messages: list[Message] = []
    left_out = 0
    seen: dict[tuple[datetime, str, str], int] = {}
    for value in stored:
        at, kind, content = value.msg_timestamp, str(value.msg_type), value.msg_content
        # Time, type and text name a message; the count tells identical ones apart.
        same = (at, kind, content or "")
        seen[same] = nth = seen.get(same, -1) + 1
        key = f"{_utc(at).isoformat()}\n{kind}\n{content}\n{nth}"
        message = _text_message(kind, content, stable_id(source, session, key), at, {})
        if message is None:
            left_out += 1
        else:
            messages.append(message)
    return ImportedConversation(session, messages, left_out)


# --- MongoDB ---------------------------------------------------------------------------


def _json(value: object) -> JsonValue:
    """Turn a stored metadata value into JSON: BSON or Neo4j times as ISO text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    iso_format = getattr(value, "iso_format", None)  # neo4j.time types
    if callable(iso_format):
        return str(iso_format())
    return str(value)  # ObjectId, Decimal128, ...


def _metadata(stored: object) -> dict[str, JsonValue]:
    if not isinstance(stored, Mapping):
        return {}
    # Spring AI adds the message's own type to every message's metadata.
    return {str(k): _json(v) for k, v in stored.items() if k != "messageType"}


def spring_ai_mongodb_conversations(
    url: str, collection_name: str = "ai_chat_memory"
) -> Iterator[ImportedConversation]:
    """Read every conversation of Spring AI's MongoDB chat memory collection.

    ``MongoChatMemoryRepository`` stores one document per message (``conversationId``,
    ``message`` with ``content``, ``type`` and ``metadata``, ``timestamp``), and deletes and
    writes a conversation's documents again on each save, every one stamped with the time of
    that save. Messages are read oldest first: by ``timestamp``, then in the order they were
    inserted (their ``_id``), which is the order Spring AI saved them in (Spring AI itself
    reads them back newest first). Each message keeps its metadata (without Spring AI's own
    ``messageType`` entry; dates as ISO text) and, as its time, the conversation's last save
    (to the millisecond). Tool calls, tool results and media are lost (see the module).

    Args:
        url: A MongoDB URL naming the database in its path
            (``mongodb://user:password@host:27017/app``).
        collection_name: The collection (Spring AI's ``ai_chat_memory``, the name its
            ``Conversation`` document class carries).

    Raises:
        SourceError: If the URL names no database, the collection is not there, or it holds
            something Spring AI does not write.
    """
    pymongo = require("pymongo", "mongodb")
    client, database_name = _mongo_client(pymongo, url)
    try:
        database = client[database_name]
        if collection_name not in database.list_collection_names(filter={"name": collection_name}):
            raise SourceError(
                f"spring-ai-mongodb: no collection {collection_name!r} in {database.name!r}"
            )
        source = f"spring-ai-mongodb:{database.name}.{collection_name}"
        cursor = database[collection_name].find(
            {},
            projection={"conversationId": 1, "message": 1, "timestamp": 1},
            sort=[("conversationId", 1), ("timestamp", 1), ("_id", 1)],
            batch_size=500,
        )
        with cursor:
            for conversation_id, group in groupby(cursor, key=lambda d: d.get("conversationId")):
                yield _mongo_conversation(source, conversation_id, list(group))
    finally:
        client.close()


def _mongo_client(pymongo: Any, url: str) -> tuple[Any, str]:
    """Build the client a URL names, as the mongodb repository builds its own, and the database.

    The URL is the repository's, except that the database must be named (Spring AI's has no
    default) and that nothing bounds the wait for a reply unless the URL does: the first
    batch waits for the server to sort the whole collection.
    """
    from chatmem_repositories.mongodb._options import parse_url

    with source_errors("spring-ai-mongodb"):
        settings = parse_url(url, {})
    used = ("database", "connect_timeout", "read_timeout")
    refuse_repository_options("spring-ai-mongodb", settings.options, used)
    if settings.options.database is None and not split_url(settings.url).path.strip("/"):
        raise SourceError(
            f"spring-ai-mongodb: {redact_url(url)!r} names no database (put it in the path)"
        )
    client_options = dict(settings.client_options)
    in_url = {name.lower() for name, _ in parse_qsl(split_url(settings.url).query)}
    if "sockettimeoutms" not in in_url and "read_timeout" not in settings.options.model_fields_set:
        client_options.pop("socketTimeoutMS", None)
    return pymongo.MongoClient(settings.url, **client_options), settings.database


def _mongo_conversation(source: str, session: object, documents: list[Any]) -> ImportedConversation:
    if not isinstance(session, str):
        raise SourceError(f"{source}: a document has no conversationId (is this the collection?)")
    messages: list[Message] = []
    left_out = 0
    for index, document in enumerate(documents):
        stored = document.get("message")
        at = document.get("timestamp")
        if not isinstance(stored, Mapping) or not isinstance(at, datetime):
            raise SourceError(
                f"{source}: {session!r} holds a document that Spring AI does not write"
            )
        kind, content = str(stored.get("type")), stored.get("content")
        key = f"{index}\n{kind}\n{content}"
        message = _text_message(
            kind, content, stable_id(source, session, key), at, _metadata(stored.get("metadata"))
        )
        if message is None:
            left_out += 1
        else:
            messages.append(message)
    return ImportedConversation(session, messages, left_out)


# --- Neo4j -----------------------------------------------------------------------------


def _label(label: str) -> str:
    if not label:
        raise SourceError("spring-ai-neo4j: a label must not be empty")
    return "`" + label.replace("`", "``") + "`"


_NEO4J_QUERY = """
MATCH (s:{session})
RETURN s.id AS id, COLLECT {{
  MATCH (s)-[:HAS_MESSAGE]->(m:{message})
  RETURN m {{
    .messageType, .textContent, .idx,
    metadata: COLLECT {{ MATCH (m)-[:HAS_METADATA]->(x:{metadata}) RETURN properties(x) }},
    toolCalls: COLLECT {{
      MATCH (m)-[:HAS_TOOL_CALL]->(x:{tool_call}) RETURN properties(x) ORDER BY x.idx
    }},
    toolResponses: COLLECT {{
      MATCH (m)-[:HAS_TOOL_RESPONSE]-(x:{tool_response})
      RETURN properties(x) ORDER BY toInteger(x.idx)
    }},
    media: COLLECT {{ MATCH (m)-[:HAS_MEDIA]->(x:{media}) RETURN properties(x) ORDER BY x.idx }}
  }} AS message ORDER BY message.idx
}} AS messages
ORDER BY id
"""


def spring_ai_neo4j_conversations(
    url: str,
    session_label: str = "Session",
    message_label: str = "Message",
    *,
    metadata_label: str = "Metadata",
    tool_call_label: str = "ToolCall",
    tool_response_label: str = "ToolResponse",
    media_label: str = "Media",
    username: str | None = None,
    password: str | None = None,
    database: str | None = None,
) -> Iterator[ImportedConversation]:
    """Read every conversation of Spring AI's Neo4j chat memory graph.

    ``Neo4jChatMemoryRepository`` stores a ``Session`` node (``id``) linked by
    ``HAS_MESSAGE`` to ``Message`` nodes (``messageType``, ``textContent``, ``idx`` from 1),
    each with a ``Metadata`` node (``HAS_METADATA``) and its ``ToolCall`` (``HAS_TOOL_CALL``),
    ``ToolResponse`` (``HAS_TOOL_RESPONSE``) and ``Media`` (``HAS_MEDIA``) nodes. Messages are
    read in ``idx`` order with their tool calls (id, name, arguments), tool results, media
    (inline bytes, or a URL) and metadata (temporal values as ISO text). What is lost: message
    times (the repository keeps none, so messages get the import time), each tool call's
    ``type`` and each media's own id. A tool message with no results is left out and counted.
    One query per import, one result row per session; it needs Neo4j 5.6 or newer
    (``COLLECT`` subqueries; Spring AI 1.1 itself needs 5.26).

    Args:
        url: A Neo4j URL (``bolt://``, ``neo4j://``, with ``+s``/``+ssc``), with the user and
            password in it or given as ``username``/``password``, and the database, if not
            the default one, as its path (``bolt://app:secret@host:7687/chat``).
        session_label: The sessions' label (Spring AI's default ``Session``).
        message_label: The messages' label (``Message``).
        metadata_label: The metadata nodes' label (``Metadata``).
        tool_call_label: The tool call nodes' label (``ToolCall``).
        tool_response_label: The tool result nodes' label (``ToolResponse``).
        media_label: The media nodes' label (``Media``).
        username: The user, if not in the URL.
        password: The password, if not in the URL.
        database: The database, if not in the URL's path.

    Raises:
        SourceError: For a malformed URL, or a graph that does not hold what Spring AI writes.
    """
    neo4j = require("neo4j", "neo4j")
    query = _NEO4J_QUERY.format(
        session=_label(session_label),
        message=_label(message_label),
        metadata=_label(metadata_label),
        tool_call=_label(tool_call_label),
        tool_response=_label(tool_response_label),
        media=_label(media_label),
    )
    source = f"spring-ai-neo4j:{session_label}/{message_label}"
    driver, database = _neo4j_driver(neo4j, url, username, password, database)
    with (
        driver,
        driver.session(database=database, default_access_mode=neo4j.READ_ACCESS) as session,
    ):
        for record in session.run(query):
            conversation_id = record["id"]
            if not isinstance(conversation_id, str):
                raise SourceError(f"{source}: a {session_label} node has no text id")
            yield _neo4j_conversation(source, conversation_id, record["messages"])


def _neo4j_driver(
    neo4j: Any, url: str, username: str | None, password: str | None, database: str | None
) -> tuple[Any, str | None]:
    """Build the driver a URL names, as the neo4j repository builds its own, and the database.

    The URL is the repository's without options (the reader takes them as arguments).
    """
    from chatmem_repositories.neo4j._options import SCHEMES, parse_url

    if url.partition("://")[0].lower() not in SCHEMES:
        raise SourceError(f"spring-ai-neo4j: {redact_url(url)!r} is not a bolt:// or neo4j:// URL")
    credentials = {"user": username, "password": password}
    with source_errors("spring-ai-neo4j"):
        if split_query(url)[1]:
            raise SourceError("spring-ai-neo4j: the URL takes no options; pass them as arguments")
        settings = parse_url(url, {k: v for k, v in credentials.items() if v is not None})
    path = settings.options.database
    if path and database and path != database:
        raise SourceError(
            f"spring-ai-neo4j: the URL names database {path!r} but database is {database!r}"
        )
    driver = neo4j.GraphDatabase.driver(settings.uri, auth=settings.auth, **settings.config)
    return driver, database or path


def _neo4j_media(source: str, session: str, stored: Mapping[str, Any]) -> Media:
    data, mime_type = stored.get("data"), stored.get("mimeType")
    name = stored.get("name")
    if isinstance(data, str):
        return Media(mime_type=str(mime_type), url=data, name=name)
    if isinstance(data, bytes | bytearray):
        return Media(mime_type=str(mime_type), data=bytes(data), name=name)
    raise SourceError(f"{source}: {session!r} holds a media node with neither bytes nor a URL")


def _neo4j_conversation(
    source: str, session: str, stored: list[dict[str, Any]]
) -> ImportedConversation:
    messages: list[Message] = []
    left_out = 0
    for item in stored:
        kind = str(item.get("messageType") or "").lower()
        text = item.get("textContent") or ""
        key = f"{item.get('idx')}\n{kind}\n{text}"
        metadata = _metadata(item["metadata"][0]) if item.get("metadata") else {}
        common: dict[str, Any] = {"id": stable_id(source, session, key), "metadata": metadata}
        media = [_neo4j_media(source, session, m) for m in item.get("media") or []]
        message: Message
        if kind == "system":
            message = SystemMessage(text, **common)
        elif kind == "user":
            message = UserMessage(text, media=media, **common)
        elif kind == "assistant":
            calls = [
                ToolCall(
                    id=str(c.get("id")), name=str(c.get("name")), arguments=str(c.get("arguments"))
                )
                for c in item.get("toolCalls") or []
            ]
            message = AssistantMessage(text, tool_calls=calls, media=media, **common)
        elif kind == "tool":
            responses = [
                ToolResponse(
                    id=str(r.get("id")),
                    name=str(r.get("name")),
                    response_data=str(r.get("responseData") or ""),
                )
                for r in item.get("toolResponses") or []
            ]
            if not responses:
                left_out += 1
                continue
            message = ToolResponseMessage(responses=responses, **common)
        else:
            raise SourceError(f"{source}: {session!r} holds a message of type {kind!r}")
        messages.append(message)
    return ImportedConversation(session, messages, left_out)
