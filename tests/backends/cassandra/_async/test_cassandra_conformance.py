"""The conformance suite against a real Cassandra, sync and async."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from cassandra.cluster import Cluster, Session

from chatmem.backend import Position
from chatmem.testing import (
    AsyncHistoryCheckerConformance,
    AsyncRepositoryConformance,
)
from chatmem_repositories.cassandra import (
    AsyncCassandraChatMemoryRepository,
    CassandraChatMemoryRepository,
)
from tests.support.servers import server_url

pytestmark = pytest.mark.backend("cassandra")

MESSAGES = "chatmem_messages_v2"


@pytest.fixture(scope="module")
def url() -> str:
    return server_url("cassandra")


@pytest.fixture(scope="module")
def raw_session(url: str) -> Iterator[Session]:
    """A separate session for raw writes, as another client would make them."""
    with CassandraChatMemoryRepository.from_url(url, create_keyspace=True) as repository:
        repository.find_conversation_ids()  # creates the keyspace and tables
    cluster = Cluster(["127.0.0.1"], port=int(url.rsplit(":", 1)[1].split("/")[0]))
    try:
        yield cluster.connect("chatmem_test")
    finally:
        cluster.shutdown()


def corrupt(session: Session, conversation_id: str, position: Position) -> None:
    """Overwrite one stored message with JSON that does not decode."""
    where = "conversation_id = %s AND section = 'c' AND position = %s"
    key = (conversation_id, int(position))
    row = session.execute(f"SELECT message_id FROM {MESSAGES} WHERE {where}", key).one()
    session.execute(
        f"UPDATE {MESSAGES} SET data = %s WHERE {where} AND message_id = %s",
        ('{"v": 1, "type": "no-such-type"', *key, row.message_id),
    )


# Cassandra expires whole seconds: with a 1 s ttl a conversation lives 1 to 2 s after its
# last append, so the history checker idles longer between cycles to see every one expire.
_EXPIRY_PAUSE = 2.1


class TestCassandraAsync(AsyncRepositoryConformance, AsyncHistoryCheckerConformance):
    checker_expiry_pause = _EXPIRY_PAUSE

    @pytest.fixture
    def repository_factory(
        self, url: str, raw_session: Session
    ) -> Callable[..., Awaitable[AsyncCassandraChatMemoryRepository]]:
        async def factory(**options: Any) -> AsyncCassandraChatMemoryRepository:
            return AsyncCassandraChatMemoryRepository.from_url(url, **options)

        return factory

    async def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        corrupt(self._raw, conversation_id, position)

    @pytest.fixture(autouse=True)
    def _keep_raw(self, raw_session: Session) -> None:
        self._raw = raw_session
