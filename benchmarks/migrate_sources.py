#!/usr/bin/env python3
"""Throughput of ``chatmem migrate --from langchain-sql``: LangChain's SQL table into chatmem.

A SQLite file is filled by LangChain's own ``SQLChatMessageHistory`` (``--messages`` messages in
conversations of ``--per-conversation``: system, user, assistant tool calls, tool results,
answers). Then, for each destination (PostgreSQL and Redis), in one run:

- ``read``: the source alone (``read_source`` iterated, converted, nothing written);
- ``migrate``: ``import_conversations(read_source(...), destination, verify=True)``, what the
  command runs, end to end: messages per second;
- ``no-op re-run``: the same again, end to end: every conversation is found complete by its
  message ids, which the reader knows before converting, so nothing is converted or appended;
- the destination's share of a re-run, from conversations already read: the completeness
  check (``import_conversations`` on the read list) beside appending every message again
  and letting the repository skip them by id (its idempotent append).

Conversation ids carry a fresh tag and are deleted from the destinations afterwards. For the
pipeline before and after side by side, see ``migrate_pipeline.py``. Needs
``pip install "chatmem[langchain,postgresql,redis]" langchain-community``. Usage:

    python benchmarks/migrate_sources.py \
        --postgresql postgresql+psycopg://test:test@127.0.0.1:54329/testdb \
        --redis redis://127.0.0.1:63799/0 [--messages 50000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import add_destination_arguments, destinations, timed
from langchain_core import messages as lc

import chatmem_cli.importers.langchain  # noqa: F401  (imported before any timing)
from chatmem import ChatMemoryLog
from chatmem_cli.importers.sources import ImportedConversation, import_conversations, read_source
from chatmem_repositories import create_repository

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # langchain-community is being sunset
    from langchain_community.chat_message_histories import SQLChatMessageHistory


def conversation(index: int, size: int) -> list[lc.BaseMessage]:
    messages: list[lc.BaseMessage] = [lc.SystemMessage(f"You are agent {index}.")]
    turn = 0
    while len(messages) < size:
        call = f"call_{index}_{turn}"
        messages += [
            lc.HumanMessage(f"question {turn}: " + "lorem ipsum " * 6),
            lc.AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": turn}, "id": call}]),
            lc.ToolMessage(f'{{"hits": {turn}}}', tool_call_id=call, name="lookup"),
            lc.AIMessage(f"answer {turn}: " + "dolor sit amet " * 6),
        ]
        turn += 1
    return messages[:size]


def fill(url: str, tag: str, total: int, size: int) -> tuple[list[str], float]:
    sessions = [f"{tag}-{i:05d}" for i in range((total + size - 1) // size)]
    started = time.perf_counter()
    for index, session in enumerate(sessions):
        count = min(size, total - index * size)
        SQLChatMessageHistory(session, connection=url).add_messages(conversation(index, count))
    return sessions, time.perf_counter() - started


def read_converted(source: str) -> list[ImportedConversation]:
    """Every conversation, converted (a reader defers that until the messages are asked for)."""
    conversations = list(read_source("langchain-sql", source))
    assert all(conversation.messages for conversation in conversations)
    return conversations


def append_all(conversations: list[ImportedConversation], repository: ChatMemoryLog) -> int:
    stored = 0
    for item in conversations:
        for start in range(0, len(item.messages), 500):
            batch = item.messages[start : start + 500]
            stored += len(repository.append(item.conversation_id, batch))
    return stored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_destination_arguments(parser)
    args = parser.parse_args()
    targets = destinations(args)
    tag = f"bench-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as directory:
        source = f"sqlite:///{Path(directory) / 'langchain.db'}"
        sessions, filled = fill(source, tag, args.messages, args.per_conversation)
        print(
            f"source: {args.messages} messages in {len(sessions)} conversations written by "
            f"SQLChatMessageHistory to SQLite in {filled:.1f} s"
        )
        read, read_s = timed(lambda: read_converted(source))
        count = sum(len(c.messages) for c in read)
        print(f"read only: {count} messages in {read_s:.2f} s ({count / read_s:,.0f} msg/s)")
        print(
            "| destination | migrate | msg/s | no-op re-run | re-run, destination share: "
            "check | append all again | ratio |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for name, url in targets.items():
            if url is None:
                continue
            with create_repository(url) as repository:
                assert isinstance(repository, ChatMemoryLog)
                try:
                    first, first_s = timed(
                        lambda r=repository: import_conversations(
                            read_source("langchain-sql", source), r, verify=True
                        )
                    )
                    assert first.messages_stored == args.messages, first
                    assert not first.mismatches, first.mismatches[:3]
                    again, again_s = timed(
                        lambda r=repository: import_conversations(
                            read_source("langchain-sql", source), r, verify=True
                        )
                    )
                    assert again.messages_stored == 0
                    assert again.conversations_skipped == len(sessions)
                    check, check_s = timed(
                        lambda r=repository: import_conversations(read, r, verify=True)
                    )
                    assert check.messages_stored == 0
                    stored, append_s = timed(lambda r=repository: append_all(read, r))
                    assert stored == 0
                finally:
                    for session in sessions:
                        repository.delete_by_conversation_id(session)
            print(
                f"| {name} | {first_s:.1f} s | {args.messages / first_s:,.0f} | "
                f"{again_s:.2f} s | {check_s:.2f} s | {append_s:.2f} s | "
                f"{append_s / check_s:.1f}x |"
            )


if __name__ == "__main__":
    main()
