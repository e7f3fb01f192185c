#!/usr/bin/env python3
"""Throughput under concurrent load: many clients doing chat turns on many conversations.

Each client (a thread for the sync repository, a task for the async one; all share one
repository and one MessageWindowChatMemory, as a service would) loops for ``--seconds``:
pick one of ``--conversations`` ids at random, then do a turn (get with a 20-message window,
one add of the user message and the answer, as MessageChatMemoryAdvisor does; ``--adds 2``
adds them one at a time; 200-character messages). Conversations come
into existence on their first turn (``--fill`` stores that many messages in each first).

Per client count it prints turns per second, p50/p99 turn latency, the CPU the server used
(cores: 1.0 is one core busy; read from /proc for the server's pid and its children) and the
CPU this process used (near 1.0 means the client is bound by its own GIL). On a machine shared
with other work, the load average is printed too.

Usage:
    python benchmarks/load.py --url redis://127.0.0.1:63799/0
    python benchmarks/load.py --url postgresql+psycopg://test:test@127.0.0.1:54329/testdb \
        --async --clients 1,8,32,128 --seconds 10 --json results/load-postgresql-async.json
    python benchmarks/load.py --url ... --server-pid 1234     # when not a test server
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chatmem import (
    AssistantMessage,
    AsyncMessageWindowChatMemory,
    MessageWindowChatMemory,
    RepositoryError,
    UserMessage,
)
from chatmem_repositories import create_async_repository, create_repository, redact_url

TEXT = ("The quick brown fox jumps over the lazy dog. " * 5)[:200]
SERVERS = Path("/tmp/chatmem-servers")
PID_FILES = {
    "postgresql": "postgres/postgres.pid",
    "mysql": "mariadb/mariadbd.pid",
    "mariadb": "mariadb/mariadbd.pid",
    "redis": "redis/redis.pid",
    "mongodb": "ferretdb/ferretdb.pid",
    "cassandra": "cassandra/cassandra.pid",
    "bolt": "neo4j/neo4j.pid",
    "neo4j": "neo4j/neo4j.pid",
}
TICKS = os.sysconf("SC_CLK_TCK")
FAILURES: list[str] = []  # failed turns of the running level (list.append is thread-safe)


def server_pid(url: str) -> int | None:
    scheme = url.split("://", 1)[0].split("+", 1)[0].lower()
    path = SERVERS / PID_FILES.get(scheme, "-")
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def cpu_seconds(pid: int | None) -> float | None:
    """CPU time of a process and its children, live or reaped (PostgreSQL forks one per
    connection, and a closed connection's process ends)."""
    if pid is None:
        return None
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry.name) == pid:  # utime + stime, and cutime + cstime: exited children
            total += sum(int(f) for f in fields[11:15]) / TICKS
        elif int(fields[1]) == pid:  # a live child (fields[1] is the parent pid)
            total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def own_cpu() -> float:
    times = os.times()
    return times.user + times.system


def turn_messages(i: int) -> tuple[UserMessage, AssistantMessage]:
    return UserMessage(f"q{i} {TEXT}"[:200]), AssistantMessage(TEXT)


def summarize(latencies: list[float], seconds: float) -> dict[str, float]:
    ordered = sorted(latencies)
    if not ordered:
        return {"turns": 0, "turns_per_s": 0.0, "p50_ms": 0.0, "p99_ms": 0.0}
    return {
        "turns": len(ordered),
        "turns_per_s": round(len(ordered) / seconds, 1),
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
    }


def mark(pid: int | None) -> tuple[float | None, float, float]:
    """Server CPU, own CPU and wall clock now."""
    return cpu_seconds(pid), own_cpu(), time.perf_counter()


def level_row(
    clients: int, latencies: list[float], start: tuple[float | None, float, float], pid: int | None
) -> dict[str, Any]:
    """Turns per second, latency percentiles and CPU shares of one level since ``start``."""
    failures = list(FAILURES)
    FAILURES.clear()
    server_after, own_after, now = mark(pid)
    server_before, own_before, began = start
    wall = now - began
    row: dict[str, Any] = {"clients": clients, **summarize(latencies, wall)}
    if server_before is not None and server_after is not None:
        row["server_cpu"] = round((server_after - server_before) / wall, 2)
    row["client_cpu"] = round((own_after - own_before) / wall, 2)
    row["load_average"] = round(os.getloadavg()[0], 1)
    row["errors"] = len(failures)
    if failures:
        row["error_kinds"] = dict(Counter(failures))
    return row


def run_sync(args: argparse.Namespace, ids: list[str], pid: int | None) -> list[dict[str, Any]]:
    repository = create_repository(args.url)
    memory = MessageWindowChatMemory(repository, max_messages=20)
    touched: set[str] = set()

    def fill(cid: str) -> None:
        messages = [m for i in range(args.fill // 2) for m in turn_messages(i)]
        if messages:
            repository.append(cid, messages)

    def level(clients: int, seconds: float) -> list[float]:
        deadline = time.perf_counter() + seconds
        results: list[list[float]] = [[] for _ in range(clients)]

        def client(mine: list[float]) -> None:
            rng = random.Random()
            i = 0
            while time.perf_counter() < deadline:
                cid = rng.choice(ids)
                touched.add(cid)
                user, answer = turn_messages(i)
                began = time.perf_counter()
                try:
                    memory.get(cid)
                    if args.adds == 1:
                        memory.add(cid, [user, answer])
                    else:
                        memory.add(cid, user)
                        memory.add(cid, answer)
                except RepositoryError as exc:  # counted, and the client goes on
                    FAILURES.append(type(exc).__name__)
                    continue
                mine.append(time.perf_counter() - began)
                i += 1

        threads = [threading.Thread(target=client, args=(r,)) for r in results]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [x for r in results for x in r]

    try:
        if args.fill:
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(fill, ids))
            touched.update(ids)
        level(min(8, max(args.clients)), args.warmup)
        FAILURES.clear()
        rows = []
        for n in args.clients:
            start = mark(pid)
            rows.append(level_row(n, level(n, args.seconds), start, pid))
        return rows
    finally:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(repository.delete_by_conversation_id, touched))
        repository.close()


async def run_async_levels(
    args: argparse.Namespace, ids: list[str], pid: int | None
) -> list[dict[str, Any]]:
    repository = create_async_repository(args.url)
    memory = AsyncMessageWindowChatMemory(repository, max_messages=20)
    touched: set[str] = set()
    gate = asyncio.Semaphore(8)

    async def fill(cid: str) -> None:
        messages = [m for i in range(args.fill // 2) for m in turn_messages(i)]
        async with gate:
            if messages:
                await repository.append(cid, messages)

    async def drop(cid: str) -> None:
        async with gate:
            await repository.delete_by_conversation_id(cid)

    async def level(clients: int, seconds: float) -> list[float]:
        deadline = time.perf_counter() + seconds

        async def client() -> list[float]:
            rng, mine, i = random.Random(), [], 0
            while time.perf_counter() < deadline:
                cid = rng.choice(ids)
                touched.add(cid)
                user, answer = turn_messages(i)
                began = time.perf_counter()
                try:
                    await memory.get(cid)
                    if args.adds == 1:
                        await memory.add(cid, [user, answer])
                    else:
                        await memory.add(cid, user)
                        await memory.add(cid, answer)
                except RepositoryError as exc:  # counted, and the client goes on
                    FAILURES.append(type(exc).__name__)
                    continue
                mine.append(time.perf_counter() - began)
                i += 1
            return mine

        results = await asyncio.gather(*(client() for _ in range(clients)))
        return [x for r in results for x in r]

    try:
        if args.fill:
            await asyncio.gather(*(fill(cid) for cid in ids))
            touched.update(ids)
        await level(min(8, max(args.clients)), args.warmup)
        FAILURES.clear()
        rows = []
        for n in args.clients:
            start = mark(pid)
            rows.append(level_row(n, await level(n, args.seconds), start, pid))
        return rows
    finally:
        await asyncio.gather(*(drop(cid) for cid in touched))
        await repository.aclose()


def table(directory: Path) -> str:
    """One Markdown table from the ``load-*.json`` results in a directory."""
    lines = [
        "| backend | twin | clients | turns/s | p50 ms | p99 ms | errors | server CPU | client CPU"
        " | load |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    order = ["memory", "sqlite", "postgresql", "mariadb", "redis", "mongodb", "cassandra"]
    order += ["neo4j"]

    def rank(path: Path) -> tuple[int, str, bool]:
        name = path.stem.removeprefix("load-").rsplit("-", 1)[0]
        return order.index(name) if name in order else 99, name, path.stem.endswith("async")

    for path in sorted(directory.glob("load-*.json"), key=rank):
        result = json.loads(path.read_text())
        name = path.stem.removeprefix("load-").rsplit("-", 1)[0]
        for row in result["levels"]:
            server = row.get("server_cpu")
            lines.append(
                f"| {name} | {result['flavor']} | {row['clients']} | {row['turns_per_s']:,.0f} "
                f"| {row['p50_ms']:.2f} | {row['p99_ms']:.1f} | {row.get('errors', 0)} "
                f"| {'-' if server is None else f'{server:.2f}'} | {row['client_cpu']:.2f} "
                f"| {row['load_average']:.1f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="memory://", help="repository URL")
    parser.add_argument("--async", dest="use_async", action="store_true", help="async twin")
    parser.add_argument("--clients", default="1,8,32,128", help="concurrent clients per level")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured time per level")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds first")
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--fill", type=int, default=0, help="messages stored per conversation")
    parser.add_argument("--server-pid", type=int, help="server process for the CPU column")
    parser.add_argument("--adds", type=int, choices=(1, 2), default=1, help="adds per turn")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--table", type=Path, help="print a table of load-*.json in this dir")
    parser.add_argument("--bytes-per-message", type=int, metavar="N", help="store N, report size")
    args = parser.parse_args()
    if args.table:
        print(table(args.table), end="")
        return 0
    if args.bytes_per_message:
        print(json.dumps(bytes_per_message(args.url, args.bytes_per_message)))
        return 0
    args.clients = [int(x) for x in args.clients.split(",")]
    tag = uuid.uuid4().hex[:8]
    ids = [f"load-{tag}-{i}" for i in range(args.conversations)]
    pid = args.server_pid or server_pid(args.url)
    began = time.perf_counter()
    if args.use_async:
        levels = asyncio.run(run_async_levels(args, ids, pid))
    else:
        levels = run_sync(args, ids, pid)
    result = {
        "url": redact_url(args.url),
        "flavor": "async" if args.use_async else "sync",
        "conversations": args.conversations,
        "seconds_per_level": args.seconds,
        "turn": (
            "get (window 20) + add([user, assistant]), 200-char messages"
            if args.adds == 1
            else "get (window 20) + add(user) + add(assistant), 200-char messages"
        ),
        "cpu_count": os.cpu_count(),
        "levels": levels,
        "wall_seconds": round(time.perf_counter() - began, 1),
    }
    print(f"{result['url']} ({result['flavor']}), {args.conversations:,} conversations")
    print(table_rows(levels))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


def table_rows(levels: list[dict[str, Any]]) -> str:
    heads = ("clients", "turns/s", "p50 ms", "p99 ms", "errors", "srv CPU", "cli CPU")
    lines = [" ".join(f"{h:>8}" for h in heads)]
    for row in levels:
        server = row.get("server_cpu")
        lines.append(
            f"{row['clients']:>8} {row['turns_per_s']:>8.0f} {row['p50_ms']:>8.2f} "
            f"{row['p99_ms']:>8.2f} {row.get('errors', 0):>8} "
            f"{'-' if server is None else server:>8} {row['client_cpu']:>8}"
        )
    return "\n".join(lines)


# -- storage: bytes per stored message, from the server's own size figures ----------------------

PREFIX_OPTION = {
    "postgresql": "table_prefix",
    "mysql": "table_prefix",
    "mariadb": "table_prefix",
    "sqlite": "table_prefix",
    "cassandra": "table_prefix",
    "redis": "key_prefix",
    "mongodb": "collection_prefix",
    "bolt": "label_prefix",
    "neo4j": "label_prefix",
}


def _sql_login(url: str) -> dict[str, Any]:
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    return {
        "host": parts.hostname,
        "port": parts.port,
        "user": unquote(parts.username or ""),
        "password": unquote(parts.password or ""),
        "database": parts.path.strip("/"),
    }


def _postgresql_bytes(url: str, prefix: str, drop: bool) -> int:
    import psycopg

    login = _sql_login(url)
    login["dbname"] = login.pop("database")
    with psycopg.connect(**login, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT relname FROM pg_class WHERE relkind = 'r' AND relname LIKE %s", (prefix + "%",)
        ).fetchall()
        names = [r[0] for r in rows]
        size = 0
        for name in names:
            size += conn.execute("SELECT pg_total_relation_size(%s)", (name,)).fetchone()[0]
            if drop:
                conn.execute(f'DROP TABLE IF EXISTS "{name}" CASCADE')
        return size


def _mysql_bytes(url: str, prefix: str, drop: bool) -> int:
    import pymysql

    conn = pymysql.connect(**_sql_login(url), autocommit=True)
    like = (prefix + "%",)
    with conn.cursor() as cur:
        where = "WHERE table_schema = DATABASE() AND table_name LIKE %s"
        cur.execute(f"SELECT table_name FROM information_schema.tables {where}", like)
        names = [r[0] for r in cur.fetchall()]
        for name in names:
            cur.execute(f"ANALYZE TABLE `{name}`")  # InnoDB updates its sizes lazily
            cur.fetchall()
        cur.execute(
            f"SELECT COALESCE(SUM(data_length + index_length), 0)"
            f" FROM information_schema.tables {where}",
            like,
        )
        size = int(cur.fetchone()[0])
        for name in names if drop else []:
            cur.execute(f"DROP TABLE IF EXISTS `{name}`")
    conn.close()
    return size


def _sqlite_bytes(url: str, prefix: str, drop: bool) -> int:
    import sqlite3

    with sqlite3.connect(url.split("://", 1)[1].split("?", 1)[0][1:]) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        used = conn.execute("PRAGMA page_count").fetchone()[0]
        used -= conn.execute("PRAGMA freelist_count").fetchone()[0]
        return int(used * conn.execute("PRAGMA page_size").fetchone()[0])


def _redis_bytes(url: str, prefix: str, drop: bool) -> int:
    import redis

    client = redis.Redis.from_url(url)
    keys = list(client.scan_iter(f"*{prefix}*", count=1000))  # {prefix:id}:... keys
    size = sum(client.memory_usage(k, samples=0) or 0 for k in keys)
    if drop and keys:
        client.delete(*keys)
    client.close()
    return size


def _mongodb_bytes(url: str, prefix: str, drop: bool) -> int:
    from pymongo import MongoClient

    client: Any = MongoClient(url.split("?", 1)[0])
    db = client.get_default_database()
    size = 0
    for name in db.list_collection_names():
        if name.startswith(prefix):
            stats = db.command("collStats", name)
            size += int(stats.get("size", 0)) + int(stats.get("totalIndexSize", 0))
            if drop:
                db.drop_collection(name)
    client.close()
    return size


# Cassandra and Neo4j report no per-table size over their query protocols.
SIZES = {
    "postgresql": _postgresql_bytes,
    "mysql": _mysql_bytes,
    "mariadb": _mysql_bytes,
    "sqlite": _sqlite_bytes,
    "redis": _redis_bytes,
    "mongodb": _mongodb_bytes,
}


def _server_bytes(url: str, scheme: str, prefix: str, drop: bool = False) -> int | None:
    """What the server says the prefix's tables, keys or collections take (None: unknown)."""
    size = SIZES.get(scheme)
    return None if size is None else size(url, prefix, drop)


def bytes_per_message(url: str, count: int) -> dict[str, Any]:
    """Store ``count`` messages (200 characters, 100 conversations) and read the growth."""
    from chatmem.messages import encode_message

    scheme = url.split("://", 1)[0].split("+", 1)[0].lower()
    scheme = "postgresql" if scheme == "postgres" else scheme
    prefix = f"sz{uuid.uuid4().hex[:6]}_"
    if scheme in ("bolt", "neo4j"):
        prefix = "Sz" + uuid.uuid4().hex[:6]
    repository = create_repository(url, **{PREFIX_OPTION[scheme]: prefix})
    ids = [f"size-{i}" for i in range(100)]
    per = count // len(ids)

    def write(rounds: int, start: int) -> None:
        for cid in ids:
            messages = [m for i in range(start, start + rounds // 2) for m in turn_messages(i)]
            for at in range(0, len(messages), 500):
                repository.append(cid, messages[at : at + 500])

    try:
        write(20, 0)  # 20 messages each: the tables, indexes and keys exist from here on
        before = _server_bytes(url, scheme, prefix)
        write(per, 1000)
        after = _server_bytes(url, scheme, prefix)
        sample = turn_messages(0)
        payload = sum(len(encode_message(m).encode()) for m in sample) / len(sample)
        measured = None if before is None or after is None else (after - before) / (per * len(ids))
        return {
            "url": redact_url(url),
            "messages": per * len(ids),
            "server_bytes_per_message": None if measured is None else round(measured),
            "encoded_message_bytes": round(payload),
            "text_characters": 200,
        }
    finally:
        for cid in ids:
            repository.delete_by_conversation_id(cid)
        repository.close()
        _server_bytes(url, scheme, prefix, drop=True)


if __name__ == "__main__":
    sys.exit(main())
