#!/usr/bin/env python3
"""Bulk appends into an SQL repository: ``chatmem migrate`` from an in-memory source.

A ``memory://`` source is filled with ``--messages`` messages in conversations of
``--per-conversation`` (user/assistant, 200 characters). Then, in one run:

- ``migrate``: ``chatmem_cli``'s ``migrate(source, destination, verify=True)``, what the
  command runs: messages per second, end to end;
- ``no-op re-run``: the same again; every message is skipped by id (idempotent append);
- ``append only``: the destination alone, every conversation appended again as pages of
  500 into fresh conversation ids (no source reads, no verification).

Conversation ids carry a fresh tag and are deleted afterwards. Usage:

    python benchmarks/sql_bulk.py --url postgresql://test:test@127.0.0.1:54329/testdb
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chatmem import AssistantMessage, Message, UserMessage
from chatmem_cli._transfer import migrate
from chatmem_repositories import create_repository, redact_url

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]
PAGE = 500


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="destination SQL repository URL")
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--per-conversation", type=int, default=100)
    args = parser.parse_args()
    tag = uuid.uuid4().hex[:8]
    source = create_repository("memory://")
    destination = create_repository(args.url, initialize_schema="always")
    conversations = args.messages // args.per_conversation
    histories: dict[str, list[Message]] = {}
    for c in range(conversations):
        cid = f"bulk-{tag}-{c}"
        history: list[Message] = [
            (UserMessage if i % 2 == 0 else AssistantMessage)(f"{i:06d} {TEXT}"[:200])
            for i in range(args.per_conversation)
        ]
        source.append(cid, history)
        histories[cid] = history
    try:
        print(f"{redact_url(args.url)}: {args.messages} messages, {conversations} conversations")
        began = time.perf_counter()
        report = migrate(source, destination, verify=True)
        took = time.perf_counter() - began
        if report.stored != args.messages or report.mismatches:
            raise SystemExit(f"migrate copied {report.stored}: {report.mismatches[:3]}")
        print(f"  migrate        {took:7.2f} s  {args.messages / took:9.0f} msg/s")
        began = time.perf_counter()
        report = migrate(source, destination, verify=True)
        took = time.perf_counter() - began
        if report.stored or report.mismatches:
            raise SystemExit(f"re-run copied {report.stored}: {report.mismatches[:3]}")
        print(f"  no-op re-run   {took:7.2f} s")
        began = time.perf_counter()
        for cid, history in histories.items():
            for start in range(0, len(history), PAGE):
                destination.append(f"{cid}-again", history[start : start + PAGE])
        took = time.perf_counter() - began
        print(f"  append only    {took:7.2f} s  {args.messages / took:9.0f} msg/s")
    finally:
        for cid in histories:
            destination.delete_by_conversation_id(cid)
            destination.delete_by_conversation_id(f"{cid}-again")
        destination.close()
        source.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
