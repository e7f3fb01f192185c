"""Tables and CQL statements of the cassandra repository (no I/O).

One partition per conversation in the messages table. Its rows are grouped by ``section``,
the first clustering column, so each kind of read is one slice of one partition:

- ``'c'``: user, assistant and tool messages, newest first: the window read is ``LIMIT n``;
- ``'e'``: events (:class:`~chatmem.messages.EventMessage`), kept out of the window reads;
- ``'s'``: system messages (kept as history; the current one is also in static columns);
- ``'i'``: one claim row per message id, at a fixed position, for idempotent appends.

Positions are shared by the three message sections; a history read merges them.

Positions are integers from the static counter ``next_position``. Claims, messages and the
counter share a partition so an append is one conditional batch: the claims'
``IF NOT EXISTS``, the counter's ``IF next_position = ?`` and the message rows commit
together or not at all. The counter is also the conversation's version (the last position
handed out, ``next_position - 1``): a version-checked append states the counter it requires
instead of the one it guesses, and ``save_all`` carries the counter on, so a version never
goes back while the conversation lives.

Every write to a conversation's partition goes through Paxos: appends, ``save_all`` and both
deletes are conditional batches. Cassandra stamps the writes of a conditional batch with its
Paxos ballot's timestamp (its deletions with one less), and ballots on a partition only grow,
so a delete removes exactly what was written before it, whatever the client's clock says.
CQL refuses ``IF`` on a partition or range ``DELETE``, so the deletes ride in a batch with a
conditional statement on a static column (``forget``, ``advance``, ``mark``); the statements
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

The running summary of a summarizing memory (``find_summary``/``save_summary``) is kept in
three more static columns of the conversation's partition, ``summary``, ``summary_covers``
and ``summary_version``, so it goes with every delete of the partition, is hidden with an
expired life and dropped with it (a summary write also writes ``touched``), and its
version-checked write is a conditional update, ``IF summary_version = ?`` (``= null`` for
the first), that also requires the conversation to exist (or, with a TTL, to be alive).

Keyspace and table names come from validated options; no statement is ever built from a
conversation id or message text, which are always bound parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CHAT",
    "CLAIMS",
    "EVENTS",
    "MESSAGE_SECTIONS",
    "SUMMARY_COLUMNS",
    "SYSTEM",
    "TRACKED",
    "Cql",
    "create_keyspace_cql",
]

CHAT = "c"
"""Section of user, assistant and tool messages."""
EVENTS = "e"
"""Section of events."""
SYSTEM = "s"
"""Section of system messages."""
MESSAGE_SECTIONS = (SYSTEM, EVENTS, CHAT)
"""The sections that hold messages, in the order of ``ORDER BY section DESC``."""
CLAIMS = "i"
"""Section of message-id claims."""
TRACKED = "~"
"""Listing scope of conversations written with a TTL, kept without one, so that
``purge_expired`` can find expired conversations after their listing rows are gone."""


SUMMARY_COLUMNS = "summary text STATIC, summary_covers bigint STATIC, summary_version bigint STATIC"
"""The static columns of a conversation's running summary (added to tables made before it)."""


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

    def add_summary_columns(self) -> str:
        """Return the ``ALTER TABLE`` that adds the summary columns to an older table."""
        return f"ALTER TABLE {self.messages} ADD ({SUMMARY_COLUMNS})"

    def tables(self) -> list[str]:
        """Return the ``CREATE TABLE IF NOT EXISTS`` statements."""
        return [
            f"CREATE TABLE IF NOT EXISTS {self.messages} ("
            " conversation_id text, section text, position bigint, message_id text,"
            " type text, created_at timestamp, data text, claimed bigint,"
            " owner text STATIC, next_position bigint STATIC,"
            " system_position bigint STATIC, system_data text STATIC,"
            " alive boolean STATIC, touched boolean STATIC,"
            f" {SUMMARY_COLUMNS},"
            " PRIMARY KEY ((conversation_id), section, position, message_id))"
            " WITH CLUSTERING ORDER BY (section ASC, position DESC, message_id ASC)",
            # Partitioned by (scope, bucket) so no single partition holds every conversation:
            # scope '*' lists all of them, '@<owner>' those of one owner.
            f"CREATE TABLE IF NOT EXISTS {self.conversations} ("
            " scope text, bucket int, conversation_id text,"
            " PRIMARY KEY ((scope, bucket), conversation_id))",
        ]
