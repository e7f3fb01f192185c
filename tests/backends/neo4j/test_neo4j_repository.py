"""Neo4j-specific behaviour: query plans, options, driver ownership, label prefixes."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from neo4j import GraphDatabase

from chatmem.backend import run_all
from chatmem.exceptions import ConfigurationError, VersionConflictError
from chatmem.messages import (
    AssistantMessage,
    EventMessage,
    SystemMessage,
    UserMessage,
    searchable_text,
)
from chatmem.testing.vectors import HashingEmbeddingModel
from chatmem_repositories import create_async_repository, create_repository
from chatmem_repositories.neo4j import (
    AsyncNeo4jChatMemoryRepository,
    Neo4jChatMemoryRepository,
    Neo4jVectorStore,
)
from chatmem_repositories.neo4j._codec import NO_POSITION
from chatmem_repositories.neo4j._cypher import Statements
from chatmem_repositories.neo4j._options import parse_url
from tests.support.servers import server_url

pytestmark = pytest.mark.backend("neo4j")

_SCANS = {"NodeByLabelScan", "AllNodesScan", "Sort", "Top", "PartialSort", "PartialTop"}


@pytest.fixture
def repository() -> Iterator[Neo4jChatMemoryRepository]:
    with Neo4jChatMemoryRepository.from_url(server_url("neo4j")) as repository:
        yield repository


@pytest.fixture
def cid(repository: Neo4jChatMemoryRepository) -> Iterator[str]:
    conversation_id = f"neo4j-test-{uuid.uuid4()}"
    yield conversation_id
    repository.delete_by_conversation_id(conversation_id)


def _operators(plan: Any) -> list[tuple[str, str]]:
    found = [(plan["operatorType"].split("@")[0], str(plan.get("args", {}).get("Details", "")))]
    for child in plan.get("children", []):
        found += _operators(child)
    return found


def _plan(repository: Neo4jChatMemoryRepository, query: str, **params: Any) -> list[str]:
    # Auto-commit, as the repository runs them (some statements use IN TRANSACTIONS).
    with repository._driver.session() as session:
        summary = session.run("EXPLAIN " + query, params).consume()
    operators = _operators(summary.plan)
    return [f"{name} {details}" for name, details in operators]


# -- query plans ----------------------------------------------------------------------------


_WINDOW_INDEX = "Message(conversation_id, generation, is_system, position)"


@pytest.mark.parametrize("statement", ["window", "window_with_system"])
def test_window_read_is_an_ordered_index_seek(
    repository: Neo4jChatMemoryRepository, cid: str, statement: str
) -> None:
    repository.append(cid, [SystemMessage("s")] + [UserMessage(f"m{i}") for i in range(50)])
    plan = _plan(
        repository,
        getattr(repository._statements, statement),
        cid=cid,
        is_system=False,
        before=NO_POSITION,
        limit=20,
    )
    names = {line.split(" ")[0] for line in plan}
    assert not names & _SCANS, plan  # no label scan, and no sort: the index gives the order
    seeks = [line for line in plan if line.startswith("NodeIndexSeek")]
    assert seeks, plan
    assert all(_WINDOW_INDEX in s for s in seeks), plan
    assert any(line.startswith("Limit") for line in plan), plan


@pytest.mark.parametrize(
    ("statement", "index", "params"),
    [
        (
            "latest_of_type",
            "Message(conversation_id, generation, type, position)",
            {"type": "user"},
        ),
        (
            "history",
            "Message(conversation_id, generation, position)",
            {"after": 0, "since": None, "until": None, "types": None, "needle": None, "limit": 5},
        ),
        ("count", "Message(conversation_id, generation, position)", {"after": 0}),
        ("delete_before", _WINDOW_INDEX, {"position": 3}),
        ("delete_between", _WINDOW_INDEX, {"after": 2, "through": 5}),
        ("sweep", "Message(conversation_id, generation, position)", {}),
    ],
)
def test_bounded_reads_use_their_index(
    repository: Neo4jChatMemoryRepository,
    cid: str,
    statement: str,
    index: str,
    params: dict[str, Any],
) -> None:
    repository.append(cid, [UserMessage(f"m{i}") for i in range(10)])
    plan = _plan(repository, getattr(repository._statements, statement), cid=cid, **params)
    assert not {line.split(" ")[0] for line in plan} & _SCANS, plan
    assert any(index in line for line in plan), plan


@pytest.mark.parametrize("owner", [None, "someone"])
def test_listing_pages_through_an_index(
    repository: Neo4jChatMemoryRepository, owner: str | None
) -> None:
    statements = repository._statements
    query = statements.list_all if owner is None else statements.list_owner
    plan = _plan(repository, query, owner=owner, cursor="", limit=10)
    assert not {line.split(" ")[0] for line in plan} & _SCANS, plan
    assert any("Conversation(" in line and "Seek" in line for line in plan), plan


@pytest.mark.parametrize(
    ("statement", "expected"),
    [("append", None), ("append_first_checked", 0), ("append_checked", 1)],
)
def test_appends_do_not_scan_other_conversations(
    repository: Neo4jChatMemoryRepository, cid: str, statement: str, expected: int | None
) -> None:
    repository.append(cid, [UserMessage("first")])
    params = {
        **repository._append_params(cid, [UserMessage("second")]),
        "now": None,
        "expected": expected,
    }
    query = getattr(repository._statements, statement)
    summary = repository._driver.execute_query("PROFILE " + query, params)
    names = [name for name, _ in _operators(summary.summary.profile)]
    assert "NodeByLabelScan" not in names
    assert "AllNodesScan" not in names


# -- what is stored -------------------------------------------------------------------------


def test_graph_shape(repository: Neo4jChatMemoryRepository, cid: str) -> None:
    repository.append(cid, [SystemMessage("s"), UserMessage("Hello"), AssistantMessage("Hi")])
    records = repository._driver.execute_query(
        "MATCH (c:Conversation {id: $cid})-[:HAS_MESSAGE]->(m:Message) "
        "RETURN c.next_position AS next, m.position AS position, m.type AS type, "
        "m.is_system AS is_system, m.search_text AS search ORDER BY m.position",
        cid=cid,
    ).records
    assert [(r["position"], r["type"], r["is_system"]) for r in records] == [
        (1, "system", True),
        (2, "user", False),
        (3, "assistant", False),
    ]
    assert records[0]["next"] == 4
    assert records[1]["search"] == "hello"


def test_an_event_is_a_message_node_without_is_system(
    repository: Neo4jChatMemoryRepository, cid: str
) -> None:
    event = EventMessage("acme.audit", {"k": "Value"})
    repository.append(cid, [UserMessage("u"), event])
    records = repository._driver.execute_query(
        "MATCH (c:Conversation {id: $cid})-[:HAS_MESSAGE]->(m:Message) "
        "RETURN m.position AS position, m.type AS type, keys(m) AS keys, "
        "m.search_text AS search ORDER BY m.position",
        cid=cid,
    ).records
    assert [(r["position"], r["type"], "is_system" in r["keys"]) for r in records] == [
        (1, "user", True),
        (2, "event", False),
    ]
    assert records[1]["search"] == searchable_text(event).casefold()


# -- version-checked appends ----------------------------------------------------------------


def _conversation_node(repository: Neo4jChatMemoryRepository, cid: str) -> dict[str, Any] | None:
    records = repository._driver.execute_query(
        "MATCH (c:Conversation {id: $cid}) RETURN properties(c) AS props", cid=cid
    ).records
    return dict(records[0]["props"]) if records else None


def test_a_refused_append_leaves_the_conversation_node_as_it_was(cid: str) -> None:
    with Neo4jChatMemoryRepository.from_url(server_url("neo4j"), ttl=3600) as repository:
        try:
            repository.append(cid, [UserMessage("q")])
            before = _conversation_node(repository, cid)
            for expected in (0, 5):
                with pytest.raises(VersionConflictError):
                    repository.append(cid, [UserMessage("late")], expected_version=expected)
            assert _conversation_node(repository, cid) == before
        finally:
            repository.delete_by_conversation_id(cid)


def test_a_refused_append_creates_no_conversation(
    repository: Neo4jChatMemoryRepository, cid: str
) -> None:
    with pytest.raises(VersionConflictError) as raised:
        repository.append(cid, [UserMessage("q")], expected_version=3)
    assert raised.value.actual_version == 0
    assert _conversation_node(repository, cid) is None
    assert repository.find_conversation_ids().count(cid) == 0


def test_a_checked_append_run_again_after_it_committed_is_reported_won(
    repository: Neo4jChatMemoryRepository, cid: str
) -> None:
    # A retry after a connection lost past the commit runs the same statement again.
    first = repository.append(cid, [UserMessage("q")])
    version = repository.find_version(cid)
    batch = [AssistantMessage("a"), UserMessage("q2")]
    params = {
        **repository._append_params(cid, batch),
        "expected": version,
        "now": None,
    }
    won = repository._driver.execute_query(repository._statements.append_checked, params)
    again = repository._driver.execute_query(repository._statements.append_checked, params)
    stored = [[m.id, first[0].position + i + 1] for i, m in enumerate(batch)]
    assert won.records[0]["stored"] == stored
    assert again.records[0]["stored"] == stored
    repository.append(cid, [UserMessage("someone else")])
    third = repository._driver.execute_query(repository._statements.append_checked, params)
    assert third.records[0]["stored"] is None
    assert third.records[0]["version"] == repository.find_version(cid)
    assert len(repository.find_by_conversation_id(cid)) == 4


def test_label_prefix_keeps_apps_apart(cid: str) -> None:
    url = server_url("neo4j")
    with (
        Neo4jChatMemoryRepository.from_url(url, label_prefix="ChatmemTest") as prefixed,
        Neo4jChatMemoryRepository.from_url(url) as plain,
    ):
        try:
            prefixed.append(cid, [UserMessage("prefixed")])
            assert plain.find_by_conversation_id(cid) == []
            assert [m.text for m in prefixed.find_by_conversation_id(cid)] == ["prefixed"]  # type: ignore[union-attr]
            labels = prefixed._driver.execute_query(
                "MATCH (c:ChatmemTestConversation {id: $cid})-[:HAS_MESSAGE]->(m) "
                "RETURN labels(m) AS labels",
                cid=cid,
            ).records
            assert labels[0]["labels"] == ["ChatmemTestMessage"]
        finally:
            prefixed.delete_by_conversation_id(cid)


# -- options and construction ---------------------------------------------------------------


@pytest.mark.parametrize(
    "prefix", ["App`) MATCH (n) DETACH DELETE n //", "1abc", "a-b", "ü", "x" * 41, " App"]
)
def test_unsafe_label_prefixes_are_rejected(prefix: str) -> None:
    with pytest.raises(ConfigurationError, match="label_prefix"):
        Neo4jChatMemoryRepository.from_url("bolt://127.0.0.1:1", label_prefix=prefix)
    with pytest.raises(ConfigurationError, match="label_prefix"):
        Statements.for_prefix(prefix)


def test_unknown_option_names_it_with_a_suggestion() -> None:
    with pytest.raises(ConfigurationError, match=r"'labelprefix'.*did you mean 'label_prefix'"):
        Neo4jChatMemoryRepository.from_url("bolt://127.0.0.1:1?labelprefix=App")


def test_url_parts_become_driver_settings() -> None:
    settings = parse_url(
        "neo4j+s://alice:s%40cret@db.example:7688/chat?ttl=60&label_prefix=App&connect_timeout=2.5",
        {"max_transaction_retry_time": 3},
    )
    assert settings.uri == "neo4j+s://db.example:7688"
    assert settings.auth == ("alice", "s@cret")
    assert settings.options.database == "chat"
    assert settings.options.label_prefix == "App"
    assert settings.options.ttl is not None
    assert settings.options.ttl.total_seconds() == 60
    assert settings.config["connection_timeout"] == 2.5
    assert settings.config["max_transaction_retry_time"] == 3
    assert "s@cret" not in settings.redacted_url
    assert "s%40cret" not in settings.redacted_url


def test_initialize_schema_never_creates_nothing_and_create_schema_is_no_keyword() -> None:
    driver = GraphDatabase.driver("bolt://127.0.0.1:1")
    try:
        repository = Neo4jChatMemoryRepository(driver, initialize_schema="never")
        assert repository._runner.schema_ready  # nothing to create
        store = Neo4jVectorStore(driver, HashingEmbeddingModel(), initialize_schema="never")
        assert store._schema_ready
        with pytest.raises(TypeError, match="create_schema"):
            Neo4jChatMemoryRepository(driver, create_schema=False)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="create_schema"):
            Neo4jVectorStore(driver, HashingEmbeddingModel(), create_schema=False)  # type: ignore[call-arg]
    finally:
        driver.close()


def test_driver_options_reach_the_driver_and_unknown_url_parameters_are_refused() -> None:
    settings = parse_url(
        "bolt://h:7687", {"driver_options": {"keep_alive": False, "user_agent": "app"}}
    )
    assert settings.config["keep_alive"] is False
    assert settings.config["user_agent"] == "app"  # driver_options win over chatmem's
    with pytest.raises(ConfigurationError, match=r"'keep_alive'.*driver_options"):
        parse_url("bolt://h:7687?keep_alive=false", {})


def test_server_version_and_db_system(repository: Neo4jChatMemoryRepository) -> None:
    assert Neo4jChatMemoryRepository.db_system == "neo4j"
    assert repository.server_version().startswith("Neo4j Kernel 5.")


def test_bad_urls_are_configuration_errors() -> None:
    for url in ("http://127.0.0.1:7687", "bolt://", "bolt://h:99999999"):
        with pytest.raises(ConfigurationError):
            parse_url(url, {})
    with pytest.raises(ConfigurationError, match="database"):
        parse_url("bolt://h:7687/one", {"database": "two"})
    with pytest.raises(ConfigurationError, match="ttl"):
        parse_url("bolt://h:7687?ttl=-1", {})


def test_password_never_shows_in_repr() -> None:
    repository = Neo4jChatMemoryRepository.from_url("bolt://neo4j:hunter2@127.0.0.1:1")
    try:
        assert "hunter2" not in repr(repository)
        assert "***" in repr(repository)
    finally:
        repository.close()


def test_registry_builds_this_backend() -> None:
    with create_repository(server_url("neo4j") + "?ttl=30") as repository:
        assert isinstance(repository, Neo4jChatMemoryRepository)


async def test_registry_builds_the_async_twin(cid: str) -> None:
    async with create_async_repository(server_url("neo4j")) as repository:
        assert isinstance(repository, AsyncNeo4jChatMemoryRepository)
        await repository.append(cid, [UserMessage("async")])
        assert len(await repository.find_recent(cid, 5)) == 1


def test_handed_in_driver_is_not_closed(cid: str) -> None:
    with GraphDatabase.driver(
        server_url("neo4j"), auth=None, notifications_min_severity="OFF"
    ) as driver:
        repository = Neo4jChatMemoryRepository(driver, database="neo4j")
        repository.append(cid, [UserMessage("kept")])
        repository.close()
        assert driver.execute_query("RETURN 1 AS one").records[0]["one"] == 1
        with Neo4jChatMemoryRepository(driver) as again:
            assert len(again.find_by_conversation_id(cid)) == 1
            again.delete_by_conversation_id(cid)


def test_positions_must_be_integers(repository: Neo4jChatMemoryRepository, cid: str) -> None:
    with pytest.raises(ConfigurationError):
        repository.find_recent(cid, 5, before="12")
    with pytest.raises(ConfigurationError):
        repository.delete_before(cid, True)


def test_purge_expired_deletes_messages_too(cid: str) -> None:
    url = server_url("neo4j")
    with Neo4jChatMemoryRepository.from_url(url, ttl=0.2) as repository:
        repository.append(cid, [UserMessage("short-lived")] * 1 + [AssistantMessage("x")])
        repository._driver.execute_query(
            "MATCH (c:Conversation {id: $cid}) SET c.expires_at = timestamp() - 1", cid=cid
        )
        assert repository.purge_expired() >= 1
        left = repository._driver.execute_query(
            "MATCH (m:Message {conversation_id: $cid}) RETURN count(m) AS n", cid=cid
        ).records[0]["n"]
        assert left == 0


def test_purge_racing_appends_keeps_revived_conversations() -> None:
    # Two purgers loop while each expired conversation is revived by an append and read back
    # at once. An append that met a conversation node a purge deleted while the append waited
    # for its lock used to be acknowledged with nothing stored (a few percent of appends).
    url = server_url("neo4j")
    with Neo4jChatMemoryRepository.from_url(url, ttl=60) as repository:
        conversation_ids = [f"neo4j-race-{uuid.uuid4()}" for _ in range(40)]
        for conversation_id in conversation_ids:
            repository.append(conversation_id, [UserMessage("old")])
        repository._driver.execute_query(
            "MATCH (c:Conversation) WHERE c.id IN $ids SET c.expires_at = timestamp() - 1",
            ids=conversation_ids,
        )
        appending = threading.Event()
        appending.set()

        def purge_while_appending() -> None:
            while appending.is_set():
                repository.purge_expired()

        lost: list[str] = []

        def revive_each() -> None:
            try:
                for conversation_id in conversation_ids:
                    repository.append(conversation_id, [UserMessage("again")])
                    history = repository.find_by_conversation_id(conversation_id)
                    if [m.text for m in history] != ["again"]:  # type: ignore[union-attr]
                        lost.append(conversation_id)
            finally:
                appending.clear()

        run_all([purge_while_appending, purge_while_appending, revive_each])
        assert lost == []
        for conversation_id in conversation_ids:
            repository.delete_by_conversation_id(conversation_id)


def test_append_racing_deletes_is_stored_or_reported() -> None:
    # Deleters remove the conversation node (tombstone dropped) over and over while one
    # writer appends. An append that found the node just before a deletion removed it used
    # to be acknowledged with nothing stored; every acknowledged fresh message must be stored.
    url = server_url("neo4j")
    with Neo4jChatMemoryRepository.from_url(url) as repository:
        conversation_id = f"neo4j-race-{uuid.uuid4()}"
        appending = threading.Event()
        appending.set()

        def delete_while_appending() -> None:
            while appending.is_set():
                repository.delete_by_conversation_id(conversation_id)

        unstored: list[str] = []

        def append_each() -> None:
            try:
                for i in range(150):
                    message = UserMessage(f"message {i}")
                    stored = repository.append(conversation_id, [message])
                    if [s.message.id for s in stored] != [message.id]:
                        unstored.append(message.text)
            finally:
                appending.clear()

        run_all([delete_while_appending, delete_while_appending, append_each])
        assert unstored == []
        repository.delete_by_conversation_id(conversation_id)


def _stored_nodes(repository: Neo4jChatMemoryRepository, cid: str) -> tuple[int, int]:
    record = repository._driver.execute_query(
        "OPTIONAL MATCH (c:Conversation {id: $cid}) "
        "CALL { MATCH (m:Message) WHERE m.conversation_id = $cid RETURN count(m) AS messages } "
        "RETURN count(c) AS conversations, messages",
        cid=cid,
    ).records[0]
    return record["conversations"], record["messages"]


def test_large_replace_and_delete_run_in_batches(
    repository: Neo4jChatMemoryRepository, cid: str
) -> None:
    # Larger than one cleanup batch (1,000), so retired messages go in several transactions.
    old = [UserMessage(f"old {i}") for i in range(2500)]
    repository.append(cid, old)
    assert repository.count_messages(cid) == 2500
    repository.save_all(cid, [old[0], AssistantMessage("new")])
    assert repository.count_messages(cid) == 2
    assert [m.text for m in repository.find_by_conversation_id(cid)] == ["old 0", "new"]  # type: ignore[union-attr]
    assert _stored_nodes(repository, cid) == (1, 2)
    repository.delete_by_conversation_id(cid)
    assert _stored_nodes(repository, cid) == (0, 0)
    assert cid not in repository.find_conversation_ids()


def test_expired_conversation_restarts_in_a_new_generation(cid: str) -> None:
    with Neo4jChatMemoryRepository.from_url(server_url("neo4j"), ttl=60) as repository:
        stored = repository.append(cid, [UserMessage("before")])
        repository._driver.execute_query(
            "MATCH (c:Conversation {id: $cid}) SET c.expires_at = timestamp() - 1", cid=cid
        )
        assert repository.count_messages(cid) == 0  # its messages are still stored
        again = repository.append(cid, [stored[0].message, UserMessage("after")])
        # Same id as before, but the old generation is gone: both count as new.
        assert len(again) == 2
        assert again[0].position > stored[0].position
        assert [m.text for m in repository.find_by_conversation_id(cid)] == ["before", "after"]  # type: ignore[union-attr]
        assert repository.count_messages(cid) == 2
        assert _stored_nodes(repository, cid) == (1, 2)
        repository.delete_by_conversation_id(cid)
