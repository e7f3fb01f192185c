"""The summary-store conformance suite on a real Neo4j server, sync and async."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from chatmem.exceptions import ConfigurationError
from chatmem.messages import UserMessage
from chatmem.testing import AsyncSummaryConformance, ManualClock, SummaryConformance
from chatmem_repositories.neo4j import AsyncNeo4jChatMemoryRepository, Neo4jChatMemoryRepository
from tests.support.servers import server_url

pytestmark = pytest.mark.backend("neo4j")


class TestNeo4jSummariesAsync(AsyncSummaryConformance):
    supports_clock = True

    @pytest.fixture
    def repository_factory(self) -> Callable[..., Awaitable[AsyncNeo4jChatMemoryRepository]]:
        url = server_url("neo4j")

        async def factory(**options: Any) -> AsyncNeo4jChatMemoryRepository:
            return AsyncNeo4jChatMemoryRepository.from_url(url, **options)

        return factory


class TestNeo4jSummariesSync(SummaryConformance):
    supports_clock = True

    @pytest.fixture
    def repository_factory(self) -> Callable[..., Neo4jChatMemoryRepository]:
        url = server_url("neo4j")

        def factory(**options: Any) -> Neo4jChatMemoryRepository:
            return Neo4jChatMemoryRepository.from_url(url, **options)

        return factory

    def test_purge_removes_an_expired_summary_with_its_conversation(self, summary_cid: str) -> None:

        clock = ManualClock()
        with Neo4jChatMemoryRepository.from_url(
            server_url("neo4j"), ttl=60, clock=clock
        ) as repository:
            stored = repository.append(summary_cid, [UserMessage("a")])
            assert repository.save_summary(summary_cid, "s", stored[0].position, expected_version=0)
            clock.advance(120)
            assert not repository.save_summary(
                summary_cid, "late", stored[0].position, expected_version=1
            )
            assert repository.purge_expired() >= 1
            records = repository._driver.execute_query(
                "MATCH (c:Conversation {id: $cid}) RETURN c.summary_text", cid=summary_cid
            ).records
            assert [r[0] for r in records if r[0] is not None] == []

    def test_bad_summary_arguments_are_refused_and_write_nothing(
        self, summary_repository: Any, summary_cid: str
    ) -> None:

        stored = summary_repository.append(summary_cid, [UserMessage("a")])
        position = stored[0].position
        with pytest.raises(ConfigurationError):
            summary_repository.save_summary(summary_cid, 42, position, expected_version=0)
        with pytest.raises(ConfigurationError):
            summary_repository.save_summary(summary_cid, "s", "1", expected_version=0)
        with pytest.raises(ConfigurationError):
            summary_repository.save_summary(summary_cid, "s", position, expected_version="0")
        assert summary_repository.find_summary(summary_cid) is None
        assert summary_repository.save_summary(summary_cid, "s", position, expected_version=0)
        # Saving without a conversation writes nothing: the summary would outlive nothing.
        assert not summary_repository.save_summary(
            f"{summary_cid}-none", "s", position, expected_version=0
        )
        assert summary_repository.find_summary(f"{summary_cid}-none") is None
        summary_repository.delete_by_conversation_id(summary_cid)
