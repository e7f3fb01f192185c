"""Namespaces: no two (prefix, conversation id) pairs may reach the same storage."""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path

import pytest

from chatmem import UserMessage
from chatmem.exceptions import ConfigurationError
from chatmem_repositories import create_repository
from chatmem_repositories.cassandra import CassandraOptions
from chatmem_repositories.mongodb._options import MongoOptions
from chatmem_repositories.redis._schema import KeyLayout
from chatmem_repositories.sql._schema import build_tables
from tests.support.servers import server_url

# -- Redis -----------------------------------------------------------------------------------

_PREFIXES = ["app", "app.tenant2", "a", "a%3A", "a b", "é"]
_IDS = ["chat", "tenant2:chat", ":", "a:b:c", "{x}", "%3A", "x}:y", "owner@example.com:42"]


def test_redis_keys_are_unique_per_prefix_and_id() -> None:
    seen: dict[str, tuple[str, str]] = {}
    for prefix, conversation_id in itertools.product(_PREFIXES, _IDS):
        layout = KeyLayout(prefix)
        shared = {layout.conversations, layout.expiry, layout.owner(conversation_id)}
        for key in [*layout.conversation(conversation_id), *shared]:
            owner = seen.setdefault(key, (prefix, conversation_id))
            # A key may be shared only by the ids of one prefix (its indexes), never across.
            assert owner[0] == prefix, (key, owner, prefix)
            if key not in shared:
                assert owner == (prefix, conversation_id), key


@pytest.mark.parametrize("prefix", ["app:tenant2", "app:", ":app"])
def test_redis_prefix_with_a_colon_is_refused_with_a_suggestion(prefix: str) -> None:
    with pytest.raises(ConfigurationError, match=r"must not contain ':'.*did you mean"):
        KeyLayout(prefix)
    with pytest.raises(ConfigurationError, match="key_prefix"):
        create_repository("redis://127.0.0.1:1/0", key_prefix=prefix)


@pytest.mark.backend("redis")
def test_redis_tenants_cannot_reach_each_other() -> None:
    url = server_url("redis")
    tag = uuid.uuid4().hex[:8]
    with (
        create_repository(url, key_prefix=f"ns-{tag}.tenant2") as tenant,
        create_repository(url, key_prefix=f"ns-{tag}") as other,
    ):
        tenant.append("chat", [UserMessage("tenant2's secret")])
        try:
            assert other.find_by_conversation_id("tenant2:chat") == []
            assert other.find_by_conversation_id(".tenant2:chat") == []
            assert other.list_conversations(limit=10).conversation_ids == []
        finally:
            tenant.delete_by_conversation_id("chat")


# -- SQL -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", ["sqlite", "mysql", "mariadb", "mssql"])
def test_sql_prefix_with_capitals_is_refused_where_case_may_fold(dialect: str) -> None:
    with pytest.raises(ConfigurationError, match=r"use 'app_'"):
        build_tables("App_", dialect)
    assert build_tables("app_", dialect).messages.name == "app_messages"


def test_sqlite_prefixes_differing_in_case_cannot_share_tables(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/chat.db"
    with create_repository(url, table_prefix="app_") as lower:
        lower.append("c", [UserMessage("app_'s message")])
    with pytest.raises(ConfigurationError, match="table_prefix 'App_'"):
        create_repository(url, table_prefix="App_")


@pytest.mark.backend("postgresql")
def test_postgresql_keeps_prefixes_differing_in_case_apart() -> None:
    url = server_url("postgresql")
    tag = uuid.uuid4().hex[:6]
    upper, lower = f"Ns{tag}_", f"ns{tag}_"
    with (
        create_repository(url, table_prefix=upper, initialize_schema="always") as first,
        create_repository(url, table_prefix=lower, initialize_schema="always") as second,
    ):
        try:
            first.append("c", [UserMessage("upper")])
            assert second.find_by_conversation_id("c") == []
        finally:
            for repository, prefix in ((first, upper), (second, lower)):
                with repository._engine.begin() as connection:
                    for table in ("messages", "conversations"):
                        connection.exec_driver_sql(f'DROP TABLE IF EXISTS "{prefix}{table}"')


# -- Cassandra, MongoDB ----------------------------------------------------------------------


def test_cassandra_prefix_must_be_lowercase() -> None:
    with pytest.raises(ValueError, match=r"use 'app_'"):
        CassandraOptions(table_prefix="App_")
    with pytest.raises(ConfigurationError, match="table_prefix"):
        create_repository("cassandra://127.0.0.1:1/ks?table_prefix=App_")
    assert CassandraOptions(table_prefix="app_").table_prefix == "app_"


@pytest.mark.parametrize("prefix", ["system.", "system.x_", "a\n", "a/b", "a$"])
def test_mongodb_prefix_rejects_reserved_and_unsafe_names(prefix: str) -> None:
    with pytest.raises(ValueError, match="collection_prefix"):
        MongoOptions(collection_prefix=prefix)


# -- Neo4j -----------------------------------------------------------------------------------


@pytest.mark.backend("neo4j")
def test_neo4j_prefixes_differing_in_case_get_their_own_schema() -> None:
    url = server_url("neo4j")
    tag = uuid.uuid4().hex[:8]
    prefixes = [f"Ns{tag}", f"ns{tag}"]
    repositories = [create_repository(url, label_prefix=p) for p in prefixes]
    try:
        for repository in repositories:
            repository.append("c", [UserMessage("hi")])
        records, _, _ = repositories[0]._driver.execute_query(
            "SHOW CONSTRAINTS YIELD labelsOrTypes, type WHERE type = 'UNIQUENESS' "
            "RETURN labelsOrTypes[0] AS label"
        )
        labels = {record["label"] for record in records}
        for prefix in prefixes:
            assert f"{prefix}Conversation" in labels
            assert f"{prefix}Message" in labels
    finally:
        for repository, prefix in zip(repositories, prefixes, strict=True):
            repository.delete_by_conversation_id("c")
            driver = repository._driver
            for kind in ("CONSTRAINTS", "INDEXES"):
                records, _, _ = driver.execute_query(
                    f"SHOW {kind} YIELD name WHERE name STARTS WITH $start RETURN name",
                    start=f"chatmem_{prefix}_",
                )
                for record in records:
                    keyword = "CONSTRAINT" if kind == "CONSTRAINTS" else "INDEX"
                    driver.execute_query(f"DROP {keyword} {record['name']} IF EXISTS")
            repository.close()
