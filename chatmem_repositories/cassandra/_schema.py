"""Tables and CQL statements of the cassandra repository (no I/O).

One partition per conversation in the messages table. Its rows are grouped by ``section``,
the first clustering column, so each kind of read is one slice of one partition:

- ``'c'``: non-system messages, newest first: the window read is ``LIMIT n``;
- ``'s'``: system messages (kept as history; the current one is also in static columns);
- ``'i'``: one claim row per message id, at a fixed position, for idempotent appends.

Claims and messages share a partition so an append is one conditional batch: the claims'
``IF NOT EXISTS`` and the message rows commit together or not at all.

Keyspace and table names come from validated options; no statement is ever built from a
conversation id or message text, which are always bound parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CHAT", "CLAIMS", "SYSTEM", "Cql", "create_keyspace_cql"]

CHAT = "c"
"""Section of non-system messages."""
SYSTEM = "s"
"""Section of system messages."""
CLAIMS = "i"
"""Section of message-id claims."""


def create_keyspace_cql(keyspace: str, replication: dict[str, int] | None, factor: int) -> str:
    """Return ``CREATE KEYSPACE IF NOT EXISTS`` for validated names."""
    if replication:
        pairs = ", ".join(f"'{dc}': {rf}" for dc, rf in replication.items())
        spec = f"{{'class': 'NetworkTopologyStrategy', {pairs}}}"
    else:
        spec = f"{{'class': 'SimpleStrategy', 'replication_factor': {factor}}}"
    return f"CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = {spec}"


@dataclass(frozen=True)
class Cql:
    """The statements of one keyspace and table prefix."""

    keyspace: str
    prefix: str

    @property
    def messages(self) -> str:
        """Qualified name of the messages table."""
        return f"{self.keyspace}.{self.prefix}messages"

    @property
    def conversations(self) -> str:
        """Qualified name of the conversation listing table."""
        return f"{self.keyspace}.{self.prefix}conversations"

    def tables(self) -> list[str]:
        """Return the ``CREATE TABLE IF NOT EXISTS`` statements."""
        return [
            f"CREATE TABLE IF NOT EXISTS {self.messages} ("
            " conversation_id text, section text, position timeuuid, message_id text,"
            " type text, created_at timestamp, data text, claimed timeuuid,"
            " owner text STATIC, system_position timeuuid STATIC, system_data text STATIC,"
            " PRIMARY KEY ((conversation_id), section, position, message_id))"
            " WITH CLUSTERING ORDER BY (section ASC, position DESC, message_id ASC)",
            # Partitioned by (scope, bucket) so no single partition holds every conversation:
            # scope '*' lists all of them, '@<owner>' those of one owner.
            f"CREATE TABLE IF NOT EXISTS {self.conversations} ("
            " scope text, bucket int, conversation_id text,"
            " PRIMARY KEY ((scope, bucket), conversation_id))",
        ]

    def statements(self) -> dict[str, str]:
        """Return every statement the repository prepares, by name."""
        m, c = self.messages, self.conversations
        insert = (
            f"INSERT INTO {m} (conversation_id, section, position, message_id, type,"
            " created_at, data) VALUES (?, ?, ?, ?, ?, ?, ?)"
        )
        claim = (
            f"INSERT INTO {m} (conversation_id, section, position, message_id, claimed)"
            " VALUES (?, ?, ?, ?, ?)"
        )
        window = f"SELECT position, type, data FROM {m} WHERE conversation_id = ? AND section = ?"
        return {
            "claim": claim + " IF NOT EXISTS USING TTL ?",
            "claim_plain": claim + " USING TTL ?",
            "insert": insert + " USING TTL ?",
            "owner": f"UPDATE {m} USING TTL ? SET owner = ? WHERE conversation_id = ?",
            "system": f"UPDATE {m} USING TTL ? SET owner = ?, system_position = ?,"
            " system_data = ? WHERE conversation_id = ?",
            "list_row": f"INSERT INTO {c} (scope, bucket, conversation_id) VALUES (?, ?, ?)"
            " USING TTL ?",
            "recent": window + " LIMIT ?",
            "recent_before": window + " AND position < ? LIMIT ?",
            "forward": window + " AND position > ? ORDER BY section DESC, position ASC LIMIT ?",
            "current_system": f"SELECT DISTINCT conversation_id, system_position, system_data"
            f" FROM {m} WHERE conversation_id = ?",
            "count_before": f"SELECT COUNT(*) FROM {m} WHERE conversation_id = ?"
            " AND section = ? AND position < ?",
            "delete_before": f"DELETE FROM {m} WHERE conversation_id = ? AND section = ?"
            " AND position < ?",
            "drop": f"DELETE FROM {m} USING TIMESTAMP ? WHERE conversation_id = ?",
            "unlist": f"DELETE FROM {c} USING TIMESTAMP ? WHERE scope = ? AND bucket = ?"
            " AND conversation_id = ?",
            "list": f"SELECT conversation_id FROM {c} WHERE scope = ? AND bucket = ?"
            " AND conversation_id > ? LIMIT ?",
        }
