"""Cypher of the Neo4j vector store, and row conversion (no I/O).

Values always travel as parameters: documents, vectors, filter values, limits. The only text
spliced into a statement is the label, the index names and the ``meta_<key>`` property names
of filter keys, all checked to be ASCII identifiers first (labels and property names cannot
be parameters, and a static property name is what lets the planner use a range index).

Each document is one node::

    (:<Label> {id, text, metadata (JSON), embedding, meta_<key> for each string metadata value})
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, LiteralString, cast

from chatmem._vector_types import VectorDocument, VectorFilter, check_identifier

__all__ = ["VectorStatements", "document_rows", "documents_from_rows"]

_RETURN = "RETURN n.id AS id, n.text AS text, n.metadata AS metadata, score"


def _q(text: str) -> LiteralString:
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
        label = self.label
        statements = [
            f"CREATE CONSTRAINT {label}_id IF NOT EXISTS FOR (n:{label}) REQUIRE n.id IS UNIQUE",
            f"CREATE VECTOR INDEX {self.index_name} IF NOT EXISTS FOR (n:{label}) "
            f"ON (n.embedding) OPTIONS {{indexConfig: {{`vector.dimensions`: {int(dimensions)}, "
            "`vector.similarity_function`: 'cosine'}}",
        ]
        for key in indexed_keys:
            check_identifier(key, "an indexed key")
            statements.append(
                f"CREATE INDEX {label}_meta_{key} IF NOT EXISTS FOR (n:{label}) ON (n.meta_{key})"
            )
        return [_q(s) for s in statements]

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
        return _q(f"UNWIND $rows AS row MERGE (n:{self.label} {{id: row.id}}) SET n = row.props")

    @property
    def delete_ids(self) -> LiteralString:
        """Delete documents by id (parameter ``ids``)."""
        return _q(f"UNWIND $ids AS id MATCH (n:{self.label} {{id: id}}) DELETE n")

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
        return _q(query), params

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
                f"WHERE score >= $threshold {_RETURN} ORDER BY score DESC"
            )
            return _q(query), {"index": self.index_name}
        condition, params = _condition(where)
        keys = {key for key, _ in where}
        seek = next((k for k in indexed_keys if k in keys), None)
        hint = f" USING INDEX n:{self.label}(meta_{seek})" if seek else ""
        query = (
            f"MATCH (n:{self.label}){hint} WHERE {condition} "
            "WITH n, vector.similarity.cosine(n.embedding, $vector) AS score "
            f"WHERE score >= $threshold {_RETURN} ORDER BY score DESC LIMIT $k"
        )
        return _q(query), params


def _condition(where: VectorFilter) -> tuple[str, dict[str, Any]]:
    parts = []
    params: dict[str, Any] = {}
    for i, (key, value) in enumerate(where):
        check_identifier(key, "a filter key")
        parts.append(f"n.meta_{key} = $f{i}")
        params[f"f{i}"] = value
    return " AND ".join(parts), params


def document_rows(
    documents: Sequence[VectorDocument], vectors: Sequence[list[float]]
) -> list[dict[str, Any]]:
    """Return the ``rows`` parameter of the upsert statement.

    Args:
        documents: The documents.
        vectors: Their embeddings, in order.
    """
    rows = []
    for document, vector in zip(documents, vectors, strict=True):
        props: dict[str, Any] = {
            "id": document.id,
            "text": document.text,
            "metadata": json.dumps(document.metadata, ensure_ascii=False),
            "embedding": vector,
        }
        props.update({f"meta_{k}": v for k, v in document.filterable().items()})
        rows.append({"id": document.id, "props": props})
    return rows


def documents_from_rows(rows: Sequence[Sequence[Any]]) -> list[VectorDocument]:
    """Turn ``(id, text, metadata, score)`` rows into scored documents.

    Args:
        rows: Result rows of a search statement.
    """
    return [
        VectorDocument(
            id=row[0],
            text=row[1],
            metadata=json.loads(row[2]),
            score=min(max(float(row[3]), 0.0), 1.0),
        )
        for row in rows
    ]
