#!/usr/bin/env python3
"""Erasing an owner's 10,000 conversations and rotating their keys, and runs stopped half way.

Per destination (an SQLite file, and PostgreSQL and Redis when given: the test servers by
default), in a store of the run's own (a new table or key prefix, dropped afterwards, since a
rotation visits every conversation it lists), encrypted with a key ``k1``, one owner's
``--conversations`` conversations of ``--messages`` messages each are written (4 threads),
then, with ``--concurrency`` conversations at once (the command line's default):

1. ``rotate k1 to k2`` (every process on ``k2,k1``), then the same rotation again (nothing
   left to wrap);
2. a rotation to ``k3`` stopped half way, then run again (it lists every conversation again
   and wraps the keys of the other half);
3. the owner's erase stopped half way, then run again (it lists only what is left), then
   again (nothing left).

Each line gives the seconds, what the run reported and the rate. ``--plain`` measures the
erase on a store without encryption (no rotation). Usage:

    python benchmarks/erase_rotate.py [--conversations 10000] [--messages 3] \
        [--concurrency 4] [--only sqlite|postgresql|redis] [--plain] \
        [--postgresql postgresql+psycopg://test:test@127.0.0.1:54329/testdb] \
        [--redis redis://127.0.0.1:63799/0]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis
import sqlalchemy
from _measure import load_average, timed

from chatmem import AssistantMessage, ChatMemoryLog, UserMessage, scoped_conversation_id
from chatmem.encryption import EncryptedLog, StaticKeyProvider
from chatmem.privacy import erase_owner, rotate_keys
from chatmem_cli._transfer_commands import MIGRATE_CONCURRENCY
from chatmem_repositories import create_repository

KEYS = {name: os.urandom(32) for name in ("k1", "k2", "k3")}


class StopError(Exception):
    """Raised where a run is stopped half way."""


class StoppingLog:
    """A log whose deletes stop after a number of them (an erase killed half way)."""

    def __init__(self, log: Any, deletes: int) -> None:
        self.log, self.left = log, deletes

    def __getattr__(self, name: str) -> Any:
        return getattr(self.log, name)

    def delete_by_conversation_id(self, conversation_id: str) -> None:
        if self.left == 0:
            raise StopError
        self.left -= 1
        self.log.delete_by_conversation_id(conversation_id)


class StoppingRotation(EncryptedLog):
    """An encrypted log whose rotation stops after a number of conversations."""

    def __init__(self, log: EncryptedLog, conversations: int) -> None:
        super().__init__(log.repository, log.keys)
        self.left = conversations

    def rewrap(self, conversation_id: str) -> int:
        if self.left == 0:
            raise StopError
        self.left -= 1
        return super().rewrap(conversation_id)


def provider(*names: str) -> StaticKeyProvider:
    return StaticKeyProvider({name: KEYS[name] for name in names})


def open_log(url: str, keys: StaticKeyProvider | None) -> ChatMemoryLog:
    repository = create_repository(url)
    return repository if keys is None else EncryptedLog(repository, keys)


def fill(log: ChatMemoryLog, owner: str, conversations: int, messages: int) -> None:
    def write(n: int) -> None:
        batch = [
            (UserMessage if i % 2 == 0 else AssistantMessage)(f"message {i} of chat {n}")
            for i in range(messages)
        ]
        log.append(scoped_conversation_id(owner, f"chat-{n}"), batch)

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(write, range(conversations)))


def row(what: str, seconds: float, counts: str, done: int, unit: str) -> None:
    rate = f"{done / seconds:,.0f} {unit}/s" if done else "-"
    print(f"| {what} | {seconds:.1f} | {counts} | {rate} |", flush=True)


def rotate(url: str, half: int, concurrency: int) -> None:
    with open_log(url, provider("k2", "k1")) as log:
        assert isinstance(log, EncryptedLog)
        report, seconds = timed(lambda: rotate_keys(log, concurrency=concurrency))
        row("rotate k1 to k2", seconds, str(report), report.conversations, "conversations")
        report, seconds = timed(lambda: rotate_keys(log, concurrency=concurrency))
        row("rotate again (nothing to do)", seconds, str(report), report.conversations, "conv.")
    with open_log(url, provider("k3", "k2")) as log:
        assert isinstance(log, EncryptedLog)
        stopping = StoppingRotation(log, half)
        _, seconds = timed(lambda: _stopped(lambda: rotate_keys(stopping, concurrency=1)))
        row(f"rotate k2 to k3, stopped after {half:,}", seconds, "stopped", half, "conv.")
        report, seconds = timed(lambda: rotate_keys(log, concurrency=concurrency))
        row("rotate k2 to k3 again (finishes)", seconds, str(report), report.conversations, "conv.")


def erase(
    url: str, keys: StaticKeyProvider | None, owner: str, half: int, concurrency: int
) -> None:
    with open_log(url, keys) as log:
        stopping = StoppingLog(log, half)
        _, seconds = timed(lambda: _stopped(lambda: erase_owner(stopping, owner, concurrency=1)))
        row(f"erase, stopped after {half:,}", seconds, "stopped", half, "conv.")
        report, seconds = timed(lambda: erase_owner(log, owner, concurrency=concurrency))
        row("erase again (finishes)", seconds, str(report), report.conversations, "conv.")
        report, seconds = timed(lambda: erase_owner(log, owner, concurrency=concurrency))
        row("erase again (nothing left)", seconds, str(report), 0, "conv.")


def _stopped(run: Any) -> None:
    try:
        run()
    except StopError:
        return
    raise AssertionError("the run was not stopped")


def measure(name: str, url: str, args: argparse.Namespace) -> None:
    keys = None if args.plain else provider("k1")
    owner = f"bench-{uuid.uuid4().hex[:8]}"
    mode = "plain" if args.plain else "encrypted"
    print(f"\n## {name}, {mode}, concurrency {args.concurrency} (load {load_average()})\n")
    print("| run | seconds | report | rate |\n| --- | ---: | --- | ---: |")
    with open_log(url, keys) as log:
        _, seconds = timed(partial(fill, log, owner, args.conversations, args.messages))
    row(f"fill {args.conversations:,} conversations", seconds, "", args.conversations, "conv.")
    half = args.conversations // 2
    if not args.plain:
        rotate(url, half, args.concurrency)
    erase(url, keys, owner, half, args.concurrency)
    print(f"\nload at the end: {load_average()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=3, help="per conversation")
    parser.add_argument("--postgresql", default=os.environ.get("CHATMEM_TEST_POSTGRESQL_URL"))
    parser.add_argument("--redis", default=os.environ.get("CHATMEM_TEST_REDIS_URL"))
    parser.add_argument("--concurrency", type=int, default=MIGRATE_CONCURRENCY)
    parser.add_argument("--plain", action="store_true", help="erase without encryption")
    parser.add_argument("--only", help="one destination: sqlite, postgresql or redis")
    args = parser.parse_args()
    prefix = f"er{uuid.uuid4().hex[:8]}_"
    with tempfile.TemporaryDirectory() as directory:
        targets = {"sqlite": f"sqlite:///{Path(directory) / 'erase.db'}"}
        if args.postgresql:
            targets["postgresql"] = (
                f"{args.postgresql}?table_prefix={prefix}&initialize_schema=always"
            )
        if args.redis:
            targets["redis"] = f"{args.redis}?key_prefix={prefix}"
        for name, url in targets.items():
            if args.only and name != args.only:
                continue
            try:
                measure(name, url, args)
            finally:
                if name == "postgresql":
                    drop_tables(args.postgresql, prefix)
                elif name == "redis":
                    drop_keys(args.redis, prefix)


def drop_tables(url: str, prefix: str) -> None:
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.begin() as connection:
            for table in ("summaries", "messages", "conversations"):
                connection.execute(sqlalchemy.text(f"DROP TABLE IF EXISTS {prefix}{table}"))
    finally:
        engine.dispose()


def drop_keys(url: str, prefix: str) -> None:
    with redis.Redis.from_url(url) as client:
        for pattern in (f"{prefix}*", f"{{{prefix}*"):
            keys = list(client.scan_iter(match=pattern, count=1000))
            for start in range(0, len(keys), 500):
                client.delete(*keys[start : start + 500])


if __name__ == "__main__":
    main()
