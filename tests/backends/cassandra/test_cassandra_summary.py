"""The summary-store conformance suite against a real Cassandra, sync and async.

Cassandra expires conversations on the server (a TTL on the liveness cell), so no
:class:`~chatmem.testing.ManualClock` can step over the TTL: the suite's clock-driven expiry
test is skipped, as the repository conformance suite skips its clock tests here, and the
expiry of summaries is tested below with a real one-second TTL instead.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from cassandra.cluster import Cluster, Session

from chatmem.exceptions import ConfigurationError
from chatmem.messages import UserMessage
from chatmem.testing import AsyncSummaryConformance, SummaryConformance
from chatmem_repositories.cassandra import (
    AsyncCassandraChatMemoryRepository,
    CassandraChatMemoryRepository,
)
from tests.support.polling import wait_until
from tests.support.servers import server_url

pytestmark = pytest.mark.backend("cassandra")

KEYSPACE = "chatmem_test"


@pytest.fixture(scope="module")
def url() -> str:
    return server_url("cassandra")


@pytest.fixture(scope="module")
def prefix(url: str) -> Iterator[str]:
    """A table prefix of this module's own, its tables dropped afterwards."""
    name = f"sum{uuid.uuid4().hex[:8]}_"
    with CassandraChatMemoryRepository.from_url(
        url, create_keyspace=True, table_prefix=name
    ) as repository:
        repository.find_conversation_ids()  # creates the keyspace and tables
    yield name
    cluster = Cluster(["127.0.0.1"], port=_port(url))
    try:
        session = cluster.connect(KEYSPACE)
        for table in ("messages_v2", "conversations_v2"):
            session.execute(f"DROP TABLE IF EXISTS {name}{table}", timeout=60)
    finally:
        cluster.shutdown()


def _port(url: str) -> int:
    return int(url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


class TestCassandraSummariesAsync(AsyncSummaryConformance):
    @pytest.fixture
    def repository_factory(
        self, url: str, prefix: str
    ) -> Callable[..., Awaitable[AsyncCassandraChatMemoryRepository]]:
        async def factory(**options: Any) -> AsyncCassandraChatMemoryRepository:
            return AsyncCassandraChatMemoryRepository.from_url(url, table_prefix=prefix, **options)

        return factory


class TestCassandraSummariesSync(SummaryConformance):
    @pytest.fixture
    def repository_factory(self, url: str, prefix: str) -> Callable[..., Any]:
        def factory(**options: Any) -> CassandraChatMemoryRepository:
            return CassandraChatMemoryRepository.from_url(url, table_prefix=prefix, **options)

        return factory


# -- Cassandra's own: server-side expiry, save_all, bad input, an older table ----------------


@pytest.fixture
def repository(url: str, prefix: str) -> Iterator[CassandraChatMemoryRepository]:
    with CassandraChatMemoryRepository.from_url(url, table_prefix=prefix) as repository:
        yield repository


@pytest.fixture
def cid() -> str:
    return f"summary-{uuid.uuid4()}"


def test_summary_expires_with_its_conversation_on_the_server(
    url: str, prefix: str, cid: str
) -> None:
    with CassandraChatMemoryRepository.from_url(url, table_prefix=prefix, ttl=1) as repository:
        stored = repository.append(cid, [UserMessage("a")])
        assert repository.save_summary(cid, "old life", stored[0].position, expected_version=0)
        assert repository.find_summary(cid) is not None
        # The server expires it (a 1 s TTL lives 1 to 2 s after the last append).
        wait_until(
            lambda: repository.find_summary(cid) is None,
            within=30,
            reason="the summary expires with its conversation",
        )
        # An expired conversation gets no summary: it would outlive it.
        assert not repository.save_summary(cid, "late", stored[0].position, expected_version=1)
        assert not repository.save_summary(cid, "late", stored[0].position, expected_version=0)
        # The next life starts without the old summary, at version 0.
        stored = repository.append(cid, [UserMessage("b")])
        assert repository.find_summary(cid) is None
        assert repository.save_summary(cid, "new life", stored[0].position, expected_version=0)
        summary = repository.find_summary(cid)
        assert summary is not None
        assert (summary.text, summary.version) == ("new life", 1)
        # A summary write does not keep the conversation alive: once the server has expired
        # the messages, the summary is gone too.
        wait_until(
            lambda: repository.find_by_conversation_id(cid) == [],
            within=30,
            reason="the conversation expires after its last append",
        )
        assert repository.find_summary(cid) is None
        repository.delete_by_conversation_id(cid)


def test_a_conversation_that_does_not_exist_gets_no_summary(
    repository: CassandraChatMemoryRepository, cid: str
) -> None:
    assert not repository.save_summary(cid, "orphan", 1, expected_version=0)
    assert repository.find_summary(cid) is None
    assert repository.find_by_conversation_id(cid) == []


def test_save_all_drops_the_summary(repository: CassandraChatMemoryRepository, cid: str) -> None:
    stored = repository.append(cid, [UserMessage(f"m{i}") for i in range(5)])
    assert repository.save_summary(cid, "five", stored[-1].position, expected_version=0)
    repository.save_all(cid, [UserMessage("only")])
    # The batch clears the partition, static columns with it: the summary goes with the
    # messages it summarized. The positions carry on after them.
    assert repository.find_summary(cid) is None
    assert [s.position for s in repository.find_history(cid)] == [6]
    assert repository.save_summary(cid, "one", 6, expected_version=0)
    repository.delete_by_conversation_id(cid)


def test_delete_before_keeps_the_summary(
    repository: CassandraChatMemoryRepository, cid: str
) -> None:
    stored = repository.append(cid, [UserMessage(f"m{i}") for i in range(4)])
    assert repository.save_summary(cid, "two", stored[1].position, expected_version=0)
    assert repository.delete_before(cid, stored[2].position) == 2
    summary = repository.find_summary(cid)
    assert summary is not None
    assert (summary.text, summary.covers, summary.version) == ("two", stored[1].position, 1)
    repository.delete_by_conversation_id(cid)


def test_bad_input_is_refused_and_writes_nothing(
    repository: CassandraChatMemoryRepository, cid: str
) -> None:
    stored = repository.append(cid, [UserMessage("a")])
    with pytest.raises(ConfigurationError, match="position"):
        repository.save_summary(cid, "x", "not-a-position", expected_version=0)
    with pytest.raises(ConfigurationError, match="expected_version"):
        repository.save_summary(cid, "x", stored[0].position, expected_version="0")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="string"):
        repository.save_summary(cid, None, stored[0].position, expected_version=0)  # type: ignore[arg-type]
    assert not repository.save_summary(cid, "x", stored[0].position, expected_version=-1)
    assert repository.find_summary(cid) is None
    assert repository.save_summary(cid, "ok", stored[0].position, expected_version=0)
    repository.delete_by_conversation_id(cid)


def test_an_older_table_gets_the_summary_columns(url: str, cid: str) -> None:
    """A messages table made before the summaries: "always" adds them, "never" says how."""
    name = f"old{uuid.uuid4().hex[:8]}_"
    cluster = Cluster(["127.0.0.1"], port=_port(url))
    session: Session = cluster.connect(KEYSPACE)
    try:
        with CassandraChatMemoryRepository.from_url(url, table_prefix=name) as repository:
            repository.find_conversation_ids()
        session.execute(
            f"ALTER TABLE {name}messages_v2 DROP (summary, summary_covers, summary_version)",
            timeout=60,
        )
        with CassandraChatMemoryRepository.from_url(
            url, table_prefix=name, initialize_schema="never"
        ) as repository:
            stored = repository.append(cid, [UserMessage("a")])  # the rest works
            with pytest.raises(ConfigurationError, match="ALTER TABLE"):
                repository.find_summary(cid)
            with pytest.raises(ConfigurationError, match="ALTER TABLE"):
                repository.save_summary(cid, "s", stored[0].position, expected_version=0)
        with CassandraChatMemoryRepository.from_url(url, table_prefix=name) as repository:
            assert repository.save_summary(cid, "s", stored[0].position, expected_version=0)
            assert repository.find_history(cid)[0].message.text == "a"
    finally:
        for table in ("messages_v2", "conversations_v2"):
            session.execute(f"DROP TABLE IF EXISTS {name}{table}", timeout=60)
        cluster.shutdown()
