"""The hashing embedding model: deterministic vectors for tests, no server needed."""

from __future__ import annotations

from collections.abc import Sequence

from chatmem.exceptions import ConfigurationError
from chatmem.testing._hashing import DEFAULT_HASHING_DIMENSIONS, hashing_embedding

__all__ = ["AsyncHashingEmbeddingModel"]


class AsyncHashingEmbeddingModel:
    """Embeds texts by hashing their words: similarity follows shared words.

    Example:
        ```python
        model = AsyncHashingEmbeddingModel()
        vectors = await model.embed(["my favourite colour is teal", "favourite colour?"])
        await model.dimensions()  # 256
        ```

    Args:
        dimensions: Vector length.

    Raises:
        ConfigurationError: If ``dimensions`` is less than 2.
    """

    def __init__(self, dimensions: int = DEFAULT_HASHING_DIMENSIONS) -> None:
        if not isinstance(dimensions, int) or dimensions < 2:
            raise ConfigurationError(f"dimensions must be at least 2, got {dimensions!r}")
        self._dimensions = dimensions
        self.calls = 0
        """How many batches were embedded (to assert batching in tests)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dimensions={self._dimensions})"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed a batch of texts.

        Args:
            texts: The texts.
        """
        if not texts:
            return []
        self.calls += 1
        return [hashing_embedding(text, self._dimensions) for text in texts]

    async def dimensions(self) -> int:
        """Return the vector length."""
        return self._dimensions
