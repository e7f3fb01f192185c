"""Read conversations stored by Spring AI's ``JdbcChatMemoryRepository``, to import them.

Spring AI's JDBC table (``SPRING_AI_CHAT_MEMORY``: ``conversation_id``, ``content``, ``type``,
``timestamp``) keeps only each message's text and type. What it lost before it reached chatmem:
tool calls (an assistant message that only called tools is stored with empty content), tool
results (stored as ``TOOL`` rows with empty content and no call ids), media and metadata. Those
rows cannot become valid chatmem messages, so they are left out and counted in
:attr:`~chatmem.interop._importing.ImportedConversation.left_out`; the rest keep their type,
text and time (the ``timestamp`` column, taken as UTC).

Each message gets an id derived from its conversation, place, type and text, so importing
again stores nothing new. Needs the SQL extra of the database (``pip install
"chatmem[postgresql]"``, ...).

Example:
    ```python
    from chatmem import InMemoryChatMemoryRepository
    from chatmem.interop import spring_ai_import as source

    repository = InMemoryChatMemoryRepository()
    conversations = source.spring_ai_jdbc_conversations("postgresql+psycopg://app@db/app")
    source.import_conversations(conversations, repository)
    ```
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import groupby

from chatmem.interop._common import require
from chatmem.interop._importing import (
    ImportedConversation,
    ImportReport,
    import_conversations,
    stable_id,
)
from chatmem.messages import AssistantMessage, Message, SystemMessage, UserMessage

__all__ = [
    "ImportReport",
    "ImportedConversation",
    "import_conversations",
    "spring_ai_jdbc_conversations",
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
    engine = sqlalchemy.create_engine(url)
    metadata = sqlalchemy.MetaData()
    try:
        table = sqlalchemy.Table(table_name, metadata, autoload_with=engine)
    except sqlalchemy.exc.NoSuchTableError:
        # PostgreSQL folds the unquoted name Spring AI creates to lower case.
        table = sqlalchemy.Table(table_name.lower(), metadata, autoload_with=engine)
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
