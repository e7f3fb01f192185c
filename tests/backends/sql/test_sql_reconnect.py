"""PostgreSQL closes every pooled connection (a restart, a failover): the next call succeeds.

The server ends the repository's idle pooled connections (``pg_terminate_backend``, as a
restart or a failover to another server would). The first call that meets one of them finds
it closed; the repository then discards every connection its pool opened before, not only
that one, and runs the call again on a new connection, so the caller sees no error. Without
that, each call would take two dead connections in turn and fail until the pool had been
drained of them.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from sqlalchemy.engine import make_url

from chatmem import UserMessage
from chatmem_repositories.sql import AsyncSqlChatMemoryRepository, SqlChatMemoryRepository
from chatmem_repositories.sql._drivers import async_checkin, async_checkout, checkin, checkout
from tests.support.servers import server_url

POOLED = 5  # connections the pool holds when the server closes them


@pytest.fixture
def postgres_url() -> str:
    return server_url("postgresql")


def _with_name(url: str) -> tuple[str, str]:
    name = f"chatmem-reconnect-{uuid.uuid4().hex[:8]}"
    return f"{url}{'&' if '?' in url else '?'}application_name={name}", name


def _terminate(url: str, application_name: str) -> int:
    """End the server processes of every connection named ``application_name``."""
    parts = make_url(url)
    with psycopg.connect(
        host=parts.host,
        port=parts.port,
        user=parts.username,
        password=parts.password,
        dbname=parts.database,
        autocommit=True,
    ) as connection:
        rows = connection.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (application_name,),
        ).fetchall()
    return len(rows)


def _options() -> dict[str, Any]:
    return {
        "table_prefix": "chatmem_reconnect_",
        "initialize_schema": "always",
        "pool_size": POOLED,
        "max_overflow": 0,
    }


def test_calls_after_the_server_closed_every_pooled_connection_succeed(postgres_url: str) -> None:
    url, name = _with_name(postgres_url)
    cid = f"reconnect-{uuid.uuid4()}"
    with SqlChatMemoryRepository.from_url(url, **_options()) as repository:
        repository.append(cid, [UserMessage("before")])
        # Fill the pool: POOLED connections taken at once, then given back.
        held = [checkout(repository._engine) for _ in range(POOLED)]
        for connection in held:
            checkin(connection)
        assert _terminate(postgres_url, name) == POOLED
        for n in range(POOLED):  # each would otherwise take two dead connections and fail
            repository.append(cid, [UserMessage(f"after {n}")])
        texts = [m.text for m in repository.find_by_conversation_id(cid)]
        repository.delete_by_conversation_id(cid)
    assert texts == ["before", *(f"after {n}" for n in range(POOLED))]


async def test_async_calls_after_the_server_closed_every_pooled_connection_succeed(
    postgres_url: str,
) -> None:
    url, name = _with_name(postgres_url)
    cid = f"reconnect-{uuid.uuid4()}"
    async with AsyncSqlChatMemoryRepository.from_url(url, **_options()) as repository:
        await repository.append(cid, [UserMessage("before")])
        held = [await async_checkout(repository._engine) for _ in range(POOLED)]
        for connection in held:
            await async_checkin(connection)
        assert _terminate(postgres_url, name) == POOLED
        for n in range(POOLED):
            await repository.append(cid, [UserMessage(f"after {n}")])
        texts = [m.text for m in await repository.find_by_conversation_id(cid)]
        await repository.delete_by_conversation_id(cid)
    assert texts == ["before", *(f"after {n}" for n in range(POOLED))]
