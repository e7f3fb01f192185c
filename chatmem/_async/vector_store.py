"""The vector-store contract, the base stores derive from, and the in-memory store."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from chatmem._async.embedding import AsyncEmbeddingModel
from chatmem._concurrency import AsyncLock, async_api
from chatmem._flavor import check_flavor
from chatmem._vector_types import (
    VectorDocument,
    VectorFilter,
    as_filter,
    check_search,
    check_vector,
)
from chatmem.exceptions import ConfigurationError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "AsyncBaseVectorStore",
    "AsyncInMemoryVectorStore",
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


def _numpy() -> Any:
    try:
        import numpy
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigurationError(
            'the in-memory vector store needs numpy: pip install "chatmem[vectors]"'
        ) from exc
    return numpy


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
        check_flavor(embedding_model, "embed", is_async=async_api, role="embedding model")
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


class AsyncInMemoryVectorStore(AsyncBaseVectorStore):
    """Keeps documents and unit vectors in this process; exact cosine search with numpy.

    Filters are answered from an inverted index on string metadata, so a search filtered to
    one conversation compares only that conversation's vectors. Safe under concurrent tasks.

    Example:
        ```python
        store = AsyncInMemoryVectorStore(embedding_model)
        await store.add([VectorDocument(text="I live in Paris", metadata={"owner": "ann"})])
        await store.similarity_search("Where do I live?", where={"owner": "ann"})
        ```

    Args:
        embedding_model: Embeds documents and queries.
        dimensions: Vector length; asked of the embedding model when ``None``.

    Raises:
        ConfigurationError: If numpy is missing or the model is of the other flavor.
    """

    def __init__(self, embedding_model: AsyncEmbeddingModel, *, dimensions: int | None = None):
        super().__init__(embedding_model, dimensions=dimensions)
        self._np = _numpy()
        self._lock = AsyncLock()
        self._matrix: npt.NDArray[np.float32] | None = None
        self._documents: list[VectorDocument] = []  # row i holds documents[i]
        self._rows: dict[str, int] = {}
        self._index: dict[tuple[str, str], set[int]] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(documents={len(self._documents)})"

    async def add(self, documents: Sequence[VectorDocument]) -> list[str]:
        """Embed (where needed) and store documents; a stored id is replaced.

        Args:
            documents: The documents.
        """
        documents = list(documents)
        if not documents:
            return []
        if self._dimensions is None:
            self._dimensions = await self.embedding_model.dimensions()
        vectors = await async_embed_documents(self.embedding_model, documents, self._dimensions)
        async with self._lock:
            for document, vector in zip(documents, vectors, strict=True):
                self._put(document.model_copy(update={"embedding": None}), vector)
        return [d.id for d in documents]

    async def _search_by_vector(
        self, vector: list[float], top_k: int, score_threshold: float, where: VectorFilter
    ) -> list[VectorDocument]:
        async with self._lock:
            return self._search(vector, top_k, score_threshold, where)

    async def _delete(self, ids: list[str]) -> None:
        async with self._lock:
            for document_id in ids:
                self._remove(document_id)

    async def _delete_where(self, where: VectorFilter) -> int:
        async with self._lock:
            doomed = [self._documents[row].id for row in self._matching_rows(where)]
            for document_id in doomed:
                self._remove(document_id)
        return len(doomed)

    async def aclose(self) -> None:
        """Nothing to release; kept for symmetry with the other stores."""

    # -- internals (called with the lock held) -------------------------------------------------

    def _put(self, document: VectorDocument, vector: list[float]) -> None:
        np = self._np
        self._remove(document.id)
        row = len(self._documents)
        if self._matrix is None or row == self._matrix.shape[0]:
            grown = np.zeros((max(16, row * 2), len(vector)), dtype=np.float32)
            if self._matrix is not None:
                grown[:row] = self._matrix
            self._matrix = grown
        unit = np.asarray(vector, dtype=np.float32)
        self._matrix[row] = unit / np.linalg.norm(unit)
        self._documents.append(document)
        self._rows[document.id] = row
        for entry in document.filterable().items():
            self._index.setdefault(entry, set()).add(row)

    def _remove(self, document_id: str) -> None:
        row = self._rows.pop(document_id, None)
        if row is None or self._matrix is None:
            return
        self._unindex(self._documents[row], row)
        last = len(self._documents) - 1
        if row != last:
            # Move the last row into the hole so rows stay dense.
            moved = self._documents[last]
            self._unindex(moved, last)
            self._documents[row] = moved
            self._matrix[row] = self._matrix[last]
            self._rows[moved.id] = row
            for entry in moved.filterable().items():
                self._index.setdefault(entry, set()).add(row)
        self._documents.pop()

    def _unindex(self, document: VectorDocument, row: int) -> None:
        for entry in document.filterable().items():
            rows = self._index.get(entry)
            if rows is not None:
                rows.discard(row)
                if not rows:
                    del self._index[entry]

    def _matching_rows(self, condition: VectorFilter) -> list[int]:
        if not condition:
            return list(range(len(self._documents)))
        sets = [self._index.get(entry, set()) for entry in condition]
        smallest = min(sets, key=len)
        return sorted(smallest.intersection(*sets))

    def _search(
        self, query: list[float], top_k: int, threshold: float, condition: VectorFilter
    ) -> list[VectorDocument]:
        np = self._np
        if self._matrix is None or not self._documents:
            return []
        rows = np.asarray(self._matching_rows(condition), dtype=np.intp)
        if rows.size == 0:
            return []
        unit = np.asarray(query, dtype=np.float32)
        unit /= np.linalg.norm(unit)
        scores = (1.0 + self._matrix[rows] @ unit) / 2.0
        if rows.size > top_k:
            best = np.argpartition(-scores, top_k - 1)[:top_k]
        else:
            best = np.arange(rows.size)
        best = best[np.argsort(-scores[best], kind="stable")]
        results = []
        for i in best:
            score = float(min(max(scores[i], 0.0), 1.0))
            if score < threshold:
                break
            document = self._documents[int(rows[i])]
            results.append(document.model_copy(update={"score": score}))
        return results
