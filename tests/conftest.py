"""Shared fixtures: Hypothesis' profile, and the servers' URLs with their clean-up.

Where the servers are is :mod:`tests.support.servers`; what is dropped after a test is
:mod:`tests.support.cleanup`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from hypothesis import settings

from tests.support.cleanup import (
    drop_mongodb_collections,
    drop_redis_cluster_keys,
    drop_redis_keys,
)
from tests.support.properties import examples
from tests.support.servers import server_url
from tests.support.shards import current_shard, split

# Property tests check behaviour, not speed: Hypothesis' default 200 ms deadline per example
# fails them on a busy 2-core machine, so it is off for every test (speed is benchmarked).
# Tests without a count of their own draw Hypothesis' default 100, scaled as the others are.
settings.register_profile("chatmem", deadline=None, max_examples=examples(100))
settings.load_profile("chatmem")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``CHATMEM_TEST_SHARD`` set, keep the tests of that shard (tests/support/shards.py)."""
    shard = current_shard()
    if shard is None:
        return
    kept, left = split([item.nodeid for item in items], shard)
    if left:
        config.hook.pytest_deselected(items=[items[i] for i in left])
        items[:] = [items[i] for i in kept]


@pytest.fixture(scope="module")
def redis_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The Redis test server's URL; after the module, the keys under its ``PREFIX`` are deleted.

    Every module that uses it names its key prefix in a module-level ``PREFIX``.
    """
    url = server_url("redis")
    yield url
    drop_redis_keys(url, request.module.PREFIX)


@pytest.fixture(scope="module")
def redis_cluster_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The Redis Cluster's URL; after the module, the keys under its ``PREFIX`` are deleted."""
    url = server_url("redis_cluster")
    yield url
    drop_redis_cluster_keys(url, request.module.PREFIX)


@pytest.fixture(scope="module")
def mongodb_url() -> str:
    """The MongoDB-wire test server's URL (FerretDB)."""
    return server_url("mongodb")


@pytest.fixture
def mongodb_prefix(mongodb_url: str) -> Iterator[str]:
    """A collection prefix of one test; its collections are dropped after it.

    FerretDB 1.24 (SQLite) scans a whole collection for every query but ``_id`` lookups, so
    sharing collections across tests would make each test slower than the last (see
    docs/backends/mongodb.md).
    """
    prefix = f"t{uuid.uuid4().hex[:8]}_"
    yield prefix
    drop_mongodb_collections(mongodb_url, prefix)
