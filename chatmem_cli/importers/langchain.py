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
    from chatmem_cli.importers.langchain import import_conversations, langchain_sql_conversations

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

require("langchain_core", "langchain")

from langchain_core import messages as lc  # noqa: E402
from langchain_core.messages import messages_from_dict  # noqa: E402

from chatmem.interop.langchain import (  # noqa: E402
    ENVELOPE_KEY,
    STASH_KEY,
    from_langchain,
    usage_from_langchain,
    usage_to_langchain,
)
from chatmem.messages import (  # noqa: E402
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)

__all__ = [
    "ImportReport",
    "ImportedConversation",
    "import_conversations",
    "langchain_postgres_conversations",
    "langchain_redis_conversations",
    "langchain_sql_conversations",
]


_Row = tuple[Any, Any, "datetime | None"]
"""One stored message: its key in the source (row id or index), its dict, its time."""


def _convert(source: str, session: str, rows: Sequence[_Row]) -> ImportedConversation:
    """Convert one session's rows through LangChain's own classes (any message they hold)."""
    return ImportedConversation(session, _converted(source, session, rows))


def _converted(source: str, session: str, rows: Sequence[_Row]) -> list[Message]:
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
    return converted


# -- the direct path ---------------------------------------------------------------------------
#
# Most stored messages are exactly what ``message_to_dict`` writes for a system, human, AI or
# tool message: every field of the class, plain values. Those are converted straight from the
# dict to what ``from_langchain(messages_from_dict(...))`` gives, without building LangChain
# objects; the ids are known before converting (so an import that finds them stored converts
# nothing). Anything else (chatmem's own envelope, content blocks, other message types, fields
# a LangChain version adds or drops) takes the path above, for the whole conversation.

_CLASSES: dict[str, Any] = {
    "system": lc.SystemMessage,
    "human": lc.HumanMessage,
    "ai": lc.AIMessage,
    "tool": lc.ToolMessage,
}
_FIELDS = {kind: tuple(cls.model_fields) for kind, cls in _CLASSES.items()}
_KEYS = {kind: frozenset(fields) for kind, fields in _FIELDS.items()}
_CALL_KEYS = frozenset({"name", "args", "id", "type"})
_USAGE_COUNTS = frozenset({"input_tokens", "output_tokens", "total_tokens"})
_USAGE_DETAILS = {
    "input_token_details": frozenset({"audio", "cache_creation", "cache_read"}),
    "output_token_details": frozenset({"audio", "reasoning"}),
}


def _direct_id(source: str, session: str, key: object, raw: object) -> str | None:
    """The id a stored message gets, or ``None`` if only LangChain's classes can tell."""
    if type(raw) is not dict or raw.get("type") not in _KEYS:
        return None
    data = raw.get("data")
    if type(data) is not dict:
        return None
    extra = data.get("additional_kwargs")
    if type(extra) is not dict or ENVELOPE_KEY in extra:
        return None
    message_id = data.get("id")
    if message_id is None or message_id == "":
        return stable_id(source, session, key)
    return message_id if type(message_id) is str else None


def _usage_is_plain(usage: object) -> bool:
    """Whether LangChain's validation leaves this usage dict as it is."""
    if type(usage) is not dict:
        return False
    for key, value in usage.items():
        if key in _USAGE_COUNTS:
            if type(value) is not int:
                return False
        elif key in _USAGE_DETAILS:
            if type(value) is not dict or not value.keys() <= _USAGE_DETAILS[key]:
                return False
            if any(type(count) is not int for count in value.values()):
                return False
        else:
            return False
    return usage.keys() >= _USAGE_COUNTS


def _direct_calls(
    data: dict[str, Any], names: dict[str, str]
) -> tuple[list[ToolCall], bool] | None:
    """An AI message's tool calls, and whether LangChain's would come back the same."""
    calls, invalid, usage = data["tool_calls"], data["invalid_tool_calls"], data["usage_metadata"]
    if type(calls) is not list or invalid != []:
        return None
    if not calls and data["additional_kwargs"].get("tool_calls"):
        return None  # LangChain parses OpenAI-style calls out of additional_kwargs
    if usage is not None and not _usage_is_plain(usage):
        return None
    plain = True  # usage is compared where it is converted
    tool_calls = []
    for call in calls:
        if type(call) is not dict or call.keys() != _CALL_KEYS or call["type"] != "tool_call":
            return None
        call_id, call_name, args = call["id"], call["name"], call["args"]
        if type(call_name) is not str or type(args) is not dict:
            return None
        if call_id is not None and type(call_id) is not str:
            return None
        # The text from_langchain writes for an arguments object (non-ASCII kept).
        arguments = json.dumps(args, ensure_ascii=False)
        tool_calls.append(ToolCall(id=call_id or "", name=call_name, arguments=arguments))
        names[call_id or ""] = call_name
        plain = plain and call_id is not None and json.loads(arguments) == args
    return tool_calls, plain


def _direct(
    raw: dict[str, Any], message_id: str, at: datetime | None, names: dict[str, str]
) -> Message | None:
    """Convert one stored message without LangChain's classes, or ``None`` if it needs them."""
    kind = raw["type"]
    data = raw["data"]
    if data.keys() != _KEYS[kind] or data["type"] != kind:
        return None
    content, name = data["content"], data["name"]
    if type(content) is not str or type(data["response_metadata"]) is not dict:
        return None
    if name is not None and type(name) is not str:
        return None
    fields: dict[str, Any] = {"id": message_id}
    if at is not None:
        fields["created_at"] = at
    # Whether LangChain's message is all that chatmem's fields give back (else it is stashed).
    plain = not data["additional_kwargs"] and not data["response_metadata"]
    message_type: type[Message]
    if kind == "system" or kind == "human":
        message_type = SystemMessage if kind == "system" else UserMessage
        fields["text"] = content
        plain = plain and name is None
    elif kind == "ai":
        found = _direct_calls(data, names)
        if found is None:
            return None
        message_type = AssistantMessage
        fields["text"] = content
        fields["tool_calls"] = found[0]
        plain = plain and found[1] and name is None
        if data["usage_metadata"] is not None:
            usage = fields["usage"] = usage_from_langchain(data["usage_metadata"])
            plain = (
                plain and usage is not None and usage_to_langchain(usage) == data["usage_metadata"]
            )
    else:
        call_id, status = data["tool_call_id"], data["status"]
        if type(call_id) is not str or status not in ("success", "error"):
            return None
        tool_name = name or names.get(call_id, "")
        message_type = ToolResponseMessage
        fields["responses"] = [ToolResponse(id=call_id, name=tool_name, response_data=content)]
        plain = plain and name == tool_name and data["artifact"] is None and status == "success"
    if not plain:
        stash = {key: data[key] for key in _FIELDS[kind]}
        stash["id"] = message_id
        fields["metadata"] = {STASH_KEY: json.loads(json.dumps({"type": kind, "data": stash}))}
    return message_type.model_validate(fields)


def _conversation(source: str, session: str, rows: Sequence[_Row]) -> ImportedConversation:
    """One session's rows as a conversation whose messages are converted when needed."""
    ids: list[str] = []
    for key, raw, _ in rows:
        message_id = _direct_id(source, session, key, raw)
        if message_id is None:
            return _convert(source, session, rows)
        ids.append(message_id)

    def convert() -> list[Message]:
        names: dict[str, str] = {}
        timed = all(at is not None for _, _, at in rows)
        out: list[Message] = []
        for (_, raw, at), message_id in zip(rows, ids, strict=True):
            message = _direct(raw, message_id, at if timed else None, names)
            if message is None:
                return _converted(source, session, rows)
            out.append(message)
        return out

    return ImportedConversation.deferred(session, ids, convert)


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
    with psycopg.connect(libpq_url(url)) as connection:
        found = connection.execute("SELECT to_regclass(%s)", [f'"{table_name}"']).fetchone()
        if found is None or found[0] is None:
            raise SourceError(f"langchain-postgres: no table {table_name!r}")
        # A server-side cursor: the table is read a few thousand rows per round trip.
        with connection.cursor(name="chatmem_langchain_import") as rows:
            rows.itersize = 2000
            rows.execute(query)
            for session, group in groupby(rows, key=lambda row: str(row[0])):
                items = [(row_id, message, at) for _, row_id, message, at in group]
                yield _conversation(f"langchain-postgres:{table_name}", session, items)


def langchain_sql_conversations(
    url: str, table_name: str = "message_store"
) -> Iterator[ImportedConversation]:
    """Read every session of a ``SQLChatMessageHistory`` table.

    Args:
        url: A SQLAlchemy URL.
        table_name: The table ``SQLChatMessageHistory`` wrote.
    """
    sqlalchemy = require("sqlalchemy", "sql")
    engine, table = sql_table("langchain-sql", url, table_name)
    query = sqlalchemy.select(table.c.session_id, table.c.id, table.c.message).order_by(
        table.c.session_id, table.c.id
    )
    try:
        with engine.connect() as connection:
            for session, group in groupby(connection.execute(query), key=lambda row: str(row[0])):
                items = [(row_id, json.loads(message), None) for _, row_id, message in group]
                yield _conversation(f"langchain-sql:{table_name}", session, items)
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
    client = redis_client("langchain-redis", url)
    try:
        for key in keys_with_prefix(client, key_prefix):
            session = key.decode()[len(key_prefix) :]
            # LPUSH keeps the newest first; the index counts from the oldest.
            items = [
                (index, json.loads(raw), None)
                for index, raw in enumerate(reversed(client.lrange(key, 0, -1)))
            ]
            yield _conversation(f"langchain-redis:{key_prefix}", session, items)
    finally:
        client.close()
