"""The vector-store contract and the base every store derives from.

The in-memory store is in ``in_memory_vector_store``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from chatmem._async.embedding import AsyncEmbeddingModel
from chatmem._twins import AsyncTwin, check_flavor
from chatmem._vector_types import (
    VectorDocument,
    VectorFilter,
    as_filter,
    check_search,
    check_vector,
)
from chatmem.exceptions import ConfigurationError

__all__ = [
    "AsyncBaseVectorStore",
    "AsyncVectorStore",
    "async_embed_documents",
    "async_embed_query",
]

Where = VectorFilter | Mapping[str, str] | None


@runtime_checkable
class AsyncVectorStore(Protocol):
    """Stores embedded documents and finds the most similar ones. Every store implements it.

    Scores are ``(1 + cosine) / 2``, in ``[0, 1]``, on every store. Filters are structured
    values (:class:`~chatmem.vector_store.VectorFilter` or a ``{key: value}`` mapping: an AND
    of equalities on string metadata), always passed to the store as bound parameters.
    """

    async def add(self, documents: Sequence[VectorDocument]) -> list[str]:
        """Embed (where needed) and store documents; a stored id is replaced.

        Args:
            documents: The documents; those without an ``embedding`` are embedded in one batch.

        Returns:
            The ids, in order.
        """
        ...

    async def similarity_search(
        self,
        query: str,
        *,
        top_k: int = 4,
        score_threshold: float = 0.0,
        where: Where = None,
    ) -> list[VectorDocument]:
        """Return the documents most similar to ``query``, best first, with their scores.

        Args:
            query: The text to embed and compare.
            top_k: How many documents at most.
            score_threshold: Lowest score returned.
            where: Only documents whose metadata matches; ``None`` searches everything.
        """
        ...

    async def similarity_search_by_vector(
        self,
        vector: Sequence[float],
        *,
        top_k: int = 4,
        score_threshold: float = 0.0,
        where: Where = None,
    ) -> list[VectorDocument]:
        """Like :meth:`similarity_search` with an embedding instead of a text.

        Args:
            vector: The query embedding.
            top_k: How many documents at most.
            score_threshold: Lowest score returned.
            where: Only documents whose metadata matches.
        """
        ...

    async def delete(self, ids: Sequence[str]) -> None:
        """Delete documents by id; unknown ids are not an error.

        Args:
            ids: The ids.
        """
        ...

    async def delete_where(self, where: Where) -> int:
        """Delete every document whose metadata matches a non-empty filter.

        Args:
            where: The filter; an empty one is refused so nothing is deleted by accident.

        Returns:
            How many documents were deleted.
        """
        ...

    async def aclose(self) -> None:
        """Release what the store owns (nothing if it was handed its client)."""
        ...


async def async_embed_documents(
    model: AsyncEmbeddingModel, documents: Sequence[VectorDocument], dimensions: int | None
) -> list[list[float]]:
    """Return one checked embedding per document, embedding the missing ones in one batch.

    Args:
        model: The embedding model.
        documents: The documents.
        dimensions: The store's vector length, or ``None`` if not yet known.

    Raises:
        ConfigurationError: If a vector has the wrong length or is degenerate.
    """
    missing = [d.text for d in documents if d.embedding is None]
    fresh = iter(await model.embed(missing) if missing else [])
    vectors = []
    for document in documents:
        vector = document.embedding if document.embedding is not None else next(fresh)
        vectors.append(check_vector(vector, dimensions))
        dimensions = len(vectors[-1])
    return vectors


async def async_embed_query(
    model: AsyncEmbeddingModel, query: str, dimensions: int | None
) -> list[float]:
    """Embed one query text and check the vector.

    Args:
        model: The embedding model.
        query: The text.
        dimensions: The store's vector length, or ``None`` if not yet known.
    """
    if not isinstance(query, str):
        raise ConfigurationError(f"a query is a string, got {type(query).__name__}")
    (vector,) = await model.embed([query])
    return check_vector(vector, dimensions)


class AsyncBaseVectorStore(ABC):
    """What every vector store shares: argument checks, query embedding and set-up order.

    A store derives from it and implements ``add`` and ``aclose`` and three hooks that
    receive checked arguments: :meth:`_search_by_vector` (a vector of the right length, a
    :class:`VectorFilter`), :meth:`_delete` (a non-empty list of ids) and
    :meth:`_delete_where` (a non-empty filter). The base owns the public searches and
    deletes, so they validate, set up and embed the same way on every store. A store that must
    prepare something before its first search (a table, an index) overrides
    :meth:`_ensure_ready`, which does nothing by default.

    Example:
        ```python
        class AsyncMyStore(AsyncBaseVectorStore):
            async def _search_by_vector(self, vector, top_k, score_threshold, where):
                rows = await self._client.knn(vector, top_k, dict(where))
                return [VectorDocument(**row) for row in rows if row["score"] >= score_threshold]

            async def _delete(self, ids):
                await self._client.delete(ids)

            async def _delete_where(self, where):
                return await self._client.delete_matching(dict(where))
        ```

    Args:
        embedding_model: Embeds documents and queries.
        dimensions: Vector length; asked of the embedding model when ``None``.

    Raises:
        ConfigurationError: If the model is of the other flavor (async for a sync store).
    """

    def __init__(self, embedding_model: AsyncEmbeddingModel, *, dimensions: int | None = None):
        check_flavor(embedding_model, "embed", is_async=AsyncTwin.IS_ASYNC, role="embedding model")
        self.embedding_model = embedding_model
        """The model that embeds documents and queries."""
        self._dimensions = dimensions

    async def _ensure_ready(self) -> None:
        """Prepare the store before a search or delete (a table, an index); nothing here.

        A store that needs the vector length first sets ``self._dimensions`` from
        ``await self.embedding_model.dimensions()`` in its override.
        """
        return  # a hook with nothing to do by default, not an abstract method

    @abstractmethod
    async def _search_by_vector(
        self, vector: list[float], top_k: int, score_threshold: float, where: VectorFilter
    ) -> list[VectorDocument]:
        """Return the ``top_k`` best documents scoring at least ``score_threshold``, best first.

        Called with checked arguments after :meth:`_ensure_ready`.
        """

    @abstractmethod
    async def _delete(self, ids: list[str]) -> None:
        """Delete the documents with these ids (at least one); unknown ids are not an error."""

    @abstractmethod
    async def _delete_where(self, where: VectorFilter) -> int:
        """Delete every document matching a non-empty filter and return how many."""

    async def similarity_search(
        self,
        query: str,
        *,
        top_k: int = 4,
        score_threshold: float = 0.0,
        where: Where = None,
    ) -> list[VectorDocument]:
        """Return the documents most similar to ``query``, best first, with their scores.

        Args:
            query: The text to embed and compare.
            top_k: How many documents at most.
            score_threshold: Lowest score returned.
            where: Only documents whose metadata matches; ``None`` searches everything.

        Raises:
            ConfigurationError: For an out-of-range argument, a filter that is not
                structured, or a query embedding of the wrong length.
        """
        check_search(top_k, score_threshold)
        condition = as_filter(where)
        await self._ensure_ready()
        vector = await async_embed_query(self.embedding_model, query, self._dimensions)
        return await self._search_by_vector(vector, top_k, score_threshold, condition)

    async def similarity_search_by_vector(
        self,
        vector: Sequence[float],
        *,
        top_k: int = 4,
        score_threshold: float = 0.0,
        where: Where = None,
    ) -> list[VectorDocument]:
        """Like :meth:`similarity_search` with an embedding instead of a text.

        Args:
            vector: The query embedding.
            top_k: How many documents at most.
            score_threshold: Lowest score returned.
            where: Only documents whose metadata matches.

        Raises:
            ConfigurationError: For an out-of-range argument, a filter that is not
                structured, or a vector of the wrong length.
        """
        check_search(top_k, score_threshold)
        condition = as_filter(where)
        await self._ensure_ready()
        checked = check_vector(vector, self._dimensions)
        return await self._search_by_vector(checked, top_k, score_threshold, condition)

    async def delete(self, ids: Sequence[str]) -> None:
        """Delete documents by id; unknown ids are not an error.

        Args:
            ids: The ids.
        """
        ids = list(ids)
        if ids:
            await self._ensure_ready()
            await self._delete(ids)

    async def delete_where(self, where: Where) -> int:
        """Delete every document whose metadata matches a non-empty filter.

        Args:
            where: The filter; an empty one is refused so nothing is deleted by accident.

        Returns:
            How many documents were deleted.

        Raises:
            ConfigurationError: If the filter is empty or not structured.
        """
        condition = as_filter(where)
        if not condition:
            raise ConfigurationError("delete_where needs a non-empty filter")
        await self._ensure_ready()
        return await self._delete_where(condition)
