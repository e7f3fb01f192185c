#!/usr/bin/env python3
"""Count MongoDB commands per memory read and per append, with pymongo's command monitoring.

Usage:
    python benchmarks/mongodb_round_trips.py --url mongodb://127.0.0.1:27027/chatmem_bench
    python benchmarks/mongodb_round_trips.py --url ... --ttl 3600   # with stored expiry
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pymongo import monitoring

from chatmem import AssistantMessage, MessageWindowChatMemory, SystemMessage, UserMessage
from chatmem_repositories.mongodb import MongoChatMemoryRepository


class Counting(monitoring.CommandListener):
    def __init__(self) -> None:
        self.names: Counter[str] = Counter()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.names[event.command_name] += 1

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="mongodb://127.0.0.1:27027/chatmem_bench")
    parser.add_argument("--ttl", type=float, default=None)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    counter = Counting()
    prefix = f"rt{uuid.uuid4().hex[:6]}_"
    options = {"collection_prefix": prefix, "event_listeners": [counter]}
    if args.ttl:
        options["ttl"] = args.ttl
    with MongoChatMemoryRepository.from_url(args.url, **options) as repository:
        memory = MessageWindowChatMemory(repository, max_messages=20)
        cid = f"rt-{uuid.uuid4()}"
        memory.add(
            cid, [SystemMessage("You are terse."), UserMessage("hi"), AssistantMessage("hi")]
        )
        reads: Counter[str] = Counter()
        appends: Counter[str] = Counter()
        for i in range(args.turns):
            counter.names.clear()
            memory.get(cid)
            reads += counter.names
            counter.names.clear()
            memory.add(cid, UserMessage(f"question {i}"))
            memory.add(cid, AssistantMessage(f"answer {i}"))
            appends += counter.names
        repository._messages.drop()
        repository._conversations.drop()
    per_read = sum(reads.values()) / args.turns
    per_append = sum(appends.values()) / (2 * args.turns)
    print(f"commands per memory read: {per_read:g} {dict(reads)}")
    print(f"commands per append:      {per_append:g} {dict(appends)}")
    print(f"commands per turn:        {per_read + 2 * per_append:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
