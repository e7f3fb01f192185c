"""The embedding-model contract: texts in, vectors out, in batches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = ["AsyncEmbeddingModel"]


@runtime_checkable
class AsyncEmbeddingModel(Protocol):
    """Turns texts into vectors. Vector stores use one to embed documents and queries.

    Implementations embed a whole batch per call (one request to a remote model) and return
    one vector per text, in order, all of the same length.
    """

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed a batch of texts.

        Args:
            texts: The texts; an empty sequence gives an empty list without a request.

        Returns:
            One vector per text, in order.
        """
        ...

    async def dimensions(self) -> int:
        """Return the length of the vectors this model produces.

        Models that do not know it in advance embed a short probe text once and remember.
        """
        ...
