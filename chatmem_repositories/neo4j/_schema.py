"""The constraints and indexes the Neo4j repository and vector store rely on (no I/O).

Every statement is ``IF NOT EXISTS``, so creating the schema on first use is idempotent;
with ``initialize_schema="never"`` it is left to the operator (run these statements once).
Names are spliced into the text only after they are checked to be ASCII identifiers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import LiteralString, cast

from chatmem.backend import check_identifier

__all__ = ["repository_schema", "vector_schema"]


def repository_schema(prefix: str) -> tuple[LiteralString, ...]:
    """Return the repository's constraints and indexes for a checked label prefix.

    Args:
        prefix: The label prefix (already checked by ``check_label_prefix``).
    """
    c, m = f"{prefix}Conversation", f"{prefix}Message"
    # Schema names keep the prefix's case, as labels do: lower-cased, "App" and "app"
    # would share names, and the second prefix's IF NOT EXISTS would create nothing.
    name = f"chatmem_{prefix}_" if prefix else "chatmem_"
    schema: tuple[LiteralString, ...] = (
        f"CREATE CONSTRAINT {name}conversation_id IF NOT EXISTS FOR (c:{c}) REQUIRE c.id IS UNIQUE",
        f"CREATE CONSTRAINT {name}message_generation_id IF NOT EXISTS "
        f"FOR (m:{m}) REQUIRE (m.conversation_id, m.generation, m.message_id) IS UNIQUE",
        f"CREATE CONSTRAINT {name}message_position IF NOT EXISTS "
        f"FOR (m:{m}) REQUIRE (m.conversation_id, m.position) IS UNIQUE",
        f"CREATE INDEX {name}message_log IF NOT EXISTS "
        f"FOR (m:{m}) ON (m.conversation_id, m.generation, m.position)",
        f"CREATE INDEX {name}message_window IF NOT EXISTS "
        f"FOR (m:{m}) ON (m.conversation_id, m.generation, m.is_system, m.position)",
        f"CREATE INDEX {name}message_type IF NOT EXISTS "
        f"FOR (m:{m}) ON (m.conversation_id, m.generation, m.type, m.position)",
        f"CREATE INDEX {name}conversation_owner IF NOT EXISTS FOR (c:{c}) ON (c.owner, c.id)",
        f"CREATE INDEX {name}conversation_expiry IF NOT EXISTS FOR (c:{c}) ON (c.expires_at)",
        f"CREATE INDEX {name}conversation_deleted IF NOT EXISTS FOR (c:{c}) ON (c.deleted)",
    )
    return schema


def vector_schema(
    label: str, index_name: str, dimensions: int, indexed_keys: Sequence[str]
) -> list[LiteralString]:
    """Return the vector store's constraint and index statements.

    Args:
        label: The node label (checked).
        index_name: The vector index name (checked).
        dimensions: Vector length of the vector index.
        indexed_keys: Metadata keys that get a range index (filters start with these).
    """
    statements = [
        f"CREATE CONSTRAINT {label}_id IF NOT EXISTS FOR (n:{label}) REQUIRE n.id IS UNIQUE",
        f"CREATE VECTOR INDEX {index_name} IF NOT EXISTS FOR (n:{label}) "
        f"ON (n.embedding) OPTIONS {{indexConfig: {{`vector.dimensions`: {int(dimensions)}, "
        "`vector.similarity_function`: 'cosine'}}",
    ]
    for key in indexed_keys:
        check_identifier(key, "an indexed key")
        statements.append(
            f"CREATE INDEX {label}_meta_{key} IF NOT EXISTS FOR (n:{label}) ON (n.meta_{key})"
        )
    # Every spliced part was checked; the rest is literal text.
    return [cast(LiteralString, s) for s in statements]  # type: ignore[redundant-cast]
