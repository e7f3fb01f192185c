"""The benchmark peers really keep a conversation: no peer measures a turn that does nothing.

Every installed peer, on every store of the test servers it shares with chatmem, is opened,
seeded, turned and closed; what a turn stored is read back through the library's own read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.peers import Peer, available_peers, measure_peers, missing_peers
from benchmarks.peers.__main__ import table
from benchmarks.peers._common import answer, conversation_id, question
from tests.support.servers import server_url

# langchain-community warns on import that it is being sunset; its histories are still what
# many apps use, so they stay peers.
pytestmark = pytest.mark.filterwarnings(
    "ignore:`langchain-community` is being sunset:DeprecationWarning"
)

STORES = ("sqlite", "postgresql", "mariadb", "redis", "mongodb", "cassandra", "neo4j")
# The peers the dev extra installs, by store: a peer that goes missing fails here.
EXPECTED = {
    "sqlite": {
        "chatmem",
        "chatmem ChatmemSession",
        "langchain-community-sql",
        "openai-agents SQLiteSession",
        "google-adk DatabaseSessionService",
    },
    "postgresql": {
        "chatmem",
        "chatmem ChatmemMessageHistory",
        "chatmem ChatmemSession",
        "langchain-postgres",
        "langchain-community-sql",
        "llama-index PostgresChatStore",
        "openai-agents SQLAlchemySession",
        "google-adk DatabaseSessionService",
        "langgraph AsyncPostgresSaver",
    },
    "mariadb": {"chatmem", "langchain-community-sql"},
    "redis": {
        "chatmem",
        "chatmem ChatmemMessageHistory",
        "chatmem ChatmemSession",
        "langchain-community",
        "llama-index RedisChatStore",
        "openai-agents RedisSession",
    },
    "mongodb": {"chatmem"},
    "cassandra": {"chatmem"},
    "neo4j": {"chatmem"},
}


def store_url(store: str, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'peers.db'}" if store == "sqlite" else server_url(store)


def test_every_peer_of_the_dev_extra_is_installed() -> None:
    assert missing_peers() == {}
    for store, names in EXPECTED.items():
        assert {peer.name for peer in available_peers([store])} == names, store


async def check_turns(peer: Peer, url: str) -> None:
    await peer.open(url)
    try:
        conversation = conversation_id()
        await peer.seed(conversation, 4)
        seeded = [question(0), answer(0), question(1), answer(1)]
        assert await peer.stored(conversation) == seeded
        # The turn's read returns the history (a window of 20 holds all 4), then stores two.
        assert await peer.turn(conversation) == 4
        after = await peer.stored(conversation)
        assert after[:4] == seeded
        assert len(after) == 6
        assert after[4].startswith("question ")
        assert after[5].startswith("answer ")
        assert await peer.turn(conversation) == 6
        assert len(await peer.stored(conversation)) == 8
    finally:
        await peer.close()


@pytest.mark.parametrize("store", STORES)
async def test_each_peer_turn_stores_two_messages_and_reads_the_history(
    store: str, tmp_path: Path
) -> None:
    url = store_url(store, tmp_path)
    peers = available_peers([store])
    assert peers, store
    for peer in peers:
        assert peer.store == store
        await check_turns(peer, url)


async def test_measure_peers_gives_samples_of_each_peer_and_size(tmp_path: Path) -> None:
    peers = available_peers(["sqlite"])
    rows = await measure_peers(
        peers, lambda store: store_url(store, tmp_path), sizes=[2, 6], turns=3, warmup=1
    )
    assert [(r["peer"], r["store"], r["n"]) for r in rows] == [
        (peer.name, "sqlite", n) for peer in peers for n in (2, 6)
    ]
    for row in rows:
        assert len(row["samples_ms"]) == 3
        assert all(sample > 0 for sample in row["samples_ms"])


def test_table_gives_medians_and_ratios_to_the_fastest_peer() -> None:
    rows = [
        {"peer": "a", "store": "redis", "n": 10, "samples_ms": [1.0, 2.0, 9.0]},
        {"peer": "b", "store": "redis", "n": 10, "samples_ms": [4.0, 4.0, 5.0]},
        {"peer": "a", "store": "postgresql", "n": 10, "samples_ms": [3.0]},
    ]
    assert table(rows, [10]).splitlines()[2:] == [
        "| postgresql | a | 3.00 (1.0x) |",
        "| redis | a | 2.00 (1.0x) |",
        "| redis | b | 4.00 (2.0x) |",
    ]
