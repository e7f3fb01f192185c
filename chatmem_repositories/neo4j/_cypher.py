"""Every Cypher statement the repository and the vector store run (no I/O).

The constraints and indexes they rely on are in ``_schema``.

Values always travel as parameters. The only text spliced into a statement is a label or
schema name derived from the validated ``label_prefix`` (labels cannot be parameters).

The graph::

    (:<P>Conversation {id, owner, generation, next_position, created_at, updated_at,
                       expires_at, deleted, summary_text, summary_covers, summary_version})
        -[:HAS_MESSAGE]->
    (:<P>Message {conversation_id, generation, position, message_id, type, is_system,
                  created_at, search_text, data})

An event (type ``event``) is a ``Message`` node without ``is_system``: the window index
(``conversation_id, generation, is_system, position``) holds only nodes that have every one
of its properties, so the window reads and the deletes that seek it never see an event,
while the history, type and count reads (other indexes) find it like any message.

A conversation's version is the last position it handed out (``next_position - 1``), 0 when
it is deleted or expired. A version-checked append compares it under the node's write lock,
as an append takes it, and writes nothing when it differs.

A conversation's visible messages are those of its current ``generation``. Deleting,
replacing (``save_all``) or restarting an expired conversation bumps the generation in one
small transaction, so the change is atomic however long the history; the retired messages
are then removed in batches (``CALL ... IN TRANSACTIONS``), never in one huge transaction.
A deleted conversation stays as a tombstone (``deleted = true``) until its messages are gone,
so positions and generations never restart while old messages remain.

A conversation's running summary lives on its node (the ``summary_*`` properties). Its write
is a compare-and-set under the node's write lock, taken before the version is read; a read
committed MATCH-then-SET alone would let two writers of one version both succeed. Its read
takes the same lock, so its text, position and version come from one write. Deleting
or expiring the conversation removes the summary in the same transaction, and an append that
starts a new life (the old one expired) removes it too: a new life starts at version 0.

Reads find messages through composite range indexes that start with ``(conversation_id,
generation)`` and end with ``position``; each ``ORDER BY`` lists every property of its index
in index order, so the planner reads the index in order and stops after ``LIMIT`` rows
instead of sorting the whole conversation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, LiteralString, cast

from chatmem.backend import VectorFilter, check_identifier
from chatmem_repositories.neo4j._options import check_label_prefix
from chatmem_repositories.neo4j._schema import repository_schema, vector_schema

__all__ = ["Statements", "VectorStatements"]

_LIVE = "c.deleted IS NULL AND coalesce(c.expires_at > coalesce($now, timestamp()), true)"

# Taking the conversation's write lock (the SET right after MERGE) before reading anything
# from it is what serializes concurrent appenders. The node is matched again after the lock
# because the planner may cache properties at the first lookup, before the lock: the second
# match reads the values the previous lock holder committed. If a finished deletion removed
# the node while this statement waited for its lock, the second match finds nothing and the
# statement returns no row and writes nothing; the repository then runs it again, and the
# MERGE creates the conversation anew. (A statement that found its conversation returns
# exactly one row, even when every message was already stored.)
_LOCK_CONVERSATION = """
MERGE (l:{C} {{id: $cid}})
  ON CREATE SET l.owner = $owner, l.generation = 1, l.next_position = 1,
                l.created_at = coalesce($now, timestamp())
SET l.updated_at = coalesce($now, timestamp())
WITH l.id AS locked
MATCH (c:{C} {{id: locked}})
WITH c,
     c.deleted IS NOT NULL OR coalesce(c.expires_at <= coalesce($now, timestamp()), false) AS stale
"""

_CREATE_MESSAGES = """
WITH c, retired, fresh, c.next_position AS base
SET c.next_position = base + size(fresh),
    c.expires_at = CASE WHEN $ttl_ms IS NOT NULL THEN coalesce($now, timestamp()) + $ttl_ms
                        WHEN retired THEN null ELSE c.expires_at END
WITH c, retired, fresh, base
CALL {{
  WITH c, fresh, base
  UNWIND range(0, size(fresh) - 1) AS i
  WITH c, fresh[i] AS msg, base + i AS position
  CREATE (c)-[:HAS_MESSAGE]->(m:{M} {{
    conversation_id: $cid, generation: c.generation, position: position, message_id: msg.id,
    type: msg.type, is_system: msg.is_system, created_at: msg.created_at,
    search_text: msg.search_text, data: msg.data}})
  RETURN collect([msg.id, position]) AS stored
}}
RETURN stored, retired
"""

# An expired or deleted conversation starts over in a new generation.
_APPEND = (
    _LOCK_CONVERSATION
    + """
SET c.generation = CASE WHEN stale THEN c.generation + 1 ELSE c.generation END
REMOVE c.deleted
FOREACH (_ IN CASE WHEN stale THEN [1] ELSE [] END |
  REMOVE c.summary_text, c.summary_covers, c.summary_version)
WITH c, stale AS retired, [msg IN $messages WHERE stale OR NOT EXISTS {{
  MATCH (x:{M})
  WHERE x.conversation_id = $cid AND x.generation = c.generation AND x.message_id = msg.id
}}] AS fresh
"""
    + _CREATE_MESSAGES
)

# A version-checked append takes the conversation's write lock with a write that leaves the
# node as it was, reads the version under it, and runs the append's own writes only when the
# version is the expected one, so a refused append stores nothing: no message, no counter
# bump, no expiry or update time. Version 0 may find no conversation, so that statement
# creates it (MERGE, as an append does; the creation cannot be refused: a conversation
# without a node is at version 0). Any other version needs a live conversation: that
# statement only matches, and finds no row (nothing written) when there is none.
_LOCK_FOR_FIRST_CHECK = """
MERGE (l:{C} {{id: $cid}})
  ON CREATE SET l.owner = $owner, l.generation = 1, l.next_position = 1,
                l.created_at = coalesce($now, timestamp())
SET l.locked = true
REMOVE l.locked
"""

_LOCK_FOR_CHECK = """
MATCH (l:{C} {{id: $cid}})
SET l.locked = true
REMOVE l.locked
"""

# The wrapping CALL collects the inner one's row, so the statement answers one row whether
# the append ran or not. A refused append also reads where the batch's ids are stored: a
# retry of a checked append that committed before its connection broke finds exactly its
# own messages in the positions after the expected version, and is reported as the write
# that won (``stored`` is then those rows) rather than as a conflict.
_CHECKED_APPEND = (
    """
WITH l.id AS locked
MATCH (c:{C} {{id: locked}})
WITH c,
     c.deleted IS NOT NULL OR coalesce(c.expires_at <= coalesce($now, timestamp()), false) AS stale
WITH c, stale, CASE WHEN stale THEN 0 ELSE c.next_position - 1 END AS version
CALL {{
  WITH c, stale, version
  CALL {{
    WITH c, stale, version
    WITH c, stale WHERE version = $expected
    SET c.updated_at = coalesce($now, timestamp()),
        c.generation = CASE WHEN stale THEN c.generation + 1 ELSE c.generation END
    REMOVE c.deleted
    FOREACH (_ IN CASE WHEN stale THEN [1] ELSE [] END |
      REMOVE c.summary_text, c.summary_covers, c.summary_version)
    WITH c, stale AS retired, [msg IN $messages WHERE stale OR NOT EXISTS {{
      MATCH (x:{M})
      WHERE x.conversation_id = $cid AND x.generation = c.generation AND x.message_id = msg.id
    }}] AS fresh
"""
    + _CREATE_MESSAGES
    + """
  }}
  RETURN collect([stored, retired]) AS outcome
}}
CALL {{
  WITH c, version, outcome
  WITH c WHERE size(outcome) = 0 AND version > $expected
  UNWIND $messages AS msg
  MATCH (x:{M})
  WHERE x.conversation_id = $cid AND x.generation = c.generation AND x.message_id = msg.id
    AND x.position > $expected
  WITH x ORDER BY x.position
  RETURN collect([x.message_id, x.position]) AS mine
}}
WITH version, outcome, mine,
     size(mine) = size($messages) AND version - $expected = size(mine) AS replayed
RETURN CASE WHEN size(outcome) > 0 THEN outcome[0][0] WHEN replayed THEN mine END AS stored,
       size(outcome) > 0 AND outcome[0][1] AS retired,
       version
"""
)

_APPEND_FIRST_CHECKED = _LOCK_FOR_FIRST_CHECK + _CHECKED_APPEND
_APPEND_CHECKED = _LOCK_FOR_CHECK + _CHECKED_APPEND

_REPLACE = (
    _LOCK_CONVERSATION
    + """
SET c.generation = c.generation + 1
REMOVE c.deleted
FOREACH (_ IN CASE WHEN stale THEN [1] ELSE [] END |
  REMOVE c.summary_text, c.summary_covers, c.summary_version)
WITH c, true AS retired, $messages AS fresh
"""
    + _CREATE_MESSAGES
)

_DELETE = """
MATCH (c:{C} {{id: $cid}})
SET c.generation = c.generation + 1, c.deleted = true, c.expires_at = null
REMOVE c.summary_text, c.summary_covers, c.summary_version
RETURN c.id AS id
"""

# Runs in auto-commit mode only (IN TRANSACTIONS): each batch commits on its own.
_SWEEP = """
MATCH (c:{C} {{id: $cid}})
WITH c.generation AS current
MATCH (m:{M}) USING INDEX SEEK m:{M}(conversation_id, generation, position)
WHERE m.conversation_id = $cid AND m.generation < current AND m.position IS NOT NULL
CALL {{
  WITH m
  DETACH DELETE m
}} IN TRANSACTIONS OF 1000 ROWS
"""

# Matched again by id after taking the lock, so the checks read committed values, not ones
# cached by the first match: an appender that revived the conversation meanwhile keeps it.
_DROP_TOMBSTONE = """
MATCH (e:{C} {{id: $cid}}) WHERE e.deleted
SET e.locked = true
REMOVE e.locked
WITH e.id AS id
MATCH (c:{C} {{id: id}})
WHERE c.deleted AND NOT EXISTS {{ (c)-[:HAS_MESSAGE]->() }}
DELETE c
"""

_EXPIRE = """
MATCH (e:{C}) WHERE e.expires_at <= coalesce($now, timestamp())
WITH e.id AS id LIMIT $batch
MATCH (c:{C} {{id: id}})
SET c.locked = true
REMOVE c.locked
WITH c WHERE c.expires_at <= coalesce($now, timestamp())
SET c.generation = c.generation + 1, c.deleted = true, c.expires_at = null
REMOVE c.summary_text, c.summary_covers, c.summary_version
RETURN c.id AS id
"""

_TOMBSTONES = """
MATCH (c:{C}) WHERE c.deleted = true
RETURN c.id AS id
LIMIT $batch
"""

# Each read finds the live conversation first and runs the message query as a subquery
# once for it, seeking the index that starts with (conversation_id, generation) and reading
# it in order (no sort, stops at LIMIT). The seek is a hint: the generation comes from the
# conversation node at run time, and left alone the planner scans the index from one end
# (the window's system-message branch then read the whole label's index when a conversation
# had no system message). The window reads return one record that collects their rows: one
# message on the wire and one for the driver to decode, instead of one per row.
_LIVE_CONVERSATION = f"""
MATCH (c:{{C}} {{{{id: $cid}}}}) WHERE {_LIVE}
CALL {{{{
  WITH c
"""

_WINDOW = (
    _LIVE_CONVERSATION
    + """
  MATCH (m:{M}) USING INDEX SEEK m:{M}(conversation_id, generation, is_system, position)
  WHERE m.conversation_id = $cid AND m.generation = c.generation
    AND m.is_system = $is_system AND m.position < $before
  WITH m
  ORDER BY m.conversation_id DESC, m.generation DESC, m.is_system DESC, m.position DESC
  LIMIT $limit
  RETURN m.position AS position, m.data AS data
}}
RETURN collect([position, data]) AS rows
"""
)

# The window and the current system message in one round trip (find_window).
_WINDOW_WITH_SYSTEM = (
    _LIVE_CONVERSATION
    + """
  MATCH (m:{M}) USING INDEX SEEK m:{M}(conversation_id, generation, is_system, position)
  WHERE m.conversation_id = $cid AND m.generation = c.generation
    AND m.is_system = false AND m.position < $before
  WITH m
  ORDER BY m.conversation_id DESC, m.generation DESC, m.is_system DESC, m.position DESC
  LIMIT $limit
  RETURN m.position AS position, m.data AS data, false AS is_system
  UNION ALL
  WITH c
  MATCH (m:{M}) USING INDEX SEEK m:{M}(conversation_id, generation, is_system, position)
  WHERE m.conversation_id = $cid AND m.generation = c.generation
    AND m.is_system = true AND m.position IS NOT NULL
  WITH m
  ORDER BY m.conversation_id DESC, m.generation DESC, m.is_system DESC, m.position DESC
  LIMIT 1
  RETURN m.position AS position, m.data AS data, true AS is_system
}}
RETURN collect([position, data, is_system]) AS rows
"""
)

_LATEST_OF_TYPE = (
    _LIVE_CONVERSATION
    + """
  MATCH (m:{M}) USING INDEX SEEK m:{M}(conversation_id, generation, type, position)
  WHERE m.conversation_id = $cid AND m.generation = c.generation AND m.type = $type
    AND m.position IS NOT NULL
  WITH m
  ORDER BY m.conversation_id DESC, m.generation DESC, m.type DESC, m.position DESC
  LIMIT 1
  RETURN m.position AS position, m.data AS data
}}
RETURN position, data
"""
)

_HISTORY = (
    _LIVE_CONVERSATION
    + """
  MATCH (m:{M}) USING INDEX SEEK m:{M}(conversation_id, generation, position)
  WHERE m.conversation_id = $cid AND m.generation = c.generation AND m.position > $after
    AND ($since IS NULL OR m.created_at >= $since)
    AND ($until IS NULL OR m.created_at < $until)
    AND ($types IS NULL OR m.type IN $types)
    AND ($needle IS NULL OR m.search_text CONTAINS $needle)
  WITH m ORDER BY m.conversation_id, m.generation, m.position LIMIT $limit
  RETURN m.position AS position, m.data AS data
}}
RETURN position, data
"""
)

# The messages the history read shows, counted by the server over the same index range.
_COUNT = (
    _LIVE_CONVERSATION
    + """
  MATCH (m:{M}) USING INDEX SEEK m:{M}(conversation_id, generation, position)
  WHERE m.conversation_id = $cid AND m.generation = c.generation AND m.position > $after
  RETURN count(m) AS messages
}}
RETURN messages
"""
)

# Auto-commit only; batches keep a large deletion out of one huge transaction.
_DELETE_BEFORE = f"""
MATCH (c:{{C}} {{{{id: $cid}}}}) WHERE {_LIVE}
WITH c.generation AS current
MATCH (m:{{M}}) USING INDEX SEEK m:{{M}}(conversation_id, generation, is_system, position)
WHERE m.conversation_id = $cid AND m.generation = current AND m.is_system = false
  AND m.position < $position
CALL {{{{
  WITH m
  DETACH DELETE m
}}}} IN TRANSACTIONS OF 1000 ROWS
RETURN count(*) AS deleted
"""

# Auto-commit only, as delete_before: the chat messages of one position range.
_DELETE_BETWEEN = f"""
MATCH (c:{{C}} {{{{id: $cid}}}}) WHERE {_LIVE}
WITH c.generation AS current
MATCH (m:{{M}}) USING INDEX SEEK m:{{M}}(conversation_id, generation, is_system, position)
WHERE m.conversation_id = $cid AND m.generation = current AND m.is_system = false
  AND m.position > $after AND m.position <= $through
CALL {{{{
  WITH m
  DETACH DELETE m
}}}} IN TRANSACTIONS OF 1000 ROWS
RETURN count(*) AS deleted
"""

_VERSION = f"""
MATCH (c:{{C}} {{{{id: $cid}}}}) WHERE {_LIVE}
RETURN c.next_position - 1 AS version
"""

# The read takes the node's write lock too. Read committed isolation gives each property
# read the latest commit, so a plain read could return one summary's text with the next one's
# version, and a writer that folds that text into the next version loses an update (seen
# under concurrent writers). Under the lock no write can commit between the three reads.
_FIND_SUMMARY = f"""
MATCH (l:{{C}} {{{{id: $cid}}}})
SET l.summary_lock = true
REMOVE l.summary_lock
WITH l.id AS locked
MATCH (c:{{C}} {{{{id: locked}}}}) WHERE {_LIVE} AND c.summary_version IS NOT NULL
RETURN c.summary_text AS text, c.summary_covers AS covers, c.summary_version AS version
"""

# The compare-and-set: the SET takes the conversation's write lock before anything is read,
# and the node is matched again under it, so the version compared is the committed one (a
# concurrent writer of the same version waits for the lock, then sees the new version and
# writes nothing). Returns one row if the write won, none otherwise. A retry of a write that
# committed before its connection broke finds its own summary stored and wins again, so a
# won write is never reported lost. A deleted or expired conversation keeps no summary (it
# would outlive its messages).
_SAVE_SUMMARY = f"""
MATCH (l:{{C}} {{{{id: $cid}}}})
SET l.summary_lock = true
REMOVE l.summary_lock
WITH l.id AS locked
MATCH (c:{{C}} {{{{id: locked}}}})
WHERE {_LIVE} AND (coalesce(c.summary_version, 0) = $expected
  OR (c.summary_version = $expected + 1 AND c.summary_text = $text
      AND c.summary_covers = $covers))
SET c.summary_text = $text, c.summary_covers = $covers, c.summary_version = $expected + 1
RETURN c.summary_version AS version
"""

_LIST_ALL = f"""
MATCH (c:{{C}}) WHERE c.id > $cursor AND {_LIVE}
RETURN c.id AS id
ORDER BY c.id
LIMIT $limit
"""

_LIST_OWNER = f"""
MATCH (c:{{C}}) WHERE c.owner = $owner AND c.id > $cursor AND {_LIVE}
RETURN c.id AS id
ORDER BY c.owner, c.id
LIMIT $limit
"""


def _q(template: str, conversation: str, message: str) -> LiteralString:
    # The labels passed check_label_prefix, so the text is as fixed as a literal (mypy
    # treats LiteralString as str; the annotation documents the intent for other checkers).
    return template.format(C=conversation, M=message)


@dataclass(frozen=True)
class Statements:
    """The statements for one label prefix."""

    conversation_label: str
    message_label: str
    schema: tuple[LiteralString, ...]
    append: LiteralString
    append_first_checked: LiteralString
    append_checked: LiteralString
    version: LiteralString
    replace: LiteralString
    delete: LiteralString
    sweep: LiteralString
    drop_tombstone: LiteralString
    expire: LiteralString
    tombstones: LiteralString
    window: LiteralString
    window_with_system: LiteralString
    latest_of_type: LiteralString
    history: LiteralString
    count: LiteralString
    delete_before: LiteralString
    delete_between: LiteralString
    list_all: LiteralString
    list_owner: LiteralString
    find_summary: LiteralString
    save_summary: LiteralString

    @classmethod
    def for_prefix(cls, prefix: str) -> Statements:
        """Build every statement for a label prefix.

        Raises:
            ConfigurationError: If the prefix is not a safe identifier.
        """
        check_label_prefix(prefix)
        c, m = f"{prefix}Conversation", f"{prefix}Message"
        return cls(
            conversation_label=c,
            message_label=m,
            schema=repository_schema(prefix),
            append=_q(_APPEND, c, m),
            append_first_checked=_q(_APPEND_FIRST_CHECKED, c, m),
            append_checked=_q(_APPEND_CHECKED, c, m),
            version=_q(_VERSION, c, m),
            replace=_q(_REPLACE, c, m),
            delete=_q(_DELETE, c, m),
            sweep=_q(_SWEEP, c, m),
            drop_tombstone=_q(_DROP_TOMBSTONE, c, m),
            expire=_q(_EXPIRE, c, m),
            tombstones=_q(_TOMBSTONES, c, m),
            window=_q(_WINDOW, c, m),
            window_with_system=_q(_WINDOW_WITH_SYSTEM, c, m),
            latest_of_type=_q(_LATEST_OF_TYPE, c, m),
            history=_q(_HISTORY, c, m),
            count=_q(_COUNT, c, m),
            delete_before=_q(_DELETE_BEFORE, c, m),
            delete_between=_q(_DELETE_BETWEEN, c, m),
            list_all=_q(_LIST_ALL, c, m),
            list_owner=_q(_LIST_OWNER, c, m),
            find_summary=_q(_FIND_SUMMARY, c, m),
            save_summary=_q(_SAVE_SUMMARY, c, m),
        )


# -- the vector store ---------------------------------------------------------------------

_VECTOR_RETURN = "RETURN n.id AS id, n.text AS text, n.metadata AS metadata, score"


def _vq(text: str) -> LiteralString:
    # Every spliced part was checked by check_identifier; the rest is literal text.
    return cast(LiteralString, text)  # type: ignore[redundant-cast]


@dataclass(frozen=True)
class VectorStatements:
    """The statements for one label and vector index."""

    label: str
    """The node label."""
    index_name: str
    """The vector index name."""

    @classmethod
    def create(cls, label: str, index_name: str | None) -> VectorStatements:
        """Check the names and build the statements.

        Args:
            label: The node label.
            index_name: The vector index name; ``<label>_embedding`` by default.
        """
        check_identifier(label, "label")
        index = check_identifier(index_name or f"{label}_embedding", "index_name")
        return cls(label, index)

    def schema(self, dimensions: int, indexed_keys: Sequence[str]) -> list[LiteralString]:
        """Return the constraint and index statements (``IF NOT EXISTS``).

        Args:
            dimensions: Vector length of the vector index.
            indexed_keys: Metadata keys that get a range index (filters start with these).
        """
        return vector_schema(self.label, self.index_name, dimensions, indexed_keys)

    @property
    def index_dimensions(self) -> LiteralString:
        """Read the dimensions of an existing vector index (parameter ``name``)."""
        return (
            "SHOW VECTOR INDEXES YIELD name, options WHERE name = $name "
            "RETURN options.indexConfig['vector.dimensions'] AS dimensions"
        )

    @property
    def upsert(self) -> LiteralString:
        """Create or replace documents (parameter ``rows``: ``{id, props}`` maps)."""
        return _vq(f"UNWIND $rows AS row MERGE (n:{self.label} {{id: row.id}}) SET n = row.props")

    @property
    def delete_ids(self) -> LiteralString:
        """Delete documents by id (parameter ``ids``)."""
        return _vq(f"UNWIND $ids AS id MATCH (n:{self.label} {{id: id}}) DELETE n")

    def delete_where(self, where: VectorFilter) -> tuple[LiteralString, dict[str, Any]]:
        """Delete up to ``$batch`` documents matching a filter and return how many went.

        Args:
            where: A non-empty filter.
        """
        condition, params = _condition(where)
        query = (
            f"MATCH (n:{self.label}) WHERE {condition} "
            "WITH n LIMIT $batch DELETE n RETURN count(*) AS deleted"
        )
        return _vq(query), params

    def search(
        self, where: VectorFilter, indexed_keys: Sequence[str] = ()
    ) -> tuple[LiteralString, dict[str, Any]]:
        """Return the search statement and its filter parameters.

        Unfiltered searches use the vector index. Filtered ones score every matching node
        exactly, found through the range index of the first indexed key in the filter (a
        planner hint: left alone, the planner may pick a less selective index, such as
        ``owner`` over ``conversation_id``). Post-filtering the vector index's global top k
        would return too few (or no) entries for one conversation among many.

        Args:
            where: The filter; empty means every document.
            indexed_keys: Keys with a range index, most selective first.
        """
        if not where:
            query = (
                "CALL db.index.vector.queryNodes($index, $k, $vector) YIELD node AS n, score "
                f"WHERE score >= $threshold {_VECTOR_RETURN} ORDER BY score DESC"
            )
            return _vq(query), {"index": self.index_name}
        condition, params = _condition(where)
        keys = {key for key, _ in where}
        seek = next((k for k in indexed_keys if k in keys), None)
        hint = f" USING INDEX n:{self.label}(meta_{seek})" if seek else ""
        query = (
            f"MATCH (n:{self.label}){hint} WHERE {condition} "
            "WITH n, vector.similarity.cosine(n.embedding, $vector) AS score "
            f"WHERE score >= $threshold {_VECTOR_RETURN} ORDER BY score DESC LIMIT $k"
        )
        return _vq(query), params


def _condition(where: VectorFilter) -> tuple[str, dict[str, Any]]:
    parts = []
    params: dict[str, Any] = {}
    for i, (key, value) in enumerate(where):
        check_identifier(key, "a filter key")
        parts.append(f"n.meta_{key} = $f{i}")
        params[f"f{i}"] = value
    return " AND ".join(parts), params
