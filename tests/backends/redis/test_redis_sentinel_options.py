"""The redis+sentinel:// URL form: parsing and the redis-py clients it builds (no server)."""

from __future__ import annotations

from typing import Any

import pytest
from redis.asyncio.sentinel import SentinelConnectionPool as AsyncSentinelConnectionPool
from redis.asyncio.sentinel import SentinelManagedSSLConnection as AsyncSSLConnection
from redis.sentinel import SentinelConnectionPool, SentinelManagedConnection

from chatmem.exceptions import ConfigurationError, RepositoryConnectionError
from chatmem_cli._doctor import _endpoints, drivers_for
from chatmem_repositories import create_async_repository, create_repository
from chatmem_repositories.redis import AsyncRedisChatMemoryRepository, RedisChatMemoryRepository
from chatmem_repositories.redis._options import parse_url, sentinel_settings

SECRET = "S3CRET-pw"


def settings(url: str, **options: Any) -> Any:
    return sentinel_settings(parse_url(url, options))


def test_hosts_service_db_and_credentials() -> None:
    found = settings(
        f"redis+sentinel://app:{SECRET}@10.0.0.1:26380,[::1],s3:26381/my%20master/3"
        "?ttl=60&client_name=api&sentinel_password=spw&sentinel_username=su&sentinel_timeout=0.5"
    )
    assert found.sentinels == [("10.0.0.1", 26380), ("::1", 26379), ("s3", 26381)]
    assert found.service_name == "my master"
    # The URL's user info and driver parameters are the servers'; sentinel_* the sentinels'.
    server = found.server_kwargs
    assert (server["db"], server["username"], server["password"]) == (3, "app", SECRET)
    assert server["client_name"] == "api"
    assert "ssl" not in server
    assert found.sentinel_kwargs == {
        "socket_timeout": 0.5,
        "socket_connect_timeout": 0.5,
        "username": "su",
        "password": "spw",
    }


def test_db_defaults_to_0_and_the_option_wins() -> None:
    assert settings("redis+sentinel://s:1/svc").server_kwargs["db"] == 0
    assert settings("redis+sentinel://s:1/svc/2", db=5).server_kwargs["db"] == 5


def test_tls_to_sentinels_and_servers() -> None:
    found = settings("rediss+sentinel://s:1/svc?ssl_cert_reqs=none&ssl_ca_certs=/ca.pem")
    assert found.server_kwargs["ssl"] is True
    assert found.sentinel_kwargs["ssl"] is True
    assert found.sentinel_kwargs["ssl_ca_certs"] == found.server_kwargs["ssl_ca_certs"] == "/ca.pem"


@pytest.mark.parametrize(
    ("url", "options", "message"),
    [
        ("redis+sentinel://s:1", {}, "names the monitored service in its path"),
        ("redis+sentinel://s:1/", {}, "names the monitored service in its path"),
        ("redis+sentinel://s:1/svc/x", {}, "bad database 'x'"),
        ("redis+sentinel://s:1/svc/1/2", {}, "bad database '1/2'"),
        ("redis+sentinel://s:1,,t:2/svc", {}, "lists sentinels as host:port"),
        ("redis+sentinel://s:x/svc", {}, "bad port in Redis Sentinel URL"),
        ("redis+sentinel://s:1/svc?cluster_buckets=8", {}, "not to Redis Sentinel"),
        ("redis+sentinel://s:1/svc?ssl_ca_certs=/ca.pem", {}, "rediss"),
        ("redis+sentinel://s:1/svc?wait_timeout_ms=0", {}, "wait_timeout_ms"),
        ("redis://h:1/0?sentinel_password=x", {}, "apply to Redis Sentinel only"),
        ("redis+cluster://h:1,h:2", {"sentinel_timeout": 1}, "apply to Redis Sentinel only"),
        ("redis+cluster://h:1,h:2?wait_replicas=1", {}, "not to Redis Cluster"),
        ("redis+sentinel://s:1/svc?sentinel_pasword=x", {}, "sentinel_password"),
    ],
)
def test_configuration_errors(url: str, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        settings(url, **options) if "+sentinel" in url else parse_url(url, options)


def test_several_hosts_in_a_plain_url_points_at_the_sentinel_form() -> None:
    with pytest.raises(ConfigurationError, match=r"redis\+sentinel://"):
        parse_url("redis://h1:1,h2:2/0", {})


def test_sync_repository_uses_redis_py_sentinel_pool() -> None:
    url = f"redis+sentinel://:{SECRET}@127.0.0.1:1,127.0.0.1:2/svc/4?key_prefix=k&wait_replicas=1"
    with create_repository(url) as repository:
        assert isinstance(repository, RedisChatMemoryRepository)
        pool = repository._client.connection_pool
        assert isinstance(pool, SentinelConnectionPool)
        assert pool.service_name == "svc"
        assert pool.connection_class is SentinelManagedConnection
        assert pool.connection_kwargs["db"] == 4
        sentinels = repository._sentinel.sentinels
        assert [s.connection_pool.connection_kwargs["port"] for s in sentinels] == [1, 2]
        assert SECRET not in repr(repository)
        # No sentinel answers: no master to send to, so nothing was written.
        with pytest.raises(RepositoryConnectionError, match="no redis master available"):
            repository.find_version("c")


async def test_async_repository_uses_redis_py_sentinel_pool_with_tls() -> None:
    repository = create_async_repository("rediss+sentinel://127.0.0.1:1/svc?connect_timeout=1")
    async with repository:
        assert isinstance(repository, AsyncRedisChatMemoryRepository)
        pool = repository._client.connection_pool
        assert isinstance(pool, AsyncSentinelConnectionPool)
        assert pool.connection_class is AsyncSSLConnection
        with pytest.raises(RepositoryConnectionError, match="no redis master available"):
            await repository.find_version("c")


def test_doctor_knows_the_sentinel_and_cluster_schemes() -> None:
    assert drivers_for("redis+sentinel://s/svc") == ["redis"]
    assert drivers_for("rediss+cluster://h:1") == ["redis"]
    assert _endpoints("redis+sentinel://s1,s2:26380/svc") == [("s1", 26379), ("s2", 26380)]
