"""Documents, structured filters and scoring shared by every vector store (no I/O).

Filters are values, never query text: a :class:`Filter` is an AND of ``key == value``
conditions on string metadata. Keys must be plain identifiers (some stores use them as
property or map keys); values are always passed to the store as bound parameters.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_validator

from chatmem._uuid7 import uuid7
from chatmem.exceptions import ConfigurationError

__all__ = [
    "MetadataValue",
    "VectorDocument",
    "VectorFilter",
    "as_filter",
    "check_identifier",
    "check_search",
    "check_vector",
    "cosine_score",
    "documents_from_rows",
    "normalize",
]

MetadataValue: TypeAlias = str | int | float | bool | None
"""A metadata value: a JSON scalar. Only string values can be filtered on."""

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_MAX_TOP_K = 10_000


def check_identifier(value: object, what: str) -> str:
    """Return ``value`` if it is an ASCII identifier of at most 64 characters, else raise.

    Args:
        value: The candidate key, label, table or index name.
        what: What it is, for the message.

    Raises:
        ConfigurationError: If it is not such an identifier.
    """
    if not isinstance(value, str) or not _KEY.fullmatch(value):
        raise ConfigurationError(
            f"{what} must be an ASCII identifier (a letter or '_', then letters, digits or "
            f"'_', at most 64 characters), got {value!r}"
        )
    return value


class VectorDocument(BaseModel):
    """A piece of text stored in a vector store, with metadata and (once stored) a score.

    Example:
        ```python
        doc = VectorDocument(text="My name is James Bond", metadata={"conversation_id": "007"})
        store.add([doc])
        store.similarity_search("What is my name?", where={"conversation_id": "007"})
        ```
    """

    model_config = ConfigDict(frozen=True)

    text: str
    """The text that is embedded and returned."""
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    """JSON scalars by identifier key; string values can be used in filters."""
    id: str = Field(default_factory=uuid7)
    """Unique id; adding a document with a stored id replaces that document."""
    embedding: list[float] | None = Field(default=None, repr=False)
    """A precomputed embedding; the store embeds ``text`` when this is ``None``."""
    score: float | None = None
    """Similarity to the query in ``[0, 1]`` (``(1 + cosine) / 2``); set by searches only."""

    @field_validator("metadata")
    @classmethod
    def _keys_are_identifiers(cls, value: dict[str, MetadataValue]) -> dict[str, MetadataValue]:
        for key in value:
            try:
                check_identifier(key, "a metadata key")
            except ConfigurationError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("id")
    @classmethod
    def _id_is_sane(cls, value: str) -> str:
        if not value or len(value) > 512 or any(ord(c) < 32 for c in value):
            raise ValueError("a document id must be 1 to 512 characters without control chars")
        return value

    def filterable(self) -> dict[str, str]:
        """Return the metadata entries a filter can match: those with string values."""
        return {k: v for k, v in self.metadata.items() if isinstance(v, str)}


class VectorFilter:
    """An AND of equality conditions on string metadata. Never a string of query text.

    Example:
        ```python
        where = VectorFilter(conversation_id="007", owner="alice")
        store.similarity_search("my name", where=where)
        store.delete_where(VectorFilter(conversation_id="007"))
        ```

    Args:
        **conditions: Metadata key and the string value it must equal.

    Raises:
        ConfigurationError: If a key is not an identifier or a value is not a string.
    """

    __slots__ = ("_conditions",)

    def __init__(self, **conditions: str) -> None:
        checked: dict[str, str] = {}
        for key, value in conditions.items():
            check_identifier(key, "a filter key")
            if not isinstance(value, str):
                raise ConfigurationError(
                    f"filter value of {key!r} must be a string, got {type(value).__name__}"
                )
            checked[key] = value
        self._conditions = tuple(sorted(checked.items()))

    @property
    def conditions(self) -> tuple[tuple[str, str], ...]:
        """The ``(key, value)`` pairs, sorted by key."""
        return self._conditions

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        """Return whether metadata satisfies every condition.

        Args:
            metadata: A document's metadata.
        """
        return all(metadata.get(k) == v for k, v in self._conditions)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._conditions)

    def __bool__(self) -> bool:
        return bool(self._conditions)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VectorFilter) and other._conditions == self._conditions

    def __hash__(self) -> int:
        return hash(self._conditions)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._conditions)
        return f"VectorFilter({inner})"


def as_filter(where: VectorFilter | Mapping[str, str] | None) -> VectorFilter:
    """Turn a filter argument into a :class:`VectorFilter` (``None`` matches everything).

    Args:
        where: A filter, a mapping of key to value, or ``None``.

    Raises:
        ConfigurationError: If it is anything else, such as a string.
    """
    if where is None:
        return VectorFilter()
    if isinstance(where, VectorFilter):
        return where
    if isinstance(where, Mapping):
        return VectorFilter(**dict(where))
    raise ConfigurationError(
        f"a filter is a VectorFilter or a mapping of key to value, got {type(where).__name__}; "
        "filters are never strings"
    )


def check_vector(vector: Sequence[float], dimensions: int | None) -> list[float]:
    """Return ``vector`` as a list of floats after checking its length and values.

    Args:
        vector: The embedding.
        dimensions: The expected length, or ``None`` to accept any non-empty length.

    Raises:
        ConfigurationError: If the length is wrong, a value is not finite, or it is all zero.
    """
    values = [float(x) for x in vector]
    if not values or (dimensions is not None and len(values) != dimensions):
        raise ConfigurationError(
            f"embedding has {len(values)} dimensions, the store expects {dimensions}"
        )
    if not all(math.isfinite(x) for x in values):
        raise ConfigurationError("embedding contains a NaN or infinite value")
    if not any(values):
        raise ConfigurationError("embedding is all zeros; cosine similarity is undefined")
    return values


def normalize(vector: Sequence[float]) -> list[float]:
    """Return ``vector`` scaled to unit length (a zero vector is returned unchanged).

    Args:
        vector: The vector.
    """
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else list(vector)


def cosine_score(a: Sequence[float], b: Sequence[float]) -> float:
    """Return ``(1 + cosine(a, b)) / 2``, the score every store reports, in ``[0, 1]``.

    Args:
        a: One vector.
        b: Another vector of the same length.
    """
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return (1.0 + dot / (na * nb)) / 2.0 if na and nb else 0.0


def check_search(top_k: int, score_threshold: float) -> None:
    """Validate search arguments.

    Args:
        top_k: How many results at most (1 to 10,000).
        score_threshold: Lowest score returned, in ``[0, 1]``.

    Raises:
        ConfigurationError: If either is out of range.
    """
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= _MAX_TOP_K:
        raise ConfigurationError(f"top_k must be an int from 1 to {_MAX_TOP_K}, got {top_k!r}")
    if not isinstance(score_threshold, int | float) or not 0.0 <= score_threshold <= 1.0:
        raise ConfigurationError(f"score_threshold must be in [0, 1], got {score_threshold!r}")


def documents_from_rows(rows: Sequence[Sequence[Any]]) -> list[VectorDocument]:
    """Turn ``(id, text, metadata as JSON text, score)`` rows into scored documents.

    The score is clamped to ``[0, 1]``: a store's float arithmetic may land just outside.

    Args:
        rows: Result rows of a store's search, best first.
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
