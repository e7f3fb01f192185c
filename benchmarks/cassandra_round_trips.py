#!/usr/bin/env python3
"""Count the statements the Cassandra repository sends per call, at several history lengths.

Counted with the driver's own request listener (``Session.add_request_init_listener``), on a
borrowed session. ``memory.get`` uses ``find_window`` (one query). An append to a
conversation that exists is its conditional batch alone (one statement); the append that
starts one also sends the listing rows at the same time. ``append ttl`` is a later append with
a TTL: the batch and the listing rows, which every append under a TTL keeps alive (two
statements, one round trip of latency; the first append of a conversation with a TTL costs
two rounds). Usage:

    python benchmarks/cassandra_round_trips.py --url cassandra://127.0.0.1:9042/chatmem_test
"""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cassandra.cluster import Cluster

from chatmem import AssistantMessage, MessageWindowChatMemory, SystemMessage, UserMessage
from chatmem_repositories.cassandra import CassandraChatMemoryRepository


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="cassandra://127.0.0.1:9042/chatmem_test")
    parser.add_argument("--lengths", default="10,1000,100000")
    args = parser.parse_args()
    hostport, keyspace = args.url.split("://", 1)[1].split("/", 1)
    host, _, port = hostport.partition(":")
    with CassandraChatMemoryRepository.from_url(args.url, create_keyspace=True) as setup:
        setup.find_conversation_ids()
    cluster = Cluster([host], port=int(port or 9042))
    session = cluster.connect()
    sent: list[Any] = []
    repository = CassandraChatMemoryRepository(session, keyspace=keyspace.split("?")[0])
    expiring = CassandraChatMemoryRepository(session, keyspace=keyspace.split("?")[0], ttl=3600)
    memory = MessageWindowChatMemory(repository, max_messages=20)
    try:
        print(
            f"{'stored':>8} {'memory.get':>10} {'find_window':>11} {'find_recent':>11}"
            f" {'system':>6} {'append':>6} {'append ttl':>10}"
        )
        for length in (int(n) for n in args.lengths.split(",")):
            cid = f"round-trips-{uuid.uuid4()}"
            repository.append(cid, [SystemMessage("be brief")])
            for start in range(0, length, 1000):
                count = min(1000, length - start)
                repository.append(
                    cid,
                    [
                        (UserMessage if i % 2 == 0 else AssistantMessage)(f"m{i}")
                        for i in range(start, start + count)
                    ],
                )
            # A conversation of its own: a repository with a TTL takes one written without
            # a TTL (no liveness cell) for an expired one, and starts it anew.
            expiring_cid = f"{cid}-ttl"
            expiring.append(expiring_cid, [UserMessage("start")])  # starts it (two rounds)
            session.add_request_init_listener(sent.append)

            def count(call: Any) -> int:
                before = len(sent)
                call()
                return len(sent) - before

            row = (
                count(lambda: memory.get(cid)),  # noqa: B023
                count(lambda: repository.find_window(cid, 20)),  # noqa: B023
                count(lambda: repository.find_recent(cid, 20)),  # noqa: B023
                count(lambda: repository.find_system_message(cid)),  # noqa: B023
                count(lambda: repository.append(cid, [UserMessage("x")])),  # noqa: B023
                count(lambda: expiring.append(expiring_cid, [UserMessage("y")])),  # noqa: B023
            )
            session.remove_request_init_listener(sent.append)
            print(
                f"{length:>8} {row[0]:>10} {row[1]:>11} {row[2]:>11} {row[3]:>6} {row[4]:>6}"
                f" {row[5]:>10}"
            )
            repository.delete_by_conversation_id(cid)
            expiring.delete_by_conversation_id(expiring_cid)
    finally:
        repository.close()
        cluster.shutdown()


if __name__ == "__main__":
    main()
