"""The test command's two pytest processes: which tests and which servers each one has.

``scripts/test`` runs the suite against the servers as two pytest processes side by side, so
that both cores work: most tests wait on a server's round trips, one process alone leaves a
core idle. Each test server belongs to one of the two (``SHARDS``), so no server sees two test
runs at once: tests that list a store's conversations, or change a shared keyspace's schema,
would race with the other process's tests. A test belongs to the shard of the servers its id
names (``tests/backends/neo4j/...``, ``test_durability[cassandra]``); every other test, those
that need no server included, belongs to ``rest``.

``CHATMEM_TEST_SHARD`` names the shard a process runs; unset, it runs every test. A test that
reaches a server its shard does not own fails with the reason (``server_url``): its id must
name the server.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

__all__ = [
    "SHARDS",
    "TOXIPROXY",
    "current_shard",
    "owner_of_server",
    "shard_from",
    "shard_of_test",
    "split",
]

SHARDS: dict[str, tuple[str, ...]] = {
    # The servers whose tests take most of the time, JVMs and the MongoDB-wire server: the
    # keywords a test's id names them by.
    "cassandra-neo4j-mongodb": ("cassandra", "neo4j", "mongo"),
    # PostgreSQL, MariaDB, the Redis servers, and the tests that need no server.
    "rest": (),
}
TOXIPROXY = "toxiproxy"
"""The fault proxy serves both shards: each test creates proxies of its own, uniquely named."""


def shard_from(raw: str | None) -> str | None:
    """Parse a ``CHATMEM_TEST_SHARD`` value: a name in ``SHARDS``, or unset/empty for all tests.

    Raises:
        ValueError: If it names no shard.
    """
    if not raw:
        return None
    if raw not in SHARDS:
        raise ValueError(f"CHATMEM_TEST_SHARD must be one of {sorted(SHARDS)}, got {raw!r}")
    return raw


def current_shard() -> str | None:
    """The shard this process runs (``CHATMEM_TEST_SHARD``), or None for every test."""
    return shard_from(os.environ.get("CHATMEM_TEST_SHARD"))


def _shard_naming(text: str) -> str:
    lowered = text.lower()
    for shard, keywords in SHARDS.items():
        if any(keyword in lowered for keyword in keywords):
            return shard
    return "rest"


def shard_of_test(nodeid: str) -> str:
    """The shard that runs the test with pytest id ``nodeid``."""
    return _shard_naming(nodeid)


def owner_of_server(name: str) -> str | None:
    """The shard that owns test server ``name`` (as ``server_url`` names it); None if shared."""
    return None if name == TOXIPROXY else _shard_naming(name)


def split(nodeids: Sequence[str], shard: str) -> tuple[list[int], list[int]]:
    """Split test ids into the indexes ``shard`` runs and those it leaves to the other."""
    kept: list[int] = []
    left: list[int] = []
    for index, nodeid in enumerate(nodeids):
        (kept if shard_of_test(nodeid) == shard else left).append(index)
    return kept, left
