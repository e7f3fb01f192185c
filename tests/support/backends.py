"""The backends the tests run on, named once, and the URL a test reaches each by."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chatmem.repository import AsyncOwnedChatMemoryLog, OwnedChatMemoryLog
from chatmem_repositories import create_async_repository, create_repository
from tests.support.servers import server_url

# The SQL backends: an embedded file and two servers.
SQL = ("sqlite", "postgresql", "mariadb")
# Every backend with a server of its own, in the order the tests list them.
SERVERS = ("postgresql", "mariadb", "redis", "mongodb", "cassandra", "neo4j")
# The framework integrations run every test on these ...
INTEGRATION = ("memory", "sqlite", "postgresql", "redis")
# ... and one smoke test on each of the others, so every backend is covered.
INTEGRATION_SMOKE = ("mariadb", "mongodb", "cassandra", "neo4j")


def backend_url(name: str, tmp_path: Path) -> str:
    """The URL of backend ``name``: in memory, an SQLite file in ``tmp_path``, or a server.

    A server that is not reachable skips the test (fails it in CI), as :func:`server_url` does.
    A SQL server's URL asks for the tables to be created, and Cassandra's for the keyspace,
    so a test does not depend on an earlier test (or run) having created them on a fresh
    server.
    """
    if name == "memory":
        return "memory://"
    if name == "sqlite":
        return f"sqlite:///{tmp_path / 'chat.db'}"
    url = server_url(name)
    if name in SQL:
        url += ("&" if "?" in url else "?") + "initialize_schema=always"
    elif name == "cassandra":
        url += ("&" if "?" in url else "?") + "create_keyspace=true"
    return url


def open_repository(name: str, tmp_path: Path, **options: Any) -> OwnedChatMemoryLog:
    """A sync repository of backend ``name`` at :func:`backend_url`, made with ``options``."""
    return create_repository(backend_url(name, tmp_path), **options)


def async_open_repository(name: str, tmp_path: Path, **options: Any) -> AsyncOwnedChatMemoryLog:
    """The async twin of :func:`open_repository`.

    An async test calls it by this name, so its generated sync twin calls
    :func:`open_repository` (the generator renames ``async_x`` to ``x``).
    """
    return create_async_repository(backend_url(name, tmp_path), **options)
