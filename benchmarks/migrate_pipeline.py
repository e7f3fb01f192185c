#!/usr/bin/env python3
"""``chatmem migrate --from langchain-sql``, the pipeline before and after, side by side in one run.

A SQLite file is filled by LangChain's own ``SQLChatMessageHistory`` (``--messages`` messages in
conversations of ``--per-conversation``: system, user, assistant tool calls, tool results,
answers, as in ``migrate_sources.py``). Then, per destination and per round, interleaved (the
order rotates each round, so a load spike on the shared machine hits every variant):

- ``before``: the pipeline as it was, reproduced here: each conversation converted through
  LangChain's classes (``messages_from_dict`` + ``from_langchain``), then its stored messages
  read back and compared, everything appended, read back again to verify;
- ``after``: :func:`import_conversations` on :func:`read_source` as the command runs it now
  (ids known before converting; only what is missing is converted and appended), with
  ``--concurrency`` conversations at once (1 and the command's default);

each as a first run into an empty destination (``verify=True``, the command's default) and a
no-op re-run. The source read alone is timed too (rows read and converted, nothing written).
Reported: the median of the rounds in seconds and messages per second, each variant's ratio
to ``before``, and the load average before and after. Conversation ids carry a fresh tag and
are deleted afterwards. Usage:

    python benchmarks/migrate_pipeline.py \
        --postgresql postgresql+psycopg://test:test@127.0.0.1:54329/testdb \
        --redis redis://127.0.0.1:63799/0 [--messages 50000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from itertools import groupby
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import sqlalchemy
from _measure import add_destination_arguments, destinations, load_average, timed
from migrate_sources import fill

from chatmem import ChatMemoryLog
from chatmem_cli._transfer_commands import MIGRATE_CONCURRENCY
from chatmem_cli.importers import langchain as langchain_importer
from chatmem_cli.importers.sources import ImportedConversation, import_conversations, read_source
from chatmem_repositories import create_repository


def before_read(url: str) -> Iterator[ImportedConversation]:
    """The langchain-sql reader as it was: every conversation converted through LangChain."""
    engine = sqlalchemy.create_engine(url)
    table = sqlalchemy.Table("message_store", sqlalchemy.MetaData(), autoload_with=engine)
    query = sqlalchemy.select(table.c.session_id, table.c.id, table.c.message).order_by(
        table.c.session_id, table.c.id
    )
    try:
        with engine.connect() as connection:
            for session, group in groupby(connection.execute(query), key=lambda row: str(row[0])):
                items = [(row_id, json.loads(message), None) for _, row_id, message in group]
                yield langchain_importer._convert("langchain-sql:message_store", session, items)
    finally:
        engine.dispose()


def _stored_ids(repository: ChatMemoryLog, conversation_id: str) -> list[str]:
    ids: list[str] = []
    after = None
    while True:
        page = repository.find_history(conversation_id, after=after, limit=500)
        ids.extend(stored.message.id for stored in page)
        if len(page) < 500:
            return ids
        after = page[-1].position


def before_import(conversations: Iterator[ImportedConversation], repository: ChatMemoryLog) -> int:
    """``import_conversations(..., verify=True)`` as it was."""
    stored = 0
    for conversation in conversations:
        messages = conversation.messages
        held = set(_stored_ids(repository, conversation.conversation_id))
        if all(m.id in held for m in messages):
            continue
        for start in range(0, len(messages), 500):
            batch = messages[start : start + 500]
            stored += len(repository.append(conversation.conversation_id, batch))
        held = set(_stored_ids(repository, conversation.conversation_id))
        assert all(m.id in held for m in messages)
    return stored


def after_import(source: str, concurrency: int) -> Callable[[ChatMemoryLog], int]:
    def run(repository: ChatMemoryLog) -> int:
        report = import_conversations(
            read_source("langchain-sql", source),
            repository,
            verify=True,
            concurrency=concurrency,
        )
        assert not report.mismatches, report.mismatches[:3]
        return report.messages_stored

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_destination_arguments(parser)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-before", action="store_true", help="time only the new pipeline")
    args = parser.parse_args()
    targets = destinations(args)
    tag = f"bench-{uuid.uuid4().hex[:8]}"
    print(f"load average (1/5/15 min) at start: {load_average()}")
    with tempfile.TemporaryDirectory() as directory:
        source = f"sqlite:///{Path(directory) / 'langchain.db'}"
        sessions, _ = fill(source, tag, args.messages, args.per_conversation)
        total = args.messages
        print(f"source: {total} messages in {len(sessions)} conversations (SQLite)")
        reads: dict[str, list[float]] = {"before": [], "after": []}
        for _ in range(args.rounds):
            _, seconds = timed(lambda: [c.messages for c in before_read(source)])
            reads["before"].append(seconds)
            _, seconds = timed(lambda: [c.messages for c in read_source("langchain-sql", source)])
            reads["after"].append(seconds)
            _, seconds = timed(
                lambda: [c.message_ids for c in read_source("langchain-sql", source)]
            )
            reads.setdefault("after, ids only", []).append(seconds)
        print("\n| source read | median s | msg/s |\n| --- | --- | --- |")
        for name, values in reads.items():
            median = statistics.median(values)
            print(f"| {name} | {median:.2f} | {total / median:,.0f} |")
        variants: dict[str, Callable[[ChatMemoryLog], int]] = {}
        if not args.skip_before:
            variants["before"] = lambda r: before_import(before_read(source), r)
        variants["after, concurrency 1"] = after_import(source, 1)
        variants[f"after, concurrency {MIGRATE_CONCURRENCY}"] = after_import(
            source, MIGRATE_CONCURRENCY
        )
        for name, url in targets.items():
            if url is None:
                continue
            first: dict[str, list[float]] = {v: [] for v in variants}
            again: dict[str, list[float]] = {v: [] for v in variants}
            with create_repository(url) as repository:
                assert isinstance(repository, ChatMemoryLog)
                order = list(variants)
                try:
                    for round_ in range(args.rounds):
                        for variant in order[round_ % len(order) :] + order[: round_ % len(order)]:
                            for session in sessions:
                                repository.delete_by_conversation_id(session)
                            stored, seconds = timed(lambda v=variant: variants[v](repository))
                            assert stored == total, (variant, stored)
                            first[variant].append(seconds)
                            stored, seconds = timed(lambda v=variant: variants[v](repository))
                            assert stored == 0, (variant, stored)
                            again[variant].append(seconds)
                finally:
                    for session in sessions:
                        repository.delete_by_conversation_id(session)
            print(
                f"\n{name} ({args.rounds} rounds, medians)\n\n"
                "| pipeline | first run s | msg/s | vs before | no-op re-run s | vs before |\n"
                "| --- | --- | --- | --- | --- | --- |"
            )
            base_first = statistics.median(first.get("before", [0.0]))
            base_again = statistics.median(again.get("before", [0.0]))
            for variant in variants:
                f, a = statistics.median(first[variant]), statistics.median(again[variant])
                print(
                    f"| {variant} | {f:.2f} | {total / f:,.0f} | "
                    + (f"{base_first / f:.1f}x" if base_first else "-")
                    + f" | {a:.2f} | "
                    + (f"{base_again / a:.1f}x" if base_again else "-")
                    + " |"
                )
    print(f"\nload average (1/5/15 min) at the end: {load_average()}")


if __name__ == "__main__":
    main()
