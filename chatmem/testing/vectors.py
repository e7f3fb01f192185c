"""Test helpers for vector stores: the conformance suite and a deterministic embedding model.

Third-party vector stores run the same suite as the built-in ones::

    from chatmem.testing.vectors import VectorStoreConformance

    class TestMyStore(VectorStoreConformance):
        @pytest.fixture
        def vector_store_factory(self):
            return lambda embedding_model: MyVectorStore(embedding_model, url)

:class:`HashingEmbeddingModel` needs no model or server: similarity follows shared words.
"""

from chatmem.testing._async.hashing_embedding import AsyncHashingEmbeddingModel
from chatmem.testing._async.vector_conformance import AsyncVectorStoreConformance
from chatmem.testing._hashing import DEFAULT_HASHING_DIMENSIONS, hashing_embedding
from chatmem.testing._sync.hashing_embedding import HashingEmbeddingModel
from chatmem.testing._sync.vector_conformance import VectorStoreConformance

__all__ = [
    "DEFAULT_HASHING_DIMENSIONS",
    "AsyncHashingEmbeddingModel",
    "AsyncVectorStoreConformance",
    "HashingEmbeddingModel",
    "VectorStoreConformance",
    "hashing_embedding",
]
