"""Where the test servers are, and what to do when one is missing.

``scripts/test`` starts every server and exports ``CHATMEM_TEST_<NAME>_URL``; the defaults
below match the ports the server scripts use. Locally, a server that is not reachable skips
its tests with the reason; in CI (``CI=true``) it fails them.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

import pytest

from tests.support.shards import current_shard, owner_of_server

# Each server's port when its URL names none.
DEFAULT_PORTS = {
    "postgresql": 5432,
    "mariadb": 3306,
    "redis": 6379,
    "mongodb": 27017,
    "cassandra": 9042,
    "cassandra_ring": 9042,
    "neo4j": 7687,
}
DEFAULT_URLS = {
    "postgresql": "postgresql+psycopg://test:test@127.0.0.1:25432/testdb",
    # A primary and its streaming standby (scripts/servers/postgres-standby/start.sh); libpq
    # connects to whichever of the two accepts writes.
    "postgresql_standby": (
        "postgresql+psycopg://test:test@127.0.0.1:25451,127.0.0.1:25452/testdb"
        "?target_session_attrs=read-write"
    ),
    "mariadb": "mysql+pymysql://test:test@127.0.0.1:23306/testdb?charset=utf8mb4",
    "redis": "redis://127.0.0.1:63799/0",
    # Six nodes on 7101-7106 (scripts/servers/redis-cluster/start.sh); three seeds suffice.
    "redis_cluster": "redis+cluster://127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103",
    # A master, two replicas and three sentinels (scripts/servers/redis-sentinel/start.sh); the
    # URL names the sentinels and the service.
    "redis_sentinel": (
        "redis+sentinel://127.0.0.1:26401,127.0.0.1:26402,127.0.0.1:26403/chatmem/0"
    ),
    "mongodb": "mongodb://127.0.0.1:27027/chatmem_test",
    "cassandra": "cassandra://127.0.0.1:9042/chatmem_test",
    # Three nodes on 127.0.0.2-4 (scripts/servers/cassandra-ring/start.sh); the keyspace is
    # created with replication factor 3.
    "cassandra_ring": (
        "cassandra://127.0.0.2:9042,127.0.0.3:9042,127.0.0.4:9042/chatmem_ring"
        "?create_keyspace=true&replication_factor=3"
    ),
    "neo4j": "bolt://127.0.0.1:7687",
    # Toxiproxy's HTTP API: the fault tests put its proxies between a repository and a server.
    "toxiproxy": "http://127.0.0.1:8474",
}


def server_url(name: str) -> str:
    """Return the test server URL for ``name``, or skip (fail in CI) if it is unreachable."""
    if os.environ.get("CHATMEM_SKIP_SERVERS") == "1":
        # A run that is meant to use no server (scripts/test-pythons on the other Pythons):
        # its backend tests skip even in CI, even if a server happens to be up.
        pytest.skip(f"CHATMEM_SKIP_SERVERS=1: this run uses no {name} server")
    shard, owner = current_shard(), owner_of_server(name)
    if shard is not None and owner not in (None, shard):
        # The other shard's process uses this server now: a test must name its server in its
        # id so that it runs where the server is used by one process at a time.
        pytest.fail(
            f"the {name} server belongs to the {owner} shard, not {shard}: name it in the test's id"
        )
    url = os.environ.get(f"CHATMEM_TEST_{name.upper()}_URL", DEFAULT_URLS[name])
    parts = urlsplit(url)
    # The first of several hosts ("h1:7101,h2:7102"): the one the check connects to.
    parts = parts._replace(netloc=parts.netloc.split(",")[0])
    host = parts.hostname or "127.0.0.1"
    port = parts.port or DEFAULT_PORTS.get(name, 0)
    try:
        with socket.create_connection((host, port), timeout=2):
            pass
    except OSError as exc:
        message = f"{name} test server not reachable at {host}:{port} ({exc})"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message + "; in CI every server must be up")
        # The MongoDB-wire test server is FerretDB; the others are named after their server.
        script = {
            "mongodb": "ferretdb",
            "postgresql": "postgres",
            "postgresql_standby": "postgres-standby",
        }.get(name, name.replace("_", "-"))
        pytest.skip(message + "; start it with scripts/servers/" + script + "/start.sh")
    return url
