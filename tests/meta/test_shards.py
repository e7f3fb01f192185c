"""The test command's two pytest processes (``CHATMEM_TEST_SHARD``) and the run's variables."""

from __future__ import annotations

import os

import pytest

from tests.support.environment import clear_settings
from tests.support.servers import DEFAULT_URLS, server_url
from tests.support.shards import SHARDS, owner_of_server, shard_from, shard_of_test, split

IDS = [
    "tests/backends/cassandra/test_cassandra_ring.py::test_one_node_down",
    "tests/backends/neo4j/_async/test_neo4j_conformance.py::TestNeo4jAsync::test_x",
    "tests/conformance/test_durability.py::test_keeps_every_append[mongodb]",
    "tests/cli/test_cli_import_spring_ai.py::test_spring_ai_jdbc_table",
    "tests/backends/sql/test_sql_failover.py::test_synchronous",
    "tests/unit/test_window.py::test_window_properties",
]


def test_a_test_runs_where_the_server_its_id_names_is() -> None:
    assert [shard_of_test(nodeid) for nodeid in IDS] == [
        "cassandra-neo4j-mongodb",
        "cassandra-neo4j-mongodb",
        "cassandra-neo4j-mongodb",
        "rest",
        "rest",
        "rest",
    ]


def test_the_shards_split_the_tests_into_two_parts_that_cover_them_all() -> None:
    parts = [split(IDS, shard) for shard in SHARDS]
    kept = [sorted(part[0]) for part in parts]
    assert sorted(kept[0] + kept[1]) == list(range(len(IDS)))
    assert not set(kept[0]) & set(kept[1])
    for kept_here, left_here in parts:
        assert sorted(kept_here + left_here) == list(range(len(IDS)))


def test_every_server_has_one_owner_but_the_shared_fault_proxy() -> None:
    owners = {name: owner_of_server(name) for name in DEFAULT_URLS}
    assert owners.pop("toxiproxy") is None
    assert {name for name, owner in owners.items() if owner == "cassandra-neo4j-mongodb"} == {
        "cassandra",
        "cassandra_ring",
        "neo4j",
        "mongodb",
    }
    assert set(owners.values()) == set(SHARDS)


@pytest.mark.parametrize("raw", ["jvm", "all", "REST"])
def test_a_shard_that_does_not_exist_is_refused_by_name(raw: str) -> None:
    with pytest.raises(ValueError, match="CHATMEM_TEST_SHARD must be one of"):
        shard_from(raw)
    assert shard_from("") is None
    assert shard_from("rest") == "rest"


def test_a_server_of_the_other_shard_fails_the_test_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CHATMEM_SKIP_SERVERS", raising=False)
    monkeypatch.setenv("CHATMEM_TEST_SHARD", "rest")
    with pytest.raises(pytest.fail.Exception, match="neo4j server belongs to the cassandra"):
        server_url("neo4j")


def test_clearing_the_settings_keeps_the_runs_own_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CHATMEM_SKIP_SERVERS", "1")
    monkeypatch.setenv("CHATMEM_TEST_REDIS_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setenv("CHATMEM_REPOSITORY_URL", "memory://")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-machine")
    clear_settings(monkeypatch)
    # A no-server run stays one after a test clears the machine's settings.
    with pytest.raises(pytest.skip.Exception, match="CHATMEM_SKIP_SERVERS=1"):
        server_url("redis")
    assert "CHATMEM_TEST_REDIS_URL" in os.environ
    assert "CHATMEM_REPOSITORY_URL" not in os.environ
    assert "OPENAI_API_KEY" not in os.environ
