"""A server that does not answer is chatmem's connection error on every backend, sync and async.

Building a repository either connects lazily or maps the driver's error, so neither building
it nor its first call lets a driver exception through, and no message shows a credential.
"""

from __future__ import annotations

import gc
import warnings

import pytest

from chatmem.exceptions import RepositoryConnectionError
from chatmem_repositories import create_async_repository, create_repository

SECRET = "Zq7-S3cret"

# Port 1 refuses connections at once; the short timeouts bound the test if it does not.
UNREACHABLE = {
    "postgresql": f"postgresql+psycopg://u:{SECRET}@127.0.0.1:1/db?connect_timeout=1",
    "mariadb": f"mysql+pymysql://u:{SECRET}@127.0.0.1:1/db?connect_timeout=1",
    "redis": f"redis://u:{SECRET}@127.0.0.1:1/0?connect_timeout=1",
    "redis_cluster": f"redis+cluster://u:{SECRET}@127.0.0.1:1,127.0.0.1:2?connect_timeout=1",
    "mongodb": f"mongodb://u:{SECRET}@127.0.0.1:1/db?connect_timeout=1",
    "cassandra": f"cassandra://u:{SECRET}@127.0.0.1:1/ks?connect_timeout=1",
    # Neo4j's schema is created in managed transactions, which the driver retries this long.
    "neo4j": f"bolt://u:{SECRET}@127.0.0.1:1?connect_timeout=1&max_transaction_retry_time=0.5",
}


def build_and_read(url: str) -> None:
    repository = create_repository(url)
    try:
        repository.find_by_conversation_id("unreachable")
    finally:
        repository.close()


async def async_build_and_read(url: str) -> None:
    repository = create_async_repository(url)
    try:
        await repository.find_by_conversation_id("unreachable")
    finally:
        await repository.aclose()


@pytest.mark.parametrize("backend", UNREACHABLE)
def test_building_and_first_call_raise_chatmems_connection_error(backend: str) -> None:
    with pytest.raises(RepositoryConnectionError) as caught:
        build_and_read(UNREACHABLE[backend])
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize("backend", UNREACHABLE)
async def test_async_building_and_first_call_raise_chatmems_connection_error(
    backend: str,
) -> None:
    with pytest.raises(RepositoryConnectionError) as caught:
        await async_build_and_read(UNREACHABLE[backend])
    assert SECRET not in str(caught.value)
    if backend == "mongodb":
        # pymongo's async client does not close the socket of a connection attempt that
        # closing the client cancels (PYTHON-5867, mongo-python-driver#2858): it is left to
        # the garbage collector, which would warn in whatever test runs then. Collect it here.
        del caught  # its traceback holds the client
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()


def test_a_redis_cluster_without_an_answering_node_names_its_url_without_credentials() -> None:
    # redis-py's sync RedisCluster connects when it is built, so building is what fails.
    with pytest.raises(RepositoryConnectionError, match="redis cluster") as caught:
        create_repository(UNREACHABLE["redis_cluster"])
    assert "u:***@127.0.0.1:1,127.0.0.1:2" in str(caught.value)
    assert SECRET not in str(caught.value)
