"""The conformance suite on a real Neo4j server, sync and async."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from chatmem.backend import Position
from chatmem.testing import (
    AsyncHistoryCheckerConformance,
    AsyncRepositoryConformance,
)
from chatmem_repositories.neo4j import AsyncNeo4jChatMemoryRepository
from tests.support.servers import server_url

pytestmark = pytest.mark.backend("neo4j")

# Invalid JSON that is still a string, as a damaged or hand-edited record would be.
_GARBAGE = "\x00{not json"
_CORRUPT = "MATCH (m:Message {conversation_id: $cid, position: $position}) SET m.data = $garbage"


# The expiry tests step a ManualClock over the TTL (supports_clock), so the TTL costs no
# waiting; 2 s keeps the repository's "now" and the clock's apart from rounding.
_TTL_SECONDS = 2.0


class TestNeo4jAsync(AsyncRepositoryConformance, AsyncHistoryCheckerConformance):
    ttl_seconds = _TTL_SECONDS
    supports_clock = True

    @pytest.fixture
    def repository_factory(self) -> Callable[..., Awaitable[AsyncNeo4jChatMemoryRepository]]:
        url = server_url("neo4j")

        async def factory(**options: Any) -> AsyncNeo4jChatMemoryRepository:
            return AsyncNeo4jChatMemoryRepository.from_url(url, **options)

        return factory

    async def corrupt_stored_message(
        self, repository: Any, conversation_id: str, position: Position
    ) -> None:
        summary = (
            await repository._driver.execute_query(
                _CORRUPT, cid=conversation_id, position=position, garbage=_GARBAGE
            )
        ).summary
        assert summary.counters.properties_set == 1
