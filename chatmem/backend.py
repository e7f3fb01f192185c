"""The backend toolkit: everything a chat-memory repository or vector store is built from.

The built-in backends in ``chatmem_repositories`` import these names from here and nowhere
else in ``chatmem``'s private modules, so a third-party backend (registered through the
``chatmem.repositories`` entry point) is written with exactly the same parts. See
*Writing a backend* in the documentation for the file layout and option names every backend
follows.

What is here, by concern:

- **Records**: :class:`StoredMessage`, :class:`ConversationPage` and :data:`Position`, what
  the log methods return.
- **Argument checks**: :func:`check_limit` (page sizes up to :data:`MAX_LIMIT`),
  :func:`normalize_ttl`, :func:`check_flavor` (an async collaborator for an async class),
  :func:`check_clock`, :func:`check_initialize_schema`.
- **Shared rules**: :func:`unique_by_id` (a batch stores an id once),
  :func:`conversation_page` (the tail of ``list_conversations``),
  :func:`matches_history_filters` (``find_history``'s filters on one message),
  :func:`escape_like` (literal ``LIKE`` patterns).
- **Time**: :data:`Clock`, :func:`utc_now`, :func:`epoch_micros` (a datetime as integer
  microseconds since the epoch).
- **Concurrency twins**: :class:`AsyncLock`/:class:`Lock`,
  :class:`AsyncSemaphore`/:class:`Semaphore`, :func:`async_sleep`/:func:`sleep`,
  :func:`async_run_all`/:func:`run_all`, :func:`run_in_order` (a bounded, ordered thread
  pool), and :data:`async_api`/:data:`api`, which tell
  code shared by both twins which one it runs in. Write the async source with the
  ``async_``/``Async`` names; ``scripts/unasync.py`` turns them into their sync twins.
- **URLs**: :func:`redact_url`, :func:`scrub`, :func:`url_secrets`,
  :func:`is_secret_option` and :data:`MASK`, so no credential reaches a repr, an error
  or a log line. (Parsing a backend's URL options is ``chatmem_repositories``' job.)
- **Vector stores**: :class:`AsyncBaseVectorStore`/:class:`BaseVectorStore` (a store
  implements only the search by vector), :class:`VectorDocument`, :class:`VectorFilter`,
  :data:`MetadataValue`, :func:`as_filter`, :func:`check_identifier`,
  :func:`check_search`, :func:`check_vector`, :func:`cosine_score`, :func:`normalize`,
  :func:`documents_from_rows`,
  and the embedding helpers :func:`async_embed_documents`/:func:`embed_documents` and
  :func:`async_embed_query`/:func:`embed_query`.

Example:
    ```python
    from chatmem.backend import StoredMessage, check_limit, conversation_page, unique_by_id

    check_limit(10)
    page = conversation_page(["a", "b", "c"], limit=2)
    assert page.conversation_ids == ["a", "b"] and page.next_cursor == "b"
    ```
"""

from __future__ import annotations

from chatmem._async.vector_store import (
    AsyncBaseVectorStore,
    async_embed_documents,
    async_embed_query,
)
from chatmem._concurrency import (
    AsyncLock,
    AsyncSemaphore,
    Lock,
    Semaphore,
    api,
    async_api,
    async_run_all,
    async_sleep,
    run_all,
    run_in_order,
    sleep,
)
from chatmem._flavor import check_flavor
from chatmem._records import ConversationPage, Position, StoredMessage
from chatmem._repository_support import (
    MAX_LIMIT,
    Clock,
    check_clock,
    check_initialize_schema,
    check_limit,
    conversation_page,
    epoch_micros,
    escape_like,
    matches_history_filters,
    normalize_ttl,
    unique_by_id,
    utc_now,
)
from chatmem._sync.vector_store import BaseVectorStore, embed_documents, embed_query
from chatmem._urls import MASK, is_secret_option, redact_url, scrub, url_secrets
from chatmem._vector_types import (
    MetadataValue,
    VectorDocument,
    VectorFilter,
    as_filter,
    check_identifier,
    check_search,
    check_vector,
    cosine_score,
    documents_from_rows,
    normalize,
)

__all__ = [
    "MASK",
    "MAX_LIMIT",
    "AsyncBaseVectorStore",
    "AsyncLock",
    "AsyncSemaphore",
    "BaseVectorStore",
    "Clock",
    "ConversationPage",
    "Lock",
    "MetadataValue",
    "Position",
    "Semaphore",
    "StoredMessage",
    "VectorDocument",
    "VectorFilter",
    "api",
    "as_filter",
    "async_api",
    "async_embed_documents",
    "async_embed_query",
    "async_run_all",
    "async_sleep",
    "check_clock",
    "check_flavor",
    "check_identifier",
    "check_initialize_schema",
    "check_limit",
    "check_search",
    "check_vector",
    "conversation_page",
    "cosine_score",
    "documents_from_rows",
    "embed_documents",
    "embed_query",
    "epoch_micros",
    "escape_like",
    "is_secret_option",
    "matches_history_filters",
    "normalize",
    "normalize_ttl",
    "redact_url",
    "run_all",
    "run_in_order",
    "scrub",
    "sleep",
    "unique_by_id",
    "url_secrets",
    "utc_now",
]
