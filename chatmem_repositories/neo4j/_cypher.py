"""Every Cypher statement the repository runs, and the schema they rely on (no I/O).

Values always travel as parameters. The only text spliced into a statement is a label or
schema name derived from the validated ``label_prefix`` (labels cannot be parameters).

The graph::

    (:<P>Conversation {id, owner, next_position, created_at, updated_at, expires_at})
        -[:HAS_MESSAGE]->
    (:<P>Message {conversation_id, position, message_id, type, is_system, created_at,
                  search_text, data})

Reads find messages through composite range indexes that start with ``conversation_id``
and end with ``position``; each ``ORDER BY`` lists every property of its index in index
order, so the planner reads the index in order and stops after ``LIMIT`` rows instead of
sorting the whole conversation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import LiteralString

from chatmem_repositories.neo4j._config import check_label_prefix

__all__ = ["Statements"]

_LIVE = "coalesce(c.expires_at > timestamp(), true)"

# Taking the conversation's write lock (the first SET) before reading its counter is what
# serializes concurrent appenders: reads after the lock see the last committed counter.
_LOCK_CONVERSATION = """
MERGE (c:{C} {{id: $cid}})
  ON CREATE SET c.owner = $owner, c.next_position = 1, c.created_at = timestamp()
SET c.updated_at = timestamp()
WITH c, coalesce(c.expires_at <= timestamp(), false) AS expired
"""

_CREATE_MESSAGES = """
WITH c, restart, fresh, c.next_position AS base
SET c.next_position = base + size(fresh),
    c.expires_at = CASE WHEN $ttl_ms IS NOT NULL THEN timestamp() + $ttl_ms
                        WHEN restart THEN null ELSE c.expires_at END
WITH c, fresh, base
UNWIND range(0, size(fresh) - 1) AS i
WITH c, fresh[i] AS msg, base + i AS position
CREATE (c)-[:HAS_MESSAGE]->(m:{M} {{
  conversation_id: $cid, position: position, message_id: msg.id, type: msg.type,
  is_system: msg.is_system, created_at: msg.created_at, search_text: msg.search_text,
  data: msg.data}})
RETURN msg.id AS id, position
"""

_APPEND = (
    _LOCK_CONVERSATION
    + """
CALL {{
  WITH c, expired
  WITH c WHERE expired
  MATCH (c)-[:HAS_MESSAGE]->(old:{M})
  DETACH DELETE old
}}
WITH c, expired AS restart, [msg IN $messages WHERE expired OR NOT EXISTS {{
  MATCH (x:{M}) WHERE x.conversation_id = $cid AND x.message_id = msg.id
}}] AS fresh
"""
    + _CREATE_MESSAGES
)

_REPLACE = (
    _LOCK_CONVERSATION
    + """
CALL {{
  WITH c
  MATCH (c)-[:HAS_MESSAGE]->(old:{M})
  DETACH DELETE old
}}
WITH c, true AS restart, $messages AS fresh
"""
    + _CREATE_MESSAGES
)

_DELETE = """
MATCH (c:{C} {{id: $cid}})
CALL {{
  WITH c
  MATCH (c)-[:HAS_MESSAGE]->(m:{M})
  DETACH DELETE m
}}
DETACH DELETE c
"""

# Each read finds the live conversation first and runs the message query as a subquery
# once for it: that keeps the index seek and its order intact (no sort, stops at LIMIT).
_LIVE_CONVERSATION = f"""
MATCH (c:{{C}} {{{{id: $cid}}}}) WHERE {_LIVE}
CALL {{{{
"""

_WINDOW = (
    _LIVE_CONVERSATION
    + """
  MATCH (m:{M})
  WHERE m.conversation_id = $cid AND m.is_system = $is_system AND m.position < $before
  WITH m ORDER BY m.conversation_id DESC, m.is_system DESC, m.position DESC LIMIT $limit
  RETURN m.position AS position, m.data AS data
}}
RETURN position, data
"""
)

_LATEST_OF_TYPE = (
    _LIVE_CONVERSATION
    + """
  MATCH (m:{M})
  WHERE m.conversation_id = $cid AND m.type = $type AND m.position IS NOT NULL
  WITH m ORDER BY m.conversation_id DESC, m.type DESC, m.position DESC LIMIT 1
  RETURN m.position AS position, m.data AS data
}}
RETURN position, data
"""
)

_HISTORY = (
    _LIVE_CONVERSATION
    + """
  MATCH (m:{M})
  WHERE m.conversation_id = $cid AND m.position > $after
    AND ($since IS NULL OR m.created_at >= $since)
    AND ($until IS NULL OR m.created_at < $until)
    AND ($types IS NULL OR m.type IN $types)
    AND ($needle IS NULL OR m.search_text CONTAINS $needle)
  WITH m ORDER BY m.conversation_id, m.position LIMIT $limit
  RETURN m.position AS position, m.data AS data
}}
RETURN position, data
"""
)

_DELETE_BEFORE = f"""
MATCH (c:{{C}} {{{{id: $cid}}}}) WHERE {_LIVE}
MATCH (m:{{M}})
WHERE m.conversation_id = $cid AND m.is_system = false AND m.position < $position
DETACH DELETE m
RETURN count(*) AS deleted
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

# The SET/REMOVE pair takes each candidate's write lock, and the candidate is matched again
# by id so the second expiry check reads the committed value after the lock rather than the
# one cached from the expiry index: an appender that revived the conversation meanwhile
# keeps it.
_PURGE = """
MATCH (e:{C}) WHERE e.expires_at <= timestamp()
WITH e.id AS id LIMIT $batch
MATCH (c:{C} {{id: id}})
SET c.purging = true
REMOVE c.purging
WITH c WHERE c.expires_at <= timestamp()
CALL {{
  WITH c
  MATCH (c)-[:HAS_MESSAGE]->(m:{M})
  DETACH DELETE m
}}
DETACH DELETE c
RETURN count(*) AS purged
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
    replace: LiteralString
    delete: LiteralString
    window: LiteralString
    latest_of_type: LiteralString
    history: LiteralString
    delete_before: LiteralString
    list_all: LiteralString
    list_owner: LiteralString
    purge: LiteralString

    @classmethod
    def for_prefix(cls, prefix: str) -> Statements:
        """Build every statement for a label prefix.

        Raises:
            ConfigurationError: If the prefix is not a safe identifier.
        """
        check_label_prefix(prefix)
        c, m = f"{prefix}Conversation", f"{prefix}Message"
        name = f"chatmem_{prefix.lower()}_" if prefix else "chatmem_"
        schema: tuple[LiteralString, ...] = (
            f"CREATE CONSTRAINT {name}conversation_id IF NOT EXISTS "
            f"FOR (c:{c}) REQUIRE c.id IS UNIQUE",
            f"CREATE CONSTRAINT {name}message_id IF NOT EXISTS "
            f"FOR (m:{m}) REQUIRE (m.conversation_id, m.message_id) IS UNIQUE",
            f"CREATE CONSTRAINT {name}message_position IF NOT EXISTS "
            f"FOR (m:{m}) REQUIRE (m.conversation_id, m.position) IS UNIQUE",
            f"CREATE INDEX {name}message_window IF NOT EXISTS "
            f"FOR (m:{m}) ON (m.conversation_id, m.is_system, m.position)",
            f"CREATE INDEX {name}message_type IF NOT EXISTS "
            f"FOR (m:{m}) ON (m.conversation_id, m.type, m.position)",
            f"CREATE INDEX {name}conversation_owner IF NOT EXISTS FOR (c:{c}) ON (c.owner, c.id)",
            f"CREATE INDEX {name}conversation_expiry IF NOT EXISTS FOR (c:{c}) ON (c.expires_at)",
        )
        return cls(
            conversation_label=c,
            message_label=m,
            schema=schema,
            append=_q(_APPEND, c, m),
            replace=_q(_REPLACE, c, m),
            delete=_q(_DELETE, c, m),
            window=_q(_WINDOW, c, m),
            latest_of_type=_q(_LATEST_OF_TYPE, c, m),
            history=_q(_HISTORY, c, m),
            delete_before=_q(_DELETE_BEFORE, c, m),
            list_all=_q(_LIST_ALL, c, m),
            list_owner=_q(_LIST_OWNER, c, m),
            purge=_q(_PURGE, c, m),
        )
