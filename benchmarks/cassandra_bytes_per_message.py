#!/usr/bin/env python3
"""What a Cassandra conversation costs on disk per message: SSTable bytes after a flush.

Writes ``--conversations`` conversations of ``--messages`` 200-character messages each,
of random lowercase words (``--repeated``: one repeated text), in appends of
``--append-size``, through the async repository, twice: into tables with
Cassandra's default compression (LZ4, 16 KiB chunks) and into tables with compression
disabled. Then it makes Cassandra flush the tables' memtables (``ALTER TABLE ... WITH
memtable_flush_period_in_ms``, since the test server exposes no JMX for ``nodetool flush``),
waits for the SSTables in the server's data directory to stop changing, and divides their
size (every component: data, index, filter, statistics) by the number of messages. The
server must run on this machine (``--data-dir``). The tables are dropped at the end.

    python benchmarks/cassandra_bytes_per_message.py --url cassandra://127.0.0.1:9042/chatmem_test
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import string
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chatmem import AssistantMessage, Message, UserMessage
from chatmem.messages import encode_message
from chatmem_repositories.cassandra import AsyncCassandraChatMemoryRepository

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]


def words(rng: random.Random) -> str:
    """200 characters of random lowercase words (about as compressible as prose)."""
    text = ""
    while len(text) < 200:
        text += "".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9))) + " "
    return text[:200]


def sizes(directory: Path, table: str) -> dict[str, int]:
    """Bytes of a table's SSTable components, by component, from its data directory."""
    found: dict[str, int] = {}
    for table_dir in directory.glob(f"{table}-*"):
        for path in table_dir.glob("*.db"):
            component = path.name.rsplit("-", 1)[-1]
            found[component] = found.get(component, 0) + path.stat().st_size
    return found


async def fill(repository: AsyncCassandraChatMemoryRepository, args: argparse.Namespace) -> None:
    queue = [f"size-{i:05d}-{uuid.uuid4().hex[:6]}" for i in range(args.conversations)]
    rng = random.Random(7)

    async def worker() -> None:
        while queue:
            cid = queue.pop()
            for start in range(0, args.messages, args.append_size):
                count = min(args.append_size, args.messages - start)
                batch: list[Message] = [
                    (UserMessage if (start + i) % 2 == 0 else AssistantMessage)(
                        TEXT if args.repeated else words(rng)
                    )
                    for i in range(count)
                ]
                await repository.append(cid, batch)

    await asyncio.gather(*(worker() for _ in range(args.concurrency)))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="cassandra://127.0.0.1:9042/chatmem_test")
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=100, help="per conversation")
    parser.add_argument("--append-size", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument(
        "--repeated", action="store_true", help="one repeated text (compresses far better)"
    )
    parser.add_argument("--data-dir", default="/tmp/chatmem-servers/cassandra/data")
    args = parser.parse_args()
    keyspace = args.url.split("?")[0].rsplit("/", 1)[1]
    total = args.conversations * args.messages
    sample = UserMessage(TEXT)
    print(f"{total:,} messages in {args.conversations:,} conversations; encoded message ", end="")
    print(f"{len(encode_message(sample).encode())} bytes; load {os.getloadavg()[0]:.2f}")
    tag = uuid.uuid4().hex[:6]
    variants = {"LZ4 (default)": f"sz{tag}_", "uncompressed": f"szu{tag}_"}
    repositories = {
        name: AsyncCassandraChatMemoryRepository.from_url(
            args.url, table_prefix=prefix, create_keyspace=True
        )
        for name, prefix in variants.items()
    }
    directory = Path(args.data_dir) / keyspace
    try:
        for name, repository in repositories.items():
            await repository.find_conversation_ids()  # creates the tables
            db = repository._db  # the benchmark borrows the repository's session
            assert db.session is not None
            tables = (db.cql.messages, db.cql.conversations)
            if name == "uncompressed":
                for table in tables:
                    off = "{'enabled': false}"
                    db.session.execute(f"ALTER TABLE {table} WITH compression = {off}")
            began = time.perf_counter()
            await fill(repository, args)
            print(f"{name}: wrote in {time.perf_counter() - began:.1f} s")
            for table in tables:
                db.session.execute(f"ALTER TABLE {table} WITH memtable_flush_period_in_ms = 2000")
        # Wait until every table has SSTables and their sizes stayed the same for 10 s.
        names = [p + t for p in variants.values() for t in ("messages_v2", "conversations_v2")]
        last: list[dict[str, int]] = []
        stable_since = time.monotonic()
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            now = [sizes(directory, n) for n in names]
            if now != last:
                last, stable_since = now, time.monotonic()
            elif all("Data.db" in s for s in now) and time.monotonic() - stable_since > 10:
                break
            await asyncio.sleep(1)
        for name, prefix in variants.items():
            messages = sizes(directory, prefix + "messages_v2")
            listing = sizes(directory, prefix + "conversations_v2")
            whole = sum(messages.values()) + sum(listing.values())
            print(
                f"{name}: messages table {sum(messages.values()):,} B"
                f" (Data.db {messages.get('Data.db', 0):,} B),"
                f" listing {sum(listing.values()):,} B;"
                f" {whole / total:.0f} B per message"
                f" ({messages.get('Data.db', 0) / total:.0f} B of it in Data.db)"
            )
            print(f"  components: {dict(sorted(messages.items()))}")
    finally:
        for repository in repositories.values():
            db = repository._db
            if db.session is not None:
                for table in (db.cql.messages, db.cql.conversations):
                    db.session.execute(f"DROP TABLE IF EXISTS {table}", timeout=60)
            await repository.aclose()


if __name__ == "__main__":
    asyncio.run(main())
