"""Redis Cluster: the URL form and the key layout (no server needed, except the last test)."""

from __future__ import annotations

import zlib

import pytest
from redis.crc import key_slot

from chatmem.exceptions import ConfigurationError
from chatmem_repositories import create_async_repository
from chatmem_repositories.redis import AsyncRedisChatMemoryRepository
from chatmem_repositories.redis._options import cluster_seeds, is_cluster_url, parse_url
from chatmem_repositories.redis._schema import CONVERSATION_KEY_NAMES, KeyLayout


def test_a_cluster_url_lists_seed_nodes_and_becomes_one_node_url_for_redis_py() -> None:
    url = "redis+cluster://u:secret@10.0.0.1:7001,[::1]:7002,cache/?ttl=60&client_name=api"
    parsed = parse_url(url, {"cluster_buckets": 16})
    assert is_cluster_url(url)
    assert is_cluster_url("rediss+cluster://h:1")
    assert not is_cluster_url("redis://h:1")
    assert parsed.url == "redis://u:secret@10.0.0.1:7001?client_name=api"
    assert parsed.options.cluster_buckets == 16
    assert parsed.options.ttl is not None
    assert cluster_seeds(url) == [("10.0.0.1", 7001), ("::1", 7002), ("cache", 6379)]
    assert parse_url("rediss+cluster://h:1/0", {}).url.startswith("rediss://h:1")


def test_cluster_seeds_may_all_be_ipv6_addresses() -> None:
    url = "rediss+cluster://:pw@[2001:db8::7]:7001,[::1]/?ssl_cert_reqs=none"
    assert cluster_seeds(url) == [("2001:db8::7", 7001), ("::1", 6379)]
    assert parse_url(url, {}).url == "rediss://:pw@[2001:db8::7]:7001?ssl_cert_reqs=none"


@pytest.mark.parametrize(
    ("url", "options", "message"),
    [
        ("redis+cluster://h:1/2", {}, "only database 0"),
        ("redis+cluster://h:1", {"db": 3}, "only database 0"),
        ("redis+cluster://h:x,g:2", {}, "bad port"),
        ("redis+cluster://h:1,,g:2", {}, "empty one"),
        ("redis+cluster://h:1,[::1:2", {}, r"malformed URL.*host '\[::1:2'"),
        ("redis+cluster://h:1,[1.2.3.4]:2", {}, "IPv4 address cannot be in brackets"),
        ("redis+cluster://h:1,[::1]x:2", {}, "brackets stands alone"),
        ("redis+cluster://h:1,[::1]:x", {}, "bad port"),
        ("redis://h:1", {"cluster_buckets": 8}, "Redis Cluster only"),
        ("redis://h:1,g:2", {}, r"use redis\+cluster://"),
        ("redis+cluster://h:1?cluster_bukets=8", {}, "cluster_buckets"),
    ],
)
def test_bad_cluster_urls_are_refused_with_a_reason(
    url: str, options: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        parse_url(url, options)


def test_the_registry_routes_a_cluster_url_to_the_redis_backend() -> None:
    # The async client connects on first use, so nothing is sent here.
    repository = create_async_repository("redis+cluster://127.0.0.1:1,127.0.0.1:2?key_prefix=k")
    assert isinstance(repository, AsyncRedisChatMemoryRepository)
    assert repository._keys.buckets == 64
    assert "127.0.0.1:1" in repr(repository)


def test_every_script_of_a_conversation_names_keys_of_one_slot() -> None:
    layout = KeyLayout("app", 64)
    for conversation_id in ["a", "user:42:chat", "{x}", "%7B", "é\n}", "7"]:
        bucket = zlib.crc32(conversation_id.encode()) % 64
        assert layout.bucket_of(conversation_id) == bucket
        keys = layout.conversation(conversation_id) + layout.index_keys(conversation_id, "o")
        assert len({key_slot(key.encode()) for key in keys}) == 1
        assert keys[0].startswith(f"{{app:{bucket}}}:{{")
        assert len(keys) == len(CONVERSATION_KEY_NAMES) + 3


def test_cluster_keys_never_collide_with_each_other_or_with_the_single_server_layout() -> None:
    ids = ["a", "a:meta", "a}:meta", "conversations", "owner:x", "7", "%", "{", "b:type"]
    cluster, single = KeyLayout("p", 8), KeyLayout("p")
    seen: dict[str, str] = {}
    for conversation_id in ids:
        for key in cluster.conversation(conversation_id) + single.conversation(conversation_id):
            assert seen.setdefault(key, conversation_id) == conversation_id, key
    index = {cluster.conversations_in(b) for b in range(8)} | {
        cluster.expiry_in(b) for b in range(8)
    }
    assert not index & set(seen)
    assert single.conversations == "{p}:conversations"
    assert single.conversation("7")[0] == "{p:7}:meta"


def test_cluster_buckets_must_be_a_usable_number() -> None:
    with pytest.raises(ConfigurationError, match="cluster_buckets"):
        KeyLayout("p", 20000)
    assert KeyLayout("p").all_buckets() == [None]
    assert KeyLayout("p", 3).all_buckets() == [0, 1, 2]
