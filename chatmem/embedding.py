"""Embedding models: the contract vector stores use to turn texts into vectors.

Implement :class:`EmbeddingModel` (or :class:`AsyncEmbeddingModel`) to plug in any model:
two methods, ``embed(texts)`` for a batch and ``dimensions()``. The OpenAI-compatible
model is ``chatmem.openai.OpenAIEmbeddingModel`` (needs ``chatmem[openai]``); tests use
``chatmem.testing.vectors.HashingEmbeddingModel``.
"""

from __future__ import annotations

from chatmem._async.embedding import AsyncEmbeddingModel
from chatmem._sync.embedding import EmbeddingModel

__all__ = ["AsyncEmbeddingModel", "EmbeddingModel"]
