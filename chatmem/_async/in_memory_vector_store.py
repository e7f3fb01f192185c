"""The in-memory vector store: numpy, exact cosine, an inverted index for filters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from chatmem._async.embedding import AsyncEmbeddingModel
from chatmem._async.vector_store import AsyncBaseVectorStore, async_embed_documents
from chatmem._twins import AsyncLock
from chatmem._vector_types import VectorDocument, VectorFilter
from chatmem.exceptions import ConfigurationError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["AsyncInMemoryVectorStore"]


def _numpy() -> Any:
    try:
        import numpy
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigurationError(
            'the in-memory vector store needs numpy: pip install "chatmem[vectors]"'
        ) from exc
    return numpy


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
