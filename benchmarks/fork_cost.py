#!/usr/bin/env python3
"""What a fork costs against the length of its parent: time and messages stored.

Fills one parent conversation per length (200-character messages, a system message first),
then forks it several times at its newest message and at its middle, each fork into a new id.
A fork stores the parent's system message and its newest ``fork_carry`` messages up to the
fork point, so both columns should stay flat as the parent grows. Prints one Markdown row per
length: median and worst milliseconds per fork, and the messages each fork stored.

Usage:
    python benchmarks/fork_cost.py --url sqlite:////tmp/fork.db
    python benchmarks/fork_cost.py --url postgresql+psycopg://test:test@127.0.0.1:54329/testdb \
        --lengths 10,10000,100000 --forks 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chatmem import AssistantMessage, Message, Sessions, SystemMessage, UserMessage
from chatmem_repositories import create_repository, redact_url

BATCH = 1000
TEXT = "lorem ipsum dolor sit amet " * 8
SERVER_SQL = ("postgresql", "mysql", "mariadb")


def options(url: str) -> dict[str, Any]:
    scheme = url.split(":", 1)[0].split("+", 1)[0]
    return {"initialize_schema": "always"} if scheme in SERVER_SQL else {}


def fill(sessions: Sessions, conversation_id: str, length: int) -> list[Any]:
    """Store ``length`` messages; return the positions of the chat messages."""
    positions: list[Any] = []
    messages: list[Message] = [SystemMessage("be brief")]
    for i in range(length - 1):
        kind = UserMessage if i % 2 == 0 else AssistantMessage
        messages.append(kind(f"{i:06d} {TEXT}"[:200]))
        if len(messages) == BATCH:
            positions += [s.position for s in sessions.append(conversation_id, messages)]
            messages = []
    if messages:
        positions += [s.position for s in sessions.append(conversation_id, messages)]
    return positions[1:] if length else positions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--lengths", default="10,10000,100000")
    parser.add_argument("--forks", type=int, default=5, help="forks per point and length")
    parser.add_argument("--carry", type=int, default=500, help="fork_carry")
    args = parser.parse_args()
    repository = create_repository(args.url, **options(args.url))
    sessions = Sessions(repository, fork_carry=args.carry)
    print(f"# fork cost on {redact_url(args.url)}, fork_carry={args.carry}\n")
    print("| parent messages | fork point | median ms | max ms | messages stored by a fork |")
    print("|---:|---|---:|---:|---:|")
    try:
        for length in (int(n) for n in args.lengths.split(",")):
            parent = f"fork-bench-{uuid.uuid4()}"
            positions = fill(sessions, parent, length)
            for label, at in (("newest", None), ("middle", positions[len(positions) // 2])):
                times: list[float] = []
                stored: list[int] = []
                for _ in range(args.forks):
                    child = f"{parent}-{uuid.uuid4().hex[:8]}"
                    start = time.perf_counter()
                    sessions.fork(parent, child, at=at)
                    times.append((time.perf_counter() - start) * 1000)
                    stored.append(len(repository.find_by_conversation_id(child)))
                    repository.delete_by_conversation_id(child)
                print(
                    f"| {length:,} | {label} | {statistics.median(times):.1f} "
                    f"| {max(times):.1f} | {max(stored)} |"
                )
            repository.delete_by_conversation_id(parent)
    finally:
        repository.close()


if __name__ == "__main__":
    main()
