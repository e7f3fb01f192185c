"""The three tables, their indexes, and the DDL for any dialect (no I/O).

Conversations and messages, and the summaries a summarizing memory keeps (one row per
conversation; see :mod:`chatmem_repositories.sql._statements.summaries`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, Boolean, Column, Index, MetaData, String, Table
from sqlalchemy.engine import Dialect, make_url
from sqlalchemy.schema import CreateIndex, CreateTable

from chatmem.conversation_ids import MAX_CONVERSATION_ID_LENGTH
from chatmem.exceptions import ConfigurationError
from chatmem_repositories.sql._types import Identifier, LongText, SearchText, UtcDateTime

__all__ = [
    "MAX_MESSAGE_ID_LENGTH",
    "Tables",
    "build_tables",
    "check_prefix_case",
    "check_table_prefix",
    "schema_ddl",
]

MAX_MESSAGE_ID_LENGTH = 255
"""Longest message id this backend stores (so the unique key fits MySQL's 3072-byte limit)."""

_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,29}\Z")
_MYSQL = ("mysql", "mariadb")
# Databases whose table names may ignore case whatever the quoting (SQLite always; SQL
# Server under its default collation; MySQL/MariaDB on Windows and macOS).
_CASE_FOLDING = ("sqlite", "mssql", *_MYSQL)


def check_prefix_case(prefix: str, dialect_name: str) -> str:
    """Return ``prefix`` unless it has capitals on a database that may ignore case.

    There ``App_`` and ``app_`` would name the same tables, so two repositories with
    different prefixes could read each other's conversations; only the lowercase spelling
    is accepted. PostgreSQL and Oracle quote mixed-case names, which keeps them apart.

    Raises:
        ConfigurationError: If the prefix has capitals and the dialect may fold case.
    """
    if dialect_name in _CASE_FOLDING and prefix != prefix.lower():
        raise ConfigurationError(
            f"table_prefix {prefix!r} has capitals, but {dialect_name} may ignore the case of "
            f"table names, so it would name the same tables as {prefix.lower()!r}: "
            f"use {prefix.lower()!r}"
        )
    return prefix


def check_table_prefix(prefix: str) -> str:
    """Return ``prefix`` if it is a safe identifier start, else raise ConfigurationError.

    Table names are built only from this validated prefix, never from other input.
    """
    if not isinstance(prefix, str) or not _PREFIX.match(prefix):
        raise ConfigurationError(
            f"table_prefix must be a letter followed by up to 29 letters, digits or "
            f"underscores, got {prefix!r}"
        )
    return prefix


@dataclass(frozen=True)
class Tables:
    """The schema objects of one table prefix and dialect."""

    metadata: MetaData
    conversations: Table
    messages: Table
    summaries: Table


def build_tables(prefix: str, dialect_name: str) -> Tables:
    """Build the conversations, messages and summaries tables for ``dialect_name``.

    Args:
        prefix: Validated table-name prefix, such as ``"chatmem_"``.
        dialect_name: SQLAlchemy dialect name; MySQL/MariaDB get a shorter owner index.

    Raises:
        ConfigurationError: For a prefix that is not an identifier, or has capitals on a
            database that may ignore their case (see :func:`check_prefix_case`).
    """
    check_prefix_case(check_table_prefix(prefix), dialect_name)
    metadata = MetaData()
    mysql_options: dict[str, Any] = {
        f"{name}_{option}": value
        for name in _MYSQL
        for option, value in (("charset", "utf8mb4"), ("engine", "InnoDB"))
    }
    conversations = Table(
        f"{prefix}conversations",
        metadata,
        Column("conversation_id", Identifier(MAX_CONVERSATION_ID_LENGTH), primary_key=True),
        Column("owner", Identifier(MAX_CONVERSATION_ID_LENGTH), nullable=True),
        # Next position to hand out; an append reserves a block by bumping it under a row lock.
        Column("next_position", BigInteger, nullable=False),
        # Positions below this belong to an expired earlier life of the conversation.
        Column("first_position", BigInteger, nullable=False),
        Column("system_position", BigInteger, nullable=True),
        Column("created_at", UtcDateTime, nullable=False),
        Column("updated_at", UtcDateTime, nullable=False),
        Column("expires_at", UtcDateTime, nullable=True),
        **mysql_options,
    )
    messages = Table(
        f"{prefix}messages",
        metadata,
        Column("conversation_id", Identifier(MAX_CONVERSATION_ID_LENGTH), primary_key=True),
        Column("position", BigInteger, primary_key=True, autoincrement=False),
        Column("message_id", Identifier(MAX_MESSAGE_ID_LENGTH), nullable=False),
        Column("type", String(16), nullable=False),
        Column("is_system", Boolean, nullable=False),
        Column("created_at", UtcDateTime, nullable=False),
        Column("search_text", SearchText(), nullable=False),
        Column("body", LongText(), nullable=False),
        **mysql_options,
    )
    summaries = Table(
        f"{prefix}summaries",
        metadata,
        Column("conversation_id", Identifier(MAX_CONVERSATION_ID_LENGTH), primary_key=True),
        # The life of the conversation the summary belongs to: the conversation row's
        # created_at and first_position when it was written. A summary whose life is not the
        # row's current one (expired and started again, or purged) is never read.
        Column("life_created_at", UtcDateTime, nullable=False),
        Column("life_first_position", BigInteger, nullable=False),
        Column("version", BigInteger, nullable=False),
        # Position of the last message the summary covers.
        Column("covers", BigInteger, nullable=False),
        # The text as a JSON string (lossless: NUL, which PostgreSQL rejects, is escaped).
        Column("text", LongText(), nullable=False),
        Column("updated_at", UtcDateTime, nullable=False),
        **mysql_options,
    )
    c, m = conversations.c, messages.c
    if dialect_name in _MYSQL:
        # InnoDB appends the primary key to every secondary index, so (owner) is really
        # (owner, conversation_id); spelling both out would pass the 3072-byte key limit.
        Index(f"{prefix}conversations_owner", c.owner)
    else:
        Index(f"{prefix}conversations_owner", c.owner, c.conversation_id)
    Index(f"{prefix}conversations_expiry", c.expires_at)
    Index(f"{prefix}messages_message_id", m.conversation_id, m.message_id, unique=True)
    Index(f"{prefix}messages_window", m.conversation_id, m.is_system, m.position)
    Index(f"{prefix}messages_type", m.conversation_id, m.type, m.position)
    return Tables(metadata, conversations, messages, summaries)


def _dialect(name: str) -> Dialect:
    return make_url(f"{name}://").get_dialect()()


def schema_ddl(dialect_name: str, table_prefix: str = "chatmem_") -> str:
    """Return the ``CREATE TABLE`` and ``CREATE INDEX`` statements for a dialect.

    For databases where the tables are created by a DBA or a migration tool
    (``initialize_schema="never"``).

    Args:
        dialect_name: ``"sqlite"``, ``"postgresql"``, ``"mysql"``, ``"mariadb"``, ``"mssql"``
            or ``"oracle"``.
        table_prefix: The table-name prefix the repository is configured with.
    """
    dialect = _dialect(dialect_name)
    tables = build_tables(table_prefix, dialect.name)
    statements: list[str] = []
    for table in tables.metadata.sorted_tables:
        statements.append(str(CreateTable(table).compile(dialect=dialect)).strip())
        for index in sorted(table.indexes, key=lambda i: str(i.name)):
            statements.append(str(CreateIndex(index).compile(dialect=dialect)).strip())
    return ";\n\n".join(statements) + ";\n"
