"""The public backend toolkit: its shared rules and the vector-store base."""

from __future__ import annotations

import ast
import asyncio
import importlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

import chatmem.backend as toolkit
from chatmem import ConfigurationError, UserMessage
from chatmem.backend import (
    AsyncBaseVectorStore,
    BaseVectorStore,
    VectorDocument,
    VectorFilter,
    check_clock,
    conversation_page,
    cosine_score,
    epoch_micros,
    unique_by_id,
    utc_now,
)
from chatmem.testing.vectors import AsyncHashingEmbeddingModel, HashingEmbeddingModel

ROOT = Path(__file__).resolve().parents[2]


def test_every_exported_name_exists_and_classes_and_functions_are_documented() -> None:
    for name in toolkit.__all__:
        obj = getattr(toolkit, name)
        if callable(obj) and getattr(obj, "__module__", "").startswith("chatmem"):
            assert obj.__doc__, name


def test_the_toolkit_names_are_the_ones_the_core_uses() -> None:
    # One object, not a copy: a backend and the core agree on what a StoredMessage is.
    records = importlib.import_module("chatmem.repository")
    assert toolkit.StoredMessage is records.StoredMessage
    assert toolkit.ConversationPage is records.ConversationPage


def test_unique_by_id_keeps_the_first_occurrence_in_order() -> None:
    a, b = UserMessage("a", id="1"), UserMessage("b", id="2")
    again = UserMessage("a again", id="1")
    assert unique_by_id([a, b, again]) == [a, b]
    assert unique_by_id([]) == []


@pytest.mark.parametrize(
    ("ids", "limit", "page", "cursor"),
    [
        (["a", "b", "c"], 2, ["a", "b"], "b"),
        (["a", "b"], 2, ["a", "b"], None),
        (["a"], 2, ["a"], None),
        ([], 2, [], None),
        (["a"], 0, [], None),
    ],
)
def test_conversation_page_uses_the_extra_id_only_to_tell_a_next_page_exists(
    ids: list[str], limit: int, page: list[str], cursor: str | None
) -> None:
    result = conversation_page(ids, limit)
    assert result.conversation_ids == page
    assert result.next_cursor == cursor


def test_check_clock_defaults_to_aware_utc_now_and_rejects_non_callables() -> None:
    assert check_clock(None) is utc_now
    assert utc_now().tzinfo is UTC
    clock = utc_now
    assert check_clock(clock) is clock
    with pytest.raises(ConfigurationError, match="clock"):
        check_clock("now")  # type: ignore[arg-type]


class _ListStore(BaseVectorStore):
    """The smallest store on the base: a list, searched exhaustively."""

    def __init__(self) -> None:
        super().__init__(HashingEmbeddingModel(dimensions=16))
        self.rows: list[tuple[VectorDocument, list[float]]] = []
        self.seen: list[tuple[list[float], int, float, VectorFilter]] = []

    def _ensure_ready(self) -> None:
        # As a store with a fixed-width column does: learn the vector length first.
        if self._dimensions is None:
            self._dimensions = self.embedding_model.dimensions()

    def add(self, documents: Sequence[VectorDocument]) -> list[str]:
        self._ensure_ready()
        vectors = toolkit.embed_documents(self.embedding_model, documents, self._dimensions)
        self.rows += list(zip(documents, vectors, strict=True))
        return [d.id for d in documents]

    def _search_by_vector(
        self, vector: list[float], top_k: int, score_threshold: float, where: VectorFilter
    ) -> list[VectorDocument]:
        self.seen.append((vector, top_k, score_threshold, where))
        scored = [
            d.model_copy(update={"score": cosine_score(vector, v)})
            for d, v in self.rows
            if where.matches(d.metadata)
        ]
        scored.sort(key=lambda d: -(d.score or 0.0))
        return [d for d in scored[:top_k] if (d.score or 0.0) >= score_threshold]

    def _delete(self, ids: list[str]) -> None:
        self.rows = [(d, v) for d, v in self.rows if d.id not in ids]

    def _delete_where(self, where: VectorFilter) -> int:
        kept = [(d, v) for d, v in self.rows if not where.matches(d.metadata)]
        deleted, self.rows = len(self.rows) - len(kept), kept
        return deleted

    def close(self) -> None:
        pass


def test_the_base_checks_embeds_and_passes_a_filter_value_to_the_store() -> None:
    store = _ListStore()
    store.add(
        [
            VectorDocument(text="I live in Paris", metadata={"owner": "ann"}),
            VectorDocument(text="I live in Rome", metadata={"owner": "bob"}),
        ]
    )
    found = store.similarity_search("I live in Paris", top_k=5, where={"owner": "ann"})
    assert [d.text for d in found] == ["I live in Paris"]
    vector, top_k, threshold, where = store.seen[-1]
    assert (len(vector), top_k, threshold, where) == (16, 5, 0.0, VectorFilter(owner="ann"))


def test_the_base_refuses_an_empty_delete_filter_and_skips_an_empty_id_list() -> None:
    store = _ListStore()
    store.add([VectorDocument(text="a", metadata={"owner": "ann"}, id="1")])
    with pytest.raises(ConfigurationError, match="non-empty"):
        store.delete_where({})
    store.delete([])
    assert store.delete_where({"owner": "bob"}) == 0
    assert store.delete_where(VectorFilter(owner="ann")) == 1
    assert store.rows == []


@pytest.mark.parametrize(
    "arguments",
    [{"top_k": 0}, {"top_k": 10_001}, {"score_threshold": 1.5}, {"where": "owner = 'ann'"}],
)
def test_both_searches_refuse_bad_arguments_before_the_store_sees_them(
    arguments: dict[str, object],
) -> None:
    store = _ListStore()
    with pytest.raises(ConfigurationError):
        store.similarity_search("x", **arguments)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        store.similarity_search_by_vector([1.0] * 16, **arguments)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="dimensions"):
        store.similarity_search_by_vector([1.0] * 3)
    assert store.seen == []


def test_an_async_store_refuses_a_sync_model() -> None:
    class Store(AsyncBaseVectorStore):
        async def _search_by_vector(
            self, vector: list[float], top_k: int, score_threshold: float, where: VectorFilter
        ) -> list[VectorDocument]:
            return []

        async def _delete(self, ids: list[str]) -> None:
            pass

        async def _delete_where(self, where: VectorFilter) -> int:
            return 0

    with pytest.raises(ConfigurationError, match="async"):
        Store(HashingEmbeddingModel(dimensions=8))  # type: ignore[arg-type]
    store = Store(AsyncHashingEmbeddingModel(dimensions=8))
    assert asyncio.run(store.similarity_search("x")) == []


def test_built_in_backends_tell_their_server_and_db_system() -> None:
    from chatmem.repository import AsyncServerInfo, ServerInfo
    from chatmem_repositories.cassandra import (
        AsyncCassandraChatMemoryRepository,
        CassandraChatMemoryRepository,
    )
    from chatmem_repositories.neo4j import AsyncNeo4jChatMemoryRepository, Neo4jChatMemoryRepository

    for sync_cls, async_cls, system in (
        (CassandraChatMemoryRepository, AsyncCassandraChatMemoryRepository, "cassandra"),
        (Neo4jChatMemoryRepository, AsyncNeo4jChatMemoryRepository, "neo4j"),
    ):
        assert sync_cls.db_system == async_cls.db_system == system
        # Protocols with attributes check instances, and an instance needs no connection.
        sync_repository = sync_cls.from_url(
            "cassandra://127.0.0.1:1/ks" if system == "cassandra" else "bolt://127.0.0.1:1"
        )
        async_repository = async_cls.from_url(
            "cassandra://127.0.0.1:1/ks" if system == "cassandra" else "bolt://127.0.0.1:1"
        )
        assert isinstance(sync_repository, ServerInfo)
        assert isinstance(async_repository, AsyncServerInfo)
        assert asyncio.iscoroutinefunction(async_cls.server_version)
        sync_repository.close()
        asyncio.run(async_repository.aclose())


def test_check_initialize_schema_takes_the_words() -> None:
    from chatmem.backend import check_initialize_schema

    assert check_initialize_schema("always") is True
    assert check_initialize_schema("never") is False
    with pytest.raises(ConfigurationError, match="'always' or 'never'"):
        check_initialize_schema("embedded")


def _private_chatmem_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            # chatmem's own private modules (chatmem._records, chatmem._async...) and the
            # toolkit's (chatmem.backend._rules...), which the import contract keeps inside.
            private = [part.startswith("_") for part in parts[1:3]]
            toolkit = parts[1:2] == ["backend"]
            if parts[0] == "chatmem" and (private[:1] == [True] or (toolkit and any(private))):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    return found


def test_tests_benchmarks_and_scripts_import_only_public_chatmem_modules() -> None:
    # The import contract in pyproject.toml covers the packages; this covers the rest, which
    # use chatmem as an application or a third-party backend would.
    paths = [
        p for folder in ("tests", "benchmarks", "scripts") for p in (ROOT / folder).rglob("*.py")
    ]
    offenders = [line for path in sorted(paths) for line in _private_chatmem_imports(path)]
    assert offenders == []


def test_the_built_in_vector_stores_implement_only_the_hooks_of_the_base() -> None:
    from chatmem.vector_store import AsyncInMemoryVectorStore, InMemoryVectorStore
    from chatmem_repositories.cassandra import AsyncCassandraVectorStore, CassandraVectorStore
    from chatmem_repositories.neo4j import AsyncNeo4jVectorStore, Neo4jVectorStore

    owned_by_base = {"similarity_search", "similarity_search_by_vector", "delete", "delete_where"}
    for base, stores in (
        (BaseVectorStore, (InMemoryVectorStore, CassandraVectorStore, Neo4jVectorStore)),
        (
            AsyncBaseVectorStore,
            (AsyncInMemoryVectorStore, AsyncCassandraVectorStore, AsyncNeo4jVectorStore),
        ),
    ):
        for store in stores:
            assert issubclass(store, base)
            assert not owned_by_base & set(vars(store)), store.__name__


def test_epoch_micros_is_exact_and_takes_naive_datetimes_as_utc() -> None:
    assert epoch_micros(datetime(1970, 1, 1, tzinfo=UTC)) == 0
    assert epoch_micros(datetime(1970, 1, 1, 0, 0, 1, 5)) == 1_000_005
    assert epoch_micros(datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)) == -1
    plus_two = timezone(timedelta(hours=2))
    assert epoch_micros(datetime(1970, 1, 1, 2, tzinfo=plus_two)) == 0
    late = datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
    assert epoch_micros(late) == 253_402_300_799_999_999
