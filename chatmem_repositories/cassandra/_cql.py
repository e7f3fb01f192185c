"""The CQL statements of the Cassandra repository and vector store (no I/O).

The repository's statements are prepared once per session, by name (:func:`statements`);
the tables they address are described in ``_schema``. The vector store's follow.

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

from dataclasses import dataclass

from chatmem.backend import check_identifier
from chatmem.exceptions import ConfigurationError
from chatmem_repositories.cassandra._schema import MESSAGE_SECTIONS, Cql

__all__ = ["VectorCql", "statements", "summary_statements"]


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


def statements(cql: Cql) -> dict[str, str]:
    """Return every statement the repository prepares, by name.

    Args:
        cql: The keyspace and table names.
    """
    m, c = cql.messages, cql.conversations
    sections = ", ".join(f"'{section}'" for section in MESSAGE_SECTIONS)
    insert = (
        f"INSERT INTO {m} (conversation_id, section, position, message_id, type,"
        " created_at, data) VALUES (?, ?, ?, ?, ?, ?, ?)"
    )
    # A claim row's data holds the token of the append call that claimed the id: when an
    # attempt that applied is sent again (a timed-out round, or the driver re-sending after
    # a lost connection), the rejection names the call's own token, not another writer's.
    claim = (
        f"INSERT INTO {m} (conversation_id, section, position, message_id, claimed, data)"
        " VALUES (?, ?, ?, ?, ?, ?)"
    )
    alive = f"UPDATE {m} USING TTL ? SET alive = true WHERE conversation_id = ?"
    mark = f"UPDATE {m} SET touched = true WHERE conversation_id = ?"
    # Positions are never negative, so this condition always holds: it is there to put
    # the batch in the partition's Paxos order (CQL has no unconditional Paxos write).
    always = " IF next_position != -1"
    columns = "position, type, data, alive, next_position"
    window = f"SELECT {columns} FROM {m} WHERE conversation_id = ? AND section = ?"
    # The counter and the partition's other static columns, in one statement of the batch:
    # appends and save_all advance the counter from the value they expect. Bound values:
    # the head's own (owner; owner, system position and data), then the new counter, the
    # conversation id and the expected counter.
    heads = {
        "": "",
        "_owner": "owner = ?, ",
        "_system": "owner = ?, system_position = ?, system_data = ?, ",
    }
    counters: dict[str, str] = {}
    for suffix, head in heads.items():
        update = f"UPDATE {m} SET {head}touched = true, next_position = ? WHERE conversation_id = ?"
        counters["advance" + suffix] = update + " IF next_position = ?"
    return {
        "claim": claim + " IF NOT EXISTS",
        "claim_plain": claim,
        "insert": insert,
        **counters,
        # The conditions of the delete batches: forget the counter with the rest of the
        # partition; or, for delete_before, keep it and mark the partition written, if
        # the conversation (or, with a TTL, its current life) still exists.
        "forget": f"DELETE next_position FROM {m} WHERE conversation_id = ?" + always,
        "mark": mark + " IF next_position > 0",
        "mark_live": mark + " IF alive = true",
        "touch": mark,
        # The liveness cell: kept alive by every append, started anew after expiry.
        "live": alive + " IF alive = true",
        "revive": alive + " IF alive = null",
        "live_plain": alive,
        "touched_at": f"SELECT WRITETIME(touched) AS touched_at, alive FROM {m}"
        " WHERE conversation_id = ? LIMIT 1",
        "list_row": f"INSERT INTO {c} (scope, bucket, conversation_id) VALUES (?, ?, ?)"
        " USING TTL ?",
        "recent": window + " LIMIT ?",
        "recent_before": window + " AND position < ? LIMIT ?",
        "forward": window + " AND position > ? ORDER BY section DESC, position ASC LIMIT ?",
        # Every message section in one query (system rows first, then events, then chat
        # rows, each by position), so a history read of one page never straddles a write.
        "forward_all": f"SELECT section, {columns} FROM {m} WHERE conversation_id = ?"
        f" AND section IN ({sections}) AND position > ?"
        " ORDER BY section DESC, position ASC LIMIT ?",
        # The whole partition, head first: the chat section (newest first), then claims
        # and system rows; every row carries the static columns.
        "window": "SELECT section, position, data, alive, next_position, system_position,"
        f" system_data FROM {m}"
        " WHERE conversation_id = ? LIMIT ?",
        "current_system": f"SELECT DISTINCT conversation_id, system_position, system_data,"
        f" alive, next_position FROM {m} WHERE conversation_id = ?",
        "count_before": f"SELECT COUNT(*) FROM {m} WHERE conversation_id = ?"
        " AND section = ? AND position < ?",
        "count_between": f"SELECT COUNT(*) FROM {m} WHERE conversation_id = ?"
        " AND section = ? AND position > ? AND position <= ?",
        # The version: the counter, with the liveness cell to tell an expired life.
        "version": f"SELECT DISTINCT conversation_id, next_position, alive FROM {m}"
        " WHERE conversation_id = ?",
        # The messages of every section, counted by the server, with the liveness cell
        # (static: the same on every row) to tell an expired life's rows from live ones.
        # COUNT(position), not COUNT(*): with only static columns named, Cassandra refuses
        # the restriction on the section.
        "count": f"SELECT COUNT(position) AS count, alive FROM {m} WHERE conversation_id = ?"
        f" AND section IN ({sections})",
        # Only in conditional batches, which give them the ballot's timestamp.
        "clear": f"DELETE FROM {m} WHERE conversation_id = ?",
        "clear_before": f"DELETE FROM {m} WHERE conversation_id = ? AND section = ?"
        " AND position < ?",
        "clear_between": f"DELETE FROM {m} WHERE conversation_id = ? AND section = ?"
        " AND position > ? AND position <= ?",
        # An expired life's data, at the timestamp of its last write (a past ballot's).
        "drop": f"DELETE FROM {m} USING TIMESTAMP ? WHERE conversation_id = ?",
        "unlist": f"DELETE FROM {c} USING TIMESTAMP ? WHERE scope = ? AND bucket = ?"
        " AND conversation_id = ?",
        "list": f"SELECT conversation_id FROM {c} WHERE scope = ? AND bucket = ?"
        " AND conversation_id > ? LIMIT ?",
    }


def summary_statements(cql: Cql) -> dict[str, str]:
    """Return the statements of the summary columns, by name (prepared apart from the rest).

    A table made before the summary columns, with ``initialize_schema="never"``, refuses to
    prepare them; the rest of the repository works without them.

    Args:
        cql: The keyspace and table names.
    """
    m = cql.messages
    write = f"UPDATE {m} SET summary = ?, summary_covers = ?, summary_version = ?, touched = true"
    write += " WHERE conversation_id = ?"
    # The conversation must exist (its counter), or with a TTL be alive, or the summary
    # would outlive it; the summary's own write never keeps a conversation alive.
    exists, live = " AND next_position > 0", " AND alive = true"
    return {
        "summary": "SELECT DISTINCT conversation_id, summary, summary_covers, summary_version,"
        f" alive, next_position FROM {m} WHERE conversation_id = ?",
        "summary_first": write + " IF summary_version = null" + exists,
        "summary_first_live": write + " IF summary_version = null" + live,
        "summary_next": write + " IF summary_version = ?" + exists,
        "summary_next_live": write + " IF summary_version = ?" + live,
    }
