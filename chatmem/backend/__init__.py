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
- **Twins**: :class:`AsyncLock`/:class:`Lock`,
  :class:`AsyncSemaphore`/:class:`Semaphore`, :func:`async_sleep`/:func:`sleep`,
  :func:`async_run_all`/:func:`run_all`, and :class:`AsyncTwin`/:class:`Twin`, whose
  ``IS_ASYNC`` tells code shared by both twins which one it runs in (``True`` in the async
  twin). Write the async source with the ``async_``/``Async`` names;
  ``scripts/unasync.py`` turns them into their sync twins. :func:`run_in_order` is a
  bounded, ordered thread pool for sync work.
- **URLs and secrets**: :func:`redact_url`, :func:`scrub`, :func:`url_secrets`,
  :func:`is_secret_option` and :data:`MASK`, so no credential reaches a repr, an error
  or a log line.
- **URL options**: :func:`parse_url_options` applies the URL option rule (below) and returns
  a :class:`ParsedUrl`; :func:`split_url` splits a URL, host lists included;
  :func:`split_query` takes chosen options out of a URL; :func:`did_you_mean` suggests a
  known name;
  :data:`Duration`, :data:`InitializeSchema` and :data:`DRIVER_OPTIONS` are the shared option
  types and the driver-arguments keyword.
- **Vector stores**: :class:`AsyncBaseVectorStore`/:class:`BaseVectorStore` (a store
  implements only the search by vector), :class:`VectorDocument`, :class:`VectorFilter`,
  :data:`MetadataValue`, :func:`as_filter`, :func:`check_identifier`,
  :func:`check_search`, :func:`check_vector`, :func:`cosine_score`, :func:`normalize`,
  :func:`documents_from_rows`,
  and the embedding helpers :func:`async_embed_documents`/:func:`embed_documents` and
  :func:`async_embed_query`/:func:`embed_query`.

The URL option rule, the same for every backend: each query parameter of a repository URL,
and each keyword option, is one of chatmem's options for the backend (its frozen pydantic
model, ``extra="forbid"``) or one of the driver parameters the backend declares it passes
through; anything else is a :class:`~chatmem.ConfigurationError` naming it, with the
closest name from both lists. Other driver arguments go in ``driver_options={...}``. What
stays in each backend is its own options model and driver parameters (its ``_options.py``).

The options that prefix a backend's names keep the noun of the store, and so their defaults
differ; changing one would move existing data, so each stays:

| backend | prefix option | default | why |
| --- | --- | --- | --- |
| SQL | ``table_prefix`` | ``"chatmem_"`` | prefixes table names |
| Cassandra | ``table_prefix`` | ``"chatmem_"`` | prefixes table names |
| MongoDB | ``collection_prefix`` | ``"chatmem_"`` | prefixes collection names |
| Redis | ``key_prefix`` | ``"chatmem"`` | keys put ``:`` after it |
| Neo4j | ``label_prefix`` | ``""`` | labels read ``Conversation``, ``Message`` |

``initialize_schema`` (:data:`InitializeSchema`) defaults to ``"always"`` where a backend
has a schema to make (Cassandra, MongoDB, Neo4j). SQL's default is ``"embedded"``: it makes
the tables of an embedded database (SQLite, a file the application owns) but not of a
server's, where schema changes are the operator's. Redis has no schema and no such option.

Example:
    ```python
    from chatmem.backend import StoredMessage, check_limit, conversation_page, unique_by_id

    check_limit(10)
    page = conversation_page(["a", "b", "c"], limit=2)
    assert page.conversation_ids == ["a", "b"] and page.next_cursor == "b"
    ```

    A backend's options, parsed from a URL and keywords:

    ```python
    from datetime import timedelta

    from pydantic import BaseModel, ConfigDict

    from chatmem.backend import Duration, InitializeSchema, parse_url_options


    class StoreOptions(BaseModel):
        model_config = ConfigDict(frozen=True, extra="forbid")
        ttl: Duration | None = None
        initialize_schema: InitializeSchema = "always"
        read_timeout: Duration = timedelta(seconds=5)


    parsed = parse_url_options(
        StoreOptions,
        "store://db.example/chat?ttl=3600&tls=true",
        {"driver_options": {"pool_size": 4}},
        backend="store",
        driver_parameters=("tls",),
    )
    assert parsed.url == "store://db.example/chat?tls=true"  # for the driver
    assert parsed.options.ttl == timedelta(hours=1)
    assert parsed.driver_options == {"pool_size": 4}
    ```
"""

from __future__ import annotations

from chatmem._async.vector_store import (
    AsyncBaseVectorStore,
    async_embed_documents,
    async_embed_query,
)
from chatmem._concurrency import run_in_order
from chatmem._records import ConversationPage, Position, StoredMessage
from chatmem._sync.vector_store import BaseVectorStore, embed_documents, embed_query
from chatmem._twins import (
    AsyncLock,
    AsyncSemaphore,
    AsyncTwin,
    Lock,
    Semaphore,
    Twin,
    async_run_all,
    async_sleep,
    check_flavor,
    run_all,
    sleep,
)
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
from chatmem.backend._rules import (
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
from chatmem.backend._url_options import (
    DRIVER_OPTIONS,
    Duration,
    InitializeSchema,
    ParsedUrl,
    did_you_mean,
    parse_url_options,
    split_query,
    split_url,
)

__all__ = [
    "DRIVER_OPTIONS",
    "MASK",
    "MAX_LIMIT",
    "AsyncBaseVectorStore",
    "AsyncLock",
    "AsyncSemaphore",
    "AsyncTwin",
    "BaseVectorStore",
    "Clock",
    "ConversationPage",
    "Duration",
    "InitializeSchema",
    "Lock",
    "MetadataValue",
    "ParsedUrl",
    "Position",
    "Semaphore",
    "StoredMessage",
    "Twin",
    "VectorDocument",
    "VectorFilter",
    "as_filter",
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
    "did_you_mean",
    "documents_from_rows",
    "embed_documents",
    "embed_query",
    "epoch_micros",
    "escape_like",
    "is_secret_option",
    "matches_history_filters",
    "normalize",
    "normalize_ttl",
    "parse_url_options",
    "redact_url",
    "run_all",
    "run_in_order",
    "scrub",
    "sleep",
    "split_query",
    "split_url",
    "unique_by_id",
    "url_secrets",
    "utc_now",
]
