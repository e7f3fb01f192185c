"""Tables and CQL statements of the cassandra repository (no I/O).

One partition per conversation in the messages table. Its rows are grouped by ``section``,
the first clustering column, so each kind of read is one slice of one partition:

- ``'c'``: non-system messages, newest first: the window read is ``LIMIT n``;
- ``'s'``: system messages (kept as history; the current one is also in static columns);
- ``'i'``: one claim row per message id, at a fixed position, for idempotent appends.

Positions are integers from the static counter ``next_position``. Claims, messages and the
counter share a partition so an append is one conditional batch: the claims'
``IF NOT EXISTS``, the counter's ``IF next_position = ?`` and the message rows commit
together or not at all.

Every write to a conversation's partition goes through Paxos: appends, ``save_all`` and both
deletes are conditional batches. Cassandra stamps the writes of a conditional batch with its
Paxos ballot's timestamp (its deletions with one less), and ballots on a partition only grow,
so a delete removes exactly what was written before it, whatever the client's clock says.
CQL refuses ``IF`` on a partition or range ``DELETE``, so the deletes ride in a batch with a
conditional statement on a static column (``forget``, ``restart``, ``mark``); the statements
meant for such batches (``clear``, ``clear_before``) carry no timestamp of their own.

The tables carry a layout version in their names (``messages_v2``, ``conversations_v2``):
version 1 had TIMEUUID positions made from the writer's clock, in tables without the suffix,
which this layout neither reads nor drops.

With a TTL, rows carry no TTL of their own: the static column ``alive`` does, and every
append re-writes it (conditionally, ``IF alive = true``), so a conversation lives while it is
being appended to and disappears whole ``ttl`` after its last append. ``touched`` (static, no
TTL) is written by every append, so ``WRITETIME(touched)`` tells the timestamp of the last
write of an expired conversation: a partition delete at that timestamp removes exactly the
expired life's data, never a newer one's.

Keyspace and table names come from validated options; no statement is ever built from a
conversation id or message text, which are always bound parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CHAT",
    "CLAIMS",
    "SYSTEM",
    "TRACKED",
    "Cql",
    "create_keyspace_cql",
]

CHAT = "c"
"""Section of non-system messages."""
SYSTEM = "s"
"""Section of system messages."""
CLAIMS = "i"
"""Section of message-id claims."""
TRACKED = "~"
"""Listing scope of conversations written with a TTL, kept without one, so that
``purge_expired`` can find expired conversations after their listing rows are gone."""


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
        return f"{self.keyspace}.{self.prefix}messages_v2"

    @property
    def conversations(self) -> str:
        """Qualified name of the conversation listing table."""
        return f"{self.keyspace}.{self.prefix}conversations_v2"

    def tables(self) -> list[str]:
        """Return the ``CREATE TABLE IF NOT EXISTS`` statements."""
        return [
            f"CREATE TABLE IF NOT EXISTS {self.messages} ("
            " conversation_id text, section text, position bigint, message_id text,"
            " type text, created_at timestamp, data text, claimed bigint,"
            " owner text STATIC, next_position bigint STATIC,"
            " system_position bigint STATIC, system_data text STATIC,"
            " alive boolean STATIC, touched boolean STATIC,"
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
        alive = f"UPDATE {m} USING TTL ? SET alive = true WHERE conversation_id = ?"
        advance = f"UPDATE {m} SET next_position = ? WHERE conversation_id = ?"
        mark = f"UPDATE {m} SET touched = true WHERE conversation_id = ?"
        # Positions are never negative, so this condition always holds: it is there to put
        # the batch in the partition's Paxos order (CQL has no unconditional Paxos write).
        always = " IF next_position != -1"
        columns = "position, type, data, alive, next_position"
        window = f"SELECT {columns} FROM {m} WHERE conversation_id = ? AND section = ?"
        return {
            "claim": claim + " IF NOT EXISTS",
            "claim_plain": claim,
            "insert": insert,
            # The counter: appends advance it from the value they expect, save_all sets it.
            "advance": advance + " IF next_position = ?",
            "restart": advance + always,
            # The conditions of the delete batches: forget the counter with the rest of the
            # partition; or, for delete_before, keep it and mark the partition written, if
            # the conversation (or, with a TTL, its current life) still exists.
            "forget": f"DELETE next_position FROM {m} WHERE conversation_id = ?" + always,
            "mark": mark + " IF next_position > 0",
            "mark_live": mark + " IF alive = true",
            "touch": mark,
            "owner": f"UPDATE {m} SET owner = ?, touched = true WHERE conversation_id = ?",
            "system": f"UPDATE {m} SET owner = ?, system_position = ?, system_data = ?,"
            " touched = true WHERE conversation_id = ?",
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
            # Both message sections in one query (system rows first, then chat rows, each
            # by position), so a history read of one page never straddles a write.
            "forward_both": f"SELECT section, {columns} FROM {m} WHERE conversation_id = ?"
            f" AND section IN ('{CHAT}', '{SYSTEM}') AND position > ?"
            " ORDER BY section DESC, position ASC LIMIT ?",
            # The whole partition, head first: the chat section (newest first), then claims
            # and system rows; every row carries the static columns.
            "window": f"SELECT section, {columns}, system_position, system_data FROM {m}"
            " WHERE conversation_id = ? LIMIT ?",
            "current_system": f"SELECT DISTINCT conversation_id, system_position, system_data,"
            f" alive, next_position FROM {m} WHERE conversation_id = ?",
            "count_before": f"SELECT COUNT(*) FROM {m} WHERE conversation_id = ?"
            " AND section = ? AND position < ?",
            # Only in conditional batches, which give them the ballot's timestamp.
            "clear": f"DELETE FROM {m} WHERE conversation_id = ?",
            "clear_before": f"DELETE FROM {m} WHERE conversation_id = ? AND section = ?"
            " AND position < ?",
            # An expired life's data, at the timestamp of its last write (a past ballot's).
            "drop": f"DELETE FROM {m} USING TIMESTAMP ? WHERE conversation_id = ?",
            "unlist": f"DELETE FROM {c} USING TIMESTAMP ? WHERE scope = ? AND bucket = ?"
            " AND conversation_id = ?",
            "list": f"SELECT conversation_id FROM {c} WHERE scope = ? AND bucket = ?"
            " AND conversation_id > ? LIMIT ?",
        }
