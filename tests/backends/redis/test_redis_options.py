"""The Redis repository's URL option rule, server version and telemetry name, on a real server."""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from chatmem import UserMessage
from chatmem.exceptions import ConfigurationError
from chatmem_repositories import create_async_repository, create_repository
from chatmem_repositories.redis import (
    DRIVER_PARAMETERS,
    AsyncRedisChatMemoryRepository,
    RedisChatMemoryRepository,
)

pytestmark = pytest.mark.backend("redis")

PREFIX = f"chatmem-options-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize(
    ("query", "suggestion"),
    [
        ("key_prefx=x", "key_prefix"),  # a chatmem option
        ("max_conections=5", "max_connections"),  # a declared driver parameter
        ("conect_timeout=1", "connect_timeout"),
    ],
)
def test_misspelt_option_fails_with_did_you_mean(
    redis_url: str, query: str, suggestion: str
) -> None:
    for url in (f"{redis_url}?{query}", f"rediss://localhost:6380/0?{query}"):
        with pytest.raises(ConfigurationError, match=f"did you mean '{suggestion}'") as caught:
            create_repository(url)
        assert "driver_options" in str(caught.value)
    name = query.partition("=")[0]
    with pytest.raises(ConfigurationError, match=f"'{name}'.*did you mean '{suggestion}'"):
        create_async_repository(redis_url, **{name: "1"})


def test_declared_driver_parameters_reach_redis_py(redis_url: str) -> None:
    assert "max_connections" in DRIVER_PARAMETERS
    name = f"chatmem-{uuid.uuid4().hex[:6]}"
    url = f"{redis_url}?max_connections=7&client_name={name}&key_prefix={PREFIX}"
    with create_repository(url) as repository:
        pool = repository._client.connection_pool
        assert pool.max_connections == 7
        assert pool.connection_kwargs["client_name"] == name
        repository.append("c", [UserMessage("x")])
        assert repository._client.client_getname() in (name, name.encode())
        repository.delete_by_conversation_id("c")
    # As a keyword too, since it is declared.
    with RedisChatMemoryRepository.from_url(redis_url, max_connections=3) as repository:
        assert repository._client.connection_pool.max_connections == 3


def test_bad_driver_parameter_value_is_a_configuration_error(redis_url: str) -> None:
    with pytest.raises(ConfigurationError, match="max_connections"):
        create_repository(f"{redis_url}?max_connections=lots")
    with pytest.raises(ConfigurationError, match=r"ssl_cert_reqs only apply to TLS.*rediss://"):
        create_repository(f"{redis_url}?ssl_cert_reqs=none")
    with pytest.raises(ConfigurationError, match="ssl_ca_certs"):
        create_repository(redis_url, driver_options={"ssl_ca_certs": "/ca.pem"})
    tls = create_repository("rediss://127.0.0.1:1/0?ssl_cert_reqs=none")  # not connected yet
    tls.close()


async def test_driver_options_reach_the_client(redis_url: str) -> None:
    repository = AsyncRedisChatMemoryRepository.from_url(
        redis_url,
        key_prefix=PREFIX,
        driver_options={"socket_keepalive": True, "client_name": "via-driver-options"},
    )
    try:
        kwargs = repository._client.connection_pool.connection_kwargs
        assert kwargs["socket_keepalive"] is True
        await repository.append("c", [UserMessage("x")])
        assert await repository._client.client_getname() in (
            "via-driver-options",
            b"via-driver-options",
        )
        await repository.delete_by_conversation_id("c")
    finally:
        await repository.aclose()
    with pytest.raises(ConfigurationError, match="mapping"):
        create_repository(redis_url, driver_options=["socket_keepalive"])
    with pytest.raises(ConfigurationError, match="not a URL option"):
        create_repository(f"{redis_url}?driver_options=x")


async def test_server_version_and_db_system(redis_url: str) -> None:
    async with AsyncRedisChatMemoryRepository.from_url(redis_url) as repository:
        assert (await repository.server_version()).startswith("Redis 7.")
    with RedisChatMemoryRepository.from_url(redis_url) as repository:
        assert repository.server_version().startswith("Redis 7.")
        assert repository.db_system == AsyncRedisChatMemoryRepository.db_system == "redis"
        assert repository.db_collection_name == "chatmem"


def test_more_concurrent_callers_than_connections_wait_instead_of_failing(
    redis_url: str,
) -> None:
    conversation = f"busy-{uuid.uuid4().hex[:8]}"
    with RedisChatMemoryRepository.from_url(
        redis_url, key_prefix=PREFIX, max_connections=2
    ) as repository:
        with ThreadPoolExecutor(max_workers=12) as pool:
            list(
                pool.map(
                    lambda i: repository.append(conversation, [UserMessage(f"m{i}")]),
                    range(60),
                )
            )
        assert len(repository.find_by_conversation_id(conversation)) == 60
        assert repository._client.connection_pool.max_connections == 2
        repository.delete_by_conversation_id(conversation)


async def test_more_concurrent_tasks_than_connections_wait_instead_of_failing(
    redis_url: str,
) -> None:
    conversation = f"busy-{uuid.uuid4().hex[:8]}"
    repository = AsyncRedisChatMemoryRepository.from_url(
        redis_url, key_prefix=PREFIX, max_connections=2
    )
    try:
        await asyncio.gather(
            *(repository.append(conversation, [UserMessage(f"m{i}")]) for i in range(60))
        )
        assert len(await repository.find_by_conversation_id(conversation)) == 60
        await repository.delete_by_conversation_id(conversation)
    finally:
        await repository.aclose()


def test_the_default_pool_holds_redis_py_s_limit(redis_url: str) -> None:
    with RedisChatMemoryRepository.from_url(redis_url) as repository:
        assert repository._client.connection_pool.max_connections == 100
