#!/usr/bin/env python3
"""``chatmem import`` (the export's JSON Lines into a repository), before and after, in one run.

An export file of ``--messages`` messages in conversations of ``--per-conversation`` is
written the way ``chatmem export`` writes it (system, user, assistant tool calls, tool results,
answers). Then, per destination and per round, interleaved (the order rotates each round):

- ``before``: ``import_lines`` as it was, reproduced here: every line parsed with ``json``,
  re-serialized and decoded, in the check pass and again in the write pass; every message
  appended (the repository skipping stored ids); skipped messages compared by digest with
  the conversation read back;
- ``after``: :func:`chatmem_cli._transfer_engine.import_lines` as the command runs it now (the
  export's own lines decoded a thousand per call; a conversation's stored messages read
  first, so only new ones are appended), with concurrency 1 and the command's default;

each as a first run into an empty destination and a no-op re-run. Reported: medians of the
rounds (seconds, messages per second), ratios to ``before``, the load average. Usage:

    python benchmarks/import_lines.py \
        --postgresql postgresql+psycopg://test:test@127.0.0.1:54329/testdb \
        --redis redis://127.0.0.1:63799/0 [--messages 50000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import add_destination_arguments, destinations, load_average, timed

from chatmem import (
    AssistantMessage,
    ChatMemoryLog,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    decode_message,
    encode_message,
)
from chatmem_cli._transfer_commands import MIGRATE_CONCURRENCY
from chatmem_cli._transfer_engine import import_lines, iter_history
from chatmem_repositories import create_repository


def conversation(index: int, size: int) -> list[Message]:
    messages: list[Message] = [SystemMessage(f"You are agent {index}.")]
    turn = 0
    while len(messages) < size:
        call = f"call_{index}_{turn}"
        messages += [
            UserMessage(f"question {turn}: " + "lorem ipsum " * 6),
            AssistantMessage(tool_calls=[ToolCall(id=call, name="lookup", arguments="{}")]),
            ToolResponseMessage(
                responses=[ToolResponse(id=call, name="lookup", response_data='{"hits": 1}')]
            ),
            AssistantMessage(f"answer {turn}: " + "dolor sit amet " * 6),
        ]
        turn += 1
    return messages[:size]


def write_export(path: Path, tag: str, total: int, size: int) -> list[str]:
    sessions = [f"{tag}-{i:05d}" for i in range((total + size - 1) // size)]
    with path.open("w", encoding="utf-8") as out:
        for index, session in enumerate(sessions):
            prefix = '{"conversation_id":' + json.dumps(session)
            for message in conversation(index, min(size, total - index * size)):
                out.write(f'{prefix},"message":{encode_message(message)}}}\n')
    return sessions


# -- import_lines as it was ----------------------------------------------------------------


def _parse_line(line: str) -> tuple[str, Message]:
    record = json.loads(line)
    encoded = json.dumps(record["message"], ensure_ascii=False)
    return record["conversation_id"], decode_message(encoded)


def _digest(message: Message) -> bytes:
    return hashlib.blake2b(encode_message(message).encode(), digest_size=16).digest()


def before_check(source: IO[str]) -> None:
    for line in source:
        if line.strip():
            _parse_line(line)
    source.seek(0)


def before_batches(source: IO[str]) -> Iterator[tuple[str, list[Message], bool]]:
    """Batches of up to 500 lines of one conversation; whether the conversation changes next."""
    batch: list[Message] = []
    current = ""
    for line in source:
        if not line.strip():
            continue
        conversation_id, message = _parse_line(line)
        if batch and (conversation_id != current or len(batch) >= 500):
            yield current, batch, conversation_id != current
            batch = []
        current = conversation_id
        batch.append(message)
    if batch:
        yield current, batch, True


def before_import(repository: ChatMemoryLog, source: IO[str]) -> int:
    before_check(source)
    stored = 0
    skipped: dict[str, list[bytes]] = {}
    for conversation_id, batch, last in before_batches(source):
        appended = repository.append(conversation_id, batch)
        stored += len(appended)
        new = {item.message.id for item in appended}
        for message in batch:
            if message.id in new:
                new.discard(message.id)
            else:
                skipped.setdefault(message.id, []).append(_digest(message))
        if last and skipped:
            for page in iter_history(repository, conversation_id):
                for message in page:
                    digests = skipped.pop(message.id, None)
                    assert not digests or all(d == _digest(message) for d in digests)
            skipped.clear()
    return stored


def after_import(concurrency: int) -> Callable[[ChatMemoryLog, IO[str]], int]:
    def run(repository: ChatMemoryLog, source: IO[str]) -> int:
        report = import_lines(repository, source, concurrency=concurrency)
        assert not report.conflicts, report.conflicts[:3]
        return report.stored

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_destination_arguments(parser)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    targets = destinations(args)
    variants: dict[str, Callable[[ChatMemoryLog, IO[str]], int]] = {
        "before": before_import,
        "after, concurrency 1": after_import(1),
        f"after, concurrency {MIGRATE_CONCURRENCY}": after_import(MIGRATE_CONCURRENCY),
    }
    total = args.messages
    print(f"load average (1/5/15 min) at start: {load_average()}")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "export.jsonl"
        sessions = write_export(path, f"bench-{uuid.uuid4().hex[:8]}", total, args.per_conversation)
        print(f"export: {total} messages in {len(sessions)} conversations")
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
                            for runs, expected in ((first, total), (again, 0)):
                                with path.open(encoding="utf-8") as source:
                                    stored, seconds = timed(
                                        lambda v=variant, s=source: variants[v](repository, s)
                                    )
                                assert stored == expected, (variant, stored)
                                runs[variant].append(seconds)
                finally:
                    for session in sessions:
                        repository.delete_by_conversation_id(session)
            print(
                f"\n{name} ({args.rounds} rounds, medians)\n\n"
                "| import | first run s | msg/s | vs before | no-op re-run s | vs before |\n"
                "| --- | --- | --- | --- | --- | --- |"
            )
            base_first = statistics.median(first["before"])
            base_again = statistics.median(again["before"])
            for variant in variants:
                f, a = statistics.median(first[variant]), statistics.median(again[variant])
                print(
                    f"| {variant} | {f:.2f} | {total / f:,.0f} | {base_first / f:.1f}x | "
                    f"{a:.2f} | {base_again / a:.1f}x |"
                )
    print(f"\nload average (1/5/15 min) at the end: {load_average()}")


if __name__ == "__main__":
    main()
