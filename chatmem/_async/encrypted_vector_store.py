"""A vector store that encrypts the documents it stores, with their conversations' keys."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from chatmem._async.embedding import AsyncEmbeddingModel
from chatmem._async.encrypted import AsyncEncryptedLog
from chatmem._async.vector_store import AsyncVectorStore, Where, async_embed_documents
from chatmem._sealing import DataKey
from chatmem._twins import AsyncTwin, check_flavor
from chatmem._vector_sealing import open_document, seal_document, sealed_document_key_id
from chatmem._vector_types import VectorDocument, VectorFilter, as_filter, check_identifier
from chatmem.exceptions import ConfigurationError, MessageDecodeError

__all__ = ["AsyncEncryptedVectorStore"]

# Kept in clear besides the key field: the owner, which the vector memory advisor filters on
# and which a scoped conversation id (the key field) shows anyway.
_ALWAYS_CLEAR = frozenset({"owner"})


class AsyncEncryptedVectorStore:
    """Wraps a vector store so that document text and metadata are encrypted at rest.

    Each document is sealed (AES-256-GCM) with the data key of the conversation it belongs
    to, named by its metadata field ``key_field`` (``conversation_id``, as the vector
    memory advisor writes it). The keys are those of an :class:`AsyncEncryptedLog`, stored
    in the conversations themselves: deleting a conversation from that log makes its
    documents unreadable (crypto-shredding), even where the vector store still holds them.

    What stays in clear, because the store needs it:

    - **Embeddings.** A similarity search compares them, so they are stored as computed.
      An embedding is not the text, but it carries its meaning: whoever can read the store
      and query an embedding model can tell which documents are about what. Encryption
      protects the text and metadata, not the topics.
    - **Ids.**
    - **Filtered metadata.** The store evaluates ``where=`` and :meth:`delete_where`, so the
      fields filters use are stored in clear: the key field, ``owner`` and the fields named
      in ``clear_metadata``. Every other field is sealed, and a filter on one is refused
      (the store could only match nothing).

    A sealed document is bound to its id, its conversation and its clear metadata: a stored
    document copied over another, or given another conversation or owner, does not open
    (:class:`~chatmem.exceptions.MessageDecodeError`). A document stored in clear (before
    encryption was turned on) is returned as it is. A search result whose conversation was
    deleted is left out of the results, so a search may return fewer than ``top_k``
    documents until the leftovers are deleted (``delete_where`` on the conversation).

    Example:
        ```python
        keys = StaticKeyProvider.from_text(f"k1:{generate_key()}")
        log = AsyncEncryptedLog(AsyncInMemoryChatMemoryRepository(), keys)
        store = AsyncEncryptedVectorStore(AsyncInMemoryVectorStore(embedding_model), log)
        await store.add([VectorDocument(text="I live in Paris", metadata={"conversation_id": "7"})])
        await store.similarity_search("Where do I live?", where={"conversation_id": "7"})
        await log.delete_by_conversation_id("7")  # its documents no longer open
        ```

    Args:
        store: The vector store that keeps the sealed documents; closing this closes it.
        log: The encrypted log whose conversations hold the data keys (not closed by this).
        key_field: The metadata field naming a document's conversation; every document
            must have it, as a string.
        clear_metadata: More metadata fields to keep in clear, so that filters can use them.
        embedding_model: Embeds documents before they are sealed; by default the store's
            ``embedding_model``. It must be the model the store embeds queries with.

    Raises:
        ConfigurationError: A collaborator of the other flavor (async for a sync store), a
            field name that is not an identifier, or no embedding model.
    """

    def __init__(
        self,
        store: AsyncVectorStore,
        log: AsyncEncryptedLog,
        *,
        key_field: str = "conversation_id",
        clear_metadata: Collection[str] = (),
        embedding_model: AsyncEmbeddingModel | None = None,
    ) -> None:
        check_flavor(store, "add", is_async=AsyncTwin.IS_ASYNC, role="vector store")
        if not isinstance(log, AsyncEncryptedLog):
            raise ConfigurationError(
                f"log must be an AsyncEncryptedLog, which holds the data keys; "
                f"got {type(log).__name__}"
            )
        model = embedding_model
        if model is None:
            model = getattr(store, "embedding_model", None)
        if model is None:
            raise ConfigurationError(
                f"{type(store).__name__} has no embedding_model: pass the model it embeds "
                "queries with as embedding_model="
            )
        check_flavor(model, "embed", is_async=AsyncTwin.IS_ASYNC, role="embedding model")
        self.store = store
        """The vector store underneath, which holds sealed documents."""
        self.log = log
        """The encrypted log whose conversations hold the data keys."""
        self.embedding_model: AsyncEmbeddingModel = model
        """The model that embeds documents before they are sealed."""
        self.key_field = check_identifier(key_field, "key_field")
        """The metadata field naming a document's conversation."""
        extra = {check_identifier(f, "a clear_metadata field") for f in clear_metadata}
        self.clear_fields: frozenset[str] = frozenset({key_field, *_ALWAYS_CLEAR, *extra})
        """The metadata fields stored in clear, which filters may use."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.store!r}, key_field={self.key_field!r})"

    # -- writes -----------------------------------------------------------------------------

    async def add(self, documents: Sequence[VectorDocument]) -> list[str]:
        """Embed (where needed), seal and store documents; a stored id is replaced.

        Embeddings are computed from the clear text, before sealing, and stored in clear.

        Args:
            documents: The documents; each names its conversation in ``key_field``.

        Returns:
            The ids, in order.

        Raises:
            ConfigurationError: A document has no ``key_field`` string.
        """
        documents = list(documents)
        if not documents:
            return []
        scopes = [self._scope(d) for d in documents]
        keys: dict[str, DataKey] = {}
        for scope in scopes:
            if scope not in keys:
                keys[scope] = await self.log.sealing_key(scope)
        vectors = await async_embed_documents(self.embedding_model, documents, None)
        sealed = [
            seal_document(document, vector, scope, keys[scope], self.clear_fields)
            for document, vector, scope in zip(documents, vectors, scopes, strict=True)
        ]
        return await self.store.add(sealed)

    async def delete(self, ids: Sequence[str]) -> None:
        """Delete documents by id; unknown ids are not an error.

        Args:
            ids: The ids.
        """
        await self.store.delete(ids)

    async def delete_where(self, where: Where) -> int:
        """Delete every document whose clear metadata matches a non-empty filter.

        Args:
            where: The filter, on clear fields only.

        Returns:
            How many documents were deleted.

        Raises:
            ConfigurationError: The filter is empty, not structured, or names a sealed field.
        """
        return await self.store.delete_where(self._clear_filter(where))

    # -- searches ---------------------------------------------------------------------------

    async def similarity_search(
        self,
        query: str,
        *,
        top_k: int = 4,
        score_threshold: float = 0.0,
        where: Where = None,
    ) -> list[VectorDocument]:
        """Return the documents most similar to ``query``, opened, best first.

        Args:
            query: The text to embed and compare (it is not stored).
            top_k: How many documents at most.
            score_threshold: Lowest score returned.
            where: Only documents whose clear metadata matches.

        Raises:
            ConfigurationError: For an out-of-range argument or a filter on a sealed field.
            MessageDecodeError: A result does not open (altered or moved).
            KeyUnavailableError: A result's data key is wrapped only by keys not held.
        """
        found = await self.store.similarity_search(
            query, top_k=top_k, score_threshold=score_threshold, where=self._clear_filter(where)
        )
        return await self._open_all(found)

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
            where: Only documents whose clear metadata matches.

        Raises:
            ConfigurationError: For an out-of-range argument or a filter on a sealed field.
            MessageDecodeError: A result does not open (altered or moved).
            KeyUnavailableError: A result's data key is wrapped only by keys not held.
        """
        found = await self.store.similarity_search_by_vector(
            vector, top_k=top_k, score_threshold=score_threshold, where=self._clear_filter(where)
        )
        return await self._open_all(found)

    # -- lifecycle --------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the store underneath (not the log, which the caller keeps using)."""
        await self.store.aclose()

    # -- internals --------------------------------------------------------------------------

    def _scope(self, document: VectorDocument) -> str:
        scope = document.metadata.get(self.key_field)
        if not isinstance(scope, str) or not scope:
            raise ConfigurationError(
                f"vector document {document.id!r} has no {self.key_field!r} metadata: an "
                "encrypted vector store seals each document with its conversation's key, "
                f"named by {self.key_field!r}"
            )
        return scope

    def _clear_filter(self, where: Where) -> VectorFilter:
        condition = as_filter(where)
        sealed = sorted({key for key, _ in condition} - self.clear_fields)
        if sealed:
            raise ConfigurationError(
                f"cannot filter on {', '.join(map(repr, sealed))}: the encrypted vector store "
                "seals those metadata fields, so the store cannot match them; keep a field in "
                f"clear with clear_metadata= (in clear now: {sorted(self.clear_fields)})"
            )
        return condition

    async def _open_all(self, found: Sequence[VectorDocument]) -> list[VectorDocument]:
        ciphers: dict[tuple[str, str], AESGCM | None] = {}
        opened = []
        for document in found:
            data_key_id = sealed_document_key_id(document)
            if data_key_id is None:
                opened.append(document)  # stored in clear, before encryption was turned on
                continue
            scope = document.metadata.get(self.key_field)
            if not isinstance(scope, str):
                raise MessageDecodeError(
                    f"sealed vector document {document.id!r} names no conversation in "
                    f"{self.key_field!r}"
                )
            if (scope, data_key_id) not in ciphers:
                ciphers[scope, data_key_id] = await self.log.opening_cipher(scope, data_key_id)
            cipher = ciphers[scope, data_key_id]
            if cipher is None:
                # The conversation was deleted, its data keys with it: the document is
                # shredded, as the conversation's messages are. Leaving it out, rather than
                # failing, keeps searches working while the store still holds leftovers
                # (the vector store is not deleted with the log).
                continue
            opened.append(open_document(document, scope, cipher))
        return opened
