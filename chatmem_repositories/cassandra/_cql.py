"""CQL of the Cassandra vector store, and row conversion (no I/O).

Values always travel as bound values of prepared statements: documents, vectors, filter keys
and values, limits. The only text spliced into a statement is the keyspace, table and index
names, checked to be identifiers first (names cannot be bound).

One row per document; string metadata is copied into the ``filters`` map, whose entries
have a Storage-Attached Index, so ``filters[?] = ?`` restrictions combine with
``ORDER BY embedding ANN OF ?`` in one query::

    id text PRIMARY KEY, body text, metadata text (JSON), filters map<text, text>,
    embedding vector<float, n>  -- SAI index, COSINE
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chatmem._vector_types import VectorDocument, VectorFilter, check_identifier
from chatmem.exceptions import ConfigurationError

__all__ = ["VectorCql", "document_values", "documents_from_rows", "filter_values"]


@dataclass(frozen=True)
class VectorCql:
    """The statements for one keyspace and table."""

    keyspace: str
    """The keyspace (must exist)."""
    table: str
    """The table."""

    @classmethod
    def create(cls, keyspace: str, table: str) -> VectorCql:
        """Check the names and build the statements.

        Args:
            keyspace: The keyspace.
            table: The table.
        """
        check_identifier(keyspace, "keyspace")
        check_identifier(table, "table")
        if len(table) > 40:
            raise ConfigurationError(f"table must be at most 40 characters, got {table!r}")
        return cls(keyspace, table)

    @property
    def name(self) -> str:
        """The qualified table name."""
        return f"{self.keyspace}.{self.table}"

    def schema(self, dimensions: int) -> list[str]:
        """Return the table and index statements (``IF NOT EXISTS``).

        Args:
            dimensions: Vector length of the ``embedding`` column.
        """
        return [
            f"CREATE TABLE IF NOT EXISTS {self.name} (id text PRIMARY KEY, body text, "
            f"metadata text, filters map<text, text>, embedding vector<float, {int(dimensions)}>)",
            f"CREATE CUSTOM INDEX IF NOT EXISTS {self.table}_embedding_idx ON {self.name} "
            "(embedding) USING 'StorageAttachedIndex' "
            "WITH OPTIONS = {'similarity_function': 'COSINE'}",
            f"CREATE CUSTOM INDEX IF NOT EXISTS {self.table}_filters_idx ON {self.name} "
            "(ENTRIES(filters)) USING 'StorageAttachedIndex'",
        ]

    @property
    def column_type(self) -> str:
        """Read the declared type of the ``embedding`` column (keyspace and table bound)."""
        return (
            "SELECT type FROM system_schema.columns "
            "WHERE keyspace_name = ? AND table_name = ? AND column_name = 'embedding'"
        )

    @property
    def insert(self) -> str:
        """Insert or replace one document."""
        return (
            f"INSERT INTO {self.name} (id, body, metadata, filters, embedding) "
            "VALUES (?, ?, ?, ?, ?)"
        )

    @property
    def delete(self) -> str:
        """Delete one document by id."""
        return f"DELETE FROM {self.name} WHERE id = ?"

    def search(self, conditions: int) -> str:
        """Return the search statement for a number of filter conditions.

        Bound values: query vector (for the score), then ``key, value`` per condition, then
        the query vector again and the limit.

        Args:
            conditions: How many ``filters[?] = ?`` restrictions.
        """
        where = " AND ".join(["filters[?] = ?"] * conditions)
        return (
            f"SELECT id, body, metadata, similarity_cosine(embedding, ?) AS score "
            f"FROM {self.name} {'WHERE ' + where if where else ''} "
            "ORDER BY embedding ANN OF ? LIMIT ?"
        )

    def select_ids(self, conditions: int) -> str:
        """Return a statement selecting up to ``?`` ids matching the filter conditions.

        Args:
            conditions: How many ``filters[?] = ?`` restrictions (at least one).
        """
        where = " AND ".join(["filters[?] = ?"] * conditions)
        return f"SELECT id FROM {self.name} WHERE {where} LIMIT ?"


def filter_values(where: VectorFilter) -> list[str]:
    """Return the bound values of a filter: key, value, key, value...

    Args:
        where: The filter.
    """
    values: list[str] = []
    for key, value in where:
        values += [check_identifier(key, "a filter key"), value]
    return values


def document_values(document: VectorDocument, vector: list[float]) -> tuple[Any, ...]:
    """Return the bound values of the insert statement.

    Args:
        document: The document.
        vector: Its embedding.
    """
    metadata = json.dumps(document.metadata, ensure_ascii=False)
    return (document.id, document.text, metadata, document.filterable(), vector)


def documents_from_rows(rows: Sequence[Sequence[Any]]) -> list[VectorDocument]:
    """Turn ``(id, body, metadata, score)`` rows into scored documents.

    Args:
        rows: Result rows of a search statement.
    """
    return [
        VectorDocument(
            id=row[0],
            text=row[1] or "",
            metadata=json.loads(row[2]),
            score=min(max(float(row[3]), 0.0), 1.0),
        )
        for row in rows
    ]
